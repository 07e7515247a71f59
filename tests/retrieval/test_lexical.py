"""The lexical side's tokenizer, BM25 weights and the fusion of dense and lexical hits."""

import math

import pytest

from freshrag.retrieval.lexical import (
    K1,
    B,
    document_vector,
    fuse,
    measure,
    query_vector,
    term_id,
    tokens,
)


@pytest.mark.parametrize("text, expected", [
    pytest.param("The Velmora Bridge", ["velmora", "bridge"], id="case-folded-stopword-dropped"),
    pytest.param("born in 2021, died 1999", ["born", "2021", "died", "1999"], id="years-kept"),
    pytest.param("a b c 7", ["7"], id="single-letters-dropped-single-digit-kept"),
    pytest.param("Ünïcode Straße", ["ünïcode", "strasse"], id="unicode-casefold"),
    pytest.param("ﬁnance", ["finance"], id="nfkc-ligature"),
    pytest.param("naïve-RAG's “scores”!", ["naïve", "rag", "scores"], id="punctuation-splits"),
    pytest.param("", [], id="empty"),
    pytest.param("the of and ?", [], id="only-stopwords"),
])
def test_tokens(text, expected):
    assert sorted(tokens(text)) == sorted(expected)


def test_term_ids_are_stable_32_bit_and_distinct_for_distinct_words():
    import zlib
    assert term_id("bridge") == zlib.crc32(b"bridge") and 0 <= term_id("straße") < 2**32
    assert len({term_id(w) for w in ("bridge", "comet", "railway", "granite")}) == 4


def test_document_weights_are_bm25_term_frequency_parts():
    vector = document_vector("comet comet bridge", average_length=3.0)
    weights = dict(zip(vector.indices, vector.values))
    norm = K1 * (1 - B + B * 3 / 3.0)
    assert weights[term_id("comet")] == pytest.approx(2 * (K1 + 1) / (2 + norm))
    assert weights[term_id("bridge")] == pytest.approx(1 * (K1 + 1) / (1 + norm))
    assert vector.indices == sorted(vector.indices)


def test_a_longer_document_weighs_the_same_count_less():
    short = document_vector("comet bridge", average_length=4.0)
    long = document_vector("comet bridge river stone arch tower", average_length=4.0)
    comet = term_id("comet")
    assert dict(zip(long.indices, long.values))[comet] < dict(zip(short.indices, short.values))[comet]


def test_query_vector_counts_each_distinct_term_once():
    vector = query_vector("Comet comet, the bridge?")
    assert vector.indices == sorted({term_id("comet"), term_id("bridge")})
    assert vector.values == [1.0, 1.0]


def test_the_mean_length_is_at_least_one_and_the_texts_are_counted():
    assert measure(["comet bridge", "comet"]) == (2, 1.5)
    assert measure(["the"]) == (1, 1.0) and measure([]) == (0, 1.0)
    assert measure(iter(["comet bridge"] * 3)) == (3, 2.0)  # a stream, read once


DENSE = [(1, 0.9), (2, 0.8), (3, 0.5)]
LEXICAL = [(3, 12.0), (4, 6.0), (1, 2.0)]


@pytest.mark.parametrize("weight, k, expected", [
    pytest.param(0, 2, [(1, 0.9), (2, 0.8)], id="weight-0-is-the-dense-list"),
    pytest.param(1, 2, [(3, 12.0), (4, 6.0)], id="weight-1-is-the-lexical-list"),
    # dense normalised: 1 -> 1, 2 -> .75, 3 -> 0; lexical: 3 -> 1, 4 -> .4, 1 -> 0
    pytest.param(0.5, 4, [(1, 0.5), (3, 0.5), (2, 0.375), (4, 0.2)], id="half-tie-keeps-dense-order"),
    pytest.param(0.2, 3, [(1, 0.8), (2, 0.6), (3, 0.2)], id="mostly-dense"),
    pytest.param(0.9, 2, [(3, 0.9), (4, 0.36)], id="mostly-lexical"),
])
def test_fusion_is_a_convex_combination_of_min_max_scores(weight, k, expected):
    fused = fuse(DENSE, LEXICAL, weight, k)
    assert [p for p, _ in fused] == [p for p, _ in expected]
    assert all(math.isclose(a, b) for (_, a), (_, b) in zip(fused, expected))


@pytest.mark.parametrize("dense, lexical, expected", [
    pytest.param(DENSE, [], [1, 2, 3], id="no-lexical-hits"),
    pytest.param([], LEXICAL, [3, 4, 1], id="no-dense-hits"),
    pytest.param([(5, 0.3)], [(6, 1.0), (7, 1.0)], [5, 6, 7], id="one-hit-and-equal-scores"),
    pytest.param([], [], [], id="nothing"),
])
def test_fusion_edges(dense, lexical, expected):
    assert [p for p, _ in fuse(dense, lexical, 0.5, 5)] == expected
