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
import math
import os
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, BinaryIO, Callable, Iterable, Iterator, Mapping

from freshrag.core.errors import UserError
from freshrag.core.files import atomic_open, dumps, open_no_follow
from freshrag.core.textfile import MAX_LINE_BYTES, lines, unicode_text

TAIL_BLOCK = 1 << 16  # bytes read at a time when looking back for the last newline
# Lists and objects inside each other in one value: a row nests about 8 deep, a reply less
MAX_DEPTH = 100
MAX_INT = 10 ** 4300  # no whole number from here on: `int` turns at most 4,300 digits into text
FIX = "remove the link and run again (freshrag names and writes this file itself)"


class ResultsError(UserError, ValueError):
    """A run's or a dataset's file that cannot be read as freshrag wrote it."""


def now() -> str:
    """When a row or a manifest is written: UTC, to the second, ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def loads(text: str | bytes, *, max_depth: int | None = MAX_DEPTH, exact_text: bool = False,
          **options: Any) -> Any:
    """`json.loads` under freshrag's rules for JSON that Python or a UTF-8 file cannot hold, so
    that every reader's one `except json.JSONDecodeError` names the file and line of any input
    json cannot take: an integer of over 4,300 digits (`int()` refuses it), and lists and
    objects nested deeper than `max_depth` (past about 990 json itself raises RecursionError,
    and a row made of a deeper value could not be written) are JSONDecodeErrors; a lone
    surrogate escape becomes U+FFFD, or NotUnicode with `exact_text` (textfile.unicode_text).
    `max_depth` None: only json's own limit, for freshrag's own files, written within it."""
    try:
        value = json.loads(text, **options)
    except json.JSONDecodeError:
        raise
    except ValueError as err:  # Python's limit on the digits of an integer
        raise json.JSONDecodeError(str(err).split(";")[0], _text(text), 0) from None
    except RecursionError:
        raise json.JSONDecodeError("JSON nested too deeply", _text(text), 0) from None
    if max_depth is not None and _may_nest(text, max_depth) and depth(value) > max_depth:
        raise json.JSONDecodeError(f"JSON nested too deeply (over {max_depth} levels)",
                                   _text(text), 0)
    if not isinstance(text, str) or "\\u" in text:  # bytes are decoded with surrogatepass
        value = unicode_text(value, exact=exact_text)
    return value


def _text(text: str | bytes) -> str:
    return text if isinstance(text, str) else text.decode("utf-8", "replace")


def _may_nest(text: str | bytes, levels: int) -> bool:
    """Whether `text` holds enough brackets to nest `levels` deep (counted in C: most do not)."""
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{") > levels
    return text.count("[") + text.count("{") > levels


def depth(value: Any) -> int:
    """How deeply lists and objects nest in `value` (a string or number: 0, `[]`: 1)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, tuple, dict)):
            deepest = max(deepest, level)
            stack.extend((child, level + 1)
                         for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def json_problem(value: Any, name: str) -> str | None:
    """What keeps `value` from being written as JSON that every reader reads back, naming where
    in `name` it lies, or None: only text, whole and finite numbers, true, false, null, lists
    and objects with text keys, at most MAX_DEPTH deep (a set, bytes, NaN or an object of a
    class are not JSON). Lone surrogates are no problem: the writers replace them."""
    stack: list[tuple[Any, str, int]] = [(value, name, 1)]
    while stack:
        item, where, level = stack.pop()
        if isinstance(item, (str, bool, type(None))):
            continue
        if isinstance(item, int):
            if abs(item) >= MAX_INT:
                return f"{where} is a whole number of over 4,300 digits"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"{where} is {item}, which JSON cannot hold"
        elif not isinstance(item, (list, tuple, dict)):
            return f"{where} is a {type(item).__name__}, which JSON cannot hold"
        elif level > MAX_DEPTH:
            return f"{where} nests lists and objects deeper than {MAX_DEPTH} levels"
        elif isinstance(item, dict):
            if (key := next((k for k in item if not isinstance(k, str)), None)) is not None:
                return f"{where} has the key {key!r:.40}, not text"
            stack.extend((child, f"{where}[{key!r:.40}]", level + 1) for key, child in item.items())
        else:
            stack.extend((child, f"{where}[{i}]", level + 1) for i, child in enumerate(item))
    return None


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
        data = memoryview(_encoded(dumps(row, ensure_ascii=False) + "\n"))
        if len(data) > MAX_LINE_BYTES:  # never a row that every reader would then refuse
            raise RowTooLong(f"{self.path}: a row of {len(data):,} bytes, more than the "
                             f"{MAX_LINE_BYTES:,} a line may hold: not written")
        with self._lock:
            if self._fd < 0:  # a pair a stop abandoned, ending after the run closed the file
                raise ValueError(f"{self.path}: closed, the row is not written")
            try:
                while data:  # os.write may write less than asked (a full disk, a signal)
                    data = data[os.write(self._fd, data):]
            except OSError as err:  # name the file: os.write's own error does not
                raise OSError(err.errno, err.strerror, str(self.path)) from None

    def close(self) -> None:
        # under the lock, and never twice: a late writer must not write to the descriptor's
        # number once another file has it
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _encoded(text: str) -> bytes:
    """`text` as UTF-8, any lone surrogate in it as U+FFFD (textfile.unicode_text): a row is
    never refused for text a user's code made."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return unicode_text(text).encode("utf-8")


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


def iter_jsonl(path: Path, check: Callable[[dict[str, Any]], str | None] | None = None,
               skip: bool = False, decode: Callable[[str], Any] | None = None
               ) -> Iterator[dict[str, Any]]:
    """Every row of a file JsonlWriter wrote, in file order, streamed line by line; a torn last
    line is ignored. `check` says what is wrong with a row (None if nothing): the reader stops
    at that line, or with `skip` leaves the row out with one warning naming file and line (a
    row an older freshrag wrote, which every later row should not be lost for). `decode`: a
    line's own decoder (core/light.py), which falls back on `loads` for what it refuses."""
    return (row for _, row in numbered_jsonl(path, check, skip, decode))


def numbered_jsonl(path: Path, check: Callable[[dict[str, Any]], str | None] | None = None,
                   skip: bool = False, decode: Callable[[str], Any] | None = None
                   ) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_jsonl`'s rows with their line numbers (a light read reads a kept row again)."""
    if not path.exists():
        return
    for line_no, line in lines(path, ResultsError, keep_breaks=True):
        if not line.strip():
            continue
        try:
            # written within MAX_DEPTH (json_problem)
            row = decode(line) if decode else loads(line, max_depth=None)
        except json.JSONDecodeError as err:
            if not line.endswith("\n"):  # the last line, torn by a kill mid-write
                print(f"{path}:{line_no}: ignoring an unfinished last row", file=sys.stderr)
                continue
            raise ResultsError(f"{path}:{line_no}: not valid JSON: {err.msg}") from None
        if not isinstance(row, dict):
            raise ResultsError(f"{path}:{line_no}: expected a JSON object, got "
                               f"{type(row).__name__}")
        if check and (problem := check(row)):
            if not skip:
                raise ResultsError(f"{path}:{line_no}: {problem}")
            print(f"freshrag: warning: {path}:{line_no}: skipped, a row this freshrag cannot "
                  f"read: {problem}", file=sys.stderr)
            continue
        yield line_no, row


def replace_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write `rows` as the whole of the JSON Lines file `path`, atomically: a kill leaves the old
    file or the new one, never half of it (files that are rebuilt from stage records, not
    appended to). Returns the number of rows."""
    with atomic_open(path) as handle:
        return write_jsonl(handle, rows)


def write_jsonl(handle: IO[str], rows: Iterable[dict[str, Any]]) -> int:
    """Write `rows` to an open text stream as JSON Lines, each line as `JsonlWriter` encodes
    it; the number of rows."""
    count = 0
    for row in rows:
        handle.write(_encoded(dumps(row, ensure_ascii=False) + "\n").decode("utf-8"))
        count += 1
    return count
