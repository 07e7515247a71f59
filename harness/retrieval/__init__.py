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
  writing a collection.
- index.py: `open_index`, the key that names a corpus's collection, and `VectorIndex`, the top-k
  search the systems call.
- scan.py: recall@k of an index at every text weight, with no LLM call.

Where the next parts go. A background corpus of millions of passages on the Qdrant engine
in-process (`qdrant-edge-py`, HNSW on disk) is a second store beside store.py with the same
calls (connect, the missing ids, writing chunks), chosen by `IndexConfig`, so that `open_index`,
`VectorIndex` and every system stay as they are; the passages of such a corpus are chunks of
chunking.py, read in streams rather than held in one list. Embedding and storing past one machine
(Ray actors, one embedding model each) is an executor of store.py's batches, living in this
package beside it: the same batches walked by other workers, never a second build.
"""
