"""Recall's files layer kept between processes (memwiki.recall.files_layer): the same hits as the layer read anew,
whatever
changed between two processes, and a kept file that is damaged or cannot be written is no failure.

Every store here is the demo store (real wiki pages, a real graph, real USE vectors) with pages added: two with
the same text, a dozen whose scores tie (their order is the throw-away index's: by position as a string, 10 before
9), one in a folder, one whose frontmatter is broken (skipped with a warning, in both ways of reading)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memwiki.agents.as_json import jsonable
from memwiki.recall.cascade import Recaller, page_text
from memwiki.recall.entity_pages import recall_pages
from memwiki.recall.files_layer import FILE_NAME, RACY_NS
from memwiki.store.demo import build_demo_store
from memwiki.store.layout import LAYER_PATHS
from memwiki.store.store import Store
from memwiki.text.vectors import text_key

ROOT = Path(__file__).resolve().parent.parent
K = 8
QUERIES = (
    "How do I rotate the backup keys?",  # the tied pages and the two with the same text
    "backup keys vault",
    "嵌入服务跑在哪台机器上？",
    "备份策略",
    "备份密钥多久轮换一次？",
    "Juniper works for whom?",  # an entity's facts, on a page that names it
    "xyzzy plugh",  # no word matches
)


@pytest.fixture(scope="module")
def demo() -> Path:
    return build_demo_store(ROOT / "demo", ROOT / ".cache" / "demo-store")


@pytest.fixture()
def store_dir(demo: Path, tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(demo, root)
    for kept in (root / LAYER_PATHS["vectors"]).glob(f"{FILE_NAME}*"):  # (the demo's, kept by an earlier test's recall)
        kept.unlink()
    wiki = root / LAYER_PATHS["wiki"]
    for n in range(12):
        (wiki / f"tie-{n}.md").write_text(f"# Tie {n}\nRotate the backup keys.\n", encoding="utf-8")
    for name in ("same-a.md", "same-b.md"):
        (wiki / name).write_text("---\ntitle: Backup keys\n---\nThe backup keys live in the vault.\n", encoding="utf-8")
    (wiki / "ops").mkdir()
    (wiki / "ops" / "keys.md").write_text("# 密钥轮换\n每季度轮换一次备份密钥，旧密钥保留 30 天。\n", encoding="utf-8")
    (wiki / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8")
    return root


def plain_recaller(store: Store) -> Recaller:
    """Recall as it was before the files layer was kept: every layer the store's, the files read and ranked anew."""
    reader = store.reader()
    return Recaller(
        store.embedder,
        hot_files=store.hot_files,
        l2=store.semantic,
        sessions=store.sessions.search,
        wiki_pages=lambda: recall_pages(reader),
        text_vectors=store.text_vectors,
    )


def answers(recaller: Recaller) -> list[list[dict]]:
    """Each query's hits of every layer, as `memwiki recall --json --all-layers` prints them."""
    with pytest.warns(UserWarning, match="broken.md"):
        return [json.loads(json.dumps(jsonable(recaller.recall(q, k=K, all_layers=True)))) for q in QUERIES]


def expected(store_dir: Path) -> list[list[dict]]:
    with Store.open(store_dir) as store:
        return answers(plain_recaller(store))


def cli_answers(store_dir: Path) -> list[list[dict]]:
    """The same from `memwiki recall --batch` in a process of its own."""
    batch = store_dir.parent / "queries.jsonl"
    batch.write_text("".join(json.dumps({"query": q}) + "\n" for q in QUERIES), encoding="utf-8")
    argv = ["--store", str(store_dir), "recall", "--json", "--all-layers", "-k", str(K), "--batch", str(batch)]
    done = subprocess.run(
        [sys.executable, "-m", "memwiki.agents.cli", *argv], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "broken.md" in done.stderr
    return [json.loads(line)["hits"] for line in done.stdout.splitlines()]


def kept_file(store_dir: Path) -> Path:
    return store_dir / LAYER_PATHS["vectors"] / FILE_NAME


def written(store_dir: Path) -> list[tuple[int, int]]:
    """(size, mtime) of the kept file and its write-ahead log: what a write changes."""
    path = kept_file(store_dir)
    return [(p.stat().st_size, p.stat().st_mtime_ns) for p in (path, Path(f"{path}-wal")) if p.exists()]


def settle() -> None:
    """Wait until the stats of files changed just now are trusted (memwiki.recall.files_layer.RACY_NS)."""
    time.sleep(RACY_NS / 1e9 + 0.1)


def test_the_kept_layer_ranks_as_the_layer_read_anew(store_dir: Path) -> None:
    want = expected(store_dir)
    files = [h for hits in want for h in hits if h["layer"] == "files"]
    assert {"tie-10.md", "tie-9.md", "same-a.md", "same-b.md", "ops/keys.md"} <= {h["id"] for h in files}
    by_words = [re.search(r"lexical ([0-9.]+)", h["why"]) for h in want[0] if h["id"].startswith("tie-")]
    scores = [m.group(1) for m in by_words if m]
    assert len(scores) > len(set(scores)), "pages that tie by words (ranked as the throw-away index ranks them)"
    with Store.open(store_dir) as store:
        assert answers(store.recaller) == want  # made and kept
        settle()
        assert answers(store.recaller) == want  # the stats trusted now: made again, pages read from the file
        before = written(store_dir)
        assert answers(store.recaller) == want  # read as kept
        assert written(store_dir) == before, "an unchanged layer is read, not written"
    with Store.open(store_dir) as store:
        assert answers(store.recaller) == want


def test_a_page_edited_added_or_deleted_between_two_processes_is_seen(store_dir: Path) -> None:
    assert cli_answers(store_dir) == expected(store_dir)
    settle()
    assert cli_answers(store_dir) == expected(store_dir)
    wiki = store_dir / LAYER_PATHS["wiki"]
    (wiki / "new.md").write_text("# Key vault\nRotate the backup keys in the key vault each quarter.\n")
    (wiki / "tie-3.md").unlink()
    edited = wiki / "same-a.md"
    stat = edited.stat()
    edited.write_text(edited.read_text().replace("vault.", "safe!."))  # the same size ...
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ... and modification time
    with Store.open(store_dir) as store:
        store.graph.add_triple("Juniper", "rotates", "backup keys")
    now = cli_answers(store_dir)  # just changed: nothing of them trusted
    assert now == expected(store_dir)
    ids = {h["id"] for hits in now for h in hits}
    assert "new.md" in ids and "tie-3.md" not in ids
    assert any("safe!." in h["text"] for hits in now for h in hits)
    assert any("rotates backup keys" in h["text"] for hits in now for h in hits)
    settle()
    assert cli_answers(store_dir) == expected(store_dir)
    edited.write_text(edited.read_text().replace("safe!.", "box!!."))  # same size, mtime: only its ctime tells
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    settle()
    now = cli_answers(store_dir)
    assert now == expected(store_dir)
    assert any("box!!." in h["text"] for hits in now for h in hits)


def test_processes_that_make_the_layer_at_once_all_answer_alike(store_dir: Path) -> None:
    batch = store_dir.parent / "queries.jsonl"
    batch.write_text("".join(json.dumps({"query": q}) + "\n" for q in QUERIES), encoding="utf-8")
    argv = ["--store", str(store_dir), "recall", "--json", "--all-layers", "-k", str(K), "--batch", str(batch)]
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "memwiki.agents.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    want = expected(store_dir)
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err.decode()
        assert [json.loads(line)["hits"] for line in out.decode().splitlines()] == want


@pytest.mark.parametrize("damage", ["garbage", "cut in half", "vectors of another size", "another format"])
def test_a_damaged_kept_file_is_set_aside_and_made_anew(store_dir: Path, damage: str) -> None:
    want = expected(store_dir)
    with Store.open(store_dir) as store:
        assert answers(store.recaller) == want
    path = kept_file(store_dir)
    if damage == "garbage":
        path.write_bytes(b"not a database, whatever it was" * 500)
    elif damage == "cut in half":
        with sqlite3.connect(path) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        with sqlite3.connect(path) as db:
            name, value = ("vectors", b"\0" * 12) if damage == "vectors of another size" else ("format", 0)
            db.execute("UPDATE meta SET value = ? WHERE name = ?", (value, name))
    with Store.open(store_dir) as store:
        assert answers(store.recaller) == want
    aside = [p for p in path.parent.glob(f"{FILE_NAME}.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(aside) == (0 if damage == "another format" else 1)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM pages").fetchone()[0] > 20


def test_a_layer_that_cannot_be_kept_is_kept_in_memory(store_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    want = expected(store_dir)
    kept_file(store_dir).mkdir(parents=True)  # a folder where the file would be
    with Store.open(store_dir) as store:
        assert answers(store.recaller) == want
        assert answers(store.recaller) == want
    assert "kept in this process's memory" in caplog.text
    assert kept_file(store_dir).is_dir()


def test_a_graph_write_makes_the_vectors_of_the_pages_it_changed_and_no_others(store_dir: Path) -> None:
    """`Store.keep_page_vectors` (after `memwiki kg add` or an MCP graph write) goes through the kept layer."""
    with Store.open(store_dir) as store:
        with pytest.warns(UserWarning, match="broken.md"):
            store.keep_page_vectors()  # the layer as the demo left it
        store.graph.add_triple("Quokka Cluster", "runs_on", "Juniper", valid_from="2026-11-30")
        with pytest.warns(UserWarning, match="broken.md"):
            made = store.keep_page_vectors()
        with pytest.warns(UserWarning, match="broken.md"):
            texts = [page_text(p) for p in recall_pages(store.reader())]
        assert any("Quokka Cluster" in t for t in texts)
        assert made >= 1  # the new entity's page, and the pages whose facts changed
        assert store.text_vectors.unkept(text_key(t) for t in texts) == []
        with pytest.warns(UserWarning, match="broken.md"):
            assert store.keep_page_vectors() == 0  # nothing new since
