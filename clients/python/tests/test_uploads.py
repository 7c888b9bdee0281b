"""Uploads (client streaming) and bidirectional streams (protocol version 3): every shape in
both clients and both codecs, items sent only with the server's credit, the early answer, the
deadline, Cancel on close, the caller's items failing, against the example server's
`UserFeed.import_users` and `UserFeed.rename`; then a server that breaks the rules, scripted.
"""

import asyncio
import itertools
import json
import struct
import threading
from typing import Any, Dict, Iterable, Iterator, List

import msgpack
import pytest

import wirecall
from wirecall import aio
from wirecall.stream import FIRST_GRANT
from wirecall.wire import FrameKind, decode_metadata, encode_frame

from conftest import PATIENCE, eventually
from test_peer_behaviour import read_client_hello, scripted_server
from test_streams import Relay, accepted_v3, as_sent, end, json_item, read_raw_frame, relay  # noqa: F401
from test_version2 import read_frame

RESERVED = {"user_id": 0, "reason": "user id 0 is reserved"}


def users(count: int, start: int = 1) -> List[Dict[str, Any]]:
    return [{"user_id": n, "name": f"user{n}", "age": 18 + n % 50} for n in range(start, start + count)]


def renamed(originals: List[Dict[str, Any]], prefix: str) -> List[Dict[str, Any]]:
    return [{**user, "name": prefix + user["name"]} for user in originals]


def endless(first: Iterable[Dict[str, Any]] = ()) -> Iterator[Dict[str, Any]]:
    """`first`, then users 1, 2, 3, ... (as `users` makes them) without end."""
    yield from first
    for n in itertools.count(1):
        yield {"user_id": n, "name": f"user{n}", "age": 18 + n % 50}


class Counted:
    """An iterable that counts the items the client pulled from it, and whether it was left
    for good (a generator closed, or pulled to its end)."""

    def __init__(self, items: Iterable[Any]):
        self._items = items
        self.pulled = 0

    def __iter__(self) -> Iterator[Any]:
        for item in self._items:
            self.pulled += 1
            yield item


async def async_users(originals: List[Dict[str, Any]]):
    for user in originals:
        await asyncio.sleep(0)
        yield user


# -- against the example server ---------------------------------------------------------------


def test_uploads_return_the_reply_in_each_codec_and_every_shape(server, codec):
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            # Without a proxy: a list, a generator, an async generator, nothing at all.
            assert await client.upload("UserFeed", "import_users", users(3)) == 3
            assert await client.upload("UserFeed", "import_users", (user for user in users(4))) == 4
            assert await client.upload("UserFeed", "import_users", async_users(users(5))) == 5
            assert await client.upload("UserFeed", "import_users", []) == 0
            assert await client.upload_with("UserFeed", "import_users", {}, iter(users(2)), timeout=5) == 2
            # Through the proxy: the upload is the one positional argument.
            assert await client.UserFeed.import_users(users(6)) == 6
            assert await client.UserFeed.import_users(async_users(users(7))) == 7
            assert await client.UserFeed.import_users(()) == 0
            assert await asyncio.create_task(client.UserFeed.import_users(users(1))) == 1
            assert not client._streams

    asyncio.run(scenario())
    with wirecall.connect(server.address, codecs=[codec]) as client:
        assert client.upload("UserFeed", "import_users", users(3)) == 3
        assert client.upload_with("UserFeed", "import_users", {}, (user for user in users(4)), timeout=5) == 4
        assert client.UserFeed.import_users(users(5)) == 5
        assert client.UserFeed.import_users([]) == 0


def test_bidirectional_streams_in_each_codec_and_every_shape(server, codec):
    sent = users(5)
    expected = renamed(sent, "new-")

    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            raw = [user async for user in client.bidi("UserFeed", "rename", sent, prefix="new-")]
            assert raw == as_sent(expected, codec)
            with_options = client.bidi_with("UserFeed", "rename", {"prefix": "new-"}, async_users(sent), timeout=5, window=2)
            assert [user async for user in with_options] == as_sent(expected, codec)
            # Through the proxy, items are read by the schema in both codecs.
            assert [user async for user in client.UserFeed.rename(iter(sent), prefix="new-")] == expected
            assert [user async for user in client.UserFeed.rename(async_users(sent), prefix="new-")] == expected
            # Awaited, the proxy call opens the stream and returns it, as for server streams.
            stream = await client.UserFeed.rename(sent, prefix="new-")
            assert stream.request_id is not None and "bidirectional stream UserFeed.rename" in repr(stream)
            assert [user async for user in stream] == expected
            async with client.UserFeed.rename(sent, prefix="x") as stream:
                assert [user async for user in stream] == renamed(sent, "x")
            assert [user async for user in client.UserFeed.rename([], prefix="new-")] == []
            assert not client._streams

    asyncio.run(scenario())
    with wirecall.connect(server.address, codecs=[codec]) as client:
        assert list(client.UserFeed.rename(sent, prefix="new-")) == expected
        assert list(client.UserFeed.rename((user for user in sent), prefix="new-")) == expected
        assert list(client.bidi("UserFeed", "rename", iter(sent), prefix="new-")) == as_sent(expected, codec)
        with client.bidi_with("UserFeed", "rename", {"prefix": "new-"}, sent, window=1) as stream:
            assert list(stream) == as_sent(expected, codec)
        assert list(client.UserFeed.rename([], prefix="new-")) == []


def test_a_large_upload_goes_as_the_credit_is_topped_up(relay, codec):
    # 10,000 items are far more than any one grant: the upload completes only if the client
    # sends as the server grants more, and the bidirectional stream needs both ways' credit.
    many = users(10_000)

    async def scenario():
        async with await aio.connect(relay.address, codecs=[codec]) as client:
            assert await client.UserFeed.import_users(many) == 10_000
            (opened,) = relay.sent(FrameKind.OPEN)
            items = [frame for frame in relay.sent(FrameKind.ITEM) if frame.request_id == opened.request_id]
            assert len(items) == 10_000
            ends = [frame for frame in relay.sent(FrameKind.END) if frame.request_id == opened.request_id]
            assert len(ends) == 1
            first = items[0].payload
            assert (json.loads(first) if codec == "json" else msgpack.unpackb(first)) == (
                {"value": many[0]} if codec == "json" else [many[0]]
            )
            back = [user async for user in client.UserFeed.rename(async_users(many), prefix="n")]
            assert back == renamed(many, "n")

    asyncio.run(scenario())
    with wirecall.connect(relay.address, codecs=[codec]) as client:
        assert client.UserFeed.import_users(iter(many)) == 10_000
        assert sum(1 for _ in client.UserFeed.rename(many, prefix="n")) == 10_000


def test_the_open_carries_the_other_arguments_metadata_and_deadline_then_items_and_one_end(relay):
    with wirecall.connect(relay.address, codecs=["json"], metadata={"tenant": "acme"}) as client:
        assert list(client.bidi_with("UserFeed", "rename", {"prefix": "p"}, users(2), timeout=5, metadata={"request-id": "r-1"})) == renamed(users(2), "p")
        assert client.upload_with("UserFeed", "import_users", {}, users(1), timeout=None) == 1
    (bidi, upload) = relay.sent(FrameKind.OPEN)
    assert bidi.method_id == wirecall.method_id("UserFeed", "rename") and bidi.deadline_ms == 5000
    assert decode_metadata(bidi.payload) == ({"tenant": "acme", "request-id": "r-1"}, b'{"prefix":"p"}')
    assert upload.method_id == wirecall.method_id("UserFeed", "import_users") and upload.deadline_ms == 0
    assert decode_metadata(upload.payload) == ({"tenant": "acme"}, b"{}")
    kinds = [(frame.kind, frame.payload) for frame in relay.frames if frame.request_id == bidi.request_id]
    assert kinds[:2] == [(FrameKind.OPEN, bidi.payload), (FrameKind.CREDIT, struct.pack(">I", FIRST_GRANT))]
    # Later Credits (the window widening as items are read) may fall between the items.
    assert [kind for kind in kinds[2:] if kind[0] != FrameKind.CREDIT] == [
        (FrameKind.ITEM, json.dumps({"value": user}, separators=(",", ":")).encode()) for user in users(2)
    ] + [(FrameKind.END, b"")]


def test_an_early_answer_stops_an_endless_upload_at_once(server, codec):
    zero = {"user_id": 0, "name": "zero", "age": 1}

    async def endless_async():
        for user in endless([zero]):
            await asyncio.sleep(0)
            yield user

    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            source = Counted(endless([zero]))
            with pytest.raises(wirecall.ApplicationError) as refused:
                await asyncio.wait_for(client.UserFeed.import_users(source), PATIENCE)
            assert refused.value.error == RESERVED
            pulled = source.pulled
            # Pulled no further than the server's credit, and not at all once answered.
            assert 1 <= pulled <= 65_536
            assert await client.UserService.get_user_id(name="fanly") == 5
            assert source.pulled == pulled
            assert not client._streams
            # Without a proxy the error is as the codec carries it; from an async generator too.
            with pytest.raises(wirecall.ApplicationError) as refused:
                await asyncio.wait_for(client.upload("UserFeed", "import_users", endless_async()), PATIENCE)
            assert refused.value.error == (RESERVED if codec == "json" else [0, RESERVED["reason"]])
            # A bad item after good ones: the same answer.
            with pytest.raises(wirecall.ApplicationError):
                await client.UserFeed.import_users(users(3) + [zero] + users(3))

    asyncio.run(scenario())
    # The blocking client's timeout makes a hang fail the test rather than stall it.
    with wirecall.connect(server.address, codecs=[codec], timeout=PATIENCE) as client:
        source = Counted(endless([zero]))
        with pytest.raises(wirecall.ApplicationError) as refused:
            client.UserFeed.import_users(source)
        assert refused.value.error == RESERVED
        # A pull the upload's thread had under way when the answer came finishes (a thread is
        # not interrupted), and its item is dropped; the thread then ends, and nothing more
        # is pulled.
        pulled = source.pulled
        asyncio.run(eventually("the upload's thread ends", lambda: not upload_threads()))
        assert source.pulled in (pulled, pulled + 1) and 1 <= source.pulled <= 65_536
        pulled = source.pulled
        assert client.UserService.get_user_id(name="fanly") == 5
        assert source.pulled == pulled


def upload_threads() -> List[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "wirecall-upload"]


def test_the_timeout_bounds_the_whole_upload(relay, codec):
    async def scenario():
        async with await aio.connect(relay.address, codecs=[codec]) as client:
            left = asyncio.Event()

            async def one_then_stalled():
                try:
                    yield users(1)[0]
                    await asyncio.Event().wait()
                finally:
                    left.set()

            # The server's deadline and the client's pass together: either may be seen first.
            with pytest.raises(wirecall.DeadlineExceeded):
                await client.upload_with("UserFeed", "import_users", {}, one_then_stalled(), timeout=0.3)
            # The stalled pull was stopped, not left waiting.
            await asyncio.wait_for(left.wait(), PATIENCE)
            with pytest.raises(wirecall.DeadlineExceeded):
                async for _ in client.bidi_with("UserFeed", "rename", {"prefix": "p"}, one_then_stalled(), timeout=0.3):
                    pass
            assert not client._streams
            assert await client.UserService.get_user_id(name="fanly") == 5

    asyncio.run(scenario())
    release = threading.Event()

    def blocking_source():
        yield users(1)[0]
        release.wait(PATIENCE)
        yield users(1, start=2)[0]

    with wirecall.connect(relay.address, codecs=[codec]) as client:
        source = Counted(blocking_source())
        with pytest.raises(wirecall.DeadlineExceeded):
            client.upload_with("UserFeed", "import_users", {}, source, timeout=0.3)
        release.set()
        asyncio.run(eventually("the blocked pull returns", lambda: source.pulled == 2))
        assert client.UserService.get_user_id(name="fanly") == 5
        assert source.pulled == 2


def test_a_blocking_generator_does_not_hold_up_other_calls(server):
    with wirecall.connect(server.address) as client:
        others_done = threading.Event()

        def waits_for_another_call():
            yield users(1)[0]
            # Blocks until a call on the same connection, from another thread, has its reply.
            assert others_done.wait(PATIENCE)
            yield users(1, start=2)[0]

        def another_call():
            assert client.UserService.get_user_id(name="fanly") == 5
            others_done.set()

        helper = threading.Thread(target=another_call)
        helper.start()
        assert client.UserFeed.import_users(waits_for_another_call()) == 2
        helper.join(PATIENCE)
        assert others_done.is_set()


def test_leaving_a_bidirectional_stream_cancels_it_and_stops_the_upload(relay, codec):
    async def scenario():
        async with await aio.connect(relay.address, codecs=[codec]) as client:
            source = Counted(endless())
            async for user in client.UserFeed.rename(source, prefix="x"):
                assert user == renamed(users(1), "x")[0]
                break
            (opened,) = relay.sent(FrameKind.OPEN)
            await eventually("the Cancel reaches the server", lambda: relay.cancelled(opened.request_id))
            pulled = source.pulled
            assert await client.UserService.get_user_id(name="after") == 5
            assert source.pulled == pulled
            assert not client._streams

            stream = client.bidi("UserFeed", "rename", endless(), prefix="x")
            assert await stream.__anext__() == as_sent(renamed(users(1), "x"), codec)[0]
            await stream.aclose()
            await eventually("aclose() sends a Cancel", lambda: relay.cancelled(stream.request_id))

            async with client.UserFeed.rename(endless(), prefix="x") as stream:
                await stream.__anext__()
            await eventually("leaving async with sends a Cancel", lambda: relay.cancelled(stream.request_id))

            # A cancelled task cancels its upload.
            uploading = asyncio.ensure_future(client.UserFeed.import_users(endless()))
            await eventually("the upload has started", lambda: len(relay.sent(FrameKind.OPEN)) == 4)
            opened = relay.sent(FrameKind.OPEN)[-1]
            await eventually("items go up", lambda: any(frame.request_id == opened.request_id for frame in relay.sent(FrameKind.ITEM)))
            uploading.cancel()
            with pytest.raises(asyncio.CancelledError):
                await uploading
            await eventually("a cancelled task sends a Cancel", lambda: relay.cancelled(opened.request_id))
            assert not client._streams
            assert await client.UserFeed.import_users(users(2)) == 2

    asyncio.run(scenario())
    with wirecall.connect(relay.address, codecs=[codec]) as client:
        source = Counted(endless())
        for _ in client.UserFeed.rename(source, prefix="x"):
            break
        opened = relay.sent(FrameKind.OPEN)[-1]
        asyncio.run(eventually("the Cancel reaches the server", lambda: relay.cancelled(opened.request_id)))
        assert client.UserService.get_user_id(name="after") == 5
        with client.bidi("UserFeed", "rename", endless(), prefix="x") as stream:
            next(stream)
        asyncio.run(eventually("leaving with sends a Cancel", lambda: relay.cancelled(stream.request_id)))
        assert client.UserFeed.import_users(users(2)) == 2


class NoMoreUsers(Exception):
    pass


def failing_after(count: int) -> Iterator[Dict[str, Any]]:
    yield from users(count)
    raise NoMoreUsers("the source ran dry")


def test_an_exception_from_the_callers_items_cancels_and_reaches_the_caller(relay, codec):
    async def failing_async():
        yield users(1)[0]
        raise NoMoreUsers("the async source ran dry")

    async def scenario():
        async with await aio.connect(relay.address, codecs=[codec]) as client:
            with pytest.raises(NoMoreUsers, match="ran dry"):
                await client.UserFeed.import_users(failing_after(2))
            (opened,) = relay.sent(FrameKind.OPEN)
            await eventually("the Cancel reaches the server", lambda: relay.cancelled(opened.request_id))
            with pytest.raises(NoMoreUsers, match="async source"):
                await client.upload("UserFeed", "import_users", failing_async())
            taken = []
            with pytest.raises(NoMoreUsers):
                async for user in client.UserFeed.rename(failing_after(3), prefix="x"):
                    taken.append(user)
            # What came back before the failure is delivered first.
            assert taken == renamed(users(3), "x")[: len(taken)]
            # An item that cannot be encoded fails the same way.
            with pytest.raises(TypeError):
                await client.UserFeed.import_users([{"user_id": 1, "name": {1, 2}, "age": 1}])
            assert not client._streams
            assert await client.UserFeed.import_users(users(2)) == 2

    asyncio.run(scenario())
    with wirecall.connect(relay.address, codecs=[codec]) as client:
        with pytest.raises(NoMoreUsers):
            client.UserFeed.import_users(failing_after(2))
        with pytest.raises(NoMoreUsers):
            for _ in client.bidi("UserFeed", "rename", failing_after(2), prefix="x"):
                pass

        def interrupted():
            yield users(1)[0]
            raise KeyboardInterrupt

        # Raised in the upload's thread, it must not stop the client's event loop: it reaches
        # the caller wrapped.
        with pytest.raises(RuntimeError, match="the upload's items raised KeyboardInterrupt") as wrapped:
            client.UserFeed.import_users(interrupted())
        assert isinstance(wrapped.value.__cause__, KeyboardInterrupt)
        assert client.UserFeed.import_users(users(2)) == 2


def test_the_proxy_checks_the_upload_against_the_schema(server, codec):
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            schema = await client.describe("UserFeed")
            assert schema.methods["import_users"].upload == {"Named": "UserModel"}
            assert not schema.methods["import_users"].server_stream
            assert schema.methods["rename"].server_stream and schema.methods["list_users"].upload is None
            assert schema.methods["import_users"].describe() == "(Streaming<UserModel>) -> Result<u32, NotFound>"
            assert schema.methods["rename"].describe() == "(Streaming<UserModel>, prefix: String) -> Streaming<UserModel>"
            with pytest.raises(TypeError, match="takes its upload, Streaming<UserModel>, as its first positional"):
                await client.UserFeed.import_users()
            with pytest.raises(TypeError, match="takes its upload"):
                async for _ in client.UserFeed.rename(prefix="x"):
                    pass
            with pytest.raises(TypeError, match="takes no upload"):
                await client.UserService.get_user_id(users(1), name="x")
            with pytest.raises(TypeError, match="takes no upload"):
                async for _ in client.UserFeed.list_users(users(1), count=1):
                    pass
            with pytest.raises(TypeError, match="an upload with one reply, so it cannot be iterated"):
                async for _ in client.UserFeed.import_users(users(1)):
                    pass
            with pytest.raises(TypeError, match="missing 'prefix'"):
                async for _ in client.UserFeed.rename(users(1)):
                    pass
            with pytest.raises(TypeError, match="at most one positional argument"):
                client.UserFeed.rename(users(1), users(1), prefix="x")
            with pytest.raises(TypeError, match="not a str"):
                await client.UserFeed.import_users("users")
            with pytest.raises(TypeError, match="not int"):
                client.bidi("UserFeed", "rename", 3, prefix="x")
            assert not client._streams
            assert await client.UserService.get_user_id(name="fanly") == 5

    asyncio.run(scenario())
    with wirecall.connect(server.address, codecs=[codec]) as client:
        with pytest.raises(TypeError, match="takes its upload"):
            client.UserFeed.import_users()
        with pytest.raises(TypeError, match="takes its upload"):
            client.UserFeed.rename(prefix="x")
        with pytest.raises(TypeError, match="takes no upload"):
            client.UserFeed.list_users(users(1), count=1)


def test_a_version_2_connection_refuses_uploads_before_sending_anything(relay):
    async def scenario():
        async with await aio.connect(relay.address, protocol_version=2) as client:
            with pytest.raises(wirecall.StreamsUnsupported, match="speaks version 2"):
                await client.upload("UserFeed", "import_users", users(1))
            with pytest.raises(wirecall.StreamsUnsupported):
                client.bidi("UserFeed", "rename", users(1), prefix="x")
            with pytest.raises(wirecall.StreamsUnsupported):
                await client.UserFeed.import_users(users(1))
            with pytest.raises(wirecall.StreamsUnsupported):
                async for _ in client.UserFeed.rename(users(1), prefix="x"):
                    pass
            assert await client.UserService.get_user_id(name="fanly") == 5

    asyncio.run(scenario())
    with wirecall.connect(relay.address, protocol_version=2) as client:
        with pytest.raises(wirecall.StreamsUnsupported):
            client.upload("UserFeed", "import_users", users(1))
        with pytest.raises(wirecall.StreamsUnsupported):
            client.UserFeed.rename(users(1), prefix="x")
    assert relay.sent(FrameKind.OPEN) == relay.sent(FrameKind.ITEM) == relay.sent(FrameKind.END) == []


# -- against scripted peers ------------------------------------------------------------------

IMPORT_USERS = wirecall.method_id("UserFeed", "import_users")


def credit_frame(request_id: int, payload: bytes) -> bytes:
    return encode_frame(FrameKind.CREDIT, request_id, payload=payload)


def grant(request_id: int, granted: int) -> bytes:
    return credit_frame(request_id, struct.pack(">I", granted))


async def accept_and_read_open(reader, writer):
    """The hello, then the client's Open and first Credit; returns the Open's header."""
    await read_client_hello(reader)
    writer.write(accepted_v3())
    header, _ = await read_frame(reader)
    assert header[1] == FrameKind.OPEN
    _, kind, _, _, _, _ = (await read_frame(reader))[0]
    assert kind == FrameKind.CREDIT
    return header


async def forever():
    """An upload whose first item never comes: the client waits on it, holding its credit."""
    await asyncio.Event().wait()
    yield None


@pytest.mark.parametrize("blocking", [False, True], ids=["asyncio", "blocking"])
def test_items_go_only_with_credit_and_the_end_after_the_last(blocking):
    # The blocking client pulls in a thread of the upload's own, ahead of sending, as far as
    # the credit goes: never further.
    source = Counted(users(6))
    seen = []

    async def serve(reader, writer):
        await accept_and_read_open(reader, writer)
        granted = 0
        for more in (2, 1, 3):
            writer.write(grant(1, more))
            await writer.drain()
            granted += more
            for _ in range(more):
                header, payload = await read_frame(reader)
                seen.append((FrameKind(header[1]), json.loads(payload)["value"]["user_id"]))
            # Out of credit, the client sends nothing more for the stream, and has pulled no
            # item it could not send: the Pong comes next.
            writer.write(encode_frame(FrameKind.PING, 77))
            await writer.drain()
            header, _ = await read_frame(reader)
            seen.append(FrameKind(header[1]))
            assert source.pulled == granted
        # The end is found by the pull that more credit allows.
        writer.write(grant(1, 1))
        await writer.drain()
        header, _ = await read_frame(reader)
        seen.append(FrameKind(header[1]))
        writer.write(json_item(1, {"ok": 6, "err": None}) + end(1))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            if blocking:
                def upload():
                    with wirecall.connect("127.0.0.1", port, codecs=["json"]) as client:
                        return client.upload("UserFeed", "import_users", source)

                assert await asyncio.get_running_loop().run_in_executor(None, upload) == 6
                return
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert await client.upload("UserFeed", "import_users", source) == 6
            assert not client._streams
            await client.close()

    asyncio.run(scenario())
    item = FrameKind.ITEM
    assert seen == [
        (item, 1), (item, 2), FrameKind.PONG, (item, 3), FrameKind.PONG,
        (item, 4), (item, 5), (item, 6), FrameKind.PONG, FrameKind.END,
    ]


def test_an_answer_before_any_credit_pulls_nothing_and_sends_nothing_more():
    source = Counted(endless())
    after_answer = []

    async def serve(reader, writer):
        await accept_and_read_open(reader, writer)
        writer.write(json_item(1, {"ok": None, "err": RESERVED}) + end(1))
        # Credit that crossed the answer finds no stream and is discarded.
        writer.write(grant(1, 5))
        await writer.drain()
        header, _ = await read_frame(reader)
        after_answer.append((FrameKind(header[1]), header[3]))
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":5}'))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            with pytest.raises(wirecall.ApplicationError) as refused:
                await client.upload("UserFeed", "import_users", source)
            assert refused.value.error == RESERVED
            assert await client.call("UserService", "get_user_id", name="fanly") == 5
            assert source.pulled == 0
            await client.close()

    asyncio.run(scenario())
    assert after_answer == [(FrameKind.REQUEST, 2)]


def open_upload(client):
    return client.upload("UserFeed", "import_users", forever())


async def open_server_stream(client):
    async for _ in client.stream("UserFeed", "list_users", count=3):
        pass


SHAPES = {"upload": open_upload, "server stream": open_server_stream}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("credits, complaint", [
    ([struct.pack(">I", 65_536), struct.pack(">I", 1)], "outstanding credit to 65537, over the limit of 65536"),
    ([struct.pack(">I", 40_000), struct.pack(">I", 40_000)], "outstanding credit to 80000"),
    ([struct.pack(">I", 0)], "granted 0 items"),
    ([b"\x00\x00\x01"], "must be 4 bytes, not 3"),
    ([b"\x00\x00\x00\x01\x00"], "must be 4 bytes, not 5"),
    ([b""], "must be 4 bytes, not 0"),
])
def test_a_credit_that_breaks_the_rules_closes_the_connection(shape, credits, complaint):
    async def serve(reader, writer):
        await accept_and_read_open(reader, writer)
        for payload in credits:
            writer.write(credit_frame(1, payload))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            with pytest.raises(wirecall.ConnectionClosed, match=complaint) as closed:
                await asyncio.wait_for(SHAPES[shape](client), PATIENCE)
            assert isinstance(closed.value.cause, wirecall.ProtocolError)
            assert client.is_closed and not client._streams
            await client.close()

    asyncio.run(scenario())


def test_a_malformed_credit_for_a_stream_that_ended_still_breaks_the_connection():
    async def serve(reader, writer):
        await accept_and_read_open(reader, writer)
        writer.write(json_item(1, {"ok": 1, "err": None}) + end(1) + credit_frame(1, b"\x01"))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert await client.upload("UserFeed", "import_users", forever()) == 1
            await eventually("the client closes on the bad Credit", lambda: client.is_closed)
            with pytest.raises(wirecall.ConnectionClosed, match="must be 4 bytes"):
                await client.call("UserService", "get_user_id", name="fanly")
            await client.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("garbage, complaint", [
    # A short bogus frame and then nothing: refused on its length, not waited on.
    (b"\x00\x00\x00\x05hello", "a frame length of 5"),
    (b"\xff\xff\xff\xff" + bytes(22), "a frame length of 4294967295"),
    (struct.pack(">IBBQQI", 22, 42, 0, 1, 0, 0), "unknown kind 42"),
    (encode_frame(FrameKind.ITEM, 1, payload=b'{"value":1}', flags=0x01), "ITEM frame with flags 0x01"),
    (encode_frame(FrameKind.OPEN, 1, 5), "OPEN frame from the server"),
    (encode_frame(FrameKind.CANCEL, 1), "CANCEL frame from the server"),
])
def test_garbage_on_an_open_stream_closes_the_connection(shape, garbage, complaint):
    async def serve(reader, writer):
        await accept_and_read_open(reader, writer)
        writer.write(garbage)
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            with pytest.raises(wirecall.ConnectionClosed, match=complaint) as closed:
                await asyncio.wait_for(SHAPES[shape](client), PATIENCE)
            assert isinstance(closed.value.cause, wirecall.ProtocolError)
            await client.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("answer, failure, complaint", [
    (end(1), wirecall.ProtocolError, "ended the upload UserFeed.import_users without a reply"),
    (json_item(1, {"ok": 1, "err": None}) + json_item(1, {"ok": 2, "err": None}) + end(1), wirecall.ProtocolError, "more than one reply"),
    (encode_frame(FrameKind.ITEM, 1, payload=b"not json") + end(1), wirecall.DecodeError, "did not decode"),
    (json_item(1, {"ok": 1, "err": None}) + encode_frame(FrameKind.ERROR, 1, IMPORT_USERS, 0, struct.pack(">H", 3) + b"boom"), wirecall.HandlerPanicked, "boom"),
])
def test_an_upload_answered_against_its_shape_fails_the_call_not_the_connection(answer, failure, complaint):
    async def serve(reader, writer):
        await accept_and_read_open(reader, writer)
        writer.write(answer)
        await writer.drain()
        header, _ = await read_frame(reader)
        while header[1] != FrameKind.REQUEST:  # a Cancel, or Items that crossed the answer
            header, _ = await read_frame(reader)
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":5}'))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            with pytest.raises(failure, match=complaint):
                await asyncio.wait_for(client.upload("UserFeed", "import_users", users(3)), PATIENCE)
            assert not client._streams
            assert await client.call("UserService", "get_user_id", name="fanly") == 5
            await client.close()

    asyncio.run(scenario())


def test_a_connection_lost_mid_upload_or_mid_stream_raises_connection_closed():
    async def cut_after_two_items(reader, writer):
        await accept_and_read_open(reader, writer)
        writer.write(grant(1, 2) + json_item(1, {"value": 1}))
        await writer.drain()
        for _ in range(2):
            await read_frame(reader)
        writer.close()

    async def scenario():
        for shape in ("upload", "bidi"):
            server, port = await scripted_server(cut_after_two_items)
            async with server:
                client = await aio.connect("127.0.0.1", port, codecs=["json"])
                source = Counted(endless())
                taken = []
                with pytest.raises(wirecall.ConnectionClosed):
                    if shape == "upload":
                        await asyncio.wait_for(client.upload("UserFeed", "import_users", source), PATIENCE)
                    else:
                        async for n in client.bidi("UserFeed", "rename", source, prefix="x"):
                            taken.append(n)
                assert taken == ([1] if shape == "bidi" else [])
                # No credit beyond the two items: nothing more was pulled.
                assert source.pulled == 2
                assert client.is_closed
                await client.close()

    asyncio.run(scenario())


def test_a_silent_server_meets_the_uploads_deadline_and_is_cancelled():
    seen = []

    async def silent(reader, writer):
        header = await accept_and_read_open(reader, writer)
        seen.append(header[5])
        writer.write(grant(1, 1))
        await writer.drain()
        header, _ = await read_frame(reader)
        seen.append(FrameKind(header[1]))
        # Then nothing, until the client gives up.
        header, _ = await read_frame(reader)
        seen.append((FrameKind(header[1]), header[3]))
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(silent)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            source = Counted(endless())
            with pytest.raises(wirecall.Timeout, match="did not end within 0.2 s"):
                await client.upload_with("UserFeed", "import_users", {}, source, timeout=0.2)
            assert source.pulled == 1
            assert not client.is_closed and not client._streams
            await client.close()

    asyncio.run(scenario())
    assert seen == [200, FrameKind.ITEM, (FrameKind.CANCEL, 1)]


def test_an_error_frame_mid_upload_stops_the_upload():
    after_error = []
    source = Counted(endless())

    async def serve(reader, writer):
        await accept_and_read_open(reader, writer)
        writer.write(grant(1, 3))
        await writer.drain()
        await read_frame(reader)
        writer.write(encode_frame(FrameKind.ERROR, 1, IMPORT_USERS, 0, struct.pack(">H", 2) + b"bad user"))
        await writer.drain()
        while True:
            header, _ = await read_frame(reader)
            after_error.append(FrameKind(header[1]))
            if header[1] == FrameKind.REQUEST:
                break
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":5}'))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            with pytest.raises(wirecall.BadRequest, match="bad user"):
                await client.upload("UserFeed", "import_users", source)
            pulled = source.pulled
            assert pulled <= 3
            assert await client.call("UserService", "get_user_id", name="fanly") == 5
            assert source.pulled == pulled
            await client.close()

    asyncio.run(scenario())
    # Items that crossed the Error may follow it, but neither an End nor a Cancel: the stream was over.
    assert after_error[-1] == FrameKind.REQUEST
    assert set(after_error[:-1]) <= {FrameKind.ITEM}


def test_without_reflection_an_awaited_upload_is_an_upload_and_an_iterated_one_bidirectional():
    opened = []

    async def no_reflection(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v3())
        while True:
            try:
                header, payload = await read_frame(reader)
            except asyncio.IncompleteReadError:
                break
            _, kind, _, request_id, method, _ = header
            if kind == FrameKind.REQUEST:  # reflection, which this server does not serve
                error = struct.pack(">H", 1) + b"no service on this server has that method id"
                writer.write(encode_frame(FrameKind.ERROR, request_id, method, 0, error))
            elif kind == FrameKind.OPEN:
                opened.append((method, payload))
                writer.write(grant(request_id, 8))
            elif kind == FrameKind.ITEM and opened[-1][0] == wirecall.method_id("Anything", "echo"):
                writer.write(encode_frame(FrameKind.ITEM, request_id, payload=payload))
            elif kind == FrameKind.ITEM:
                writer.write(grant(request_id, 1))
            elif kind == FrameKind.END:
                if opened[-1][0] == wirecall.method_id("Anything", "count"):
                    writer.write(json_item(request_id, {"ok": 3, "err": None}))
                writer.write(end(request_id))
            await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(no_reflection)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert await client.Anything.count(users(3), batch=1) == 3
            assert [n async for n in client.Anything.echo([1, 2, 3], times=1)] == [1, 2, 3]
            assert await client.describe("Anything") is None
            await client.close()

    asyncio.run(scenario())
    assert opened == [
        (wirecall.method_id("Anything", "count"), b'{"batch":1}'),
        (wirecall.method_id("Anything", "echo"), b'{"times":1}'),
    ]
