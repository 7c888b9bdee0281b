"""``client.UserService.get_user(user=...)``: services and methods learnt from reflection.

The first use of a service asks the server's reflection service (`wirecall.Reflection`) for
its schema, once per client; after that the proxy knows each method's arguments (their names
and their declaration order, which MessagePack needs), its reply type, whether it is one-way,
whether it is a server stream, and whether it takes an upload. An unknown service or method
raises `AttributeError` listing the known ones, missing or unknown keyword arguments raise
`TypeError`, a one-way method is sent as a Notify, and a server stream is opened with an Open
frame and its items iterated. A method that takes an upload (client or bidirectional
streaming) takes it as its one positional argument, its other arguments as keywords:
``client.UserFeed.import_users(users)``, ``client.UserFeed.rename(users, prefix="new-")``.

A server that does not serve reflection gets the calls as they are written: every attribute is
taken as a method name and the keyword arguments are sent in the order given; a call given an
upload is an upload when awaited and a bidirectional stream when iterated.

The proxy serves the asyncio and the blocking client alike: it forwards to their
``_proxy_call`` and ``_proxy_notify``. With the asyncio client, ``_proxy_call`` returns a
`ProxyCall` (awaitable, and iterable for a stream) and ``_proxy_notify`` a coroutine; with the
blocking client both return the result (an iterator for a stream).
"""

from typing import Any, Coroutine, Dict, Generator, List, Mapping, Optional, Tuple

from .schema import ServiceSchema


class ServiceProxy:
    """The methods of one service; ``proxy.method(**arguments)`` calls one."""

    def __init__(self, client: Any, service: str, **options: Any):
        self._client = client
        self._service = service
        self._options = options

    def __getattr__(self, method: str) -> "MethodProxy":
        if method.startswith("_"):
            raise AttributeError(method)
        schema: Optional[ServiceSchema] = self._client._cached_schema(self._service)
        if schema is not None:
            schema.method(method)  # AttributeError listing the methods, now rather than later
        return MethodProxy(self._client, self._service, method, self._options)

    def __dir__(self) -> List[str]:
        schema = self._client._cached_schema(self._service)
        return sorted(schema.methods) if schema is not None else []

    def __repr__(self) -> str:
        return f"<wirecall service {self._service}>"


class MethodProxy:
    """One method: call it for a request (a Notify for a one-way method), or ``.notify(...)``
    for a one-way call of any method. A method that takes an upload takes its items (any
    iterable, or async iterable with asyncio) as the one positional argument."""

    def __init__(self, client: Any, service: str, method: str, options: Dict[str, Any]):
        self._client = client
        self._service = service
        self._method = method
        self._options = options

    def __call__(self, *upload: Any, **arguments: Any) -> Any:
        if len(upload) > 1:
            raise TypeError(
                f"{self._service}.{self._method}() takes at most one positional argument, its upload's "
                f"items, and its other arguments as keywords; {len(upload)} were given"
            )
        return self._client._proxy_call(self._service, self._method, arguments, self._options, upload)

    def notify(self, **arguments: Any) -> Any:
        return self._client._proxy_notify(self._service, self._method, arguments)

    def __repr__(self) -> str:
        return f"<wirecall method {self._service}.{self._method}>"


class ProxyCall(Coroutine[Any, Any, Any]):
    """What calling a method of an asyncio proxy returns: ``await`` it for the method's
    reply, or iterate it when the method is a server stream or a bidirectional stream::

        user = await client.UserService.get_user(user=fanly)
        async for user in client.UserFeed.list_users(count=3):
            ...
        imported = await client.UserFeed.import_users(users)
        async for user in client.UserFeed.rename(users, prefix="new-"):
            ...

    Awaiting a server stream's (or a bidirectional stream's) call opens the stream and returns
    it (a `wirecall.aio.ServerStream`), as ``async with`` does; iterating a method that is not
    a stream raises `TypeError`. Nothing is sent before it is awaited or iterated. It is a
    coroutine for asyncio (``asyncio.create_task`` takes it), driving the call it stands for.
    """

    def __init__(
        self,
        client: Any,
        service: str,
        method: str,
        arguments: Mapping[str, Any],
        options: Mapping[str, Any],
        upload: Tuple[Any, ...] = (),
    ):
        self._client = client
        self._service = service
        self._method = method
        self._arguments = arguments
        self._options = options
        #: The upload's items, when given: ``(items,)``.
        self._upload = upload
        self._reply: Any = None
        self._stream: Any = None

    def _call(self) -> Any:
        # Made on first use, so that a call only iterated leaves no coroutine unawaited.
        if self._reply is None:
            self._reply = self._client._proxy_reply(
                self._service, self._method, self._arguments, self._options, self._upload
            )
        return self._reply

    def __await__(self) -> Generator[Any, None, Any]:
        awaiting: Generator[Any, None, Any] = self._call().__await__()
        return awaiting

    def send(self, value: Any) -> Any:
        return self._call().send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if val is None and tb is None:
            return self._call().throw(typ)
        return self._call().throw(typ, val, tb)

    def close(self) -> None:
        if self._reply is not None:
            self._reply.close()

    def __aiter__(self) -> Any:
        return self._client._proxy_stream(self._service, self._method, self._arguments, self._options, self._upload)

    async def __aenter__(self) -> Any:
        self._stream = self._client._proxy_stream(
            self._service, self._method, self._arguments, self._options, self._upload
        )
        return await self._stream.__aenter__()

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._stream.aclose()

    def __repr__(self) -> str:
        return f"<wirecall call {self._service}.{self._method}>"


def is_service_name(name: str) -> bool:
    """Service names are Rust trait names, so CamelCase: only those become proxies, and a
    mistyped client attribute (``client.cal``) still raises `AttributeError`."""
    return bool(name) and name[0].isupper()
