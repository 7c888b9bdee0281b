"""Every UserService method of the example server, with each codec, asyncio and blocking."""

import asyncio

import pytest

import wirecall
from wirecall import aio

from conftest import FANLY

FANLY_AS_ARRAY = [1, "fanly", 18]


def expected_user(codec):
    # The proxy knows the reply type from reflection: a struct is a dict in either codec.
    return FANLY


def test_every_method_asyncio(server, codec):
    async def tour():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            assert client.codec == codec
            users = client.UserService
            assert await users.get_user_id(name="fanly") == 5
            assert await users.get_user(user=FANLY) == expected_user(codec)
            assert await users.get(users=[FANLY] * 10) is True
            assert await users.get(users=[]) is False
            assert await users.get_dictionary() == {"key": "value"}
            assert await users.find(user_id=1) == expected_user(codec)
            with pytest.raises(wirecall.ApplicationError) as not_found:
                await users.find(user_id=42)
            assert not_found.value.error == {"user_id": 42, "reason": "no such user"}

    asyncio.run(tour())


def test_every_method_blocking(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        assert client.codec == codec
        assert client.call("UserService", "get_user_id", name="ada") == 3
        assert client.UserService.get_user(user=FANLY) == expected_user(codec)
        assert client.UserService.get(users=[FANLY] * 100) is True
        assert client.UserService.get_dictionary() == {"key": "value"}
        assert client.UserService.find(user_id=1) == expected_user(codec)
        with pytest.raises(wirecall.ApplicationError) as not_found:
            client.UserService.find(user_id=42)
        assert not_found.value.error == {"user_id": 42, "reason": "no such user"}
        # Without the proxy there is no schema: MessagePack messages stay arrays of fields.
        if codec == "msgpack":
            assert client.call("UserService", "get_user", user=FANLY) == FANLY_AS_ARRAY


def test_msgpack_messages_may_be_sent_as_arrays_in_field_order(server):
    with wirecall.connect(server.address, codecs=["msgpack"]) as client:
        assert client.call("UserService", "get_user", user=FANLY_AS_ARRAY) == FANLY_AS_ARRAY
        assert client.UserService.get_user(user=FANLY_AS_ARRAY) == FANLY


def test_the_server_picks_the_first_codec_of_the_offer(server):
    with wirecall.connect(server.address, codecs=["json", "msgpack"]) as client:
        assert client.codec == "json"
    with wirecall.connect(server.address) as client:
        assert client.codec == "msgpack"


def test_raw_reply_shows_the_reply_message(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        raw = client.call_with("UserService", "find", {"user_id": 42}, reply=wirecall.Reply.RAW)
        if codec == "json":
            assert raw == {"ok": None, "err": {"user_id": 42, "reason": "no such user"}}
        else:
            assert raw == {"ok": None, "err": [42, "no such user"]}


def test_unknown_method_raises_unknown_method_with_code_1(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        with pytest.raises(wirecall.UnknownMethod) as unknown:
            client.call("UserService", "delete_user")
        assert unknown.value.code == 1
        assert isinstance(unknown.value, wirecall.CallError)
        assert "0xfc569b3741c766ac" in unknown.value.message
        # A failed call leaves the connection usable.
        assert client.UserService.get_user_id(name="fanly") == 5


def test_arguments_that_do_not_decode_raise_bad_request(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        with pytest.raises(wirecall.BadRequest) as bad:
            client.UserService.find(user_id="not a number")
        assert bad.value.code == 2



def test_msgpack_arguments_written_as_a_map_by_name_decode_too(server):
    # The wire chapter says the Rust decoder also reads a message written as a map keyed by
    # field name, at any level; pin it with raw frames, every map in a scrambled order.
    import socket

    import msgpack

    from wirecall.wire import FRAME_HEADER, CodecId, FrameKind, client_hello, encode_frame

    host, port = server.address.split(":")
    with socket.create_connection((host, int(port))) as sock, sock.makefile("rb") as stream:
        sock.sendall(client_hello([CodecId.MSGPACK], version=1))
        hello = stream.read(8)
        assert hello[:7] == b"WCAL\x01\x00\x02"  # accepted, version 1, MessagePack
        stream.read(hello[7])  # the server's codec list; version 1 has no extension block
        arguments = msgpack.packb({"user": {"age": 3, "name": "x", "user_id": 2}})
        get_user = wirecall.method_id("UserService", "get_user")
        sock.sendall(encode_frame(FrameKind.REQUEST, 1, get_user, 0, arguments))
        length, kind, _, request_id, _, _ = FRAME_HEADER.unpack(stream.read(FRAME_HEADER.size))
        assert (kind, request_id) == (FrameKind.RESPONSE, 1)
        assert msgpack.unpackb(stream.read(length - 22)) == [[2, "x", 3]]
