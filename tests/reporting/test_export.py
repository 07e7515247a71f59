"""`freshrag export` (docs/export.md): a run's answers as Ragas multi-turn samples and as flat
JSON Lines for pandas, each checked against the rows it came from; the Ragas export read back by
freshrag's answers-file importer as the same answers and steps (and by the real `ragas` package
in tests/integration/test_ragas_export.py, in an environment of its own); the refusals (a
missing run, a link or a run directory at --out, an unknown format or system), and a write
that fails leaving the old file whole.

The runs are made once for the module on the fake server: `naive` (one search, then the answer)
and `react` scripted to search twice and answer (tests/support/agent_script.py); town 0's
question has a reference answer."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import SAMPLES, read_samples
from freshrag.reporting import export
from freshrag.reporting.loading import load_runs
from tests.support.agent_script import ANSWER, searches_then_answers
from tests.support.datasets import write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import use_endpoint
from tests.support.runs import sample as row_by_hand
from tests.support.runs import write_run

HERE = Path(__file__).parent
RAGAS_WRITTEN = HERE.parent / "systems" / "external" / "ragas_multi_turn.jsonl"  # by ragas 0.4.3
REFERENCE = "Town 0 has 3 bridges."
SYSTEMS = ("naive", "react")


class Runs:
    """The module's dataset and run directory, and the fake server that answered them."""

    def __init__(self, root: Path, server: FakeOpenAIServer):
        self.root, self.server = root, server
        self.data, self.run = root / "data", root / "run"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Any:
    root = tmp_path_factory.mktemp("export")
    with FakeOpenAIServer(reply=searches_then_answers(2)) as server, \
            pytest.MonkeyPatch.context() as patch:
        use_endpoint(patch, server.base_url, "sk-export")
        made = Runs(root, server)
        write_dataset(made.data, 3, fields=lambda i: {"reference": REFERENCE} if i == 0 else {})
        assert freshrag("run", "--dataset", made.data, "--systems", ",".join(SYSTEMS), "--out",
                        made.run, "--no-probe", "--concurrency", "1", "--max-steps", "5") == 0
        yield made, patch


def freshrag(*args: Any) -> int:
    return main([str(arg) for arg in args])


def exported(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def rows_of(run_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(row["system"], row["question_id"]): dict(row) for row in load_runs([run_dir])}


def by_kind(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [message for message in messages if message["type"] == kind]


# --- Ragas ------------------------------------------------------------------------------------

def test_the_ragas_export_is_each_answers_conversation_with_its_searches(runs, tmp_path, capsys):
    made, _ = runs
    out = tmp_path / "ragas.jsonl"
    assert freshrag("export", made.run, "--format", "ragas", "--out", out) == 0
    assert "6 Ragas multi-turn samples (2 systems)" in capsys.readouterr().out
    rows = rows_of(made.run)
    samples = exported(out)
    assert len(samples) == len(rows) == 6
    for sample in samples:
        human, *rest = sample["user_input"]
        meta = human["metadata"]
        row = rows[meta["system"], meta["question_id"]]
        assert (human["type"], human["content"]) == ("human", row["question"])
        assert meta == {"run": str(made.run), "dataset": row["dataset"], "system": row["system"],
                        "question_id": row["question_id"], "epoch": 1,
                        "gold_titles": [row["gold_title"]],
                        "grade": {key: row["grade"][key] for key in
                                  ("truthfulness", "relevance", "unscored_reason")}}
        searches = [step for step in row["steps"] if step["kind"] == "search"]
        assert len(searches) == {"naive": 1, "react": 2}[row["system"]]
        calls = [call for message in by_kind(rest, "ai") for call in message.get("tool_calls", [])]
        assert calls == [{"name": "search", "args": {"query": step["query"]}} for step in searches]
        results = [json.loads(message["content"]) for message in by_kind(rest, "tool")]
        assert [[chunk["title"] for chunk in found] for found in results] == \
            [[chunk["title"] for chunk in step["retrieved"]] for step in searches]
        assert rest[-1] == {"content": row["answer"], "type": "ai"}
        assert sample.get("reference") == (REFERENCE if row["question_id"] == "q00001" else None)
        assert "reference_tool_calls" not in sample


def test_the_ragas_export_gives_the_text_of_the_chunks_the_answer_saw(runs, tmp_path):
    made, _ = runs
    out = tmp_path / "ragas.jsonl"
    assert freshrag("export", made.run, "--format", "ragas", "--systems", "naive",
                    "--out", out) == 0
    rows = rows_of(made.run)
    for sample in exported(out):
        row = rows["naive", sample["user_input"][0]["metadata"]["question_id"]]
        [tool] = by_kind(sample["user_input"], "tool")
        saw = {(c["title"], c["index"]): c["text"] for c in row["details"]["retrieved"]}
        assert saw and all(isinstance(text, str) for text in saw.values())
        for chunk in json.loads(tool["content"]):
            assert chunk.get("text") == saw.get((chunk["title"], chunk["index"]))
            assert isinstance(chunk["score"], float)


def test_the_ragas_export_is_written_as_ragas_writes_it(runs, tmp_path):
    """Each message's keys in the order, and each line in the spelling, of the file ragas 0.4.3
    wrote (EvaluationDataset.to_jsonl: pydantic's model_dump without None, json.dumps with
    ensure_ascii=False); a message's `metadata` sits where Ragas' Message declares it, after
    `content`."""
    made, _ = runs
    out = tmp_path / "ragas.jsonl"
    assert freshrag("export", made.run, "--format", "ragas", "--out", out) == 0
    theirs = exported(RAGAS_WRITTEN)
    shapes = {(m["type"], "tool_calls" in m): list(m) for s in theirs for m in s["user_input"]}
    assert set(shapes) == {("human", False), ("ai", True), ("tool", False), ("ai", False)}
    for line in out.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        assert line == json.dumps(sample, ensure_ascii=False)
        assert list(sample)[0] == "user_input" and set(sample) <= set(theirs[0])
        for message in sample["user_input"]:
            keys = [key for key in message if key != "metadata"]
            assert keys == shapes[message["type"], "tool_calls" in message], message
            assert list(message)[:2] == (["content", "metadata"] if "metadata" in message
                                         else ["content", "type"])
        for call in (c for m in sample["user_input"] for c in m.get("tool_calls", [])):
            assert list(call) == list(theirs[0]["user_input"][1]["tool_calls"][0])


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_ragas_export_imports_back_as_the_same_answers_and_steps(runs, tmp_path, system):
    made, patch = runs
    out = tmp_path / f"{system}.jsonl"
    assert freshrag("export", made.run, "--format", "ragas", "--systems", system,
                    "--out", out) == 0
    again = tmp_path / "again"
    assert freshrag("run", "--dataset", made.data, "--systems", f"theirs={out}", "--out", again,
                    "--no-probe", "--concurrency", "1") == 0
    ours = {row["question_id"]: row for row in read_samples(made.run / SAMPLES)
            if row["system"] == system}
    theirs = {row["question_id"]: row for row in read_samples(again / SAMPLES)}
    assert set(theirs) == set(ours) and len(ours) == 3
    for qid, row in ours.items():
        back = theirs[qid]
        assert back["answer"] == row["answer"]
        assert [(s["kind"], s["query"]) for s in back["steps"]] == \
            [(s["kind"], s["query"]) for s in row["steps"]]
        assert [[c["title"] for c in s["retrieved"]] for s in back["steps"]] == \
            [[c["title"] for c in s["retrieved"]] for s in row["steps"]]


def trajectory_row(**fields: Any) -> dict[str, Any]:
    """A row of every step kind, made by hand: a decision, a search whose second chunk the
    answer saw (its text in details.retrieved), the same search again, a read, a reasoning step,
    a step with no text, an earlier answer and the answer."""
    chunks = [{"title": "Other", "index": 4, "score": 0.5}, {"title": "Gold", "index": 1,
                                                            "score": 0.75}]
    search = {"kind": "search", "query": "span of the bridge", "retrieved": chunks}
    row = {**row_by_hand("q1", "agent", retrieved=True), "run": "results/r",
           "details": {"decision": "retrieve", "retrieved": [{**chunks[1], "text": "420 m."}]},
           "steps": [{"kind": "decide", "text": "retrieve"}, search,
                     {**search, "repeated": True}, {"kind": "read", "title": "Gold"},
                     {"kind": "reason", "text": "The span is given."},
                     {"kind": "reason", "text": None},
                     {"kind": "answer", "text": "first"}, {"kind": "answer", "text": "420 m"}],
           "answer": "420 m"}
    return {**row, **fields}


def test_each_step_kind_becomes_its_messages():
    found = json.dumps([{"title": "Other", "index": 4, "score": 0.5},
                        {"title": "Gold", "index": 1, "score": 0.75, "text": "420 m."}])
    search = [{"content": "", "type": "ai",
               "tool_calls": [{"name": "search", "args": {"query": "span of the bridge"}}]},
              {"content": found, "type": "tool"}]
    messages = export.ragas_sample(trajectory_row())["user_input"]
    assert messages[1:] == [
        {"content": "decide: retrieve", "type": "ai"}, *search, *search,
        {"content": "", "type": "ai", "tool_calls": [{"name": "read", "args": {"title": "Gold"}}]},
        {"content": '[{"title": "Gold"}]', "type": "tool"},
        {"content": "The span is given.", "type": "ai"}, {"content": "first", "type": "ai"},
        {"content": "420 m", "type": "ai"}]


def test_a_row_without_steps_is_the_question_and_the_answer():
    row = {**row_by_hand("q1", "service"), "run": "results/r"}
    assert "steps" not in row
    sample = export.ragas_sample(row)
    assert [(m["type"], m["content"]) for m in sample["user_input"]] == [
        ("human", "What is q1?"), ("ai", "an answer")]
    assert "reference" not in sample


# --- JSON Lines for pandas --------------------------------------------------------------------

def test_the_jsonl_export_flattens_every_row(runs, tmp_path):
    made, _ = runs
    out = tmp_path / "flat.jsonl"
    assert freshrag("export", made.run, "--format", "jsonl", "--out", out) == 0
    rows = rows_of(made.run)
    records = exported(out)
    assert len(records) == len(rows) == 6
    roles = ["answer", "judge"]
    for record in records:
        row = rows[record["system"], record["question_id"]]
        searches = [step for step in row["steps"] if step["kind"] == "search"]
        assert record["run"] == str(made.run) and record["question"] == row["question"]
        assert record["gold_titles"] == [row["gold_title"]] and record["epoch"] == 1
        assert record["answer"] == row["answer"] and record["status"] == "ok"
        assert (record["truthfulness"], record["relevance"], record["unscored_reason"]) == (
            row["grade"]["truthfulness"], row["grade"]["relevance"], None)
        for role in roles:
            for side in ("input", "output"):
                assert record[f"tokens_{role}_{side}"] == row["usage"][role][side] > 0
        assert record["tokens_input"] == row["usage"]["answer"]["input"]
        assert record["searches"] == len(searches) == record["retrievals"]
        assert record["repeated_searches"] == 0 and record["stopped"] is None
        assert record["latency_s"] == row["latency_s"]
        assert record["answer_latency_s"] == row["answer_latency_s"]
        assert record["steps"] == row["steps"]
        assert record["reference"] == (REFERENCE if row["question_id"] == "q00001" else None)
    react = [r for r in records if r["system"] == "react"]
    assert all(r["answer"] == ANSWER and r["searches"] == 2 for r in react)


def written_run(tmp_path: Path) -> Path:
    """A run made by hand: an answer, an unscored one, a failed pair, an agent's answer that
    searched the same query twice and stopped at its bound, and an imported answer whose tokens
    its system did not report."""
    agent = trajectory_row(stopped="max_steps")
    imported = {**row_by_hand("q3", "theirs", judge="judge-1", answer=None),
                "details": {"decision": None, "unknown": ["input_tokens", "output_tokens"]},
                "steps": []}
    return write_run(tmp_path / "hand", [
        row_by_hand("q1", "naive", retrieved=True), row_by_hand("q2", "naive", truth=None),
        row_by_hand("q3", "naive", status="failed"), agent, imported])


def test_the_jsonl_export_keeps_what_is_unknown_unknown(tmp_path):
    run = written_run(tmp_path)
    out = tmp_path / "flat.jsonl"
    assert freshrag("export", run, "--format", "jsonl", "--out", out) == 0
    records = {(r["system"], r["question_id"]): r for r in exported(out)}
    assert len(records) == 5
    unscored, failed = records["naive", "q2"], records["naive", "q3"]
    assert (unscored["truthfulness"], unscored["unscored_reason"]) == (None, "no tool call")
    assert (failed["status"], failed["answer"]) == ("failed", None)
    assert failed["error"] == "HTTP 500 after 6 attempts" and failed["tokens_answer_input"] == 100
    agent = records["agent", "q1"]
    assert (agent["searches"], agent["repeated_searches"], agent["stopped"]) == (2, 1, "max_steps")
    assert agent["decision"] == "retrieve" and agent["retrieved_titles"] == ["Gold"]
    theirs = records["theirs", "q3"]
    assert (theirs["tokens_input"], theirs["tokens_output"], theirs["searches"]) == (None,) * 3
    assert theirs["tokens_judge_input"] == 900  # the judge's own tokens are known
    assert records["naive", "q1"]["searches"] is None  # a row written before steps existed


def test_the_jsonl_export_is_a_table(tmp_path):
    """What pandas.read_json(lines=True) needs of it (pandas is not installed here: the same
    check by hand): every record the same columns in the same order, each cell a scalar but the
    lists (steps, gold titles, retrieved titles), and the whole a CSV table. With pandas, the
    frame itself."""
    run = written_run(tmp_path)
    out = tmp_path / "flat.jsonl"
    assert freshrag("export", run, "--format", "jsonl", "--out", out) == 0
    records = exported(out)
    columns = list(records[0])
    assert all(list(record) == columns for record in records)
    lists = {"steps", "gold_titles", "retrieved_titles"}
    assert {"tokens_answer_input", "tokens_judge_output", "truthfulness", "searches"} < set(columns)
    for record in records:
        assert all(isinstance(value, (str, int, float, bool, type(None)))
                   for column, value in record.items() if column not in lists), record
    table = io.StringIO()
    writer = csv.DictWriter(table, columns)
    writer.writeheader()
    writer.writerows(records)
    assert len(list(csv.DictReader(io.StringIO(table.getvalue())))) == 5
    try:
        import pandas as pd
    except ImportError:
        return
    frame = pd.read_json(out, lines=True)
    assert list(frame.columns) == columns and len(frame) == 5
    assert frame.groupby("system")["tokens_answer_input"].sum()["naive"] == 300


def test_the_ragas_export_leaves_out_failed_pairs(tmp_path, capsys):
    run = written_run(tmp_path)
    out = tmp_path / "ragas.jsonl"
    assert freshrag("export", run, "--format", "ragas", "--out", out) == 0
    assert "1 failed pair left out" in capsys.readouterr().out
    ids = [(s["user_input"][0]["metadata"]["system"], s["user_input"][0]["metadata"]
            ["question_id"]) for s in exported(out)]
    assert ids == [("naive", "q1"), ("naive", "q2"), ("agent", "q1"), ("theirs", "q3")]


def test_out_dash_writes_the_records_alone_to_standard_output(tmp_path, capsys):
    run = written_run(tmp_path)
    out = tmp_path / "flat.jsonl"
    assert freshrag("export", run, "--format", "jsonl", "--out", out) == 0
    capsys.readouterr()
    assert freshrag("export", run, "--format", "jsonl", "--out", "-") == 0
    said = capsys.readouterr()
    assert said.out == out.read_text(encoding="utf-8")  # the file's records, nothing else
    assert said.err.startswith(f"standard output: {len(exported(out))} flat records (")
    assert not (tmp_path / "-").exists()


def test_a_reader_that_stops_early_ends_the_export_quietly(tmp_path):
    import subprocess
    import sys

    run = write_run(tmp_path / "many", [row_by_hand(f"q{i}", "naive") for i in range(3000)])
    export_ = subprocess.Popen([sys.executable, "-m", "freshrag", "export", str(run),
                                "--format", "jsonl", "--out", "-"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert export_.stdout is not None and export_.stdout.readline().startswith(b"{")
    export_.stdout.close()  # as `| head -1` does
    _, err = export_.communicate(timeout=120)
    assert export_.returncode == 141, err.decode()
    assert b"Traceback" not in err and b"Exception ignored" not in err


def test_several_runs_export_into_one_file_and_systems_pick(tmp_path):
    first = write_run(tmp_path / "a", [row_by_hand("q1", "naive"), row_by_hand("q1", "baseline")])
    second = write_run(tmp_path / "b", [row_by_hand("q1", "naive"), row_by_hand("q2", "naive")])
    out = tmp_path / "flat.jsonl"
    assert freshrag("export", first, second, "--format", "jsonl", "--systems", "naive",
                    "--out", out) == 0
    assert [(r["run"], r["question_id"]) for r in exported(out)] == [
        (str(first), "q1"), (str(second), "q1"), (str(second), "q2")]


# --- refusals ---------------------------------------------------------------------------------

def refused(capsys, *args: Any) -> str:
    with pytest.raises(SystemExit) as exit_:
        freshrag(*args)
    assert exit_.value.code == 2
    return capsys.readouterr().err


def test_an_unknown_format_is_refused(tmp_path, capsys):
    run = write_run(tmp_path / "run", [row_by_hand("q1", "naive")])
    err = refused(capsys, "export", run, "--format", "csv", "--out", tmp_path / "x.csv")
    assert "argument --format: invalid choice: 'csv' (choose from 'ragas', 'jsonl', 'otel', 'inspect', 'ragchecker')" in err
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("case, words", [
    pytest.param("missing-run", "no samples.jsonl; is this a run directory?", id="missing-run"),
    pytest.param("inside-run", "is inside the run directory", id="out-inside-a-run"),
    pytest.param("in-its-subdirectory", "is inside the run directory", id="out-below-a-run"),
    pytest.param("directory", "not a regular file but a directory", id="out-a-directory"),
    pytest.param("unknown-system", "--systems: no answers of hyde in the run directories; "
                 "their systems: naive", id="unknown-system"),
    pytest.param("nothing", "nothing to export: no answered pairs", id="nothing-answered"),
])
def test_what_cannot_be_exported_is_refused_in_one_line(tmp_path, capsys, case, words):
    run = write_run(tmp_path / "run", [row_by_hand("q1", "naive", status="failed")
                                       if case == "nothing" else row_by_hand("q1", "naive")])
    before = (run / SAMPLES).read_bytes()
    out = {"inside-run": run / "export.jsonl", "in-its-subdirectory": run / "sub" / "x.jsonl",
           "directory": tmp_path}.get(case, tmp_path / "export.jsonl")
    (run / "sub").mkdir()
    args = ["export", tmp_path / "nowhere" if case == "missing-run" else run, "--format",
            "ragas", "--out", out]
    if case == "unknown-system":
        args += ["--systems", "naive,hyde"]
    assert freshrag(*args) == 2
    err = capsys.readouterr().err
    assert err.startswith("freshrag: error: ") and words in err and len(err.splitlines()) == 1
    assert (run / SAMPLES).read_bytes() == before
    assert sorted(p.name for p in run.iterdir()) == [SAMPLES, "sub"]
    assert not (tmp_path / "export.jsonl").exists()


@pytest.mark.parametrize("fmt", export.FORMATS)
def test_nothing_is_written_through_a_link_at_out(tmp_path, capsys, target, fmt):
    run = write_run(tmp_path / "run", [row_by_hand("q1", "naive")])
    link = tmp_path / "export.jsonl"
    link.symlink_to(target)
    before = target.read_bytes()
    assert freshrag("export", run, "--format", fmt, "--out", link) == 2
    assert "is a symbolic link, and freshrag writes no file through a link" in \
        capsys.readouterr().err
    assert target.read_bytes() == before and link.is_symlink()


def test_a_write_that_fails_leaves_the_old_export_whole(tmp_path, monkeypatch, capsys):
    run = write_run(tmp_path / "run", [row_by_hand("q1", "naive"), row_by_hand("q2", "naive")])
    out = tmp_path / "export.jsonl"
    out.write_text("the old export\n", encoding="utf-8")
    made = []

    def failing(row):
        if made:
            raise OSError(28, "No space left on device")
        made.append(row)
        return {"user_input": []}

    monkeypatch.setattr(export, "flat_record", lambda row, roles: failing(row))
    assert freshrag("export", run, "--format", "jsonl", "--out", out) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "the old export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.jsonl", "run"]
