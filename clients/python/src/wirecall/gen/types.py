"""A schema's types (reflection's `TypeRef`, in its JSON form) as Python annotations, and as
the expressions that convert a value to and from its plain form.

| Rust (TypeRef) | Python |
|---|---|
| integers, `F32`/`F64`, `Bool` | `int`, `float`, `bool` |
| `Char`, `String` | `str` |
| `Bytes` | `bytes` |
| `Duration` | `datetime.timedelta` (microsecond resolution) |
| `Timestamp` (`SystemTime`) | `datetime.datetime`, aware, UTC |
| `Option<T>` | `Optional[T]` |
| `List<T>` | `List[T]` |
| `Set<T>` | `Set[T]` for hashable items (numbers, strings, bytes, unit enums), else `List[T]` |
| `[T; N]` | `Tuple[T, ...]` |
| `(A, B)` | `Tuple[A, B]` |
| `Map<K, V>` | `Dict[K, V]` (JSON's string keys read back by the key type) |
| a struct | its `@dataclass` |
| a unit-only enum | its `enum.Enum`, values the variant names |
| an enum with data | a `Union` of one dataclass per variant |
| `Opaque` (no schema), an unknown name | `Any` |

The conversions are written as expressions on a value's expression (`value`); nested
collections name their loop variables by depth (``_v0``, ``_k1``) so that they never clash.
"""

from dataclasses import dataclass
from typing import Any, Dict, Tuple

INTEGERS = frozenset({"U8", "U16", "U32", "U64", "I8", "I16", "I32", "I64"})
FLOATS = frozenset({"F32", "F64"})
STRINGS = frozenset({"Char", "String"})


@dataclass(frozen=True)
class NamedType:
    """A schema type as generated: its Python name (a class, or a `Union` alias), its kind
    (``Struct``, ``Enum``, ``OneOf``), and the callable that reads its plain form."""

    python_name: str
    kind: str
    reader: str


def variant(type_ref: Any) -> Tuple[str, Any]:
    """A TypeRef as (variant name, what it carries): ``"I32"`` or ``{"List": ...}``."""
    if isinstance(type_ref, str):
        return type_ref, None
    if isinstance(type_ref, dict) and len(type_ref) == 1:
        name, inner = next(iter(type_ref.items()))
        return str(name), inner
    raise ValueError(f"not a type: {type_ref!r}")


def map_parts(inner: Any) -> Tuple[Any, Any]:
    return inner["key"], inner["value"]


class TypeMapper:
    """Annotations and conversions for the types of one service's schema."""

    def __init__(self, named: Dict[str, NamedType]):
        self._named = named

    def annotation(self, type_ref: Any) -> str:
        name, inner = variant(type_ref)
        if name == "Bool":
            return "bool"
        if name in INTEGERS:
            return "int"
        if name in FLOATS:
            return "float"
        if name in STRINGS:
            return "str"
        if name == "Bytes":
            return "bytes"
        if name == "Duration":
            return "datetime.timedelta"
        if name == "Timestamp":
            return "datetime.datetime"
        if name == "Option":
            return f"Optional[{self.annotation(inner)}]"
        if name == "List":
            return f"List[{self.annotation(inner)}]"
        if name == "Set":
            container = "Set" if self.hashable(inner) else "List"
            return f"{container}[{self.annotation(inner)}]"
        if name == "Array":
            return f"Tuple[{self.annotation(inner['element'])}, ...]"
        if name == "Tuple":
            if not inner:
                return "Tuple[()]"
            return "Tuple[" + ", ".join(self.annotation(item) for item in inner) + "]"
        if name == "Map":
            key, value = map_parts(inner)
            return f"Dict[{self.annotation(key)}, {self.annotation(value)}]"
        if name == "Named" and inner in self._named:
            return self._named[inner].python_name
        return "Any"

    def hashable(self, type_ref: Any) -> bool:
        """Whether values of the type can be set members (dataclasses here are not)."""
        name, inner = variant(type_ref)
        if name in INTEGERS | FLOATS | STRINGS | {"Bool", "Bytes", "Duration", "Timestamp"}:
            return True
        return name == "Named" and inner in self._named and self._named[inner].kind == "Enum"

    def to_wire(self, type_ref: Any, value: str, depth: int = 0) -> str:
        """An expression for `value` (of the annotated type) in its plain form."""
        name, inner = variant(type_ref)
        if name == "Duration":
            return f"duration_to_wire({value})"
        if name == "Timestamp":
            return f"timestamp_to_wire({value})"
        if name == "Option":
            converted = self.to_wire(inner, value, depth)
            return value if converted == value else f"(None if {value} is None else {converted})"
        if name in ("List", "Set", "Array"):
            element = inner["element"] if name == "Array" else inner
            item = f"_v{depth}"
            converted = self.to_wire(element, item, depth + 1)
            return f"list({value})" if converted == item else f"[{converted} for {item} in {value}]"
        if name == "Tuple":
            return "[" + ", ".join(self.to_wire(item, f"{value}[{index}]", depth) for index, item in enumerate(inner)) + "]"
        if name == "Map":
            key_type, value_type = map_parts(inner)
            key, item = f"_k{depth}", f"_v{depth}"
            converted_key = self.to_wire(key_type, key, depth + 1)
            converted = self.to_wire(value_type, item, depth + 1)
            if converted_key == key and converted == item:
                return f"dict({value})"
            return f"{{{converted_key}: {converted} for {key}, {item} in {value}.items()}}"
        if name == "Named" and inner in self._named:
            return f"{value}.to_wire()"
        return value

    def from_wire(self, type_ref: Any, value: str, depth: int = 0) -> str:
        """An expression reading `value` (a plain form, typed `Any`) as the annotated type.

        Scalars go through their constructor, which also gives mypy the declared type:
        `float` reads JSON's ``"NaN"`` and ``"Infinity"``, `bytes` JSON's base64 text (and the
        array of numbers of protocol versions before 6)."""
        name, inner = variant(type_ref)
        if name == "Bool":
            return f"bool({value})"
        if name in INTEGERS:
            return f"int({value})"
        if name in FLOATS:
            return f"float({value})"
        if name in STRINGS:
            return f"str({value})"
        if name == "Bytes":
            return f"bytes_from_wire({value})"
        if name == "Duration":
            return f"duration_from_wire({value})"
        if name == "Timestamp":
            return f"timestamp_from_wire({value})"
        if name == "Option":
            return f"(None if {value} is None else {self.from_wire(inner, value, depth)})"
        if name in ("List", "Set", "Array"):
            element = inner["element"] if name == "Array" else inner
            item = f"_v{depth}"
            converted = self.from_wire(element, item, depth + 1)
            if name == "Array":
                return f"tuple({converted} for {item} in {value})"
            if name == "Set" and self.hashable(element):
                return f"{{{converted} for {item} in {value}}}"
            return f"[{converted} for {item} in {value}]"
        if name == "Tuple":
            items = [self.from_wire(item, f"{value}[{index}]", depth) for index, item in enumerate(inner)]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if name == "Map":
            key_type, value_type = map_parts(inner)
            key, item = f"_k{depth}", f"_v{depth}"
            converted_key = self._key_from_wire(key_type, key, depth)
            converted = self.from_wire(value_type, item, depth + 1)
            return f"{{{converted_key}: {converted} for {key}, {item} in {value}.items()}}"
        if name == "Named" and inner in self._named:
            return f"{self._named[inner].reader}({value})"
        return value

    def _key_from_wire(self, type_ref: Any, key: str, depth: int) -> str:
        # JSON writes every map key as a string: read it back by the key type.
        if variant(type_ref)[0] == "Bool":
            return f"bool_key({key})"
        return self.from_wire(type_ref, key, depth + 1)

    def wire_default(self, type_ref: Any) -> str:
        """The plain form a missing field reads as (Rust's `Default`), as an expression;
        ``None`` where there is no obvious one (a struct, a tuple)."""
        name, inner = variant(type_ref)
        if name == "Bool":
            return "False"
        if name in INTEGERS:
            return "0"
        if name in FLOATS:
            return "0.0"
        if name in STRINGS:
            return '""'
        if name == "Bytes":
            return 'b""'
        if name in ("List", "Set"):
            return "[]"
        if name == "Map":
            return "{}"
        if name == "Duration":
            return "[0, 0]"
        if name == "Timestamp":
            return "[0, 0]"
        return "None"
