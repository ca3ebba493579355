"""L2 semantic memory: a Chroma collection of `Memory` records, with a lexical side index kept in sync.

We always pass embeddings (the collection has no embedding function, so Chroma's default model never
runs) and use cosine space. Every `Memory` field is flat metadata; `meta` is serialised as JSON.
The collection records which embedder made its vectors; opening it with another one is an error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from memory.embedders import Embedder
from memory.errors import DuplicateEntryError, EmbedderMismatchError, InputFormatError, MemwikiError
from memory.lexical import POSTINGS_BUDGET, LexicalIndex
from memory.recovery import open_local
from memory.snapshot import CATEGORIES, Memory, ScoredMemory

COLLECTION = "memories"
LEXICAL_FILE = "lexical.sqlite3"
IMPORT_BATCH = 256  # texts per embedder call
# HNSW search breadth: Chroma's default (100) missed some of the true top 50 on the LoCoMo dev set.
HNSW_EF_SEARCH = 256
HNSW_EF_CONSTRUCTION = 100
WRITE_BATCH = 1024  # memories per Chroma write during an import (bigger writes are cheaper per memory)
_FIELDS = tuple(f.name for f in fields(Memory) if f.name not in ("id", "text", "meta"))


def memory_to_metadata(memory: Memory) -> dict[str, str]:
    """Flat Chroma metadata for a memory: its non-empty fields as strings, `meta` as JSON."""
    out = {name: str(value) for name in _FIELDS if (value := getattr(memory, name))}
    if memory.meta:
        out["meta"] = json.dumps(memory.meta, ensure_ascii=False, sort_keys=True, default=str)
    return out


def memory_from_record(memory_id: str, text: str | None, metadata: dict[str, Any] | None) -> Memory:
    """The `Memory` a Chroma record holds (the inverse of `memory_to_metadata`)."""
    metadata = dict(metadata or {})
    try:
        meta = json.loads(metadata.pop("meta", "") or "{}")
    except ValueError:
        meta = {}
    kwargs = {name: str(metadata[name]) for name in _FIELDS if name in metadata and metadata[name] is not None}
    return Memory(id=memory_id, text=text or "", meta=meta if isinstance(meta, dict) else {}, **kwargs)


def index_text(memory: Memory) -> str:
    """What a memory is embedded and lexically indexed by: its text, after its `meta["context"]` when set
    (text that situates it, e.g. the previous turn of the conversation it came from; indexed, not shown)."""
    context = memory.meta.get("context")
    return f"{context}\n{memory.text}" if isinstance(context, str) and context.strip() else memory.text


class SemanticMemory:
    """L2 over a Chroma collection (`PersistentClient(path)` unless a client, e.g. an HttpClient, is given).

    The lexical side index lives in `path/lexical.sqlite3` in both cases.
    """

    def __init__(self, path: Path, embedder: Embedder, client: Any = None, collection: str = COLLECTION) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self._own_client = client is None  # close() releases only a client made here
        if client is None:  # a local folder: a vector index a crash damaged is rebuilt here (memory.recovery)
            self.client, self._col = open_local(
                self.path, lambda: self._connect(None, collection), _record_text, embedder.embed, int(embedder.dim or 0)
            )
        else:
            self.client, self._col = self._connect(client, collection)
        self._check_embedder()
        self.lexical = LexicalIndex(self.path / LEXICAL_FILE)
        if self.lexical.count() != self.count() or not self.lexical.current():
            self.rebuild_lexical()

    def _connect(self, client: Any, collection: str) -> tuple[Any, Any]:
        import chromadb

        client = client if client is not None else chromadb.PersistentClient(path=str(self.path))
        col = client.get_or_create_collection(
            collection,
            embedding_function=None,
            configuration={
                "hnsw": {"space": "cosine", "ef_search": HNSW_EF_SEARCH, "ef_construction": HNSW_EF_CONSTRUCTION}
            },
            metadata={
                "embedder": self.embedder.name,
                "model": _model_name(self.embedder),
                "dim": int(self.embedder.dim or 0),
            },
        )
        return client, col

    def close(self) -> None:
        """Release the lexical index and Chroma's shared system for this folder (Chroma keeps one per path in
        the process: a folder removed and made again must not meet the old one)."""
        self.lexical.close()
        if self._own_client and hasattr(self.client, "close"):
            self.client.close()

    def _check_embedder(self) -> None:
        made = self._col.metadata or {}
        name, model, dim = made.get("embedder", ""), made.get("model", ""), int(made.get("dim", 0) or 0)
        mine = _model_name(self.embedder)
        if name != self.embedder.name or model != mine or (dim and self.embedder.dim and dim != self.embedder.dim):
            raise EmbedderMismatchError(
                f"{self.path}: semantic memory was made with {name}{':' + model if model else ''}/{dim}, "
                f"not {self.embedder.identity()}: vectors from two embedders cannot be compared"
            )

    def rebuild_lexical(self) -> None:
        """Re-index every memory lexically (after a crash between the Chroma and the lexical write, or when
        the index was built by another tokenizer version)."""
        self.lexical.clear()
        batch: list[tuple[str, str]] = []
        for memory in self.all():
            batch.append((memory.id, index_text(memory)))
            if len(batch) >= 1000:
                self.lexical.upsert(batch)
                batch = []
        self.lexical.upsert(batch)
        self.lexical.mark_current()

    # -- writes ---------------------------------------------------------------------------------------

    def upsert(self, memories: Sequence[Memory], vectors: np.ndarray | None = None) -> None:
        """Write memories (replacing any with the same id); embeds their texts unless `vectors` are given."""
        memories = list(memories)
        if not memories:
            return
        ids = [m.id for m in memories]
        if len(set(ids)) != len(ids):
            raise DuplicateEntryError(f"the same id appears twice in one write: {_first_duplicate(ids)!r}")
        vectors = self._vectors_for(memories, vectors)
        self._write(memories, vectors)

    def add(self, memories: Sequence[Memory], vectors: np.ndarray | None = None) -> None:
        """Like `upsert`, but refuses ids that are already stored."""
        memories = list(memories)
        existing = self._col.get(ids=[m.id for m in memories], include=[])["ids"] if memories else []
        if existing:
            raise DuplicateEntryError(f"memory {existing[0]!r} already exists in L2 ({len(existing)} existing ids)")
        self.upsert(memories, vectors)

    def delete(self, ids: Sequence[str]) -> None:
        ids = list(ids)
        if not ids:
            return
        self._col.delete(ids=ids)
        self.lexical.delete(ids)

    def _vectors_for(self, memories: list[Memory], vectors: np.ndarray | None) -> np.ndarray:
        if vectors is None:
            return self.embedder.embed([index_text(m) for m in memories])
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(memories):
            raise MemwikiError(f"{vectors.shape} vectors for {len(memories)} memories")
        if self.embedder.dim and vectors.shape[1] != self.embedder.dim:
            raise EmbedderMismatchError(
                f"{vectors.shape[1]}-d vectors; {self.embedder.identity()} makes {self.embedder.dim}-d ones"
            )
        return vectors

    def _write(self, memories: list[Memory], vectors: np.ndarray) -> None:
        step = max(1, min(5000, self.client.get_max_batch_size()))
        for start in range(0, len(memories), step):
            chunk = memories[start : start + step]
            self._col.upsert(
                ids=[m.id for m in chunk],
                embeddings=vectors[start : start + step],
                documents=[m.text for m in chunk],
                metadatas=[memory_to_metadata(m) for m in chunk],
            )
        self.lexical.upsert((m.id, index_text(m)) for m in memories)

    # -- reads ----------------------------------------------------------------------------------------

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """The stored memories with these ids, in the order asked; unknown ids are left out."""
        ids = list(ids)
        if not ids:
            return []
        got = self._col.get(ids=ids, include=["documents", "metadatas"])
        found = {
            i: memory_from_record(i, d, m)
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }
        return [found[i] for i in ids if i in found]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored vectors of these ids, in order; an unknown id is an error."""
        ids = list(ids)
        if not ids:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        got = self._col.get(ids=ids, include=["embeddings"])
        found = dict(zip(got["ids"], got["embeddings"], strict=True))
        missing = [i for i in ids if i not in found]
        if missing:
            raise MemwikiError(f"no L2 memory with id {missing[0]!r}")
        return np.asarray([found[i] for i in ids], dtype=np.float32)

    def search(self, vector: np.ndarray, k: int, where: dict[str, Any] | None = None) -> list[ScoredMemory]:
        """The `k` nearest memories to a query vector, score = cosine similarity."""
        if k <= 0:
            return []
        res = self._col.query(
            query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
            n_results=k,
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        return [
            ScoredMemory(memory_from_record(i, d, m), 1.0 - float(dist))
            for i, d, m, dist in zip(
                res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True
            )
        ]

    def search_ids(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Like `search`, but only (id, cosine) pairs: no documents are read (the fast path of recall)."""
        if k <= 0:
            return []
        # No count() first: it costs ~10 ms at 100k memories, and Chroma returns fewer hits when it holds fewer.
        res = self._col.query(
            query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1), n_results=k, include=["distances"]
        )
        return [(i, 1.0 - float(d)) for i, d in zip(res["ids"][0], res["distances"][0], strict=True)]

    def lexical_search(self, query: str, k: int, budget: int = POSTINGS_BUDGET) -> list[tuple[str, float]]:
        return self.lexical.search(query, k, budget)

    def all(self, batch: int = 1000) -> Iterator[Memory]:
        offset = 0
        while True:
            got = self._col.get(limit=batch, offset=offset, include=["documents", "metadatas"])
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
                yield memory_from_record(i, d, m)
            if len(got["ids"]) < batch:
                return
            offset += batch

    def count(self) -> int:
        return self._col.count()

    # -- bulk import ----------------------------------------------------------------------------------

    def import_jsonl(self, path: Path, progress: bool = False) -> int:
        """Import `{"id", "text", "meta": {...}}` lines; everything is validated before anything is written.

        Ids are kept, so a re-import replaces rather than duplicates. Embedding runs while the previous
        batch is written (one writer thread), so import time is close to the embedder's own time.
        """
        memories = read_memories_jsonl(Path(path))
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(memories), unit="mem", desc=f"import {Path(path).name}", file=sys.stderr)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="l2-writer") as writer:
            pending: Future[None] | None = None
            for start in range(0, len(memories), WRITE_BATCH):
                chunk = memories[start : start + WRITE_BATCH]
                parts = []
                for sub in range(0, len(chunk), IMPORT_BATCH):
                    parts.append(self.embedder.embed([index_text(m) for m in chunk[sub : sub + IMPORT_BATCH]]))
                    if bar is not None:
                        bar.update(len(parts[-1]))
                if pending is not None:
                    pending.result()
                pending = writer.submit(self._write, chunk, np.concatenate(parts))
            if pending is not None:
                pending.result()
        if bar is not None:
            bar.close()
        return len(memories)


def read_memories_jsonl(path: Path) -> list[Memory]:
    """Parse and validate an L2 import file; an InputFormatError names the file and line."""
    from memory.jsonl import iter_jsonl

    memories: list[Memory] = []
    seen: dict[str, int] = {}
    for line_no, obj in iter_jsonl(path):
        where = f"{path}:{line_no}"
        if not isinstance(obj, dict):
            raise InputFormatError(f"{where}: expected a JSON object")
        memory_id = obj.get("id")
        if isinstance(memory_id, int) and not isinstance(memory_id, bool):
            memory_id = str(memory_id)
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InputFormatError(f'{where}: missing or empty "id" (a string)')
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputFormatError(f'{where}: missing or empty "text" (a string)')
        meta = obj.get("meta", {})
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise InputFormatError(f'{where}: "meta" must be an object')
        if memory_id in seen:
            raise InputFormatError(f"{where}: duplicate id {memory_id!r} (first on line {seen[memory_id]})")
        seen[memory_id] = line_no
        meta = dict(meta)
        known = {name: meta.pop(name) for name in _FIELDS if name in meta}
        for name, value in known.items():
            if not isinstance(value, str):
                raise InputFormatError(f"{where}: meta.{name} must be a string")
        category = known.get("category") or "other"
        if category not in CATEGORIES:
            raise InputFormatError(f"{where}: unknown category {category!r} (known: {', '.join(CATEGORIES)})")
        known["category"] = category
        known.setdefault("source", "import")
        memories.append(Memory(id=memory_id, text=text, meta=meta, **known))
    return memories


def _record_text(memory_id: str, document: str | None, metadata: dict[str, Any]) -> str:
    """What a stored record was embedded by (for a rebuild that must re-embed it)."""
    return index_text(memory_from_record(memory_id, document, metadata))


def _model_name(embedder: Embedder) -> str:
    """The model an embedder runs, when it can run several (Ollama); "" otherwise."""
    model = getattr(embedder, "model", "")
    return model if isinstance(model, str) else ""


def _first_duplicate(ids: list[str]) -> str:
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            return i
        seen.add(i)
    return ""
