"""The run as a service (docs/api.md): `prepare` checks a run, whose `evaluate` answers, judges
and accounts every (question, system) pair of a dataset into a run directory, resumably, and
whose `estimate` says what that would still spend, without a call. `freshrag run`, `import` and
`cutoff` parse their options and call `prepare`; `freshrag.evaluate` (harness/workflows/
evaluate.py) calls it too and writes the run's summary.

`prepare` checks everything before a server starts, an index is built or a call is made: the
systems, the run directory (no file the run writes is one it reads; a resume may not change what
decides the answers) and the models. The one LLM client it makes names the models for that
check and is then opened (the response cache, the embedded server if a role needs it) for the run.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from freshrag.core.config import LLMSettings
from freshrag.core.dataset import Dataset
from freshrag.core.manifest import read_manifest
from freshrag.core.outputs import Output, check_outputs, files_in
from freshrag.core.records import SampleRow
from freshrag.core.rundir import INDEX_SETTINGS, RUN_ROLES
from freshrag.core.runfiles import CACHE_FILE, INDEX_DIR, RESULTS, RUN_FILES, SAMPLES
from freshrag.core.samples import read_samples, read_summaries
from freshrag.cost import batch
from freshrag.cost.budget import Budget, BudgetExceeded
from freshrag.cost.prices import price_table
from freshrag.executors.choice import executor_of
from freshrag.executors.cluster import connected
from freshrag.llm.cache import ResponseCache
from freshrag.llm.client import LLMClient
from freshrag.llm.local_server import LocalServer
from freshrag.retrieval.background import open_background
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.embeddings import embedder_for
from freshrag.retrieval.index import open_index, store_of
from freshrag.run import dry_run
from freshrag.run.inputs import (
    InputError,
    Roles,
    RunOptions,
    Systems,
    dataset_of,
    settings_of,
    system_sources,
)
from freshrag.run.on_ray import RayPairs, check_ray_run
from freshrag.run.runner import Factories, RunConfig, check_resume, run
from freshrag.run.shard import Shard, check_shard, shard_of
from freshrag.scoring import judge
from freshrag.scoring.plugins import lookup as scorer
from freshrag.scoring.scorepass import scorer_names, scorer_roles
from freshrag.systems import SYSTEMS
from freshrag.systems.external.plugins import SystemSource
from freshrag.systems.prompts import PROMPTS

if TYPE_CHECKING:
    from freshrag.core.summary import AnswerSummary


@dataclass(frozen=True)
class RunResult:
    """What a run gives back; everything else is in its directory (docs/run-format.md)."""

    answers: list[AnswerSummary] = field(metadata={
        "help": "the summary of every row of samples.jsonl, this run's and earlier ones', as a "
                "report reads it (core/summary.py; of the first epoch: --epochs)"})
    out: Path = field(metadata={"help": "the run directory"})
    systems: tuple[str, ...] = field(metadata={"help": "the systems' names, in the order given"})
    capped: BudgetExceeded | None = field(default=None, metadata={
        "help": "why max_cost stopped the run before every pair finished; None: not capped"})

    @property
    def failed(self) -> int:
        """Pairs whose answer failed (an endpoint's or the system's error); a run resumes them."""
        return sum(answer.status == "failed" for answer in self.answers)


def prepare(dataset: Dataset | str | Path | None, systems: Systems, roles: Roles,
            out: str | Path | None, options: RunOptions, *, written: tuple[str, ...] = (),
            dry_run: bool = False) -> PreparedRun:
    """A run checked and ready: everything `evaluate` refuses is refused here, before a server
    starts or an index is built. `written` names the files of `out` that the caller writes
    besides the run's own; a `dry_run` is not refused for what only a live run needs."""
    scorers = scorer_names(",".join(options.scorers))  # a user's scorer loaded and checked
    data = dataset_of(dataset)
    run_dir = Path(out) if out is not None else RESULTS / data.path_name()
    config_file = options.config_file()
    sources = system_sources(systems, data, config_file)
    # Every built-in, so that a resume knows which of the systems run before stated a date (their
    # classes say `uses_date`), and the caller's, built and checked.
    factories: Factories = {**SYSTEMS, **{source.name: source for source in sources
                                          if source.origin != "built-in"}}
    cache = run_dir.parent / CACHE_FILE if options.cache else None
    _check_outputs(run_dir, data, sources, cache, config_file, written)
    config = _run_config(options, run_dir, sources, scorers)
    settings = settings_of(roles, config_file)
    run_roles = tuple(dict.fromkeys(RUN_ROLES + scorer_roles(scorers)))
    if options.batch and not dry_run:
        check_batch(options.cache, settings, run_roles)
    if options.executor == "ray" and not dry_run:
        check_ray_run(settings, options.max_cost)
    prompts = recorded_prompts()
    retrieving = any(source.uses_index for source in sources)
    if options.corpus and not retrieving:
        raise InputError(f"--corpus {options.corpus}: none of the systems "
                         f"({', '.join(source.name for source in sources)}) retrieves; give one "
                         f"that does (naive, react, ...) or drop --corpus")
    # the index, if built on the way, embedded by the run's executor (retrieval/batches.py)
    index = replace(options.index or IndexConfig(directory=run_dir.parent / INDEX_DIR),
                    corpus=options.corpus, executor=executor_of(options.executor,
                                                                options.address)
                    ) if retrieving else None
    llm = LLMClient(settings, seed=options.seed)  # not started: it names the models
    check_resume(data, config, llm, factories, prompts, _index_record(index, llm, data))
    _check_shard(run_dir, options.shard)
    return PreparedRun(data, config, settings, run_roles, index, factories, prompts, cache, llm,
                       options, config_file)


def _check_shard(run_dir: Path, shard: Shard | None) -> None:
    """Refuse a shard that the run directory's manifest or rows say is not the one it holds
    (run/shard.py check_shard); the rows are read only where the manifest cannot tell."""
    manifest = read_manifest(run_dir)
    if manifest is None or shard_of(manifest) is not None or shard is None:
        check_shard(run_dir, shard, manifest, ())
        return
    check_shard(run_dir, shard, manifest, ((row["question_id"], row["system"]) for row in
                                          read_samples(run_dir / SAMPLES, every_epoch=True)))


def _index_record(index: IndexConfig | None, llm: LLMClient,
                  data: Dataset) -> dict[str, Any] | None:
    """The retrieval settings a resume compares (rundir.INDEX_SETTINGS), if a system retrieves;
    the embedding model named without loading it, the engine without opening the index."""
    if index is None:
        return None
    background = (open_background(index.corpus, (), index.chunk_size, index.chunk_overlap)
                  if index.corpus else None)  # an unfinished or missing corpus refused here
    return {**{name: getattr(index, name) for name in INDEX_SETTINGS if hasattr(index, name)},
            "engine": store_of(data.articles.values(), index,
                               background.passages if background else 0),
            "embedding_model": embedder_for(llm).name,
            "corpus": background.record(skipped=0) if background else None}


@dataclass
class PreparedRun:
    """A run `prepare` checked: its settings, for the caller to show, then its estimate or the
    run itself. Used once."""

    dataset: Dataset
    config: RunConfig
    settings: LLMSettings
    roles: tuple[str, ...]  # the chat roles the run calls
    index: IndexConfig | None  # the retrieval index, if a system retrieves
    factories: Factories
    prompts: dict[str, str]
    cache: Path | None  # the response cache's file
    llm: LLMClient
    options: RunOptions
    config_file: Path | None

    @property
    def embeddings(self) -> bool:
        """Whether the run calls the embeddings role (the index's model, or a scorer's)."""
        return bool(self.index) or embed_for_needed(self.config.scorers)

    def estimate(self) -> str:
        """The dry run's table of what the run would still spend."""
        return dry_run.dry_run(self.dataset, self.config, self.settings, self.cache,
                               self.options.seed, self.index, price_table(self.config_file),
                               self.factories)

    def evaluate(self, on_row: Callable[[SampleRow], None] | None = None) -> RunResult:
        """Every unfinished pair answered and judged, or as many as max_cost allowed; `on_row`
        sees each row as it is written."""
        budget = self.options.max_cost and dry_run.budget(  # refused before any call if a
            self.options.max_cost, self.options.batch, self.settings,  # price is missing
            price_table(self.config_file), self.roles)
        answers, capped = self._answer(budget or None, on_row)
        return RunResult(answers, self.config.out, self.config.systems, capped)

    def _answer(self, budget: Budget | None, on_row: Callable[[SampleRow], None] | None
                ) -> tuple[list[AnswerSummary], BudgetExceeded | None]:
        executor = executor_of(self.options.executor, self.options.address)
        with contextlib.ExitStack() as stack:
            # the cluster first: one that cannot be reached fails before a server or an index
            ray = stack.enter_context(connected(executor)) if executor.on_ray else None
            llm = stack.enter_context(opened(self.llm, self.cache, self.roles))
            llm.gate = budget
            retriever = None
            if self.index:
                retriever = open_index(self.dataset.articles, self.index, embedder_for(llm))
                stack.callback(retriever.close)
            embed = embed_for(llm, self.config.scorers, retriever)
            pairs = RayPairs(ray, self.settings, self.options.seed, self.cache,
                             self.index) if ray else None
            try:
                return run(self.dataset, self.config, llm, self.factories, self.prompts,
                           retriever, embed, executor=pairs, on_row=on_row), None
            except BudgetExceeded as err:
                return read_summaries(self.config.out / SAMPLES), err


@contextlib.contextmanager
def opened(llm: LLMClient, cache_path: Path | None, roles: tuple[str, ...]
           ) -> Iterator[LLMClient]:
    """`llm` with the response cache open and the embedded server running if any of `roles`
    needs it; both closed when the block ends."""
    cache = ResponseCache(cache_path) if cache_path else None  # CacheError names its file
    needs_local = any(llm.settings.role(role).is_local for role in roles)
    with contextlib.ExitStack() as stack:
        local = stack.enter_context(LocalServer()) if needs_local else None
        if cache:
            stack.callback(cache.close)
        llm.cache, llm.local = cache, local
        try:
            yield llm
        finally:
            llm.cache = llm.local = None


def cache_output(cache: Path | None) -> list[Output]:
    """The response cache among a command's outputs (core/outputs.py), if it keeps one."""
    return [Output(cache, "the response cache", "give --no-cache")] if cache else []


def check_batch(use_cache: bool, settings: LLMSettings, roles: tuple[str, ...]) -> None:
    """--batch keeps its results in the response cache, on an endpoint with the Batch API."""
    if not use_cache:
        raise InputError("--batch hands its results to the run through the response cache: "
                         "drop --no-cache")
    local = [role for role in roles if settings.role(role).is_local]
    if local:
        raise InputError(f"--batch needs an endpoint with the Batch API (/v1/files, /v1/batches), "
                         f"such as OpenAI's; the {', '.join(local)} role(s) use the embedded "
                         f"server, which has none")


def embed_for_needed(scorers: tuple[str, ...]) -> bool:
    """Whether a scorer needs the embeddings role."""
    return any("embeddings" in scorer(name).needs for name in scorers)


def embed_for(llm: LLMClient, scorers: tuple[str, ...], retriever: object | None = None
              ) -> Callable[[list[str]], list[list[float]]] | None:
    """The embeddings role's function, if a scorer needs it (the retrieval index's own model)."""
    if not embed_for_needed(scorers):
        return None
    return (getattr(retriever, "embedder", None) or embedder_for(llm)).embed


def recorded_prompts() -> dict[str, str]:
    """The prompts a run records in its manifest: the systems' and the judge's."""
    return {**PROMPTS, "judge": judge.JUDGE_PROMPT, "judge_tool": json.dumps(judge.GRADE_TOOL),
            "judge_general": judge.GENERAL_JUDGE_PROMPT,
            "judge_articles": judge.ARTICLES_JUDGE_PROMPT}


def _check_outputs(out: Path, data: Dataset, sources: list[SystemSource], cache: Path | None,
                   config_file: Path | None, also: tuple[str, ...]) -> None:
    """No file the run writes is one it reads (core/outputs.py): the dataset's files, the
    config, a system's file or answers file (`freshrag import`'s ANSWERS)."""
    check_outputs(files_in(out, (*RUN_FILES, *also), "--out") + cache_output(cache),
                  [(f"the dataset's {kind} file", path) for kind, path in data.files.items()]
                  + [(f"the file of system {source.name}", Path(source.where))
                     for source in sources
                     if source.origin in ("file", "answers file", "traces file")]
                  + [("--config", config_file)])


def _run_config(options: RunOptions, out: Path, sources: list[SystemSource],
                scorers: tuple[str, ...]) -> RunConfig:
    return RunConfig(out=out, systems=tuple(source.name for source in sources),
                     limit=options.limit, scorers=scorers,
                     concurrency=options.concurrency, use_cache=options.cache,
                     today=options.today or date.today().isoformat(),
                     knowledge_cutoff=options.knowledge_cutoff,
                     context_tokens=options.context_tokens, probe=options.probe,
                     max_steps=options.max_steps, token_budget=options.token_budget,
                     epochs=options.epochs, shard=options.shard,
                     batch_poll=(options.batch_poll or batch.POLL_S) if options.batch else None,
                     system_sources={source.name: source.record() for source in sources})
