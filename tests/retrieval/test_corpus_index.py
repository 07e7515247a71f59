"""The index with a background corpus beside the example set's articles (retrieval/background.py,
docs/retrieval.md#runs-in-a-large-world): a corpus made by `freshrag corpus` from a generated
dump, searched on both engines with the bag-of-words embedder standing in for MiniLM."""

from __future__ import annotations

import json

import pytest

from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.retrieval import index as index_module
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.index import engine_of, index_key, open_index
from freshrag.retrieval.passages import MANIFEST, Corpus, CorpusError
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.world import make_world

EXAMPLE = load_dataset_dir(example_dir())
TWINS = list(EXAMPLE.articles.values())[:3]
PAGES = 150


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world") / "wiki-small",
                      list(EXAMPLE.articles.values()), PAGES, TWINS, processes=1,
                      pages_per_shard=60)


def opened(tmp_path, engine, corpus=None):
    where = tmp_path / engine / (corpus.name if corpus else "alone")  # local mode locks its own
    return open_index(EXAMPLE.articles, IndexConfig(directory=where, engine=engine,
                                                    corpus=corpus),
                      BagOfWordsEmbedder(), progress=False)


def hits(index):
    """Per question with a gold article, whether it is among the top 5, and every title found."""
    found, titles = {}, set()
    for question in EXAMPLE.questions:
        top = [chunk.title for chunk in index.retrieve(question.text)]
        found[question.id] = question.gold_title in top
        titles.update(top)
    return found, titles


def twin_passages(corpus):
    names = {article.title for article in TWINS}
    return sum(title in names for batch in Corpus(corpus).batches() for title in batch.titles)


@pytest.mark.parametrize("engine", ["local", "edge"])
def test_background_passages_are_searched_beside_the_articles(world, tmp_path, engine):
    alone, within = opened(tmp_path, engine), opened(tmp_path, engine, world)
    try:
        (found_alone, _), (found_within, titles) = hits(alone), hits(within)
        record = within.record()
        stored = [point.payload["title"] for point in within.client.points()]
    finally:
        alone.close()
        within.close()
    manifest = json.loads((world / MANIFEST).read_text())
    twins = twin_passages(world)
    own = chunk_articles(EXAMPLE.articles.values(), 1024, 48)
    assert twins >= len(TWINS)  # the dump's copies of three gold articles, left out and counted
    assert record["corpus"] == {"name": "wiki-small", "directory": str(world),
                                "sha256": manifest["content_sha256"],
                                "passages": manifest["counts"]["passages"], "skipped": twins}
    assert record["chunks"] == len(stored) == len(own) + manifest["counts"]["passages"] - twins
    assert any(title.startswith("Background page") for title in titles)
    # the gold titles' only chunks are the dataset's own, so every title metric reads as before
    for article in TWINS:
        assert stored.count(article.title) == sum(c.title == article.title for c in own)
    assert alone.record()["corpus"] is None
    assert {q for q, hit in found_within.items() if hit} <= {q for q, hit in found_alone.items()
                                                            if hit}
    assert sum(found_within.values()) >= len(found_within) // 2  # found where they were, mostly


def test_the_corpus_is_in_the_index_key_and_auto_takes_the_engine_past_its_size(world,
                                                                              monkeypatch):
    config = IndexConfig()
    plain = index_key(EXAMPLE.articles.values(), config, "m")
    sha = Corpus(world).manifest["content_sha256"]
    assert index_key(EXAMPLE.articles.values(), config, "m", sha) not in (plain, index_key(
        EXAMPLE.articles.values(), config, "m", "another"))
    own = engine_of(EXAMPLE.articles.values(), config)
    monkeypatch.setattr(index_module, "EDGE_ABOVE", 200)
    assert own == "local" and engine_of(EXAMPLE.articles.values(), config, 0) == "local"
    assert engine_of(EXAMPLE.articles.values(), config, len(Corpus(world))) == "edge"


def _unfinished(corpus, tmp_path):
    manifest = json.loads((corpus / MANIFEST).read_text())
    copy = tmp_path / "unfinished"
    copy.mkdir()
    (copy / MANIFEST).write_text(json.dumps({**manifest, "complete": False}))
    return copy


@pytest.mark.parametrize("make, message", [
    pytest.param(lambda corpus, tmp_path: tmp_path / "nowhere", "no corpus here", id="missing"),
    pytest.param(_unfinished, "has not finished", id="unfinished"),
])
def test_a_missing_or_unfinished_corpus_is_refused_naming_it(world, tmp_path, make, message):
    directory = make(world, tmp_path)
    with pytest.raises(CorpusError, match=f"{directory}.*{message}"):
        opened(tmp_path, "local", directory)
    assert not (tmp_path / "local").exists()


def test_a_corpus_cut_otherwise_than_the_index_is_refused(world, tmp_path):
    with pytest.raises(CorpusError, match=f"{world}: the corpus's passages are cut at 1024.*"
                                          f"--chunk-size 1024 --chunk-overlap 48"):
        open_index(EXAMPLE.articles, IndexConfig(directory=tmp_path, chunk_size=512,
                                                 corpus=world), BagOfWordsEmbedder(),
                   progress=False)


def test_freshrag_index_builds_the_world_ahead_of_a_run(world, fake, tmp_path, capsys):
    from freshrag.cli.main import main

    assert main(["index", "--articles", str(EXAMPLE.files["articles"]), "--corpus", str(world),
                 "--index-dir", str(tmp_path / "index")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["corpus"]["name"] == "wiki-small" and printed["articles"] == 40
    assert printed["corpus"]["skipped"] == twin_passages(world)


def test_the_twins_are_counted_once_per_index(world, tmp_path, monkeypatch):
    from freshrag.retrieval.background import Background

    first = opened(tmp_path, "edge", world)
    first.close()

    def counted_again(self):
        raise AssertionError("the corpus's titles were read again")

    monkeypatch.setattr(Background, "skipped", counted_again)
    again = opened(tmp_path, "edge", world)
    again.close()
    assert again.record()["corpus"] == first.record()["corpus"]


def test_a_twin_is_known_by_its_title_in_nfc(tmp_path):
    import unicodedata

    from freshrag.core.types import Article
    from freshrag.retrieval.background import open_background

    gold = Article("Café Noir de Sète", "The café stands on the quay of Sète. " * 60)
    decomposed = Article(unicodedata.normalize("NFD", gold.title), gold.content)
    assert decomposed.title != gold.title
    corpus = make_world(tmp_path / "wiki-nfd", list(EXAMPLE.articles.values()), 20,
                        [decomposed], processes=1)
    background = open_background(corpus, [gold], 1024, 48)
    twins = sum(unicodedata.normalize("NFC", title) == gold.title
                for batch in Corpus(corpus).batches() for title in batch.titles)
    assert twins >= 2 and background.skipped() == twins
    assert len(list(background.chunks())) == len(Corpus(corpus)) - twins
