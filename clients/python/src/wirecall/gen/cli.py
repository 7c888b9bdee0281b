"""``python -m wirecall gen``: the command line of the stubs generator."""

import argparse
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from ..errors import WirecallError
from . import sources
from .module import generate_module

USAGE_EXAMPLES = """examples:
  python -m wirecall gen 127.0.0.1:7000 -o stubs.py
  python -m wirecall gen 127.0.0.1:7000 --service UserService -o users.py
  python -m wirecall gen 127.0.0.1:7000 --save-schema services.json
  python -m wirecall gen --schema services.json -o stubs.py
  wirecall describe --json 127.0.0.1:7000 UserService > users.json
  python -m wirecall gen --schema users.json -o users.py
"""


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog="python -m wirecall gen",
        description="Writes typed stubs (dataclasses, and a typed asyncio and blocking client "
        "class per service) from a server's reflection or from schema files.",
        epilog=USAGE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("address", nargs="?", help="the server, HOST:PORT (or give --schema)")
    command.add_argument("--schema", action="append", metavar="FILE", default=[],
                         help="a schema file: a ServiceSchema or a list of them, JSON (repeatable)")
    command.add_argument("-o", "--output", metavar="FILE", help="where to write the stubs (default: standard output)")
    command.add_argument("--service", action="append", metavar="NAME", default=[],
                         help="only this service (repeatable; default: all but wirecall.Reflection)")
    command.add_argument("--save-schema", metavar="FILE", help="also save the schemas as a schema file")
    command.add_argument("--token", default=os.environ.get("WIRECALL_TOKEN"),
                         help="the server's token (default: $WIRECALL_TOKEN)")
    command.add_argument("--tls", action="store_true", help="connect with TLS (the system's CAs)")
    command.add_argument("--tls-ca", metavar="FILE", help="a CA file (PEM) to trust; turns TLS on")
    command.add_argument("--server-name", metavar="NAME", help="the name in the server's certificate")
    return command


def main(argv: Optional[Sequence[str]] = None) -> int:
    options = parser().parse_args(argv)
    if bool(options.address) == bool(options.schema):
        parser().error("give a server address or --schema FILE, not both")
    try:
        if options.schema:
            schemas = sources.select(sources.from_files(options.schema), options.service)
            source = "the schema file(s) " + ", ".join(Path(path).name for path in options.schema)
        else:
            schemas = sources.from_server(
                options.address,
                options.service,
                token=options.token,
                tls=options.tls or None,
                tls_ca=options.tls_ca,
                server_name=options.server_name,
            )
            source = f"the reflection of {options.address}"
    except (OSError, ValueError, LookupError, WirecallError) as failure:
        print(f"python -m wirecall gen: {failure}", file=sys.stderr)
        return 1
    if options.save_schema:
        sources.write_schema_file(schemas, options.save_schema)
    text = generate_module(schemas, source)
    if options.output:
        Path(options.output).write_text(text, encoding="utf-8")
    elif not options.save_schema:
        sys.stdout.write(text)
    return 0


