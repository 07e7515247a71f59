"""The local all-MiniLM-L6-v2 (real, from its PyPI package): the index's encode path gives the
vectors sentence-transformers' own `encode()` gives, in each precision, for texts of many lengths
over several batches, so that an index built before its batches ran side by side stays valid."""

import numpy
import pytest
import torch

from freshrag.systems.retrieval.embeddings import PRECISIONS, LocalMiniLM
from freshrag.systems.retrieval.index import chunk_articles
from tests.support.systems import CORPUS

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("precision", PRECISIONS)
def test_batches_side_by_side_give_the_vectors_encode_gives(precision):
    texts = [chunk.text for chunk in chunk_articles(CORPUS.values(), 300, 20)]
    texts += ["a short query", "Title: X\n" + "word " * 400]  # and one cut at 256 tokens
    assert len(texts) > 3 * 8
    embedder = LocalMiniLM(precision=precision, workers=2)
    found = numpy.asarray(embedder.embed(texts))
    # encode()'s own vectors, normalised as the index normalises them: in fp32 (a bf16 model's
    # encode() would normalise in bf16 and round them again)
    raw = embedder._model.encode(texts, batch_size=8, show_progress_bar=False,
                                 convert_to_tensor=True)
    expected = torch.nn.functional.normalize(raw.float(), p=2, dim=1).numpy()
    assert found.shape == (len(texts), 384)
    numpy.testing.assert_allclose(found, expected, atol=1e-5)



def test_each_precision_runs_its_own_arithmetic_and_bf16_stays_within_a_rounding_of_fp32():
    """bf16 is the model cast to bfloat16 and a rounding away from fp32's vectors; int8 is the
    linear layers quantized, further away (it scales each batch's activations)."""
    texts = [chunk.text for chunk in chunk_articles(CORPUS.values(), 300, 20)][:24]
    fp32 = LocalMiniLM(precision="fp32", workers=2)
    reference = numpy.asarray(fp32.embed(texts))
    closeness = {}
    for precision in ("bf16", "int8"):
        embedder = LocalMiniLM(precision=precision, workers=2)
        found = numpy.asarray(embedder.embed(texts))
        closeness[precision] = (found * reference).sum(axis=1)
        linear = [m for m in embedder._model.modules() if "Linear" in type(m).__name__]
        assert linear and all(("quantized" in type(m).__module__) == (precision == "int8")
                              for m in linear), precision
    assert next(fp32._model.parameters()).dtype == torch.float32
    assert next(LocalMiniLM(precision="bf16")._load().parameters()).dtype == torch.bfloat16
    assert closeness["bf16"].min() > 0.999
    assert closeness["int8"].min() > 0.7 and closeness["int8"].mean() < closeness["bf16"].mean()
