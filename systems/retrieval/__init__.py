"""The retrieval the systems share: the Qdrant index with its chunking, BM25 fusion, embedding models, and the recall scan over text weights."""
