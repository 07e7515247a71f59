"""`freshrag export --format inspect` and `--format ragchecker` (docs/export.md): the inspect_ai
eval log read back by inspect_ai's own `read_eval_log` (every key written one its types know,
one sample per pair, the steps as messages, the grades and each scorer as scores, tokens per
model equal to the calls'), served by `inspect view` started on a loopback port; RAGChecker's
input in the shape its `RAGResults` reads; unscored and failed pairs written with their status,
bad input refused in one line, never a traceback.

The run is made once for the module on the fake server: `naive` (one search, then the answer)
and `react` scripted to search twice and answer (tests/support/agent_script.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log  # noqa: E402

from freshrag.cli.main import main  # noqa: E402
from freshrag.core.samples import SAMPLES  # noqa: E402
from freshrag.llm.embedded_server import free_port  # noqa: E402
from freshrag.reporting import inspect_log  # noqa: E402
from freshrag.reporting.loading import load_runs  # noqa: E402
from tests.support.agent_runs import agents_run, scripted_endpoint  # noqa: E402
from tests.support.runs import sample as row_by_hand  # noqa: E402
from tests.support.runs import write_run  # noqa: E402
from tests.support.serving import ended  # noqa: E402

SYSTEMS = ("naive", "react")
LOG_NAME = "2026-01-31T12-00-00_freshrag.json"  # a name inspect view lists


@pytest.fixture(autouse=True)
def inspect_home(tmp_path, monkeypatch) -> None:
    """inspect_ai's own data and cache (its trace files, the viewer's state) in the test's
    directory, not the user's home; `inspect view` inherits it."""
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "inspect-home" / name.lower()))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Any:
    with scripted_endpoint("sk-inspect"):
        return agents_run(tmp_path_factory.mktemp("inspect"), SYSTEMS)


def freshrag(*args: Any) -> int:
    return main([str(arg) for arg in args])


def exported(run_dir: Path, out: Path, fmt: str = "inspect", *extra: Any) -> Path:
    assert freshrag("export", run_dir, "--format", fmt, "--out", out, *extra) == 0
    return out


def known_keys(written: Any, read: Any, where: str = "log") -> None:
    """Every key written is a field of inspect_ai's types: found in what they dump back."""
    if isinstance(written, dict):
        assert isinstance(read, dict), where
        for key, value in written.items():
            assert key in read, f"{where}.{key} is no field inspect_ai knows"
            known_keys(value, read[key], f"{where}.{key}")
    elif isinstance(written, list):
        assert isinstance(read, list) and len(read) == len(written), where
        for i, (mine, theirs) in enumerate(zip(written, read)):
            known_keys(mine, theirs, f"{where}[{i}]")


# --- a real run, read by inspect_ai -----------------------------------------------------------

def test_read_eval_log_reads_one_sample_per_pair_with_its_steps(run, tmp_path, capsys):
    out = exported(run, tmp_path / LOG_NAME)
    rows = {(row["system"], row["question_id"]): row for row in load_runs([run])}
    assert f"{out}: {len(rows)} inspect_ai samples in one eval log (2 systems)" in \
        capsys.readouterr().out
    log = read_eval_log(str(out))
    assert log.status == "success" and log.eval.task.startswith("freshrag/")
    assert log.samples is not None and len(log.samples) == len(rows)
    for sample in log.samples:
        system, question_id = str(sample.id).split("/")
        row = rows[(system, question_id)]
        roles = [message.role for message in sample.messages]
        assert sample.input == row["question"] and sample.messages[0].text == row["question"]
        assert sample.messages[-1].role == "assistant"
        assert sample.messages[-1].text == row["answer"] == sample.output.completion
        searches = [step for step in row["steps"] if step["kind"] == "search"]
        calls = [m for m in sample.messages if m.role == "assistant" and m.tool_calls]
        assert [(c.tool_calls[0].function, c.tool_calls[0].arguments) for c in calls] == [
            ("search", {"query": step["query"]}) for step in searches]
        assert roles.count("tool") == len(searches) == (1 if system == "naive" else 2)
        found = json.loads(next(m for m in sample.messages if m.role == "tool").text)
        assert [(c["title"], c["index"]) for c in found] == [
            (c["title"], c["index"]) for c in searches[0]["retrieved"]]
        assert sample.metadata["system"] == system and sample.metadata["status"] == "ok"


def test_the_scores_are_the_judges_grades_and_the_tokens_the_calls(run, tmp_path):
    log = read_eval_log(str(exported(run, tmp_path / LOG_NAME)))
    rows = {(row["system"], row["question_id"]): row for row in load_runs([run])}
    assert log.samples is not None
    for sample in log.samples:
        row = rows[tuple(str(sample.id).split("/"))]  # type: ignore[index]
        assert sample.scores is not None
        assert sample.scores["judge"].value == {"truthfulness": row["grade"]["truthfulness"],
                                                "relevance": row["grade"]["relevance"]}
        by_model: dict[str, list[int]] = {}
        for call in row["calls"]:
            spent = by_model.setdefault(call["model"], [0, 0])
            spent[0] += call["usage"]["input"]
            spent[1] += call["usage"]["output"]
        assert {model: [u.input_tokens, u.output_tokens]
                for model, u in sample.model_usage.items()} == by_model
        assert {role: [u.input_tokens, u.output_tokens] for role, u in sample.role_usage.items()
                } == {role: [u["input"], u["output"]] for role, u in row["usage"].items()}
    assert log.results is not None
    truth = next(s for s in log.results.scores if s.name == "truthfulness")
    assert set(truth.metrics) == set(SYSTEMS) and truth.scored_samples == len(rows)
    total = sum(u.input_tokens for s in log.samples for u in s.model_usage.values())
    assert sum(u.input_tokens for u in log.stats.model_usage.values()) == total


def test_every_key_written_is_one_inspect_ai_knows(run, tmp_path):
    out = exported(run, tmp_path / LOG_NAME)
    written = json.loads(out.read_text(encoding="utf-8"))
    known_keys(written, read_eval_log(str(out)).model_dump(mode="json"))


def test_the_same_run_exports_the_same_bytes(run, tmp_path):
    first = exported(run, tmp_path / "a.json")
    assert first.read_bytes() == exported(run, tmp_path / "b.json").read_bytes()


def test_inspect_view_lists_and_serves_the_log(run, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    out = exported(run, logs / LOG_NAME)
    port = free_port()
    view = subprocess.Popen([sys.executable, "-m", "inspect_ai", "view", "start", "--log-dir",
                             str(logs), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        listing = _get(f"http://127.0.0.1:{port}/api/log-files", view)
        (name,) = [entry["name"] for entry in json.loads(listing)["files"]]
        assert name.endswith(f"/{LOG_NAME}")
        served = json.loads(_get(f"http://127.0.0.1:{port}/api/logs/"
                                 f"{urllib.parse.quote(name, safe='')}", view))
        assert len(served["samples"]) == len(json.loads(out.read_text())["samples"])
    finally:
        ended(view)


def _get(url: str, view: subprocess.Popen[bytes], timeout_s: float = 90) -> bytes:
    """The body of `url` once the viewer answers it."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return bytes(response.read())
        except OSError:
            assert view.poll() is None, view.stderr.read() if view.stderr else b""
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


# --- rows made by hand ------------------------------------------------------------------------

def test_unscored_failed_and_scored_by_scorers_are_written_with_their_status(tmp_path, capsys):
    scored = {**row_by_hand("q1", "naive"), "grade": {
        "truthfulness": 5, "relevance": 4, "unscored_reason": None, "raw": [],
        "reason": "states the span"}}
    failed = {**row_by_hand("q3", "naive", status="failed"), "error_detail": "Traceback: boom"}
    run_dir = write_run(tmp_path / "hand", [scored, row_by_hand("q2", "naive", truth=None),
                                            failed])
    log = read_eval_log(str(exported(run_dir, tmp_path / LOG_NAME)))
    assert "3 inspect_ai samples" in capsys.readouterr().out
    assert log.samples is not None
    by_id = {sample.id: sample for sample in log.samples}
    assert set(by_id) == {"q1", "q2", "q3"}
    judge = {key: by_id[key].scores["judge"] for key in ("q1", "q2")}  # type: ignore[index]
    assert (judge["q1"].value, judge["q1"].explanation, judge["q1"].reason) == (
        {"truthfulness": 5, "relevance": 4}, "states the span", None)
    assert (judge["q2"].value, judge["q2"].reason) == (
        {"truthfulness": None, "relevance": None}, "no tool call")
    assert by_id["q3"].error is not None and not by_id["q3"].scores
    assert (by_id["q3"].error.message, by_id["q3"].error.traceback) == (
        "HTTP 500 after 6 attempts", "Traceback: boom")
    assert by_id["q3"].metadata["status"] == "failed" and by_id["q3"].output.completion == ""
    assert log.results is not None and log.results.completed_samples == 2
    truth = next(s for s in log.results.scores if s.name == "truthfulness")
    assert (truth.scored_samples, truth.unscored_samples, truth.metrics["mean"].value) == (
        1, 2, 5.0)


def test_each_scorers_metrics_are_a_score_and_one_without_says_why():
    row = {**row_by_hand("q1", "naive"), "run": "r", "scores": {
        "claims": {"status": "scored", "metrics": {"claims_recall": 0.5}, "reason": None},
        "context_relevance": {"status": "not_applicable", "metrics": {},
                              "reason": "nothing was retrieved"}}}
    scores = inspect_log.scores(row)  # type: ignore[arg-type]
    assert scores["claims"] == {"value": {"claims_recall": 0.5}}
    assert scores["context_relevance"] == {"value": {}, "explanation": "nothing was retrieved",
                                           "reason": "not_applicable"}


def test_an_imported_answers_tokens_count_under_its_model_beside_the_judges_calls():
    judge = {"role": "judge", "model": "judge-1", "usage": {"input": 900, "output": 90}}
    row = {**row_by_hand("q1", "theirs", answer=None), "models": {"answer": "their-model"},
           "calls": [judge], "usage": {"answer": {"input": 50, "output": 5},
                                       "judge": {"input": 900, "output": 90}}}
    assert inspect_log.model_usage(row) == {  # type: ignore[arg-type]
        "judge-1": {"input_tokens": 900, "output_tokens": 90, "total_tokens": 990},
        "their-model": {"input_tokens": 50, "output_tokens": 5, "total_tokens": 55}}
    row["details"] = {"unknown": ["input_tokens", "output_tokens"]}  # reported none
    assert list(inspect_log.model_usage(row)) == ["judge-1"]  # type: ignore[arg-type]
    assert list(inspect_log.role_usage(row)) == ["judge"]  # type: ignore[arg-type]


def test_times_are_utc_and_one_that_is_no_time_is_left_out(tmp_path):
    rows = [{**row_by_hand("q1", "naive"), "finished_at": "2026-11-29T10:00:00+02:00"},
            {**row_by_hand("q2", "naive"), "finished_at": "2026-11-29T09:30:00Z"},
            {**row_by_hand("q3", "naive"), "finished_at": "yesterday"}]
    log = read_eval_log(str(exported(write_run(tmp_path / "r", rows), tmp_path / LOG_NAME)))
    assert (log.stats.started_at, log.stats.completed_at) == (
        "2026-11-29T08:00:00+00:00", "2026-11-29T09:30:00+00:00")
    assert log.samples is not None
    assert [s.completed_at for s in log.samples] == [
        "2026-11-29T08:00:00+00:00", "2026-11-29T09:30:00+00:00", None]


def test_pairs_of_several_runs_keep_apart_by_their_run(tmp_path):
    first = write_run(tmp_path / "one", [row_by_hand("q1", "naive")])
    second = write_run(tmp_path / "two", [row_by_hand("q1", "naive")])
    out = tmp_path / LOG_NAME
    assert freshrag("export", first, second, "--format", "inspect", "--out", out) == 0
    log = read_eval_log(str(out))
    assert log.samples is not None
    assert sorted(str(s.id) for s in log.samples) == [f"{first}/q1", f"{second}/q1"]


def test_a_log_inspect_view_would_not_list_is_named_in_a_note(tmp_path, capsys):
    run_dir = write_run(tmp_path / "r", [row_by_hand("q1", "naive")])
    exported(run_dir, tmp_path / "log.json")
    assert "note: inspect view lists a .json log only when its name starts with a time" in \
        capsys.readouterr().out
    assert read_eval_log(str(tmp_path / "log.json")).samples is not None


@pytest.mark.parametrize("case, words", [
    pytest.param("missing", "no samples.jsonl; is this a run directory?", id="run-dir-missing"),
    pytest.param("torn", "samples.jsonl:2: not valid JSON", id="row-not-json"),
])
def test_bad_input_is_refused_in_one_line(tmp_path, capsys, case, words):
    run_dir = write_run(tmp_path / "r", [row_by_hand("q1", "naive"), row_by_hand("q2", "naive")])
    if case == "torn":
        lines = (run_dir / SAMPLES).read_text().splitlines()
        (run_dir / SAMPLES).write_text("\n".join([lines[0], "{not json", lines[1]]) + "\n")
    given = tmp_path / "nowhere" if case == "missing" else run_dir
    assert freshrag("export", given, "--format", "inspect", "--out", tmp_path / LOG_NAME) == 2
    err = capsys.readouterr().err
    assert err.startswith("freshrag: error: ") and words in err and len(err.splitlines()) == 1
    assert not (tmp_path / LOG_NAME).exists()


def test_a_row_freshrag_cannot_read_is_skipped_with_a_warning(tmp_path, capsys):
    run_dir = write_run(tmp_path / "r", [row_by_hand("q1", "naive"),
                                         {"question_id": "q2", "system": "naive"}])
    log = read_eval_log(str(exported(run_dir, tmp_path / LOG_NAME)))
    assert log.samples is not None and [s.id for s in log.samples] == ["q1"]
    assert "samples.jsonl:2: skipped, a row this freshrag cannot read" in capsys.readouterr().err


def test_out_dash_writes_the_log_alone_to_standard_output(tmp_path, capsys):
    run_dir = write_run(tmp_path / "r", [row_by_hand("q1", "naive")])
    exported(run_dir, tmp_path / LOG_NAME)
    capsys.readouterr()
    assert freshrag("export", run_dir, "--format", "inspect", "--out", "-") == 0
    said = capsys.readouterr()
    assert said.out == (tmp_path / LOG_NAME).read_text(encoding="utf-8")
    assert said.err.startswith("standard output: 1 inspect_ai sample in one eval log")


# --- RAGChecker -------------------------------------------------------------------------------

def test_the_ragchecker_input_is_one_result_per_answered_pair(tmp_path, capsys):
    answered = {**row_by_hand("q1", "naive"), "reference": "It is 42."}
    answered["details"] = {"decision": None, "retrieved": [
        {"title": "Gold q1", "index": 3, "score": 0.9, "text": "The answer is 42."}]}
    run_dir = write_run(tmp_path / "r", [answered, row_by_hand("q2", "naive"),
                                         row_by_hand("q3", "naive", status="failed")])
    out = exported(run_dir, tmp_path / "rc.json", "ragchecker")
    said = capsys.readouterr().out
    assert "2 RAGChecker results (1 system; 1 failed pair left out" in said
    assert "note: 1 of 2 questions have no reference answer" in said
    assert json.loads(out.read_text(encoding="utf-8")) == {"results": [
        {"query_id": "q1", "query": "What is q1?", "gt_answer": "It is 42.",
         "response": "an answer",
         "retrieved_context": [{"doc_id": "Gold q1#3", "text": "The answer is 42."}]},
        {"query_id": "q2", "query": "What is q2?", "gt_answer": "", "response": "an answer",
         "retrieved_context": []}]}


def test_ragchecker_input_of_several_systems_is_refused_naming_them(tmp_path, capsys):
    run_dir = write_run(tmp_path / "r", [row_by_hand("q1", "naive"), row_by_hand("q1", "react")])
    assert freshrag("export", run_dir, "--format", "ragchecker", "--out", tmp_path / "x") == 2
    err = capsys.readouterr().err
    assert "the answers are of naive, react: give --systems NAME" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "x").exists()
    exported(run_dir, tmp_path / "x", "ragchecker", "--systems", "react")


def test_ragchecker_query_ids_keep_epochs_apart(tmp_path):
    rows = [{**row_by_hand("q1", "naive"), "epoch": epoch} for epoch in (1, 2)]
    out = exported(write_run(tmp_path / "r", rows), tmp_path / "rc.json", "ragchecker",
                   "--every-epoch")
    assert [r["query_id"] for r in json.loads(out.read_text())["results"]] == ["1/q1", "2/q1"]

