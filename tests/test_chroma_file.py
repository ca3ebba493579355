"""The store read from Chroma's file (memwiki.readers.chroma_file) against Chroma's own client, real Chroma."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from memwiki.source import Memory
from memwiki.store.store import Store


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, 512)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("n", [30, 1300])  # 1300: past Chroma's flush of 1000 writes, the queue is purged
def test_file_reader_gives_what_the_client_gives(tmp_path: Path, n: int) -> None:
    with Store.init(tmp_path / "s") as store:
        memories = [
            Memory(
                id=f"m-{i}",
                text=f"记忆 {i}: <b>html</b> [[Chroma]] text",
                category=("network", "pitfall", "technical")[i % 3],
                wing="infra" if i % 2 else "",
                room=f"r{i % 4}",
                session_id="s-1" if i % 5 == 0 else "",
                created="2026-11-30T06:00:00Z",
                meta={"context": "前一句"} if i % 7 == 0 else {},
            )
            for i in range(n)
        ]
        store.semantic.upsert(memories, vectors=_vectors(n, 1))
        store.semantic.upsert([Memory(**{**memories[1].__dict__, "text": "changed text"})], vectors=_vectors(1, 2))
        store.semantic.delete(["m-2"])
        reader = store.reader()
        chroma_file = store.root / "l2" / "chroma.sqlite3"
        before = _digest(chroma_file)
        from_file = sorted(reader.memories(), key=lambda m: m.id)
        assert _digest(chroma_file) == before  # read-only: not a byte changed
        from_client = sorted(store.semantic.all(), key=lambda m: m.id)
        assert from_file == from_client
        assert len(from_file) == n - 1 and next(m for m in from_file if m.id == "m-1").text == "changed text"
        ids = [m.id for m in from_file][:50]
        assert np.allclose(reader.memory_vectors(ids), store.semantic.vectors(ids), atol=1e-6)


def test_a_reader_done_with_many_vectors_lets_chroma_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A site build reads every L2 vector once and keeps them: past `LET_GO_AFTER` read through Chroma in one call,
    the reader closes L2 (Chroma holds its whole vector index in memory while open); the next read opens it again,
    and recall keeps what it holds."""
    from memwiki.store import reader as store_reader

    monkeypatch.setattr(store_reader, "LET_GO_AFTER", 1000)
    n = 1300  # past Chroma's flush of 1000 writes: the vectors are read through Chroma, not from its queue
    vectors = _vectors(n, 3)
    with Store.init(tmp_path / "s") as store:
        store.semantic.upsert([Memory(id=f"m-{i}", text=f"note {i}") for i in range(n)], vectors=vectors)
        reader = store.reader()
        ids = [f"m-{i}" for i in range(n)]
        assert np.allclose(reader.memory_vectors(ids[:999]), vectors[:999], atol=1e-6)
        assert "semantic" in store.__dict__  # fewer: L2 stays open
        assert np.allclose(reader.memory_vectors(ids), vectors, atol=1e-6)
        assert "semantic" not in store.__dict__
        assert np.allclose(reader.memory_vectors(ids[:5]), vectors[:5], atol=1e-6)  # opened again
        assert [h.id for h in store.recall("note 7", k=1)] == ["m-7"]  # recall opens L2 and holds it
        reader.memory_vectors(ids)
        assert "semantic" in store.__dict__ and [h.id for h in store.recall("note 7", k=1)] == ["m-7"]
