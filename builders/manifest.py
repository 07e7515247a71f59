"""The dataset's manifest: the funnel of every stage (how many articles and questions each kept, and
why the others went), recomputed from the files on disk so that it always adds up, and the settings
a dataset is tied to (building into it with others is refused). docs/methods.md#dataset-workflow.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from freshrag.builders.dated import month_funnel
from freshrag.builders.labels.prompts import PROMPTS as LABEL_PROMPTS
from freshrag.builders.prompts import PROMPTS
from freshrag.builders.records import read_records
from freshrag.builders.sources.pages import BuildError
from freshrag.builders.stages import (
    ARTICLES,
    QUESTIONS,
    RECENCY,
    SAMPLE,
    BuildConfig,
    read_titles,
    titles_path,
)
from freshrag.builders.styles import grounded, style_of
from freshrag.builders.styles.base import options_of
from freshrag.builders.styles.facts import fact_counts
from freshrag.builders.styles.needs import NEEDS_FILE, needs_funnel
from freshrag.builders.styles.needs import PROMPTS as NEED_PROMPTS
from freshrag.builders.styles.prompted import dropped_counts
from freshrag.builders.styles.statement_questions import (
    CANDIDATES_FILE,
    StatementOptions,
    statements_funnel,
)
from freshrag.builders.versions import version_record
from freshrag.core.jsonl import now
from freshrag.core.manifest import read_manifest, write_manifest
from freshrag.core.records import Manifest
from freshrag.core.types import UNKNOWN
from freshrag.llm.client import LLMClient


def funnel(out: Path, min_critique: tuple[tuple[str, int], ...] = ()) -> dict[str, Any]:
    """How many articles each stage kept and why the others went, from the files on disk; how
    many questions were written, and the replies dropped for holding none; for the statements
    style, how many were written, failed or dropped, by reason."""
    samples = read_records(out / SAMPLE)
    result: dict[str, Any] = {
        "sampled": len(samples),
        "n_r": sum(row["discard"] is None for row in samples),
        "discarded_r": dict(Counter(row["discard"] for row in samples if row["discard"])),
    }
    if titles_path(out, "A_d").exists():
        a_d = set(read_titles(out, "A_d"))
        articles = read_records(out / ARTICLES)
        result["n_d"] = len(a_d)
        result["discarded_d"] = dict(Counter(
            "created_unknown" if not row.get("created") else "created_before_cutoff"
            for row in articles if row["title"] not in a_d))
    if titles_path(out, "A_f").exists():
        a_f = set(read_titles(out, "A_f"))
        verdicts = {row["title"]: row["verdict"] for row in read_records(out / RECENCY)}
        gone = [verdicts[title] for title in read_titles(out, "A_d") if title not in a_f]
        result["n_f"] = len(a_f)
        result["discarded_f"] = dict(Counter(
            "unknown_verdict" if verdict == UNKNOWN else "not_mostly_after_cutoff"
            for verdict in gone))
    if (out / CANDIDATES_FILE).exists():
        result.update(statements_funnel(out, min_critique))
    if (out / QUESTIONS).exists():
        questions = read_records(out / QUESTIONS)
        result["questions"] = len(questions)
        labels = Counter(row.get("label") or "none" for row in questions)
        result.update({"labels": dict(labels)} if set(labels) - {"none"} else {})
    if dropped := dropped_counts(out):  # replies that held no question, by reason
        result["dropped_questions"] = dropped
    if any(row.get("month") for row in samples):  # a set dated by month (builders/dated.py)
        stages = {key: set(read_titles(out, stage)) for key, stage in
                  (("n_r", "A_r"), ("n_d", "A_d"), ("n_f", "A_f")) if titles_path(out, stage).exists()}
        questions = read_records(out / QUESTIONS) if (out / QUESTIONS).exists() else []
        result["months"] = month_funnel(samples, read_records(out / ARTICLES), questions, stages)
    if (out / NEEDS_FILE).exists():
        result["needs"] = needs_funnel(out)
    for name, counts in (("facts", fact_counts(out)), ("grounded", grounded.grounded_counts(out))):
        if counts is not None:
            result[name] = counts
    return result


def update_manifest(config: BuildConfig, source: str | None, cutoff_source: str | None,
                    llm: LLMClient | None, stage: str) -> Manifest:
    """Record a finished stage and the funnel; refuse to mix settings within one dataset."""
    manifest: Manifest = read_manifest(config.out) or {"created_at": now(), "stages": {}}
    check_settings(config)
    manifest["settings"] = config.settings()
    if source is not None:
        manifest["source"] = source
    if cutoff_source is not None:
        manifest["cutoff_source"] = cutoff_source
    style = style_of(config.style)
    style_roles = tuple(getattr(style, "roles", ()))  # the roles a style's own calls take
    for role in ("builder", "labeller", *style_roles):
        if llm is not None and (role == "builder" or stage == "labels"
                                or role in style_roles and stage == "questions"):
            manifest.setdefault("models", {})[role] = llm.settings.role(role).record()
    manifest["prompts"] = PROMPTS | LABEL_PROMPTS | (NEED_PROMPTS if config.needs else {})
    manifest.update(style.manifest(config))  # the style's own keys, if any
    manifest["stages"][stage] = {"finished_at": now()}
    manifest["funnel"] = funnel(config.out, options_of(config, StatementOptions).min_critique)
    if hasattr(style, "funnel"):  # a style that counts its own drops (multihop)
        manifest["funnel"].update(style.funnel(config))
    version = version_record(config.out, manifest["settings"], config.parent)
    if version is not None:
        manifest["version"] = version
    write_manifest(config.out, manifest)
    return manifest


def check_settings(config: BuildConfig) -> None:
    manifest = read_manifest(config.out) if config.out.exists() else None
    earlier = (manifest or {}).get("settings")
    if not earlier:
        return
    changed = {key: (earlier[key], value) for key, value in config.settings().items()
               if key in earlier and earlier[key] != value}
    if changed:
        what = ", ".join(f"{key} {old!r} (now {new!r})" for key, (old, new) in changed.items())
        raise BuildError(f"{config.out}: this dataset was built with {what}; build into another "
                         f"--out, or remove the directory to start over")
