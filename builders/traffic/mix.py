"""`freshrag mix`: a question set of a chosen traffic composition
(docs/methods.md#retrieval-need-and-deciders), e.g. 10% fresh, 60% control, 30% general, drawn from
a dataset whose questions carry `kind` (builders/traffic/kinds.py).

Counts are the shares of `--n` rounded by largest remainder, so they add up to `--n`. Within a
kind the questions are taken in one seeded order, the same for every mix of the same seed, so a
mix with fewer questions of a kind holds a prefix of what a larger one holds: the union of a
sweep over mixes is the largest of each kind, answered once. Question ids are kept, so rows of a
run over the union are recombined per mix by the report (`freshrag report --mix`) without a call.

The directory gets `questions.jsonl`, a copy of `articles.jsonl` (the same corpus, hence the same
retrieval index) and `mix.json` (source, its SHA-256, shares, counts, seed, what each kind held).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from freshrag.builders.records import read_document
from freshrag.core.dataset import DatasetError, load_dataset_dir, sha256_file
from freshrag.core.errors import UserError
from freshrag.core.files import replacing, write_json
from freshrag.core.jsonl import now, replace_jsonl
from freshrag.core.textfile import lines
from freshrag.core.types import KINDS, Question
from freshrag.core.wording import counted

MIX = "mix.json"
TOLERANCE = 1e-6  # shares typed as decimals (0.1 + 0.6 + 0.3) need not add up to 1 exactly


class MixError(UserError, ValueError):
    """A mix that cannot be drawn; the message names the option, kind or file."""


def counts_for(shares: dict[str, float], n: int) -> dict[str, int]:
    """Questions per kind: the shares of n, rounded by largest remainder (they add up to n)."""
    total = sum(shares.values())
    if abs(total - 1) > TOLERANCE:
        given = " + ".join(f"--{kind} {share:g}" for kind, share in shares.items())
        raise MixError(f"{given} = {total:g}; the shares must add up to 1")
    exact = {kind: share * n for kind, share in shares.items()}
    counts = {kind: int(value) for kind, value in exact.items()}
    by_remainder = sorted(shares, key=lambda kind: (counts[kind] - exact[kind], KINDS.index(kind)))
    for kind in by_remainder[:n - sum(counts.values())]:
        counts[kind] += 1
    return counts


def draw(questions: list[Question], counts: dict[str, int], seed: int,
         source: Path) -> list[Question]:
    """The questions of the mix, shuffled; a kind with too few questions is named."""
    chosen = []
    for kind, wanted in counts.items():
        pool = sorted((q for q in questions if q.kind == kind), key=lambda q: q.id)
        if wanted > len(pool):
            raise MixError(f"{source}: the mix needs {wanted} {kind} questions, the dataset holds "
                           f"{len(pool)}")
        random.Random(f"{seed}/{kind}").shuffle(pool)  # one order per kind and seed: nested mixes
        chosen += pool[:wanted]
    random.Random(seed).shuffle(chosen)
    return chosen


def write_mix(dataset_dir: Path, shares: dict[str, float], n: int, seed: int, out: Path) -> str:
    """Write the mix into `out`; returns a line saying what was written."""
    counts = counts_for(shares, n)
    dataset = load_dataset_dir(dataset_dir)  # checked whole before anything is written
    record = {"source": str(dataset_dir), "source_sha256": dataset.file_hashes(),
              "shares": shares, "n": n, "seed": seed, "counts": counts,
              "available": {kind: sum(q.kind == kind for q in dataset.questions) for kind in KINDS},
              "without_kind": sum(q.kind is None for q in dataset.questions)}
    if (out / MIX).exists():
        earlier = read_document(out / MIX)
        if {k: earlier.get(k) for k in record} == record:
            return f"{out}: this mix is written already"
        raise MixError(f"{out}: holds another mix ({out / MIX}); write into another --out")
    if out.exists() and any(out.iterdir()):
        raise MixError(f"{out}: not empty; write a mix into a new --out")
    chosen = draw(dataset.questions, counts, seed, dataset.files["questions"])
    raw = raw_rows(dataset.files["questions"])
    out.mkdir(parents=True, exist_ok=True)
    # the ids as the source gave or numbered them, so runs line up
    replace_jsonl(out / "questions.jsonl", ({**raw[question.id], "id": question.id}
                                            for question in chosen))
    with replacing(out / "articles.jsonl") as copy:  # never through a link (core/files.py)
        shutil.copyfile(dataset.files["articles"], copy)
    record["articles_sha256"] = sha256_file(out / "articles.jsonl")
    write_json(out / MIX, {**record, "created_at": now()}, ensure_ascii=True)
    shown = ", ".join(f"{counts[k]} {k}" for k in counts)
    return (f"{out}: {counted(sum(counts.values()), 'question')} ({shown}); "
            f"run it with: freshrag run --dataset {out}")


def raw_rows(path: Path) -> dict[str, dict[str, Any]]:
    """The questions file's rows by question id (the loader numbers rows without one by line),
    so that a mix keeps every field a row holds (category, cutoff, created, ...)."""
    rows = {}
    for line_no, line in lines(path, DatasetError):
        if line.strip():
            row = json.loads(line)
            rows[str(row["id"]) if row.get("id") is not None else f"q{line_no:05d}"] = row
    return rows
