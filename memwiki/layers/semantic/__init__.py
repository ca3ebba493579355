"""L2 semantic memory: a Chroma collection, embedded or on a server (`memory`, `chroma_server`), a long memory's
passages, and the recovery of a local folder whose vector index no longer loads (`recovery`, `hnsw_files`)."""
