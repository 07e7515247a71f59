"""Joining the Ray cluster an executor names (docs/running.md#running-on-a-ray-cluster): its
address checked before Ray is asked (an address that does not answer fails within CONNECT_S,
naming it, rather than after Ray's own minute of retries), a local cluster started for the run
when none is named, and a cluster this process already joined (a notebook's `ray.init`, a
test's) used as it is and left running."""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
from typing import Any, Iterator

from freshrag.executors.choice import Executor, ExecutorError

CONNECT_S = 5.0  # a head that does not accept a connection in this long is not there


def ray_module() -> Any:
    """Ray itself, or ExecutorError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ExecutorError("--executor ray needs Ray: pip install 'freshrag[world]'") from None
    return ray


@contextlib.contextmanager
def connected(executor: Executor, num_cpus: int | None = None) -> Iterator[Any]:
    """Ray, joined to `executor`'s cluster for the block (`num_cpus`: a local cluster's; None: the
    machine's); a cluster this block started or joined is left when it ends."""
    ray = ray_module()
    check_answers(executor)
    if ray.is_initialized():
        yield ray
        return
    options: dict[str, Any] = {}
    if executor.address is None:
        options = {"num_cpus": num_cpus, "include_dashboard": False}
    if not (executor.address or "").startswith("ray://"):  # Ray Client takes fewer options
        options["logging_level"] = logging.WARNING
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(address=executor.address, **options)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as err:
        raise ExecutorError(f"Ray cluster at {executor.address or 'a new local cluster'} "
                            f"cannot be used: {type(err).__name__}: {str(err)[:300]}") from None
    finally:
        if handler is not None:  # ray.init sets its own, which exits without the command's stop message
            signal.signal(signal.SIGTERM, handler)
    try:
        yield ray
    finally:
        ray.shutdown()


def check_answers(executor: Executor) -> None:
    """ExecutorError naming the executor's address unless it answers (one not given, or `auto`:
    nothing to try); Ray is not loaded, so that a command can check before it begins its work."""
    if where := executor.host_port():
        check_reachable(executor.address or "", *where)


def check_reachable(address: str, host: str, port: int) -> None:
    """ExecutorError naming `address` unless its head accepts a connection within CONNECT_S."""
    try:
        socket.create_connection((host, port), timeout=CONNECT_S).close()
    except OSError as err:
        raise ExecutorError(f"Ray cluster at {address} cannot be reached: "
                            f"{err.strerror or type(err).__name__}") from None
