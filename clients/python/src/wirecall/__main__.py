"""``python -m wirecall COMMAND``: the package's commands (``gen``: typed stubs)."""

import sys

from .gen.cli import main as gen


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] != "gen":
        print("usage: python -m wirecall gen (HOST:PORT | --schema FILE) [-o stubs.py] [options]", file=sys.stderr)
        print("       python -m wirecall gen --help", file=sys.stderr)
        return 2
    return gen(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
