"""A build killed outright (SIGKILL, no clean-up) once it has stored some of its work: the
tests of a resumed index (tests/retrieval) run the build in a child process that writes how much
it stored to a marker file, and kill it there."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests import ROOT


def killed_once_stored(script: str, directory: Path, marker: Path, stored: str,
                       within_s: float = 60) -> None:
    """Run `script` (argv: `directory`, `marker`) and SIGKILL it as soon as `marker` reads
    `stored`; the test fails if the child ends or takes `within_s` seconds before."""
    process = subprocess.Popen([sys.executable, "-c", script, str(directory), str(marker)],
                               cwd=ROOT)
    try:
        deadline = time.monotonic() + within_s
        while not (marker.exists() and marker.read_text() == stored):
            assert process.poll() is None and time.monotonic() < deadline, "the build never began"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
