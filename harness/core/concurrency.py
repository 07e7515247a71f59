"""The one concurrency helper: bounded parallel map with a progress bar (like simple-evals'
`map_with_progress`). `concurrency=1` runs serially in the calling thread, so that a failure can
be debugged with an ordinary traceback.

Items are handed to the pool a few at a time (WINDOW per worker), not all at once: a run of
100,000 pairs would otherwise hold 100,000 futures, each keeping its result until the map ends.

A stop (KeyboardInterrupt: Ctrl-C, or the `Stopped` of harness/llm/deadline.py) gives the items in
flight GRACE_S to end, as the LLM path's do, then abandons them: a user's system blocked on its
own lock must not hold the stop (docs/faults.md#stops-that-wait-for-other-peoples-code).
"""

from __future__ import annotations

import contextlib
import queue
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")

WINDOW = 2  # items submitted per worker, so that a worker never waits for the next one
GRACE_S = 0.5  # what a stop gives the items in flight (a request sees the stop within 0.25 s)


def map_with_progress(fn: Callable[[T], R], items: Iterable[T], concurrency: int = 8,
                      desc: str = "", postfix: Callable[[R], str] | None = None,
                      unit: str = "pair", keep: bool = True) -> list[R]:
    """fn over items, at most `concurrency` at a time; results in completion order (none kept
    with `keep=False`, for callers that write each result as it comes).

    The first exception stops the map: items not yet started are never started, those in
    flight finish (on a stop: within GRACE_S, or are abandoned). `postfix` is told of each
    result as it arrives and returns a short status for the bar (e.g. running token totals).
    """
    items = list(items)
    results: list[R] = []
    with progress(len(items), desc, postfix, unit) as tick:
        def done(result: R) -> None:
            if keep:
                results.append(result)
            tick(result)

        if concurrency <= 1:
            for item in items:
                done(fn(item))
            return results
        finished: queue.SimpleQueue[Future] = queue.SimpleQueue()
        live: set[Future] = set()

        def collect() -> None:
            future = finished.get()
            live.discard(future)
            done(future.result())

        pool = ThreadPoolExecutor(max_workers=concurrency)
        try:
            for item in items:
                if len(live) >= concurrency * WINDOW:
                    collect()
                future = pool.submit(fn, item)
                live.add(future)
                future.add_done_callback(finished.put)
            while live:
                collect()
        except KeyboardInterrupt:
            _abandon(pool, live)
            raise
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    return results


@contextlib.contextmanager
def progress(total: int, desc: str = "", postfix: Callable[[R], str] | None = None,
             unit: str = "pair") -> Iterator[Callable[[R], None]]:
    """The one progress bar, for `total` items: the block is given the function to call with
    each result (`postfix` makes the bar's short status of it). An executor that walks items
    elsewhere (harness/executors/) shows its results with it too."""
    from tqdm import tqdm  # here, not above: tqdm reads its own version at import, which is slow

    with tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True) as bar:
        def tick(result: R) -> None:
            if postfix:
                bar.set_postfix_str(postfix(result), refresh=False)
            bar.update(1)
        yield tick


def _abandon(pool: ThreadPoolExecutor, live: set[Future]) -> None:
    """A stop: what has not started never starts, what runs gets GRACE_S, and the threads still
    running then (someone else's code that ignores the stop) are left behind unjoined; the
    command's way out (harness/cli/main.py) ends the process without waiting for them."""
    pool.shutdown(wait=False, cancel_futures=True)
    wait(live, timeout=GRACE_S)
