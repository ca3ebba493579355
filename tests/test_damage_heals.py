"""A damaged vector index heals itself: each damage below, made to a real store's files, is found when the next
command opens the store (no crash, no silence), L2 is rebuilt from `chroma.sqlite3` with one line saying so, and
every row is then found by its own vector. Derived files (the lexical index) are made again; a bad line in the
sink log is skipped with a warning. Each damage runs `memwiki stats` in a child process: before this check, some
of them ended Chroma with a segmentation fault."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from memwiki.source import Memory
from memwiki.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
ROWS = 300


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("damage") / "store"
    with Store.init(root) as store:
        store.semantic.upsert(
            [
                Memory(f"m{i}", f"memory {i}: the lantern {i} sits on shelf {i * 7} of room {i % 13}", "other")
                for i in range(ROWS)
            ]
        )
    return root


def _segments(store: Path) -> list[Path]:
    return [p for p in (store / "l2").iterdir() if p.is_dir() and len(p.name) == 36]


def _each(name: str, change: Callable[[Path], None]) -> Callable[[Path], None]:
    def damage(store: Path) -> None:
        for segment in _segments(store):
            path = segment / name
            if path.is_file() and path.stat().st_size:
                change(path)

    return damage


def _zero(path: Path) -> None:
    path.write_bytes(b"\0" * path.stat().st_size)


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _overwrite(path: Path) -> None:
    path.write_bytes(np.random.default_rng(7).bytes(path.stat().st_size))


DAMAGES: dict[str, Callable[[Path], None]] = {
    f"{how.__name__[1:]} {name}": _each(name, how)
    for name in ("link_lists.bin", "length.bin", "data_level0.bin", "header.bin")
    for how in (_zero, _truncate, _overwrite)
}
DAMAGES["segment folder deleted"] = lambda store: [shutil.rmtree(s) for s in _segments(store)]


def _stats(store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "memwiki.agents.cli", "--store", str(store), "stats"],
        capture_output=True,
        text=True,
        env=env,
    )


def _every_row_found_by_its_own_vector(store: Path) -> None:
    """Each row comes back for its own vector. hnswlib searches with ef = max(ef, k): asking for 50 of 300 rows makes
    the walk wide enough that a readable index never misses one (with 10 it missed one row in some runs)."""
    with Store.open(store) as opened:
        semantic = opened.semantic
        assert semantic.count() == ROWS
        ids = [f"m{i}" for i in range(ROWS)]
        vectors = semantic.vectors(ids)
        lost = [
            mid for mid, v in zip(ids, vectors, strict=True) if mid not in {h.memory.id for h in semantic.search(v, 50)}
        ]
        assert lost == []


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_index_is_found_and_rebuilt(pristine: Path, tmp_path: Path, damage: str) -> None:
    store = tmp_path / "store"
    shutil.copytree(pristine, store)
    DAMAGES[damage](store)
    done = _stats(store)
    assert done.returncode == 0, done.stderr[-2000:]
    rebuilt = [line for line in done.stderr.splitlines() if "L2 rebuilt at" in line]
    assert len(rebuilt) == 1 and f"{ROWS} memories" in rebuilt[0], done.stderr
    assert list(tmp_path.glob("store/l2.damaged-*")), "the damaged folder is kept"
    _every_row_found_by_its_own_vector(store)


def test_derived_files_are_made_again_and_a_bad_log_line_is_skipped(pristine: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(pristine, store)
    (store / "l2" / "lexical.sqlite3").write_bytes(b"not a database " * 100)
    with open(store / "sinks.jsonl", "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    done = _stats(store)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "lexical.sqlite3 does not open" in done.stderr and "made again from L2" in done.stderr
    assert "sinks.jsonl:1: not a sink record, skipped" in done.stderr
    with Store.open(store) as opened:
        assert [m for m, _ in opened.semantic.lexical_search("lantern 17 shelf 119", 3)][0] == "m17"
    _every_row_found_by_its_own_vector(store)


def test_a_deleted_memory_is_no_damage(pristine: Path, tmp_path: Path) -> None:
    """hnswlib marks a deleted row in its header's third byte, beside the neighbour count: a store whose newest
    memories were deleted (the rows read first and last) opens without a rebuild."""
    from memwiki.layers.semantic.hnsw_files import segment_damage

    store = tmp_path / "store"
    shutil.copytree(pristine, store)
    with Store.open(store) as opened:
        opened.semantic.upsert([Memory(f"n{i}", f"a note {i} written and then taken back", "other") for i in range(3)])
    with Store.open(store) as opened:
        opened.semantic.delete([f"n{i}" for i in range(3)])
    with Store.open(store) as opened:
        opened.semantic.delete(["m0"])
        opened.semantic.upsert([Memory("m0", "memory 0: the lantern 0 sits on shelf 0 of room 0", "other")])
    assert segment_damage(store / "l2") is None
    done = _stats(store)
    assert done.returncode == 0 and "rebuilt" not in done.stderr and "does not load" not in done.stderr, done.stderr
    _every_row_found_by_its_own_vector(store)
