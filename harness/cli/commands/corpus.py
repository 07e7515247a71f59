"""`freshrag corpus`: the passages of a whole Wikipedia as a background corpus of shards
(docs/corpus.md). It parses its options and calls the corpus service
(harness/workflows/corpus.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import add_command
from freshrag.cli.values import header, iso_date, out_dir, pattern, url, whole

NAME = "corpus"
HELP = "a whole Wikipedia's passages as a background corpus"


DESCRIPTION = ("Reads a pages-articles-multistream dump with its index (a stream at a time, in "
               "parallel processes), split dump files, or a list of titles through a wiki's "
               "API; turns each article into plain text, chunks it as the retrieval index does "
               "and writes the passages as Parquet shards with manifest.json (content hash, "
               "counts, dump date, chunker settings, source files). --stub-dump files give "
               "creation dates, and --created-after/--created-before keep only the articles "
               "created in that window. Running it again resumes: shards on disk with their "
               "recorded hash are kept.")
EXAMPLES = ("freshrag corpus --dump enwiki-20251101-pages-articles-multistream.xml.bz2 "
            "--index enwiki-20251101-pages-articles-multistream-index.txt.bz2 --out corpora/enwiki",
            "freshrag corpus --dump 'enwiki-20251101-pages-articles-multistream.xml.bz2' "
            "--index enwiki-20251101-pages-articles-multistream-index.txt.bz2 --stub-dump "
            "'enwiki-20251101-stub-meta-history[0-9]*.xml.gz' --created-before 2023-10-01 "
            "--processes 8 --out corpora/known",
            "freshrag corpus --titles titles.txt --wiki-api https://wiki.example.org/w/api.php "
            "--out corpora/small")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    pages = p.add_argument_group("pages")
    pages.add_argument("--dump", nargs="+", type=pattern, metavar="FILE", help="a "
                       "pages-articles-multistream .xml.bz2 (with --index), or split dump files "
                       "(.xml, .xml.bz2, .xml.gz) or a quoted glob, a worker each")
    pages.add_argument("--index", type=Path, metavar="FILE", help="the multistream dump's "
                       "index (…-multistream-index.txt.bz2): its streams are read in parallel")
    pages.add_argument("--titles", type=Path, metavar="FILE", help="instead of a dump, these "
                       "titles (one a line) read through the wiki's API")
    pages.add_argument("--wiki-api", type=url, help="with --titles: the wiki's api.php "
                       "(default: English Wikipedia's)")
    pages.add_argument("--user-agent", type=header, help="with --titles: the User-Agent naming "
                       "you and a contact, as Wikimedia asks")
    dates = p.add_argument_group("creation dates")
    dates.add_argument("--stub-dump", nargs="+", type=pattern, metavar="FILE",
                       help="stub-meta-history files (or a quoted glob) of the same dump: each "
                            "page's first revision is its creation date")
    dates.add_argument("--created-after", type=iso_date, metavar="YYYY-MM-DD", help="keep only "
                       "articles created after this day")
    dates.add_argument("--created-before", type=iso_date, metavar="YYYY-MM-DD", help="keep only "
                       "articles created before this day (the world a model with this cutoff "
                       "knew)")
    passages = p.add_argument_group("passages")
    passages.add_argument("--chunk-size", type=whole(100, 100_000), default=1024,
                          help="characters a passage (default: %(default)s, as the index)")
    passages.add_argument("--chunk-overlap", type=whole(0, 10_000), default=48,
                          help="characters two passages overlap (default: %(default)s)")
    passages.add_argument("--min-chars", type=whole(1, 1_000_000), default=1,
                          help="plain-text characters an article needs (default: %(default)s)")
    control = p.add_argument_group("run control")
    control.add_argument("--processes", type=whole(1, 256), default=2,
                         help="worker processes (default: %(default)s)")
    control.add_argument("--pages-per-shard", type=whole(100, 10_000_000), default=10_000,
                         help="pages a shard, the unit of resuming (default: %(default)s)")
    p.add_argument_group("output").add_argument("--out", type=out_dir, required=True,
                                                metavar="DIR", help="the corpus directory; "
                                                "writing into it again resumes")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import sys
    import time

    from freshrag.core.files import dumps
    from freshrag.workflows.corpus import make_corpus

    started = time.monotonic()
    manifest = make_corpus(
        args.out, args.dump or (), args.index, args.titles, args.wiki_api, args.user_agent,
        args.stub_dump or (), args.created_after, args.created_before, args.min_chars,
        args.chunk_size, args.chunk_overlap, args.processes, args.pages_per_shard,
        progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(dumps({"corpus": str(args.out), **manifest["counts"],
                 "content_sha256": manifest["content_sha256"],
                 "seconds": round(time.monotonic() - started, 1)}, indent=2))
    return 0
