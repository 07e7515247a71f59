"""RAG strategies, one file each. A new strategy is one new file and one line in SYSTEMS.

A strategy class declares what it needs and does besides answering (`Declarations` in
harness/core/types.py): `uses_index = True` gets the retrieval index (`harness/retrieval/index.py`)
as `context.retriever`, built or opened only when a chosen system needs it; `call_shape` says how
many calls of each role one answer makes, the range a dry run walks (docs/costs.md#dry-run);
`uses_steps = True` marks an agent bounded by the run's `max_steps` and `token_budget`
(`systems/agent.py`, docs/methods.md#agents).
"""

from __future__ import annotations

from typing import Callable

from freshrag.core.types import System, SystemContext
from freshrag.systems.advanced import Advanced
from freshrag.systems.baseline import Baseline
from freshrag.systems.boolean import Boolean
from freshrag.systems.confidence import Confidence
from freshrag.systems.dated_boolean import DatedBoolean
from freshrag.systems.decompose import Decompose
from freshrag.systems.hyde import Hyde
from freshrag.systems.iterative import Iterative
from freshrag.systems.naive import Naive
from freshrag.systems.oracle import Oracle
from freshrag.systems.react import React
from freshrag.systems.router import Router
from freshrag.systems.self_check import SelfCheck

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
    "react": React,
    "iterative": Iterative,
    "decompose": Decompose,
    "router": Router,
}
