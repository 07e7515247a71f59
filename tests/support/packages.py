"""A package installed the way pip installs one, for the plug-in tests (systems, scorers,
styles): its module and a dist-info folder with entry_points.txt, found by importlib.metadata on
sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def install_package(folder: Path, monkeypatch: pytest.MonkeyPatch, module: str, code: str,
                    version: str, group: str, entries: dict[str, str]) -> None:
    """`module`.py holding `code`, as the distribution `module` (underscores as dashes) at
    `version`, registering each `name = target` of `entries` in the entry-point `group`."""
    (folder / f"{module}.py").write_text(code, encoding="utf-8")
    info = folder / f"{module}-{version}.dist-info"
    info.mkdir()
    name = module.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        f"[{group}]\n" + "".join(f"{key} = {target}\n" for key, target in entries.items()))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, module, raising=False)
