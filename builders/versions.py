"""Versions of a dataset (docs/living.md): what a finished build records about itself, the next
version that `freshrag build --since DIR` makes from it, and the versions found under a folder.

A version is `{"id", "number", "parent", "created"}` in manifest.json: `id` is 12 hex digits of a
SHA-256 over articles.jsonl, questions.jsonl and the build settings (so it changes when any
question, article or setting does, and nothing else moves it); `number` is 1 for a first build
and the parent's plus one for a `--since` build; `parent` is `{"path", "id"}` or null; `created`
is the first and last creation time of its articles.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from freshrag.builders.dated import MonthRange, month_of
from freshrag.builders.sources.pages import BuildError
from freshrag.builders.stages import ARTICLES, QUESTIONS
from freshrag.core.dates import parse_timestamp, utc_today
from freshrag.core.jsonl import read_jsonl
from freshrag.core.manifest import read_manifest

# Settings a --since build takes from its parent whatever the options say: they make the set what
# it is. `created`, `after` and `n` describe the parent's own range, so they are not carried over.
OWN_RANGE = ("created", "after", "n")


def version_id(out: Path, settings: dict[str, Any]) -> str:
    """12 hex digits over the articles, the questions and the settings."""
    digest = hashlib.sha256()
    for name in (ARTICLES, QUESTIONS):
        digest.update(name.encode() + b"\0" + (out / name).read_bytes() + b"\0")
    digest.update(json.dumps(settings, sort_keys=True, ensure_ascii=True).encode())
    return digest.hexdigest()[:12]


def created_range(out: Path) -> dict[str, str | None]:
    """The first and last creation time of the directory's articles (None where none is known)."""
    moments = sorted((_moment(row.get("created")), row["created"])
                     for row in read_jsonl(out / ARTICLES) if _moment(row.get("created")))
    return {"first": moments[0][1] if moments else None,
            "last": moments[-1][1] if moments else None}


def _moment(created: Any) -> Any:
    """The creation time as a moment, None if absent or not a timestamp (a listing of another
    tool's set must not fail on it; the dataset loader refuses it where it matters)."""
    try:
        return parse_timestamp(created) if created else None
    except ValueError:
        return None


def version_record(out: Path, settings: dict[str, Any],
                   parent: dict[str, Any] | None) -> dict[str, Any] | None:
    """The version of a directory holding articles and questions; None before it does."""
    if not ((out / ARTICLES).exists() and (out / QUESTIONS).exists()):
        return None
    return {"id": version_id(out, settings), "number": parent["number"] + 1 if parent else 1,
            "parent": {"path": parent["path"], "id": parent["id"]} if parent else None,
            "created": created_range(out)}


def parent_of(directory: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(settings, parent record) of the dataset a `--since` build extends; a BuildError names
    what it lacks: a manifest, a version, articles with creation dates."""
    manifest = read_manifest(directory) if directory.is_dir() else None
    if manifest is None:
        raise BuildError(f"--since {directory}: not a dataset directory (no manifest.json)")
    version = manifest.get("version")
    if not version:
        raise BuildError(f"--since {directory}: this dataset records no version (a build that "
                         f"has not finished, or one made before versions existed)")
    newest = (version.get("created") or {}).get("last")
    if not newest:
        raise BuildError(f"--since {directory}: none of its articles has a creation date, so "
                         f"nothing says what is newer")
    settings = manifest.get("settings") or {}
    if not settings.get("created"):
        raise BuildError(f"--since {directory}: not a set dated by month (built without "
                         f"--created); --since extends a dated set month by month")
    return settings, {"path": str(directory), "id": version["id"],
                      "number": version["number"], "newest": newest}


def since_range(parent: dict[str, Any], created: MonthRange | None) -> MonthRange:
    """From the parent's newest article (exclusive) to --created's end, else this month."""
    end = created.end if created else utc_today().strftime("%Y-%m")
    start = month_of(parent["newest"])
    if start is None:  # parent_of read it as the newest article's creation time
        raise BuildError(f"--since {parent['path']}: its newest article has no creation time")
    if end < start:
        raise BuildError(f"--created ends in {end}, before the month of the newest article of "
                         f"--since {parent['path']} ({start})")
    return MonthRange(start, end, after=parent["newest"])


def next_out(directory: Path, number: int) -> Path:
    """The default --out of a --since build: DIR's sibling named for the next version, `wiki` ->
    `wiki-v2`, `wiki-v2` -> `wiki-v3`."""
    stem = re.sub(r"-v[0-9]+$", "", directory.resolve().name)
    return directory.resolve().parent / f"{stem}-v{number + 1}"


def is_dataset_dir(directory: Path) -> bool:
    return (directory / QUESTIONS).is_file() and (directory / ARTICLES).is_file()


def find_datasets(root: Path) -> list[dict[str, Any]]:
    """Every dataset directory at `root` and below, as rows (path, version, counts, range),
    ordered by lineage: each first version, then its descendants in order."""
    if not root.is_dir():
        raise BuildError(f"{root}: " + ("not a directory" if root.exists() else
                                        "no such directory"))
    found = [root, *sorted(p for p in root.rglob("*") if p.is_dir())]
    rows = [_row(directory, root) for directory in found if is_dataset_dir(directory)]
    children: dict[str | None, list[dict[str, Any]]] = {}
    ids = {row["id"] for row in rows if row["id"]}
    for row in rows:
        parent = row["parent"] and row["parent"]["id"]
        children.setdefault(parent if parent in ids else None, []).append(row)
    ordered: list[dict[str, Any]] = []

    def add(row: dict[str, Any]) -> None:
        ordered.append(row)
        for child in children.get(row["id"], []) if row["id"] else ():
            add(child)

    for row in children.get(None, []):
        add(row)
    return ordered


def _row(directory: Path, root: Path) -> dict[str, Any]:
    manifest = read_manifest(directory) or {}
    version = manifest.get("version") or {}
    return {"path": str(directory.relative_to(root)) if directory != root else ".",
            "number": version.get("number"), "id": version.get("id"),
            "parent": version.get("parent"),
            "articles": _count(directory / ARTICLES), "questions": _count(directory / QUESTIONS),
            "created": version.get("created") or created_range(directory)}


def _count(path: Path) -> int:
    return len(read_jsonl(path))
