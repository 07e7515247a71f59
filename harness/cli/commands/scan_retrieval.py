"""`freshrag scan-retrieval`: recall@k of the index per question label and overall, for several
text weights, and the best weight of each; no LLM calls (docs/retrieval.md). The scan is
systems/retrieval/scan.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import (
    INDEX_DIR,
    UsageError,
    add_config,
    add_dataset_options,
    add_index_options,
    add_limit,
    out_dir,
    shares,
    whole,
)
from freshrag.core.fields import FIELDS

HELP = ("recall@k of the index per question label and overall for several text weights, and the "
        "best weight of each; no LLM calls")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scan-retrieval", help=HELP)
    add_dataset_options(p, positional=True)
    p.add_argument("--weights", type=shares, default=(0.0, 0.05, 0.1, 0.2, 0.5, 1.0),
                   help="text weights to try, comma-separated, 0 dense only to 1 lexical only "
                        "(default: 0,0.05,0.1,0.2,0.5,1)")
    p.add_argument("--k", type=whole(1, 1000), default=5,
                   help="chunks retrieved per question (default: %(default)s)")
    p.add_argument("--by", choices=FIELDS, default="label",
                   help="question field whose groups get a row each (default: %(default)s)")
    add_limit(p)
    p.add_argument("--out", type=out_dir, help="where scan-retrieval.json goes "
                   "(default: results/scan-retrieval-DATASET_NAME)")
    add_config(p, "with role endpoints; the embeddings role embeds the questions")
    add_index_options(p, query=False)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import dataset
    from freshrag.core.config import load_settings
    from freshrag.core.files import write_json
    from freshrag.llm.client import LLMClient
    from freshrag.systems.retrieval import scan
    from freshrag.systems.retrieval.embeddings import embedder_for
    from freshrag.systems.retrieval.index import IndexConfig, open_index

    data = dataset(args)
    questions = data.questions[:args.limit]
    if all(question.gold_title is None for question in questions):
        raise UsageError(f"{data.files['questions']}: no question with a gold article to look "
                         f"for among the {len(questions):,} scanned; general queries (kind "
                         f"general) have none")
    index = open_index(data.articles, IndexConfig(
        directory=args.index_dir or Path("results") / INDEX_DIR, qdrant_url=args.qdrant_url,
        chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap, top_k=args.k),
        embedder_for(LLMClient(load_settings(args.config))))
    try:
        result = scan.scan(index, questions, args.weights, args.k, args.by)
    finally:
        index.close()
    out = args.out or Path("results") / f"scan-retrieval-{data.name}"
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / scan.SCAN_FILE, {"dataset": data.name, **result}, ensure_ascii=True)
    print(scan.render(result))
    general = (f" ({result['general_queries']:,} general queries left out: no gold article)"
               if result["general_queries"] else "")
    print(f"\n{result['questions']:,} questions{general}, {result['index']['chunks']:,} chunks, "
          f"{result['seconds']} s; {out / scan.SCAN_FILE} written")
    return 0
