"""Loading a user's own code by name: a system (docs/own-system.md), a scorer
(docs/scoring.md#your-own-scorer) or a question style (docs/building.md#question-styles) given
as an attribute of a file (`path/to/file.py:NAME`) or a module (`package.module:NAME`), or
registered by an installed package under an entry-point group.

What is loaded carries its identity: where it came from, a SHA-256 of the file that defines it
and the version of the package that ships it, so that a run can record it and refuse to resume
with changed code. What each kind then checks of the thing loaded (a system's factory, a
scorer's attributes) stays with that kind; every message here starts with the kind and the spec
as given (`system 'x.py:Y': ...`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from freshrag.core.errors import UserError, said
from freshrag.core.textfile import SURROGATE

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # a plugged thing's name in rows and reports


class PluginError(UserError, ValueError):
    """Something of the user's that cannot be loaded: the input it came from is named; the cause,
    where the user's own code raised, is chained (`__cause__`) so that its traceback can be shown
    once."""

    show_cause = True


@dataclass(frozen=True)
class Loaded:
    """An attribute of the user's code, and where it came from."""

    name: str  # its own `name` attribute if a string, else the attribute's name
    thing: Any
    attribute: str  # the attribute's name in its module
    origin: str  # "file", "module" or "entry point"
    where: str  # the spec as given, or the entry point and its package
    sha256: str | None  # of the file that defines it
    version: str | None  # of the installed package that ships it
    description: str  # the first sentence of its docstring, else its module's


def load(kind: str, spec: str, target: str) -> Loaded:
    """The attribute `target` (`FILE.py:ATTR` or `MODULE:ATTR`) names; `spec` is what the user
    wrote (with any `NAME=`), for the messages."""
    if SURROGATE.search(spec):
        # a name in another encoding arrives from os.fsdecode holding lone surrogates, which no
        # manifest or message could hold: refused as the CLI refuses such a path
        raise PluginError(f"{kind} {os.fsencode(spec)!r:.200}: not UTF-8 text; give a file "
                          f"or module whose path is UTF-8")
    where, _, attribute = target.rpartition(":")
    if not attribute.isidentifier():
        raise PluginError(f"{kind} {spec!r}: {attribute!r} after the ':' is not a Python name")
    path = Path(where)
    if where.endswith(".py") or path.parent != Path("."):
        return _from_file(kind, target, path, attribute)
    return _from_module(kind, target, where, attribute)


def entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The installed packages' entry points of `group`, by name."""
    return {entry.name: entry for entry in importlib.metadata.entry_points(group=group)}


def load_entry_point(kind: str, entry: importlib.metadata.EntryPoint) -> Loaded:
    """What an installed package registered; named by its entry point's name."""
    where = f"{entry.value} ({dist(entry)})"
    try:
        thing = entry.load()
    except Exception as err:  # the plugin's code: any error, named with its package
        raise PluginError(f"{kind} {entry.name!r} ({where}): loading it failed: "
                          f"{said(err)}") from err
    module = sys.modules.get(entry.module)
    return Loaded(entry.name, thing, entry.attr, "entry point", where,
                  file_digest(module) if module else None,
                  entry.dist.version if entry.dist else None, _description(thing, module))


def check_name(kind: str, name: str, spec: str) -> str:
    """`name`, if it can name a row of a report."""
    if not NAME.match(name):
        raise PluginError(f"{kind} {spec!r}: {name!r} is not a usable name (letters, digits, "
                          f"'_', '.', '-'; up to 64); give one as NAME={spec}")
    return name


def split_name(spec: str) -> tuple[str, str]:
    """(`NAME`, the rest) of `NAME=TARGET`; ("", spec) when no name is given before the target
    (an `=` after a ':' or inside a path belongs to the target)."""
    if "=" not in spec.split(":", 1)[0]:
        return "", spec.strip()
    name, _, target = spec.partition("=")
    return name.strip(), target.strip()


def dist(entry: importlib.metadata.EntryPoint) -> str:
    return f"{entry.dist.name} {entry.dist.version}" if entry.dist else "an installed package"


def file_digest(module: Any) -> str | None:
    path = getattr(module, "__file__", None)
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None


def first_line(thing: Any) -> str:
    """The first sentence of `thing`'s own docstring (never an inherited one), on one line."""
    doc = inspect.cleandoc(getattr(thing, "__doc__", None) or "")
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    return paragraph.split(". ", 1)[0].rstrip(".") + "." if paragraph else ""


def _from_file(kind: str, spec: str, path: Path, attribute: str) -> Loaded:
    if not path.is_file():
        raise PluginError(f"{kind} {spec!r}: {path} is not a file")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    stem = re.sub(r"\W", "_", path.stem)
    # Keyed by place as well as text: a second copy of a file elsewhere is its own module, so
    # its tracebacks and sibling imports name its own folder, not the first copy's.
    place = hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogateescape") + data)
    module_name = f"freshrag_user_{stem}_{place.hexdigest()[:12]}"
    module = sys.modules.get(module_name) or _exec_file(kind, spec, path, module_name)
    return _attribute(kind, spec, module, attribute, "file", str(path), digest, None)


def _exec_file(kind: str, spec: str, path: Path, module_name: str) -> ModuleType:
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise PluginError(f"{kind} {spec!r}: {path} cannot be loaded as a Python file")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    folder = str(path.resolve().parent)  # so that the file can import its sibling modules
    if folder not in sys.path:
        sys.path.append(folder)
    try:
        loader_spec.loader.exec_module(module)
    except BaseException as err:  # the user's code: any error, named with its file
        del sys.modules[module_name]
        if isinstance(err, KeyboardInterrupt):
            raise
        raise PluginError(f"{kind} {spec!r}: importing {path} failed: "
                          f"{said(err)}") from err
    return module


def _from_module(kind: str, spec: str, module_name: str, attribute: str) -> Loaded:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and module_name.startswith(err.name):
            raise PluginError(f"{kind} {spec!r}: no module named {err.name!r} (give a "
                              f"file as path/to/file.py:NAME, or install the package)") from None
        raise PluginError(f"{kind} {spec!r}: importing {module_name} failed: {err}") from err
    except Exception as err:  # the user's code: any error, named with its module
        raise PluginError(f"{kind} {spec!r}: importing {module_name} failed: "
                          f"{said(err)}") from err
    return _attribute(kind, spec, module, attribute, "module", spec, file_digest(module),
                      _module_version(module_name))


def _attribute(kind: str, spec: str, module: ModuleType, attribute: str, origin: str,
               where: str, digest: str | None, version: str | None) -> Loaded:
    thing = getattr(module, attribute, None)
    if thing is None:
        raise PluginError(f"{kind} {spec!r}: {where} defines no {attribute!r}")
    name = getattr(thing, "name", None)
    return Loaded(name if isinstance(name, str) else attribute, thing, attribute, origin, where,
                  digest, version, _description(thing, module))


def _description(thing: Any, module: Any) -> str:
    return first_line(thing) or first_line(module)


def _module_version(module_name: str) -> str | None:
    top = module_name.split(".")[0]
    for name in importlib.metadata.packages_distributions().get(top, []):
        return importlib.metadata.version(name)
    return None
