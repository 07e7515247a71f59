"""The options of one run (`freshrag run`'s, or the run service's), typed and described field by
field: which systems answer which questions into which directory, and how (docs/running.md);
the defaults are run/options.py's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshrag.run.options import DEFAULT_CONCURRENCY, RUN_OPTIONS
from freshrag.run.shard import Shard
from freshrag.scoring.probes import ProbeSettings


@dataclass(frozen=True)
class RunConfig:
    out: Path = field(metadata={"help": "run directory (results/NAME)"})
    systems: tuple[str, ...] = field(metadata={"help": "system names, in order"})
    limit: int | None = field(default=RUN_OPTIONS["limit"].default, metadata={
        "help": "only the first N questions"})
    concurrency: int = field(default=DEFAULT_CONCURRENCY, metadata={
        "help": "pairs in flight at once; 1 = serial"})
    use_cache: bool = field(default=True, metadata={"help": "answer repeated calls from the cache"})
    today: str | None = field(default=None, metadata={
        "help": "today's date as the dated decision prompt states it"})
    knowledge_cutoff: str | None = field(default=None, metadata={
        "help": "the answering model's knowledge cutoff, for the dated decision prompt"})
    context_tokens: int = field(default=RUN_OPTIONS["context_tokens"].default, metadata={
        "help": "the answering model's context window; retrieved text is cut to fit"})
    max_steps: int = field(default=RUN_OPTIONS["max_steps"].default, metadata={
        "help": "an agent's most model calls for one answer"})
    token_budget: int | None = field(default=RUN_OPTIONS["token_budget"].default, metadata={
        "help": "an agent's most tokens for one answer; None: no bound but max_steps"})
    epochs: int = field(default=RUN_OPTIONS["epochs"].default, metadata={
        "help": "how many times each pair is answered and graded, each epoch asked anew "
                "(docs/running.md#epochs); the tables read the first"})
    probe: ProbeSettings | None = field(default=ProbeSettings(), metadata={
        "help": "how the judge is probed before grading; None: not probed (--no-probe)"})
    scorers: tuple[str, ...] = field(default=("judge",), metadata={
        "help": "scorers of freshrag.scoring; the judge grades every row, the others go to "
                "scores.jsonl after the pairs"})
    batch_poll: float | None = field(default=None, metadata={
        "help": "first wait between batch polls; None: every call live (no --batch)"})
    shard: Shard | None = field(default=None, metadata={
        "help": "the slice of the pairs this run answers (--shard i/N, run/shard.py); None: all"})
    system_sources: dict[str, dict[str, Any]] = field(default_factory=dict, metadata={
        "help": "where each system came from (systems/external/plugins.py record()), for the manifest "
                "and the resume check"})
