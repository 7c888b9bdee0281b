"""One Python module of typed stubs from a list of service schemas (reflection's
`ServiceSchema`, JSON form).

The output depends on the schemas only, never on their order or on when it is made: services
and types are sorted by name, methods, fields and variants keep their declaration order (which
the wire depends on). A type name that two services define differently gets the service's name
in front (``UserServiceUserModel``); one they define alike is generated once and shared.
"""

import json
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .clients import ServiceWriter
from .messages import enum_source, one_of_source, struct_source
from .names import NameRegistry, camel, snake
from .types import NamedType, TypeMapper, variant

IMPORTS = '''from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass
from typing import Any, AsyncIterable, Dict, Iterable, List, Optional, Set, Tuple, Union

from wirecall import ApplicationError, Reply
from wirecall.typed import (
    AsyncService,
    BlockingService,
    TypedApplicationError,
    TypedAsyncStream,
    TypedStream,
    bool_key,
    bytes_from_wire,
    duration_from_wire,
    duration_to_wire,
    fields_of,
    timestamp_from_wire,
    timestamp_to_wire,
    variant_of,
    wire_any_items,
    wire_items,
)'''


def _service_prefix(service: str) -> str:
    return camel(service.rsplit(".", 1)[-1])


def _name_types(
    schemas: Sequence[Mapping[str, Any]], registry: NameRegistry
) -> Tuple[Dict[str, Dict[str, NamedType]], List[Tuple[NamedType, Mapping[str, Any], str]]]:
    """Python names for every type: per service, its names' `NamedType`; and each distinct
    definition once, with the service whose mapper reads it."""
    forms: Dict[str, Dict[str, List[str]]] = {}
    for schema in schemas:
        for definition in schema.get("types") or []:
            form = json.dumps(definition["kind"], sort_keys=True)
            forms.setdefault(definition["name"], {}).setdefault(form, []).append(schema["name"])
    by_service: Dict[str, Dict[str, NamedType]] = {schema["name"]: {} for schema in schemas}
    definitions: List[Tuple[NamedType, Mapping[str, Any], str]] = []
    for schema in schemas:
        for definition in sorted(schema.get("types") or [], key=lambda d: d["name"]):
            name = definition["name"]
            form = json.dumps(definition["kind"], sort_keys=True)
            owners = forms[name][form]
            if owners[0] != schema["name"]:
                # Defined alike by an earlier service: shared.
                continue
            shared = len(forms[name]) == 1
            candidates = [name] if shared else [_service_prefix(schema["name"]) + name]
            python_name = registry.claim(*candidates)
            kind = variant(definition["kind"])[0]
            reader = (
                registry.claim(f"{snake(python_name)}_from_wire")
                if kind == "OneOf"
                else f"{python_name}.from_wire"
            )
            named = NamedType(python_name, kind, reader)
            for owner in owners:
                by_service[owner][name] = named
            definitions.append((named, definition, schema["name"]))
    return by_service, definitions


def generate_module(schemas: Sequence[Mapping[str, Any]], source: str) -> str:
    """The stubs module's text for `schemas`; `source` says in the header where they came
    from (a server's address, schema files)."""
    schemas = sorted(schemas, key=lambda schema: schema["name"])
    registry = NameRegistry()
    by_service, definitions = _name_types(schemas, registry)
    mappers = {name: TypeMapper(named) for name, named in by_service.items()}

    enums: List[List[str]] = []
    classes: List[Tuple[str, List[str]]] = []
    unions: List[List[str]] = []
    for named, definition, owner in definitions:
        mapper = mappers[owner]
        kind, body = variant(definition["kind"])
        if kind == "Struct":
            classes.append((named.python_name, struct_source(named.python_name, definition, body["fields"], mapper)))
        elif kind == "Enum":
            enums.append(enum_source(named.python_name, definition, body["values"]))
        else:
            variant_classes = [
                (
                    schema_variant,
                    registry.claim(
                        named.python_name + camel(schema_variant["name"]),
                        f"{named.python_name}_{schema_variant['name']}",
                    ),
                )
                for schema_variant in body["variants"]
            ]
            variant_lines, alias_lines = one_of_source(named.python_name, named.reader, definition, variant_classes, mapper)
            classes.append((named.python_name, variant_lines))
            unions.append(alias_lines)

    writers = [ServiceWriter(schema, mappers[schema["name"]], registry) for schema in schemas]
    services = ", ".join(schema["name"] for schema in schemas) or "(none)"
    blocks: List[List[str]] = [
        [
            f"# Typed stubs for the wirecall services {services}.",
            "# Generated by `python -m wirecall gen`: do not edit; generate again when the services change.",
            f"# Source: {source}",
            "",
            IMPORTS,
        ]
    ]
    blocks += enums
    blocks += [lines for _, lines in sorted(classes, key=lambda item: item[0])]
    blocks += unions
    for writer in writers:
        errors = writer.error_classes()
        if errors:
            blocks.append(errors[:-2])
        blocks.append(writer.client_class(asynchronous=True))
        blocks.append(writer.client_class(asynchronous=False))
    return "\n\n\n".join("\n".join(block) for block in blocks) + "\n"
