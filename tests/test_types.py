"""Types: mypy over harness/, builders/ and systems/, the one namespace `freshrag`, as configured in
pyproject.toml (`[tool.mypy]`: --check-untyped-defs, unused ignores named); 0 errors.

mypy follows neither the editable install (an import hook) nor setuptools' package-dir mapping
(harness/ is `freshrag`), so the folders are first linked into .mypy_cache/tree/freshrag/ as that
mapping says, and the errors are named by their paths in the repository. By hand, from the root:

    python3 tests/test_types.py

(once the links exist, `python3 -m mypy` runs the same check, naming the linked paths). mypy's
cache is .mypy_cache/: a first run took 42 s and 1.3 GB here, a run after a small change 2-15 s."""

import os
import re
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository's root is where `tests` lives
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import ROOT

CACHE = ROOT / ".mypy_cache"
TREE = CACHE / "tree"
FOLDERS = {"builders": "builders", "systems": "systems"}  # subpackage -> folder; the rest: harness


def _wanted() -> dict[str, Path]:
    """The links `freshrag/` needs: harness/'s modules and packages, then builders/ and systems/."""
    harness = ROOT / "harness"
    wanted = {p.name: p for p in sorted(harness.iterdir())
              if p.suffix == ".py" or (p / "__init__.py").is_file()}
    return wanted | {name: ROOT / folder for name, folder in FOLDERS.items()}


def link_tree() -> Path:
    """Links (relative, so that a moved clone still works) what `freshrag` is made of into
    TREE/freshrag/; stale links go. Safe when two runs link at once."""
    package = TREE / "freshrag"
    package.mkdir(parents=True, exist_ok=True)
    wanted = _wanted()
    for link in package.iterdir():
        if link.name not in wanted or link.resolve() != wanted[link.name].resolve():
            link.unlink(missing_ok=True)
    for name, target in wanted.items():
        try:
            (package / name).symlink_to(os.path.relpath(target, package))
        except FileExistsError:
            pass
    return TREE


def _repo_paths(report: str) -> str:
    """mypy's report with the linked paths (absolute or relative: mypy names a file as its cache
    remembers it) named as the repository's files."""
    linked = re.compile(r"[^\s\"':]*\.mypy_cache/tree/freshrag/(?:(builders|systems)/)?")
    return linked.sub(lambda m: f"{FOLDERS[m[1]]}/" if m[1] else "harness/", report)


def check() -> tuple[str, int]:
    """Runs mypy with the project's configuration; returns its report and exit status."""
    from mypy import api  # here: collecting the tests does not import mypy

    link_tree()
    limit = sys.getrecursionlimit()  # mypy raises it for its own process: tests after this one
    try:                             # (json's nesting limit, core/jsonl.py) count on the default
        out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                    "--cache-dir", str(CACHE), "--show-absolute-path"])
    finally:
        sys.setrecursionlimit(limit)
    return _repo_paths(out + err), status


def test_mypy_finds_nothing():
    try:
        import mypy  # noqa: F401
    except ImportError:
        raise AssertionError("mypy is not installed: pip install -e '.[test]'") from None
    report, status = check()
    assert status == 0, f"mypy (python3 tests/test_types.py) found:\n{report}"


if __name__ == "__main__":
    text, code = check()
    print(text, end="")
    sys.exit(code)
