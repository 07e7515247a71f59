"""No file freshrag creates or opens for writing follows a symbolic link at its own path: the
run directory's lock, appended rows and the response cache refuse one in one line naming the
path, scratch files replace one, and the file a link points to is never touched
(harness/core/files.py)."""

import os
import pickle

import pytest

from freshrag.cli.main import main
from freshrag.core.errors import UserError
from freshrag.core.files import SymlinkError, create_new
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.rundir import LOCK, locked
from tests.support.legacy import row
from tests.support.links import PRECIOUS


def one_line_naming(err, path):
    text = str(err)
    return text.startswith(f"{path}: ") and "\n" not in text and isinstance(err, UserError)


def test_a_lock_that_is_a_symbolic_link_is_refused_and_its_target_kept(tmp_path, target):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / LOCK).symlink_to(target)
    with pytest.raises(SymlinkError) as raised:
        with locked(run_dir):
            pass
    assert one_line_naming(raised.value, run_dir / LOCK)
    assert target.read_text(encoding="utf-8") == PRECIOUS


def test_a_dangling_lock_link_creates_nothing_where_it_points(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / LOCK).symlink_to(tmp_path / "made-by-freshrag")
    with pytest.raises(SymlinkError):
        with locked(run_dir):
            pass
    assert not (tmp_path / "made-by-freshrag").exists()


@pytest.mark.parametrize("plant, says", [
    pytest.param(lambda lock, target: os.link(target, lock), "has other names", id="hard-link"),
    pytest.param(lambda lock, target: os.mkfifo(lock), "not a regular file but a FIFO",
                 id="fifo"),
])
def test_a_lock_that_is_no_plain_file_of_its_own_is_refused(tmp_path, target, plant, says):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    plant(run_dir / LOCK, target)
    with pytest.raises(UserError, match=says) as raised:  # RunDirError, or files.NotPlainFileError
        with locked(run_dir):
            pass
    assert one_line_naming(raised.value, run_dir / LOCK)
    assert target.read_text(encoding="utf-8") == PRECIOUS


def test_a_lock_of_its_own_is_still_taken_and_holds_the_pid(tmp_path):
    with locked(tmp_path / "run"):
        assert (tmp_path / "run" / LOCK).read_text() == f"{os.getpid()}\n"


@pytest.mark.parametrize("dangling", [False, True], ids=["to-a-file", "dangling"])
def test_appended_rows_refuse_a_symbolic_link(tmp_path, target, dangling):
    path = tmp_path / "samples.jsonl"
    path.symlink_to(tmp_path / "nowhere.jsonl" if dangling else target)
    with pytest.raises(SymlinkError) as raised:
        JsonlWriter(path)
    assert one_line_naming(raised.value, path)
    assert target.read_text(encoding="utf-8") == PRECIOUS
    assert not (tmp_path / "nowhere.jsonl").exists()


def test_a_scratch_file_replaces_a_link_without_writing_through_it(tmp_path, target):
    path = tmp_path / "pages-0.jsonl"
    path.symlink_to(target)
    os.close(create_new(path))
    assert not path.is_symlink() and path.read_bytes() == b""
    assert target.read_text(encoding="utf-8") == PRECIOUS


def test_the_command_names_the_link_in_one_line_and_writes_nothing_through_it(
        tmp_path, target, capsys):
    pickled = tmp_path / "run.pkl"
    pickled.write_bytes(pickle.dumps([row(0, 4, 4)]))
    out = tmp_path / "imported"
    out.mkdir()
    (out / LOCK).symlink_to(target)
    assert main(["import-legacy", str(pickled), "--dataset", "A_f", "--system", "naive",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"freshrag: error: {out / LOCK}: is a symbolic link")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert target.read_text(encoding="utf-8") == PRECIOUS
