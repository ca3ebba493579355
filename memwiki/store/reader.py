"""`StoreReader`: the store's read-only `MemorySource`, what the wiki and other readers go through."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from memwiki.common.textio import walk_files
from memwiki.layers.semantic.memory import memory_from_record
from memwiki.layers.semantic.passages import cut_to_bytes
from memwiki.layers.wiki import iter_wiki_pages
from memwiki.readers.chroma_file import DOCUMENT_KEY, read_changes, read_collection, read_queued_vectors
from memwiki.source import (
    Changes,
    Entity,
    HotFile,
    Memory,
    Message,
    Persona,
    ScoredMemory,
    Session,
    SessionHit,
    SinkRecord,
    SourceInfo,
    Triple,
    WikiPage,
)
from memwiki.store.layout import HOT_FILES, LAYER_PATHS, STORE_FILE
from memwiki.text.embedders import embedder_label
from memwiki.text.vectors import TextVectors

if TYPE_CHECKING:
    from memwiki.layers.graph import KnowledgeGraph
    from memwiki.layers.hot.overflow import SinkLog
    from memwiki.layers.semantic.memory import SemanticMemory
    from memwiki.layers.sessions import SessionHistory
    from memwiki.recall.cascade import Recaller
    from memwiki.store.config import StoreConfig
    from memwiki.text.embedders import Embedder


LET_GO_AFTER = 10_000  # vectors read through Chroma in one call past which its index is closed afterwards


class StoreLayers(Protocol):
    """What `StoreReader` reads of a store (`memwiki.store.store.Store`: described here, not imported, as the
    store hands out its reader)."""

    @property
    def root(self) -> Path: ...
    @property
    def config(self) -> StoreConfig: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def semantic(self) -> SemanticMemory: ...
    @property
    def recaller(self) -> Recaller: ...
    @property
    def graph(self) -> KnowledgeGraph: ...
    @property
    def sessions(self) -> SessionHistory: ...
    @property
    def sink_log(self) -> SinkLog: ...
    @property
    def wiki_dir(self) -> Path: ...
    def persona(self) -> Persona | None: ...
    def hot_files(self) -> Sequence[HotFile]: ...
    def let_go_of_l2(self) -> None: ...


def _layer_files() -> dict[str, tuple[str, ...]]:
    """The files (top-level names in the store) each layer is read from; the settings file goes with all
    that it sets (caps, the embedder)."""
    return {
        "persona": (LAYER_PATHS["persona"], STORE_FILE),
        "hot": (*HOT_FILES.values(), LAYER_PATHS["sinks"], STORE_FILE),
        "memories": (LAYER_PATHS["l2"], STORE_FILE),
        "graph": (LAYER_PATHS["graph"],),
        "sessions": (LAYER_PATHS["sessions"],),
        "wiki": (LAYER_PATHS["wiki"],),
    }


class StoreReader:
    """Reads a memwiki store through its layers' own read methods; it never writes."""

    def __init__(self, store: StoreLayers) -> None:
        self.store = store

    def recaller(self) -> Recaller:
        """The store's own recall, with the layers it keeps open (what `recaller_for` gives for a store)."""
        return self.store.recaller

    def info(self) -> SourceInfo:
        emb = self.store.config.embedder
        label = embedder_label(emb.name, emb.model)
        root = str(self.store.root)
        name = "memwiki store"
        return SourceInfo("store", root, label, emb.dim, name=name, roots=((root, name),))

    def persona(self) -> Persona | None:
        return self.store.persona()

    def hot_files(self) -> Sequence[HotFile]:
        return self.store.hot_files()

    def sinks(self) -> Sequence[SinkRecord]:
        return self.store.sink_log.records()

    def memories(self) -> Iterator[Memory]:
        """Read from Chroma's file when it is there (read-only; opening a Chroma client writes to it); a store
        whose L2 is on a Chroma server is read through the client (the server's files are not ours to read)."""
        records = self._file_records()
        if records is None:
            return self.store.semantic.all()
        return (memory_from_record(i, meta.pop(DOCUMENT_KEY, None), meta) for i, meta in records)

    def memory_changes(self, seq: int, count: int, known: set[str]) -> Changes[tuple[int, int, Memory]] | None:
        """The memories Chroma's file holds that were written after its sequence number `seq` (0: all), for a reader
        that then knew `count` memories with ids `known`; None when the file cannot say (L2 on a server, writes
        still queued: see chroma_file.collection_changes)."""
        path = self._chroma_file
        changes = read_changes(path, self._collection, seq, count, known) if path is not None else None
        if changes is None:
            return None
        rows = [(row, n, memory_from_record(i, meta.pop(DOCUMENT_KEY, None), meta)) for row, n, i, meta in changes.rows]
        return replace(changes, rows=rows)

    def memory_count(self) -> int:
        records = self._file_records()
        return len(records) if records is not None else self.store.semantic.count()

    def memory_vectors(self, ids: Sequence[str]) -> np.ndarray | None:
        """Vectors of recent writes come from Chroma's queue in its file; the others from Chroma itself."""
        found = {}
        if self._chroma_file is not None:
            found = read_queued_vectors(self._chroma_file, self._collection, ids, live=True)
        if len(found) < len(ids):
            missing = [i for i in ids if i not in found]
            found.update(zip(missing, self.store.semantic.vectors(missing), strict=True))
            if len(missing) >= LET_GO_AFTER:  # a site build reads them all once and keeps them (300 MB at 100k)
                self.store.let_go_of_l2()
        return np.stack([found[i] for i in ids]) if ids else np.zeros((0, self.store.config.embedder.dim), np.float32)

    def _file_records(self) -> list[tuple[str, dict]] | None:
        """The L2 records as Chroma's file holds them, or None when there is no file to read."""
        path = self._chroma_file
        return read_collection(path, self._collection, live=True) if path is not None else None

    @property
    def _collection(self) -> str:
        return self.store.config.chroma.collection

    @property
    def _chroma_file(self) -> Path | None:
        """`l2/chroma.sqlite3` of an embedded L2 once it exists; None for L2 on a Chroma server."""
        if self.store.config.chroma.url:
            return None
        path = self.store.root / LAYER_PATHS["l2"] / "chroma.sqlite3"
        return path if path.is_file() else None

    def search_memories(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        return self.store.semantic.search(vector, k)

    @property
    def text_vectors(self) -> TextVectors:
        return self.store.text_vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for new texts from the same embedder as the memories (e.g. for session digests); each text is
        cut to what the embedder reads well (a 5 MB message would take one forward pass of many GB)."""
        return self.store.text_vectors.of([cut_to_bytes(t) for t in texts])

    def l2_index(self):  # noqa: ANN201 - memwiki.layers.semantic.memory.SemanticMemory, an L2Index
        return self.store.semantic

    def entities(self) -> Sequence[Entity]:
        return self.store.graph.entities()

    def triples(self) -> Sequence[Triple]:
        return self.store.graph.triples()

    def sessions(self) -> Sequence[Session]:
        return self.store.sessions.sessions()

    def messages(self, session_id: str) -> Sequence[Message]:
        return self.store.sessions.messages(session_id)

    def search_sessions(self, query: str, limit: int = 10) -> list[SessionHit]:
        return self.store.sessions.search(query, limit)

    def wiki_pages(self) -> Sequence[WikiPage]:
        return list(iter_wiki_pages(self.store.wiki_dir))

    def layer_fingerprints(self) -> dict[str, str]:
        """Per layer, a hash over the sizes and mtimes of its files (cheap; changes on any write to the layer: with
        L2 on a Chroma server too, as every write through memwiki changes the lexical index in l2/; the server is
        not asked, so that a fingerprint never fails)."""
        layers = _layer_files()
        files: dict[str, list[tuple[str, os.stat_result]]] = {layer: [] for layer in layers}
        owners: dict[str, list[str]] = {}  # top-level name -> the layers it belongs to (10k wiki files: one lookup)
        for rel, stat in walk_files(str(self.store.root)):
            name = rel.rsplit("/", 1)[-1]
            if name.endswith((".lock", "-shm")):
                continue  # lock files, SQLite's shared-memory index: opening a database touches them
            if name.endswith("-wal") and stat.st_size == 0:
                continue  # an empty write-ahead log holds nothing (SQLite makes one when a database is opened)
            top = rel.split("/", 1)[0]
            if top not in owners:  # `-wal` / `-shm` go with their database
                owners[top] = [
                    layer for layer, names in layers.items() if any(top == p or top.startswith(p + "-") for p in names)
                ]
            for layer in owners[top]:
                files[layer].append((rel, stat))
        out = {}
        for layer, entries in files.items():
            digest = hashlib.sha1(layer.encode())
            for rel, stat in sorted(entries, key=lambda e: e[0]):
                digest.update(f"{rel}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
            out[layer] = digest.hexdigest()
        return out

    def close(self) -> None:
        """Nothing of its own to let go: the store is its opener's to close."""

    def fingerprint(self) -> str:
        """Changes on any write to the store."""
        return hashlib.sha1(repr(sorted(self.layer_fingerprints().items())).encode()).hexdigest()
