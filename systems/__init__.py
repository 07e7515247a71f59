"""RAG strategies, one file each. A new strategy is one new file and one line in SYSTEMS."""

from __future__ import annotations

from typing import Callable

from harness.types import System, SystemContext
from systems.baseline import Baseline
from systems.oracle import Oracle

SYSTEMS: dict[str, Callable[[SystemContext], System]] = {
    "baseline": Baseline,
    "oracle": Oracle,
}
