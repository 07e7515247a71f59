"""RAG strategies, one file each. A new strategy is one new file and one line in SYSTEMS.

A strategy class with `uses_index = True` gets the retrieval index (`systems/index.py`) as
`context.retriever`; the CLI builds or opens the index only when a chosen system needs it.
"""

from __future__ import annotations

from typing import Callable

from harness.types import System, SystemContext
from systems.advanced import Advanced
from systems.baseline import Baseline
from systems.confidence import Confidence
from systems.boolean import Boolean
from systems.dated_boolean import DatedBoolean
from systems.hyde import Hyde
from systems.naive import Naive
from systems.oracle import Oracle
from systems.self_check import SelfCheck

SYSTEMS: dict[str, Callable[[SystemContext], System]] = {
    "baseline": Baseline,
    "oracle": Oracle,
    "naive": Naive,
    "boolean": Boolean,
    "advanced": Advanced,
    "hyde": Hyde,
    "dated-boolean": DatedBoolean,
    "confidence": Confidence,
    "self-check": SelfCheck,
}


def uses_index(name: str) -> bool:
    return getattr(SYSTEMS[name], "uses_index", False)
