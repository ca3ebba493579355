"""Open another program's SQLite file strictly read-only, and say what a person should know about it.

The opening itself is `memwiki.layers.graph.connect_readonly` (in place with `mode=ro&immutable=1` when no `-wal` /
`-journal` is pending, else on a private snapshot copy of the database and its journal). This module adds
what a reader of a live agent's files needs on top: whether a writer holds the database right now, the
notes to show on the audit page, and the tables and columns the file really has (layouts vary by version).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

from memwiki.common.sqlitedb import connect_readonly
from memwiki.errors import MemwikiError, SourceError

# SQLite's lock bytes (os_unix.c): in rollback-journal mode a writer holds a write lock on PENDING / RESERVED
# of the database file; in WAL mode it holds the WAL write lock, byte 120 of the `-shm` file.
_PENDING_BYTE = 0x40000000
_RESERVED_BYTE = _PENDING_BYTE + 1
_WAL_WRITE_LOCK = 120


def _flock_struct(l_type: int, start: int, length: int) -> tuple[str, bytes]:
    """A `struct flock` for F_GETLK on this platform (Linux and macOS layouts)."""
    if sys.platform == "darwin":
        fmt = "qqihh"
        return fmt, struct.pack(fmt, start, length, 0, l_type, os.SEEK_SET)
    fmt = "hhqqi4x"
    return fmt, struct.pack(fmt, l_type, os.SEEK_SET, start, length, 0)


def writer_pid(path: Path) -> int | None:
    """The pid of another process writing to the SQLite file `path` right now (holding the WAL write lock,
    or RESERVED / PENDING / EXCLUSIVE in rollback mode), else None.

    Uses F_GETLK, which only asks and never takes a lock; any doubt (unsupported platform, unreadable file)
    answers None. Locks held by this very process are invisible to F_GETLK.
    """
    shm = Path(f"{path}-shm")
    if shm.is_file():
        return _lock_holder(shm, (_WAL_WRITE_LOCK,))
    return _lock_holder(path, (_RESERVED_BYTE, _PENDING_BYTE))


def _lock_holder(path: Path, offsets: tuple[int, ...]) -> int | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        for start in offsets:
            fmt, arg = _flock_struct(fcntl.F_RDLCK, start, 1)
            res = fcntl.fcntl(fd, fcntl.F_GETLK, arg)
            values = struct.unpack(fmt, res)
            l_type, pid = (values[3], values[2]) if sys.platform == "darwin" else (values[0], values[4])
            if l_type != fcntl.F_UNLCK:
                return int(pid) or None
    except (OSError, struct.error):
        return None
    finally:
        os.close(fd)
    return None


def _pending_journals(path: Path) -> list[str]:
    out = []
    for suffix in ("-wal", "-journal"):
        with contextlib.suppress(OSError):
            if Path(f"{path}{suffix}").stat().st_size > 0:
                out.append(path.name + suffix)
    return out


@dataclass
class ReadOnlyDB:
    """A read-only connection to someone else's SQLite file, with the notes its opening produced."""

    path: Path
    conn: sqlite3.Connection
    notes: list[str] = field(default_factory=list)
    _tables: set[str] | None = None

    def tables(self) -> set[str]:
        if self._tables is None:
            rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
            self._tables = {r[0] for r in rows}
        return self._tables

    def columns(self, table: str) -> list[str]:
        """The columns `table` has in this file (empty if there is no such table)."""
        if table not in self.tables():
            return []
        return [r[1] for r in self.conn.execute(f'PRAGMA table_info("{table}")')]

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ReadOnlyDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_readonly_db(path: Path, what: str = "", live: bool = False) -> ReadOnlyDB:
    """Open `path` read-only (see module doc). Missing or unreadable files raise SourceError naming them."""
    path = Path(path)
    label = what or path.name
    if not path.is_file():
        raise SourceError(f"{path}: no {label} here")
    notes: list[str] = []
    pending = _pending_journals(path)
    if (pid := writer_pid(path)) is not None:
        notes.append(
            f"{path}: locked by a running writer (pid {pid}); showing the last committed state, "
            "changes in progress will appear on the next read"
        )
    if pending:
        notes.append(
            f"{path}: read from a private snapshot copy because {', '.join(pending)} is present "
            "(a running writer or an unclean shutdown); the original files were not touched"
        )
    try:
        conn = connect_readonly(path, live)
    except SourceError:
        raise
    except MemwikiError as exc:
        raise SourceError(f"{label}: {exc}") from None
    return ReadOnlyDB(path, conn, notes)
