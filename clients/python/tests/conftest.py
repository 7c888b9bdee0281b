"""Fixtures: the Rust `user` example, built once, serving on free ports for the whole session.

A server that cannot be built or started fails the tests that need it; nothing is skipped.
"""

import asyncio
import queue
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT = 60.0
TOKEN = "s3cret-for-tests"

FANLY = {"user_id": 1, "name": "fanly", "age": 18}

# How long `eventually` waits: generous, as it costs nothing when the condition holds sooner.
PATIENCE = 10.0


async def eventually(what: str, condition: Callable[[], bool], within: float = PATIENCE) -> None:
    """Waits until `condition()` holds, checking every 10 ms; fails naming `what` after `within` s.

    A test waits for a condition rather than sleeping and hoping it holds by then.
    """
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not within {within} s")
        await asyncio.sleep(0.01)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ExampleServer:
    """`cargo run --example user -- --serve 127.0.0.1:PORT [flags]`, until stopped."""

    def __init__(self, *flags: str):
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        command = ["cargo", "run", "--quiet", "--example", "user", "--", "--serve", self.address, *flags]
        self.process = subprocess.Popen(
            command,
            cwd=REPOSITORY,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: List[str] = []
        lines: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._collect, args=(lines,), daemon=True).start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                pytest.fail(f"the example server did not start within {STARTUP_TIMEOUT} s: {self.output}")
            # "serving UserService and UserFeed on ADDR (...)": the first line once it listens.
            if line.startswith("serving UserService"):
                return
            if line == "" and self.process.poll() is not None:
                pytest.fail(f"the example server exited with {self.process.returncode}: {self.output}")

    def _collect(self, lines: "queue.Queue[str]") -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            lines.put(line)
        lines.put("")

    def stop(self) -> None:
        if self.process.poll() is None:
            # cargo run execs the example, which shuts down gracefully on SIGTERM.
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="session")
def built_example() -> None:
    """Builds the example once, so that starting each server is quick."""
    build = subprocess.run(
        ["cargo", "build", "--quiet", "--example", "user"],
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if build.returncode != 0:
        pytest.fail(f"cargo build --example user failed:\n{build.stdout}")


@pytest.fixture(scope="session")
def server(built_example: None) -> Iterator[ExampleServer]:
    """A plain server without a token."""
    running = ExampleServer()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def token_server(built_example: None) -> Iterator[ExampleServer]:
    """A plain server that requires `TOKEN`."""
    running = ExampleServer("--token", TOKEN)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def certificate_authority():
    import trustme

    return trustme.CA()


@pytest.fixture(scope="session")
def tls_server(built_example: None, certificate_authority, tmp_path_factory) -> Iterator[ExampleServer]:
    """A TLS server with a `localhost` certificate from `certificate_authority`, and `TOKEN`."""
    directory = tmp_path_factory.mktemp("tls")
    certificate = certificate_authority.issue_cert("localhost")
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    certificate.cert_chain_pems[0].write_to_path(str(cert_file))
    certificate.private_key_pem.write_to_path(str(key_file))
    running = ExampleServer("--tls-cert", str(cert_file), "--tls-key", str(key_file), "--token", TOKEN)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def ca_file(certificate_authority, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    certificate_authority.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture(params=["json", "msgpack"])
def codec(request) -> str:
    return request.param

