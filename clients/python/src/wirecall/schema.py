"""Service schemas from the server's reflection service, and MessagePack values read by them.

`wirecall.Reflection.describe` answers with a `ServiceSchema` (see the book's "Calling from
outside Rust" chapter). Its JSON form is used here as it arrives: types are strings
(``"I32"``) or one-key dicts (``{"List": ...}``, ``{"Named": "UserModel"}``). MessagePack
carries messages as arrays without field names; `from_msgpack` turns such a value back into
the JSON form (structs as dicts keyed by field name, unit enums by variant name), so a caller
sees the same values whichever codec the connection uses.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .replies import Reply

#: The name the reflection service is served under.
REFLECTION_SERVICE = "wirecall.Reflection"

#: The reflection service's own message types (its `describe("wirecall.Reflection")` answer,
#: without doc comments): what it takes to read a `describe` reply sent in MessagePack. A test
#: compares it with what the server reports.
REFLECTION_TYPES: List[Dict[str, Any]] = [{'name': 'ServiceSummary',
  'kind': {'Struct': {'fields': [{'name': 'name', 'ty': 'String'},
                                 {'name': 'summary', 'ty': 'String'},
                                 {'name': 'methods', 'ty': {'List': 'String'}}]}}},
 {'name': 'ServiceSchema',
  'kind': {'Struct': {'fields': [{'name': 'name', 'ty': 'String'}, {'name': 'doc', 'ty': 'String'},
                                 {'name': 'codecs', 'ty': {'List': 'String'}},
                                 {'name': 'methods', 'ty': {'List': {'Named': 'MethodSchema'}}},
                                 {'name': 'types', 'ty': {'List': {'Named': 'TypeDef'}}},
                                 {'name': 'described', 'ty': 'Bool'}]}}},
 {'name': 'MethodSchema',
  'kind': {'Struct': {'fields': [{'name': 'name', 'ty': 'String'}, {'name': 'id', 'ty': 'U64'},
                                 {'name': 'doc', 'ty': 'String'},
                                 {'name': 'args', 'ty': {'List': {'Named': 'FieldSchema'}}},
                                 {'name': 'reply', 'ty': {'Named': 'ReplySchema'}},
                                 {'name': 'oneway', 'ty': 'Bool'},
                                 {'name': 'idempotent', 'ty': 'Bool'},
                                 {'name': 'policy', 'ty': 'String'},
                                 {'name': 'server_stream', 'ty': 'Bool'},
                                 {'name': 'upload', 'ty': {'Option': {'Named': 'TypeRef'}}}]}}},
 {'name': 'FieldSchema',
  'kind': {'Struct': {'fields': [{'name': 'name', 'ty': 'String'},
                                 {'name': 'ty', 'ty': {'Named': 'TypeRef'}},
                                 {'name': 'doc', 'ty': 'String'}]}}},
 {'name': 'TypeRef',
  'kind': {'OneOf': {'variants': [{'name': 'Bool', 'tag': 1, 'shape': 'Unit', 'other': False},
                                  {'name': 'U8', 'tag': 2, 'shape': 'Unit', 'other': False},
                                  {'name': 'U16', 'tag': 3, 'shape': 'Unit', 'other': False},
                                  {'name': 'U32', 'tag': 4, 'shape': 'Unit', 'other': False},
                                  {'name': 'U64', 'tag': 5, 'shape': 'Unit', 'other': False},
                                  {'name': 'I8', 'tag': 6, 'shape': 'Unit', 'other': False},
                                  {'name': 'I16', 'tag': 7, 'shape': 'Unit', 'other': False},
                                  {'name': 'I32', 'tag': 8, 'shape': 'Unit', 'other': False},
                                  {'name': 'I64', 'tag': 9, 'shape': 'Unit', 'other': False},
                                  {'name': 'F32', 'tag': 10, 'shape': 'Unit', 'other': False},
                                  {'name': 'F64', 'tag': 11, 'shape': 'Unit', 'other': False},
                                  {'name': 'Char', 'tag': 12, 'shape': 'Unit', 'other': False},
                                  {'name': 'String', 'tag': 13, 'shape': 'Unit', 'other': False},
                                  {'name': 'Bytes', 'tag': 14, 'shape': 'Unit', 'other': False},
                                  {'name': 'Duration', 'tag': 15, 'shape': 'Unit', 'other': False},
                                  {'name': 'Timestamp',
                                   'tag': 16,
                                   'shape': 'Unit',
                                   'other': False},
                                  {'name': 'Option',
                                   'tag': 17,
                                   'shape': {'Newtype': {'Named': 'TypeRef'}},
                                   'other': False},
                                  {'name': 'List',
                                   'tag': 18,
                                   'shape': {'Newtype': {'Named': 'TypeRef'}},
                                   'other': False},
                                  {'name': 'Set',
                                   'tag': 19,
                                   'shape': {'Newtype': {'Named': 'TypeRef'}},
                                   'other': False},
                                  {'name': 'Array',
                                   'tag': 20,
                                   'shape': {'Fields': {'named': True,
                                                        'fields': [{'name': 'element',
                                                                    'ty': {'Named': 'TypeRef'}},
                                                                   {'name': 'len', 'ty': 'U64'}]}},
                                   'other': False},
                                  {'name': 'Map',
                                   'tag': 21,
                                   'shape': {'Fields': {'named': True,
                                                        'fields': [{'name': 'key',
                                                                    'ty': {'Named': 'TypeRef'}},
                                                                   {'name': 'value',
                                                                    'ty': {'Named': 'TypeRef'}}]}},
                                   'other': False},
                                  {'name': 'Tuple',
                                   'tag': 22,
                                   'shape': {'Newtype': {'List': {'Named': 'TypeRef'}}},
                                   'other': False},
                                  {'name': 'Named',
                                   'tag': 23,
                                   'shape': {'Newtype': 'String'},
                                   'other': False},
                                  {'name': 'Opaque',
                                   'tag': 24,
                                   'shape': {'Newtype': 'String'},
                                   'other': False}]}}},
 {'name': 'ReplySchema',
  'kind': {'OneOf': {'variants': [{'name': 'Unit', 'tag': 1, 'shape': 'Unit', 'other': False},
                                  {'name': 'Value',
                                   'tag': 2,
                                   'shape': {'Newtype': {'Named': 'TypeRef'}},
                                   'other': False},
                                  {'name': 'Result',
                                   'tag': 3,
                                   'shape': {'Fields': {'named': True,
                                                        'fields': [{'name': 'ok',
                                                                    'ty': {'Option': {'Named': 'TypeRef'}}},
                                                                   {'name': 'err',
                                                                    'ty': {'Named': 'TypeRef'}}]}},
                                   'other': False}]}}},
 {'name': 'TypeDef',
  'kind': {'Struct': {'fields': [{'name': 'name', 'ty': 'String'},
                                 {'name': 'rust_path', 'ty': 'String'},
                                 {'name': 'doc', 'ty': 'String'},
                                 {'name': 'kind', 'ty': {'Named': 'TypeKind'}}]}}},
 {'name': 'TypeKind',
  'kind': {'OneOf': {'variants': [{'name': 'Struct',
                                   'tag': 1,
                                   'shape': {'Fields': {'named': True,
                                                        'fields': [{'name': 'fields',
                                                                    'ty': {'List': {'Named': 'FieldSchema'}}}]}},
                                   'other': False},
                                  {'name': 'Enum',
                                   'tag': 2,
                                   'shape': {'Fields': {'named': True,
                                                        'fields': [{'name': 'values',
                                                                    'ty': {'List': {'Named': 'EnumValue'}}}]}},
                                   'other': False},
                                  {'name': 'OneOf',
                                   'tag': 3,
                                   'shape': {'Fields': {'named': True,
                                                        'fields': [{'name': 'variants',
                                                                    'ty': {'List': {'Named': 'VariantSchema'}}}]}},
                                   'other': False}]}}},
 {'name': 'EnumValue',
  'kind': {'Struct': {'fields': [{'name': 'name', 'ty': 'String'}, {'name': 'number', 'ty': 'I32'},
                                 {'name': 'doc', 'ty': 'String'},
                                 {'name': 'other', 'ty': 'Bool'}]}}},
 {'name': 'VariantSchema',
  'kind': {'Struct': {'fields': [{'name': 'name', 'ty': 'String'}, {'name': 'tag', 'ty': 'U32'},
                                 {'name': 'doc', 'ty': 'String'},
                                 {'name': 'shape', 'ty': {'Named': 'VariantShape'}},
                                 {'name': 'other', 'ty': 'Bool'}]}}},
 {'name': 'VariantShape',
  'kind': {'OneOf': {'variants': [{'name': 'Unit', 'tag': 1, 'shape': 'Unit', 'other': False},
                                  {'name': 'Newtype',
                                   'tag': 2,
                                   'shape': {'Newtype': {'Named': 'TypeRef'}},
                                   'other': False},
                                  {'name': 'Fields',
                                   'tag': 3,
                                   'shape': {'Fields': {'named': True,
                                                        'fields': [{'name': 'named', 'ty': 'Bool'},
                                                                   {'name': 'fields',
                                                                    'ty': {'List': {'Named': 'FieldSchema'}}}]}},
                                   'other': False}]}}},
 {'name': 'ReflectionError',
  'kind': {'OneOf': {'variants': [{'name': 'UnknownService',
                                   'tag': 1,
                                   'shape': {'Newtype': 'String'},
                                   'other': False},
                                  {'name': 'NoProtobufForm',
                                   'tag': 2,
                                   'shape': {'Fields': {'named': True,
                                                        'fields': [{'name': 'service', 'ty': 'String'},
                                                                   {'name': 'reason', 'ty': 'String'}]}},
                                   'other': False}]}}}]

#: The reply type of `describe` and of `list_services`.
SERVICE_SCHEMA_TYPE = {"Named": "ServiceSchema"}
REFLECTION_ERROR_TYPE = {"Named": "ReflectionError"}
SERVICE_SUMMARIES_TYPE = {"List": {"Named": "ServiceSummary"}}


def _variant(type_ref: Any) -> Tuple[str, Any]:
    """A type in its JSON form as (variant name, what it carries)."""
    if isinstance(type_ref, str):
        return type_ref, None
    if isinstance(type_ref, dict) and len(type_ref) == 1:
        return next(iter(type_ref.items()))
    raise ValueError(f"not a type: {type_ref!r}")


def type_name(type_ref: Any) -> str:
    """A type as Rust would write it, for messages: ``Vec<UserModel>``."""
    name, inner = _variant(type_ref)
    simple = {
        "Bool": "bool", "U8": "u8", "U16": "u16", "U32": "u32", "U64": "u64", "I8": "i8",
        "I16": "i16", "I32": "i32", "I64": "i64", "F32": "f32", "F64": "f64", "Char": "char",
        "String": "String", "Bytes": "Bytes", "Duration": "Duration", "Timestamp": "SystemTime",
    }
    if name in simple:
        return simple[name]
    if name in ("Option", "List", "Set"):
        return {"Option": "Option", "List": "Vec", "Set": "HashSet"}[name] + f"<{type_name(inner)}>"
    if name == "Array":
        element, length = _fields(inner, ("element", "len"))
        return f"[{type_name(element)}; {length}]"
    if name == "Map":
        key, value = _fields(inner, ("key", "value"))
        return f"HashMap<{type_name(key)}, {type_name(value)}>"
    if name == "Tuple":
        return "(" + ", ".join(type_name(item) for item in inner) + ")"
    if name in ("Named", "Opaque"):
        return str(inner)
    return name


def _fields(value: Any, names: Sequence[str]) -> List[Any]:
    """A struct-like value's fields by name: from a dict (JSON) or an array (MessagePack)."""
    if isinstance(value, dict):
        return [value.get(name) for name in names]
    if isinstance(value, (list, tuple)):
        return list(value) + [None] * (len(names) - len(value))
    raise ValueError(f"expected a message with {list(names)}, not {value!r}")


class TypeTable:
    """The named types of one schema, to read MessagePack values by."""

    def __init__(self, types: Sequence[Mapping[str, Any]]):
        self._kinds: Dict[str, Any] = {definition["name"]: definition["kind"] for definition in types}

    def kind(self, name: str) -> Any:
        """The kind of the named type `name` (JSON form); raises `ValueError` if unknown."""
        try:
            return self._kinds[name]
        except KeyError:
            raise ValueError(f"the schema has no type named {name!r}") from None

    def from_msgpack(self, value: Any, type_ref: Any, depth: int = 0) -> Any:
        """`value`, as MessagePack decoded it, in the JSON codec's form for `type_ref`.

        Structs become dicts keyed by field name (a shorter array leaves the missing trailing
        fields out, a longer one's extra elements are dropped), unit-only enums their variant
        name, enums with data ``{"Variant": ...}`` with their inner messages as dicts,
        `Duration` and `SystemTime` the JSON codec's dicts. `Bytes` stays `bytes`; an `Opaque`
        type (no schema) stays as decoded. A value that does not fit its type is left as it is.
        """
        if value is None or depth > 128:
            return value
        try:
            name, inner = _variant(type_ref)
        except ValueError:
            return value
        if name == "Duration" and isinstance(value, (list, tuple)) and len(value) == 2:
            return {"secs": value[0], "nanos": value[1]}
        if name == "Timestamp" and isinstance(value, (list, tuple)) and len(value) == 2:
            return {"secs_since_epoch": value[0], "nanos_since_epoch": value[1]}
        if name == "Option":
            return self.from_msgpack(value, inner, depth + 1)
        if name in ("List", "Set") and isinstance(value, list):
            return [self.from_msgpack(item, inner, depth + 1) for item in value]
        if name == "Array" and isinstance(value, list):
            element = inner["element"] if isinstance(inner, dict) else inner[0]
            return [self.from_msgpack(item, element, depth + 1) for item in value]
        if name == "Map" and isinstance(value, dict):
            _, value_type = _fields(inner, ("key", "value"))
            return {key: self.from_msgpack(item, value_type, depth + 1) for key, item in value.items()}
        if name == "Tuple" and isinstance(value, list):
            return [self.from_msgpack(item, item_type, depth + 1) for item, item_type in zip(value, inner)] + value[len(inner):]
        if name == "Named":
            return self._named(value, inner, depth)
        return value

    def _named(self, value: Any, name: str, depth: int) -> Any:
        kind = self._kinds.get(name)
        if kind is None:
            return value
        kind_name, body = _variant(kind)
        if kind_name == "Struct":
            return self._message(value, body["fields"], depth)
        if kind_name == "Enum" and isinstance(value, int) and not isinstance(value, bool):
            for enum_value in body["values"]:
                if enum_value["number"] == value:
                    return enum_value["name"]
            return value
        if kind_name == "OneOf":
            if isinstance(value, dict) and len(value) == 1:
                tag, carried = next(iter(value.items()))
                for variant in body["variants"]:
                    if variant["name"] == tag:
                        return {tag: self._variant_value(carried, variant["shape"], depth)}
            return value
        return value

    def _variant_value(self, carried: Any, shape: Any, depth: int) -> Any:
        shape_name, shape_body = _variant(shape)
        if shape_name == "Newtype":
            return self.from_msgpack(carried, shape_body, depth + 1)
        if shape_name == "Fields":
            if shape_body["named"]:
                return self._message(carried, shape_body["fields"], depth)
            if isinstance(carried, list):
                return [
                    self.from_msgpack(item, field["ty"], depth + 1)
                    for item, field in zip(carried, shape_body["fields"])
                ]
        return carried

    def _message(self, value: Any, fields: Sequence[Mapping[str, Any]], depth: int) -> Any:
        if isinstance(value, list):
            return {
                field["name"]: self.from_msgpack(item, field["ty"], depth + 1)
                for field, item in zip(fields, value)
            }
        if isinstance(value, dict):
            # A message written as a map keyed by field name (the spec allows it).
            by_name = {field["name"]: field["ty"] for field in fields}
            return {
                key: self.from_msgpack(item, by_name[key], depth + 1) if key in by_name else item
                for key, item in value.items()
            }
        return value


REFLECTION_TABLE = TypeTable(REFLECTION_TYPES)


@dataclass(frozen=True)
class Argument:
    """One argument of a method: its name and its type (JSON form)."""

    name: str
    type: Any

    @property
    def optional(self) -> bool:
        """An `Option<T>` argument may be left out: it is sent as `None`."""
        return _variant(self.type)[0] == "Option"


@dataclass(frozen=True)
class MethodSignature:
    """What the proxy needs to call one method: its arguments in declaration order, its reply
    type, whether it is one-way, whether it is a server stream (then `reply` describes one
    item), and the item type of its upload, if it takes one (client or bidirectional
    streaming; the upload is not among `arguments`, and reflection does not name it); `table`
    reads its MessagePack values."""

    service: str
    name: str
    doc: str
    arguments: Tuple[Argument, ...]
    reply: Any
    oneway: bool
    table: TypeTable
    described: bool = True
    server_stream: bool = False
    #: The type of each uploaded item, for a method that takes an upload.
    upload: Any = None

    @property
    def reply_shape(self) -> Reply:
        """How to read the reply message, or each item of a stream (`Reply`), from the reply
        type."""
        if not self.described:
            return Reply.AUTO
        name, body = _variant(self.reply)
        if name == "Unit":
            return Reply.NOTHING
        if name == "Value":
            return Reply.VALUE
        ok = body.get("ok") if isinstance(body, dict) else body[0]
        return Reply.UNIT_RESULT if ok is None else Reply.RESULT

    def order_arguments(self, given: Mapping[str, Any]) -> Dict[str, Any]:
        """`given` in declaration order, `None` for a left-out `Option` argument; raises
        `TypeError` naming missing and unknown arguments."""
        if not self.described:
            return dict(given)
        names = [argument.name for argument in self.arguments]
        unknown = [name for name in given if name not in names]
        missing = [argument.name for argument in self.arguments if argument.name not in given and not argument.optional]
        if unknown or missing:
            problems = []
            if missing:
                problems.append("missing " + ", ".join(repr(name) for name in missing))
            if unknown:
                problems.append("unknown " + ", ".join(repr(name) for name in unknown))
            raise TypeError(
                f"{self.service}.{self.name}() {' and '.join(problems)} argument(s); it takes {self.describe()}"
            )
        return {name: given.get(name) for name in names}

    def check_upload(self, given: bool) -> None:
        """`TypeError` unless the call gives an upload exactly when the method takes one."""
        if not self.described:
            return
        if self.upload is not None and not given:
            raise TypeError(
                f"{self.service}.{self.name}() takes its upload, Streaming<{type_name(self.upload)}>, as its "
                f"first positional argument (any iterable of items); it takes {self.describe()}"
            )
        if self.upload is None and given:
            raise TypeError(
                f"{self.service}.{self.name}() takes no upload, only keyword arguments; it takes {self.describe()}"
            )

    def describe(self) -> str:
        """``(user: UserModel) -> UserModel``; ``(count: u32) -> Streaming<UserModel>``; with an
        upload, as the proxy takes it, first: ``(Streaming<UserModel>, prefix: String) ->
        Streaming<UserModel>``."""
        arguments = ", ".join(
            ([f"Streaming<{type_name(self.upload)}>"] if self.upload is not None else [])
            + [f"{argument.name}: {type_name(argument.type)}" for argument in self.arguments]
        )
        if not self.described:
            return "arguments the server does not describe"
        name, body = _variant(self.reply)
        if name == "Unit":
            returned = "()" if self.server_stream else ""
        elif name == "Value":
            returned = type_name(body)
        else:
            ok, err = _fields(body, ("ok", "err"))
            returned = f"Result<{'()' if ok is None else type_name(ok)}, {type_name(err)}>"
        if self.server_stream:
            returned = f"Streaming<{returned}>"
        return f"({arguments})" + (f" -> {returned}" if returned else "")

    def reply_fields_from_msgpack(self, fields: Dict[str, Any]) -> Dict[str, Any]:
        """The reply message's fields, as MessagePack decoded them, in their JSON form."""
        if not self.described:
            return fields
        name, body = _variant(self.reply)
        if name == "Value":
            types = {"value": body}
        elif name == "Result":
            ok, err = _fields(body, ("ok", "err"))
            types = {"ok": ok, "err": err}
        else:
            types = {}
        return {
            key: self.table.from_msgpack(value, types[key]) if types.get(key) is not None else value
            for key, value in fields.items()
        }


class ServiceSchema:
    """A service as `describe` reports it: its methods by name."""

    def __init__(self, schema: Mapping[str, Any]):
        self.name: str = schema["name"]
        self.doc: str = schema.get("doc", "")
        described = bool(schema.get("described", True))
        table = TypeTable(schema.get("types") or [])
        self.methods: Dict[str, MethodSignature] = {}
        for method in schema.get("methods") or []:
            arguments = tuple(Argument(argument["name"], argument["ty"]) for argument in method.get("args") or [])
            self.methods[method["name"]] = MethodSignature(
                service=self.name,
                name=method["name"],
                doc=method.get("doc", ""),
                arguments=arguments,
                reply=method.get("reply", "Unit"),
                oneway=bool(method.get("oneway")),
                table=table,
                described=described,
                # Absent from servers older than protocol version 3: no method streams there.
                server_stream=bool(method.get("server_stream")),
                upload=method.get("upload"),
            )

    def method(self, name: str) -> MethodSignature:
        """The method `name`; raises `AttributeError` listing the service's methods."""
        try:
            return self.methods[name]
        except KeyError:
            raise AttributeError(
                f"service {self.name} has no method {name!r}; its methods are: {', '.join(self.methods) or 'none'}"
            ) from None

    def __repr__(self) -> str:
        return f"<wirecall service schema {self.name}: {', '.join(self.methods)}>"


def schema_from_reply(value: Any, codec: str) -> Dict[str, Any]:
    """A `describe` reply's `ServiceSchema` in its JSON form, whatever the codec."""
    schema: Dict[str, Any] = (
        REFLECTION_TABLE.from_msgpack(value, SERVICE_SCHEMA_TYPE) if codec == "msgpack" else value
    )
    return schema


def summaries_from_reply(value: Any, codec: str) -> List[Dict[str, Any]]:
    """A `list_services` reply in its JSON form, whatever the codec."""
    summaries: List[Dict[str, Any]] = (
        REFLECTION_TABLE.from_msgpack(value, SERVICE_SUMMARIES_TYPE) if codec == "msgpack" else value
    )
    return summaries
