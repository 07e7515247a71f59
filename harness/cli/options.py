"""The options of the `freshrag` command (docs/cli.md): each command's parser, and the options
several commands share, each declared once here with its help and default. Their values are
parsed by harness/cli/values.py, which refuses a bad one before anything runs; rules between
options, which argparse checks one at a time, are `check_together`'s.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Iterable

from freshrag.cli.values import (
    date_or_today,
    dollars,
    iso_date,
    name,
    path,
    role_model,
    seconds,
    share,
    url,
    whole,
)
from freshrag.core.config import LOCAL_MODEL
from freshrag.core.errors import UserError
from freshrag.core.runfiles import INDEX_DIR
from freshrag.core.types import ROLES
from freshrag.executors.choice import DEFAULT_EXECUTOR, EXECUTORS
from freshrag.run.options import (
    ADDRESS_HELP,
    CORPUS_HELP,
    DEFAULT_CONCURRENCY,
    DEFAULT_SEED,
    MAX_CONCURRENCY,
    MAX_SEED,
    RUN_OPTIONS,
    RunOption,
)

# Ranges of the numeric options, stated in their messages (seed and concurrency: the run's own).
MAX_CHUNK = 10_000_000  # characters
MAX_IN_FLIGHT = 4096  # batches of chunks embedded at once
# One default per option for every command. 8 requests in flight suits a remote endpoint (the
# embedded server queues what its slots cannot take); seed 0 makes a rerun send the same requests,
# so that the cache answers them and a seeded endpoint repeats itself.
DATASET_ALIAS = "dataset_argument"  # the positional DATASET, an alias of --dataset
EXAMPLE_DEFAULT = (" (default: the example dataset shipped with freshrag, 40 questions on "
                   "invented articles; `freshrag datasets` prints its folder)")


class UsageError(UserError):
    """Options that do not fit together or name nothing known."""


class HelpFormatter(argparse.HelpFormatter):
    """Paragraphs wrapped to the terminal; lines indented by two spaces (examples) kept as
    written; each command's summary beside its name."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):  # argparse measures the commands'
            self._action_max_length += 2  # names 2 columns less indented than it prints them

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + line if line.startswith("  ") or not line.strip()
                         else super(HelpFormatter, self)._fill_text(line, width, indent)
                         for line in text.splitlines())


def add_command(sub: argparse._SubParsersAction, name: str, summary: str, description: str,
                examples: Iterable[str]) -> argparse.ArgumentParser:
    """A command's parser: its one-line summary (listed by `freshrag --help`), a description of
    what it does and reads and writes, and examples, each a command line. Every option declared
    `type=Path` is parsed by `path` (argparse's registry of types), so that no command takes a
    path the file system or a results file cannot hold."""
    p = sub.add_parser(name, help=summary, description=f"{summary[0].upper()}{summary[1:]}."
                       f"\n\n{description}", formatter_class=HelpFormatter,
                       epilog="examples:\n" + "\n".join(f"  {line}" for line in examples))
    p.register("type", Path, path)
    return p


Group = argparse.ArgumentParser | argparse._ArgumentGroup  # where an option is declared


def add_models(p: argparse.ArgumentParser, config: str = "with role endpoints") -> None:
    """The group "models and endpoints": one model for every role, one role's model, the
    endpoint, the config file; each option names the variable it stands for (core/config.py)."""
    group = p.add_argument_group("models and endpoints", "Later wins: defaults, --config, "
                                 "FRESHRAG_* variables, these options. The key is never an "
                                 "option: export FRESHRAG_API_KEY (or FRESHRAG_<ROLE>_API_KEY).")
    group.add_argument("--model", type=name, help="the model of every role but embeddings, on "
                       "the endpoint of --base-url (env FRESHRAG_MODEL; default: the embedded "
                       f"server's {LOCAL_MODEL})")
    group.add_argument("--model-role", type=role_model, action="append", metavar="ROLE=MODEL",
                       help="one role's model, over --model; repeatable, e.g. --model-role "
                            "judge=gpt-4o (env FRESHRAG_<ROLE>_MODEL, e.g. FRESHRAG_JUDGE_MODEL). "
                            "Embeddings stay on the local all-MiniLM-L6-v2 until named: "
                            "--model-role embeddings=text-embedding-3-small (env "
                            f"FRESHRAG_EMBEDDINGS_MODEL); roles: {', '.join(ROLES)}")
    group.add_argument("--base-url", type=url, metavar="URL", help="the OpenAI-compatible "
                       "endpoint of every role, e.g. https://api.openai.com/v1 (env "
                       "FRESHRAG_BASE_URL, one role: FRESHRAG_<ROLE>_BASE_URL; default: the "
                       "embedded llama.cpp server, whose runtime FRESHRAG_LOCAL_RUNTIME picks "
                       "and threads FRESHRAG_LOCAL_THREADS)")
    add_config(group, config)


def add_config(p: Group, what: str = "with role endpoints") -> None:
    p.add_argument("--config", type=Path, help=f"TOML file {what} (default: ./freshrag.toml)")


def add_no_cache(p: Group) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="do not read or write the response cache")


def add_concurrency(p: Group, what: str) -> None:
    """`what` says what runs at once, e.g. "questions labelled at once"."""
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=DEFAULT_CONCURRENCY,
                   help=f"{what} (default: %(default)s)")


def add_seed(p: Group, what: str = "sent with every LLM request") -> None:
    p.add_argument("--seed", type=whole(0, MAX_SEED), default=DEFAULT_SEED,
                   help=f"seed {what} (default: %(default)s)")


def add_limit(p: Group) -> None:
    add_run_option(p, RUN_OPTIONS["limit"])


def add_run_option(p: Group, option: RunOption) -> None:
    """The flag of a run option as run/options.py declares it: its range or a date, its default
    (or the value that stands for None), its help with the default said."""
    default = option.unset if option.default is None else option.default
    if option.range is None:
        kind: Callable[[str], object] = date_or_today if option.unset == "today" else iso_date
    else:
        low, high = option.range
        kind = whole(0 if option.unset == 0 else low, high)
    p.add_argument(option.flag, type=kind, default=default, metavar=option.metavar,
                   help=option.help + (" (default: %(default)s)" if default is not None else ""))



def add_dataset(p: Group, detail: str = "", alias: bool = False) -> None:
    """--dataset DIR, the one spelling of a dataset on every command; with `alias`, also the
    positional DATASET the command took before, still accepted (`check_together` merges them)."""
    p.add_argument("--dataset", type=Path, metavar="DIR",
                   help=f"dataset directory (questions.jsonl, articles.jsonl){detail}")
    if alias:
        p.add_argument(DATASET_ALIAS, type=Path, nargs="?", metavar="DATASET",
                       help="the same as --dataset; still accepted as the first argument")


def add_dataset_options(p: Group, detail: str = EXAMPLE_DEFAULT, alias: bool = False) -> None:
    """A dataset directory (--dataset), or its two files."""
    add_dataset(p, detail, alias)
    p.add_argument("--questions", type=Path, metavar="FILE", help="questions JSON Lines file "
                   "(title, question); with --articles, instead of --dataset")
    add_articles(p, " (title, content); with --questions, instead of --dataset")


def add_articles(p: Group, detail: str = " (title, content)", required: bool = False) -> None:
    p.add_argument("--articles", type=Path, required=required, metavar="FILE",
                   help=f"articles JSON Lines file{detail}")


def add_scorers(p: Group, default: str | None = None, detail: str = "") -> None:
    """--scorers, required unless it has a `default`."""
    from freshrag.scoring import SCORERS

    p.add_argument("--scorers", required=default is None, default=default,
                   help=f"comma-separated scorers, from: {', '.join(SCORERS)}, or your own as "
                        f"[NAME=]FILE.py:CLASS, [NAME=]MODULE:CLASS or an installed package's "
                        f"(docs/scoring.md#your-own-scorer){detail}")


def add_probe_options(p: Group) -> None:
    from freshrag.scoring import probes

    p.add_argument("--probe-k", dest="probe_k", type=whole(1, 1_000_000), default=probes.PROBES,
                   help="questions whose probes the judge grades (default: %(default)s)")
    p.add_argument("--probe-seed", type=whole(0, MAX_SEED), default=0,
                   help="seed of the probes' questions (default: %(default)s)")
    p.add_argument("--probe-threshold", dest="probe_threshold", type=share,
                   default=probes.THRESHOLD,
                   help="discrimination below which the judge's scores are reported as not "
                        "informative (default: %(default)s; 0.5 is chance)")
    p.add_argument("--probe-context", dest="probe_context", choices=probes.CONTEXTS,
                   default="passage",
                   help="what the judge grades probes against: the passage of the gold article "
                        "they test (a few of its sentences) or the whole article, as "
                        "a run's answers are graded (default: %(default)s)")


def add_index_options(p: Group, query: bool = True) -> None:
    """Where the index is and how it chunks; with `query`, how a run retrieves from it."""
    from freshrag.retrieval.config import DEFAULT_DIRECTORY, EDGE_ABOVE, ENGINES, IndexConfig

    defaults = IndexConfig()
    p.add_argument("--qdrant-url", type=url,
                   help="Qdrant server URL (default: embedded Qdrant on disk)")
    p.add_argument("--index-dir", type=Path, help="embedded Qdrant's directory "
                   f"(default: {INDEX_DIR} beside the run directories, e.g. {DEFAULT_DIRECTORY})")
    p.add_argument("--engine", choices=ENGINES, default=defaults.engine,
                   help="where the index in --index-dir is kept: qdrant-client's local mode, the "
                        "Qdrant engine in-process (HNSW on disk, for millions of chunks), or auto: "
                        f"local mode up to {EDGE_ABOVE:,} chunks (default: %(default)s)")
    p.add_argument("--corpus", type=Path, metavar="DIR", help=f"{CORPUS_HELP} (default: none)")
    p.add_argument("--chunk-size", type=whole(1, MAX_CHUNK), default=defaults.chunk_size,
                   help="characters per chunk (default: %(default)s)")
    p.add_argument("--chunk-overlap", type=whole(0, MAX_CHUNK - 1), default=defaults.chunk_overlap,
                   help="characters shared by neighbouring chunks (default: %(default)s)")
    if not query:
        return
    p.add_argument("--top-k", type=whole(1, 1000), default=defaults.top_k,
                   help="chunks retrieved per query (default: %(default)s)")
    p.add_argument("--text-weight", type=share, default=defaults.text_weight,
                   help="weight of the lexical (BM25) side in retrieval: 0 dense only, 1 lexical "
                        "only, between: both fused (default: %(default)s)")


def add_executor_options(p: Group, executor_help: str) -> None:
    """--executor and --address (docs/running.md#running-on-a-ray-cluster); no Ray is loaded."""
    p.add_argument("--executor", choices=EXECUTORS, default=DEFAULT_EXECUTOR,
                   help=f"{executor_help} (default: %(default)s)")
    p.add_argument("--address", metavar="ADDRESS", help=ADDRESS_HELP)


def add_embedding_options(p: Group, executor_help: str) -> None:
    """How a command that builds the index embeds its chunks: --executor and --address, and the
    batches in flight (docs/retrieval.md#building-on-a-ray-cluster)."""
    add_executor_options(p, executor_help)
    p.add_argument("--embed-concurrency", type=whole(0, MAX_IN_FLIGHT), default=0, metavar="N",
                   help="batches of chunks embedded at once: requests in flight to an embeddings "
                        "endpoint, or batches in flight on Ray in all; 0: 1 for the local model, "
                        "4 for an endpoint, 2 per Ray actor (default: %(default)s)")


def add_dry_run(p: Group, what: str = "the calls, tokens and dollars per role and model this "
                "command would spend") -> None:
    p.add_argument("--dry-run", action="store_true",
                   help=f"print {what}, and exit without calling")


def add_cost_options(p: Group) -> None:
    add_dry_run(p)
    p.add_argument("--max-cost", type=dollars, metavar="USD", help="stop making new calls once "
                   "dollars spent plus the estimate of the calls in flight would pass USD; the "
                   "run ends resumable (exit 3)")
    p.add_argument("--batch", action="store_true", help="send the calls through the OpenAI Batch "
                   "API first (half price, within 24 h), stage by stage; resumes polling if killed")
    p.add_argument("--batch-poll", type=seconds, metavar="S",
                   help="first wait between polls of a batch, growing 1.5x to 60 s "
                        "(default: 5)")


def check_together(args: argparse.Namespace) -> None:
    """Rules between options, which argparse checks one at a time; the positional DATASET
    becomes --dataset."""
    alias = getattr(args, DATASET_ALIAS, None)
    if alias is not None:
        if args.dataset is not None and args.dataset != alias:
            raise UsageError(f"give the dataset once: --dataset {args.dataset} and DATASET "
                             f"{alias} differ")
        args.dataset = alias
    size, overlap = getattr(args, "chunk_size", None), getattr(args, "chunk_overlap", None)
    if size is not None and overlap is not None and overlap >= size:
        raise UsageError(f"--chunk-overlap must be less than --chunk-size ({size:,}), "
                         f"got {overlap:,}")
