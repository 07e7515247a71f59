"""Benchmark of the dataset builders (docs/measurements.md#dataset-builders).

    python tests/benchmarks/bench_builders.py [--only dump,mediawiki,recency] [--pages 50000]
                                              [--recency-limit 120]

Prints ONE JSON object on stdout (progress goes to stderr). It measures:

1. dump: pages/s and peak memory of the dump source reading generated `.xml.bz2` history dumps of
   `--pages` and twice as many pages (the paper's 1,101 articles repeated under new titles, two
   revisions each), each read in a fresh process so that its peak RSS is its own. Memory must stay
   flat as the dump grows: the two peaks are reported side by side.
2. mediawiki: pages/s from the local MediaWiki (the test fixture: Debian's package, the paper's
   articles imported) through `MediaWikiSource`, at concurrency 1 and 4 — random titles, first
   revision, plain text: the same requests as against Wikipedia.
3. recency: `freshrag build --stage A_f` with the configured `builder` model (default: the
   embedded SmolLM2) on a seeded sample of `--recency-limit` of the 818 A_d articles (0 = all),
   and its agreement with GPT-4-0613's verdicts in `recency-labels-A_d.jsonl`: accuracy and
   Cohen's kappa, with the unknown verdicts counted apart.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.core.jsonl import read_jsonl  # noqa: E402
from tests import WIKIRAG  # noqa: E402
from tests.support.wikidump import article_pages, write_dump  # noqa: E402

DATA = WIKIRAG
CUTOFF = "2021-09-30"  # GPT-4-0613's, the labels' model

READ_DUMP = """
import json, resource, sys, time
from freshrag.builders.sources.dump import DumpSource
start = time.perf_counter()
pages = sum(1 for _ in DumpSource(sys.argv[1]).pages(set()))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"pages": pages, "seconds": round(seconds, 2), "peak_rss_mib": round(peak, 1)}))
"""


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def repeated_pages(n: int):
    """`n` history pages: the released articles again and again, each round under new titles."""
    made, round_ = 0, 0
    while made < n:
        for page in article_pages(DATA / "articles.jsonl", limit=n - made,
                                  first_id=1 + round_ * 10_000):
            yield replace(page, title=f"{page.title} ({round_})" if round_ else page.title)
            made += 1
        round_ += 1


def bench_dump(pages: int) -> dict:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (pages, 2 * pages):
            path = Path(tmp) / f"dump-{n}.xml.bz2"
            log(f"dump: writing {n:,} pages")
            write_dump(path, repeated_pages(n))
            log(f"dump: reading {path.name} ({path.stat().st_size / 2**20:.0f} MiB) in a new process")
            done = subprocess.run([sys.executable, "-c", READ_DUMP, str(path)], cwd=ROOT,
                                  capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout)
            figures["pages_per_s"] = round(figures["pages"] / figures["seconds"], 1)
            figures["file_mib"] = round(path.stat().st_size / 2**20, 1)
            results.append(figures)
            path.unlink()
    small, large = results
    return {"sizes": results,
            "peak_rss_growth_mib": round(large["peak_rss_mib"] - small["peak_rss_mib"], 1),
            "peak_rss_ratio": round(large["peak_rss_mib"] / small["peak_rss_mib"], 3),
            "flat": large["peak_rss_mib"] <= 1.10 * small["peak_rss_mib"]}


def bench_mediawiki(pages: int = 200) -> dict:
    from freshrag.builders.sources.mediawiki import MediaWikiSource
    from tests.integration.mediawiki import seeded_wiki

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        with seeded_wiki(Path(tmp), DATA / "articles.jsonl") as wiki:
            results["fixture_start_s"] = round(time.perf_counter() - start, 1)
            for concurrency in (1, 4):
                source = MediaWikiSource(wiki.api_url, concurrency=concurrency)
                start = time.perf_counter()
                fetched = 0
                for _ in source.pages(set()):
                    fetched += 1
                    if fetched == pages:
                        break
                seconds = time.perf_counter() - start
                results[f"concurrency_{concurrency}"] = {
                    "pages": fetched, "seconds": round(seconds, 2),
                    "pages_per_s": round(fetched / seconds, 2)}
                log(f"mediawiki: concurrency {concurrency}: {fetched / seconds:.1f} pages/s")
    results["speedup_4_over_1"] = round(results["concurrency_4"]["pages_per_s"]
                                        / results["concurrency_1"]["pages_per_s"], 2)
    return results


def bench_recency(limit: int, seed: int = 0) -> dict:
    labels = {row["title"]: row["mostly_post_cutoff"] for row in read_jsonl(DATA / "recency-labels-A_d.jsonl")}
    titles = sorted(labels)
    if limit:
        titles = sorted(random.Random(seed).sample(titles, min(limit, len(titles))))
    articles = {row["title"]: row for row in read_jsonl(DATA / "articles.jsonl")}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "dataset"
        out.mkdir()
        write_jsonl(out / "articles.jsonl", (articles[t] for t in titles))
        write_jsonl(out / "sample.jsonl", ({"title": t, "discard": None} for t in titles))
        for stage in ("A_r", "A_d"):
            (out / f"{stage}.txt").write_text("".join(f"{t}\n" for t in titles), encoding="utf-8")
        log(f"recency: {len(titles)} articles through `freshrag build --stage A_f`")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "freshrag", "build", "--out", str(out), "--cutoff",
                        CUTOFF, "--stage", "A_f", "--no-cache"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        verdicts = {row["title"]: row for row in read_jsonl(out / "recency.jsonl")}
    model = next(iter(verdicts.values()))["model"] if verdicts else None
    known = [t for t in titles if isinstance(verdicts[t]["verdict"], bool)]
    pairs = [(verdicts[t]["verdict"], labels[t]) for t in known]
    return {"builder_model": model, "articles": len(titles), "seconds": round(seconds, 1),
            "unknown_verdicts": len(titles) - len(known),
            "accuracy": round(sum(a == b for a, b in pairs) / len(pairs), 4) if pairs else None,
            "cohen_kappa": cohen_kappa(pairs),
            "said_after": sum(a for a, _ in pairs), "gpt4_said_after": sum(b for _, b in pairs),
            "reference": "GPT-4-0613 verdicts, recency-labels-A_d.jsonl"}


def cohen_kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Agreement beyond chance between two raters of a yes/no question."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    yes_a, yes_b = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    expected = yes_a * yes_b + (1 - yes_a) * (1 - yes_b)
    return round((observed - expected) / (1 - expected), 4) if expected < 1 else None


def write_jsonl(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="dump,mediawiki,recency")
    parser.add_argument("--pages", type=int, default=50_000, help="the smaller dump's pages")
    parser.add_argument("--recency-limit", type=int, default=120,
                        help="A_d articles to classify (0: all 818)")
    args = parser.parse_args()
    parts = args.only.split(",")
    report = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
    if "dump" in parts:
        report["dump"] = bench_dump(args.pages)
    if "mediawiki" in parts:
        report["mediawiki"] = bench_mediawiki()
    if "recency" in parts:
        report["recency"] = bench_recency(args.recency_limit)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
