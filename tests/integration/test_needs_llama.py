"""Information needs on the real components: `freshrag needs` on the shipped query log (real
MiniLM embeddings, scikit-learn clustering, SmolLM2-135M describing each cluster on the embedded
llama.cpp server), then `freshrag build --needs` with those needs on two released articles, then
`freshrag run` and `freshrag report` on what it built: every row carries its question's need.

A 135M model writes poor needs and questions; the test asserts on the pipeline and its records
(every cluster described or recorded as failed with its raw replies, every (need, chunk) call
recorded and counted), not on quality."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from freshrag.builders.styles.needs import NEEDS_FILE, read_needs
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from tests import WIKIRAG
from tests.support.wikidump import article_pages, write_dump

pytestmark = pytest.mark.integration

LOG = WIKIRAG.parent / "needs" / "queries.jsonl"
# Two short released articles (two chunks each), about themes of the log: an election, a crash.
TITLES = ("2022 South Cambridgeshire District Council election",
          "2023 Manaus Aerotáxi Embraer Bandeirante crash")


def freshrag(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}
    done = subprocess.run([sys.executable, "-m", "freshrag", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def dump_of(titles: tuple[str, ...], tmp_path: Path) -> Path:
    rows = [line for line in (WIKIRAG / "articles.jsonl").read_text(encoding="utf-8").splitlines()
            if json.loads(line)["title"] in titles]
    assert len(rows) == len(titles)
    articles = tmp_path / "articles.jsonl"
    articles.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return write_dump(tmp_path / "wiki.xml", article_pages(articles))


@pytest.mark.timeout(2400)  # about 3 min on an idle machine; generous for a shared one
def test_needs_from_a_query_log_then_questions_for_them_then_a_run(tmp_path):
    needs_txt = tmp_path / "needs.txt"
    derived = freshrag(tmp_path, "needs", "--queries", str(LOG), "--out", str(needs_txt),
                       "--min-size", "10", "--seed", "7")  # the two largest clusters
    document = json.loads(needs_txt.with_suffix(".json").read_text(encoding="utf-8"))
    assert document["queries"] == 63 and document["clustering"]["clusters"] >= 3
    assert document["needs"] and all(n["size"] >= 10 for n in document["needs"])
    for need in document["needs"]:
        assert need["raw"] and len(need["examples"]) == 5
        assert (need["status"] == "described") == (need["reason"] is None)
    needs = read_needs(needs_txt)  # what the model described, ready for build --needs
    assert list(needs) == [n["need"] for n in document["needs"] if n["status"] == "described"]
    assert "| # | need | queries | example queries |" in derived.stdout

    dataset = tmp_path / "dataset"
    build = ["build", "--dump", str(dump_of(TITLES, tmp_path)), "--cutoff", "2021-09-30",
             "--questions-from", "A_d", "--needs", str(needs_txt), "--per-need", "1",
             "--seed", "7", "--out", str(dataset)]
    for stage in ("A_r", "A_d", "questions"):  # A_f left out: the questions are about A_d
        freshrag(tmp_path, *build, "--stage", stage)
    records = read_jsonl(dataset / NEEDS_FILE)
    assert len(records) == len(needs)
    assert {r["outcome"] for r in records} <= {"question", "blank", "failed"}
    assert all(r["raw"] and r["usage"]["input"] > 0 for r in records)
    funnel = json.loads((dataset / "manifest.json").read_text())["funnel"]
    assert [n["need"] for n in funnel["needs"]] == list(needs)
    assert all(n["asked"] == n["questions"] + n["blank"] + n["failed"] == 1
               for n in funnel["needs"])
    questions = list(read_jsonl(dataset / "questions.jsonl"))
    assert len(questions) == sum(n["questions"] for n in funnel["needs"]) >= 1
    assert all(q["title"] in TITLES and q["information_need"] in needs for q in questions)

    run = tmp_path / "run"
    freshrag(tmp_path, "run", "--dataset", str(dataset), "--systems", "naive", "--limit", "1",
             "--no-probe", "--seed", "7", "--out", str(run), "--index-dir", str(tmp_path / "index"))
    rows = read_samples(run / "samples.jsonl")
    asked = {q["id"]: q["information_need"] for q in questions}
    assert rows and all(row["information_need"] == asked[row["question_id"]] for row in rows)
    report = freshrag(tmp_path, "report", str(run), "--format", "json")
    assert json.loads(report.stdout)["rows"][0]["n"] == len(rows)
