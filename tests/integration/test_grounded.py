"""Grounded questions on the real components: `freshrag build --style grounded` through the dump
source with SmolLM2-135M (the embedded llama.cpp server) writing the text forms, then `freshrag
run` through naive, boolean and advanced on it (MiniLM, embedded Qdrant) and `freshrag report`;
and the same build through the real local MediaWiki (the example articles with their infoboxes,
wikitext read through the API), the builder on the fake server.

A 135M model writes poor questions and poorer answers: what is checked is the pipeline (groups
with SQL, answers and forms; every form's verdict; tags, adequacy, refined accuracy, attribution
and a wording test in the report), never the quality.
"""

import json
import sqlite3

import pytest

from freshrag.builders.styles.facts import FACTS
from freshrag.builders.styles.grounded import FAILED, QUERIES
from freshrag.cli.commands.demo import example_pages, write_example_dump
from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from tests.integration.mediawiki import LocalMediaWiki
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.wikidump import write_dump

pytestmark = pytest.mark.integration

CUTOFF = "2025-12-31"
GROUNDED = ["--style", "grounded", "--questions-from", "A_r", "--groups", "1",
            "--criteria", "short,long"]


def local_model_only(monkeypatch, directory):
    for role in ("BUILDER_", "ANSWER_", "DECISION_", "JUDGE_", "EMBEDDINGS_", ""):
        for key in ("BASE_URL", "MODEL", "API_KEY"):
            monkeypatch.delenv(f"FRESHRAG_{role}{key}", raising=False)
    monkeypatch.chdir(directory)  # no freshrag.toml here: every role keeps its local default


def test_grounded_build_and_run_on_the_embedded_model(tmp_path, monkeypatch):
    local_model_only(monkeypatch, tmp_path)
    dump = write_example_dump(tmp_path / "example.xml")
    out = tmp_path / "dataset"
    # questions from A_r need no recency verdicts: the stages they need, and no A_d or A_f
    for stage in ("A_r", "facts", "questions"):
        assert main(["build", "--dump", str(dump), "--cutoff", CUTOFF, "--out", str(out),
                     "--stage", stage, *GROUNDED]) == 0
    group, = [q for q in read_jsonl(out / QUERIES) if q["dropped"] is None]
    with sqlite3.connect(out / FACTS) as db:
        assert db.execute(group["sql"], group["params"]).fetchall() == [(group["answer"],)]
    forms = list(read_jsonl(out / "questions.jsonl"))
    failed = list(read_jsonl(out / FAILED))
    # each criterion gave a form, or a failure with its reason and raw reply
    assert sorted([f["criterion"] for f in forms] + [f["criterion"] for f in failed]) == \
        ["long", "short"]
    assert all(f["reason"] for f in failed)
    assert forms, "SmolLM2 wrote no usable text form at all"
    for form in forms:
        assert form["question"].strip() and form["group"] == group["group"]
        assert form["reference"] == group["answer"] and form["sql"] == group["sql"]

    run = tmp_path / "run"
    status = main(["run", "--dataset", str(out), "--systems", "naive,boolean,advanced",
                   "--out", str(run), "--no-probe", "--concurrency", "2"])  # the server's two slots
    rows = read_samples(run / "samples.jsonl")
    assert len(rows) == 3 * len(forms)
    assert status == (1 if any(row["status"] == "failed" for row in rows) else 0)
    assert main(["report", str(run)]) == 0
    analysis = json.loads((run / "analysis.json").read_text())
    verdicts = analysis["grounded"]["forms"]
    assert len(verdicts) == len(rows)
    assert all(v["verdict"] in ("correct", "incorrect", "unscored") and v["basis"]
               for v in verdicts)
    for entry in analysis["groups"]:
        assert entry["groups"] == 1
        assert entry["robust"] + entry["non_robust"] + entry["gap"] + entry["unscored"] == 1
        tagged = entry["groups"] - entry["unscored"]
        assert entry["adequacy"] == (None if not tagged else 1.0 - entry["gap"])
        wrong = sum(entry[f"wrong_{c}"] for c in ("retriever", "language_model", "no_retrieval"))
        assert wrong == (1 if entry["non_robust"] else 0)  # two forms: one of them is wrong
    # the length test pairs the two forms in every system; with one form there is no pair
    assert {t["axis"] for t in analysis["wording"]} == ({"length"} if len(forms) == 2 else set())
    # one group per system: below the pairs a test needs, said instead of a p-value
    assert all(t["p_value"] is None and t["untested"].startswith("n = 1,")
               for t in analysis["wording"])
    assert (run / "group-tags.png").exists()


class FormWriter:
    """The builder on the fake server: a text form naming the query."""

    def __call__(self, request):
        text = request["messages"][-1]["content"].splitlines()[0].removeprefix("Ask for: ")
        return {"tool_call": {"name": "write_question",
                              "arguments": json.dumps({"question": f"What is {text}?"})}}


def test_grounded_build_through_the_mediawiki_api(tmp_path, monkeypatch):
    dump_dir = tmp_path / "dump"
    dump_dir.mkdir()
    dump_out = dump_dir / "dataset"
    with FakeOpenAIServer(reply=FormWriter()) as server, \
            LocalMediaWiki(tmp_path / "wiki") as wiki:
        wiki.import_dump(write_dump(tmp_path / "example.xml", example_pages()),
                         link_updates=False)
        for key, value in (("BASE_URL", server.base_url), ("API_KEY", "sk-x"),
                           ("MODEL", "scripted-builder")):
            monkeypatch.setenv(f"FRESHRAG_BUILDER_{key}", value)
        out = tmp_path / "dataset"
        assert main(["build", "--wiki-api", wiki.api_url, "--n", "40", "--cutoff", CUTOFF,
                     "--out", str(out), "--no-cache", "--style", "grounded",
                     "--questions-from", "A_r", "--groups", "3"]) == 0
        assert main(["build", "--dump", str(write_example_dump(dump_dir / "example.xml")),
                     "--cutoff", CUTOFF, "--out", str(dump_out), "--stage", "A_r"]) == 0
        assert main(["build", "--cutoff", CUTOFF, "--out", str(dump_out),
                     "--stage", "facts"]) == 0

    def table(directory):
        with sqlite3.connect(directory / FACTS) as db:
            return sorted(db.execute("SELECT article, infobox, field, value, normalised "
                                     "FROM facts").fetchall())

    # the wiki's wikitext gives the same facts as the dump's
    assert table(out) and table(out) == table(dump_out)
    facts = json.loads((out / "manifest.json").read_text())["funnel"]["facts"]
    assert facts["articles_read"] == 40 and facts["requests"] == 1  # 40 revisions, 50 a request
    kept = [q for q in read_jsonl(out / QUERIES) if q["dropped"] is None]
    forms = list(read_jsonl(out / "questions.jsonl"))
    assert len(kept) == 3 and len(forms) == 6 * 3  # every criterion by default
    assert {f["group"] for f in forms} == {q["group"] for q in kept}
    assert all(f["reference"] and f["sql"] and f["criterion"] for f in forms)
