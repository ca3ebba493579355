"""Recall through `memwiki mcp`: the SDK's own client over stdio, beside a `memwiki recall` process per query.

A store of N memories is filled (the vectors of a pool of distinct embedded texts reused cyclically, texts made
unique, as scripts/bench_store.py does: said in the output), with hot memory and a few sessions so the cascade has
every layer. Then:
- the MCP server: time from spawning it to the first answer (it loads the embedder and opens the store once),
  then p50 / p95 of `memwiki_recall` calls (k=5) on the open server, over several rounds (median kept);
- the baseline: `memwiki recall QUERY --json` as one process per query (what an agent shelling out pays);
- in-process `Store.recall`, the floor under both.
Peak memory: the server's RSS high-water mark (VmHWM from /proc) and this process's.

Usage: python scripts/bench_mcp.py [--size 10000] [--queries 100] [--rounds 3] [--cli-queries 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_store import peak_rss_mb, synthetic_texts  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from memwiki.source import Memory  # noqa: E402
from memwiki.store.store import Store  # noqa: E402

POOL = 2000


def fill(root: Path, size: int) -> list[str]:
    """A store of `size` memories (pool vectors reused), hot entries and sessions; returns queries."""
    texts = synthetic_texts(POOL)
    with Store.init(root) as store:
        vectors = store.embedder.embed(texts)
        for start in range(0, size, 5000):
            rows = range(start, min(size, start + 5000))
            memories = [Memory(id=f"m{n}", text=f"{texts[n % POOL]} #{n}") for n in rows]
            store.semantic.upsert(memories, vectors[[n % POOL for n in rows]])
        store.remember("[preference] 林晓喜欢先看命令再看解释。", "user")
        store.remember("[pitfall] Chroma's default embedding function downloads a model: pass ours.")
        for n in range(20):
            store.sessions.add_message(f"s-{n}", "user", f"{texts[n]} — what should we do about it?")
    return [t.split("，")[0].split(" (note")[0] for t in synthetic_texts(400, seed=11)]


def server_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def through_mcp(root: Path, queries: list[str], rounds: int) -> dict:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memwiki.agents.cli", "--store", str(root), "mcp"],
        env={"PYTHONPATH": str(ROOT)},
    )
    t0 = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        first = await session.call_tool("memwiki_recall", {"query": queries[0], "k": 5})
        assert not first.is_error, first.content
        startup = time.perf_counter() - t0
        medians, p95s = [], []
        for _ in range(rounds):
            times = []
            for q in queries:
                t = time.perf_counter()
                result = await session.call_tool("memwiki_recall", {"query": q, "k": 5})
                times.append((time.perf_counter() - t) * 1000)
                assert not result.is_error
            medians.append(statistics.median(times))
            p95s.append(float(np.percentile(times, 95)))
        rss = max((server_rss_mb(pid) for pid in _children()), default=0.0)
    return {
        "startup_to_first_answer_s": round(startup, 2),
        "p50_ms": round(statistics.median(medians), 2),
        "p95_ms": round(statistics.median(p95s), 2),
        "rounds_p50_ms": [round(m, 2) for m in medians],
        "server_peak_rss_mb": round(rss, 1),
    }


def _children() -> list[int]:
    """Pids of this process's children (the server; from /proc, Linux)."""
    me, out = str(os.getpid()), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            out.append(int(stat.parent.name))
    return out


def per_process(root: Path, queries: list[str]) -> dict:
    times = []
    for q in queries:
        t = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "memwiki.agents.cli", "--store", str(root), "recall", q, "--json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        times.append((time.perf_counter() - t) * 1000)
        assert done.returncode == 0, done.stderr
    return {"p50_ms": round(statistics.median(times), 1), "runs": len(times)}


def in_process(root: Path, queries: list[str]) -> dict:
    with Store.open(root) as store:
        store.recall(queries[0])
        times = []
        for q in queries:
            t = time.perf_counter()
            store.recall(q, k=5)
            times.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(float(np.percentile(times, 95)), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cli-queries", type=int, default=5, help="queries for the process-per-query baseline")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memwiki-bench-mcp-") as tmp:
        root = Path(tmp) / "store"
        t0 = time.perf_counter()
        queries = fill(root, args.size)[: args.queries]
        filled = time.perf_counter() - t0
        mcp = asyncio.run(through_mcp(root, queries, args.rounds))
        cli = per_process(root, queries[: args.cli_queries])
        floor = in_process(root, queries)
    out = {
        "size": args.size,
        "fill_s": round(filled, 1),
        "note": f"L2 vectors: {POOL} distinct embedded texts reused cyclically (texts unique)",
        "mcp": mcp,
        "cli_process_per_query": cli,
        "in_process": floor,
        "ratio_cli_over_mcp": round(cli["p50_ms"] / mcp["p50_ms"], 1),
        "bench_peak_rss_mb": round(peak_rss_mb(), 1),
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{args.size:,} memories ({out['note']}); filled in {out['fill_s']} s")
    print(f"MCP server: first answer {mcp['startup_to_first_answer_s']} s after spawn (embedder and store opened once)")
    print(
        f"  memwiki_recall k=5: p50 {mcp['p50_ms']} ms, p95 {mcp['p95_ms']} ms (median of {args.rounds} rounds of "
        f"{len(queries)}: {mcp['rounds_p50_ms']}); server peak RSS {mcp['server_peak_rss_mb']} MB"
    )
    print(f"baseline, `memwiki recall` as a process per query: p50 {cli['p50_ms']} ms ({cli['runs']} runs)")
    print(f"  ratio: {out['ratio_cli_over_mcp']}x slower than the open server")
    print(f"in-process Store.recall: p50 {floor['p50_ms']} ms, p95 {floor['p95_ms']} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
