"""L4: session history, a SQLite file with FTS5 full-text search over every message.

The FTS5 table indexes `memwiki.text.tokens.fts_text(content)` with the `unicode61` tokenizer, not the raw text:
CJK runs become character bigrams, so a two-character Chinese query such as 跳舞 finds its message (raw
`unicode61` sees a whole Chinese run as one token; `trigram` cannot match fewer than three characters).
The index is contentless; snippets are cut from the original text.
"""

from __future__ import annotations

import hashlib
import sqlite3
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memwiki.common.jsonl import count_lines, iter_jsonl
from memwiki.common.sqlitedb import DEFAULT_BUSY_TIMEOUT, connect, sqlite_error, write_transaction
from memwiki.common.times import parse_time, utc_now
from memwiki.errors import InputFormatError, MemwikiError
from memwiki.source import Message, Session, SessionHit
from memwiki.text.tokens import TOKENIZER_VERSION, fts_query, fts_text, is_cjk, tokens

ROLES = ("user", "assistant", "system", "tool")
SNIPPET_WIDTH = 30
SNIPPETS_PER_SESSION = 3
MARK_OPEN, MARK_CLOSE = "«", "»"

_TABLES = {
    "sessions": """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        started TEXT NOT NULL DEFAULT '',
        ended TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT ''
    )""",
    "messages": """CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
        content TEXT NOT NULL,
        time TEXT NOT NULL DEFAULT '',
        tool_name TEXT NOT NULL DEFAULT '',
        digest TEXT NOT NULL DEFAULT ''
    )""",
    "messages_fts": "CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='', tokenize='unicode61')",
}
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, time, id)",
    "CREATE INDEX IF NOT EXISTS idx_messages_digest ON messages(session_id, digest)",
)


def require_fts5(module: str = "fts5") -> None:
    """Raise MemwikiError when this Python's SQLite lacks the FTS5 module (`module` is a parameter for tests)."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute(f"CREATE VIRTUAL TABLE probe USING {module}(x)")
    except sqlite3.OperationalError as exc:
        raise MemwikiError(
            f"SQLite here has no FTS5 ({exc}; SQLite {sqlite3.sqlite_version}): session search needs a Python "
            "whose sqlite3 is built with FTS5 (python.org and most distribution builds are)"
        ) from None
    finally:
        probe.close()


def _digest(role: str, time: str, tool_name: str, content: str) -> str:
    return hashlib.sha256("\x1f".join((role, time, tool_name, content)).encode()).hexdigest()[:32]


class SessionHistory:
    """L4 over one SQLite file: sessions, their messages, and CJK-aware full-text search."""

    def __init__(self, path: Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        require_fts5()
        self.path = Path(path)
        self._conn = connect(self.path, busy_timeout=busy_timeout)
        try:
            self._ensure_schema()
        except BaseException:
            self._conn.close()
            raise

    def _ensure_schema(self) -> None:
        try:
            have = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error as exc:
            raise sqlite_error(exc, self.path) from None
        if set(_TABLES) <= have:
            self._reindex_if_stale()
            return
        with write_transaction(self._conn, self.path) as conn:
            have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for name, sql in _TABLES.items():
                if name not in have:
                    conn.execute(sql)
            for sql in _INDEXES:
                conn.execute(sql)
            conn.execute(f"PRAGMA user_version = {TOKENIZER_VERSION}")

    def _reindex_if_stale(self) -> None:
        """Re-index every message when the index was built by another tokenizer version (one transaction)."""
        if self._conn.execute("PRAGMA user_version").fetchone()[0] == TOKENIZER_VERSION:
            return
        with write_transaction(self._conn, self.path) as conn:
            conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')")
            rows = conn.execute("SELECT id, content FROM messages").fetchall()
            conn.executemany(
                "INSERT INTO messages_fts (rowid, text) VALUES (?, ?)", ((i, fts_text(c)) for i, c in rows)
            )
            conn.execute(f"PRAGMA user_version = {TOKENIZER_VERSION}")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SessionHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── writing ──

    def _touch_session(
        self,
        conn: sqlite3.Connection,
        sid: str,
        *,
        title: str = "",
        started: str = "",
        ended: str = "",
        source: str = "",
    ) -> None:
        """Create the session if missing; widen started / ended; fill title and source when empty or given."""
        conn.execute("INSERT OR IGNORE INTO sessions (id, source) VALUES (?, ?)", (sid, source))
        conn.execute(
            "UPDATE sessions SET "
            "title = CASE WHEN :title != '' THEN :title ELSE title END, "
            "source = CASE WHEN :source != '' THEN :source ELSE source END, "
            "started = CASE WHEN :started != '' AND (started = '' OR :started < started) "
            "THEN :started ELSE started END, "
            "ended = CASE WHEN :ended != '' AND (ended = '' OR :ended > ended) THEN :ended ELSE ended END "
            "WHERE id = :sid",
            {"sid": sid, "title": title, "source": source, "started": started, "ended": ended},
        )

    def _insert_messages(
        self, conn: sqlite3.Connection, rows: list[tuple[str, str, str, str, str, str]], progress: str = ""
    ) -> int:
        """Insert (session_id, role, content, time, tool_name, digest) rows and index them; returns the last id.

        `progress`: a label for a progress bar on stderr over the indexing (none when "")."""
        before = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, time, tool_name, digest) VALUES (?, ?, ?, ?, ?, ?)", rows
        )
        added = conn.execute("SELECT id, content FROM messages WHERE id > ? ORDER BY id", (before,))
        bar = tqdm(added, total=len(rows), desc=progress, unit="msg", file=sys.stderr, disable=not progress)
        last = [before]

        def indexed() -> Iterator[tuple[int, str]]:
            for mid, content in bar:
                last[0] = mid
                yield mid, fts_text(content)

        conn.executemany("INSERT INTO messages_fts (rowid, text) VALUES (?, ?)", indexed())
        bar.close()
        return last[0]

    def add_session(
        self, id: str, title: str = "", started: str | None = None, ended: str | None = None, source: str = ""
    ) -> None:
        """Create a session (started defaults to now) or update the fields given."""
        if not isinstance(id, str) or not id.strip():
            raise MemwikiError(f"session id: expected a non-empty string, got {id!r}")
        fields = {"title": title, "source": source}
        if started is not None:
            fields["started"] = parse_time(started, "started")
        if ended is not None:
            fields["ended"] = parse_time(ended, "ended")
        with write_transaction(self._conn, self.path) as conn:
            conn.execute("INSERT OR IGNORE INTO sessions (id, started) VALUES (?, ?)", (id, utc_now()))
            for column, value in fields.items():
                if value:
                    conn.execute(f"UPDATE sessions SET {column} = ? WHERE id = ?", (value, id))

    def add_message(
        self, session_id: str, role: str, content: str, time: str | None = None, tool_name: str = ""
    ) -> str:
        """Append a message (creating its session if missing); returns the message id."""
        if not isinstance(session_id, str) or not session_id.strip():
            raise MemwikiError(f"session id: expected a non-empty string, got {session_id!r}")
        if role not in ROLES:
            raise MemwikiError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        if not isinstance(content, str):
            raise MemwikiError(f"content must be a string, got {type(content).__name__}")
        when = parse_time(time, "time") if time is not None else utc_now()
        with write_transaction(self._conn, self.path) as conn:
            self._touch_session(conn, session_id, started=when)
            mid = self._insert_messages(
                conn, [(session_id, role, content, when, tool_name, _digest(role, when, tool_name, content))]
            )
        return str(mid)

    def import_jsonl(self, path: Path, progress: bool = False) -> tuple[int, int]:
        """Import a session JSONL file, one message a line: {"session_id", "role", "content", "time", "title"?,
        "tool_name"?}. Every line is checked first; then all is written in one transaction, so a bad line writes
        nothing. Messages already present are not added again. Returns (sessions touched, messages added)."""
        path = Path(path)
        records = _read_session_jsonl(path, progress)
        with write_transaction(self._conn, self.path) as conn:
            spans: dict[str, list[str]] = {}
            titles: dict[str, str] = {}
            for sid, _role, _content, when, _tool, _hash, title in records:
                span = spans.setdefault(sid, [when, when])
                span[0], span[1] = min(span[0], when), max(span[1], when)
                if title and sid not in titles:
                    titles[sid] = title
            for sid, (first, last) in spans.items():
                self._touch_session(conn, sid, title=titles.get(sid, ""), started=first, ended=last, source="import")
            # Keep a message only as many times as the file has it beyond what the store already has.
            have: Counter[tuple[str, str]] = Counter()
            for sid in spans:
                for digest, n in conn.execute(
                    "SELECT digest, count(*) FROM messages WHERE session_id = ? GROUP BY digest", (sid,)
                ):
                    have[(sid, digest)] = n
            rows = []
            for sid, role, content, when, tool, digest, _title in records:
                if have[(sid, digest)] > 0:
                    have[(sid, digest)] -= 1
                    continue
                rows.append((sid, role, content, when, tool, digest))
            self._insert_messages(conn, rows, progress=f"importing {path.name}" if progress else "")
        return len(spans), len(rows)

    # ── reading ──

    def _session_rows(self, where: str = "", params: tuple[Any, ...] = ()) -> list[Session]:
        rows = self._conn.execute(
            "SELECT s.id, s.title, s.started, s.ended, s.source, "
            "(SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS n "
            f"FROM sessions s {where} ORDER BY s.started, s.id",
            params,
        ).fetchall()
        return [Session(r["id"], r["title"], r["started"], r["ended"], r["source"], r["n"]) for r in rows]

    def sessions(self) -> list[Session]:
        """Every session, oldest first, with its message count."""
        return self._session_rows()

    def session(self, session_id: str) -> Session | None:
        found = self._session_rows("WHERE s.id = ?", (session_id,))
        return found[0] if found else None

    def messages(self, session_id: str) -> list[Message]:
        """The messages of a session in order ([] for an unknown session)."""
        rows = self._conn.execute(
            "SELECT id, session_id, role, content, time, tool_name FROM messages "
            "WHERE session_id = ? ORDER BY time, id",
            (session_id,),
        ).fetchall()
        return [_message(r) for r in rows]

    def search(self, query: str, limit: int = 10) -> list[SessionHit]:
        """Sessions whose messages match `query`, best first (score = -bm25 of the best message), with snippets.

        All query words must match in a message; when no message has them all, any word will do.
        """
        if not isinstance(query, str) or not query.strip():
            raise MemwikiError("empty query: give some words to search for")
        if limit < 1:
            return []
        by_session: dict[str, list[tuple[int, float]]] = {}
        for mode in ("AND", "OR"):
            match = fts_query(query, mode=mode)
            if not match:
                return []
            by_session = self._best_messages(match, limit)
            if by_session:
                break
        top = list(by_session.items())[:limit]
        words = query_words(query)
        hits = []
        for sid, found in top:
            session = self.session(sid)
            if session is None:  # a session row missing for its messages (a foreign or damaged file)
                session = Session(sid, "", "")
            ids = [mid for mid, _ in found]
            marks = ",".join("?" * len(ids))
            texts = dict(self._conn.execute(f"SELECT id, content FROM messages WHERE id IN ({marks})", ids).fetchall())
            snippets = tuple(snippet(texts[mid], words) for mid in ids)
            contents = tuple(texts[mid] for mid in ids)
            hits.append(SessionHit(session, -found[0][1], snippets, tuple(str(mid) for mid in ids), contents))
        return hits

    def _best_messages(self, match: str, limit: int) -> dict[str, list[tuple[int, float]]]:
        """The `limit` sessions with the best-ranked (bm25) matching message, best first, each with up to
        SNIPPETS_PER_SESSION of its best messages as (message id, bm25). Reads the top messages in growing
        batches, so it stays exact without joining every match."""
        batch = max(200, limit * SNIPPETS_PER_SESSION * 4)
        while True:
            rows = self._conn.execute(
                "SELECT m.session_id, h.rowid, h.rank FROM (SELECT rowid, rank FROM messages_fts "
                "WHERE messages_fts MATCH ? ORDER BY rank LIMIT ?) h JOIN messages m ON m.id = h.rowid "
                "ORDER BY h.rank, h.rowid",
                (match, batch),
            ).fetchall()
            by_session: dict[str, list[tuple[int, float]]] = {}
            for sid, mid, score in rows:  # ordered by score: the first session seen ranks best
                found = by_session.setdefault(sid, [])
                if len(found) < SNIPPETS_PER_SESSION:
                    found.append((mid, score))
            if len(by_session) >= limit or len(rows) < batch:
                return dict(list(by_session.items())[:limit])
            batch *= 4

    def stats(self) -> dict[str, Any]:
        """Counts of sessions and messages (by role), and the first and last message times."""
        n_sessions = self._conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        by_role = dict(self._conn.execute("SELECT role, count(*) FROM messages GROUP BY role ORDER BY role").fetchall())
        first, last = self._conn.execute("SELECT min(NULLIF(time, '')), max(NULLIF(time, '')) FROM messages").fetchone()
        return {
            "sessions": n_sessions,
            "messages": sum(by_role.values()),
            "by_role": by_role,
            "first": first or "",
            "last": last or "",
        }


def _message(r: sqlite3.Row) -> Message:
    return Message(str(r["id"]), r["session_id"], r["role"], r["content"], r["time"], r["tool_name"])


def _read_session_jsonl(path: Path, progress: bool) -> list[tuple[str, str, str, str, str, str, str]]:
    """Check every line of a session JSONL file; returns (session_id, role, content, time, tool_name, digest, title)."""
    out = []
    total = count_lines(path)
    for lineno, obj in tqdm(
        iter_jsonl(path), total=total, desc=f"checking {path.name}", unit="line", file=sys.stderr, disable=not progress
    ):
        where = f"{path}:{lineno}"
        for key in ("session_id", "role", "content", "time"):
            if key not in obj:
                raise InputFormatError(f"{where}: missing key {key!r} (need session_id, role, content, time)")
        sid, role, content = obj["session_id"], obj["role"], obj["content"]
        if isinstance(sid, int) and not isinstance(sid, bool):
            sid = str(sid)
        if not isinstance(sid, str) or not sid.strip():
            raise InputFormatError(f"{where}: session_id must be a non-empty string, got {sid!r}")
        if role not in ROLES:
            raise InputFormatError(f"{where}: role must be one of {', '.join(ROLES)}, got {role!r}")
        if not isinstance(content, str):
            raise InputFormatError(f"{where}: content must be a string, got {type(content).__name__}")
        for key in ("title", "tool_name"):
            if not isinstance(obj.get(key, ""), str):
                raise InputFormatError(f"{where}: {key} must be a string, got {type(obj[key]).__name__}")
        try:
            when = parse_time(obj["time"], "time")
        except MemwikiError as exc:
            raise InputFormatError(f"{where}: {exc}") from None
        tool = obj.get("tool_name", "")
        out.append((sid, role, content, when, tool, _digest(role, when, tool, content), obj.get("title", "")))
    return out


# ── snippets ─────────────────────────────────────────────────────────────────────────────────────────


def _wordy(text: str, i: int) -> bool:
    """True when text[i] exists and is part of a Latin-script word."""
    return 0 <= i < len(text) and text[i].isalnum() and not is_cjk(text[i])


def _match_spans(text: str, words: list[str]) -> list[tuple[int, int]]:
    """Spans of `text` (original offsets) where the query tokens occur; Latin matches grow to whole words."""
    norm: list[str] = []
    owner: list[int] = []  # index in `text` of each character of the normalized view
    for i, ch in enumerate(text):
        low = unicodedata.normalize("NFKC", ch).lower()
        norm.append(low)
        owner.extend([i] * len(low))
    view = "".join(norm)

    spans = []
    for word in words:
        start = 0
        while word and (j := view.find(word, start)) != -1:
            start = j + 1
            a, b = owner[j], owner[j + len(word) - 1] + 1
            if not is_cjk(word):
                if _wordy(text, a - 1):
                    continue
                while _wordy(text, b):
                    b += 1
            spans.append((a, b))
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def query_words(query: str) -> list[str]:
    """The tokens of a query that snippets mark, as `tokens.fts_query` picks them."""
    return list(dict.fromkeys(tokens(query) or tokens(query, stop_words=False)))


def snippet(text: str, words: list[str], width: int = SNIPPET_WIDTH) -> str:
    """About `width` characters of `text` around the first match of `words`, matches marked «like this»."""
    spans = _match_spans(text, words)
    if not spans:
        cut = text[:width]
        return " ".join(cut.split()) + ("…" if len(text) > width else "")
    first_a, first_b = spans[0]
    start = max(0, first_a - width // 3)
    end = min(len(text), max(first_b, start + width))
    spans = [(a, b) for a, b in spans if a < end]
    end = max(end, spans[-1][1])  # never cut a match
    for _ in range(12):  # nor, within reason, a word at either edge
        if start > 0 and _wordy(text, start - 1) and _wordy(text, start):
            start -= 1
        if end < len(text) and _wordy(text, end - 1) and _wordy(text, end):
            end += 1
    parts, pos = [], start
    for a, b in spans:
        parts += [text[pos:a], MARK_OPEN, text[a:b], MARK_CLOSE]
        pos = b
    parts.append(text[pos:end])
    body = " ".join("".join(parts).split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")
