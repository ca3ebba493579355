"""`CombinedSource`: one `MemorySource` whose layers come from different sources.

The set-up memwiki is built for: a hermes home for L0 (persona), L1 (hot memory) and L4 (sessions), a
MemPalace palace for L2 (drawers) and L3 (knowledge graph), and a memwiki store for anything else (its
wiki pages, its sink log, or any layer the others do not provide).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from memwiki.source import (
    Entity,
    HotFile,
    Memory,
    MemorySource,
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
from memwiki.text.embedders import Embedder
from memwiki.text.vectors import TextVectors

LAYER_KEYS = ("L0", "L1", "L2", "L3", "L4", "files", "sinks")


class CombinedSource:
    """Each layer read from the source `layers` assigns it; a layer nobody provides is empty."""

    def __init__(
        self,
        layers: Mapping[str, MemorySource | None],
        embedder: Embedder | None = None,
        notes: Sequence[str] = (),
        text_vectors: TextVectors | None = None,
    ) -> None:
        unknown = set(layers) - set(LAYER_KEYS)
        if unknown:
            raise ValueError(f"unknown layer(s) {sorted(unknown)}; use {LAYER_KEYS}")
        self.layers = {k: v for k, v in layers.items() if v is not None}
        self.embedder = embedder  # what recall embeds queries with (the one that made L2's vectors)
        self.notes = tuple(notes)  # e.g. a source that could not be opened and was skipped
        self.text_vectors = text_vectors  # the vectors of its texts, kept in memwiki's cache (never in a source)

    @classmethod
    def of(
        cls,
        hermes: MemorySource | None = None,
        palace: MemorySource | None = None,
        store: MemorySource | None = None,
        embedder: Embedder | None = None,
        notes: Sequence[str] = (),
        text_vectors: TextVectors | None = None,
    ) -> CombinedSource:
        """hermes → L0, L1, L4; palace → L2, L3; the store for the rest and for what the others lack."""
        return cls(
            {
                "L0": hermes or store,
                "L1": hermes or store,
                "L2": palace or store,
                "L3": palace or store,
                "L4": hermes or store,
                "files": store,
                "sinks": store,
            },
            embedder,
            notes,
            text_vectors,
        )

    def sources(self) -> list[MemorySource]:
        return list({id(s): s for s in self.layers.values()}.values())

    def _get(self, layer: str) -> MemorySource | None:
        return self.layers.get(layer)

    # ── MemorySource ──

    def info(self) -> SourceInfo:
        l2 = self._get("L2")
        l2_info = l2.info() if l2 is not None else None
        notes: list[str] = list(self.notes)
        parts, names, roots = [], [], []
        for source in self.sources():
            info = l2_info if source is l2 and l2_info is not None else source.info()
            given = ", ".join(k for k, v in self.layers.items() if v is source)
            parts.append(f"{info.kind}:{info.location} ({given})")
            names.append(f"{info.name or info.kind} ({given})")
            roots += info.roots
            notes.extend(info.notes)
        return SourceInfo(
            kind="combined",
            location="; ".join(parts),
            embedder=l2_info.embedder if l2_info else "none",
            dim=l2_info.dim if l2_info else 0,
            notes=tuple(dict.fromkeys(notes)),
            name=" + ".join(names),
            roots=tuple(roots),
        )

    def persona(self) -> Persona | None:
        source = self._get("L0")
        return source.persona() if source is not None else None

    def hot_files(self) -> Sequence[HotFile]:
        source = self._get("L1")
        return source.hot_files() if source is not None else []

    def sinks(self) -> Sequence[SinkRecord]:
        source = self._get("sinks")
        return source.sinks() if source is not None else []

    def memories(self) -> Iterator[Memory]:
        source = self._get("L2")
        return source.memories() if source is not None else iter(())

    def memory_count(self) -> int:
        source = self._get("L2")
        return source.memory_count() if source is not None else 0

    def memory_vectors(self, ids: Sequence[str]) -> np.ndarray | None:
        source = self._get("L2")
        return source.memory_vectors(ids) if source is not None else None

    def search_memories(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        source = self._get("L2")
        return source.search_memories(vector, k) if source is not None else []

    def entities(self) -> Sequence[Entity]:
        source = self._get("L3")
        return source.entities() if source is not None else []

    def triples(self) -> Sequence[Triple]:
        source = self._get("L3")
        return source.triples() if source is not None else []

    def sessions(self) -> Sequence[Session]:
        source = self._get("L4")
        return source.sessions() if source is not None else []

    def messages(self, session_id: str) -> Sequence[Message]:
        source = self._get("L4")
        return source.messages(session_id) if source is not None else []

    def search_sessions(self, query: str, limit: int = 10) -> list[SessionHit]:
        source = self._get("L4")
        return source.search_sessions(query, limit) if source is not None else []

    def wiki_pages(self) -> Sequence[WikiPage]:
        source = self._get("files")
        return source.wiki_pages() if source is not None else []

    def layer_fingerprints(self) -> dict[str, str]:
        return {}  # each layer mixes several sources': only `fingerprint()` as a whole

    def fingerprint(self) -> str:
        digest = hashlib.sha1()
        for source in self.sources():
            digest.update(source.fingerprint().encode())
        return digest.hexdigest()

    # ── beyond the protocol: what recall over sources needs ──

    def l2_index(self):  # noqa: ANN201 - an L2Index (memwiki.recall.cascade) or None
        """The L2 layer as recall's `L2Index` (a palace's VectorCache, a store's SemanticMemory), or None."""
        source = self._get("L2")
        return source.l2_index() if source is not None else None

    def embed(self, texts: list[str]) -> np.ndarray | None:
        """Vectors from the embedder that ranks L2 in recall (a store's own kept vectors, else memwiki's cache of
        them, else the embedder alone)."""
        source = self._get("L2")
        if getattr(source, "text_vectors", None) is not None:  # a store: its own
            return source.embed(texts)
        if self.text_vectors is not None:
            return self.text_vectors.of(texts)
        if source is not None:
            return source.embed(texts)
        return self.embedder.embed(texts) if self.embedder is not None else None

    def close(self) -> None:
        for source in self.sources():
            source.close()

    def __enter__(self) -> CombinedSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
