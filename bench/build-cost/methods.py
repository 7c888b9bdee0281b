#!/usr/bin/env python3
"""What each method of a wirecall service costs in the binary: 1 against 10 methods.

Writes four small crates under target/build-cost/methods (the hello program's shape: one
service, a server and a client in one binary, tokio "full", default features, every method
called once by the client), builds each in release, and prints one markdown table:

- `plain`: every method takes a String and returns a String, as the hello service does;
- `typed`: every method takes a message type of its own and returns another
  (`#[wirecall::message]` structs of two fields each), as a real service's methods do.

For each: the stripped release binary, the lines of LLVM IR of the service's crate (where
the generated code and the runtime's generic code it instantiates are compiled), and what
one added method costs, (10 methods - 1 method) / 9. Run by hand, on a quiet machine:

    python3 bench/build-cost/methods.py
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
WORK = REPO / "target" / "build-cost" / "methods"
TARGET = WORK / "target"
COUNTS = (1, 10)

CARGO_TOML = """[package]
name = "{name}"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
wirecall = {{ path = "{repo}" }}
tokio = {{ version = "1", features = ["full"] }}

[workspace]
"""

MAIN = """use wirecall::Server;
{types}
#[wirecall::service]
pub trait Greeter {{
{methods}
}}

struct English;

impl Greeter for English {{
{handlers}
}}

#[tokio::main]
async fn main() -> Result<(), wirecall::Error> {{
    let server = Server::builder()
        .serve(GreeterServer::new(English))
        .bind("127.0.0.1:0")
        .await?;
    let client = GreeterClient::connect(server.local_addr()).await?;
{calls}
    server.shutdown().await;
    Ok(())
}}
"""


def plain(count: int) -> str:
    return MAIN.format(
        types="",
        methods="\n".join(f"    async fn m{i}(&self, name: String) -> String;" for i in range(count)),
        handlers="\n".join(
            f"    async fn m{i}(&self, name: String) -> String {{\n"
            f'        format!("{i}, {{name}}")\n    }}'
            for i in range(count)
        ),
        calls="\n".join(
            f'    println!("{{}}", client.m{i}("world".to_owned()).await?);' for i in range(count)
        ),
    )


def typed(count: int) -> str:
    types = "".join(
        f"""
#[wirecall::message]
pub struct Ask{i} {{
    pub name: String,
    pub count: u32,
}}

#[wirecall::message]
pub struct Answer{i} {{
    pub text: String,
    pub seen: Vec<u64>,
}}
"""
        for i in range(count)
    )
    return MAIN.format(
        types=types,
        methods="\n".join(f"    async fn m{i}(&self, ask: Ask{i}) -> Answer{i};" for i in range(count)),
        handlers="\n".join(
            f"    async fn m{i}(&self, ask: Ask{i}) -> Answer{i} {{\n"
            f'        let text = format!("{i}, {{}}", ask.name);\n'
            f"        Answer{i} {{ text, seen: vec![u64::from(ask.count)] }}\n    }}"
            for i in range(count)
        ),
        calls="\n".join(
            f'    let ask = Ask{i} {{ name: "world".to_owned(), count: {i} }};\n'
            f'    println!("{{}}", client.m{i}(ask).await?.text);'
            for i in range(count)
        ),
    )


def cargo(crate: Path, *args: str) -> None:
    env = dict(os.environ, CARGO_TARGET_DIR=str(TARGET), CARGO_TERM_COLOR="never")
    done = subprocess.run(
        ["cargo", *args], cwd=crate, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"cargo {' '.join(args)} failed in {crate}:\n{done.stderr[-4000:]}")


def measure(shape: str, count: int) -> tuple[int, int]:
    """Builds the crate of `shape` with `count` methods: (stripped bytes, LLVM IR lines)."""
    name = f"{shape}-{count}"
    crate = WORK / name
    (crate / "src").mkdir(parents=True, exist_ok=True)
    (crate / "Cargo.toml").write_text(CARGO_TOML.format(name=name, repo=REPO))
    source = plain(count) if shape == "plain" else typed(count)
    (crate / "src" / "main.rs").write_text(source)
    # The workspace's own lock: the crates at the versions the tests build with (cargo drops
    # the entries this crate does not use).
    shutil.copy(REPO / "Cargo.lock", crate / "Cargo.lock")
    cargo(crate, "build", "--release")
    stripped = WORK / f"{name}.stripped"
    shutil.copy(TARGET / "release" / name, stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    deps = TARGET / "release" / "deps"
    for old in deps.glob(f"{name.replace('-', '_')}-*.ll"):
        old.unlink()
    cargo(crate, "rustc", "--release", "--", "--emit=llvm-ir")
    ir = next(deps.glob(f"{name.replace('-', '_')}-*.ll"), None)
    if ir is None:
        sys.exit(f"no LLVM IR for {name} in {deps}")
    with ir.open() as lines:
        ir_lines = sum(1 for _ in lines)
    return stripped.stat().st_size, ir_lines


def main() -> None:
    print("| service | methods | release binary, stripped | LLVM IR lines of the service's crate |")
    print("|---|---:|---:|---:|")
    growth = []
    for shape in ("plain", "typed"):
        sizes = {}
        for count in COUNTS:
            size, ir_lines = measure(shape, count)
            sizes[count] = (size, ir_lines)
            print(f"| {shape} | {count} | {size / 1e6:.3f} MB | {ir_lines:,} |", flush=True)
        (small, small_ir), (large, large_ir) = sizes[COUNTS[0]], sizes[COUNTS[1]]
        added = COUNTS[1] - COUNTS[0]
        growth.append(
            f"{shape}: {(large - small) / added / 1e3:.1f} KB and "
            f"{(large_ir - small_ir) / added:,.0f} IR lines per added method"
        )
    print()
    for line in growth:
        print(line)


if __name__ == "__main__":
    main()
