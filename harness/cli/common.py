"""What the commands' handlers share when they run (docs/cli.md): the default config file, the
roles' settings with the models named on the command line and the table of them printed before
the first call, the LLM client with the embedded server started when a role needs it (opened as
the run service opens its own, harness/run/service.py), the dataset and index named on the
command line.

Only handlers import this module, when their command runs; options are in harness/cli/options.py.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from freshrag.cli.options import UsageError
from freshrag.core import config as core_config
from freshrag.core.config import (
    DEFAULT_CONFIG_FILE,
    EMBEDDINGS,
    LOCAL_FALLBACK,
    CommandLine,
    LLMSettings,
)
from freshrag.core.dataset import Dataset, example_dir, load_dataset, load_dataset_dir
from freshrag.core.rundir import RUN_ROLES
from freshrag.core.runfiles import CACHE_FILE as CACHE_FILE
from freshrag.core.runfiles import INDEX_DIR
from freshrag.executors.choice import executor_of
from freshrag.llm.client import LLMClient
from freshrag.retrieval.config import IndexConfig
from freshrag.run import service
from freshrag.run.service import cache_output as cache_output
from freshrag.run.service import embed_for as embed_for
from freshrag.run.service import embed_for_needed as embed_for_needed
from freshrag.run.service import opened

if TYPE_CHECKING:
    pass


def default_config() -> Path | None:
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None


def load_settings(args: argparse.Namespace) -> LLMSettings:
    """The roles' settings: --config's file, the environment, and the models and endpoint of the
    command line (the group "models and endpoints" of harness/cli/options.py)."""
    return core_config.load_settings(args.config, command_line=CommandLine(
        args.model, args.base_url, tuple(args.model_role or ())))


def roles_table(settings: LLMSettings, roles: tuple[str, ...]) -> str:
    """Which model each of `roles` calls, at which endpoint, and where that came from; no key."""
    from freshrag.llm.local_settings import local_settings
    from freshrag.retrieval.embeddings import LocalMiniLM

    rows = []
    for role in roles:
        cfg, origin = settings.role(role), settings.origins.get(role, "default")
        if role == EMBEDDINGS and cfg.is_local:  # in process, whatever the model's name; its
            # name says its precision (all-MiniLM-L6-v2-bf16), which follows the CPU
            rows.append((role, "local (in process)", LocalMiniLM().name, origin if origin !=
                         LOCAL_FALLBACK else "local fallback (--model-role embeddings=M)"))
        elif cfg.is_local:  # its threads, and the variable they came from when one set them
            rows.append((role, f"local (embedded llama.cpp, {local_settings().describe()})",
                         cfg.model, origin))
        else:  # the embedded model's name sent elsewhere: the endpoint will refuse it
            hint = "--model-role embeddings=M" if role == EMBEDDINGS else "--model"
            rows.append((role, cfg.base_url, cfg.model, origin if origin != "default" else
                         f"default, the embedded model's name: give {hint}"))
    widths = [max(len(row[i]) for row in rows + [("role", "endpoint", "model", "from")])
              for i in range(3)]
    return "\n".join(f"  {role:<{widths[0]}}  {endpoint:<{widths[1]}}  {model:<{widths[2]}}  "
                     f"{origin}".rstrip()
                     for role, endpoint, model, origin in [("role", "endpoint", "model", "from"),
                                                           *rows])


def print_roles(settings: LLMSettings, roles: tuple[str, ...], embeddings: bool = False) -> None:
    """The table of `roles` (and of the embeddings role, which needs no server when local),
    on stderr so that stdout stays the command's output; a command prints it before its first
    call."""
    shown = roles + (("embeddings",) if embeddings else ())
    print(f"models:\n{roles_table(settings, shown)}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def llm_client(settings: LLMSettings, cache_path: Path | None, seed: int | None,
               roles: tuple[str, ...] = RUN_ROLES) -> Iterator[LLMClient]:
    """The client, with the embedded server running if any of `roles` needs it."""
    with opened(LLMClient(settings, seed=seed), cache_path, roles) as llm:
        yield llm


def dataset(args: argparse.Namespace) -> Dataset:
    """The dataset of --dataset (or DATASET), or of --questions and --articles; by default the
    example dataset shipped with freshrag."""
    if args.dataset and (args.questions or args.articles):
        raise UsageError("give either --dataset or --questions/--articles, not both")
    if args.questions or args.articles:
        if not (args.questions and args.articles):
            raise UsageError("--questions and --articles go together")
        return load_dataset(args.questions, args.articles)
    return load_dataset_dir(args.dataset or example_dir())


def index_config(args: argparse.Namespace, results_dir: Path) -> IndexConfig:
    """The index of the group "retrieval index" (options.add_index_options), with how a run
    retrieves where the command takes --top-k, and how the build embeds where it takes
    --embed-concurrency (options.add_embedding_options: a bad --address is refused here)."""
    config = IndexConfig(directory=args.index_dir or results_dir / INDEX_DIR,
                         qdrant_url=args.qdrant_url, engine=args.engine,
                         chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap,
                         corpus=args.corpus)
    if hasattr(args, "top_k"):
        config = replace(config, top_k=args.top_k, text_weight=args.text_weight)
    if hasattr(args, "embed_concurrency"):
        config = replace(config, executor=executor_of(args.executor, args.address),
                         embed_concurrency=args.embed_concurrency)
    return config


def check_batch(args: argparse.Namespace, settings: LLMSettings, roles: tuple[str, ...]) -> None:
    """--batch keeps its results in the response cache, on an endpoint with the Batch API."""
    service.check_batch(not args.no_cache, settings, roles)

