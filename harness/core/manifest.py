"""manifest.json, the record of how a run or a dataset was made (docs/run-format.md#manifestjson):
config, versions, dataset hashes, prompts, model names and endpoints, written whole at every change;
typed key by key in core/records.py `Manifest`. A manifest of a newer format than this freshrag reads is refused, never misread; so is a run's
manifest whose parts have the wrong shape (`"capped": true`, `"judge_probe": {}`, a missing
`config`), checked once here (harness/core/manifest_shape.py) rather than by every reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, cast

from freshrag.core.files import write_json
from freshrag.core.jsonl import ResultsError, loads
from freshrag.core.manifest_shape import shape_problem
from freshrag.core.records import Manifest
from freshrag.core.runfiles import MANIFEST
from freshrag.core.samples import SAMPLES, read_samples
from freshrag.core.textfile import read_text

# The manifest's layout; a manifest of a higher version comes from a newer freshrag and is refused.
# Manifests written before the field existed are version 1.
FORMAT_VERSION = 1


def write_manifest(run_dir: Path, manifest: Manifest | Mapping[str, Any]) -> None:
    write_json(run_dir / MANIFEST, {**manifest, "format_version": FORMAT_VERSION})


def read_manifest(run_dir: Path) -> Manifest | None:
    """The manifest of a run or dataset directory (None if it has none); one of a newer format,
    or not a JSON object, is refused."""
    path = run_dir / MANIFEST
    if not path.exists():
        return None
    try:
        manifest = loads(read_text(path, ResultsError))
    except json.JSONDecodeError as err:
        raise ResultsError(f"{path}: not valid JSON: {err.msg} (line {err.lineno})") from None
    except RecursionError:
        raise ResultsError(f"{path}: JSON nested too deeply") from None
    if not isinstance(manifest, dict):
        raise ResultsError(f"{path}: expected a JSON object, got {type(manifest).__name__}")
    version = manifest.get("format_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ResultsError(f"{path}: format_version must be a whole number >= 1, got {version!r}")
    if version > FORMAT_VERSION:
        raise ResultsError(f"{path}: written by a newer freshrag (format_version {version}; this "
                           f"one reads up to {FORMAT_VERSION}): upgrade freshrag to use it")
    if not isinstance(manifest.get("dataset", {}), dict):
        raise ResultsError(f"{path}: 'dataset' must be a JSON object")
    problem = shape_problem(manifest)
    if problem:
        raise ResultsError(f"{path}: {problem}; it was not written by freshrag as it is (restore "
                           f"it, or write the run into another directory)")
    return cast(Manifest, manifest)


def check_resumable(run_dir: Path) -> None:
    """Refuse a run directory the runner could not resume, before anything in it is rewritten: a
    manifest of a newer format or of another kind of directory, a samples.jsonl it cannot read."""
    manifest = read_manifest(run_dir) if run_dir.is_dir() else None
    problem = manifest is not None and _run_manifest_problem(manifest)
    if problem:
        raise ResultsError(f"{run_dir / MANIFEST}: {problem}; choose another --out")
    read_samples(run_dir / SAMPLES)


def _run_manifest_problem(manifest: Mapping[str, Any]) -> str | None:
    dataset = manifest.get("dataset") or {}
    if not isinstance(dataset.get("sha256"), dict) or not isinstance(dataset.get("files"), dict):
        return "not the manifest of a freshrag run (no dataset.sha256 and dataset.files)"
    for key in ("systems", "resumed_at"):
        if not isinstance(manifest.get(key, []), list):
            return f"{key!r} must be a list, got {manifest[key]!r:.80}"
    return None
