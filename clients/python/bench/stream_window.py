"""Server-stream items/s of the Python client at several windows, beside the Rust client's.

Run by hand against a server built in release mode, as a user would deploy it:

    cargo build --release --example user -p wirecall-cli
    target/release/examples/user --serve 127.0.0.1:7000 &
    python3 clients/python/bench/stream_window.py 127.0.0.1:7000 --rust-cli target/release/wirecall

Each cell reads `UserFeed.list_users(count=ITEMS)` to its end on one asyncio connection, after
one warm-up stream, and prints the median of `--repeat` runs. The Rust cell is the `wirecall`
CLI's `bench` of the same stream at the Rust client's defaults; the CLI speaks JSON, so compare
it with `--codec json`. This is what the client's
default `stream_window` was chosen from (see the README's "Server streams").
"""

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from wirecall import aio  # noqa: E402  (the checkout's client, not an installed one)


async def python_items_per_second(address: str, codec: str, items: int, window: int, repeat: int) -> float:
    """The median items/s of `repeat` streams of `items` users read with `window`."""
    rates: List[float] = []
    async with await aio.connect(address, codecs=[codec], timeout=None) as client:
        await drain(client, min(items, 1_000), window)
        for _ in range(repeat):
            started = time.perf_counter()
            count = await drain(client, items, window)
            rates.append(count / (time.perf_counter() - started))
    return statistics.median(rates)


async def drain(client: "aio.AsyncClient", items: int, window: int) -> int:
    count = 0
    async for _ in client.stream_with("UserFeed", "list_users", {"count": items}, window=window, timeout=None):
        count += 1
    if count != items:
        raise RuntimeError(f"the stream ended after {count} of {items} items")
    return count


def rust_items_per_second(cli: str, address: str, items: int, repeat: int) -> float:
    """The median items/s the Rust client reads the same stream at, through `wirecall bench`
    (which speaks JSON), after one warm-up run."""
    rates: List[float] = []
    for _ in range(repeat + 1):
        report = subprocess.run(
            [cli, "bench", address, "UserFeed.list_users", f'{{"count":{items}}}', "--calls", "1"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        found = re.search(r"([0-9]+) items/s", report)
        if found is None:
            raise RuntimeError(f"no items/s in the report:\n{report}")
        rates.append(float(found.group(1)))
    return statistics.median(rates[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("address")
    parser.add_argument("--codec", default="msgpack")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--windows", default="8,16,32,64,128,256,512,1024")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rust-cli", help="the `wirecall` binary, to time the Rust client too")
    options = parser.parse_args()

    rust: Optional[float] = None
    if options.rust_cli:
        rust = rust_items_per_second(options.rust_cli, options.address, options.items, options.repeat)
        print(f"Rust client (JSON, its defaults): {rust:,.0f} items/s")
    print(f"| window | Python items/s ({options.codec}) | vs Rust (JSON) |")
    print("|---:|---:|---:|")
    for window in (int(text) for text in options.windows.split(",")):
        rate = asyncio.run(python_items_per_second(options.address, options.codec, options.items, window, options.repeat))
        ratio = f"{rate / rust:.2f}x" if rust else "-"
        print(f"| {window} | {rate:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
