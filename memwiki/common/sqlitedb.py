"""SQLite helpers shared by every layer on SQLite (L3, L4, the lexical index) and the source readers.

`connect` opens read-write (WAL, busy timeout, foreign keys); `connect_readonly` never writes a byte next
to the file, not even `-wal` / `-shm`; `write_transaction` wraps one all-or-nothing write.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from memwiki.errors import MemwikiError, SourceError, StoreLockedError

DEFAULT_BUSY_TIMEOUT = 5.0
_SQLITE_MAGIC = b"SQLite format 3\x00"


def sqlite_error(exc: sqlite3.Error, path: Path | str) -> MemwikiError:
    """A person-readable error for a SQLite failure on `path` (locked → StoreLockedError)."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return StoreLockedError(f"{path}: locked by another writer ({text}); try again when it has finished")
    if "not a database" in text or "malformed" in text:
        return SourceError(f"{path}: not a readable SQLite database ({text})")
    return MemwikiError(f"{path}: SQLite error: {text}")


def connect(path: Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> sqlite3.Connection:
    """Open (creating if needed) a SQLite file for reading and writing.

    WAL journal, a busy timeout of `busy_timeout` seconds, foreign keys on, rows as sqlite3.Row, and
    autocommit mode: writes go through `write_transaction`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    except sqlite3.Error as exc:
        raise sqlite_error(exc, path) from None
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as exc:
        conn.close()
        raise sqlite_error(exc, path) from None
    return conn


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection, path: Path | str) -> Iterator[sqlite3.Connection]:
    """One write transaction (BEGIN IMMEDIATE ... COMMIT); on any error it is rolled back whole.

    Another writer holding the database past the busy timeout raises StoreLockedError.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise sqlite_error(exc, path) from None
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException as exc:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise sqlite_error(exc, path) from exc
        raise


class _SnapshotConnection(sqlite3.Connection):
    """A connection that removes its snapshot folder (if any) when closed."""

    snapshot_dir: str | None = None

    def close(self) -> None:
        super().close()
        if self.snapshot_dir:
            shutil.rmtree(self.snapshot_dir, ignore_errors=True)
            self.snapshot_dir = None


def _file_state(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


def connect_readonly(path: Path, live: bool = False) -> sqlite3.Connection:
    """Open a SQLite file for reading without ever writing to its folder (no `-wal`, no `-shm`).

    `live`: the file is memwiki's own and a writer may be at work on it: with no pending journal it is opened
    with `mode=ro` (SQLite's locks keep each read consistent) instead of `immutable=1` (which promises SQLite
    that nothing changes the file: a write meanwhile made reads fail as "malformed").

    With no pending `-wal` / `-journal` beside it the file is opened in place with `mode=ro&immutable=1`.
    Otherwise (a running or crashed writer left rows in the WAL) the database and its journal are copied
    together to a private temporary folder and the copy is opened; the folder is removed on close().
    Missing or non-SQLite files raise SourceError.
    """
    path = Path(path)
    if not path.is_file():
        raise SourceError(f"{path}: no such SQLite file")
    with path.open("rb") as fh:
        header = fh.read(len(_SQLITE_MAGIC))
    if header and header != _SQLITE_MAGIC:
        raise SourceError(f"{path}: not a SQLite database")
    pending = _pending(path)
    try:
        if not pending:
            mode = "mode=ro" if live else "mode=ro&immutable=1"
            uri = f"file:{quote(str(path.resolve()))}?{mode}"
            conn = sqlite3.connect(uri, uri=True, factory=_SnapshotConnection, isolation_level=None)
        else:
            conn = _open_snapshot(path, pending)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA query_only = ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        raise sqlite_error(exc, path) from None
    return conn


def _sidecars(path: Path) -> list[Path]:
    return [Path(f"{path}{suffix}") for suffix in ("-wal", "-journal")]


def _pending(path: Path) -> list[Path]:
    """The journals beside `path` that hold rows (a running or crashed writer's)."""
    return [p for p in _sidecars(path) if (state := _file_state(p)) is not None and state[0] > 0]


def _open_snapshot(path: Path, pending: list[Path]) -> _SnapshotConnection:
    """Copy `path` and its pending journal(s) to a temp folder (retrying if they change meanwhile); open it."""
    folder = tempfile.mkdtemp(prefix="memwiki-ro-")
    try:
        for attempt in range(20):
            if attempt:  # a writer is at work: the journals of a moment ago may be gone, or new ones there
                time.sleep(0.01 * attempt)
                pending = _pending(path)
                for name in os.listdir(folder):
                    os.unlink(os.path.join(folder, name))
            files = [path, *pending]
            before = [_file_state(p) for p in files]
            try:
                for src in files:
                    shutil.copyfile(src, os.path.join(folder, src.name))
            except FileNotFoundError:
                continue  # a journal went away while it was copied (its transaction ended): copy again
            if [_file_state(p) for p in files] == before and _pending(path) == pending:
                break
        else:
            raise SourceError(f"{path}: kept changing while being copied for a read-only snapshot; try again")
        conn = sqlite3.connect(
            os.path.join(folder, path.name), factory=_SnapshotConnection, isolation_level=None, timeout=1.0
        )
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    conn.snapshot_dir = folder
    weakref.finalize(conn, shutil.rmtree, folder, True)
    return conn
