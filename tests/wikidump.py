"""MediaWiki XML export files written by the tests: the input of `importDump.php` (the local
MediaWiki fixture) and of the dump source. Pages come from the paper's released articles, each
with a history: a first revision at its `created` timestamp and a later one with the full text,
so that "creation date = first revision" is tested against a page that was edited since."""

from __future__ import annotations

import bz2
import gzip
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Iterable, Iterator
from xml.sax.saxutils import escape

# Articles of the random sample have no `created` in the released data (the paper only knows they
# predate its cutoff); the test wiki gives them this stated, older stand-in date.
STAND_IN_CREATED = "2015-01-15T12:00:00Z"
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


def later(timestamp: str, days: int) -> str:
    moment = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ") + timedelta(days=days)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def article_pages(articles_jsonl: Path, limit: int | None = None,
                  first_id: int = 1) -> Iterator[DumpPage]:
    """One page per released article: revision 1 at `created` (or the stand-in) with the first
    half of the text, revision 2 thirty days later with all of it."""
    with articles_jsonl.open(encoding="utf-8") as lines:
        for offset, line in enumerate(lines):
            if limit is not None and offset >= limit:
                return
            row = json.loads(line)
            page_id = first_id + offset
            created = (row["created"] or STAND_IN_CREATED).replace("+00:00", "Z")
            content = row["content"]
            first = Revision(2 * page_id, created, content[: len(content) // 2])
            full = Revision(2 * page_id + 1, later(created, 30), content, parent_id=first.id)
            yield DumpPage(page_id, row["title"], [first, full])


def redirect_page(page_id: int, title: str, target: str, timestamp: str) -> DumpPage:
    return DumpPage(page_id, title, [Revision(2 * page_id, timestamp, f"#REDIRECT [[{target}]]")],
                    redirect=target)


def disambiguation_page(page_id: int, title: str, targets: Iterable[str],
                        timestamp: str) -> DumpPage:
    """A disambiguation page as Wikipedia writes one: a line of introduction, a list of links,
    and `{{Disambiguation}}` (the template that marks it on a wiki without the Disambiguator
    extension)."""
    links = "\n".join(f"* [[{target}]]" for target in targets)
    text = f"'''{title}''' may refer to:\n{links}\n\n{{{{Disambiguation}}}}"
    return DumpPage(page_id, title, [Revision(2 * page_id, timestamp, text)])


def disambiguation_template(page_id: int, timestamp: str) -> DumpPage:
    """`Template:Disambiguation` (namespace 10), so that the template of the disambiguation
    pages exists, as on Wikipedia."""
    text = "''This disambiguation page lists articles associated with the same title.''"
    return DumpPage(page_id, "Template:Disambiguation", [Revision(2 * page_id, timestamp, text)],
                    ns=10)


def write_dump(path: Path, pages: Iterable[DumpPage], truncate_at: int | None = None) -> Path:
    """Write `pages` as an export file, compressed by the suffix (.xml, .xml.bz2, .xml.gz).
    `truncate_at` cuts the uncompressed XML after that many bytes, as a broken download would."""
    opener = {".bz2": bz2.open, ".gz": gzip.open}.get(path.suffix, open)
    with opener(path, "wb") as out:
        writer = _Truncating(out, truncate_at)
        writer.write(_HEADER)
        for page in pages:
            writer.write(_page_xml(page))
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


_HEADER = f"""<mediawiki xmlns="{EXPORT_NS}" version="0.11" xml:lang="en">
  <siteinfo>
    <sitename>freshrag test wiki</sitename>
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


def _page_xml(page: DumpPage) -> str:
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
