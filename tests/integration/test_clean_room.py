"""The README's install command, from a fresh clone into a new virtual environment, gives an
embedded model that answers and a judge that scores (tests/clean_room.sh)."""

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
SCRIPT = Path(__file__).resolve().parents[1] / "clean_room.sh"


@pytest.mark.timeout(3000)  # a whole install, llama.cpp compiled: 5.5 to 7.5 min measured
def test_a_fresh_clone_installs_as_the_readme_says_and_scores_a_row(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path)], capture_output=True, text=True,
                          timeout=3000)
    tail = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0, tail
    assert "clean room: install took" in done.stdout and "scored" in done.stdout, tail
    # the portable build: its library reports no AVX-512, whatever this CPU has
    info = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c",
                           "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"],
                          capture_output=True, text=True, timeout=120)
    assert "AVX2 = 1" in info.stdout and "AVX512" not in info.stdout, info.stdout + info.stderr
