"""The index's chunker (retrieval/chunking.py `split_text`) against langchain's own
`RecursiveCharacterTextSplitter`, whose rules it writes again for speed: the same chunks to the
byte on the paper's 1,101 articles, on generated text of every separator, long words and
unicode, at sizes and overlaps from 1 to a paragraph, and the same refusals."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_text_splitters import RecursiveCharacterTextSplitter

from freshrag.retrieval.chunking import split_text
from tests import ROOT

PIECES = ["a", "bb", "word ", "other words ", " ", "  ", "\n", "\n\n", "\n\n\n", " \n ", "\t",
          "é", "日本語", "🙂", "\r\n", "x" * 40, "y" * 1500]


def langchains(text: str, size: int, overlap: int) -> list[str]:
    return RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap).split_text(text)


def test_the_papers_articles_are_cut_as_langchain_cuts_them():
    lines = (ROOT / "tests" / "data" / "wikirag-2024" / "articles.jsonl").read_text(
        encoding="utf-8").splitlines()
    texts = [json.loads(line)["content"] for line in lines]
    for size, overlap in ((1024, 48), (300, 20), (2000, 0)):
        assert [split_text(text, size, overlap) for text in texts] \
            == [langchains(text, size, overlap) for text in texts]


@pytest.mark.parametrize("seed", range(4))
def test_generated_text_is_cut_as_langchain_cuts_it(seed):
    rng = random.Random(seed)
    for _ in range(400):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 300)))
        size = rng.choice([1, 2, 3, 7, 20, 64, 300, 1024])
        overlap = rng.randint(0, size)
        assert split_text(text, size, overlap) == langchains(text, size, overlap), \
            (text, size, overlap)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(["a", "b", " ", "\n", "\t", "é"]), max_size=200),
       st.integers(1, 40), st.data())
def test_any_text_is_cut_as_langchain_cuts_it(text, size, data):
    overlap = data.draw(st.integers(0, size))
    assert split_text(text, size, overlap) == langchains(text, size, overlap)


@pytest.mark.parametrize("size, overlap", [(0, 0), (10, 11), (10, -1)])
def test_sizes_the_splitter_refuses_are_refused(size, overlap):
    with pytest.raises(ValueError):
        split_text("some text", size, overlap)
    with pytest.raises(ValueError):
        langchains("some text", size, overlap)
