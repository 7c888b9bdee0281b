"""The gRPC door called by Node's @grpc/grpc-js (tests/grpc-interop/node/door.mjs), with the
messages of the server's `.proto` export. `.ci/grpc-check` installs Node and the packages;
without them this test fails rather than skips."""

import os
import subprocess
from pathlib import Path

from conftest import cargo

# Where door.mjs runs with its node_modules beside it: a copy `.ci/grpc-check` installed, or
# this directory after `npm install` in it.
NODE_DIR = Path(os.environ.get("WIRECALL_NODE_DIR", Path(__file__).resolve().parent / "node"))


def test_grpc_js_calls_every_door_feature_it_can(address, tmp_path):
    proto = tmp_path / "users.proto"
    proto.write_text(cargo("run", "--quiet", "-p", "wirecall-cli", "--", "proto", address))
    done = subprocess.run(
        ["node", str(NODE_DIR / "door.mjs"), address, str(proto)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "health: SERVING" in done.stdout, done.stdout
