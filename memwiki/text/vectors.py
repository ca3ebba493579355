"""Vectors of texts, made once and read by every process: session turns, wiki and entity pages, hot entries.

Beside each vector, the text's words as the lexical index reads them (`memwiki.text.tokens.fts_text`, by the
tokenizer's version), so Chinese is segmented once per text, not once per ranking.

A text's vector depends on the embedder and the text only, so it is kept by (embedder, SHA-256 of the text) in a
SQLite file per embedder (`<dir>/<embedder>.sqlite3`): a store keeps its own in `vectors/` (memwiki.store.layout),
read-only sources (a hermes home, a palace) in memwiki's cache folder, never inside the source. Recall, the MCP
server, the hermes provider and the site build all read through `TextVectors.of`, which embeds only the texts no
process has embedded yet (in worker processes when there are many, `memwiki.text.embed_pool`) and keeps them.

Another embedder reads and writes another file: vectors of two embedders never meet, and changing the embedder
means every text is embedded again by the new one, on first use. The files hold
nothing that cannot be made again: one that cannot be read is set aside with a warning and made anew, and one
that cannot be written (a read-only folder, a full disk) only costs the next process the same embedding.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from memwiki.common.textio import set_aside
from memwiki.errors import EmbedderMismatchError
from memwiki.text.embedders import Embedder
from memwiki.text.tokens import TOKENIZER_VERSION, fts_text

log = logging.getLogger(__name__)

MEMORY_ROWS = 50_000  # vectors kept in a process between calls (about 100 MB at 512-d)
_BATCH = 500  # keys per SELECT (SQLite's bound-parameter limit is 32,766; small batches stay fast)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS words (key BLOB PRIMARY KEY, version INTEGER NOT NULL, body TEXT NOT NULL) WITHOUT ROWID;
"""


def text_key(text: str) -> bytes:
    """What a text's vector is kept by: the first 16 bytes of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def file_name(embedder: Embedder) -> str:
    """`use-multilingual-v3_512.sqlite3`, `ollama_qwen3-embedding_0.6b_1024.sqlite3`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", embedder.identity()) + ".sqlite3"


class TextVectors:
    """The vectors of texts by one embedder, kept in `folder` (None: in this process only)."""

    def __init__(self, folder: Path | None, embedder: Embedder) -> None:
        self.embedder = embedder
        self.path = Path(folder) / file_name(embedder) if folder is not None else None
        self._known: dict[bytes, np.ndarray] = {}
        self._known_words: dict[bytes, str] = {}
        self._lock = threading.Lock()
        self._writable = True

    def of(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, in order; texts no process has embedded are embedded now."""
        keys = [text_key(t) for t in texts]
        if not keys:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        wanted = list(dict.fromkeys(keys))
        got = {k: self._known[k] for k in wanted if k in self._known}
        got.update(self._read([k for k in wanted if k not in got]))
        missing = [k for k in wanted if k not in got]
        if missing:
            by_key = dict(zip(keys, texts, strict=True))
            vectors = self._embed([by_key[k] for k in missing])
            self._store(missing, vectors)
            got.update(zip(missing, vectors, strict=True))
        self._remember(self._known, got)
        return np.stack([got[k] for k in keys])

    def words(self, texts: Sequence[str]) -> list[str]:
        """Each text as the lexical index reads it (`memwiki.text.tokens.fts_text`: segmenting Chinese is most of
        indexing), kept beside its vector by the tokenizer's version."""
        keys = [text_key(t) for t in texts]
        wanted = list(dict.fromkeys(keys))
        got = {k: self._known_words[k] for k in wanted if k in self._known_words}
        rows = self._select("key, version, body", [k for k in wanted if k not in got], table="words")
        got.update((key, body) for key, version, body in rows if version == TOKENIZER_VERSION)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in got}
        made = {k: fts_text(t) for k, t in missing.items()}
        if made:
            self._write(
                "INSERT OR REPLACE INTO words (key, version, body) VALUES (?, ?, ?)",
                [(k, TOKENIZER_VERSION, body) for k, body in made.items()],
            )
        got.update(made)
        self._remember(self._known_words, got)
        return [got[k] for k in keys]

    def ensure(self, texts: Iterable[str]) -> int:
        """Make and keep the vectors of `texts` that are not kept yet (where a text is written); how many."""
        by_key = {text_key(t): t for t in texts}
        missing = self.unkept(by_key)
        if missing:
            self._store(missing, self._embed([by_key[k] for k in missing]))
        rows = self._select("key, version", list(by_key), "words")
        worded = {key for key, version in rows if version == TOKENIZER_VERSION}
        self.words([t for k, t in by_key.items() if k not in worded])
        return len(missing)

    def unkept(self, keys: Iterable[bytes]) -> list[bytes]:
        """The `keys` (`text_key`s) whose vectors no process has kept yet."""
        keys = list(keys)
        held = set(self._select("key", keys))
        return [k for k in keys if k not in held]

    # -- embedding and memory -------------------------------------------------------------------------

    def _embed(self, texts: list[str]) -> np.ndarray:
        from memwiki.text.embed_pool import embed_many  # here: a process that finds every vector never loads it

        return np.asarray(embed_many(self.embedder, texts), dtype=np.float32)

    def _remember(self, memory: dict, items: dict) -> None:
        """Keep `items` in this process (vectors or words), at most `MEMORY_ROWS` of them."""
        with self._lock:
            if len(memory) + len(items) > MEMORY_ROWS:
                memory.clear()
            memory.update(items)

    # -- the file -------------------------------------------------------------------------------------

    def _read(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The kept vectors of `keys` (a row of the wrong width is not a vector: it is made again)."""
        width = self.embedder.dim * 4
        return {
            key: np.frombuffer(blob, dtype=np.float32)
            for key, blob in self._select("key, vector", keys)
            if len(blob) == width
        }

    def _select(self, columns: str, keys: list[bytes], table: str = "vectors") -> Iterator:
        """`columns` of the rows of `keys` in `table`, in batches (nothing without a file)."""
        if not keys:
            return
        with self._connection() as conn:
            if conn is None:
                return
            for start in range(0, len(keys), _BATCH):
                part = keys[start : start + _BATCH]
                marks = ",".join("?" * len(part))
                for row in conn.execute(f"SELECT {columns} FROM {table} WHERE key IN ({marks})", part):
                    yield (bytes(row[0]), *row[1:]) if len(row) > 1 else bytes(row[0])

    def _store(self, keys: list[bytes], vectors: np.ndarray) -> None:
        rows = [(k, v.tobytes()) for k, v in zip(keys, vectors, strict=True)]
        self._write("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)", rows)

    def _write(self, sql: str, rows: list[tuple]) -> None:
        if self.path is None or not self._writable or not rows:
            return
        try:
            with self._connection() as conn:
                if conn is None:
                    return
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(sql, rows)
                conn.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            self._writable = False
            log.warning("%s: not written (%s); the next process makes these texts' vectors again", self.path, exc)

    @contextlib.contextmanager
    def _connection(self):  # noqa: ANN202 - a context manager of sqlite3.Connection | None
        """A connection to the file (None when vectors are kept in memory only or the file cannot be opened)."""
        conn = self._open() if self.path is not None else None
        try:
            yield conn
        finally:
            if conn is not None:
                conn.close()

    def _open(self) -> sqlite3.Connection | None:
        assert self.path is not None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(_SCHEMA)
            self._check_identity(conn)
            return conn
        except EmbedderMismatchError:
            raise
        except sqlite3.DatabaseError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                log.warning("%s: busy (%s); embedding without it this time", self.path, exc)
                return None
            self._set_aside(exc)
            return None
        except OSError as exc:
            log.warning("%s: cannot be opened (%s); vectors are kept in this process only", self.path, exc)
            self.path = None
            return None

    def _check_identity(self, conn: sqlite3.Connection) -> None:
        identity = self.embedder.identity()
        row = conn.execute("SELECT value FROM meta WHERE name = 'embedder'").fetchone()
        if row is None:
            conn.execute("INSERT OR IGNORE INTO meta (name, value) VALUES ('embedder', ?)", (identity,))
        elif row[0] != identity:
            conn.close()
            raise EmbedderMismatchError(
                f"{self.path} holds vectors of {row[0]}, not {identity}: move it aside, it is made again"
            )

    def _set_aside(self, exc: Exception) -> None:
        """A damaged file is renamed (kept for whoever wants to look) and made again on the next call."""
        assert self.path is not None
        try:
            aside = set_aside(self.path)
            log.warning("%s: not readable (%s); set aside as %s, vectors are made again", self.path, exc, aside.name)
        except OSError:
            log.warning("%s: not readable (%s); vectors are kept in this process only", self.path, exc)
            self.path = None
