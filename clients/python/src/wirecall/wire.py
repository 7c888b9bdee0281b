"""The bytes on the wire: hellos and their extensions, frame headers, metadata blocks, stream
credit, method ids (wire protocol versions 1 to 6).

Everything here follows the Wire protocol chapter of the wirecall book; section names in the
comments refer to it. Nothing in this module does I/O.
"""

import enum
import struct
from dataclasses import dataclass, field
from typing import Dict, Mapping, NamedTuple, Optional, Sequence, Tuple

MAGIC = b"WCAL"
#: The newest protocol version this package speaks, and the one its hello offers (Versions).
PROTOCOL_VERSION = 6
#: The oldest: a server that refuses our version naming version 1 gets a version 1 hello.
MIN_PROTOCOL_VERSION = 1
#: The first version with metadata and the hellos' extension block.
METADATA_VERSION = 2
#: The first version with stream calls (Streams (version 3)).
STREAMS_VERSION = 3
#: The first version with a stream's reply metadata and trailers (Stream metadata and
#: trailers (version 4)).
STREAM_METADATA_VERSION = 4
#: The first version that negotiates compression (Compression (version 5)).
COMPRESSION_VERSION = 5
#: The first version whose JSON carries byte strings as base64 text, not arrays of numbers
#: (JSON (codec 1)).
JSON_BASE64_VERSION = 6

#: The receiver's default maximum frame length, as in the Rust implementation (16 MiB).
DEFAULT_MAX_FRAME_LENGTH = 16 * 1024 * 1024

#: A hello carries 1 to 16 codec ids; a token is at most 255 bytes (its length is one byte).
MAX_CODECS_IN_HELLO = 16
MAX_TOKEN_LENGTH = 255

#: length, kind, flags, request id, method id, deadline.
FRAME_HEADER = struct.Struct(">IBBQQI")
#: Bytes a frame's `length` field counts before the payload (kind .. deadline).
HEADER_AFTER_LENGTH = FRAME_HEADER.size - 4
#: A frame's first field: the bytes that follow it.
LENGTH_FIELD = struct.Struct(">I")

#: magic, version, status, codec, count: the fixed part of the server hello.
SERVER_HELLO_HEAD = struct.Struct(">4sBBBB")

ERROR_CODE = struct.Struct(">H")

#: An extension block is at most 1024 bytes (Extensions); its length is a u16.
MAX_EXTENSIONS_LENGTH = 1024
EXTENSIONS_LENGTH = struct.Struct(">H")
#: Extension type 1: the largest frame (its `length` field) the hello's sender accepts, u32.
EXTENSION_MAX_FRAME_LENGTH = 1
#: The smallest `max_frame_len` a hello may announce: a frame without payload.
MIN_ANNOUNCED_FRAME_LENGTH = 22
#: Extension type 3 (version 5): compression algorithm ids; the client's offer, most preferred
#: first, or the one the server chose.
EXTENSION_COMPRESSION = 3
#: A client hello offers 1 to 8 compression algorithms, all different.
MAX_COMPRESSION_ALGORITHMS = 8

#: Flag bit 0x01: the payload starts with a metadata block (version 2 and later only).
FLAG_METADATA = 0x01
#: Flag bit 0x02: the payload is compressed (version 5, only where the handshake chose an
#: algorithm; see `compression.py`).
FLAG_COMPRESSED = 0x02
#: Limits of a metadata block (Metadata (version 2)).
MAX_METADATA_ENTRIES = 64
MAX_METADATA_BLOCK = 8192
MAX_METADATA_KEY = 255
MAX_METADATA_VALUE = 65535
_METADATA_KEY_CHARACTERS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_.")

#: A Credit frame's payload: the number of items granted, u32 (Credit (flow control)).
CREDIT = struct.Struct(">I")
#: The credit a receiver may have granted and not yet received items for.
MAX_STREAM_CREDIT = 65536

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
    #: Version 3 and later (Stream frames).
    OPEN = 8
    ITEM = 9
    END = 10
    CREDIT = 11
    #: Version 4 and later (Stream metadata and trailers): a stream's reply metadata.
    HEAD = 12


#: The kinds that are unknown kinds below version 3.
STREAM_KINDS = frozenset({FrameKind.OPEN, FrameKind.ITEM, FrameKind.END, FrameKind.CREDIT})
#: The kinds that are unknown kinds below version 4.
STREAM_METADATA_KINDS = frozenset({FrameKind.HEAD})

#: The kinds only a client sends: one from the server is a protocol violation.
CLIENT_ONLY_KINDS = frozenset({FrameKind.REQUEST, FrameKind.NOTIFY, FrameKind.CANCEL, FrameKind.OPEN})
#: The kinds that carry a codec's payload, the only ones that may set `FLAG_COMPRESSED`.
COMPRESSIBLE_KINDS = frozenset(
    {FrameKind.REQUEST, FrameKind.RESPONSE, FrameKind.NOTIFY, FrameKind.OPEN, FrameKind.ITEM}
)


def kind_exists(kind: FrameKind, version: int) -> bool:
    """Whether `kind` is a known kind on a connection of `version`: the stream kinds are
    unknown below version 3, Head below version 4 (Frames)."""
    if kind in STREAM_KINDS:
        return version >= STREAMS_VERSION
    if kind in STREAM_METADATA_KINDS:
        return version >= STREAM_METADATA_VERSION
    return True


def server_frame_flags(kind: FrameKind, version: int, compressed: bool = False) -> int:
    """The flags a server's frame of `kind` may carry on a connection of `version`: 0x01
    (metadata) from version 2 on the frames that answer a Request, from version 3 on the End
    that ends a stream, and from version 4 on the Head, which must carry it; none elsewhere.
    On a connection that negotiated compression (`compressed`, version 5 and later), 0x02
    besides on the kinds that carry a codec's payload."""
    if compressed and version >= COMPRESSION_VERSION and kind in COMPRESSIBLE_KINDS:
        return FLAG_COMPRESSED | server_frame_flags(kind, version)
    if version < METADATA_VERSION:
        return 0
    if kind in (FrameKind.RESPONSE, FrameKind.ERROR):
        return FLAG_METADATA
    if kind == FrameKind.END and version >= STREAMS_VERSION:
        return FLAG_METADATA
    if kind == FrameKind.HEAD and version >= STREAM_METADATA_VERSION:
        return FLAG_METADATA
    return 0


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


def client_hello(
    codecs: Sequence[int],
    token: bytes = b"",
    *,
    version: int = PROTOCOL_VERSION,
    max_frame_length: Optional[int] = DEFAULT_MAX_FRAME_LENGTH,
    compression: Sequence[int] = (),
) -> bytes:
    """The client hello offering `codecs`, most preferred first, and presenting `token`.

    A hello of version 2 or later ends with the extension block, announcing
    `max_frame_length` (omitted when `None`); a version 1 hello has no block. From version 5
    on, a non-empty `compression` is offered in the `compression` extension (algorithm ids,
    most preferred first); below version 5 it is not sent.
    """
    if not 1 <= len(codecs) <= MAX_CODECS_IN_HELLO:
        raise ValueError(f"offer 1 to {MAX_CODECS_IN_HELLO} codecs, not {len(codecs)}")
    if len(set(codecs)) != len(codecs):
        raise ValueError(f"each codec may be offered once, not {list(codecs)}")
    if len(token) > MAX_TOKEN_LENGTH:
        raise ValueError(f"a token is at most {MAX_TOKEN_LENGTH} bytes, this one is {len(token)}")
    if not MIN_PROTOCOL_VERSION <= version <= PROTOCOL_VERSION:
        raise ValueError(
            f"this package speaks protocol versions {MIN_PROTOCOL_VERSION} to {PROTOCOL_VERSION}, not {version}"
        )
    if len(compression) > MAX_COMPRESSION_ALGORITHMS or len(set(compression)) != len(compression):
        raise ValueError(
            f"offer at most {MAX_COMPRESSION_ALGORITHMS} compression algorithms, each once, not {list(compression)}"
        )
    hello = MAGIC + bytes([version, len(codecs), *codecs, len(token)]) + token
    if version >= METADATA_VERSION:
        extensions: Dict[int, bytes] = {}
        if max_frame_length is not None:
            extensions[EXTENSION_MAX_FRAME_LENGTH] = struct.pack(">I", max_frame_length)
        if compression and version >= COMPRESSION_VERSION:
            extensions[EXTENSION_COMPRESSION] = bytes(compression)
        hello += encode_extensions(extensions)
    return hello


def encode_extensions(extensions: Mapping[int, bytes]) -> bytes:
    """An extension block, its 2-byte length included (Extensions)."""
    body = b""
    for extension_type, value in extensions.items():
        if not 0 <= extension_type <= 255 or len(value) > 255:
            raise ValueError(f"extension {extension_type} with {len(value)} bytes does not fit an entry")
        body += bytes([extension_type, len(value)]) + value
    if len(body) > MAX_EXTENSIONS_LENGTH:
        raise ValueError(f"an extension block is at most {MAX_EXTENSIONS_LENGTH} bytes, not {len(body)}")
    return EXTENSIONS_LENGTH.pack(len(body)) + body


def decode_extensions(block: bytes) -> Dict[int, bytes]:
    """The entries of an extension block (without its length field), by type.

    Entries must fill the block exactly; an unknown type is kept (and so skipped by whoever
    reads only the types it knows). Raises `ValueError` for a malformed block.
    """
    if len(block) > MAX_EXTENSIONS_LENGTH:
        raise ValueError(f"an extension block of {len(block)} bytes, over {MAX_EXTENSIONS_LENGTH}")
    entries: Dict[int, bytes] = {}
    offset = 0
    while offset < len(block):
        if offset + 2 > len(block):
            raise ValueError(f"a stray byte after the last extension, at offset {offset}")
        extension_type, length = block[offset], block[offset + 1]
        offset += 2
        if offset + length > len(block):
            raise ValueError(f"extension {extension_type} runs past the end of the block")
        value = block[offset : offset + length]
        offset += length
        if extension_type == EXTENSION_MAX_FRAME_LENGTH:
            if extension_type in entries:
                raise ValueError("max_frame_len is announced twice")
            if length != 4:
                raise ValueError(f"max_frame_len is 4 bytes, not {length}")
            (announced,) = struct.unpack(">I", value)
            if announced < MIN_ANNOUNCED_FRAME_LENGTH:
                raise ValueError(f"max_frame_len {announced} is under {MIN_ANNOUNCED_FRAME_LENGTH}")
        elif extension_type == EXTENSION_COMPRESSION and extension_type in entries:
            # What the ids mean depends on who sent them: see `compression.chosen_algorithm`.
            raise ValueError("compression is announced twice")
        entries[extension_type] = value
    return entries


def announced_max_frame_length(extensions: Mapping[int, bytes]) -> Optional[int]:
    """The peer's `max_frame_len` extension, if it sent one."""
    value = extensions.get(EXTENSION_MAX_FRAME_LENGTH)
    return None if value is None else struct.unpack(">I", value)[0]


def check_metadata_key(key: str) -> None:
    """Raises `ValueError` unless `key` is 1 to 255 characters of ``a-z 0-9 - _ .``."""
    if not isinstance(key, str):
        raise ValueError(f"a metadata key is a str, not {type(key).__name__}")
    raw = key.encode("utf-8")
    if not 1 <= len(raw) <= MAX_METADATA_KEY or not set(raw) <= _METADATA_KEY_CHARACTERS:
        raise ValueError(
            f"metadata key {key!r}: a key is 1 to {MAX_METADATA_KEY} characters of a-z 0-9 - _ . "
            "(lower case)"
        )


def encode_metadata(metadata: Mapping[str, str]) -> bytes:
    """A metadata block: count, then key/value entries (Metadata (version 2)).

    Raises `ValueError` for a bad key, a value that is not a str or too long, over 64
    entries, or a block over 8 KiB.
    """
    if len(metadata) > MAX_METADATA_ENTRIES:
        raise ValueError(f"metadata has at most {MAX_METADATA_ENTRIES} entries, not {len(metadata)}")
    block = bytearray(struct.pack(">H", len(metadata)))
    for key, value in metadata.items():
        check_metadata_key(key)
        if not isinstance(value, str):
            raise ValueError(f"metadata value of {key!r} is a str, not {type(value).__name__}")
        raw_key, raw_value = key.encode("utf-8"), value.encode("utf-8")
        if len(raw_value) > MAX_METADATA_VALUE:
            raise ValueError(f"metadata value of {key!r} is {len(raw_value)} bytes, over {MAX_METADATA_VALUE}")
        block += bytes([len(raw_key)]) + raw_key + struct.pack(">H", len(raw_value)) + raw_value
    if len(block) > MAX_METADATA_BLOCK:
        raise ValueError(f"the metadata block would be {len(block)} bytes, over {MAX_METADATA_BLOCK}")
    return bytes(block)


def decode_metadata(payload: bytes) -> Tuple[Dict[str, str], bytes]:
    """Splits a payload that starts with a metadata block into the metadata and the rest.

    Raises `ValueError` for a block that breaks a rule or runs past the payload; a repeated
    key keeps its last value.
    """
    if len(payload) < 2:
        raise ValueError("the metadata block ends before its count")
    (count,) = struct.unpack_from(">H", payload)
    if count > MAX_METADATA_ENTRIES:
        raise ValueError(f"a metadata block of {count} entries, over {MAX_METADATA_ENTRIES}")
    metadata: Dict[str, str] = {}
    offset = 2
    for _ in range(count):
        if offset + 1 > len(payload):
            raise ValueError("a metadata entry runs past the payload")
        key_length = payload[offset]
        offset += 1
        raw_key = payload[offset : offset + key_length]
        if key_length == 0 or len(raw_key) < key_length or not set(raw_key) <= _METADATA_KEY_CHARACTERS:
            raise ValueError(f"a bad metadata key {raw_key!r}")
        offset += key_length
        if offset + 2 > len(payload):
            raise ValueError("a metadata entry runs past the payload")
        (value_length,) = struct.unpack_from(">H", payload, offset)
        offset += 2
        raw_value = payload[offset : offset + value_length]
        if len(raw_value) < value_length:
            raise ValueError("a metadata value runs past the payload")
        offset += value_length
        if offset > MAX_METADATA_BLOCK:
            raise ValueError(f"a metadata block over {MAX_METADATA_BLOCK} bytes")
        try:
            metadata[raw_key.decode("ascii")] = raw_value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"the metadata value of {raw_key!r} is not UTF-8") from None
    return metadata, payload[offset:]


@dataclass(frozen=True)
class ServerHello:
    """The server's answer to the client hello."""

    magic: bytes
    version: int
    status: int
    codec: int
    supported: Tuple[int, ...]
    #: The extension entries by type (version 2 and later; empty for version 1).
    extensions: Mapping[int, bytes] = field(default_factory=dict)


class FrameHeader(NamedTuple):
    """A decoded frame header; `length` counts the bytes after the length field.

    A named tuple rather than a dataclass: one is made for every frame read, and a tuple is
    the cheapest to make."""

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
    flags: int = 0,
) -> bytes:
    """One whole frame, header and payload (with its metadata block, if `flags` says so)."""
    header = FRAME_HEADER.pack(
        HEADER_AFTER_LENGTH + len(payload), kind, flags, request_id, method, deadline_ms
    )
    return header + payload


def encode_credit(request_id: int, granted: int) -> bytes:
    """A Credit frame allowing the server `granted` more items on stream `request_id`."""
    if not 1 <= granted <= MAX_STREAM_CREDIT:
        raise ValueError(f"a Credit grants 1 to {MAX_STREAM_CREDIT} items, not {granted}")
    return encode_frame(FrameKind.CREDIT, request_id, payload=CREDIT.pack(granted))


def decode_credit(payload: bytes) -> int:
    """A Credit frame's payload: the items it grants. `ValueError` unless it is exactly 4
    bytes and grants 1 or more (Credit (flow control)); whether the grant fits under the
    limit on outstanding credit is the stream's to check."""
    if len(payload) != CREDIT.size:
        raise ValueError(f"a Credit frame's payload must be {CREDIT.size} bytes, not {len(payload)}")
    (granted,) = CREDIT.unpack(payload)
    if granted == 0:
        raise ValueError("a Credit frame granted 0 items")
    return int(granted)


def decode_frame_header(data: bytes) -> FrameHeader:
    """Unpacks the 26 header bytes; the caller checks the fields (see `check_incoming`)."""
    return FrameHeader._make(FRAME_HEADER.unpack(data))


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
