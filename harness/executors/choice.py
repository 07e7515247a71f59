"""Which executor walks the work and on which cluster (docs/running.md#running-on-a-ray-cluster):
`--executor local|ray` and `--address`. Parsed here without importing Ray, so that a command's
`--help` and a local run never load it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from freshrag.core.errors import UserError

EXECUTORS = ("local", "ray")
DEFAULT_EXECUTOR = "local"
_HOST_PORT = re.compile(r"(?:ray://)?(?P<host>[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:]+\]):(?P<port>\d{1,5})")


class ExecutorError(UserError, RuntimeError):
    """An executor or cluster that cannot be used, or work it lost twice; the message names it."""


@dataclass(frozen=True)
class Executor:
    """An executor as chosen: `kind` (local or ray) and, for ray, the cluster's `address`
    (None: a local cluster started for the run, or the one this process already joined)."""

    kind: str = DEFAULT_EXECUTOR
    address: str | None = None

    @property
    def on_ray(self) -> bool:
        return self.kind == "ray"

    def host_port(self) -> tuple[str, int] | None:
        """Where the cluster listens, for the check before connecting; None: `auto` or none."""
        match = _HOST_PORT.fullmatch(self.address or "")
        return (match["host"].strip("[]"), int(match["port"])) if match else None


def executor_of(kind: object, address: object = None) -> Executor:
    """The executor named by `kind` and `address`, checked; ExecutorError names what is wrong."""
    if kind not in EXECUTORS:
        raise ExecutorError(f"executor: expected one of {', '.join(EXECUTORS)}, got {kind!r:.80}")
    if address is None:
        return Executor(str(kind))
    if kind != "ray":
        raise ExecutorError(f"address: {address!r:.80} given, but only the ray executor takes a "
                            f"cluster address (give --executor ray)")
    if not isinstance(address, str) or not (
            address == "auto" or (match := _HOST_PORT.fullmatch(address))
            and 0 < int(match["port"]) < 65536):
        raise ExecutorError(f"address: expected ray://HOST:PORT, HOST:PORT or auto, got "
                            f"{address!r:.80}")
    return Executor("ray", address)
