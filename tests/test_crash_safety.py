"""Crash safety: kills on one store lose and duplicate nothing; a damaged L2 vector index is rebuilt with
nothing lost; an unopenable part gets the CLI's one-line error. Real Chroma, real SQLite, the real embedder."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import chromadb
import numpy as np
import pytest

from memwiki.layers.semantic.memory import COLLECTION, SemanticMemory
from memwiki.layers.semantic.recovery import COMPLETE_MARK, REBUILD_SUFFIX
from memwiki.source import Memory
from memwiki.store.store import Store
from memwiki.text.embedders import USEEmbedder

ROOT = Path(__file__).resolve().parent.parent
# Past Chroma's sync_threshold (1,000): the HNSW segment is persisted to files, as in a real import.
N_MEMORIES = 1100


def _segment_dir(l2: Path) -> Path:
    (seg,) = [p for p in l2.iterdir() if p.is_dir() and len(p.name) == 36]
    return seg


def _half_pickle(seg: Path) -> None:
    """What a kill inside Chroma 1.5.9's persist() leaves: the id map truncated by File::create, half rewritten."""
    pickle = seg / "index_metadata.pickle"
    os.truncate(pickle, pickle.stat().st_size // 2)


def _empty_header(seg: Path) -> None:
    """A kill while hnswlib rewrites its header in place."""
    os.truncate(seg / "header.bin", 0)


@pytest.fixture(scope="module")
def memories() -> tuple[list[Memory], np.ndarray]:
    items = [
        Memory(f"m{i}", f"memory {i}: the build server b{i % 11} deploys project p{i % 7} at {i % 24}h", "project")
        for i in range(N_MEMORIES)
    ]
    return items, USEEmbedder().embed([m.text for m in items])


@pytest.mark.parametrize("damage", [_half_pickle, _empty_header], ids=["torn-id-map", "torn-header"])
def test_damaged_hnsw_segment_is_rebuilt_with_nothing_lost(tmp_path, memories, damage, caplog) -> None:
    items, vectors = memories
    l2 = tmp_path / "l2"
    semantic = SemanticMemory(l2, USEEmbedder())
    semantic.upsert(items, vectors)
    semantic.close()
    damage(_segment_dir(l2))

    client = chromadb.PersistentClient(path=str(l2))  # the damage is real: Chroma itself fails on it
    with pytest.raises(Exception, match="hnsw"):
        client.get_collection(COLLECTION).query(query_embeddings=vectors[:1], n_results=1)
    client.close()

    with caplog.at_level(logging.WARNING, logger="memwiki.layers.semantic.recovery"):
        semantic = SemanticMemory(l2, USEEmbedder())
    try:
        assert "rebuilding it" in caplog.text and "rebuilt" in caplog.text
        assert semantic.count() == N_MEMORIES
        got = {m.id: m for m in semantic.get([m.id for m in items])}
        assert [got[m.id].text for m in items] == [m.text for m in items]
        assert all(got[m.id].category == "project" for m in items)
        np.testing.assert_allclose(semantic.vectors([m.id for m in items]), vectors, atol=1e-5)
        for i in (0, 517, N_MEMORIES - 1):
            assert semantic.search_ids(vectors[i], 1)[0][0] == items[i].id
        assert semantic.lexical_search("build server b3", 5)
    finally:
        semantic.close()
    assert [p.name.split("-")[0] for p in tmp_path.iterdir() if ".damaged-" in p.name] == ["l2.damaged"]
    semantic = SemanticMemory(l2, USEEmbedder())  # and the rebuilt folder opens as a healthy one
    assert semantic.count() == N_MEMORIES
    semantic.close()


def test_swap_cut_between_its_renames_is_finished_on_open(tmp_path) -> None:
    store = Store.init(tmp_path / "s")
    store.semantic.upsert([Memory("a", "the NAS backs up nightly", "environment")])
    store.close()
    l2 = tmp_path / "s" / "l2"
    rebuilt = l2.with_name(l2.name + REBUILD_SUFFIX)
    os.replace(l2, rebuilt)  # the state after `l2` was renamed aside and before the rebuilt one took its place
    (rebuilt / COMPLETE_MARK).touch()
    with Store.open(tmp_path / "s") as store:
        assert [m.text for m in store.semantic.get(["a"])] == ["the NAS backs up nightly"]
    assert not rebuilt.exists() and not (l2 / COMPLETE_MARK).exists()


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from memwiki.agents.cli import main; main()", "--store", str(store), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)


def _assert_one_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("memwiki: error: ")
    for word in (*words, "is damaged", "restore it from a backup or move it aside"):
        assert word in lines[0], lines[0]


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


def _half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


@pytest.fixture
def store_with_data(tmp_path) -> Path:
    root = tmp_path / "store"
    with Store.init(root) as store:
        store.semantic.upsert([Memory(f"x{i}", f"fact {i} about the lab", "other") for i in range(20)])
        for i in range(300):
            store.graph.add_triple(f"person {i}", "works_on", f"project {i % 17}")
        rows = [
            {
                "session_id": f"s{i // 10}",
                "role": "user",
                "content": f"message {i} " + "words " * 40,
                "time": "2024-01-01T00:00:00Z",
            }
            for i in range(400)
        ]
        (root / "msgs.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        store.sessions.import_jsonl(root / "msgs.jsonl")
    return root


@pytest.mark.parametrize(
    ("part", "file", "damage", "command"),
    [
        ("L3 knowledge graph", "knowledge_graph.sqlite3", _garbage, ["kg", "query", "person 1"]),
        ("L3 knowledge graph", "knowledge_graph.sqlite3", _half, ["stats"]),
        ("L4 session history", "sessions.sqlite3", _garbage, ["session", "search", "message"]),
        ("L4 session history", "sessions.sqlite3", _half, ["stats"]),
        ("L2 semantic memory", "l2/chroma.sqlite3", _garbage, ["stats"]),
        ("L2 semantic memory", "l2/chroma.sqlite3", _half, ["recall", "the lab"]),
        ("L2 semantic memory", "l2/chroma.sqlite3", lambda p: os.truncate(p, 0), ["stats"]),
    ],
    ids=[
        "graph-garbage",
        "graph-half",
        "sessions-garbage",
        "sessions-half",
        "chroma-garbage",
        "chroma-half",
        "chroma-0",
    ],
)
def test_unopenable_part_gets_one_line_error(store_with_data, part, file, damage, command) -> None:
    path = store_with_data / file
    for sidecar in (f"{path}-wal", f"{path}-shm", f"{path}-journal"):
        Path(sidecar).unlink(missing_ok=True)
    damage(path)
    _assert_one_line(_cli(store_with_data, *command), part, str(store_with_data))


def test_short_kill_bench_loses_and_duplicates_nothing(tmp_path) -> None:
    """4 kills per kind on one store (scripts/bench_kill.py, the long form takes --kills 50)."""
    store = tmp_path / "store"
    cmd = [sys.executable, str(ROOT / "scripts" / "bench_kill.py"), "--kills", "4", "--rows", "1100", "--seed", "7"]
    result = subprocess.run([*cmd, "--store", str(store), "--json"], capture_output=True, text=True, timeout=600)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    for kind, tally in report["kinds"].items():
        assert tally["kills"] == 4, (kind, tally)
        assert tally["survived"] == 4 and tally["lost"] == 0 and tally["duplicated"] == 0, (kind, tally)
        assert not tally["problems"], (kind, tally)
    assert result.returncode == 0, result.stderr[-3000:]
    with Store.open(store) as opened:  # and the store opens afterwards, every layer
        stats = opened.stats()
    assert stats["L2"]["memories"] >= 1100 and stats["L3"]["triples"] > 0
    shutil.rmtree(store)
