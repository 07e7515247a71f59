"""Benchmark of the split-dump source (docs/measurements.md#dataset-builders): pages/s and peak
memory per process reading the split files of a dump with 1 and 2 worker processes, and the time
this projects for English Wikipedia.

    python tests/benchmarks/bench_split_dump.py [--pages 20000] [--files 4]

Prints ONE JSON object on stdout (progress goes to stderr). The dump is generated: the paper's
1,101 released articles repeated under new titles, `--pages` pages dealt into `--files`
pages-articles files (current revision only) and as many stub-meta-history files (every
revision, no text), as Wikipedia splits its dumps (tests/support/wikidump.py). Each setting reads all of
it through `SplitDumpSource` (stub files first, into the SQLite date table, then the text files),
in this process, as `freshrag build` does: wall time, pages/s, each worker's own peak RSS (its
`ru_maxrss`, read by the worker at its end) and the reading process's. The projection divides
English Wikipedia's content pages (ENWIKI_ARTICLES) by the measured rate; its redirects (about
as many again) cost far less each (no wikitext to parse) and are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.builders.sources.split_dump import SplitDumpSource  # noqa: E402
from tests.benchmarks.bench_builders import repeated_pages  # noqa: E402
from tests.support.wikidump import split_dumps  # noqa: E402

ENWIKI_ARTICLES = 6_900_000  # English Wikipedia's content pages, Special:Statistics, 2025


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def read_all(articles: list[Path], stubs: list[Path], processes: int, spool: Path) -> dict:
    source = SplitDumpSource(articles, spool, stubs, processes)
    started = time.perf_counter()
    pages = dated = 0
    for page in source.pages(set()):
        pages += 1
        dated += page.created is not None
    seconds = time.perf_counter() - started
    return {"processes": processes, "pages": pages, "with_creation_date": dated,
            "seconds": round(seconds, 1), "pages_per_s": round(pages / seconds, 1),
            "workers": [{k: w[k] for k in ("file", "pages", "seconds", "peak_rss_mib")}
                        for w in source.workers],
            "worker_peak_rss_mib_max": max(w["peak_rss_mib"] for w in source.workers),
            "reader_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                                         / 1024, 1),
            "projected_enwiki_hours": round(ENWIKI_ARTICLES / (pages / seconds) / 3600, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--files", type=int, default=4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="freshrag-bench-split-") as name:
        tmp = Path(name)
        log(f"writing {args.pages:,} pages into {args.files} pages-articles and stub files")
        articles, stubs = split_dumps(list(repeated_pages(args.pages)), tmp / "dump", args.files)
        sizes = {"pages_articles_mib": round(sum(p.stat().st_size for p in articles) / 2**20, 1),
                 "stub_mib": round(sum(p.stat().st_size for p in stubs) / 2**20, 1)}
        runs = []
        for processes in (1, 2):
            log(f"reading with {processes} process(es)")
            runs.append(read_all(articles, stubs, processes, tmp / f"out-{processes}"))
    one, two = runs
    print(json.dumps({"cpus": os.cpu_count(), "load_average": os.getloadavg(),
                      "pages": args.pages, "files": args.files, **sizes, "runs": runs,
                      "speedup_2_over_1": round(two["pages_per_s"] / one["pages_per_s"], 2),
                      "enwiki_articles": ENWIKI_ARTICLES}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
