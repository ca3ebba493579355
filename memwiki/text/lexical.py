"""A lexical side index: SQLite FTS5 over CJK-aware tokens, keyed by memory id (for hybrid ranking).

Texts are stored as `tokens.fts_text(text)` (CJK bigrams, stemmed Latin words, space-joined) in an FTS5
table with the `unicode61` tokenizer, so a two-character Chinese query finds its memory. Queries are the
OR of the query's tokens, ranked by FTS5's bm25 (k1 = 1.2, b = 0.75).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from memwiki.errors import MemwikiError
from memwiki.text.tokens import TOKENIZER_VERSION, fts_text, tokens

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lex_ids (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE IF NOT EXISTS lex_fts USING fts5(body, tokenize = 'unicode61');
CREATE TABLE IF NOT EXISTS lex_df (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
"""

# A query's cost grows with the postings of its tokens. Past this budget the most frequent tokens are
# left out (they carry the least weight in bm25; those in more than half the documents carry none).
# At 100k memories (scripts/bench_store.py) a query reading 3,000 postings takes about 20 ms.
POSTINGS_BUDGET = 3000


class LexicalIndex:
    """An FTS5 index of memory texts. `path` is a SQLite file, or ":memory:" for a throw-away index.

    `db`: a connection to `path` that its owner opened, to keep the index beside the owner's own tables; a write
    made while the owner holds a transaction on it is part of that transaction, and so is a count
    (memwiki.recall.files_layer keeps its pages and their words in one). Closing the index closes only its own."""

    def __init__(self, path: Path | str, db: sqlite3.Connection | None = None) -> None:
        self.path = str(path)
        self._owned = db is None
        if db is None and self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = db if db is not None else sqlite3.connect(self.path, check_same_thread=False)
        self._writes = 0  # commits made through this object, counted once made (see `version`)
        self._watch: sqlite3.Connection | None = None  # a connection that only reads PRAGMA data_version
        self._watch_lock = threading.Lock()
        self._counted: tuple[tuple[int, int], int] | None = None  # (version, count) of the last count()
        try:
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.executescript(_SCHEMA)
            if self._db.execute("SELECT count(*) FROM lex_df").fetchone()[0] == 0 and self.count():
                self._rebuild_df()
            if not self.count():
                self.mark_current()
        except sqlite3.OperationalError as exc:
            if "fts5" in str(exc).lower():
                raise MemwikiError(f"{self.path}: this SQLite has no FTS5 module ({exc})") from None
            raise MemwikiError(f"{self.path}: cannot open the lexical index ({exc})") from None

    def close(self) -> None:
        if self._owned:
            self._db.close()
        if self._watch is not None:
            self._watch.close()

    def version(self) -> tuple[int, int]:
        """Changes whenever the index changes, whoever wrote it: this object, another connection, or another process
        (every L2 write of `memwiki.layers.semantic.memory` ends with a commit here, under its write lock). A few
        microseconds: SQLite's `PRAGMA data_version` on a connection of its own, which sees every other connection's
        commits."""
        if self.path == ":memory:":
            return self._writes, 0
        with self._watch_lock:
            if self._watch is None:
                self._watch = sqlite3.connect(self.path, check_same_thread=False)
            return self._writes, self._watch.execute("PRAGMA data_version").fetchone()[0]

    def current(self) -> bool:
        """Whether the index was built by this version of the tokenizer (else its owner re-indexes it)."""
        return self._db.execute("PRAGMA user_version").fetchone()[0] == TOKENIZER_VERSION

    def mark_current(self) -> None:
        self._db.execute(f"PRAGMA user_version = {TOKENIZER_VERSION}")

    def upsert(self, items: Iterable[tuple[str, str]]) -> None:
        """Index (id, text) pairs, replacing what those ids held; one transaction for the whole batch."""
        self.upsert_words((memory_id, fts_text(text)) for memory_id, text in items)

    def upsert_words(self, items: Iterable[tuple[str, str]]) -> None:
        """`upsert` of texts already made into their words (`fts_text`: kept with a text's vector, made once)."""
        items = list(items)
        if not items:
            return
        with self._transaction():
            self._delete(ids for ids, _ in items)
            df: Counter[str] = Counter()
            for memory_id, body in items:
                df.update(set(body.split()))
                cur = self._db.execute("INSERT INTO lex_ids (id) VALUES (?)", (memory_id,))
                self._db.execute("INSERT INTO lex_fts (rowid, body) VALUES (?, ?)", (cur.lastrowid, body))
            self._add_df(df, +1)
        self._writes += 1

    def clear(self) -> None:
        """Remove every text (before indexing all again, e.g. for another tokenizer version)."""
        with self._transaction():
            for table in ("lex_fts", "lex_ids", "lex_df"):
                self._db.execute(f"DELETE FROM {table}")
        self._writes += 1

    def delete(self, ids: Iterable[str]) -> None:
        with self._transaction():
            self._delete(ids)
        self._writes += 1

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction for a write; the owner's when it holds one on the connection (see the class)."""
        if self._db.in_transaction:
            yield
            return
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.rollback()
            raise
        self._db.commit()

    def _delete(self, ids: Iterable[str]) -> None:
        df: Counter[str] = Counter()
        for memory_id in ids:
            row = self._db.execute("SELECT rowid FROM lex_ids WHERE id = ?", (memory_id,)).fetchone()
            if row is not None:
                old = self._db.execute("SELECT body FROM lex_fts WHERE rowid = ?", row).fetchone()
                if old is not None:
                    df.update(set(old[0].split()))
                self._db.execute("DELETE FROM lex_fts WHERE rowid = ?", row)
                self._db.execute("DELETE FROM lex_ids WHERE rowid = ?", row)
        self._add_df(df, -1)

    def _add_df(self, df: Counter[str], sign: int) -> None:
        """Keep the document frequency of each token (read by `_affordable`) in step with the index."""
        if not df:
            return
        self._db.executemany(
            "INSERT INTO lex_df (term, df) VALUES (?, ?) ON CONFLICT (term) DO UPDATE SET df = df + excluded.df",
            ((t, sign * n) for t, n in df.items()),
        )
        if sign < 0:
            self._db.execute("DELETE FROM lex_df WHERE df <= 0")

    def _rebuild_df(self) -> None:
        df: Counter[str] = Counter()
        for (body,) in self._db.execute("SELECT body FROM lex_fts"):
            df.update(set(body.split()))
        with self._transaction():
            self._db.execute("DELETE FROM lex_df")
            self._add_df(df, +1)

    def search(self, query: str, k: int, budget: int = POSTINGS_BUDGET) -> list[tuple[str, float]]:
        """Best `k` (id, score) pairs for the OR of the query's tokens; score = -bm25 (higher is better).
        At most about `budget` postings are read (see `_affordable`)."""
        if k <= 0:
            return []
        toks = list(dict.fromkeys(tokens(query))) or list(dict.fromkeys(tokens(query, stop_words=False)))
        if not toks:
            return []
        toks = self._affordable(toks, budget)
        if not toks:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in toks)
        rows = self._db.execute(
            "SELECT lex_ids.id, bm25(lex_fts) AS s FROM lex_fts JOIN lex_ids ON lex_ids.rowid = lex_fts.rowid "
            "WHERE lex_fts MATCH ? ORDER BY s, lex_ids.id LIMIT ?",  # ties by id, as the site's search breaks them
            (match, k),
        ).fetchall()
        return [(memory_id, -score) for memory_id, score in rows]

    def _affordable(self, toks: list[str], budget: int = POSTINGS_BUDGET) -> list[str]:
        """The query tokens worth matching: rarest first, as many as `budget` postings allow (none when even
        the rarest is over it: a token in that many texts carries little weight in bm25, and reading its
        postings is what a query's time goes on)."""
        placeholders = ",".join("?" * len(toks))
        df = dict(self._db.execute(f"SELECT term, df FROM lex_df WHERE term IN ({placeholders})", toks).fetchall())
        present = sorted((t for t in toks if t in df), key=lambda t: df[t])
        if sum(df[t] for t in present) <= budget:
            return present
        half = self.count() / 2
        kept: list[str] = []
        total = 0
        for t in present:
            if df[t] > half or total + df[t] > budget:
                break
            kept.append(t)
            total += df[t]
        return kept

    def ids(self) -> Sequence[str]:
        return [row[0] for row in self._db.execute("SELECT id FROM lex_ids ORDER BY rowid")]

    def count(self) -> int:
        """How many texts the index holds; counted again only after a change (`version`): counting reads the whole
        id table, about 10 ms at a million memories, and `_affordable` asks on most queries of a large store.
        Within a transaction of the owner's, counted in it (it may hold another state than the last count saw)."""
        if self._db.in_transaction:
            return self._db.execute("SELECT count(*) FROM lex_ids").fetchone()[0]
        version = self.version()
        counted = self._counted
        if counted is None or counted[0] != version:
            counted = self._counted = (version, self._db.execute("SELECT count(*) FROM lex_ids").fetchone()[0])
        return counted[1]
