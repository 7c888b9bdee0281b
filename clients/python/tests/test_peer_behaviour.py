"""Behaviour the example server cannot show on demand, against a scripted peer."""

import asyncio
import struct

import pytest

import wirecall
from wirecall import aio
from wirecall.wire import FRAME_HEADER, FrameKind, encode_frame

from conftest import eventually


async def read_client_hello(reader):
    """Reads a whole client hello; returns its version, codecs, token and extension block."""
    magic, version, count = struct.unpack(">4sBB", await reader.readexactly(6))
    assert magic == b"WCAL"
    codecs = await reader.readexactly(count)
    token = await reader.readexactly((await reader.readexactly(1))[0])
    extensions = b""
    if version >= 2:
        (length,) = struct.unpack(">H", await reader.readexactly(2))
        extensions = await reader.readexactly(length)
    return version, codecs, token, extensions


async def scripted_server(script):
    """A one-connection server on a free port that runs `script(reader, writer)`."""
    server = await asyncio.start_server(script, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def test_no_common_codec_lists_both_sides():
    async def refuse(reader, writer):
        await read_client_hello(reader)
        writer.write(b"WCAL" + bytes([1, 1, 0, 1, 3]))  # NoCommonCodec; the server allows protobuf
        await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(refuse)
        async with server:
            with pytest.raises(wirecall.NoCommonCodec) as refused:
                await aio.connect("127.0.0.1", port, codecs=["json"])
        assert refused.value.offered == ("json",)
        assert refused.value.supported == ("protobuf",)

    asyncio.run(scenario())


def test_a_server_that_is_not_wirecall():
    async def http(reader, writer):
        writer.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(http)
        async with server:
            with pytest.raises(wirecall.NotWirecall):
                await aio.connect("127.0.0.1", port)

    asyncio.run(scenario())


def test_pings_are_answered_and_replies_routed_out_of_order():
    async def ping_then_answer_backwards(reader, writer):
        await read_client_hello(reader)
        writer.write(b"WCAL" + bytes([1, 0, 1, 1, 1]))  # accepted, version 1, JSON
        writer.write(encode_frame(FrameKind.PING, 99))
        await writer.drain()
        pong = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
        assert pong == (22, FrameKind.PONG, 0, 99, 0, 0)
        requests = []
        for _ in range(2):
            length, kind, _, request_id, method, _ = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
            await reader.readexactly(length - 22)
            requests.append((request_id, method))
        for request_id, method in reversed(requests):
            writer.write(encode_frame(FrameKind.RESPONSE, request_id, method, 0, b'{"value":%d}' % request_id))
        await writer.drain()
        writer.write(encode_frame(FrameKind.ERROR, 0, 0, 0, struct.pack(">H", 8) + b"shutting down"))
        await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(ping_then_answer_backwards)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            first, second = await asyncio.gather(client.call("S", "a"), client.call("S", "b"))
            assert (first, second) == (1, 2)
            await eventually("the client closes on the server's error", lambda: client.is_closed)
            with pytest.raises(wirecall.ConnectionClosed) as closed:
                await client.call("S", "a")
            assert isinstance(closed.value.cause, wirecall.ShuttingDown)
            await client.close()

    asyncio.run(scenario())
