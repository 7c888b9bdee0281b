"""A stream's reply metadata and trailers (protocol version 4): `metadata()` and `trailers()`
on the example server's `UserFeed.list_users`, whose handler sets the trailer ``listed``, on a
version 3 connection, an upload's one set of reply metadata, and servers that send a Head
where the protocol forbids one."""

import asyncio
import struct

import pytest

import wirecall
from wirecall import aio
from wirecall.wire import FLAG_METADATA, FrameKind, encode_credit, encode_frame, encode_metadata

from conftest import FANLY, PATIENCE
from test_peer_behaviour import read_client_hello, scripted_server
from test_streams import accepted_v3, end, json_item, read_raw_frame
from test_version2 import read_frame


def run(scenario) -> None:
    """Runs `scenario()`, failing it rather than hanging when it takes over `PATIENCE`."""
    asyncio.run(asyncio.wait_for(scenario(), PATIENCE))


# -- against the example server ---------------------------------------------------------------


def test_list_users_ends_with_its_count_as_a_trailer(server, codec):
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            assert client.protocol_version == 6
            users = client.stream("UserFeed", "list_users", count=3)
            assert users.trailers() is None
            # list_users sets no reply metadata; asking for it takes no item.
            assert await users.metadata() == {}
            first = await users.__anext__()
            assert users.trailers() is None  # items remain: the iteration has not reached the end
            rest = [user async for user in users]
            assert [user["user_id"] if codec == "json" else user[0] for user in [first, *rest]] == [1, 2, 3]
            assert users.trailers() == {"listed": "3"}
            # A copy each time: the caller may change it.
            users.trailers()["listed"] = "changed"
            assert users.trailers() == {"listed": "3"}

    run(scenario)


def test_list_users_trailer_with_the_blocking_client(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        with client.stream("UserFeed", "list_users", count=3) as users:
            assert users.metadata() == {}
            assert users.trailers() is None
            first = next(users)
            assert users.trailers() is None
            assert len([first, *users]) == 3
            assert users.trailers() == {"listed": "3"}
        # Through the proxy too, and for an empty stream.
        empty = client.UserFeed.list_users(count=0)
        assert list(empty) == []
        assert empty.trailers() == {"listed": "0"}


def test_a_stream_closed_before_its_end_has_no_trailers(server):
    async def scenario():
        async with await aio.connect(server.address) as client:
            users = client.stream("UserFeed", "list_users", count=1000)
            await users.__anext__()
            await users.aclose()
            assert users.trailers() is None
            assert [user async for user in users] == []
            assert users.trailers() is None

    run(scenario)


def test_a_version_3_connection_gets_empty_metadata_and_trailers(server, codec):
    with wirecall.connect(server.address, codecs=[codec], protocol_version=3) as client:
        assert client.protocol_version == 3
        users = client.stream("UserFeed", "list_users", count=3)
        assert users.metadata() == {}
        assert len(list(users)) == 3
        assert users.trailers() == {}


def test_an_upload_returns_its_reply_metadata(server, codec):
    with wirecall.connect(server.address, codecs=[codec]) as client:
        # import_users sets no metadata: an empty set beside the reply.
        assert client.upload_with_metadata("UserFeed", "import_users", None, [FANLY, FANLY]) == (2, {})


# -- against scripted peers ------------------------------------------------------------------


def accepted_v4(codec_id=1):
    """A version 4 server hello accepting `codec_id`, without extensions."""
    return b"WCAL" + bytes([4, 0, codec_id, 1, codec_id]) + b"\x00\x00"


def head(request_id, metadata, flags=FLAG_METADATA, after=b""):
    """A Head frame carrying `metadata`; `flags` and `after` (bytes after the block) break it."""
    return encode_frame(FrameKind.HEAD, request_id, payload=encode_metadata(metadata) + after, flags=flags)


def end_with_trailers(request_id, trailers):
    return encode_frame(FrameKind.END, request_id, payload=encode_metadata(trailers), flags=FLAG_METADATA)


def error_with_trailers(request_id, trailers, code, message):
    payload = encode_metadata(trailers) + struct.pack(">H", code) + message.encode()
    return encode_frame(FrameKind.ERROR, request_id, payload=payload, flags=FLAG_METADATA)


async def answer_calls(reader, writer, seen):
    """Records the kind of every frame the client sends next, answering each Request with
    ``{"value": true}``, until the client closes the connection."""
    while True:
        try:
            header, _ = await read_frame(reader)
        except asyncio.IncompleteReadError:
            break
        seen.append(FrameKind(header[1]))
        if header[1] == FrameKind.REQUEST:
            writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":true}'))
            await writer.drain()
    writer.close()


def stream_answered_with(frames, hello=accepted_v4, seen=None):
    """A server that reads the Open and its Credit, sends `frames` for stream 1, then answers
    calls (recording their kinds in `seen`)."""

    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(hello())
        await read_raw_frame(reader)
        await read_raw_frame(reader)
        writer.write(frames)
        await writer.drain()
        await answer_calls(reader, writer, [] if seen is None else seen)

    return serve


def test_metadata_comes_with_the_head_before_any_item():
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v4())
        await read_raw_frame(reader)
        await read_raw_frame(reader)
        writer.write(head(1, {"unit": "item", "shared": "head"}))
        await writer.drain()
        # The items only once the client has made a call: metadata() must not wait for them.
        header, _ = await read_frame(reader)
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":true}'))
        writer.write(json_item(1, {"value": 1}) + end_with_trailers(1, {"count": "1", "shared": "end"}))
        await writer.drain()
        await answer_calls(reader, writer, [])

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            items = client.stream("S", "items")
            assert await items.metadata() == {"unit": "item", "shared": "head"}
            assert items.trailers() is None
            assert await client.call("S", "go") is True
            assert [n async for n in items] == [1]
            # The Head's entries stay the stream's metadata; the trailers are their own set.
            assert await items.metadata() == {"unit": "item", "shared": "head"}
            assert items.trailers() == {"count": "1", "shared": "end"}
            await client.close()

    run(scenario)


def test_an_upload_gets_the_head_and_the_trailers_as_one_set_the_trailers_winning():
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v4())
        await read_raw_frame(reader)
        await read_raw_frame(reader)
        writer.write(encode_credit(1, 8))
        await writer.drain()
        uploaded = 0
        while True:
            header, _ = await read_frame(reader)
            if header[1] == FrameKind.END:
                break
            uploaded += header[1] == FrameKind.ITEM
        writer.write(
            head(1, {"unit": "user", "shared": "head"})
            + json_item(1, {"value": uploaded})
            + end_with_trailers(1, {"shared": "trailer", "count": str(uploaded)})
        )
        await writer.drain()
        await answer_calls(reader, writer, [])

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert await client.upload_with_metadata("S", "count", None, [1, 2]) == (
                2,
                {"unit": "user", "shared": "trailer", "count": "2"},
            )
            await client.close()

    run(scenario)


def test_an_upload_that_fails_carries_the_head_and_the_trailers():
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v4())
        await read_raw_frame(reader)
        await read_raw_frame(reader)
        writer.write(head(1, {"unit": "user"}) + error_with_trailers(1, {"seen": "0"}, 2, "no items wanted"))
        await writer.drain()
        await answer_calls(reader, writer, [])

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            with pytest.raises(wirecall.BadRequest, match="no items wanted") as failed:
                await client.upload("S", "count", [1, 2])
            assert failed.value.metadata == {"unit": "user", "seen": "0"}
            await client.close()

    run(scenario)


def test_an_error_frame_carries_the_streams_trailers():
    frames = json_item(1, {"value": 1}) + error_with_trailers(1, {"failed-at": "2"}, 3, "the producer panicked")

    async def scenario():
        server, port = await scripted_server(stream_answered_with(frames))
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            items = client.stream("S", "items")
            taken = []
            with pytest.raises(wirecall.HandlerPanicked) as panicked:
                async for n in items:
                    taken.append(n)
            assert taken == [1]
            assert panicked.value.metadata == items.trailers() == {"failed-at": "2"}
            await client.close()

    run(scenario)


def test_an_err_item_is_raised_once_the_end_behind_it_brought_the_trailers():
    frames = (
        json_item(1, {"ok": 7, "err": None})
        + json_item(1, {"ok": None, "err": "gone"})
        + end_with_trailers(1, {"reason": "gone"})
    )
    seen = []

    async def scenario():
        server, port = await scripted_server(stream_answered_with(frames, seen=seen))
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            results = client.stream_with("Logs", "tail", {}, reply=wirecall.Reply.RESULT)
            assert await results.__anext__() == 7
            with pytest.raises(wirecall.ApplicationError, match="gone"):
                await results.__anext__()
            assert results.trailers() == {"reason": "gone"}
            assert await client.call("S", "m") is True
            await client.close()

    run(scenario)
    # The stream ended with the server's End: nothing to cancel.
    assert [kind for kind in seen if kind != FrameKind.CREDIT] == [FrameKind.REQUEST]


def test_a_blocking_stream_has_trailers_only_once_its_caller_reaches_the_err_item():
    # The items, the err item and the end come over from the event loop together; the
    # asyncio stream has reached its end before the blocking caller has.
    frames = (
        json_item(1, {"ok": 7, "err": None})
        + json_item(1, {"ok": 8, "err": None})
        + json_item(1, {"ok": None, "err": "gone"})
        + end_with_trailers(1, {"reason": "gone"})
    )

    def read_blocking(port):
        with wirecall.connect("127.0.0.1", port, codecs=["json"]) as client:
            results = client.stream_with("Logs", "tail", {}, reply=wirecall.Reply.RESULT)
            assert next(results) == 7
            assert results.trailers() is None
            assert next(results) == 8
            assert results.trailers() is None
            with pytest.raises(wirecall.ApplicationError, match="gone"):
                next(results)
            assert results.trailers() == {"reason": "gone"}

    async def scenario():
        server, port = await scripted_server(stream_answered_with(frames))
        async with server:
            await asyncio.get_running_loop().run_in_executor(None, read_blocking, port)

    run(scenario)


@pytest.mark.parametrize(
    "bad_head, complaint",
    [
        (head(1, {"k": "v"}, flags=0), "lacks the metadata flag"),
        (encode_frame(FrameKind.HEAD, 1, payload=bytes.fromhex("00 01 01") + b"K" + bytes(2), flags=FLAG_METADATA), "malformed"),
        (head(1, {"k": "v"}, after=b"x"), "1 bytes after its metadata block"),
    ],
)
def test_a_bad_head_fails_only_its_stream(bad_head, complaint):
    seen = []
    frames = bad_head + json_item(1, {"value": 1}) + end(1)

    async def scenario():
        server, port = await scripted_server(stream_answered_with(frames, seen=seen))
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            items = client.stream("S", "items")
            with pytest.raises(wirecall.ProtocolError, match=complaint):
                async for _ in items:
                    pass
            assert await items.metadata() == {}
            assert items.trailers() is None
            assert not client.is_closed
            assert await client.call("S", "m") is True
            await client.close()

    run(scenario)
    # The client told the server to stop the stream, then carried on.
    assert [kind for kind in seen if kind != FrameKind.CREDIT] == [FrameKind.CANCEL, FrameKind.REQUEST]


@pytest.mark.parametrize(
    "frames, taken_before",
    [
        (json_item(1, {"value": 1}) + head(1, {"late": "yes"}), [1]),
        (head(1, {"first": "yes"}) + head(1, {"second": "yes"}), []),
    ],
    ids=["after-an-item", "a-second-head"],
)
def test_a_head_after_an_item_or_a_head_closes_the_connection(frames, taken_before):
    async def scenario():
        server, port = await scripted_server(stream_answered_with(frames))
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            taken = []
            with pytest.raises(wirecall.ConnectionClosed, match="sent a Head on stream 1 after its Head or an item"):
                async for n in client.stream("S", "items"):
                    taken.append(n)
            assert taken == taken_before
            assert client.is_closed
            await client.close()

    run(scenario)


def test_a_head_on_a_version_3_connection_is_a_protocol_violation():
    frames = head(1, {"k": "v"}) + json_item(1, {"value": 1}) + end(1)

    async def scenario():
        server, port = await scripted_server(stream_answered_with(frames, hello=accepted_v3))
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert client.protocol_version == 3
            items = client.stream("S", "items")
            # The connection closed before the stream answered: no metadata, and the failure.
            assert await items.metadata() == {}
            with pytest.raises(wirecall.ConnectionClosed, match="a HEAD frame on a version 3 connection"):
                async for _ in items:
                    pass
            assert client.is_closed
            await client.close()

    run(scenario)


def test_a_head_for_a_stream_that_is_not_open_is_discarded():
    # A Head that crossed the stream's Cancel, or names no stream at all.
    frames = head(9, {"k": "v"}) + json_item(1, {"value": 1}) + end_with_trailers(1, {"n": "1"})

    async def scenario():
        server, port = await scripted_server(stream_answered_with(frames))
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            items = client.stream("S", "items")
            assert [n async for n in items] == [1]
            assert await items.metadata() == {}
            assert items.trailers() == {"n": "1"}
            assert not client.is_closed
            await client.close()

    run(scenario)
