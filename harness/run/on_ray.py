"""The run's pairs on a Ray cluster (docs/running.md#running-on-a-ray-cluster): the Ray executor
walks the plan's pairs (harness/run/plan.py) as the local runner does, each pair's
`answer_and_grade` run by an actor that built the run's systems once (its LLM client, its copy
of the retrieval index, the embedder), and each row handed back to the runner, which writes it
with the same writer (harness/run/runner.py). The run directory, its identity and its resume are
therefore the local run's; the judge's probes and the scorers beyond the judge stay on the
driver. The walk, its backpressure and its faults are harness/executors/walk.py's.

What an actor is sent: the dataset, the run's config, the systems' factories, the index's
settings, the response cache's path and the models' settings without their keys. A worker reads
a key from its own environment (FRESHRAG_<ROLE>_API_KEY, FRESHRAG_API_KEY, or the role's
`api_key_env`), so that no key is in a task's arguments, Ray's object store or its logs.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from freshrag.core.config import LLMSettings
from freshrag.core.dataset import Dataset
from freshrag.core.records import SampleRow
from freshrag.core.rundir import RUN_ROLES
from freshrag.core.types import Retriever
from freshrag.executors.choice import Executor, ExecutorError
from freshrag.executors.walk import Actors, walk
from freshrag.llm.cache import ResponseCache
from freshrag.llm.client import LLMClient
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.embeddings import embedder_for
from freshrag.retrieval.index import open_index
from freshrag.run.config import RunConfig
from freshrag.run.plan import (
    CallRecorder,
    Factories,
    Pair,
    RunPlan,
    answer_and_grade,
    built,
    row_epoch,
    system_context,
)

Keep = Callable[[Pair, SampleRow], SampleRow]  # the runner's writer of a pair's row


def keyless(settings: LLMSettings) -> LLMSettings:
    """`settings` as sent to a worker: every role's key left out (its `api_key_env` kept)."""
    return replace(settings, roles={name: replace(role, api_key=None)
                                    for name, role in settings.roles.items()})


def keyed(settings: LLMSettings, env: dict[str, str]) -> LLMSettings:
    """Keyless `settings` with each role's key from this worker's `env`, as the command reads
    the environment: the role's own variable over the one for every role."""
    def key(name: str) -> str | None:
        return (env.get(f"FRESHRAG_{name.upper()}_API_KEY", "").strip()
                or env.get("FRESHRAG_API_KEY", "").strip() or None)
    return replace(settings, roles={name: replace(role, api_key=key(name))
                                    for name, role in settings.roles.items()})


@dataclass(frozen=True)
class Work:
    """Everything an actor is sent to build the run's systems; never a key."""

    dataset: Dataset
    config: RunConfig
    settings: LLMSettings  # keyless
    seed: int | None
    cache: Path | None  # the response cache's file, shared through SQLite on one host
    index: IndexConfig | None
    factories: Factories  # the run's systems' only


class PairActor:
    """One Ray actor: the run's systems built once, then any number of pairs answered, several
    at once (a threaded actor: the recorder keeps each thread's pair apart)."""

    def __init__(self, work: Work):
        self.work = work
        self.broken: BaseException | None = None
        try:
            self._build(work)
        except BaseException as err:  # raised by ready() as it was: Ray's would be text only
            self.broken = err

    def _build(self, work: Work) -> None:
        llm = LLMClient(keyed(work.settings, dict(os.environ)), seed=work.seed)
        llm.cache = ResponseCache(work.cache) if work.cache else None
        self.retriever: Retriever | None = None
        if work.index:
            index = own_copy(work.index)
            self.retriever = open_index(work.dataset.articles, index, embedder_for(llm),
                                        progress=False)
            if index.directory != work.index.directory:  # a copy: not needed once opened
                shutil.rmtree(index.directory, ignore_errors=True)
        self.recorder = CallRecorder(llm)
        self.systems = {name: built(factory, system_context(
            work.dataset, work.config, self.recorder, self.retriever, factory))
            for name, factory in work.factories.items()}

    def ready(self) -> bool:
        if self.broken is not None:
            raise self.broken
        return True

    def answer(self, pair: Pair) -> SampleRow:
        question, name, epoch = pair
        return answer_and_grade(self.work.dataset, question, name, self.systems[name],
                                self.recorder, row_epoch(self.work.config, epoch))


def own_copy(index: IndexConfig) -> IndexConfig:
    """The index as one actor opens it: a Qdrant server as it is; the embedded store, whose
    folder one process at a time may open, copied into a folder of the actor's own (built
    there when this node has none to copy; qdrant-client's local mode holds it in memory once
    open, so the actor removes the folder then)."""
    index = replace(index, executor=Executor())  # an actor builds, if it must, by itself
    if index.qdrant_url:
        return index
    mine = Path(tempfile.mkdtemp(prefix="freshrag-index-"))
    if index.directory.is_dir():
        shutil.copytree(index.directory, mine, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".lock"))
    return replace(index, directory=mine)


@dataclass(frozen=True)
class RayPairs:
    """The run's executor on Ray: `answer(plan, factories, keep)` walks the plan's pairs on
    actors that each hold the systems once, at most `config.concurrency` pairs in flight in
    all, and hands each row to `keep` (the runner's writer)."""

    ray: Any  # the module, joined to the cluster (harness/executors/cluster.py connected)
    settings: LLMSettings
    seed: int | None
    cache: Path | None
    index: IndexConfig | None

    def work(self, plan: RunPlan, factories: Factories) -> Work:
        return Work(plan.dataset, plan.config, keyless(self.settings), self.seed, self.cache,
                    self.index, {name: factories[name] for name in plan.config.systems})

    def answer(self, plan: RunPlan, factories: Factories, keep: Keep) -> None:
        if not plan.pairs:
            return
        actors = self.actors(self.work(plan, factories), plan.config.concurrency)
        walk(self.ray, actors, plan.pairs, lambda actor, pair: actor.answer.remote(pair),
             plan.config.concurrency, keep, name=_pair_name)

    def actors(self, work: Work, concurrency: int) -> Actors:
        """One actor per CPU of the cluster (no more than pairs in flight), spread over its
        nodes, each taking its share of the pairs in flight once it has built the systems
        (awaited by the walk, which replaces one lost before or after, and raises an error of
        the build itself: a system or the index that could not be built)."""
        ray = self.ray
        count = max(1, min(concurrency, int(ray.cluster_resources().get("CPU", 1))))
        remote = ray.remote(PairActor).options(
            num_cpus=1, max_concurrency=math.ceil(concurrency / count), max_restarts=0,
            scheduling_strategy="SPREAD")
        shared = ray.put(work)  # sent once, whatever the number of actors

        def start() -> Any:
            return remote.remote(shared)

        return Actors([start() for _ in range(count)], start, lambda actor: actor.ready.remote())


def _pair_name(pair: Pair) -> str:
    question, name, epoch = pair
    return f"pair {question.id}/{name}" + (f" epoch {epoch}" if epoch > 1 else "")


def check_ray_run(settings: LLMSettings, max_cost: float | None) -> None:
    """What a run on Ray cannot do: call the embedded server from a worker (each would start
    its own) or hold a budget (counted in one process)."""
    local = [role for role in RUN_ROLES if settings.role(role).is_local]
    if local:
        raise ExecutorError(f"--executor ray: the {', '.join(local)} role(s) use the embedded "
                            f"server, which each worker would start for itself; give the roles "
                            f"an endpoint (--base-url, or vLLM on Ray Serve)")
    if max_cost:
        raise ExecutorError("--executor ray: --max-cost counts the dollars in one process; "
                            "run without it (or with the local executor)")
