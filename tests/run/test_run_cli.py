"""The `freshrag run` / `report` commands end to end against the fake OpenAI-compatible server."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from tests import ROOT
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import SECRET, is_call_of
from tests.support.runs import run_cli


def test_run_writes_every_pair_with_usage_grade_and_manifest(tmp_path, fake, capsys):
    assert run_cli(tmp_path) == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert sorted((r["question_id"], r["system"]) for r in rows) == sorted(
        (f"q{i:05d}", s) for i in range(1, 4) for s in ("baseline", "oracle"))
    for row in rows:
        assert row["status"] == "ok"
        sent = json.loads(row["grade"]["raw"][0])
        assert (row["grade"]["truthfulness"], row["grade"]["relevance"]) == (sent["truthfulness"], sent["relevance"])
        assert row["usage"]["answer"]["input"] > 0 and row["usage"]["judge"]["input"] > 0
        assert [c["role"] for c in row["calls"]] == ["answer", "judge"]
    oracle = next(r for r in rows if r["system"] == "oracle" and r["gold_title"] == "Town 1")
    baseline = next(r for r in rows if r["system"] == "baseline" and r["gold_title"] == "Town 1")
    assert "Town 1 has 4 bridges" in oracle["calls"][0]["messages"][0]["content"]
    assert "bridges" not in baseline["calls"][0]["messages"][0]["content"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert set(manifest["dataset"]["sha256"]) == {"questions", "articles"}
    assert manifest["llm"]["roles"]["judge"]["base_url"] == fake.base_url
    assert manifest["finished_at"] and manifest["prompts_sha256"]["judge"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {r["system"]: r["n"] for r in summary["rows"]} == {"baseline": 3, "oracle": 3}
    assert "| baseline |" in capsys.readouterr().out
    for path in (tmp_path / "run").iterdir():
        assert SECRET not in path.read_text(), path


def test_rerun_makes_no_calls_even_without_the_cache(tmp_path, fake):
    assert run_cli(tmp_path) == 0
    fake.reset_counts()
    assert run_cli(tmp_path) == 0
    assert run_cli(tmp_path, "--no-cache") == 0
    assert fake.calls == 0
    assert len((tmp_path / "run" / "samples.jsonl").read_text().splitlines()) == 6


def test_cache_answers_a_new_run_directory_without_calls(tmp_path, fake):
    assert run_cli(tmp_path) == 0
    fake.reset_counts()
    q, a = tmp_path / "questions.jsonl", tmp_path / "articles.jsonl"
    assert main(["run", "--questions", str(q), "--articles", str(a), "--out", str(tmp_path / "run2"),
                 "--systems", "baseline,oracle"]) == 0
    assert fake.calls == 0
    rows = read_samples(tmp_path / "run2" / "samples.jsonl")
    assert len(rows) == 6 and all(c["cache_hit"] for r in rows for c in r["calls"])


def test_failed_pairs_are_recorded_then_retried_on_resume(tmp_path, monkeypatch):
    broken = {"on": True}

    def reply(request):
        if request.get("tools"):
            return None  # the judge's forced call: the default grade
        prompt = json.dumps(request["messages"])
        if broken["on"] and "Town 2" in prompt:
            raise RuntimeError("model crashed")  # the fake answers 500
        # An answer that differs per prompt, so baseline's and oracle's judge calls differ too
        # and neither can be answered from the other's cache entry.
        return {"content": f"answer {len(prompt)}"}

    (tmp_path / "freshrag.toml").write_text("max_attempts = 2\n")
    with FakeOpenAIServer(reply=lambda req: reply(req) or _default(req)) as server:
        monkeypatch.setenv("FRESHRAG_BASE_URL", server.base_url)
        assert run_cli(tmp_path, "--config", str(tmp_path / "freshrag.toml")) == 1
        rows = read_samples(tmp_path / "run" / "samples.jsonl")
        failed = [r for r in rows if r["status"] == "failed"]
        assert len(failed) == 2 and all(r["gold_title"] == "Town 2" for r in failed)
        assert all("HTTP 500" in r["error"] and server.base_url in r["error"] for r in failed)
        assert all(r["grade"] is None for r in failed)
        summary = json.loads((tmp_path / "run" / "summary.json").read_text())["rows"]
        assert sum(r["unscored"] for r in summary) == 2 and sum(r["n"] for r in summary) == 6
        broken["on"] = False
        server.reset_counts()
        assert run_cli(tmp_path, "--config", str(tmp_path / "freshrag.toml")) == 0
        assert server.calls == 4  # answer + judge for each of the two failed pairs, nothing else
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert all(r["status"] == "ok" for r in rows) and len(rows) == 6


def _default(request):
    from tests.support.fake_openai_server import default_reply
    return default_reply(request)


def test_unscored_answers_are_counted_not_scored(tmp_path, monkeypatch, capsys):
    def reply(request):
        if request.get("tools"):
            return {"tool_call": {"name": "submit_grade", "arguments": '{"truthfulness": 9}'}}
        return {"content": "I do not know."}

    with FakeOpenAIServer(reply=reply) as server:
        monkeypatch.setenv("FRESHRAG_BASE_URL", server.base_url)
        assert run_cli(tmp_path) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())["rows"]
    assert all(r["scored"] == 0 and r["unscored"] == 3 and r["truthfulness"] is None for r in summary)
    assert "truthfulness out of range 1..5: 9" in capsys.readouterr().out


@pytest.mark.parametrize("line, message", [
    pytest.param('{"title": "Town 0"}', "questions.jsonl:4: field 'question' is missing", id="missing"),
    pytest.param("{oops", "questions.jsonl:4: not valid JSON", id="json"),
    pytest.param('{"title": "Atlantis", "question": "?"}', "questions.jsonl:4: title 'Atlantis' has no article",
                 id="no-article"),
])
def test_bad_dataset_stops_before_any_call(tmp_path, fake, capsys, line, message):
    q, _ = write_dataset(tmp_path, content=bridges_and_mayor)
    q.write_text(q.read_text() + line + "\n")
    assert run_cli(tmp_path) == 2
    assert message in capsys.readouterr().err
    assert fake.calls == 0


def test_unknown_system_lists_the_valid_ones(tmp_path, fake, capsys):
    q, a = write_dataset(tmp_path, content=bridges_and_mayor)
    assert main(["run", "--questions", str(q), "--articles", str(a), "--systems", "baseline,magic"]) == 2
    err = capsys.readouterr().err
    assert "magic" in err and "baseline, oracle" in err and fake.calls == 0


def test_different_dataset_into_the_same_run_directory_is_refused(tmp_path, fake, capsys):
    assert run_cli(tmp_path) == 0
    q = tmp_path / "questions.jsonl"
    q.write_text(q.read_text().replace("How many", "How many stone"))
    assert run_cli(tmp_path) == 2
    assert "different dataset" in capsys.readouterr().err


def test_the_same_dataset_files_under_another_name_into_the_same_run_directory_are_refused(
        tmp_path, fake, capsys):
    first, second = tmp_path / "example", tmp_path / "copy"
    write_dataset(first, content=bridges_and_mayor)
    shutil.copytree(first, second)
    out = str(tmp_path / "run")
    assert main(["run", "--dataset", str(first), "--systems", "baseline", "--out", out]) == 0
    asked = fake.calls
    assert main(["run", "--dataset", str(second), "--systems", "baseline,oracle",
                 "--out", out]) == 2
    err = capsys.readouterr().err
    assert "the same dataset files named 'example'" in err and "not 'copy'" in err
    assert fake.calls == asked and "Traceback" not in err  # nothing written under two names
    assert {row["dataset"] for row in read_samples(tmp_path / "run" / "samples.jsonl")} == {"example"}


def test_report_writes_summary_and_figures(tmp_path, fake, capsys):
    assert run_cli(tmp_path) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run"), "--format", "csv", "--out", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("dataset,system,n,scored,unscored,truthfulness")
    names = sorted(p.name for p in (tmp_path / "rep").iterdir())
    assert "summary.json" in names and "hist-comparison.png" in names and "tokens-by-role.png" in names
    assert sum(n.startswith("hist-") for n in names) == 3  # baseline, oracle, comparison
    assert all((tmp_path / "rep" / n).stat().st_size > 1000 for n in names if n.endswith(".png"))


def test_report_on_a_directory_without_samples_says_so(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "no samples.jsonl" in capsys.readouterr().err


def test_sigkill_mid_run_then_resume_redoes_nothing_finished(tmp_path):
    q, a = write_dataset(tmp_path, n=12, content=bridges_and_mayor)
    with FakeOpenAIServer(delay=0.15) as server:
        env = {**os.environ, "FRESHRAG_BASE_URL": server.base_url, "FRESHRAG_API_KEY": SECRET}
        command = [sys.executable, "-m", "freshrag", "run", "--questions", str(q), "--articles", str(a),
                   "--out", str(tmp_path / "run"), "--systems", "baseline,oracle", "--concurrency", "3"]
        process = subprocess.Popen(command, env=env, cwd=ROOT, stderr=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL)
        samples = tmp_path / "run" / "samples.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not samples.exists() or
                                               len(samples.read_text().splitlines()) < 8):
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        finished = read_samples(samples)
        assert 8 <= len(finished) < 24
        server.reset_counts()
        resumed = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        assert resumed.returncode == 0, resumed.stderr
        after = server.requests
    redone = [r for r in after for row in finished if is_call_of(r, row)]
    assert redone == []
    assert server.calls <= 2 * (24 - len(finished))
    rows = read_samples(samples)
    assert len(rows) == 24 and all(r["status"] == "ok" for r in rows)
    assert len(samples.read_text().splitlines()) == 24  # no pair written twice


@pytest.mark.parametrize("option", [["--limit", "0"], ["--concurrency", "-2"], ["--limit", "many"]])
def test_numeric_options_must_be_positive(tmp_path, fake, capsys, option):
    with pytest.raises(SystemExit) as exit_:
        run_cli(tmp_path, *option)
    assert exit_.value.code == 2 and option[0] in capsys.readouterr().err and fake.calls == 0


def test_a_row_torn_by_a_kill_is_dropped_and_its_pair_run_again(tmp_path, fake):
    assert run_cli(tmp_path) == 0
    samples = tmp_path / "run" / "samples.jsonl"
    lines = samples.read_text().splitlines(keepends=True)
    torn = json.loads(lines[-1])
    samples.write_text("".join(lines[:-1]) + lines[-1][:40])  # killed half-way through a write
    fake.reset_counts()
    assert run_cli(tmp_path) == 0
    rows = read_samples(samples)
    assert len(rows) == 6 and len(samples.read_text().splitlines()) == 6
    redone = next(r for r in rows if (r["question_id"], r["system"]) == (torn["question_id"], torn["system"]))
    assert redone["status"] == "ok" and fake.calls == 0  # its calls come from the cache


def test_unreachable_endpoint_stops_the_run_naming_the_url(tmp_path, monkeypatch, capsys):
    from freshrag.llm.local_server import free_port
    url = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("FRESHRAG_BASE_URL", url)
    monkeypatch.setenv("FRESHRAG_API_KEY", SECRET)
    (tmp_path / "fast.toml").write_text("max_attempts = 2\n")
    assert run_cli(tmp_path, "--config", str(tmp_path / "fast.toml")) == 2
    err = capsys.readouterr().err
    assert url in err and "after 2 attempts" in err and SECRET not in err
    assert read_samples(tmp_path / "run" / "samples.jsonl") == []  # nothing recorded as failed


def test_the_runs_own_summary_says_how_much_the_model_knows_without_retrieval(tmp_path, fake,
                                                                              capsys):
    assert run_cli(tmp_path) == 0
    rows = [r for r in read_samples(tmp_path / "run" / "samples.jsonl")
            if r["system"] == "baseline"]
    known = sum(r["grade"]["truthfulness"] >= 4 for r in rows)
    [line] = [text for text in capsys.readouterr().out.splitlines()
              if text.startswith("Known without retrieval")]
    assert f"answers {known} of {len(rows)} graded questions" in line
    assert line in (tmp_path / "run" / "summary.md").read_text()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [entry["known"] for entry in summary["known"]] == [known]
