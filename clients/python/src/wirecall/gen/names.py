"""Python names for what a schema names: services, types, variants, fields and methods.

Rust names are mostly valid Python already; what is not (a keyword such as ``type`` or
``None``, a dotted service name) is adjusted here, and every class name of the module is
checked against the others and against the names the module imports, so that no generated
name shadows another.
"""

import keyword
import re
from typing import Iterable, Set

#: Names the generated module imports or defines itself: a type called `List` or `Reply`
#: gets another name rather than hiding the import.
IMPORTED_NAMES = frozenset(
    {
        "annotations", "dataclass", "datetime", "enum",
        "Any", "AsyncIterable", "Dict", "Iterable", "List", "Optional", "Set", "Tuple", "Union",
        "ApplicationError", "AsyncClient", "Client", "Reply",
        "AsyncService", "BlockingService", "TypedApplicationError", "TypedAsyncStream",
        "TypedStream", "bool_key", "duration_from_wire", "duration_to_wire", "fields_of",
        "bytes_from_wire", "timestamp_from_wire", "timestamp_to_wire", "variant_of", "wire_any_items", "wire_items",
    }
)


def identifier(name: str) -> str:
    """`name` as a Python identifier: keywords (``type``, ``None``) get a trailing ``_``,
    characters Python does not allow become ``_``."""
    cleaned = re.sub(r"\W", "_", name) or "_"
    if cleaned[0].isdigit():
        cleaned = "_" + cleaned
    if keyword.iskeyword(cleaned) or cleaned in ("self", "cls"):
        cleaned += "_"
    return cleaned


#: The generated dataclasses' own methods: a field of that name gets a trailing ``_``.
MESSAGE_METHODS = frozenset({"to_wire", "from_wire"})


def field_name(name: str) -> str:
    """A message field's attribute name."""
    attribute = identifier(name)
    return attribute + "_" if attribute in MESSAGE_METHODS else attribute


def camel(name: str) -> str:
    """``get_user`` -> ``GetUser``, ``wirecall.Reflection`` -> ``WirecallReflection``."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[\W_]+", name) if part)


def snake(name: str) -> str:
    """``UserModel`` -> ``user_model``."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class NameRegistry:
    """The module-level names taken so far; `claim` hands out the first free one of the
    candidates, adding ``_`` to the last one until it is free."""

    def __init__(self, taken: Iterable[str] = IMPORTED_NAMES):
        self._taken: Set[str] = set(taken)

    def claim(self, *candidates: str) -> str:
        for candidate in candidates:
            name = identifier(candidate)
            if name not in self._taken:
                self._taken.add(name)
                return name
        name = identifier(candidates[-1])
        while name in self._taken:
            name += "_"
        self._taken.add(name)
        return name
