"""Mixed traffic on the real components: the embedded llama.cpp server with SmolLM2-135M (builder,
every decider, answerer and judge), MiniLM embeddings and embedded Qdrant.

A dataset directory holds two of the paper's released A_f questions (fresh, need true) over a
small corpus of released articles: their gold articles and articles of the random sample A_r,
which the released data dates only as "before the cutoff" and which get the stand-in creation
date the test dump uses (tests/support/wikidump.py). `freshrag build --stage traffic` adds a control
question, written by SmolLM2 about one of those older A_r articles, and two general queries from
the shipped list; `freshrag mix` draws one of each kind (21 pairs, about 4 CPU minutes of the
embedded server: more would not fit CI's 3 minutes); `freshrag run` answers them with baseline,
naive, boolean, advanced, dated-boolean, confidence and self-check; `freshrag report --mix` shows
the decisions per kind, the threshold sweep and the savings curve in markdown, JSON and HTML.

A 135M model decides as it likes, so no decision is expected of it: what is checked is the
pipeline and its records, and that llama.cpp's server gives the confidence decider logprobs.
"""

import json
import subprocess
import sys

import pytest

from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from freshrag.scoring.judge import GENERAL_JUDGE_PROMPT
from tests import WIKIRAG as DATA
from tests.support.fakes import clean_env
from tests.support.wikidump import STAND_IN_CREATED

pytestmark = pytest.mark.integration

SYSTEMS = ("baseline", "naive", "boolean", "advanced", "dated-boolean", "confidence", "self-check")
ADAPTIVE = SYSTEMS[2:]
CUTOFF = "2021-09-30"


def harness(*args, cwd, timeout=1800):  # minutes on a 2-core machine shared with other jobs
    done = subprocess.run([sys.executable, "-m", "freshrag", *args], env=clean_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def released_dataset(directory):
    """Two released A_f questions as the fresh ones, over their gold articles and 10 A_r
    articles (stand-in creation date, long before the cutoff), as a built dataset holds them;
    the shortest of each, so that the prompts about them stay short."""
    articles = [json.loads(line) for line in (DATA / "articles.jsonl").open(encoding="utf-8")]
    size = {a["title"]: len(a["content"]) for a in articles}
    questions = [json.loads(line) for line in (DATA / "questions-A_f.jsonl").open(encoding="utf-8")]
    # the shortest articles: every prompt about them (question writer, judge) is short, on 2 cores
    fresh = sorted(questions, key=lambda q: size[q["title"]])[:2]
    gold = {q["title"] for q in fresh}
    older = sorted((a for a in articles if not a["created"] and size[a["title"]] > 1000),
                   key=lambda a: size[a["title"]])[:10]
    corpus = [a for a in articles if a["title"] in gold] + \
             [{**a, "created": STAND_IN_CREATED} for a in older]
    directory.mkdir()
    (directory / "articles.jsonl").write_text("".join(json.dumps(a) + "\n" for a in corpus))
    (directory / "questions.jsonl").write_text("".join(
        json.dumps({"id": f"A_f-{i:05d}-0", **q, "kind": "fresh", "need": True}) + "\n"
        for i, q in enumerate(fresh)))
    (directory / "A_r.txt").write_text("".join(a["title"] + "\n" for a in corpus))
    return directory


@pytest.mark.timeout(2400)  # about 3 min idle; a busy shared machine takes many times that
def test_mixed_traffic_through_every_decider_on_the_real_model(tmp_path):
    dataset = released_dataset(tmp_path / "dataset")
    harness("build", "--stage", "traffic", "--out", str(dataset), "--cutoff", CUTOFF,
            "--control", "1", "--general", "2", "--seed", "7", cwd=tmp_path)
    questions = read_jsonl(dataset / "questions.jsonl")
    control = [q for q in questions if q["kind"] == "control"]
    assert len(control) == 1 and all(q["question"] and q["need"] is False and
                                     q["created"] == STAND_IN_CREATED for q in control)
    assert sum(q["kind"] == "general" and q["title"] is None for q in questions) == 2

    mix = tmp_path / "mix"
    harness("mix", str(dataset), "--fresh", "0.34", "--control", "0.33", "--general", "0.33",
            "--n", "3", "--seed", "1", "--out", str(mix), cwd=tmp_path)
    run = tmp_path / "run"
    harness("run", "--dataset", str(mix), "--systems", ",".join(SYSTEMS), "--out", str(run),
            "--seed", "7", "--no-probe", "--index-dir", str(tmp_path / "index"), cwd=tmp_path)
    rows = read_samples(run / "samples.jsonl")
    assert len(rows) == 3 * len(SYSTEMS)
    for row in rows:
        assert row["status"] == "ok", row["error"]
        judge = [c for c in row["calls"] if c["role"] == "judge"][0]
        assert (judge["messages"][0]["content"] == GENERAL_JUDGE_PROMPT) == \
            (row["kind"] == "general")
    for row in (r for r in rows if r["system"] == "confidence"):
        asked, details = row["calls"][0], row["details"]
        assert asked["logprobs"], "llama.cpp's server gave no logprobs"  # it does, for chat
        p = details["p_retrieve"]
        assert (p is None) == (details["p_unavailable"] is not None)
        assert details["decision"] == ("none" if p is None else
                                       "retrieve" if p >= details["threshold"] else "no-retrieve")
    for row in (r for r in rows if r["system"] == "self-check"):
        rating, details = row["details"]["confidence"], row["details"]
        assert details["decision"] == ("none" if rating is None else "retrieve"
                                       if rating < details["threshold"] else "no-retrieve")
        assert row["retrievals"] == (details["decision"] == "retrieve")

    done = harness("report", str(run), "--mix", "0.1:0.6:0.3", "--html",
                   str(tmp_path / "report.html"), cwd=tmp_path)
    analysis = json.loads((run / "analysis.json").read_text())
    judged = {(e["system"], e["kind"]) for e in analysis["decisions_by_kind"]}
    assert judged == {(s, k) for s in ADAPTIVE for k in ("fresh", "control", "general", "all")}
    assert {e["system"] for e in analysis["thresholds"]} == {"confidence", "self-check"}
    assert {e["system"] for e in analysis["savings"]} == {*SYSTEMS, "oracle-router (need)"}
    assert {e["system"] for e in analysis["mixes"]} == {*SYSTEMS, "oracle-router (need)"}
    for title in ("per traffic kind", "Threshold sweep", "Savings curve", "Chosen traffic mixes"):
        assert title in done.stdout
    page = (tmp_path / "report.html").read_text()
    assert all(f'id="analysis-{t}"' in page for t in ("decisions_by_kind", "thresholds",
                                                       "savings", "mixes"))
    assert (run / "savings-mix.png").exists()
