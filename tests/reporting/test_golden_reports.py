"""The same report commands give byte-identical markdown and JSON on a fixed run directory and on
an imported released run.

`tests/data/golden/` holds a run directory (8 example questions through five systems with the
judge and three scorers, answered by the fake server) and a pickle in the released runs' format;
`expected/` holds what `freshrag report` printed and wrote for them before the package layout
changed (its README says how they were made). A change in any table, interval or note shows here
as a diff; a deliberate change of the reports regenerates them with
`python tests/reporting/test_golden_reports.py --write`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
EXPECTED = GOLDEN / "expected"
NAMES = sorted([f"{run}-{fmt}.txt" for run in ("run", "imported") for fmt in ("markdown", "json")]
               + [f"{run}-{doc}" for run in ("run", "imported")
                  for doc in ("summary.json", "summary.md", "analysis.json")] + ["import.txt"])


def _freshrag(module: str, cwd: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def outputs(work: Path, module: str = "freshrag") -> dict[str, str]:
    """Every golden output, made in `work` with `python -m <module>`, paths made relative."""
    shutil.copytree(GOLDEN / "run", work / "run")
    shutil.copy(GOLDEN / "released-A_f-naive.pkl", work)
    made: dict[str, str] = {}
    for fmt in ("markdown", "json"):
        made[f"run-{fmt}.txt"] = _freshrag(module, work, "report", "run", "--format", fmt,
                                           "--out", f"out-run-{fmt}")
    made["import.txt"] = _freshrag(module, work, "import-legacy", "released-A_f-naive.pkl",
                                   "--dataset", "A_f", "--system", "naive", "--out", "imported")
    for fmt in ("markdown", "json"):
        made[f"imported-{fmt}.txt"] = _freshrag(module, work, "report", "imported", "--format",
                                                fmt, "--out", f"out-imported-{fmt}")
    for name in ("run", "imported"):
        for document in ("summary.json", "summary.md", "analysis.json"):
            made[f"{name}-{document}"] = (work / f"out-{name}-markdown" / document).read_text()
    return {name: text.replace(str(work), "WORK") for name, text in made.items()}


@pytest.mark.parametrize("name", NAMES)
def test_report_is_byte_identical_to_the_golden_copy(name, golden_outputs):
    assert golden_outputs[name] == (EXPECTED / name).read_text(encoding="utf-8")


def test_every_output_has_a_golden_copy(golden_outputs):
    assert sorted(golden_outputs) == NAMES == sorted(path.name for path in EXPECTED.iterdir())


@pytest.fixture(scope="module")
def golden_outputs(tmp_path_factory):
    return outputs(tmp_path_factory.mktemp("golden"))


if __name__ == "__main__":  # --write [MODULE]: regenerate expected/ (MODULE: `freshrag`)
    import tempfile

    if sys.argv[1:2] != ["--write"]:
        sys.exit("usage: test_golden_reports.py --write [MODULE]")
    EXPECTED.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for file_name, text in outputs(Path(work), *sys.argv[2:3]).items():
            (EXPECTED / file_name).write_text(text, encoding="utf-8")
