"""pyproject.toml lists every package of the `freshrag` namespace: a folder with an __init__.py
that the list misses would be left out of a wheel while an editable install still finds it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_and_mapped():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {package: folder for package, folder in setuptools["package-dir"].items()}
    found = set()
    for package, folder in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            name = ".".join((package, *parts))
            if not any(name.startswith(other + ".") and len(other) > len(package)
                       for other in folders):
                found.add(name)
    assert sorted(found) == sorted(setuptools["packages"])

