"""The background corpus: the passages of a whole Wikipedia, chunked as the index chunks,
written as shards with a manifest (docs/corpus.md). A module per role:

- multistream.py: a multistream dump and its index, a stream at a time, checked;
- xmlpages.py: export XML split into pages at the byte level;
- wikitext.py: wikitext to the plain text of passages, by regular expressions;
- created.py: creation dates from stub-meta-history files, by page id;
- wiki.py: pages by title through a wiki's API;
- shards.py: one shard written by one worker;
- build.py: the plan of shards, the workers, the manifest and resuming.

The reading side, which later stages use, is harness/retrieval/passages.py.
"""
