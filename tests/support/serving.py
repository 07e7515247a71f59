"""`freshrag serve` in a test as from a terminal: started, then stopped by Ctrl-C, never left
running behind a failed test."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from typing import IO


def _ctrl_c_default() -> None:
    # A test run started in the background of a non-interactive shell inherits SIGINT ignored,
    # and Python then never turns Ctrl-C into KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def serving(command: list[str], stderr: int | IO[bytes],
            stop_timeout_s: float = 60) -> Iterator[subprocess.Popen[str]]:
    """The server process (its stdout a text pipe) for the block; after it, Ctrl-C, and the exit
    status 130 that Ctrl-C gives."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True,
                               preexec_fn=_ctrl_c_default)
    try:
        yield process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            assert process.wait(timeout=stop_timeout_s) == 130
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def ended(process: subprocess.Popen, wait_s: float = 30) -> None:
    """A server a test started, asked to stop (SIGTERM) and killed if it has not within `wait_s`."""
    process.terminate()
    try:
        process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
