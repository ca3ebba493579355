"""Naming a damaged part of a store: which layer, which file, and what to do, in one line.

Opening a layer checks what is cheap (the SQLite header and schema); a file damaged deeper (a torn page
found by a later read) is named after the fact by `find_damage`, which runs SQLite's `quick_check` on
each of the store's SQLite files. A store whose L2 is on a Chroma server has no `l2/chroma.sqlite3` of its
own (the server's files are the server's to check); its lexical index is still checked here.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

from memwiki.common.sqlitedb import connect_readonly
from memwiki.errors import DamagedStoreError, DiskFullError, MemwikiError, disk_full_message
from memwiki.store.layout import LAYER_PATHS

# part -> (what a person calls it, its file relative to the store root)
SQLITE_PARTS = {
    "graph": ("L3 knowledge graph", LAYER_PATHS["graph"]),
    "sessions": ("L4 session history", LAYER_PATHS["sessions"]),
    "l2": ("L2 semantic memory", "l2/chroma.sqlite3"),
    "lexical": ("L2 lexical index", "l2/lexical.sqlite3"),
}


def damaged_message(part: str, path: Path, reason: str) -> str:
    """The one wording for a store part that cannot be read."""
    return f"{part} at {path} is damaged ({reason}): restore it from a backup or move it aside"


def unreachable_message(url: str, reason: str) -> str:
    """The one wording for a store whose L2 is on a Chroma server that does not answer (nothing is damaged: the
    store's L2 is there when the server is)."""
    return (
        f"L2 semantic memory: the Chroma server at {url} is not reachable ({reason}): start it, "
        "or correct chroma.url in the store's store.json"
    )


_FULL = ("disk is full", "no space left on device", "os error 28", "errno 28", "disk quota exceeded")


def disk_full(exc: BaseException, path: Path | None = None) -> bool:
    """Whether an error says the disk (or the quota) is full: a write failed, nothing is damaged. SQLite says only
    "disk I/O error" when it cannot make its journal: then the file system at `path` is asked."""
    text = str(exc).lower()
    if getattr(exc, "errno", None) in (28, 122) or any(words in text for words in _FULL):
        return True
    if path is not None and "disk i/o error" in text:
        try:
            return shutil.disk_usage(Path(path).parent).free < 1 << 20
        except OSError:
            return False
    return False


def read_only(exc: BaseException, path: Path) -> bool:
    """Whether an error comes from a read-only file system (or a database file the process may not write): nothing
    is damaged, Chroma only cannot open its database without writing to it."""
    if getattr(exc, "errno", None) == errno.EROFS or "readonly database" in str(exc).lower():
        return True
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def read_only_message(part: str, path: Path, why: str = "it cannot be written") -> str:
    """The one wording for a store part on a read-only file system."""
    return f"{part} at {path} is on a read-only file system and {why} (nothing is damaged, nothing was written)"


def damaged(part: str, path: Path, exc: BaseException) -> MemwikiError:
    """A DamagedStoreError for `part` at `path`, the reason taken from `exc` without a repeated path (or, when the
    disk is full, a DiskFullError: a full disk is no damage)."""
    if disk_full(exc, path):
        return DiskFullError(disk_full_message(path))
    if read_only(exc, path):
        return MemwikiError(read_only_message(part, path))
    reason = " ".join(str(exc).split()).removeprefix(f"{path}: ") or type(exc).__name__
    return DamagedStoreError(damaged_message(part, path, reason))


def sqlite_problem(path: Path) -> str | None:
    """Why the SQLite file at `path` is unreadable (SQLite's own words), or None when `quick_check` passes."""
    try:
        conn = connect_readonly(path)
    except MemwikiError as exc:
        return str(exc).removeprefix(f"{path}: ")
    try:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        conn.close()
    return None if rows == ["ok"] else "; ".join(rows[:3])


def find_damage(root: Path) -> list[DamagedStoreError]:
    """Every SQLite part of the store at `root` that fails `quick_check`, as one-line errors."""
    found = []
    for part, name in SQLITE_PARTS.values():
        path = Path(root) / name
        if path.is_file() and (problem := sqlite_problem(path)):
            found.append(DamagedStoreError(damaged_message(part, path, problem)))
    return found
