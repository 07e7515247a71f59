"""The light read's second pass (docs/design.md#the-light-read): the steps of the rows a JSON
report prints, read again whole from the file and line each summary's `Trajectory` knows,
one row at a time, so that a report of 100,000 answers never holds every step's every field."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Sequence

import msgspec
from msgspec import UNSET, Struct, UnsetType

from freshrag.core.jsonl import loads
from freshrag.core.light import Step
from freshrag.core.summary import Trajectory
from freshrag.core.textfile import UTF8_BOM


class StepsOnly(Struct):
    """What the second pass decodes of a row: its steps, as the JSON report prints them."""

    steps: list[Step] | None | UnsetType = UNSET


_STEPS = msgspec.json.Decoder(StepsOnly)


def whole_steps(trajectories: Sequence[Trajectory]) -> Iterator[Any]:
    """Each of `trajectories` (summaries' steps) as its row holds them, in order, one at a time:
    read again from the file and line it knows (Step records as builtins, or, on a line the
    records refuse, dicts as the whole read makes them); one not read from a file (a summary of
    a row made in memory), or of no step, as it is."""
    wanted: dict[Path, set[int]] = {}
    for steps in trajectories:
        if steps and steps.path is not None:
            wanted.setdefault(steps.path, set()).add(steps.line)
    with ExitStack() as stack:
        files = {path: _Lines(stack.enter_context(open(path, "rb")), lines)
                 for path, lines in wanted.items()}
        for steps in trajectories:
            if steps and steps.path is not None:
                yield _steps_of(files[steps.path].read(steps.line))
            else:
                yield steps


class _Lines:
    """The lines wanted of a file, read by number: forward from where the last read stopped,
    which in the usual order (a system's rows, as the file holds them) reads the file once;
    a line passed on the way is found again by its offset."""

    def __init__(self, handle: BinaryIO, wanted: set[int]):
        self.handle, self.wanted = handle, wanted
        self.offsets: dict[int, int] = {}
        self.scanned, self.end = 0, 0  # lines passed, and the offset after them

    def read(self, line: int) -> bytes:
        if line in self.offsets:
            self.handle.seek(self.offsets[line])
            return self.handle.readline()
        self.handle.seek(self.end)
        while True:
            raw = self.handle.readline()
            self.scanned += 1
            if self.scanned in self.wanted:
                self.offsets[self.scanned] = self.end
            self.end += len(raw)
            if self.scanned == line:
                return raw


def _steps_of(line: bytes) -> Any:
    line = line.removeprefix(UTF8_BOM)  # the first line's, as the first pass read it
    try:
        return msgspec.to_builtins(_STEPS.decode(line).steps)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return loads(line, max_depth=None)["steps"]
