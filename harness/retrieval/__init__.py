"""Retrieval: the search the systems and the builders share (docs/retrieval.md). It sits below
both, so a system searches and a builder chunks with the same code, and it imports only the core
types and the LLM client (docs/design.md#the-layers).

A module per role:

- config.py: an index's settings (`IndexConfig`) and its error; light, read by every command's
  options before a command is chosen.
- chunking.py: articles cut into the chunks that are stored and that questions are drawn from.
- embeddings.py: the `Embedder` an index is given (the local MiniLM or an endpoint's model) and
  the one checked way vectors are made.
- lexical.py: BM25 sparse vectors and their fusion with dense hits.
- store.py: the Qdrant store (qdrant-client, embedded or a server): connecting, checking and
  writing a collection; the calls the index searches a collection through, and its content hash.
- edge.py: the same store on the Qdrant engine in-process (`qdrant-edge-py`: HNSW, on disk), for
  worlds of millions of chunks, chosen by `IndexConfig.engine`.
- seed.py: an index built on the engine copied into a Qdrant server's collection, point by
  point, page by page, so that a run with `--qdrant-url` opens it as built.
- index.py: `open_index`, the key that names a corpus's collection, and `VectorIndex`, the top-k
  search the systems call.
- scan.py: recall@k of an index at every text weight, with no LLM call.
- batches.py: a build's chunks embedded in batches by the executor it names: here (several at
  once against an endpoint) or on Ray actors that each hold one model, the vectors written by
  the store on the calling thread, so that one build, its ids and its resume serve both.
"""
