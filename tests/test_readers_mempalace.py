"""MemPalace over a copy of a palace made by MemPalace itself (tests/fixture_homes.py), checked against Chroma."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fixture_copies import checksums, copy_fixtures, leave_rows_in_wal, make_readonly, make_writable
from fixture_homes import pristine

from memwiki.errors import EmbedderMismatchError, SourceError
from memwiki.readers.mempalace import MemPalace
from memwiki.source import MemorySource
from memwiki.text.embedders import USEEmbedder

EMBEDDER = USEEmbedder()  # the model is loaded once per process


@pytest.fixture
def fx(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path)


def _palace(fx: Path, tmp_path: Path, **kw: object) -> MemPalace:
    kw.setdefault("config_dir", fx / "mempalace_config")
    kw.setdefault("embedder", EMBEDDER)
    kw.setdefault("cache_dir", tmp_path / "cache")
    return MemPalace(fx / "mempalace_palace", **kw)


def _chroma_view(tmp_path: Path, name: str) -> dict[str, tuple[str, dict]]:
    """What chromadb itself returns for a collection (on a second, throw-away copy of the palace)."""
    import chromadb

    other = tmp_path / "chroma_copy"
    shutil.copytree(pristine() / "mempalace_palace", other)
    make_writable(other)
    client = chromadb.PersistentClient(path=str(other))
    got = client.get_collection(name, embedding_function=None).get(include=["documents", "metadatas"])
    return {i: (d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}


def test_drawers_match_what_chroma_returns(fx: Path, tmp_path: Path) -> None:
    palace = _palace(fx, tmp_path)
    assert isinstance(palace, MemorySource)
    drawers = list(palace.memories())
    chroma = _chroma_view(tmp_path, "mempalace_drawers")
    assert len(drawers) == palace.memory_count() == len(chroma) == 16
    for memory in drawers:
        document, meta = chroma[memory.id]
        assert memory.text == document
        assert (memory.wing, memory.room) == (meta["wing"], meta["room"])
        for key in ("hall", "source_file", "added_by", "filed_at", "chunk_index", "ingest_mode"):
            assert memory.meta.get(key) == meta.get(key), key
        if "entities" in meta:
            assert memory.meta["entities"] == meta["entities"].split(";")
        assert memory.created.startswith(meta["filed_at"][:10]) and memory.source == "mempalace"
    assert len({m.wing for m in drawers}) == 4 and len({m.room for m in drawers}) == 7
    kinds = {m.meta["kind"] for m in drawers}
    assert kinds == {"project_file", "conversation", "mcp_drawer", "diary"}
    convo = next(m for m in drawers if m.meta["kind"] == "conversation")
    assert convo.session_id and convo.meta["ingest_mode"] == "convos"


def test_closets_and_diary(fx: Path, tmp_path: Path) -> None:
    palace = _palace(fx, tmp_path)
    closets = palace.closets()
    assert len(closets) == len(_chroma_view(tmp_path, "mempalace_closets")) == 4
    drawer_ids = {m.id for m in palace.memories()}
    for closet in closets:
        assert closet.meta["kind"] == "closet" and closet.meta["drawer_ids"]
        assert set(closet.meta["drawer_ids"]) <= drawer_ids
    (diary,) = [m for m in palace.memories() if m.meta.get("kind") == "diary"]
    assert diary.id.startswith("diary_wing_claude_") and diary.meta["agent"] == "claude"
    assert (diary.wing, diary.room, diary.meta["topic"]) == ("wing_claude", "diary", "tidepool")
    assert "象山港" in diary.text


def test_knowledge_graph_current_and_ended(fx: Path, tmp_path: Path) -> None:
    palace = _palace(fx, tmp_path)
    assert len(palace.entities()) == 14
    triples = palace.triples()
    assert len(triples) == 10
    ended = [t for t in triples if not t.current]
    assert len(ended) == 2
    superseded = next(t for t in ended if t.predicate == "uses")
    assert (superseded.object_name, superseded.valid_to) == ("TimescaleDB 2.13", "2025-07-01")
    assert any(t.object_name == "TimescaleDB 2.15" and t.current and t.valid_from == "2025-07-01" for t in triples)
    assert any(t.subject_name == "陈海" for t in triples)


@pytest.mark.parametrize("where", ["parent", "config"])
def test_graph_found_elsewhere_with_rows_only_in_wal(fx: Path, tmp_path: Path, where: str) -> None:
    src = fx / "mempalace_palace" / "knowledge_graph.sqlite3"
    folder = fx if where == "parent" else fx / "mempalace_config"
    kg = folder / "knowledge_graph.sqlite3"
    conn = sqlite3.connect(src)
    schema = [r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table'")]
    rows = {t: conn.execute(f"SELECT * FROM {t}").fetchall() for t in ("entities", "triples")}
    conn.close()
    src.unlink()
    statements = list(schema)
    for table, values in rows.items():
        for row in values:
            literal = ", ".join(
                "NULL" if v is None else repr(v) if not isinstance(v, str) else "'" + v.replace("'", "''") + "'"
                for v in row
            )
            statements.append(f"INSERT INTO {table} VALUES ({literal})")
    leave_rows_in_wal(kg, *statements)
    before = checksums(fx)
    palace = _palace(fx, tmp_path)
    assert palace.kg_path == kg
    assert len(palace.triples()) == 10 and len(palace.entities()) == 14
    assert any("snapshot copy" in n for n in palace.info().notes)
    assert checksums(fx) == before


def test_search_through_memwiki_cache(fx: Path, tmp_path: Path) -> None:
    palace = _palace(fx, tmp_path)
    info = palace.info()
    # The palace's own MiniLM vectors are never compared with ours: every vector it hands out is memwiki's.
    assert (info.kind, info.embedder, info.dim) == ("mempalace", "use-multilingual-v3", 512)
    assert any("own embedder (minilm, 384-d)" in n and "use-multilingual-v3/512" in n for n in info.notes)
    ids = [m.id for m in palace.memories()]
    vectors = palace.memory_vectors(ids)
    assert vectors is not None and vectors.shape == (len(ids), 512)
    assert np.allclose(vectors[0], palace.embed([next(palace.memories()).text])[0], atol=1e-5)
    # a mined chat's id hashes the path it was mined from (the build's); an MCP drawer's, its wing, room and text
    typhoon = next(m.id for m in palace.memories() if m.text.startswith("> 台风“蝴蝶”登陆前"))
    assert typhoon.startswith("drawer_tidepool_chats_technical_")
    for question, expected in (
        ("台风期间浮标数据延迟是网络问题还是 ingest 的问题？", typhoon),
        ("Who owns data quality and the QARTOD flag rules?", "drawer_people_team_50e49798f26390ae5ebd2927"),
    ):
        hits = palace.search_memories(palace.embed([question])[0], 3)
        assert hits[0].memory.id == expected and -1.0 <= hits[0].score <= 1.0
    cache = palace.cache_dir
    assert cache.is_relative_to(tmp_path / "cache") and (cache / "use-multilingual-v3_512" / "vectors.npy").is_file()
    with pytest.raises(EmbedderMismatchError, match="384-d"):
        palace.search_memories(np.zeros(384, dtype=np.float32), 3)
    with pytest.raises(SourceError, match="inside the palace"):
        _palace(fx, tmp_path, cache_dir=fx / "mempalace_palace" / "cache")


def test_reading_everything_leaves_every_byte(fx: Path, tmp_path: Path) -> None:
    before = checksums(fx)
    make_readonly(fx)
    try:
        palace = _palace(fx, tmp_path)
        palace.info(), palace.closets(), palace.entities(), palace.triples(), palace.fingerprint()
        assert len(list(palace.memories())) == 16
        assert palace.search_memories(palace.embed(["为什么选择 TimescaleDB 而不是 InfluxDB"])[0], 1)
        palace.close()
    finally:
        make_writable(fx)
    assert checksums(fx) == before
    assert checksums(pristine()) == before  # the originals match the copy, untouched


def test_writes_still_in_chromas_queue_are_read(fx: Path, tmp_path: Path) -> None:
    db = fx / "mempalace_palace" / "chroma.sqlite3"
    conn = sqlite3.connect(db)
    topic = conn.execute("SELECT topic FROM embeddings_queue WHERE id LIKE 'drawer_%' LIMIT 1").fetchone()[0]
    meta = {"wing": "people", "room": "team", "added_by": "mcp", "chroma:document": "新同事 Ana 负责 dashboard"}
    conn.execute(
        "INSERT INTO embeddings_queue (seq_id, operation, topic, id, vector, encoding, metadata) "
        "VALUES (999, 0, ?, ?, NULL, NULL, ?)",
        (topic, "drawer_people_team_new", json.dumps(meta, ensure_ascii=False)),
    )
    conn.commit()
    conn.close()
    palace = _palace(fx, tmp_path)
    new = next(m for m in palace.memories() if m.id == "drawer_people_team_new")
    assert new.text == "新同事 Ana 负责 dashboard" and new.meta["kind"] == "mcp_drawer"
    assert any("still waiting in Chroma's queue" in n for n in palace.info().notes)


def test_missing_empty_and_unknown_palaces(fx: Path, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no MemPalace palace"):
        MemPalace(tmp_path / "nowhere", config_dir=tmp_path, cache_dir=tmp_path / "cache")
    empty = tmp_path / "empty"
    empty.mkdir()
    palace = MemPalace(empty, config_dir=tmp_path / "noconfig", cache_dir=tmp_path / "cache")
    assert list(palace.memories()) == [] and palace.triples() == [] and palace.embed(["x"]) is None
    notes = " ".join(palace.info().notes)
    assert "no chroma.sqlite3" in notes and "no knowledge_graph.sqlite3" in notes
    sqlite3.connect(empty / "chroma.sqlite3").execute("CREATE TABLE other (x)").connection.close()
    palace = MemPalace(empty, config_dir=tmp_path / "noconfig", cache_dir=tmp_path / "cache")
    assert list(palace.memories()) == []
    assert any("not a Chroma database this reader knows" in n for n in palace.info().notes)
