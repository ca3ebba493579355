"""`StoreReader`: the store's read-only `MemorySource`, what the wiki and other readers go through."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memory.embedders import embedder_label
from memory.snapshot import (
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
from memory.wiki import iter_wiki_pages

if TYPE_CHECKING:
    from memory.store import Store


class StoreReader:
    """Reads a memwiki store through its layers' own read methods; it never writes."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def info(self) -> SourceInfo:
        emb = self.store.config.embedder
        label = embedder_label(emb.name, emb.model)
        return SourceInfo(kind="store", location=str(self.store.root), embedder=label, dim=emb.dim)

    def persona(self) -> Persona | None:
        return self.store.persona()

    def hot_files(self) -> Sequence[HotFile]:
        return self.store.hot_files()

    def sinks(self) -> Sequence[SinkRecord]:
        return self.store.sink_log.records()

    def memories(self) -> Iterator[Memory]:
        return self.store.semantic.all()

    def memory_count(self) -> int:
        return self.store.semantic.count()

    def memory_vectors(self, ids: Sequence[str]) -> np.ndarray | None:
        return self.store.semantic.vectors(list(ids))

    def search_memories(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        return self.store.semantic.search(vector, k)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for new texts from the same embedder as the memories (e.g. for session digests)."""
        return self.store.embedder.embed(texts)

    def l2_index(self):  # noqa: ANN201 - memory.semantic.SemanticMemory, an L2Index
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

    def fingerprint(self) -> str:
        """A hash over the mtimes and sizes of every file of the store (cheap; changes on any write)."""
        digest = hashlib.sha1()
        for path in sorted(self.store.root.rglob("*")):
            if path.is_file() and not path.name.endswith(".lock"):
                stat = path.stat()
                digest.update(f"{path.relative_to(self.store.root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        return digest.hexdigest()
