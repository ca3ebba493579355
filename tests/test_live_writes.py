"""Agents write while others read: two long-lived writer processes and a build on one store lose nothing.

Writer A is `memwiki mcp` driven by the SDK's client; writer B is a process that keeps the store open (as the
hermes provider does) and writes between sleeps; meanwhile this process builds the site. Afterwards every
memory either writer wrote is in L2, found by its own vector (the index saw it, not only the table), and every
hot entry is in hot memory or sunk into L2.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from test_mcp import call, session_with
from test_site import build_site

from memwiki.errors import StoreLockedError
from memwiki.layers.semantic import memory as semantic
from memwiki.source import Memory
from memwiki.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
N = 25

WRITER_B = textwrap.dedent(
    """
    import sys, time
    from memwiki.source import Memory
    from memwiki.store.store import Store

    with Store.open(sys.argv[1]) as store:  # open for the whole run, as a provider or a server is
        store.embedder.warm()
        print("ready", flush=True)
        for n in range(int(sys.argv[2])):
            store.semantic.upsert([Memory(f"b-{n}", f"writer B note {n}: the lab printer on floor {n} jams")])
            store.remember(f"[project] writer B task {n:02d}: move rack {n} to row C before the audit")
            time.sleep(0.05)
    """
)


def test_two_writers_and_a_build_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    Store.init(root).close()
    b = subprocess.Popen(
        [sys.executable, "-c", WRITER_B, str(root), str(N)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert b.stdout is not None and b.stdout.readline().strip() == "ready", b.stderr.read() if b.stderr else ""
    builds: list[Any] = []
    builder = threading.Thread(
        target=lambda: builds.append(build_site(tmp_path / "site", tmp_path / "cache", store=str(root), demo_src=None))
    )

    async def writer_a(s: ClientSession) -> list[Any]:
        builder.start()
        out = []
        for n in range(N):
            note = f"writer A note {n}: the NAS at shelf {n} is full"
            out.append(await call(s, "memwiki_remember_long", text=note, id=f"a-{n}"))
            task = f"[project] writer A task {n:02d}: label shelf {n}"
            out.append(await call(s, "memwiki_memory", action="add", content=task))
            await asyncio.sleep(0.05)
        while b.poll() is None:  # then the open server reads what the other process wrote meanwhile
            await asyncio.sleep(0.2)
        error, seen = await call(s, "memwiki_recall", query="the lab printer on floor 24 jams", k=3)
        out.append((error, seen))
        return out

    results = session_with(["--store", str(root), "mcp"], writer_a)
    assert b.wait(timeout=300) == 0, b.stderr.read() if b.stderr else ""
    builder.join(timeout=600)
    assert all(not error for error, _ in results), [r for r in results if r[0]]
    l2 = [h["id"] for h in results[-1][1]["hits"] if h["layer"] == "L2"]
    assert l2[0] == "b-24", results[-1][1]["hits"]  # the open server finds what the other process wrote
    assert builds and builds[0][1] is None, builds

    with Store.open(root) as store:
        ids = [f"a-{n}" for n in range(N)] + [f"b-{n}" for n in range(N)]
        got = {m.id: m for m in store.semantic.get(ids)}
        assert sorted(got) == sorted(ids)  # every memory of both writers is in L2
        vectors = store.semantic.vectors(ids)
        for memory_id, vector in zip(ids, vectors, strict=True):  # and in its index: found by its own vector
            assert store.semantic.search_ids(vector, 1)[0][0] == memory_id
        kept = [*store.hot("memory").entries(), *(m.text for m in store.semantic.all())]
        for n in range(N):
            assert any(f"writer A task {n:02d}" in t for t in kept), n
            assert any(f"writer B task {n:02d}" in t for t in kept), n


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from memwiki.layers.semantic.memory import WRITE_LOCK
    from memwiki.common.textio import file_lock

    with file_lock(Path(sys.argv[1]) / WRITE_LOCK):  # another process in the middle of its write
        print("holding", flush=True)
        time.sleep(float(sys.argv[2]))
    """
)


def hold(folder: Path, seconds: float) -> subprocess.Popen:
    """Another process holding L2's write lock for `seconds`."""
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), str(seconds)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )


def test_a_write_waits_for_another_processs_write_or_says_it_is_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.init(tmp_path / "store") as store:
        l2 = store.semantic
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(l2.path), "1.5"], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        t0 = time.monotonic()
        l2.upsert([Memory("m-1", "The lab printer on floor 3 jams every morning.")])
        assert time.monotonic() - t0 >= 0.5 and holder.wait(timeout=30) == 0  # it waited for the other write
        assert [m.id for m in l2.get(["m-1"])] == ["m-1"]
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(l2.path), "5"], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        monkeypatch.setattr(semantic, "WRITE_LOCK_TIMEOUT", 0.3)
        with pytest.raises(StoreLockedError, match="locked by another process"):
            l2.delete(["m-1"])
        assert [m.id for m in l2.get(["m-1"])] == ["m-1"]  # nothing half-done
        holder.wait(timeout=30)
