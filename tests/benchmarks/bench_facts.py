"""Benchmark of the facts stage's cost through the MediaWiki API
(docs/measurements.md#dataset-builders).

    python tests/benchmarks/bench_facts.py [--articles 200]

Prints ONE JSON object on stdout (progress goes to stderr). Against the local MediaWiki (the test
fixture: Debian's package, the paper's 1,101 articles imported), it counts the HTTP requests
(mwclient's through requests, wikipedia-api's through httpx) and the seconds of:

1. sampling: `MediaWikiSource.pages` for `--articles` pages (random titles, first revision and
   kind, TextExtracts text): the A_r stage's cost per article, for comparison;
2. facts, batched: `MediaWikiSource.wikitexts` for the same articles, 50 revisions a request, as
   the facts stage reads them;
3. facts, one by one: the same content asked for one revision a request, the cost batching saves.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx
import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.builders.sources.mediawiki import MediaWikiSource  # noqa: E402
from tests import WIKIRAG  # noqa: E402
from tests.integration.mediawiki import seeded_wiki  # noqa: E402


class RequestCounter:
    """Counts every HTTP request sent while installed: through requests (mwclient) and httpx
    (wikipedia-api)."""

    PATCHED = ((requests.Session, "request"), (httpx.Client, "send"))

    def __init__(self):
        self.count = 0
        self._originals = [getattr(owner, name) for owner, name in self.PATCHED]

    def __enter__(self) -> RequestCounter:
        for (owner, name), original in zip(self.PATCHED, self._originals):
            setattr(owner, name, self._counting(original))
        return self

    def _counting(self, original):
        def counted(client, *args, **kwargs):
            self.count += 1
            return original(client, *args, **kwargs)
        return counted

    def __exit__(self, *exc: object) -> None:
        for (owner, name), original in zip(self.PATCHED, self._originals):
            setattr(owner, name, original)


def measure(name: str, work, articles: int) -> dict:
    with RequestCounter() as counter:
        start = time.perf_counter()
        done = work()
        seconds = time.perf_counter() - start
    print(f"{name}: {counter.count} requests, {seconds:.1f} s", file=sys.stderr)
    return {"items": done, "requests": counter.count,
            "requests_per_article": round(counter.count / articles, 4),
            "seconds": round(seconds, 2), "articles_per_s": round(articles / seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=200)
    args = parser.parse_args()
    report: dict = {}
    with tempfile.TemporaryDirectory() as tmp, \
            seeded_wiki(Path(tmp), WIKIRAG / "articles.jsonl") as wiki:
        source = MediaWikiSource(wiki.api_url, concurrency=1)
        pages: list = []

        def sample() -> int:
            for page in source.pages(set()):
                if page.discard is None:
                    pages.append(page)
                if len(pages) == args.articles:
                    break
            return len(pages)

        report["sampling"] = measure("sampling", sample, args.articles)
        rows = [page.article_row() for page in pages]
        report["facts_batched"] = measure(
            "facts, 50 a request", lambda: sum(1 for _ in source.wikitexts(rows)), len(rows))
        report["facts_one_by_one"] = measure(
            "facts, 1 a request",
            lambda: sum(1 for row in rows for _ in source._contents(revids=str(row["revision_id"]))),
            len(rows))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
