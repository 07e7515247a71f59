"""What the commands' handlers share when they run (docs/cli.md): the response cache's file, the
default config file, the roles' settings with the models named on the command line and the table
of them printed before the first call, the LLM client with the embedded server started when a
role needs it, the dataset and index named on the command line, and the lines a run and a report
both print.

Only handlers import this module, when their command runs; options are in harness/cli/options.py.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Callable, Iterator

from freshrag.cli.options import INDEX_DIR, UsageError
from freshrag.core import config as core_config
from freshrag.core.config import (
    DEFAULT_CONFIG_FILE,
    EMBEDDINGS,
    LOCAL_FALLBACK,
    CommandLine,
    LLMSettings,
)
from freshrag.core.dataset import Dataset, example_dir, load_dataset, load_dataset_dir
from freshrag.core.outputs import Output
from freshrag.core.rundir import RUN_ROLES
from freshrag.llm.cache import ResponseCache
from freshrag.llm.client import LLMClient
from freshrag.llm.local_server import LocalServer
from freshrag.reporting import report
from freshrag.scoring import SCORERS
from freshrag.systems.external.plugins import SystemSource
from freshrag.systems.retrieval.embeddings import embedder_for
from freshrag.systems.retrieval.index import IndexConfig

CACHE_FILE = ".llm-cache.sqlite"


def default_config() -> Path | None:
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None


def cache_output(cache: Path | None) -> list[Output]:
    """The response cache among a command's outputs (core/outputs.py), if it keeps one."""
    return [Output(cache, "the response cache", "give --no-cache")] if cache else []


def load_settings(args: argparse.Namespace) -> LLMSettings:
    """The roles' settings: --config's file, the environment, and the models and endpoint of the
    command line (the group "models and endpoints" of harness/cli/options.py)."""
    return core_config.load_settings(args.config, command_line=CommandLine(
        args.model, args.base_url, tuple(args.model_role or ())))


def roles_table(settings: LLMSettings, roles: tuple[str, ...]) -> str:
    """Which model each of `roles` calls, at which endpoint, and where that came from; no key."""
    from freshrag.systems.retrieval.embeddings import LocalMiniLM

    rows = []
    for role in roles:
        cfg, origin = settings.role(role), settings.origins.get(role, "default")
        if role == EMBEDDINGS and cfg.is_local:  # in process, whatever the model's name; its
            # name says its precision (all-MiniLM-L6-v2-bf16), which follows the CPU
            rows.append((role, "local (in process)", LocalMiniLM().name, origin if origin !=
                         LOCAL_FALLBACK else "local fallback (--model-role embeddings=M)"))
        elif cfg.is_local:
            rows.append((role, "local (embedded llama.cpp)", cfg.model, origin))
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
    cache = ResponseCache(cache_path) if cache_path else None  # CacheError names its file
    needs_local = any(settings.role(role).is_local for role in roles)
    with contextlib.ExitStack() as stack:
        local = stack.enter_context(LocalServer()) if needs_local else None
        if cache:
            stack.callback(cache.close)
        yield LLMClient(settings, cache, local=local, seed=seed)


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


def system_sources(specs: str, data: Dataset | None, config: Path | None) -> list[SystemSource]:
    """The systems `--systems` names: built-in, the user's (files, modules, entry points),
    services of freshrag.toml's [systems] (or --config's), answers files matched to `data`."""
    from freshrag.core.config import config_table
    from freshrag.systems import SYSTEMS
    from freshrag.systems.external.plugins import resolve_all, services_from

    file = config or default_config()
    services = services_from(config_table(file, "systems"), str(file)) if file else {}
    return resolve_all(specs, SYSTEMS, services, data.questions if data else None)


def index_config(args: argparse.Namespace, results_dir: Path) -> IndexConfig:
    return IndexConfig(directory=args.index_dir or results_dir / INDEX_DIR,
                       qdrant_url=args.qdrant_url, chunk_size=args.chunk_size,
                       chunk_overlap=args.chunk_overlap, top_k=args.top_k,
                       text_weight=args.text_weight)


def check_batch(args: argparse.Namespace, settings: LLMSettings, roles: tuple[str, ...]) -> None:
    """--batch keeps its results in the response cache, on an endpoint with the Batch API."""
    if args.no_cache:
        raise UsageError("--batch hands its results to the run through the response cache: "
                         "drop --no-cache")
    local = [role for role in roles if settings.role(role).is_local]
    if local:
        raise UsageError(f"--batch needs an endpoint with the Batch API (/v1/files, /v1/batches), "
                         f"such as OpenAI's; the {', '.join(local)} role(s) use the embedded "
                         f"server, which has none")


def embed_for_needed(scorers: tuple[str, ...]) -> bool:
    """Whether a scorer needs the embeddings role."""
    return any("embeddings" in SCORERS[name].needs for name in scorers)


def embed_for(llm: LLMClient, scorers: tuple[str, ...], retriever: object | None = None
              ) -> Callable[[list[str]], list[list[float]]] | None:
    """The embeddings role's function, if a scorer needs it (the retrieval index's own model)."""
    if not embed_for_needed(scorers):
        return None
    return (getattr(retriever, "embedder", None) or embedder_for(llm)).embed


def print_unscored(rows: list[dict]) -> None:
    reasons = report.unscored_reasons(rows)
    if reasons:
        print("\nunscored answers (system: reason × count):")
        for (system, reason), count in reasons.most_common():
            print(f"  {system}: {reason[:300]} × {count}")
