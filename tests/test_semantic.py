"""L2 semantic memory on real Chroma with the real USE embedder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memwiki.errors import DuplicateEntryError, EmbedderMismatchError, InputFormatError
from memwiki.layers.semantic.memory import SemanticMemory
from memwiki.layers.semantic.passages import PASSAGE_KEY
from memwiki.source import Memory
from memwiki.text.embedders import OllamaEmbedder, USEEmbedder


@pytest.fixture(scope="session")
def use() -> USEEmbedder:
    embedder = USEEmbedder()
    embedder.embed(["warm-up"])
    return embedder


@pytest.fixture()
def l2(tmp_path: Path, use: USEEmbedder) -> SemanticMemory:
    return SemanticMemory(tmp_path / "l2", use)


MEMORIES = [
    Memory(
        id="nas",
        text="家里的 NAS 是群晖 DS920+，共享目录挂载在 /mnt/nas。",
        category="network",
        created="2026-01-02T03:04:05Z",
        wing="home",
        room="lab",
        meta={"tags": ["nas"], "n": 3},
    ),
    Memory(
        id="tabs",
        text="The user prefers tabs over spaces in Go code.",
        category="preference",
        source="L1",
        sunk_at="2026-02-01T00:00:00Z",
        session_id="s1",
        message_id="m9",
    ),
    Memory(id="coffee", text="用户只喝美式咖啡，不加糖不加奶。", category="preference"),
]


def test_upsert_get_search_delete_round_trip(l2: SemanticMemory, use: USEEmbedder) -> None:
    l2.upsert(MEMORIES)
    assert l2.count() == 3 == l2.lexical.count()
    assert l2.get(["tabs", "missing", "nas"]) == [MEMORIES[1], MEMORIES[0]]  # every field, meta included
    top = l2.search(use.embed(["What indentation does the user like in Go?"])[0], 2)
    assert top[0].memory == MEMORIES[1] and -1.0 <= top[0].score <= 1.0 and top[0].score > top[1].score
    assert l2.search_ids(use.embed(["咖啡"])[0], 1)[0][0] == "coffee"
    assert l2.lexical_search("美式咖啡", 3)[0][0] == "coffee"
    l2.upsert([Memory(id="coffee", text="用户改喝拿铁了。")])
    assert l2.count() == 3 and l2.get(["coffee"])[0].text == "用户改喝拿铁了。"
    assert l2.lexical_search("美式", 3) == []
    l2.delete(["coffee", "nas"])
    assert [m.id for m in l2.all(batch=1)] == ["tabs"]
    assert l2.lexical.count() == 1 and l2.lexical_search("拿铁", 3) == []


def test_add_refuses_existing_ids_and_vectors_keep_order(l2: SemanticMemory, use: USEEmbedder) -> None:
    l2.add(MEMORIES[:2])
    with pytest.raises(DuplicateEntryError, match="tabs"):
        l2.add([MEMORIES[2], MEMORIES[1]])
    assert l2.count() == 2
    v = l2.vectors(["tabs", "nas"])
    assert v.shape == (2, 512)
    assert np.allclose(v[0], use.embed([MEMORIES[1].text])[0], atol=1e-5)
    with pytest.raises(Exception, match="no L2 memory"):
        l2.vectors(["nope"])


def test_get_with_vectors_gives_records_and_stored_vectors_in_one_call(l2: SemanticMemory) -> None:
    """What recall fetches for the hits found by words alone: `get` and `vectors` together, passages included."""
    long = Memory(
        id="long",
        text="\n\n".join(f"第 {n} 段：机房里第 {n} 台服务器的备份计划和网络拓扑记录。" * 20 for n in range(30)),
    )
    l2.upsert([*MEMORIES, long])
    passage = next(pid for pid, _, meta in l2._all_passages() if meta["passage"] == 2)
    ids = ["tabs", "missing", passage, "nas"]
    memories, vectors = l2.get_with_vectors(ids)
    assert memories == l2.get(ids) and [m.id for m in memories] == ["tabs", passage, "nas"]
    assert memories[1].meta[PASSAGE_KEY]["memory_id"] == "long"
    assert np.allclose(vectors, l2.vectors(["tabs", passage, "nas"]), atol=1e-6)
    none, empty = l2.get_with_vectors([])
    assert none == [] and empty.shape == (0, 512)


def test_a_write_cut_short_leaves_no_passage_that_comes_back(l2: SemanticMemory, use: USEEmbedder) -> None:
    """Passages that a long memory's write cut short left in Chroma (no record of the memory, no lexical commit)
    are dropped when the memory is written again, even after this process had seen no passage at all."""
    l2.upsert(MEMORIES)
    assert l2.get(["nas#p0"]) == [] and l2.search_ids(use.embed(["NAS"])[0], 1)[0][0] == "nas"
    orphans = l2.client.get_collection(l2._col.name + "-passages")  # what the cut-short write left
    text = "旧的长文本：机房的备份计划。"
    orphans.upsert(
        ids=["nas#p0"],
        embeddings=use.embed([text]),
        documents=[text],
        metadatas=[{"memory_id": "nas", "passage": 0, "start": 0, "end": len(text)}],
    )
    l2.upsert([Memory(id="nas", text="家里的 NAS 换成了威联通。")])
    assert l2.get(["nas#p0"]) == [] and orphans.count() == 0
    assert [
        h.memory.text for h in l2.nearest(use.embed(["机房的备份计划"])[0], 3) if h.memory.id.startswith("nas")
    ] == ["家里的 NAS 换成了威联通。"]


def test_all_iterates_in_batches(l2: SemanticMemory, use: USEEmbedder) -> None:
    vectors = use.embed(["x"] * 1).repeat(7, axis=0)
    l2.upsert([Memory(id=f"m{i}", text=f"memory {i}") for i in range(7)], vectors)
    assert sorted(m.id for m in l2.all(batch=3)) == [f"m{i}" for i in range(7)]


def _write(path: Path, lines: list[str] | bytes) -> Path:
    path.write_bytes(lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode())
    return path


def test_import_jsonl_keeps_ids_and_is_idempotent(l2: SemanticMemory, tmp_path: Path) -> None:
    rows = [
        {"id": "q1", "text": "VPS 在东京，SSH 端口 2222。", "meta": {"category": "environment", "origin": "x"}},
        {"id": "q2", "text": "The blog is built with Hugo.", "meta": {"wing": "web"}},
        {"id": 3, "text": "数字 id 也可以。"},
    ]
    path = _write(tmp_path / "in.jsonl", [json.dumps(r, ensure_ascii=False) for r in rows])
    assert l2.import_jsonl(path) == 3
    assert l2.import_jsonl(path) == 3
    assert l2.count() == 3 == l2.lexical.count()
    q1, q2, q3 = l2.get(["q1", "q2", "3"])
    assert (q1.category, q1.source, q1.meta) == ("environment", "import", {"origin": "x"})
    assert q2.wing == "web" and q3.text == "数字 id 也可以。"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"id": "a", "text": "ok"}\n{"id": "b", "text": "caf\xe9"}\n', r"bad\.jsonl:2: invalid UTF-8"),
        (b'{"id": "a", "text": "ok"}\nthis is not json\n', r"bad\.jsonl:2: invalid JSON"),
        (b'{"id": "a", "text": "ok"}\n{"id": "b", "meta": {}}\n', r"bad\.jsonl:2: missing or empty \"text\""),
        (b'{"id": "a", "text": "ok"}\n{"id": "b", "text": "  "}\n', r"bad\.jsonl:2: missing or empty \"text\""),
        (b'{"id": "a", "text": "ok"}\n{"text": "no id"}\n', r"bad\.jsonl:2: missing or empty \"id\""),
        (
            b'{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n',
            r"bad\.jsonl:3: duplicate id 'a' \(first on line 1\)",
        ),
        (b'{"id": "a", "text": "x", "meta": []}\n', r"bad\.jsonl:1: \"meta\" must be an object"),
        (b'{"id": "a", "text": "x", "meta": {"category": "gossip"}}\n', r"bad\.jsonl:1: unknown category"),
        (b'["id", "text"]\n', r"bad\.jsonl:1: expected a JSON object"),
    ],
)
def test_import_errors_name_file_and_line_and_write_nothing(
    l2: SemanticMemory, tmp_path: Path, content: bytes, message: str
) -> None:
    with pytest.raises(InputFormatError, match=message):
        l2.import_jsonl(_write(tmp_path / "bad.jsonl", content))
    assert l2.count() == 0 and l2.lexical.count() == 0


def test_another_embedder_is_refused(tmp_path: Path, use: USEEmbedder) -> None:
    SemanticMemory(tmp_path / "l2", use).upsert(MEMORIES[:1])
    with pytest.raises(EmbedderMismatchError, match="use-multilingual-v3"):
        SemanticMemory(tmp_path / "l2", OllamaEmbedder("qwen3-embedding:0.6b", "http://127.0.0.1:9", 1024))
    with pytest.raises(EmbedderMismatchError, match="256-d"):
        SemanticMemory(tmp_path / "l2", use).upsert(MEMORIES[:1], np.zeros((1, 256), dtype=np.float32))


def test_lexical_index_is_rebuilt_when_out_of_step(tmp_path: Path, use: USEEmbedder) -> None:
    l2 = SemanticMemory(tmp_path / "l2", use)
    l2.upsert(MEMORIES)
    l2.lexical.delete(["nas", "tabs"])  # as if the process died between the Chroma and the lexical write
    l2.lexical.close()
    again = SemanticMemory(tmp_path / "l2", use)
    assert again.lexical.count() == 3
    assert again.lexical_search("群晖", 3)[0][0] == "nas"


def test_lexical_index_from_another_tokenizer_version_is_rebuilt(tmp_path: Path, use: USEEmbedder) -> None:
    import sqlite3

    from memwiki.text.tokens import TOKENIZER_VERSION

    l2 = SemanticMemory(tmp_path / "l2", use)
    l2.upsert(MEMORIES)
    l2.lexical.close()
    db = sqlite3.connect(tmp_path / "l2" / "lexical.sqlite3")
    db.execute("UPDATE lex_fts SET body = 'stale'")  # what an older tokenizer might have left
    db.execute(f"PRAGMA user_version = {TOKENIZER_VERSION - 1}")
    db.commit()
    db.close()
    again = SemanticMemory(tmp_path / "l2", use)
    assert again.lexical.current()
    assert again.lexical_search("群晖", 3)[0][0] == "nas"


def test_many_ids_are_asked_of_chroma_in_batches(l2: SemanticMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma's SQLite takes at most 32,766 variables a statement: records and vectors of more ids than a batch are
    asked batch by batch and come back whole and in order (a 100k store's build asked for all at once)."""
    from memwiki.layers.semantic import memory as semantic

    rows = [Memory(id=f"m{i:02d}", text=f"note {i}: 备份盘 {i} 在书房", category="other") for i in range(11)]
    l2.add(rows)
    ids = [m.id for m in reversed(rows)]
    whole_vectors, whole = l2.vectors(ids), l2.get(ids)
    monkeypatch.setattr(semantic, "GET_BATCH", 3)
    assert [m.id for m in l2.get(ids)] == ids and l2.get(ids) == whole
    assert np.array_equal(l2.vectors(ids), whole_vectors) and len(whole_vectors) == 11
