"""JSON Lines files as freshrag writes and reads them (docs/design.md#files): one JSON object per
line, appended the moment it is made (samples.jsonl, scores.jsonl, the builders' stage records), or
rebuilt whole (`replace_jsonl`).

Rows are appended as whole lines to a file opened for appending. A process killed mid-write can
leave a last line without its newline. If that line is a whole row (valid JSON: no proper prefix
of a JSON object is one), reading keeps it and the next writer gives it its newline; if it is
torn, reading ignores it and the next writer cuts it off, so the pair it belonged to is simply
run again. The repair reads back from the end only as far as the last newline.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping

from freshrag.core.errors import UserError
from freshrag.core.files import atomic_open, dumps, open_no_follow
from freshrag.core.textfile import MAX_LINE_BYTES, lines, lone_surrogate

TAIL_BLOCK = 1 << 16  # bytes read at a time when looking back for the last newline
FIX = "remove the link and run again (freshrag names and writes this file itself)"


class ResultsError(UserError, ValueError):
    """A run's or a dataset's file that cannot be read as freshrag wrote it."""


def now() -> str:
    """When a row or a manifest is written: UTC, to the second, ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def loads(text: str, **options: Any) -> Any:
    """`json.loads`, where a value Python cannot hold (an integer of over 4,300 digits, which
    `int()` refuses with a ValueError) is a `json.JSONDecodeError` too: every reader's one
    `except json.JSONDecodeError` then names the file and line of any input json cannot take."""
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError:
        raise
    except ValueError as err:  # Python's limit on the digits of an integer
        raise json.JSONDecodeError(str(err).split(";")[0], text, 0) from None


class RowTooLong(ResultsError):
    """A row longer than a reader accepts (MAX_LINE_BYTES): refused by the writer."""


class JsonlWriter:
    """Appends rows to a JSON Lines file (samples.jsonl, the builders' stage files), safe across
    threads.

    A last line left without its newline by a kill is repaired when the writer opens the file
    (see the module docstring), so that the next row starts on a line of its own instead of
    being glued to it.
    """

    def __init__(self, path: Path):
        self.path = path
        _repair_tail(path)
        # a symbolic link is refused (files.SymlinkError): these rows are the run's own data
        self._fd = open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644, FIX)
        self._lock = threading.Lock()

    def write(self, row: Mapping[str, Any]) -> None:
        data = memoryview((dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
        if len(data) > MAX_LINE_BYTES:  # never a row that every reader would then refuse
            raise RowTooLong(f"{self.path}: a row of {len(data):,} bytes, more than the "
                             f"{MAX_LINE_BYTES:,} a line may hold: not written")
        with self._lock:
            try:
                while data:  # os.write may write less than asked (a full disk, a signal)
                    data = data[os.write(self._fd, data):]
            except OSError as err:  # name the file: os.write's own error does not
                raise OSError(err.errno, err.strerror, str(self.path)) from None

    def close(self) -> None:
        os.close(self._fd)


def _repair_tail(path: Path) -> None:
    """End the file with a newline: after a whole last row, or where a torn one began."""
    if not path.exists():
        return
    with os.fdopen(open_no_follow(path, os.O_RDWR, fix=FIX), "rb+") as handle:  # a link: refused
        end = handle.seek(0, os.SEEK_END)
        start = _last_line_start(handle, end)
        if start == end:
            return
        handle.seek(start)
        if _is_row(handle.read(end - start)):
            handle.seek(end)
            handle.write(b"\n")
        else:
            handle.truncate(start)


def _last_line_start(handle: BinaryIO, end: int) -> int:
    """Where the file's last line starts (`end` if the file is empty or ends with a newline),
    reading backwards from `end` in blocks."""
    position = end
    while position > 0:
        step = min(TAIL_BLOCK, position)
        handle.seek(position - step)
        block = handle.read(step)
        if position == end and block.endswith(b"\n"):
            return end
        newline = block.rfind(b"\n")
        if newline >= 0:
            return position - step + newline + 1
        position -= step
    return 0


def _is_row(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:  # JSONDecodeError, or a multi-byte character cut in two
        return False


def read_jsonl(path: Path, check: Callable[[dict[str, Any]], str | None] | None = None
               ) -> list[dict[str, Any]]:
    """Every row of a file JsonlWriter wrote, in file order (`iter_jsonl`'s rows as a list)."""
    return list(iter_jsonl(path, check))


def iter_jsonl(path: Path, check: Callable[[dict[str, Any]], str | None] | None = None
               ) -> Iterator[dict[str, Any]]:
    """Every row of a file JsonlWriter wrote, in file order, streamed line by line; a torn last
    line is ignored. `check` says what is wrong with a row (None if nothing): the reader stops
    at that line."""
    if not path.exists():
        return
    for line_no, line in lines(path, ResultsError, keep_breaks=True):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except json.JSONDecodeError as err:
            if not line.endswith("\n"):  # the last line, torn by a kill mid-write
                print(f"{path}:{line_no}: ignoring an unfinished last row", file=sys.stderr)
                continue
            raise ResultsError(f"{path}:{line_no}: not valid JSON: {err.msg}") from None
        except RecursionError:
            raise ResultsError(f"{path}:{line_no}: JSON nested too deeply") from None
        problem = _row_problem(row, line) or (check and check(row))
        if problem:
            raise ResultsError(f"{path}:{line_no}: {problem}")
        yield row


def _row_problem(row: Any, line: str) -> str | None:
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    if "\\u" in line and (bad := lone_surrogate(row)) is not None:
        return f"{bad!r} holds a lone surrogate escape, which is not Unicode text"
    return None


def replace_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write `rows` as the whole of the JSON Lines file `path`, atomically: a kill leaves the old
    file or the new one, never half of it (files that are rebuilt from stage records, not
    appended to). Returns the number of rows."""
    count = 0
    with atomic_open(path) as handle:
        for row in rows:
            handle.write(dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count
