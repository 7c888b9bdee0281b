"""The asyncio client: many calls and streams in flight on one connection, replies routed by
request id.

One reader task reads every frame the server sends: it completes the waiting call whose
request id a Response or Error carries, hands a stream's Items, its Head and its End or Error
to the stream (see `stream.py`), answers Pings, and fails every call and stream in flight when the
connection ends. Callers write their own frames; a frame is written whole by one synchronous
``write``, so frames of concurrent calls never interleave.
"""

import asyncio
import itertools
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import errors
from .codecs import DEFAULT_CODECS, Codec, codec_named
from .compression import (
    DEFAULT_COMPRESSION_MIN_SIZE,
    algorithm_name,
    check_compression_min_size,
    compression_for,
    offered_algorithms,
    refuse_compressed_flag,
)
from .frame_reader import FrameReader
from .handshake import Negotiated, RetryWithVersion, negotiate
from .proxy import ProxyCall, ServiceProxy, is_service_name
from .replies import Reply, interpret_reply
from .schema import (
    REFLECTION_SERVICE,
    MethodSignature,
    ServiceSchema,
    schema_from_reply,
    summaries_from_reply,
)
from .stream import DEFAULT_STREAM_WINDOW, ServerStream, StreamRequest, StreamSlot, ready
from .transport import TlsOption, open_stream
from .upload import Items, Upload
from .wire import (
    CLIENT_ONLY_KINDS,
    DEFAULT_MAX_FRAME_LENGTH,
    FLAG_COMPRESSED,
    FLAG_METADATA,
    HEADER_AFTER_LENGTH,
    MAX_REQUEST_ID,
    MAX_STREAM_CREDIT,
    METADATA_VERSION,
    MIN_ANNOUNCED_FRAME_LENGTH,
    PROTOCOL_VERSION,
    STREAMS_VERSION,
    FrameHeader,
    FrameKind,
    deadline_ms,
    decode_credit,
    decode_error_payload,
    decode_metadata,
    encode_credit,
    encode_frame,
    encode_metadata,
    kind_exists,
    method_id,
    server_frame_flags,
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

#: A Response's header, its metadata and its payload after the metadata block.
_Reply = Tuple[FrameHeader, Dict[str, str], bytes]


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
    metadata: Optional[Mapping[str, str]] = None,
    protocol_version: int = PROTOCOL_VERSION,
    stream_window: int = DEFAULT_STREAM_WINDOW,
    compression: Optional[bool] = None,
    compression_min_size: int = DEFAULT_COMPRESSION_MIN_SIZE,
) -> "AsyncClient":
    """Connects to a wirecall server and negotiates a codec and a protocol version.

    `host` may be ``"host:port"`` when `port` is omitted. `codecs` is the offer, most
    preferred first (``"msgpack"``, ``"json"``, and ``"protobuf"`` only when asked: it needs
    the `protobuf` package and the server's reflection); the server picks one (see
    `AsyncClient.codec`).
    `token` is the server's shared secret. TLS is on with ``tls=True``, an `ssl.SSLContext`,
    or a `tls_ca` file; `server_name` is the name in the server's certificate (default `host`).
    `timeout` is the default per-call timeout in seconds (`None`: no deadline).
    `max_frame_length` is the largest frame accepted from the server, announced to it in the
    hello. `metadata` is sent with every call (per-call metadata adds to it and wins on a
    shared key); it needs a version 2 connection and is not sent on a version 1 one.
    `protocol_version` is the version the hello offers (5; 4 forces a version 4 connection,
    without compression, 3 a version 3 connection, without a stream's reply metadata and
    trailers either, 2 a version 2 connection, without streams, and 1 a version 1
    connection, without metadata). A server older
    than the offer answers with its own version (a version 2 server settles version 2), and
    one that refuses the offer naming version 1 is reconnected to with a version 1 hello.
    `stream_window` is how many items a server stream may send ahead of its consumer
    (1 to 65,536).
    `compression` offers zstd (version 5): `None` when the `zstandard` package is installed,
    `True` always (`ImportError` without it), `False` never; the server decides (see
    `AsyncClient.compression`). Payloads of `compression_min_size` bytes or more are then
    sent compressed when that saves at least 1/16 of them.
    """
    if port is None:
        host, port = split_address(host)
    offered = [codec_named(name) for name in codecs]
    if isinstance(token, str):
        token = token.encode("utf-8")
    client_metadata = dict(metadata or {})
    # Checked now, so that a bad key fails here rather than in the first call.
    encode_metadata(client_metadata)
    if not MIN_ANNOUNCED_FRAME_LENGTH <= max_frame_length <= 2**32 - 1:
        raise ValueError(
            f"max_frame_length is {MIN_ANNOUNCED_FRAME_LENGTH} to {2**32 - 1} bytes (a u32 in the hello), "
            f"not {max_frame_length}"
        )
    check_stream_window(stream_window)
    algorithms = offered_algorithms(compression)
    check_compression_min_size(compression_min_size)

    async def open_and_negotiate(version: int) -> AsyncClient:
        reader, writer = await open_stream(
            host, port, tls=tls, tls_ca=tls_ca, server_name=server_name
        )
        try:
            negotiated = await negotiate(
                reader,
                writer,
                offered,
                token or b"",
                version=version,
                max_frame_length=max_frame_length,
                compression=algorithms,
            )
        except BaseException:
            writer.close()
            raise
        return AsyncClient(
            reader,
            writer,
            negotiated.codec,
            timeout=timeout,
            max_frame_length=max_frame_length,
            negotiated=negotiated,
            metadata=client_metadata,
            stream_window=stream_window,
            compression_min_size=compression_min_size,
        )

    async def with_fallback() -> AsyncClient:
        try:
            return await open_and_negotiate(protocol_version)
        except RetryWithVersion as older:
            # An older server named the version it speaks: a new connection, an older hello.
            return await open_and_negotiate(older.version)

    try:
        return await asyncio.wait_for(with_fallback(), connect_timeout)
    except asyncio.TimeoutError:
        raise errors.Timeout(
            f"connecting to {host}:{port} took over {connect_timeout} s", code=4
        ) from None


def check_stream_window(window: int) -> None:
    """Raises `ValueError` unless `window` is credit a client may grant (Credit (flow control))."""
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_STREAM_CREDIT:
        raise ValueError(f"a stream window is 1 to {MAX_STREAM_CREDIT} items, not {window!r}")


def split_address(address: str) -> Tuple[str, int]:
    """``"host:port"`` or ``"[v6 address]:port"`` as host and port."""
    host, separator, port_text = address.rpartition(":")
    if not separator or not port_text.isdigit():
        raise ValueError(f"{address!r} is not host:port")
    return host.strip("[]"), int(port_text)


class AsyncClient:
    """A connection to a wirecall server. Create it with `connect`.

    Arguments are keyword arguments named like the Rust method's arguments. `call`,
    `call_with`, `stream`, `stream_with`, `upload`, `upload_with`, `bidi` and `bidi_with`
    send them **in the order given** (MessagePack sends an array), so give them in
    declaration order; a proxy (``client.Service.method``) orders them by the service's schema.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        codec: Codec,
        *,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH,
        negotiated: Optional[Negotiated] = None,
        metadata: Optional[Mapping[str, str]] = None,
        stream_window: int = DEFAULT_STREAM_WINDOW,
        compression_min_size: int = DEFAULT_COMPRESSION_MIN_SIZE,
    ):
        self._reader = reader
        self._writer = writer
        self._codec = codec
        self._timeout = timeout
        self._max_frame_length = max_frame_length
        self._version = negotiated.version if negotiated else 1
        server_limit = negotiated.server_max_frame_length if negotiated else None
        # Never send a frame over our own limit or the server's announced one (Extensions).
        self._send_limit = max_frame_length if server_limit is None else min(max_frame_length, server_limit)
        self._server_max_frame_length = server_limit
        self._metadata: Dict[str, str] = dict(metadata or {})
        self._stream_window = stream_window
        self._compression = compression_for(
            negotiated.compression if negotiated else None,
            max_frame_length=max_frame_length,
            min_size=compression_min_size,
        )
        # Reflection, fetched once: the service list, and each service's schema (None: the
        # server does not serve reflection, so calls go out as written).
        self._reflection_served: Optional[bool] = None
        self._services: Optional[List[Dict[str, Any]]] = None
        self._schemas: Dict[str, "asyncio.Future[Optional[ServiceSchema]]"] = {}
        self._pending: Dict[int, "asyncio.Future[_Reply]"] = {}
        self._streams: Dict[int, StreamSlot] = {}
        self._request_ids = itertools.count(1)
        self._drain_lock = asyncio.Lock()
        # Set once the connection is over: what a new call raises, and why.
        self._closed: Optional[errors.ConnectionClosed] = None
        self._flags_allowed = self._server_frame_flags()
        self._reader_task = asyncio.ensure_future(self._read_frames())

    # -- what the caller sees -----------------------------------------------------------------

    @property
    def codec(self) -> str:
        """The codec negotiated for this connection: ``"json"``, ``"msgpack"`` or ``"protobuf"``."""
        return self._codec.name

    @property
    def protocol_version(self) -> int:
        """The connection's protocol version: 6, or 5 (JSON byte strings as arrays of numbers),
        4 (no compression), 3 (no stream metadata
        or trailers either), 2 (no streams) or 1 (no metadata) with an older server or a
        `protocol_version` option that asked for it."""
        return self._version

    @property
    def compression(self) -> Optional[str]:
        """The compression the handshake chose for this connection, ``"zstd"``, or `None`
        (none offered, a server that does not compress, or a version below 5)."""
        return algorithm_name(self._compression.algorithm)

    @property
    def server_max_frame_length(self) -> Optional[int]:
        """The largest frame the server announced it accepts, or `None` if it announced none."""
        return self._server_max_frame_length

    @property
    def metadata(self) -> Dict[str, str]:
        """The metadata sent with every call (a copy)."""
        return dict(self._metadata)

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
        metadata: Optional[Mapping[str, str]] = None,
        signature: Optional[MethodSignature] = None,
    ) -> Any:
        """`call` with its options: `arguments` in declaration order, `timeout` in seconds
        (`None` for no deadline), the `reply` shape (see `Reply`), and `metadata` for this
        call (added to the client's; see `call_with_metadata` for the reply's metadata).

        The timeout travels in the Request as its deadline and is enforced here too: when it
        passes, or when the awaiting task is cancelled, the client sends a Cancel and the
        call raises `Timeout` (or `CancelledError`).
        """
        value, _ = await self.call_with_metadata(
            service, method, arguments, timeout=timeout, reply=reply, metadata=metadata, signature=signature
        )
        return value

    async def call_with_metadata(
        self,
        service: str,
        method: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = USE_DEFAULT,
        reply: Reply = Reply.AUTO,
        metadata: Optional[Mapping[str, str]] = None,
        signature: Optional[MethodSignature] = None,
    ) -> Tuple[Any, Dict[str, str]]:
        """`call_with`, returning ``(value, reply_metadata)``: the metadata the server sent
        with its Response (``{}`` if none). An `ApplicationError` or `CallError` raised
        instead carries the reply's metadata as its `metadata` attribute. `signature` (from
        reflection; the proxy passes it) reads MessagePack replies into their JSON form."""
        if timeout is USE_DEFAULT:
            timeout = self._timeout
        if self._codec.needs_schema:
            signature = await self._codec_signature(service, method)
        request_id = self._next_request_id()
        flags, payload = self._encode_request(arguments, metadata, signature)
        frame = encode_frame(
            FrameKind.REQUEST,
            request_id,
            method_id(service, method),
            0 if timeout is None else deadline_ms(timeout),
            payload,
            flags,
        )
        reply_future: "asyncio.Future[_Reply]" = asyncio.get_running_loop().create_future()
        self._pending[request_id] = reply_future
        try:
            self._write(frame)
            _, reply_metadata, payload = await asyncio.wait_for(self._flush_then(reply_future), timeout)
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
            fields = self._codec.decode_reply_fields(payload, reply, signature)
            if signature is not None and self._codec.name == "msgpack":
                fields = signature.reply_fields_from_msgpack(fields)
        except ValueError as bad:
            raise errors.DecodeError(f"the reply of {service}.{method} did not decode: {bad}") from bad
        try:
            return interpret_reply(fields, reply), reply_metadata
        except errors.ApplicationError as application_error:
            application_error.metadata = reply_metadata
            raise
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
        metadata: Optional[Mapping[str, str]] = None,
    ) -> None:
        """`notify` with its options: `deadline` in seconds bounds the handler on the server;
        `metadata` is added to the client's."""
        signature = await self._codec_signature(service, method) if self._codec.needs_schema else None
        flags, payload = self._encode_request(arguments, metadata, signature)
        frame = encode_frame(
            FrameKind.NOTIFY,
            self._next_request_id(),
            method_id(service, method),
            0 if deadline is None else deadline_ms(deadline),
            payload,
            flags,
        )
        self._write(frame)
        await self._flush()

    def stream(self, service: str, method: str, /, **arguments: Any) -> ServerStream:
        """Opens the server stream ``service.method`` with the default timeout:
        ``async for item in client.stream("UserFeed", "list_users", count=3)``.

        Raises `StreamsUnsupported` at once, before anything is sent, on a connection of
        protocol version 1 or 2. See `ServerStream` for the items, the end and cancelling."""
        return self.stream_with(service, method, arguments)

    def stream_with(
        self,
        service: str,
        method: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = USE_DEFAULT,
        window: Optional[int] = None,
        reply: Reply = Reply.AUTO,
        metadata: Optional[Mapping[str, str]] = None,
        signature: Optional[MethodSignature] = None,
    ) -> ServerStream:
        """`stream` with its options: `arguments` in declaration order; `timeout` in seconds
        bounds the **whole** stream, not its first item (`None` for no deadline, for a stream
        meant to outlive any call timeout); `window` is how many items the server may send
        ahead of the consumer (the client's `stream_window` by default); `reply` is the shape
        of each item (see `Reply`); `metadata` is added to the client's and sent with the
        Open. Arguments are checked and encoded now; the Open goes out when iteration starts."""
        if self._codec.needs_schema and signature is None:
            # The messages come from reflection, fetched when iteration starts.
            async def prepare() -> StreamRequest:
                signed = await self._codec_signature(service, method)
                return self._stream_request(
                    service, method, arguments, timeout=timeout, window=window, reply=reply, metadata=metadata, signature=signed
                )

            return ServerStream(self, prepare)
        request = self._stream_request(
            service, method, arguments, timeout=timeout, window=window, reply=reply, metadata=metadata, signature=signature
        )
        return ServerStream(self, ready(request))

    async def upload(self, service: str, method: str, items: Items, /, **arguments: Any) -> Any:
        """Calls the client-streaming method ``service.method`` with the default timeout: sends
        `items` (any iterable or async iterable) as its upload and returns its reply, read like
        a unary call's: ``await client.upload("UserFeed", "import_users", users)``.

        See `upload_with` for how the items are sent and how the call ends."""
        return await self.upload_with(service, method, arguments, items)

    async def upload_with(
        self,
        service: str,
        method: str,
        args: Optional[Mapping[str, Any]],
        items: Items,
        *,
        timeout: Optional[float] = USE_DEFAULT,
        metadata: Optional[Mapping[str, str]] = None,
        reply: Reply = Reply.AUTO,
        window: Optional[int] = None,
        signature: Optional[MethodSignature] = None,
    ) -> Any:
        """`upload` with its options: `args` are the method's arguments other than the upload,
        in declaration order, sent with the Open; `items` is the upload. `timeout` in seconds
        bounds the **whole** call, upload included (`None` for no deadline); `metadata` is
        added to the client's; `reply` is the reply's shape (see `Reply`); `window` is the
        credit granted for the server's half (its one reply needs one).

        Items are encoded like arguments (a struct as a dict) and sent only as the server's
        credit allows: the next item is taken from `items` only when there is credit for it,
        then the End follows the last. A plain iterable is pulled on the event loop, so it must
        not block; give a blocking source as an async iterable, or use the blocking client.

        The call ends once, with the reply or an exception: the server may answer before the
        upload is over (an early answer, such as an `ApplicationError` for a bad item), and the
        client then stops sending and stops pulling `items` at once. When the timeout passes,
        or the awaiting task is cancelled, the client sends a Cancel and raises `Timeout` (or
        `CancelledError`). An exception raised by `items` (or by encoding an item) cancels the
        call and is raised here as it is. `StreamsUnsupported` is raised before anything is
        sent on a connection of protocol version 1 or 2.
        """
        value, _ = await self.upload_with_metadata(
            service, method, args, items, timeout=timeout, metadata=metadata, reply=reply, window=window, signature=signature
        )
        return value

    async def upload_with_metadata(
        self,
        service: str,
        method: str,
        args: Optional[Mapping[str, Any]],
        items: Items,
        *,
        timeout: Optional[float] = USE_DEFAULT,
        metadata: Optional[Mapping[str, str]] = None,
        reply: Reply = Reply.AUTO,
        window: Optional[int] = None,
        signature: Optional[MethodSignature] = None,
    ) -> Tuple[Any, Dict[str, str]]:
        """`upload_with`, returning ``(value, reply_metadata)`` as `call_with_metadata` does:
        the stream's reply metadata and trailers as one set, the trailers winning for a key
        in both (``{}`` if none, or below protocol version 4). An `ApplicationError` or
        `CallError` raised instead carries that set as its `metadata` attribute."""
        if self._codec.needs_schema and signature is None:
            signature = await self._codec_signature(service, method)
        request = self._stream_request(
            service, method, args, timeout=timeout, window=window, reply=reply, metadata=metadata, signature=signature
        )
        return await self._upload_reply(request, Upload(items))

    def bidi(self, service: str, method: str, items: Items, /, **arguments: Any) -> ServerStream:
        """Opens the bidirectional stream ``service.method`` with the default timeout, sending
        `items` (any iterable or async iterable) as its upload while its items come back:
        ``async for user in client.bidi("UserFeed", "rename", users, prefix="new-")``.

        See `bidi_with` for its options and `ServerStream` for the items, the end and
        cancelling."""
        return self.bidi_with(service, method, arguments, items)

    def bidi_with(
        self,
        service: str,
        method: str,
        args: Optional[Mapping[str, Any]],
        items: Items,
        *,
        timeout: Optional[float] = USE_DEFAULT,
        window: Optional[int] = None,
        reply: Reply = Reply.AUTO,
        metadata: Optional[Mapping[str, str]] = None,
        signature: Optional[MethodSignature] = None,
    ) -> ServerStream:
        """`bidi` with its options, as `stream_with` takes them: `args` are the arguments other
        than the upload; `timeout` bounds the whole stream, upload included. The stream opens
        when iteration starts (or on ``async with``), and its upload is sent from then on as
        `upload_with` sends one. When the server ends its half, the upload stops; closing the
        stream (``aclose()``, leaving ``async with``, a ``break``) sends a Cancel and stops
        the upload; an exception raised by `items` cancels the stream and is raised by the
        iteration, after the items that came before it."""
        upload = Upload(items)
        if self._codec.needs_schema and signature is None:
            # The messages come from reflection, fetched when iteration starts.
            async def prepare() -> StreamRequest:
                signed = await self._codec_signature(service, method)
                return self._stream_request(
                    service, method, args, timeout=timeout, window=window, reply=reply, metadata=metadata, signature=signed
                )

            return ServerStream(self, prepare, upload)
        request = self._stream_request(
            service, method, args, timeout=timeout, window=window, reply=reply, metadata=metadata, signature=signature
        )
        return ServerStream(self, ready(request), upload)

    def service(self, name: str, **options: Any) -> ServiceProxy:
        """A proxy for the service `name`; `options` (``timeout``, ``metadata``) apply to its
        calls. Its methods are learnt from reflection on first use (see `describe`)."""
        self._check_service_name(name)
        return ServiceProxy(self, name, **options)

    def __getattr__(self, name: str) -> ServiceProxy:
        if is_service_name(name):
            self._check_service_name(name)
            return ServiceProxy(self, name)
        raise AttributeError(name)

    # -- reflection ---------------------------------------------------------------------------

    async def list_services(self) -> List[Dict[str, Any]]:
        """The services the server serves (``name``, ``summary``, ``methods``), from its
        reflection service; fetched once. Raises `UnknownMethod` if reflection is off."""
        if self._services is None:
            try:
                reply = await self.call_with(REFLECTION_SERVICE, "list_services", {}, reply=Reply.VALUE)
            except errors.UnknownMethod:
                self._reflection_served = False
                raise
            self._services = summaries_from_reply(reply, self.codec)
            self._reflection_served = True
        return self._services

    async def describe(self, service: str) -> Optional[ServiceSchema]:
        """The schema of `service`, fetched once and cached; `None` when the server does not
        serve reflection. An unknown service raises `AttributeError` listing the known ones.
        Once described, ``client.Service.typo`` raises `AttributeError` at once."""
        cached = self._schemas.get(service)
        if cached is None or (cached.done() and (cached.cancelled() or cached.exception() is not None)):
            cached = asyncio.ensure_future(self._fetch_schema(service))
            self._schemas[service] = cached
        # Shielded: a caller that gives up does not cancel the fetch others may be waiting on.
        return await asyncio.shield(cached)

    async def _fetch_schema(self, service: str) -> Optional[ServiceSchema]:
        if self._reflection_served is False:
            return None
        try:
            reply = await self.call_with(REFLECTION_SERVICE, "describe", {"service": service}, reply=Reply.RESULT)
        except errors.UnknownMethod:
            self._reflection_served = False
            return None
        except errors.ApplicationError as refused:
            # ReflectionError::UnknownService.
            known = [summary["name"] for summary in await self.list_services()]
            raise AttributeError(
                f"the server serves no service {service!r}; it serves: {', '.join(known)}"
            ) from refused
        self._reflection_served = True
        schema = ServiceSchema(schema_from_reply(reply, self.codec))
        if self._codec.needs_schema and not self._codec.knows_service(service):
            await self._learn_messages(schema)
        return schema

    async def _learn_messages(self, schema: ServiceSchema) -> None:
        """Protobuf: fetches the service's messages (its descriptors) for the codec."""
        try:
            descriptors = await self.call_with(REFLECTION_SERVICE, "descriptors", {"service": schema.name}, reply=Reply.RESULT)
        except errors.UnknownMethod as older:
            raise errors.NoSchema(
                f"the server's reflection has no `descriptors` method, so {schema.name} cannot be called over Protobuf"
            ) from older
        except errors.ApplicationError as refused:
            # ReflectionError::NoProtobufForm.
            raise errors.NoSchema(f"{schema.name} cannot be called over Protobuf: {refused.error}") from refused
        self._codec.learn_service(descriptors, schema)

    async def _codec_signature(self, service: str, method: str) -> MethodSignature:
        """The schema Protobuf writes and reads `service.method` with, from reflection (the
        first use of a service describes it; the reflection service's own is built in)."""
        known = self._codec.learnt_signature(service, method)
        if known is not None:
            return known
        schema = await self.describe(service)
        if schema is None:
            raise errors.NoSchema(
                f"{service}.{method} cannot be called over Protobuf: the server does not serve reflection"
            )
        return schema.method(method)

    def _cached_schema(self, service: str) -> Optional[ServiceSchema]:
        cached = self._schemas.get(service)
        if cached is not None and cached.done() and not cached.cancelled() and cached.exception() is None:
            return cached.result()
        return None

    def _check_service_name(self, name: str) -> None:
        if self._services is not None:
            known = [summary["name"] for summary in self._services]
            if name not in known:
                raise AttributeError(f"the server serves no service {name!r}; it serves: {', '.join(known)}")

    def _proxy_call(
        self,
        service: str,
        method: str,
        arguments: Mapping[str, Any],
        options: Mapping[str, Any],
        upload: Tuple[Any, ...] = (),
    ) -> ProxyCall:
        return ProxyCall(self, service, method, arguments, options, upload)

    async def _proxy_reply(
        self,
        service: str,
        method: str,
        arguments: Mapping[str, Any],
        options: Mapping[str, Any],
        upload: Tuple[Any, ...] = (),
        pull_in_thread: bool = False,
    ) -> Any:
        """A proxy call awaited: the reply, or for a server (or bidirectional) stream the
        stream, opened. `upload` is ``(items,)`` when the call gave one; `pull_in_thread` says
        how to pull plain iterables (the blocking client's way, see `upload.py`)."""
        uploaded = Upload(upload[0], pull_in_thread=pull_in_thread) if upload else None
        schema = await self.describe(service)
        if schema is None:
            if uploaded is not None:
                # Awaited, a call with an upload is taken for an upload with one reply.
                request = self._stream_request(service, method, arguments, **options)
                return (await self._upload_reply(request, uploaded))[0]
            return await self.call_with(service, method, arguments, **options)
        signature = schema.method(method)
        signature.check_upload(uploaded is not None)
        if signature.server_stream:
            request = self._signed_stream_request(signature, arguments, options)
            stream = ServerStream(self, ready(request), uploaded)
            return await stream.__aenter__()  # opened, as `async with` opens it
        if uploaded is not None:
            return (await self._upload_reply(self._signed_stream_request(signature, arguments, options), uploaded))[0]
        ordered = signature.order_arguments(arguments)
        if signature.oneway:
            await self.notify_with(service, method, ordered, metadata=options.get("metadata"))
            return None
        options = {"reply": signature.reply_shape, **options}
        return await self.call_with(service, method, ordered, signature=signature, **options)

    def _proxy_stream(
        self,
        service: str,
        method: str,
        arguments: Mapping[str, Any],
        options: Mapping[str, Any],
        upload: Tuple[Any, ...] = (),
    ) -> ServerStream:
        """A proxy call iterated: the server stream, or with an upload the bidirectional
        stream, described (and checked to be one) before it opens."""

        async def prepare() -> StreamRequest:
            schema = await self.describe(service)
            if schema is None:
                return self._stream_request(service, method, arguments, **options)
            signature = schema.method(method)
            if not signature.server_stream:
                shape = "an upload with one reply" if signature.upload is not None else "not a server stream"
                raise TypeError(
                    f"{service}.{method} is {shape}, so it cannot be iterated: await "
                    f"it for its reply; it takes {signature.describe()}"
                )
            signature.check_upload(bool(upload))
            return self._signed_stream_request(signature, arguments, options)

        return ServerStream(self, prepare, Upload(upload[0]) if upload else None)

    def _signed_stream_request(
        self, signature: MethodSignature, arguments: Mapping[str, Any], options: Mapping[str, Any]
    ) -> StreamRequest:
        ordered = signature.order_arguments(arguments)
        options = {"reply": signature.reply_shape, **options}
        return self._stream_request(signature.service, signature.name, ordered, signature=signature, **options)

    async def _proxy_notify(self, service: str, method: str, arguments: Mapping[str, Any]) -> None:
        schema = await self.describe(service)
        if schema is not None:
            arguments = schema.method(method).order_arguments(arguments)
        await self.notify_with(service, method, arguments)

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
        # not be reused (Request ids). Streams take theirs from the same sequence. 2^64
        # requests will not wrap in practice, but be correct.
        while True:
            request_id = next(self._request_ids)
            if request_id > MAX_REQUEST_ID:
                self._request_ids = itertools.count(1)
                continue
            if request_id not in self._pending and request_id not in self._streams:
                return request_id

    def _encode_request(
        self,
        arguments: Optional[Mapping[str, Any]],
        metadata: Optional[Mapping[str, str]],
        signature: Optional[MethodSignature] = None,
    ) -> Tuple[int, bytes]:
        """The flags and payload of a Request, Notify or Open: the metadata block (version 2,
        when there is metadata), then the arguments, compressed when the connection negotiated
        compression and it pays. Refuses a frame over the send limit."""
        flags, block = 0, b""
        merged = {**self._metadata, **(metadata or {})}
        try:
            encoded = encode_metadata(merged)
        except ValueError as bad:
            raise ValueError(f"metadata not sent: {bad}") from None
        if merged and self._version >= METADATA_VERSION:
            # On a version 1 connection metadata is simply not sent (Metadata (version 2)).
            flags, block = FLAG_METADATA, encoded
        payload = block + self._codec.encode_arguments(arguments or {}, signature)
        if HEADER_AFTER_LENGTH + len(payload) > self._send_limit:
            who = "the server's announced" if self._send_limit != self._max_frame_length else "the"
            raise errors.FrameTooLarge(
                f"the request would be {HEADER_AFTER_LENGTH + len(payload)} bytes, "
                f"over {who} maximum frame length of {self._send_limit}; nothing was sent",
                code=5,
            )
        # The limit is on the uncompressed length (Compression (version 5)), checked above.
        return self._compression.compress(flags, payload)

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

    # -- streams --------------------------------------------------------------------------------

    def _stream_request(
        self,
        service: str,
        method: str,
        arguments: Optional[Mapping[str, Any]],
        *,
        timeout: Optional[float] = USE_DEFAULT,
        window: Optional[int] = None,
        reply: Reply = Reply.AUTO,
        metadata: Optional[Mapping[str, str]] = None,
        signature: Optional[MethodSignature] = None,
    ) -> StreamRequest:
        """Checks and encodes a stream call; raises before anything is sent."""
        if self._version < STREAMS_VERSION:
            raise errors.StreamsUnsupported(
                f"{service}.{method} is a stream call, which needs protocol version {STREAMS_VERSION}; "
                f"this connection speaks version {self._version} (the server's newest, or the "
                f"protocol_version asked for), so nothing was sent",
                version=self._version,
            )
        if window is None:
            window = self._stream_window
        check_stream_window(window)
        if timeout is USE_DEFAULT:
            timeout = self._timeout
        flags, payload = self._encode_request(arguments, metadata, signature)
        return StreamRequest(
            service=service,
            method=method,
            method_id=method_id(service, method),
            flags=flags,
            payload=payload,
            timeout=timeout,
            window=window,
            reply=reply,
            signature=signature,
        )

    def _open_stream(self, request: StreamRequest) -> StreamSlot:
        """Sends the Open and the first Credit together (as the Rust client does) and
        registers the stream; the caller flushes."""
        request_id = self._next_request_id()
        open_frame = encode_frame(
            FrameKind.OPEN,
            request_id,
            request.method_id,
            0 if request.timeout is None else deadline_ms(request.timeout),
            request.payload,
            request.flags,
        )
        slot = StreamSlot(request_id, request.window)
        self._write(open_frame + encode_credit(request_id, slot.first_grant))
        self._streams[request_id] = slot
        if request.timeout is not None:
            # The deadline bounds the whole stream; the client gives up when it passes, as
            # the server does (Deadlines and ends). The timer holds the slot, not the
            # `ServerStream`, so that dropping the stream still cancels it at once.
            timeout = errors.Timeout(
                f"the stream {request.service}.{request.method} did not end within {request.timeout} s; "
                "it was cancelled",
                request_id=request_id,
            )
            slot.expiry = asyncio.get_running_loop().call_later(
                request.timeout, self._expire_stream, request_id, timeout
            )
        return slot

    def _grant(self, request_id: int, granted: int) -> None:
        if self._closed is None and request_id in self._streams:
            self._writer.write(encode_credit(request_id, granted))

    def _cancel_stream(self, request_id: int) -> None:
        """Withdraws a stream and tells the server, unless it has already ended: frames that
        cross the Cancel find no stream and are discarded."""
        slot = self._streams.pop(request_id, None)
        if slot is not None:
            slot.finish(None)
            self._cancel(request_id)

    def _expire_stream(self, request_id: int, timeout: errors.Timeout) -> None:
        slot = self._streams.pop(request_id, None)
        if slot is not None:
            self._cancel(request_id)
            slot.finish(timeout)

    def _fail_stream(self, request_id: int, error: BaseException) -> None:
        """Ends a stream on this side with `error` (its upload failed) and tells the server to
        stop, unless it has already ended."""
        slot = self._streams.pop(request_id, None)
        if slot is not None:
            self._cancel(request_id)
            slot.finish(error)

    # -- uploads --------------------------------------------------------------------------------

    async def _upload_reply(self, request: StreamRequest, upload: Upload) -> Tuple[Any, Dict[str, str]]:
        """An upload's one reply and its reply metadata: the stream opened with the upload
        beside it, then read."""
        stream = ServerStream(self, ready(request), upload)
        return await stream._single_reply()

    def _encode_item(self, item: Any, signature: Optional[MethodSignature]) -> bytes:
        """An uploaded item's message (``value``, encoded like arguments); refuses an Item
        over the send limit."""
        payload = self._codec.encode_item(item, signature)
        if HEADER_AFTER_LENGTH + len(payload) > self._send_limit:
            who = "the server's announced" if self._send_limit != self._max_frame_length else "the"
            raise errors.FrameTooLarge(
                f"an uploaded item would be {HEADER_AFTER_LENGTH + len(payload)} bytes, "
                f"over {who} maximum frame length of {self._send_limit}; the call was cancelled",
                code=5,
            )
        return payload

    def _send_item(self, request_id: int, payload: bytes) -> bool:
        """Writes an upload's Item, unless the stream has ended on this side (an early answer
        that crossed it): whether it was written. The caller spent the credit and flushes."""
        if request_id not in self._streams:
            return False
        flags, payload = self._compression.compress(0, payload)
        self._write(encode_frame(FrameKind.ITEM, request_id, payload=payload, flags=flags))
        return True

    def _end_upload(self, request_id: int) -> None:
        """Ends the client's half of a stream still open on this side; the caller flushes."""
        if request_id in self._streams:
            self._write(encode_frame(FrameKind.END, request_id))

    # -- receiving ----------------------------------------------------------------------------

    async def _read_frames(self) -> None:
        frames = FrameReader(self._reader)
        try:
            while True:
                header = frames.peek_header()
                if header is None:
                    # The length is checked as soon as it is read, before the rest of the
                    # header: a peer that sends a short bogus frame and then nothing is
                    # refused, not waited on.
                    length = frames.peek_length()
                    if length is not None:
                        self._check_length(length)
                    await frames.fill()
                    continue
                self._check_header(header)
                while not frames.holds(header):
                    await frames.fill()
                payload = frames.take(header)
                if header.flags & FLAG_COMPRESSED:
                    header, payload = self._compression.decompress(header, payload)
                metadata: Dict[str, str] = {}
                # A Head's block is the stream's to read: a malformed one fails only the stream.
                if header.flags & FLAG_METADATA and header.kind != FrameKind.HEAD:
                    try:
                        metadata, payload = decode_metadata(payload)
                    except ValueError as bad:
                        raise errors.ProtocolError(f"a malformed metadata block: {bad}") from None
                self._dispatch(header, metadata, payload)
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

    def _check_length(self, length: int) -> None:
        # The length is checked before it sizes a read (Frames).
        if length < HEADER_AFTER_LENGTH or length > self._max_frame_length:
            raise errors.ProtocolError(f"a frame length of {length}")

    def _check_header(self, header: FrameHeader) -> None:
        self._check_length(header.length)
        # Every frame passes here: the common case is one lookup, and the rules are spelled
        # out below only to name what a frame broke.
        allowed = self._flags_allowed.get(header.kind)
        if allowed is None or header.flags & ~allowed:
            self._refuse_header(header)

    def _refuse_header(self, header: FrameHeader) -> None:
        """Raises the `ProtocolError` that says which rule a frame's kind or flags broke."""
        if header.kind not in FrameKind.__members__.values():
            raise errors.ProtocolError(f"a frame of unknown kind {header.kind}")
        kind = FrameKind(header.kind)
        if not kind_exists(kind, self._version):
            raise errors.ProtocolError(f"a {kind.name} frame on a version {self._version} connection")
        if header.flags & FLAG_COMPRESSED:
            refuse_compressed_flag(kind, self._compression.algorithm)
        if header.flags & ~server_frame_flags(kind, self._version):
            raise errors.ProtocolError(f"a {kind.name} frame with flags {header.flags:#04x}")
        if kind in CLIENT_ONLY_KINDS:
            raise errors.ProtocolError(f"a {kind.name} frame from the server")

    def _server_frame_flags(self) -> Dict[int, int]:
        """The kinds a server may send on this connection, each with the flags it may carry."""
        compressed = self._compression.algorithm is not None
        return {
            int(kind): server_frame_flags(kind, self._version, compressed)
            for kind in FrameKind
            if kind not in CLIENT_ONLY_KINDS and kind_exists(kind, self._version)
        }

    def _dispatch(self, header: FrameHeader, metadata: Dict[str, str], payload: bytes) -> None:
        kind = header.kind
        if kind == FrameKind.PING:
            self._writer.write(encode_frame(FrameKind.PONG, header.request_id))
        elif kind == FrameKind.ITEM:
            # An item for no open stream crossed its Cancel: discarded (Stream frames).
            stream = self._streams.get(header.request_id)
            if stream is not None:
                stream.push(payload)
        elif kind == FrameKind.END:
            stream = self._streams.pop(header.request_id, None)
            if stream is not None:
                stream.finish(None, trailers=metadata)
        elif kind == FrameKind.HEAD:
            # A Head for no open stream crossed its Cancel or its end: discarded.
            stream = self._streams.get(header.request_id)
            if stream is not None:
                malformed = stream.push_head(header.flags, payload)
                if malformed is not None:
                    self._fail_stream(header.request_id, malformed)
        elif kind == FrameKind.CREDIT:
            # Checked whatever the stream, as the Rust client does: a malformed grant is a
            # violation even when it crossed the stream's end. One for a stream that has
            # ended is discarded (it may have crossed the End or a Cancel).
            try:
                granted = decode_credit(payload)
            except ValueError as bad:
                raise errors.ProtocolError(f"stream {header.request_id}: {bad}") from None
            stream = self._streams.get(header.request_id)
            if stream is not None:
                stream.send_credit.grant(granted)
        elif kind == FrameKind.RESPONSE:
            stream = self._streams.pop(header.request_id, None)
            if stream is not None:
                stream.finish(
                    errors.ProtocolError(f"the server answered stream {header.request_id} with a Response frame")
                )
            waiting = self._pending.pop(header.request_id, None)
            if waiting is not None and not waiting.done():
                waiting.set_result((header, metadata, payload))
        elif kind == FrameKind.ERROR:
            try:
                code, message = decode_error_payload(payload)
            except ValueError as bad:
                raise errors.ProtocolError(str(bad)) from None
            error = errors.error_for_code(code, message, header.request_id)
            error.metadata = metadata
            if header.request_id == 0:
                raise error
            # An Error ends a stream as it fails a call; its metadata is the stream's trailers.
            stream = self._streams.pop(header.request_id, None)
            if stream is not None:
                stream.finish(error, trailers=metadata)
            waiting = self._pending.pop(header.request_id, None)
            if waiting is not None and not waiting.done():
                waiting.set_exception(error)
        # A Pong needs nothing: any frame is a sign of life.

    def _shut(
        self,
        reason: errors.ConnectionClosed,
        calls_fail_with: Optional[errors.WirecallError] = None,
    ) -> None:
        """Ends the connection once: every call and stream in flight fails, new calls raise
        `reason`."""
        if self._closed is not None:
            return
        self._closed = reason
        pending, self._pending = self._pending, {}
        for waiting in pending.values():
            if not waiting.done():
                waiting.set_exception(
                    calls_fail_with or errors.ConnectionClosed(str(reason), cause=reason.cause)
                )
        streams, self._streams = self._streams, {}
        for stream in streams.values():
            stream.finish(calls_fail_with or errors.ConnectionClosed(str(reason), cause=reason.cause))
        self._writer.close()
