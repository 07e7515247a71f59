"""MediaWiki XML export files (the format of Special:Export, `importDump.php` and the dumps):
pages with their revisions, written as a wiki would export them. The offline demo feeds the
example corpus to the builder this way, and the tests seed their wiki and dumps with it."""

from __future__ import annotations

import bz2
import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, cast
from xml.sax.saxutils import escape

from freshrag.core.files import atomic_open

EXPORT_NS = "http://www.mediawiki.org/xml/export-0.11/"


@dataclass
class Revision:
    id: int
    timestamp: str  # ISO-8601, "YYYY-MM-DDTHH:MM:SSZ"
    text: str
    parent_id: int | None = None


@dataclass
class DumpPage:
    id: int
    title: str
    revisions: list[Revision] = field(default_factory=list)
    ns: int = 0
    redirect: str | None = None  # target title, for a redirect page


@dataclass
class LogItem:
    """An entry of a wiki's log, as an export file carries it (`<logitem>`): importDump.php
    writes it to the wiki's log, so that `list=logevents` returns it."""

    id: int
    title: str
    timestamp: str  # ISO-8601, "YYYY-MM-DDTHH:MM:SSZ"
    type: str = "create"
    action: str = "create"


def creation_log(pages: Iterable[DumpPage], first_id: int = 1) -> list[LogItem]:
    """The creation log of `pages`: an entry for each at its first revision's timestamp, as a
    wiki writes one when a page is made."""
    return [LogItem(first_id + i, page.title, page.revisions[0].timestamp)
            for i, page in enumerate(pages) if page.revisions]


def _compressed(raw: IO[bytes], suffix: str) -> IO[bytes]:
    """`raw`, written through the compression its file's suffix names (.bz2, .gz), if any."""
    if suffix == ".bz2":
        return bz2.open(raw, "wb")
    if suffix == ".gz":  # a GzipFile writes as any binary file does; typeshed says otherwise
        return cast(IO[bytes], gzip.open(raw, "wb"))
    return raw


def write_dump(path: Path, pages: Iterable[DumpPage], truncate_at: int | None = None,
               log_items: Iterable[LogItem] = ()) -> Path:
    """Write `pages` (then `log_items`) as an export file, compressed by the suffix (.xml,
    .xml.bz2, .xml.gz). `truncate_at` cuts the uncompressed XML after that many bytes, as a
    broken download would."""
    suffix = Path(path).suffix
    # whole or not at all, and a symbolic link at `path` refused (core/files.py)
    with atomic_open(path, "wb") as raw, _compressed(raw, suffix) as out:
        writer = _Truncating(out, truncate_at)
        writer.write(HEADER)
        for page in pages:
            writer.write(page_xml(page))
        for item in log_items:
            writer.write(_log_xml(item))
        writer.write("</mediawiki>\n")
    return path


class _Truncating:
    def __init__(self, out: IO[bytes], limit: int | None):
        self.out, self.left = out, limit

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        if self.left is not None:
            data, self.left = data[: self.left], max(0, self.left - len(data))
        self.out.write(data)


# What opens every export file: the root element and the site's namespaces.
HEADER = f"""<mediawiki xmlns="{EXPORT_NS}" version="0.11" xml:lang="en">
  <siteinfo>
    <sitename>freshrag export</sitename>
    <dbname>freshragtest</dbname>
    <base>http://127.0.0.1/index.php/Main_Page</base>
    <generator>MediaWiki 1.39.0</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="10" case="first-letter">Template</namespace>
    </namespaces>
  </siteinfo>
"""


def _log_xml(item: LogItem) -> str:
    return (f"  <logitem>\n    <id>{item.id}</id>\n    <timestamp>{item.timestamp}</timestamp>\n"
            f"    <contributor>\n      <username>Freshrag test</username>\n      <id>1</id>\n"
            f"    </contributor>\n    <type>{item.type}</type>\n    <action>{item.action}</action>\n"
            f"    <logtitle>{escape(item.title)}</logtitle>\n"
            f'    <params xml:space="preserve" />\n  </logitem>\n')


def page_xml(page: DumpPage) -> str:
    """One `<page>` element with its revisions, as it sits between `HEADER` and `</mediawiki>`
    (a multistream dump compresses runs of these on their own)."""
    parts = [f"  <page>\n    <title>{escape(page.title)}</title>\n    <ns>{page.ns}</ns>\n"
             f"    <id>{page.id}</id>\n"]
    if page.redirect:
        parts.append(f'    <redirect title="{escape(page.redirect, {chr(34): "&quot;"})}" />\n')
    for rev in page.revisions:
        parent = f"      <parentid>{rev.parent_id}</parentid>\n" if rev.parent_id else ""
        size = len(rev.text.encode("utf-8"))
        parts.append(
            f"    <revision>\n      <id>{rev.id}</id>\n{parent}"
            f"      <timestamp>{rev.timestamp}</timestamp>\n"
            f"      <contributor>\n        <username>Freshrag test</username>\n"
            f"        <id>1</id>\n      </contributor>\n"
            f"      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
            f'      <text bytes="{size}" xml:space="preserve">{escape(rev.text)}</text>\n'
            f"    </revision>\n")
    parts.append("  </page>\n")
    return "".join(parts)
