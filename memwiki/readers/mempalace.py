"""Read a MemPalace palace in place, strictly read-only, as a `MemorySource` (L2 and L3).

- L2: drawers (and closets, the palace's index cards) read straight from `chroma.sqlite3`: the metadata
  segment's `embeddings` / `embedding_metadata` (+ `embedding_metadata_array`) rows, plus any write still
  waiting in `embeddings_queue`. Chroma is never instantiated and the palace's embedding function never
  runs. Drawer kinds: mined project files, mined conversations, MCP `add_drawer`, diary entries
  (`diary_wing_<agent>_...`); anything else is read generically (`meta["kind"] = "drawer"`).
- L3: `knowledge_graph.sqlite3`, found beside the palace, in its parent folder or in the config folder.
- Vectors: the palace's own (MiniLM, 384-d, per `mempalace_embedder.json`) cannot embed a query here, so
  `info().embedder` names them and `memory_vectors()` is None; search goes through a `VectorCache` that
  embeds the drawers' texts with memwiki's embedder in a memwiki cache folder, never inside the palace.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memwiki.common.textio import read_text
from memwiki.common.times import stored_time
from memwiki.errors import EmbedderMismatchError, MemwikiError, SourceError
from memwiki.layers.graph import KnowledgeGraph
from memwiki.layers.hot.categories import category_of
from memwiki.readers.chroma_file import DOCUMENT_KEY, collection_records
from memwiki.readers.locate import find_knowledge_graph, mempalace_config_dir, palace_cache_dir
from memwiki.readers.sqlite_ro import ReadOnlyDB, open_readonly_db
from memwiki.readers.vector_cache import VectorCache
from memwiki.source import (
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
from memwiki.text.embedders import Embedder, label_of

log = logging.getLogger(__name__)

DRAWERS = "mempalace_drawers"
CLOSETS = "mempalace_closets"
DEFAULT_MODEL = "minilm"  # MemPalace's default embedder (all-MiniLM-L6-v2)
_DIARY_ID = re.compile(r"^diary_(wing_[^_]+)_")
_CLOSET_TARGETS = re.compile(r"→([^\n]+)")


class MemPalace:
    """A MemPalace palace folder read in place. `embedder` is memwiki's (for the VectorCache)."""

    def __init__(
        self,
        palace_path: str | Path,
        *,
        config_dir: str | Path | None = None,
        kg_path: str | Path | None = None,
        embedder: Embedder | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        self.root = Path(palace_path).expanduser()
        if not self.root.is_dir():
            raise SourceError(f"{self.root}: no MemPalace palace here (expected a folder with chroma.sqlite3)")
        self.config_dir = mempalace_config_dir(config_dir)
        self.embedder = embedder
        self.cache_dir = palace_cache_dir(self.root, cache_dir)
        self._notes: list[str] = []
        self.config = self._json(self.config_dir / "config.json") if self.config_dir.is_dir() else {}
        self.drawers_name = str(self.config.get("collection_name") or DRAWERS)
        self.kg_path = Path(kg_path) if kg_path else find_knowledge_graph(self.root, self.config_dir)
        self._cache: tuple[str, dict[str, list[Memory]], dict[str, int]] | None = None
        self._vectors: VectorCache | None = None
        self._vectors_key = ""
        if not (self.root / "chroma.sqlite3").is_file():
            self._note(f"{self.root}: no chroma.sqlite3 (an empty or unfinished palace); no drawers to read")

    # ── MemorySource ──

    def info(self) -> SourceInfo:
        _, dims = self._collections()
        model = self._palace_model()
        dim = dims.get(self.drawers_name) or 0
        notes = list(self._notes)
        if self.embedder is None:
            root = str(self.root)
            return SourceInfo("mempalace", root, model, dim, tuple(notes), "palace", ((root, "palace"),))
        notes.append(
            f"{self.root}: the palace's vectors come from its own embedder ({model}, {dim or '?'}-d), which "
            f"memwiki cannot run here; its texts were re-embedded with memwiki's embedder "
            f"{self.embedder.identity()} into {self.cache_dir} for recall and search (the palace is untouched)"
        )
        return SourceInfo(
            kind="mempalace",
            location=str(self.root),
            embedder=label_of(self.embedder),
            dim=self.embedder.dim,
            notes=tuple(notes),
            name="palace",
            roots=((str(self.root), "palace"),),
        )

    def persona(self) -> Persona | None:
        return None

    def hot_files(self) -> Sequence[HotFile]:
        return []

    def sinks(self) -> Sequence[SinkRecord]:
        return []

    def memories(self) -> Iterator[Memory]:
        """Every drawer (diary entries included), in the order they were filed."""
        collections, _ = self._collections()
        return iter(collections.get(self.drawers_name, []))

    def memory_count(self) -> int:
        collections, _ = self._collections()
        return len(collections.get(self.drawers_name, []))

    def closets(self) -> list[Memory]:
        """The palace's closets (index cards pointing at drawers: `meta["drawer_ids"]`)."""
        collections, _ = self._collections()
        return list(collections.get(CLOSETS, []))

    def memory_vectors(self, ids: Sequence[str]) -> np.ndarray | None:
        """The drawers' vectors from memwiki's embedder (the cache), never the palace's own: those cannot be
        compared with any query memwiki can embed here. None without an embedder."""
        if self.embedder is None:
            return None
        return self.l2_index().vectors(list(ids))

    def search_memories(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        """Nearest drawers to a query vector made by memwiki's embedder (through the VectorCache)."""
        index = self.l2_index()
        vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vector.shape[0] != index.embedder.dim:
            raise EmbedderMismatchError(
                f"{self.root}: search takes {index.embedder.identity()} vectors ({index.embedder.dim}-d), "
                f"got a {vector.shape[0]}-d vector"
            )
        return index.search(vector, k)

    def l2_index(self) -> VectorCache:
        """The palace's drawers embedded with memwiki's embedder (an L2Index for `memwiki.recall.cascade.Recaller`)."""
        if self.embedder is None:
            raise SourceError(f"{self.root}: searching the palace needs memwiki's embedder (none was given)")
        key = self.fingerprint()
        if self._vectors is None or key != self._vectors_key:
            if self._vectors is None:
                self._vectors = VectorCache(self.cache_dir, self.embedder)
            self._vectors.update(list(self.memories()))
            self._vectors_key = key
        return self._vectors

    def embed(self, texts: list[str]) -> np.ndarray | None:
        """Vectors for new texts from the embedder that search_memories takes; None without one."""
        return self.embedder.embed(texts) if self.embedder is not None else None

    def entities(self) -> Sequence[Entity]:
        with self._graph() as kg:
            return kg.entities() if kg is not None else []

    def triples(self) -> Sequence[Triple]:
        with self._graph() as kg:
            return kg.triples() if kg is not None else []

    def sessions(self) -> Sequence[Session]:
        return []

    def messages(self, session_id: str) -> Sequence[Message]:
        return []

    def search_sessions(self, query: str, limit: int = 10) -> list[SessionHit]:
        return []

    def wiki_pages(self) -> Sequence[WikiPage]:
        return []

    def layer_fingerprints(self) -> dict[str, str]:
        return {}  # its layers share files: only `fingerprint()` as a whole

    def fingerprint(self) -> str:
        digest = hashlib.sha1()
        paths = [self.root / "chroma.sqlite3", self.root / "mempalace_embedder.json"]
        if self.kg_path is not None:
            paths.append(self.kg_path)
        for path in paths:
            for p in (path, Path(f"{path}-wal")):
                with contextlib.suppress(OSError):
                    st = p.stat()
                    digest.update(f"{p}:{st.st_size}:{st.st_mtime_ns}".encode())
        return digest.hexdigest()

    def close(self) -> None:
        if self._vectors is not None:
            self._vectors.lexical.close()
            self._vectors = None

    def __enter__(self) -> MemPalace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── internals ──

    def _note(self, text: str) -> None:
        if text not in self._notes:
            log.warning(text)
            self._notes.append(text)

    def _json(self, path: Path) -> dict[str, Any]:
        if not path.is_file():
            return {}
        try:
            value = json.loads(read_text(path))
        except (MemwikiError, ValueError) as exc:
            self._note(f"{path}: unreadable ({exc}); using MemPalace's defaults")
            return {}
        return value if isinstance(value, dict) else {}

    def _palace_model(self) -> str:
        raw = self._json(self.root / "mempalace_embedder.json")
        entry = raw.get(self.drawers_name) or next(iter(raw.values()), {}) if raw else {}
        model = entry.get("model_name") if isinstance(entry, dict) else None
        return str(model or DEFAULT_MODEL)

    @contextlib.contextmanager
    def _graph(self) -> Iterator[KnowledgeGraph | None]:
        if self.kg_path is None or not self.kg_path.is_file():
            self._note(
                f"no knowledge_graph.sqlite3 beside {self.root}, in its parent folder or in {self.config_dir}; "
                "no graph to show"
            )
            yield None
            return
        try:
            with open_readonly_db(self.kg_path, "knowledge graph") as probe:
                for note in probe.notes:
                    self._note(note)
            kg = KnowledgeGraph.open_readonly(self.kg_path)
        except MemwikiError as exc:
            self._note(f"knowledge graph not shown: {exc}")
            yield None
            return
        try:
            yield kg
        finally:
            kg.close()

    def _collections(self) -> tuple[dict[str, list[Memory]], dict[str, int]]:
        """(memories per collection name, vector dimension per collection name), re-read when files change."""
        key = self.fingerprint()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1], self._cache[2]
        path = self.root / "chroma.sqlite3"
        if not path.is_file():
            return {}, {}
        try:
            with open_readonly_db(path, "Chroma database") as db:
                for note in db.notes:
                    self._note(note)
                collections, dims = _read_chroma(db, self._note)
        except MemwikiError as exc:
            self._note(f"drawers not shown: {exc}")
            return {}, {}
        self._cache = (key, collections, dims)
        return collections, dims


# ── chroma.sqlite3 ───────────────────────────────────────────────────────────────────────────────────


def _read_chroma(db: ReadOnlyDB, note: Any) -> tuple[dict[str, list[Memory]], dict[str, int]]:
    needed = {"collections", "segments", "embeddings", "embedding_metadata"}
    if missing := needed - db.tables():
        raise SourceError(
            f"{db.path}: not a Chroma database this reader knows (no {sorted(missing)}; Chroma before 0.4 kept "
            "its data in DuckDB/Parquet files, upgrade the palace with a current MemPalace first)"
        )
    dim_col = "dimension" if "dimension" in db.columns("collections") else "NULL AS dimension"
    out: dict[str, list[Memory]] = {}
    dims: dict[str, int] = {}
    for cid, name, dim in db.conn.execute(f"SELECT id, name, {dim_col} FROM collections ORDER BY name"):
        dims[name] = int(dim or 0)
        records, applied = collection_records(db, cid)
        if applied:
            note(f"{db.path}: {applied} write(s) to {name} still waiting in Chroma's queue were read too")
        out[name] = [_memory(rid, meta, name) for rid, meta in records.items()]
        if name not in (DRAWERS, CLOSETS) and not name.endswith(("drawers", "closets")):
            note(
                f"{db.path}: collection {name!r} is not one MemPalace makes; "
                f"its {len(out[name])} records were read generically"
            )
    return out, dims


def _kind(rid: str, meta: dict[str, Any], collection: str) -> str:
    if collection == CLOSETS or rid.startswith("closet_"):
        return "closet"
    if rid.startswith("diary_") or meta.get("type") == "diary_entry":
        return "diary"
    if meta.get("ingest_mode") == "convos" or "extract_mode" in meta or "convo_chunker_version" in meta:
        return "conversation"
    if meta.get("source_file"):
        return "project_file"
    if rid.startswith("drawer_") and meta.get("added_by"):
        return "mcp_drawer"
    return "drawer"


def _memory(rid: str, raw: dict[str, Any], collection: str) -> Memory:
    meta = dict(raw)
    text = meta.pop(DOCUMENT_KEY, None) or ""
    if not isinstance(text, str):
        text = str(text)
    kind = _kind(rid, meta, collection)
    meta["kind"] = kind
    meta["collection"] = collection
    entities = meta.get("entities")
    if isinstance(entities, str):
        meta["entities"] = [e for e in entities.split(";") if e.strip()]
    session_id = ""
    if kind == "diary":
        match = _DIARY_ID.match(rid)
        meta.setdefault("agent", match.group(1).removeprefix("wing_") if match else "")
    elif kind == "conversation" and meta.get("source_file"):
        session_id = Path(str(meta["source_file"])).stem
    elif kind == "closet":
        targets = [t.strip() for line in _CLOSET_TARGETS.findall(text) for t in line.split(",")]
        meta["drawer_ids"] = list(dict.fromkeys(t for t in targets if t))
    created = stored_time(meta.get("filed_at") or meta.get("authored_at") or meta.get("date") or "")
    category = category_of(text)[0] if kind != "closet" else "other"
    return Memory(
        id=rid,
        text=text,
        category=category,
        source="mempalace",
        created=created,
        session_id=session_id,
        wing=str(meta.get("wing") or ""),
        room=str(meta.get("room") or ""),
        meta=meta,
    )
