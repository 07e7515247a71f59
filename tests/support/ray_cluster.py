"""A real Ray cluster on this machine for the executors' tests: a head and a worker node of one
CPU each (`ray.cluster_utils.Cluster`, several raylets on one host), this process joined to it.
A test that kills a node adds one of its own and removes it mid-work (`lose_a_node`), so that
the cluster stays whole for the next. Started once a session (tests/conftest.py `ray_cluster`):
a start takes 5-10 s on this machine, and CI's time is bounded."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

T = TypeVar("T")


@dataclass
class RayCluster:
    cluster: Any  # ray.cluster_utils.Cluster
    ray: Any

    @property
    def address(self) -> str:
        """The head's GCS address, as `--address HOST:PORT` takes it (another driver joins)."""
        return self.cluster.address

    def add_node(self) -> Any:
        node = self.cluster.add_node(num_cpus=1)
        self.cluster.wait_for_nodes()
        return node

    def remove_node(self, node: Any) -> None:
        """The node killed, not drained: its raylet and workers end at once."""
        self.cluster.remove_node(node, allow_graceful=False)

    def lose_a_node(self, work: Callable[[], T], when: Callable[[], bool],
                    lost: Callable[[], object] = lambda: None, timeout_s: float = 120.0) -> T:
        """`work()` run on a thread with a node added for it, which is killed once `when()`
        holds, `lost()` called just after; `work`'s result (or its error raised here), once
        the cluster counts that node dead."""
        node = self.add_node()
        outcome: list[tuple[bool, Any]] = []

        def run() -> None:
            try:
                outcome.append((True, work()))
            except BaseException as err:  # raised on the test's thread
                outcome.append((False, err))

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + timeout_s
        while thread.is_alive() and not when() and time.monotonic() < deadline:
            time.sleep(0.05)
        mid_work = thread.is_alive()
        self.remove_node(node)
        lost()
        thread.join(timeout=300)
        self.wait_until_known_dead()
        assert mid_work, "the work ended before the node was lost"
        assert outcome, "the work did not end within 300 s of the node's loss"
        ended, result = outcome[0]
        if not ended:
            raise result
        return result

    def wait_until_known_dead(self, timeout_s: float = 60.0) -> None:
        """Until the cluster counts no node but its two (a killed one is declared dead after
        missed health checks): a run started before then would place an actor on it."""
        deadline = time.monotonic() + timeout_s
        while sum(node["Alive"] for node in self.ray.nodes()) > 2:
            assert time.monotonic() < deadline, "a killed node is still counted alive"
            time.sleep(0.2)


@contextlib.contextmanager
def ray_cluster() -> Iterator[RayCluster]:
    import ray
    from ray.cluster_utils import Cluster

    # a killed node's raylet refuses the health checks at once: three missed, a second apart,
    # declare it dead in about 3 s rather than Ray's 15 (a live one has 10 s to answer each)
    checks = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "_system_config": checks})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level=logging.WARNING)
        yield RayCluster(cluster, ray)
    finally:
        ray.shutdown()
        cluster.shutdown()
