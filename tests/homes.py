"""A hermes-agent home and a MemPalace palace made at test time by the real upstream packages.

Tests say what to write and these helpers write it through the projects' own code, so every field of their
formats can carry whatever a test plants (a secret, a private marker, Chinese text):

- `make_hermes_home(root, soul, memory_entries, user_entries, sessions)`: `SOUL.md` written as a file (hermes
  users write it by hand); `memories/MEMORY.md` and `memories/USER.md` through hermes's own `MemoryStore` and
  `memory_tool()`; `state.db` through `hermes_state.SessionDB` (create session, append messages with tool calls
  and tool results, set title, end session). Caps too small for the entries are raised in `config.yaml`
  (`memory.memory_char_limit` / `memory.user_char_limit`), as a user who raised them would.
- `make_palace(root, drawers, facts, entities)`: drawers through `mempalace.palace.get_collection()` and
  `mempalace.miner.add_drawer()` (a drawer with a `source_file` is a mined project file, one without an MCP
  drawer), facts and entities through `mempalace.knowledge_graph.KnowledgeGraph` (`knowledge_graph.sqlite3`
  beside the drawers), MemPalace's config folder (`config.json`) beside the palace. The embedding function is
  `HashEmbedding`: deterministic vectors from hashed words, so nothing is downloaded (a reader must not count
  on the palace's vectors anyway).

What the real code refuses (a memory entry its threat scan blocks, a title over 100 characters) is written
anyway, the way a hand edit or an older version would leave it, and listed in `Made.forced`; pass
`force=False` to get `Refused` instead. Nothing here touches `~/.hermes` or `~/.mempalace`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERMES_DEFAULT_LIMITS = {"memory": 2200, "user": 1375}  # hermes-agent's MemoryStore defaults
ENTRY_DELIMITER = "\n§\n"  # hermes's separator between memory entries
DRAWERS = "mempalace_drawers"  # MemPalace's default drawers collection
PALACE_DIM = 384  # the width of MemPalace's default embedder (MiniLM), kept so the palace looks as usual


class Refused(RuntimeError):
    """The upstream code refused a write and `force=False` was given."""


@dataclass
class Made:
    """What a helper made: the folder a reader opens, and what upstream refused but was written anyway."""

    path: Path
    forced: list[str] = field(default_factory=list)


# ── hermes-agent ─────────────────────────────────────────────────────────────────────────────────────


@dataclass
class HermesMessage:
    """One row of hermes's `messages` table.

    `tool_calls` (assistant) are OpenAI-style calls, see `tool_call()`; a `tool` message answers one of them
    (`tool_call_id`) and names its tool (`tool_name`)."""

    role: str  # user | assistant | tool | system
    content: str | None = None
    tool_name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str) -> dict[str, Any]:
    """An OpenAI-style tool call as hermes stores it (`arguments` is a JSON string, as models send it)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


@dataclass
class HermesSession:
    """One row of hermes's `sessions` table and its messages (appended in order, stamped by hermes)."""

    id: str
    title: str = ""  # set with SessionDB.set_session_title (unique, at most 100 characters upstream)
    source: str = "cli"  # cli, telegram, discord, ...
    model: str = ""
    system_prompt: str = ""
    messages: list[HermesMessage] = field(default_factory=list)
    ended: bool = True  # end_session(..., "user_exit") after the messages


@dataclass
class HermesContent:
    """Everything `make_hermes_home` writes, to compose content from several planters before one write."""

    soul: str | None = None
    memory_entries: list[str] = field(default_factory=list)
    user_entries: list[str] = field(default_factory=list)
    sessions: list[HermesSession] = field(default_factory=list)

    def extend(self, other: HermesContent) -> HermesContent:
        """Add `other`'s entries and sessions to these; its SOUL.md text follows this one's."""
        if other.soul is not None:
            self.soul = other.soul if self.soul is None else self.soul.rstrip("\n") + "\n\n" + other.soul
        self.memory_entries += other.memory_entries
        self.user_entries += other.user_entries
        self.sessions += other.sessions
        return self

    def make(self, root: str | Path, **options: Any) -> Made:  # noqa: ANN401 - make_hermes_home's options
        return make_hermes_home(root, self.soul, self.memory_entries, self.user_entries, self.sessions, **options)


def make_hermes_home(
    root: str | Path,
    soul: str | None = None,
    memory_entries: Sequence[str] = (),
    user_entries: Sequence[str] = (),
    sessions: Sequence[HermesSession] = (),
    *,
    memory_char_limit: int | None = None,
    user_char_limit: int | None = None,
    force: bool = True,
) -> Made:
    """Make a hermes-agent home in `root` (created) with hermes-agent's own code; returns it as `Made`.

    `soul` is written to `SOUL.md` as is (None: no file). Entries go through `memory_tool(action="add")` in
    order (hermes strips them and skips exact duplicates). A limit left None is hermes's default, raised to fit
    the entries given; a limit other than the default is written to `config.yaml`, where hermes and memwiki's
    reader take it from."""
    from hermes_constants import reset_hermes_home_override, set_hermes_home_override
    from tools.memory_tool import MemoryStore, memory_tool

    home = Path(root)
    home.mkdir(parents=True, exist_ok=True)
    made = Made(home)
    if soul is not None:
        (home / "SOUL.md").write_text(soul, encoding="utf-8")
    limits = {
        "memory": memory_char_limit or max(HERMES_DEFAULT_LIMITS["memory"], _joined(memory_entries)),
        "user": user_char_limit or max(HERMES_DEFAULT_LIMITS["user"], _joined(user_entries)),
    }
    if limits != HERMES_DEFAULT_LIMITS:
        (home / "config.yaml").write_text(
            f"memory:\n  memory_char_limit: {limits['memory']}\n  user_char_limit: {limits['user']}\n",
            encoding="utf-8",
        )
    token = set_hermes_home_override(home)  # context-local: the memory tool writes under home/memories
    try:
        store = MemoryStore(memory_char_limit=limits["memory"], user_char_limit=limits["user"])
        store.load_from_disk()
        for target, entries in (("memory", memory_entries), ("user", user_entries)):
            for entry in entries:
                result = json.loads(memory_tool(action="add", target=target, content=entry, store=store))
                if not result.get("success"):
                    why = f"{target} entry refused by hermes ({result.get('error')}): {entry[:80]!r}"
                    if not force:
                        raise Refused(why)
                    _add_entry_anyway(store, target, entry)
                    made.forced.append(why)
        if sessions:
            _write_sessions(home / "state.db", sessions, made, force)
    finally:
        reset_hermes_home_override(token)
    return made


def _joined(entries: Sequence[str]) -> int:
    return len(ENTRY_DELIMITER.join(e.strip() for e in entries))


def _add_entry_anyway(store: Any, target: str, entry: str) -> None:  # noqa: ANN401 - hermes's MemoryStore
    """Append an entry the memory tool refused, through the store's own lock and serializer (a hand edit)."""
    with store._file_lock(store._path_for(target)):
        store._reload_target(target, skip_drift=True)
        entries = store._entries_for(target)
        entries.append(entry.strip())
        store._set_entries(target, entries)
        store.save_to_disk(target)


def _write_sessions(db_path: Path, sessions: Sequence[HermesSession], made: Made, force: bool) -> None:
    from hermes_state import SessionDB

    db = SessionDB(db_path=db_path)
    try:
        for session in sessions:
            db.create_session(
                session.id, session.source, model=session.model or None, system_prompt=session.system_prompt or None
            )
            for m in session.messages:
                db.append_message(
                    session.id,
                    m.role,
                    content=m.content,
                    tool_name=m.tool_name,
                    tool_calls=m.tool_calls,
                    tool_call_id=m.tool_call_id,
                )
            if session.title:
                try:
                    db.set_session_title(session.id, session.title)
                except ValueError as exc:
                    why = f"session {session.id!r}: title refused by hermes ({exc}): {session.title[:80]!r}"
                    if not force:
                        raise Refused(why) from exc
                    title = " ".join(session.title.split())
                    db._execute_write(lambda c, t=title, s=session.id: c.execute(_SET_TITLE, (t, s)))
                    made.forced.append(why)
            if session.ended:
                db.end_session(session.id, "user_exit")
    finally:
        db.close()


_SET_TITLE = "UPDATE sessions SET title = ? WHERE id = ?"


# ── MemPalace ────────────────────────────────────────────────────────────────────────────────────────


@dataclass
class Drawer:
    """One drawer: verbatim text filed in a wing and a room (a `source_file` makes it a mined project file)."""

    text: str
    wing: str = "notes"
    room: str = "general"
    source_file: str = ""
    agent: str = "memwiki-tests"  # the drawer's `added_by`


@dataclass
class PalaceEntity:
    """A knowledge-graph entity (`entities` row; its id is MemPalace's: lower-cased, spaces as `_`)."""

    name: str
    type: str = "unknown"
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class Fact:
    """A knowledge-graph triple. MemPalace stores the predicate lower-cased with spaces as `_`, and adds the
    subject and object as entities when they are not there yet."""

    subject: str
    predicate: str
    object: str
    valid_from: str | None = None  # YYYY-MM-DD or ISO time
    valid_to: str | None = None  # None: still true
    source_file: str | None = None


@dataclass
class PalaceContent:
    """Everything `make_palace` writes, to compose content from several planters before one write."""

    drawers: list[Drawer] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    entities: list[PalaceEntity] = field(default_factory=list)

    def extend(self, other: PalaceContent) -> PalaceContent:
        self.drawers += other.drawers
        self.facts += other.facts
        self.entities += other.entities
        return self

    def make(self, root: str | Path, **options: Any) -> Made:  # noqa: ANN401 - make_palace's options
        return make_palace(root, self.drawers, self.facts, self.entities, **options)


def make_palace(
    root: str | Path,
    drawers: Sequence[Drawer] = (),
    facts: Sequence[Fact] = (),
    entities: Sequence[PalaceEntity] = (),
    *,
    collection_name: str = DRAWERS,
) -> Made:
    """Make a MemPalace palace in `root/palace` (its config folder in `root/mempalace_config`, its lock files in
    `root/.mempalace/locks`) with MemPalace's own code; returns the palace folder as `Made`. Entities are written
    before facts, so a fact's subject or object named by an entity keeps that entity's type and properties."""
    from mempalace.knowledge_graph import KnowledgeGraph

    root = Path(root)
    palace, config_dir = root / "palace", root / "mempalace_config"
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.json").write_text(
        json.dumps({"palace_path": str(palace), "collection_name": collection_name}, indent=2), encoding="utf-8"
    )
    with offline_mempalace(config_dir):
        from mempalace.miner import add_drawer
        from mempalace.palace import get_backend_for_palace, get_collection

        collection = get_collection(str(palace), collection_name, create=True)
        chunks: dict[tuple[str, str, str], int] = {}
        try:
            for d in drawers:
                key = (d.wing, d.room, d.source_file)  # the drawer id is made of these and the chunk index
                chunks[key] = chunks.get(key, -1) + 1
                add_drawer(collection, d.wing, d.room, d.text, d.source_file, chunks[key], d.agent)
        finally:
            get_backend_for_palace(str(palace)).close_palace(str(palace))
    with KnowledgeGraph(str(palace / "knowledge_graph.sqlite3")) as kg:
        for e in entities:
            kg.add_entity(e.name, e.type, e.properties)
        for f in facts:
            kg.add_triple(
                f.subject,
                f.predicate,
                f.object,
                valid_from=f.valid_from,
                valid_to=f.valid_to,
                source_file=f.source_file,
            )
    return Made(palace)


class HashEmbedding:
    """A Chroma embedding function that downloads nothing: 384-d unit vectors from hashed words.

    It answers to the name MemPalace gives its MiniLM function (`default`), so the palace opens later as one
    MemPalace made."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Sequence[str]) -> list[np.ndarray]:  # noqa: A002 - Chroma's parameter name
        out = []
        for text in input:
            vector = np.zeros(PALACE_DIM, dtype=np.float32)
            for word in re.findall(r"\w+", text.lower()) or [""]:
                h = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
                vector[int.from_bytes(h[:4], "little") % PALACE_DIM] += 1.0 if h[4] & 1 else -1.0
            norm = float(np.linalg.norm(vector))
            out.append(vector / norm if norm else vector + 1.0 / PALACE_DIM**0.5)
        return out

    embed_query = __call__
    embed_documents = __call__

    @staticmethod
    def name() -> str:
        return "default"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashEmbedding:
        return HashEmbedding()

    def is_legacy(self) -> bool:
        return False

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine", "l2", "ip"]


@contextlib.contextmanager
def offline_mempalace(config_dir: Path) -> Iterator[None]:
    """MemPalace with its config folder at `config_dir`, `HashEmbedding` as its embedding function and HOME set to
    `config_dir`'s parent (its lock files go to `~/.mempalace/locks`)."""
    import mempalace.embedding as embedding

    # MemPalace keeps its lock files in ~/.mempalace/locks whatever its config folder: HOME points beside it
    env = {"MEMPALACE_CONFIG_DIR": str(config_dir), "HOME": str(config_dir.parent)}
    saved_env = {key: os.environ.get(key) for key in env}
    saved_function = embedding.get_embedding_function
    function = HashEmbedding()
    os.environ.update(env)
    embedding.get_embedding_function = lambda device=None, model=None: function
    try:
        yield
    finally:
        embedding.get_embedding_function = saved_function
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
