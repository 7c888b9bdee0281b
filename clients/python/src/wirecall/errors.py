"""Exceptions: one class per wirecall error code, plus connection, handshake and reply failures.

Every exception the package raises derives from `WirecallError`. Errors the server sends in an
Error frame are `CallError`s carrying the frame's `code`; `error_for_code` picks the class.
"""

from typing import Any, Dict, Optional, Sequence, Tuple, Type


class WirecallError(Exception):
    """The base class of every error this package raises."""


# -- Error frames -----------------------------------------------------------------------------


class CallError(WirecallError):
    """The server answered a request (or the connection, for request id 0) with an Error frame.

    `code` is the wirecall error code; a code this package does not know stays a plain
    `CallError`, as the spec requires clients to accept unknown codes. `metadata` is the
    metadata the Error frame carried (``{}`` if none).
    """

    code: int = 0

    def __init__(self, message: str, *, code: Optional[int] = None, request_id: int = 0):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.request_id = request_id
        self.metadata: Dict[str, str] = {}

    def __str__(self) -> str:
        return f"{self.message} (wirecall error {self.code})"


class UnknownMethod(CallError):
    """No service on the server has this method id."""

    code = 1


class BadRequest(CallError):
    """The arguments did not decode as the method's arguments."""

    code = 2


class HandlerPanicked(CallError):
    """The handler panicked; the message is the panic message."""

    code = 3


class DeadlineExceeded(CallError, TimeoutError):
    """The call did not finish within its deadline (told by the server, or see `Timeout`)."""

    code = 4


class FrameTooLarge(CallError):
    """A frame would exceed the maximum frame length."""

    code = 5


class ProtocolViolation(CallError):
    """The server says this client broke the protocol; the server closes the connection."""

    code = 6


class Overloaded(CallError):
    """The server refused the call without running it; retrying later is safe."""

    code = 7


class ShuttingDown(CallError):
    """The server is shutting down and closes the connection."""

    code = 8


class EncodeFailed(CallError):
    """The server could not encode the handler's result."""

    code = 9


class IdleTimeout(CallError):
    """The connection was idle and did not answer the server's Ping in time."""

    code = 10


class PermissionDenied(CallError):
    """The server's authorisation policy refused this call; the handler did not run."""

    code = 11


class LayerFailed(CallError):
    """A middleware layer of the server failed the call with an error of its own."""

    code = 12


ERROR_CLASSES: Dict[int, Type[CallError]] = {
    cls.code: cls
    for cls in (
        UnknownMethod,
        BadRequest,
        HandlerPanicked,
        DeadlineExceeded,
        FrameTooLarge,
        ProtocolViolation,
        Overloaded,
        ShuttingDown,
        EncodeFailed,
        IdleTimeout,
        PermissionDenied,
        LayerFailed,
    )
}


def error_for_code(code: int, message: str, request_id: int = 0) -> CallError:
    """The exception for an Error frame with this code and message."""
    cls = ERROR_CLASSES.get(code, CallError)
    return cls(message, code=code, request_id=request_id)


class Timeout(DeadlineExceeded):
    """No reply arrived within the call's timeout; the client sent a Cancel and gave up.

    It is a `DeadlineExceeded` (code 4) because it is the same deadline, seen first by the
    client: `except wirecall.DeadlineExceeded` catches both. It is also a `TimeoutError`.
    """


# -- Application errors -----------------------------------------------------------------------


class ApplicationError(WirecallError):
    """The method returned ``Err(e)``: `error` is ``e`` as the codec decoded it; `metadata`
    is the reply's metadata (``{}`` if none)."""

    def __init__(self, error: Any):
        super().__init__(f"the method returned an error: {error!r}")
        self.error = error
        self.metadata: Dict[str, str] = {}


class DecodeError(WirecallError):
    """A reply's payload did not decode with the connection's codec, or had no known shape."""


# -- Connection and handshake -----------------------------------------------------------------


class NoSchema(WirecallError):
    """A Protobuf connection cannot write or read a method's messages: the server does not
    serve reflection, or the service has no Protobuf form (it does not speak Protobuf, or does
    not describe its types). Nothing was sent."""


class ConnectionClosed(WirecallError):
    """The connection is closed; a call in flight may or may not have run.

    `cause` is the connection-level error that closed it, when the server sent one (for
    example `ShuttingDown` or `IdleTimeout`).
    """

    def __init__(self, message: str = "the connection is closed", cause: Optional[BaseException] = None):
        super().__init__(message)
        self.cause = cause


class StreamsUnsupported(WirecallError):
    """A stream call on a connection whose protocol version has no streams (below 3): the
    server, or the ``protocol_version`` option, settled an older version. Nothing was sent.

    `version` is the connection's protocol version.
    """

    def __init__(self, message: str, *, version: int):
        super().__init__(message)
        self.version = version


class ProtocolError(WirecallError):
    """The server broke the protocol: a bad frame or hello, after which the client closed the
    connection (it is then the `cause` of the `ConnectionClosed` calls see), or one call
    answered against its shape (an upload ended without its reply, or with two), which fails
    that call alone."""


class TlsError(WirecallError):
    """The TLS handshake failed: an untrusted certificate, a wrong server name, a plain server."""


class NegotiationError(WirecallError):
    """The handshake failed: the server refused the hello, or is not a wirecall server."""


class NotWirecall(NegotiationError):
    """The peer's answer does not start with the magic ``WCAL``: not a wirecall server."""


class NegotiationRefused(NegotiationError):
    """The server refused the hello with `status`; `offered` and `supported` are codec names.

    A server that requires a token lists no supported codecs until the token is checked.
    """

    status: int = -1

    def __init__(self, message: str, *, offered: Sequence[str] = (), supported: Sequence[str] = (), status: Optional[int] = None):
        super().__init__(message)
        if status is not None:
            self.status = status
        self.offered: Tuple[str, ...] = tuple(offered)
        self.supported: Tuple[str, ...] = tuple(supported)


class NoCommonCodec(NegotiationRefused):
    """None of the offered codecs is one the server allows; both lists are attached."""

    status = 1


class UnsupportedVersion(NegotiationRefused):
    """The server speaks another protocol version."""

    status = 2


class MalformedHello(NegotiationRefused):
    """The server found the client hello malformed."""

    status = 3


class Busy(NegotiationRefused):
    """The server is at its connection limit."""

    status = 4


class AuthenticationFailed(NegotiationRefused):
    """The token was wrong or missing, or this address failed too often recently."""

    status = 5


REFUSAL_CLASSES: Dict[int, Type[NegotiationRefused]] = {
    cls.status: cls
    for cls in (NoCommonCodec, UnsupportedVersion, MalformedHello, Busy, AuthenticationFailed)
}
