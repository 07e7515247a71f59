"""The embedded server's CPU settings (harness/llm/local_settings.py): the variable that overrides
the threads, refused in one line naming it when wrong; libgomp's own variables left to the user
who sets them; what reaches the server's command and environment. No model is started."""

import pytest

from freshrag.core.errors import UserError
from freshrag.llm.local_server import PREBUILT, SOURCE, LocalServer
from freshrag.llm.local_settings import (
    THREADS_ENV,
    LocalSettings,
    LocalSettingsError,
    local_settings,
    machine_load,
)


@pytest.mark.parametrize("value, message", [
    pytest.param("zero", f"{THREADS_ENV}='zero': give a whole number from 1 to 1024", id="word"),
    pytest.param("1.5", f"{THREADS_ENV}='1.5': give a whole number from 1 to 1024", id="fraction"),
    pytest.param("0", f"{THREADS_ENV}=0: give a whole number from 1 to 1024", id="zero"),
    pytest.param("-2", f"{THREADS_ENV}=-2: give a whole number from 1 to 1024", id="negative"),
    pytest.param("5000", f"{THREADS_ENV}=5000: give a whole number from 1 to 1024", id="huge"),
])
def test_a_bad_thread_count_is_refused_in_one_line_naming_the_variable(value, message):
    with pytest.raises(LocalSettingsError) as refused:
        local_settings({THREADS_ENV: value}, cpus=2)
    assert str(refused.value) == message
    assert isinstance(refused.value, UserError)  # the CLI prints it as one line, no traceback


@pytest.mark.parametrize("env, threads, said", [
    pytest.param({THREADS_ENV: "3"}, 3, "3 threads from FRESHRAG_LOCAL_THREADS", id="threads"),
    pytest.param({THREADS_ENV: " 1 "}, 1, "1 thread from FRESHRAG_LOCAL_THREADS", id="spaces"),
    pytest.param({THREADS_ENV: ""}, 2, "2 threads", id="empty-is-unset"),
    pytest.param({}, 2, "2 threads", id="one-per-core"),
])
def test_the_thread_count_is_the_variables_else_one_per_core(env, threads, said):
    settings = local_settings(env, cpus=2)
    assert settings.threads == threads
    assert settings.describe() == said


IDLE, BUSY = (0.1, 0), (1.2, 1)


@pytest.mark.parametrize("env, load, spin", [
    pytest.param({}, IDLE, None, id="idle-libgomps-spin"),
    pytest.param({}, (0.7, 0), "0", id="loaded-over-the-last-minute"),
    pytest.param({}, (0.0, 1), "0", id="one-process-running-now"),
    pytest.param({}, BUSY, "0", id="busy"),
    pytest.param({"GOMP_SPINCOUNT": "300000"}, BUSY, None, id="the-users-spin-count"),
    pytest.param({"OMP_WAIT_POLICY": "ACTIVE"}, BUSY, None, id="the-users-wait-policy"),
    pytest.param({"OMP_WAIT_POLICY": " "}, BUSY, "0", id="blank-is-unset"),
])
def test_the_server_spins_only_on_an_idle_machine_unless_the_user_set_libgomps_waiting(
        env, load, spin):
    settings = local_settings(env, cpus=2, load=load)
    assert settings.spin_count == spin
    child = settings.child_env({"PATH": "/bin", **env})
    assert child["PATH"] == "/bin"
    assert child.get("GOMP_SPINCOUNT") == (spin or env.get("GOMP_SPINCOUNT"))
    assert child.get("OMP_WAIT_POLICY") == env.get("OMP_WAIT_POLICY")


@pytest.mark.parametrize("text, load", [
    pytest.param("0.52 0.40 0.30 3/120 4242\n", (0.52, 2), id="linux"),
    pytest.param("0.00 0.00 0.00 1/80 7\n", (0.0, 0), id="only-the-reader"),
    pytest.param("garbled\n", (0.0, 0), id="unreadable"),
])
def test_the_load_is_read_from_proc_loadavg(tmp_path, text, load):
    path = tmp_path / "loadavg"
    path.write_text(text)
    assert machine_load(str(path)) == load


def test_no_proc_loadavg_counts_as_idle(tmp_path):
    assert machine_load(str(tmp_path / "missing")) == (0.0, 0)


def test_the_prebuilt_servers_command_carries_the_threads(monkeypatch, tmp_path):
    monkeypatch.setattr("freshrag.llm.local_server.gguf_path", lambda: tmp_path / "m.gguf")
    server = LocalServer(runtime=PREBUILT)
    server.settings = LocalSettings(threads=1, threads_from=THREADS_ENV, spin_count="0")
    command = server.command()
    assert command[command.index("--threads") + 1] == "1"


def test_the_source_built_servers_command_carries_the_threads(monkeypatch, tmp_path):
    monkeypatch.setattr("freshrag.llm.local_server.gguf_path", lambda: tmp_path / "m.gguf")
    server = LocalServer(runtime=SOURCE)
    server.settings = LocalSettings(threads=3, threads_from=THREADS_ENV, spin_count=None)
    command = server.command()
    assert command[command.index("--n_threads") + 1] == "3"
    assert command[command.index("--n_threads_batch") + 1] == "3"


def test_a_bad_variable_stops_the_server_before_anything_starts(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "all")
    server = LocalServer(command=["false"], runtime=PREBUILT)
    with pytest.raises(LocalSettingsError, match=f"^{THREADS_ENV}='all'"):
        server.start()
    assert server.process is None and server.log_path is None


@pytest.mark.parametrize("env, said", [
    pytest.param({THREADS_ENV: "1"}, "local (embedded llama.cpp, 1 thread from "
                                     "FRESHRAG_LOCAL_THREADS)", id="the-variable"),
    pytest.param({}, "local (embedded llama.cpp, 2 threads)", id="one-per-core"),
])
def test_the_roles_table_names_the_servers_threads_and_their_variable(monkeypatch, env, said):
    from freshrag.cli.common import roles_table
    from freshrag.core.config import LLMSettings, RoleConfig

    monkeypatch.delenv(THREADS_ENV, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    table = roles_table(LLMSettings(roles={"answer": RoleConfig()}), ("answer",))
    assert said in table.splitlines()[1]
