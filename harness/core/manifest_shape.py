"""The shape of a run's manifest.json: the parts freshrag reads back, with their types, checked
once when the manifest is read (harness/core/manifest.py), so that a hand-edited or damaged
manifest is one message naming the key, not a KeyError in whichever command reads it next.

pydantic (already under the openai SDK) checks it: strict types, every other key allowed (a
newer freshrag's additions, a user's notes), and the error's location names the key path.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _DatasetRecord(_Part):
    sha256: dict[str, str]
    files: dict[str, str]
    name: str | None = None


class _Role(_Part):
    model: str
    base_url: str


class _Llm(_Part):
    roles: dict[str, _Role]


class _ProbeField(_Part):
    discrimination: float | None
    interval: list[float] | None = Field(default=None, min_length=2, max_length=2)


class _JudgeProbe(_Part):
    """{"skipped": true}, {"unavailable": why}, or the verdict of the probes."""

    skipped: bool = False
    unavailable: str | None = None
    k: int | None = None
    seed: int | None = None
    threshold: float | None = None
    fields: dict[str, _ProbeField] | None = None
    informative: bool | None = None

    @model_validator(mode="after")
    def _a_verdict(self) -> _JudgeProbe:
        if self.skipped or self.unavailable:
            return self
        missing = [name for name in ("k", "threshold", "fields", "informative")
                   if getattr(self, name) is None]
        if missing:
            raise ValueError(f"neither skipped nor unavailable, and without {', '.join(missing)}")
        return self


class _Capped(_Part):  # harness/cost/budget.py Budget.record()
    max_cost: float
    spent: float


class RunManifest(_Part):
    kind: Literal["run"] = "run"
    dataset: _DatasetRecord
    config: dict[str, Any]
    llm: _Llm
    systems: list[str]
    started_at: str | None = None
    resumed_at: list[str] = []
    finished_at: str | None = None
    judge_probe: _JudgeProbe | None = None
    capped: _Capped | None = None
    index: dict[str, Any] | None = None
    batch: dict[str, Any] | None = None
    prompts_sha256: dict[str, str] = {}
    system_sources: dict[str, Any] = {}
    system_kinds: dict[str, Literal["fixed", "decides", "agent"]] = {}


def _plain(message: str) -> str:
    """pydantic's message in JSON's words, without the names of the classes above."""
    message = re.sub(r" or instance of \w+", "", message).replace("Value error, ", "")
    message = message[:1].lower() + message[1:]
    return message.replace("valid dictionary", "JSON object").replace("valid list", "JSON array")


def is_run(manifest: dict[str, Any]) -> bool:
    """A run's manifest: one that says so, or (before `kind`) one with systems and a config."""
    return manifest.get("kind") == "run" or (
        "kind" not in manifest and "systems" in manifest and "dataset" in manifest)


def shape_problem(manifest: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a run's manifest, as `key.path: what`; None if nothing
    (or if it is not a run's)."""
    if not is_run(manifest):
        return None
    try:
        RunManifest.model_validate(manifest)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the manifest"
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        return f"{where}: {_plain(first['msg'])}{more}"
    return None
