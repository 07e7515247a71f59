"""Where articles come from (docs/building.md#sources): a live wiki's MediaWiki API, XML dumps
(whole or split), and the export format the demo and the tests write.

Each kind of source is a module registered in `SOURCES` (a registry of harness/core/registry.py;
an installed package adds one under the entry-point group `freshrag.sources`), whose kind object
says itself what it reads:

- `name`; `recognises(given)`: whether the build's options (`Source` below) select it;
- `open(given, out)`: the `PageSource` A_r is sampled from (builders/sources/pages.py);
- `reopens(recorded)`: whether a dataset's manifest names a source of this kind (its
  `description`), and `reopen(recorded, given, out)`: that source again, for the facts stage of a
  resumed build (or a BuildError saying what to give).

The first kind in `SOURCES`' order that recognises wins, so the more particular come first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from freshrag.builders.sources.pages import BuildError
from freshrag.core.registry import Registry, attributes_problem

if TYPE_CHECKING:
    from freshrag.builders.sources.pages import PageSource


@dataclass(frozen=True)
class Source:
    """Where A_r's articles are sampled from: dump files (quoted globs allowed, stub-meta-history
    files giving the creation dates of a pages-articles dump), else a wiki's api.php."""

    dump: tuple[str, ...] = ()
    stub_dump: tuple[str, ...] = ()
    dump_processes: int = 2
    wiki_api: str | None = None  # None: [build] wiki_api of the config file, else Wikipedia's
    user_agent: str | None = None  # None: [build] user_agent of the config file, else ours
    max_lag: int = 5
    concurrency: int = 4  # pages fetched at once from a wiki
    config_file: Path | None = None

    def open(self, out: Path) -> PageSource:
        """The source these options select (`out`: the dataset directory, for a spool)."""
        for kind in SOURCES.values():
            if kind.recognises(self):
                return kind.open(self, out)
        raise BuildError("no article source recognises these options")

    def recorded(self, out: Path) -> PageSource:
        """The source A_r was sampled from, for the facts stage of a resumed build: the one the
        manifest names, which --dump or --wiki-api, if given, must be."""
        from freshrag.core.manifest import read_manifest

        recorded = (read_manifest(out) or {}).get("source")
        given = self.open(out) if self.dump or self.wiki_api else None
        if recorded and given and given.description != recorded:
            raise BuildError(f"{out}: its articles were sampled from {recorded}, not "
                             f"{given.description}; the facts stage reads the same source (give "
                             f"it, or neither option)")
        if recorded and not given:
            for kind in SOURCES.values():
                if kind.reopens(recorded):
                    return kind.reopen(recorded, self, out)
            raise BuildError(f"{out}: no article source reads {recorded}, which its articles "
                             f"were sampled from")
        return given or self.open(out)


class Kind(Protocol):
    """A kind of source, as `SOURCES` lists it."""

    @property
    def name(self) -> str: ...

    def recognises(self, given: Source) -> bool: ...

    def open(self, given: Source, out: Path) -> PageSource: ...

    def reopens(self, recorded: str) -> bool: ...

    def reopen(self, recorded: str, given: Source, out: Path) -> PageSource: ...


NEEDED = ("name", "recognises", "open", "reopens", "reopen")  # what a kind of source has


# name -> kind, each module imported only when asked; the more particular first
SOURCES: Registry[Kind] = Registry("source", "freshrag.sources", {
    "split-dump": "freshrag.builders.sources.split_dump:SPLIT_DUMP",
    "dump": "freshrag.builders.sources.dump:DUMP",
    "mediawiki": "freshrag.builders.sources.mediawiki:MEDIAWIKI",
}, check=attributes_problem(NEEDED, "builders/sources/__init__.py"))
