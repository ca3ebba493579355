"""L2 recovery: rebuild a local Chroma folder whose vector (HNSW) segment no longer loads.

Why it happens (chromadb 1.5.x, `rust/segment/src/local_hnsw.rs`, `persist`): every `sync_threshold`
(1,000) records the HNSW files are saved in place, then `index_metadata.pickle` is truncated and rewritten
(`File::create`, no fsync, no rename), and only then the segment's `max_seq_id` reaches SQLite. A SIGKILL
between these steps leaves files that disagree, and every later read fails with `Error sending backfill
request to compactor: ... hnsw segment ...`. Later Chroma versions write the pickle through a temp file,
fsync, and validate the files on load; 1.5.9 does not.

What survives in `chroma.sqlite3`: the metadata segment (`embeddings` + `embedding_metadata`: every id,
document and metadata) and the write-ahead log `embeddings_queue` (the vectors of records not purged yet).
`rebuild` reads both read-only, replays the log past the metadata segment's watermark, takes each record's
vector from the log when it is still there and re-embeds its text otherwise (the store's own embedder:
the same vectors), writes a new Chroma folder beside the old one, checks it, and swaps the two. The
damaged folder is kept as `l2.damaged-<UTC time>`.

Only a local folder is ever rebuilt: a store whose L2 is on a Chroma server (store.json `chroma.url`) has
no `chroma.sqlite3` of its own, and a collection its server cannot load is an error naming the server.

The swap survives a crash too: the new folder is `l2.rebuild` and is marked complete (`.rebuilt`) before
`l2` is renamed aside; `finish_interrupted` completes a swap cut between the two renames, or removes a
rebuild that was never completed.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memwiki.common.sqlitedb import connect_readonly
from memwiki.common.textio import file_lock
from memwiki.errors import DamagedStoreError, DiskFullError, MemwikiError, disk_full_message
from memwiki.layers.semantic.hnsw_files import segment_damage
from memwiki.store.damage import damaged_message, disk_full, read_only, read_only_message
from memwiki.store.generation import WRITE_LOCK, bump_generation

log = logging.getLogger(__name__)

CHROMA_FILE = "chroma.sqlite3"
REBUILD_SUFFIX = ".rebuild"
DAMAGED_INFIX = ".damaged-"
COMPLETE_MARK = ".rebuilt"
RECOVERY_LOCK_TIMEOUT = 900.0  # seconds another process may wait while one rebuilds (3,000 memories: ~15 s)
_DAMAGE_WORDS = ("hnsw", "backfill", "compactor", "segment", "pickle", "error finding id", "error getting embedding")
_UUID_DIR = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_OPS = {0: "add", 1: "update", 2: "upsert", 3: "delete"}  # embeddings_queue.operation
_HNSW_KEYS = ("space", "ef_construction", "ef_search", "max_neighbors", "batch_size", "sync_threshold")

TextOf = Callable[[str, str | None, dict[str, Any]], str]  # (id, document, metadata) -> the text to embed
Embed = Callable[[list[str]], np.ndarray]


def looks_damaged(exc: BaseException) -> bool:
    """Whether a Chroma failure says its vector segment cannot be loaded or written (what `rebuild` mends)."""
    text = str(exc).lower()
    return any(word in text for word in _DAMAGE_WORDS)


@dataclass
class SalvagedCollection:
    """One collection as `chroma.sqlite3` still holds it."""

    name: str
    dimension: int | None
    metadata: dict[str, Any]
    hnsw: dict[str, Any]
    records: dict[str, tuple[str | None, dict[str, Any]]] = field(default_factory=dict)  # id -> (document, metadata)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # from the write-ahead log


@dataclass(frozen=True)
class RebuildReport:
    """What a rebuild did, for the log line and for tests."""

    records: int
    from_log: int
    re_embedded: int
    damaged_copy: Path


# ── reading what survives ───────────────────────────────────────────────────────────────────────────


def _value(row: sqlite3.Row) -> Any:
    for column, cast in (("string_value", str), ("int_value", int), ("float_value", float)):
        if row[column] is not None:
            return cast(row[column])
    return None if row["bool_value"] is None else bool(row["bool_value"])


def _hnsw_settings(schema_str: str | None, config_str: str | None) -> dict[str, Any]:
    """The collection's HNSW settings, from its schema (Chroma 1.x) or its older configuration JSON."""
    for raw in (schema_str, config_str):
        try:
            doc = json.loads(raw or "{}")
        except ValueError:
            continue
        config = (((doc.get("keys") or {}).get("#embedding") or {}).get("float_list") or {}).get("vector_index")
        if config:
            inner = config.get("config") or {}
            hnsw = dict(inner.get("hnsw") or {})
            hnsw["space"] = inner.get("space", hnsw.get("space"))
            return {k: v for k, v in hnsw.items() if k in _HNSW_KEYS and v is not None}
        if isinstance(doc.get("hnsw"), dict):
            return {k: v for k, v in doc["hnsw"].items() if k in _HNSW_KEYS and v is not None}
    return {}


def _segment(conn: sqlite3.Connection, collection_id: str, scope: str) -> str | None:
    row = conn.execute("SELECT id FROM segments WHERE collection = ? AND scope = ?", (collection_id, scope)).fetchone()
    return row["id"] if row else None


def _watermark(conn: sqlite3.Connection, segment_id: str | None) -> int:
    row = conn.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (segment_id,)).fetchone()
    return int(row["seq_id"]) if row and row["seq_id"] is not None else 0


def _records(conn: sqlite3.Connection, segment_id: str | None) -> dict[str, tuple[str | None, dict[str, Any]]]:
    out: dict[str, tuple[str | None, dict[str, Any]]] = {}
    rows = conn.execute(
        "SELECT e.embedding_id, m.key, m.string_value, m.int_value, m.float_value, m.bool_value "
        "FROM embeddings e LEFT JOIN embedding_metadata m ON m.id = e.id WHERE e.segment_id = ? ORDER BY e.id",
        (segment_id,),
    )
    for row in rows:
        doc, meta = out.setdefault(row["embedding_id"], (None, {}))
        if row["key"] is None:
            continue
        if row["key"] == "chroma:document":
            out[row["embedding_id"]] = (row["string_value"], meta)
        elif not row["key"].startswith("chroma:"):
            meta[row["key"]] = _value(row)
    return out


def _replay(conn: sqlite3.Connection, found: SalvagedCollection, collection_id: str, after: int) -> None:
    """Apply the write-ahead log past the metadata segment's watermark; keep the last vector of each id."""
    rows = conn.execute(
        "SELECT seq_id, operation, id, vector, encoding, metadata FROM embeddings_queue "
        "WHERE topic LIKE ? ORDER BY seq_id",
        (f"%/{collection_id}",),
    )
    for row in rows:
        op, rid = _OPS.get(row["operation"]), row["id"]
        if op == "delete":
            if row["seq_id"] > after:
                found.records.pop(rid, None)
            found.vectors.pop(rid, None)
            continue
        if row["vector"] is not None and (row["encoding"] or "FLOAT32").upper() == "FLOAT32":
            found.vectors[rid] = np.frombuffer(row["vector"], dtype=np.float32).copy()
        if row["seq_id"] <= after:
            continue
        meta = json.loads(row["metadata"] or "{}")
        doc = meta.pop("chroma:document", None)
        meta = {k: v for k, v in meta.items() if not k.startswith("chroma:")}
        exists = rid in found.records
        if (op == "add" and exists) or (op == "update" and not exists):
            continue
        old_doc, old_meta = found.records.get(rid, (None, {}))
        merged = {**old_meta, **meta} if exists else meta
        found.records[rid] = (doc if doc is not None else old_doc, {k: v for k, v in merged.items() if v is not None})


def salvage(path: Path) -> list[SalvagedCollection]:
    """Every collection in `path/chroma.sqlite3` with its records and the vectors its log still holds."""
    db = Path(path) / CHROMA_FILE
    try:
        conn = connect_readonly(db)
    except MemwikiError as exc:
        raise DamagedStoreError(damaged_message("L2 semantic memory", db, str(exc).removeprefix(f"{db}: "))) from None
    try:
        found: list[SalvagedCollection] = []
        for col in conn.execute("SELECT id, name, dimension, config_json_str, schema_str FROM collections").fetchall():
            meta_rows = conn.execute(
                "SELECT key, str_value AS string_value, int_value, float_value, bool_value "
                "FROM collection_metadata WHERE collection_id = ?",
                (col["id"],),
            ).fetchall()
            item = SalvagedCollection(
                name=col["name"],
                dimension=col["dimension"],
                metadata={r["key"]: _value(r) for r in meta_rows},
                hnsw=_hnsw_settings(col["schema_str"], col["config_json_str"]),
            )
            metadata_segment = _segment(conn, col["id"], "METADATA")
            item.records = _records(conn, metadata_segment)
            _replay(conn, item, col["id"], _watermark(conn, metadata_segment))
            found.append(item)
        return found
    except sqlite3.Error as exc:
        raise DamagedStoreError(damaged_message("L2 semantic memory", db, str(exc))) from None
    finally:
        conn.close()


# ── rebuilding and swapping ─────────────────────────────────────────────────────────────────────────


def _rebuild_dir(path: Path) -> Path:
    return path.with_name(path.name + REBUILD_SUFFIX)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def finish_interrupted(path: Path) -> None:
    """Complete a swap a crash cut between its two renames; remove a rebuild that was never completed."""
    path = Path(path)
    tmp = _rebuild_dir(path)
    if not tmp.exists():
        return
    if (tmp / COMPLETE_MARK).is_file() and not path.exists():
        os.replace(tmp, path)
        (path / COMPLETE_MARK).unlink()
        _fsync_dir(path.parent)
        log.warning("finished an interrupted rebuild of L2 at %s", path)
        return
    shutil.rmtree(tmp)


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _write_collection(client: Any, item: SalvagedCollection, text_of: TextOf, embed: Embed) -> tuple[int, int]:
    """Write one salvaged collection into `client`; returns (vectors from the log, vectors re-embedded)."""
    config = {"hnsw": item.hnsw} if item.hnsw else None
    col = client.create_collection(
        item.name, embedding_function=None, configuration=config, metadata=item.metadata or None
    )
    ids = list(item.records)
    todo = [i for i in ids if i not in item.vectors or (item.dimension and len(item.vectors[i]) != item.dimension)]
    fresh: dict[str, np.ndarray] = {}
    for chunk in _batches(todo, 256):
        vectors = embed([text_of(i, *item.records[i]) for i in chunk])
        fresh.update(zip(chunk, vectors, strict=True))
    step = max(1, min(5000, client.get_max_batch_size()))
    for chunk in _batches(ids, step):
        col.upsert(
            ids=chunk,
            embeddings=np.asarray([fresh[i] if i in fresh else item.vectors[i] for i in chunk], dtype=np.float32),
            documents=[item.records[i][0] or "" for i in chunk],
            metadatas=[item.records[i][1] or None for i in chunk],
        )
    if col.count() != len(ids):
        raise MemwikiError(f"L2 rebuild of {item.name!r}: wrote {len(ids)} records, Chroma holds {col.count()}")
    return len(ids) - len(todo), len(todo)


def _copy_other_files(src: Path, dst: Path) -> None:
    """Copy what is not Chroma's own (the lexical index, other side files) into the rebuilt folder."""
    for entry in src.iterdir():
        if entry.name.startswith(CHROMA_FILE) or (entry.is_dir() and _UUID_DIR.match(entry.name)):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dst / entry.name)
        else:
            shutil.copy2(entry, dst / entry.name)


def rebuild(path: Path, text_of: TextOf, embed: Embed) -> RebuildReport:
    """Rebuild the Chroma folder `path` from what its `chroma.sqlite3` holds (see the module docstring).

    The caller holds `recovery_lock(path)` and has closed its own Chroma client for `path`.
    """
    import chromadb

    path = Path(path)
    finish_interrupted(path)
    collections = salvage(path)
    tmp = _rebuild_dir(path)
    tmp.mkdir()
    client = chromadb.PersistentClient(path=str(tmp))
    from_log = re_embedded = 0
    try:
        for item in collections:
            a, b = _write_collection(client, item, text_of, embed)
            from_log, re_embedded = from_log + a, re_embedded + b
    finally:
        client.close()
    _copy_other_files(path, tmp)
    with open(tmp / COMPLETE_MARK, "w") as fh:
        fh.flush()
        os.fsync(fh.fileno())
    _fsync_dir(tmp)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    damaged = path.with_name(f"{path.name}{DAMAGED_INFIX}{stamp}")
    os.replace(path, damaged)
    os.replace(tmp, path)
    (path / COMPLETE_MARK).unlink()
    _fsync_dir(path.parent)
    bump_generation(path)  # every other process's copy of the index is now stale
    return RebuildReport(from_log + re_embedded, from_log, re_embedded, damaged)


def recovery_lock(path: Path) -> Any:
    """The lock that keeps two processes from rebuilding the same folder at once."""
    path = Path(path)
    return file_lock(path.with_name(path.name + ".recovery.lock"), timeout=RECOVERY_LOCK_TIMEOUT)


def probe(client: Any, dim: int) -> None:
    """`probe_collections` over every collection of a local Chroma folder's client."""
    probe_collections(client.list_collections(), dim)


def probe_collections(collections: Iterable[Any], dim: int) -> None:
    """Make Chroma load these collections' segments now (count replays the log; a 1-NN query loads the vector
    index), so that a damaged one shows on open rather than in the middle of a command. On a Chroma server only
    the store's own collections are probed (others may share the server), and a failure is the server's
    error (memwiki.layers.semantic.chroma_server): its files are its own, nothing is rebuilt from here."""
    for col in collections:
        # the dimension the collection was made with (another embedder's mismatch is SemanticMemory's error)
        made = int((col.metadata or {}).get("dim", 0) or 0) or dim
        if col.count() and made:
            col.query(query_embeddings=np.full((1, made), 1.0, dtype=np.float32), n_results=1, include=[])


def open_local(path: Path, connect: Callable[[], tuple[Any, Any]], text_of: TextOf, embed: Embed, dim: int) -> Any:
    """`connect()` to the local Chroma folder `path` (returns (client, collection)) and `probe` it; a damaged
    vector segment is rebuilt once (logged), anything else unreadable is a DamagedStoreError naming the folder."""
    path = Path(path)
    if _rebuild_dir(path).exists():
        with recovery_lock(path):
            finish_interrupted(path)
    _refuse_lost_database(path)
    with file_lock(path / WRITE_LOCK, timeout=RECOVERY_LOCK_TIMEOUT):  # (no writer is saving the files meanwhile)
        problem = segment_damage(path)  # a damage Chroma would crash on, or load without a word
    error = _try_open(connect, dim) if problem is None else MemwikiError(problem)
    if isinstance(error, tuple):
        return error
    if problem is None and disk_full(error, path / CHROMA_FILE):
        raise DiskFullError(disk_full_message(path)) from None
    if problem is None and read_only(error, path):
        why = "Chroma writes to its database when it opens it: copy the store to a writable folder to read it"
        raise MemwikiError(read_only_message("L2 semantic memory", path, why)) from None
    if problem is None and not looks_damaged(error):
        raise DamagedStoreError(damaged_message("L2 semantic memory", path, _one_line(error))) from None
    with recovery_lock(path):
        with file_lock(path / WRITE_LOCK, timeout=RECOVERY_LOCK_TIMEOUT):
            problem = segment_damage(path)  # another process may have rebuilt it meanwhile
        again = _try_open(connect, dim) if problem is None else MemwikiError(problem)
        if isinstance(again, tuple):
            return again
        log.warning("L2 vector index at %s does not load (%s); rebuilding it", path, _one_line(again))
        with file_lock(path / WRITE_LOCK, timeout=RECOVERY_LOCK_TIMEOUT):  # no write goes to the folder swapped out
            report = rebuild(path, text_of, embed)
        log.warning(
            "L2 rebuilt at %s: %d memories (%d vectors from Chroma's log, %d re-embedded); "
            "the damaged folder is kept at %s",
            path,
            report.records,
            report.from_log,
            report.re_embedded,
            report.damaged_copy,
        )
    final = _try_open(connect, dim)
    if isinstance(final, tuple):
        return final
    raise DamagedStoreError(damaged_message("L2 semantic memory", path, f"still unreadable after a rebuild: {final}"))


def _refuse_lost_database(path: Path) -> None:
    """Chroma opens an empty or missing `chroma.sqlite3` as a new, empty store: beside existing vector segments
    that would hide the loss of every record, so it is refused."""
    db = path / CHROMA_FILE
    if db.is_file() and db.stat().st_size > 0:
        return
    segments = [p for p in path.iterdir() if p.is_dir() and _UUID_DIR.match(p.name)] if path.is_dir() else []
    if segments:
        what = "empty" if db.is_file() else "missing"
        raise DamagedStoreError(
            damaged_message("L2 semantic memory", db, f"{what}, beside {len(segments)} vector segment folder(s)")
        )


def _try_open(connect: Callable[[], tuple[Any, Any]], dim: int) -> tuple[Any, Any] | Exception:
    """(client, collection) when both open and the probe passes; the error otherwise (client closed)."""
    client = None
    try:
        client, col = connect()
        probe(client, dim)
        return client, col
    except MemwikiError:
        _close(client)
        raise
    except BaseException as exc:  # Chroma's own errors, sqlite3's, and Rust panics (pyo3: a BaseException)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        _close(client)
        return exc if isinstance(exc, Exception) else RuntimeError(str(exc))


def _close(client: Any) -> None:
    if client is not None and hasattr(client, "close"):
        try:
            client.close()
        except Exception as exc:  # a client that failed to open may fail to close; nothing is left to release
            log.debug("closing a failed Chroma client: %s", exc)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
