"""The one read-only interface through which the wiki (and recall over external sources) reads memory.

A `MemorySource` is implemented by the store itself (`memwiki.store.store.Store.reader()`), by the readers of
other layouts (a hermes-agent home, a MemPalace palace) and by their combination. The plugin never
opens Chroma or SQLite itself: it only calls these methods and reads these records.

Times are ISO-8601 strings in UTC (`2026-11-30T04:19:58Z`) or "" when unknown; dates are `YYYY-MM-DD`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np

R = TypeVar("R")  # a row of Changes

CORE_CATEGORIES = ("preference", "pitfall", "rule", "authorisation")
NON_CORE_CATEGORIES = ("network", "environment", "project", "technical", "other")
CATEGORIES = CORE_CATEGORIES + NON_CORE_CATEGORIES
DELIMITER = "\n§\n"  # between hot-memory entries, as hermes-agent writes them


@dataclass(frozen=True)
class SourceInfo:
    """What a source is, where it lives and what made its vectors."""

    kind: str  # "store", "hermes", "mempalace", "combined"
    location: str
    embedder: str  # e.g. "use-multilingual-v3"
    dim: int
    notes: tuple[str, ...] = ()  # warnings a person should see on the audit page
    name: str = ""  # what a public page calls it: "memwiki store", "hermes home", "palace"
    roots: tuple[tuple[str, str], ...] = ()  # (folder, name) of each source read: a public page names, not shows, them

    def described(self) -> str:
        """ "the hermes home at <location>", or "the hermes home" where the location is withheld."""
        name = self.name or self.kind
        return f"the {name}" if self.location in ("", name) else f"the {name} at {self.location}"


@dataclass(frozen=True)
class Persona:
    """L0: SOUL.md."""

    text: str  # the whole file as written: the privacy gate reads it before anything is cut from it
    cap: int
    chars: int  # length of the text on disk
    truncated: bool = False  # over the cap: the agent is given its head and tail only (`persona.injected`)
    path: str = ""
    modified: str = ""


@dataclass(frozen=True)
class HotEntry:
    """One entry of a hot file (L1)."""

    index: int
    text: str
    category: str  # one of CATEGORIES
    tagged: bool = False  # category came from an explicit tag such as [env]


@dataclass(frozen=True)
class HotFile:
    """L1: MEMORY.md ("memory") or USER.md ("user")."""

    target: str  # "memory" | "user"
    entries: tuple[HotEntry, ...]
    cap: int
    threshold: float  # e.g. 0.70
    path: str = ""
    modified: str = ""
    counted: int | None = None  # characters used as counted on disk, when `entries` are not all of them

    @property
    def chars(self) -> int:
        """Characters used, counted over the joined text as hermes-agent counts them."""
        if self.counted is not None:
            return self.counted
        return len(DELIMITER.join(e.text for e in self.entries))

    @property
    def usage(self) -> float:
        return self.chars / self.cap if self.cap else 0.0


@dataclass(frozen=True)
class SinkRecord:
    """One entry that sank from hot memory into L2."""

    memory_id: str  # id of the L2 memory it became
    target: str  # hot file it left: "memory" | "user"
    text: str
    category: str
    sunk_at: str
    reason: str  # e.g. "MEMORY.md at 74% (1,630/2,200) > 70%"


@dataclass(frozen=True)
class Memory:
    """L2: one semantic memory (a store's memory, a palace's drawer or diary entry)."""

    id: str
    text: str
    category: str = "other"
    source: str = "L2"  # layer of origin: "L2" (written there), "L1" (sunk from hot memory), "import", ...
    created: str = ""
    sunk_at: str = ""  # set when the memory sank from hot memory
    session_id: str = ""
    message_id: str = ""
    wing: str = ""
    room: str = ""
    meta: dict[str, Any] = field(default_factory=dict)  # everything else the source knows


@dataclass(frozen=True)
class Entity:
    """L3: a node of the knowledge graph."""

    id: str
    name: str
    type: str = "unknown"
    properties: dict[str, Any] = field(default_factory=dict)
    created: str = ""


@dataclass(frozen=True)
class Triple:
    """L3: a fact (subject, predicate, object) with its validity. `valid_to` "" means current."""

    id: str
    subject: str  # entity id
    predicate: str
    object: str  # entity id
    valid_from: str = ""
    valid_to: str = ""
    confidence: float = 1.0
    source: str = ""  # where the fact came from: a drawer, a file, a session, a closet
    extracted_at: str = ""
    subject_name: str = ""
    object_name: str = ""

    @property
    def current(self) -> bool:
        return not self.valid_to


@dataclass(frozen=True)
class Session:
    """L4: one conversation."""

    id: str
    title: str
    started: str
    ended: str = ""
    source: str = ""  # e.g. "cli", "telegram", "import"
    message_count: int = 0


@dataclass(frozen=True)
class Message:
    """L4: one message of a session."""

    id: str
    session_id: str
    role: str  # user | assistant | system | tool
    content: str
    time: str = ""
    tool_name: str = ""


@dataclass(frozen=True)
class SessionHit:
    """A session that matched a search: its best messages' ids, snippets around the matches and whole texts."""

    session: Session
    score: float
    snippets: tuple[str, ...]
    message_ids: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()  # the contents of the first len(texts) messages of `message_ids`


@dataclass(frozen=True)
class WikiPage:
    """A hand-written Markdown page of the store's wiki folder."""

    path: str  # relative to the wiki folder, POSIX separators
    title: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    body: str  # Markdown without the frontmatter
    modified: str = ""


@dataclass(frozen=True)
class Changes(Generic[R]):
    """Records written since a point of the source's own (the sequence number Chroma gives each write), and where
    the next call starts: what a source that can tell gives from its optional `memory_changes(seq, count, known)`
    (a StoreReader of an embedded L2), so that a site build reads the few memories an agent wrote, not all of them
    (memwiki.site.speed.layer_cache). Each layer on the way shapes the rows its own way; each row starts with the
    record's row and sequence number: (row, seq, ...)."""

    rows: list[R]  # the records written since, in row order (a read of all is in row order too)
    ids: list[str] | None  # every record's id now, when some were deleted since (None: none were)
    seq: int  # the last write: where the next call starts
    count: int  # records now
    total: int  # the sum of every record's sequence number now: a reader whose kept records, with these changes
    # applied, sum to another number kept another database's records (or missed a write), and reads them all


@dataclass(frozen=True)
class ScoredMemory:
    memory: Memory
    score: float  # cosine similarity in [-1, 1]


@runtime_checkable
class MemorySource(Protocol):
    """Read-only access to the five layers. Implementations never write to what they read."""

    def info(self) -> SourceInfo: ...

    def persona(self) -> Persona | None: ...

    def hot_files(self) -> Sequence[HotFile]: ...

    def sinks(self) -> Sequence[SinkRecord]: ...

    def memories(self) -> Iterator[Memory]: ...

    def memory_count(self) -> int: ...

    def memory_vectors(self, ids: Sequence[str]) -> np.ndarray | None:
        """Vectors of these memories from the source's embedder (info().embedder), in order; None when
        the source holds no vectors usable with that embedder."""
        ...

    def search_memories(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        """Nearest L2 memories to a query vector made by info().embedder."""
        ...

    def embed(self, texts: list[str]) -> np.ndarray | None:
        """Vectors for new texts from the embedder that ranks this source's memories in recall
        (e.g. to choose a session digest's key turns); None when no embedder can run here."""
        ...

    def l2_index(self) -> Any:
        """L2 as `memwiki.recall.cascade.L2Index` (dense + lexical search) for recall, or None without an L2 layer."""
        ...

    def entities(self) -> Sequence[Entity]: ...

    def triples(self) -> Sequence[Triple]: ...

    def sessions(self) -> Sequence[Session]: ...

    def messages(self, session_id: str) -> Sequence[Message]: ...

    def search_sessions(self, query: str, limit: int = 10) -> list[SessionHit]: ...

    def wiki_pages(self) -> Sequence[WikiPage]: ...

    def fingerprint(self) -> str:
        """Changes whenever anything readable here changes (for incremental site builds)."""
        ...

    def layer_fingerprints(self) -> dict[str, str]:
        """Per layer ("memories", "wiki", "graph", "sessions"), a string that changes whenever that layer's records
        do (e.g. its files' sizes and modification times), for the layers this source can tell cheaply; a site
        build keeps the others' records only for one build."""
        ...

    def close(self) -> None:
        """Let go of what reading opened (indexes, connections); what the source reads stays as it was."""
        ...


@dataclass(frozen=True)
class LayerCounts:
    """What each layer holds, in the one shape `memwiki stats` (and its `--json`) and the MCP server's
    `memwiki_stats` give for a store and for read-only sources alike (`as_json`). A store counts in SQL
    (`Store.stats`); a source through this interface (`of`)."""

    info: SourceInfo
    persona: Persona | None
    hot: Sequence[HotFile]
    memories: int
    sunk: int
    entities: int
    facts: int
    current: int
    sessions: int
    messages: int
    first: str  # the first and the last time in the sessions ("" without any)
    last: str
    wiki_pages: int

    @classmethod
    def of(cls, source: MemorySource) -> LayerCounts:
        triples, sessions = source.triples(), source.sessions()
        times = sorted(t for s in sessions for t in (s.started, s.ended) if t)
        return cls(
            info=source.info(),
            persona=source.persona(),
            hot=source.hot_files(),
            memories=source.memory_count(),
            sunk=len(source.sinks()),
            entities=len(source.entities()),
            facts=len(triples),
            current=sum(1 for t in triples if t.current),
            sessions=len(sessions),
            messages=sum(s.message_count for s in sessions),
            first=times[0] if times else "",
            last=times[-1] if times else "",
            wiki_pages=len(source.wiki_pages()),
        )

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": asdict(self.info)}
        if self.persona is not None:
            out["L0"] = {"chars": self.persona.chars, "cap": self.persona.cap}
        out["L1"] = {
            f.target: {"entries": len(f.entries), "chars": f.chars, "cap": f.cap, "usage": round(f.usage, 3)}
            for f in self.hot
        }
        out["L2"] = {"memories": self.memories, "sunk": self.sunk}
        out["L3"] = {"entities": self.entities, "triples": self.facts, "current": self.current}
        out["L3"]["ended"] = self.facts - self.current
        out["L4"] = {"sessions": self.sessions, "messages": self.messages, "first": self.first, "last": self.last}
        out["wiki"] = {"pages": self.wiki_pages}
        return out
