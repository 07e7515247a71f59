"""What every fuzz test shares: the command run in process, the checks of a refusal, snapshots of
what was on disk, and the example budget.

`invoke` calls `freshrag.cli.main.main` as the `freshrag` command would, with its own stdout and
stderr; an argparse error ends in SystemExit, whose status it returns like any other. An exception
that escapes `main` is not caught: it fails the test, since that is the traceback a user would see.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import settings

from freshrag.cli.main import main

CI_EXAMPLES = 100  # the "ci" profile's max_examples, against which budget() scales


def budget(n: int) -> int:
    """`n` examples in CI; ten times as many under the "long" profile (tests/fuzz/conftest.py)."""
    return max(1, n * settings.default.max_examples // CI_EXAMPLES)


@dataclass(frozen=True)
class Result:
    status: int
    out: str
    err: str


def invoke(*argv: str | Path) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(arg) for arg in argv])
        except SystemExit as exit_:  # argparse: usage errors exit 2, --help 0
            status = exit_.code if isinstance(exit_.code, int) else 1
    return Result(status, out.getvalue(), err.getvalue())


# Refusals checked, by test file: the figure tests/fuzz/conftest.py prints after the run.
REFUSED: collections.Counter = collections.Counter()


def assert_refused(result: Result, *names: str | Path) -> None:
    """Exit status 2, one clear `error:` line naming every one of `names`, no traceback."""
    assert result.status == 2, result
    assert "Traceback" not in result.err, result.err
    errors = [line for line in result.err.splitlines() if "error: " in line]
    assert errors, f"no error line on stderr: {result.err!r}"
    for name in names:
        assert str(name) in errors[-1], f"{name!s} not named in {errors[-1]!r}"
    REFUSED[os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[0]] += 1


def assert_no_calls(server) -> None:
    assert (server.calls, server.embedding_calls) == (0, 0), "an endpoint was called"


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` by relative path, with its bytes."""
    if not directory.exists():
        return {}
    return {str(path.relative_to(directory)): path.read_bytes()
            for path in sorted(directory.rglob("*")) if path.is_file()}


# The rows `write_dataset` (tests/support/datasets.py) writes by default.
ARTICLES = [{"title": f"Town {i}", "content": f"Town {i} has {i + 3} bridges."} for i in range(3)]
QUESTIONS = [{"title": f"Town {i}", "question": f"How many bridges does Town {i} have?"}
             for i in range(3)]


def use_fake(server, monkeypatch, key: str = "sk-fuzz-secret") -> None:
    """Every role on the fake server and nothing else from the environment; counts reset."""
    from tests.support.fakes import use_endpoint

    for name in [name for name in os.environ if name.startswith("FRESHRAG_")]:
        monkeypatch.delenv(name)
    use_endpoint(monkeypatch, server.base_url, key)
    server.reset_counts()
    server.embedding_calls = 0


@contextlib.contextmanager
def scratch(server=None) -> Iterator[tuple[Path, pytest.MonkeyPatch]]:
    """A fresh working directory for one example (hypothesis runs many in one test, so no
    function-scoped tmp_path), the environment pointed at the fake server if one is given."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp)  # no freshrag.toml, no results/ of the worktree
        mp.setattr("freshrag.run.service.LocalServer", _no_local_server)
        if server is not None:
            use_fake(server, mp)
        yield Path(tmp), mp


def _no_local_server(*args, **kwargs):
    raise AssertionError("the embedded llama.cpp server was started: the input was not refused")


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """`directory` (and all under it) cannot be written: by its mode bits for a normal user; for
    root, whom mode bits do not stop, by a hook that fails every write below it as a read-only
    mount would (EROFS), at the calls Python writes files through."""
    if os.geteuid() != 0:
        modes = {path: path.stat().st_mode for path in [directory, *directory.rglob("*")]}
        for path, mode in modes.items():
            path.chmod(mode & ~0o222)
        try:
            yield
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    root = str(directory.resolve())

    def inside(path) -> bool:
        return isinstance(path, (str, Path)) and os.path.abspath(path).startswith(root)

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    real_open, real_os_open = io.open, os.open

    def guarded_open(file, mode="r", *args, **kwargs):
        if inside(file) and any(flag in mode for flag in "wax+"):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        if inside(path) and flags & writes:
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def guard(real):
        def guarded(path, *args, **kwargs):
            if inside(path):
                refuse(path)
            return real(path, *args, **kwargs)
        return guarded

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(io, "open", guarded_open)
        mp.setattr("builtins.open", guarded_open)
        mp.setattr(os, "open", guarded_os_open)
        for name in ("mkdir", "unlink", "rmdir", "replace"):
            mp.setattr(os, name, guard(getattr(os, name)))
        yield


@contextlib.contextmanager
def full_disk(room: int) -> Iterator[None]:
    """os.write as on a disk with `room` bytes left: it writes what fits, then fails ENOSPC."""
    real_write = os.write
    left = [room]

    def write(fd, data):
        if fd <= 2:  # the terminal
            return real_write(fd, data)
        if not left[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = real_write(fd, bytes(data[:left[0]]))
        left[0] -= written
        return written

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "write", write)
        yield
