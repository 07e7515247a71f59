"""The house rules of the test tree: a test module is never imported (shared helpers live in
tests/support/, shared fixtures in tests/conftest.py, which pytest loads itself), and the folders
of tests mirror the packages they test. Every import counts, a lazy one inside a function too.
And one rule of the source tree: no comment or docstring cites an issue number, which says
nothing to a reader of the code (it cites the page of docs/ that holds the reason instead).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from tests import ROOT

TESTS = ROOT / "tests"
# Folders that test no one package: their names say what they hold instead.
NOT_MIRRORED = {"benchmarks", "data", "fuzz", "integration", "support"}


def imported_test_modules(source: str, package: str = "tests") -> list[tuple[int, str]]:
    """(line, module) of every test module (`test_*`) or conftest that `source`, a module of
    `package`, imports: `import`, `from ... import` (absolute or relative) anywhere in the
    file, and `importlib.import_module` or `__import__` of a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[:len(parts) - node.level + 1], *filter(None, [base])])
            # `from package import module` imports the module
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Call) and _imports_by_name(node.func) and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names = [node.args[0].value]
        found += [(node.lineno, name) for name in names if _is_test_module(name)]
    return found


def _imports_by_name(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or \
        (isinstance(func, ast.Name) and func.id in ("import_module", "__import__"))


def _is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and (parts[-1].startswith("test_") or parts[-1] == "conftest")


def package_of(path: Path) -> str:
    return ".".join(path.parent.relative_to(ROOT).parts)


@pytest.mark.parametrize("source, module, expected", [
    pytest.param("from tests.run.test_run_cli import run_cli\n", "tests.core",
                 ["tests.run.test_run_cli"], id="from-a-test-module"),
    pytest.param("import tests.llm.test_llm as other\n", "tests.llm", ["tests.llm.test_llm"],
                 id="import-a-test-module"),
    pytest.param("def helper():\n    from tests.reporting.test_html_report import parse\n",
                 "tests.reporting", ["tests.reporting.test_html_report"], id="lazy-in-a-function"),
    pytest.param("from tests.reporting import test_html_report\n", "tests.cost",
                 ["tests.reporting.test_html_report"], id="the-module-from-its-package"),
    pytest.param("from .test_llm import MESSAGES\n", "tests.llm", ["tests.llm.test_llm"],
                 id="relative"),
    pytest.param("from ..run import test_runner\n", "tests.llm", ["tests.run.test_runner"],
                 id="relative-from-a-sibling-package"),
    pytest.param("import importlib\nimportlib.import_module('tests.cli.test_demo')\n", "tests",
                 ["tests.cli.test_demo"], id="import-module-by-name"),
    pytest.param("from tests.integration.conftest import DATA\n", "tests.integration",
                 ["tests.integration.conftest"], id="a-conftest"),
    pytest.param("from tests.support.runs import run_cli\nfrom tests import WIKIRAG\n"
                 "import pytest\nfrom freshrag.core import types\n", "tests.run", [],
                 id="support-and-libraries-are-fine"),
])
def test_an_import_of_a_test_module_is_seen(source, module, expected):
    assert [name for _, name in imported_test_modules(source, module)] == expected


def test_no_module_of_the_test_tree_imports_a_test_module():
    found = [f"{path.relative_to(ROOT)}:{line}: imports {name}"
             for path in sorted(TESTS.rglob("*.py"))
             for line, name in imported_test_modules(path.read_text(encoding="utf-8"),
                                                     package_of(path))]
    assert not found, ("move what is shared into tests/support/ (a fixture into "
                       "tests/conftest.py):\n" + "\n".join(found))


def unmirrored(folders: list[Path]) -> list[Path]:
    """The folders (relative to tests/) that hold tests but mirror no package folder: tests/X/Y
    mirrors builders/Y or systems/Y when X is builders or systems, else harness/X/Y."""
    def source(folder: Path) -> Path:
        top = folder.parts[0]
        return ROOT / folder if top in ("builders", "systems") else ROOT / "harness" / folder
    return [folder for folder in folders if folder.parts[0] not in NOT_MIRRORED
            and not (source(folder) / "__init__.py").exists()]


@pytest.mark.parametrize("folder, mirrored", [
    pytest.param("core", True, id="a-harness-package"),
    pytest.param("builders/sources", True, id="a-builders-package"),
    pytest.param("systems/external", True, id="a-systems-package"),
    pytest.param("fuzz", True, id="a-folder-named-for-what-it-holds"),
    pytest.param("harness", False, id="no-such-package"),
    pytest.param("reporting/charts", False, id="no-such-subpackage"),
])
def test_a_folder_that_mirrors_no_package_is_seen(folder, mirrored):
    assert unmirrored([Path(folder)]) == ([] if mirrored else [Path(folder)])


def test_the_folders_of_tests_mirror_the_packages():
    folders = sorted({path.parent.relative_to(TESTS) for path in TESTS.rglob("test_*.py")}
                     - {Path(".")})
    assert not unmirrored(folders), "tests/ folders with no package to mirror"


ISSUE = re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)


def issue_citations(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of `source` that cites an issue number."""
    texts = [(token.start[0], token.string)
             for token in tokenize.generate_tokens(io.StringIO(source).readline)
             if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(first := node.body[0], ast.Expr) \
                and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            texts.append((first.lineno, first.value.value))
    return sorted((line, match.group()) for line, text in texts
                  for match in ISSUE.finditer(text))


@pytest.mark.parametrize("source, expected", [
    pytest.param("x = 1  # as issue 29 found\n", [(1, "issue 29")], id="a-comment"),
    pytest.param('"""A module (Issue #7)."""\n', [(1, "Issue #7")], id="a-module-docstring"),
    pytest.param('def f():\n    """Why (issues 3)."""\n', [(2, "issues 3")], id="a-docstring"),
    pytest.param('MESSAGE = "an issue 5 in a string is data"\n', [], id="a-string-is-data"),
    pytest.param("# the issue is the deadline (docs/faults.md)\n", [], id="the-word-alone"),
])
def test_an_issue_citation_is_seen(source, expected):
    assert issue_citations(source) == expected


def test_no_comment_or_docstring_of_the_source_cites_an_issue():
    found = [f"{path.relative_to(ROOT)}:{line}: {text}"
             for folder in ("harness", "builders", "systems")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for line, text in issue_citations(path.read_text(encoding="utf-8"))]
    assert not found, ("cite the page of docs/ that holds the reason, not the issue:\n"
                       + "\n".join(found))
