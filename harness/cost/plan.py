"""A run's calls without making them: the systems and the judge walk every pair as in a run, but
through a `Planner`, an LLM that answers from the response cache and hands every other call to
its caller.

Two callers use it (docs/costs.md#dry-run, docs/costs.md#batch): the dry run answers a
miss with a made-up reply shaped like the real one and counts what the call would cost; the batch
pre-pass stops the pair at its first miss (`Pending`) and submits all those calls together, so
that multi-step systems advance stage by stage: all first calls, then all second calls, then the
judge. Requests are built by `LLMClient.prepare`, the code that builds a live call, so what is
counted or submitted is byte for byte what a live run would send (docs/methods.md#systems).

The scorers beyond the judge (docs/scoring.md#scorers) are
walked the same way: `score_jobs` for the rows a run directory holds, and `pair_jobs` with
`scorers` for pairs not answered yet, whose row is made from the walked answer as the runner
makes it. Their embeddings (answer-relevance) are not chat calls: a walk gives them stand-in
vectors, and the live pass embeds.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from freshrag.core.concurrency import map_with_progress
from freshrag.core.dataset import Dataset
from freshrag.core.errors import FreshragError
from freshrag.core.samples import sample_row
from freshrag.core.types import Article, LLMResponse, Question, SystemContext, Usage
from freshrag.llm.client import EndpointError, LLMClient
from freshrag.scoring import judge, probes
from freshrag.scoring.scorepass import Item, Recorder, make_scorers, score_input

# What a caller does with a call the cache cannot answer: return a reply value (as the cache
# stores them) or raise Pending.
OnMiss = Callable[[str, dict[str, Any], str], dict[str, Any]]


@dataclass(frozen=True)
class PlannedCall:
    """One call a job made or would make: its request, cache key, and whether the cache had it."""

    role: str
    request: dict[str, Any]
    key: str
    cached: bool
    value: dict[str, Any]


class Pending(FreshragError):
    """A call the cache cannot answer yet: the job waits for it."""

    def __init__(self, call: PlannedCall):
        super().__init__(call.key)
        self.call = call


class Planner:
    """The LLM Protocol over the response cache; a miss goes to `on_miss`."""

    def __init__(self, client: LLMClient, on_miss: OnMiss):
        self.client = client
        self.on_miss = on_miss
        self._job = threading.local()

    def chat(self, role: str, messages: list[dict[str, Any]], **options: Any) -> LLMResponse:
        request, key = self.client.prepare(role, messages, **options)
        value = self.client.cache.get(key) if self.client.cache else None
        cached = value is not None
        if not cached:
            try:
                value = self.on_miss(role, request, key)
            except Pending:
                self._calls().append(PlannedCall(role, request, key, False, {}))
                raise
        self._calls().append(PlannedCall(role, request, key, cached, value))
        return LLMResponse(role=role, model=request["model"], text=value["text"],
                           tool_name=value["tool_name"], tool_arguments=value["tool_arguments"],
                           usage=Usage(**value["usage"]), latency_s=0.0, cache_hit=cached,
                           messages=messages)

    def _calls(self) -> list[PlannedCall]:
        return self._job.calls

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[PlannedCall]]:
        self._job.calls = calls = []
        try:
            yield calls
        finally:
            self._job.calls = None


@dataclass(frozen=True)
class Job:
    """One unit of a run: a (question, system) pair answered and judged, or a judge probe."""

    name: str
    run: Callable[[Planner], None]


@dataclass
class Walked:
    """What one job did under the planner: its calls, and the miss it stopped at (if any)."""

    job: Job
    calls: list[PlannedCall]
    pending: PlannedCall | None = None
    error: str | None = None  # an EndpointError the job raised (e.g. a refused request)


def pair_jobs(dataset: Dataset, pairs: list[tuple[Question, str]], factories: dict[str, Any],
              context: SystemContext, scorers: tuple[str, ...] = ()) -> list[Job]:
    """A job per pair: the system answers, the judge grades, as `runner.answer_and_grade` does;
    then each of `scorers` (beyond the judge) scores the row, as the run's score pass does."""
    walkers = make_scorers(scorers, stand_in_embed)

    def job(question: Question, name: str) -> Job:
        def run(planner: Planner) -> None:
            recorder = Recorder(planner)
            system = factories[name](replace(context, llm=recorder))
            # A system that calls out of freshrag (a service) is not asked in a walk: its
            # stand-in answer feeds the judge's estimate instead.
            answer = (system.stand_in if hasattr(system, "stand_in") else system.answer)(question)
            grade, _ = judge.grade(recorder, question, answer.text,
                                   dataset.gold_article(question))
            if walkers:  # the row the runner writes, as its score pass reads it
                row = sample_row(dataset.name, question, name, answer, grade, recorder.calls, 0)
                for scorer in walkers.values():
                    scorer.score(planner, score_input(row, dataset.articles, 0))
        return Job(f"{question.id}/{name}", run)

    return [job(question, name) for question, name in pairs]


def score_jobs(items: list[Item], scorers: tuple[str, ...],
               articles: dict[str, Article]) -> list[Job]:
    """A job per (row, scorer, repeat) a score pass would score (`scorepass.pending`)."""
    walkers = make_scorers(scorers, stand_in_embed)

    def job(item: Item) -> Job:
        row, name, repeat = item
        def run(planner: Planner) -> None:
            walkers[name].score(planner, score_input(row, articles, repeat))
        return Job(f"{row['question_id']}/{row['system']} {name} #{repeat}", run)

    return [job(item) for item in items]


def stand_in_embed(texts: list[str]) -> list[list[float]]:
    """Vectors for a walk: answer-relevance embeds after its only chat call, so what it embeds
    changes no request; the live pass embeds for real."""
    return [[1.0] for _ in texts]


def probe_jobs(dataset: Dataset, settings: probes.ProbeSettings | None) -> list[Job]:
    """A job per judge probe the run would grade (none when probing is off or impossible)."""
    if settings is None:
        return []
    try:
        made = probes.make_probes(dataset.questions, dataset.articles, settings.k, settings.seed)
    except probes.ProbeError:
        return []

    def job(probe: probes.Probe) -> Job:
        def run(planner: Planner) -> None:
            judge.grade(planner, probe.question, probe.answer,
                        dataset.articles[probe.question.gold_title])
        return Job(f"probe {probe.question.id}/{probe.kind}", run)

    return [job(probe) for probe in made]


def walk(jobs: list[Job], planner: Planner, concurrency: int = 8, desc: str = "plan") -> list[Walked]:
    """Every job run under the planner, in parallel (retrievals overlap); a job stopped by a
    miss keeps the calls made before it."""

    def one(job: Job) -> Walked:
        with planner.recording() as calls:
            try:
                job.run(planner)
            except Pending as pending:
                return Walked(job, list(calls[:-1]), pending.call)
            except EndpointError as err:
                return Walked(job, list(calls), error=str(err))
        return Walked(job, list(calls))

    return map_with_progress(one, jobs, concurrency, desc=desc, unit="job")
