"""The merge workflow as a library service (docs/running.md#on-a-slurm-array-or-kubernetes-jobs,
docs/run-format.md#a-merged-run): the run directories that `freshrag run --shard i/N` wrote,
joined into one run directory whose report is the single unsharded run's, byte for byte.
`freshrag merge` parses its options and calls `merge`; `freshrag.merge` takes the same by name.

Shards of different runs (another dataset, other systems, other settings: the identity a
resume compares, core/rundir.py) are refused, naming both directories and the setting; so is a
shard given twice. A shard missing or not finished is named, the directory is merged from the
others, and its manifest's `merged` says so, which the report's notes repeat. The rows go in the
order the single run asks them (epoch, question as the dataset lists them, system as --systems
names them); the manifest is the first shard's, with `shard` replaced by `merged`. Every file
is written whole (a temporary file renamed over it), never through a symbolic link, so that a
merge stopped part-way and run again, or run again with a shard more, leaves the same directory.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, cast

from freshrag.core.arguments import PATH, Argument, check_arguments, is_path, path, refused
from freshrag.core.dataset import DatasetError
from freshrag.core.files import write_text
from freshrag.core.jsonl import replace_jsonl
from freshrag.core.manifest import read_manifest, write_manifest
from freshrag.core.outputs import check_outputs, files_in
from freshrag.core.plan_order import PlanOrder, dataset_file_problem, question_places, system_places
from freshrag.core.records import Manifest, SampleRow
from freshrag.core.rundir import check_kind, identity, locked
from freshrag.core.runfiles import LOCK, MANIFEST, PROBES, SAMPLES, SCORES, SUMMARY, SUMMARY_MD
from freshrag.core.samples import epoch_of, read_samples, read_summaries
from freshrag.core.textfile import read_text
from freshrag.core.types import uses_date, uses_steps
from freshrag.core.wording import counted
from freshrag.reporting.run_summary import write_run_summary
from freshrag.run.inputs import InputError
from freshrag.run.shard import Shard, shard_of
from freshrag.scoring.store import read_scores
from freshrag.systems import SYSTEMS

READS = (SAMPLES, SCORES, PROBES, MANIFEST)  # of each shard
WRITES = (*READS, SUMMARY, SUMMARY_MD, LOCK)


@dataclass(frozen=True)
class ShardRun:
    """A run directory holding one shard, as read."""

    path: Path
    manifest: Manifest
    shard: Shard

    @property
    def finished(self) -> bool:
        return bool(self.manifest.get("finished_at"))


@dataclass(frozen=True)
class MergeResult:
    """What a merge gives back; the merged run is in `out`."""

    out: Path
    count: int  # N, the shards of the run
    merged: tuple[int, ...]  # the indexes of the shards merged
    missing: tuple[int, ...]  # of the shards not given
    unfinished: tuple[int, ...]  # of those given whose run has not finished
    rows: int  # samples.jsonl's

    @property
    def complete(self) -> bool:
        return not (self.missing or self.unfinished)

    def lines(self) -> list[str]:
        """What `freshrag merge` prints."""
        said = [f"merged {len(self.merged)} of {counted(self.count, 'shard')} "
                f"({counted(self.rows, 'row')}) into "
                f"{self.out}/"]
        if self.missing:
            said.append("missing: " + ", ".join(f"shard {i}/{self.count}" for i in self.missing))
        if self.unfinished:
            said.append("not finished: " + ", ".join(f"shard {i}/{self.count}"
                                                    for i in self.unfinished)
                        + " (resume each with the same --shard, then merge again)")
        if not self.complete:
            said.append("INCOMPLETE: the merged run's report says so; merge again with every "
                        "shard once each has finished")
        return said


def merge(run_dirs: Sequence[str | Path], out: str | Path) -> MergeResult:
    """The shards in `run_dirs` joined into the run directory `out` (new, or a merge made before:
    it is made again); refused before anything is written if they are not shards of one run."""
    check_arguments({"run_dirs": run_dirs, "out": out}, {
        "run_dirs": Argument(f"the shards' run directories, a list of at least one, each {PATH}",
                             lambda value: refused(isinstance(value, (list, tuple)) and bool(value)
                                                   and all(map(is_path, value)))),
        "out": Argument(f"the merged run's directory, {PATH}", path())}, InputError)
    out = Path(out)
    shards = sorted((_shard_run(Path(given)) for given in run_dirs),
                    key=lambda run: run.shard.index)
    if not shards:
        raise InputError("merge: give the run directories of the shards")
    _check_one_run(shards, out)
    count = shards[0].shard.count
    with contextlib.ExitStack() as stack:
        for run in shards:  # no shard changes while it is read, nor `out` while it is written
            stack.enter_context(locked(run.path))
        _check_out(out, shards)
        stack.enter_context(locked(out))
        rows = _merged_rows(shards, _plan_order(shards[0]))
        replace_jsonl(out / SAMPLES, cast(list[dict[str, Any]], rows))
        _merge_scores(shards, out)
        _copy_probes(shards, out)
        result = MergeResult(out, count, tuple(run.shard.index for run in shards),
                             tuple(i for i in range(1, count + 1)
                                   if i not in {run.shard.index for run in shards}),
                             tuple(run.shard.index for run in shards if not run.finished),
                             len(rows))
        manifest = _merged_manifest(shards, result)
        write_manifest(out, manifest)
        write_run_summary(out, read_summaries(out / SAMPLES), manifest["systems"])
    return result


def _shard_run(path: Path) -> ShardRun:
    """The shard in `path`, or why it is none."""
    if path.is_symlink() or not path.is_dir():
        raise InputError(f"{path}: " + ("a symbolic link; give the directory it points to"
                                        if path.is_symlink() else "no such run directory"))
    manifest = read_manifest(path)
    if manifest is None:
        raise InputError(f"{path}: no {MANIFEST}; is this a run directory?")
    check_kind(path, manifest, "run")
    shard = shard_of(manifest)
    if shard is None:
        raise InputError(f"{path}: holds a run that was not sharded (its {MANIFEST} has no "
                         f"`shard`); merge the directories `freshrag run --shard i/N` wrote")
    return ShardRun(path, manifest, shard)


def _check_one_run(shards: list[ShardRun], out: Path) -> None:
    """Refuse a shard given twice, `out` among the shards, and shards of different runs."""
    seen: dict[Any, ShardRun] = {}
    for run in shards:
        for key in (run.path.resolve(), str(run.shard)):  # 1/3 and 1/2: another refusal
            if key in seen:
                raise InputError(f"{run.path}: " + (
                    "given twice" if isinstance(key, Path) else
                    f"shard {run.shard} is given twice, also as {seen[key].path}"))
            seen[key] = run
    if out.resolve() in seen:
        raise InputError(f"--out {out}: is one of the shards; merge into a directory of its own")
    first = shards[0]
    for run in shards[1:]:
        mine, theirs = _settings(first), _settings(run)
        for name in dict.fromkeys([*mine, *theirs]):
            if mine.get(name) != theirs.get(name):
                raise InputError(
                    f"{first.path} and {run.path} are shards of different runs: {name} is "
                    f"{_shown(mine.get(name))} in {first.path} and {_shown(theirs.get(name))} "
                    f"in {run.path}; merge the shards of one run")


def _settings(run: ShardRun) -> dict[str, Any]:
    """What shards of one run share: its count, the dataset, the systems, the questions and
    epochs asked, and the identity a resume compares (core/rundir.py). A system of the user's
    own is taken to state a date and to be bound by an agent's steps: its shards then agree
    on those too."""
    manifest, config = run.manifest, run.manifest["config"]
    systems = manifest["systems"]
    dated = {name for name in systems if name not in SYSTEMS or uses_date(SYSTEMS[name])}
    stepped = {name for name in systems if name not in SYSTEMS or uses_steps(SYSTEMS[name])}
    return {"the shard count": run.shard.count, "dataset.name": manifest["dataset"].get("name"),
            "dataset.sha256": manifest["dataset"]["sha256"], "systems": systems,
            "limit": config.get("limit"), "epochs": config.get("epochs", 1),
            **identity(manifest, dated, stepped)}


def _shown(value: Any) -> str:
    return "(not set)" if value is None else f"{value}"[:120]


def _check_out(out: Path, shards: list[ShardRun]) -> None:
    """`out` is new or holds a merge: never a shard, a run or anything else; no file it gets is
    a link or a shard's file (core/outputs.py)."""
    if out.is_symlink():
        raise InputError(f"--out {out}: a symbolic link; freshrag writes no run through one")
    check_outputs(files_in(out, WRITES, "--out"),
                  [(f"{run.path}'s {name}", run.path / name) for run in shards for name in READS])
    manifest = read_manifest(out) if out.is_dir() else None
    check_kind(out, manifest, "run")
    if manifest is not None and "merged" not in manifest:
        raise InputError(f"--out {out}: holds a run that was not merged from shards; merge into "
                         f"another directory")


def _plan_order(run: ShardRun) -> PlanOrder:
    """The single run's order (core/plan_order.py), its questions' places read from the dataset
    files the shards ran on (checked against their hashes)."""
    record = run.manifest["dataset"]
    for kind in ("questions", "articles"):
        problem = dataset_file_problem(record, kind)
        if problem:
            raise InputError(f"{run.path}: the dataset's {kind} file "
                             f"{record['files'].get(kind)} is {problem}; merge reads the "
                             f"questions' order from it: run merge where the shards' dataset "
                             f"files are")
    try:
        places = question_places(Path(record["files"]["questions"]))
    except DatasetError as err:
        raise InputError(f"{run.path}: its dataset cannot be read: {err}") from None
    return PlanOrder(system_places(run.manifest), places)


def _merged_rows(shards: list[ShardRun], order: PlanOrder) -> list[SampleRow]:
    """Every shard's rows (of every epoch, the last per pair), in the single run's order."""
    rows = [row for run in shards for row in read_samples(run.path / SAMPLES, every_epoch=True)]
    return sorted(rows, key=lambda row: order.key(epoch_of(row), row["question_id"],
                                                  row["system"]))


def _merge_scores(shards: list[ShardRun], out: Path) -> None:
    """scores.jsonl of every shard (the last row per key), shard by shard: its readers key
    each score to its answer, never by its place."""
    scores = [row for run in shards for row in read_scores(run.path)]
    if scores:
        replace_jsonl(out / SCORES, cast(list[dict[str, Any]], scores))
    elif (out / SCORES).exists() or (out / SCORES).is_symlink():
        (out / SCORES).unlink()  # an earlier merge's: no shard has scores now


def _copy_probes(shards: list[ShardRun], out: Path) -> None:
    """judge-probes.json of the first shard that probed the judge: every shard grades the same
    probes, and the merged manifest keeps that shard's verdict."""
    for run in shards:
        if (run.path / PROBES).is_file() and run.manifest.get("judge_probe"):
            write_text(out / PROBES, read_text(run.path / PROBES, InputError))
            return


def _merged_manifest(shards: list[ShardRun], result: MergeResult) -> dict[str, Any]:
    """The first shard's manifest as the single run's: `shard` replaced by `merged`, its name
    the directory's, its times those of all the shards."""
    first = shards[0].manifest
    starts = [run.manifest.get("started_at") for run in shards]
    ends = [run.manifest.get("finished_at") for run in shards]
    manifest: dict[str, Any] = {key: value for key, value in first.items()
                                if key not in ("shard", "capped", "batch", "format_version")}
    manifest.update({
        "name": result.out.name,
        "started_at": min((s for s in starts if s), default=None),
        "resumed_at": sorted(t for run in shards for t in run.manifest.get("resumed_at", [])),
        "finished_at": max(e for e in ends if e) if result.complete else None,
        "merged": {"count": result.count, "missing": list(result.missing),
                   "unfinished": list(result.unfinished),
                   "shards": [{"index": run.shard.index, "dir": str(run.path),
                               "finished": run.finished} for run in shards]}})
    return manifest
