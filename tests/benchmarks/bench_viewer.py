"""Benchmark of the HTML report's viewer at scale (docs/reports.md#the-viewer): how big the page
of N answers is and how fast it opens in a browser.

    python tests/benchmarks/bench_viewer.py [--answers 10000 100000] [--article-chars 4000]

For each N it writes a run directory of synthetic rows of the shape the runner writes (nine
systems per question; each row with its calls: an answer prompt of three retrieved extracts and
the judge's prompt with the gold article of ARTICLE_CHARS characters, plus a decision call for the
deciders), renders `freshrag report RUN --html` in this process, then opens the page from
file:// in headless Chromium (Playwright on Debian's chromium, as the viewer's test does) and
measures:

- `file_mb`: the page's size;
- `report_s`: `freshrag report` wall time (tables, figures and page);
- `first_rows_s`: from the navigation's start to the list's first rows on screen (wall time seen
  from here; `first_rows_page_ms`: the page's own clock, performance.now(), at that moment);
- `loaded_s`: from the navigation's start to the load event (the whole file read);
- `open_ms`: then, opening one answer in the list's second half (its block parsed, its record
  built), until the next frame is painted; the median of OPENS answers, each in another block
  (`open_max_ms`: the slowest);
- `filter_ms`, `sort_ms`: filtering on one system, then sorting by score, over all N answers.

Prints ONE JSON object: the figures per N.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from freshrag.cli.main import main  # noqa: E402
from tests.support.dom import CHROMIUM_ARGS  # noqa: E402
from tests.support.runs import write_run  # noqa: E402

SYSTEMS = ("baseline", "naive", "boolean", "advanced", "hyde", "oracle", "confidence",
           "self-check", "dated-boolean")
DECIDERS = {"boolean", "advanced", "confidence", "self-check", "dated-boolean"}
WORDS = ("bridge river mayor council opened election town village station museum league season "
         "album film record company founded year first second minister award island").split()
OPENS = 5


def text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:chars]


def call(role: str, messages: list[dict[str, str]], reply: str | None,
         tool: tuple[str, dict[str, Any]] | None, tokens: tuple[int, int]) -> dict[str, Any]:
    return {"role": role, "model": f"{role}-model", "text": reply,
            "tool_name": tool[0] if tool else None,
            "tool_arguments": json.dumps(tool[1]) if tool else None,
            "usage": {"input": tokens[0], "output": tokens[1], "estimated": False},
            "latency_s": 0.4, "cache_hit": False, "messages": messages, "logprobs": None}


def synthetic_rows(answers: int, article_chars: int, seed: int = 26) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for q in range(-(-answers // len(SYSTEMS))):
        question = f"What happened to the {text(rng, 40)} in 2024 (q{q})?"
        article = text(rng, article_chars)
        chunks = [text(rng, 500) for _ in range(3)]
        for system in SYSTEMS[:answers - len(rows)]:
            retrieves = system not in ("baseline", "oracle") and rng.random() < 0.7
            answer = text(rng, rng.randint(80, 400))
            truth, rel = rng.randint(1, 5), rng.randint(1, 5)
            context = "Use these extracts:\n\n" + "\n\n".join(chunks) if retrieves else "Answer."
            calls = [call("answer", [{"role": "system", "content": context},
                                     {"role": "user", "content": question}],
                          answer, None, (900 if retrieves else 60, 80))]
            details: dict[str, Any] = {"decision": None}
            if system in DECIDERS:
                details.update(decision="retrieve" if retrieves else "no-retrieve",
                               decision_raw=json.dumps({"retrieve": retrieves}))
                calls.insert(0, call("decision", [{"role": "user", "content": question}], None,
                                     ("retrieve", {"retrieve": retrieves}), (120, 8)))
            if retrieves:
                details["retrieved"] = [{"title": f"Article {q}.{k}", "index": k,
                                         "score": round(rng.random(), 6)} for k in range(3)]
            user = (f"Query: {question}\n\nChatbot's answer: {answer}\n\n"
                    f"Wikipedia article:\n{article}")
            grade = {"truthfulness": truth, "relevance": rel, "unscored_reason": None,
                     "reason": text(rng, 90)}
            calls.append(call("judge", [{"role": "system", "content": "You evaluate ..."},
                                        {"role": "user", "content": user}], None,
                              ("submit_grade", grade), (article_chars // 4, 40)))
            rows.append({
                "dataset": "A_f", "question_id": f"q{q}", "question": question,
                "gold_title": f"Article {q}.0", "system": system, "status": "ok",
                "answer": answer, "retrievals": int(retrieves),
                "usage": {c["role"]: c["usage"] for c in calls},
                "grade": {**grade, "raw": [json.dumps(grade)]}, "calls": calls,
                "details": details, "latency_s": 1.2, "answer_latency_s": 0.8, "error": None,
                "finished_at": "2026-11-24T12:00:00Z"})
    return rows


def measure(answers: int, article_chars: int, work: Path) -> dict[str, Any]:
    run_dir = write_run(work / f"run-{answers}", synthetic_rows(answers, article_chars))
    page = run_dir / "report.html"
    started = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(run_dir), "--html", str(page)]) == 0
    figures: dict[str, Any] = {"answers": answers, "report_s": round(time.monotonic() - started, 1),
                               "file_mb": round(page.stat().st_size / 1e6, 1)}
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        started = time.monotonic()
        tab.goto(page.as_uri(), wait_until="commit", timeout=300_000)
        tab.wait_for_selector("#viewer-spacer .vrow", timeout=300_000)
        figures["first_rows_s"] = round(time.monotonic() - started, 2)
        figures["first_rows_page_ms"] = round(tab.evaluate("performance.now()"))
        tab.wait_for_load_state("load", timeout=300_000)
        figures["loaded_s"] = round(time.monotonic() - started, 2)
        figures.update(tab.evaluate(BROWSER_TIMINGS, OPENS))
        browser.close()
    return figures


# Timed inside the page: open OPENS answers spread over the list's last half (each in a block
# not yet parsed), each until the next frame; then a filter and a sort over every answer.
BROWSER_TIMINGS = """async (opens) => {
    const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
    const n = JSON.parse(document.getElementById("viewer-data").textContent).samples.length;
    const times = [];
    for (let k = 0; k < opens; k++) {
        const i = Math.floor(n / 2 + (n / 2 - 1) * k / Math.max(1, opens - 1));
        const t = performance.now();
        window.freshragViewer.open(i);
        await frame();
        times.push(performance.now() - t);
        if (!document.querySelector("#viewer-detail .viewer-transcript")) {
            throw new Error("answer " + i + " did not open");
        }
    }
    times.sort((a, b) => a - b);
    const select = document.getElementById("f-system");
    let t = performance.now();
    select.value = "naive";
    select.dispatchEvent(new Event("input", {bubbles: true}));
    await frame();
    const filter = performance.now() - t;
    select.value = "";
    select.dispatchEvent(new Event("input", {bubbles: true}));
    t = performance.now();
    document.querySelector("#viewer-head button[data-sort=score]").click();
    await frame();
    return {open_ms: Math.round(times[Math.floor(times.length / 2)]),
            open_max_ms: Math.round(times[times.length - 1]),
            filter_ms: Math.round(filter), sort_ms: Math.round(performance.now() - t)};
}"""


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--article-chars", type=int, default=4000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        results = [measure(n, args.article_chars, Path(work)) for n in args.answers]
    print(json.dumps({"article_chars": args.article_chars, "runs": results}, indent=1))


if __name__ == "__main__":
    main_()
