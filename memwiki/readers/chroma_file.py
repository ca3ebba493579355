"""Chroma's `chroma.sqlite3`, read straight from the file, read-only (no chromadb import, nothing written).

Chroma keeps each collection's documents and metadata in its SQLite metadata segment (`embeddings`,
`embedding_metadata`, the document under the key `chroma:document`) and logs every write in
`embeddings_queue` (with its vector) until all segments have applied it. Reading the segment and replaying
the writes it has not applied yet gives what `collection.get()` gives. Vectors live in the HNSW files, except
for recent writes, still in the queue: `queued_vectors` finds those. Used for MemPalace palaces and, when
publishing, for a memwiki store's own L2 (opening a `PersistentClient` writes to the database).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memwiki.errors import SourceError
from memwiki.readers.sqlite_ro import ReadOnlyDB, open_readonly_db

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
    records: dict[str, dict[str, Any]] = {}
    segment = metadata_segment(db, cid)
    max_seq = 0
    if segment is not None:
        has_bool = "bool_value" in db.columns("embedding_metadata")
        bool_col = "m.bool_value" if has_bool else "NULL"
        rows = db.conn.cursor()
        rows.row_factory = None  # (tuples: a 100k store has a million rows here)
        rows.execute(
            "SELECT e.id, e.embedding_id, m.key, COALESCE(m.string_value, m.int_value, m.float_value), "
            f"{bool_col} FROM embeddings e LEFT JOIN embedding_metadata m ON m.id = e.id "
            "WHERE e.segment_id = ? ORDER BY e.id",
            (segment,),
        )
        rid_to_id: dict[int, str] = {}
        for rid, embedding_id, key, value, flag in rows:
            meta = records.get(embedding_id)
            if meta is None:
                meta = records[embedding_id] = {}
                rid_to_id[rid] = embedding_id
            if key is not None:
                meta[key] = value if value is not None or flag is None else bool(flag)  # (as `_value` reads a row)
        if "embedding_metadata_array" in db.tables():
            for r in db.conn.execute(
                "SELECT a.id AS rid, a.key, a.string_value, a.int_value, a.float_value, a.bool_value "
                "FROM embedding_metadata_array a JOIN embeddings e ON e.id = a.id WHERE e.segment_id = ? "
                "ORDER BY a.rowid",
                (segment,),
            ):
                value = records[rid_to_id[r["rid"]]].setdefault(r["key"], [])
                if isinstance(value, list):
                    value.append(_value(r, True))
        if "max_seq_id" in db.tables():
            row = db.conn.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (segment,)).fetchone()
            if row and row[0] is not None:
                max_seq = int.from_bytes(row[0], "big") if isinstance(row[0], bytes) else int(row[0])
    return records, replay_queue(db, cid, max_seq, records)


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


def read_collection(path: Path, name: str, live: bool = False) -> list[tuple[str, dict[str, Any]]] | None:
    """(id, metadata with the document under DOCUMENT_KEY) of each record of one collection, in Chroma's
    order; None when the file has no such collection. `live`: a writer may be at work (memwiki.common.sqlitedb)."""
    with open_readonly_db(path, "Chroma database", live) as db:
        if missing := {"collections", "segments", "embeddings", "embedding_metadata"} - db.tables():
            raise SourceError(f"{path}: not a Chroma database this reader knows (no {sorted(missing)})")
        cid = collection_id(db, name)
        return list(collection_records(db, cid)[0].items()) if cid is not None else None


def read_queued_vectors(path: Path, name: str, ids: Sequence[str], live: bool = False) -> dict[str, np.ndarray]:
    """`queued_vectors` of one collection of the file at `path`."""
    with open_readonly_db(path, "Chroma database", live) as db:
        cid = collection_id(db, name)
        return queued_vectors(db, cid, ids) if cid is not None and "embeddings_queue" in db.tables() else {}
