"""The embedded server's CPU settings (harness/llm/local_settings.py): the variable that overrides
the threads, refused in one line naming it when wrong; libgomp's own variables left to the user
who sets them; what reaches the server's command and environment. No model is started."""

import pytest

from freshrag.core.errors import UserError
from freshrag.llm.local_server import PREBUILT, SOURCE, LocalServer
from freshrag.llm.local_settings import (
    SPIN_COUNT,
    THREADS_ENV,
    LocalSettings,
    LocalSettingsError,
    local_settings,
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


@pytest.mark.parametrize("env, spin", [
    pytest.param({}, SPIN_COUNT, id="ours"),
    pytest.param({"GOMP_SPINCOUNT": "300000"}, None, id="the-users-spin-count"),
    pytest.param({"OMP_WAIT_POLICY": "ACTIVE"}, None, id="the-users-wait-policy"),
    pytest.param({"OMP_WAIT_POLICY": " "}, SPIN_COUNT, id="blank-is-unset"),
])
def test_freshrag_sets_the_spin_count_only_where_the_user_set_no_libgomp_waiting(env, spin):
    settings = local_settings(env, cpus=2)
    assert settings.spin_count == spin
    child = settings.child_env({"PATH": "/bin", **env})
    assert child["PATH"] == "/bin"
    assert child.get("GOMP_SPINCOUNT") == (spin or env.get("GOMP_SPINCOUNT"))
    assert child.get("OMP_WAIT_POLICY") == env.get("OMP_WAIT_POLICY")


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
