"""Fixtures: the Rust `user` example serving on a free port (wirecall and gRPC on one port), and
Python stubs compiled by grpcio-tools from the server's own `.proto` export (`wirecall proto`).

A server that cannot be built or started fails the tests; nothing is skipped.
"""

import importlib
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import grpc
import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cargo(*args: str) -> str:
    done = subprocess.run(["cargo", *args], cwd=REPOSITORY, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"cargo {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


@pytest.fixture(scope="session")
def address() -> Iterator[str]:
    """`cargo run --example user -- --serve 127.0.0.1:PORT`, until the session ends."""
    cargo("build", "--quiet", "--example", "user")
    address = f"127.0.0.1:{free_port()}"
    server = subprocess.Popen(
        [str(REPOSITORY / "target/debug/examples/user"), "--serve", address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        try:
            socket.create_connection(("127.0.0.1", int(address.split(":")[1])), 1).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the example server did not start")
            time.sleep(0.05)
    yield address
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(scope="session")
def channel(address: str) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(address) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        yield channel


@pytest.fixture(scope="session")
def stubs(address: str, tmp_path_factory):
    """`users_pb2` and `users_pb2_grpc`, compiled from `wirecall proto ADDR`."""
    from grpc_tools import protoc

    directory = tmp_path_factory.mktemp("stubs")
    proto = cargo("run", "--quiet", "-p", "wirecall-cli", "--", "proto", address)
    (directory / "users.proto").write_text(proto)
    include = str(Path(protoc.__file__).parent / "_proto")
    status = protoc.main(
        ["protoc", f"-I{directory}", f"-I{include}", f"--python_out={directory}",
         f"--grpc_python_out={directory}", str(directory / "users.proto")]
    )
    assert status == 0, "grpcio-tools could not compile the export"
    sys.path.insert(0, str(directory))
    return importlib.import_module("users_pb2"), importlib.import_module("users_pb2_grpc")
