"""RAG strategies, one file each. A new strategy is one new file and one line in SYSTEMS, a
registry (harness/core/registry.py) of lazy `module:attribute` targets.

A strategy class declares what it needs and does besides answering (`Declarations` in
harness/core/types.py): `uses_index = True` gets the retrieval index (`harness/retrieval/index.py`)
as `context.retriever`, built or opened only when a chosen system needs it; `call_shape` says how
many calls of each role one answer makes, the range a dry run walks (docs/costs.md#dry-run);
`uses_steps = True` marks an agent bounded by the run's `max_steps` and `token_budget`
(`systems/agent.py`, docs/methods.md#agents).
"""

from __future__ import annotations

from typing import Callable

from freshrag.core.registry import Registry, callable_problem
from freshrag.core.types import System, SystemContext

Factory = Callable[[SystemContext], System]

# name -> factory, each imported only when a run asks for it; a user's own system plugs in by
# file, module or entry point (`freshrag.systems`), resolved by systems/external/plugins.py.
SYSTEMS: Registry[Factory] = Registry("system", "freshrag.systems", {
    "baseline": "freshrag.systems.baseline:Baseline",
    "oracle": "freshrag.systems.oracle:Oracle",
    "naive": "freshrag.systems.naive:Naive",
    "boolean": "freshrag.systems.boolean:Boolean",
    "advanced": "freshrag.systems.advanced:Advanced",
    "hyde": "freshrag.systems.hyde:Hyde",
    "dated-boolean": "freshrag.systems.dated_boolean:DatedBoolean",
    "confidence": "freshrag.systems.confidence:Confidence",
    "self-check": "freshrag.systems.self_check:SelfCheck",
    "react": "freshrag.systems.react:React",
    "iterative": "freshrag.systems.iterative:Iterative",
    "decompose": "freshrag.systems.decompose:Decompose",
    "router": "freshrag.systems.router:Router",
}, check=callable_problem("a class or function taking the run's SystemContext"))
