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
    assert kinds[:2] == [(FrameKind.OPEN, bidi.payload), (FrameKind.CREDIT, struct.pack(">I", wirecall.DEFAULT_STREAM_WINDOW))]
    assert kinds[2:] == [
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
        pulled = source.pulled
        assert 1 <= pulled <= 65_536
        assert client.UserService.get_user_id(name="fanly") == 5
        assert source.pulled == pulled


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
