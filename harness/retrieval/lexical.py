"""The lexical side of the retrieval index: BM25 sparse vectors, and their fusion with dense hits
(docs/methods.md#hybrid-retrieval: a text weight from 0, dense only, to 1, lexical only, scanned per
label).

BM25 splits into a document part and a query part. The document part, term frequency saturated
by `K1` and normalised by the chunk's length against the corpus's mean (`B`), is computed here
and stored as each chunk's sparse vector; the inverse document frequency is applied by Qdrant
itself (`Modifier.IDF` on the sparse vector's config), from the collection it holds. A query's
sparse vector is 1 for each distinct term, so its dot product with a chunk's is the chunk's
BM25 score.

The tokenizer is local and fixed (no model, nothing downloaded): Unicode case folding, runs of
letters and digits, English stop words and single letters dropped, no stemming. A term's index
is the CRC-32 of its UTF-8 bytes: the same in every process (unlike `hash`), within Qdrant's
32-bit indices. `SCHEME` names all of this; it is part of the index key, so a change to any of
it builds another index instead of mixing two vocabularies in one.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

SCHEME = "bm25-crc32-v1"  # tokenizer, term ids, K1 and B: in the index key
K1 = 1.2   # term-frequency saturation, the usual BM25 value (Robertson and Zaragoza)
B = 0.75   # length normalisation, likewise
DEPTH = 50  # candidates taken from each side before fusing (at least top-k)

_WORD = re.compile(r"\w+")
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves
""".split())


@dataclass(frozen=True)
class SparseTerms:
    """A sparse vector: term indices (ascending, distinct) and their weights."""

    indices: list[int]
    values: list[float]


def tokens(text: str) -> list[str]:
    """The terms of `text`, in order, repeats kept."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [word for word in _WORD.findall(folded)
            if word not in STOPWORDS and (len(word) > 1 or word.isdigit())]


def term_id(term: str) -> int:
    return zlib.crc32(term.encode("utf-8"))


def measure(texts: Iterable[str]) -> tuple[int, float]:
    """How many texts there are, and their mean number of terms (at least 1), BM25's reference
    length: in one pass over a stream, none of it held (a build's first pass over its chunks)."""
    count = terms = 0
    for text in texts:
        count += 1
        terms += len(tokens(text))
    return count, max(terms / count, 1.0) if count else 1.0


def document_vector(text: str, average_length: float) -> SparseTerms:
    """BM25's document part for each term of `text` (Qdrant multiplies in the IDF)."""
    terms = tokens(text)
    norm = K1 * (1 - B + B * len(terms) / average_length)
    counts: Counter[int] = Counter(term_id(term) for term in terms)  # a CRC clash adds up
    indices = sorted(counts)
    return SparseTerms(indices, [counts[i] * (K1 + 1) / (counts[i] + norm) for i in indices])


def query_vector(text: str) -> SparseTerms:
    """1 for each distinct term of the query: the dot product is then the BM25 score."""
    indices = sorted({term_id(term) for term in tokens(text)})
    return SparseTerms(indices, [1.0] * len(indices))


Hit = tuple[int, float]  # (point id, score), best first


def fuse(dense: Sequence[Hit], lexical: Sequence[Hit], weight: float, k: int) -> list[Hit]:
    """The top `k` of a convex combination, (1 - weight) * dense + weight * lexical, of scores
    min-max normalised within each candidate list (a hit absent from a list counts 0 there).

    Normalised scores put cosine similarities and BM25 scores, which live on different scales,
    on one; a weight of 0 returns the dense hits exactly, 1 the lexical ones. Ties keep the
    dense order, then the lexical one.
    """
    if weight == 0:
        return list(dense[:k])
    if weight == 1:
        return list(lexical[:k])
    fused: dict[int, float] = {}
    for side, hits in ((1 - weight, dense), (weight, lexical)):
        for point, score in _normalised(hits):
            fused[point] = fused.get(point, 0.0) + side * score
    first: dict[int, int] = {}  # a point's first position, dense ranks before lexical ones
    for rank, (point, _) in enumerate([*dense, *lexical]):
        first.setdefault(point, rank)
    ranked = sorted(fused, key=lambda point: (-fused[point], first[point]))
    return [(point, fused[point]) for point in ranked[:k]]


def _normalised(hits: Sequence[Hit]) -> list[Hit]:
    if not hits:
        return []
    scores = [score for _, score in hits]
    low, high = min(scores), max(scores)
    if high == low:  # one hit, or all alike: each is as good as the best
        return [(point, 1.0) for point, _ in hits]
    return [(point, (score - low) / (high - low)) for point, score in hits]
