import threading
import time

import pytest

from harness.concurrency import map_with_progress


def test_serial_runs_in_the_calling_thread():
    threads = map_with_progress(lambda _: threading.get_ident(), range(5), concurrency=1)
    assert threads == [threading.get_ident()] * 5


def test_in_flight_work_never_exceeds_the_bound():
    lock, state = threading.Lock(), {"now": 0, "peak": 0}

    def work(i):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return i

    assert sorted(map_with_progress(work, range(40), concurrency=4)) == list(range(40))
    assert state["peak"] == 4


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
