"""Whole files written so that a crash never tears them (docs/design.md#files).

Every file freshrag writes whole (manifests, stage lists, rebuilt JSON Lines files, reports,
figures, the facts database) goes through `replacing`: the content goes to a new temporary file
in the same directory, is flushed and synced to disk, and then `os.replace` puts it in place in
one step. A reader, or a run resumed after a kill, finds the old file or the new one, never
half of one; a write that fails removes its temporary file and leaves the old file as it was.
A path that is a symbolic link is refused rather than written through or replaced.

Files that grow row by row (samples.jsonl, the builders' stage records) are appended to
instead, and repaired when torn (harness/core/jsonl.py).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
from pathlib import Path
from typing import IO, Any, Iterator

ATTEMPTS = 100  # temporary names tried; one is taken only if a crashed writer left it behind


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A new, empty temporary file beside `path`, to be filled by any means (a SQLite database,
    a text handle); when the block ends without an error it is synced and moved onto `path`,
    otherwise removed."""
    path = Path(path)
    if path.is_symlink():
        raise OSError(errno.ELOOP, "refusing to write through a symbolic link", str(path))
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
    non-ASCII characters, as the documents that always did keep doing."""
    return write_text(path, json.dumps(value, indent=2, ensure_ascii=ensure_ascii) + "\n")


def write_figure(figure: Any, path: Path, dpi: int) -> Path:
    """A matplotlib figure as the whole of `path`, atomically, in the format its suffix names
    (the bytes are those `figure.savefig(path)` writes)."""
    with atomic_open(path, "wb") as handle:
        figure.savefig(handle, format=Path(path).suffix.lstrip(".").lower(), dpi=dpi)
    return path


def _new_temporary(path: Path) -> tuple[Path, int]:
    """A hidden temporary file in `path`'s directory, created here and now (O_EXCL: never an
    existing file or link), with the permissions the umask gives any new file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(ATTEMPTS):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
