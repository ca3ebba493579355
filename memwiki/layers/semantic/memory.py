"""L2 semantic memory: a Chroma collection of `Memory` records, with a lexical side index kept in sync.

We always pass embeddings (the collection has no embedding function, so Chroma's default model never
runs) and use cosine space. Every `Memory` field is flat metadata; `meta` is serialised as JSON.
The collection records which embedder made its vectors; opening it with another one is an error.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import logging
import sqlite3
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from memwiki.common.textio import file_lock, utf8_size
from memwiki.errors import DuplicateEntryError, EmbedderMismatchError, InputFormatError, MemwikiError
from memwiki.layers.semantic.passages import (
    MAX_EMBED_BYTES,
    PASSAGE_KEY,
    Span,
    cut_to_bytes,
    is_long,
    passage_id,
    split,
)
from memwiki.layers.semantic.recovery import open_local, probe_collections
from memwiki.source import CATEGORIES, Memory, ScoredMemory
from memwiki.store.config import DEFAULT_MAX_INPUT_BYTES, EMBEDDED_COLLECTION
from memwiki.store.generation import WRITE_LOCK, bump_generation, read_generation
from memwiki.store.limits import check_line_sizes, check_text_size
from memwiki.text.embedders import Embedder
from memwiki.text.lexical import POSTINGS_BUDGET, LexicalIndex

COLLECTION = EMBEDDED_COLLECTION  # a store on a Chroma server has a collection of its own (store.json chroma)
# Long memories (memwiki.layers.semantic.passages): their passages are records `<memory id>#p<n>` of the collection
# "<COLLECTION>-passages" (text = the passage, metadata = memory_id, passage, start, end), each with its own vector;
# the memory's own record keeps its whole text, its vector is the passages' mean, and its metadata says
# `passages` (how many) and `chars`. Searches rank passages, not the whole long memory; `all()` and `count()`
# are the memories, once each.
PASSAGES_SUFFIX = "-passages"
LEXICAL_FILE = "lexical.sqlite3"
IMPORT_BATCH = 256  # texts per embedder call
# HNSW search breadth: Chroma's default (100) missed some of the true top 50 on the LoCoMo dev set.
HNSW_EF_SEARCH = 256
HNSW_EF_CONSTRUCTION = 100
WRITE_BATCH = 1024  # memories per Chroma write during an import (bigger writes are cheaper per memory)
WRITE_BYTES = 8_000_000  # ... and characters of text (a file of long memories is written a few at a time)
WRITE_LOCK_TIMEOUT = 120.0  # seconds another process's write may take before a write gives up, saying so
_FIELDS = tuple(f.name for f in fields(Memory) if f.name not in ("id", "text", "meta"))
Split = dict[str, tuple[list[Span], np.ndarray]]  # long memory id -> its passages and their vectors


def is_chroma_error(exc: BaseException) -> bool:
    """Chroma's own error. Looked up, not imported: only a path that opened Chroma raises one, and a path that
    did not open Chroma should not pay for importing chromadb."""
    errors = sys.modules.get("chromadb.errors")
    return errors is not None and isinstance(exc, errors.ChromaError)


@dataclass
class _Loaded:
    """This process's one embedded Chroma client on an L2 folder, shared by every SemanticMemory on it (Chroma
    keeps one index per folder per process: two clients would not see each other's reloads)."""

    client: Any
    token: str  # the folder's generation this process last loaded or wrote (memwiki.store.generation)
    load: int = 0  # how many times this process loaded the folder: a SemanticMemory with an older count adopts
    users: int = 0


log = logging.getLogger(__name__)
_LOADED: dict[str, _Loaded] = {}
_LOADED_LOCK = threading.RLock()


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
    (text that situates it, e.g. the previous turn of the conversation it came from; indexed, not shown).
    At most `MAX_EMBED_BYTES`, the context cut first (a long memory of this store is indexed by its passages)."""
    context = memory.meta.get("context")
    body = cut_to_bytes(memory.text, MAX_EMBED_BYTES)
    if not (isinstance(context, str) and context.strip()):
        return body
    room = MAX_EMBED_BYTES - utf8_size(body) - 1
    head = cut_to_bytes(context, room) if room > 0 else ""
    return f"{head}\n{body}" if head.strip() else body


GET_BATCH = 5000  # ids per Chroma get: its SQLite takes at most 32,766 variables in one statement


def get_by_ids(collection: Any, ids: Sequence[str], include: list[str]) -> dict[str, list[Any]]:  # noqa: ANN401
    """`collection.get(ids=…, include=…)` in batches of GET_BATCH, the fields asked for (and `ids`) joined in
    order (a 100k-memory store asked for every memory's vector at once passed SQLite's limit)."""
    ids = list(ids)
    out: dict[str, list[Any]] = {field: [] for field in ("ids", *include)}
    for start in range(0, len(ids), GET_BATCH):
        got = collection.get(ids=ids[start : start + GET_BATCH], include=include)
        for field in out:
            out[field].extend(got[field] if got[field] is not None else [])
    return out


class SemanticMemory:
    """L2 over a Chroma collection: `PersistentClient(path)`, or the Chroma server at `url`
    (memwiki.layers.semantic.chroma_server), or a chromadb client given as `client`.

    The lexical side index lives in `path/lexical.sqlite3` in every case. On a server, `create=False` refuses a
    collection the server does not have (rather than making it empty: that would hide the loss of every memory).
    """

    max_input_bytes = DEFAULT_MAX_INPUT_BYTES  # a memory's text over this is refused (store.json limits)

    def __init__(
        self,
        path: Path,
        embedder: Embedder,
        client: Any = None,
        collection: str = COLLECTION,
        url: str = "",
        create: bool = True,
    ) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self.url = url
        self.created = False  # whether this opening made the collection (on a server)
        self._own_client = client is None  # close() releases only a client made here
        self._passages_seen: tuple[tuple[int, int], bool] | None = None  # see _has_passages
        self._collection_name = collection
        # a local folder other processes may write too (memwiki.store.generation): one client per folder per process
        self._shared = not url and client is None
        self._loaded: _Loaded | None = None
        if url:
            self.client, self._col = self._connect_server(url, collection, create)
        elif (
            client is None
        ):  # a local folder: a vector index a crash damaged is rebuilt here (memwiki.layers.semantic.recovery)
            self.client, self._col = self._open_shared(collection)
        else:
            self.client, self._col = self._connect(client, collection)
        self._check_embedder()
        if self._shared and any(self._sync_threshold(c) != 1 for c in (self._col, self._passages)):
            self._write_index_at_every_write()
        self.lexical = self._open_lexical()
        if not self._lexical_in_step():
            with file_lock(self.path / WRITE_LOCK, timeout=WRITE_LOCK_TIMEOUT):  # not beside another's write
                self._fresh_locked()
                if not self._lexical_in_step():
                    self.rebuild_lexical()

    def _open_lexical(self) -> LexicalIndex:
        """The lexical side index; one that does not open (garbage, cut short) is made again: it is derived."""
        path = self.path / LEXICAL_FILE
        try:
            index = LexicalIndex(path)
            index.count()
            return index
        except (sqlite3.DatabaseError, MemwikiError) as exc:
            if "FTS5" in str(exc):
                raise
            with file_lock(self.path / WRITE_LOCK, timeout=WRITE_LOCK_TIMEOUT):
                log.warning("%s does not open (%s); it is made again from L2", path, " ".join(str(exc).split()))
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
            return LexicalIndex(path)

    def _lexical_in_step(self) -> bool:
        return self.lexical.count() == self._col.count() + self._passages.count() and self.lexical.current()

    def _open_shared(self, collection: str) -> tuple[Any, Any]:
        """(client, collection) of this process's one client on the folder (made, and repaired, on first use)."""
        key = str(self.path.resolve())
        with _LOADED_LOCK:
            loaded = _LOADED.get(key)
            if loaded is None:
                token = read_generation(self.path)  # (read first: a write after it makes this load stale, not lost)
                client, col = open_local(
                    self.path,
                    lambda: self._connect(None, collection),
                    _record_text,
                    self.embedder.embed,
                    int(self.embedder.dim or 0),
                )
                loaded = _LOADED[key] = _Loaded(client, token)
            else:
                col = self._connect(loaded.client, collection)[1]
            loaded.users += 1
        self._loaded, self._load_seen = loaded, loaded.load
        return loaded.client, col

    def _connect_server(self, url: str, collection: str, create: bool) -> tuple[Any, Any]:
        """(client, collection) on the Chroma server at `url`, checked and probed (nothing is ever rebuilt here:
        the server's files are its own)."""
        from memwiki.layers.semantic.chroma_server import ChromaServerError, connect

        client = connect(url)
        try:
            col = client.get_collection(collection)
            if col is None and not create:
                raise ChromaServerError(
                    f"the Chroma server at {url} has no collection {collection!r}: it lost this store's L2, or it "
                    "is not the store's server (chroma.url in store.json); `memwiki init` makes it again, empty"
                )
            if col is None:
                col, self.created = self._connect(client, collection)[1], True
            self._col = col
            self._check_embedder()
            if col.dimension and self.embedder.dim and col.dimension != self.embedder.dim:
                raise EmbedderMismatchError(
                    f"collection {collection!r} on {url} holds {col.dimension}-d vectors, "
                    f"not {self.embedder.identity()}'s: vectors from two embedders cannot be compared"
                )
            probe_collections([col], int(self.embedder.dim or 0))
        except BaseException:
            client.close()
            raise
        return client, col

    def _connect(self, client: Any, collection: str) -> tuple[Any, Any]:
        """(client, collection). A local collection writes its vector index to disk at every write
        (`sync_threshold` 1): another process then loads it whole, with nothing left only in this one's memory."""
        import chromadb

        client = client if client is not None else chromadb.PersistentClient(path=str(self.path))
        col = client.get_or_create_collection(
            collection,
            embedding_function=None,
            configuration={"hnsw": self._hnsw_configuration()},
            metadata={
                "embedder": self.embedder.name,
                "model": _model_name(self.embedder),
                "dim": int(self.embedder.dim or 0),
            },
        )
        return client, col

    def _hnsw_configuration(self) -> dict[str, Any]:
        hnsw: dict[str, Any] = {"space": "cosine", "ef_search": HNSW_EF_SEARCH, "ef_construction": HNSW_EF_CONSTRUCTION}
        if self._shared:
            hnsw["sync_threshold"] = 1
        return hnsw

    @staticmethod
    def _sync_threshold(col: Any) -> int:  # noqa: ANN401 - a chromadb collection
        return int(((col.configuration or {}).get("hnsw") or {}).get("sync_threshold") or 0)

    def _write_index_at_every_write(self) -> None:
        """An older store's collections kept up to 1,000 writes in memory: from now on every write reaches the disk
        (the setting takes effect when the index is loaded again, so it is reloaded here)."""
        with file_lock(self.path / WRITE_LOCK, timeout=WRITE_LOCK_TIMEOUT):
            for col in (self._col, self._passages):
                if self._sync_threshold(col) != 1:
                    col.modify(configuration={"hnsw": {"sync_threshold": 1}})
            bump_generation(self.path)
            self._reload()

    def _fresh(self) -> None:
        """Before a read: reload Chroma when another process wrote since this one loaded (memwiki.store.generation),
        under the write lock (a load may itself write the index, and must not read one being written)."""
        if self._loaded is None:
            return
        if read_generation(self.path) != self._loaded.token:
            with file_lock(self.path / WRITE_LOCK, timeout=WRITE_LOCK_TIMEOUT):
                self._fresh_locked()
        self._adopt()

    def _fresh_locked(self) -> None:
        if self._loaded is not None and read_generation(self.path) != self._loaded.token:
            self._reload()
        self._adopt()

    def _reload(self) -> None:
        """Drop this process's copy of the vector index and load the folder's (the write lock is held). Every
        SemanticMemory of this process on the folder shares the client, and takes the new one (`_adopt`)."""
        loaded = self._loaded
        assert loaded is not None
        token = read_generation(self.path)
        with _LOADED_LOCK:
            loaded.client.close()
            loaded.client = self._connect(None, self._collection_name)[0]
            loaded.token, loaded.load = token, loaded.load + 1
        self._adopt()
        probe_collections([self._col, self._passages], int(self.embedder.dim or 0))

    def _adopt(self) -> None:
        """Take the process's current client on the folder (after a reload made a new one)."""
        loaded = self._loaded
        if loaded is None or self._load_seen == loaded.load:
            return
        self.__dict__.pop("_passages", None)
        self._passages_seen = None
        self.client, self._col = self._connect(loaded.client, self._collection_name)
        self._load_seen = loaded.load

    def close(self) -> None:
        """Release the lexical index and Chroma's shared system for this folder (Chroma keeps one per path in
        the process: a folder removed and made again must not meet the old one). A client this process shares
        on the folder is closed by the last SemanticMemory that used it."""
        self.lexical.close()
        if self._loaded is not None:
            with _LOADED_LOCK:
                self._loaded.users -= 1
                if self._loaded.users <= 0:
                    self._loaded.client.close()
                    _LOADED.pop(str(self.path.resolve()), None)
            self._loaded = None
        elif self._own_client and hasattr(self.client, "close"):
            self.client.close()

    def _check_embedder(self) -> None:
        made = self._col.metadata or {}
        name, model, dim = made.get("embedder", ""), made.get("model", ""), int(made.get("dim", 0) or 0)
        mine = _model_name(self.embedder)
        where = f"collection {self._col.name!r} on the Chroma server at {self.url}" if self.url else str(self.path)
        if not name:
            raise EmbedderMismatchError(
                f"{where}: no embedder recorded (not made by memwiki): its vectors cannot be compared with "
                f"{self.embedder.identity()}'s"
            )
        if name != self.embedder.name or model != mine or (dim and self.embedder.dim and dim != self.embedder.dim):
            raise EmbedderMismatchError(
                f"{where}: semantic memory was made with {name}{':' + model if model else ''}/{dim}, "
                f"not {self.embedder.identity()}: vectors from two embedders cannot be compared"
            )

    def rebuild_lexical(self) -> None:
        """Re-index every memory lexically (after a crash between the Chroma and the lexical write, or when
        the index was built by another tokenizer version)."""
        self.lexical.clear()
        batch: list[tuple[str, str]] = []
        split_ids = set()  # long memories: their passages are indexed, they are not
        for pid, text, meta in self._all_passages():
            batch.append((pid, text))
            split_ids.add(str(meta.get("memory_id", "")))
            if len(batch) >= 1000:
                self.lexical.upsert(batch)
                batch = []
        for memory in self.all():
            batch.append((memory.id, "" if memory.id in split_ids else index_text(memory)))
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
        for m in memories:
            check_text_size(m.text, self.max_input_bytes, f"memory {m.id!r}")
        own, split_ = self._embed(memories, whole=vectors is None)
        vectors = own if vectors is None else self._vectors_for(memories, vectors)
        self._write(memories, vectors, split_)

    def add(self, memories: Sequence[Memory], vectors: np.ndarray | None = None) -> None:
        """Like `upsert`, but refuses ids that are already stored."""
        self._fresh()
        memories = list(memories)
        existing = get_by_ids(self._col, [m.id for m in memories], [])["ids"] if memories else []
        if existing:
            raise DuplicateEntryError(f"memory {existing[0]!r} already exists in L2 ({len(existing)} existing ids)")
        self.upsert(memories, vectors)

    def delete(self, ids: Sequence[str]) -> None:
        ids = list(ids)
        if not ids:
            return
        with self._writing():
            self._drop_passages(ids)
            self._col.delete(ids=ids)
            self.lexical.delete(ids)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One writer at a time across processes (an MCP server, a hermes provider, the CLI on one store): the
        collection's write and the lexical index's are made together, never interleaved with another's.

        A write cut short (a refused call, a server gone, a kill) may leave passages in Chroma with no lexical commit
        to mark the change (`_has_passages`): the write path asks Chroma itself, and this process asks again after."""
        try:
            with file_lock(self.path / WRITE_LOCK, timeout=WRITE_LOCK_TIMEOUT):
                self._fresh_locked()  # never write from a stale index: it would overwrite what others wrote
                done = False
                try:
                    yield
                    done = True
                finally:
                    if self._loaded is not None:  # (a write that failed half-way: reload before the next call)
                        token = bump_generation(self.path)
                        self._loaded.token = token if done else ""
        finally:
            self._passages_seen = None

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

    def _write(self, memories: list[Memory], vectors: np.ndarray, split_: Split | None = None) -> None:
        """Write memories with their vectors, and the passages of the long ones (`split_`); the passages first:
        a write cut short leaves passages that `get` does not find, never a long memory without them."""
        with self._writing():
            self._write_unlocked(memories, vectors, split_ or {})

    def _write_unlocked(self, memories: list[Memory], vectors: np.ndarray, split_: Split) -> None:
        step = max(1, min(5000, self.client.get_max_batch_size()))
        self._drop_passages([m.id for m in memories])
        rows = [(m, span, v) for m in memories if m.id in split_ for span, v in zip(*split_[m.id], strict=True)]
        for start in range(0, len(rows), step):
            part = rows[start : start + step]
            self._passages.upsert(
                ids=[passage_id(m.id, span.index) for m, span, _ in part],
                embeddings=np.stack([v for *_, v in part]),
                documents=[m.text[span.start : span.end] for m, span, _ in part],
                metadatas=[{"memory_id": m.id, "passage": s.index, "start": s.start, "end": s.end} for m, s, _ in part],
            )
        for start in range(0, len(memories), step):
            chunk = memories[start : start + step]
            metadatas = [memory_to_metadata(m) for m in chunk]
            for m, meta in zip(chunk, metadatas, strict=True):
                if m.id in split_:
                    meta.update(passages=len(split_[m.id][0]), chars=len(m.text))
            self._col.upsert(
                ids=[m.id for m in chunk],
                embeddings=vectors[start : start + step],
                documents=[m.text for m in chunk],
                metadatas=metadatas,
            )
        self.lexical.upsert(self._lexical_rows(memories, split_))

    @staticmethod
    def _lexical_rows(memories: list[Memory], split_: Split) -> Iterator[tuple[str, str]]:
        """What the lexical index holds for these memories: a long one's passages (and its id, with no text)."""
        for m in memories:
            if m.id not in split_:
                yield m.id, index_text(m)
                continue
            yield m.id, ""
            for span in split_[m.id][0]:
                yield passage_id(m.id, span.index), m.text[span.start : span.end]

    def _embed(self, memories: Sequence[Memory], whole: bool = True, bar: Any = None) -> tuple[np.ndarray, Split]:
        """One vector per memory (a long one's: the normalised mean of its passages'; none unless `whole`) and
        the passages of the long ones with their vectors. The embedder gets `IMPORT_BATCH` texts at a time, none
        longer than a passage or `MAX_EMBED_BYTES`; `bar` counts memories."""
        texts: list[str] = []
        firsts: list[int] = []  # per memory, its first row in `texts`
        spans: dict[int, list[Span]] = {}
        for n, m in enumerate(memories):
            firsts.append(len(texts))
            if is_long(m.text):
                spans[n] = split(m.text)
                texts.extend(m.text[s.start : s.end] for s in spans[n])
            elif whole:
                texts.append(index_text(m))
        ends = [*firsts[1:], len(texts)]
        parts, done = [], 0
        for start in range(0, len(texts), IMPORT_BATCH):
            parts.append(self.embedder.embed(texts[start : start + IMPORT_BATCH]))
            if bar is not None:
                now = bisect.bisect_right(ends, start + len(parts[-1]))
                bar.update(now - done)
                done = now
        if bar is not None:
            bar.update(len(memories) - done)
        units = np.concatenate(parts) if parts else np.zeros((0, self.embedder.dim), dtype=np.float32)
        split_ = {memories[n].id: (s, units[firsts[n] : ends[n]]) for n, s in spans.items()}
        if not whole:
            return units[:0], split_
        own = np.stack([units[a:b].mean(axis=0) for a, b in zip(firsts, ends, strict=True)]) if memories else units
        own /= np.maximum(np.linalg.norm(own, axis=1, keepdims=True), 1e-12)
        return own.astype(np.float32), split_

    @cached_property
    def _passages(self) -> Any:
        """The collection of the passages of long memories, made with the memories' embedder (a chromadb
        Collection)."""
        return self.client.get_or_create_collection(
            self._col.name + PASSAGES_SUFFIX,
            embedding_function=None,
            configuration={"hnsw": self._hnsw_configuration()},
            metadata=dict(self._col.metadata or {}),
        )

    def _drop_passages(self, memory_ids: Sequence[str]) -> None:
        """Remove the passages of these memories (before they are written again, or deleted)."""
        if not memory_ids or not self._passages.count():  # Chroma itself: see _writing
            return
        old = self._passages.get(where={"memory_id": {"$in": list(memory_ids)}}, include=[])["ids"]
        if old:
            self._passages.delete(ids=old)
            self.lexical.delete(old)

    def _all_passages(self, batch: int = 1000) -> Iterator[tuple[str, str, dict[str, Any]]]:
        offset = 0
        while True:
            got = self._passages.get(limit=batch, offset=offset, include=["documents", "metadatas"])
            yield from zip(got["ids"], got["documents"], got["metadatas"], strict=True)
            if len(got["ids"]) < batch:
                return
            offset += batch

    # -- reads ----------------------------------------------------------------------------------------

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """The stored memories with these ids, in the order asked; unknown ids are left out."""
        self._fresh()
        ids = list(ids)
        if not ids:
            return []
        got = get_by_ids(self._col, ids, ["documents", "metadatas"])
        found = {
            i: memory_from_record(i, d, m)
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }
        if len(found) < len(ids):
            found.update(self._passage_records([i for i in ids if i not in found]))
        return [found[i] for i in ids if i in found]

    def _passage_records(self, ids: Sequence[str]) -> dict[str, Memory]:
        """Passages by id (`<memory id>#p<n>`), each as a `Memory` (`_passage_memories`)."""
        if not self._has_passages():
            return {}
        got = get_by_ids(self._passages, list(ids), ["documents", "metadatas"])
        return self._passage_memories(got["ids"], got["documents"], got["metadatas"])

    def _passage_memories(
        self, ids: Sequence[str], texts: Sequence[str | None], metadatas: Sequence[dict[str, Any] | None]
    ) -> dict[str, Memory]:
        """Passage records as `Memory`s: each its memory's fields, the passage's text, and `meta[PASSAGE_KEY]` =
        {memory_id, index, count, start, end, chars} pointing into the whole memory. A passage whose memory is gone
        (a write cut short, or the memory deleted meanwhile) is left out."""
        if not ids:
            return {}
        owners = list(dict.fromkeys(str((m or {}).get("memory_id", "")) for m in metadatas))
        parents = get_by_ids(self._col, owners, ["metadatas"])
        whole = dict(zip(parents["ids"], parents["metadatas"], strict=True))
        out = {}
        for pid, text, meta in zip(ids, texts, metadatas, strict=True):
            owner = str((meta or {}).get("memory_id", ""))
            if owner not in whole:
                continue
            memory = memory_from_record(pid, text, whole[owner])
            pointer = {
                "memory_id": owner,
                "index": int(meta["passage"]),
                "count": int(whole[owner].get("passages") or 0),
                "start": int(meta["start"]),
                "end": int(meta["end"]),
                "chars": int(whole[owner].get("chars") or 0),
            }
            out[pid] = replace(memory, meta={**memory.meta, PASSAGE_KEY: pointer})
        return out

    def _has_passages(self) -> bool:
        """Whether any long memory's passages are stored. Asked of Chroma again only after L2 changed (every L2 write
        ends with a commit of the lexical index, under the write lock: `LexicalIndex.version`), since on a Chroma
        server each question is a round trip, and recall asks on every call."""
        version = self.lexical.version()  # before the count: a write between the two is seen next time
        seen = self._passages_seen
        if seen is None or seen[0] != version:
            seen = self._passages_seen = (version, self._passages.count() > 0)
        return seen[1]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored vectors of these ids, in order; an unknown id, or one whose vector this process cannot read yet
        (written by another process a moment ago), is a MemwikiError."""
        self._fresh()
        ids = list(ids)
        if not ids:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        try:
            got = get_by_ids(self._col, ids, ["embeddings"])
        except Exception as exc:  # e.g. "Error finding id": a record this process's Chroma has not caught up with
            if not is_chroma_error(exc):
                raise
            raise MemwikiError(f"L2 vectors of {ids[0]!r}… not readable here yet: {exc}") from exc
        found = dict(zip(got["ids"], got["embeddings"], strict=True))
        missing = [i for i in ids if i not in found]
        if missing and self._has_passages():  # passages of long memories
            got = get_by_ids(self._passages, missing, ["embeddings"])
            found.update(zip(got["ids"], got["embeddings"], strict=True))
            missing = [i for i in missing if i not in found]
        if missing:
            raise MemwikiError(f"no L2 memory with id {missing[0]!r}")
        return np.asarray([found[i] for i in ids], dtype=np.float32)

    def search(self, vector: np.ndarray, k: int, where: dict[str, Any] | None = None) -> list[ScoredMemory]:
        """The `k` nearest memories to a query vector, score = cosine similarity."""
        self._fresh()
        rows = self._query(self._col, vector, k, where)
        return [ScoredMemory(memory_from_record(i, text, meta), cosine) for i, text, meta, cosine in rows]

    def nearest(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        """The `k` nearest memories to a query vector, a long memory by its passages (each a `Memory` as `get` gives
        it), with their records, score = cosine similarity: what recall ranks by meaning. One call to Chroma while
        the store holds no long memory (one round trip on a Chroma server; the records come with the search)."""
        self._fresh()
        # No count() first: it costs ~10 ms at 100k memories, and Chroma returns fewer hits when it holds fewer.
        rows = self._query(self._col, vector, k)
        hits = [
            ScoredMemory(memory_from_record(i, text, meta), cosine)
            for i, text, meta, cosine in rows
            if not meta.get("passages")  # a long memory is searched by its passages
        ]
        if len(hits) == len(rows) and not self._has_passages():
            return hits
        rows = self._query(self._passages, vector, k)
        passages = self._passage_memories([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
        hits += [ScoredMemory(passages[i], cosine) for i, _, _, cosine in rows if i in passages]
        return sorted(hits, key=lambda h: -h.score)[:k]

    @staticmethod
    def _query(
        collection: Any, vector: np.ndarray, k: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, str | None, dict[str, Any], float]]:
        """(id, document, metadata, cosine) of the `k` records of `collection` (the memories' or the passages')
        nearest to a query vector, nearest first."""
        if k <= 0:
            return []
        res = collection.query(
            query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
            n_results=k,
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        rows = zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0], strict=True)
        return [(i, text, meta or {}, 1.0 - float(d)) for i, text, meta, d in rows]

    def search_ids(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The (id, cosine) pairs of `nearest`."""
        self._fresh()
        return [(h.memory.id, h.score) for h in self.nearest(vector, k)]

    def get_with_vectors(self, ids: Sequence[str]) -> tuple[list[Memory], np.ndarray]:
        """`get(ids)` and the stored vector of each memory or passage it gives, in one call to Chroma (two when some
        are passages). A record whose vector this process's Chroma cannot read yet (written by another process a
        moment ago: "Error finding id") gets the vector its text embeds to, by the embedder that made the stored ones.
        """
        self._fresh()
        ids = list(ids)
        if not ids:
            return [], self._as_matrix([])
        try:
            found = self._records_with_vectors(ids)
        except Exception as exc:
            if not is_chroma_error(exc):
                raise
            memories = self.get(ids)
            texts = [m.text if PASSAGE_KEY in m.meta else index_text(m) for m in memories]
            return memories, self._as_matrix(self.embedder.embed(texts) if texts else [])
        present = [found[i] for i in ids if i in found]
        return [m for m, _ in present], self._as_matrix([v for _, v in present])

    def _records_with_vectors(self, ids: list[str]) -> dict[str, tuple[Memory, Any]]:
        include = ["documents", "metadatas", "embeddings"]
        got = get_by_ids(self._col, ids, include)
        rows = zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True)
        found = {i: (memory_from_record(i, text, meta), v) for i, text, meta, v in rows}
        missing = [i for i in ids if i not in found]
        if missing and self._has_passages():  # passages of long memories
            got = get_by_ids(self._passages, missing, include)
            passages = self._passage_memories(got["ids"], got["documents"], got["metadatas"])
            found.update(
                (i, (passages[i], v)) for i, v in zip(got["ids"], got["embeddings"], strict=True) if i in passages
            )
        return found

    def _as_matrix(self, vectors: Any) -> np.ndarray:  # noqa: ANN401 - rows of numbers
        """Vectors as a float32 matrix of this store's dimension (also when there are none)."""
        return np.asarray(vectors, dtype=np.float32).reshape(len(vectors), self.embedder.dim)

    def lexical_search(self, query: str, k: int, budget: int = POSTINGS_BUDGET) -> list[tuple[str, float]]:
        return self.lexical.search(query, k, budget)

    def all(self, batch: int = 1000) -> Iterator[Memory]:
        self._fresh()
        offset = 0
        while True:
            got = self._col.get(limit=batch, offset=offset, include=["documents", "metadatas"])
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
                yield memory_from_record(i, d, m)
            if len(got["ids"]) < batch:
                return
            offset += batch

    def count(self) -> int:
        self._fresh()
        return self._col.count()

    # -- bulk import ----------------------------------------------------------------------------------

    def import_jsonl(self, path: Path, progress: bool = False, max_input_bytes: int = 0) -> int:
        """Import `{"id", "text", "meta": {...}}` lines; everything is validated before anything is written.

        Ids are kept, so a re-import replaces rather than duplicates. Embedding runs while the previous
        batch is written (one writer thread), so import time is close to the embedder's own time.
        A line over `max_input_bytes` (default `self.max_input_bytes`) is refused, like any invalid line: the
        error names it and nothing of the file is written. Long memories are split into passages.
        """
        check_line_sizes(Path(path), max_input_bytes or self.max_input_bytes)
        memories = read_memories_jsonl(Path(path))
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(memories), unit="mem", desc=f"import {Path(path).name}", file=sys.stderr)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="l2-writer") as writer:
            pending: Future[None] | None = None
            for chunk in _write_batches(memories):
                vectors, split_ = self._embed(chunk, bar=bar)
                if pending is not None:
                    pending.result()
                pending = writer.submit(self._write, chunk, vectors, split_)
            if pending is not None:
                pending.result()
        if bar is not None:
            bar.close()
        return len(memories)


def read_memories_jsonl(path: Path) -> list[Memory]:
    """Parse and validate an L2 import file; an InputFormatError names the file and line."""
    from memwiki.common.jsonl import iter_jsonl

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


def _write_batches(memories: list[Memory]) -> Iterator[list[Memory]]:
    """The memories in import batches of at most WRITE_BATCH memories and, unless one alone is more, WRITE_BYTES
    characters of text (so that a file of long memories is not embedded and written all at once)."""
    chunk: list[Memory] = []
    size = 0
    for m in memories:
        if chunk and (len(chunk) >= WRITE_BATCH or size + len(m.text) > WRITE_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(m)
        size += len(m.text)
    if chunk:
        yield chunk


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
