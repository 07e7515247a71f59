"""The import contract of docs/design.md: freshrag's packages form layers, and a module imports
only from its own layer or the ones below it; the two packages of one layer never import each
other. Every import counts, a lazy one inside a function too.

import-linter reads a package from its own folder only, and freshrag's packages sit in three
(harness/ is `freshrag`, builders/ is `freshrag.builders`, systems/ is `freshrag.systems`), so the
contract is checked here with the standard library's parser.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"harness": "freshrag", "builders": "freshrag.builders", "systems": "freshrag.systems"}
# Top to bottom; a layer may hold independent packages.
LAYERS = [
    ("freshrag.cli",),
    ("freshrag.run", "freshrag.reporting"),
    ("freshrag.cost",),
    ("freshrag.scoring",),
    ("freshrag.builders",),
    ("freshrag.systems",),
    ("freshrag.llm",),
    ("freshrag.core",),
]


def modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def imports(source: str, known: set[str]) -> list[tuple[int, str]]:
    """(line, module) of every freshrag module that `source` imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from package import module` imports the module; any other name, the package
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.append((node.lineno, name if name in known else node.module))
    return [(line, name) for line, name in found if name.startswith("freshrag.")]


def layer_of(module: str) -> tuple[int, str] | None:
    for index, packages in enumerate(LAYERS):
        for package in packages:
            if module == package or module.startswith(package + "."):
                return index, package
    return None


def violations(extra: dict[str, str] | None = None) -> list[str]:
    """Every import against the layers; `extra` adds modules (name: source) to the tree."""
    sources = {name: path.read_text(encoding="utf-8") for name, path in modules().items()}
    sources.update(extra or {})
    found = []
    for module, source in sources.items():
        here = layer_of(module)
        if here is None:  # the public API module and `python -m freshrag` sit above every layer
            continue
        for line, target in sorted(set(imports(source, set(sources)))):
            there = layer_of(target)
            if there is None or there[1] == here[1]:
                continue
            if there[0] <= here[0]:
                found.append(f"{module}:{line}: {here[1]} imports {target} "
                             f"({there[1]} is {'beside' if there[0] == here[0] else 'above'} it)")
    return found


def test_every_package_sits_in_a_layer():
    packages = {".".join(name.split(".")[:2]) for name in modules() if name.count(".") >= 1}
    packages.discard("freshrag.__main__")
    assert sorted(p for p in packages if layer_of(p) is None) == []


def test_imports_go_down_the_layers_only():
    assert violations() == []


@pytest.mark.parametrize("module, source, expected", [
    pytest.param("freshrag.core.probe", "from freshrag.cli.main import main\n",
                 "freshrag.core imports freshrag.cli.main (freshrag.cli is above it)", id="up"),
    pytest.param("freshrag.core.probe", "def f():\n    from freshrag.run import runner\n",
                 "freshrag.core imports freshrag.run.runner (freshrag.run is above it)",
                 id="lazy-up"),
    pytest.param("freshrag.run.probe", "import freshrag.reporting.report\n",
                 "freshrag.run imports freshrag.reporting.report (freshrag.reporting is beside it)",
                 id="beside"),
])
def test_the_check_sees_a_forbidden_import(module, source, expected):
    assert [problem.split(": ", 1)[1] for problem in violations({module: source})] == [expected]
