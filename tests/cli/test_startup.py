"""`freshrag --help` loads no command's libraries: in a new interpreter, the help of the command
list imports no builder, no system, no heavy library, nor pydantic, msgspec or tiktoken (only the
chosen command's options are declared: harness/cli/main.py `parser`); building the whole parser
imports no heavy library either (the time itself is measured by
tests/benchmarks/bench_cli_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("qdrant_client", "openai", "matplotlib", "sklearn", "scipy", "numpy", "torch",
         "langchain_text_splitters", "mwclient", "ray", "opentelemetry.sdk", "google.protobuf")
LIGHT_PATH_FORBIDS = (*HEAVY, "pydantic", "msgspec", "tiktoken")
PACKAGES = ("freshrag.builders", "freshrag.systems")  # every module of these, the package too


def loaded_after(code: str) -> set[str]:
    """The modules imported in a new interpreter once `code` has run."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    return set(json.loads(result.stdout.splitlines()[-1]))


def help_of(*argv: str) -> set[str]:
    """The modules `freshrag ARGV` imported, run as the command runs (main on sys.argv)."""
    return loaded_after(f"sys.argv = ['freshrag', *{list(argv)!r}]\n"
                        "from freshrag.cli.main import main\n"
                        "try:\n    main()\nexcept SystemExit:\n    pass")


def test_the_command_list_loads_no_builder_no_system_and_no_heavy_library():
    loaded = help_of("--help")
    assert "freshrag.cli.commands.build" in loaded  # every command was listed
    assert [name for name in LIGHT_PATH_FORBIDS if name in loaded] == []
    assert sorted(name for name in loaded if name.startswith(PACKAGES)) == []


def test_the_version_is_as_light_as_the_command_list():
    loaded = help_of("--version")
    assert [name for name in LIGHT_PATH_FORBIDS if name in loaded] == []


def test_building_the_whole_parser_imports_no_heavy_library():
    loaded = loaded_after("import freshrag.cli.main\nfreshrag.cli.main.parser()")
    assert "freshrag.cli.commands.run" in loaded  # every command's options were declared
    assert [name for name in HEAVY if name in loaded] == []


@pytest.mark.parametrize("command", ["run", "build", "report", "score", "export"])
def test_one_commands_help_imports_no_heavy_library(command):
    assert [name for name in HEAVY if name in help_of(command, "--help")] == []


def test_the_run_commands_help_reads_its_options_table_without_pydantic():
    # run/options.py declares the run options; run/inputs.py (RunOptions, pydantic) is the run's
    loaded = help_of("run", "--help")
    assert "freshrag.run.options" in loaded
    assert [name for name in ("pydantic", "freshrag.run.inputs") if name in loaded] == []


def test_a_run_loads_ray_only_when_the_ray_executor_is_chosen():
    # the run service, the runner and the Ray executor's module itself; options checked too
    loaded = loaded_after("import freshrag.run.service, freshrag.run.on_ray\n"
                          "from freshrag.run.inputs import RunOptions\n"
                          "RunOptions(executor='ray', address='auto')")
    assert "freshrag.executors.walk" in loaded and "ray" not in loaded
    assert "ray" in loaded_after("from freshrag.executors.choice import executor_of\n"
                                 "from freshrag.executors.cluster import ray_module\n"
                                 "ray_module()")


@pytest.mark.parametrize("module, library", [
    pytest.param("freshrag.reporting.render.plots", "matplotlib", id="report's figures"),
    pytest.param("freshrag.run.runner", "openai", id="run's runner"),
    pytest.param("freshrag.builders.build", "sklearn", id="build's label report"),
    pytest.param("freshrag.run.inputs", "pydantic", id="run's inputs"),
])
def test_the_check_sees_a_heavy_library_a_command_loads_when_it_runs(module, library):
    assert library in loaded_after(f"import {module}")


def test_the_command_list_is_the_whole_parsers(capsys):
    from freshrag.cli.main import parser

    whole, light = parser().format_help(), parser("").format_help()
    assert light == whole
