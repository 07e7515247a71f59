"""The CLI explains itself (issue 26): every command has a description, examples and its options
in named groups; `--version` prints the installed version; an option of one name has one
default on every command; a default the help states is one the option accepts."""

from __future__ import annotations

import argparse
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from freshrag.cli.main import main, parser
from freshrag.cli.options import DATASET_ALIAS, UsageError, check_together
from freshrag.cli.reference import _expanded_help

UNNAMED = {"options", "optional arguments", "positional arguments"}  # argparse's own titles
# Options whose default differs between commands on purpose, and why.
OWN_DEFAULTS = {
    "--out": "each command writes its own output",
    "--scorers": "score adds the scorers it is told; run grades with the judge by default",
    "--by": "report adds a table per field given; scan-retrieval picks the one grouping",
    "--system": "import and import-legacy name the system they write; filter reads baseline's",
    "--systems": "run runs the default systems; export exports every system a run has",
    "--format": "export has no output to print, so no default: the file's format is chosen",
}


def commands() -> dict[str, argparse.ArgumentParser]:
    [sub] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def shown(command: argparse.ArgumentParser) -> list[argparse.Action]:
    return [action for action in command._actions if action.help is not argparse.SUPPRESS
            and not isinstance(action, argparse._HelpAction)]


@pytest.mark.parametrize("name", list(commands()))
def test_every_command_has_a_description_examples_and_named_groups(name):
    command = commands()[name]
    assert command.description and len(command.description.split()) >= 12, name
    examples = command.epilog.splitlines()
    assert examples[0] == "examples:"
    assert any(line.strip().startswith(f"freshrag {name}") for line in examples[1:]), examples
    for group in command._action_groups:
        if group.title in UNNAMED:
            assert [a for a in group._group_actions if a in shown(command)] == [], (
                name, group.title, [a.dest for a in group._group_actions])
    assert shown(command)  # each command has options, all of them in named groups


def test_the_top_level_help_lists_every_command_with_its_summary(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # a terminal's width: argparse wraps to it
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    [sub] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    summaries = {choice.dest: choice.help for choice in sub._choices_actions}
    assert set(summaries) == set(commands())
    listed = text.split("commands:", 1)[1].split("examples:", 1)[0]
    for name, summary in summaries.items():  # on one line, whole
        assert re.search(rf"^    {re.escape(name)} +{re.escape(summary)}$", listed,
                         re.MULTILINE), name
    assert max(map(len, text.splitlines())) <= 80
    assert "examples:\n  freshrag" in text


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"freshrag {version('freshrag')}"


def test_an_option_has_the_same_default_on_every_command():
    defaults: dict[str, dict[str, object]] = {}
    for name, command in commands().items():
        for action in shown(command):
            for flag in action.option_strings:
                defaults.setdefault(flag, {})[name] = action.default
    differing = {flag: by_command for flag, by_command in defaults.items()
                 if any(value != next(iter(by_command.values()))
                        for value in by_command.values()) and flag not in OWN_DEFAULTS}
    assert differing == {}
    assert {"--concurrency", "--seed", "--model", "--dataset"} <= {
        flag for flag, by_command in defaults.items() if len(by_command) > 3}


def stated_defaults() -> list[tuple[str, argparse.Action, str]]:
    """(command, option, value) for every "(default: VALUE)" a help text states."""
    found = []
    for name, command in commands().items():
        for action in shown(command):
            if not action.option_strings:
                continue
            match = re.search(r"\(default: ([^\s;)]+)", _expanded_help(action, command.prog))
            if match and action.default is not None:
                found.append((name, action, match.group(1).rstrip(",.")))
    return found


@pytest.mark.parametrize("name, action, text", [
    pytest.param(*case, id=f"{case[0]} {case[1].option_strings[0]}") for case in stated_defaults()])
def test_a_default_the_help_states_is_one_the_option_accepts(name, action, text):
    def parse(value):
        return action.type(value) if callable(action.type) else value

    # argparse passes a default given as text through the type, as it does a value
    default = parse(action.default) if isinstance(action.default, str) else action.default
    assert parse(text) == default or str(parse(text)) == str(default)
    if action.choices is not None:
        assert parse(text) in action.choices


def test_the_stated_defaults_were_found():
    options = {(name, action.option_strings[0]) for name, action, _ in stated_defaults()}
    assert {("run", "--concurrency"), ("score", "--seed"), ("run", "--scorers"),
            ("scan-retrieval", "--weights"), ("build", "--criteria")} <= options


def test_the_build_funnel_is_printed_as_lines_to_read():
    from freshrag.cli.commands.build import render_funnel

    funnel = {"sampled": 1200, "n_r": 24, "discarded_r": {"not_sampled": 1176},
              "n_d": 10, "discarded_d": {"created_before_cutoff": 14},
              "questions": 10, "needs": {"needs": 2, "by_need": {"a": 1}}}
    lines = render_funnel(funnel).splitlines()
    assert lines[1].split() == ["pages", "read", "1,200"]
    assert lines[2].endswith("24   dropped: not sampled 1,176")
    assert lines[3].startswith("  A_d, created after the cutoff") and "created before cutoff 14" \
        in lines[3]
    assert lines[-1] == "  needs: needs 2, by need (a 1)"
    assert not any(char in "{}\"" for line in lines for char in line)  # no JSON


def test_every_variable_is_named_in_the_help_of_the_commands_that_read_it():
    from freshrag.core.config import _ENV_FIELDS
    from freshrag.llm.local_server import RUNTIME_ENV

    variables = [f"FRESHRAG_{suffix}" for suffix in _ENV_FIELDS] + [
        f"FRESHRAG_<ROLE>_{suffix}" for suffix in _ENV_FIELDS] + [RUNTIME_ENV]
    calling = {name: command for name, command in commands().items()
               if any(group.title == "models and endpoints" for group in command._action_groups)}
    assert {"run", "score", "build", "label", "needs", "probe-judge", "demo", "import", "index",
            "scan-retrieval"} <= set(calling)
    for name, command in calling.items():
        text = " ".join(command.format_help().split())
        assert [variable for variable in variables if variable not in text] == [], name


def test_a_dataset_and_a_run_are_named_the_same_way_on_every_command():
    positionals = set()
    for name, command in commands().items():
        for action in shown(command):
            if action.dest == "dataset":  # a dataset directory is --dataset DIR
                assert (action.option_strings, action.metavar) == (["--dataset"], "DIR"), name
            elif action.dest == DATASET_ALIAS:  # the positional of before, an alias that says so
                assert "the same as --dataset" in action.help, name
            elif not action.option_strings:
                positionals.add(action.metavar)
    # runs read (the gate's two by their part), files, and the folder `freshrag datasets` lists
    # the dataset directories under
    assert positionals == {"RUN_DIR", "RUN_A", "RUN_B", "BASELINE_RUN", "CANDIDATE_RUN",
                           "ANSWERS", "PICKLE", "PATH"}


@pytest.mark.parametrize("name, rest", [("label", []), ("scan-retrieval", []),
                                        ("mix", ["--n", "1", "--out", "o"])])
def test_the_positional_dataset_of_before_is_still_accepted(name, rest):
    option = parser().parse_args([name, "--dataset", "d", *rest])
    alias = parser().parse_args([name, "d", *rest])
    check_together(alias)
    assert option.dataset == alias.dataset == Path("d")
    twice = parser().parse_args([name, "--dataset", "e", "d", *rest])
    with pytest.raises(UsageError, match="give the dataset once"):
        check_together(twice)
