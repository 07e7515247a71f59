"""The bounded walk over Ray actors (docs/design.md#executors): every item handed to an actor,
at most `in_flight` at once (backpressure: the driver holds no more than that many results
unread, and draws no more items than that, whatever the number of items), each result handed to
`done` on the calling thread as it arrives, in completion order. `walk_threads` is the local
executor's walk of the same shape, on this process's threads.

Faults, as a run's pairs need them: an actor or node lost takes its items in flight with it,
and each of those is asked again once, of the actors still alive; an item whose result was
handed to `done` is never asked again. An item lost twice, or every actor lost, ends the walk
with ExecutorError (the caller's work stays resumable). An exception raised by an item's own
code is raised here as it was raised there. Any end of the walk but its last result (a stop:
Ctrl-C, SIGTERM; an error) kills its actors, which interrupts what they run: Ray cannot cancel a
running task of a threaded actor (`ray.cancel` only flags it), and `ray.kill` ends the actor's
process at once.
"""

from __future__ import annotations

import collections
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

from freshrag.executors.choice import ExecutorError

T = TypeVar("T")
WAIT_S = 0.25  # the longest a stop waits for the driver to see it


@dataclass
class _Flight(Generic[T]):
    item: T
    lost: int  # times an actor or node was lost with it in flight
    slot: int  # its actor's place in the walk's list


def walk(ray: Any, actors: list[Any], items: Iterable[T], call: Callable[[Any, T], Any],
         in_flight: int, done: Callable[[T, Any], object], name: Callable[[T], str] = str) -> None:
    """`call(actor, item)` (an actor method's `.remote(item)`) for every item on `actors`, at
    most `in_flight` at once, the least busy actor first; `done(item, result)` for each result.
    `name` says an item in an error."""
    live: list[Any | None] = list(actors)
    load = [0] * len(live)
    # items are drawn as they are sent, never listed: a corpus's batches hold its text
    fresh = iter(items)
    again: collections.deque[tuple[T, int]] = collections.deque()
    flying: dict[Any, _Flight[T]] = {}
    lost_kinds = lost_errors(ray)
    try:
        while True:
            while len(flying) < in_flight and (next_item := _next(again, fresh)) is not None:
                item, lost = next_item
                slot = _least_busy(live, load, name(item))
                flying[call(live[slot], item)] = _Flight(item, lost, slot)
                load[slot] += 1
            if not flying:
                return
            ready, _ = ray.wait(list(flying), num_returns=1, timeout=WAIT_S)
            if ready:  # every other result that is in too, in one look
                ready, _ = ray.wait(list(flying), num_returns=len(flying), timeout=0)
            for ref in ready:
                flight = flying.pop(ref)
                load[flight.slot] -= 1
                try:
                    result = ray.get(ref)
                except lost_kinds as err:
                    if flight.lost:
                        raise ExecutorError(f"{name(flight.item)}: lost twice with its Ray "
                                            f"actor or node ({type(err).__name__}); run again "
                                            f"to resume") from None
                    if isinstance(err, ray.exceptions.RayActorError):
                        live[flight.slot] = None  # its other items fail the same way
                    again.append((flight.item, 1))
                    continue
                except ray.exceptions.RayTaskError as err:  # the item's own code raised
                    raise err.cause from None
                done(flight.item, result)
    finally:
        stop(ray, live)


def _next(again: collections.deque[tuple[T, int]], fresh: Iterator[T]) -> tuple[T, int] | None:
    """The next item to send and how often it was lost: one asked again first; None: none left."""
    if again:
        return again.popleft()
    for item in fresh:
        return item, 0
    return None


def stop(ray: Any, actors: list[Any | None]) -> None:
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


def _least_busy(live: list[Any | None], load: list[int], item: str) -> int:
    slots = [slot for slot, actor in enumerate(live) if actor is not None]
    if not slots:
        raise ExecutorError(f"{item}: every Ray actor of the run was lost; run again to resume")
    return min(slots, key=load.__getitem__)


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
