"""Where service schemas come from: a running server's reflection, or schema files.

A schema file is JSON: one `ServiceSchema` object, as ``wirecall describe --json HOST:PORT
SERVICE`` prints it, or a list of them, as the gateway's ``GET /services.json`` serves them
(or as this package writes them: see the README's "Typed stubs").
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..errors import ApplicationError
from ..replies import Reply
from ..schema import REFLECTION_SERVICE, schema_from_reply
from ..sync import connect


def select(schemas: Sequence[Dict[str, Any]], services: Optional[Sequence[str]]) -> List[Dict[str, Any]]:
    """The schemas of `services` (an unknown name raises `LookupError`), or every one but
    the reflection service's own when none is named."""
    if not services:
        return [schema for schema in schemas if schema["name"] != REFLECTION_SERVICE]
    by_name = {schema["name"]: schema for schema in schemas}
    missing = [name for name in services if name not in by_name]
    if missing:
        raise LookupError(f"no schema for {', '.join(missing)}; there are: {', '.join(sorted(by_name)) or 'none'}")
    return [by_name[name] for name in services]


def from_files(paths: Sequence[str]) -> List[Dict[str, Any]]:
    """The schemas in the files `paths` (each an object or a list of objects)."""
    schemas: List[Dict[str, Any]] = []
    for path in paths:
        loaded = json.loads(Path(path).read_text(encoding="utf-8"))
        for schema in loaded if isinstance(loaded, list) else [loaded]:
            if not isinstance(schema, dict) or "name" not in schema or "methods" not in schema:
                raise ValueError(f"{path}: not a ServiceSchema (an object with `name` and `methods`), or a list of them")
            schemas.append(schema)
    return schemas


def from_server(address: str, services: Optional[Sequence[str]], **connect_options: Any) -> List[Dict[str, Any]]:
    """The schemas of `services` (every service but reflection when none is named), asked of
    the server at `address`. The JSON codec is asked for, so that the schemas arrive in the
    very form `describe --json` prints."""
    with connect(address, codecs=["json"], **connect_options) as client:
        names = list(services) if services else [
            summary["name"] for summary in client.list_services() if summary["name"] != REFLECTION_SERVICE
        ]
        schemas = []
        for name in names:
            try:
                reply = client.call_with(REFLECTION_SERVICE, "describe", {"service": name}, reply=Reply.RESULT)
            except ApplicationError:
                known = [summary["name"] for summary in client.list_services()]
                raise LookupError(f"the server serves no service {name!r}; it serves: {', '.join(known)}") from None
            schemas.append(schema_from_reply(reply, client.codec))
    return schemas


def write_schema_file(schemas: Sequence[Dict[str, Any]], path: str) -> None:
    """Saves `schemas` as a schema file that `--schema` reads back."""
    text = json.dumps(sorted(schemas, key=lambda schema: schema["name"]), indent=2, sort_keys=True)
    Path(path).write_text(text + "\n", encoding="utf-8")
