"""Server streams (protocol version 3), the caller's side: `ServerStream` yields the items of a
stream call as an async iterator, and grants the server credit as they are taken. The same
stream carries the server's half of a bidirectional call, and the one reply of an upload; the
client's half, the upload itself, is sent by `upload.py` beside it.

The connection's reader hands each Item, the stream's Head (version 4) and its End or Error to
the stream's `StreamSlot` in the client's table; the consumer takes them from there, and the
reply metadata and trailers are kept beside the items (see `stream_metadata.py`). A slot holds at most
its window of items: the server may send no more than the credit granted (Credit (flow
control)), and an Item beyond it is a protocol violation that closes the connection. Credit
is topped up by half a window whenever the consumer has taken half, as the Rust client does,
so a steady consumer never makes the server wait and a stopped one stops it.
"""

import asyncio
import collections
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Deque, Dict, Optional, Tuple

from . import errors
from .credit import SendCredit
from .replies import Reply, interpret_reply
from .schema import MethodSignature
from .stream_metadata import StreamReplyMetadata, decode_head

if TYPE_CHECKING:
    from .upload import Upload

#: Items the server may send ahead of the consumer, at most. Chosen by measurement: this
#: client reads a stream of small items fastest from about 256 items on (about 1.5x the items/s
#: of a 32-item window, the Rust client's first grant); see `bench/stream_window.py`.
DEFAULT_STREAM_WINDOW = 256
#: The credit granted with the Open, before the items' size is known: the Rust client's.
FIRST_GRANT = 32
#: About how many bytes of items the server may send ahead of the consumer: a stream of large
#: items gets a smaller window than `stream_window`, so that what waits in the client stays
#: near 1 MiB whatever the items' size (the Rust client's ``stream_window_bytes``).
STREAM_WINDOW_BYTES = 1024 * 1024


@dataclass(frozen=True)
class StreamRequest:
    """A stream call checked and encoded, ready to open: the Open frame's method id, flags
    and payload, its deadline, the window to grant, and how to read each item."""

    service: str
    method: str
    method_id: int
    flags: int
    payload: bytes
    timeout: Optional[float]
    window: int
    reply: Reply
    signature: Optional[MethodSignature]


def ready(request: StreamRequest) -> Callable[[], Awaitable[StreamRequest]]:
    """What a `ServerStream` prepares when its request was checked and encoded already."""

    async def prepare() -> StreamRequest:
        return request

    return prepare


class StreamSlot:
    """One open stream in its connection's table: the items read and not yet taken, how the
    stream ended, its reply metadata and trailers, the credit granted and not yet used both
    ways, and the task sending its upload, if it has one."""

    def __init__(self, request_id: int, window: int):
        self.request_id = request_id
        self.items: Deque[bytes] = collections.deque()
        #: The server ended the stream (End or Error), or the connection did.
        self.ended = False
        #: Why, when it failed: raised after the last item.
        self.error: Optional[BaseException] = None
        #: Wakes the consumer waiting for an item, the Head or the end.
        self.waiter: "Optional[asyncio.Future[None]]" = None
        #: The server's reply metadata and trailers for the stream (version 4).
        self.reply = StreamReplyMetadata(request_id)
        #: Ends the stream when its timeout passes, whether or not the consumer is waiting.
        self.expiry: Optional[asyncio.TimerHandle] = None
        #: What the server allows the client to send (an upload's credit).
        self.send_credit = SendCredit(request_id)
        #: Sends the caller's upload; stopped as soon as the stream ends on this side, however
        #: it ends (an early answer, an error, a Cancel, the deadline, the connection's end).
        self.sender: "Optional[asyncio.Task[None]]" = None
        # The largest window the caller allows, and the one in force, sized by the items.
        self._largest_window = window
        self._window = min(window, FIRST_GRANT)
        #: The credit granted and not yet used by an Item; the Open carries the first grant.
        self._outstanding = self._window
        self._items_read = 0
        self._bytes_read = 0

    @property
    def first_grant(self) -> int:
        """The credit the Credit frame beside the Open grants."""
        return self._window

    def push(self, payload: bytes) -> None:
        """An Item from the server; `ProtocolError` when it had no credit for it."""
        if self._outstanding == 0:
            raise errors.ProtocolError(
                f"the server sent an item on stream {self.request_id} without credit"
            )
        self._outstanding -= 1
        self.reply.item_arrived()
        self._items_read += 1
        self._bytes_read += len(payload)
        self.items.append(payload)
        self._wake()

    def push_head(self, flags: int, payload: bytes) -> Optional[errors.ProtocolError]:
        """A Head from the server: records its metadata and returns `None`, or returns the
        error the stream fails with when the Head is malformed. Raises `ProtocolError` (the
        connection closes) when the stream already had its Head or an item."""
        self.reply.check_head_allowed()
        try:
            self.reply.head = decode_head(self.request_id, flags, payload)
        except errors.ProtocolError as malformed:
            self.reply.head = {}
            return malformed
        self._wake()
        return None

    def finish(self, error: Optional[BaseException], trailers: Optional[Dict[str, str]] = None) -> None:
        """The stream's end: `None` for an End frame (or a consumer that stopped), else the
        error it failed with; `trailers` are those of the server's End or Error (`None` for
        an end that is not the server's)."""
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None
        self._stop_sender()
        if not self.ended:
            self.ended = True
            self.error = error
            self.reply.trailers = trailers
            self._wake()

    def take(self) -> Tuple[bytes, int]:
        """The next item, and the credit to grant the server now (0 for none).

        The server may be a window ahead of the consumer: the credit it holds and the items
        waiting here add up to at most the window. Credit goes back once half a window is
        free, as the Rust client does, so a steady consumer never makes the server wait and
        a stopped one stops it. The window is `stream_window` items, or fewer when that many
        of the items read so far would pass `STREAM_WINDOW_BYTES`; it is resized as items
        come, and a smaller one grants nothing until the items ahead fall below it.
        """
        payload = self.items.popleft()
        if self.ended:
            return payload, 0
        mean_item = max(1, self._bytes_read // self._items_read)
        self._window = max(1, min(self._largest_window, STREAM_WINDOW_BYTES // mean_item))
        free = self._window - self._outstanding - len(self.items)
        if free < max(1, self._window // 2):
            return payload, 0
        self._outstanding += free
        return payload, free

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def _stop_sender(self) -> None:
        sender = self.sender
        if sender is None or sender.done():
            return
        try:
            current = asyncio.current_task()
        except RuntimeError:
            current = None
        # The sender itself ends the stream when the caller's items fail; it returns by itself.
        if sender is not current:
            sender.cancel()


class ServerStream:
    """The items of a server stream, or of a bidirectional stream's server half:
    ``async for item in stream``.

    The Open (and the first Credit) goes out when iteration starts, or on ``async with``.
    Each item is read like a reply: a stream of ``T`` yields each ``T``; a stream of
    ``Result<T, E>`` yields each ``T`` and raises `ApplicationError` for the ``Err(e)`` that
    ends it. A failure ends the stream with the exception the server's Error frame names
    (`CallError` and its subclasses), `Timeout` when the call's timeout, which bounds the
    whole stream, passes (the client then sends a Cancel), or `ConnectionClosed`; items that
    arrived before it are yielded first. After its end or its error the iteration stops.

    Closing it before its end (``await stream.aclose()``, leaving ``async with``, or dropping
    it, as breaking out of ``async for`` does) sends a Cancel: the server stops producing, and
    whatever it had already sent for the stream is discarded.

    A bidirectional stream sends its upload from the moment it opens, as the server's credit
    allows (see `wirecall.upload`); closing it stops the upload too, and an exception raised
    by the caller's items ends the stream with that exception.

    On a connection of protocol version 4, ``await stream.metadata()`` is the server's reply
    metadata for the stream and ``stream.trailers()`` the trailers it sent with the stream's
    end.
    """

    def __init__(
        self,
        client: Any,
        prepare: Callable[[], Awaitable[StreamRequest]],
        upload: "Optional[Upload]" = None,
    ):
        self._client = client
        self._prepare = prepare
        self._upload = upload
        self._request: Optional[StreamRequest] = None
        self._slot: Optional[StreamSlot] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        # Iteration is over: ended, failed, closed, or it could not open.
        self._done = False
        self._busy = False
        # The server's trailers, once the iteration has reached the end it sent.
        self._trailers: Optional[Dict[str, str]] = None

    @property
    def request_id(self) -> Optional[int]:
        """The stream's request id once it is open, else `None`."""
        return None if self._slot is None else self._slot.request_id

    def __aiter__(self) -> "ServerStream":
        return self

    async def __anext__(self) -> Any:
        if self._done:
            raise StopAsyncIteration
        if self._busy:
            raise RuntimeError("another task is already waiting for this stream's next item")
        self._busy = True
        try:
            await self._open()
            return await self._next_item()
        finally:
            self._busy = False

    async def metadata(self) -> Dict[str, str]:
        """The server's reply metadata for this stream (protocol version 4), a new dict: opens
        the stream if needed and waits for the server's first frame on it (its Head, its first
        item or its end) without taking an item. ``{}`` when the server set none, speaks an
        older version, or the stream failed before it answered (the iteration then raises
        the failure)."""
        if self._busy:
            raise RuntimeError("another task is already waiting for this stream")
        self._busy = True
        try:
            await self._open()
            slot = self._slot
            if slot is None:
                return {}
            while slot.reply.head is None and not slot.ended:
                await self._news(slot)
            return dict(slot.reply.head or {})
        finally:
            self._busy = False

    def trailers(self) -> Optional[Dict[str, str]]:
        """The trailers the server sent with the stream's end (protocol version 4), a new
        dict: `None` until the iteration has reached that end (the last item taken, then its
        end or its error), ``{}`` when the server sent none or speaks an older version, and
        `None` for good when the stream ended otherwise (closed early, its timeout, the
        connection's end)."""
        return None if self._trailers is None else dict(self._trailers)

    async def aclose(self) -> None:
        """Stops the stream: sends a Cancel unless it has ended. Safe to call twice."""
        self._cancel()

    async def __aenter__(self) -> "ServerStream":
        await self._open()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self._cancel()

    def __del__(self) -> None:
        # Dropped before its end (a `break` out of `async for`): the server is told to stop,
        # from the loop's thread, which is the only one that writes to the connection.
        if self._done or self._slot is None or self._loop is None:
            return
        try:
            running: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        try:
            if running is self._loop:
                self._client._cancel_stream(self._slot.request_id)
            else:
                self._loop.call_soon_threadsafe(self._client._cancel_stream, self._slot.request_id)
        except RuntimeError:
            pass  # The loop is closed, and the connection with it.

    def __repr__(self) -> str:
        request = self._request
        name = f"{request.service}.{request.method}" if request else "unopened"
        shape = "server stream" if self._upload is None else "bidirectional stream"
        return f"<wirecall {shape} {name} id={self.request_id}>"

    # -- inside ---------------------------------------------------------------------------------

    async def _open(self) -> None:
        if self._slot is not None or self._done:
            return
        try:
            request = await self._prepare()
            self._request = request
            self._loop = asyncio.get_running_loop()
            self._slot = self._client._open_stream(request)
            if self._upload is not None:
                self._upload.start(self._client, self._slot, request.signature)
            await self._client._flush()
        except BaseException:
            if self._slot is not None:
                # Sent, then interrupted (a cancelled task): the server must not go on.
                self._client._cancel_stream(self._slot.request_id)
            self._done = True
            raise

    def _arrived(self) -> int:
        """How many items have arrived and wait to be taken: the next that many steps of the
        iteration return at once."""
        if self._done or self._slot is None:
            return 0
        return len(self._slot.items)

    async def _next_item(self) -> Any:
        payload = await self._next_payload()
        if payload is None:
            raise StopAsyncIteration
        try:
            return self._read_item(payload)
        except errors.ApplicationError:
            await self._end_after_err_item()
            raise

    async def _news(self, slot: StreamSlot) -> None:
        """Waits until the reader hands the slot something: an item, the Head, or the end."""
        assert self._loop is not None
        slot.waiter = self._loop.create_future()
        try:
            await slot.waiter
        finally:
            slot.waiter = None

    async def _next_payload(self) -> Optional[bytes]:
        """The next item as it came, or `None` at the end; raises what the stream failed with."""
        slot = self._slot
        assert slot is not None
        while not slot.items and not slot.ended:
            await self._news(slot)
        if slot.items:
            payload, grant = slot.take()
            if grant:
                self._client._grant(slot.request_id, grant)
            return payload
        self._done = True
        self._trailers = slot.reply.trailers
        if slot.error is not None:
            raise slot.error
        return None

    async def _end_after_err_item(self) -> None:
        """An `err` item is the stream's last, and the server's End follows right behind it
        (Stream frames): waits for that end, for its trailers. An item instead breaks the
        rule: the stream is cancelled, and the caller still gets the `err`."""
        slot = self._slot
        assert slot is not None
        while not slot.items and not slot.ended:
            await self._news(slot)
        if slot.items:
            self._cancel()
            return
        self._done = True
        self._trailers = slot.reply.trailers

    async def _single_reply(self) -> Tuple[Any, Dict[str, str]]:
        """The one reply of an upload (a client-streaming call), and its reply metadata (the
        Head's and the trailers as one set): the server half's only item, read once the End
        behind it has come too. An `ApplicationError` or `CallError` raised instead carries
        that metadata too. The stream is cancelled if the caller gives up (a cancelled task)
        or the answer breaks the rules."""
        try:
            await self._open()
            reply = await self._next_payload()
            request = self._request
            assert request is not None
            if reply is None:
                raise errors.ProtocolError(
                    f"the server ended the upload {request.service}.{request.method} without a reply"
                )
            # The End follows right behind the reply; an Error instead of it fails the call.
            if await self._next_payload() is not None:
                raise errors.ProtocolError(
                    f"the server answered the upload {request.service}.{request.method} with more than one reply"
                )
            return self._read_item(reply), self._upload_reply_metadata()
        except (errors.ApplicationError, errors.CallError) as failed:
            failed.metadata = self._upload_reply_metadata()
            raise
        finally:
            self._cancel()

    def _upload_reply_metadata(self) -> Dict[str, str]:
        return {} if self._slot is None else self._slot.reply.reply_metadata()

    def _read_item(self, payload: bytes) -> Any:
        request = self._request
        assert request is not None
        codec = self._client._codec
        try:
            fields = codec.decode_reply_fields(payload, request.reply, request.signature)
            if request.signature is not None and codec.name == "msgpack":
                fields = request.signature.reply_fields_from_msgpack(fields)
            return interpret_reply(fields, request.reply)
        except ValueError as bad:
            # The rest of the stream cannot be trusted either.
            self._cancel()
            raise errors.DecodeError(
                f"an item of {request.service}.{request.method} did not decode: {bad}"
            ) from bad

    def _cancel(self) -> None:
        if not self._done and self._slot is not None:
            self._client._cancel_stream(self._slot.request_id)
        self._done = True
