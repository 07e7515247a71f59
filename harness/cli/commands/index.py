"""`freshrag index`: build the retrieval index of a corpus ahead of a run, or check that it is
built (docs/retrieval.md); the index is harness/retrieval/index.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import (
    add_articles,
    add_command,
    add_embedding_options,
    add_index_options,
    add_models,
)

NAME = "index"
HELP = "build the retrieval index ahead of a run (or check it)"


DESCRIPTION = ("Chunks the articles and embeds the chunks (the embeddings role) into the "
               "retrieval index a run with retrieving systems would build on its way, so that "
               "the run starts at once; an index already built is checked, not rebuilt, and one "
               "stopped half-way embeds only what it lacks. With --executor ray the chunks are "
               "embedded by actors on a Ray cluster, one model each, and written here. Prints "
               "what the index holds as JSON.")
EXAMPLES = ("freshrag index --articles datasets/recent/articles.jsonl",
            "freshrag index --articles articles.jsonl --qdrant-url http://localhost:6333",
            "freshrag index --articles articles.jsonl --corpus corpora/known",
            "freshrag index --articles articles.jsonl --corpus corpora/known --executor ray "
            "--address ray://head:10001")
EXECUTOR_HELP = ("how the chunks are embedded: local (this process) or ray (actors on a Ray "
                 "cluster, one embedding model each; the index is written here)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    add_articles(p.add_argument_group("inputs"), required=True)
    add_models(p)
    add_index_options(p.add_argument_group("retrieval index"))
    add_embedding_options(p.add_argument_group("embedding"), EXECUTOR_HELP)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import time

    from freshrag.cli.common import index_config, load_settings, print_roles
    from freshrag.core.dataset import load_articles
    from freshrag.core.files import dumps
    from freshrag.executors.cluster import check_answers
    from freshrag.llm.client import LLMClient
    from freshrag.retrieval.embeddings import embedder_for
    from freshrag.retrieval.index import open_index

    config = index_config(args, Path("results"))
    check_answers(config.executor)  # a cluster that does not answer fails before any work
    articles = load_articles(args.articles)
    settings = load_settings(args)
    print_roles(settings, ("embeddings",))
    started = time.monotonic()
    index = open_index(articles, config, embedder_for(LLMClient(settings)))
    try:
        print(dumps({**index.record(), "articles": len(articles),
                          "seconds": round(time.monotonic() - started, 1)}, indent=2))
    finally:
        index.close()
    return 0
