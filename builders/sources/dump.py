"""Pages from a MediaWiki XML dump (`.xml`, `.xml.bz2` or `.xml.gz`), streamed in constant memory.

`mwxml` walks the export file page by page; each page's revisions are read one at a time and only
the earliest's timestamp and the latest's wikitext are kept. The creation date is the earliest
revision's timestamp when that revision has no parent, i.e. when the dump holds the page's whole
history (`pages-meta-history`); in a current-only dump (`pages-articles`) the one revision present
has a parent, the creation date is unknown, and `created` is None. The wikitext becomes plain text
with `mwparserfromhell`, section headings kept as `== Heading ==` like the API source's.

A dump that breaks off (a cut download, a corrupt block), or holds a page mwxml cannot read (a bad
timestamp, id or namespace, no title), stops with a `DumpError` naming the file, the position in
the uncompressed XML and the last complete page, after every complete page before it has been
yielded, so the stage keeps them.
"""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Generator, Iterator, cast
from xml.etree.ElementTree import ParseError

import mwparserfromhell
import mwxml
from mwparserfromhell.nodes import Heading, Tag, Wikilink
from mwxml.element_iterator import ElementIterator

from freshrag.builders.sources.links import Link, dump_links, pages_titled
from freshrag.builders.sources.pages import DISAMBIGUATION, NO_CONTENT, REDIRECT, Page
from freshrag.core.errors import UserError
from freshrag.core.titles import title_form

if TYPE_CHECKING:
    from freshrag.builders.sources import Source

SUFFIXES = (".xml", ".xml.bz2", ".xml.gz")
# Link namespaces whose links are not prose: images and categories carry no sentence.
NON_PROSE_LINKS = ("file:", "image:", "media:", "category:")
NON_PROSE_TAGS = ("ref", "references", "gallery", "math", "score", "timeline")
DISAMBIGUATION_TEMPLATES = {"disambiguation", "disambig", "dab", "hndis", "geodis"}


class DumpError(UserError, RuntimeError):
    """The dump cannot be read (any further); the message names the file and where it broke."""


class DumpSource:
    random_order = False  # dump order is page-id order, not a sample: the stage samples it

    def __init__(self, path: Path):
        self.path = Path(path)
        self.description = str(self.path)
        if not self.path.is_file():
            raise DumpError(f"{self.path}: no such dump file")
        if not self.path.name.endswith(SUFFIXES):
            raise DumpError(f"{self.path}: expected a MediaWiki XML dump ending in "
                            f"{', '.join(SUFFIXES)}")

    def pages(self, seen: set[str]) -> Generator[Page, None, None]:
        """Main-namespace pages not in `seen`, in dump order; then a DumpError if it broke."""
        with _open(self.path) as raw:
            stream = _CountingReader(raw)
            last_title = None
            try:
                root = ElementIterator.from_file(stream)
                if root.tag != "mediawiki":
                    raise DumpError(f"{self.path}: not a MediaWiki export (root element "
                                    f"<{root.tag}>, expected <mediawiki>)")
                dump = mwxml.Dump.from_element(root)
                base = dump.site_info.base
                for page in dump:
                    if not isinstance(page.title, str) or not page.title:
                        raise ValueError("a <page> without a <title>")
                    if page.namespace != 0 or title_form(page.title) in seen:
                        _skip(page)
                    else:
                        yield _page(page, base)
                    last_title = page.title
                    # mwxml empties each page's element but the root keeps them all: drop them,
                    # or memory grows with the dump (~90 bytes a page, gigabytes for Wikipedia)
                    root.element.clear()
            except (ParseError, mwxml.errors.MalformedXML, AssertionError, EOFError,
                    OSError) as err:
                raise DumpError(self._broken_at(err, stream.offset, last_title)) from None
            except (ValueError, TypeError, AttributeError, KeyError) as err:
                # well-formed XML with a value mwxml cannot read: a timestamp, an id, a namespace
                raise DumpError(self._broken_at(err, stream.offset, last_title,
                                                "malformed page")) from None

    def wikitexts(self, articles: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        """(title, wikitext) of the given articles' latest revisions: the dump read again, up to
        the last of them (the facts stage, builders/styles/facts.py). Titles compare in NFC: the
        first page of a title is the one A_r kept, a later twin was dropped."""
        wanted = {title_form(row["title"]) for row in articles}
        for page in self.pages(set()):
            title = title_form(page.title)
            if title in wanted and page.wikitext is not None:
                wanted.discard(title)
                yield title, page.wikitext
                if not wanted:
                    return

    def links(self, titles: list[str]) -> dict[str, list[Link]]:
        """What each of `titles` links to: the dump read again, its wikitext parsed and its
        redirect pages followed (builders/sources/links.py)."""
        return dump_links(self.pages(set()), titles)

    def fetch_titles(self, titles: list[str]) -> Iterator[Page]:
        """The pages `titles` name, in dump order: the dump read again up to the last of them."""
        return pages_titled(self.pages(set()), titles)

    def _broken_at(self, err: Exception, offset: int, last_title: str | None,
                   what: str = "dump broken") -> str:
        where = f"after {offset:,} bytes of uncompressed XML"
        position = getattr(err, "position", None)
        if position:
            where = f"at line {position[0]}, column {position[1]} ({where})"
        after = (f"the last complete page was {last_title!r}; pages up to it are kept"
                 if last_title else "before its first complete page")
        reason = str(err).split("\n")[0][:200] or "malformed export XML"  # mwxml's asserts
        if isinstance(err, (AttributeError, TypeError)) and "NoneType" in reason:
            reason = f"a required element of a <page> or <revision> is missing or empty ({reason})"
        return f"{self.path}: {what} {where}; {after} ({type(err).__name__}: {reason})"


def _page(page: Any, base: str | None) -> Page:
    """The first and last revisions of a page, read one revision at a time."""
    first = last = None
    for revision in page:
        if first is None:
            first = (revision.timestamp, revision.parent_id)
        last = revision
    url = _page_url(base, title_form(page.title))  # the address of the NFC title A_r keeps
    if last is None or first is None:
        return Page(page.title, "", None, None, url, discard=NO_CONTENT)
    timestamp, parent = first
    created = timestamp.long_format() if timestamp is not None and parent is None else None
    if page.redirect or (last.text or "").lstrip().upper().startswith("#REDIRECT"):
        # its wikitext names the target, which resolves links to it (builders/sources/links.py)
        return Page(page.title, "", created, last.id, url, discard=REDIRECT, wikitext=last.text)
    wikicode = mwparserfromhell.parse(last.text or "")
    if _is_disambiguation(wikicode):
        return Page(page.title, "", created, last.id, url, discard=DISAMBIGUATION)
    text = plain_text(wikicode)
    return Page(page.title, text, created, last.id, url, discard=None if text else NO_CONTENT,
                wikitext=last.text)


def plain_text(wikicode: Any) -> str:
    """Prose of parsed wikitext: markup, references, templates, images and categories removed,
    headings written `== Heading ==`, runs of blank lines collapsed to one."""
    parts = []
    for node in wikicode.nodes:
        if isinstance(node, Heading):
            marks = "=" * node.level
            parts.append(f"{marks} {node.title.strip_code().strip()} {marks}")
        elif isinstance(node, Wikilink) and str(node.title).strip().lower().startswith(
                NON_PROSE_LINKS):
            continue
        elif isinstance(node, Tag) and str(node.tag).strip().lower() in NON_PROSE_TAGS:
            continue
        else:
            stripped = node.__strip__(normalize=True, collapse=True, keep_template_params=False)
            if stripped:
                parts.append(str(stripped))
    text = "".join(parts)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return "\n".join(line.rstrip() for line in text.strip().split("\n"))


def _is_disambiguation(wikicode: Any) -> bool:
    return any(str(template.name).strip().lower() in DISAMBIGUATION_TEMPLATES
               for template in wikicode.filter_templates(recursive=False))


def _skip(page: Any) -> None:
    """Read past a page's revisions without keeping them."""
    for _ in page:
        pass


def _page_url(base: str | None, title: str) -> str | None:
    """The page's address from siteinfo's `<base>` (the main page's URL)."""
    if not base:
        return None
    slug = title.replace(" ", "_")
    if "/wiki/" in base:
        return base[: base.index("/wiki/") + len("/wiki/")] + slug
    if "index.php/" in base:
        return base[: base.index("index.php/") + len("index.php/")] + slug
    return None


def _open(path: Path) -> IO[bytes]:
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    if path.suffix == ".gz":  # a GzipFile reads as any binary file does; typeshed says otherwise
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")


class _CountingReader:
    """A binary stream that counts the (uncompressed) bytes read through it."""

    def __init__(self, raw: IO[bytes]):
        self.raw, self.offset = raw, 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.offset += len(data)
        return data


def expand(patterns: list[str]) -> list[Path]:
    """Dump files named by paths or globs (quoted, so the shell leaves them to us), in natural
    order (`articles2` before `articles10`), each once; a glob matching nothing is an error."""
    import glob
    import re

    def natural(path: str) -> list[Any]:
        return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]

    found: list[str] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern), key=natural)
            if not matches:
                raise DumpError(f"{pattern}: no dump file matches this pattern")
            found += matches
        else:
            found.append(pattern)
    return [Path(p) for p in dict.fromkeys(found)]


class DumpFile:
    """One MediaWiki XML dump file (`--dump FILE`), read in this process."""

    name = "dump"

    def recognises(self, given: Source) -> bool:
        return bool(given.dump)

    def open(self, given: Source, out: Path) -> DumpSource:
        return DumpSource(expand(list(given.dump))[0])

    def reopens(self, recorded: str) -> bool:
        return recorded.endswith(SUFFIXES)

    def reopen(self, recorded: str, given: Source, out: Path) -> DumpSource:
        return DumpSource(Path(recorded))


DUMP = DumpFile()
