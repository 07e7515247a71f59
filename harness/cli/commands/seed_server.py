"""`freshrag seed-server`: a Qdrant server's collection seeded from an index built on the Qdrant
engine in-process (docs/retrieval.md#seeding-a-qdrant-server); the seeding is
harness/retrieval/seed.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import add_command
from freshrag.cli.values import name, url, whole

NAME = "seed-server"
HELP = "seed a Qdrant server from an index built here"


DESCRIPTION = ("Copies an index built on the Qdrant engine in-process (--engine edge, or auto "
               "past 20,000 chunks) into a Qdrant server: every point (its dense and BM25 "
               "vectors, its payload, its id) into a collection of the same name and layout, a "
               "page at a time, without chunking or embedding anything. A `freshrag run` or "
               "`freshrag index` with --qdrant-url and the same articles, chunker and embedding "
               "model then opens that collection as built. Running it again resumes: points the "
               "collection holds are skipped. Prints what was seeded as JSON.")
EXAMPLES = ("freshrag seed-server --qdrant-url http://localhost:6333",
            "freshrag seed-server --index-dir results/.index --collection "
            "freshrag-0f3a9c1e2b7d4a6c8e1f2a3b --qdrant-url http://qdrant.internal:6333")
DEFAULT_BATCH = 256  # points a request: 256 MiniLM points are about 1 MB of JSON


def add_parser(sub: argparse._SubParsersAction) -> None:
    from freshrag.core.runfiles import INDEX_DIR

    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    source = p.add_argument_group("the index")
    source.add_argument("--index-dir", type=Path, help="the directory the index was built in "
                        f"(default: results/{INDEX_DIR})")
    source.add_argument("--collection", type=name, metavar="NAME", help="the index's "
                        "collection, the name of its shard under DIR/edge/ (default: the one "
                        "built index there)")
    server = p.add_argument_group("the server")
    server.add_argument("--qdrant-url", type=url, required=True,
                        help="Qdrant server URL to seed")
    server.add_argument("--batch-size", type=whole(1, 100_000), default=DEFAULT_BATCH,
                        metavar="N", help="points read from the index and sent a request "
                        "(default: %(default)s)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import time

    from freshrag.core.files import dumps
    from freshrag.core.runfiles import INDEX_DIR
    from freshrag.retrieval.config import IndexConfig
    from freshrag.retrieval.seed import seed

    started = time.monotonic()
    summary = seed(args.index_dir or Path("results") / INDEX_DIR, args.collection,
                   IndexConfig(qdrant_url=args.qdrant_url), args.batch_size)
    print(dumps({**summary, "seconds": round(time.monotonic() - started, 1)}, indent=2))
    return 0
