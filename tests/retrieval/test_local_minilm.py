"""The local all-MiniLM-L6-v2 (real, from its PyPI package): the index's encode path gives the
vectors sentence-transformers' own `encode()` gives for the same batches, in each precision, for
texts of many lengths over several batches; its batches group texts by token count."""

import numpy
import pytest
import torch

from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.embeddings import PRECISIONS, LocalMiniLM
from tests.support.systems import CORPUS

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("precision", PRECISIONS)
def test_batches_side_by_side_give_the_vectors_encode_gives_for_the_same_batches(precision):
    texts = [chunk.text for chunk in chunk_articles(CORPUS.values(), 300, 20)]
    texts += ["a short query", "Title: X\n" + "word " * 400,  # and one cut at 256 tokens
              "  Spaces AROUND, Capitals and ünïcödé  \n"]
    embedder = LocalMiniLM(precision=precision, batch_size=8, workers=2)
    found = numpy.asarray(embedder.embed(texts))
    assert found.shape == (len(texts), 384)
    batches = embedder.batches(texts)
    assert len(batches) > 3
    # encode() on each batch alone computes that very batch; its vectors normalised as the index
    # normalises them, in fp32 (a bf16 model's encode() would normalise in bf16)
    for batch in batches:
        raw = embedder._model.encode([texts[i] for i in batch], batch_size=len(batch),
                                     show_progress_bar=False, convert_to_tensor=True)
        expected = torch.nn.functional.normalize(raw.float(), p=2, dim=1).numpy()
        numpy.testing.assert_allclose(found[batch], expected, atol=1e-5)


def test_batches_hold_texts_of_one_token_count_so_they_pad_less_than_by_characters():
    texts = [chunk.text for chunk in chunk_articles(CORPUS.values(), 300, 20)]
    texts += ["a short query", "Title: X\n" + "word " * 400, "1999-2024 " * 30]  # dense in tokens
    embedder = LocalMiniLM(precision="fp32", batch_size=4, workers=2)
    embedder.embed(["load"])
    tokens = [min(len(ids), 256) for ids in embedder._model.tokenizer(texts)["input_ids"]]
    batches = embedder.batches(texts)
    assert sorted(i for batch in batches for i in batch) == list(range(len(texts)))
    assert all(len(batch) <= 4 for batch in batches)
    in_order = [tokens[i] for batch in batches for i in batch]
    assert in_order == sorted(tokens, reverse=True)  # longest first, by the model's tokens

    def padded(groups):
        return sum(len(group) * max(tokens[i] for i in group) for group in groups)

    by_characters = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # as encode() sorts
    assert padded(batches) < padded([by_characters[i:i + 4] for i in range(0, len(texts), 4)])


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
        if precision == "bf16":
            assert next(embedder._model.parameters()).dtype == torch.bfloat16
    assert next(fp32._model.parameters()).dtype == torch.float32
    assert closeness["bf16"].min() > 0.999
    assert closeness["int8"].min() > 0.7 and closeness["int8"].mean() < closeness["bf16"].mean()
