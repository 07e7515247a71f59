"""`freshrag corpus` on generated multistream dumps, split files and stub files: the shards, a
resumed build, the date filter, the bad inputs, and passages equal to the index's chunks."""

from __future__ import annotations

import bz2
from pathlib import Path

import pytest

from freshrag.builders.corpus.build import CorpusSource, build_corpus
from freshrag.builders.corpus.shards import Rules
from freshrag.builders.corpus.wikitext import passage_text
from freshrag.core.types import Article
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.passages import Corpus, CorpusError, shard_path
from freshrag.workflows.corpus import make_corpus
from tests.support.wikidump import dated_pages, marked_up, write_multistream, write_stub

CREATED = [f"{2010 + i % 15}-0{1 + i % 9}-15T12:00:00Z" for i in range(250)]


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dump")
    pages = [marked_up(page) for page in dated_pages(CREATED)]
    dump, index = write_multistream(directory, pages, per_stream=50)
    return pages, dump, index, write_stub(directory / "stub-meta-history1.xml.gz", pages)


def passages(out: Path) -> list[tuple]:
    return [row for batch in Corpus(out, verify=True).batches(64)
            for row in zip(batch.ids, batch.titles, batch.chunks, batch.texts, batch.created)]


def test_passages_are_the_index_chunks_of_each_article_text(dump, tmp_path):
    pages, path, index, _ = dump
    manifest = make_corpus(tmp_path, [str(path)], index, processes=2, pages_per_shard=100)
    got = passages(tmp_path)
    expected = [(page.id * 100_000 + chunk.index, page.title, chunk.index, chunk.text)
                for page in pages
                for chunk in chunk_articles([Article(page.title,
                                                     passage_text(page.revisions[-1].text))],
                                            1024, 48)]
    assert [row[:4] for row in got] == expected
    assert manifest["counts"]["shards"] == 5 and manifest["counts"]["pages"] == 250
    assert manifest["source"]["dump_date"] == "20250101"
    assert manifest["chunker"]["chunk_size"] == 1024 and manifest["complete"]


def test_a_resumed_build_rewrites_only_the_lost_shard(dump, tmp_path):
    _, path, index, _ = dump
    first = make_corpus(tmp_path, [str(path)], index, pages_per_shard=100)
    lost = shard_path(tmp_path, "shard-00001")
    lost.unlink()
    kept = shard_path(tmp_path, "shard-00000").stat().st_mtime_ns
    lines: list[str] = []
    second = make_corpus(tmp_path, [str(path)], index, pages_per_shard=100,
                         progress=lines.append)
    assert second["content_sha256"] == first["content_sha256"] and lost.exists()
    assert shard_path(tmp_path, "shard-00000").stat().st_mtime_ns == kept
    assert any(line.startswith("shard-00001: 50 pages") for line in lines)


def test_reading_refuses_a_missing_shard_or_one_written_twice(dump, tmp_path):
    _, path, index, _ = dump
    make_corpus(tmp_path, [str(path)], index, pages_per_shard=100)
    stray = shard_path(tmp_path, "shard-00009")
    stray.write_bytes(shard_path(tmp_path, "shard-00000").read_bytes())
    with pytest.raises(CorpusError, match="shard-00009.parquet is not in manifest.json"):
        Corpus(tmp_path)
    stray.unlink()
    shard_path(tmp_path, "shard-00002").unlink()
    with pytest.raises(CorpusError, match="shard shard-00002 is missing"):
        Corpus(tmp_path)


def test_the_date_filter_keeps_the_window_with_stub_dates(dump, tmp_path):
    pages, path, index, stub = dump
    manifest = make_corpus(tmp_path, [str(path)], index, stub_dumps=[str(stub)],
                           created_after="2015-12-31", created_before="2020-01-01")
    kept = {row[1]: row[4] for row in passages(tmp_path)}
    expected = {p.title: p.revisions[0].timestamp for p in pages
                if "2016" <= p.revisions[0].timestamp[:4] <= "2019"}
    assert kept == expected
    assert manifest["counts"]["dropped"]["outside_dates"] == len(pages) - len(expected)


def test_split_files_give_the_same_passages(dump, tmp_path):
    pages, path, index, _ = dump
    make_corpus(tmp_path / "multi", [str(path)], index)
    make_corpus(tmp_path / "split", [str(path)])  # one file read whole, as a split file
    assert passages(tmp_path / "multi") == passages(tmp_path / "split")


def test_other_settings_are_refused_on_resume(dump, tmp_path):
    _, path, index, _ = dump
    make_corpus(tmp_path, [str(path)], index)
    with pytest.raises(CorpusError, match="built with other rules, chunker"):
        make_corpus(tmp_path, [str(path)], index, chunk_size=512)


def _truncated(path: Path, out: Path) -> Path:
    data = path.read_bytes()
    out.write_bytes(data[: len(data) * 2 // 3])
    return out


def _single_stream(path: Path, out: Path) -> Path:
    out.write_bytes(bz2.compress(bz2.decompress(path.read_bytes())))
    return out


def _renamed_title(index: Path, out: Path) -> Path:
    lines = bz2.decompress(index.read_bytes()).decode().splitlines(keepends=True)
    lines[120] = lines[120].replace("Dated place", "Other place")
    out.write_bytes(bz2.compress("".join(lines).encode()))
    return out


def _shifted_offset(index: Path, out: Path) -> Path:
    text = bz2.decompress(index.read_bytes()).decode()
    lines = text.splitlines(keepends=True)
    offset = lines[60].split(":")[0]
    out.write_bytes(bz2.compress(text.replace(f"{offset}:", f"{int(offset) + 7}:").encode()))
    return out


@pytest.mark.parametrize("damage, which, message", [
    pytest.param(_truncated, "dump", r"\.xml\.bz2: truncated", id="truncated"),
    pytest.param(_single_stream, "dump", r"not a multistream dump", id="not-multistream"),
    pytest.param(_renamed_title, "index", r"index\.txt\.bz2:121: the index names \(121, "
                 r"'Other place 121'\) but the stream at offset", id="title-differs"),
    pytest.param(_shifted_offset, "index", r"index\.txt\.bz2:51: offset [\d,]+ of .* is not the "
                 r"start of a bz2 stream", id="offset-at-no-stream"),
])
def test_bad_input_ends_in_one_message_naming_the_file(dump, tmp_path, damage, which, message):
    _, path, index, _ = dump
    if which == "dump":
        path = damage(path, tmp_path / "bad-pages-articles-multistream.xml.bz2")
    else:
        index = damage(index, tmp_path / "bad-multistream-index.txt.bz2")
    with pytest.raises(CorpusError, match=message):
        make_corpus(tmp_path / "out", [str(path)], index)


def test_pages_fetched_from_a_wiki_are_chunked_the_same(tmp_path):
    from freshrag.builders.sources.pages import Page

    class Wiki:
        def page_ids(self, titles):
            return {title: 7 + i for i, title in enumerate(titles) if title != "Gone"}

        def fetch_titles(self, titles):
            for title in titles:
                yield Page(title, f"{title} is a place. " * 80, "2024-02-01T00:00:00Z", 1)

    manifest = build_corpus(tmp_path, CorpusSource(titles=("A", "Gone", "B")),
                            Rules(created_after="2024-01-01T00:00:00Z"), 1,
                            lambda titles: __import__(
                                "freshrag.builders.corpus.wiki", fromlist=["x"]
                            ).wiki_pages(Wiki(), titles))
    rows = passages(tmp_path)
    assert {row[1] for row in rows} == {"A", "B"} and manifest["counts"]["pages"] == 2
    assert rows[0][3] == chunk_articles([Article("A", "A is a place. " * 80)], 1024, 48)[0].text


def test_the_stub_scan_reads_a_long_history_and_refuses_a_cut_file(tmp_path):
    from freshrag.builders.corpus.created import scan_stub, to_timestamp
    from freshrag.builders.sources.export import DumpPage, Revision
    from tests.support.wikidump import later

    long = DumpPage(5, "Long", [Revision(100 + k, later("2011-01-01T00:00:00Z", k), "",
                                         99 + k if k else None) for k in range(30_000)])
    pages = [*dated_pages(["2010-05-05T00:00:00Z"]), long,
             *dated_pages(["2020-02-02T00:00:00Z"], first_id=9)]
    ids, seconds = scan_stub(str(write_stub(tmp_path / "stub.xml.gz", pages)))
    assert list(ids) == [1, 5, 9]
    assert [to_timestamp(s) for s in seconds] == ["2010-05-05T00:00:00Z", "2011-01-01T00:00:00Z",
                                                  "2020-02-02T00:00:00Z"]
    cut = tmp_path / "cut.xml"
    cut.write_bytes(__import__("gzip").decompress((tmp_path / "stub.xml.gz").read_bytes())[:-900])
    with pytest.raises(CorpusError, match=r"cut\.xml: the stub file breaks off"):
        scan_stub(str(cut))
