"""Lint: ruff, as configured in pyproject.toml (`[tool.ruff]`: pyflakes, the pycodestyle errors
and warnings, import sorting), on every source folder and the tests. Run it by hand with the
same command; `--fix` sorts imports."""

import subprocess
import sys

from tests import ROOT

COMMAND = [sys.executable, "-m", "ruff", "check", "harness", "builders", "systems", "tests"]


def test_ruff_finds_nothing():
    # --no-cache: the test writes nothing into the repository
    done = subprocess.run([*COMMAND, "--no-cache", "--output-format", "concise"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    if "No module named ruff" in done.stderr:
        raise AssertionError("ruff is not installed: pip install -e '.[test]'")
    assert done.returncode == 0, (f"`{' '.join(COMMAND[1:])}` found:\n"
                                  f"{done.stdout}{done.stderr}")
