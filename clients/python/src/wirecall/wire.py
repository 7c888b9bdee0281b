"""The bytes on the wire: hellos, frame headers, method ids (wire protocol version 1).

Everything here follows the Wire protocol chapter of the wirecall book; section names in the
comments refer to it. Nothing in this module does I/O.
"""

import enum
import struct
from dataclasses import dataclass
from typing import Sequence, Tuple

MAGIC = b"WCAL"
PROTOCOL_VERSION = 1

#: The receiver's default maximum frame length, as in the Rust implementation (16 MiB).
DEFAULT_MAX_FRAME_LENGTH = 16 * 1024 * 1024

#: A hello carries 1 to 16 codec ids; a token is at most 255 bytes (its length is one byte).
MAX_CODECS_IN_HELLO = 16
MAX_TOKEN_LENGTH = 255

#: length, kind, flags, request id, method id, deadline.
FRAME_HEADER = struct.Struct(">IBBQQI")
#: Bytes a frame's `length` field counts before the payload (kind .. deadline).
HEADER_AFTER_LENGTH = FRAME_HEADER.size - 4

#: magic, version, status, codec, count: the fixed part of the server hello.
SERVER_HELLO_HEAD = struct.Struct(">4sBBBB")

ERROR_CODE = struct.Struct(">H")

#: Request ids are 8 bytes; 0 is reserved for connection-level errors.
MAX_REQUEST_ID = 2**64 - 1
#: The deadline field is 4 bytes of milliseconds.
MAX_DEADLINE_MS = 2**32 - 1


class CodecId(enum.IntEnum):
    """Codec ids of the hello (Handshake, client hello)."""

    JSON = 1
    MSGPACK = 2
    PROTOBUF = 3


class FrameKind(enum.IntEnum):
    """The `kind` byte of a frame (Frames, frame kinds)."""

    REQUEST = 1
    RESPONSE = 2
    ERROR = 3
    CANCEL = 4
    PING = 5
    PONG = 6
    NOTIFY = 7


class HelloStatus(enum.IntEnum):
    """The `status` byte of the server hello."""

    ACCEPTED = 0
    NO_COMMON_CODEC = 1
    UNSUPPORTED_VERSION = 2
    MALFORMED = 3
    BUSY = 4
    AUTHENTICATION_FAILED = 5


def method_id(service: str, method: str) -> int:
    """The 64-bit FNV-1a hash of the UTF-8 bytes of ``"{service}.{method}"`` (Method ids)."""
    h = 0xCBF29CE484222325
    for byte in f"{service}.{method}".encode("utf-8"):
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def client_hello(codecs: Sequence[int], token: bytes = b"") -> bytes:
    """The client hello offering `codecs`, most preferred first, and presenting `token`."""
    if not 1 <= len(codecs) <= MAX_CODECS_IN_HELLO:
        raise ValueError(f"offer 1 to {MAX_CODECS_IN_HELLO} codecs, not {len(codecs)}")
    if len(token) > MAX_TOKEN_LENGTH:
        raise ValueError(f"a token is at most {MAX_TOKEN_LENGTH} bytes, this one is {len(token)}")
    return (
        MAGIC
        + bytes([PROTOCOL_VERSION, len(codecs), *codecs, len(token)])
        + token
    )


@dataclass(frozen=True)
class ServerHello:
    """The server's answer to the client hello."""

    magic: bytes
    version: int
    status: int
    codec: int
    supported: Tuple[int, ...]


@dataclass(frozen=True)
class FrameHeader:
    """A decoded frame header; `length` counts the bytes after the length field."""

    length: int
    kind: int
    flags: int
    request_id: int
    method_id: int
    deadline_ms: int

    @property
    def payload_length(self) -> int:
        return self.length - HEADER_AFTER_LENGTH


def encode_frame(
    kind: FrameKind,
    request_id: int,
    method: int = 0,
    deadline_ms: int = 0,
    payload: bytes = b"",
) -> bytes:
    """One whole frame, header and payload."""
    header = FRAME_HEADER.pack(
        HEADER_AFTER_LENGTH + len(payload), kind, 0, request_id, method, deadline_ms
    )
    return header + payload


def decode_frame_header(data: bytes) -> FrameHeader:
    """Unpacks the 26 header bytes; the caller checks the fields (see `check_incoming`)."""
    return FrameHeader(*FRAME_HEADER.unpack(data))


def decode_error_payload(payload: bytes) -> Tuple[int, str]:
    """An Error frame's payload: a 2-byte code, then a UTF-8 message (Error frames)."""
    if len(payload) < ERROR_CODE.size:
        raise ValueError(f"an Error frame's payload is {len(payload)} bytes, under 2")
    (code,) = ERROR_CODE.unpack_from(payload)
    return code, payload[ERROR_CODE.size :].decode("utf-8", errors="replace")


def deadline_ms(timeout: float) -> int:
    """A timeout in seconds as the frame's deadline: whole milliseconds, at least 1.

    The Rust client rounds the same way (Deadlines), so that a tiny timeout never becomes 0,
    which would mean no deadline at all.
    """
    return min(MAX_DEADLINE_MS, max(1, round(timeout * 1000)))
