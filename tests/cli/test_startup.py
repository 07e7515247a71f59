"""`freshrag --help` loads no command's libraries: in a new interpreter, building the whole parser
imports none of them (the time itself is measured by tests/benchmarks/bench_cli_startup.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("qdrant_client", "openai", "matplotlib", "sklearn", "scipy", "numpy", "torch",
         "langchain_text_splitters", "mwclient")


def loaded_after(code: str) -> set[str]:
    """The modules imported in a new interpreter once `code` has run."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_building_the_parser_imports_no_heavy_library():
    loaded = loaded_after("import freshrag.cli.main\nfreshrag.cli.main.parser()")
    assert "freshrag.cli.commands.run" in loaded  # every command's options were declared
    assert [name for name in HEAVY if name in loaded] == []


@pytest.mark.parametrize("module, library", [
    pytest.param("freshrag.reporting.render.plots", "matplotlib", id="report's figures"),
    pytest.param("freshrag.run.runner", "openai", id="run's runner"),
    pytest.param("freshrag.builders.build", "sklearn", id="build's label report"),
])
def test_the_check_sees_a_heavy_library_a_command_loads_when_it_runs(module, library):
    assert library in loaded_after(f"import {module}")
