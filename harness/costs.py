"""What `freshrag run --dry-run` and `--max-cost` need from the command line: the estimate of a
run directory's remaining work (harness/estimate.py) and the budget (harness/budget.py), set up
from the run's options without starting a server or making a call. PAPER.md section IV."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.budget import BATCH_DISCOUNT, Budget
from harness.cache import ResponseCache
from harness.config import LLMSettings
from harness.dataset import Dataset
from harness.estimate import StandInRetriever, estimate, local_stand_in, render, run_jobs
from harness.llm import LLMClient
from harness.results import SAMPLES, read_manifest, read_samples
from harness.rundir import RUN_ROLES


def dry_run(dataset: Dataset, config: Any, settings: LLMSettings, cache_path: Path | None,
            seed: int | None, index: Any, prices: dict[str, tuple[float, float]],
            factories: dict[str, Any]) -> str:
    """The estimate table of what `freshrag run` with `config` would still spend."""
    cache = ResponseCache(cache_path) if cache_path and cache_path.exists() else None
    local = local_stand_in() if any(settings.role(r).is_local for r in RUN_ROLES) else None
    client = LLMClient(settings, cache, local=local, seed=seed)
    retriever = index and StandInRetriever(dataset.articles, index.chunk_size,
                                           index.chunk_overlap, index.top_k)
    rows = read_samples(config.out / SAMPLES) if (config.out / SAMPLES).exists() else []
    finished = {(row["question_id"], row["system"]) for row in rows if row["status"] == "ok"}
    probe = (read_manifest(config.out) or {}).get("judge_probe") or {}
    probed = bool(config.probe and "fields" in probe and (probe["k"], probe["seed"]) == (
        min(config.probe.k, len(dataset.questions)), config.probe.seed))
    jobs = run_jobs(dataset, config, factories, retriever or None, finished, probed)
    try:
        result = estimate(client, jobs, prices, batch=config.batch_poll is not None,
                          concurrency=config.concurrency)
    finally:
        if cache:
            cache.close()
    return render(result)


def budget(max_cost: float, batch: bool, settings: LLMSettings,
           prices: dict[str, tuple[float, float]]) -> Budget:
    """The --max-cost budget over the run's roles (batch prices under --batch)."""
    return Budget(max_cost, prices, settings, RUN_ROLES,
                  discount=BATCH_DISCOUNT if batch else 1.0)


def dry_run_build(config: Any, settings: LLMSettings, cache_path: Path | None, seed: int | None,
                  prices: dict[str, tuple[float, float]]) -> str:
    """The estimate table of the builder calls `freshrag build` would still make."""
    from builders.estimate import build_jobs  # the CLI wires builders; harness core does not
    jobs = build_jobs(config)
    cache = ResponseCache(cache_path) if cache_path and cache_path.exists() else None
    local = local_stand_in() if settings.role("builder").is_local else None
    try:
        result = estimate(LLMClient(settings, cache, local=local, seed=seed), jobs, prices,
                          concurrency=config.concurrency)
    finally:
        if cache:
            cache.close()
    return render(result).replace("pairs and judge probes", "articles")
