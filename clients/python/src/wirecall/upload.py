"""Uploads (client and bidirectional streaming), the caller's side: the task that sends the
caller's items on an open stream as the server's credit allows, then the End.

The stream itself (its Open, the server's half, the deadline, Cancel) is the one `stream.py`
runs for server streams; an upload only adds the client's half beside it. The sender:

- waits for credit before it asks the caller's items for the next one, so a server that stops
  reading pauses the caller's producer, and never sends more Items than were granted;
- stops, and stops pulling, as soon as the stream ends on this side, however it ends: the
  server's answer (which may come before the upload is over, an "early answer"), an Error,
  the deadline, a Cancel from the caller, the connection's end. The stream's slot cancels it;
- ends the stream with the exception the caller's items raised (or that encoding an item
  raised), after telling the server to stop with a Cancel.

Where the items are pulled: an async iterable is iterated in the sending task. A plain
iterable is pulled on the event loop by the asyncio client, so it must not block there; the
blocking client pulls it in a thread of the upload's own (`PulledInThread`), one item at a
time and only when there is credit for it, so that a generator that blocks (reading a file,
waiting on a queue) holds up neither the event loop nor other calls.
"""

import asyncio
import collections.abc
import queue
import threading
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterable,
    AsyncIterator,
    Deque,
    Iterable,
    Iterator,
    Optional,
    Protocol,
    Tuple,
    Union,
)

from . import errors

if TYPE_CHECKING:
    from .schema import MethodSignature
    from .stream import StreamSlot


class UploadConnection(Protocol):
    """What the sender needs of the client whose stream it feeds (`AsyncClient`)."""

    def _encode_item(self, item: Any, signature: "Optional[MethodSignature]") -> bytes: ...

    def _send_item(self, request_id: int, payload: bytes) -> bool: ...

    def _end_upload(self, request_id: int) -> None: ...

    def _fail_stream(self, request_id: int, error: BaseException) -> None: ...

    async def _flush(self) -> None: ...


#: What the caller may give as an upload's items.
Items = Union[Iterable[Any], AsyncIterable[Any]]


class _Exhausted:
    """What pulling returns once the caller's items have run out."""


EXHAUSTED = _Exhausted()


class ItemSource:
    """The caller's items, pulled one at a time."""

    async def pull(self) -> Any:
        """The next item, or `EXHAUSTED`; raises what the caller's items raise."""
        raise NotImplementedError

    def credit_for(self, items: int) -> None:
        """The sender holds credit for `items` more items: a source may start pulling that
        many ahead of `pull` (never more)."""

    def stop(self) -> None:
        """No more items will be pulled."""


class PulledInline(ItemSource):
    """A plain iterable, pulled on the event loop (the asyncio client)."""

    def __init__(self, items: Iterable[Any]):
        self._items = items
        self._iterator: Optional[Iterator[Any]] = None

    async def pull(self) -> Any:
        if self._iterator is None:
            self._iterator = iter(self._items)
        return next(self._iterator, EXHAUSTED)


class PulledAsync(ItemSource):
    """An async iterable, iterated in the sending task: cancelling the task on the stream's
    end stops the iteration where it waits."""

    def __init__(self, items: AsyncIterable[Any]):
        self._items = items
        self._iterator: Optional[AsyncIterator[Any]] = None

    async def pull(self) -> Any:
        if self._iterator is None:
            self._iterator = self._items.__aiter__()
        try:
            return await self._iterator.__anext__()
        except StopAsyncIteration:
            return EXHAUSTED


#: A request for the next item: the loop and the future to answer on.
_Request = Tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class PulledInThread(ItemSource):
    """A plain iterable pulled in a daemon thread of its own (the blocking client): a
    generator that blocks holds up only this thread. The thread pulls as many items ahead as
    the sender has credit for (`credit_for`), never more, so that the hand-over between the
    threads overlaps with sending instead of costing a round trip per item. The thread is
    daemonic so that a generator blocked for good does not keep the interpreter from exiting;
    once `stop` is called it pulls nothing more and ends after the pull it is in.
    """

    def __init__(self, items: Iterable[Any]):
        self._items = items
        self._requests: "queue.SimpleQueue[Optional[_Request]]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        # Items asked of the thread and not yet taken by `pull`, oldest first.
        self._asked: "Deque[asyncio.Future[Any]]" = collections.deque()
        self._stopped = threading.Event()

    def credit_for(self, items: int) -> None:
        while len(self._asked) < items:
            self._ask()

    async def pull(self) -> Any:
        if not self._asked:
            self._ask()
        return await self._asked.popleft()

    def _ask(self) -> None:
        loop = asyncio.get_running_loop()
        answer: "asyncio.Future[Any]" = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="wirecall-upload", daemon=True)
            self._thread.start()
        self._asked.append(answer)
        self._requests.put((loop, answer))

    def stop(self) -> None:
        self._stopped.set()
        self._requests.put(None)

    def _run(self) -> None:
        try:
            # iter() too may block (a file opened lazily) or fail.
            iterator = iter(self._items)
        except BaseException as failed:
            iterator = None
            failure: Optional[BaseException] = _deliverable(failed)
        else:
            failure = None
        while True:
            request = self._requests.get()
            if request is None or self._stopped.is_set():
                return
            loop, answer = request
            if failure is not None:
                _answer(loop, answer, None, failure)
                return
            assert iterator is not None
            try:
                item = next(iterator, EXHAUSTED)
            except BaseException as failed:
                _answer(loop, answer, None, _deliverable(failed))
                return
            _answer(loop, answer, item, None)
            if item is EXHAUSTED:
                return


def _deliverable(failed: BaseException) -> BaseException:
    """What the caller gets for an exception raised in the upload's thread: the exception
    itself, unless it is one that must not be raised inside the event loop's task (a
    `SystemExit` or `KeyboardInterrupt` there would stop the loop, and every call with it)."""
    if isinstance(failed, Exception):
        return failed
    wrapped = RuntimeError(f"the upload's items raised {type(failed).__name__}")
    wrapped.__cause__ = failed
    return wrapped


def _answer(
    loop: asyncio.AbstractEventLoop, answer: "asyncio.Future[Any]", item: Any, failure: Optional[BaseException]
) -> None:
    def settle() -> None:
        # The sender may have been cancelled meanwhile: its future is then done already.
        if answer.done():
            return
        if failure is not None:
            answer.set_exception(failure)
        else:
            answer.set_result(item)

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:
        pass  # The loop is closed, and the upload with it.


class Upload:
    """The caller's items for one stream call, and the task that sends them once it opens."""

    def __init__(self, items: Items, *, pull_in_thread: bool = False):
        if isinstance(items, (str, bytes, bytearray)) or isinstance(items, dict):
            # Iterable, but surely not a sequence of items: its characters, bytes or keys.
            raise TypeError(
                f"an upload's items are an iterable or an async iterable of items, not a {type(items).__name__}; "
                "wrap a single item in a list"
            )
        source: ItemSource
        if isinstance(items, collections.abc.AsyncIterable):
            source = PulledAsync(items)
        elif isinstance(items, collections.abc.Iterable):
            source = PulledInThread(items) if pull_in_thread else PulledInline(items)
        else:
            raise TypeError(
                f"an upload's items are an iterable or an async iterable, not {type(items).__name__}"
            )
        self._source = source
        self._started = False

    def start(self, client: "UploadConnection", slot: "StreamSlot", signature: "Optional[MethodSignature]") -> None:
        """Starts sending on the stream just opened; the slot stops the sender at its end.
        `signature` is the method's, which a codec that needs schemas encodes items by."""
        if self._started:
            raise RuntimeError("an upload's items are sent once; give a new iterable to a new call")
        self._started = True
        slot.sender = asyncio.ensure_future(self._send(client, slot, signature))

    async def _send(self, client: "UploadConnection", slot: "StreamSlot", signature: "Optional[MethodSignature]") -> None:
        request_id = slot.request_id
        try:
            while True:
                # Paid for first: without credit, the caller's items are not asked for more.
                await slot.send_credit.wait()
                self._source.credit_for(slot.send_credit.available)
                try:
                    item = await self._source.pull()
                    if item is EXHAUSTED:
                        break
                    payload = client._encode_item(item, signature)
                except Exception as failed:
                    # The caller's items failed, or one cannot travel (it does not encode, or
                    # is over the frame limit): the server is told to stop, and the caller
                    # gets the exception.
                    client._fail_stream(request_id, failed)
                    return
                slot.send_credit.spend()
                if not client._send_item(request_id, payload):
                    return  # The stream ended while the item was pulled: it is dropped.
                await client._flush()
                # An item whose credit was already there and whose write did not fill the
                # socket's buffer never waited: let the rest of the connection run.
                await asyncio.sleep(0)
            client._end_upload(request_id)
            await client._flush()
        except errors.ConnectionClosed:
            pass  # The connection's end has ended the stream, with that error.
        finally:
            self._source.stop()
