"""L3: the knowledge graph, a SQLite file with MemPalace's exact `entities` / `triples` schema.

Facts are temporal: `valid_from` / `valid_to` hold dates, `valid_to IS NULL` means current. Validity is
compared by calendar date over the half-open interval [valid_from, valid_to): a fact ended on D is no
longer true on D, so a fact and the one that superseded it on D never both hold on D. Stored values may
be `YYYY-MM-DD` (MemPalace's `kg_add`, and everything we write) or full ISO timestamps (MemPalace's
`kg_supersede` writes `YYYY-MM-DDT00:00:00Z`); records always carry the date.

"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memwiki.common.sqlitedb import DEFAULT_BUSY_TIMEOUT, connect, connect_readonly, sqlite_error, write_transaction
from memwiki.common.times import parse_date, stored_date, stored_time, utc_now
from memwiki.errors import MemwikiError, SourceError
from memwiki.source import Entity, Triple

# ── the knowledge graph ──────────────────────────────────────────────────────────────────────────────

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    type TEXT DEFAULT 'unknown',
    properties TEXT DEFAULT '{}',
    created_at TEXT DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS triples (
    id TEXT PRIMARY KEY,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object TEXT NOT NULL,
    valid_from TEXT,
    valid_to TEXT,
    confidence REAL DEFAULT 1.0,
    source_closet TEXT,
    source_file TEXT,
    source_drawer_id TEXT,
    adapter_name TEXT,
    extracted_at TEXT DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (subject) REFERENCES entities(id),
    FOREIGN KEY (object) REFERENCES entities(id)
);
CREATE INDEX IF NOT EXISTS idx_triples_subject ON triples(subject);
CREATE INDEX IF NOT EXISTS idx_triples_object ON triples(object);
CREATE INDEX IF NOT EXISTS idx_triples_predicate ON triples(predicate);
CREATE INDEX IF NOT EXISTS idx_triples_valid ON triples(valid_from, valid_to);
"""
_TRIPLE_COLUMNS = (
    "id subject predicate object valid_from valid_to confidence source_closet source_file source_drawer_id "
    "adapter_name extracted_at"
).split()
_REQUIRED_COLUMNS = {"id", "subject", "predicate", "object"}
_SOURCE_ORDER = ("source_drawer_id", "source_file", "source_closet", "adapter_name")
_DIRECTIONS = {
    "outgoing": "t.subject = :eid",
    "incoming": "t.object = :eid",
    "both": "(t.subject = :eid OR t.object = :eid)",
}
# Validity compared by calendar date; '' counts as unknown (NULL).
_VF = "substr(NULLIF(t.valid_from, ''), 1, 10)"
_VT = "substr(NULLIF(t.valid_to, ''), 1, 10)"
_ORDER = f"ORDER BY {_VF} IS NULL, {_VF}, {_VT} IS NULL, {_VT}, extracted_at, t.id"


def entity_id(name: str) -> str:
    """MemPalace's entity id: lower-cased, spaces as `_`, apostrophes dropped."""
    return name.lower().replace(" ", "_").replace("'", "")


_TRIPLE_ID = re.compile(r"t_(.*)_[0-9a-f]{12}", re.DOTALL)


def made_triple_id(triple_id: str, subject: str, predicate: str, obj: str) -> bool:
    """Whether a fact's id is the one this graph makes from its parts: `t_{subject}_{predicate}_{object}_{digest}`
    (the digest of its dates: it holds nothing the parts do not)."""
    m = _TRIPLE_ID.fullmatch(triple_id)
    return m is not None and m.group(1) == f"{subject}_{predicate}_{obj}"


def _clean_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise MemwikiError(f"{what}: expected a non-empty name, got {name!r}")
    return name.strip()


def _predicate(predicate: str) -> str:
    return _clean_name(predicate, "predicate").lower().replace(" ", "_")


def select_facts(
    triples: Iterable[Triple], name: str, as_of: str | None = None, include_ended: bool = False
) -> list[Triple]:
    """`KnowledgeGraph.query_entity` over records already read (from any MemorySource): the facts about
    `name` (an entity's name or id), valid on `as_of`, or current, or all with `include_ended`."""
    eid = entity_id(_clean_name(name, "entity"))
    day = parse_date(as_of, "as_of") if as_of is not None else None

    def holds(t: Triple) -> bool:
        if day is not None:
            return (not t.valid_from or t.valid_from[:10] <= day) and (not t.valid_to or t.valid_to[:10] > day)
        return include_ended or not t.valid_to

    return [t for t in triples if eid in (t.subject, t.object) and holds(t)]


def select_timeline(triples: Iterable[Triple], name: str | None = None) -> list[Triple]:
    """`KnowledgeGraph.timeline` over records already read: every fact (about `name`), in order of valid_from."""
    facts = list(triples) if name is None else select_facts(triples, name, include_ended=True)
    return sorted(facts, key=lambda t: t.valid_from)


class KnowledgeGraph:
    """L3 over one SQLite file in MemPalace's schema. `KnowledgeGraph(path)` is read-write (creates the schema);
    `KnowledgeGraph.open_readonly(path)` never writes anything."""

    def __init__(self, path: Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        self.path = Path(path)
        self.readonly = False
        self._conn = connect(self.path, busy_timeout=busy_timeout)
        try:
            if not self._schema_complete():  # only then take the write lock: readers never wait on a writer
                with write_transaction(self._conn, self.path) as conn:
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    have = {r["name"] for r in conn.execute("PRAGMA table_info(triples)")}
                    for column in ("source_drawer_id", "adapter_name"):  # palaces older than these columns
                        if column not in have:
                            conn.execute(f"ALTER TABLE triples ADD COLUMN {column} TEXT")
            self._inspect()
        except BaseException:
            self._conn.close()
            raise

    def _schema_complete(self) -> bool:
        try:
            have = {r[1] for r in self._conn.execute("PRAGMA table_info(triples)")}
            indexes = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            entities = self._conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'entities'").fetchone()[0]
        except sqlite3.Error as exc:
            raise sqlite_error(exc, self.path) from None
        wanted = {"idx_triples_subject", "idx_triples_object", "idx_triples_predicate", "idx_triples_valid"}
        return bool(entities) and set(_TRIPLE_COLUMNS) <= have and wanted <= indexes

    @classmethod
    def open_readonly(cls, path: Path) -> KnowledgeGraph:
        """Open an existing graph (ours or a MemPalace palace's) for reading only; see `connect_readonly`."""
        self = cls.__new__(cls)
        self.path = Path(path)
        self.readonly = True
        self._conn = connect_readonly(self.path)
        try:
            self._inspect()
        except BaseException:
            self._conn.close()
            raise
        return self

    def _inspect(self) -> None:
        """Build the SELECT for triples from the columns this file has (older palaces lack some)."""
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        self._empty = not tables
        self._has_entities = "entities" in tables
        if self._empty:
            return
        if "triples" not in tables:
            raise SourceError(f"{self.path}: not a knowledge graph (no `triples` table; tables: {sorted(tables)})")
        have = {r[1] for r in self._conn.execute("PRAGMA table_info(triples)")}
        if missing := _REQUIRED_COLUMNS - have:
            raise SourceError(f"{self.path}: unknown knowledge-graph layout, `triples` lacks {sorted(missing)}")
        cols = [f"t.{c}" if c in have else f"NULL AS {c}" for c in _TRIPLE_COLUMNS]
        if self._has_entities:
            names = "COALESCE(s.name, t.subject) AS subject_name, COALESCE(o.name, t.object) AS object_name"
            joins = "LEFT JOIN entities s ON s.id = t.subject LEFT JOIN entities o ON o.id = t.object"
        else:
            names, joins = "t.subject AS subject_name, t.object AS object_name", ""
        self._select = f"SELECT {', '.join(cols)}, {names} FROM triples t {joins}"

    # ── lifecycle ──

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> KnowledgeGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── writing ──

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        if self.readonly:
            raise MemwikiError(f"{self.path}: opened read-only; cannot write")
        return write_transaction(self._conn, self.path)

    def add_entity(self, name: str, type: str = "unknown", properties: dict[str, Any] | None = None) -> str:
        """Add an entity or update its name, type and properties; returns its id."""
        name = _clean_name(name, "entity")
        eid = entity_id(name)
        props = json.dumps(properties or {}, ensure_ascii=False)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO entities (id, name, type, properties) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET name = excluded.name, type = excluded.type, "
                "properties = excluded.properties",
                (eid, name, type or "unknown", props),
            )
        return eid

    def _ensure_entity(self, conn: sqlite3.Connection, name: str) -> str:
        eid = entity_id(name)
        conn.execute("INSERT OR IGNORE INTO entities (id, name) VALUES (?, ?)", (eid, name))
        return eid

    def _insert_triple(
        self, conn: sqlite3.Connection, sid: str, pred: str, oid: str, valid_from: str | None, **extra: Any
    ) -> str:
        stamp = datetime.now(UTC).isoformat()
        digest = hashlib.sha256(f"{valid_from}|{stamp}".encode()).hexdigest()[:12]
        tid = f"t_{sid}_{pred}_{oid}_{digest}"  # (read back by `made_triple_id`)
        conn.execute(
            "INSERT INTO triples (id, subject, predicate, object, valid_from, valid_to, confidence, source_closet, "
            "source_file, source_drawer_id, adapter_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tid,
                sid,
                pred,
                oid,
                valid_from,
                extra.get("valid_to"),
                extra.get("confidence", 1.0),
                extra.get("source_closet"),
                extra.get("source_file"),
                extra.get("source_drawer_id"),
                extra.get("adapter_name"),
            ),
        )
        return tid

    def add_triple(
        self,
        subject: str,
        predicate: str,
        object: str,
        valid_from: str | None = None,
        valid_to: str | None = None,
        confidence: float = 1.0,
        source_closet: str | None = None,
        source_file: str | None = None,
        source_drawer_id: str | None = None,
        adapter_name: str | None = None,
    ) -> str:
        """Add a fact (creating missing entities); returns its id. An identical current fact is not duplicated."""
        subject, object = _clean_name(subject, "subject"), _clean_name(object, "object")
        pred = _predicate(predicate)
        vf = parse_date(valid_from, "valid_from") if valid_from is not None else None
        vt = parse_date(valid_to, "valid_to") if valid_to is not None else None
        if vf and vt and vt < vf:
            raise MemwikiError(f"valid_to {vt} is before valid_from {vf}")
        if not 0.0 <= float(confidence) <= 1.0:
            raise MemwikiError(f"confidence must be between 0 and 1, got {confidence!r}")
        with self._write() as conn:
            sid, oid = self._ensure_entity(conn, subject), self._ensure_entity(conn, object)
            if vt is None:
                row = conn.execute(
                    "SELECT id FROM triples WHERE subject = ? AND predicate = ? AND object = ? AND valid_to IS NULL",
                    (sid, pred, oid),
                ).fetchone()
            else:
                row = conn.execute(
                    "SELECT id FROM triples WHERE subject = ? AND predicate = ? AND object = ? "
                    "AND valid_from IS ? AND valid_to = ?",
                    (sid, pred, oid, vf, vt),
                ).fetchone()
            if row:
                return row["id"]
            return self._insert_triple(
                conn,
                sid,
                pred,
                oid,
                vf,
                valid_to=vt,
                confidence=float(confidence),
                source_closet=source_closet,
                source_file=source_file,
                source_drawer_id=source_drawer_id,
                adapter_name=adapter_name,
            )

    def _end(self, conn: sqlite3.Connection, where: str, params: tuple[Any, ...], ended: str) -> int:
        """Set valid_to = `ended` on the current triples matching `where`; refuse an inverted interval."""
        rows = conn.execute(f"SELECT id, valid_from FROM triples WHERE valid_to IS NULL AND {where}", params).fetchall()
        for row in rows:
            start = stored_date(row["valid_from"])
            if start and ended < start:
                raise MemwikiError(f"end date {ended} is before the start {start} of fact {row['id']}")
        conn.executemany("UPDATE triples SET valid_to = ? WHERE id = ?", [(ended, r["id"]) for r in rows])
        return len(rows)

    def invalidate(self, subject: str, predicate: str, object: str, ended: str | None = None) -> int:
        """End the current fact (subject, predicate, object) on `ended` (default today); returns how many ended."""
        sid, oid = entity_id(_clean_name(subject, "subject")), entity_id(_clean_name(object, "object"))
        pred = _predicate(predicate)
        end = parse_date(ended, "ended") if ended is not None else utc_now()[:10]
        with self._write() as conn:
            count = self._end(conn, "subject = ? AND predicate = ? AND object = ?", (sid, pred, oid), end)
        if not count:
            raise MemwikiError(f"no current fact ({subject}, {predicate}, {object}) to invalidate in {self.path}")
        return count

    def supersede(
        self,
        subject: str,
        predicate: str,
        new_object: str,
        date: str | None = None,
        old_object: str | None = None,
    ) -> str:
        """End the current (subject, predicate, *) fact(s) on `date` (default today) and add (subject, predicate,
        new_object) from that date, in one transaction. With `old_object`, only that fact ends, and it must be
        current. Returns the new fact's id (the existing one if new_object is already current)."""
        subject, new_object = _clean_name(subject, "subject"), _clean_name(new_object, "new_object")
        pred = _predicate(predicate)
        day = parse_date(date, "date") if date is not None else utc_now()[:10]
        with self._write() as conn:
            sid, nid = self._ensure_entity(conn, subject), self._ensure_entity(conn, new_object)
            where, params = "subject = ? AND predicate = ? AND object != ?", (sid, pred, nid)
            if old_object is not None:
                where += " AND object = ?"
                params += (entity_id(_clean_name(old_object, "old_object")),)
            if not self._end(conn, where, params, day) and old_object is not None:
                raise MemwikiError(f"no current fact ({subject}, {predicate}, {old_object}) to supersede")
            row = conn.execute(
                "SELECT id FROM triples WHERE subject = ? AND predicate = ? AND object = ? AND valid_to IS NULL",
                (sid, pred, nid),
            ).fetchone()
            return row["id"] if row else self._insert_triple(conn, sid, pred, nid, day)

    # ── reading ──

    def _triples(self, where: str = "", params: dict[str, Any] | None = None) -> list[Triple]:
        if self._empty:
            return []
        sql = f"{self._select} {'WHERE ' + where if where else ''} {_ORDER}"
        try:
            rows = self._conn.execute(sql, params or {}).fetchall()
        except sqlite3.Error as exc:
            raise sqlite_error(exc, self.path) from None
        return [_triple(r) for r in rows]

    def query_entity(
        self, name: str, as_of: str | None = None, direction: str = "both", include_ended: bool = False
    ) -> list[Triple]:
        """Facts about an entity (by name or id), chronological. With `as_of`, the facts valid on that date;
        otherwise the current ones, or all with include_ended. direction: outgoing | incoming | both."""
        if direction not in _DIRECTIONS:
            raise MemwikiError(f"direction must be one of {sorted(_DIRECTIONS)}, got {direction!r}")
        params: dict[str, Any] = {"eid": entity_id(_clean_name(name, "entity"))}
        where = _DIRECTIONS[direction]
        if as_of is not None:
            params["day"] = parse_date(as_of, "as_of")
            where += f" AND ({_VF} IS NULL OR {_VF} <= :day) AND ({_VT} IS NULL OR {_VT} > :day)"
        elif not include_ended:
            where += f" AND {_VT} IS NULL"
        return self._triples(where, params)

    def timeline(self, entity: str | None = None) -> list[Triple]:
        """Every fact (current and ended) in chronological order of valid_from, optionally about one entity."""
        if entity is None:
            return self._triples()
        return self._triples(_DIRECTIONS["both"], {"eid": entity_id(_clean_name(entity, "entity"))})

    def triples(self) -> list[Triple]:
        """Every fact, chronological."""
        return self._triples()

    def entity(self, name: str) -> Entity | None:
        """The entity with this name or id, or None."""
        found = self._entities("WHERE id = ?", (entity_id(_clean_name(name, "entity")),))
        return found[0] if found else None

    def entities(self) -> list[Entity]:
        """Every entity, by id."""
        return self._entities()

    def _entities(self, where: str = "", params: tuple[Any, ...] = ()) -> list[Entity]:
        if not self._has_entities:
            return []
        have = {r[1] for r in self._conn.execute("PRAGMA table_info(entities)")}
        cols = [c if c in have else f"NULL AS {c}" for c in ("id", "name", "type", "properties", "created_at")]
        rows = self._conn.execute(f"SELECT {', '.join(cols)} FROM entities {where} ORDER BY id", params).fetchall()
        return [
            Entity(
                id=r["id"],
                name=r["name"] or r["id"],
                type=r["type"] or "unknown",
                properties=_properties(r["properties"]),
                created=stored_time(r["created_at"]),
            )
            for r in rows
        ]

    def stats(self) -> dict[str, Any]:
        """Counts: entities, triples, current and ended facts, and the predicates in use."""
        out: dict[str, Any] = {"entities": 0, "triples": 0, "current": 0, "ended": 0, "predicates": []}
        if self._empty:
            return out
        if self._has_entities:
            out["entities"] = self._conn.execute("SELECT count(*) FROM entities").fetchone()[0]
        row = self._conn.execute("SELECT count(*), count(*) - count(NULLIF(valid_to, '')) FROM triples t").fetchone()
        out["triples"], out["current"] = row[0], row[1]
        out["ended"] = out["triples"] - out["current"]
        preds = self._conn.execute("SELECT DISTINCT predicate FROM triples ORDER BY predicate")
        out["predicates"] = [r[0] for r in preds]
        return out


def _properties(raw: Any) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {"raw": raw}
    return value if isinstance(value, dict) else {"value": value}


def _triple(r: sqlite3.Row) -> Triple:
    source = next((str(r[c]) for c in _SOURCE_ORDER if r[c]), "")
    return Triple(
        id=r["id"],
        subject=r["subject"],
        predicate=r["predicate"],
        object=r["object"],
        valid_from=stored_date(r["valid_from"]),
        valid_to=stored_date(r["valid_to"]),
        confidence=1.0 if r["confidence"] is None else float(r["confidence"]),
        source=source,
        extracted_at=stored_time(r["extracted_at"]),
        subject_name=r["subject_name"] or r["subject"],
        object_name=r["object_name"] or r["object"],
    )
