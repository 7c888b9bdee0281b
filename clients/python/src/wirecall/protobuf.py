"""The Protobuf codec (codec 3): messages built from the server's own descriptors.

Protobuf cannot be written or read without each message's schema. The reflection service's
`descriptors(service)` hands out a service's messages as a `FileDescriptorSet` (the same
messages `wirecall proto` writes as text and the gRPC door serves); they are loaded into a
`DescriptorPool` per connection, and `message_factory` makes their classes. Values travel
in and out in the client's plain forms (those the JSON codec gives): the walk below follows
the method's `TypeRef`s from `describe` alongside the messages, mirroring how the server's
Protobuf model (`runtime/src/reflect/proto_model/build.rs`) maps each type:

- a field of ``Option<T>`` is a proto3 ``optional`` field, unset for ``None`` (the JSON form
  of ``Some(x)`` around another option is ``[x]``, as in JSON and MessagePack);
- a field of ``Vec<u8>`` is ``bytes``; of another list, a ``repeated`` field;
- a field of a map is a ``map<K, V>`` field (an ``Option<V>`` value travels as ``V``);
- one value that is itself an ``Option``, a list, a map or a tuple (inside a list, a map, an
  option, a variant) is a wrapper message: ``Option_T { optional value = 1 }``,
  ``List_T { repeated values = 1 }``, ``Map_K_V { map entries = 1 }``,
  ``Tuple_A_B { f0 = 1; f1 = 2 }``;
- a struct is a message with its fields numbered from 1; a unit-only enum a proto enum (by
  number); an enum with data a message whose fields are a ``oneof``, one per variant,
  numbered by the variant's tag: ``Empty`` for a unit variant, the value for a newtype
  variant, a nested message for a variant with fields;
- ``Duration`` and ``SystemTime`` are ``google.protobuf.Duration`` and ``Timestamp``; a
  ``char`` is a ``uint32``.
"""

import base64
import math
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import Message

from .codecs import Codec
from .replies import Reply
from .schema import REFLECTION_SERVICE, REFLECTION_TYPES, MethodSignature, ServiceSchema, TypeTable
from .wire import CodecId

#: The package of every service's messages (the server's `DESCRIPTORS_PACKAGE`).
PACKAGE = "wirecall.services"

#: The reflection service's methods (its `describe` answer without doc comments and ids):
#: with `REFLECTION_TYPES`, what it takes to call reflection itself over Protobuf. A test
#: compares it with what the server reports.
REFLECTION_METHODS: List[Dict[str, Any]] = [
    {"name": "list_services", "args": [], "reply": {"Value": {"List": {"Named": "ServiceSummary"}}},
     "oneway": False, "server_stream": False, "upload": None},
    {"name": "describe", "args": [{"name": "service", "ty": "String"}],
     "reply": {"Result": {"ok": {"Named": "ServiceSchema"}, "err": {"Named": "ReflectionError"}}},
     "oneway": False, "server_stream": False, "upload": None},
    {"name": "descriptors", "args": [{"name": "service", "ty": "String"}],
     "reply": {"Result": {"ok": "Bytes", "err": {"Named": "ReflectionError"}}},
     "oneway": False, "server_stream": False, "upload": None},
]

#: A field's descriptor: the C (upb) and the pure-Python implementations have different types.
FieldDescriptor = Any

# The depth past which a value is refused rather than walked (a cycle, or a hostile reply).
_MAX_DEPTH = 128


def service_identifier(name: str) -> str:
    """A service name as its messages' prefix: every character but letters and digits is `_`."""
    return "".join(c if c.isascii() and c.isalnum() else "_" for c in name)


def snake(name: str) -> str:
    """`UserModel` -> `user_model`: a variant's field name in its enum's message."""
    return "".join(("_" + c.lower() if index else c.lower()) if c.isupper() else c for index, c in enumerate(name))


def _variant(type_ref: Any) -> Tuple[str, Any]:
    if isinstance(type_ref, str):
        return type_ref, None
    if isinstance(type_ref, dict) and len(type_ref) == 1:
        name, inner = next(iter(type_ref.items()))
        return str(name), inner
    raise ValueError(f"not a type: {type_ref!r}")


def _is_bytes_list(name: str, inner: Any) -> bool:
    """`Vec<u8>`, `HashSet<u8>` and `[u8; N]` travel as `bytes`."""
    if name in ("List", "Set"):
        return bool(inner == "U8")
    if name == "Array":
        element = inner["element"] if isinstance(inner, dict) else inner[0]
        return bool(element == "U8")
    return False


def _map_types(inner: Any) -> Tuple[Any, Any]:
    key, value = (inner["key"], inner["value"]) if isinstance(inner, dict) else (inner[0], inner[1])
    name, option_inner = _variant(value)
    # A map field holds an `Option<T>` value as T.
    return key, option_inner if name == "Option" else value


class _Walker:
    """Converts between plain values and the messages of one service, by its type table."""

    def __init__(self, table: TypeTable):
        self.table = table

    # -- plain values into messages -------------------------------------------------------

    def fill_fields(self, message: Message, fields: Sequence[Tuple[str, Any]], values: Mapping[str, Any], depth: int) -> None:
        """Sets the fields numbered 1.. of `message` from `values` by name (absent: default)."""
        by_number = message.DESCRIPTOR.fields_by_number
        for number, (name, type_ref) in enumerate(fields, start=1):
            if name in values:
                self.set_field(message, by_number[number], type_ref, values[name], depth + 1)

    def set_field(self, message: Message, field: FieldDescriptor, type_ref: Any, value: Any, depth: int) -> None:
        name, inner = _variant(type_ref)
        if name == "Option":
            if value is not None:
                self.set_value(message, field, inner, _some(inner, value), depth)
        elif _is_bytes_list(name, inner):
            setattr(message, field.name, _as_bytes(value))
        elif name in ("List", "Set", "Array"):
            element = inner["element"] if name == "Array" and isinstance(inner, dict) else inner
            if name == "Array" and isinstance(inner, list):
                element = inner[0]
            container = getattr(message, field.name)
            for item in _as_list(value):
                if field.message_type is None:
                    container.append(self.scalar(element, item))
                else:
                    self.fill_value(container.add(), element, item, depth + 1)
        elif name == "Map":
            key_type, value_type = _map_types(inner)
            container = getattr(message, field.name)
            entry_value = field.message_type.fields_by_name["value"]
            if not isinstance(value, Mapping):
                raise TypeError(f"a map is a dict, not {value!r}")
            for key, item in value.items():
                key = self.scalar(key_type, _map_key(key_type, key))
                if item is None:
                    item = _default_of(value_type)
                if entry_value.message_type is None:
                    container[key] = self.scalar(value_type, item)
                else:
                    self.fill_value(container[key], value_type, item, depth + 1)
        else:
            self.set_value(message, field, type_ref, value, depth)

    def set_value(self, message: Message, field: FieldDescriptor, type_ref: Any, value: Any, depth: int) -> None:
        """Sets one always-present value of `type_ref` into `field`."""
        if field.message_type is None:
            setattr(message, field.name, self.scalar(type_ref, value))
        else:
            inner = getattr(message, field.name)
            inner.SetInParent()
            self.fill_value(inner, type_ref, value, depth + 1)

    def fill_value(self, message: Message, type_ref: Any, value: Any, depth: int) -> None:
        """Fills a message that holds one value of `type_ref` (never a scalar)."""
        if depth > _MAX_DEPTH:
            raise ValueError("a value nests too deep")
        name, inner = _variant(type_ref)
        if name == "Duration":
            secs, nanos = _pair(value, "secs", "nanos")
            message.seconds, message.nanos = secs, nanos  # type: ignore[attr-defined]
        elif name == "Timestamp":
            secs, nanos = _pair(value, "secs_since_epoch", "nanos_since_epoch")
            message.seconds, message.nanos = secs, nanos  # type: ignore[attr-defined]
        elif name in ("Option", "List", "Set", "Array", "Map"):
            # A wrapper message: its one field holds the value as a field of this type would.
            message.SetInParent()
            self.set_field(message, message.DESCRIPTOR.fields_by_number[1], type_ref, value, depth)
        elif name == "Tuple":
            items = _as_list(value)
            self.fill_fields(message, [(f"f{index}", item) for index, item in enumerate(inner)],
                             {f"f{index}": item for index, item in enumerate(items)}, depth)
        elif name == "Named":
            self.fill_named(message, str(inner), value, depth)
        else:
            raise TypeError(f"{name} is not a message type")

    def fill_named(self, message: Message, type_name: str, value: Any, depth: int) -> None:
        kind_name, body = _variant(self.table.kind(type_name))
        if kind_name == "Struct":
            if not isinstance(value, Mapping):
                raise TypeError(f"a {type_name} is a dict keyed by field name, not {value!r}")
            self.fill_fields(message, [(field["name"], field["ty"]) for field in body["fields"]], value, depth)
            message.SetInParent()
            return
        if kind_name != "OneOf":
            raise TypeError(f"{type_name} is not a message type")
        if isinstance(value, str):
            variant_name, carried = value, None
        elif isinstance(value, Mapping) and len(value) == 1:
            variant_name, carried = next(iter(value.items()))
        else:
            raise TypeError(f"a {type_name} is a variant name or {{'Variant': value}}, not {value!r}")
        for variant in body["variants"]:
            if variant["name"] == variant_name:
                break
        else:
            names = ", ".join(variant["name"] for variant in body["variants"])
            raise TypeError(f"{type_name} has no variant {variant_name!r}; it has: {names}")
        field = message.DESCRIPTOR.fields_by_number[variant["tag"]]
        shape_name, shape = _variant(variant["shape"])
        if shape_name == "Unit":
            getattr(message, field.name).SetInParent()
        elif shape_name == "Newtype":
            self.set_value(message, field, shape, carried, depth)
        else:
            fields = [(field_schema["name"], field_schema["ty"]) for field_schema in shape["fields"]]
            if shape["named"]:
                values = carried if isinstance(carried, Mapping) else {}
            else:
                values = {name: item for (name, _), item in zip(fields, _as_list(carried))}
            nested = getattr(message, field.name)
            nested.SetInParent()
            self.fill_fields(nested, fields, values, depth)

    def scalar(self, type_ref: Any, value: Any) -> Any:
        """A scalar as its Protobuf field wants it."""
        name, _ = _variant(type_ref)
        if name == "Char":
            if not isinstance(value, str) or len(value) != 1:
                raise TypeError(f"a char is a one-character string, not {value!r}")
            return ord(value)
        if name in ("F32", "F64") and isinstance(value, str):
            # The JSON codec's forms of the non-finite floats.
            named = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
            if value in named:
                return named[value]
        if name in ("Bytes", "Opaque") or _is_bytes_list(*_variant(type_ref)):
            return _as_bytes(value)
        if name == "Named":
            return self.enum_number(str(_variant(type_ref)[1]), value)
        return value

    def enum_number(self, type_name: str, value: Any) -> int:
        kind_name, body = _variant(self.table.kind(type_name))
        if kind_name != "Enum":
            raise TypeError(f"{type_name} is not a unit-only enum")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        for enum_value in body["values"]:
            if enum_value["name"] == value:
                return int(enum_value["number"])
        names = ", ".join(enum_value["name"] for enum_value in body["values"])
        raise TypeError(f"{type_name} has no value {value!r}; it has: {names}")

    # -- messages into plain values -------------------------------------------------------

    def read_fields(self, message: Message, fields: Sequence[Tuple[str, Any]], depth: int) -> Dict[str, Any]:
        by_number = message.DESCRIPTOR.fields_by_number
        out: Dict[str, Any] = {}
        for number, (name, type_ref) in enumerate(fields, start=1):
            field = by_number.get(number)
            if field is not None:
                out[name] = self.get_field(message, field, type_ref, depth + 1)
        return out

    def get_field(self, message: Message, field: FieldDescriptor, type_ref: Any, depth: int) -> Any:
        name, inner = _variant(type_ref)
        if name == "Option":
            if not message.HasField(field.name):
                return None
            value = self.get_value(message, field, inner, depth)
            # The JSON form of `Some(x)` around another option is `[x]`, so `Some(None)`
            # and `None` stay apart.
            return [value] if _variant(inner)[0] == "Option" else value
        if _is_bytes_list(name, inner):
            raw = getattr(message, field.name)
            # The JSON codec's form of `Vec<u8>`; `Bytes` stays `bytes` (as MessagePack gives it).
            return bytes(raw)
        if name in ("List", "Set", "Array"):
            element = inner["element"] if name == "Array" and isinstance(inner, dict) else inner
            if name == "Array" and isinstance(inner, list):
                element = inner[0]
            container = getattr(message, field.name)
            if field.message_type is None:
                return [self.from_scalar(element, item) for item in container]
            return [self.read_value(item, element, depth + 1) for item in container]
        if name == "Map":
            key_type, value_type = _map_types(inner)
            container = getattr(message, field.name)
            entry_value = field.message_type.fields_by_name["value"]
            if entry_value.message_type is None:
                return {self.from_scalar(key_type, key): self.from_scalar(value_type, container[key]) for key in container}
            return {self.from_scalar(key_type, key): self.read_value(container[key], value_type, depth + 1) for key in container}
        return self.get_value(message, field, type_ref, depth)

    def get_value(self, message: Message, field: FieldDescriptor, type_ref: Any, depth: int) -> Any:
        raw = getattr(message, field.name)
        if field.message_type is None:
            return self.from_scalar(type_ref, raw)
        return self.read_value(raw, type_ref, depth + 1)

    def read_value(self, message: Message, type_ref: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise ValueError("a value nests too deep")
        name, inner = _variant(type_ref)
        if name == "Duration":
            return {"secs": message.seconds, "nanos": message.nanos}  # type: ignore[attr-defined]
        if name == "Timestamp":
            return {"secs_since_epoch": message.seconds, "nanos_since_epoch": message.nanos}  # type: ignore[attr-defined]
        if name in ("Option", "List", "Set", "Array", "Map"):
            return self.get_field(message, message.DESCRIPTOR.fields_by_number[1], type_ref, depth)
        if name == "Tuple":
            values = self.read_fields(message, [(f"f{index}", item) for index, item in enumerate(inner)], depth)
            return [values[f"f{index}"] for index in range(len(inner))]
        if name == "Named":
            return self.read_named(message, str(inner), depth)
        raise ValueError(f"{name} is not a message type")

    def read_named(self, message: Message, type_name: str, depth: int) -> Any:
        kind_name, body = _variant(self.table.kind(type_name))
        if kind_name == "Struct":
            return self.read_fields(message, [(field["name"], field["ty"]) for field in body["fields"]], depth)
        if kind_name != "OneOf":
            raise ValueError(f"{type_name} is not a message type")
        oneofs = message.DESCRIPTOR.oneofs
        chosen = message.WhichOneof(oneofs[0].name) if oneofs else None
        if chosen is None:
            raise ValueError(f"a {type_name} with no variant set")
        number = message.DESCRIPTOR.fields_by_name[chosen].number
        for variant in body["variants"]:
            if variant["tag"] == number:
                break
        else:
            raise ValueError(f"{type_name} has no variant numbered {number}")
        field = message.DESCRIPTOR.fields_by_number[number]
        shape_name, shape = _variant(variant["shape"])
        if shape_name == "Unit":
            return variant["name"]
        if shape_name == "Newtype":
            return {variant["name"]: self.get_value(message, field, shape, depth)}
        fields = [(field_schema["name"], field_schema["ty"]) for field_schema in shape["fields"]]
        values = self.read_fields(getattr(message, field.name), fields, depth)
        if shape["named"]:
            return {variant["name"]: values}
        return {variant["name"]: [values[name] for name, _ in fields]}

    def from_scalar(self, type_ref: Any, raw: Any) -> Any:
        name, inner = _variant(type_ref)
        if name == "Char":
            try:
                return chr(raw)
            except (ValueError, OverflowError):
                raise ValueError(f"{raw} is not a char") from None
        if name == "Named":
            kind_name, body = _variant(self.table.kind(str(inner)))
            other = None
            for enum_value in body["values"] if kind_name == "Enum" else []:
                if enum_value["number"] == raw:
                    return enum_value["name"]
                if enum_value.get("other"):
                    other = enum_value["name"]
            # An unknown number reads as the `#[wirecall(other)]` value, as in Rust.
            if other is not None:
                return other
            raise ValueError(f"{raw} is not a value of {inner}")
        if name in ("Bytes", "Opaque"):
            return bytes(raw)
        return raw


def _some(inner: Any, value: Any) -> Any:
    """What `Some(value)` holds: around another option, the JSON form is `[x]`."""
    if _variant(inner)[0] != "Option":
        return value
    if isinstance(value, (list, tuple)) and len(value) == 1:
        return value[0]
    raise TypeError(f"an Option of an Option is None or [value], not {value!r}")


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return bytes(value)
    raise TypeError(f"bytes are bytes or a list of integers, not {value!r}")


def _as_list(value: Any) -> List[Any]:
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"expected a list, not {value!r}")


def _pair(value: Any, first: str, second: str) -> Tuple[int, int]:
    if isinstance(value, Mapping):
        return int(value.get(first, 0)), int(value.get(second, 0))
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    raise TypeError(f"expected {{{first!r}: ..., {second!r}: ...}}, not {value!r}")


def _map_key(key_type: Any, key: Any) -> Any:
    # JSON forms write integer keys as strings; accept them as the JSON codec does.
    name, _ = _variant(key_type)
    if name in ("U8", "U16", "U32", "U64", "I8", "I16", "I32", "I64") and isinstance(key, str):
        return int(key)
    if name == "Bool" and isinstance(key, str):
        return key == "true"
    return key


def _default_of(type_ref: Any) -> Any:
    """What a map's `None` value travels as: the value type's default."""
    name, _ = _variant(type_ref)
    if name == "String":
        return ""
    if name in ("F32", "F64"):
        return 0.0
    if name == "Bool":
        return False
    return 0


class ServiceMessages:
    """One service's message classes, from its descriptor set, and its schema's types."""

    def __init__(self, descriptor_set: bytes, schema: ServiceSchema, table: TypeTable):
        files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set)
        self._pool = descriptor_pool.DescriptorPool()
        # The services' file comes first and imports the others: add them in reverse.
        for file in reversed(files.file):
            self._pool.AddSerializedFile(file.SerializeToString())
        self._prefix = f"{PACKAGE}.{service_identifier(schema.name)}"
        self._walker = _Walker(table)
        self.schema = schema

    def _message_class(self, method: str, suffix: str) -> Callable[[], Message]:
        descriptor: Descriptor = self._pool.FindMessageTypeByName(f"{self._prefix}_{method}_{suffix}")
        return message_class(descriptor)

    def encode_arguments(self, signature: MethodSignature, arguments: Mapping[str, Any]) -> bytes:
        message = self._message_class(signature.name, "Args")()
        fields = [(argument.name, argument.type) for argument in signature.arguments]
        self._walker.fill_fields(message, fields, arguments, 0)
        return message.SerializeToString()

    def decode_reply_fields(self, signature: MethodSignature, payload: bytes) -> Dict[str, Any]:
        message = self._message_class(signature.name, "Reply")()
        message.ParseFromString(payload)
        name, body = _variant(signature.reply)
        if name == "Unit":
            return {}
        if name == "Value":
            return self._walker.read_fields(message, [("value", body)], 0)
        ok, err = (body["ok"], body["err"]) if isinstance(body, dict) else (body[0], body[1])
        if ok is None:
            # `Result<(), E>`: `err` alone, unset for `Ok(())`.
            return self._walker.read_fields(message, [("err", {"Option": err})], 0)
        read = self._walker.read_fields(message, [("ok", {"Option": ok}), ("err", {"Option": err})], 0)
        if not (message.HasField("ok") or message.HasField("err")):
            raise ValueError("a result reply with neither `ok` nor `err` set")
        return read

    def encode_item(self, signature: MethodSignature, item: Any) -> bytes:
        """One uploaded item: the method's `_Upload` message with only `value` set."""
        if signature.upload is None:
            raise TypeError(f"{signature.service}.{signature.name} takes no upload")
        message = self._message_class(signature.name, "Upload")()
        self._walker.fill_fields(message, [("value", signature.upload)], {"value": item}, 0)
        return message.SerializeToString()


def message_class(descriptor: Descriptor) -> Callable[[], Message]:
    """The class of a message, with protobuf 4.21's API or a newer one."""
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is not None:
        return get_class(descriptor)  # type: ignore[no-any-return]
    return message_factory.MessageFactory(descriptor.file.pool).GetPrototype(descriptor)  # type: ignore[attr-defined,no-any-return]


class ProtobufCodec(Codec):
    """Codec 3, for one connection: the messages of each service it has described."""

    id = CodecId.PROTOBUF
    name = "protobuf"
    needs_schema = True

    def __init__(self) -> None:
        self._services: Dict[str, ServiceMessages] = {}
        reflection = ServiceSchema({"name": REFLECTION_SERVICE, "methods": REFLECTION_METHODS, "types": REFLECTION_TYPES})
        self.learn_service(reflection_descriptors(), reflection)

    def knows_service(self, service: str) -> bool:
        return service in self._services

    def learnt_signature(self, service: str, method: str) -> Optional[MethodSignature]:
        known = self._services.get(service)
        return None if known is None else known.schema.method(method)

    def learn_service(self, descriptor_set: bytes, schema: ServiceSchema) -> None:
        """Learns a service's messages from its `descriptors` answer and its `describe` one."""
        table = next(iter(schema.methods.values())).table if schema.methods else TypeTable([])
        self._services[schema.name] = ServiceMessages(descriptor_set, schema, table)

    def _messages(self, signature: Optional[MethodSignature]) -> Tuple[ServiceMessages, MethodSignature]:
        if signature is None or signature.service not in self._services:
            raise ValueError("Protobuf needs the method's schema: describe its service first")
        return self._services[signature.service], signature

    def encode_arguments(self, arguments: Mapping[str, Any], signature: Optional[MethodSignature] = None) -> bytes:
        messages, signature = self._messages(signature)
        return messages.encode_arguments(signature, arguments)

    def decode_reply_fields(self, payload: bytes, shape: Reply, signature: Optional[MethodSignature] = None) -> Dict[str, Any]:
        messages, signature = self._messages(signature)
        try:
            return messages.decode_reply_fields(signature, payload)
        except (ProtobufDecodeError, RuntimeError, KeyError, TypeError, OverflowError) as bad:
            # Every way a payload can fail to be a message reads as one error.
            raise ValueError(str(bad) or type(bad).__name__) from bad

    def encode_item(self, item: Any, signature: Optional[MethodSignature] = None) -> bytes:
        messages, signature = self._messages(signature)
        return messages.encode_item(signature, item)


def reflection_descriptors() -> bytes:
    """The reflection service's own descriptor set, shipped with the package: over Protobuf,
    the call that fetches descriptors is itself Protobuf."""
    from ._reflection_descriptors import REFLECTION_DESCRIPTORS

    return base64.b64decode(REFLECTION_DESCRIPTORS)
