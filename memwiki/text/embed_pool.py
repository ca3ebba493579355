"""Embedding many texts on every core: worker processes, each with its own model and one BLAS thread.

USE's forward pass is NumPy on one thread (more BLAS threads did not help its small matrices), so a build or an
import that embeds thousands of texts runs them in one worker per core (`cores`) started for that call. A
few texts are embedded in the calling process: a worker's start (interpreter, imports, model) costs about what
`PARALLEL_MIN` texts do. An Ollama server embeds on its own cores; its texts go to it as they are.
"""

from __future__ import annotations

import numpy as np

from memwiki.common.workers import cores, spawned_pool
from memwiki.text.embedders import Embedder, USEEmbedder

PARALLEL_MIN = 256  # texts below which one process embeds them all
CHUNK = 32  # texts per task: small enough to share out evenly, large enough to batch the forward pass


def embed_many(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """`embedder.embed(texts)`, on every core when there are many texts for the embedded model."""
    workers = min(cores(), len(texts) // (PARALLEL_MIN // 2) or 1)
    if workers < 2 or len(texts) < PARALLEL_MIN or not isinstance(embedder, USEEmbedder):
        return embedder.embed(texts)
    chunks = [texts[start : start + CHUNK] for start in range(0, len(texts), CHUNK)]
    with spawned_pool(workers) as pool:
        return np.concatenate(list(pool.map(_embed_chunk, chunks)))


def _embed_chunk(texts: list[str]) -> np.ndarray:
    """A worker's task (the model loads on its first chunk and stays for the next)."""
    return USEEmbedder().embed(texts)
