"""Retrieval that can fail (docs/retrieval.md#two-article-questions): naive RAG's recall of the
gold articles at 5 on a two-article set and on a one-article set of the same corpus, with
distractors, retrieved by the embedded all-MiniLM-L6-v2.

    python tests/benchmarks/bench_multihop_recall.py [--pairs 30] [--others 240] [--figure PNG]

The corpus is the paper's released articles (tests/data/wikirag-2024) written as a MediaWiki XML
dump: `--pairs` pairs of post-cutoff articles in which the first opens with a sentence linking to
the second (`[[B]]`), beside `--others` articles without such a link. `freshrag build --dump ...
--style multihop --multihop bridge --distractors 3` then writes the two-article set, its builder
model the fake server, scripted as a question writer that knows no more than the prompt shows it:
a bridge question is the paper's own question about B (tests/data/wikirag-2024/questions-A_d)
with B's name replaced by a description through A ("the subject that A is often compared with"),
so the question names A and asks a fact of B, as a bridge question does. The one-article set is
the same directory with the paper's question about B itself as each question (gold: B alone).
Both are run with `naive` (`freshrag run`, the answer and judge models the fake server: only the
retrieval is measured), and `freshrag report --format json` gives hit@5 (any gold article among
the top 5 chunks' articles) and recall_all@5 (every one). It prints the figures and, as its last
line, one JSON object; with `--figure` it draws them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.core.jsonl import read_jsonl, replace_jsonl  # noqa: E402
from tests import WIKIRAG  # noqa: E402
from tests.support.fake_openai_server import FakeOpenAIServer, default_reply  # noqa: E402
from tests.support.wikidump import DumpPage, Revision, later, write_dump  # noqa: E402

CUTOFF = "2021-09-30"
LINKED = "{a} is often compared with [[{b}]] by its visitors.\n\n"
THROUGH = "the subject that {a} is often compared with"


def corpus(pairs: int, others: int) -> tuple[list[DumpPage], dict[str, str]]:
    """Dump pages and the paper's question of each linked-to article, by its title."""
    asked = {row["title"]: row["question"] for row in read_jsonl(WIKIRAG / "questions-A_d.jsonl")}
    rows = [row for row in read_jsonl(WIKIRAG / "articles.jsonl")
            if row["created"] and row["created"] >= "2021-10-01" and len(row["content"]) > 1500]
    linked = [row for row in rows if row["title"] in asked][: 2 * pairs]
    rest = [row for row in read_jsonl(WIKIRAG / "articles.jsonl")
            if row["title"] not in {r["title"] for r in linked}][:others]
    pages, questions = [], {}
    for offset, row in enumerate(linked + rest):
        text = row["content"]
        if offset < len(linked) and offset % 2 == 0:  # the first of a pair links to the second
            second = linked[offset + 1]["title"]
            text = LINKED.format(a=row["title"], b=second) + text
            questions[second] = asked[second]
        created = (row["created"] or "2015-01-15T12:00:00Z").replace("+00:00", "Z")
        first = Revision(2 * offset + 2, created, text[: len(text) // 2])
        pages.append(DumpPage(offset + 1, row["title"], [
            first, Revision(2 * offset + 3, later(created, 30), text, parent_id=first.id)]))
    return pages, questions


def without(title: str, text: str) -> str:
    """`text` with every mention of `title` (or its name before a parenthesis) taken out."""
    names = {title, re.sub(r"\s*\(.*\)$", "", title)}
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(re.escape(name), "{through}", text, flags=re.I)
    return text


def script(questions: dict[str, str]):
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        tools = [tool["function"]["name"] for tool in request.get("tools") or []]
        system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
        if "write_bridge" in tools:
            first = re.search(r"First article: (.*)", user).group(1)
            second = re.search(r"Second article: (.*)", user).group(1)
            question = without(second, questions[second]).replace(
                "{through}", THROUGH.format(a=first))
            return {"tool_call": {"name": "write_bridge", "arguments": json.dumps(
                {"question": question, "answer": "what the second article says"})}}
        if "check_answer" in tools:  # the both-needed check: answered when both were given
            seen = re.search(r"Seen: (.*)", user).group(1).split(" | ")
            return {"tool_call": {"name": "check_answer", "arguments": json.dumps(
                {"truthfulness": 5 if len(seen) == 2 else 1})}}
        if not tools:
            return {"content": "Seen: " + " | ".join(re.findall(r"^Title: (.*)$", system, re.M))}
        return default_reply(request)
    return reply


def freshrag(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "freshrag", *args], check=True, env=env, cwd=ROOT,
                   stdout=subprocess.DEVNULL)


def one_article(two: Path, one: Path, questions: dict[str, str]) -> int:
    """The one-article set of the same corpus: B's own question for each bridge (gold: B)."""
    shutil.copytree(two, one)
    rows = []
    for row in read_jsonl(two / "questions.jsonl"):
        second = row["gold_titles"][-1]
        single = {k: v for k, v in row.items() if k not in ("gold_titles", "hops", "multihop")}
        rows.append({**single, "id": f"{row['id']}-one", "title": second,
                     "question": questions[second]})
    replace_jsonl(one / "questions.jsonl", rows)
    return len(rows)


def retrieval(run: Path, env: dict[str, str]) -> dict[str, Any]:
    """hit@5 and recall_all@5 of naive, from the report's analysis.json."""
    freshrag("report", str(run), "--out", str(run / "report"), env=env)
    analysis = json.loads((run / "report" / "analysis.json").read_text())
    (naive,) = analysis["retrieval"]  # one row: the run's one system
    return {"hit@5": naive["hit@k"], "recall_all@5": naive["recall_all@k"], "k": naive["k"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--others", type=int, default=240)
    parser.add_argument("--distractors", type=int, default=3)
    parser.add_argument("--figure", type=Path)
    args = parser.parse_args()
    started = time.monotonic()
    pages, questions = corpus(args.pairs, args.others)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_KEEP")) as tmp, FakeOpenAIServer(reply=script(questions)) as server:
        work = Path(tmp)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("FRESHRAG_")},
               "FRESHRAG_BASE_URL": server.base_url, "FRESHRAG_API_KEY": "sk-bench",
               "FRESHRAG_MODEL": "fake-model", "HF_HUB_OFFLINE": "1"}
        two = work / "two-article"
        freshrag("build", "--dump", str(write_dump(work / "linked.xml", pages)), "--cutoff",
                 CUTOFF, "--out", str(two), "--style", "multihop", "--multihop", "bridge",
                 "--questions-from", "A_d", "--distractors", str(args.distractors),
                 "--no-cache", "--concurrency", "2", env=env)
        count = one_article(two, work / "one-article", questions)
        figures: dict[str, Any] = {}
        for name in ("one-article", "two-article"):
            run = work / f"run-{name}"
            freshrag("run", "--dataset", str(work / name), "--systems", "naive", "--no-probe",
                     "--no-cache", "--out", str(run), "--index-dir", str(work / "index"),
                     "--concurrency", "2", env=env)
            figures[name] = retrieval(run, env)
    result = {"questions": count, "corpus_articles": len(pages), "distractors": args.distractors,
              "embeddings": "all-MiniLM-L6-v2 (embedded)", **figures,
              "wall_s": round(time.monotonic() - started, 1), "load_1min": os.getloadavg()[0],
              "machine": platform.processor() or platform.machine()}
    for name in ("one-article", "two-article"):
        print(f"{name}: {count} questions, hit@5 {figures[name]['hit@5']:.3f}, "
              f"recall_all@5 {figures[name]['recall_all@5']:.3f}")
    if args.figure:
        draw(figures, count, args.figure)
    print(json.dumps(result))


def draw(figures: dict[str, Any], count: int, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    names = list(figures)
    for offset, metric in enumerate(("hit@5", "recall_all@5")):
        ax.bar([i + 0.38 * offset for i in range(len(names))],
               [figures[name][metric] for name in names], width=0.36, label=metric)
    ax.set_xticks([i + 0.19 for i in range(len(names))], names)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"share of {count} questions")
    ax.set_title("naive RAG, top 5 chunks, all-MiniLM-L6-v2, 3 distractors per question",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
