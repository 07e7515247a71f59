"""A run in a large world (docs/retrieval.md#runs-in-a-large-world): the example set answered by
naive RAG with and without a background corpus made by `freshrag corpus`, against the fake
OpenAI-compatible server (its bag-of-words embeddings), through the library and the command."""

from __future__ import annotations

import re

import pytest

import freshrag
from freshrag.cli.main import main
from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.core.errors import UserError
from freshrag.core.manifest import read_manifest
from freshrag.core.samples import SAMPLES, read_samples
from freshrag.reporting.identity import retriever_model
from freshrag.retrieval.passages import Corpus
from tests.support.world import make_world

EXAMPLE = load_dataset_dir(example_dir())
TWINS = list(EXAMPLE.articles.values())[:2]


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    """Two corpora of other content: 120 background pages and the dump's copies of two gold
    articles, and 60 pages without them."""
    root = tmp_path_factory.mktemp("worlds")
    articles = list(EXAMPLE.articles.values())
    return (make_world(root / "wiki-a", articles, 120, TWINS, processes=1),
            make_world(root / "wiki-b", articles, 60, processes=1))


@pytest.fixture
def world(fake, tmp_path, monkeypatch):
    def no_local_server(*args, **kwargs):
        raise AssertionError("the embedded llama.cpp server was started")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("freshrag.run.service.LocalServer", no_local_server)
    return fake


def whole_rows(result):
    """The run's rows as samples.jsonl holds them, steps whole (a result's are summaries)."""
    return read_samples(result.out / SAMPLES)


def found_titles(result):
    return {chunk["title"] for row in whole_rows(result) for step in row.get("steps") or []
            for chunk in step.get("retrieved") or []}


def gold_hits(result):
    return {row["question_id"] for row in whole_rows(result) for step in row.get("steps") or []
            if row["gold_title"] in {c["title"] for c in step.get("retrieved") or []}}


def test_a_run_searches_the_background_beside_the_articles(world, worlds, tmp_path):
    corpus = worlds[0]
    alone = freshrag.evaluate(None, systems="naive", out=tmp_path / "alone", limit=20)
    within = freshrag.evaluate(None, systems="naive", out=tmp_path / "within", limit=20,
                               corpus=corpus)
    record = read_manifest(tmp_path / "within")["index"]
    assert read_manifest(tmp_path / "alone")["index"]["corpus"] is None
    assert record["corpus"]["name"] == "wiki-a" and record["corpus"]["skipped"] >= len(TWINS)
    assert record["corpus"]["sha256"] == Corpus(corpus).manifest["content_sha256"]
    assert record["corpus"]["passages"] == len(Corpus(corpus))
    assert any(title.startswith("Background page") for title in found_titles(within))
    assert not any(title.startswith("Background page") for title in found_titles(alone))
    assert gold_hits(within) <= gold_hits(alone) and gold_hits(within)  # found where they were
    # the report tells the two worlds apart, naming the corpus and its size
    assert retriever_model(record).endswith(
        f" + corpus wiki-a ({len(Corpus(corpus)):,} passages, sha256 "
        f"{record['corpus']['sha256'][:12]})")


def test_a_resume_against_another_corpus_or_none_is_refused_naming_it(world, worlds, tmp_path):
    first, other = worlds
    freshrag.evaluate(None, systems="naive", out=tmp_path / "run", limit=2, corpus=first)
    asked = world.calls
    with pytest.raises(UserError, match=f"corpus: was {first} .*now {other} .*resume with "
                                        f"--corpus {first}"):
        freshrag.evaluate(None, systems="naive", out=tmp_path / "run", limit=2, corpus=other)
    with pytest.raises(UserError, match=r"corpus: was .*now \(none\)"):
        freshrag.evaluate(None, systems="naive", out=tmp_path / "run", limit=2)
    assert world.calls == asked


def test_the_command_refuses_a_missing_corpus_naming_it_before_any_call(world, tmp_path,
                                                                        capsys):
    missing = tmp_path / "no-corpus"
    assert main(["run", "--systems", "naive", "--limit", "1", "--out", str(tmp_path / "run"),
                 "--corpus", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: no corpus here" in err and "Traceback" not in err
    assert world.calls == 0 and not (tmp_path / "run").exists()


def test_a_corpus_for_systems_that_do_not_retrieve_is_refused(world, worlds, tmp_path):
    with pytest.raises(UserError, match="--corpus .*none of the systems \\(baseline, oracle\\)"):
        freshrag.evaluate(None, systems="baseline,oracle", out=tmp_path / "run",
                          corpus=worlds[0])
    assert world.calls == 0 and not (tmp_path / "run").exists()


def test_a_resume_on_another_engine_is_refused_and_one_recorded_without_it_resumes(world,
                                                                                   tmp_path):
    from freshrag.core.files import write_json
    from freshrag.core.manifest import MANIFEST
    from freshrag.retrieval.config import IndexConfig

    def on(engine, limit):
        return freshrag.evaluate(None, systems="naive", out=tmp_path / "run", limit=limit,
                                 index=IndexConfig(directory=tmp_path / engine, engine=engine))

    on("local", 2)
    assert read_manifest(tmp_path / "run")["index"]["engine"] == "qdrant-local"
    asked = world.calls
    with pytest.raises(UserError, match=r"engine: was qdrant-local, now qdrant-edge \(resume "
                                        r"with --engine local\)"):
        on("edge", 3)  # HNSW and local mode's exact scan: rows of both would mix
    assert world.calls == asked
    manifest = read_manifest(tmp_path / "run")  # as a run recorded before the engine was
    del manifest["index"]["engine"]
    write_json(tmp_path / "run" / MANIFEST, manifest)
    assert len(on("edge", 3).answers) == 3  # resumed: its two rows kept, one more answered
    assert world.calls > asked


def test_the_dry_run_prices_the_corpus_embedding_without_reading_its_text(world, worlds, tmp_path,
                                                                         capsys):
    from freshrag.retrieval.chunking import chunk_articles

    corpus = worlds[1]
    config = tmp_path / "freshrag.toml"
    config.write_text('[prices]\n"fake-model" = { input = 0.02, output = 0 }\n', encoding="utf-8")
    assert main(["run", "--systems", "naive", "--limit", "1", "--out", str(tmp_path / "run"),
                 "--corpus", str(corpus), "--config", str(config), "--dry-run"]) == 0
    out = capsys.readouterr().out
    chunks = len(chunk_articles(EXAMPLE.articles.values(), 1024, 48)) + len(Corpus(corpus))
    text = sum(len(chunk.text.encode()) for chunk in chunk_articles(
        EXAMPLE.articles.values(), 1024, 48)) + sum(
        len(t.encode()) for batch in Corpus(corpus).batches() for t in batch.texts)
    found = re.search(f"the retrieval index with the corpus {re.escape(str(corpus))}: up to "
                      f"{chunks:,} chunks to embed, about ([0-9,]+) tokens .*; \\$([0-9.]+) at "
                      f"fake-model's \\$0.02 per 1M input tokens", out)
    assert found, out
    tokens = int(found[1].replace(",", ""))  # from the shards' metadata: near the text's bytes
    assert text // 4 <= tokens <= text // 4 * 1.05
    assert found[2] == f"{tokens * 0.02 / 1e6:.4f}"
    assert world.calls == 0 and not (tmp_path / "run").exists()
