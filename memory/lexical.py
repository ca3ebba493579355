"""A lexical side index: SQLite FTS5 over CJK-aware tokens, keyed by memory id (for hybrid ranking).

Texts are stored as `tokens.fts_text(text)` (CJK bigrams, stemmed Latin words, space-joined) in an FTS5
table with the `unicode61` tokenizer, so a two-character Chinese query finds its memory. Queries are the
OR of the query's tokens, ranked by FTS5's bm25 (k1 = 1.2, b = 0.75).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from memory.errors import MemwikiError
from memory.tokens import fts_text, tokens

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lex_ids (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE IF NOT EXISTS lex_fts USING fts5(body, tokenize = 'unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS lex_vocab USING fts5vocab(lex_fts, 'row');
"""

# A query's cost grows with the postings of its tokens. Past this budget the most frequent tokens are
# left out (they carry the least weight in bm25; those in more than half the documents carry none).
POSTINGS_BUDGET = 20000


class LexicalIndex:
    """An FTS5 index of memory texts. `path` is a SQLite file, or ":memory:" for a throw-away index."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.OperationalError as exc:
            if "fts5" in str(exc).lower():
                raise MemwikiError(f"{self.path}: this SQLite has no FTS5 module ({exc})") from None
            raise MemwikiError(f"{self.path}: cannot open the lexical index ({exc})") from None

    def close(self) -> None:
        self._db.close()

    def upsert(self, items: Iterable[tuple[str, str]]) -> None:
        """Index (id, text) pairs, replacing what those ids held; one transaction for the whole batch."""
        items = list(items)
        if not items:
            return
        with self._db:
            self._delete(ids for ids, _ in items)
            for memory_id, text in items:
                cur = self._db.execute("INSERT INTO lex_ids (id) VALUES (?)", (memory_id,))
                self._db.execute("INSERT INTO lex_fts (rowid, body) VALUES (?, ?)", (cur.lastrowid, fts_text(text)))

    def delete(self, ids: Iterable[str]) -> None:
        with self._db:
            self._delete(ids)

    def _delete(self, ids: Iterable[str]) -> None:
        for memory_id in ids:
            row = self._db.execute("SELECT rowid FROM lex_ids WHERE id = ?", (memory_id,)).fetchone()
            if row is not None:
                self._db.execute("DELETE FROM lex_fts WHERE rowid = ?", row)
                self._db.execute("DELETE FROM lex_ids WHERE rowid = ?", row)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Best `k` (id, score) pairs for the OR of the query's tokens; score = -bm25 (higher is better)."""
        if k <= 0:
            return []
        toks = list(dict.fromkeys(tokens(query))) or list(dict.fromkeys(tokens(query, stop_words=False)))
        if not toks:
            return []
        toks = self._affordable(toks)
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in toks)
        rows = self._db.execute(
            "SELECT lex_ids.id, bm25(lex_fts) AS s FROM lex_fts JOIN lex_ids ON lex_ids.rowid = lex_fts.rowid "
            "WHERE lex_fts MATCH ? ORDER BY s LIMIT ?",
            (match, k),
        ).fetchall()
        return [(memory_id, -score) for memory_id, score in rows]

    def _affordable(self, toks: list[str]) -> list[str]:
        """The query tokens worth matching: rarest first, within POSTINGS_BUDGET (at least one)."""
        placeholders = ",".join("?" * len(toks))
        df = dict(self._db.execute(f"SELECT term, doc FROM lex_vocab WHERE term IN ({placeholders})", toks).fetchall())
        present = sorted((t for t in toks if t in df), key=lambda t: df[t])
        if sum(df[t] for t in present) <= POSTINGS_BUDGET:
            return present or toks[:1]
        half = self.count() / 2
        kept: list[str] = []
        total = 0
        for t in present:
            if kept and (df[t] > half or total + df[t] > POSTINGS_BUDGET):
                break
            kept.append(t)
            total += df[t]
        return kept

    def ids(self) -> Sequence[str]:
        return [row[0] for row in self._db.execute("SELECT id FROM lex_ids ORDER BY rowid")]

    def count(self) -> int:
        return self._db.execute("SELECT count(*) FROM lex_ids").fetchone()[0]
