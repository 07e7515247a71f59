"""The bounded walk over Ray actors (docs/design.md#executors): every item handed to an actor,
at most `in_flight` at once (backpressure: the driver holds no more than that many results
unread, and draws no more items than that, whatever the number of items), each result handed to
`done` on the calling thread as it arrives, in completion order. `walk_threads` is the local
executor's walk of the same shape, on this process's threads.

Actors and faults, as a run's pairs need them: an actor takes items once it is ready (its
`Actors.ready` ref is in), the first ones as they start, for as long as they take (an index
built on a node that has no copy of it). An actor or node lost takes its items in flight with
it, and each of those is asked again once, of the actors alive; an item whose result was handed
to `done` is never asked again. An actor lost, mid-walk or before it was first ready, is
replaced, started as the first ones were, so that the walk keeps its capacity: at most as many
replacements as it had actors at first (a crash loop ends), each killed unless ready within
`Actors.ready_s` or twice as long as the first ones took (a cluster with no room left, a node
lost for good, never holds the walk: it goes on with the actors it has). An item lost twice, or
every actor lost with none left to start, ends the walk with ExecutorError (the caller's work
stays resumable). An exception raised by an item's own code, or by an actor's start (its
`ready` raising it, or its creation failing), is raised here and never retried. Any end of the
walk (its last result, a stop: Ctrl-C, SIGTERM; an error) kills its actors, replacements
included, which interrupts what they run: Ray cannot cancel a running task of a threaded actor
(`ray.cancel` only flags it), and `ray.kill` ends the actor's process at once.
"""

from __future__ import annotations

import collections
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

from freshrag.executors.choice import ExecutorError

T = TypeVar("T")
WAIT_S = 0.25  # the longest a stop waits for the driver to see it
READY_S = 60.0  # a replacement not ready in this long has no room on the cluster


def ray_ready(actor: Any) -> Any:
    """Ray's own sign that `actor` started: its creation ran."""
    return actor.__ray_ready__.remote()


@dataclass(frozen=True)
class Actors:
    """A walk's actors: `first`, as `start()` makes one (not awaited); `start()` again for each
    one lost, at most `len(first)` times a walk. Each takes items once its `ready(actor)` (a
    ref that is ready when it is, or raises why it could not start) is in; a replacement is
    given at least `ready_s` for it."""

    first: list[Any]
    start: Callable[[], Any]
    ready: Callable[[Any], Any] = ray_ready
    ready_s: float = READY_S


@dataclass
class _Flight(Generic[T]):
    item: T
    lost: int  # times an actor or node was lost with it in flight
    slot: int  # its actor's place in the walk's list


class _Crew:
    """The walk's ready actors by slot (None: lost), the items each has out, and the actors
    starting (their ready refs, each with its actor and when it was started: None for a first
    one, which has no deadline)."""

    def __init__(self, ray: Any, actors: Actors):
        self.ray, self.actors = ray, actors
        self.live: list[Any | None] = []
        self.load: list[int] = []
        self.starting: dict[Any, tuple[Any, float | None]] = {
            actors.ready(actor): (actor, None) for actor in actors.first}
        self.spares = len(actors.first)
        self.began = time.monotonic()
        self.unsettled = len(actors.first)  # first ones neither ready nor lost yet
        self.build_s: float | None = None  # how long the first ones took, once all settled

    def least_busy(self) -> int | None:
        slots = [slot for slot, actor in enumerate(self.live) if actor is not None]
        return min(slots, key=self.load.__getitem__) if slots else None

    def lost(self, slot: int) -> None:
        """The actor in `slot` lost (its other items fail the same way): another started."""
        if self.live[slot] is not None:
            self.live[slot] = None
            self._replace()

    def _replace(self) -> None:
        if self.spares:
            self.spares -= 1
            actor = self.actors.start()
            self.starting[self.actors.ready(actor)] = (actor, time.monotonic())

    def started(self, ref: Any) -> None:
        """An actor's ready ref is in: the actor joins the walk, or is replaced if it was lost
        starting; an error of its own start is raised, never retried."""
        actor, since = self.starting.pop(ref)
        if since is None:
            self.unsettled -= 1
            if not self.unsettled:
                self.build_s = time.monotonic() - self.began
        try:
            self.ray.get(ref)
        except lost_errors(self.ray) as err:
            stop(self.ray, [actor])
            if getattr(err, "actor_init_failed", False):  # its creation raised: again would too
                said = str(err).strip().splitlines()[-1]  # the error, after Ray's traceback
                raise ExecutorError(f"a Ray actor could not start: {said}") from None
            self._replace()
            return
        except self.ray.exceptions.RayTaskError as err:
            stop(self.ray, [actor])
            raise err.cause from None
        self.live.append(actor)
        self.load.append(0)

    def overdue(self) -> None:
        """Replacements not ready in time killed: the cluster has no room for them. Their time
        counts once the first ones are all ready or lost, which shows how long a start takes."""
        if self.build_s is None:
            return
        now, allowed = time.monotonic(), max(self.actors.ready_s, 2 * self.build_s)
        for ref, (actor, since) in list(self.starting.items()):
            if since is not None and now > since + allowed:
                del self.starting[ref]
                stop(self.ray, [actor])

    def none_left(self, item: str) -> ExecutorError:
        """The error of a walk with no actor ready and none starting."""
        if not self.live:  # none was ever ready
            return ExecutorError(f"{item}: no Ray actor of the run could start on the "
                                 f"cluster; run again to resume")
        return ExecutorError(f"{item}: every Ray actor of the run was lost; run again to resume")

    def stop(self) -> None:
        stop(self.ray, [*self.live, *(actor for actor, _ in self.starting.values())])


def walk(ray: Any, actors: Actors, items: Iterable[T], call: Callable[[Any, T], Any],
         in_flight: int, done: Callable[[T, Any], object], name: Callable[[T], str] = str) -> None:
    """`call(actor, item)` (an actor method's `.remote(item)`) for every item on `actors`, at
    most `in_flight` at once, the least busy actor first; `done(item, result)` for each result.
    `name` says an item in an error."""
    crew = _Crew(ray, actors)
    # items are drawn as they are sent, never listed: a corpus's batches hold its text
    fresh = iter(items)
    again: collections.deque[tuple[T, int]] = collections.deque()
    flying: dict[Any, _Flight[T]] = {}
    try:
        while True:
            while len(flying) < in_flight and (next_item := _next(again, fresh)) is not None:
                if (slot := crew.least_busy()) is None:  # until one is ready, first or replacement
                    again.appendleft(next_item)
                    if not crew.starting:
                        raise crew.none_left(name(next_item[0]))
                    break
                item, lost = next_item
                flying[call(crew.live[slot], item)] = _Flight(item, lost, slot)
                crew.load[slot] += 1
            if not flying and not again:
                return
            _arrived(ray, crew, flying, again, done, name)
            crew.overdue()
    finally:
        crew.stop()


def _arrived(ray: Any, crew: _Crew, flying: dict[Any, _Flight[T]],
             again: collections.deque[tuple[T, int]], done: Callable[[T, Any], object],
             name: Callable[[T], str]) -> None:
    """What came back within WAIT_S: each result handed to `done`, each item lost queued
    again (or, lost twice, the walk ended), each replacement ready put to work."""
    waited = [*flying, *crew.starting]
    ready, _ = ray.wait(waited, num_returns=1, timeout=WAIT_S)
    if ready:  # every other result that is in too, in one look
        ready, _ = ray.wait(waited, num_returns=len(waited), timeout=0)
    for ref in ready:
        if ref in crew.starting:
            crew.started(ref)
            continue
        flight = flying.pop(ref)
        crew.load[flight.slot] -= 1
        try:
            result = ray.get(ref)
        except lost_errors(ray) as err:
            if flight.lost:
                raise ExecutorError(f"{name(flight.item)}: lost twice with its Ray actor or "
                                    f"node ({type(err).__name__}); run again to resume") from None
            if isinstance(err, ray.exceptions.RayActorError):
                crew.lost(flight.slot)
            again.append((flight.item, 1))
            continue
        except ray.exceptions.RayTaskError as err:  # the item's own code raised
            raise err.cause from None
        done(flight.item, result)


def _next(again: collections.deque[tuple[T, int]], fresh: Iterator[T]) -> tuple[T, int] | None:
    """The next item to send and how often it was lost: one asked again first; None: none left."""
    if again:
        return again.popleft()
    for item in fresh:
        return item, 0
    return None


def stop(ray: Any, actors: Iterable[Any | None]) -> None:
    """`actors` killed, what they run interrupted (one already gone is passed over)."""
    for actor in actors:
        if actor is not None:
            try:
                ray.kill(actor, no_restart=True)
            except ValueError:  # not an actor handle any more: gone
                pass


def lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """What Ray raises for an item whose actor, node or result was lost, not its own fault."""
    errors = ray.exceptions
    return (errors.RayActorError, errors.ObjectLostError, errors.WorkerCrashedError,
            errors.NodeDiedError)


def walk_threads(items: Iterable[T], call: Callable[[T], Any], in_flight: int,
                 done: Callable[[T, Any], object]) -> None:
    """The local executor's walk: `call(item)` on this process's threads, at most `in_flight` at
    once (1: in the calling thread), items drawn as they are sent, `done(item, result)` on the
    calling thread in completion order. The first error ends it: items not yet sent never are,
    those in flight finish."""
    if in_flight <= 1:
        for item in items:
            done(item, call(item))
        return
    fresh = iter(items)
    flying: dict[Future, T] = {}
    with ThreadPoolExecutor(in_flight) as pool:
        try:
            while True:
                for item in islice(fresh, in_flight - len(flying)):
                    flying[pool.submit(call, item)] = item
                if not flying:
                    return
                finished, _ = wait(flying, return_when=FIRST_COMPLETED)
                for future in finished:
                    done(flying.pop(future), future.result())
        except BaseException:
            for future in flying:
                future.cancel()
            raise
