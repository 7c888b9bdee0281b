#!/usr/bin/env python3
"""The build-cost cell: what a user pays to adopt each framework, side by side.

Builds the same hello service (one trait or .proto, one method, a server and a client in one
binary, tokio "full") written for wirecall, tonic and tarpc, each a crate of its own in this
folder, one build at a time on this machine, with the dependencies fetched beforehand, and
prints one markdown table with ratios:

- clean debug build and clean release build (wall time, target directory emptied first);
- rebuild after editing the handler, and after adding a method (debug, incremental);
- crates compiled in the clean debug build;
- the release binary, stripped.

Run by hand (not by .ci/run; it takes a few minutes and wants a quiet machine):

    python3 bench/build-cost/run.py [--only wirecall,tonic,tarpc] [--repeat N]

Each build goes to target/build-cost/<crate> under the repository, and every edit is undone
when the crate is done. tonic's crate needs protoc, as tonic's own guide does.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = HERE.parent.parent / "target" / "build-cost"

# What "adding a method" writes into each crate: (file, marker, text that replaces it).
ADDED_METHOD = {
    "wirecall": [
        ("src/main.rs", "// ADDED METHOD", "async fn bye(&self, name: String) -> String;"),
        (
            "src/main.rs",
            "// ADDED HANDLER",
            "async fn bye(&self, name: String) -> String {\n        format!(\"bye, {name}\")\n    }",
        ),
    ],
    "tonic": [
        ("proto/greeter.proto", "// ADDED METHOD", "rpc Bye (HelloRequest) returns (HelloReply);"),
        (
            "src/main.rs",
            "// ADDED HANDLER",
            "async fn bye(&self, request: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {\n"
            "        let message = format!(\"bye, {}\", request.into_inner().name);\n"
            "        Ok(Response::new(HelloReply { message }))\n    }",
        ),
    ],
    "tarpc": [
        ("src/main.rs", "// ADDED METHOD", "async fn bye(name: String) -> String;"),
        (
            "src/main.rs",
            "// ADDED HANDLER",
            "async fn bye(self, _: context::Context, name: String) -> String {\n"
            "        format!(\"bye, {name}\")\n    }",
        ),
    ],
}

# Editing the handler: the greeting's text changes.
EDITED_HANDLER = ("src/main.rs", "\"hello, ", "\"hello again, ")

COLUMNS = [
    ("debug_s", "clean debug build", "{:.1f} s"),
    ("release_s", "clean release build", "{:.1f} s"),
    ("edit_s", "rebuild after editing the handler", "{:.2f} s"),
    ("method_s", "rebuild after adding a method", "{:.2f} s"),
    ("crates", "crates compiled", "{:d}"),
    ("binary_mb", "release binary, stripped", "{:.2f} MB"),
]


def cargo(crate: Path, target: Path, *args: str) -> tuple[float, str]:
    """Runs cargo in `crate`; returns the wall time and what it printed on stderr."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(target), CARGO_TERM_COLOR="never")
    started = time.monotonic()
    done = subprocess.run(
        ["cargo", *args], cwd=crate, env=env, capture_output=True, text=True, check=False
    )
    took = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"cargo {' '.join(args)} failed in {crate}:\n{done.stderr[-4000:]}")
    return took, done.stderr


class Edits:
    """Text replacements in a crate's files, undone on exit."""

    def __init__(self, crate: Path):
        self.crate = crate
        self.saved: dict[Path, str] = {}

    def replace(self, file: str, old: str, new: str) -> None:
        path = self.crate / file
        text = path.read_text()
        if old not in text:
            sys.exit(f"{path} has no {old!r} to replace")
        self.saved.setdefault(path, text)
        path.write_text(text.replace(old, new, 1))

    def __enter__(self) -> "Edits":
        return self

    def __exit__(self, *_: object) -> None:
        for path, text in self.saved.items():
            path.write_text(text)


def measure(name: str) -> dict:
    crate = HERE / f"hello-{name}"
    target = TARGETS / name
    cargo(crate, target, "fetch")
    shutil.rmtree(target, ignore_errors=True)
    debug_s, log = cargo(crate, target, "build")
    crates = sum(1 for line in log.splitlines() if line.strip().startswith("Compiling "))
    shutil.rmtree(target / "release", ignore_errors=True)
    release_s, _ = cargo(crate, target, "build", "--release")
    binary = target / "release" / f"hello-{name}"
    stripped = target / f"hello-{name}.stripped"
    shutil.copy(binary, stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    binary_mb = stripped.stat().st_size / 1e6
    with Edits(crate) as edits:
        edits.replace(*EDITED_HANDLER)
        edit_s, _ = cargo(crate, target, "build")
    # Back to the original, built, so that adding a method starts from the hello crate.
    cargo(crate, target, "build")
    with Edits(crate) as edits:
        for file, marker, text in ADDED_METHOD[name]:
            edits.replace(file, marker, text)
        method_s, _ = cargo(crate, target, "build")
    cargo(crate, target, "build")
    return {
        "debug_s": debug_s,
        "release_s": release_s,
        "edit_s": edit_s,
        "method_s": method_s,
        "crates": crates,
        "binary_mb": binary_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="wirecall,tonic,tarpc")
    parser.add_argument("--repeat", type=int, default=1, help="runs per crate, medians kept")
    args = parser.parse_args()
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    for name in names:
        if name not in ADDED_METHOD:
            sys.exit(f"unknown crate {name!r}; the crates are wirecall, tonic and tarpc")
    runs: dict[str, list[dict]] = {name: [] for name in names}
    # Repeats are the outer loop, so that a burst of machine noise hits different crates.
    for _ in range(max(1, args.repeat)):
        for name in names:
            result = measure(name)
            print(f"{name}: {result}", file=sys.stderr)
            runs[name].append(result)
    results = {
        name: {key: statistics.median(run[key] for run in rows) for key, *_ in COLUMNS}
        for name, rows in runs.items()
    }
    print("| framework | " + " | ".join(title for _, title, _ in COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for name, result in results.items():
        cells = [
            form.format(round(result[key]) if key == "crates" else result[key])
            for key, _, form in COLUMNS
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if "wirecall" in results:
        for peer in (name for name in results if name != "wirecall"):
            ratios = [
                f"{title} {results['wirecall'][key] / max(results[peer][key], 1e-9):.2f}x"
                for key, title, _ in COLUMNS
            ]
            print(f"\nwirecall / {peer}: " + "; ".join(ratios))


if __name__ == "__main__":
    main()
