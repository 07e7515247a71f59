"""Every output is created as a new regular file or replaces one (harness/core/files.py): a FIFO,
a device node, a socket or a directory where a file goes is refused in one line naming the option
or the path, and left as it was; a replaced file keeps its mode; a full disk names the output the
user gave, never the temporary file beside it."""

from __future__ import annotations

import errno
import os
import pickle
import socket
import stat
import threading
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core import files
from freshrag.core.errors import UserError
from freshrag.core.files import NotPlainFileError, open_no_follow, replacing, write_text
from freshrag.core.jsonl import JsonlWriter, replace_jsonl
from freshrag.core.outputs import Output, check_outputs
from freshrag.llm.cache import ResponseCache
from tests.support.datasets import write_dataset
from tests.support.legacy import row
from tests.support.runs import sample, sample_rows, write_run

NULL = Path("/dev/null")


def fifo(path):
    os.mkfifo(path)
    return path


def unix_socket(path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays
    return path


def directory(path):
    path.mkdir()
    return path


PLANTS = [pytest.param(fifo, "a FIFO", id="fifo"),
          pytest.param(unix_socket, "a socket", id="socket"),
          pytest.param(directory, "a directory", id="directory")]


def kind_of(path):
    return stat.S_IFMT(os.lstat(path).st_mode)


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("plant, kind", PLANTS)
def test_a_whole_file_write_over_no_regular_file_is_refused_and_it_is_kept(tmp_path, plant,
                                                                            kind):
    path = plant(tmp_path / "summary.json")
    before = kind_of(path)
    with pytest.raises(NotPlainFileError) as raised:
        write_text(path, "the report\n")
    assert str(raised.value) == (f"{path}: not a regular file but {kind}, and freshrag writes "
                                 f"only regular files; write to another path")
    assert isinstance(raised.value, UserError) and isinstance(raised.value, OSError)
    assert kind_of(path) == before and leftovers(tmp_path) == []


def test_dev_null_is_refused_and_stays_a_character_device(tmp_path):
    with pytest.raises(NotPlainFileError, match="^/dev/null: not a regular file but a "
                                                "character device"):
        replace_jsonl(NULL, [{"a": 1}])
    with pytest.raises(NotPlainFileError):
        JsonlWriter(NULL)
    assert stat.S_ISCHR(os.lstat(NULL).st_mode)


def test_a_directory_is_refused_as_eisdir_naming_it(tmp_path):
    with pytest.raises(NotPlainFileError) as raised:
        write_text(directory(tmp_path / "report.html"), "x")
    assert raised.value.errno == errno.EISDIR and raised.value.filename == str(
        tmp_path / "report.html")


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604, 0o755],
                         ids=lambda mode: f"{mode:04o}")
def test_a_replaced_file_keeps_its_mode(tmp_path, mode):
    path = tmp_path / "report.html"
    path.write_text("old", encoding="utf-8")
    path.chmod(mode)
    write_text(path, "new")
    assert path.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_a_new_file_gets_the_umask_s_mode_not_mkstemp_s(tmp_path):
    write_text(tmp_path / "new.json", "{}")
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == stat.S_IMODE(
        plain.stat().st_mode)


@pytest.mark.parametrize("where", [
    pytest.param("write", id="the-write"),
    pytest.param("fsync", id="the-sync"),
    pytest.param("replace", id="the-rename"),
    pytest.param("mkstemp", id="the-temporary-file"),
])
def test_a_full_disk_names_the_output_never_the_temporary_file(tmp_path, monkeypatch, where):
    path = tmp_path / "summary.json"
    path.write_text("old", encoding="utf-8")
    full = OSError(errno.ENOSPC, "No space left on device")
    if where == "fsync":
        monkeypatch.setattr(files.os, "fsync", lambda fd: (_ for _ in ()).throw(full))
    elif where == "replace":
        def replace(src, dst):
            raise OSError(errno.ENOSPC, "No space left on device", str(src), str(dst))
        monkeypatch.setattr(files.os, "replace", replace)
    elif where == "mkstemp":
        def mkstemp(prefix, suffix, dir):
            raise OSError(errno.ENOSPC, "No space left on device", f"{dir}/{prefix}x{suffix}")
        monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)
    with pytest.raises(OSError) as raised:
        with files.atomic_open(path) as handle:
            handle.write("new")
            if where == "write":
                raise full  # what a handle's write or flush raises: no file named
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(path)
    assert path.read_text(encoding="utf-8") == "old" and leftovers(tmp_path) == []


def test_an_error_of_an_input_read_inside_the_write_keeps_its_own_name(tmp_path):
    path, other = tmp_path / "out.jsonl", tmp_path / "input.jsonl"
    with pytest.raises(FileNotFoundError) as raised:
        with replacing(path):
            other.read_text()
    assert raised.value.filename == str(other)


def test_appended_rows_refuse_a_fifo_without_waiting_for_a_reader(tmp_path):
    path = fifo(tmp_path / "samples.jsonl")
    outcome = []

    def open_it():
        try:
            JsonlWriter(path)
        except NotPlainFileError as err:
            outcome.append(str(err))
    opener = threading.Thread(target=open_it, daemon=True)
    opener.start()
    opener.join(5)
    assert outcome and "not a regular file but a FIFO" in outcome[0]
    assert kind_of(path) == stat.S_IFIFO


def test_a_fifo_planted_after_the_check_is_refused_once_open(tmp_path, monkeypatch):
    path = fifo(tmp_path / "samples.jsonl")
    monkeypatch.setattr(files, "check_plain", lambda *args, **kwargs: None)  # the race
    with pytest.raises(NotPlainFileError, match="a FIFO"):
        open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def test_appended_rows_on_a_full_disk_name_their_file(tmp_path, monkeypatch):
    writer = JsonlWriter(tmp_path / "samples.jsonl")

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError) as raised:
        writer.write({"a": 1})
    monkeypatch.undo()
    writer.close()
    assert raised.value.filename == str(tmp_path / "samples.jsonl")


@pytest.mark.parametrize("plant, kind", PLANTS[:2])
def test_the_response_cache_refuses_no_regular_file(tmp_path, plant, kind):
    path = plant(tmp_path / "cache.sqlite")
    with pytest.raises(NotPlainFileError, match=kind):
        ResponseCache(path)
    assert kind_of(path) in (stat.S_IFIFO, stat.S_IFSOCK)


def test_check_outputs_names_the_option():
    with pytest.raises(NotPlainFileError) as raised:
        check_outputs([Output(NULL, "--html", "give another --html")], [])
    assert str(raised.value) == ("--html /dev/null: not a regular file but a character device, "
                                 "and freshrag writes only regular files; give another --html")


# ---------------------------------------------------------------- every command that writes


def _report(tmp):
    write_run(tmp / "run", sample_rows())
    return ["report", str(tmp / "run"), "--out", str(tmp / "out")], tmp / "out" / "summary.json"


def _report_html(tmp):
    write_run(tmp / "run", sample_rows())
    return ["report", str(tmp / "run"), "--out", str(tmp / "out"), "--html",
            str(tmp / "r.html")], tmp / "r.html"


def _export(tmp):
    write_run(tmp / "run", sample_rows())
    return ["export", str(tmp / "run"), "--format", "jsonl", "--out", str(tmp / "e.jsonl")], \
        tmp / "e.jsonl"


def _agreement(tmp):
    write_run(tmp / "a", sample_rows())
    write_run(tmp / "b", sample_rows())
    return ["agreement", str(tmp / "a"), str(tmp / "b"), "--out", str(tmp / "out")], \
        tmp / "out" / "agreement.json"


def _mix(tmp):
    write_dataset(tmp / "dataset", fields=lambda i: {"kind": "fresh"})
    return ["mix", str(tmp / "dataset"), "--fresh", "1", "--n", "1", "--out",
            str(tmp / "out")], tmp / "out" / "questions.jsonl"


def _filter(tmp):
    write_dataset(tmp / "dataset", questions=[{"id": "q1", "title": "Town 0",
                                               "question": "What is q1?"}])
    write_run(tmp / "run", [sample("q1", "baseline", 2)])
    return ["filter", str(tmp / "run"), "--dataset", str(tmp / "dataset"), "--out",
            str(tmp / "out")], tmp / "out" / "questions.jsonl"


def _import_legacy(tmp):
    (tmp / "p.pkl").write_bytes(pickle.dumps([row(0, 4, 4)]))
    return ["import-legacy", str(tmp / "p.pkl"), "--dataset", "A_f", "--system", "naive",
            "--out", str(tmp / "out")], tmp / "out" / "manifest.json"


def _needs(tmp):  # refused before its embedding model loads; a full disk is the same write
    (tmp / "queries.jsonl").write_text('{"query": "who won"}\n', encoding="utf-8")
    return ["needs", "--queries", str(tmp / "queries.jsonl"), "--out",
            str(tmp / "needs.txt")], tmp / "needs.txt"


def _run(tmp):  # refused before any model starts
    questions, articles = write_dataset(tmp / "dataset")
    return ["run", "--questions", str(questions), "--articles", str(articles), "--systems",
            "baseline", "--out", str(tmp / "out")], tmp / "out" / "samples.jsonl"


def _build(tmp):  # refused before the dump is read
    return ["build", "--dump", str(tmp / "wiki.xml"), "--cutoff", "2021-09-30", "--out",
            str(tmp / "out")], tmp / "out" / "articles.jsonl"


def _import(tmp):  # refused before any model starts
    questions, articles = write_dataset(tmp / "dataset")
    answers = tmp / "answers.jsonl"
    answers.write_text('{"question": "How many bridges does Town 0 have?", "answer": "3"}\n',
                       encoding="utf-8")
    return ["import", str(answers), "--system", "mine", "--questions", str(questions),
            "--articles", str(articles), "--out", str(tmp / "out")], tmp / "out" / "samples.jsonl"


WRITERS = [_report, _report_html, _export, _agreement, _mix, _filter, _import_legacy]


@pytest.mark.parametrize("case", [*WRITERS, _needs, _run, _build, _import],
                         ids=lambda case: case.__name__[1:])
@pytest.mark.parametrize("plant, kind", PLANTS[:1] + PLANTS[2:])
def test_every_command_refuses_an_output_that_is_no_regular_file(tmp_path, monkeypatch, capsys,
                                                                 case, plant, kind):
    monkeypatch.chdir(tmp_path)
    argv, output = case(tmp_path)
    output.parent.mkdir(parents=True, exist_ok=True)
    plant(output)
    before = kind_of(output)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("freshrag: error: ") and err.count("\n") == 1, err
    assert f"{output}: not a regular file but {kind}" in err
    assert kind_of(output) == before and not (tmp_path / "results").exists()


@pytest.mark.parametrize("case", [_report_html, _export, _needs], ids=["report", "export",
                                                                       "needs"])
def test_an_output_option_of_dev_null_is_refused_naming_the_option(capsys, case, tmp_path):
    argv, output = case(tmp_path)
    at = argv.index(str(output))
    argv[at], option = str(NULL), argv[at - 1]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (f"freshrag: error: {option} /dev/null: not a regular file but a character "
                   f"device, and freshrag writes only regular files; give another {option}"
                   f"{' (its .json and .md go beside it)' if case is _needs else ''}\n")
    assert stat.S_ISCHR(os.lstat(NULL).st_mode)


@pytest.mark.parametrize("case", WRITERS, ids=lambda case: case.__name__[1:])
def test_every_command_on_a_full_disk_names_its_output(tmp_path, monkeypatch, capsys, case):
    monkeypatch.chdir(tmp_path)
    argv, output = case(tmp_path)
    if output.exists():
        output.unlink()
    real_fsync = os.fsync

    def full_for_the_output(fd):  # the disk fills up while this output is written
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(f".{output.name}."):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)
    monkeypatch.setattr(files.os, "fsync", full_for_the_output)
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"freshrag: error: {output}: No space left on device; what was "
                          f"written before is kept"), err
    assert not output.exists() and leftovers(output.parent) == []
