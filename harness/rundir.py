"""What may write into a run directory, and when: one writer at a time, and one kind of contents.

- **Lock.** `locked(run_dir)` holds `run_dir/.lock` (an `fcntl.flock` on a file holding the
  holder's pid) for the whole of a run or an import; a second writer is refused at once, naming
  the first one's pid. The kernel drops the lock when its process ends, however it ends.
- **Kind.** A directory holds a `freshrag run`, runs imported by `freshrag import-legacy`, or a
  dataset built by `freshrag build`, and each command refuses the others' directories before it
  writes. Manifests say their `kind`; older ones are told apart by their content.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Any, Iterator

from harness.results import MANIFEST, ResultsError

LOCK = ".lock"
KINDS = {"run": "a run of `freshrag run`", "import": "runs imported by `freshrag import-legacy`",
         "dataset": "a dataset built by `freshrag build`"}


class RunDirError(ResultsError):
    """A run directory this command must not write: held by another process, or of another
    kind."""


@contextlib.contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    """Hold the run directory (created if missing) for this process until the block ends."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise RunDirError(f"{run_dir}: in use by another freshrag process (pid {holder}); "
                              f"wait for it to end, or stop it, and run again") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


def kind(manifest: dict[str, Any]) -> str:
    """"run", "import", "dataset", or "unknown"; manifests written before `kind` by content."""
    if "kind" in manifest:
        return manifest["kind"]
    if "imports" in manifest:
        return "import"
    if "stages" in manifest:
        return "dataset"
    if "systems" in manifest and "config" in manifest:
        return "run"
    return "unknown"


def check_kind(run_dir: Path, manifest: dict[str, Any] | None, expected: str) -> None:
    """Refuse a directory whose manifest says it holds something other than `expected`."""
    if manifest is None or kind(manifest) == expected:
        return
    found = KINDS.get(kind(manifest), f"a {MANIFEST} freshrag does not know")
    raise RunDirError(f"{run_dir}: holds {found}, and this command writes {KINDS[expected]}; "
                      f"write into another --out (`freshrag report` reads several directories "
                      f"together)")
