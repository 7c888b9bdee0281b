"""The asyncio client: many calls in flight on one connection, replies routed by request id.

One reader task reads every frame the server sends: it completes the waiting call whose
request id a Response or Error carries, answers Pings, and fails every call in flight when the
connection ends. Callers write their own frames; a frame is written whole by one synchronous
``write``, so frames of concurrent calls never interleave.
"""

import asyncio
import itertools
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import errors
from .codecs import DEFAULT_CODECS, Codec, codec_named
from .handshake import negotiate
from .proxy import ServiceProxy, is_service_name
from .replies import Reply, interpret_reply
from .transport import TlsOption, open_stream
from .wire import (
    DEFAULT_MAX_FRAME_LENGTH,
    FRAME_HEADER,
    HEADER_AFTER_LENGTH,
    MAX_REQUEST_ID,
    FrameHeader,
    FrameKind,
    deadline_ms,
    decode_error_payload,
    decode_frame_header,
    encode_frame,
    method_id,
)

#: The per-call timeout when none is given, as in the Rust client (30 s).
DEFAULT_TIMEOUT = 30.0
#: How long TCP connect, TLS and the hello may take together.
DEFAULT_CONNECT_TIMEOUT = 10.0


class _UseDefault:
    def __repr__(self) -> str:
        return "USE_DEFAULT"


#: Marks "the client's default timeout"; `None` means no deadline at all.
USE_DEFAULT: Any = _UseDefault()

_Reply = Tuple[FrameHeader, bytes]


async def connect(
    host: str,
    port: Optional[int] = None,
    *,
    codecs: Sequence[str] = DEFAULT_CODECS,
    token: Union[None, str, bytes] = None,
    tls: TlsOption = None,
    tls_ca: Optional[str] = None,
    server_name: Optional[str] = None,
    timeout: Optional[float] = DEFAULT_TIMEOUT,
    connect_timeout: Optional[float] = DEFAULT_CONNECT_TIMEOUT,
    max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
) -> "AsyncClient":
    """Connects to a wirecall server and negotiates a codec.

    `host` may be ``"host:port"`` when `port` is omitted. `codecs` is the offer, most
    preferred first (``"msgpack"``, ``"json"``); the server picks one (see `AsyncClient.codec`).
    `token` is the server's shared secret. TLS is on with ``tls=True``, an `ssl.SSLContext`,
    or a `tls_ca` file; `server_name` is the name in the server's certificate (default `host`).
    `timeout` is the default per-call timeout in seconds (`None`: no deadline).
    """
    if port is None:
        host, port = split_address(host)
    offered = [codec_named(name) for name in codecs]
    if isinstance(token, str):
        token = token.encode("utf-8")

    async def open_and_negotiate() -> AsyncClient:
        reader, writer = await open_stream(
            host, port, tls=tls, tls_ca=tls_ca, server_name=server_name
        )
        try:
            codec = await negotiate(reader, writer, offered, token or b"")
        except BaseException:
            writer.close()
            raise
        return AsyncClient(reader, writer, codec, timeout=timeout, max_frame_length=max_frame_length)

    try:
        return await asyncio.wait_for(open_and_negotiate(), connect_timeout)
    except asyncio.TimeoutError:
        raise errors.Timeout(
            f"connecting to {host}:{port} took over {connect_timeout} s", code=4
        ) from None


def split_address(address: str) -> Tuple[str, int]:
    """``"host:port"`` or ``"[v6 address]:port"`` as host and port."""
    host, separator, port_text = address.rpartition(":")
    if not separator or not port_text.isdigit():
        raise ValueError(f"{address!r} is not host:port")
    return host.strip("[]"), int(port_text)


class AsyncClient:
    """A connection to a wirecall server. Create it with `connect`.

    Arguments are keyword arguments named like the Rust method's arguments, **in declaration
    order**: MessagePack sends them as an array in the order given.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        codec: Codec,
        *,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
    ):
        self._reader = reader
        self._writer = writer
        self._codec = codec
        self._timeout = timeout
        self._max_frame_length = max_frame_length
        self._pending: Dict[int, "asyncio.Future[_Reply]"] = {}
        self._request_ids = itertools.count(1)
        self._drain_lock = asyncio.Lock()
        # Set once the connection is over: what a new call raises, and why.
        self._closed: Optional[errors.ConnectionClosed] = None
        self._reader_task = asyncio.ensure_future(self._read_frames())

    # -- what the caller sees -----------------------------------------------------------------

    @property
    def codec(self) -> str:
        """The codec negotiated for this connection: ``"json"`` or ``"msgpack"``."""
        return self._codec.name

    @property
    def is_closed(self) -> bool:
        return self._closed is not None

    async def call(self, service: str, method: str, /, **arguments: Any) -> Any:
        """Calls ``service.method`` with the default timeout and returns its reply."""
        return await self.call_with(service, method, arguments)

    async def call_with(
        self,
        service: str,
        method: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = USE_DEFAULT,
        reply: Reply = Reply.AUTO,
    ) -> Any:
        """`call` with its options: `arguments` in declaration order, `timeout` in seconds
        (`None` for no deadline), and the `reply` shape (see `Reply`).

        The timeout travels in the Request as its deadline and is enforced here too: when it
        passes, or when the awaiting task is cancelled, the client sends a Cancel and the
        call raises `Timeout` (or `CancelledError`).
        """
        if timeout is USE_DEFAULT:
            timeout = self._timeout
        request_id = self._next_request_id()
        frame = encode_frame(
            FrameKind.REQUEST,
            request_id,
            method_id(service, method),
            0 if timeout is None else deadline_ms(timeout),
            self._encode_arguments(arguments),
        )
        reply_future: "asyncio.Future[_Reply]" = asyncio.get_running_loop().create_future()
        self._pending[request_id] = reply_future
        try:
            self._write(frame)
            _, payload = await asyncio.wait_for(self._flush_then(reply_future), timeout)
        except asyncio.TimeoutError:
            self._cancel(request_id)
            raise errors.Timeout(
                f"no reply from {service}.{method} within {timeout} s; the call was cancelled",
                request_id=request_id,
            ) from None
        except asyncio.CancelledError:
            self._cancel(request_id)
            raise
        finally:
            self._pending.pop(request_id, None)
        try:
            fields = self._codec.decode_reply_fields(payload, reply)
        except ValueError as bad:
            raise errors.DecodeError(f"the reply of {service}.{method} did not decode: {bad}") from bad
        try:
            return interpret_reply(fields, reply)
        except ValueError as bad:
            raise errors.DecodeError(f"the reply of {service}.{method}: {bad}") from bad

    async def notify(self, service: str, method: str, /, **arguments: Any) -> None:
        """A one-way call: sends a Notify and returns once it is written; no reply comes."""
        await self.notify_with(service, method, arguments)

    async def notify_with(
        self,
        service: str,
        method: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        deadline: Optional[float] = None,
    ) -> None:
        """`notify` with its options: `deadline` in seconds bounds the handler on the server."""
        frame = encode_frame(
            FrameKind.NOTIFY,
            self._next_request_id(),
            method_id(service, method),
            0 if deadline is None else deadline_ms(deadline),
            self._encode_arguments(arguments),
        )
        self._write(frame)
        await self._flush()

    def service(self, name: str, **options: Any) -> ServiceProxy:
        """A proxy for the service `name`; `options` (``timeout``, ``reply``) apply to its calls."""
        return ServiceProxy(self, name, **options)

    def __getattr__(self, name: str) -> ServiceProxy:
        if is_service_name(name):
            return ServiceProxy(self, name)
        raise AttributeError(name)

    async def close(self) -> None:
        """Closes the connection. Calls still in flight raise `ConnectionClosed`."""
        self._shut(errors.ConnectionClosed("the client closed the connection"))
        if self._reader_task is not asyncio.current_task():
            self._reader_task.cancel()
            try:
                await self._reader_task
            except asyncio.CancelledError:
                pass
        try:
            await self._writer.wait_closed()
        except (OSError, asyncio.CancelledError):
            pass

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    # -- sending ------------------------------------------------------------------------------

    def _next_request_id(self) -> int:
        # Ids are per connection, 1, 2, 3, ...; 0 is reserved, and an id still in flight must
        # not be reused (Request ids). 2^64 requests will not wrap in practice, but be correct.
        while True:
            request_id = next(self._request_ids)
            if request_id > MAX_REQUEST_ID:
                self._request_ids = itertools.count(1)
                continue
            if request_id not in self._pending:
                return request_id

    def _encode_arguments(self, arguments: Optional[Mapping[str, Any]]) -> bytes:
        payload = self._codec.encode_arguments(arguments or {})
        if HEADER_AFTER_LENGTH + len(payload) > self._max_frame_length:
            raise errors.FrameTooLarge(
                f"the request would be {HEADER_AFTER_LENGTH + len(payload)} bytes, "
                f"over the maximum frame length of {self._max_frame_length}",
                code=5,
            )
        return payload

    def _write(self, frame: bytes) -> None:
        if self._closed is not None:
            raise errors.ConnectionClosed(str(self._closed), cause=self._closed.cause)
        self._writer.write(frame)

    async def _flush(self) -> None:
        # Python 3.9's drain() does not allow two waiters at once: one at a time.
        try:
            async with self._drain_lock:
                await self._writer.drain()
        except (OSError, RuntimeError) as broken:
            self._shut(errors.ConnectionClosed(f"the connection broke: {broken}"))
            raise errors.ConnectionClosed(f"the connection broke: {broken}") from broken

    async def _flush_then(self, reply_future: "asyncio.Future[_Reply]") -> _Reply:
        await self._flush()
        return await reply_future

    def _cancel(self, request_id: int) -> None:
        # A reply that crosses the Cancel on the wire finds no waiter and is dropped.
        if self._closed is None:
            self._writer.write(encode_frame(FrameKind.CANCEL, request_id))

    # -- receiving ----------------------------------------------------------------------------

    async def _read_frames(self) -> None:
        try:
            while True:
                header = decode_frame_header(await self._reader.readexactly(FRAME_HEADER.size))
                self._check_header(header)
                payload = b""
                if header.payload_length:
                    payload = await self._reader.readexactly(header.payload_length)
                self._dispatch(header, payload)
        except asyncio.IncompleteReadError:
            self._shut(errors.ConnectionClosed("the server closed the connection"))
        except errors.ProtocolError as violation:
            self._shut(errors.ConnectionClosed(f"the server broke the protocol: {violation}", cause=violation))
        except errors.CallError as connection_error:
            # An Error frame with request id 0: the server closes right after it.
            self._shut(
                errors.ConnectionClosed(f"the server closed the connection: {connection_error}", cause=connection_error),
                calls_fail_with=connection_error,
            )
        except OSError as broken:
            self._shut(errors.ConnectionClosed(f"the connection broke: {broken}", cause=broken))

    def _check_header(self, header: FrameHeader) -> None:
        # The length is checked before it sizes a read (Frames).
        if header.length < HEADER_AFTER_LENGTH or header.length > self._max_frame_length:
            raise errors.ProtocolError(f"a frame length of {header.length}")
        if header.flags != 0:
            raise errors.ProtocolError(f"a frame with flags {header.flags:#04x}")
        if header.kind not in FrameKind.__members__.values():
            raise errors.ProtocolError(f"a frame of unknown kind {header.kind}")
        if header.kind in (FrameKind.REQUEST, FrameKind.NOTIFY, FrameKind.CANCEL):
            raise errors.ProtocolError(f"a {FrameKind(header.kind).name} frame from the server")

    def _dispatch(self, header: FrameHeader, payload: bytes) -> None:
        kind = header.kind
        if kind == FrameKind.PING:
            self._writer.write(encode_frame(FrameKind.PONG, header.request_id))
        elif kind == FrameKind.RESPONSE:
            waiting = self._pending.pop(header.request_id, None)
            if waiting is not None and not waiting.done():
                waiting.set_result((header, payload))
        elif kind == FrameKind.ERROR:
            try:
                code, message = decode_error_payload(payload)
            except ValueError as bad:
                raise errors.ProtocolError(str(bad)) from None
            error = errors.error_for_code(code, message, header.request_id)
            if header.request_id == 0:
                raise error
            waiting = self._pending.pop(header.request_id, None)
            if waiting is not None and not waiting.done():
                waiting.set_exception(error)
        # A Pong needs nothing: any frame is a sign of life.

    def _shut(
        self,
        reason: errors.ConnectionClosed,
        calls_fail_with: Optional[errors.WirecallError] = None,
    ) -> None:
        """Ends the connection once: every call in flight fails, new calls raise `reason`."""
        if self._closed is not None:
            return
        self._closed = reason
        pending, self._pending = self._pending, {}
        for waiting in pending.values():
            if not waiting.done():
                waiting.set_exception(
                    calls_fail_with or errors.ConnectionClosed(str(reason), cause=reason.cause)
                )
        self._writer.close()
