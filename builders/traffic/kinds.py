"""Traffic kinds beside the fresh questions (docs/methods.md#retrieval-need-and-deciders): the
`traffic` build stage, run after `questions`, adds to `questions.jsonl`

- *control* questions: one question (the same question writer, style `creative`) about each of
  `--control` A_r articles created at least `--control-margin` days before the cutoff, chosen
  with the build's seed. The model saw such articles, so retrieval is not needed by construction
  (`kind: control`, `need: false`); each row records the cutoff and the article's creation date.
- *general* queries: `--general` queries drawn with the build's seed from the shipped list
  (builders/traffic/general_queries.py): greetings, arithmetic, definitions, writing requests. No
  document answers them: `title` is null, `kind: general`, `need: false`, and the judge grades
  them with its no-article prompt (harness/scoring/judge.py).

The fresh questions of the `questions` stage carry `kind: fresh`, `need: true` when they are
about A_f (builders/styles/prompted.py, STAGE_KINDS). The stage resumes like the others: control titles
are fixed in `control.txt` once chosen, and questions already written are not asked again.
`manifest.json` gets a `traffic` record: counts per kind, the cutoff and the margin.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from freshrag.builders.cutoffs import created_after
from freshrag.builders.records import read_records
from freshrag.builders.stages import (
    ARTICLES,
    QUESTIONS,
    BuildConfig,
    BuildError,
    generate_questions,
    read_titles,
    titles_path,
    write_titles,
)
from freshrag.builders.traffic.general_queries import GENERAL_QUERIES
from freshrag.core.jsonl import JsonlWriter, now
from freshrag.core.manifest import read_manifest, write_manifest
from freshrag.llm.client import LLMClient

CONTROL = "control"  # the title list of the control articles: control.txt


def add_traffic(llm: LLMClient | None, config: BuildConfig) -> str:
    """Add the control and general questions the config asks for; a line saying what exists."""
    if config.control:
        control_titles(config)
        if llm is None:
            raise BuildError("control questions need the builder model")
        generate_questions(llm, replace(config, questions_from=CONTROL, questions_per_article=1,
                                        style="creative"))
    general = add_general(config)
    counts = kind_counts(config.out)
    manifest = read_manifest(config.out) or {"created_at": now(), "stages": {}}  # as stages.py
    manifest["traffic"] = {"counts": counts, "cutoff": config.cutoff.isoformat(),
                           "control_margin_days": config.control_margin_days,
                           "control_created_before": control_day(config).isoformat(),
                           "general_source": "builders/traffic/general_queries.py" if general else None}
    write_manifest(config.out, manifest)
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def control_day(config: BuildConfig):
    return config.cutoff - timedelta(days=config.control_margin_days)


def control_titles(config: BuildConfig) -> list[str]:
    """`config.control` A_r articles created on or before the control day, seeded; fixed in
    control.txt once chosen, so a resumed build asks about the same ones."""
    if titles_path(config.out, CONTROL).exists():
        return read_titles(config.out, CONTROL)
    chosen = choose_control(config)
    write_titles(config.out, CONTROL, chosen)
    return chosen


def choose_control(config: BuildConfig) -> list[str]:
    """The control articles `control_titles` fixes, chosen without writing (the dry run's)."""
    a_r = set(read_titles(config.out, "A_r"))
    day = control_day(config)
    old = sorted(row["title"] for row in read_records(config.out / ARTICLES)
                 if row["title"] in a_r and row.get("created")
                 and not created_after(row["created"], day,
                                       f"{config.out / ARTICLES}: {row['title']!r}: created"))
    if len(old) < config.control:
        raise BuildError(f"{config.out}: --control {config.control} asks for more articles than "
                         f"A_r holds created by {day} ({len(old)}, a margin of "
                         f"{config.control_margin_days} days before the cutoff)")
    return random.Random(config.seed).sample(old, config.control)


def add_general(config: BuildConfig) -> int:
    """Write the general queries not written yet; returns how many the dataset asks for."""
    if config.general > len(GENERAL_QUERIES):
        raise BuildError(f"--general {config.general}: the shipped list holds "
                         f"{len(GENERAL_QUERIES)} general queries")
    chosen = random.Random(config.seed).sample(range(len(GENERAL_QUERIES)), config.general)
    done = {row["id"] for row in read_records(config.out / QUESTIONS)}
    writer = JsonlWriter(config.out / QUESTIONS)
    try:
        for position, index in enumerate(chosen):
            qid = f"general-{position:05d}"
            if qid not in done:
                category, text = GENERAL_QUERIES[index]
                writer.write({"id": qid, "title": None, "question": text, "kind": "general",
                              "need": False, "category": category, "stage": "general"})
    finally:
        writer.close()
    return config.general


def kind_counts(out: Path) -> dict[str, Any]:
    """Questions per traffic kind in the dataset (`none` for questions without a kind)."""
    counts: dict[str, int] = {}
    for row in read_records(out / QUESTIONS):
        kind = row.get("kind") or "none"
        counts[kind] = counts.get(kind, 0) + 1
    return counts
