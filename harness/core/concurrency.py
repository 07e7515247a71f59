"""The one concurrency helper: bounded parallel map with a progress bar (like simple-evals'
`map_with_progress`). `concurrency=1` runs serially in the calling thread, so that a failure can
be debugged with an ordinary traceback."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_with_progress(fn: Callable[[T], R], items: Sequence[T], concurrency: int = 8,
                      desc: str = "", postfix: Callable[[R], str] | None = None,
                      unit: str = "pair") -> list[R]:
    """fn over items, at most `concurrency` at a time; results in completion order.

    The first exception stops the map: pending items are cancelled, those in flight finish.
    `postfix` is told of each result as it arrives and returns a short status for the bar
    (e.g. running token totals).
    """
    from tqdm import tqdm  # here, not above: tqdm reads its own version at import, which is slow

    results: list[R] = []
    with tqdm(total=len(items), desc=desc, unit=unit, dynamic_ncols=True) as bar:
        def done(result: R) -> None:
            results.append(result)
            if postfix:
                bar.set_postfix_str(postfix(result), refresh=False)
            bar.update(1)

        if concurrency <= 1:
            for item in items:
                done(fn(item))
            return results
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(fn, item) for item in items]
            try:
                for future in as_completed(futures):
                    done(future.result())
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    return results
