"""`freshrag demo` end to end against the fake OpenAI-compatible server (every role, embeddings
included): the example corpus goes through the builder as a dump, then every system, the judge
and the HTML report. The real models' timing is measured by hand
(docs/measurements.md#the-embedded-model)."""

import json
from datetime import date

from freshrag.builders.cutoffs import created_after
from freshrag.builders.sources.dump import DumpSource
from freshrag.cli.commands.demo import DEMO_CUTOFF, DEMO_PAGES, DEMO_TODAY
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
        assert main(["demo", "--out", str(tmp_path / "demo"), "--limit", "3"]) == 0
    out = tmp_path / "demo"
    pages = list(DumpSource(out / "example-wiki.xml").pages(set()))
    assert sorted(p.title for p in pages) == sorted(r["title"] for r in examples)
    # the build samples DEMO_PAGES of them, some created after the cutoff
    funnel = json.loads((out / "example" / "manifest.json").read_text())["funnel"]
    assert funnel["n_r"] == DEMO_PAGES < len(examples)
    assert 0 < funnel["n_d"] < funnel["n_r"] and funnel["n_d"] <= len(after)
    samples = read_samples(out / "run" / "samples.jsonl")
    assert sorted({s["system"] for s in samples}) == sorted(SYSTEMS)
    assert len(samples) == 3 * len(SYSTEMS) and all(s["status"] == "ok" for s in samples)
    assert {s["gold_title"] for s in samples} <= set(after)
    # a fixed date, so that a demo resumed on another day is the same run
    dated = [s for s in samples if s["system"] == "dated-boolean"]
    assert dated and all(f"Today's date is {DEMO_TODAY}." in s["calls"][0]["messages"][0]["content"]
               for s in dated)
    html = (out / "report.html").read_text()
    assert "sk-demo-not-written" not in html and all(name in html for name in SYSTEMS)
    said = capsys.readouterr().out
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


def test_full_runs_the_whole_corpus_and_the_runs_own_probes():
    from pathlib import Path

    from freshrag.cli.commands.demo import DEMO_PROBE_K, demo_commands

    small = demo_commands(Path("d"), 3, ["baseline"])
    full = demo_commands(Path("d"), 4, ["baseline"], full=True)
    assert small[0][small[0].index("--n") + 1] == str(DEMO_PAGES)
    assert small[1][small[1].index("--probe-k") + 1] == str(DEMO_PROBE_K)
    assert "--n" not in full[0] and "--probe-k" not in full[1]
    assert full[1][full[1].index("--limit") + 1] == "4"


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
