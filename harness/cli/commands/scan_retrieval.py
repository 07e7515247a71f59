"""`freshrag scan-retrieval`: recall@k of the index per question label and overall, for several
text weights, and the best weight of each; no LLM calls (docs/retrieval.md). The scan is
harness/retrieval/scan.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import (
    UsageError,
    add_command,
    add_dataset_options,
    add_embedding_options,
    add_index_options,
    add_limit,
    add_models,
)
from freshrag.cli.values import out_dir, shares, whole
from freshrag.core.fields import FIELDS

NAME = "scan-retrieval"
HELP = "recall@k of the index per label, at several text weights"


DESCRIPTION = ("Retrieves the chunks of every question at each text weight (0 dense only, 1 "
               "lexical only) and counts how often the gold article is among the top k, per "
               "label (or another --by field) and overall. Only the embeddings role is used. "
               "An index not built yet is built on the way, as `freshrag index` builds it: with "
               "--executor ray its chunks are embedded by actors on a Ray cluster.")
EXAMPLES = ("freshrag scan-retrieval --dataset datasets/recent --k 5 --weights 0,0.2,1",
            "freshrag scan-retrieval --dataset datasets/recent --executor ray "
            "--address ray://head:10001")
EXECUTOR_HELP = ("how the chunks of an index not built yet are embedded: local (this process) or "
                 "ray (actors on a Ray cluster, one embedding model each; the index is written "
                 "here)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    add_dataset_options(inputs, alias=True)
    add_limit(inputs)
    _scan_options(p.add_argument_group("scan"))
    add_models(p, "with role endpoints; the embeddings role embeds the questions")
    add_index_options(p.add_argument_group("retrieval index"), query=False)
    add_embedding_options(p.add_argument_group("embedding"), EXECUTOR_HELP)
    p.add_argument_group("output").add_argument(
        "--out", type=out_dir, help="where scan-retrieval.json goes (default: "
        "results/scan-retrieval-DATASET_NAME)")
    p.set_defaults(handler=handle)


def _scan_options(p: argparse._ArgumentGroup) -> None:
    p.add_argument("--weights", type=shares, default=(0.0, 0.05, 0.1, 0.2, 0.5, 1.0),
                   help="text weights to try, comma-separated, 0 dense only to 1 lexical only "
                        "(default: 0,0.05,0.1,0.2,0.5,1)")
    p.add_argument("--k", type=whole(1, 1000), default=5,
                   help="chunks retrieved per question (default: %(default)s)")
    p.add_argument("--by", choices=FIELDS, default="label",
                   help="question field whose groups get a row each (default: %(default)s)")


def handle(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from freshrag.cli.common import dataset, index_config, load_settings, print_roles
    from freshrag.core.files import write_json
    from freshrag.core.outputs import check_outputs, files_in
    from freshrag.executors.cluster import check_answers
    from freshrag.llm.client import LLMClient
    from freshrag.retrieval import scan
    from freshrag.retrieval.embeddings import embedder_for
    from freshrag.retrieval.index import open_index

    config = replace(index_config(args, Path("results")), top_k=args.k)
    check_answers(config.executor)  # a cluster that does not answer fails before any work
    data = dataset(args)
    questions = data.questions[:args.limit]
    if all(question.gold_title is None for question in questions):
        raise UsageError(f"{data.files['questions']}: no question with a gold article to look "
                         f"for among the {len(questions):,} scanned; general queries (kind "
                         f"general) have none")
    out = args.out or Path("results") / f"scan-retrieval-{data.path_name()}"
    check_outputs(files_in(out, (scan.SCAN_FILE,), "--out"),  # before the index is built
                  [(f"the dataset's {kind} file", path) for kind, path in data.files.items()])
    settings = load_settings(args)
    print_roles(settings, ("embeddings",))
    index = open_index(data.articles, config, embedder_for(LLMClient(settings)))
    try:
        result = scan.scan(index, questions, args.weights, args.k, args.by)
    finally:
        index.close()
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / scan.SCAN_FILE, {"dataset": data.name, **result}, ensure_ascii=True)
    print(scan.render(result))
    general = (f" ({result['general_queries']:,} general queries left out: no gold article)"
               if result["general_queries"] else "")
    print(f"\n{result['questions']:,} questions{general}, {result['index']['chunks']:,} chunks, "
          f"{result['seconds']} s; {out / scan.SCAN_FILE} written")
    return 0
