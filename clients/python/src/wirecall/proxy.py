"""``client.UserService.get_user(user=...)``: services and methods learnt from reflection.

The first use of a service asks the server's reflection service (`wirecall.Reflection`) for
its schema, once per client; after that the proxy knows each method's arguments (their names
and their declaration order, which MessagePack needs), its reply type and whether it is
one-way. An unknown service or method raises `AttributeError` listing the known ones, missing
or unknown keyword arguments raise `TypeError`, and a one-way method is sent as a Notify.

A server that does not serve reflection gets the calls as they are written: every attribute is
taken as a method name and the keyword arguments are sent in the order given.

The proxy serves the asyncio and the blocking client alike: it forwards to their
``_proxy_call`` and ``_proxy_notify``, which return a coroutine or a result respectively.
"""

from typing import Any, Optional

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

    def __dir__(self) -> list:
        schema = self._client._cached_schema(self._service)
        return sorted(schema.methods) if schema is not None else []

    def __repr__(self) -> str:
        return f"<wirecall service {self._service}>"


class MethodProxy:
    """One method: call it for a request (a Notify for a one-way method), or ``.notify(...)``
    for a one-way call of any method."""

    def __init__(self, client: Any, service: str, method: str, options: dict):
        self._client = client
        self._service = service
        self._method = method
        self._options = options

    def __call__(self, **arguments: Any) -> Any:
        return self._client._proxy_call(self._service, self._method, arguments, self._options)

    def notify(self, **arguments: Any) -> Any:
        return self._client._proxy_notify(self._service, self._method, arguments)

    def __repr__(self) -> str:
        return f"<wirecall method {self._service}.{self._method}>"


def is_service_name(name: str) -> bool:
    """Service names are Rust trait names, so CamelCase: only those become proxies, and a
    mistyped client attribute (``client.cal``) still raises `AttributeError`."""
    return bool(name) and name[0].isupper()
