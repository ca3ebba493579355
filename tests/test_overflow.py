"""Overflow into a real L2 (Chroma + the USE embedder): what sinks, in what order, and crash safety."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings
from fixture_homes import pristine

from memwiki.errors import CapacityError, DuplicateEntryError, MemwikiError
from memwiki.layers.hot.categories import category_of, is_core, parse_tag
from memwiki.layers.hot.files import HotMemoryFile, join_entries
from memwiki.layers.hot.overflow import L2Writer, SinkLog, memory_id, plan_sink, remember, sink
from memwiki.source import Memory
from memwiki.text.embedders import USEEmbedder


def hermes() -> Path:
    """The hermes-agent home of tests/fixture_homes.py (built once per session; copy before writing)."""
    return pristine() / "hermes_home"


REPO = Path(__file__).resolve().parents[1]


class ChromaL2:
    """A minimal real L2 writer: a Chroma PersistentClient collection with USE vectors."""

    def __init__(self, path: Path) -> None:
        self.client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
        self.col = self.client.get_or_create_collection(
            "hot_sinks", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )
        self.embedder = USEEmbedder()

    def stored_text(self, memory: Memory) -> str:
        return memory.text

    def upsert(self, memories: list[Memory]) -> None:
        self.col.upsert(
            ids=[m.id for m in memories],
            embeddings=self.embedder.embed([m.text for m in memories]),
            documents=[self.stored_text(m) for m in memories],
            metadatas=[
                {
                    "category": m.category,
                    "source": m.source,
                    "created": m.created,
                    "sunk_at": m.sunk_at,
                    "meta": json.dumps(m.meta),
                }
                for m in memories
            ],
        )

    def get(self, ids: list[str]) -> list[Memory]:
        if not ids:
            return []
        got = self.col.get(ids=ids, include=["documents", "metadatas"])
        return [
            Memory(
                i,
                d,
                md["category"],
                source=md["source"],
                created=md["created"],
                sunk_at=md["sunk_at"],
                meta=json.loads(md["meta"]),
            )
            for i, d, md in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]

    def all(self) -> list[Memory]:
        return self.get(self.col.get(include=[])["ids"])


class LossyL2(ChromaL2):
    """A real Chroma writer with a bug: it stores the text cut short (read-back must catch it)."""

    def stored_text(self, memory: Memory) -> str:
        return memory.text[:-1]


@pytest.fixture
def home(tmp_path: Path) -> tuple[HotMemoryFile, SinkLog, list[str]]:
    """A copy of the real hermes MEMORY.md (96% full), its sink log, and its original entries."""
    shutil.copy(hermes() / "memories" / "MEMORY.md", tmp_path / "MEMORY.md")
    hot = HotMemoryFile(tmp_path / "MEMORY.md", "memory", 2200, 0.70)
    return hot, SinkLog(tmp_path / "sinks.jsonl"), hot.entries()


def _nothing_lost(hot: HotMemoryFile, l2: ChromaL2, original: list[str]) -> None:
    """Every original entry is in the hot file or in L2 (by its deterministic id and text)."""
    in_hot = set(hot.entries())
    in_l2 = {m.id: m.text for m in l2.all()}
    for entry in original:
        assert entry in in_hot or in_l2.get(memory_id(hot.target, entry)) == parse_tag(entry)[1], entry


def _finished(hot: HotMemoryFile, l2: ChromaL2, log: SinkLog, original: list[str]) -> None:
    """The sink is complete: under threshold, core kept, each sunk entry once in L2 and once in the log."""
    entries = hot.entries()
    assert len(join_entries(entries)) <= hot.threshold * hot.cap
    assert all(e in entries for e in original if is_core(category_of(e)[0]))
    sunk = [e for e in original if e not in entries]
    ids = [r.memory_id for r in log.records()]
    assert len(ids) == len(set(ids)) == len(sunk)
    assert sorted(ids) == sorted(memory_id("memory", e) for e in sunk)
    assert l2.col.count() == len(sunk)
    _nothing_lost(hot, l2, original)


def test_plan_sink_on_the_fixture(home: tuple[HotMemoryFile, SinkLog, list[str]]) -> None:
    _, _, entries = home
    plan = plan_sink(entries, 2200, 0.70)
    assert plan == sorted(plan) and plan
    assert not any(is_core(category_of(entries[i])[0]) for i in plan)
    left = [e for i, e in enumerate(entries) if i not in plan]
    assert len(join_entries(left)) <= 1540
    assert len(join_entries(left + [entries[plan[-1]]])) > 1540, "stops as soon as it is under the threshold"
    assert plan_sink(entries, 10_000, 0.70) == []
    assert plan_sink(["a" * 50, "b" * 50], 100, 0.5, keep={0}) == [1]


def test_sink_the_real_hermes_file(tmp_path: Path, home: tuple[HotMemoryFile, SinkLog, list[str]]) -> None:
    hot, log, original = home
    l2 = ChromaL2(tmp_path / "l2")
    assert isinstance(l2, L2Writer)
    records = sink(hot, l2, log, now="2026-11-30T04:00:00Z")
    assert records and [r.memory_id for r in records] == [r.memory_id for r in log.records()]
    _finished(hot, l2, log, original)
    first = records[0]
    assert first.reason == "MEMORY.md at 96% (2,133/2,200) > 70%" and first.sunk_at == "2026-11-30T04:00:00Z"
    stored = l2.get([first.memory_id])[0]
    assert (stored.category, stored.source, stored.sunk_at, stored.created) == (
        first.category,
        "L1",
        "2026-11-30T04:00:00Z",
        "2026-11-30T04:00:00Z",
    )
    assert stored.meta == {"target": "memory"} and stored.text == first.text
    # the file keeps hermes's format and order
    assert hot.path.read_text(encoding="utf-8") == join_entries([e for e in original if e in hot.entries()])
    assert sink(hot, l2, log) == [], "a second run has nothing to do"


def test_remember_sinks_and_keeps_the_new_entry(tmp_path: Path, home: tuple[HotMemoryFile, SinkLog, list[str]]):
    hot, log, original = home
    l2 = ChromaL2(tmp_path / "l2")
    records = remember(hot, l2, log, "NAS 新增 SSD 缓存池 fast (2×1TB NVMe)。", category="env")
    assert records
    assert hot.entries()[-1] == "[environment] NAS 新增 SSD 缓存池 fast (2×1TB NVMe)。"
    assert all(e in hot.entries() for e in original if is_core(category_of(e)[0]))
    _nothing_lost(hot, l2, original)
    with pytest.raises(DuplicateEntryError):
        remember(hot, l2, log, "NAS 新增 SSD 缓存池 fast (2×1TB NVMe)。", category="env")


def test_remember_below_threshold_sinks_nothing(tmp_path: Path) -> None:
    hot = HotMemoryFile(tmp_path / "USER.md", "user", 1375, 0.7)
    log = SinkLog(tmp_path / "sinks.jsonl")
    l2 = ChromaL2(tmp_path / "l2")
    assert remember(hot, l2, log, "Router at 10.0.0.1") == []
    assert hot.entries() == ["Router at 10.0.0.1"] and l2.col.count() == 0 and not log.path.exists()


def test_an_add_that_cannot_fit_sinks_nothing(tmp_path: Path) -> None:
    hot = HotMemoryFile(tmp_path / "MEMORY.md", "memory", 300, 0.7)
    core = ["Behaviour rule: never batch prod changes. " * 3, "Router at 10.0.0.1"]
    hot.write_entries(core)
    before = hot.path.read_bytes()
    l2, log = ChromaL2(tmp_path / "l2"), SinkLog(tmp_path / "sinks.jsonl")
    with pytest.raises(CapacityError, match=r"Memory at 146/300 chars\. Adding this entry \(200 chars\)"):
        remember(hot, l2, log, "p" * 200)
    assert hot.path.read_bytes() == before and l2.col.count() == 0 and log.records() == []
    with pytest.raises(CapacityError, match="5,000 chars"):
        remember(hot, l2, log, "q" * 5000)
    with pytest.raises(MemwikiError, match="cannot be empty"):
        remember(hot, l2, log, "[env]")
    assert hot.path.read_bytes() == before and l2.col.count() == 0


def test_a_clean_file_grown_past_its_cap_is_brought_back(tmp_path: Path) -> None:
    """A file written outside the tool in clean format but over the cap: sink repairs it, losing nothing."""
    hot = HotMemoryFile(tmp_path / "USER.md", "user", 400, 0.7)
    original = [f"Router {i} at 10.0.0.{i}, VLAN {i}" + " pad" * 20 for i in range(4)] + ["Prefers short answers."]
    hot.path.write_text(join_entries(original), encoding="utf-8")
    assert len(hot.path.read_text(encoding="utf-8")) > 400
    l2, log = ChromaL2(tmp_path / "l2"), SinkLog(tmp_path / "sinks.jsonl")
    records = sink(hot, l2, log)
    assert [r.target for r in records] == ["user"] * len(records)
    assert len(join_entries(hot.entries())) <= 280 and "Prefers short answers." in hot.entries()
    in_l2 = {m.text for m in l2.all()}
    assert all(e in hot.entries() or e in in_l2 for e in original)


def test_a_hand_edited_file_is_not_sunk(tmp_path: Path, home: tuple[HotMemoryFile, SinkLog, list[str]]) -> None:
    hot, log, _ = home
    raw = hot.path.read_bytes().replace(b"\n", b"\r\n")
    hot.path.write_bytes(raw)
    l2 = ChromaL2(tmp_path / "l2")
    with pytest.raises(MemwikiError, match="Refusing to write"):
        sink(hot, l2, log)
    assert hot.path.read_bytes() == raw and l2.col.count() == 0


def _boom(*args: object, **kwargs: object) -> None:
    raise OSError("simulated crash")


@pytest.mark.parametrize("step", ["upsert", "verify", "log", "rewrite"])
def test_interrupted_sink_loses_nothing_and_reruns_cleanly(
    tmp_path: Path, home: tuple[HotMemoryFile, SinkLog, list[str]], monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    hot, log, original = home
    before = hot.path.read_bytes()
    l2 = (LossyL2 if step == "verify" else ChromaL2)(tmp_path / "l2")
    with monkeypatch.context() as patch:
        if step == "upsert":
            patch.setattr(l2, "upsert", _boom)
        if step == "log":
            patch.setattr(SinkLog, "append", _boom)
        if step == "rewrite":
            patch.setattr("memwiki.layers.hot.files.atomic_write_text", _boom)
        with pytest.raises((OSError, MemwikiError)) as err:
            sink(hot, l2, log)
        if step == "verify":
            assert "read-back" in str(err.value) and "left untouched" in str(err.value)
    assert hot.path.read_bytes() == before, "the hot file is rewritten last"
    _nothing_lost(hot, l2, original)
    assert len(log.records()) == (len(plan_sink(original, 2200, 0.7)) if step == "rewrite" else 0)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    sink(hot, ChromaL2(tmp_path / "l2"), log)
    _finished(hot, ChromaL2(tmp_path / "l2"), log, original)


CRASHER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    sys.path.insert(0, os.path.join(sys.argv[1], "tests"))
    import memwiki.layers.hot.overflow as overflow
    from test_overflow import ChromaL2
    root, step = Path(sys.argv[2]), sys.argv[3]
    l2 = ChromaL2(root / "l2")
    if step == "after-log":
        real_append = overflow.SinkLog.append
        overflow.SinkLog.append = lambda self, rs: (real_append(self, rs), os._exit(9))
    hot = overflow.HotMemoryFile(root / "MEMORY.md", "memory", 2200, 0.7)
    overflow.sink(hot, l2, overflow.SinkLog(root / "sinks.jsonl"))
    """
)


def test_a_killed_process_loses_nothing(tmp_path: Path, home: tuple[HotMemoryFile, SinkLog, list[str]]) -> None:
    """A real kill (os._exit, no cleanup) after L2 and the log were written but before the hot rewrite.
    The in-process test above interrupts every other step."""
    hot, log, original = home
    step = "after-log"
    before = hot.path.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", CRASHER, str(REPO), str(tmp_path), step],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"ANONYMIZED_TELEMETRY": "False"},
    )
    assert proc.returncode == 9, proc.stderr
    assert hot.path.read_bytes() == before
    l2 = ChromaL2(tmp_path / "l2")
    assert l2.col.count() == len(plan_sink(original, 2200, 0.7))
    _nothing_lost(hot, l2, original)
    sink(hot, l2, log)
    _finished(hot, l2, log, original)


def test_sink_log_torn_line_and_bad_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = SinkLog(tmp_path / "sinks.jsonl")
    from memwiki.source import SinkRecord

    rec = SinkRecord("hot-memory-1", "memory", "t", "network", "2026-01-01T00:00:00Z", "why")
    assert log.append([rec]) == [rec] and log.append([rec]) == []
    with open(log.path, "a", encoding="utf-8") as fh:
        fh.write('{"memory_id": "hot-memory-2", "tar')  # a crash mid-append
    assert log.records() == [rec]
    rec2 = SinkRecord("hot-memory-2", "memory", "u", "project", "2026-01-01T00:00:00Z", "why")
    assert log.append([rec2]) == [rec2]
    assert log.records() == [rec, rec2]
    assert json.loads(log.path.read_text(encoding="utf-8").splitlines()[0])["to"] == "L2"
    log.path.write_text('{"memory_id": 1}\n' + log.path.read_text(encoding="utf-8"), encoding="utf-8")
    assert log.records() == [rec, rec2]  # a bad line is skipped with a warning naming it, not fatal
    assert "sinks.jsonl:1: not a sink record, skipped" in caplog.text


def test_the_store_semantic_memory_is_an_l2_writer(tmp_path: Path, home: tuple[HotMemoryFile, SinkLog, list[str]]):
    """The project's own L2 (memwiki.layers.semantic.memory) plugs in through the same protocol."""
    from memwiki.layers.semantic.memory import SemanticMemory

    hot, log, original = home
    l2 = SemanticMemory(tmp_path / "l2", USEEmbedder())
    assert isinstance(l2, L2Writer)
    records = sink(hot, l2, log)
    assert records
    back = l2.get([r.memory_id for r in records])
    assert [(m.text, m.category, m.source, m.meta) for m in back] == [
        (parse_tag(r.text)[1], r.category, "L1", {"target": "memory"}) for r in records
    ]


def test_the_guard_never_overrules_an_explicit_tag(tmp_path: Path) -> None:
    """A second opinion may keep an untagged entry hot, never one its writer tagged non-core."""
    from memwiki.layers.hot.overflow import _plan

    entries = ["[env] dev box: Ubuntu 24.04, Python 3.11", "Address the user as Professor Li.", "x" * 60]
    always_core = lambda texts: [True] * len(texts)  # noqa: E731 - the strictest possible guard
    plan = _plan(entries, cap=100, threshold=0.7, keep={2}, guard=always_core)
    assert plan == [0], "the tagged [env] entry sinks; the untagged one is kept by the guard"
