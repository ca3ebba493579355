"""Values a build derived, kept across builds in a SQLite table by a hash key (what was derived from each text,
speed.text_cache; the privacy gate's verdicts, speed.gate_memo).

A rebuild asks about the few texts and records that changed: read one key at a time, such a table costs it
nothing for the hundreds of thousands it does not ask about (loading a 100k store's dict whole took a few tenths
of a second a build).
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.plugins.memwiki")


class KeptTable:
    """Values kept across builds by a hash key: a SQLite table (key -> marshal of the value) at `path`, under a
    version (another version's rows are dropped on first use). Opened in the process that uses it (a connection
    inherited through fork is left alone, never used or closed there). A damaged file is a cache lost, made again;
    a file locked past the timeout is a miss, not a failed build."""

    def __init__(self, path: Path, version: str) -> None:
        self.path = path
        self.version = version
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._inherited: list[sqlite3.Connection] = []  # (from the process this one was forked from)
        self._empty = True  # no rows (a first build): nothing to look up

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None and self._pid != os.getpid():
            self._inherited.append(self._db)
            self._db = None
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            try:
                self._prepare(db)
            except sqlite3.OperationalError:
                db.close()
                raise
            except sqlite3.DatabaseError as exc:  # (not a database, malformed)
                db.close()
                self._remake(exc)
                db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
                self._prepare(db)
            self._db, self._pid = db, os.getpid()
        return self._db

    def _prepare(self, db: sqlite3.Connection) -> None:
        db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # (before the first table: pruned pages can be given back)
        # a cache: a commit stays whole if the build dies, and is not flushed to the disk (a power cut may lose or
        # damage the table, made again then)
        db.execute("PRAGMA synchronous = OFF")
        db.execute("CREATE TABLE IF NOT EXISTS texts (key BLOB PRIMARY KEY, value BLOB NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS version (value TEXT NOT NULL)")
        if db.execute("SELECT value FROM version").fetchall() != [(self.version,)]:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.execute("DELETE FROM texts")
                db.execute("DELETE FROM version")
                db.execute("INSERT INTO version VALUES (?)", (self.version,))
        self._empty = db.execute("SELECT NOT EXISTS (SELECT 1 FROM texts)").fetchone()[0] == 1

    def _remake(self, exc: sqlite3.Error) -> None:
        """A file SQLite cannot read as a database: removed with its journals (a journal left beside a new file
        would be rolled back into it)."""
        log.warning("memwiki: %s: %s; what was derived from the texts is made again", self.path, exc)
        self.close()
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def get(self, key: bytes) -> Any | None:  # noqa: ANN401 - plain data
        """The value kept under `key` (None when none, or unreadable)."""
        try:
            db = self._connect()
            row = None if self._empty else db.execute("SELECT value FROM texts WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            log.warning("memwiki: %s: %s; what it kept is made again", self.path, exc)
            self._empty = True  # (no more lookups this build)
            return None
        try:
            return marshal.loads(row[0]) if row is not None else None
        except (EOFError, ValueError, TypeError):
            return None

    def save(
        self,
        entries: dict[bytes, Any],
        keep_only: Callable[[], set[bytes]] | None = None,
        used: int = 0,
        limit: int | None = None,
    ) -> None:
        """Write these values; `keep_only`: the keys this build used, of which there are `used`: when the table
        holds more than twice as many, every other key is dropped. `limit`: the rows past which the table is
        emptied first (it starts again). A full disk, or a file locked past the timeout, raises OSError naming
        the file."""
        try:
            db = self._connect()
            with db:
                db.execute("BEGIN IMMEDIATE")
                if limit is not None and db.execute("SELECT count(*) FROM texts").fetchone()[0] + len(entries) > limit:
                    db.execute("DELETE FROM texts")
                db.executemany(
                    "INSERT OR REPLACE INTO texts VALUES (?, ?)", ((k, marshal.dumps(v)) for k, v in entries.items())
                )
                pruned = keep_only is not None and db.execute("SELECT count(*) FROM texts").fetchone()[0] > 2 * used
                if pruned and (live := keep_only()):
                    db.execute("CREATE TEMP TABLE IF NOT EXISTS live (key BLOB PRIMARY KEY)")
                    db.execute("DELETE FROM live")
                    db.executemany("INSERT INTO live VALUES (?)", ((k,) for k in live))
                    db.execute("DELETE FROM texts WHERE key NOT IN (SELECT key FROM live)")
            if pruned:
                db.execute("PRAGMA incremental_vacuum")
        except sqlite3.DatabaseError as exc:
            raise OSError(f"{self.path}: could not be saved: {exc}") from exc

    def close(self) -> None:
        if self._db is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None
