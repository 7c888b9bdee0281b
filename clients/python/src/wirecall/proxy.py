"""``client.UserService.get_user(user=...)``: attribute access that names a service and a method.

The proxy knows nothing about the service: every attribute is taken as a method name and the
keyword arguments are sent as they are given. It serves the asyncio and the blocking client
alike, since it only forwards to their ``call_with`` and ``notify_with``.
"""

from typing import Any


class ServiceProxy:
    """The methods of one service; ``proxy.method(**arguments)`` calls one."""

    def __init__(self, client: Any, service: str, **options: Any):
        self._client = client
        self._service = service
        self._options = options

    def __getattr__(self, method: str) -> "MethodProxy":
        if method.startswith("_"):
            raise AttributeError(method)
        return MethodProxy(self._client, self._service, method, self._options)

    def __repr__(self) -> str:
        return f"<wirecall service {self._service}>"


class MethodProxy:
    """One method: call it for a request, or ``.notify(...)`` for a one-way call."""

    def __init__(self, client: Any, service: str, method: str, options: dict):
        self._client = client
        self._service = service
        self._method = method
        self._options = options

    def __call__(self, **arguments: Any) -> Any:
        return self._client.call_with(self._service, self._method, arguments, **self._options)

    def notify(self, **arguments: Any) -> Any:
        return self._client.notify_with(self._service, self._method, arguments)

    def __repr__(self) -> str:
        return f"<wirecall method {self._service}.{self._method}>"


def is_service_name(name: str) -> bool:
    """Service names are Rust trait names, so CamelCase: only those become proxies, and a
    mistyped client attribute (``client.cal``) still raises `AttributeError`."""
    return bool(name) and name[0].isupper()
