"""The message types of a schema as Python source: a `@dataclass` per struct, an
`enum.Enum` per unit-only enum, and per enum with data one dataclass per variant and a
`Union` of them, each with ``to_wire()`` and a reader of the plain form (``from_wire``)."""

from typing import Any, List, Mapping, Sequence, Tuple

from .names import field_name
from .types import TypeMapper, variant


def docstring(text: str, indent: str) -> List[str]:
    """A docstring from a schema's doc comment; nothing when there is none."""
    text = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if not text:
        return []
    lines = text.splitlines()
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}', *[f"{indent}{line}".rstrip() for line in lines[1:]], f'{indent}"""']


def _field_lines(fields: Sequence[Tuple[str, str, str]]) -> List[str]:
    lines: List[str] = []
    for attribute, annotation, doc in fields:
        lines.append(f"    {attribute}: {annotation}")
        lines.extend(docstring(doc, "    "))
    return lines


def _reader_lines(
    mapper: TypeMapper, fields: Sequence[Mapping[str, Any]], value: str, indent: str
) -> Tuple[List[str], str]:
    """Lines that unpack the message `value` into locals, and the keyword arguments that
    build the dataclass from them."""
    if not fields:
        return [], ""
    names = tuple(field["name"] for field in fields)
    local_names = [f"_{field_name(name)}" for name in names]
    defaults = ", ".join(mapper.wire_default(field["ty"]) for field in fields)
    unpack = ", ".join(local_names) + ("," if len(local_names) == 1 else "")
    lines = [f"{indent}{unpack} = fields_of({value}, {names!r}, ({defaults}{',' if len(fields) == 1 else ''}))"]
    arguments = ", ".join(
        f"{field_name(field['name'])}={mapper.from_wire(field['ty'], local)}"
        for field, local in zip(fields, local_names)
    )
    return lines, arguments


def struct_source(python_name: str, definition: Mapping[str, Any], fields: Sequence[Mapping[str, Any]], mapper: TypeMapper) -> List[str]:
    """A struct's dataclass."""
    lines = ["@dataclass", f"class {python_name}:"]
    lines += docstring(definition.get("doc", ""), "    ") or [f'    """`{definition.get("rust_path") or definition["name"]}`."""']
    lines.append("")
    lines += _field_lines([(field_name(field["name"]), mapper.annotation(field["ty"]), field.get("doc", "")) for field in fields])
    if fields:
        lines.append("")
    plain = ", ".join(
        f"{field['name']!r}: {mapper.to_wire(field['ty'], 'self.' + field_name(field['name']))}" for field in fields
    )
    reader, arguments = _reader_lines(mapper, fields, "value", "        ")
    lines += [
        "    def to_wire(self) -> Dict[str, Any]:",
        '        """The plain form the client sends: a dict keyed by field name."""',
        f"        return {{{plain}}}",
        "",
        "    @classmethod",
        f"    def from_wire(cls, value: Any) -> {python_name}:",
        '        """Reads the plain form of a reply: a dict keyed by field name, or a list of the',
        '        fields in order (MessagePack read without reflection)."""',
        *reader,
        f"        return cls({arguments})",
    ]
    return lines


def enum_source(python_name: str, definition: Mapping[str, Any], values: Sequence[Mapping[str, Any]]) -> List[str]:
    """A unit-only enum: an `enum.Enum` whose values are the variant names (JSON's form);
    MessagePack's variant numbers are read too."""
    lines = [f"class {python_name}(enum.Enum):"]
    lines += docstring(definition.get("doc", ""), "    ") or [f'    """`{definition.get("rust_path") or definition["name"]}`."""']
    lines.append("")
    for value in values:
        lines.append(f"    {field_name(value['name'])} = {value['name']!r}")
        lines += docstring(value.get("doc", ""), "    ")
    numbers = {value["number"]: value["name"] for value in values}
    # A missing field reads as the variant numbered 0 (Rust's default); an unknown name or
    # number as the `#[wirecall(other)]` variant when there is one.
    other = next((value["name"] for value in values if value.get("other")), None)
    fallback = (
        f"return cls({other!r})" if other is not None else f'raise ValueError(f"not a {python_name}: {{value!r}}") from None'
    )
    lines += [
        "",
        "    def to_wire(self) -> str:",
        '        """The plain form the client sends: the variant\'s name."""',
        "        return str(self.value)",
        "",
        "    @classmethod",
        f"    def from_wire(cls, value: Any) -> {python_name}:",
        '        """Reads a variant by name (JSON) or by number (MessagePack)."""',
        "        if value is None:",
        "            value = 0",
        "        if isinstance(value, int) and not isinstance(value, bool):",
        f"            value = {numbers!r}.get(value, value)",
        "        try:",
        "            return cls(value)",
        "        except ValueError:",
        f"            {fallback}",
    ]
    return lines


def one_of_source(
    python_name: str,
    reader: str,
    definition: Mapping[str, Any],
    variant_classes: Sequence[Tuple[Mapping[str, Any], str]],
    mapper: TypeMapper,
) -> Tuple[List[str], List[str]]:
    """An enum with data: one dataclass per variant, then (in the second list, written once
    every class exists) the `Union` alias and the function that reads the plain form."""
    classes: List[str] = []
    readers: List[str] = []
    other = None
    for schema_variant, class_name in variant_classes:
        name = schema_variant["name"]
        if schema_variant.get("other"):
            other = class_name
        shape, body = variant(schema_variant["shape"])
        classes += ["@dataclass", f"class {class_name}:"]
        classes += docstring(schema_variant.get("doc", ""), "    ") or [f'    """`{definition["name"]}::{name}`."""']
        classes.append("")
        readers.append(f"    if name == {name!r}:")
        if shape == "Unit":
            plain = repr(name)
            readers.append(f"        return {class_name}()")
        elif shape == "Newtype":
            classes += _field_lines([("value", mapper.annotation(body), "")]) + [""]
            plain = f"{{{name!r}: {mapper.to_wire(body, 'self.value')}}}"
            readers.append(f"        return {class_name}(value={mapper.from_wire(body, 'carried')})")
        elif body["named"]:
            fields = body["fields"]
            classes += _field_lines([(field_name(f["name"]), mapper.annotation(f["ty"]), f.get("doc", "")) for f in fields])
            classes.append("")
            inner = ", ".join(f"{f['name']!r}: {mapper.to_wire(f['ty'], 'self.' + field_name(f['name']))}" for f in fields)
            plain = f"{{{name!r}: {{{inner}}}}}"
            unpack, arguments = _reader_lines(mapper, fields, "carried", "        ")
            readers += unpack + [f"        return {class_name}({arguments})"]
        else:
            # A tuple variant: its fields are positional, `field_0`, `field_1`, ...
            fields = [{"name": f"field_{index}", "ty": f["ty"]} for index, f in enumerate(body["fields"])]
            classes += _field_lines([(f["name"], mapper.annotation(f["ty"]), "") for f in fields]) + [""]
            inner = ", ".join(mapper.to_wire(f["ty"], "self." + f["name"]) for f in fields)
            plain = f"{{{name!r}: [{inner}]}}"
            unpack, arguments = _reader_lines(mapper, fields, "carried", "        ")
            readers += unpack + [f"        return {class_name}({arguments})"]
        classes += [
            "    def to_wire(self) -> Any:",
            '        """The plain form the client sends: externally tagged, as serde writes it."""',
            f"        return {plain}",
            "",
            "",
        ]
    members = ", ".join(class_name for _, class_name in variant_classes)
    alias = [f"{python_name} = Union[{members}]"]
    alias += docstring(definition.get("doc", ""), "")
    fallback = f"return {other}()" if other is not None else f'raise ValueError(f"not a {python_name}: {{value!r}}")'
    alias += [
        "",
        "",
        f"def {reader}(value: Any) -> {python_name}:",
        f'    """Reads a `{python_name}` from its plain form: ``"Variant"`` or ``{{"Variant": ...}}``."""',
        "    name, carried = variant_of(value)",
        *readers,
        f"    {fallback}",
    ]
    return classes[:-2], alias
