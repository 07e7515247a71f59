"""The dry runs of `run`, `score` and `build`, and the `--max-cost` budget: set up from the
command line's options without starting a server or making a call. A run's estimate walks its
plan's jobs (harness/run/plan.py), the same pairs (each epoch of --epochs one), probes and
scores the run then executes; harness/cost/estimate.py walks jobs with made-up replies and
prices them, harness/cost/budget.py caps what a run spends. docs/costs.md#dry-run;
docs/methods.md#reference-free-metrics for the scorers' calls.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from freshrag.core.config import LLMSettings
from freshrag.core.dataset import Dataset
from freshrag.core.records import SampleRow
from freshrag.core.rundir import RUN_ROLES
from freshrag.cost.budget import BATCH_DISCOUNT, Budget
from freshrag.cost.estimate import (
    MADE_UP_ITEMS,
    StandInRetriever,
    estimate,
    local_stand_in,
    render,
)
from freshrag.cost.plan import score_jobs
from freshrag.llm.cache import ResponseCache
from freshrag.llm.client import LLMClient
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.embeddings import embedder_for
from freshrag.retrieval.index import to_embed
from freshrag.run.config import RunConfig
from freshrag.run.plan import Factories, read_plan
from freshrag.scoring.scorepass import check_same_models, make_scorers, pending, scorer_roles

# what a range spans where a scorer's later calls depend on a list in its reply
SCORER_SPANS = (f"every list in a reply empty (no statement to check) and every list "
                f"{MADE_UP_ITEMS} items long")


def dry_run(dataset: Dataset, config: RunConfig, settings: LLMSettings, cache_path: Path | None,
            seed: int | None, index: IndexConfig | None, prices: dict[str, tuple[float, float]],
            factories: Factories) -> str:
    """The estimate table of what `freshrag run` with `config` would still spend (`index`: the
    retrieval settings if a system retrieves; its chunks stand in for retrievals)."""
    retriever = index and StandInRetriever(dataset.articles, index.chunk_size,
                                           index.chunk_overlap, index.top_k)
    jobs = read_plan(dataset, config).jobs(factories, retriever or None)
    with _client(settings, cache_path, seed, RUN_ROLES + scorer_roles(config.scorers)) as client:
        result = estimate(client, jobs, prices, batch=config.batch_poll is not None,
                          concurrency=config.concurrency, cached_run=cache_path is not None)
    building = index_estimate(dataset, index, settings, prices) if index and index.corpus else ""
    if not set(config.scorers) - {"judge"}:
        return render(result) + building
    return render(result, "pairs, judge probes and scores",
                  f"every decision against retrieval with every list in a reply empty, and "
                  f"every decision for it with every list {MADE_UP_ITEMS} items long") + building


BYTES_A_TOKEN = 4  # English text in UTF-8, for an estimate of an embedding model's tokens
LOCAL_RATES = (149, 268)  # chunks/s of the local MiniLM on 2 cores, int8 and bf16 (measured)


def index_estimate(dataset: Dataset, index: IndexConfig, settings: LLMSettings,
                   prices: dict[str, tuple[float, float]]) -> str:
    """A line on what building the index with its background corpus would embed and cost:
    its chunks, their tokens (estimated from their bytes), and dollars at the embeddings
    model's input price, or the local model's hours (docs/costs.md#dry-run)."""
    llm = LLMClient(settings)
    found = to_embed(dataset.articles, index, embedder_for(llm).name)
    if found is None:
        return "\nthe retrieval index with the corpus is built: nothing to embed"
    chunks, size = found
    tokens = size // BYTES_A_TOKEN
    line = (f"\nthe retrieval index with the corpus {index.corpus}: up to {chunks:,} chunks to "
            f"embed, about {tokens:,} tokens (estimated: {BYTES_A_TOKEN} bytes a token)")
    role = settings.role("embeddings")
    if role.is_local:
        slow, fast = (chunks / rate / 3600 for rate in LOCAL_RATES)
        return (f"{line}; the local model: no dollars, about {fast:,.1f}-{slow:,.1f} hours on "
                f"2 cores, or spread over a Ray cluster (--executor ray)")
    price = prices.get(role.model)
    dollars = (f"${tokens * price[0] / 1e6:,.4f} at {role.model}'s ${price[0]:g} per 1M input "
               f"tokens" if price else f"{role.model} is unpriced (add it to [prices])")
    return f"{line}; {dollars}"


def dry_run_score(run_dir: Path, rows: list[SampleRow], names: tuple[str, ...],
                  articles: dict[str, Any], repeats: int, settings: LLMSettings,
                  cache_path: Path | None, seed: int | None,
                  prices: dict[str, tuple[float, float]], batch: bool, concurrency: int) -> str:
    """The estimate table of the scores `freshrag score` would still ask: every (row, scorer,
    repeat) not finished in scores.jsonl, walked as the score pass runs it."""
    jobs = score_jobs(pending(run_dir, rows, names, repeats), names, articles)
    with _client(settings, cache_path, seed, scorer_roles(names)) as client:
        check_same_models(run_dir, make_scorers(names), client)  # what the pass would refuse
        result = estimate(client, jobs, prices, batch=batch, concurrency=concurrency,
                          cached_run=cache_path is not None)
    return render(result, "scores", SCORER_SPANS) + (
        "\nanswer-relevance's embeddings are not counted: they are not chat calls, and go live "
        "(no Batch API)" if "answer-relevance" in names else "")


@contextlib.contextmanager
def _client(settings: LLMSettings, cache_path: Path | None, seed: int | None,
            roles: tuple[str, ...]) -> Iterator[LLMClient]:
    """A client that reads the cache (if there is one, closed at the end) and calls nothing."""
    cache = ResponseCache(cache_path) if cache_path and cache_path.exists() else None
    local = local_stand_in() if any(settings.role(r).is_local for r in roles) else None
    try:
        yield LLMClient(settings, cache, local=local, seed=seed)
    finally:
        if cache:
            cache.close()


def budget(max_cost: float, batch: bool, settings: LLMSettings,
           prices: dict[str, tuple[float, float]],
           roles: tuple[str, ...] = RUN_ROLES) -> Budget:
    """The --max-cost budget over the command's roles (batch prices under --batch)."""
    return Budget(max_cost, prices, settings, roles, discount=BATCH_DISCOUNT if batch else 1.0)


def dry_run_build(config: Any, settings: LLMSettings, cache_path: Path | None, seed: int | None,
                  prices: dict[str, tuple[float, float]], label: bool = False) -> str:
    """The estimate table of the builder (and, with `label`, labeller) calls `freshrag build`
    would still make."""
    from freshrag.cost.build_estimate import (
        build_jobs,  # the CLI wires builders; harness core does not
    )
    jobs = build_jobs(config, label)
    roles = ("builder", "labeller") if label else ("builder",)
    with _client(settings, cache_path, seed, roles) as client:
        result = estimate(client, jobs, prices, concurrency=config.concurrency,
                          cached_run=cache_path is not None)
    return render(result).replace("pairs and judge probes", "articles")
