"""Vectors kept across builds by key, as the rows of one float32 file read straight into the array asked for.

The site keeps every L2 memory's vector between builds (speed.layer_cache). Held as a dict of bytes, a 100k store's
vectors were loaded whole at each build (a second of a rebuild after one memory changed) and sat in the heap for the
rest of it, beside the matrix made from them. Here they are rows of `<name>-<generation>.f32`; `<name>.rows` (a
cache_file: plain data under a version key) lists each row's key. Reading copies only the rows asked for, run by run,
into the array returned; new rows are appended. Rows of keys let go are counted dead, and the file is written anew
(a new generation, then the list naming it, then the old file removed) once they pass a quarter of it.

A list names its generation, so rows from another generation are never read as its own: a crash between two
writes leaves an unnamed file (removed when a list is next written) or rows past the list's end (written over).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from memwiki.site.speed import cache_file

DEAD_SHARE = 0.25  # dead rows past which the file is written anew with the live ones only
COPY_ROWS = 8192  # rows read at a time when the file is written anew


class VectorRows:
    """float32 vectors of one width by key, in `folder` under `name`; `version`: the cache_file version key."""

    def __init__(self, folder: Path, name: str, version: str) -> None:
        self.folder = folder
        self.name = name
        self.version = version
        self.keys: list[str | None] = []  # row -> its key (None: a dead row)
        self.rows: dict[str, int] = {}  # key -> its row
        self.width = 0  # floats per row (0: none yet)
        self._generation = os.urandom(8).hex()
        self._changed = False  # rows added or let go since the list was written
        saved = cache_file.load(self._list_path, version)
        if isinstance(saved, tuple) and len(saved) == 3:
            generation, width, keys = saved
            data = self._data_path(generation)
            if isinstance(keys, list) and width and data.is_file() and data.stat().st_size >= len(keys) * width * 4:
                self._generation, self.width, self.keys = generation, width, keys
                self.rows = {k: n for n, k in enumerate(keys) if k is not None}

    @property
    def _list_path(self) -> Path:
        return self.folder / f"{self.name}.rows"

    def _data_path(self, generation: str) -> Path:
        return self.folder / f"{self.name}-{generation}.f32"

    def __contains__(self, key: str) -> bool:
        return key in self.rows

    def add(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Keep these vectors (one row each). A width other than the kept one starts the file again, and so does a
        file gone since it was read (another build wrote its rows anew: writing past the end of a new empty file
        would name zeros as vectors)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if not len(keys):
            return
        path = self._data_path(self._generation)
        if vectors.shape[1] != self.width or (self.keys and not path.is_file()):
            self.keys, self.rows, self.width = [], {}, vectors.shape[1]
            self._generation = os.urandom(8).hex()
            path = self._data_path(self._generation)
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(path, "r+b" if path.exists() else "wb") as f:
            f.seek(len(self.keys) * self.width * 4)  # (after the named rows: a crash's leftovers are written over)
            f.write(vectors.tobytes())
        for key in keys:
            old = self.rows.get(key)
            if old is not None:
                self.keys[old] = None
            self.rows[key] = len(self.keys)
            self.keys.append(key)
        self._changed = True

    def read(self, keys: Sequence[str]) -> np.ndarray:
        """The rows of `keys` (all kept), as a new array: runs of consecutive rows are read in one call each."""
        out = np.empty((len(keys), self.width), dtype=np.float32)
        if not keys:
            return out
        rows = np.fromiter((self.rows[k] for k in keys), dtype=np.int64, count=len(keys))
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [len(rows)]))
        size = self.width * 4
        with open(self._data_path(self._generation), "rb") as f:
            for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
                f.seek(int(rows[start]) * size)
                if f.readinto(memoryview(out[start:end]).cast("B")) != (end - start) * size:
                    raise OSError(f"{f.name}: shorter than its list says")
        return out

    def keep_only(self, live: Iterable[str]) -> None:
        """Let go of every key not in `live`."""
        live = set(live)
        for key in [k for k in self.rows if k not in live]:
            self.keys[self.rows.pop(key)] = None
            self._changed = True

    def save(self) -> None:
        """Name the rows added since the last save (or write the file anew when dead rows pass DEAD_SHARE). The
        rows reach the disk before the list that names them (a list never names rows a power cut lost)."""
        if not self._changed:
            return
        if len(self.keys) - len(self.rows) > DEAD_SHARE * max(len(self.keys), 1):
            self._write_anew()
        data = self._data_path(self._generation)
        if self.keys:
            with open(data, "rb+") as f:
                os.fsync(f.fileno())
        cache_file.dump(self._list_path, self.version, (self._generation, self.width, self.keys))
        self._changed = False
        for stale in self.folder.glob(f"{self.name}-*.f32"):
            if stale != data:
                stale.unlink(missing_ok=True)

    def _write_anew(self) -> None:
        live = [k for k in self.keys if k is not None]
        generation = os.urandom(8).hex()
        with open(self._data_path(generation), "wb") as f:
            for start in range(0, len(live), COPY_ROWS):
                f.write(self.read(live[start : start + COPY_ROWS]).tobytes())
        self._generation, self.keys = generation, live
        self.rows = {k: n for n, k in enumerate(live)}
