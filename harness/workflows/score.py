"""The score workflow as a library service (docs/api.md): `score` adds scorers to a finished or
imported run without answering again, into its scores.jsonl, resumably (docs/scoring.md); the
pass itself is harness/scoring/scorepass.py. `freshrag score` parses its options and calls
`prepare_score`; a notebook calls `freshrag.score`.

`prepare_score` refuses what cannot be scored (a directory without answers, a scorer that needs
gold articles not at hand) before a server starts; the prepared pass then gives its estimate or
scores, holding the run directory, under the same budget and batch sequence as a run
(harness/run/runner.py `batch_prefill`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from freshrag.core.config import DEFAULT_CONFIG_FILE, LLMSettings
from freshrag.core.dataset import Dataset, load_articles
from freshrag.core.rundir import locked
from freshrag.core.runfiles import CACHE_FILE
from freshrag.cost import batch, plan
from freshrag.cost.budget import Budget, BudgetExceeded
from freshrag.cost.prices import price_table
from freshrag.llm.client import LLMClient
from freshrag.run import dry_run
from freshrag.run.inputs import InputError, Roles, dataset_of, settings_of
from freshrag.run.options import DEFAULT_CONCURRENCY, DEFAULT_SEED
from freshrag.run.runner import batch_prefill
from freshrag.run.service import check_batch, embed_for, embed_for_needed, opened
from freshrag.scoring import scorepass
from freshrag.workflows.arguments import check_arguments

if TYPE_CHECKING:
    from freshrag.core.records import SampleRow
    from freshrag.core.types import LLM, Article


@dataclass(frozen=True)
class ScoreResult:
    """What a score pass gives back; the scores are in the run's scores.jsonl."""

    out: Path = field(metadata={"help": "the run directory scored"})
    scorers: tuple[str, ...] = field(metadata={"help": "the scorers' names, as given"})
    counts: dict[str, Any] | None = field(metadata={
        "help": "scores asked now, finished before, and each scorer's outcomes; None: capped"})
    capped: BudgetExceeded | None = field(default=None, metadata={
        "help": "why max_cost stopped the pass; finished scores are kept, a rerun resumes"})


def score(run_dir: str | Path, scorers: str | tuple[str, ...] | list[str] = "judge", *,
          dataset: Dataset | str | Path | None = None, articles: str | Path | None = None, repeats: int = 1,
          roles: Roles = None, concurrency: int = DEFAULT_CONCURRENCY, seed: int = DEFAULT_SEED,
          cache: bool = True, max_cost: float | None = None, batch: bool = False,
          batch_poll: float | None = None, config: str | Path | None = None) -> ScoreResult:
    """The `scorers` (names as `freshrag score --scorers` takes them, or a list of them) grade the
    answers already in `run_dir`, each `repeats` times, into its scores.jsonl; running it again
    resumes. Gold articles come from `dataset` (a Dataset or a dataset directory) or the
    `articles` file, else from the run's own dataset. The other arguments are `freshrag score`'s
    options of the same names, checked as it checks them."""
    return prepare_score(run_dir, scorers, dataset=dataset, articles=articles, repeats=repeats,
                         roles=roles, concurrency=concurrency, seed=seed, cache=cache,
                         max_cost=max_cost, batch=batch, batch_poll=batch_poll,
                         config=config).score()


def prepare_score(run_dir: str | Path, scorers: str | tuple[str, ...] | list[str], *,
                  dataset: Dataset | str | Path | None = None, articles: str | Path | None = None,
                  repeats: int = 1, roles: Roles = None, concurrency: int = DEFAULT_CONCURRENCY,
                  seed: int = DEFAULT_SEED, cache: bool = True, max_cost: float | None = None,
                  batch: bool = False, batch_poll: float | None = None,
                  config: str | Path | None = None) -> PreparedScore:
    """A score pass checked and ready: everything `score` refuses is refused here."""
    check_arguments({"run_dir": run_dir, "scorers": scorers, "dataset": dataset,
                     "articles": articles, "repeats": repeats, "roles": roles,
                     "concurrency": concurrency, "seed": seed, "cache": cache,
                     "max_cost": max_cost, "batch": batch, "batch_poll": batch_poll,
                     "config": config})
    if dataset is not None and not isinstance(dataset, Dataset):
        dataset = dataset_of(dataset)  # a dataset directory, as evaluate takes it
    out = Path(run_dir)
    names = scorepass.scorer_names(scorers if isinstance(scorers, str) else ",".join(scorers))
    gold = dataset.articles if dataset is not None else (
        load_articles(Path(articles)) if articles else None)
    rows, golds = scorepass.score_inputs(out, gold)
    problem = scorepass.missing_inputs(rows, names, golds)
    if problem:
        raise InputError(f"{out}: {problem}")
    config_file = Path(config) if config else None
    return PreparedScore(out, names, rows, golds, repeats, settings_of(roles, config_file),
                         out.parent / CACHE_FILE if cache else None, seed, concurrency,
                         max_cost, batch, batch_poll,
                         config_file or (DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists()
                                         else None))


@dataclass
class PreparedScore:
    """A score pass `prepare_score` checked: its settings, for the caller to show, then its
    estimate or the pass itself. Used once."""

    out: Path
    names: tuple[str, ...]
    rows: list[SampleRow]
    articles: dict[str, Article]
    repeats: int
    settings: LLMSettings
    cache: Path | None  # the response cache's file
    seed: int
    concurrency: int
    max_cost: float | None
    batch: bool
    batch_poll: float | None
    config_file: Path | None

    @property
    def roles(self) -> tuple[str, ...]:
        """The chat roles the scorers call."""
        return scorepass.scorer_roles(self.names)

    @property
    def embeddings(self) -> bool:
        return embed_for_needed(self.names)

    @property
    def todo(self) -> bool:
        """Whether a score is left to ask (else no server starts)."""
        return bool(scorepass.pending(self.out, self.rows, self.names, self.repeats))

    def estimate(self) -> str:
        """The dry run's table of what the pass would still spend."""
        return dry_run.dry_run_score(self.out, self.rows, self.names, self.articles, self.repeats,
                                     self.settings, self.cache, self.seed,
                                     price_table(self.config_file), self.batch, self.concurrency)

    def score(self) -> ScoreResult:
        """Every pending score asked, or as many as max_cost allowed."""
        if self.batch:
            check_batch(self.cache is not None, self.settings, self.roles)
        budget = self.max_cost and dry_run.budget(self.max_cost, self.batch, self.settings,
                                                  price_table(self.config_file), self.roles)
        try:
            return ScoreResult(self.out, self.names, self._score(budget or None))
        except BudgetExceeded as err:
            return ScoreResult(self.out, self.names, None, err)

    def _score(self, budget: Budget | None) -> dict[str, Any]:
        """The pass over the run, holding its directory."""
        with locked(self.out), contextlib.ExitStack() as stack:
            llm: LLMClient | None = None
            embed = None
            todo = scorepass.pending(self.out, self.rows, self.names, self.repeats)
            if todo:  # else no server starts
                llm = stack.enter_context(opened(LLMClient(self.settings, seed=self.seed),
                                                 self.cache, self.roles))
                llm.gate, embed = budget, embed_for(llm, self.names)
            scorers = scorepass.make_scorers(self.names, embed)
            if llm is not None and self.batch:  # chat calls only: embeddings stay live
                batch_prefill(llm, self.out, scorers,
                              plan.score_jobs(todo, self.names, self.articles),
                              self.batch_poll or batch.POLL_S, self.concurrency)
            # without a model only when nothing is pending: the pass then makes no call
            return scorepass.score_rows(self.out, self.rows, scorers, cast("LLM", llm),
                                        self.articles, self.repeats, self.concurrency)
