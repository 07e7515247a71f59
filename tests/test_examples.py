"""The worked examples of docs/examples/ (docs/own-system.md): a LangChain pipeline as a
plugged-in system, a small RAG service started here and put under test over HTTP, and an answers
file in Ragas' columns, each beside naive RAG in one run and one report, on the fake server (the
same on the embedded model: tests/integration/test_own_systems_llama.py); and a user's scorer
(docs/scoring.md#your-own-scorer) in a run, a score pass and the report."""

from __future__ import annotations

import hashlib
import json
import os

from freshrag.cli.main import main
from freshrag.core.dataset import example_dir
from freshrag.core.samples import read_samples
from freshrag.scoring.store import read_scores
from tests.support.examples import EXAMPLES, check_run, example_systems, rag_service


def test_the_examples_run_beside_naive_in_one_report(tmp_path, fake_server, capsys):
    server = fake_server()
    env = {**os.environ, "FRESHRAG_BASE_URL": server.base_url, "FRESHRAG_MODEL": "fake-model",
           "FRESHRAG_API_KEY": "sk-example"}
    with rag_service(example_dir() / "articles.jsonl", env) as url:
        assert main(["run", "--dataset", str(example_dir()), "--systems", example_systems(url),
                     "--limit", "3", "--no-probe", "--out", str(tmp_path / "run"),
                     "--index-dir", str(tmp_path / "index")]) == 0
    by_system = check_run(tmp_path / "run", 3)
    theirs = by_system["theirs"]
    assert all(r["answer"].endswith(".") and r["details"]["context"] for r in theirs)
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run"), "--format", "json"]) == 0
    summary = {row["system"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    assert sorted(summary) == ["lc", "naive", "svc", "theirs"]
    assert summary["svc"]["input_tokens"] > 0 and summary["theirs"]["input_tokens"] is None


def test_the_example_scorer_scores_a_run_and_the_report_shows_it(tmp_path, fake_server, capsys):
    """docs/examples/length_scorer.py (docs/scoring.md#your-own-scorer) through `freshrag run
    --scorers`, then `freshrag score`, which finds every score finished; the report's table of
    scorers shows its metrics; changed code is refused."""
    server = fake_server()
    run, spec = tmp_path / "run", f"length={EXAMPLES / 'length_scorer.py'}:AnswerLength"
    assert main(["run", "--dataset", str(example_dir()), "--systems", "baseline", "--limit", "3",
                 "--no-probe", "--out", str(run), "--scorers", f"judge,{spec}"]) == 0
    rows = {row["question_id"]: row for row in read_samples(run / "samples.jsonl")}
    scores = read_scores(run)
    assert len(scores) == 3 and {score["scorer"] for score in scores} == {"length"}
    for score in scores:
        words = len(rows[score["question_id"]]["answer"].split())
        assert score["metrics"] == {"answer_words": words, "within_limit": float(words <= 60)}
        assert score["calls"] == [] and score["source"]["sha256"] == hashlib.sha256(
            (EXAMPLES / "length_scorer.py").read_bytes()).hexdigest()
    calls = server.calls
    capsys.readouterr()
    assert main(["score", str(run), "--scorers", spec]) == 0
    assert server.calls == calls and "0 scores asked now, 3 finished before" in \
        capsys.readouterr().out
    assert main(["report", str(run)]) == 0
    table = capsys.readouterr().out
    assert "| example | baseline | length | answer_words | 3 | 3 | 0 | 0 |" in table
    changed = tmp_path / "length_scorer.py"
    changed.write_text((EXAMPLES / "length_scorer.py").read_text().replace("= 60", "= 40"))
    assert main(["score", str(run), "--scorers", f"length={changed}:AnswerLength"]) == 2
    assert "length was scored by" in capsys.readouterr().err


def test_every_workflow_runs_from_python_as_the_notebook_example_does(tmp_path, fake, capsys):
    """docs/examples/services.py: freshrag.build, evaluate, score and report, one after the
    other, on a dump of the released articles and the fake server."""
    import importlib.util

    from tests import WIKIRAG
    from tests.support.wikidump import article_pages, write_dump

    dump = write_dump(tmp_path / "wiki.xml.bz2", article_pages(WIKIRAG / "articles.jsonl", 40))
    spec = importlib.util.spec_from_file_location("services", EXAMPLES / "services.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    results = example.workflows(dump, tmp_path)
    assert results["funnel"]["questions"] > 0
    run = results["run"]
    assert run.failed == 0 and len(run.answers) == 6 and (run.out / "summary.json").exists()
    scored = results["score"]
    assert scored.capped is None and scored.counts["scored_now"] == 6 * 2  # 2 repeats an answer
    assert "baseline" in results["report"].printed and "oracle" in results["report"].printed
    assert (run.out / "analysis.json").exists()
    capsys.readouterr()
    assert main(["report", str(run.out)]) == 0  # the command prints what the service returned
    assert capsys.readouterr().out == results["report"].printed
