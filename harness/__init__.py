"""freshrag: a benchmark harness for retrieval-augmented generation on fresh (post-cutoff) data.

This module is the public API: what a user's own code imports. Everything else under `freshrag.`
is internal and may move between releases (docs/design.md draws the packages).

An evaluation is one call, as `freshrag run` makes it (docs/api.md): `freshrag.evaluate(dataset,
systems=[EchoRag, "naive"], limit=3)` answers, judges and accounts every pair into a run
directory and returns its rows; `freshrag.estimate(...)` with the same arguments prices it first.
Each workflow is one call likewise: `freshrag.build`, `freshrag.score` and `freshrag.report`.

A system under test is one object with one method::

    from freshrag import Question, SystemAnswer, SystemContext

    class EchoRag:
        def __init__(self, context: SystemContext):
            self.context = context

        def answer(self, question: Question) -> SystemAnswer:
            chunks = self.context.retriever.retrieve(question.text)
            reply = self.context.llm.chat("answer", [
                {"role": "system", "content": "\\n\\n".join(c.text for c in chunks)},
                {"role": "user", "content": question.text}])
            return SystemAnswer(reply.text or "", calls=[reply], retrievals=1,
                                details={"retrieved": [c.title for c in chunks]})

Names are imported on first use, so that `import freshrag` (and `freshrag --help`) stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it ("module:name" where the names differ)
_EXPORTS = {
    # what a system receives and returns (docs/design.md, "The system protocol")
    "System": "freshrag.core.types",
    "SystemContext": "freshrag.core.types",
    "SystemAnswer": "freshrag.core.types",
    "Step": "freshrag.core.types",
    "Question": "freshrag.core.types",
    "Article": "freshrag.core.types",
    "LLM": "freshrag.core.types",
    "LLMResponse": "freshrag.core.types",
    "Usage": "freshrag.core.types",
    "Retriever": "freshrag.core.types",
    "RetrievedChunk": "freshrag.core.types",
    "Grade": "freshrag.core.types",
    # what a system may declare about itself (docs/own-system.md)
    "Declarations": "freshrag.core.types",
    "CallShape": "freshrag.core.types",
    # datasets, runs and reports
    "Dataset": "freshrag.core.dataset",
    "load_dataset": "freshrag.core.dataset",
    "load_dataset_dir": "freshrag.core.dataset",
    "build": "freshrag.cli.commands.build",  # the command's options by name, its parser's checks
    "evaluate": "freshrag.workflows.evaluate",
    "estimate": "freshrag.workflows.evaluate",
    "score": "freshrag.workflows.score",
    "ScoreResult": "freshrag.workflows.score",
    "report": "freshrag.workflows.report",
    "merge": "freshrag.workflows.merge",
    "MergeResult": "freshrag.workflows.merge",
    "ReportResult": "freshrag.workflows.report",
    "RunOptions": "freshrag.run.inputs",
    "RunResult": "freshrag.run.service",
    "ProbeSettings": "freshrag.scoring.probes",
    "IndexConfig": "freshrag.retrieval.config",
    "LLMSettings": "freshrag.core.config",
    "load_settings": "freshrag.core.config",
    # the runner itself, which `evaluate` drives: it takes an opened client and the prompts
    "RunConfig": "freshrag.run.runner",
    "run_dataset": "freshrag.run.runner:run",  # `freshrag.run` is the package
    "load_runs": "freshrag.reporting.loading",
    "load_summaries": "freshrag.reporting.loading",
    "summarise": "freshrag.reporting.summary_table",
    # the built-in systems and scorers, by name
    "SYSTEMS": "freshrag.systems",
    "SCORERS": "freshrag.scoring",
}

__all__ = [
    "__version__", "System", "SystemContext", "SystemAnswer", "Step", "Question", "Article", "LLM",
    "LLMResponse", "Usage", "Retriever", "RetrievedChunk", "Grade", "Declarations", "CallShape",
    "Dataset", "load_dataset", "load_dataset_dir", "build", "evaluate", "estimate", "score",
    "ScoreResult", "report", "ReportResult", "merge", "MergeResult", "RunOptions", "RunResult", "ProbeSettings",
    "IndexConfig", "LLMSettings", "load_settings", "RunConfig", "run_dataset", "load_runs",
    "load_summaries", "summarise", "SYSTEMS", "SCORERS",
]

if TYPE_CHECKING:  # what type checkers and editors see
    from freshrag.cli.commands.build import build
    from freshrag.core.config import LLMSettings, load_settings
    from freshrag.core.dataset import Dataset, load_dataset, load_dataset_dir
    from freshrag.core.types import (
        LLM,
        Article,
        CallShape,
        Declarations,
        Grade,
        LLMResponse,
        Question,
        RetrievedChunk,
        Retriever,
        Step,
        System,
        SystemAnswer,
        SystemContext,
        Usage,
    )
    from freshrag.reporting.loading import load_runs, load_summaries
    from freshrag.reporting.summary_table import summarise
    from freshrag.retrieval.config import IndexConfig
    from freshrag.run.inputs import RunOptions
    from freshrag.run.runner import RunConfig
    from freshrag.run.runner import run as run_dataset
    from freshrag.run.service import RunResult
    from freshrag.scoring import SCORERS
    from freshrag.scoring.probes import ProbeSettings
    from freshrag.systems import SYSTEMS
    from freshrag.workflows.evaluate import estimate, evaluate
    from freshrag.workflows.merge import MergeResult, merge
    from freshrag.workflows.report import ReportResult, report
    from freshrag.workflows.score import ScoreResult, score


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'freshrag' has no attribute {name!r}")
    module, _, attribute = _EXPORTS[name].partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value  # the next lookup skips __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
