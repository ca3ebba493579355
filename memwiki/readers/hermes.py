"""Read a hermes-agent home (`~/.hermes`) in place, strictly read-only, as a `MemorySource`.

- L0: `SOUL.md` (cap 3,000 unless given).
- L1: `memories/MEMORY.md` and `memories/USER.md` (caps from `config.yaml` `memory.memory_char_limit` /
  `memory.user_char_limit` when set, else hermes's defaults 2,200 / 1,375).
- L4: `state.db` sessions and messages. The layout is detected from the columns the file really has, so
  every schema version from 1 on reads (`title` arrived in v3; before it a title is derived from the first
  user message); versions newer than the ones known here read what they can, with a note naming them.
  hermes's own FTS tables vary by version and are not used: search runs on a private in-memory index.

Nothing is ever written beside the home: SQLite files are opened with `memwiki.readers.sqlite_ro`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from memwiki.common.textio import read_text
from memwiki.common.times import mtime_iso, stored_time
from memwiki.errors import MemwikiError, SourceError
from memwiki.layers.hot.categories import category_of
from memwiki.layers.hot.files import drift_reason, parse_entries
from memwiki.layers.sessions import query_words, snippet
from memwiki.readers.sqlite_ro import ReadOnlyDB, open_readonly_db
from memwiki.source import (
    Entity,
    HotEntry,
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
from memwiki.store.config import StoreConfig
from memwiki.store.layout import HOT_FILES
from memwiki.text.lexical import LexicalIndex

log = logging.getLogger(__name__)

DEFAULTS = StoreConfig()  # hermes's own defaults are memwiki's: 2,200 / 1,375 chars, persona 3,000
KNOWN_SCHEMA = 30  # newest hermes state.db schema version whose layout this reader was checked against
TITLE_WIDTH = 60
_MESSAGE_NEEDS = ("session_id", "role")


class HermesHome:
    """A hermes-agent home read in place. Every read goes to disk (nothing is cached but the search index)."""

    def __init__(
        self,
        path: str | Path,
        *,
        persona_cap: int | None = None,
        memory_cap: int | None = None,
        user_cap: int | None = None,
        threshold: float = DEFAULTS.overflow_threshold,
    ) -> None:
        self.root = Path(path).expanduser()
        if not self.root.is_dir():
            raise SourceError(f"{self.root}: no hermes home here (expected a folder with SOUL.md, memories/, state.db)")
        self.threshold = threshold
        self._notes: list[str] = []
        config = self._config()
        memory_cfg = config.get("memory") if isinstance(config.get("memory"), dict) else {}
        self.persona_cap = persona_cap or DEFAULTS.caps.persona
        self.caps = {
            "memory": memory_cap or _positive_int(memory_cfg.get("memory_char_limit")) or DEFAULTS.caps.memory,
            "user": user_cap or _positive_int(memory_cfg.get("user_char_limit")) or DEFAULTS.caps.user,
        }
        self._index: LexicalIndex | None = None
        self._index_key: str = ""
        self._db_notes: list[str] = []
        self._probed = False
        if not any((self.root / n).exists() for n in ("SOUL.md", "memories", "state.db", "config.yaml")):
            self._notes.append(f"{self.root}: empty hermes home (no SOUL.md, memories/ or state.db)")

    # ── configuration ──

    def _config(self) -> dict[str, Any]:
        path = self.root / "config.yaml"
        if not path.is_file():
            return {}
        try:
            raw = yaml.safe_load(read_text(path))
        except (MemwikiError, yaml.YAMLError) as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
            self._notes.append(f"{where}: unreadable configuration, using hermes's default limits ({exc})")
            return {}
        return raw if isinstance(raw, dict) else {}

    # ── MemorySource ──

    def info(self) -> SourceInfo:
        self._session_db_probe()
        return SourceInfo(
            kind="hermes",
            location=str(self.root),
            embedder="none",
            dim=0,
            notes=tuple(dict.fromkeys(self._notes + self._db_notes)),
            name="hermes home",
            roots=((str(self.root), "hermes home"),),
        )

    def persona(self) -> Persona | None:
        from memwiki.layers.persona import read_persona

        path = self.root / "SOUL.md"
        if not path.is_file():
            return None
        try:
            persona = read_persona(path, self.persona_cap)
        except MemwikiError as exc:
            self._note(f"persona not shown: {exc}")
            return None
        if persona.truncated:
            self._note(f"{path}: {persona.chars:,} chars, over the {persona.cap:,}-char cap; cut as hermes does")
        return persona

    def hot_files(self) -> Sequence[HotFile]:
        out = []
        for target, name in HOT_FILES.items():
            path = self.root / "memories" / name
            if not path.is_file():
                continue
            try:
                text = read_text(path)
            except MemwikiError as exc:
                self._note(f"{name} not shown: {exc}")
                continue
            if _lock_held(path.with_name(name + ".lock")):
                self._note(
                    f"{path}: the hermes memory tool is writing it right now ({name}.lock is held); "
                    "showing the last saved version"
                )
            if reason := drift_reason(path, path.read_bytes(), self.caps[target]):
                self._note(f"{path}: not in hermes's exact format ({reason}); read leniently as hermes does")
            entries = tuple(
                HotEntry(i, entry, *category_of(entry)) for i, entry in enumerate(dict.fromkeys(parse_entries(text)))
            )
            out.append(HotFile(target, entries, self.caps[target], self.threshold, str(path), mtime_iso(path)))
        return out

    def sinks(self) -> Sequence[SinkRecord]:
        return []

    def memories(self) -> Iterator[Memory]:
        return iter(())

    def memory_count(self) -> int:
        return 0

    def memory_vectors(self, ids: Sequence[str]) -> np.ndarray | None:
        return None

    def search_memories(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        return []

    def embed(self, texts: list[str]) -> np.ndarray | None:
        """None: a hermes home has no semantic layer and no embedder."""
        return None

    def l2_index(self) -> None:
        """None: a hermes home has no semantic layer."""
        return None

    def entities(self) -> Sequence[Entity]:
        return []

    def triples(self) -> Sequence[Triple]:
        return []

    def sessions(self) -> Sequence[Session]:
        with self._db() as db:
            if db is None:
                return []
            return _read_sessions(db, self._db_notes)

    def messages(self, session_id: str) -> Sequence[Message]:
        with self._db() as db:
            if db is None:
                return []
            return _read_messages(db, session_id, self._db_notes)

    def search_sessions(self, query: str, limit: int = 10) -> list[SessionHit]:
        """Sessions whose messages match `query` (CJK bigrams and stemmed words, bm25), best first."""
        if not query.strip() or limit <= 0:
            return []
        sessions, messages = self._all()
        index = self._search_index(messages)
        by_id = {m.id: m for m in messages}
        hits = index.search(query, max(limit * 20, 50))
        grouped: dict[str, list[tuple[Message, float]]] = {}
        for message_id, score in hits:
            message = by_id[message_id]
            grouped.setdefault(message.session_id, []).append((message, score))
        session_by_id = {s.id: s for s in sessions}
        out = []
        for session_id, matched in grouped.items():
            if session_id not in session_by_id:
                continue
            matched.sort(key=lambda ms: -ms[1])
            score = matched[0][1] + 0.25 * sum(s for _, s in matched[1:3])
            best = [m for m, _ in matched[:3]]
            snippets = tuple(snippet(m.content, query_words(query)) for m in best)
            ids = tuple(m.id for m, _ in matched)
            out.append(SessionHit(session_by_id[session_id], score, snippets, ids, tuple(m.content for m in best)))
        out.sort(key=lambda h: -h.score)
        return out[:limit]

    def wiki_pages(self) -> Sequence[WikiPage]:
        return []

    def layer_fingerprints(self) -> dict[str, str]:
        return {}  # its layers share files: only `fingerprint()` as a whole

    def fingerprint(self) -> str:
        digest = hashlib.sha1()
        for rel in ("SOUL.md", "config.yaml", "memories/MEMORY.md", "memories/USER.md", "state.db", "state.db-wal"):
            path = self.root / rel
            with contextlib.suppress(OSError):
                st = path.stat()
                digest.update(f"{rel}:{st.st_size}:{st.st_mtime_ns}".encode())
        return digest.hexdigest()

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> HermesHome:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── internals ──

    def _note(self, text: str) -> None:
        log.warning(text)
        if text not in self._notes:
            self._notes.append(text)

    @contextlib.contextmanager
    def _db(self) -> Iterator[ReadOnlyDB | None]:
        path = self.root / "state.db"
        if not path.is_file():
            yield None
            return
        try:
            db = open_readonly_db(path, "hermes session database")
        except MemwikiError as exc:
            self._note(f"sessions not shown: {exc}")
            yield None
            return
        try:
            for note in db.notes:
                if note not in self._db_notes:
                    self._db_notes.append(note)
            _check_version(db, self._db_notes)
            yield db
        finally:
            db.close()

    def _session_db_probe(self) -> None:
        """Open state.db once so that info() carries its notes (version, locks, snapshot)."""
        if not self._probed:
            self._probed = True
            with self._db():
                pass

    def _all(self) -> tuple[list[Session], list[Message]]:
        with self._db() as db:
            if db is None:
                return [], []
            sessions = _read_sessions(db, self._db_notes)
            messages = _read_messages(db, None, self._db_notes)
        return sessions, messages

    def _search_index(self, messages: list[Message]) -> LexicalIndex:
        key = self.fingerprint()
        if self._index is None or key != self._index_key:
            if self._index is not None:
                self._index.close()
            self._index = LexicalIndex(":memory:")
            self._index.upsert((m.id, f"{m.content} {m.tool_name}") for m in messages if m.content or m.tool_name)
            self._index_key = key
        return self._index


# ── state.db layouts ─────────────────────────────────────────────────────────────────────────────────


def _check_version(db: ReadOnlyDB, notes: list[str]) -> None:
    version = None
    if "schema_version" in db.tables():
        with contextlib.suppress(Exception):
            row = db.conn.execute("SELECT max(version) FROM schema_version").fetchone()
            version = row[0] if row else None
    if version is None:
        _add(
            notes,
            f"{db.path}: no schema version recorded (a very early or foreign layout); "
            "its sessions and messages were read by column",
        )
    elif version > KNOWN_SCHEMA:
        _add(
            notes,
            f"{db.path}: hermes state.db schema version {version} is newer than the versions this reader knows "
            f"(1–{KNOWN_SCHEMA}); the sessions and messages columns it recognises were read",
        )
    for table in ("sessions", "messages"):
        if table not in db.tables():
            _add(notes, f"{db.path}: no `{table}` table (schema version {version}); nothing of it could be read")


def _add(notes: list[str], text: str) -> None:
    if text not in notes:
        log.warning(text)
        notes.append(text)


def _select(db: ReadOnlyDB, table: str, wanted: Sequence[str]) -> str:
    have = set(db.columns(table))
    return ", ".join(c if c in have else f"NULL AS {c}" for c in wanted)


def _read_sessions(db: ReadOnlyDB, notes: list[str]) -> list[Session]:
    if "sessions" not in db.tables():
        return _sessions_from_messages(db)
    have = set(db.columns("sessions"))
    if "id" not in have:
        _add(notes, f"{db.path}: `sessions` has no id column; sessions not read")
        return []
    cols = _select(db, "sessions", ("id", "title", "started_at", "ended_at", "source"))
    counts, firsts = _message_stats(db)
    order = "started_at, id" if "started_at" in have else "rowid"
    out = []
    for r in db.conn.execute(f"SELECT {cols} FROM sessions ORDER BY {order}"):
        sid = str(r["id"])
        title = (r["title"] or "").strip() or firsts.get(sid, "") or sid
        out.append(
            Session(
                id=sid,
                title=title,
                started=stored_time(r["started_at"]),
                ended=stored_time(r["ended_at"]),
                source=r["source"] or "",
                message_count=counts.get(sid, 0),
            )
        )
    return out


def _sessions_from_messages(db: ReadOnlyDB) -> list[Session]:
    if "messages" not in db.tables():
        return []
    counts, firsts = _message_stats(db)
    return [Session(id=sid, title=firsts.get(sid, "") or sid, started="", message_count=n) for sid, n in counts.items()]


def _message_stats(db: ReadOnlyDB) -> tuple[dict[str, int], dict[str, str]]:
    """Per session: how many messages, and a title from the first user message (for sessions without one)."""
    if not set(_MESSAGE_NEEDS) <= set(db.columns("messages")):
        return {}, {}
    counts = {str(r[0]): r[1] for r in db.conn.execute("SELECT session_id, count(*) FROM messages GROUP BY session_id")}
    firsts: dict[str, str] = {}
    content = "content" if "content" in db.columns("messages") else "''"
    for sid, text in db.conn.execute(
        f"SELECT session_id, {content} FROM messages WHERE role = 'user' AND {content} IS NOT NULL ORDER BY rowid"
    ):
        firsts.setdefault(str(sid), _title_from(text or ""))
    return counts, firsts


def _title_from(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= TITLE_WIDTH else line[: TITLE_WIDTH - 1].rstrip() + "…"


def _read_messages(db: ReadOnlyDB, session_id: str | None, notes: list[str]) -> list[Message]:
    have = set(db.columns("messages"))
    if not have:
        return []
    if missing := [c for c in _MESSAGE_NEEDS if c not in have]:
        _add(notes, f"{db.path}: `messages` lacks {missing}; messages not read")
        return []
    ident = "id" if "id" in have else "rowid"
    cols = _select(db, "messages", ("content", "tool_calls", "tool_name", "timestamp"))
    order = "timestamp, " if "timestamp" in have else ""
    where, params = ("WHERE session_id = ?", (session_id,)) if session_id is not None else ("", ())
    rows = db.conn.execute(
        f"SELECT {ident} AS mid, session_id, role, {cols} FROM messages {where} ORDER BY session_id, {order}{ident}",
        params,
    )
    out, seen = [], set()
    for r in rows:
        content, tool_name = _content_of(r["content"], r["tool_calls"], r["tool_name"])
        time = stored_time(r["timestamp"])
        key = (r["session_id"], r["role"], content, time)
        if key in seen:  # a message kept in two compaction generations (archived + active): show it once
            continue
        seen.add(key)
        out.append(Message(str(r["mid"]), str(r["session_id"]), r["role"] or "", content, time, tool_name))
    return out


def _content_of(content: Any, tool_calls: Any, tool_name: Any) -> tuple[str, str]:
    """A message's text and tool name; an assistant's tool calls are shown as `name(arguments)` lines."""
    text = content if isinstance(content, str) else ("" if content is None else str(content))
    names = [tool_name] if tool_name else []
    calls = _parse_calls(tool_calls)
    lines = []
    for name, arguments in calls:
        names.append(name)
        lines.append(f"→ {name}({arguments})")
    if lines:
        text = "\n".join(([text] if text.strip() else []) + lines)
    return text, ", ".join(dict.fromkeys(n for n in names if n))


def _parse_calls(raw: Any) -> list[tuple[str, str]]:
    if not raw:
        return []
    try:
        calls = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return [("tool", str(raw))]
    out = []
    for call in calls if isinstance(calls, list) else [calls]:
        fn = call.get("function", call) if isinstance(call, dict) else {}
        name = str(fn.get("name", "tool")) if isinstance(fn, dict) else "tool"
        arguments = fn.get("arguments", "") if isinstance(fn, dict) else ""
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):
                arguments = json.loads(arguments)
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        out.append((name, arguments))
    return out


# ── small helpers ────────────────────────────────────────────────────────────────────────────────────


def _positive_int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _lock_held(lock_path: Path) -> bool:
    """Whether another process holds hermes's flock on a `.lock` file (asked with a shared, non-blocking
    flock that is released at once; the file is opened for reading only and never created)."""
    try:
        fh = open(lock_path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return False
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    finally:
        fh.close()
    return False
