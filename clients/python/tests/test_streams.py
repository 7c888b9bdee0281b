"""Server streams (protocol version 3): items in order in every codec, credit topped up as the
consumer reads, Cancel when the consumer stops early, the version check, and how a stream
ends, against the example server's `UserFeed.list_users` and against scripted peers."""

import asyncio
import json
import struct
import threading
from dataclasses import dataclass
from typing import Iterator, List, Optional

import msgpack
import pytest

import wirecall
from wirecall import aio
from wirecall.stream import FIRST_GRANT, STREAM_WINDOW_BYTES, StreamSlot
from wirecall.wire import FRAME_HEADER, PROTOCOL_VERSION, FrameKind, decode_metadata, encode_frame

from conftest import PATIENCE, eventually
from test_peer_behaviour import read_client_hello, scripted_server
from test_version2 import accepted_v2, read_frame

#: What `UserFeed.list_users(count)` yields: users 1..=count.
USERS = [{"user_id": n, "name": f"user{n}", "age": 18 + n % 50} for n in range(1, 1001)]

WINDOW = wirecall.DEFAULT_STREAM_WINDOW


def as_sent(users, codec):
    """Users as a call without a schema returns them: MessagePack messages are field lists."""
    if codec == "json":
        return users
    return [[user["user_id"], user["name"], user["age"]] for user in users]


# -- a relay that records what the client sends ------------------------------------------------


@dataclass(frozen=True)
class SentFrame:
    connection: int
    kind: int
    flags: int
    request_id: int
    method_id: int
    deadline_ms: int
    payload: bytes


class Relay:
    """A TCP relay between a client and the example server, on a loop of its own, recording
    the versions of the client's hellos and every frame the client sends after them.

    Request ids are per connection: the helpers look at the latest connection unless told."""

    def __init__(self, target: str):
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self.hello_versions: List[int] = []
        self.frames: List[SentFrame] = []
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self._thread.start()
        if not started.wait(PATIENCE):
            pytest.fail("the relay did not start")

    def sent(self, kind: FrameKind) -> List[SentFrame]:
        return [frame for frame in list(self.frames) if frame.kind == kind]

    def cancelled(self, request_id: int, connection: Optional[int] = None) -> bool:
        return bool(self._for_stream(FrameKind.CANCEL, request_id, connection))

    def credit(self, request_id: int, connection: Optional[int] = None) -> List[int]:
        """The credit the client granted a stream, Credit frame by Credit frame."""
        return [struct.unpack(">I", frame.payload)[0] for frame in self._for_stream(FrameKind.CREDIT, request_id, connection)]

    def _for_stream(self, kind: FrameKind, request_id: int, connection: Optional[int]) -> List[SentFrame]:
        connection = self.connections if connection is None else connection
        return [frame for frame in self.sent(kind) if (frame.connection, frame.request_id) == (connection, request_id)]

    def stop(self) -> None:
        async def shut_down() -> None:
            self._server.close()
            relaying = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in relaying:
                task.cancel()
            await asyncio.gather(*relaying, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut_down(), self._loop).result(PATIENCE)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(PATIENCE)
        self._loop.close()

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._relay, "127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        started.set()
        self._loop.run_forever()

    async def _relay(self, client_reader, client_writer) -> None:
        self.connections += 1
        connection = self.connections
        server_reader, server_writer = await asyncio.open_connection(*self._target)

        async def to_client() -> None:
            try:
                while True:
                    data = await server_reader.read(65536)
                    if not data:
                        break
                    client_writer.write(data)
                    await client_writer.drain()
            except ConnectionError:
                pass
            finally:
                client_writer.close()

        answers = asyncio.ensure_future(to_client())
        try:
            head = await client_reader.readexactly(6)
            version, count = head[4], head[5]
            hello = head + await client_reader.readexactly(count + 1)
            hello += await client_reader.readexactly(hello[-1])
            if version >= 2:
                length = await client_reader.readexactly(2)
                hello += length + await client_reader.readexactly(struct.unpack(">H", length)[0])
            self.hello_versions.append(version)
            server_writer.write(hello)
            while True:
                header = await client_reader.readexactly(FRAME_HEADER.size)
                length, kind, flags, request_id, method, deadline = FRAME_HEADER.unpack(header)
                payload = await client_reader.readexactly(length - 22)
                self.frames.append(SentFrame(connection, kind, flags, request_id, method, deadline, payload))
                server_writer.write(header + payload)
                await server_writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            server_writer.close()
            await asyncio.wait([answers], timeout=PATIENCE)


@pytest.fixture
def relay(server) -> Iterator[Relay]:
    running = Relay(server.address)
    yield running
    running.stop()


# -- against the example server ---------------------------------------------------------------


def test_items_arrive_in_order_in_each_codec(server, codec):
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            assert client.protocol_version == 6
            raw = [user async for user in client.stream("UserFeed", "list_users", count=5)]
            assert raw == as_sent(USERS[:5], codec)
            # The proxy reads items by the schema: the same dicts in both codecs.
            assert [user async for user in client.UserFeed.list_users(count=5)] == USERS[:5]
            # Awaiting a stream method opens the stream, as in Rust.
            users = await client.UserFeed.list_users(count=3)
            assert users.request_id is not None
            assert [user async for user in users] == USERS[:3]
            assert [user async for user in users] == []
            assert [user async for user in client.stream("UserFeed", "list_users", count=0)] == []
            assert not client._streams
            # A proxy call is still a coroutine for asyncio.
            assert await asyncio.create_task(client.UserService.get_user_id(name="abc")) == 3

    asyncio.run(scenario())
    with wirecall.connect(server.address, codecs=[codec]) as client:
        assert list(client.UserFeed.list_users(count=5)) == USERS[:5]
        assert list(client.stream("UserFeed", "list_users", count=5)) == as_sent(USERS[:5], codec)


def test_many_streams_and_calls_share_one_connection(server, codec):
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            async def drain(count):
                return [user async for user in client.UserFeed.list_users(count=count)]

            results = await asyncio.gather(
                *(drain(count) for count in range(1, 40, 3)),
                *(client.UserService.get_user_id(name="x" * n) for n in range(10)),
            )
            streams, calls = results[:13], results[13:]
            assert streams == [USERS[:count] for count in range(1, 40, 3)]
            assert calls == list(range(10))

    asyncio.run(scenario())


def test_a_stream_longer_than_its_window_completes_as_credit_is_topped_up(relay, codec):
    async def scenario():
        async with await aio.connect(relay.address, codecs=[codec]) as client:
            users = client.stream("UserFeed", "list_users", count=1000)
            assert [user async for user in users] == as_sent(USERS, codec)
            granted = relay.credit(users.request_id)
            # The Rust client's first grant with the Open; at the first item taken, the rest
            # of the window (the items are small); then half a window each time the consumer
            # took half: never more than one window ahead of what was taken.
            assert granted[0] == FIRST_GRANT
            assert granted[1] == WINDOW - FIRST_GRANT + 1
            assert set(granted[2:]) == {WINDOW // 2}
            assert 1000 <= sum(granted) <= 1000 + WINDOW

            single = client.stream_with("UserFeed", "list_users", {"count": 20}, window=1)
            assert [user async for user in single] == as_sent(USERS[:20], codec)
            assert set(relay.credit(single.request_id)) == {1}

    asyncio.run(scenario())
    with wirecall.connect(relay.address, codecs=[codec], stream_window=8) as client:
        assert list(client.UserFeed.list_users(count=1000)) == USERS
    (_, _, opened) = relay.sent(FrameKind.OPEN)
    assert relay.credit(opened.request_id)[:2] == [8, 4]


def test_a_stream_of_large_items_gets_a_window_of_about_a_mebibyte():
    slot = StreamSlot(1, WINDOW)
    assert slot.first_grant == FIRST_GRANT
    item = bytes(64 * 1024)
    ahead = FIRST_GRANT
    for _ in range(FIRST_GRANT):
        slot.push(item)
    window = STREAM_WINDOW_BYTES // len(item)
    granted = []
    for taken in range(1, 201):
        _, grant = slot.take()
        ahead += grant - 1
        granted.append(grant)
        while slot._outstanding:
            slot.push(item)
        # Once the first grant is used up, never more than about 1 MiB of items ahead.
        if taken >= FIRST_GRANT - window:
            assert ahead <= window
    # The window shrank to 16 items: nothing is granted until the 32 of the first grant are
    # down to 8 ahead, then 8 at a time.
    assert granted[:23] == [0] * 23
    assert set(granted[23:]) == {0, window // 2}


def test_breaking_out_of_a_stream_cancels_it_and_the_connection_goes_on(relay, codec):
    async def scenario():
        async with await aio.connect(relay.address, codecs=[codec]) as client:
            taken = []
            async for user in client.UserFeed.list_users(count=1000):
                taken.append(user)
                if len(taken) == 3:
                    break
            assert taken == USERS[:3]
            (opened,) = relay.sent(FrameKind.OPEN)
            await eventually("the Cancel reaches the server", lambda: relay.cancelled(opened.request_id))
            assert not client._streams
            assert await client.UserService.get_user_id(name="after") == 5

            users = client.stream("UserFeed", "list_users", count=1000)
            assert await users.__anext__() == as_sent(USERS[:1], codec)[0]
            await users.aclose()
            await users.aclose()
            assert [user async for user in users] == []
            await eventually("aclose() sends a Cancel", lambda: relay.cancelled(users.request_id))

            async with client.UserFeed.list_users(count=1000) as users:
                assert await users.__anext__() == USERS[0]
            await eventually("leaving async with sends a Cancel", lambda: relay.cancelled(users.request_id))

            # A stream that ran to its end sends none: a Cancel would have gone out before the
            # next call's Request, which the relay has seen once the reply is here.
            finished = client.stream("UserFeed", "list_users", count=3)
            assert len([user async for user in finished]) == 3
            assert await client.UserService.get_user_id(name="fanly") == 5
            assert not relay.cancelled(finished.request_id)
            assert not client.is_closed

    asyncio.run(scenario())


def test_breaking_out_of_a_blocking_stream_cancels_it(relay, codec):
    with wirecall.connect(relay.address, codecs=[codec]) as client:
        for user in client.UserFeed.list_users(count=1000):
            assert user == USERS[0]
            break
        (opened,) = relay.sent(FrameKind.OPEN)
        asyncio.run(eventually("the Cancel reaches the server", lambda: relay.cancelled(opened.request_id)))
        assert client.UserService.get_user_id(name="after") == 5

        with client.stream("UserFeed", "list_users", count=1000) as users:
            assert next(users) == as_sent(USERS[:1], codec)[0]
        asyncio.run(eventually("leaving with sends a Cancel", lambda: relay.cancelled(users.request_id)))
        assert client.UserService.get_user_id(name="fanly") == 5


def test_a_version_2_connection_refuses_streams_before_sending_anything(relay):
    async def scenario():
        async with await aio.connect(relay.address, protocol_version=2) as client:
            assert client.protocol_version == 2
            with pytest.raises(wirecall.StreamsUnsupported, match="needs protocol version 3; this connection speaks version 2") as refused:
                client.stream("UserFeed", "list_users", count=3)
            assert refused.value.version == 2
            with pytest.raises(wirecall.StreamsUnsupported):
                async for _ in client.UserFeed.list_users(count=3):
                    pass
            with pytest.raises(wirecall.StreamsUnsupported):
                await client.UserFeed.list_users(count=3)
            assert await client.UserService.get_user_id(name="fanly") == 5

    asyncio.run(scenario())
    with wirecall.connect(relay.address, protocol_version=2) as client:
        with pytest.raises(wirecall.StreamsUnsupported):
            client.stream("UserFeed", "list_users", count=3)
        with pytest.raises(wirecall.StreamsUnsupported):
            client.UserFeed.list_users(count=3)
        assert client.UserService.get_user_id(name="fanly") == 5
    assert relay.hello_versions == [2, 2]
    assert relay.sent(FrameKind.OPEN) == relay.sent(FrameKind.CREDIT) == []


def test_the_timeout_bounds_the_whole_stream(server, codec):
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            # 2^31 - 1 users cannot all arrive within the timeout: the stream fails at it,
            # whoever sees the deadline first (the client's Timeout or the server's code 4).
            with pytest.raises(wirecall.DeadlineExceeded) as late:
                async for _ in client.stream_with("UserFeed", "list_users", {"count": 2**31 - 1}, timeout=0.3):
                    pass
            assert late.value.code == 4
            assert not client._streams
            assert await client.UserService.get_user_id(name="fanly") == 5

    asyncio.run(scenario())


def test_a_unary_method_is_no_stream_and_a_stream_no_unary_call(server, codec):
    async def scenario():
        async with await aio.connect(server.address, codecs=[codec]) as client:
            # Sent as written, the server names the mismatch.
            with pytest.raises(wirecall.BadRequest):
                async for _ in client.stream("UserService", "get_user_id", name="x"):
                    pass
            with pytest.raises(wirecall.BadRequest):
                await client.call("UserFeed", "list_users", count=1)
            # Through the proxy, the schema says so before anything is sent.
            with pytest.raises(TypeError, match="not a server stream"):
                async for _ in client.UserService.get_user_id(name="x"):
                    pass
            with pytest.raises(TypeError, match="missing 'count'"):
                async for _ in client.UserFeed.list_users():
                    pass
            schema = await client.describe("UserFeed")
            assert schema.methods["list_users"].server_stream
            assert schema.methods["list_users"].describe() == "(count: u32) -> Streaming<UserModel>"
            assert await client.UserService.get_user_id(name="fanly") == 5

    asyncio.run(scenario())
    with wirecall.connect(server.address, codecs=[codec]) as client:
        with pytest.raises(TypeError, match="missing 'count'"):
            client.UserFeed.list_users()


def test_metadata_and_the_deadline_travel_in_the_open(relay):
    with wirecall.connect(relay.address, codecs=["json"], metadata={"tenant": "acme"}) as client:
        users = client.stream_with("UserFeed", "list_users", {"count": 2}, timeout=5, metadata={"request-id": "r-1"})
        assert list(users) == USERS[:2]
        endless = client.stream_with("UserFeed", "list_users", {"count": 2}, timeout=None)
        assert list(endless) == USERS[:2]
    first, second = relay.sent(FrameKind.OPEN)
    assert first.flags == 0x01 and first.deadline_ms == 5000
    assert decode_metadata(first.payload) == ({"tenant": "acme", "request-id": "r-1"}, b'{"count":2}')
    assert second.deadline_ms == 0


def test_a_stream_window_outside_the_protocols_limit_is_refused(server):
    for bad in (0, 65537):
        with pytest.raises(ValueError, match="1 to 65536"):
            wirecall.connect(server.address, stream_window=bad)
    with wirecall.connect(server.address) as client:
        with pytest.raises(ValueError, match="1 to 65536"):
            client.stream_with("UserFeed", "list_users", {"count": 1}, window=0)
        assert list(client.stream_with("UserFeed", "list_users", {"count": 1}, window=65536)) == as_sent(USERS[:1], client.codec)


# -- against scripted peers ------------------------------------------------------------------

LIST_USERS = wirecall.method_id("UserFeed", "list_users")


def accepted_v3(codec_id=1):
    """A version 3 server hello accepting `codec_id`, without extensions."""
    return b"WCAL" + bytes([3, 0, codec_id, 1, codec_id]) + b"\x00\x00"


def item(request_id, message):
    return encode_frame(FrameKind.ITEM, request_id, payload=message)


def json_item(request_id, message):
    return item(request_id, json.dumps(message).encode())


def end(request_id):
    return encode_frame(FrameKind.END, request_id)


async def read_raw_frame(reader):
    header = await reader.readexactly(FRAME_HEADER.size)
    return header + await reader.readexactly(FRAME_HEADER.unpack(header)[0] - 22)


def test_open_then_credit_then_half_a_window_at_a_time():
    seen = []

    async def serve(reader, writer):
        version, _, _, _ = await read_client_hello(reader)
        seen.append(version)
        writer.write(accepted_v3())
        seen.append(await read_raw_frame(reader))
        seen.append(await read_raw_frame(reader))
        for n in range(1, 5):  # the whole window of 4
            writer.write(json_item(1, {"value": n}))
        await writer.drain()
        for n in (5, 7):
            # Two more only once the consumer has taken two and granted them.
            seen.append(await read_raw_frame(reader))
            writer.write(json_item(1, {"value": n}) + json_item(1, {"value": n + 1}))
            await writer.drain()
        writer.write(end(1))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"], stream_window=4)
            assert [n async for n in client.stream("UserFeed", "list_users", count=8)] == list(range(1, 9))
            await client.close()

    asyncio.run(scenario())
    version, opened, credit, top_up, second_top_up = seen
    assert version == PROTOCOL_VERSION
    # Open: kind 8, request id 1, the method, the default 30 s deadline, the arguments.
    assert opened == encode_frame(FrameKind.OPEN, 1, LIST_USERS, 30000, b'{"count":8}')
    assert credit == bytes.fromhex("00 00 00 1a 0b 00 0000000000000001 0000000000000000 00000000 00000004")
    assert top_up == second_top_up == encode_frame(FrameKind.CREDIT, 1, payload=struct.pack(">I", 2))


def test_an_item_beyond_the_credit_closes_the_connection():
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v3())
        await read_raw_frame(reader)
        await read_raw_frame(reader)
        writer.write(json_item(1, {"value": 1}) + json_item(1, {"value": 2}) + json_item(1, {"value": 3}))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"], stream_window=2)
            taken = []
            with pytest.raises(wirecall.ConnectionClosed, match="without credit"):
                async for n in client.stream("S", "items"):
                    taken.append(n)
            # What arrived within the credit is still delivered, then the failure.
            assert taken == [1, 2]
            assert client.is_closed
            await client.close()

    asyncio.run(scenario())


async def read_frame_besides_credit(reader):
    """The client's next frame that is not a Credit: the first item taken may widen the
    window (a Credit) before what a test waits for."""
    header, payload = await read_frame(reader)
    while header[1] == FrameKind.CREDIT:
        header, payload = await read_frame(reader)
    return header, payload


def test_frames_that_cross_the_cancel_are_discarded():
    after_cancel = []

    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v3())
        await read_raw_frame(reader)
        await read_raw_frame(reader)
        writer.write(json_item(1, {"value": 1}))
        await writer.drain()
        header, _ = await read_frame_besides_credit(reader)
        after_cancel.append((FrameKind(header[1]), header[3]))
        error = struct.pack(">H", 8) + b"late"
        writer.write(
            json_item(1, {"value": 2}) + json_item(1, {"value": 3}) + end(1)
            + encode_frame(FrameKind.ERROR, 1, LIST_USERS, 0, error)
        )
        header, _ = await read_frame(reader)
        after_cancel.append((FrameKind(header[1]), header[3]))
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":true}'))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            async for n in client.stream("UserFeed", "list_users", count=3):
                assert n == 1
                break
            assert await client.call("S", "m") is True
            assert not client.is_closed
            await client.close()

    asyncio.run(scenario())
    assert after_cancel == [(FrameKind.CANCEL, 1), (FrameKind.REQUEST, 2)]


@pytest.mark.parametrize("codec_name, codec_id, encode", [
    ("json", 1, lambda message: json.dumps(message).encode()),
    ("msgpack", 2, lambda message: msgpack.packb([message.get("ok"), message.get("err")])),
])
def test_an_err_item_ends_a_result_stream_as_an_application_error(codec_name, codec_id, encode):
    next_frames = []

    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v3(codec_id))
        await read_raw_frame(reader)
        await read_raw_frame(reader)
        writer.write(
            item(1, encode({"ok": 7, "err": None})) + item(1, encode({"ok": None, "err": "gone"})) + end(1)
        )
        await writer.drain()
        # The err item is the last and the End follows: the client sends no Cancel.
        header, _ = await read_frame(reader)
        next_frames.append(FrameKind(header[1]))
        writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, encode({"ok": 1, "err": None})))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=[codec_name])
            results = client.stream_with("Logs", "tail", {"name": "app"}, reply=wirecall.Reply.RESULT)
            taken = []
            with pytest.raises(wirecall.ApplicationError) as failed:
                async for line in results:
                    taken.append(line)
            assert taken == [7]
            assert failed.value.error == "gone"
            assert [line async for line in results] == []
            assert await client.call("S", "m") == 1
            await client.close()

    asyncio.run(scenario())
    assert next_frames == [FrameKind.REQUEST]


def test_an_error_frame_ends_the_stream_with_its_exception():
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v3())
        await read_raw_frame(reader)
        await read_raw_frame(reader)
        panic = struct.pack(">H", 3) + b"the producer panicked"
        writer.write(json_item(1, {"value": 1}) + encode_frame(FrameKind.ERROR, 1, LIST_USERS, 0, panic))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            users = client.stream("UserFeed", "list_users", count=3)
            taken = []
            with pytest.raises(wirecall.HandlerPanicked, match="the producer panicked") as panicked:
                async for n in users:
                    taken.append(n)
            assert taken == [1]
            assert panicked.value.request_id == 1
            assert [n async for n in users] == []
            await client.close()

    asyncio.run(scenario())


def test_the_client_gives_up_at_the_streams_deadline_and_cancels():
    seen = []

    async def silent(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v3())
        header, _ = await read_frame(reader)
        seen.append((FrameKind(header[1]), header[5]))
        await read_raw_frame(reader)
        writer.write(json_item(1, {"value": 1}))
        await writer.drain()
        # Then nothing, until the client gives up.
        header, _ = await read_frame_besides_credit(reader)
        seen.append((FrameKind(header[1]), header[3]))
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(silent)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            taken = []
            with pytest.raises(wirecall.Timeout, match="did not end within 0.2 s"):
                async for n in client.stream_with("UserFeed", "list_users", {"count": 3}, timeout=0.2):
                    taken.append(n)
            assert taken == [1]
            assert not client.is_closed
            await client.close()

    asyncio.run(scenario())
    assert seen == [(FrameKind.OPEN, 200), (FrameKind.CANCEL, 1)]


def test_a_lost_connection_ends_the_stream_with_connection_closed():
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v3())
        await read_raw_frame(reader)
        await read_raw_frame(reader)
        writer.write(json_item(1, {"value": 1}))
        await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            taken = []
            with pytest.raises(wirecall.ConnectionClosed):
                async for n in client.stream("UserFeed", "list_users", count=3):
                    taken.append(n)
            assert taken == [1]
            with pytest.raises(wirecall.ConnectionClosed):
                async for _ in client.stream("UserFeed", "list_users", count=3):
                    pass
            await client.close()

    asyncio.run(scenario())


def test_a_version_2_server_settles_version_2_and_streams_are_refused():
    kinds = []

    async def version_2_server(reader, writer):
        version, _, _, _ = await read_client_hello(reader)
        kinds.append(version)
        writer.write(accepted_v2())  # the lower of the two versions
        while True:
            try:
                header, payload = await read_frame(reader)
            except asyncio.IncompleteReadError:
                break
            kinds.append(FrameKind(header[1]))
            writer.write(encode_frame(FrameKind.RESPONSE, header[3], header[4], 0, b'{"value":' + payload + b"}"))
            await writer.drain()
        writer.close()

    async def scenario():
        server, port = await scripted_server(version_2_server)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            assert client.protocol_version == 2
            with pytest.raises(wirecall.StreamsUnsupported, match="speaks version 2"):
                client.stream("UserFeed", "list_users", count=3)
            assert await client.call("S", "echo", x=1) == {"x": 1}
            await client.close()

    asyncio.run(scenario())
    assert kinds == [PROTOCOL_VERSION, FrameKind.REQUEST]


def test_stream_frames_on_a_version_2_connection_break_it():
    async def serve(reader, writer):
        await read_client_hello(reader)
        writer.write(accepted_v2())
        header, _ = await read_frame(reader)
        writer.write(json_item(header[3], {"value": 1}))
        await writer.drain()
        await reader.read()
        writer.close()

    async def scenario():
        server, port = await scripted_server(serve)
        async with server:
            client = await aio.connect("127.0.0.1", port, codecs=["json"])
            with pytest.raises(wirecall.ConnectionClosed, match="ITEM frame on a version 2 connection"):
                await client.call("S", "m")
            await client.close()

    asyncio.run(scenario())
