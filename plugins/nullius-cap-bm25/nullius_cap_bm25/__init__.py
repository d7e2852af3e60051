"""A BM25 memory as a Nullius plugin: it ships the catalogue entry `capabilities/bm25`."""
