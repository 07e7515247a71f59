"""The README's install command, from a fresh clone into a new virtual environment, gives an
embedded model that answers and a judge that scores (tests/clean_room.sh)."""

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
SCRIPT = Path(__file__).resolve().parents[1] / "clean_room.sh"


@pytest.mark.timeout(1800)  # a whole install from an empty pip cache: about 2 min measured
def test_a_fresh_clone_installs_as_the_readme_says_and_scores_a_row(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path)], capture_output=True, text=True,
                          timeout=3000)
    tail = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0, tail
    assert "clean room: install took" in done.stdout and "scored" in done.stdout, tail
    # the prebuilt runtime, for any CPU with AVX2 (no AVX-512, whatever this CPU has), and no
    # compiled llama-cpp-python beside it: nothing was built from source
    probe = ("import importlib.util, xllamacpp; print(xllamacpp.get_system_info()); "
             "print('llama_cpp', importlib.util.find_spec('llama_cpp') is not None)")
    info = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c", probe],
                          capture_output=True, text=True, timeout=120)
    assert "AVX2 = 1" in info.stdout and "AVX512" not in info.stdout, info.stdout + info.stderr
    assert "llama_cpp False" in info.stdout, info.stdout
