"""The store: one folder holding the five layers, and the operations an agent runs on them.

The layout of the folder: memwiki.store.layout. `store.json` is written last by `init`, so a folder whose creation was
interrupted is not mistaken for a store; running `init` again completes it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwiki.common.times import utc_now
from memwiki.errors import MemwikiError, NotAStoreError, SourceError, StoreLockedError
from memwiki.layers.graph import KnowledgeGraph
from memwiki.layers.hot.core_by_meaning import CoreGuard
from memwiki.layers.hot.files import HotMemoryFile
from memwiki.layers.hot.overflow import SinkLog, remember, sink
from memwiki.layers.persona import read_persona, write_persona
from memwiki.layers.semantic.memory import SemanticMemory
from memwiki.layers.semantic.recovery import REBUILD_SUFFIX, finish_interrupted, recovery_lock
from memwiki.layers.sessions import SessionHistory
from memwiki.layers.turn_block import FrozenContext
from memwiki.recall.cascade import Hit, L2Index, OpeningL2, RecallConfig, Recaller, turn_text
from memwiki.recall.entity_pages import entity_pages
from memwiki.recall.files_layer import FILE_NAME as FILES_LAYER_FILE
from memwiki.recall.files_layer import FilesIndex, FilesSources
from memwiki.source import HotFile, LayerCounts, Persona, SinkRecord
from memwiki.store.config import (
    EMBEDDED_COLLECTION,
    StoreConfig,
    load_config,
    new_collection_name,
    save_config,
)
from memwiki.store.damage import damaged
from memwiki.store.layout import HOT_FILES, LAYER_PATHS, PERSONA_FILE, STORE_FILE, is_store
from memwiki.text.embedders import USE_NAME, Embedder, check_embedder, make_embedder
from memwiki.text.vectors import TextVectors

if TYPE_CHECKING:
    from memwiki.store.reader import StoreReader

HOT_TARGETS = ("memory", "user")
REQUIRED_PARTS = (PERSONA_FILE, *HOT_FILES.values(), *(LAYER_PATHS[k] for k in ("l2", "graph", "sessions", "wiki")))


@contextlib.contextmanager
def _names_damage(part: str, path: Path) -> Iterator[None]:
    """Turn a SQLite layer that will not open (garbage, half-written, not our schema) into a DamagedStoreError
    naming the layer; a locked file stays a StoreLockedError."""
    try:
        yield
    except (sqlite3.DatabaseError, SourceError) as exc:
        raise damaged(part, path, exc) from None
    except MemwikiError as exc:
        if isinstance(exc, StoreLockedError) or "SQLite" not in str(exc):
            raise
        raise damaged(part, path, exc) from None


def missing_parts(root: Path) -> list[str]:
    """The parts of a store that are not in `root` (`store.json` aside)."""
    return [name for name in REQUIRED_PARTS if not (root / name).exists()]


class Store:
    """A memwiki store folder. Layers open lazily; `close()` releases the SQLite connections."""

    def __init__(self, root: Path, config: StoreConfig, embedder: Embedder | None = None) -> None:
        self.root = root
        self.config = config
        if embedder is not None:
            check_embedder(config.embedder, embedder)
        self._embedder = embedder
        self._frozen: FrozenContext | None = None
        self.repaired: list[str] = []  # parts `init` had to recreate empty
        self._may_create_l2 = False  # only `init` makes a server's collection: opening never hides its loss
        self._opening_l2 = threading.Lock()  # (recall opens L2 in a thread of its own: see `recaller`)

    # ---- opening -------------------------------------------------------------------------------

    @classmethod
    def init(cls, root: str | Path, config: StoreConfig | None = None, embedder: Embedder | None = None) -> Store:
        """Create a store at `root`, or complete one whose creation was interrupted (its missing parts are
        created empty and listed in `store.repaired`). An existing store keeps its own settings."""
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise MemwikiError(f"{root}: exists and is not a folder")
        existing = is_store(root)
        if existing:
            config = load_config(root)
        else:
            config = config or StoreConfig()
            config.created_at = config.created_at or utc_now()
            if config.chroma.url and config.chroma.collection == EMBEDDED_COLLECTION:
                config.chroma.collection = new_collection_name(root)  # its own, on a server others may share
            if embedder is None:
                embedder = make_embedder(config.embedder)
            if config.embedder.name != USE_NAME:
                config.embedder.dim = embedder.dim or int(embedder.embed(["dimension probe"]).shape[1])
        root.mkdir(parents=True, exist_ok=True)
        store = cls(root, config, embedder)
        store.repaired = missing_parts(root) if existing else []
        store._may_create_l2 = True
        for name in (PERSONA_FILE, *HOT_FILES.values()):
            (root / name).touch(exist_ok=True)
        store.wiki_dir.mkdir(exist_ok=True)
        if store.semantic.created and existing:
            store.repaired.append(f"L2 collection {config.chroma.collection} on {config.chroma.url}")
        store._may_create_l2 = False
        store.graph.stats()
        store.sessions.stats()
        if not existing:
            save_config(root, config)
        return store

    @classmethod
    def open(cls, root: str | Path, embedder: Embedder | None = None) -> Store:
        """Open an existing store; a folder that is not one, or is missing a layer, is refused (opening
        never recreates a missing layer empty: that would hide the loss)."""
        root = Path(root)
        config = load_config(root)
        if (root / f"{LAYER_PATHS['l2']}{REBUILD_SUFFIX}").exists():  # an L2 rebuild a crash cut short
            with recovery_lock(root / LAYER_PATHS["l2"]):
                finish_interrupted(root / LAYER_PATHS["l2"])
        missing = missing_parts(root)
        if missing:
            raise NotAStoreError(
                f"{root}: half-written store, missing {', '.join(missing)} "
                "(restore them, or run `memwiki init` to recreate them empty)"
            )
        return cls(root, config, embedder)

    def check_present(self) -> None:
        """Refuse to write into a store whose folder was deleted or emptied while it was open: a write would make a
        partial folder, or go into a file that no longer has a name, and be acknowledged and lost."""
        missing = [STORE_FILE] if not is_store(self.root) else missing_parts(self.root)
        if missing:
            raise NotAStoreError(
                f"{self.root}: the store is gone or half there (missing {', '.join(missing)}): nothing was written"
            )

    def close(self) -> None:
        recaller = self.__dict__.pop("recaller", None)
        if recaller is not None and isinstance(recaller.l2, OpeningL2):
            recaller.l2.settle()  # (an L2 still opening is closed with the rest)
        for name in ("graph", "sessions", "semantic", "files_index"):
            layer = self.__dict__.pop(name, None)
            if layer is not None and hasattr(layer, "close"):
                layer.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- layers --------------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self.config.embedder)
        return self._embedder

    def hot(self, target: str) -> HotMemoryFile:
        cap = self.config.caps.memory if target == "memory" else self.config.caps.user
        return HotMemoryFile(self.root / HOT_FILES.get(target, target), target, cap, self.config.overflow_threshold)

    @cached_property
    def semantic(self) -> SemanticMemory:
        """L2, where store.json puts it: `l2/` (embedded Chroma), or its own collection on a Chroma server. Opened
        once, also when recall's thread and a writer ask at the same time."""
        with self._opening_l2:
            if "semantic" not in self.__dict__:
                self.__dict__["semantic"] = self._open_semantic()
            return self.__dict__["semantic"]

    def let_go_of_l2(self) -> None:
        """Close L2 until it is next asked for (a reader done with it: Chroma keeps its whole vector index in
        memory while open); not while this store's recall holds it."""
        if "recaller" in self.__dict__:
            return
        with self._opening_l2:
            semantic = self.__dict__.pop("semantic", None)
        if semantic is not None:
            semantic.close()

    def _open_semantic(self) -> SemanticMemory:
        chroma = self.config.chroma
        if not chroma.url:
            return SemanticMemory(self.root / LAYER_PATHS["l2"], self.embedder, collection=chroma.collection)
        return SemanticMemory(
            self.root / LAYER_PATHS["l2"],
            self.embedder,
            collection=chroma.collection,
            url=chroma.url,
            create=self._may_create_l2,
        )

    @cached_property
    def graph(self) -> KnowledgeGraph:
        path = self.root / LAYER_PATHS["graph"]
        with _names_damage("L3 knowledge graph", path):
            return KnowledgeGraph(path)

    @cached_property
    def sessions(self) -> SessionHistory:
        path = self.root / LAYER_PATHS["sessions"]
        with _names_damage("L4 session history", path):
            return SessionHistory(path)

    @cached_property
    def text_vectors(self) -> TextVectors:
        """The vectors of the store's texts other than L2's (turns, pages, hot entries), made once for every
        process that reads the store."""
        return TextVectors(self.root / LAYER_PATHS["vectors"], self.embedder)

    @cached_property
    def files_index(self) -> FilesIndex:
        """Recall's files layer (wiki pages with the graph's facts, and the graph's other entities), kept between
        processes beside the text vectors (memwiki.recall.files_layer)."""
        graph = self.root / LAYER_PATHS["graph"]
        sources = FilesSources(self.wiki_dir, graph, lambda: entity_pages(self.graph.entities(), self.graph.triples()))
        return FilesIndex(self.root / LAYER_PATHS["vectors"] / FILES_LAYER_FILE, sources, self.text_vectors)

    @cached_property
    def core_guard(self) -> CoreGuard:
        return CoreGuard(self.embedder)

    @cached_property
    def sink_log(self) -> SinkLog:
        return SinkLog(self.root / LAYER_PATHS["sinks"])

    @property
    def wiki_dir(self) -> Path:
        return self.root / LAYER_PATHS["wiki"]

    # ---- L0 + L1 -------------------------------------------------------------------------------

    def persona(self) -> Persona:
        return read_persona(self.root / LAYER_PATHS["persona"], self.config.caps.persona)

    def set_persona(self, text: str) -> None:
        write_persona(self.root / LAYER_PATHS["persona"], text, self.config.caps.persona)

    def hot_files(self) -> list[HotFile]:
        return [self.hot(target).view() for target in HOT_TARGETS]

    def start_session(self) -> str:
        """Freeze the per-turn context block; writes after this show from the next session on."""
        self._frozen = FrozenContext.freeze(self.persona(), self.hot_files())
        return self._frozen.text

    def context(self) -> str:
        """The per-turn injection block frozen at session start (frozen now if no session started)."""
        if self._frozen is None:
            return self.start_session()
        return self._frozen.text

    def _warm_if_sinking(self, target: str, added_chars: int) -> None:
        """Load the embedder before a write that may sink, so the model never loads under the hot lock."""
        try:
            hot = self.hot(target).view()
        except MemwikiError:
            return  # unreadable: the write itself backs the file up and refuses, with the reason
        if hot.chars + added_chars + 3 > hot.cap * hot.threshold:
            self.embedder.warm()

    def remember(self, text: str, target: str = "memory", category: str | None = None) -> list[SinkRecord]:
        """Add a hot-memory entry; non-core entries sink into L2 when the file passes its threshold."""
        self._warm_if_sinking(target, len(text))
        return remember(
            self.hot(target), self.semantic, self.sink_log, text, category, guard=self.core_guard.looks_core
        )

    def replace(self, old_text: str, new_text: str, target: str = "memory") -> list[SinkRecord]:
        self._warm_if_sinking(target, len(new_text))
        self.hot(target).replace(old_text, new_text)
        return sink(self.hot(target), self.semantic, self.sink_log, guard=self.core_guard.looks_core)

    def forget(self, old_text: str, target: str = "memory") -> None:
        self.hot(target).remove(old_text)

    def sink(self, targets: Sequence[str] = HOT_TARGETS) -> list[SinkRecord]:
        """Sink whatever is over threshold now (after a hand edit, or a lowered threshold)."""
        records: list[SinkRecord] = []
        for target in targets:
            self._warm_if_sinking(target, 0)
            records += sink(self.hot(target), self.semantic, self.sink_log, guard=self.core_guard.looks_core)
        return records

    # ---- recall and reading --------------------------------------------------------------------

    @cached_property
    def recaller(self) -> Recaller:
        return self._recaller(self.semantic)

    def recaller_for_one_query(self) -> Recaller:
        """`recaller`, for a process that recalls and exits (`memwiki recall`): L2 is opened in a thread of its own
        while the query is embedded (memwiki.recall.cascade.OpeningL2). A long-lived process opens it first (an MCP
        server, a hermes provider: a store removed under them is then never made again by a late opening)."""
        if "recaller" not in self.__dict__:
            self.__dict__["recaller"] = self._recaller(OpeningL2(lambda: self.semantic))
        return self.__dict__["recaller"]

    def _recaller(self, l2: L2Index) -> Recaller:
        return Recaller(
            self.embedder,
            hot_files=self.hot_files,
            l2=l2,
            sessions=self.sessions.search,
            config=RecallConfig(),
            text_vectors=self.text_vectors,
            files=self.files_index,
        )

    def keep_vectors(self) -> int:
        """Make the vectors recall and the site read of every text not yet embedded (hot entries, session turns,
        wiki and entity pages), after an import or a write; how many were made."""
        texts = [e.text for f in self.hot_files() for e in f.entries]
        texts += [turn_text(m.content) for s in self.sessions.sessions() for m in self.sessions.messages(s.id)]
        return self.text_vectors.ensure(texts) + self.keep_page_vectors()

    def keep_page_vectors(self) -> int:
        """`keep_vectors` for the wiki and entity pages only (after a graph write: no turn changed), by bringing
        recall's files layer up to date: only the pages whose files changed are read again."""
        return self.files_index.refresh()

    def recall(self, query: str, k: int = 5, all_layers: bool = False) -> list[Hit]:
        return self.recaller.recall(query, k=k, all_layers=all_layers)

    def reader(self) -> StoreReader:
        """The store's read-only `MemorySource`."""
        from memwiki.store.reader import StoreReader  # here: `import memwiki.store.store` need not load every reader

        return StoreReader(self)

    def stats(self) -> dict[str, Any]:
        """What each layer holds (`LayerCounts`), counted by each layer itself: every layer is opened."""
        graph, sessions = self.graph.stats(), self.sessions.stats()
        return LayerCounts(
            info=self.reader().info(),
            persona=self.persona(),
            hot=self.hot_files(),
            memories=self.semantic.count(),
            sunk=len(self.sink_log.records()),
            entities=graph["entities"],
            facts=graph["triples"],
            current=graph["current"],
            sessions=sessions["sessions"],
            messages=sessions["messages"],
            first=sessions["first"],
            last=sessions["last"],
            wiki_pages=sum(1 for _ in self.wiki_dir.rglob("*.md")),
        ).as_json()
