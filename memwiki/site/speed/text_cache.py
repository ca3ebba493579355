"""What a build derives from each memory text (its links, heading anchors, rendered HTML), kept across builds.

Most memory texts do not change between two builds, and parsing them with markdown-it is the plugin's costliest
step of its own. Results are keyed by the text's hash and by what was derived (`kind`), and saved in
the plugin's cache folder; a change to the code drops them all. Within a build each text is parsed at most once,
whatever is derived.

Two stores, by how a build reads them: what every build asks of every text (its links, the names it mentions) is
one marshal dict loaded whole (memwiki.site.speed.cache_file); what is asked only of the texts a build renders
(their HTML: kinds starting with one of RENDERED) is a SQLite table beside it, read one text at a time. A rebuild
renders a few texts; loading every text's HTML with the rest was two thirds of the cache's load at 100k memories.
"""

from __future__ import annotations

import contextlib
import hashlib
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

log = logging.getLogger("mkdocs.plugins.memwiki")

RENDERED = ("html", "inline")  # kinds (by their start) kept in the SQLite store: see the module's text
FORMAT = 2  # 2: the dict keyed by the text itself, rendered kinds apart


class RenderedStore:
    """The rendered kinds of each text: a SQLite table (text hash -> marshal of {kind: value}) at `path`, under a
    version (another version's rows are dropped on first use). Opened in the process that reads it (never a
    connection inherited through fork). A damaged file is a cache lost: set aside and made again."""

    def __init__(self, path: Path, version: str) -> None:
        self.path = path
        self.version = version
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._empty = True  # no rows (a first build): nothing to look up

    def _connect(self) -> sqlite3.Connection:
        if self._db is None or self._pid != os.getpid():
            try:
                self._db = self._open()
            except sqlite3.OperationalError:
                raise
            except sqlite3.DatabaseError as exc:  # (not a database, malformed)
                self._set_aside(exc)
                self._db = self._open()
            self._pid = os.getpid()
        return self._db

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        db.execute("CREATE TABLE IF NOT EXISTS texts (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID")
        db.execute("CREATE TABLE IF NOT EXISTS version (value TEXT NOT NULL)")
        if db.execute("SELECT value FROM version").fetchall() != [(self.version,)]:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.execute("DELETE FROM texts")
                db.execute("DELETE FROM version")
                db.execute("INSERT INTO version VALUES (?)", (self.version,))
        self._empty = db.execute("SELECT NOT EXISTS (SELECT 1 FROM texts)").fetchone()[0] == 1
        return db

    def _set_aside(self, exc: sqlite3.Error) -> None:
        log.warning("memwiki: %s: %s; the rendered texts are made again", self.path, exc)
        self.close()
        self.path.unlink(missing_ok=True)

    def get(self, key: str) -> dict[str, Any]:
        """The rendered kinds kept for the text of `key` ({} when none, or unreadable)."""
        try:
            db = self._connect()
            row = None if self._empty else db.execute("SELECT value FROM texts WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            raise OSError(f"{self.path}: the text cache could not be read: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            self._set_aside(exc)
            return {}
        if row is None:
            return {}
        try:
            value = marshal.loads(row[0])
        except (EOFError, ValueError, TypeError):
            return {}
        return value if isinstance(value, dict) else {}

    def save(
        self, entries: dict[str, dict[str, Any]], keep_only: Callable[[], set[str]] | None = None, used: int = 0
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
                if keep_only is not None and db.execute("SELECT count(*) FROM texts").fetchone()[0] > 2 * used:
                    live = keep_only()
                    if live:
                        db.execute("CREATE TEMP TABLE IF NOT EXISTS live (key TEXT PRIMARY KEY) WITHOUT ROWID")
                        db.execute("DELETE FROM live")
                        db.executemany("INSERT INTO live VALUES (?)", ((k,) for k in live))
                        db.execute("DELETE FROM texts WHERE key NOT IN (SELECT key FROM live)")
        except sqlite3.OperationalError as exc:
            raise OSError(f"{self.path}: the text cache could not be saved: {exc}") from exc
        except sqlite3.DatabaseError as exc:  # (damaged meanwhile: this build's texts are lost with it)
            self._set_aside(exc)

    def close(self) -> None:
        if self._db is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None


class TextCache:
    """Memoises `compute()` per (text, kind); `path`: the file it persists to (None: this build only)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.version = cache_file.version("texts", FORMAT)
        self._store = cache_file.JournaledDict(path, self.version) if path is not None else None
        self._rendered = RenderedStore(path.with_suffix(".sqlite3"), self.version) if path is not None else None
        # by the text itself: a dict hashes a string once, in C (a SHA-1 of each text was a tenth of a rebuild)
        self._old: dict[str, dict[str, Any]] = self._store.data if self._store is not None else {}
        self._new: dict[str, dict[str, Any]] = {}  # what this build used
        self._changed: set[str] = set()  # texts that got a new derived value in this build
        self._shown: dict[str, dict[str, Any]] = {}  # the RENDERED kinds of the texts this build asked for
        self._shown_changed: set[str] = set()
        self._tokens: dict[str, list[Token]] = {}
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
        entry = self._entry(text, kind)
        if kind in entry:
            return entry[kind]
        value = compute()
        self._set(text, kind, value)
        if last:
            self._tokens.pop(text, None)
        return value

    def get(self, text: str, kind: str) -> Any:  # noqa: ANN401 - plain data
        """What was derived from `text` as `kind` (in this build or one before), or None."""
        return self._entry(text, kind).get(kind)

    def kept_each(self, texts: list[str], kind: str) -> list[Any]:
        """`get` of each text (None: not derived yet) in one pass: what a scan of every text of the layers asks
        (a call per text was most of the scans' time at 100k memories). Not for RENDERED kinds."""
        new, old, out = self._new, self._old, []
        for text in texts:
            entry = new.get(text)
            if entry is None:
                entry = old.get(text)
                new[text] = entry = {} if entry is None else entry
            out.append(entry.get(kind))
        return out

    def put(self, text: str, kind: str, value: Any) -> None:  # noqa: ANN401 - plain data
        """Keep `value`, derived from `text` as `kind` (a value derived for many texts at once)."""
        self._set(text, kind, value)

    def _set(self, text: str, kind: str, value: Any) -> None:  # noqa: ANN401 - plain data
        self._entry(text, kind)[kind] = value
        self.misses += 1
        (self._shown_changed if kind.startswith(RENDERED) else self._changed).add(text)

    def _entry(self, text: str, kind: str) -> dict[str, Any]:
        """The derived values of `text` this build uses (those kept from earlier builds at first), in the store
        that keeps `kind`."""
        if kind.startswith(RENDERED):
            shown = self._shown.get(text)
            if shown is None:
                shown = self._shown[text] = self._rendered.get(_hash(text)) if self._rendered is not None else {}
                self._new.setdefault(text, self._old.get(text, {}))  # (a text used: kept by `save`'s pruning)
            return shown
        entry = self._new.get(text)
        if entry is None:
            entry = self._new[text] = self._old.get(text, {})
        return entry

    def save(self, prune: bool = True) -> None:
        """Keep what this build derived anew (cache_file.JournaledDict: a few entries, not the whole file).
        `prune`: this build saw every text, so the texts it did not use are dropped when the file holds more
        than twice what it used."""
        self._tokens.clear()  # (the build is done with them: parsed for links, some texts were never rendered)
        if self._store is None or self._rendered is None:
            return
        if prune and len(self._old) > 2 * len(self._new):
            self._store.replace_all({k: v for k, v in self._new.items() if v})
        else:
            for text in self._changed:
                self._store.set(text, self._new[text])
        self._changed.clear()
        self._store.save()
        used = (lambda: {_hash(text) for text in self._new}) if prune else None
        self._rendered.save({_hash(t): self._shown[t] for t in self._shown_changed}, used, len(self._new))
        self._shown_changed.clear()
        self._rendered.close()


def _hash(text: str) -> str:
    """A text's key in the RenderedStore."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
