"""The index with a background corpus beside the example set's articles (retrieval/background.py,
docs/retrieval.md#runs-in-a-large-world): a corpus made by `freshrag corpus` from a generated
dump, searched on both engines with the bag-of-words embedder standing in for MiniLM."""

from __future__ import annotations

import json

import pytest

from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.retrieval import index as index_module
from freshrag.retrieval import lexical, store
from freshrag.retrieval.background import open_background
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.config import IndexConfig, RetrievalError
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


def opened(tmp_path, engine, corpus=None, embedder=None, **config):
    where = tmp_path / engine / (corpus.name if corpus else "alone")  # local mode locks its own
    return open_index(EXAMPLE.articles, IndexConfig(directory=where, engine=engine,
                                                    corpus=corpus, **config),
                      embedder or BagOfWordsEmbedder(), progress=False)


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


class Recording(BagOfWordsEmbedder):
    """The bag-of-words embedder, keeping every text it embeds."""

    def __init__(self, **options):
        super().__init__(**options)
        self.seen = []

    def embed(self, texts):
        vectors = super().embed(texts)
        self.seen.extend(texts)
        return vectors


@pytest.fixture(scope="module")
def listed(world, tmp_path_factory):
    """The content hash of the world's index as it was built from one list of every chunk (the
    dataset's, then the corpus's less the twins), BM25's mean length over that list, each point
    written through qdrant-client: what a server or local mode held before the chunks streamed."""
    from qdrant_client import QdrantClient

    chunks = [*chunk_articles(EXAMPLE.articles.values(), 1024, 48),
              *open_background(world, EXAMPLE.articles.values(), 1024, 48).chunks()]
    _, average = lexical.measure(chunk.text for chunk in chunks)
    vectors = BagOfWordsEmbedder().embed([chunk.text for chunk in chunks])
    directory = tmp_path_factory.mktemp("listed")
    client = QdrantClient(path=str(directory))
    try:
        store.create_collection(client, "listed", len(vectors[0]))
        client.upsert("listed", points=[store.point_struct(store.StoredPoint(
            i, vector, lexical.document_vector(chunk.text, average),
            {"title": chunk.title, "chunk": chunk.index, "text": chunk.text}))
            for i, (chunk, vector) in enumerate(zip(chunks, vectors))])
        return len(chunks), store.content_hash(store.ClientCollection(
            client, "listed", IndexConfig(directory=directory)).points())
    finally:
        client.close()


@pytest.mark.parametrize("engine", ["local", "edge"])
def test_the_streamed_build_has_the_list_builds_points(world, listed, tmp_path, engine):
    index = opened(tmp_path, engine, world, batch_size=8)
    try:
        assert (index.chunks, store.content_hash(index.client.points())) == listed
    finally:
        index.close()


def test_a_complete_collection_opens_without_reading_the_corpus_or_embedding(world, tmp_path,
                                                                           monkeypatch):
    """Local mode, through qdrant-client as a server is spoken to: the collection is counted
    against the chunks the articles and the corpus's manifest say, not against the chunks."""
    from freshrag.retrieval.background import Background

    opened(tmp_path, "local", world).close()
    read = []
    monkeypatch.setattr(Background, "chunks", lambda self: read.append("chunks") or iter(()))
    monkeypatch.setattr(Corpus, "batches", lambda self, *a, **k: read.append("batches") or
                        iter(()))
    embedder = BagOfWordsEmbedder()
    index = opened(tmp_path, "local", world, embedder)
    try:
        assert read == [] and embedder.texts == 0
        skipped = index.record()["corpus"]["skipped"]
        assert index.chunks == index.client.count() == len(chunk_articles(
            EXAMPLE.articles.values(), 1024, 48)) + len(Corpus(world)) - skipped
    finally:
        index.close()


def test_opening_a_complete_collection_holds_none_of_the_corpuss_text(world, tmp_path,
                                                                      monkeypatch):
    """What the run's side holds while it opens a built index of the twins' three articles in
    the world: qdrant-client is connected before memory is traced (local mode loads every point
    there, the store's memory, as a server's process would; a server's client holds nothing),
    so the peak is what the open itself holds: far less than the corpus's text, which one list
    of its chunks would hold whole."""
    import tracemalloc

    articles = {article.title: article for article in TWINS}
    config = IndexConfig(directory=tmp_path / "twins", engine="local", corpus=world)
    open_index(articles, config, BagOfWordsEmbedder(), progress=False).close()
    client = store.connect(config)
    monkeypatch.setattr(store, "connect", lambda config: client)
    text = open_background(world, articles.values(), 1024, 48).text_bytes()
    tracemalloc.start()
    try:
        index = open_index(articles, config, BagOfWordsEmbedder(), progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    index.close()
    assert index.chunks > len(Corpus(world)) - 10 and peak < text / 4, (peak, text)


def test_a_build_stopped_midway_embeds_only_the_ids_the_collection_lacks(world, listed,
                                                                        tmp_path):
    from qdrant_client import QdrantClient

    with pytest.raises(KeyboardInterrupt):
        opened(tmp_path, "local", world, BagOfWordsEmbedder(fail_after=3), batch_size=8)
    [folder] = (tmp_path / "local").iterdir()
    client = QdrantClient(path=str(folder))
    try:
        [collection] = [c.name for c in client.get_collections().collections]
        held = {int(point.id) for point in client.scroll(collection, limit=10_000)[0]}
    finally:
        client.close()
    total, _ = listed
    assert len(held) == 3 * 8 and max(held) > 3 * 8  # batches sorted by length: ids scattered
    chunks = [*chunk_articles(EXAMPLE.articles.values(), 1024, 48),
              *open_background(world, EXAMPLE.articles.values(), 1024, 48).chunks()]
    resumed = Recording()
    index = opened(tmp_path, "local", world, resumed, batch_size=8)
    try:
        assert sorted(resumed.seen) == sorted(chunks[i].text for i in range(total)
                                              if i not in held)
        assert (index.chunks, store.content_hash(index.client.points())) == listed
    finally:
        index.close()


def test_a_count_the_chunks_do_not_match_is_refused_before_anything_is_written(world,
                                                                              tmp_path):
    first = opened(tmp_path, "edge", world)  # keeps the twins' count beside the index
    first.close()
    [kept] = (tmp_path / "edge" / world.name / "corpora").glob("*.json")
    counted = json.loads(kept.read_text())
    local = tmp_path / "local" / world.name / "corpora"
    local.mkdir(parents=True)
    (local / kept.name).write_text(json.dumps({**counted, "skipped": counted["skipped"] + 1}))
    embedder = BagOfWordsEmbedder()
    with pytest.raises(RetrievalError, match=f"should hold {first.chunks - 1:,} chunks.* "
                                             f"give {first.chunks:,}"):
        opened(tmp_path, "local", world, embedder)
    assert embedder.texts == 0
