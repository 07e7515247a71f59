"""Benchmark of `freshrag corpus` (docs/measurements.md#background-corpus): pages/s per core
against the `bzip2 -dc` and mwxml-alone floors and today's dump reader, on one generated
multistream dump; the stub scan against the stub's own decompression; English Wikipedia's time.

    python tests/benchmarks/bench_corpus.py [--pages 20000] [--old-pages 2000]

Prints ONE JSON object. The dump: the paper's released articles repeated under new titles, their
text dressed as wikitext (infobox, links, references, an image, categories:
tests/support/wikidump.py `marked_up`), 100 pages a stream, with its index and a
stub-meta-history file (STUB_REVISIONS revisions a page). Each figure is one process on one core: the
corpus with 1 worker (and with 2, for the speed-up), the floors, the new path up to plain text
(what today's reader does: no chunks, no shards) and today's reader (builders/sources/dump.py,
on the first --old-pages pages: it is slow) in this process. The breakdown
times the new path's steps alone on the same pages (profiled first: see measurements.md).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.builders.corpus.build import CorpusSource, build_corpus  # noqa: E402
from freshrag.builders.corpus.created import scan_stub  # noqa: E402
from freshrag.builders.corpus.multistream import read_index, stream_pages  # noqa: E402
from freshrag.builders.corpus.shards import Rules  # noqa: E402
from freshrag.builders.corpus.wikitext import is_disambiguation, passage_text  # noqa: E402
from freshrag.builders.corpus.xmlpages import split_pages  # noqa: E402
from freshrag.builders.sources.dump import DumpSource  # noqa: E402
from tests.benchmarks.bench_builders import repeated_pages  # noqa: E402
from tests.support.wikidump import (  # noqa: E402
    DumpPage,
    Revision,
    later,
    marked_up,
    write_multistream,
    write_stub,
)

ENWIKI_ARTICLES = 6_900_000  # content pages, Special:Statistics
# Assumptions for English Wikipedia (2025 dumps, sizes as listed on dumps.wikimedia.org, rounded):
ENWIKI_MULTISTREAM_GB = 24  # pages-articles-multistream.xml.bz2, every namespace, redirects too
ENWIKI_STUB_HISTORY_GB = 95  # stub-meta-history*.xml.gz, all files
STUB_REVISIONS = 20


def _gunzip(path: Path) -> None:
    with gzip.open(path, "rb") as raw:
        while raw.read(4 << 20):
            pass


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def mwxml_alone(path: Path, limit: int) -> int:
    import bz2

    import mwxml

    count = 0
    with bz2.open(path) as raw:
        for page in itertools.islice(mwxml.Dump.from_file(raw), limit):
            for revision in page:
                _ = revision.text
            count += 1
    return count


def long_history(page: DumpPage) -> DumpPage:
    """The page with STUB_REVISIONS revisions, as a history's metadata: about English
    Wikipedia's mean (1.2 billion revisions over 60 million pages)."""
    first = page.revisions[0]
    revisions = [Revision(first.id * 100 + k, later(first.timestamp, k), "",
                          first.id * 100 + k - 1 if k else None) for k in range(STUB_REVISIONS)]
    return DumpPage(page.id, page.title, revisions, page.ns, page.redirect)


def text_path(dump: Path, index: Path) -> int:
    """The new path up to plain text, as today's reader goes (no chunks, no shard): every stream
    decompressed alone, its pages split and turned into text, in this process."""
    count = 0
    with dump.open("rb") as raw:
        for stream in read_index(index):
            for page in stream_pages(dump, raw, stream, index):
                if page.ns == 0 and not page.redirect and not is_disambiguation(page.text):
                    count += bool(passage_text(page.text))
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--old-pages", type=int, default=2_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="freshrag-bench-corpus-") as name:
        tmp = Path(name)
        pages = [marked_up(page) for page in repeated_pages(args.pages)]
        dump, index = write_multistream(tmp / "dump", pages)
        stub = write_stub(tmp / "dump" / "stub-meta-history1.xml.gz",
                          (long_history(page) for page in pages))
        n = len(pages)
        raw_bytes = sum(len(p.revisions[-1].text.encode()) for p in pages)
        del pages
        bzip2 = timed(lambda: subprocess.run(f"bzip2 -dc {dump} > /dev/null", shell=True,
                                             check=True))
        mwxml_s = timed(lambda: mwxml_alone(dump, n))
        text_s_all = timed(lambda: text_path(dump, index))
        old_s = timed(lambda: sum(1 for _ in itertools.islice(DumpSource(dump).pages(set()),
                                                               args.old_pages)))
        runs = {}
        for processes in (1, 2):
            runs[processes] = timed(lambda: build_corpus(
                tmp / f"out-{processes}", CorpusSource((dump,), index), Rules(), processes))
        # the new path's steps alone, in this process
        import bz2
        data = bz2.decompress(dump.read_bytes())
        decompress_s = timed(lambda: bz2.decompress(dump.read_bytes()))
        split = list(split_pages(data))
        split_s = timed(lambda: list(split_pages(data)))
        text_s = timed(lambda: [passage_text(p.text) for p in split])
        stub_gunzip = timed(lambda: subprocess.run(f"gzip -dc {stub} > /dev/null", shell=True,
                                                   check=True))
        stub_gzip_module = timed(lambda: _gunzip(stub))
        stub_scan = timed(lambda: scan_stub(str(stub)))
        sizes = {"dump_mib": round(dump.stat().st_size / 2**20, 1),
                 "xml_mib": round(len(data) / 2**20, 1),
                 "wikitext_mib": round(raw_bytes / 2**20, 1),
                 "stub_mib": round(stub.stat().st_size / 2**20, 1),
                 "stub_xml_mib": round(len(gzip.decompress(stub.read_bytes())) / 2**20, 1)}
    per_core = n / runs[1]
    old = args.old_pages / old_s
    bytes_rate = len(data) / runs[1]  # uncompressed XML bytes a second, one core
    enwiki_core_hours = max(ENWIKI_ARTICLES / per_core,
                            ENWIKI_MULTISTREAM_GB * 1e9 * len(data) / sizes["dump_mib"] / 2**20
                            / bytes_rate) / 3600
    stub_core_hours = ENWIKI_STUB_HISTORY_GB * 1e9 / (sizes["stub_mib"] * 2**20 / stub_scan) / 3600
    print(json.dumps({
        "cpus": os.cpu_count(), "load_average": os.getloadavg(), "pages": n, **sizes,
        "pages_per_s_per_core": {
            "corpus_text_path_no_chunks": round(n / text_s_all, 1),
            "corpus_1_worker": round(per_core, 1),
            "corpus_2_workers_total": round(n / runs[2], 1),
            "bzip2_dc_floor": round(n / bzip2, 1), "mwxml_alone_floor": round(n / mwxml_s, 1),
            "todays_dump_reader": round(old, 1)},
        "speedup_over_today": {"text": round(n / text_s_all / old, 2),
                               "with_chunks_and_shards": round(per_core / old, 2)},
        "new_path_breakdown_ms_per_page": {
            "bz2_decompress": round(1000 * decompress_s / n, 3),
            "split_pages": round(1000 * split_s / n, 3),
            "wikitext_to_text": round(1000 * text_s / n, 3),
            "total_with_chunking_and_parquet": round(1000 * runs[1] / n, 3)},
        "stub": {"revisions_per_page": STUB_REVISIONS, "gzip_dc_s": round(stub_gunzip, 2),
                 "python_gzip_read_s": round(stub_gzip_module, 2), "scan_s": round(stub_scan, 2),
                 "scan_over_gzip_dc": round(stub_scan / stub_gunzip, 2),
                 "scan_over_python_gzip_read": round(stub_scan / stub_gzip_module, 2)},
        "enwiki_estimate_hours": {
            "assumptions": f"{ENWIKI_ARTICLES:,} articles, multistream {ENWIKI_MULTISTREAM_GB} "
                           f"GB bz2 at this file's compression ratio, stub-meta-history "
                           f"{ENWIKI_STUB_HISTORY_GB} GB gz at this stub's scan rate",
            "text_2_cores": round(enwiki_core_hours / 2, 1),
            "text_8_cores": round(enwiki_core_hours / 8, 1),
            "stub_dates_2_cores": round(stub_core_hours / 2, 1),
            "stub_dates_8_cores": round(stub_core_hours / 8, 1),
            "with_dates_8_cores": round((enwiki_core_hours + stub_core_hours) / 8, 1)},
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
