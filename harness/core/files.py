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

Nor does it write anything but a regular file (docs/faults.md#outputs-that-are-not-plain-files):
a FIFO, a device node (as root, `/dev/null` would be replaced by a file), a socket or a directory
where a file goes is refused in one line naming it (`NotPlainFileError`); `check_plain` is the one
check, made by every writer here and, naming the option, by `core/outputs.check_outputs` before a
command starts. A replaced file keeps its permissions (a 0600 report stays 0600), and an error of
the write (a full disk) names the file being written, never the temporary one.

Files that grow row by row (samples.jsonl, the builders' stage records) are appended to
instead, and repaired when torn (harness/core/jsonl.py).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

import msgspec

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


class NotPlainFileError(UserError, OSError):
    """A path freshrag would write is there but is no regular file (module docstring)."""

    def __init__(self, path: Path | str, kind: str, what: str | None = None,
                 fix: str = "write to another path"):
        where = f"{what} {path}" if what else str(path)
        super().__init__(errno.EISDIR if kind == KINDS[stat.S_IFDIR] else errno.EINVAL,
                         f"{where}: not a regular file but {kind}, and freshrag writes only "
                         f"regular files; {fix}", str(path))

    def __str__(self) -> str:
        return str(self.strerror)


KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFLNK: "a link"}


def check_plain(path: Path | str, what: str | None = None, fix: str | None = None,
                link_fix: str | None = None) -> os.stat_result | None:
    """What `os.lstat` finds at `path`, an output: None where nothing is there yet, and a regular
    file's status; a symbolic link (`SymlinkError`) or anything else (`NotPlainFileError`) is
    refused, named as `what` ("--html") where given. `fix`, `link_fix`: the way out, if not the
    default one (`link_fix` for a link, if not `fix`)."""
    link_fix = link_fix or fix
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(found.st_mode):
        raise SymlinkError(path, link_fix) if link_fix else SymlinkError(path)
    if not stat.S_ISREG(found.st_mode):
        kind = _kind(found.st_mode)
        raise NotPlainFileError(path, kind, what, fix) if fix else \
            NotPlainFileError(path, kind, what)
    return found


def open_no_follow(path: Path, flags: int, mode: int = 0o666, fix: str | None = None) -> int:
    """`os.open(path, flags, mode)` of a regular file (`check_plain`) that refuses a symbolic
    link at `path` itself (O_NOFOLLOW: the kernel checks, so no other process can slip a link in
    between a check and the open); links among the directories above it are followed as usual.
    Opened without blocking and checked again once open, so that a FIFO planted after the check
    neither hangs the open nor is written. `fix`: the way out the error gives, if not the
    default one."""
    check_plain(path, link_fix=fix)
    try:
        fd = os.open(path, flags | NOFOLLOW | os.O_NONBLOCK, mode)
    except OSError as err:
        if err.errno == errno.ELOOP or (err.errno == errno.EEXIST and Path(path).is_symlink()):
            raise (SymlinkError(path, fix) if fix else SymlinkError(path)) from None
        if err.errno == errno.ENXIO:  # a FIFO without a reader, or a device without a driver
            raise NotPlainFileError(path, _kind(os.lstat(path).st_mode)) from None
        raise
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        raise NotPlainFileError(path, _kind(found.st_mode))
    return fd


def _kind(mode: int) -> str:
    return KINDS.get(stat.S_IFMT(mode), "no regular file")


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
    # a link is refused, not replaced: os.replace would not write through it, but it would
    # silently cut what someone linked on purpose; a device or FIFO would be replaced by a file
    old = check_plain(path)
    try:
        tmp, fd = _new_temporary(path, old)
    except OSError as err:  # a read-only or full directory: named by the file asked for
        raise OSError(err.errno, err.strerror, str(path)) from None
    os.close(fd)
    try:
        yield tmp
        _sync(tmp)
        check_plain(path)  # once more: os.replace would put a file over whatever came meanwhile
        os.replace(tmp, path)
    except BaseException as err:  # a kill by Ctrl-C too: the old file stays, the temporary goes
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and _is_write_error(err, tmp):
            raise OSError(err.errno, err.strerror, str(path)) from None
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
    refused (`dumps`). Written as it is encoded (`indented`): a report's analysis.json of
    100,000 answers is never one string."""
    with atomic_open(path) as handle:
        handle.writelines(indented(value, ensure_ascii))
        handle.write("\n")
    return path


SCALARS = (str, int, float, type(None))  # bool is an int


def indented(value: Any, ensure_ascii: bool = False) -> Iterator[str]:
    """The text of `json.dumps(value, indent=2, allow_nan=False, ensure_ascii=...)` (a light
    row's records as `dumps` writes them), in parts. json indents in Python, a few times slower
    than its C encoder, which writes a container of scalars alone (a table's row, every answer's
    figures) with the item separator ",\n" and the indentation of its level: the same text."""
    return _Indented(ensure_ascii).parts(value, 0)


class _Indented:
    def __init__(self, ensure_ascii: bool):
        self.ensure_ascii = ensure_ascii
        self.scalar = self.level(-1)
        self.levels: dict[int, Any] = {}

    def level(self, depth: int) -> Any:
        """json's C encoder of a container of scalars at `depth`: items a line each."""
        return json.JSONEncoder(allow_nan=False, ensure_ascii=self.ensure_ascii,
                                separators=(",\n" + "  " * (depth + 1), ": ")).encode

    def parts(self, value: Any, depth: int) -> Iterator[str]:
        if isinstance(value, SCALARS):
            yield self.scalar(value)
        elif isinstance(value, (dict, list, tuple)):
            yield from self._container(value, depth)
        else:  # a record (`_builtins`), as json's own `default`
            yield from self.parts(_builtins(value), depth)

    def _container(self, value: dict | list | tuple, depth: int) -> Iterator[str]:
        items = value.values() if isinstance(value, dict) else value
        if not value:
            yield "{}" if isinstance(value, dict) else "[]"
        elif all(isinstance(item, SCALARS) for item in items):
            if depth not in self.levels:
                self.levels[depth] = self.level(depth)
            text = self.levels[depth](value)
            yield f"{text[0]}\n{'  ' * (depth + 1)}{text[1:-1]}\n{'  ' * depth}{text[-1]}"
        else:
            inner = "\n" + "  " * (depth + 1)
            yield "{" if isinstance(value, dict) else "["
            for n, (key, item) in enumerate(value.items() if isinstance(value, dict)
                                            else zip(value, value)):
                yield ("," if n else "") + inner
                if isinstance(value, dict):  # a key as json writes it: "1.5" for 1.5
                    yield (self.scalar(key) if isinstance(key, str)
                           else self.scalar({key: 0})[1:-4]) + ": "
                yield from self.parts(item, depth + 1)
            yield "\n" + "  " * depth + ("}" if isinstance(value, dict) else "]")


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps` that refuses NaN and infinity (a ValueError) instead of writing `NaN` or
    `Infinity`, which are not JSON: every JSON text freshrag writes must be read back by any
    JSON parser. Where a non-finite number can arise, the writer's caller decides what it becomes
    (the report's statistics: null, with a note; harness/reporting/report.py). The records of a
    light row (core/light.py, msgspec Structs) are written as the objects they were read from."""
    return json.dumps(value, allow_nan=False, default=_builtins, **options)


def _builtins(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def write_figure(figure: Any, path: Path, dpi: int) -> Path:
    """A matplotlib figure as the whole of `path`, atomically, in the format its suffix names
    (the bytes are those `figure.savefig(path)` writes)."""
    with atomic_open(path, "wb") as handle:
        figure.savefig(handle, format=Path(path).suffix.lstrip(".").lower(), dpi=dpi)
    return path


WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EISDIR, errno.EROFS,
                errno.EACCES, errno.EPERM, errno.ENAMETOOLONG}


def _is_write_error(err: OSError, tmp: Path) -> bool:
    """An error of writing, syncing or moving the temporary file: named by it, or by nothing
    (a write's own), as opposed to one of the block's inputs, named by their own files."""
    return (not isinstance(err, UserError) and err.errno in WRITE_ERRORS and err.filename in (None, str(tmp)))


def _new_temporary(path: Path, old: os.stat_result | None) -> tuple[Path, int]:
    """A hidden temporary file in `path`'s directory, named and created by `tempfile.mkstemp`
    (O_EXCL | O_NOFOLLOW: never an existing file or link), with the permissions of the file it
    replaces, or those the umask gives any new file (not mkstemp's 0600), since it becomes the
    file itself."""
    # the name cut to 120 bytes, so that the temporary one stays within NAME_MAX (255 bytes)
    short = os.fsencode(path.name)[:120].decode("utf-8", "ignore")
    fd, name = tempfile.mkstemp(prefix=f".{short}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, stat.S_IMODE(old.st_mode) if old else NEW_FILE_MODE)
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
