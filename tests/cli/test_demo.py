"""`freshrag demo` end to end against the fake OpenAI-compatible server (every role, embeddings
included): the example corpus goes through the builder as a dump, then every system, the judge
and the HTML report. The real models' timing is measured by hand
(docs/measurements.md#the-embedded-model)."""

import json
import re
from datetime import date

import pytest

from freshrag.builders.cutoffs import created_after
from freshrag.builders.sources.dump import DumpSource
from freshrag.cli.commands.demo import DEMO_CUTOFF, DEMO_QUESTIONS, DEMO_TODAY
from freshrag.cli.main import main
from freshrag.core.dataset import example_dir
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from freshrag.systems import SYSTEMS
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import use_endpoint


def test_the_demo_runs_the_whole_workflow(tmp_path, monkeypatch, capsys):
    examples = list(read_jsonl(example_dir() / "articles.jsonl"))
    after = [r["title"] for r in examples
             if created_after(r["created"], date.fromisoformat(DEMO_CUTOFF))]
    with FakeOpenAIServer() as server:
        use_endpoint(monkeypatch, server.base_url, "sk-demo-not-written")
        monkeypatch.chdir(tmp_path)
        assert main(["demo", "--out", str(tmp_path / "demo")]) == 0
    out = tmp_path / "demo"
    pages = list(DumpSource(out / "example-wiki.xml").pages(set()))
    # every older article, and as many created after the cutoff as the run asks questions
    older = sorted(r["title"] for r in examples if r["title"] not in after)
    assert sorted(p.title for p in pages if p.title not in after) == older
    assert len([p for p in pages if p.title in after]) == DEMO_QUESTIONS
    funnel = json.loads((out / "example" / "manifest.json").read_text())["funnel"]
    assert funnel["n_r"] == len(pages) and funnel["n_d"] == DEMO_QUESTIONS
    # the dataset holds exactly the questions the run asked
    written = [q["id"] for q in read_jsonl(out / "example" / "questions.jsonl")]
    samples = read_samples(out / "run" / "samples.jsonl")
    assert len(written) == DEMO_QUESTIONS and sorted({s["question_id"] for s in samples}) == sorted(written)
    assert sorted({s["system"] for s in samples}) == sorted(SYSTEMS)
    assert len(samples) == DEMO_QUESTIONS * len(SYSTEMS) and all(s["status"] == "ok" for s in samples)
    assert {s["gold_title"] for s in samples} <= set(after)
    # the demo's bounds (DEMO_RUN): an agent's answer takes at most 3 calls, a retrieval 3 chunks
    manifest = json.loads((out / "run" / "manifest.json").read_text())
    assert manifest["config"]["max_steps"] == 3 and manifest["index"]["top_k"] == 3
    for row in samples:
        answering = [c for c in row["calls"] if c["role"] in ("answer", "decision")]
        assert len(answering) <= 3 + (row["system"] == "router")  # the router's decision, then
        assert all(len(step["retrieved"]) <= 3 for step in row["steps"] if step["kind"] == "search")
    assert any(len(step["retrieved"]) == 3 for row in samples for step in row["steps"]
               if step["kind"] == "search")
    # a fixed date, so that a demo resumed on another day is the same run
    dated = [s for s in samples if s["system"] == "dated-boolean"]
    assert dated and all(f"Today's date is {DEMO_TODAY}." in s["calls"][0]["messages"][0]["content"]
               for s in dated)
    html = (out / "report.html").read_text()
    assert "sk-demo-not-written" not in html and all(name in html for name in SYSTEMS)
    said = capsys.readouterr().out
    # the paired comparisons over the demo's few questions give no test, and say why
    assert re.search(rf"n = {DEMO_QUESTIONS}, below 10", said) and "< 0.001" not in said
    assert f"n = {DEMO_QUESTIONS}, below 10" in html and "&lt; 0.001" not in html
    assert str(out / "report.html") in said
    # the build's funnel as lines to read, not JSON
    assert "A_r, the random sample" in said and '"n_r"' not in said
    # the fake's judge gives every answer the same grade: the closing lines say so
    assert any(line.startswith("WARNING: the judge's scores are not informative: probe "
                               "discrimination truthfulness 0.50") for line in said.splitlines())
    # then each command's time and the model calls made in it, which are the calls the server got
    stages = json.loads((out / "timings.json").read_text())["stages"]
    assert [s["stage"] for s in stages] == ["build", "run", "report"]
    calls = {s["stage"]: sum(c["calls"] for c in s["roles"].values()) for s in stages}
    assert calls["build"] > 0 and calls["run"] > 0 and calls["report"] == 0
    assert sum(calls.values()) == server.calls
    assert set(stages[1]["roles"]) >= {"judge", "answer", "decision"}
    assert "the demo's stages" in said and said.rstrip().splitlines()[-1].split()[0] == "total"
    assert "WARNING: the judge" in html.replace("&#x27;", "'")


@pytest.mark.parametrize("questions, newer", [
    pytest.param(3, 3, id="the default"),
    pytest.param(1, 1, id="--limit 1"),
    pytest.param(None, 20, id="--full: every article"),
    pytest.param(50, 20, id="more than there are"),
])
def test_the_dump_holds_one_article_after_the_cutoff_per_question_run(questions, newer):
    from freshrag.cli.commands.demo import demo_pages

    cutoff = date.fromisoformat(DEMO_CUTOFF)
    pages = demo_pages(questions)
    after = [p for p in pages if created_after(p.revisions[0].timestamp, cutoff)]
    assert len(after) == newer and len(pages) - len(after) == 20  # the older ones all stay
    assert demo_pages(questions) == pages  # seeded: a demo resumed builds the same set


def test_the_models_options_go_to_build_and_run():
    from pathlib import Path

    from freshrag.cli.commands.demo import demo_commands, model_arguments
    from freshrag.cli.main import parser

    given = ["--model", "m", "--base-url", "http://x/v1", "--model-role", "judge=j",
             "--model-role", "embeddings=e"]
    build, run, report = demo_commands(Path("d"), 3, ["baseline"],
                                       models=model_arguments(parser().parse_args(
                                           ["demo", *given])))
    for argv in (build, run):
        args = parser().parse_args(argv)
        assert (args.model, args.base_url, args.model_role) == (
            "m", "http://x/v1", [("judge", "j"), ("embeddings", "e")])
    assert "--model" not in report
