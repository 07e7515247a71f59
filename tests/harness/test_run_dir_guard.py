"""A run directory holds one kind of contents and has one writer: a run into an import directory
(or the reverse) and a second writer are refused before anything is called or written."""

import json
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import use_endpoint
from tests.harness.test_run_cli import SECRET, write_dataset

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake(monkeypatch):
    with FakeOpenAIServer() as server:
        use_endpoint(monkeypatch, server.base_url, SECRET)
        yield server


def run(tmp_path, systems="baseline", *extra):
    q, a = (tmp_path / "questions.jsonl", tmp_path / "articles.jsonl")
    if not q.exists():
        write_dataset(tmp_path)
    return main(["run", "--questions", str(q), "--articles", str(a), "--out", str(tmp_path / "run"),
                 "--systems", systems, "--concurrency", "2", *extra])


def snapshot(run_dir):
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.name != ".lock"}


def legacy_pickle(tmp_path):
    path = tmp_path / "naive_A_f.pkl"
    path.write_bytes(pickle.dumps([{"title": "Town 0", "question": "How many bridges?",
                                    "answer": "3", "n_input_tokens": 10, "n_output_tokens": 2,
                                    "truthfulness": 5, "relevance": 5}]))
    return path


def import_into(tmp_path, out):
    return main(["import-legacy", str(legacy_pickle(tmp_path)), "--dataset", "A_f",
                 "--system", "naive", "--out", str(out)])


@pytest.mark.parametrize("strip_kind", [False, True], ids=["manifest", "manifest-without-kind"])
def test_import_into_a_run_directory_is_refused_before_writing(tmp_path, fake, capsys, strip_kind):
    assert run(tmp_path) == 0
    if strip_kind:
        path = tmp_path / "run" / "manifest.json"
        path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items()
                                    if k != "kind"}))
    before = snapshot(tmp_path / "run")
    capsys.readouterr()
    assert import_into(tmp_path, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "holds a run of `freshrag run`" in err and "another --out" in err
    assert snapshot(tmp_path / "run") == before


@pytest.mark.parametrize("strip_kind", [False, True], ids=["manifest", "manifest-without-kind"])
def test_run_into_an_import_directory_is_refused_before_calling(tmp_path, fake, capsys, strip_kind):
    assert import_into(tmp_path, tmp_path / "run") == 0
    if strip_kind:
        path = tmp_path / "run" / "manifest.json"
        path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items()
                                    if k != "kind"}))
    before = snapshot(tmp_path / "run")
    fake.reset_counts()
    capsys.readouterr()
    assert run(tmp_path) == 2
    err = capsys.readouterr().err
    assert "holds runs imported by `freshrag import-legacy`" in err and "another --out" in err
    assert fake.calls == 0 and snapshot(tmp_path / "run") == before


def test_run_and_import_into_a_dataset_directory_are_refused(tmp_path, fake, capsys):
    dataset = tmp_path / "run"
    dataset.mkdir()
    (dataset / "manifest.json").write_text(json.dumps({"created_at": "x", "stages": {}, "settings": {}}))
    before = snapshot(dataset)
    assert run(tmp_path) == 2
    assert import_into(tmp_path, dataset) == 2
    err = capsys.readouterr().err
    assert err.count("holds a dataset built by `freshrag build`") == 2
    assert fake.calls == 0 and snapshot(dataset) == before


HOLDER = """
import sys, time
from harness.rundir import locked
with locked(__import__("pathlib").Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def holder(tmp_path):
    """Another process holding the run directory."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "run")], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    yield process
    process.kill()
    process.wait()


@pytest.mark.parametrize("command", ["run", "import-legacy"])
def test_a_second_writer_is_refused_naming_the_first_ones_pid(tmp_path, fake, holder, capsys,
                                                              command):
    started = time.monotonic()
    code = run(tmp_path) if command == "run" else import_into(tmp_path, tmp_path / "run")
    assert code == 2 and time.monotonic() - started < 10  # refused at once, not after waiting
    err = capsys.readouterr().err
    assert f"in use by another freshrag process (pid {holder.pid})" in err
    assert fake.calls == 0
    assert not (tmp_path / "run" / "samples.jsonl").exists()
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_the_lock_is_released_when_a_run_ends(tmp_path, fake):
    assert run(tmp_path) == 0
    assert import_into(tmp_path, tmp_path / "imported") == 0
    from harness.rundir import locked
    for directory in (tmp_path / "run", tmp_path / "imported"):
        with locked(directory):  # would be refused if the command had kept it
            pass
