"""What a build derives from each memory text (its links, the names it holds, heading anchors, rendered HTML), kept
across builds.

Most memory texts do not change between two builds, and parsing them with markdown-it is the plugin's costliest
step of its own. Results are keyed by the text's hash and by what was derived (`kind`), and saved in
the plugin's cache folder; a change to the code drops them all. Within a build each text is parsed at most once,
whatever is derived.

They are kept in a SQLite table, read one text at a time: a rebuild asks about the few texts it scans or renders
again (what the scans found in the others is kept by block, speed.scan_memo), and loading every text's values
whole was most of the cache's cost at 100k memories.
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

from markdown_it.token import Token

from memwiki.site.model.wikilinks import scanner
from memwiki.site.speed import cache_file
from memwiki.text.vectors import text_key

log = logging.getLogger("mkdocs.plugins.memwiki")

FORMAT = 3  # 3: every kind in SQLite
_FORMER = ("texts.marshal", "texts.marshal.journal")  # where format 2 kept what every build asked of every text


class TextStore:
    """What was derived from each text: a SQLite table (text key -> marshal of {kind: value}) at `path`, under a
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

    def get(self, key: bytes) -> dict[str, Any]:
        """The kinds kept for the text of `key` ({} when none, or unreadable)."""
        try:
            db = self._connect()
            row = None if self._empty else db.execute("SELECT value FROM texts WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            log.warning("memwiki: %s: %s; texts parsed and rendered again", self.path, exc)
            self._empty = True  # (no more lookups this build)
            return {}
        try:
            value = marshal.loads(row[0]) if row is not None else {}
        except (EOFError, ValueError, TypeError):
            return {}
        return value if isinstance(value, dict) else {}

    def save(
        self, entries: dict[bytes, dict[str, Any]], keep_only: Callable[[], set[bytes]] | None = None, used: int = 0
    ) -> None:
        """Write these texts' kinds; `keep_only`: the keys this build used, of which there are `used`: when the
        table holds more than twice as many, every other key is dropped. A full disk, or a file locked past the
        timeout, raises OSError naming the file."""
        try:
            db = self._connect()
            with db:
                db.execute("BEGIN IMMEDIATE")
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
            raise OSError(f"{self.path}: the text cache could not be saved: {exc}") from exc

    def close(self) -> None:
        if self._db is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None


class TextCache:
    """Memoises `compute()` per (text, kind); `path`: the SQLite file it persists to (None: this build only)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.version = cache_file.version("texts", FORMAT)
        self._store = TextStore(path, self.version) if path is not None else None
        for old in _FORMER if path is not None else ():  # the dict texts were kept in before, beside this file
            if old != path.name:
                (path.parent / old).unlink(missing_ok=True)
        self._entries: dict[bytes, dict[str, Any]] = {}  # the kinds of each text this build asked about
        self._changed: set[bytes] = set()  # texts that got a new derived value in this build
        self._tokens: dict[str, list[Token]] = {}
        self._keys: dict[str, bytes] = {}  # text -> its key (each text is asked for several times in a build)
        self.misses = 0

    def parse(self, text: str) -> list[Token]:
        """The token stream of a text (parsed once per build; shared, so never change it)."""
        tokens = self._tokens.get(text)
        if tokens is None:
            tokens = self._tokens[text] = scanner().parse(text)
        return tokens

    def derived(self, text: str, kind: str, compute: Callable[[], Any], *, last: bool = False) -> Any:  # noqa: ANN401
        """`compute()` (a plain-data value derived from `text`, e.g. from `parse(text)`), from the cache when
        this text was seen before.

        `last`: this is usually the text's last use in a build, so its tokens are let go."""
        key = self._key(text)
        entry = self._entry(key)
        if kind in entry:
            return entry[kind]
        value = compute()
        self._set(key, kind, value)
        if last:
            self._tokens.pop(text, None)
        return value

    def get(self, text: str, kind: str) -> Any:  # noqa: ANN401 - plain data
        """What was derived from `text` as `kind` (in this build or one before), or None."""
        return self._entry(self._key(text)).get(kind)

    def put(self, text: str, kind: str, value: Any) -> None:  # noqa: ANN401 - plain data
        """Keep `value`, derived from `text` as `kind` (a value derived for many texts at once)."""
        self._set(self._key(text), kind, value)

    def _set(self, key: bytes, kind: str, value: Any) -> None:  # noqa: ANN401 - plain data
        self._entry(key)[kind] = value
        self.misses += 1
        self._changed.add(key)

    def _key(self, text: str) -> bytes:
        key = self._keys.get(text)
        if key is None:
            key = self._keys[text] = text_key(text)
        return key

    def _entry(self, key: bytes) -> dict[str, Any]:
        """The derived values of the text of `key` (those kept from earlier builds at first)."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = self._store.get(key) if self._store is not None else {}
        return entry

    def save(self, prune: bool = True) -> None:
        """Keep what this build derived anew. `prune`: this build saw every text, so the texts it did not use are
        dropped when the store holds more than twice what it used."""
        self._tokens.clear()  # (the build is done with them: parsed for links, some texts were never rendered)
        if self._store is None:
            return
        used = (lambda: set(self._entries)) if prune else None
        self._store.save({k: self._entries[k] for k in self._changed}, used, len(self._entries))
        self._changed.clear()
        self._store.close()
