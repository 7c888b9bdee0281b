"""The blocking client: the asyncio client on an event loop of its own, in a background thread.

Every method blocks until the asyncio client's coroutine finishes on that loop, so calls made
from several threads at once share the one connection and are in flight together. A server
stream is an iterator whose every step waits for the asyncio stream's next item. An upload's
items are pulled in a thread of the upload's own, never on the loop's thread, so a generator
that blocks holds up neither the connection nor other calls (see `upload.py`).
"""

import asyncio
import collections
import threading
from typing import Any, Coroutine, Deque, Dict, Iterable, List, Mapping, Optional, Tuple, TypeVar

from . import aio, errors
from .proxy import ServiceProxy, is_service_name
from .replies import Reply
from .schema import MethodSignature, ServiceSchema
from .stream import ServerStream, ready
from .upload import Upload

T = TypeVar("T")


class _LoopThread:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="wirecall", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self.loop.is_closed():
            # `Client.close()` stopped the loop: say what a closed connection says, as the
            # asyncio client does, instead of asyncio's "Event loop is closed".
            coroutine.close()
            raise errors.ConnectionClosed("the client was closed with close()")
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            # Interrupted (KeyboardInterrupt): cancel the coroutine, so that a call sends its
            # Cancel instead of running on unseen.
            future.cancel()
            raise

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class _End:
    """What `_next_item` returns at a stream's end: the end crosses to the caller's thread as
    a value, and `Stream.__next__` raises `StopIteration` there."""


_END = _End()


#: The most items a blocking stream takes from the event loop's thread in one hand-over.
HANDOVER_ITEMS = 64


async def _next_items(stream: ServerStream) -> Tuple[List[Any], Optional[BaseException]]:
    """The next item (or `_END`), then any that have already arrived, up to `HANDOVER_ITEMS`:
    one trip between the threads for many items, as a trip costs more than reading one. A
    failure after the first item comes back beside the items before it, to be raised after
    them."""
    try:
        items = [await stream.__anext__()]
    except StopAsyncIteration:
        return [_END], None
    try:
        while len(items) < HANDOVER_ITEMS and stream._arrived():
            items.append(await stream.__anext__())
    except StopAsyncIteration:
        items.append(_END)
    except Exception as failed:
        return items, failed
    return items, None


class Stream:
    """The blocking twin of `wirecall.aio.ServerStream`: ``for item in stream``, for a server
    stream or a bidirectional one.

    Each step blocks until the next item arrives (or raises as the asyncio stream does).
    Items that have already arrived come over from the client's event loop together, up to
    `HANDOVER_ITEMS` (64) at a time, so up to that many more than the window may wait in the
    client. ``close()``, leaving a ``with`` block, or dropping the stream before its end (a ``break``
    out of ``for``) cancels the call. ``metadata()`` and ``trailers()`` are the server's reply
    metadata and trailers for the stream (protocol version 4), as the asyncio stream's.
    """

    def __init__(self, stream: ServerStream, loop_thread: _LoopThread):
        self._stream = stream
        self._loop_thread = loop_thread
        # Items handed over and not yet returned, then what the stream failed with after them.
        self._handed_over: Deque[Any] = collections.deque()
        self._failure: Optional[BaseException] = None
        # The caller has reached the stream's end or its failure: the asyncio stream may have
        # reached it earlier, with items handed over and not yet returned.
        self._finished = False

    @property
    def request_id(self) -> Optional[int]:
        """The stream's request id once it is open, else `None`."""
        return self._stream.request_id

    def __iter__(self) -> "Stream":
        return self

    def __next__(self) -> Any:
        if not self._handed_over:
            if self._failure is not None:
                failure, self._failure = self._failure, None
                self._finished = True
                raise failure
            try:
                items, self._failure = self._loop_thread.run(_next_items(self._stream))
            except Exception:
                self._finished = True
                raise
            self._handed_over.extend(items)
        item = self._handed_over.popleft()
        if item is _END:
            self._handed_over.appendleft(_END)
            self._finished = True
            raise StopIteration
        return item

    def metadata(self) -> Dict[str, str]:
        """See `wirecall.aio.ServerStream.metadata`: blocks until the server's first frame on
        the stream (its Head, its first item or its end) and takes no item."""
        return self._loop_thread.run(self._stream.metadata())

    def trailers(self) -> Optional[Dict[str, str]]:
        """See `wirecall.aio.ServerStream.trailers`: `None` until this iteration has reached
        the stream's end (or its failure)."""
        return self._stream.trailers() if self._finished else None

    def close(self) -> None:
        """Stops the stream: sends a Cancel unless it has ended. Safe to call twice."""
        if not self._loop_thread.loop.is_closed():
            self._loop_thread.run(self._stream.aclose())

    def __enter__(self) -> "Stream":
        self._loop_thread.run(self._stream.__aenter__())
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self._stream).replace("<wirecall ", "<wirecall blocking ", 1)


def connect(host: str, port: Optional[int] = None, **options: Any) -> "Client":
    """Connects like `wirecall.aio.connect` (same options) and returns a blocking `Client`."""
    loop_thread = _LoopThread()
    try:
        client = loop_thread.run(aio.connect(host, port, **options))
    except BaseException:
        loop_thread.stop()
        raise
    return Client(client, loop_thread)


class Client:
    """The blocking twin of `wirecall.aio.AsyncClient`: the same methods, without ``await``."""

    def __init__(self, client: aio.AsyncClient, loop_thread: _LoopThread):
        self._client = client
        self._loop_thread = loop_thread

    @property
    def codec(self) -> str:
        """The codec negotiated for this connection: ``"json"``, ``"msgpack"`` or ``"protobuf"``."""
        return self._client.codec

    @property
    def protocol_version(self) -> int:
        """The connection's protocol version: 5, or 4 (no compression), 3 (no stream metadata
        or trailers either), 2 (no streams) or 1 (no metadata)."""
        return self._client.protocol_version

    @property
    def compression(self) -> Optional[str]:
        """The compression the handshake chose for this connection, ``"zstd"``, or `None`."""
        return self._client.compression

    @property
    def server_max_frame_length(self) -> Optional[int]:
        """The largest frame the server announced it accepts, or `None`."""
        return self._client.server_max_frame_length

    @property
    def metadata(self) -> Dict[str, str]:
        """The metadata sent with every call (a copy)."""
        return self._client.metadata

    @property
    def is_closed(self) -> bool:
        return self._client.is_closed

    def call(self, service: str, method: str, /, **arguments: Any) -> Any:
        """Calls ``service.method`` with the default timeout and returns its reply."""
        return self.call_with(service, method, arguments)

    def call_with(
        self,
        service: str,
        method: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = aio.USE_DEFAULT,
        reply: Reply = Reply.AUTO,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> Any:
        """See `wirecall.aio.AsyncClient.call_with`."""
        return self._loop_thread.run(
            self._client.call_with(
                service, method, arguments, timeout=timeout, reply=reply, metadata=metadata
            )
        )

    def call_with_metadata(
        self,
        service: str,
        method: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = aio.USE_DEFAULT,
        reply: Reply = Reply.AUTO,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> Tuple[Any, Dict[str, str]]:
        """See `wirecall.aio.AsyncClient.call_with_metadata`: ``(value, reply_metadata)``."""
        return self._loop_thread.run(
            self._client.call_with_metadata(
                service, method, arguments, timeout=timeout, reply=reply, metadata=metadata
            )
        )

    def notify(self, service: str, method: str, /, **arguments: Any) -> None:
        """A one-way call: returns once the Notify is written; no reply comes."""
        self.notify_with(service, method, arguments)

    def notify_with(
        self,
        service: str,
        method: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        deadline: Optional[float] = None,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> None:
        """See `wirecall.aio.AsyncClient.notify_with`."""
        self._loop_thread.run(
            self._client.notify_with(service, method, arguments, deadline=deadline, metadata=metadata)
        )

    def stream(self, service: str, method: str, /, **arguments: Any) -> Stream:
        """Opens the server stream ``service.method``:
        ``for user in client.stream("UserFeed", "list_users", count=3)``. See
        `wirecall.aio.AsyncClient.stream`."""
        return self.stream_with(service, method, arguments)

    def stream_with(
        self,
        service: str,
        method: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = aio.USE_DEFAULT,
        window: Optional[int] = None,
        reply: Reply = Reply.AUTO,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> Stream:
        """See `wirecall.aio.AsyncClient.stream_with`."""
        stream = self._client.stream_with(
            service, method, arguments, timeout=timeout, window=window, reply=reply, metadata=metadata
        )
        return Stream(stream, self._loop_thread)

    def upload(self, service: str, method: str, items: Iterable[Any], /, **arguments: Any) -> Any:
        """Calls the client-streaming method ``service.method``, sending `items` (any iterable:
        a list, a generator, a file's lines) as its upload, and returns its reply:
        ``client.upload("UserFeed", "import_users", users)``. See
        `wirecall.aio.AsyncClient.upload_with`; here the items are pulled in a thread of the
        upload's own, so a generator may block."""
        return self.upload_with(service, method, arguments, items)

    def upload_with(
        self,
        service: str,
        method: str,
        args: Optional[Mapping[str, Any]],
        items: Iterable[Any],
        *,
        timeout: Optional[float] = aio.USE_DEFAULT,
        metadata: Optional[Mapping[str, str]] = None,
        reply: Reply = Reply.AUTO,
        window: Optional[int] = None,
    ) -> Any:
        """See `wirecall.aio.AsyncClient.upload_with`. An exception raised by `items` (in the
        upload's thread) cancels the call and is raised here."""
        value, _ = self.upload_with_metadata(
            service, method, args, items, timeout=timeout, metadata=metadata, reply=reply, window=window
        )
        return value

    def upload_with_metadata(
        self,
        service: str,
        method: str,
        args: Optional[Mapping[str, Any]],
        items: Iterable[Any],
        *,
        timeout: Optional[float] = aio.USE_DEFAULT,
        metadata: Optional[Mapping[str, str]] = None,
        reply: Reply = Reply.AUTO,
        window: Optional[int] = None,
    ) -> Tuple[Any, Dict[str, str]]:
        """See `wirecall.aio.AsyncClient.upload_with_metadata`: ``(value, reply_metadata)``."""
        request = self._client._stream_request(
            service, method, args, timeout=timeout, window=window, reply=reply, metadata=metadata,
            signature=self._codec_signature(service, method),
        )
        return self._loop_thread.run(self._client._upload_reply(request, Upload(items, pull_in_thread=True)))

    def bidi(self, service: str, method: str, items: Iterable[Any], /, **arguments: Any) -> Stream:
        """Opens the bidirectional stream ``service.method``, sending `items` as its upload:
        ``for user in client.bidi("UserFeed", "rename", users, prefix="new-")``. See
        `wirecall.aio.AsyncClient.bidi_with`; the items are pulled in a thread of the
        upload's own, so a generator may block."""
        return self.bidi_with(service, method, arguments, items)

    def bidi_with(
        self,
        service: str,
        method: str,
        args: Optional[Mapping[str, Any]],
        items: Iterable[Any],
        *,
        timeout: Optional[float] = aio.USE_DEFAULT,
        window: Optional[int] = None,
        reply: Reply = Reply.AUTO,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> Stream:
        """See `wirecall.aio.AsyncClient.bidi_with`."""
        request = self._client._stream_request(
            service, method, args, timeout=timeout, window=window, reply=reply, metadata=metadata,
            signature=self._codec_signature(service, method),
        )
        return Stream(ServerStream(self._client, ready(request), Upload(items, pull_in_thread=True)), self._loop_thread)

    def service(self, name: str, **options: Any) -> ServiceProxy:
        """A proxy for the service `name`, described by reflection now (an unknown service
        raises `AttributeError`); `options` (``timeout``, ``metadata``) apply to its calls."""
        self.describe(name)
        return ServiceProxy(self, name, **options)

    def __getattr__(self, name: str) -> ServiceProxy:
        if is_service_name(name):
            return self.service(name)
        raise AttributeError(name)

    def list_services(self) -> List[Dict[str, Any]]:
        """See `wirecall.aio.AsyncClient.list_services`."""
        return self._loop_thread.run(self._client.list_services())

    def describe(self, service: str) -> Optional[ServiceSchema]:
        """See `wirecall.aio.AsyncClient.describe`: the service's schema, fetched once."""
        return self._loop_thread.run(self._client.describe(service))

    def _cached_schema(self, service: str) -> Optional[ServiceSchema]:
        return self._client._cached_schema(service)

    def _proxy_call(
        self,
        service: str,
        method: str,
        arguments: Mapping[str, Any],
        options: Mapping[str, Any],
        upload: Tuple[Any, ...] = (),
    ) -> Any:
        schema = self._client._cached_schema(service)
        if schema is not None and schema.method(method).server_stream:
            # Checked and encoded now, so that a wrong argument raises here, not on the first item.
            signature = schema.method(method)
            signature.check_upload(bool(upload))
            request = self._client._signed_stream_request(signature, arguments, options)
            uploaded = Upload(upload[0], pull_in_thread=True) if upload else None
            return Stream(ServerStream(self._client, ready(request), uploaded), self._loop_thread)
        return self._loop_thread.run(
            self._client._proxy_reply(service, method, arguments, options, upload, pull_in_thread=True)
        )

    def _codec_signature(self, service: str, method: str) -> Optional[MethodSignature]:
        """The method's signature when the codec encodes by schema (Protobuf), else None."""
        if not self._client._codec.needs_schema:
            return None
        return self._loop_thread.run(self._client._codec_signature(service, method))

    def _proxy_notify(self, service: str, method: str, arguments: Mapping[str, Any]) -> None:
        self._loop_thread.run(self._client._proxy_notify(service, method, arguments))

    def close(self) -> None:
        """Closes the connection and stops the background loop. Safe to call twice."""
        if self._loop_thread.loop.is_closed():
            return
        try:
            self._loop_thread.run(self._client.close())
        finally:
            self._loop_thread.stop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
