"""A real Ray cluster on this machine for the executors' tests: a head and a worker node of one
CPU each (`ray.cluster_utils.Cluster`, several raylets on one host), this process joined to it.
A test that kills a node adds one of its own (`add_node`) and removes it, so that the cluster
stays whole for the next. Started once a session (tests/conftest.py `ray_cluster`): a start
takes 5-10 s on this machine, and CI's time is bounded."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any, Iterator


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

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                            "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level=logging.WARNING)
        yield RayCluster(cluster, ray)
    finally:
        ray.shutdown()
        cluster.shutdown()
