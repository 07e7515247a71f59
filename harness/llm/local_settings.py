"""How the embedded llama.cpp server uses the CPU: its threads, and how long they spin while they
wait for each other (docs/design.md#the-embedded-model-on-a-busy-machine, measured in
docs/measurements.md#the-embedded-model-on-a-busy-machine).

The prebuilt llama.cpp (xllamacpp) runs its threads with OpenMP (libgomp), so between two steps
a thread that finished first waits at libgomp's barrier: it spins GOMP_SPINCOUNT times, then
sleeps. llama.cpp's own polling level (`--poll`) is not used by an OpenMP build. Spinning keeps
generation fast on an idle machine and collapses it on a loaded one, so the server spins (libgomp's
default) only when the machine is idle as it starts, and otherwise sleeps at once
(GOMP_SPINCOUNT=0). The variables (docs/configuration.md#the-embedded-server-on-a-shared-machine):

- `FRESHRAG_LOCAL_THREADS`: the server's threads (default: one per core);
- libgomp's own `OMP_WAIT_POLICY` and `GOMP_SPINCOUNT`: when either is set, freshrag leaves the
  waiting to them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from freshrag.core.errors import UserError

THREADS_ENV = "FRESHRAG_LOCAL_THREADS"
MAX_THREADS = 1024
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")  # libgomp's; a user's setting wins
# Loaded: another process wanted half a core over the last minute, or one is runnable right now
# (the load average lags a minute behind a process that has just started).
LOADED_AVERAGE, LOADED_RUNNABLE = 0.5, 1


class LocalSettingsError(UserError, ValueError):
    pass


@dataclass(frozen=True)
class LocalSettings:
    """The embedded server's threads and waiting, and where each came from."""

    threads: int
    threads_from: str  # "cores" or the variable's name
    spin_count: str | None  # GOMP_SPINCOUNT for the server; None: libgomp's default or the user's

    def child_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """The server process's environment: `env`, with GOMP_SPINCOUNT when chosen (libgomp
        reads it once, as llama.cpp's library loads: at exec)."""
        if self.spin_count is None:
            return dict(env)
        return {**env, "GOMP_SPINCOUNT": self.spin_count}

    def arguments(self) -> list[str]:
        return ["--threads", str(self.threads)]

    def describe(self) -> str:
        """`2 threads`, or `1 thread from FRESHRAG_LOCAL_THREADS`: for the roles table."""
        said = f"{self.threads} thread{'' if self.threads == 1 else 's'}"
        return said if self.threads_from == "cores" else f"{said} from {self.threads_from}"


def whole_number(env: Mapping[str, str], name: str, low: int, high: int) -> int | None:
    """`env[name]` as a whole number in [low, high], None when unset or empty."""
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise LocalSettingsError(f"{name}={text!r}: give a whole number from {low} to "
                                 f"{high}") from None
    if not low <= value <= high:
        raise LocalSettingsError(f"{name}={value}: give a whole number from {low} to {high}")
    return value


def machine_load(path: str = "/proc/loadavg") -> tuple[float, int]:
    """The 1-minute load average and how many other tasks are runnable now; (0, 0) where the
    system does not say (not Linux)."""
    try:
        with open(path, encoding="ascii") as handle:
            fields = handle.read().split()
        return float(fields[0]), int(fields[3].split("/")[0]) - 1  # this reader runs too
    except (OSError, ValueError, IndexError):
        return 0.0, 0


def local_settings(env: Mapping[str, str] | None = None, cpus: int | None = None,
                   load: tuple[float, int] | None = None) -> LocalSettings:
    """The settings the embedded server starts with: the variables when set, else one thread per
    core, spinning only when the machine is idle (`load`: `machine_load()` when not given)."""
    env = os.environ if env is None else env
    threads = whole_number(env, THREADS_ENV, 1, MAX_THREADS)
    chosen = LocalSettings(threads=threads or cpus or os.cpu_count() or 1,
                           threads_from="cores" if threads is None else THREADS_ENV,
                           spin_count=None)
    if any(env.get(name, "").strip() for name in WAIT_VARIABLES):
        return chosen
    average, runnable = machine_load() if load is None else load
    if average < LOADED_AVERAGE and runnable < LOADED_RUNNABLE:
        return chosen
    return replace(chosen, spin_count="0")
