"""The one atomic write: the new content whole or the old file untouched, never half of one, and
never through a symbolic link."""

from __future__ import annotations

import errno
import os
import sqlite3

import pytest

from freshrag.core import files
from freshrag.core.errors import UserError
from freshrag.core.files import SymlinkError, atomic_open, replacing, write_json, write_text

OLD = "the old content, whole\n"


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_write_replaces_the_file_with_a_new_file_s_permissions(tmp_path):
    path = tmp_path / "manifest.json"
    write_json(path, {"name": "Zwölf"})
    assert path.read_text(encoding="utf-8") == '{\n  "name": "Zwölf"\n}\n'
    write_json(path, {"name": "Zwölf"}, ensure_ascii=True)
    assert path.read_text(encoding="utf-8") == '{\n  "name": "Zw\\u00f6lf"\n}\n'
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777  # the umask's, not 0600
    assert leftovers(tmp_path) == []


def test_a_write_that_fails_midway_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text(OLD, encoding="utf-8")
    with pytest.raises(RuntimeError, match="killed"):
        with atomic_open(path) as handle:
            handle.write("half of the new ")
            handle.flush()  # the half is on disk, in the temporary file
            raise RuntimeError("killed mid-write")
    assert path.read_text(encoding="utf-8") == OLD
    assert leftovers(tmp_path) == []


def test_a_failed_sync_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    path.write_text(OLD, encoding="utf-8")

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(files.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_text(path, "the whole new content\n")
    assert path.read_text(encoding="utf-8") == OLD
    assert leftovers(tmp_path) == []


def test_a_symbolic_link_is_refused_and_neither_it_nor_its_target_changes(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text(OLD, encoding="utf-8")
    link = tmp_path / "manifest.json"
    link.symlink_to(target)
    with pytest.raises(SymlinkError) as raised:
        write_text(link, "new\n")
    assert raised.value.errno == errno.ELOOP and raised.value.filename == str(link)
    assert str(raised.value).startswith(f"{link}: is a symbolic link")
    assert isinstance(raised.value, UserError) and "\n" not in str(raised.value)
    assert link.is_symlink() and target.read_text(encoding="utf-8") == OLD
    assert leftovers(tmp_path) == []


def test_a_dangling_symbolic_link_is_refused_too(tmp_path):
    link = tmp_path / "report.html"
    link.symlink_to(tmp_path / "nowhere.html")
    with pytest.raises(SymlinkError):
        write_text(link, "new\n")
    assert not (tmp_path / "nowhere.html").exists()


def test_replacing_hands_out_a_path_any_writer_can_fill(tmp_path):
    path = tmp_path / "facts.sqlite"
    with replacing(path) as tmp:
        assert tmp.parent == tmp_path and tmp.exists() and tmp.stat().st_size == 0
        with sqlite3.connect(tmp) as db:
            db.execute("CREATE TABLE facts (field TEXT)")
        db.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("facts",)]
    db.close()


def test_binary_content_and_temporary_names_from_the_os(tmp_path, monkeypatch):
    made = []
    real = files.tempfile.mkstemp

    def mkstemp(**options):
        made.append(real(**options))
        return made[-1]
    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)
    crashed = tmp_path / ".labels.png.aaaa.tmp"
    crashed.write_text("a crashed writer's")
    for content in (b"\x89PNG", b"\x89PNG2"):
        with atomic_open(tmp_path / "labels.png", "wb") as handle:
            handle.write(content)
    assert (tmp_path / "labels.png").read_bytes() == b"\x89PNG2"
    names = [os.path.basename(name) for _, name in made]
    assert len(set(names)) == 2 and all(n.startswith(".labels.png.") and n.endswith(".tmp")
                                        for n in names)
    assert leftovers(tmp_path) == [crashed.name]  # someone else's file is left alone


def test_only_write_modes_are_offered(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        with atomic_open(tmp_path / "x", "a"):
            pass
    assert os.listdir(tmp_path) == []


def test_a_figure_is_written_as_savefig_would_write_it(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([1, 3, 2])
    fig.savefig(tmp_path / "direct.png", dpi=50)
    files.write_figure(fig, tmp_path / "atomic.png", dpi=50)
    plt.close(fig)
    assert (tmp_path / "atomic.png").read_bytes() == (tmp_path / "direct.png").read_bytes()
    assert leftovers(tmp_path) == []



@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_json_never_holds_nan_or_infinity(tmp_path, value):
    path = tmp_path / "summary.json"
    path.write_text(OLD, encoding="utf-8")
    with pytest.raises(ValueError, match="not JSON compliant"):
        write_json(path, {"rows": [{"truthfulness": value}]})
    assert path.read_text(encoding="utf-8") == OLD and leftovers(tmp_path) == []
