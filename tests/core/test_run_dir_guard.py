"""A run directory holds one run: a resume with other settings, a run into an import directory
(or the reverse) and a second writer are refused before anything is called or written."""

import hashlib
import json
import pickle
import time

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.scoring import judge
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fakes import held

ELSEWHERE = "http://127.0.0.1:9/v1"  # never called: the refusal comes first


def run(tmp_path, systems="baseline", *extra):
    q, a = (tmp_path / "questions.jsonl", tmp_path / "articles.jsonl")
    if not q.exists():
        write_dataset(tmp_path, content=bridges_and_mayor)
    return main(["run", "--questions", str(q), "--articles", str(a), "--out", str(tmp_path / "run"),
                 "--systems", systems, "--concurrency", "2", *extra])


def snapshot(run_dir):
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.name != ".lock"}


# (systems, first options, second options, second environment, the line the refusal must hold)
CHANGED = [
    pytest.param("baseline", ["--seed", "1"], ["--seed", "2"], {}, "seed: was 1, now 2", id="seed"),
    pytest.param("baseline", [], ["--seed", "3"], {}, "seed: was 0, now 3", id="seed-default"),
    pytest.param("baseline", [], ["--context-tokens", "4096"], {},
                 "context_tokens: was 8192, now 4096", id="context-tokens"),
    pytest.param("baseline", [], [], {"FRESHRAG_ANSWER_MODEL": "other-model"},
                 "answer.model: was fake-model, now other-model", id="answer-model"),
    pytest.param("baseline", [], [], {"FRESHRAG_DECISION_MODEL": "cheap-model"},
                 "decision.model: was fake-model, now cheap-model", id="decision-model"),
    pytest.param("baseline", [], [], {"FRESHRAG_JUDGE_BASE_URL": ELSEWHERE},
                 f"judge.base_url: was {{url}}, now {ELSEWHERE}", id="judge-base-url"),
    pytest.param("naive", ["--top-k", "3"], ["--top-k", "2"], {}, "top_k: was 3, now 2", id="top-k"),
    pytest.param("naive", [], ["--chunk-size", "500"], {}, "chunk_size: was 1024, now 500",
                 id="chunk-size"),
    pytest.param("naive", [], ["--chunk-overlap", "10"], {}, "chunk_overlap: was 48, now 10",
                 id="chunk-overlap"),
    pytest.param("naive", [], ["--text-weight", "0.5"], {},
                 "text_weight: was 0.0, now 0.5 (resume with --text-weight 0.0)",
                 id="text-weight"),
    pytest.param("naive", [], [], {"FRESHRAG_EMBEDDINGS_MODEL": "other-embedder"},
                 "embeddings.model: was fake-model, now other-embedder", id="embedding-model"),
    pytest.param("dated-boolean", ["--today", "2030-01-01"], ["--today", "2030-01-02"], {},
                 "today: was 2030-01-01, now 2030-01-02 (resume with --today 2030-01-01)",
                 id="today"),
    pytest.param("dated-boolean", [], ["--knowledge-cutoff", "2023-04-30"], {},
                 "knowledge_cutoff: was 2021-09-30, now 2023-04-30", id="knowledge-cutoff"),
    pytest.param("react", ["--max-steps", "4"], ["--max-steps", "3"], {},
                 "max_steps: was 4, now 3 (resume with --max-steps 4)", id="max-steps"),
    pytest.param("router", [], ["--token-budget", "0"], {},
                 "token_budget: was 32000, now (not set) (resume with --token-budget 32000)",
                 id="token-budget"),
]


def test_a_resume_whose_local_embeddings_run_in_another_precision_is_refused(tmp_path):
    """The local model's precision follows the CPU: a run started on a bf16 machine and resumed
    on an int8 one would retrieve with other vectors. The index names the model that made them."""
    from freshrag.core.rundir import RunDirError, check_same_run

    def manifest(embedding_model):
        return {"config": {"seed": 0}, "systems": ["naive"],
                "llm": {"roles": {"embeddings": {"model": "all-MiniLM-L6-v2", "base_url": "local"}}},
                "index": {"chunk_size": 1024, "embedding_model": embedding_model}}

    check_same_run(tmp_path, manifest("all-MiniLM-L6-v2-int8"), manifest("all-MiniLM-L6-v2-int8"), ())
    with pytest.raises(RunDirError) as refused:
        check_same_run(tmp_path, manifest("all-MiniLM-L6-v2-int8"),
                       manifest("all-MiniLM-L6-v2-bf16"), ())
    assert ("embedding_model: was all-MiniLM-L6-v2-int8, now all-MiniLM-L6-v2-bf16 "
            "(resume with FRESHRAG_LOCAL_EMBEDDINGS_PRECISION=int8)") in str(refused.value)
    with pytest.raises(RunDirError) as refused:
        check_same_run(tmp_path, manifest("all-MiniLM-L6-v2"), manifest("all-MiniLM-L6-v2-bf16"), ())
    assert "(resume with FRESHRAG_LOCAL_EMBEDDINGS_PRECISION=fp32)" in str(refused.value)
    older = manifest("all-MiniLM-L6-v2-int8")
    del older["index"]["embedding_model"]  # a manifest that did not record it: not compared
    check_same_run(tmp_path, older, manifest("all-MiniLM-L6-v2-bf16"), ())


@pytest.mark.parametrize("systems, first, second, env, line", CHANGED)
def test_a_resume_with_other_settings_is_refused_naming_both_values(
        tmp_path, fake, monkeypatch, capsys, systems, first, second, env, line):
    assert run(tmp_path, systems, "--limit", "1", *first) == 0
    before = snapshot(tmp_path / "run")
    fake.reset_counts()
    fake.embedding_calls = 0
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    assert run(tmp_path, systems, *second) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"freshrag: error: {tmp_path / 'run'}: ")
    assert line.format(url=fake.base_url) in err
    assert len([ln for ln in err.splitlines() if ": was " in ln]) == 1  # only what differs
    assert fake.calls == 0 and fake.embedding_calls == 0
    assert snapshot(tmp_path / "run") == before


def test_a_run_that_stopped_before_its_first_row_pins_no_settings(tmp_path, fake_server,
                                                                   capsys):
    # an endpoint that refuses the key: the run stops at its first call, before any row
    fake_server(reply=lambda request: {"error": {"status": 401, "message": "bad key"}})
    assert run(tmp_path, "baseline", "--seed", "1") == 2
    fake_server()  # the endpoint as it should be
    assert (tmp_path / "run" / "manifest.json").exists()
    assert not read_samples(tmp_path / "run" / "samples.jsonl")  # not one row
    capsys.readouterr()
    assert run(tmp_path, "baseline", "--seed", "2") == 0  # other settings: nothing to keep
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["seed"] == 2
    # once a row is written, the settings bind as ever
    assert run(tmp_path, "baseline", "--seed", "3") == 2
    assert "seed: was 2, now 3" in capsys.readouterr().err


def test_a_changed_prompt_is_refused_with_both_hashes(tmp_path, fake, monkeypatch, capsys):
    assert run(tmp_path) == 0
    old = hashlib.sha256(judge.JUDGE_PROMPT.encode()).hexdigest()
    monkeypatch.setattr(judge, "JUDGE_PROMPT", judge.JUDGE_PROMPT + " Be strict.")
    new = hashlib.sha256(judge.JUDGE_PROMPT.encode()).hexdigest()
    fake.reset_counts()
    assert run(tmp_path) == 2
    assert f"prompt.judge: was {old[:12]}, now {new[:12]}" in capsys.readouterr().err
    assert fake.calls == 0


# Settings that do not change an answer: a resume with them changed goes on.
ALLOWED = [
    pytest.param("baseline", ["--limit", "1"], ["--limit", "2"], {}, id="limit"),
    pytest.param("baseline", [], ["--concurrency", "1"], {}, id="concurrency"),
    pytest.param("baseline", [], ["--no-cache"], {}, id="cache-off"),
    pytest.param("baseline", [], [], {"FRESHRAG_API_KEY": "sk-another-key"}, id="api-key"),
    pytest.param("baseline", [], [], {"FRESHRAG_BUILDER_MODEL": "other-builder"}, id="builder-role"),
    pytest.param("baseline", [], ["--today", "2030-01-02"], {}, id="today-unused"),
    pytest.param("naive", [], ["--max-steps", "3", "--token-budget", "0"], {},
                 id="agent-bounds-unused"),
    pytest.param("naive", [], ["--limit", "2"], {}, id="retrieving-system"),
]


@pytest.mark.parametrize("systems, first, second, env", ALLOWED)
def test_a_resume_may_change_what_does_not_change_answers(tmp_path, fake, monkeypatch, systems,
                                                          first, second, env):
    assert run(tmp_path, systems, "--limit", "1", "--today", "2030-01-01", *first) == 0
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert run(tmp_path, systems, *second) == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert all(r["status"] == "ok" for r in rows) and len(rows) >= 2


def test_adding_a_system_to_a_run_is_allowed_and_recorded(tmp_path, fake):
    assert run(tmp_path, "baseline") == 0
    assert run(tmp_path, "oracle,baseline") == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["systems"] == ["baseline", "oracle"]
    assert {r["system"] for r in read_samples(tmp_path / "run" / "samples.jsonl")} == {"baseline", "oracle"}


def test_today_binds_only_once_a_dated_system_ran(tmp_path, fake, capsys):
    # baseline on day 1, the dated system joins on day 2: day 1 was never stated to a model
    assert run(tmp_path, "baseline", "--today", "2030-01-01") == 0
    assert run(tmp_path, "dated-boolean", "--today", "2030-01-02", "--limit", "1") == 0
    # a system that states no date may join later on any day; the recorded date stays
    assert run(tmp_path, "oracle", "--today", "2030-01-03") == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["today"] == "2030-01-02"
    # the dated system again, on another day: its rows would state two dates
    assert run(tmp_path, "dated-boolean", "--today", "2030-01-04") == 2
    assert "today: was 2030-01-02, now 2030-01-04" in capsys.readouterr().err
    assert run(tmp_path, "dated-boolean", "--today", "2030-01-02") == 0


def test_a_manifest_written_before_kinds_is_still_checked(tmp_path, fake, capsys):
    assert run(tmp_path, "baseline", "--seed", "1") == 0
    path = tmp_path / "run" / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["kind"]
    path.write_text(json.dumps(manifest))
    assert run(tmp_path, "baseline", "--seed", "2") == 2
    assert "seed: was 1, now 2" in capsys.readouterr().err


def legacy_pickle(tmp_path):
    path = tmp_path / "naive_A_f.pkl"
    path.write_bytes(pickle.dumps([{"title": "Town 0", "question": "How many bridges?",
                                    "answer": "3", "n_input_tokens": 10, "n_output_tokens": 2,
                                    "truthfulness": 5, "relevance": 5}]))
    return path


def import_into(tmp_path, out):
    return main(["import-legacy", str(legacy_pickle(tmp_path)), "--dataset", "A_f",
                 "--system", "naive", "--out", str(out)])


@pytest.mark.parametrize("strip_kind", [False, True], ids=["manifest", "manifest-without-kind"])
def test_import_into_a_run_directory_is_refused_before_writing(tmp_path, fake, capsys, strip_kind):
    assert run(tmp_path) == 0
    if strip_kind:
        path = tmp_path / "run" / "manifest.json"
        path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items()
                                    if k != "kind"}))
    before = snapshot(tmp_path / "run")
    capsys.readouterr()
    assert import_into(tmp_path, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "holds a run of `freshrag run`" in err and "another --out" in err
    assert snapshot(tmp_path / "run") == before


@pytest.mark.parametrize("strip_kind", [False, True], ids=["manifest", "manifest-without-kind"])
def test_run_into_an_import_directory_is_refused_before_calling(tmp_path, fake, capsys, strip_kind):
    assert import_into(tmp_path, tmp_path / "run") == 0
    if strip_kind:
        path = tmp_path / "run" / "manifest.json"
        path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items()
                                    if k != "kind"}))
    before = snapshot(tmp_path / "run")
    fake.reset_counts()
    capsys.readouterr()
    assert run(tmp_path) == 2
    err = capsys.readouterr().err
    assert "holds runs imported by `freshrag import-legacy`" in err and "another --out" in err
    assert fake.calls == 0 and snapshot(tmp_path / "run") == before


def test_run_and_import_into_a_dataset_directory_are_refused(tmp_path, fake, capsys):
    dataset = tmp_path / "run"
    dataset.mkdir()
    (dataset / "manifest.json").write_text(json.dumps({"created_at": "x", "stages": {}, "settings": {}}))
    before = snapshot(dataset)
    assert run(tmp_path) == 2
    assert import_into(tmp_path, dataset) == 2
    err = capsys.readouterr().err
    assert err.count("holds a dataset built by `freshrag build`") == 2
    assert fake.calls == 0 and snapshot(dataset) == before


@pytest.fixture
def holder(tmp_path):
    """Another process holding the run directory."""
    with held(tmp_path / "run") as process:
        yield process


@pytest.mark.parametrize("command", ["baseline", "naive", "import-legacy"])
def test_a_second_writer_is_refused_naming_the_first_ones_pid(tmp_path, fake, holder, capsys,
                                                              command):
    started = time.monotonic()
    code = (import_into(tmp_path, tmp_path / "run") if command == "import-legacy" else
            run(tmp_path, command))
    assert code == 2 and time.monotonic() - started < 10  # refused at once, not after waiting
    err = capsys.readouterr().err
    assert f"in use by another freshrag process (pid {holder.pid})" in err
    assert fake.calls == 0 and fake.embedding_calls == 0  # not even the index was built
    assert not (tmp_path / "run" / "samples.jsonl").exists()
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_the_lock_is_released_when_a_run_ends(tmp_path, fake):
    assert run(tmp_path) == 0
    assert import_into(tmp_path, tmp_path / "imported") == 0
    from freshrag.core.rundir import locked
    for directory in (tmp_path / "run", tmp_path / "imported"):
        with locked(directory):  # would be refused if the command had kept it
            pass


def test_a_run_from_before_the_lexical_side_counts_as_text_weight_0():
    from freshrag.core.rundir import identity
    old = {"config": {}, "llm": {"roles": {}}, "systems": ["naive"],
           "index": {"chunk_size": 1024, "chunk_overlap": 48, "top_k": 5}}
    now = {**old, "index": {**old["index"], "text_weight": 0.2}}
    assert identity(old, ())["text_weight"] == 0.0 and identity(now, ())["text_weight"] == 0.2


@pytest.mark.integration
def test_a_run_resumed_with_the_local_model_in_another_precision_is_refused_before_indexing(
        tmp_path, fake, monkeypatch, capsys):
    """The real local MiniLM: a run that retrieved with int8 vectors is refused a resume in fp32
    before any index is built or call made, and resumes once the precision is pinned back."""
    monkeypatch.delenv("FRESHRAG_EMBEDDINGS_MODEL")  # embeddings on the local model
    monkeypatch.setenv("FRESHRAG_LOCAL_EMBEDDINGS_PRECISION", "int8")
    assert run(tmp_path, "naive", "--limit", "1") == 0
    before = snapshot(tmp_path / "run")
    fake.reset_counts()
    monkeypatch.setenv("FRESHRAG_LOCAL_EMBEDDINGS_PRECISION", "fp32")
    capsys.readouterr()
    assert run(tmp_path, "naive") == 2
    err = capsys.readouterr().err
    assert ("embedding_model: was all-MiniLM-L6-v2-int8, now all-MiniLM-L6-v2 "
            "(resume with FRESHRAG_LOCAL_EMBEDDINGS_PRECISION=int8)") in err
    assert "indexing" not in err and fake.calls == 0
    assert snapshot(tmp_path / "run") == before
    monkeypatch.setenv("FRESHRAG_LOCAL_EMBEDDINGS_PRECISION", "int8")
    assert run(tmp_path, "naive") == 0
    questions = (tmp_path / "questions.jsonl").read_text().strip().splitlines()
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == len(questions) > 1  # the first row kept, the rest answered


OWN_AGENT = '''
from freshrag import SystemAnswer


class Agent:
    uses_date = True
    uses_steps = True
    uses_endpoint = {endpoint}

    def __init__(self, context):
        self.context = context

    def answer(self, question):
        served = self.context.endpoint is not None
        return SystemAnswer(f"{{self.context.today}} {{self.context.max_steps}} {{served}}")
'''


@pytest.mark.parametrize("endpoint", [True, False])
def test_what_a_systems_file_declares_reaches_its_context_and_binds_a_resume(tmp_path, fake,
                                                                             capsys, endpoint):
    """A system of the user's own declaring uses_date and uses_steps gets the run's date and
    bounds, which then bind a resume as a built-in's do; uses_endpoint gets it the endpoint."""
    code = tmp_path / "agent.py"
    code.write_text(OWN_AGENT.format(endpoint=endpoint))
    spec = f"mine={code}:Agent"
    assert run(tmp_path, spec, "--today", "2030-01-01", "--max-steps", "4", "--no-probe") == 0
    [row] = read_samples(tmp_path / "run" / "samples.jsonl")[:1]
    assert row["answer"] == f"2030-01-01 4 {endpoint}"
    capsys.readouterr()
    assert run(tmp_path, spec, "--today", "2030-01-02", "--max-steps", "3", "--no-probe") == 2
    err = capsys.readouterr().err
    assert "max_steps: was 4, now 3" in err and "today: was 2030-01-01, now 2030-01-02" in err
