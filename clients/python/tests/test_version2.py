"""Protocol version 2: the hellos' extension block, the frame limit, metadata both ways, and the
fallbacks from the version the client offers (6) to versions 3, 2 and 1, against the example
server and against scripted peers."""

import asyncio
import struct

import pytest

import wirecall
from wirecall import aio
from wirecall.compression import zstd_available
from wirecall.wire import (
    FLAG_METADATA,
    FRAME_HEADER,
    FrameKind,
    decode_metadata,
    encode_extensions,
    encode_frame,
    encode_metadata,
)

from conftest import FANLY
from test_peer_behaviour import read_client_hello, scripted_server

#: The compression extension a version 5 or 6 hello carries by default: zstd, when installed.
OFFERED_COMPRESSION = bytes.fromhex("03 01 01") if zstd_available() else b""


def accepted_v2(extensions=b"\x00\x00"):
    """A version 2 server hello accepting JSON, with `extensions` (length included)."""
    return b"WCAL" + bytes([2, 0, 1, 1, 1]) + extensions


async def read_frame(reader):
    header = FRAME_HEADER.unpack(await reader.readexactly(FRAME_HEADER.size))
    return header, await reader.readexactly(header[0] - 22)


# -- against the example server ---------------------------------------------------------------


def test_the_example_server_speaks_version_6_and_announces_its_frame_limit(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        assert client.protocol_version == 6
        assert client.server_max_frame_length == 16 * 1024 * 1024
        assert client.call("UserService", "get_user_id", name="fanly") == 5


def test_calls_carry_metadata_on_a_version_2_connection(server, codec):
    with wirecall.connect(server.address, codecs=[codec], metadata={"tenant": "acme"}) as client:
        assert client.metadata == {"tenant": "acme"}
        value, reply_metadata = client.call_with_metadata(
            "UserService", "find", {"user_id": 1}, metadata={"request-id": "r-1", "tenant": "other"}
        )
        assert value == FANLY if codec == "json" else value == [1, "fanly", 18]
        # The example's handlers set no reply metadata.
        assert reply_metadata == {}
        assert client.call_with("UserService", "get_user_id", {"name": "fanly"}, metadata={"a.b_c-d": ""}) == 5
        client.notify_with("UserService", "get_user", {"user": FANLY}, metadata={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
        assert client.call("UserService", "get_user_id", name="fanly") == 5


def test_the_server_checks_our_metadata_block(server):
    # A block the client would refuse to build, written by hand: a key in upper case.
    import socket

    from wirecall.wire import CodecId, client_hello, decode_error_payload

    host, port = server.address.split(":")
    with socket.create_connection((host, int(port))) as sock, sock.makefile("rb") as stream:
        sock.sendall(client_hello([CodecId.JSON]))
        head = stream.read(8)
        assert head[4:7] == bytes([6, 0, 1])
        stream.read(head[7])
        stream.read(struct.unpack(">H", stream.read(2))[0])
        bad_block = bytes.fromhex("00 01 01") + b"A" + bytes.fromhex("00 00")
        get_id = wirecall.method_id("UserService", "get_user_id")
        sock.sendall(encode_frame(FrameKind.REQUEST, 1, get_id, 0, bad_block + b'{"name":"x"}', FLAG_METADATA))
        length, kind, _, request_id, _, _ = FRAME_HEADER.unpack(stream.read(FRAME_HEADER.size))
        assert (kind, request_id) == (FrameKind.ERROR, 0)
        assert decode_error_payload(stream.read(length - 22))[0] == 6  # ProtocolViolation


def test_a_forced_version_2_connection_works_and_sends_metadata(server):
    with wirecall.connect(server.address, protocol_version=2, metadata={"tenant": "acme"}) as client:
        assert client.protocol_version == 2
        assert client.server_max_frame_length == 16 * 1024 * 1024
        assert client.call_with_metadata("UserService", "get_user_id", {"name": "fanly"}) == (5, {})


def test_a_forced_version_1_connection_works_and_does_not_send_metadata(server):
    with wirecall.connect(server.address, protocol_version=1, metadata={"tenant": "acme"}) as client:
        assert client.protocol_version == 1
        assert client.server_max_frame_length is None
        assert client.call_with_metadata("UserService", "get_user_id", {"name": "fanly"}) == (5, {})


def test_bad_metadata_is_refused_before_anything_is_sent(server):
    with pytest.raises(ValueError, match="a-z"):
        wirecall.connect(server.address, metadata={"Tenant": "acme"})
    with wirecall.connect(server.address) as client:
        with pytest.raises(ValueError, match="metadata not sent"):
            client.call_with("UserService", "get_user_id", {"name": "x"}, metadata={"k": "v" * 70000})
        assert client.call("UserService", "get_user_id", name="fanly") == 5


def test_a_frame_limit_that_does_not_fit_the_hello_is_refused(server):
    for bad in (21, 2**32):
        with pytest.raises(ValueError, match="max_frame_length"):
            wirecall.connect(server.address, max_frame_length=bad)


# -- against scripted peers ------------------------------------------------------------------


def test_an_older_server_naming_version_1_gets_a_version_1_hello():
    hellos = []

    async def version_1_server(reader, writer):
        version, codecs, token, extensions = await read_client_hello(reader)
        hellos.append((version, codecs, token, extensions))
        if version != 1:
            writer.write(b"WCAL" + bytes([1, 2, 0, 1, 1]))  # UnsupportedVersion, version 1
            await writer.drain()
            writer.close()
            return
        writer.write(b"WCAL" + bytes([1, 0, 1, 1, 1]))  # accepted, version 1, JSON
        header, payload = await read_frame(reader)
        assert header[2] == 0  # no metadata flag on a version 1 connection
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":' + payload + b"}"))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(version_1_server)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"], token="t", metadata={"tenant": "acme"})
            assert client.protocol_version == 1
            assert await client.call("S", "echo", x=1) == {"x": 1}
            await client.close()
        assert [hello[0] for hello in hellos] == [6, 1]
        assert hellos[0][3] == bytes.fromhex("01 04 01 00 00 00") + OFFERED_COMPRESSION
        assert hellos[1][1:] == (b"\x01", b"t", b"")

    asyncio.run(scenario())


def test_a_server_refusing_version_6_naming_version_2_gets_a_version_2_hello():
    hellos = []

    async def version_2_only(reader, writer):
        version, _, _, extensions = await read_client_hello(reader)
        hellos.append((version, extensions))
        if version != 2:
            writer.write(b"WCAL" + bytes([2, 2, 0, 1, 1]) + b"\x00\x00")  # UnsupportedVersion, version 2
            await writer.drain()
            writer.close()
            return
        writer.write(accepted_v2())
        header, payload = await read_frame(reader)
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":' + payload + b"}"))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(version_2_only)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert client.protocol_version == 2
            assert await client.call("S", "echo", x=1) == {"x": 1}
            with pytest.raises(wirecall.StreamsUnsupported):
                client.stream("S", "items")
            await client.close()
        # Both hellos announce the frame limit: version 2 has the extension block too. Only
        # the version 6 hello offers compression.
        assert hellos == [
            (6, bytes.fromhex("01 04 01 00 00 00") + OFFERED_COMPRESSION),
            (2, bytes.fromhex("01 04 01 00 00 00")),
        ]

    asyncio.run(scenario())


def test_a_server_refusing_version_6_naming_version_3_gets_a_version_3_hello():
    hellos = []

    async def version_3_only(reader, writer):
        version, _, _, _ = await read_client_hello(reader)
        hellos.append(version)
        if version != 3:
            writer.write(b"WCAL" + bytes([3, 2, 0, 1, 1]) + b"\x00\x00")  # UnsupportedVersion, version 3
            await writer.drain()
            writer.close()
            return
        writer.write(b"WCAL" + bytes([3, 0, 1, 1, 1]) + b"\x00\x00")
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(version_3_only)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert client.protocol_version == 3
            await client.close()
        assert hellos == [6, 3]

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_unsupported_version_without_an_older_version_we_speak_is_raised():
    async def refuse(reader, writer):
        await read_client_hello(reader)
        writer.write(b"WCAL" + bytes([9, 2, 0, 0, 0, 0]))  # UnsupportedVersion naming version 9
        await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(refuse)
        async with server:
            with pytest.raises(wirecall.UnsupportedVersion):
                await aio.connect("127.0.0.1", port, codecs=["json"])

    asyncio.run(scenario())


def test_the_servers_frame_limit_is_honoured_and_unknown_extensions_skipped():
    received = []

    async def small_server(reader, writer):
        await read_client_hello(reader)
        # An unknown extension 99 first, then max_frame_len = 100.
        writer.write(accepted_v2(encode_extensions({99: b"later", 1: struct.pack(">I", 100)})))
        header, payload = await read_frame(reader)
        received.append(payload)
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":true}'))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(small_server)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert client.server_max_frame_length == 100
            with pytest.raises(wirecall.FrameTooLarge, match="server's announced maximum frame length of 100"):
                await client.call("S", "big", text="x" * 100)
            # 22 + 78 bytes is exactly the limit.
            assert await client.call("S", "small", text="x" * (78 - len('{"text":""}'))) is True
            await client.close()
        assert len(received) == 1 and len(received[0]) == 78

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "extensions",
    [b"\x00\x03\x01\x04\x00", b"\x04\x01", b"\x00\x06\x01\x04\x00\x00\x00\x05"],
)
def test_a_malformed_server_extension_block_is_a_broken_server(extensions):
    async def broken(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v2(extensions))
        await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(broken)
        async with server:
            with pytest.raises(wirecall.ProtocolError):
                await aio.connect("127.0.0.1", port, codecs=["json"])

    asyncio.run(scenario())


def test_reply_metadata_reaches_the_caller_on_responses_and_errors():
    async def answering_with_metadata(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v2())
        header, payload = await read_frame(reader)
        assert header[2] == FLAG_METADATA
        request_metadata, arguments = decode_metadata(payload)
        assert request_metadata == {"tenant": "acme", "request-id": "r-1"}
        assert arguments == b'{"user_id":1}'
        writer.write(
            encode_frame(
                FrameKind.RESPONSE, header[3], header[4], 0,
                encode_metadata({"served-by": "echo-1"}) + b'{"ok":null,"err":{"reason":"no"}}',
                FLAG_METADATA,
            )
        )
        header, payload = await read_frame(reader)
        assert header[2] == FLAG_METADATA  # the client's own metadata still travels
        writer.write(
            encode_frame(
                FrameKind.ERROR, header[3], header[4], 0,
                encode_metadata({"retry-after": "5"}) + struct.pack(">H", 7) + b"overloaded",
                FLAG_METADATA,
            )
        )
        header, payload = await read_frame(reader)
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, encode_metadata({"k": "v"}) + b'{"value":3}', FLAG_METADATA))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(answering_with_metadata)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"], metadata={"tenant": "acme"})
            with pytest.raises(wirecall.ApplicationError) as application:
                await client.call_with_metadata("UserService", "find", {"user_id": 1}, metadata={"request-id": "r-1"})
            assert application.value.metadata == {"served-by": "echo-1"}
            with pytest.raises(wirecall.Overloaded) as overloaded:
                await client.call("S", "m")
            assert overloaded.value.metadata == {"retry-after": "5"}
            assert await client.call_with_metadata("S", "m") == (3, {"k": "v"})
            await client.close()

    asyncio.run(scenario())


def test_a_metadata_flag_on_a_version_1_connection_breaks_the_connection():
    async def wrong_flag(reader, writer):
        await read_client_hello(reader)
        writer.write(b"WCAL" + bytes([1, 0, 1, 1, 1]))  # accepted, version 1
        header, _ = await read_frame(reader)
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, encode_metadata({}) + b"{}", FLAG_METADATA))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(wrong_flag)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            with pytest.raises(wirecall.ConnectionClosed, match="flags 0x01"):
                await client.call("S", "m")
            await client.close()

    asyncio.run(scenario())
