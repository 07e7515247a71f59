"""Whole files written so that a crash never tears them (docs/design.md#files).

Every file freshrag writes whole (manifests, stage lists, rebuilt JSON Lines files, reports,
figures, the facts database) goes through `replacing`: the content goes to a new temporary file
in the same directory, is flushed and synced to disk, and then `os.replace` puts it in place in
one step. A reader, or a run resumed after a kill, finds the old file or the new one, never
half of one; a write that fails removes its temporary file and leaves the old file as it was.
The temporary file's name comes from the OS (`tempfile.mkstemp`: a fresh random name, created
exclusively, never through a link).

No file freshrag creates or opens for writing follows a symbolic link at its own path (a link
planted where a run writes would otherwise have freshrag truncate or fill the file it points
to). What is right depends on the file, and each caller says which in a comment:

- refused, with a one-line `SymlinkError` naming the path, where the file is the user's data or
  a report they asked for (every whole-file write here, samples.jsonl and the other appended
  rows, the run directory's lock, the response cache);
- replaced without writing through it (`create_new`), where the file is freshrag's own scratch
  space that nobody else reads (the split dump's spool files).

Files that grow row by row (samples.jsonl, the builders' stage records) are appended to
instead, and repaired when torn (harness/core/jsonl.py).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

from freshrag.core.errors import UserError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _umask() -> int:
    """The process's umask, read once at import, before any thread starts: setting it is the only
    portable way to read it."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


NEW_FILE_MODE = 0o666 & ~_umask()  # what open() gives a new file; mkstemp's own is 0600


class SymlinkError(UserError, OSError):
    """A path freshrag would write is a symbolic link; it writes through none (module docstring).
    Still an OSError (ELOOP), as it always was, for code that catches those."""

    def __init__(self, path: Path | str,
                 fix: str = "remove the link, or write to another path"):
        super().__init__(errno.ELOOP, f"is a symbolic link, and freshrag writes no file through "
                                      f"a link; {fix}", str(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def open_no_follow(path: Path, flags: int, mode: int = 0o666, fix: str | None = None) -> int:
    """`os.open(path, flags, mode)` that refuses a symbolic link at `path` itself (O_NOFOLLOW:
    the kernel checks, so no other process can slip a link in between a check and the open);
    links among the directories above it are followed as usual. `fix`: the way out the error
    gives, if not the default one."""
    try:
        return os.open(path, flags | NOFOLLOW, mode)
    except OSError as err:
        if err.errno == errno.ELOOP or (err.errno == errno.EEXIST and Path(path).is_symlink()):
            raise (SymlinkError(path, fix) if fix else SymlinkError(path)) from None
        raise


def create_new(path: Path) -> int:
    """A new, empty file at `path` for freshrag's own scratch data, open for writing: whatever
    was there (a stale file, a symbolic link) is removed first, never written through, and the
    file is created exclusively (O_EXCL), so that nothing can be slipped in after the removal."""
    Path(path).unlink(missing_ok=True)  # a link is removed itself, its target is left alone
    return open_no_follow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A new, empty temporary file beside `path`, to be filled by any means (a SQLite database,
    a text handle); when the block ends without an error it is synced and moved onto `path`,
    otherwise removed."""
    path = Path(path)
    if path.is_symlink():  # refused, not replaced: os.replace would not write through the link,
        raise SymlinkError(path)  # but it would silently cut what someone linked on purpose
    tmp, fd = _new_temporary(path)
    os.close(fd)
    try:
        yield tmp
        _sync(tmp)
        os.replace(tmp, path)
    except BaseException:  # a kill by Ctrl-C too: the old file stays, the temporary one goes
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """A handle (mode "w": UTF-8 text, "wb": bytes) whose content becomes the whole of `path`
    when the block ends without an error."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    with replacing(path) as tmp:
        encoding = None if mode == "wb" else "utf-8"
        with open(tmp, mode, encoding=encoding) as handle:
            yield handle


def write_text(path: Path, text: str) -> Path:
    """`text` (UTF-8) as the whole of `path`, atomically."""
    with atomic_open(path) as handle:
        handle.write(text)
    return path


def write_json(path: Path, value: Any, ensure_ascii: bool = False) -> Path:
    """`value` as indented JSON with a final newline, atomically; `ensure_ascii` escapes
    non-ASCII characters, as the documents that always did keep doing. NaN and infinity are
    refused (`dumps`)."""
    return write_text(path, dumps(value, indent=2, ensure_ascii=ensure_ascii) + "\n")


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps` that refuses NaN and infinity (a ValueError) instead of writing `NaN` or
    `Infinity`, which are not JSON: every JSON text freshrag writes must be read back by any
    JSON parser. Where a non-finite number can arise, the writer's caller decides what it becomes
    (the report's statistics: null, with a note; harness/reporting/report.py)."""
    return json.dumps(value, allow_nan=False, **options)


def write_figure(figure: Any, path: Path, dpi: int) -> Path:
    """A matplotlib figure as the whole of `path`, atomically, in the format its suffix names
    (the bytes are those `figure.savefig(path)` writes)."""
    with atomic_open(path, "wb") as handle:
        figure.savefig(handle, format=Path(path).suffix.lstrip(".").lower(), dpi=dpi)
    return path


def _new_temporary(path: Path) -> tuple[Path, int]:
    """A hidden temporary file in `path`'s directory, named and created by `tempfile.mkstemp`
    (O_EXCL | O_NOFOLLOW: never an existing file or link), with the permissions the umask gives
    any new file rather than mkstemp's 0600, since it becomes the file itself."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, NEW_FILE_MODE)
    except BaseException:
        os.close(fd)
        os.unlink(name)
        raise
    return Path(name), fd


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
