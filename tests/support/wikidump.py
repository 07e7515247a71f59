"""MediaWiki XML export files written by the tests: the input of `importDump.php` (the local
MediaWiki fixture) and of the dump source. Pages come from the paper's released articles, each
with a history: a first revision at its `created` timestamp and a later one with the full text,
so that "creation date = first revision" is tested against a page that was edited since."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterable, Iterator

from freshrag.builders.sources.export import (  # noqa: F401 (the tests' one import)
    DumpPage,
    LogItem,
    Revision,
    creation_log,
    write_dump,
)

# Articles of the random sample have no `created` in the released data (the paper only knows they
# predate its cutoff); the test wiki gives them this stated, older stand-in date.
STAND_IN_CREATED = "2015-01-15T12:00:00Z"


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


def split_dumps(pages: list[DumpPage], directory: Path, files: int) -> tuple[list[Path], list[Path]]:
    """A whole dump as Wikipedia splits it: `files` pages-articles files (each page's current
    revision only, whose parent is an older one: no creation date) and as many stub-meta-history
    files (every revision, no text). Pages are dealt out in id order, as Wikipedia's page ranges."""
    directory.mkdir(parents=True, exist_ok=True)
    size = -(-len(pages) // files)
    articles, stubs = [], []
    for i in range(files):
        part = pages[i * size:(i + 1) * size]
        current = [DumpPage(p.id, p.title, p.revisions[-1:], p.ns, p.redirect) for p in part]
        stub = [DumpPage(p.id, p.title, [Revision(r.id, r.timestamp, "", r.parent_id)
                                         for r in p.revisions], p.ns, p.redirect) for p in part]
        articles.append(write_dump(directory / f"wiki-pages-articles{i + 1}.xml.bz2", current))
        stubs.append(write_dump(directory / f"wiki-stub-meta-history{i + 1}.xml.gz", stub))
    return articles, stubs


# Invented prose for dated pages: each sentence names the page, so that texts differ.
_SENTENCES = ("{title} is a settlement invented for the freshrag tests, founded in {month}.",
              "Its council of {title} meets in a hall built from pale limestone and old oak.",
              "Farmers around {title} grow barley, rye and a bitter kind of winter pear.",
              "A river crosses {title} twice before it runs into a marsh to the north.",
              "The annual fair of {title} draws traders from three neighbouring valleys.")


def dated_pages(created: list[str], first_id: int = 1, prefix: str = "Dated place") -> list[DumpPage]:
    """One invented article per timestamp of `created`, titled `{prefix} {id}`: a first
    revision at that moment with half the text, a second a day later with all of it (more than
    1,000 characters)."""
    pages = []
    for offset, timestamp in enumerate(created):
        page_id = first_id + offset
        title = f"{prefix} {page_id}"
        text = " ".join(sentence.format(title=title, month=timestamp[:7])
                        for sentence in _SENTENCES * 4)
        first = Revision(2 * page_id, timestamp, text[: len(text) // 2])
        full = Revision(2 * page_id + 1, later(timestamp, 1), text, parent_id=first.id)
        pages.append(DumpPage(page_id, title, [first, full]))
    return pages


# --------------------------------------------------------------------------- multistream dumps

def marked_up(page: DumpPage) -> DumpPage:
    """The page with its last revision's text dressed as Wikipedia writes wikitext: an infobox,
    the title in bold, links, references with citation templates, an image, categories."""
    text = page.revisions[-1].text
    words = text.split(" ")
    for i in range(3, len(words), 11):  # every eleventh word a link, some piped
        if words[i].isalpha():
            words[i] = f"[[{words[i]}]]" if i % 2 else f"[[{words[i].title()} (topic)|{words[i]}]]"
    body = " ".join(words).replace(". ", ".<ref>{{cite web|url=https://example.org|title=A "
                                   "source}}</ref> ", 2)
    wikitext = (f"{{{{Infobox place|name={page.title}|area={{{{convert|3|km2}}}}}}}}\n"
                f"'''{page.title}''' {body}\n"
                f"[[File:{page.id}.jpg|thumb|A [[picture]] of it]]\n\n== References ==\n"
                f"{{{{reflist}}}}\n\n[[Category:Places]]\n")
    last = Revision(page.revisions[-1].id, page.revisions[-1].timestamp, wikitext,
                    page.revisions[-1].parent_id)
    return DumpPage(page.id, page.title, [*page.revisions[:-1], last], page.ns, page.redirect)


def write_multistream(directory: Path, pages: Iterable[DumpPage], per_stream: int = 100,
                      name: str = "wiki-20250101-pages-articles-multistream"
                      ) -> tuple[Path, Path]:
    """A multistream dump and its index as Wikipedia writes them: the header in one bz2 stream,
    then `per_stream` pages (their current revision) a stream, then `</mediawiki>`; the index
    (bz2) holds `offset:page_id:title` per page."""
    import bz2

    from freshrag.builders.sources.export import HEADER, page_xml

    directory.mkdir(parents=True, exist_ok=True)
    dump, index = directory / f"{name}.xml.bz2", directory / f"{name}-index.txt.bz2"
    lines: list[str] = []
    with dump.open("wb") as out:
        out.write(bz2.compress(HEADER.encode()))
        batch: list[DumpPage] = []
        for page in [*pages, None]:
            if page is not None:
                batch.append(DumpPage(page.id, page.title, page.revisions[-1:], page.ns,
                                      page.redirect))
            if batch and (page is None or len(batch) == per_stream):
                offset = out.tell()
                lines += [f"{offset}:{p.id}:{p.title}\n" for p in batch]
                out.write(bz2.compress("".join(page_xml(p) for p in batch).encode()))
                batch = []
        out.write(bz2.compress(b"</mediawiki>\n"))
    index.write_bytes(bz2.compress("".join(lines).encode()))
    return dump, index


def write_stub(path: Path, pages: Iterable[DumpPage]) -> Path:
    """A stub-meta-history file: every revision's metadata, no text (`<text ... />`)."""
    stubs = [DumpPage(p.id, p.title, [Revision(r.id, r.timestamp, "", r.parent_id)
                                      for r in p.revisions], p.ns, p.redirect) for p in pages]
    return write_dump(path, stubs)
