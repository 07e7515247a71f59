"""Retrieval: the search the systems and the builders share (docs/retrieval.md): the Qdrant index
with its chunking, BM25 fusion, embedding models, and the recall scan over text weights."""
