"""Calls walked without making them: jobs (a run's pairs and probes, a score pass's scores, a
build's stages) run their own code against a `Planner`, an LLM that answers from the response
cache and hands every other call to its caller. What the jobs of a run are is the run's plan
(harness/run/plan.py); this module knows no run.

Two callers use it (docs/costs.md#dry-run, docs/costs.md#batch): the dry run answers a
miss with a made-up reply shaped like the real one and counts what the call would cost; the batch
pre-pass stops the job at its first miss (`Pending`) and submits all those calls together, so
that multi-step systems advance stage by stage: all first calls, then all second calls, then the
judge. Requests are built by `LLMClient.prepare`, the code that builds a live call, so what is
counted or submitted is byte for byte what a live run would send (docs/methods.md#systems).

The scorers beyond the judge (docs/scoring.md#scorers) are walked by `score_jobs`, for the rows
a run directory holds. Their embeddings (answer-relevance) are not chat calls: a walk gives them
stand-in vectors, and the live pass embeds.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from freshrag.core.concurrency import map_with_progress
from freshrag.core.errors import FreshragError
from freshrag.core.types import Article, LLMResponse, Usage
from freshrag.llm.client import EndpointError, LLMClient
from freshrag.scoring.scorepass import Item, checked_score, make_scorers, score_input

PROBES = "judge probes"  # the group of the judge probes' jobs (harness/run/plan.py)

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
        found = self.client.cache.get(key) if self.client.cache else None
        cached = found is not None
        try:
            value = found if found is not None else self.on_miss(role, request, key)
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
        self._job.calls = calls = list[PlannedCall]()
        try:
            yield calls
        finally:
            self._job.calls = None


@dataclass(frozen=True)
class Job:
    """One unit of walked work: a (question, system) pair answered and judged, a judge probe,
    a score, a build's article."""

    name: str
    run: Callable[[Planner], None]
    # what the dry run's table per system counts its calls under: a pair's system, a score's
    # row's system, `PROBES`; None (a build's jobs): no such table
    group: str | None = None


@dataclass
class Walked:
    """What one job did under the planner: its calls, and the miss it stopped at (if any)."""

    job: Job
    calls: list[PlannedCall]
    pending: PlannedCall | None = None
    error: str | None = None  # an EndpointError the job raised (e.g. a refused request)


def score_jobs(items: list[Item], scorers: tuple[str, ...],
               articles: dict[str, Article]) -> list[Job]:
    """A job per (row, scorer, repeat) a score pass would score (`scorepass.pending`)."""
    walkers = make_scorers(scorers, stand_in_embed)

    def job(item: Item) -> Job:
        row, name, repeat = item
        def run(planner: Planner) -> None:
            checked_score(walkers[name], name, planner, score_input(row, articles, repeat))
        return Job(f"{row['question_id']}/{row['system']} {name} #{repeat}", run, row["system"])

    return [job(item) for item in items]


def stand_in_embed(texts: list[str]) -> list[list[float]]:
    """Vectors for a walk: answer-relevance embeds after its only chat call, so what it embeds
    changes no request; the live pass embeds for real."""
    return [[1.0] for _ in texts]


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
