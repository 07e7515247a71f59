"""`freshrag index`: build the retrieval index of a corpus ahead of a run, or check that it is
built (docs/retrieval.md); the index is systems/retrieval/index.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import add_articles, add_config, add_index_options

HELP = "build the retrieval index ahead of a run (or check it)"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help=HELP)
    add_articles(p, required=True)
    add_config(p)
    add_index_options(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import time

    from freshrag.cli.common import index_config
    from freshrag.core.config import load_settings
    from freshrag.core.dataset import load_articles
    from freshrag.core.files import dumps
    from freshrag.llm.client import LLMClient
    from freshrag.systems.retrieval.embeddings import embedder_for
    from freshrag.systems.retrieval.index import open_index

    articles = load_articles(args.articles)
    started = time.monotonic()
    index = open_index(articles, index_config(args, Path("results")),
                       embedder_for(LLMClient(load_settings(args.config))))
    try:
        print(dumps({**index.record(), "articles": len(articles),
                          "seconds": round(time.monotonic() - started, 1)}, indent=2))
    finally:
        index.close()
    return 0
