"""memwiki.layers.graph: L3 in MemPalace's schema, temporal queries, and read-only access that writes nothing."""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from fixture_homes import pristine

from memwiki.common.sqlitedb import connect_readonly
from memwiki.common.times import parse_date, parse_time
from memwiki.errors import MemwikiError, SourceError, StoreLockedError
from memwiki.layers.graph import KnowledgeGraph, entity_id


def fixture_kg() -> Path:
    """The knowledge graph of tests/fixture_homes.py's palace (built once per session; copy before writing)."""
    return pristine() / "mempalace_palace" / "knowledge_graph.sqlite3"


def _checksums(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture()
def palace_kg(tmp_path: Path) -> Path:
    """A writable copy of the real MemPalace knowledge graph (the original stays untouched)."""
    folder = tmp_path / "palace"
    folder.mkdir()
    dest = folder / "knowledge_graph.sqlite3"
    shutil.copyfile(fixture_kg(), dest)
    return dest


@pytest.fixture()
def kg(tmp_path: Path):
    with KnowledgeGraph(tmp_path / "kg.sqlite3") as graph:
        yield graph


# ── the real MemPalace file ──


def test_reads_the_mempalace_fixture_readonly(palace_kg: Path) -> None:
    before = _checksums(palace_kg.parent)
    with KnowledgeGraph.open_readonly(palace_kg) as graph:
        stats = graph.stats()
        entities = {e.id: e for e in graph.entities()}
        triples = graph.triples()
        tidepool_mid_2025 = graph.query_entity("tidepool", as_of="2025-06-30", direction="outgoing")
        tidepool_jul_2025 = graph.query_entity("tidepool", as_of="2025-07-01", direction="outgoing")
        nb009_now = graph.query_entity("NB-009")
        nb009_all = graph.query_entity("NB-009", include_ended=True)
        chen = graph.query_entity("陈海")
        timeline = graph.timeline()
    assert _checksums(palace_kg.parent) == before  # nothing written, no -wal / -shm left behind
    raw = sqlite3.connect(f"file:{palace_kg}?mode=ro&immutable=1", uri=True)
    (created,) = raw.execute("SELECT created_at FROM entities WHERE id = 'timescaledb_2.13'").fetchone()
    (extracted,) = raw.execute("SELECT extracted_at FROM triples WHERE predicate = 'has_column'").fetchone()
    raw.close()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", created)  # as MemPalace stamps them (UTC)

    assert stats["entities"] == 14 and stats["triples"] == 10
    assert (stats["current"], stats["ended"]) == (8, 2)
    assert entities["priya_raman"].name == "Priya Raman"
    assert entities["宁波海洋实验室_(ningbo_marine_lab)"].name == "宁波海洋实验室 (Ningbo marine lab)"
    assert entities["timescaledb_2.13"].created == created.replace(" ", "T") + "Z"
    assert all(e.type == "unknown" and e.properties == {} for e in entities.values())

    ended = {(t.subject, t.predicate, t.object): (t.valid_from, t.valid_to) for t in triples if not t.current}
    assert ended == {
        ("tidepool", "uses", "timescaledb_2.13"): ("2024-11-02", "2025-07-01"),  # superseded (kg_supersede)
        ("nb-009", "status", "active"): ("2023-05-01", "2025-04-30"),  # invalidated (kg_invalidate)
    }
    successor = next(t for t in triples if t.object == "timescaledb_2.15")
    assert successor.valid_from == "2025-07-01"  # stored as 2025-07-01T00:00:00Z by kg_supersede
    assert (successor.subject_name, successor.object_name) == ("tidepool", "TimescaleDB 2.15")
    frames = next(t for t in triples if t.predicate == "has_column")
    assert frames.source == "drawer_tidepool_decisions_f7b21dd594b87a90fd99ef6d"
    assert frames.extracted_at == extracted.replace(" ", "T") + "Z"

    assert [t.object_name for t in tidepool_mid_2025 if t.predicate == "uses"] == ["TimescaleDB 2.13"]
    assert [t.object_name for t in tidepool_jul_2025 if t.predicate == "uses"] == ["TimescaleDB 2.15"]
    assert [t.object for t in nb009_now] == ["retired"]
    assert [t.object for t in nb009_all] == ["active", "retired"]
    assert {(t.predicate, t.object_name) for t in chen} == {
        ("works_at", "宁波海洋实验室 (Ningbo marine lab)"),
        ("maintains", "tidepool"),
    }
    starts = [t.valid_from for t in timeline]
    assert starts == sorted(starts) and starts[0] == "2022-03-01"


def test_readonly_refuses_writes(palace_kg: Path) -> None:
    with KnowledgeGraph.open_readonly(palace_kg) as graph, pytest.raises(MemwikiError, match="read-only"):
        graph.add_triple("a", "b", "c")


def test_our_schema_is_mempalaces(palace_kg: Path, kg: KnowledgeGraph, tmp_path: Path) -> None:
    def layout(path: Path) -> dict[str, list[tuple]]:
        conn = connect_readonly(path)
        try:
            tables = {
                t: [tuple(c)[1:] for c in conn.execute(f"PRAGMA table_info({t})")] for t in ("entities", "triples")
            }
            tables["indexes"] = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'"))
            return tables
        finally:
            conn.close()

    kg.close()
    assert layout(tmp_path / "kg.sqlite3") == layout(palace_kg)


def test_writes_into_a_mempalace_graph(palace_kg: Path) -> None:
    with KnowledgeGraph(palace_kg) as graph:
        new_id = graph.supersede("tidepool", "uses", "TimescaleDB 2.17", date="2026-01-10")
        assert new_id.startswith("t_tidepool_uses_timescaledb_2.17_")
        assert [t.object for t in graph.query_entity("tidepool", as_of="2025-12-31") if t.predicate == "uses"] == [
            "timescaledb_2.15"
        ]
        assert [t.object for t in graph.query_entity("tidepool") if t.predicate == "uses"] == ["timescaledb_2.17"]
        assert graph.stats()["ended"] == 3


def test_missing_and_non_sqlite_files(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such SQLite file"):
        KnowledgeGraph.open_readonly(tmp_path / "missing.sqlite3")
    bogus = tmp_path / "bogus.sqlite3"
    bogus.write_text("not a database")
    with pytest.raises(SourceError, match="not a SQLite database"):
        KnowledgeGraph.open_readonly(bogus)
    other = tmp_path / "other.sqlite3"
    sqlite3.connect(other).execute("CREATE TABLE notes (x)").connection.close()
    with pytest.raises(SourceError, match="no `triples` table"):
        KnowledgeGraph.open_readonly(other)


def test_an_older_palace_without_provenance_columns_is_read(tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(old)
    conn.executescript(
        "CREATE TABLE entities (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT, properties TEXT, created_at TEXT);"
        "CREATE TABLE triples (id TEXT PRIMARY KEY, subject TEXT, predicate TEXT, object TEXT, valid_from TEXT,"
        " valid_to TEXT, confidence REAL, source_closet TEXT, source_file TEXT, extracted_at TEXT);"
        "INSERT INTO triples VALUES ('t1', 'max', 'loves', 'chess', '2025-10-01', NULL, 0.5, 'closet_1', NULL, NULL);"
    )
    conn.commit()
    conn.close()
    with KnowledgeGraph.open_readonly(old) as graph:
        (fact,) = graph.triples()
    assert (fact.subject_name, fact.object_name, fact.source, fact.confidence) == ("max", "chess", "closet_1", 0.5)


# ── read-only really means no write, even with rows only in the -wal ──


def _wal_only_graph(folder: Path) -> tuple[KnowledgeGraph, Path]:
    """A graph whose rows sit only in its -wal file, with the writer still open (a running server)."""
    folder.mkdir()
    db = folder / "knowledge_graph.sqlite3"
    writer = KnowledgeGraph(db)
    writer._conn.execute("PRAGMA wal_autocheckpoint = 0")
    writer.add_triple("Max", "loves", "chess", valid_from="2025-10-01")
    writer.supersede("Max", "does", "swimming", date="2025-01-01")
    assert Path(f"{db}-wal").stat().st_size > 0
    return writer, db


def test_readonly_reads_rows_from_wal_and_changes_no_file(tmp_path: Path) -> None:
    writer, db = _wal_only_graph(tmp_path / "live")
    try:
        main_only = tmp_path / "main-only.sqlite3"
        shutil.copyfile(db, main_only)  # the main file alone does not hold the rows: they are in the -wal
        with sqlite3.connect(main_only) as conn:
            assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'triples'").fetchone()[0] == 0

        before = _checksums(db.parent)
        assert set(before) == {db.name, f"{db.name}-wal", f"{db.name}-shm"}
        with KnowledgeGraph.open_readonly(db) as graph:
            assert {(t.subject_name, t.predicate, t.object_name) for t in graph.triples()} == {
                ("Max", "loves", "chess"),
                ("Max", "does", "swimming"),
            }
        assert _checksums(db.parent) == before

        # A crashed server: the three files left behind, no process holding them.
        crashed = tmp_path / "crashed"
        crashed.mkdir()
        for name in before:
            shutil.copyfile(db.parent / name, crashed / name)
    finally:
        writer.close()
    before = _checksums(crashed)
    with KnowledgeGraph.open_readonly(crashed / db.name) as graph:
        assert len(graph.triples()) == 2 and graph.stats()["entities"] == 3
    assert _checksums(crashed) == before


def test_readonly_snapshot_folder_is_removed_on_close(tmp_path: Path) -> None:
    writer, db = _wal_only_graph(tmp_path / "live")
    try:
        graph = KnowledgeGraph.open_readonly(db)
        snapshot = Path(graph._conn.snapshot_dir)
        assert snapshot.is_dir() and snapshot != db.parent
        graph.close()
        assert not snapshot.exists()
    finally:
        writer.close()


# ── writing, temporal logic ──


def test_entities_ids_and_names(kg: KnowledgeGraph) -> None:
    assert kg.add_entity("Priya Raman", type="person", properties={"team": "数据"}) == "priya_raman"
    assert entity_id("O'Brien Lab") == "obrien_lab"
    kg.add_triple("Priya Raman", "Works On", "Tidepool")
    (priya, tidepool) = kg.entities()
    assert (priya.id, priya.name, priya.type, priya.properties) == (
        "priya_raman",
        "Priya Raman",
        "person",
        {"team": "数据"},
    )
    assert (tidepool.id, tidepool.name, tidepool.type) == ("tidepool", "Tidepool", "unknown")
    (fact,) = kg.triples()
    assert (fact.subject, fact.predicate, fact.object) == ("priya_raman", "works_on", "tidepool")
    assert fact.extracted_at.endswith("Z")


def test_identical_current_fact_is_not_duplicated(kg: KnowledgeGraph) -> None:
    first = kg.add_triple("Max", "loves", "chess", valid_from="2025-10-01")
    assert kg.add_triple("max", "loves", "Chess") == first
    assert kg.stats()["triples"] == 1
    kg.invalidate("Max", "loves", "chess", ended="2026-01-01")
    assert kg.add_triple("Max", "loves", "chess", valid_from="2026-03-01") != first
    assert kg.stats()["triples"] == 2


def test_supersede_and_as_of_queries(kg: KnowledgeGraph) -> None:
    kg.add_triple("Alice", "works_at", "Acme", valid_from="2020-01-01", source_file="notes/alice.md")
    kg.add_triple("Alice", "lives_in", "Ningbo", valid_from="2019-05-01")
    new_id = kg.supersede("Alice", "works_at", "Globex", date="2023-06-01T09:30:00+08:00")

    def employer(as_of: str | None = None) -> list[str]:
        return [t.object_name for t in kg.query_entity("alice", as_of=as_of) if t.predicate == "works_at"]

    assert employer("2019-12-31") == []
    assert employer("2020-01-01") == ["Acme"]
    assert employer("2023-05-31") == ["Acme"]
    assert employer("2023-06-01") == ["Globex"]  # half-open: the old fact ended on the day the new one began
    assert employer("2023-06-01T23:00:00Z") == ["Globex"]
    assert employer() == ["Globex"]
    history = kg.query_entity("Alice", include_ended=True)
    assert [(t.object_name, t.valid_from, t.valid_to) for t in history] == [
        ("Ningbo", "2019-05-01", ""),
        ("Acme", "2020-01-01", "2023-06-01"),
        ("Globex", "2023-06-01", ""),
    ]
    assert history[1].source == "notes/alice.md"
    assert next(t for t in history if t.object_name == "Globex").id == new_id
    assert [t.object_name for t in kg.query_entity("Alice", as_of="2021-01-01")] == ["Ningbo", "Acme"]


def test_directions_and_timeline(kg: KnowledgeGraph) -> None:
    kg.add_triple("陈海", "maintains", "tidepool", valid_from="2024-09-01")
    kg.add_triple("tidepool", "uses", "Redis", valid_from="2025-01-15")
    kg.add_triple("tidepool", "uses", "Kafka")  # no start date: last in the timeline
    assert [t.predicate for t in kg.query_entity("tidepool", direction="incoming")] == ["maintains"]
    assert [t.object for t in kg.query_entity("tidepool", direction="outgoing")] == ["redis", "kafka"]
    assert len(kg.query_entity("tidepool")) == 3
    assert [t.object for t in kg.timeline()] == ["tidepool", "redis", "kafka"]
    assert [t.object for t in kg.timeline("陈海")] == ["tidepool"]
    assert kg.query_entity("nobody") == []
    with pytest.raises(MemwikiError, match="direction"):
        kg.query_entity("tidepool", direction="sideways")


def test_supersede_with_old_object_and_idempotence(kg: KnowledgeGraph) -> None:
    kg.add_triple("nb-009", "status", "active", valid_from="2023-05-01")
    kg.add_triple("nb-009", "status", "monitored", valid_from="2023-05-01")
    retired = kg.supersede("nb-009", "status", "retired", date="2025-04-30", old_object="active")
    assert sorted(t.object for t in kg.query_entity("nb-009")) == ["monitored", "retired"]
    assert kg.supersede("nb-009", "status", "retired", date="2025-05-01") == retired  # ends "monitored" only
    assert [t.object for t in kg.query_entity("nb-009")] == ["retired"]
    with pytest.raises(MemwikiError, match="no current fact"):
        kg.supersede("nb-009", "status", "scrapped", old_object="active")


def test_a_failed_supersede_changes_nothing(kg: KnowledgeGraph) -> None:
    kg.add_triple("Alice", "works_at", "Acme", valid_from="2020-01-01")
    before = (kg.entities(), kg.triples())
    with pytest.raises(MemwikiError, match="before the start"):
        kg.supersede("Alice", "works_at", "Initech", date="2019-01-01")
    assert (kg.entities(), kg.triples()) == before  # "Initech" was not created either


def test_invalidate(kg: KnowledgeGraph) -> None:
    kg.add_triple("Max", "has_issue", "sports injury", valid_from="2026-01-01")
    assert kg.invalidate("Max", "has_issue", "Sports Injury", ended="2026-02-15") == 1
    (fact,) = kg.triples()
    assert (fact.valid_to, fact.current) == ("2026-02-15", False)
    assert kg.query_entity("Max") == []
    with pytest.raises(MemwikiError, match=r"no current fact \(Max, has_issue, sports injury\)"):
        kg.invalidate("Max", "has_issue", "sports injury")
    kg.add_triple("Max", "loves", "chess", valid_from="2025-10-01")
    with pytest.raises(MemwikiError, match="before the start"):
        kg.invalidate("Max", "loves", "chess", ended="2025-01-01")


@pytest.mark.parametrize("bad", ["2025-13-01", "yesterday", "2025/01/02", "", "2025-02-30"])
def test_bad_dates_are_clear_errors(kg: KnowledgeGraph, bad: str) -> None:
    with pytest.raises(MemwikiError, match="valid_from"):
        kg.add_triple("a", "b", "c", valid_from=bad)
    with pytest.raises(MemwikiError, match="as_of"):
        kg.query_entity("a", as_of=bad)
    assert kg.triples() == []


def test_other_bad_input(kg: KnowledgeGraph) -> None:
    with pytest.raises(MemwikiError, match="before valid_from"):
        kg.add_triple("a", "b", "c", valid_from="2025-01-02", valid_to="2025-01-01")
    with pytest.raises(MemwikiError, match="confidence"):
        kg.add_triple("a", "b", "c", confidence=1.5)
    with pytest.raises(MemwikiError, match="non-empty name"):
        kg.add_triple("  ", "b", "c")
    assert kg.stats() == {"entities": 0, "triples": 0, "current": 0, "ended": 0, "predicates": []}


def test_date_parsing() -> None:
    assert parse_date("2025-07-01T00:00:00Z") == "2025-07-01"
    assert parse_date("2025-07-01T23:30:00-05:00") == "2025-07-01"  # the calendar date as written
    assert parse_time("2025-07-01T08:00:00+08:00") == "2025-07-01T00:00:00Z"
    assert parse_time("2025-07-01") == "2025-07-01T00:00:00Z"


def test_hostile_text_is_stored_verbatim(kg: KnowledgeGraph) -> None:
    evil = '<script>alert("x")</script>'
    kg.add_triple(evil, "links_to", "[x](javascript:alert(1))")
    (fact,) = kg.triples()
    assert (fact.subject_name, fact.object_name) == (evil, "[x](javascript:alert(1))")


def test_locked_graph_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "kg.sqlite3"
    with KnowledgeGraph(path, busy_timeout=0.2) as graph:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO entities (id, name) VALUES ('x', 'x')")
        with pytest.raises(StoreLockedError, match="locked"):
            graph.add_triple("Alice", "knows", "Bob")
        with KnowledgeGraph(path, busy_timeout=0.2) as reader:  # opening and reading do not wait for the writer
            assert reader.stats()["triples"] == 0
        other.execute("ROLLBACK")
        other.close()
        assert graph.stats()["triples"] == 0
        graph.add_triple("Alice", "knows", "Bob")
        assert graph.stats()["triples"] == 1


def test_select_facts_agrees_with_query_entity_on_the_fixture(tmp_path: Path) -> None:
    """The in-memory filter used over external sources gives what the SQL query gives."""
    from memwiki.layers.graph import select_facts

    db = tmp_path / "kg.sqlite3"
    shutil.copy(fixture_kg(), db)
    with KnowledgeGraph.open_readonly(db) as kg:
        triples = kg.triples()
        names = {e.name for e in kg.entities()}
        for name in names:
            for as_of, history in ((None, False), (None, True), ("2025-01-01", False), ("2025-06-01", False)):
                expected = kg.query_entity(name, as_of=as_of, include_ended=history)
                got = select_facts(triples, name, as_of, history)
                assert sorted(t.id for t in got) == sorted(t.id for t in expected), (name, as_of, history)


def test_a_graph_without_types_gets_them_from_its_predicates() -> None:
    from memwiki.layers.graph_types import with_types
    from memwiki.source import Entity, Triple

    triples = [
        Triple(id="1", subject="陈海", predicate="works_at", object="ningbo_lab"),
        Triple(id="2", subject="nb-017", predicate="located_in", object="xiangshan_bay"),
        Triple(id="3", subject="tidepool", predicate="uses", object="redis"),
        Triple(id="4", subject="陈海", predicate="maintains", object="tidepool"),
    ]
    entities = [Entity(e, e) for e in ("陈海", "ningbo_lab", "xiangshan_bay", "redis", "tidepool", "nb-017")]
    entities.append(Entity("juniper", "Juniper", type="agent"))
    typed = {
        e.id: e.type
        for e in with_types(entities, [*triples, Triple(id="5", subject="juniper", predicate="works_at", object="x")])
    }
    assert typed == {
        "陈海": "person",
        "ningbo_lab": "organisation",
        "xiangshan_bay": "place",
        "redis": "tool",
        "tidepool": "project",
        "nb-017": "unknown",  # no rule reaches it
        "juniper": "agent",  # a type the graph records wins
    }


def test_values_a_palace_stores_as_entities_are_literals() -> None:
    from memwiki.layers.graph_types import literal_ids
    from memwiki.source import Entity, Triple

    triples = [
        Triple(id="1", subject="nb-009", predicate="status", object="active"),
        Triple(id="2", subject="tidepool", predicate="uses", object="timescaledb_2.13"),
        Triple(id="3", subject="tidepool", predicate="schema_version", object="1.3"),
        Triple(id="4", subject="nb-017", predicate="status", object="nb-009"),  # a subject elsewhere: an entity
        Triple(id="5", subject="ops", predicate="deployed", object="2026-03-01"),
    ]
    entities = [Entity("timescaledb_2.13", "TimescaleDB 2.13"), Entity("1.3", "1.3"), Entity("active", "active")]
    assert literal_ids(entities, triples) == {"active", "1.3", "2026-03-01"}
    assert literal_ids([Entity("1.3", "1.3", type="version")], triples) == {"active", "2026-03-01"}  # typed: kept
