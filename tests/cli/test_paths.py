"""Paths and names (docs/faults.md#paths-and-names): every path option of every command refuses
a name the file system cannot hold or bytes that are not UTF-8 in one line naming the option;
a configured service or an installed system cannot take a built-in system's name."""

from __future__ import annotations

import argparse
import os

import pytest

from freshrag.cli.main import main, parser
from freshrag.cli.values import NAME_MAX, PATH_MAX, out_dir, path, pattern
from freshrag.core.files import write_text
from freshrag.core.plugins import PluginError
from freshrag.systems import SYSTEMS
from freshrag.systems.external.plugins import available, resolve
from tests.support.datasets import write_dataset
from tests.support.packages import install_package


def path_actions() -> list[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    [sub] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return [(name, command, action) for name, command in sub.choices.items()
            for action in command._actions
            if command._registry_get("type", action.type, action.type) in (path, out_dir,
                                                                             pattern)]


BAD = [
    pytest.param(os.fsdecode(b"results/run-\xff\xfe"), "is not UTF-8 text", id="not-utf-8"),
    pytest.param("r" * (NAME_MAX + 1), f"has a name of {NAME_MAX + 1} bytes, more than the 255",
                 id="long-name"),
    pytest.param("é" * 128 + ".html", "has a name of 261 bytes", id="long-name-in-bytes"),
    pytest.param("d/" * (PATH_MAX // 2 + 1), "bytes, more than the 4,096", id="long-path"),
]


def test_the_path_options_were_found():
    found = {(name, action.dest) for name, _, action in path_actions()}
    assert {("report", "html"), ("export", "out"), ("run", "out"), ("build", "dump"),
            ("report", "run_dirs"), ("needs", "queries"), ("run", "config")} <= found


@pytest.mark.parametrize("text, says", BAD)
@pytest.mark.parametrize("name, command, action", [
    pytest.param(*found, id=f"{found[0]}-{found[2].dest}") for found in path_actions()])
def test_every_path_option_refuses_what_no_file_system_holds(capsys, name, command, action, text,
                                                             says):
    positionals = [a for a in command._actions if not a.option_strings]
    given = ([action.option_strings[0], text] if action.option_strings else  # those before: fine
             ["ok"] * positionals.index(action) + [text])
    with pytest.raises(SystemExit) as exited:
        main([name, *given])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    option = action.option_strings[0] if action.option_strings else action.metavar
    last = err.splitlines()[-1]
    assert last.startswith(f"freshrag {name}: error: argument {option}: ") and says in last, err
    assert "Traceback" not in err and len(last) < 400


@pytest.mark.parametrize("name", [
    pytest.param("r" * NAME_MAX, id="255-ascii"),
    pytest.param("€" * (NAME_MAX // 3), id="255-bytes-of-3-byte-characters"),
])
def test_the_longest_name_allowed_is_written(tmp_path, name):
    assert path(name).name == name
    written = write_text(tmp_path / name, "whole\n")  # its temporary name stays within NAME_MAX
    assert written.read_text(encoding="utf-8") == "whole\n"
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_configured_service_may_not_take_a_built_in_name(tmp_path, capsys):
    questions, articles = write_dataset(tmp_path / "dataset")
    config = tmp_path / "freshrag.toml"
    config.write_text('[systems.ok-one]\nurl = "http://127.0.0.1:9/a"\n'
                      '[systems.naive]\nurl = "http://127.0.0.1:9/ask"\n')
    for argv in (["systems", "--config", str(config)],
                 ["run", "--questions", str(questions), "--articles", str(articles),
                  "--systems", "naive", "--config", str(config), "--out", str(tmp_path / "r")]):
        assert main(argv) == 2
        assert capsys.readouterr().err == (
            f"freshrag: error: {config}: [systems.naive]: 'naive' is a built-in system's name, so "
            f"a run would never ask this service; name it apart, e.g. [systems.my-naive]\n")
    assert not (tmp_path / "r").exists()


def test_an_installed_system_may_not_take_a_built_in_name(tmp_path, monkeypatch):
    install_package(tmp_path, monkeypatch, "squatter", "class React:\n    pass\n", "1.0",
                    SYSTEMS.group, {"react": "squatter:React"})
    with pytest.raises(PluginError) as raised:
        resolve("react", SYSTEMS)
    assert str(raised.value).startswith("system 'react': squatter 1.0 registers squatter:React "
                                        "under the built-in system's name 'react'")
    listed = [source for source in available(SYSTEMS) if source.name == "react"]
    assert [source.origin for source in listed] == ["built-in", "entry point"]
    assert "registers squatter:React under the built-in system's name" in listed[1].description
