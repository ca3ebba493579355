"""Chroma's `chroma.sqlite3`, read straight from the file, read-only (no chromadb import, nothing written).

Chroma keeps each collection's documents and metadata in its SQLite metadata segment (`embeddings`,
`embedding_metadata`, the document under the key `chroma:document`) and logs every write in
`embeddings_queue` (with its vector) until all segments have applied it. Reading the segment and replaying
the writes it has not applied yet gives what `collection.get()` gives. Vectors live in the HNSW files, except
for recent writes, still in the queue: `queued_vectors` finds those. Used for MemPalace palaces and, when
publishing, for a memwiki store's own L2 (opening a `PersistentClient` writes to the database).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memwiki.errors import SourceError
from memwiki.readers.sqlite_ro import ReadOnlyDB, open_readonly_db
from memwiki.source import Changes

DOCUMENT_KEY = "chroma:document"
_ADD, _UPDATE, _UPSERT, _DELETE = 0, 1, 2, 3  # chromadb Operation codes in embeddings_queue


def collection_id(db: ReadOnlyDB, name: str) -> str | None:
    """The id of the collection called `name`, or None."""
    if "collections" not in db.tables():
        return None
    row = db.conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def metadata_segment(db: ReadOnlyDB, cid: str) -> str | None:
    cols = set(db.columns("segments"))
    if "scope" in cols:
        row = db.conn.execute("SELECT id FROM segments WHERE collection = ? AND scope = 'METADATA'", (cid,)).fetchone()
    else:
        row = db.conn.execute(
            "SELECT id FROM segments WHERE collection = ? AND type LIKE '%metadata%'", (cid,)
        ).fetchone()
    return row[0] if row else None


def _value(row: Any, has_bool: bool) -> Any:
    if row["string_value"] is not None:
        return row["string_value"]
    if row["int_value"] is not None:
        return row["int_value"]
    if row["float_value"] is not None:
        return row["float_value"]
    if has_bool and row["bool_value"] is not None:
        return bool(row["bool_value"])
    return None


def collection_records(db: ReadOnlyDB, cid: str) -> tuple[dict[str, dict[str, Any]], int]:
    """id → metadata (document under `chroma:document`) for one collection, and how many queued writes applied."""
    segment = metadata_segment(db, cid)
    records = {i: meta for _, _, i, meta in _segment_rows(db, segment)} if segment is not None else {}
    return records, replay_queue(db, cid, _segment_seq(db, segment) if segment is not None else 0, records)


def _segment_seq(db: ReadOnlyDB, segment: str) -> int:
    """The sequence number of the last write the metadata segment applied (0: none, or not said)."""
    if "max_seq_id" not in db.tables():
        return 0
    row = db.conn.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (segment,)).fetchone()
    if not row or row[0] is None:
        return 0
    return int.from_bytes(row[0], "big") if isinstance(row[0], bytes) else int(row[0])


Row = tuple[int, Any, str, dict[str, Any]]  # (row, sequence number of its last write, id, metadata)


def _segment_rows(db: ReadOnlyDB, segment: str, after: int | None = None) -> list[Row]:
    """The segment's records in row order; `after`: only those written after that sequence number (Chroma gives a
    record the number of its last write)."""
    has_bool = "bool_value" in db.columns("embedding_metadata")
    bool_col = "m.bool_value" if has_bool else "NULL"
    since = "" if after is None else " AND e.seq_id > ?"
    params = (segment,) if after is None else (segment, after)
    rows = db.conn.cursor()
    rows.row_factory = None  # (tuples: a 100k store has a million rows here)
    rows.execute(
        "SELECT e.id, e.seq_id, e.embedding_id, m.key, COALESCE(m.string_value, m.int_value, m.float_value), "
        f"{bool_col} FROM embeddings e LEFT JOIN embedding_metadata m ON m.id = e.id "
        f"WHERE e.segment_id = ?{since} ORDER BY e.id",
        params,
    )
    records: dict[int, Row] = {}
    for rid, seq, embedding_id, key, value, flag in rows:
        record = records.get(rid)
        if record is None:
            record = records[rid] = (rid, seq, embedding_id, {})
        if key is not None:
            record[3][key] = value if value is not None or flag is None else bool(flag)  # (as `_value` reads a row)
    if "embedding_metadata_array" in db.tables() and records:
        for r in db.conn.execute(
            "SELECT a.id AS rid, a.key, a.string_value, a.int_value, a.float_value, a.bool_value "
            f"FROM embedding_metadata_array a JOIN embeddings e ON e.id = a.id WHERE e.segment_id = ?{since} "
            "ORDER BY a.rowid",
            params,
        ):
            value = records[r["rid"]][3].setdefault(r["key"], [])
            if isinstance(value, list):
                value.append(_value(r, True))
    return list(records.values())


def collection_changes(db: ReadOnlyDB, cid: str, after: int, count: int, known: set[str]) -> Changes[Row] | None:
    """The records of one collection written after sequence number `after`, for a reader that then knew `count`
    records (their ids `known`). None when the file cannot say: no metadata segment, sequence numbers stored as
    bytes (older Chroma), a segment behind `after`, or writes still queued for the segment. (Another database, or a
    backup put back, shows in `Changes.total`.)"""
    segment = metadata_segment(db, cid)
    if segment is None:
        return None
    seq = _segment_seq(db, segment)
    kind, now, total = db.conn.execute(
        "SELECT typeof(max(seq_id)), count(*), coalesce(sum(seq_id), 0) FROM embeddings WHERE segment_id = ?",
        (segment,),
    ).fetchone()
    if kind not in ("integer", "null") or seq < after or _queued_after(db, cid, seq):
        return None
    rows = _segment_rows(db, segment, after)
    added = sum(1 for _, _, i, _ in rows if i not in known)
    ids = None
    if now != count + added:  # (a delete leaves no row to find: the ids say which)
        ids = [r[0] for r in db.conn.execute("SELECT embedding_id FROM embeddings WHERE segment_id = ?", (segment,))]
    return Changes(rows, ids, seq, now, total)


def _queued_after(db: ReadOnlyDB, cid: str, seq: int) -> bool:
    """Whether Chroma's queue holds a write of this collection that its metadata segment has not applied."""
    if not {"seq_id", "topic"} <= set(db.columns("embeddings_queue")):
        return False
    q = "SELECT 1 FROM embeddings_queue WHERE seq_id > ? AND topic LIKE ? LIMIT 1"
    return db.conn.execute(q, (seq, f"%{cid}")).fetchone() is not None


def replay_queue(db: ReadOnlyDB, cid: str, after: int, records: dict[str, dict[str, Any]]) -> int:
    """Apply writes Chroma logged in `embeddings_queue` but has not yet applied to the metadata segment."""
    if not {"seq_id", "operation", "topic", "id", "metadata"} <= set(db.columns("embeddings_queue")):
        return 0
    applied = 0
    for r in db.conn.execute(
        "SELECT operation, id, metadata FROM embeddings_queue WHERE seq_id > ? AND topic LIKE ? ORDER BY seq_id",
        (after, f"%{cid}"),
    ):
        try:
            meta = json.loads(r["metadata"]) if r["metadata"] else {}
        except ValueError:
            meta = {}
        op, rid = r["operation"], r["id"]
        if op == _DELETE:
            records.pop(rid, None)
        elif op == _ADD and rid not in records or op == _UPSERT and rid not in records:
            records[rid] = {k: v for k, v in meta.items() if v is not None}
        elif op in (_UPDATE, _UPSERT) and rid in records:
            for k, v in meta.items():
                if v is None:
                    records[rid].pop(k, None)
                else:
                    records[rid][k] = v
        else:
            continue
        applied += 1
    return applied


def queued_vectors(db: ReadOnlyDB, cid: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
    """The vectors of these records that Chroma's queue still holds (their latest write, when it carried one
    and no delete came after it); records not found there are left out."""
    if not {"seq_id", "operation", "topic", "id", "vector", "encoding"} <= set(db.columns("embeddings_queue")):
        return {}
    wanted = set(ids)
    found: dict[str, np.ndarray] = {}
    for r in db.conn.execute(
        "SELECT operation, id, vector, encoding FROM embeddings_queue WHERE topic LIKE ? ORDER BY seq_id",
        (f"%{cid}",),
    ):
        if r["id"] not in wanted:
            continue
        if r["operation"] == _DELETE:
            found.pop(r["id"], None)
        elif r["vector"] is not None and (r["encoding"] or "FLOAT32").upper() == "FLOAT32":
            found[r["id"]] = np.frombuffer(r["vector"], dtype=np.float32).copy()
    return found


@contextlib.contextmanager
def _collection(path: Path, name: str, live: bool) -> Iterator[tuple[ReadOnlyDB, str | None]]:
    """The file at `path` opened read-only, with the id of its collection called `name` (None: it has none)."""
    with open_readonly_db(path, "Chroma database", live) as db:
        if missing := {"collections", "segments", "embeddings", "embedding_metadata"} - db.tables():
            raise SourceError(f"{path}: not a Chroma database this reader knows (no {sorted(missing)})")
        yield db, collection_id(db, name)


def read_collection(path: Path, name: str, live: bool = False) -> list[tuple[str, dict[str, Any]]] | None:
    """(id, metadata with the document under DOCUMENT_KEY) of each record of one collection, in Chroma's
    order; None when the file has no such collection. `live`: a writer may be at work (memwiki.common.sqlitedb)."""
    with _collection(path, name, live) as (db, cid):
        return list(collection_records(db, cid)[0].items()) if cid is not None else None


def read_changes(path: Path, name: str, after: int, count: int, known: set[str]) -> Changes[Row] | None:
    """`collection_changes` of one collection of the file at `path` (a writer may be at work); None also when the
    file has no such collection."""
    with _collection(path, name, True) as (db, cid):
        return collection_changes(db, cid, after, count, known) if cid is not None else None


def read_queued_vectors(path: Path, name: str, ids: Sequence[str], live: bool = False) -> dict[str, np.ndarray]:
    """`queued_vectors` of one collection of the file at `path`."""
    with open_readonly_db(path, "Chroma database", live) as db:
        cid = collection_id(db, name)
        return queued_vectors(db, cid, ids) if cid is not None and "embeddings_queue" in db.tables() else {}
