"""Outputs that would overwrite a command's own inputs: refused before anything is written.

`freshrag needs --out log.jsonl --queries log.jsonl` would have written the needs over the query
log it had just read; `freshrag label DATASET --hand-labels DATASET/labels.jsonl` would have
appended the labeller's records to the hand labels. So every command that writes files and reads
others lists both and calls `check_outputs` first: an output that is one of the inputs (the same
path once resolved, or the same file under another name: a symbolic or hard link), or two
outputs that are one file (`needs --out x.json`, whose .json goes beside it), end the command
in one line naming both and the way out. A command that rewrites an input on purpose
(`freshrag label` puts the labels into the dataset's questions.jsonl) simply does not list that
file among its inputs.

An output that is there but no regular file (a FIFO, a device such as /dev/null, a directory) is
refused here too, named as the option that gave it ("--html /dev/null: not a regular file but a
character device, ..."), by the one check every writer makes (core/files.py `check_plain`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from freshrag.core.errors import UserError
from freshrag.core.files import check_plain


class OverwriteError(UserError, ValueError):
    """An output of a command that is one of its inputs, or another of its outputs."""


@dataclass(frozen=True)
class Output:
    """A file a command writes: `what` names it in a message ("--out", "the .json beside
    --out"), `fix` is the way out ("give another --out")."""

    path: Path
    what: str
    fix: str


def files_in(directory: Path, names: Iterable[str], option: str,
             fix: str | None = None) -> list[Output]:
    """The files a command writes by name into the directory given as `option` ("--out")."""
    return [Output(directory / name, f"{option}'s {name}", fix or f"give another {option}")
            for name in names]


def check_outputs(outputs: Iterable[Output], inputs: Iterable[tuple[str, Path | None]]) -> None:
    """Refuse an output that is an input (`inputs`: (how the input was given, its path), None
    for one not given), another output, or no regular file."""
    given = [(what, Path(path)) for what, path in inputs if path is not None]
    seen: list[Output] = []
    for output in outputs:
        for what, path in given:
            if same_file(output.path, path):
                raise OverwriteError(f"{output.what} ({output.path}) is {what} ({path}), which "
                                     f"this command reads: writing it would overwrite its own "
                                     f"input; {output.fix}")
        for earlier in seen:
            if same_file(output.path, earlier.path):
                raise OverwriteError(f"{output.what} and {earlier.what} would be one file "
                                     f"({output.path}), one written over the other; "
                                     f"{output.fix}")
        check_plain(output.path, output.what, output.fix)
        seen.append(output)


def same_file(a: Path, b: Path) -> bool:
    """One file: the same inode (a hard or symbolic link, another spelling of the path), or,
    where one does not exist yet, the same path once links and `..` are resolved."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # not there (yet): nothing to overwrite unless the paths are one
        return os.path.realpath(a) == os.path.realpath(b)


def check_outside_runs(outputs: Iterable[Output], run_dirs: Iterable[Path]) -> None:
    """Refuse an output inside a run directory: one holds only what freshrag writes there, and
    a report reads every file in it."""
    run_dirs = list(run_dirs)
    for output in outputs:
        where = Path(os.path.realpath(output.path))
        for run_dir in run_dirs:
            if where.is_relative_to(os.path.realpath(run_dir)):
                raise OverwriteError(f"{output.what} {output.path} is inside the run directory "
                                     f"{run_dir}, which holds only what freshrag writes there; "
                                     f"{output.fix}")
