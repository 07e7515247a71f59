"""An output that is one of the command's inputs, or another of its outputs, is refused however
the path is spelled: the same path, another spelling of it, a symbolic or a hard link."""

import os

import pytest

from freshrag.core.errors import UserError
from freshrag.core.outputs import Output, OverwriteError, check_outputs, files_in


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "data" / "queries.jsonl"
    path.parent.mkdir()
    path.write_text('{"query": "a"}\n', encoding="utf-8")
    return path


def out(path):
    return Output(path, "--out", "give another --out")


@pytest.mark.parametrize("spell", [
    pytest.param(lambda log, tmp: log, id="same-path"),
    pytest.param(lambda log, tmp: tmp / "data" / ".." / "data" / "./queries.jsonl",
                 id="another-spelling"),
    pytest.param(lambda log, tmp: os.path.relpath(log), id="relative"),
])
def test_an_output_at_an_input_s_path_is_refused(tmp_path, log, spell):
    path = spell(log, tmp_path)
    with pytest.raises(OverwriteError) as raised:
        check_outputs([out(path)], [("--queries", log)])
    message = str(raised.value)
    assert message.startswith(f"--out ({path}) is --queries ({log}), which this command reads")
    assert message.endswith("give another --out") and "\n" not in message
    assert isinstance(raised.value, UserError)


@pytest.mark.parametrize("link", [os.symlink, os.link], ids=["symbolic-link", "hard-link"])
def test_an_output_that_is_a_link_to_an_input_is_refused(tmp_path, log, link):
    other = tmp_path / "needs.txt"
    link(log, other)
    with pytest.raises(OverwriteError, match="which this command reads"):
        check_outputs([out(other)], [("--queries", log)])


def test_a_new_file_beside_an_input_is_allowed(tmp_path, log):
    check_outputs([out(log.with_suffix(".txt")), out(tmp_path / "new" / "needs.json")],
                  [("--queries", log), ("--config", None)])


def test_two_outputs_that_are_one_file_are_refused(tmp_path):
    needs = tmp_path / "needs.json"  # not there yet: compared as paths
    outputs = [out(needs), Output(needs.with_suffix(".json"), "the .json beside --out",
                                  "give --out another suffix")]
    with pytest.raises(OverwriteError) as raised:
        check_outputs(outputs, [])
    assert str(raised.value) == (f"the .json beside --out and --out would be one file ({needs}), "
                                 f"one written over the other; give --out another suffix")


def test_files_in_a_directory_are_named_by_option_and_name(tmp_path, log):
    with pytest.raises(OverwriteError) as raised:
        check_outputs(files_in(log.parent, ("manifest.json", "queries.jsonl"), "--out"),
                      [("PICKLE", log)])
    assert str(raised.value).startswith(f"--out's queries.jsonl ({log}) is PICKLE ({log})")
