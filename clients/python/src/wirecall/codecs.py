"""The JSON and MessagePack codecs: one whole payload in, one message out (Payloads).

A codec never sees framing. Arguments go out as the method's arguments message; a reply comes
back as the reply message's fields, keyed by field name (`value`, `ok`, `err`), whatever the
codec, so that `replies.py` can read every codec's replies the same way. Protobuf (codec 3,
`protobuf.py`) also needs the method's schema, passed as `signature`; the others ignore it.
"""

import json
import math
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

import msgpack

from .replies import Reply
from .wire import CodecId

if TYPE_CHECKING:
    from .schema import MethodSignature, ServiceSchema


class Codec:
    """How one codec writes arguments and reads replies."""

    id: CodecId
    name: str
    #: Whether a message cannot be written or read without the method's `signature`.
    needs_schema = False

    def encode_arguments(self, arguments: Mapping[str, Any], signature: "Optional[MethodSignature]" = None) -> bytes:
        """The arguments message; `arguments` is in the method's declaration order."""
        raise NotImplementedError

    def decode_reply_fields(
        self, payload: bytes, shape: Reply, signature: "Optional[MethodSignature]" = None
    ) -> Dict[str, Any]:
        """The reply message's fields present in `payload`, keyed by field name (a stream's
        items are read the same way)."""
        raise NotImplementedError

    def encode_item(self, item: Any, signature: "Optional[MethodSignature]" = None) -> bytes:
        """One uploaded item: the item message, its one field `value` set to `item`."""
        return self.encode_arguments({"value": item}, signature)

    def knows_service(self, service: str) -> bool:
        """For a codec that needs schemas: whether it has learnt `service`'s messages."""
        return False

    def learnt_signature(self, service: str, method: str) -> "Optional[MethodSignature]":
        """For a codec that needs schemas: `service.method` if its service's messages are
        known (an unknown method of a known service raises `AttributeError`)."""
        return None

    def learn_service(self, descriptor_set: bytes, schema: "ServiceSchema") -> None:
        """For a codec that needs schemas: a service's messages, from reflection."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<codec {self.name}>"


class JsonCodec(Codec):
    """Codec 1: a message is a JSON object keyed by field or argument name."""

    id = CodecId.JSON
    name = "json"

    def encode_arguments(self, arguments: Mapping[str, Any], signature: "Optional[MethodSignature]" = None) -> bytes:
        body = _non_finite_as_strings(dict(arguments))
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")

    def decode_reply_fields(
        self, payload: bytes, shape: Reply, signature: "Optional[MethodSignature]" = None
    ) -> Dict[str, Any]:
        message = json.loads(payload)
        if not isinstance(message, dict):
            raise ValueError(f"a JSON reply is an object, not {type(message).__name__}")
        return message


def _non_finite_as_strings(value: Any) -> Any:
    """NaN and the infinities as the strings the wire chapter names (the proto3 JSON mapping).

    Python's `json` would write them as bare `NaN` / `Infinity` tokens, which are not JSON and
    which a wirecall server refuses. A reply carries the same strings where a float was NaN or
    infinite; they stay strings here (the client has no schema to know the field is a float).
    """
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {key: _non_finite_as_strings(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_non_finite_as_strings(item) for item in value]
    return value


class MessagePackCodec(Codec):
    """Codec 2: a message is an array of its fields in declaration order, without names."""

    id = CodecId.MSGPACK
    name = "msgpack"

    def encode_arguments(self, arguments: Mapping[str, Any], signature: "Optional[MethodSignature]" = None) -> bytes:
        packed: bytes = msgpack.packb(list(arguments.values()), use_bin_type=True)
        return packed

    def decode_reply_fields(
        self, payload: bytes, shape: Reply, signature: "Optional[MethodSignature]" = None
    ) -> Dict[str, Any]:
        # Maps with integer keys are valid wirecall values (HashMap<i32, _>).
        message = msgpack.unpackb(payload, raw=False, strict_map_key=False)
        if not isinstance(message, list):
            raise ValueError(f"a MessagePack reply is an array, not {type(message).__name__}")
        # Without names, the array's length tells the shape, except that `[x]` is both a
        # `value` reply and the `err` of a `Result<(), E>` reply: only the caller knows which.
        if len(message) == 0:
            return {}
        if len(message) == 1:
            key = "err" if shape is Reply.UNIT_RESULT else "value"
            return {key: message[0]}
        if len(message) == 2:
            return {"ok": message[0], "err": message[1]}
        raise ValueError(f"a reply message has at most 2 fields, this one has {len(message)}")


JSON = JsonCodec()
MSGPACK = MessagePackCodec()

#: The codecs every connection may share, by name and by id. Protobuf (codec 3) is made per
#: connection (it holds the messages that connection has learnt) and offered only when asked.
CODECS_BY_NAME: Dict[str, Codec] = {codec.name: codec for codec in (JSON, MSGPACK)}
CODECS_BY_ID: Dict[int, Codec] = {codec.id: codec for codec in (JSON, MSGPACK)}

#: The default offer: MessagePack first, as the Rust client does.
DEFAULT_CODECS = ("msgpack", "json")


def codec_name(codec_id: int) -> str:
    """A codec id as a name, for error messages; ids this package lacks stay numbers."""
    try:
        return CodecId(codec_id).name.lower()
    except ValueError:
        return f"codec {codec_id}"


def codec_named(name: str) -> Codec:
    """The codec `name` for a new connection."""
    if name.lower() == "protobuf":
        return protobuf_codec()
    try:
        return CODECS_BY_NAME[name.lower()]
    except KeyError:
        raise ValueError(
            f"unknown codec {name!r}: use one of {', '.join(CODECS_BY_NAME)}, protobuf"
        ) from None


def protobuf_codec() -> Codec:
    """A new Protobuf codec; the `protobuf` package is an optional extra."""
    try:
        from .protobuf import ProtobufCodec
    except ImportError as missing:
        raise ImportError(
            "the protobuf codec needs the `protobuf` package (4.21 or newer): "
            "pip install 'wirecall[protobuf]'"
        ) from missing
    return ProtobufCodec()
