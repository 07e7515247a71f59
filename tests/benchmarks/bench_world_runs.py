"""Runs in a large world: how the example set's retrieval holds up as background passages are added
beside its 40 articles (docs/retrieval.md#runs-in-a-large-world).

    python tests/benchmarks/bench_world_runs.py [--sizes 0,1000,10000,100000] [--work DIR]

For each size it writes a generated multistream dump whose pages are drawn from the example set's
own sentences (tests/support/world.py: near misses, not noise; about two passages a page), makes
it a corpus with `freshrag corpus` (2 processes), and runs the example set's 40 questions with
naive RAG and the ReAct agent against the project's fake OpenAI-compatible server (its
bag-of-words embeddings stand in for MiniLM; `--corpus DIR`, no probe, no cache). The scripted
agent searches three times, each with other words: the question, its second half, its first
half. Printed per size and system: hit@5 (the gold article among the first search's five
chunks), recall (among any search's chunks), the searches an answer made, how many golds only a
later search found, the background's share of the chunks shown, the index's engine, the run's
wall time, and the load (`uptime`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

PER_PAGE = 1.8  # passages a generated page gives, about (10 sentences of the example set)
SEARCHES = 3


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def scripted_agent(request: dict[str, Any]) -> dict[str, Any]:
    """Three searches, each with other words (the question, its second half, its first half),
    then an answer."""
    from tests.support.agent_script import ANSWER
    from tests.support.fake_openai_server import default_reply

    tools = {tool["function"]["name"] for tool in request.get("tools") or []}
    if request.get("tool_choice") != "auto" or "search" not in tools:
        return default_reply(request)
    done = sum(message.get("role") == "tool" for message in request["messages"])
    if done >= SEARCHES:
        return {"content": ANSWER}
    question = next(m["content"] for m in request["messages"] if m.get("role") == "user")
    words = question.split()
    half = len(words) // 2
    query = [question, " ".join(words[half:]), " ".join(words[:half])][done]
    return {"tool_call": {"name": "search", "arguments": json.dumps({"query": query})}}


def searched(answer: Any) -> list[list[str]]:
    """The titles each search of an answer found, in order."""
    return [titles for _, titles in answer.steps.searched()] if answer.steps else []


def figures(answers: list[Any], system: str) -> dict[str, Any]:
    mine = [answer for answer in answers if answer.system == system and answer.gold_title]
    searches = [searched(answer) for answer in mine]
    first = [bool(s) and row.gold_title in s[0] for row, s in zip(mine, searches)]
    anywhere = [any(row.gold_title in titles for titles in s) for row, s in zip(mine, searches)]
    shown = [title for s in searches for titles in s for title in titles]
    return {"questions": len(mine), "hit@5": sum(first) / len(mine),
            "recall": sum(anywhere) / len(mine),
            "searches": sum(map(len, searches)) / len(mine),
            "later_only": sum(a and not f for a, f in zip(anywhere, first)),
            "background_share": sum(t.startswith("Background page") for t in shown)
            / max(len(shown), 1)}


def world(size: int, work: Path) -> tuple[Path | None, dict[str, Any]]:
    from freshrag.core.dataset import example_dir, load_dataset_dir
    from freshrag.retrieval.passages import Corpus
    from tests.support.world import make_world

    if size == 0:
        return None, {"passages": 0, "corpus_s": 0.0}
    articles = list(load_dataset_dir(example_dir()).articles.values())
    started = time.perf_counter()
    corpus = make_world(work / f"wiki-{size}", articles, math.ceil(size / PER_PAGE),
                        processes=2, pages_per_shard=10_000)
    return corpus, {"passages": len(Corpus(corpus)),
                    "corpus_s": time.perf_counter() - started}


def measure(size: int, work: Path) -> list[dict[str, Any]]:
    import freshrag
    from freshrag.core.manifest import read_manifest

    corpus, made = world(size, work)
    log(f"{size:,}: corpus of {made['passages']:,} passages in {made['corpus_s']:.0f} s")
    started = time.perf_counter()
    result = freshrag.evaluate(None, systems="naive,react", out=work / f"run-{size}",
                               corpus=corpus, probe=None, cache=False, concurrency=4)
    wall = time.perf_counter() - started
    index = read_manifest(work / f"run-{size}")["index"]
    return [{"size": size, **made, "system": system, "engine": index.get("engine", "local"),
             "chunks": index["chunks"], "run_s": wall, **figures(result.answers, system)}
            for system in ("naive", "react")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0,1000,10000,100000")
    parser.add_argument("--work", type=Path, help="keep the corpora and runs here")
    args = parser.parse_args()
    from tests.support.fake_openai_server import FakeOpenAIServer

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-world-runs-"))
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)  # the index beside the runs, in this scratch folder
    rows = []
    with FakeOpenAIServer(reply=scripted_agent, capture=False) as server:
        os.environ.update(FRESHRAG_BASE_URL=server.base_url, FRESHRAG_API_KEY="bench-key",
                          FRESHRAG_MODEL="fake-model", FRESHRAG_EMBEDDINGS_MODEL="fake-model")
        for size in map(int, args.sizes.split(",")):
            rows += measure(size, work)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"load: {load}")
    print("| background passages | system | hit@5 | recall | searches | found only by a later "
          "search | background share of chunks shown | engine, chunks | corpus s | run s |")
    print("|---:|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        print(f"| {r['passages']:,} | {r['system']} | {r['hit@5']:.3f} | {r['recall']:.3f} | "
              f"{r['searches']:.1f} | {r['later_only']} of {r['questions']} | "
              f"{r['background_share']:.2f} | {r['engine']}, {r['chunks']:,} | "
              f"{r['corpus_s']:.0f} | {r['run_s']:.0f} |")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
