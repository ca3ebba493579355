"""Our own vectors for a source whose vectors we cannot use (e.g. a MemPalace palace embedded with MiniLM).

The source's texts are embedded with memwiki's embedder into `cache_dir/<embedder>/` (never inside the
source): `vectors.npy` + `index.json` (ids and a hash of id + text per row, so only new or changed memories
are re-embedded) and a lexical index. Search is an exact dot product, fine up to ~100k memories.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from memwiki.common.textio import atomic_write_text, file_lock, read_text
from memwiki.errors import MemwikiError
from memwiki.layers.semantic.memory import index_text
from memwiki.source import Memory, ScoredMemory
from memwiki.text.embedders import Embedder
from memwiki.text.lexical import POSTINGS_BUDGET, LexicalIndex

EMBED_BATCH = 256


def memory_digest(memory: Memory) -> str:
    """Changes when what a memory is embedded by changes (its id and index text)."""
    return hashlib.sha256(f"{memory.id}\x00{index_text(memory)}".encode("utf-8", "surrogatepass")).hexdigest()[:24]


class VectorCache:
    """Dense + lexical index over a sequence of memories, embedded by `embedder` and kept in `cache_dir`."""

    def __init__(self, cache_dir: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", embedder.identity())
        self.dir = Path(cache_dir) / slug
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lexical = LexicalIndex(self.dir / "lexical.sqlite3")
        self._ids: list[str] = []
        self._hashes: list[str] = []
        self._vectors = np.zeros((0, embedder.dim), dtype=np.float32)
        self._memories: dict[str, Memory] = {}
        self._load()

    def _load(self) -> None:
        index, npy = self.dir / "index.json", self.dir / "vectors.npy"
        if not (index.is_file() and npy.is_file()):
            return
        try:
            raw = json.loads(read_text(index))
            vectors = np.load(npy)
            ids, hashes = list(raw["ids"]), list(raw["hashes"])
        except (ValueError, KeyError, OSError, TypeError):
            return  # a damaged cache is rebuilt, it holds nothing that is not in the source
        if raw.get("embedder") == self.embedder.identity() and len(ids) == len(hashes) == vectors.shape[0]:
            self._ids, self._hashes, self._vectors = ids, hashes, vectors.astype(np.float32)

    def update(self, memories: Iterable[Memory], progress: bool = False) -> int:
        """Make the cache hold exactly `memories`; returns how many had to be (re-)embedded."""
        memories = list(memories)
        old = {(i, h): row for row, (i, h) in enumerate(zip(self._ids, self._hashes, strict=True))}
        hashes = [memory_digest(m) for m in memories]
        todo = [n for n, (m, h) in enumerate(zip(memories, hashes, strict=True)) if (m.id, h) not in old]
        vectors = np.zeros((len(memories), self.embedder.dim), dtype=np.float32)
        for n, (m, h) in enumerate(zip(memories, hashes, strict=True)):
            if (m.id, h) in old:
                vectors[n] = self._vectors[old[(m.id, h)]]
        bar = None
        if progress and todo:
            from tqdm import tqdm

            bar = tqdm(total=len(todo), unit="mem", desc="embedding source texts", file=sys.stderr)
        for start in range(0, len(todo), EMBED_BATCH):
            rows = todo[start : start + EMBED_BATCH]
            vectors[rows] = self.embedder.embed([index_text(memories[n]) for n in rows])
            if bar is not None:
                bar.update(len(rows))
        if bar is not None:
            bar.close()
        ids = [m.id for m in memories]
        if len(set(ids)) != len(ids):
            raise MemwikiError("the source holds the same memory id twice")
        with file_lock(self.dir / ".lock"):
            np.save(self.dir / "vectors.npy.tmp.npy", vectors)
            (self.dir / "vectors.npy.tmp.npy").replace(self.dir / "vectors.npy")
            atomic_write_text(
                self.dir / "index.json",
                json.dumps({"embedder": self.embedder.identity(), "ids": ids, "hashes": hashes}),
            )
            if self.lexical.current():
                self.lexical.delete(set(self._ids) - set(ids))
                self.lexical.upsert((memories[n].id, index_text(memories[n])) for n in todo)
            else:  # made by another version of the tokenizer: every text is indexed again
                self.lexical.clear()
                self.lexical.upsert((m.id, index_text(m)) for m in memories)
                self.lexical.mark_current()
        self._ids, self._hashes, self._vectors = ids, hashes, vectors
        self._memories = dict(zip(ids, memories, strict=True))
        return len(todo)

    def search_ids(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Exact nearest neighbours as (id, cosine) pairs (vectors are normalised)."""
        if not self._ids or k <= 0:
            return []
        scores = self._vectors @ np.asarray(vector, dtype=np.float32).reshape(-1)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(self._ids[i], float(scores[i])) for i in top]

    def search(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        return [ScoredMemory(self._memories[i], s) for i, s in self.search_ids(vector, k)]

    nearest = search  # memwiki.recall.cascade.L2Index: no long memory is split here

    def lexical_search(self, query: str, k: int, budget: int = POSTINGS_BUDGET) -> list[tuple[str, float]]:
        return self.lexical.search(query, k, budget)

    def get(self, ids: Sequence[str]) -> list[Memory]:
        return [self._memories[i] for i in ids if i in self._memories]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        rows = {i: n for n, i in enumerate(self._ids)}
        missing = [i for i in ids if i not in rows]
        if missing:
            raise MemwikiError(f"no cached memory with id {missing[0]!r}")
        return self._vectors[[rows[i] for i in ids]].reshape(len(ids), self.embedder.dim)

    def get_with_vectors(self, ids: Sequence[str]) -> tuple[list[Memory], np.ndarray]:
        memories = self.get(ids)
        return memories, self.vectors([m.id for m in memories])

    def count(self) -> int:
        return len(self._ids)
