"""The corpus workflow as a library service (docs/corpus.md): the options of `freshrag corpus`
checked and turned into a source and rules, then builders/corpus/build.py writes the shards.
`freshrag corpus` parses its options and calls `make_corpus`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from freshrag.builders.corpus.build import CorpusSource, build_corpus
from freshrag.builders.corpus.shards import Rules
from freshrag.builders.sources.dump import expand
from freshrag.core.textfile import read_text
from freshrag.retrieval.passages import CorpusError

STREAM_PAGES = 100  # pages in a stream of a Wikipedia multistream dump


def make_corpus(out: Path, dumps: Sequence[str] = (), index: Path | None = None,
                titles: Path | None = None, wiki_api: str | None = None,
                user_agent: str | None = None, stub_dumps: Sequence[str] = (),
                created_after: str | None = None, created_before: str | None = None,
                min_chars: int = 1, chunk_size: int = 1024, chunk_overlap: int = 48,
                processes: int = 2, pages_per_shard: int = 10_000,
                progress: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """The corpus written into `out` (resumed when it is there); its manifest. Dates are
    `YYYY-MM-DD`: `created_after` keeps pages created after that day, `created_before` those
    created before it."""
    paths = expand(list(dumps)) if dumps else []
    if bool(paths) == bool(titles):
        raise CorpusError("give the pages of the corpus: --dump FILE... (with --index for a "
                          "multistream dump), or --titles FILE with a wiki")
    if index and (len(paths) != 1 or not paths[0].name.endswith(".bz2")):
        raise CorpusError(f"--index {index}: goes with one multistream dump (.xml.bz2)")
    for path in [*paths, *([index] if index else []), *expand(list(stub_dumps))]:
        if not path.is_file():
            raise CorpusError(f"{path}: no such file")
    if (created_after or created_before) and not (stub_dumps or titles):
        raise CorpusError("--created-after/--created-before need creation dates: give "
                          "--stub-dump FILE... (a dump's stub-meta-history files)")
    if created_after and created_before and created_after >= created_before:
        raise CorpusError(f"--created-after {created_after} is not before --created-before "
                          f"{created_before}: no page would be kept")
    rules = Rules(chunk_size, chunk_overlap, min_chars,
                  f"{created_after}T23:59:59Z" if created_after else None,
                  f"{created_before}T00:00:00Z" if created_before else None)
    source = CorpusSource(tuple(paths), index, stubs=tuple(expand(list(stub_dumps))),
                          streams_per_shard=max(1, pages_per_shard // STREAM_PAGES))
    pages_of = None
    if titles:
        from freshrag.builders.corpus.wiki import wiki_pages
        from freshrag.builders.sources.mediawiki import (
            DEFAULT_USER_AGENT,
            WIKIPEDIA_API,
            MediaWikiSource,
        )

        wiki = MediaWikiSource(wiki_api or WIKIPEDIA_API, user_agent or DEFAULT_USER_AGENT)
        source = CorpusSource(titles=tuple(_titles(titles)), wiki=wiki.api_url,
                              titles_per_shard=pages_per_shard)

        def pages_of(batch: list[str]) -> list[Any]:
            return wiki_pages(wiki, batch)

    out.mkdir(parents=True, exist_ok=True)
    return build_corpus(out, source, rules, processes, pages_of, progress)


def _titles(path: Path) -> list[str]:
    """A title a line; blank lines and repeats left out."""
    lines = [line.strip() for line in read_text(path, CorpusError).splitlines()]
    titles = list(dict.fromkeys(line for line in lines if line))
    if not titles:
        raise CorpusError(f"{path}: no title in it (one title a line)")
    return titles
