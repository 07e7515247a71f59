"""A run's manifest.json of the wrong shape (harness/core/manifest_shape.py): every command that
reads it refuses it with one line naming the file and the key, never a traceback, and writes
nothing into the run."""

import json
import shutil

import pytest

from freshrag.cli.main import main
from tests.support.runs import run_cli


def _set(key, value):
    return lambda manifest: manifest.__setitem__(key, value)


BROKEN = {
    "judge_probe-empty": (_set("judge_probe", {}), "judge_probe: neither skipped"),
    "judge_probe-list": (_set("judge_probe", [1]), "judge_probe: input should be a JSON object"),
    "probe-field-text": (lambda m: m["judge_probe"]["fields"].__setitem__("truthfulness", "x"),
                         "judge_probe.fields.truthfulness"),
    "capped-true": (_set("capped", True), "capped: input should be a JSON object"),
    "capped-without-spent": (_set("capped", {"max_cost": 1.0}), "capped.spent: field required"),
    "no-config": (lambda m: m.pop("config"), "config: field required"),
    "llm-text": (_set("llm", "x"), "llm: input should be a JSON object"),
    "roles-null": (lambda m: m["llm"].__setitem__("roles", None), "llm.roles"),
    "role-without-model": (lambda m: m["llm"]["roles"]["judge"].pop("model"),
                           "llm.roles.judge.model: field required"),
    "finished_at-number": (_set("finished_at", 5), "finished_at: input should be a valid string"),
    "systems-of-numbers": (_set("systems", [1, 2]), "systems.0"),
    "index-list": (_set("index", [1]), "index: input should be a JSON object"),
}
COMMANDS = ("report", "score", "run", "dry-run")  # run: the resume of the run


def command(name, tmp_path):
    """The command's exit status on the run in `tmp_path`."""
    if name == "report":
        return main(["report", str(tmp_path / "run")])
    if name == "score":
        return main(["score", str(tmp_path / "run"), "--scorers", "judge"])
    return run_cli(tmp_path, *(("--dry-run",) if name == "dry-run" else ()))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished run of the fake server, copied for each case."""
    tmp = tmp_path_factory.mktemp("run")
    from tests.support.fake_openai_server import FakeOpenAIServer
    with FakeOpenAIServer() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("FRESHRAG_BASE_URL", server.base_url)
        assert run_cli(tmp) == 0
    return tmp


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("change, named", BROKEN.values(), ids=BROKEN)
def test_a_manifest_of_the_wrong_shape_is_named_by_every_command(change, named, name,
                                                                  finished_run, tmp_path, fake,
                                                                  capsys):
    shutil.copytree(finished_run, tmp_path, dirs_exist_ok=True)
    path = tmp_path / "run" / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file()}
    capsys.readouterr()
    status = command(name, tmp_path)
    err = capsys.readouterr().err
    assert status == 2, err
    assert f"{path}: {named}" in err and "Traceback" not in err
    assert fake.calls == 0
    after = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file()}
    assert after == before  # nothing rewritten
