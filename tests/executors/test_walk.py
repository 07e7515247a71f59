"""The bounded walk over Ray actors (harness/executors/walk.py) on a real Ray cluster
(tests/support/ray_cluster.py): at most `in_flight` items out at once, every result handed over
once, an actor lost mid-walk costing no finished item, asking its items in flight again once
and replaced by one that answers them (killed in its turn: a cluster with no room for it holds
nothing up; a crash loop ends), an actor lost while it starts replaced alike, one whose start
raises ending the walk unretried, an item lost twice or an item's own error ending the walk with
the actors killed; items drawn as they are sent, by it and by the local executor's walk on
threads."""

from __future__ import annotations

import collections
import os
import time

import pytest

from freshrag.executors.choice import ExecutorError
from freshrag.executors.walk import Actors, walk, walk_threads


class Worker:
    """A threaded actor's work: an item sleeps, then comes back with the process that ran it;
    "poison" ends the process, "bad" raises; the process ends at its `dies_on`th item. Its
    start takes `starts_s`, or raises (`broken`)."""

    def __init__(self, dies_on: int = 0, starts_s: float = 0.0, broken: bool = False):
        if broken:
            raise ValueError("no index to open")
        time.sleep(starts_s)
        self.dies_on = dies_on
        self.calls = 0

    def run(self, item: str) -> tuple[str, int]:
        self.calls += 1
        if item == "poison" or self.calls == self.dies_on:
            os._exit(1)
        if item == "bad":
            raise ValueError("bad item")
        time.sleep(0.2)
        return item, os.getpid()

    def pid(self) -> int:
        return os.getpid()


def actors(ray, count: int, ready_s: float = 30.0, dies_on: int = 0, first=None,
           **replaced) -> Actors:
    """`count` Workers, ready (or the actors `first`, as they are); a replacement started with
    the options `replaced` (e.g. a resource the cluster lacks), each noted in the result's
    `start.made`."""
    options = {"num_cpus": 0, "max_concurrency": 4, "max_restarts": 0}
    remote = ray.remote(Worker).options(**options)
    made = first or [remote.remote(dies_on) for _ in range(count)]
    if first is None:
        ray.get([actor.__ray_ready__.remote() for actor in made])
    spare = ray.remote(Worker).options(**options, **replaced)

    def start():
        start.made.append(spare.remote(dies_on))
        return start.made[-1]

    start.made = []
    return Actors(made, start, ready_s=ready_s)


class Counted:
    """The walk's `call` and `done`, counting what was asked and what came back."""

    def __init__(self, on_done=lambda results: None):
        self.asked: collections.Counter[str] = collections.Counter()
        self.results: list[tuple[str, int]] = []
        self.most_out = 0
        self.on_done = on_done

    def call(self, actor, item):
        self.asked[item] += 1
        self.most_out = max(self.most_out, sum(self.asked.values()) - len(self.results))
        return actor.run.remote(item)

    def done(self, item, result):
        assert result[0] == item
        self.results.append(result)
        self.on_done(self.results)


def test_at_most_in_flight_items_are_out_and_every_result_comes_back_once(ray_cluster):
    ray = ray_cluster.ray
    counted = Counted()
    items = [f"item {n}" for n in range(24)]
    walk(ray, actors(ray, 2), items, counted.call, 5, counted.done)
    assert sorted(item for item, _ in counted.results) == sorted(items)
    assert counted.most_out == 5 and set(counted.asked.values()) == {1}
    assert len({pid for _, pid in counted.results}) == 2  # both actors worked


def drawn(count: int, seen: list[int]):
    """`count` items, each noting how many results were back when it was drawn."""
    for n in range(count):
        yield f"item {n}"
        seen.append(n)


def test_items_are_drawn_as_they_are_sent_not_listed_first(ray_cluster):
    ray = ray_cluster.ray
    counted, seen = Counted(), []
    out_when_drawn: list[int] = []
    items = drawn(12, seen)

    def call(actor, item):
        out_when_drawn.append(len(seen) - len(counted.results))
        return counted.call(actor, item)

    walk(ray, actors(ray, 2), items, call, 3, counted.done)
    assert len(counted.results) == 12 and max(out_when_drawn) <= 3


@pytest.mark.parametrize("in_flight", [1, 4])
def test_the_local_walk_on_threads_keeps_as_many_out_and_hands_each_result_back_here(in_flight):
    import threading

    out, most, here = [0], [0], threading.get_ident()
    lock = threading.Lock()
    results: list[str] = []

    def call(item):
        with lock:
            out[0] += 1
            most[0] = max(most[0], out[0])
        time.sleep(0.02)
        with lock:
            out[0] -= 1
        return item.upper()

    def done(item, result):
        assert threading.get_ident() == here and result == item.upper()
        results.append(item)

    walk_threads((f"item {n}" for n in range(20)), call, in_flight, done)
    assert sorted(results) == sorted(f"item {n}" for n in range(20)) and most[0] == in_flight


def test_the_local_walk_ends_at_the_first_error_and_sends_nothing_more():
    asked: list[int] = []

    def call(n):
        asked.append(n)
        if n == 3:
            raise ValueError("bad item")
        time.sleep(0.01)
        return n

    with pytest.raises(ValueError, match="bad item"):
        walk_threads(iter(range(100)), call, 2, lambda item, result: None)
    assert len(asked) < 10


def test_an_actor_lost_mid_walk_is_replaced_and_its_items_asked_again_once(ray_cluster):
    ray = ray_cluster.ray
    made = actors(ray, 2)
    first = set(ray.get([actor.pid.remote() for actor in made.first]))
    finished_before: list[str] = []

    def kill_one(results):
        if len(results) == 4:
            finished_before.extend(item for item, _ in results)
            ray.kill(made.first[0])
        elif made.start.made and not waited:  # the items left outlast its start, however slow
            waited.append(ray.get(made.start.made[0].__ray_ready__.remote(), timeout=60))

    waited: list = []
    counted = Counted(kill_one)
    items = [f"item {n}" for n in range(24)]
    walk(ray, made, items, counted.call, 8, counted.done)
    assert sorted(item for item, _ in counted.results) == sorted(items)  # each once
    assert all(counted.asked[item] == 1 for item in finished_before)
    asked_again = [item for item, times in counted.asked.items() if times == 2]
    assert asked_again and max(counted.asked.values()) == 2
    assert len(made.start.made) == 1  # one replacement, which answered items
    assert {pid for _, pid in counted.results} - first
    with pytest.raises(ray.exceptions.RayActorError):  # the walk's end killed it too
        ray.get(made.start.made[0].run.remote("item 0"), timeout=30)


def test_an_actor_lost_while_it_starts_is_replaced_and_the_walk_keeps_its_capacity(ray_cluster):
    ray = ray_cluster.ray
    remote = ray.remote(Worker).options(num_cpus=0, max_concurrency=4, max_restarts=0)
    slow, quick = remote.remote(starts_s=60.0), remote.remote()
    made = actors(ray, 2, first=[slow, quick])
    waited: list = []

    def kill_the_slow_one(results):
        if len(results) == 1:  # the quick one walks; the slow one is still starting
            ray.kill(slow)
        elif made.start.made and not waited:  # the items left outlast its start, however slow
            waited.append(ray.get(made.start.made[0].__ray_ready__.remote(), timeout=60))

    counted = Counted(kill_the_slow_one)
    items = [f"item {n}" for n in range(16)]
    started = time.monotonic()
    walk(ray, made, items, counted.call, 4, counted.done)
    assert sorted(item for item, _ in counted.results) == sorted(items)
    assert set(counted.asked.values()) == {1}  # nothing was in flight on it
    assert len(made.start.made) == 1 and waited
    assert len({pid for _, pid in counted.results}) == 2  # the replacement answered too
    assert time.monotonic() - started < 30


def test_an_actor_whose_start_raises_ends_the_walk_naming_the_error_never_retried(ray_cluster):
    ray = ray_cluster.ray
    remote = ray.remote(Worker).options(num_cpus=0, max_concurrency=4, max_restarts=0)
    made = actors(ray, 2, first=[remote.remote(), remote.remote(broken=True)])
    counted = Counted()
    started = time.monotonic()
    with pytest.raises(ExecutorError, match="a Ray actor could not start: .*no index to open"):
        walk(ray, made, [f"item {n}" for n in range(40)], counted.call, 2, counted.done)
    assert made.start.made == [] and time.monotonic() - started < 30
    with pytest.raises(ray.exceptions.RayActorError):  # the walk's end killed the other
        ray.get(made.first[0].run.remote("item 0"), timeout=30)


@pytest.mark.parametrize("count", [1, 2])
def test_a_replacement_the_cluster_has_no_room_for_is_killed_and_holds_nothing(ray_cluster,
                                                                               count):
    ray = ray_cluster.ray
    made = actors(ray, count, ready_s=0.5, resources={"nowhere": 1})
    items = [f"item {n}" for n in range(16)]
    killed_during: list = []

    def kill_one(results):
        if len(results) == 2:
            ray.kill(made.first[0])
        if len(results) == len(items) - 1:  # the walk still on: the replacement given up
            ready = made.start.made[0].__ray_ready__.remote()
            killed_during.extend(ray.wait([ready], timeout=5)[0])

    counted = Counted(kill_one)
    started = time.monotonic()
    if count == 1:  # no actor left once the replacement is given up
        with pytest.raises(ExecutorError, match="every Ray actor of the run was lost"):
            walk(ray, made, items, counted.call, 2, counted.done)
    else:  # the other actor walks on, to the end
        walk(ray, made, items, counted.call, 2, counted.done)
        assert sorted(item for item, _ in counted.results) == sorted(items)
        assert killed_during
    assert time.monotonic() - started < 20
    with pytest.raises(ray.exceptions.RayActorError):  # never placed, and killed
        ray.get(made.start.made[0].__ray_ready__.remote(), timeout=30)


@pytest.mark.parametrize(("dies_on", "error"), [
    pytest.param(1, r"item \d: lost twice", id="every-actor-dies-on-its-first-item"),
    pytest.param(2, r"item 2: every Ray actor of the run was lost", id="replacements-run-out"),
])
def test_a_crash_loop_ends_with_the_error_naming_the_item(ray_cluster, dies_on, error):
    ray = ray_cluster.ray
    made = actors(ray, 2 if dies_on == 1 else 1, dies_on=dies_on)
    counted = Counted()
    with pytest.raises(ExecutorError, match=error):
        walk(ray, made, [f"item {n}" for n in range(6)], counted.call, len(made.first),
             counted.done)
    assert len(made.start.made) <= len(made.first)  # at most as many replacements as actors


def test_an_item_lost_twice_ends_the_walk_naming_it(ray_cluster):
    ray = ray_cluster.ray
    counted = Counted()
    with pytest.raises(ExecutorError, match="poison: lost twice"):
        walk(ray, actors(ray, 3), ["poison", "item 1"], counted.call, 2, counted.done)
    assert counted.asked["poison"] == 2


def test_an_items_own_error_is_raised_as_it_was_and_the_actors_are_killed(ray_cluster):
    ray = ray_cluster.ray
    made, counted = actors(ray, 2), Counted()
    with pytest.raises(ValueError, match="bad item"):
        walk(ray, made, ["item 1", "bad", "item 2"], counted.call, 3, counted.done)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get([actor.run.remote("item 3") for actor in made.first], timeout=30)
