"""A real OTLP receiver for the live traces' test: Arize Phoenix (the `arize-phoenix` package, in
the test extra), started as its own server process on free loopback ports, its data in a
temporary directory, its telemetry off, and queried back through its own client
(`phoenix.client.Client`). Started once a session (tests/conftest.py `phoenix`): a start takes
15-40 s on this machine."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

from tests.support.serving import ended

START_S = 180.0  # a loaded two-core machine


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def phoenix_server() -> Iterator[str]:
    """Phoenix serving on 127.0.0.1; its base URL (OTLP/HTTP at /v1/traces, its REST API)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="phoenix-") as work:
        env = {**os.environ, "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
               "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_WORKING_DIR": work,
               "PHOENIX_TELEMETRY_ENABLED": "false"}
        log = open(Path(work) / "server.log", "wb")
        server = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"],
                                  env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait(base, server, Path(work) / "server.log")
            yield base
        finally:
            ended(server)
            log.close()


def _wait(base: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"Phoenix ended ({server.returncode}): "
                               f"{log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"Phoenix not up after {START_S:.0f} s: "
                       f"{log.read_text(errors='replace')[-2000:]}")
