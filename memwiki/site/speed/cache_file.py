"""The plugin's cache files: written in one step, read back only when this code, in this version, wrote them.

Caches hold plain data only (marshal: dicts, lists, tuples, strings, numbers, bytes): loading one never runs
code, whoever wrote the folder. Each file carries a version key (`version`: a hash of the plugin's and the
store's code, plus what the caller adds); a file with another key, or that does not load, counts as absent.
No fsync: a cache lost to a power cut is only made again.
"""

from __future__ import annotations

import hashlib
import itertools
import marshal
import os
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

_PACKAGES = (Path(__file__).resolve().parents[2],)  # memwiki/: the store's code and the site's


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of the plugin's and the store's code (what makes every cached value)."""
    digest = hashlib.sha1()
    for root in _PACKAGES:
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def version(*parts: object) -> str:
    """The version key of a cache file: the code, marshal's format and the caller's `parts`."""
    return hashlib.sha1(repr((code_digest(), marshal.version, parts)).encode()).hexdigest()


def replace_file(path: Path | str, data: bytes | Iterable[bytes | memoryview]) -> None:
    """Write `data` (or its pieces, one after the other) to `path` in one step: a temporary file renamed over it
    (removed when making the pieces fails); folders are made."""
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            for piece in [data] if isinstance(data, bytes) else data:
                f.write(piece)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def dump(path: Path, key: str, value: Any) -> bool:  # noqa: ANN401 - plain data
    """Save `value` under version `key`; False (nothing written) when it is not plain data."""
    try:
        data = marshal.dumps((key, value))
    except ValueError:
        return False
    replace_file(path, data)
    return True


def load(path: Path, key: str) -> Any:  # noqa: ANN401 - plain data
    """The value saved under version `key`, or None."""
    try:
        saved = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if isinstance(saved, tuple) and len(saved) == 2 and saved[0] == key:
        return saved[1]
    return None


CHUNK = 5_000  # entries of a dict per marshal record in a file of `dump_dict`
_TAIL = 8  # bytes at the end of such a file: the length of the record before them, which lists the others


def dump_dict(path: Path, key: str, head: object, data: dict, chunk: int = CHUNK) -> bool:
    """Save `head` and the dict `data` under version `key`, the dict in records of `chunk` entries (marshal makes
    a record whole in memory, twice its size while it grows: a 100k store's text cache was a 100 MB record), then
    a record of (key, head, each record's length). False (nothing written) when it is not plain data."""
    sizes: list[int] = []

    def records() -> Iterator[bytes]:
        items = iter(data.items())
        while chunk_of := dict(itertools.islice(items, chunk)):
            sizes.append(len(record := marshal.dumps(chunk_of)))
            yield record
        last = marshal.dumps((key, head, sizes))
        yield last + len(last).to_bytes(_TAIL, "big")

    try:
        replace_file(path, records())
    except ValueError:
        return False
    return True


def load_dict(path: Path, key: str) -> tuple[object, dict] | None:
    """(head, dict) as `dump_dict` saved them under version `key`, or None. (Read whole, each record parsed in
    place: marshal.load on a file reads it a value at a time, twenty times slower.)"""
    try:
        raw = memoryview(path.read_bytes())
        end = len(raw) - _TAIL
        start = end - int.from_bytes(raw[end:], "big")
        saved = marshal.loads(raw[start:end]) if start >= 0 else None
        if not (isinstance(saved, tuple) and len(saved) == 3 and saved[0] == key and isinstance(saved[2], list)):
            return None
        data: dict = {}
        at = 0
        for size in saved[2]:
            chunk = marshal.loads(raw[at : at + size])
            if not isinstance(chunk, dict):
                return None
            data.update(chunk)
            at += size
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return (saved[1], data) if at == start else None


class JournaledDict:
    """A large dict kept across builds in two files: `<path>` holds it as of some build, `<path>.journal`
    what changed since (entries set, and keys dropped as None). Loading applies the journal; saving writes
    only the journal, and writes the whole dict again (and no journal) once the journal passes a quarter of
    the dict. A rebuild that changes a few entries of a 15 MB dict then writes kilobytes, not the 15 MB.
    Each whole write starts a new generation (a random id), and a journal applies only to its own: a journal
    left by a crash between the two writes, or from before the main file was lost, is ignored.

    Values must be plain data and never None (None marks a dropped key); `chunk`: entries per record of the file
    (`dump_dict`: fewer for large values)."""

    FOLD = 0.25

    def __init__(self, path: Path, key: str, chunk: int = CHUNK) -> None:
        self.path = path
        self.chunk = chunk
        self.journal_path = Path(f"{path}.journal")
        self.key = key
        self.data: dict = {}
        self._generation = ""
        self._journal: dict = {}
        self._changed: dict = {}
        self._whole = True  # no usable file: the next save writes the whole dict
        base = load_dict(path, key)
        if base is not None and isinstance(base[0], str):
            self._generation, self.data = base
            self._whole = False
            journal = load(self.journal_path, key)
            if isinstance(journal, tuple) and len(journal) == 2 and journal[0] == self._generation:
                self._journal = journal[1]
                for k, v in self._journal.items():
                    if v is None:
                        self.data.pop(k, None)
                    else:
                        self.data[k] = v

    def set(self, k: object, value: object) -> None:
        self.data[k] = value
        self._changed[k] = value

    def drop(self, k: object) -> None:
        if self.data.pop(k, None) is not None:
            self._changed[k] = None

    def replace_all(self, data: dict) -> None:
        """Make `data` the whole dict (written whole at the next save)."""
        self.data = data
        self._whole = True

    def save(self) -> None:
        """Write what changed since the last save (nothing when nothing did)."""
        if not self._whole and not self._changed:
            return
        journal = {**self._journal, **self._changed}
        if self._whole or len(journal) > self.FOLD * max(len(self.data), 1):
            self._generation = os.urandom(8).hex()  # never the one of a journal left from before
            written = dump_dict(self.path, self.key, self._generation, self.data, self.chunk)
            self.journal_path.unlink(missing_ok=True)
            self._journal = {}
        else:
            written = dump(self.journal_path, self.key, (self._generation, journal))
            self._journal = journal
        self._changed = {}
        self._whole = not written
        if not written:  # not plain data: no cache rather than a stale one
            self.path.unlink(missing_ok=True)
            self.journal_path.unlink(missing_ok=True)
