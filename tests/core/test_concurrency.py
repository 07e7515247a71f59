import threading
import time
import weakref

import pytest

from freshrag.core.concurrency import WINDOW, map_with_progress


def test_serial_runs_in_the_calling_thread():
    threads = map_with_progress(lambda _: threading.get_ident(), range(5), concurrency=1)
    assert threads == [threading.get_ident()] * 5


class InFlight:
    """Counts calls in flight and the peak. With `together`, each call waits at a barrier of that
    many parties, so that exactly that many are in flight at once whatever the scheduling (a
    pool with fewer workers breaks the barrier instead of hanging); then it stays a moment, so
    that a pool with more workers would start further calls meanwhile."""

    def __init__(self, together: int | None = None):
        self.lock, self.now, self.peak = threading.Lock(), 0, 0
        self.barrier = threading.Barrier(together, timeout=10) if together else None

    def __call__(self, item):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        if self.barrier:
            self.barrier.wait()
        time.sleep(0.02)
        with self.lock:
            self.now -= 1
        return item


@pytest.mark.parametrize("concurrency", [2, 4])
def test_exactly_the_bound_is_in_flight(concurrency):
    work = InFlight(together=concurrency)
    items = range(concurrency * 5)
    assert sorted(map_with_progress(work, items, concurrency=concurrency)) == list(items)
    assert work.peak == concurrency


@pytest.mark.parametrize("concurrency", [1, 3])
def test_in_flight_work_never_exceeds_the_bound(concurrency):
    work = InFlight()
    assert sorted(map_with_progress(work, range(30), concurrency=concurrency)) == list(range(30))
    assert 1 <= work.peak <= concurrency


def test_first_error_stops_pending_work():
    started = []

    def work(i):
        started.append(i)
        time.sleep(0.01)
        if i == 0:
            raise RuntimeError("endpoint down")
        return i

    with pytest.raises(RuntimeError, match="endpoint down"):
        map_with_progress(work, range(200), concurrency=2)
    assert len(started) < 200


def test_postfix_is_told_of_every_result():
    seen = []
    map_with_progress(lambda i: i * 10, [1, 2, 3], concurrency=1, postfix=lambda r: seen.append(r) or "")
    assert seen == [10, 20, 30]


class Result:
    """A result whose instances alive are counted (`ALIVE`): what the map still holds."""


def test_results_not_kept_are_let_go_as_they_come():
    """With keep=False (the runner writes each row as it comes) the map holds only the results
    of the items in its window, not every result so far: a run of 100,000 pairs stays small."""
    alive: weakref.WeakSet = weakref.WeakSet()
    peak = []

    def work(i):
        # A result let go is freed by its count of references at once: no collection is needed
        # (a full one per item took minutes in the whole suite's large heap)
        peak.append(len(alive))
        result = Result()
        alive.add(result)
        return result

    assert map_with_progress(work, range(400), concurrency=4, keep=False) == []
    assert len(peak) == 400
    assert max(peak) <= 4 * (WINDOW + 1)


def test_kept_results_are_every_result():
    assert sorted(map_with_progress(lambda i: i, range(500), concurrency=8)) == list(range(500))
