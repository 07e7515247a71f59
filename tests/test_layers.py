"""The import contract of docs/design.md: freshrag's packages form layers, and a module imports
only from its own layer or the ones below it; the two packages of one layer never import each
other. Nowhere in the tree do two modules import each other, directly or round a loop. Every
import counts, a lazy one inside a function too.

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
    ("freshrag.workflows",),
    ("freshrag.run", "freshrag.reporting"),
    ("freshrag.cost",),
    ("freshrag.scoring",),
    ("freshrag.builders", "freshrag.systems"),
    ("freshrag.retrieval",),
    ("freshrag.llm",),
    ("freshrag.executors",),
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


def sources(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Every module's source by name; `extra` adds modules (name: source) or replaces them."""
    found = {name: path.read_text(encoding="utf-8") for name, path in modules().items()}
    found.update(extra or {})
    return found


def violations(extra: dict[str, str] | None = None) -> list[str]:
    """Every import against the layers; `extra` adds modules (name: source) to the tree."""
    code = sources(extra)
    found = []
    for module, source in code.items():
        here = layer_of(module)
        if here is None:  # the public API module and `python -m freshrag` sit above every layer
            continue
        for line, target in sorted(set(imports(source, set(code)))):
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


# --------------------------------------------------------------------------- import cycles

# Modules that may still import each other, as the sorted tuple of a cycle's modules: one line
# each, saying why the cycle stays for now. Empty: every cycle found so far was broken.
ALLOWED_CYCLES: dict[tuple[str, ...], str] = {
    ("freshrag.cli.commands.demo", "freshrag.cli.main"):
        "the demo runs the real commands through main(), imported when the demo runs",
}


def import_graph(extra: dict[str, str] | None = None) -> dict[str, set[str]]:
    """Module -> the tree's modules it imports (a module importing itself aside)."""
    code = sources(extra)
    return {module: {target for _, target in imports(source, set(code))
                     if target in code and target != module}
            for module, source in code.items()}


def cycles(graph: dict[str, set[str]]) -> dict[tuple[str, ...], str]:
    """Every group of modules that import each other round a loop (a strongly connected part
    of the graph), sorted, with one loop through it written out."""
    reach = {module: _reachable(graph, module) for module in graph}
    found = {}
    for module in sorted(graph):
        if module in reach[module] and not any(module in group for group in found):
            group = tuple(sorted({module} | {m for m in reach[module] if module in reach[m]}))
            found[group] = " -> ".join(_loop(graph, module, set(group)))
    return found


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += graph[module]
    return seen


def _loop(graph: dict[str, set[str]], start: str, group: set[str]) -> list[str]:
    """The shortest way from `start` back to itself, within `group` (breadth first)."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        module = queue.pop(0)
        for target in sorted(graph[module] & group):
            if target == start:
                return paths[module] + [start]
            if target not in paths:
                paths[target] = paths[module] + [target]
                queue.append(target)
    raise AssertionError(f"{start} is on no loop")


def test_no_two_modules_import_each_other():
    found = cycles(import_graph())
    assert {group: loop for group, loop in found.items() if group not in ALLOWED_CYCLES} == {}
    assert [group for group in ALLOWED_CYCLES if group not in found] == []  # fixed: strike it


@pytest.mark.parametrize("planted, loop", [
    pytest.param({"freshrag.core.probe_a": "from freshrag.core import probe_b\n",
                  "freshrag.core.probe_b": "import freshrag.core.probe_a\n"},
                 "freshrag.core.probe_a -> freshrag.core.probe_b -> freshrag.core.probe_a",
                 id="two-modules"),
    pytest.param({"freshrag.core.probe_a": "from freshrag.core.probe_b import helper\n",
                  "freshrag.core.probe_b": "def helper():\n    from freshrag.core import probe_a\n"},
                 "freshrag.core.probe_a -> freshrag.core.probe_b -> freshrag.core.probe_a",
                 id="lazy"),
    pytest.param({"freshrag.reporting.probe_a": "import freshrag.reporting.probe_b\n",
                  "freshrag.reporting.probe_b": "import freshrag.reporting.probe_c\n",
                  "freshrag.reporting.probe_c": "from freshrag.reporting.probe_a import x\n"},
                 "freshrag.reporting.probe_a -> freshrag.reporting.probe_b -> "
                 "freshrag.reporting.probe_c -> freshrag.reporting.probe_a", id="round-three"),
    # a name from a package that is not one of its modules comes from its __init__
    pytest.param({"freshrag.run": "from freshrag.run.probe import run\n",
                  "freshrag.run.probe": "from freshrag.run import RUNNERS\n"},
                 "freshrag.run -> freshrag.run.probe -> freshrag.run", id="through-init"),
])
def test_the_check_sees_a_planted_cycle(planted, loop):
    found = cycles(import_graph(planted))
    assert [found[group] for group in found if group not in ALLOWED_CYCLES] == [loop]
    assert set(loop.split(" -> ")) == set(next(g for g in found if found[g] == loop))


def test_importing_a_module_of_a_package_is_not_importing_its_init():
    planted = {"freshrag.run": "from freshrag.run.probe import run\n",
               "freshrag.run.probe": "from freshrag.run import runner\n"}  # a module, not a name
    assert [loop for group, loop in cycles(import_graph(planted)).items()
            if group not in ALLOWED_CYCLES] == []
