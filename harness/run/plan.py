"""A run's plan: what `freshrag run` still has to do in its directory, computed once, and what
each piece of it does. The runner executes it with the live client; the dry run
(harness/run/dry_run.py) and the batch pre-pass (harness/cost/batch.py) walk the same pieces
under a `freshrag.cost.plan.Planner` (docs/running.md#the-plan, docs/costs.md#dry-run).

The resume rules live here alone: a pair whose row has the status `ok` is finished, every other
pair is answered (again), each epoch of it on its own (--epochs: docs/running.md#epochs); the
judge is probed unless the manifest holds a verdict over the same probes (k, seed, context); the
scorers beyond the judge score every row of the first epoch (what the tables read) not scored
yet for its current answer (scoring/scorepass.py `pending`). A pair is `answer_and_grade`: the
system answers, the judge grades, both through the recorder that keeps the pair's calls and keys
them by the pair's epoch; its row is then scored.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, cast

from freshrag.core.dataset import Dataset
from freshrag.core.errors import UserError, said, traceback_of
from freshrag.core.manifest import read_manifest
from freshrag.core.records import Manifest, SampleRow
from freshrag.core.samples import (
    SAMPLES,
    answer_problem,
    epoch_of,
    read_samples,
    row_problem,
    sample_row,
)
from freshrag.core.types import (
    LLM,
    CallShape,
    LLMResponse,
    Question,
    Retriever,
    StandIn,
    System,
    SystemAnswer,
    SystemContext,
    call_shape,
    uses_endpoint,
)
from freshrag.cost.budget import BudgetExceeded
from freshrag.cost.plan import PROBES, Job, Pending, Planner, score_jobs, stand_in_embed
from freshrag.llm.cache import CacheError
from freshrag.llm.client import EndpointError, EndpointUnreachable
from freshrag.llm.forward import Endpoint
from freshrag.llm.forward_session import BoundReached
from freshrag.run.config import RunConfig
from freshrag.scoring import judge, probes
from freshrag.scoring.base import Scorer
from freshrag.scoring.probes import ProbeSettings
from freshrag.scoring.scorepass import (
    Item,
    checked_score,
    make_scorers,
    pending,
    score_input,
)

Factories = dict[str, Callable[[SystemContext], System]]
Pair = tuple[Question, str, int]  # a question, a system, and which epoch of it (1..--epochs)
MAX_ANSWER_CHARS = 1_000_000  # as the LLM client's MAX_REPLY_CHARS: no answer is longer


@dataclass(frozen=True)
class RunPlan:
    """What a run still has to do: the unfinished pairs, the judge probes due, the scores
    pending on finished rows, and the scorers (beyond the judge) that score every row."""

    dataset: Dataset
    config: RunConfig
    pairs: list[Pair]
    probe: ProbeSettings | None  # the probes to grade now; None: none (off, or graded before)
    probed: dict[str, Any] | None  # the verdict a resume keeps instead (the manifest's)
    scores: list[Item]
    scorers: tuple[str, ...]

    def jobs(self, factories: Factories, retriever: Retriever | None) -> list[Job]:
        """Every call of the plan as jobs for a walk: the probes, the pairs (each scored after
        its judge), the pending scores."""
        walkers = make_scorers(self.scorers, stand_in_embed)
        return (probe_jobs(self.dataset, self.probe)
                + [pair_job(self, pair, factories[pair[1]], retriever, walkers)
                   for pair in self.pairs]
                + score_jobs(self.scores, self.scorers, self.dataset.articles))


def make_plan(dataset: Dataset, config: RunConfig, rows: list[SampleRow],
              manifest: Manifest | None) -> RunPlan:
    """The plan of `config` over the run directory's `rows` (of every epoch) and its manifest
    (None: new): the pairs of every epoch up to `config.epochs`, epoch by epoch, those of
    `config.shard` alone if it is one (run/shard.py), which it records in `manifest`: the runner
    writes that manifest from here on."""
    finished = {(row["question_id"], row["system"], epoch_of(row)) for row in rows
                if row["status"] == "ok"}
    shard = config.shard
    pairs = [(q, name, epoch) for epoch in range(1, config.epochs + 1)
             for q in dataset.questions[:config.limit] for name in config.systems
             if (q.id, name, epoch) not in finished and (shard is None or shard.holds(q.id, name))]
    if shard is not None and manifest is not None:
        manifest["shard"] = shard.record()
    scorers = tuple(name for name in config.scorers if name != "judge")
    probe = probes.scaled(config.probe, len(dataset.questions[:config.limit]),  # a small run's
                          len(config.systems))
    probed = kept_probe(dataset, probe, (manifest or {}).get("judge_probe"))
    first = [row for row in rows if epoch_of(row) == 1]
    return RunPlan(dataset, config, pairs, None if probed else probe, probed,
                   pending(config.out, first, scorers, 1) if scorers else [], scorers)


def system_context(dataset: Dataset, config: RunConfig, llm: LLM, retriever: Retriever | None,
                   factory: object = None) -> SystemContext:
    """What the run's system made by `factory` may use, calling `llm`; a system declaring
    `uses_endpoint` gets `endpoint` too, for an agent framework to call `llm` through (it serves
    nothing until the system opens a session)."""
    return SystemContext(llm=llm, articles=dataset.articles, retriever=retriever,
                         today=config.today, knowledge_cutoff=config.knowledge_cutoff,
                         context_tokens=config.context_tokens, max_steps=config.max_steps,
                         token_budget=config.token_budget,
                         endpoint=Endpoint(llm, retriever) if uses_endpoint(factory) else None)


def built(factory: Callable[[SystemContext], System], context: SystemContext) -> System:
    """The run's system made by `factory` with `context`: the endpoint its framework calls
    through is held to the most calls its `call_shape` declares for one answer, as a walk holds
    it (`_Bounded`), a call past it refused and the answer `stopped` there."""
    system = factory(context)
    if isinstance(context.endpoint, Endpoint) and (shape := call_shape(system)) is not None:
        context.endpoint.most = shape.steps[1]
    return system


def read_plan(dataset: Dataset, config: RunConfig) -> RunPlan:
    """The plan of `config` over what its run directory holds now."""
    return make_plan(dataset, config, read_samples(config.out / SAMPLES, every_epoch=True),
                     read_manifest(config.out))


def kept_probe(dataset: Dataset, settings: ProbeSettings | None,
               previous: dict[str, Any] | None) -> dict[str, Any] | None:
    """The verdict a resume keeps: its run graded the same probes (finished calls are not made
    again, with or without the cache); None when the probes are due or probing is off."""
    if settings and previous and "fields" in previous and (
            previous["k"], previous["seed"], previous.get("context", "article")) == (
            min(settings.k, len(dataset.questions)), settings.seed, settings.context):
        return previous  # a verdict from before --probe-context was over whole articles
    return None


class CallRecorder:
    """The LLM as the systems and the judge see it in a pair: each call goes to the client and is
    also kept for the pair that the calling thread is working on, so that a pair failing part-way
    still accounts for the tokens it spent. A pair runs on one thread from start to end. The
    calls of a pair's epoch above 1 carry it to the client (LLMClient.chat `epoch`), which makes
    it part of their cache key: an epoch is asked anew, never answered by an earlier one."""

    def __init__(self, llm: LLM):
        self.llm = llm
        self._pair = threading.local()

    def chat(self, role: str, messages: list[dict[str, Any]], **options: Any) -> LLMResponse:
        epoch = getattr(self._pair, "epoch", 1)
        if epoch > 1:  # the client's and the planner's option, not the LLM Protocol's
            options = {**options, "epoch": epoch}
        response = self.llm.chat(role, messages, **options)  # options as in the LLM Protocol
        calls = getattr(self._pair, "calls", None)
        if calls is not None:
            calls.append(response)
        return response

    @contextlib.contextmanager
    def recording(self, epoch: int = 1) -> Iterator[list[LLMResponse]]:
        """Every call this thread makes inside the block, in order, for the pair's `epoch`."""
        self._pair.calls = calls = list[LLMResponse]()
        self._pair.epoch = epoch
        try:
            yield calls
        finally:
            self._pair.calls, self._pair.epoch = None, 1


class AnswerNotKept(EndpointError):
    """A system's answer freshrag does not keep (longer than it keeps, or of a kind no row
    holds: docs/faults.md#what-a-system-returns): the pair fails, its row without the answer."""


class CallShapeExceeded(UserError):
    """A walked system made more calls than its `call_shape` allows (docs/own-system.md)."""


# What no other pair can get past (an endpoint gone, the budget, the cache) or a walk's stop
# (a call to wait for, a shape broken): raised out of a pair, never its failed row.
STOPS = (EndpointUnreachable, BudgetExceeded, CacheError, Pending, CallShapeExceeded)


def answer_and_grade(dataset: Dataset, question: Question, name: str, system: System,
                     llm: CallRecorder, epoch: int | None = None) -> SampleRow:
    """One pair's row; `system` must call `llm` too, so that its calls are recorded. What the
    system returns is checked before the judge sees it, and the row before it is returned: a
    row that its readers would refuse is never written (docs/faults.md#what-a-system-returns).
    `epoch`: the row's, in a run of several epochs (None: one epoch, no field)."""
    started = time.monotonic()
    answer = grade = answered = None
    row_of = functools.partial(sample_row, epoch=epoch)
    with llm.recording(epoch or 1) as calls:
        try:
            returned = _answer(system, question)
            # a replay (an answers file) was timed where it was made, if at all: not here
            answered = None if getattr(system, "replays", False) else time.monotonic() - started
            answer = kept_answer(returned, name, dataset, question, calls)
            grade, _ = judge.grade(llm, question, answer.text, dataset.gold_articles(question))
        except STOPS:
            raise  # no other pair can succeed, be paid for or be kept: the run stops, resumable
        except AnswerNotKept as err:  # not kept: the row would be refused by its readers
            return row_of(dataset.name, question, name, None, None, calls,
                          time.monotonic() - started, error=str(err))
        except EndpointError as err:
            return row_of(dataset.name, question, name, answer, None, calls,
                          time.monotonic() - started, error=str(err),
                          answer_latency_s=answered)
        except KeyboardInterrupt:
            raise  # a stop (SIGINT, SIGTERM): the run ends, finished rows kept
        except BaseException as err:  # a system's own code, SystemExit too: this pair fails
            return row_of(dataset.name, question, name, answer, None, calls,
                          time.monotonic() - started, answer_latency_s=answered,
                          error=f"system {name!r} raised {said(err)}"[:2000],
                          error_detail=traceback_of(err))  # where in their code: file, line
        row = row_of(dataset.name, question, name, answer, grade, calls,
                     time.monotonic() - started, answer_latency_s=answered)
        if problem := row_problem(row):  # a reader's refusal, not met above: kept without it
            return row_of(dataset.name, question, name, None, None, calls, row["latency_s"]
                          or 0.0, error=f"system {name!r}: its row was not kept: {problem}")
    return row


def _answer(system: System, question: Question) -> object:
    """What `system` answered: the answer so far, stopped at its bound, when its framework gave
    up on the endpoint's refusal of a call past its call_shape."""
    try:
        return system.answer(question)
    except BoundReached as reached:
        return reached.answer


def kept_answer(returned: object, name: str, dataset: Dataset, question: Question,
                calls: list[LLMResponse]) -> SystemAnswer:
    """What a system returned, once checked as its row's readers check it; AnswerNotKept names
    the system and the field that no row holds. `calls` gains the calls the answer reports that
    the recorder did not see: made on threads of its own (a LangChain pipeline's) or by a
    system outside freshrag."""
    if problem := answer_problem(returned):
        raise AnswerNotKept(f"system {name!r} answered with {problem}"[:2000])
    answer = cast(SystemAnswer, returned)
    if len(answer.text) > MAX_ANSWER_CHARS:
        raise AnswerNotKept(f"system {name!r} answered with {len(answer.text):,} characters, "
                            f"more than the {MAX_ANSWER_CHARS:,} freshrag keeps of one answer")
    unseen = [call for call in answer.calls if not any(call is seen for seen in calls)]
    try:
        row = sample_row(dataset.name, question, name, answer, None, calls + unseen, 0.0)
    except (TypeError, ValueError, AttributeError) as err:  # deeper than answer_problem looks
        raise AnswerNotKept(f"system {name!r} answered with what no row holds: "
                            f"{said(err)}"[:2000]) from None
    if problem := row_problem(row):
        raise AnswerNotKept(f"system {name!r} answered with what no row holds: {problem}"[:2000])
    calls += unseen
    return answer


def pair_job(plan: RunPlan, pair: Pair, factory: Callable[[SystemContext], System],
             retriever: Retriever | None, scorers: dict[str, Scorer]) -> Job:
    """A pair for a walk: `answer_and_grade` as the runner runs it, then each of `scorers`
    (beyond the judge) scores its row of the first epoch, as the run's score pass does after
    the pairs."""
    question, name, epoch = pair

    def run(planner: Planner) -> None:
        recorder = CallRecorder(planner)
        bounded = _Bounded(recorder, name)
        system = factory(system_context(plan.dataset, plan.config, bounded, retriever, factory))
        bounded.shape = call_shape(system)
        row = answer_and_grade(plan.dataset, question, name, _walked(system), recorder,
                               row_epoch(plan.config, epoch))
        if row["status"] == "ok" and epoch == 1:
            for scorer_name, scorer in scorers.items():
                checked_score(scorer, scorer_name, planner,
                              score_input(row, plan.dataset.articles, 0))

    return Job(f"{question.id}/{name}" + (f" epoch {epoch}" if epoch > 1 else ""), run, name)


def row_epoch(config: RunConfig, epoch: int) -> int | None:
    """The `epoch` a pair's row holds: its epoch in a run of several, none in a run of one."""
    return epoch if config.epochs > 1 else None


def _walked(system: System) -> System:
    """A system that calls out of freshrag (a service) is not asked in a walk: its stand-in
    answer feeds the judge's estimate instead."""
    return _AsStandIn(system) if isinstance(system, StandIn) else system


@dataclass(frozen=True)
class _AsStandIn:
    system: StandIn

    def answer(self, question: Question) -> SystemAnswer:
        return self.system.stand_in(question)


class _Bounded:
    """The LLM as a walked system sees it: past the most calls its `call_shape` declares, a
    call is refused, so that a loop that the made-up replies keep going stops at its bound."""

    def __init__(self, llm: LLM, name: str):
        self.llm = llm
        self.name = name
        self.shape: CallShape | None = None
        self.made = 0  # calls answered: a call refused (too long, to be cut) is not one

    def chat(self, role: str, messages: list[dict[str, Any]], **options: Any) -> LLMResponse:
        most = self.shape.steps[1] if self.shape else None
        if most is not None and self.made >= most:
            raise CallShapeExceeded(f"system {self.name!r} made more than the {most} calls its "
                                    f"call_shape declares for one answer")
        response = self.llm.chat(role, messages, **options)
        self.made += 1
        return response


def probe_jobs(dataset: Dataset, settings: ProbeSettings | None) -> list[Job]:
    """A job per judge probe the run would grade (none when probing is off or impossible)."""
    if settings is None:
        return []
    try:
        made = probes.make_probes(dataset.questions, dataset.articles, settings.k, settings.seed,
                                   settings.context)
    except probes.ProbeError:
        return []

    def job(probe: probes.Probe) -> Job:
        def run(planner: Planner) -> None:
            probes.grade_probe(planner, probe, dataset.articles)
        return Job(f"probe {probe.question.id}/{probe.kind}", run, PROBES)

    return [job(probe) for probe in made]
