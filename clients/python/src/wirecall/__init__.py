"""wirecall: a Python client for wirecall RPC servers (wire protocol version 5, and 4, 3, 2 or
1 with older servers).

Blocking::

    import wirecall
    with wirecall.connect("127.0.0.1:7000") as client:
        client.UserService.get_user(user={"user_id": 1, "name": "fanly", "age": 18})
        for user in client.UserFeed.list_users(count=3):    # a server stream
            print(user)
        client.UserFeed.import_users(users)                  # an upload: any iterable
        for user in client.UserFeed.rename(users, prefix="new-"):   # both ways at once
            print(user)

asyncio::

    from wirecall import aio
    client = await aio.connect("127.0.0.1:7000")
    await client.call("UserService", "find", user_id=1)
    async for user in client.UserFeed.list_users(count=3):
        print(user)
    await client.UserFeed.import_users(users)                # any iterable or async iterable
"""

from . import aio
from .aio import AsyncClient
from .codecs import DEFAULT_CODECS
from .errors import (
    ApplicationError,
    AuthenticationFailed,
    BadRequest,
    Busy,
    CallError,
    ConnectionClosed,
    DeadlineExceeded,
    DecodeError,
    EncodeFailed,
    FrameTooLarge,
    HandlerPanicked,
    IdleTimeout,
    LayerFailed,
    MalformedHello,
    NegotiationError,
    NegotiationRefused,
    NoCommonCodec,
    NoSchema,
    NotWirecall,
    Overloaded,
    PermissionDenied,
    ProtocolError,
    ProtocolViolation,
    ShuttingDown,
    StreamsUnsupported,
    Timeout,
    TlsError,
    UnknownMethod,
    UnsupportedVersion,
    WirecallError,
)
from .replies import Reply
from .stream import DEFAULT_STREAM_WINDOW, ServerStream
from .sync import Client, Stream, connect
from .wire import PROTOCOL_VERSION, method_id

__version__ = "0.1.0"

__all__ = [
    "aio",
    "AsyncClient",
    "Client",
    "connect",
    "ServerStream",
    "Stream",
    "method_id",
    "Reply",
    "DEFAULT_CODECS",
    "DEFAULT_STREAM_WINDOW",
    "PROTOCOL_VERSION",
    "WirecallError",
    "CallError",
    "UnknownMethod",
    "BadRequest",
    "HandlerPanicked",
    "DeadlineExceeded",
    "FrameTooLarge",
    "ProtocolViolation",
    "Overloaded",
    "ShuttingDown",
    "EncodeFailed",
    "IdleTimeout",
    "LayerFailed",
    "PermissionDenied",
    "Timeout",
    "ApplicationError",
    "DecodeError",
    "ConnectionClosed",
    "StreamsUnsupported",
    "ProtocolError",
    "TlsError",
    "NegotiationError",
    "NotWirecall",
    "NegotiationRefused",
    "NoCommonCodec",
    "NoSchema",
    "UnsupportedVersion",
    "MalformedHello",
    "Busy",
    "AuthenticationFailed",
]
