"""The local all-MiniLM-L6-v2 (real, from its PyPI package): the index's encode path gives the
vectors sentence-transformers' own `encode()` gives, int8 and fp32, for texts of many lengths
over several batches, so that an index built before its batches ran side by side stays valid."""

import numpy
import pytest

from freshrag.systems.retrieval.embeddings import LocalMiniLM
from freshrag.systems.retrieval.index import chunk_articles
from tests.support.systems import CORPUS

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("quantized", [pytest.param(True, id="int8"),
                                       pytest.param(False, id="fp32")])
def test_batches_side_by_side_give_the_vectors_encode_gives(quantized):
    texts = [chunk.text for chunk in chunk_articles(CORPUS.values(), 300, 20)]
    texts += ["a short query", "Title: X\n" + "word " * 400]  # and one cut at 256 tokens
    assert len(texts) > 3 * 8
    embedder = LocalMiniLM(quantized=quantized, workers=2)
    found = numpy.asarray(embedder.embed(texts))
    expected = embedder._model.encode(texts, batch_size=8, normalize_embeddings=True,
                                      show_progress_bar=False, convert_to_numpy=True)
    assert found.shape == (len(texts), 384)
    numpy.testing.assert_allclose(found, expected, atol=1e-5)
