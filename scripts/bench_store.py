"""L2 speed: import throughput against the embedder's own, recall latency at several sizes, peak memory.

- Embedder throughput: `USEEmbedder.embed` over N distinct synthetic texts (batches of 256), median of runs.
- Import throughput: `SemanticMemory.import_jsonl` of the same N texts from a JSONL file into a fresh
  Chroma store (validation, embedding, Chroma and lexical writes: the whole real path), median of runs.
- Recall latency: `Recaller.recall(query, k=5)` over L2 only (query embedding + dense + lexical + fusion),
  p50 / p95 over Q queries at each size. To fill 10k / 100k memories in minutes, the vectors of a pool of
  distinct embedded texts are reused (each memory's text is unique, its vector is its pool text's): this
  is said in the output. Model load time is measured and reported apart.
- Peak memory: the process's RSS high-water mark (ru_maxrss) after each step.

Usage: python scripts/bench_store.py [--sizes 1000,10000,100000] [--import-n 2000] [--queries 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memwiki.layers.semantic.memory import SemanticMemory  # noqa: E402
from memwiki.recall.cascade import Recaller  # noqa: E402
from memwiki.source import Memory  # noqa: E402
from memwiki.text.embedders import USEEmbedder  # noqa: E402

ZH_SUBJECTS = ["用户", "项目", "服务器", "家里的 NAS", "测试环境", "博客", "数据库", "路由器", "孩子", "同事小王"]
ZH_VERBS = ["喜欢", "需要", "部署了", "每周检查", "讨厌", "迁移到", "备份到", "升级了", "记录了", "推荐"]
ZH_OBJECTS = [
    "PostgreSQL 16",
    "周末爬山",
    "Docker 容器",
    "凌晨三点的定时任务",
    "美式咖啡",
    "OpenWrt 固件",
    "Rust 编译缓存",
    "英文提交信息",
    "Proxmox 虚拟机",
    "家庭相册",
    "Kindle 电子书",
    "监控告警",
]
EN_SUBJECTS = [
    "The user",
    "The build server",
    "Alice",
    "The staging cluster",
    "Our team",
    "The home lab",
    "The CI pipeline",
    "Bob's laptop",
    "The blog",
    "The agent",
]
EN_VERBS = [
    "prefers",
    "runs",
    "stopped using",
    "backs up",
    "depends on",
    "was migrated to",
    "often forgets",
    "needs",
    "reported a bug in",
    "moved away from",
]
EN_OBJECTS = [
    "tabs in Go code",
    "a nightly pg_dump",
    "Grafana dashboards",
    "SSH on port 2222",
    "Debian 12",
    "a Raspberry Pi 5",
    "weekly status reports",
    "Ollama on the RTX 4090",
    "spaced repetition",
    "the Tokyo VPS",
    "hiking on Sundays",
    "Python 3.11",
]
PLACES = ["上海", "东京", "Berlin", "深圳", "Lisbon", "杭州", "Seattle", "成都"]


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    """`n` distinct, varied texts (about half Chinese, half English), the same for the same seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if rng.random() < 0.5:
            text = (
                f"{rng.choice(ZH_SUBJECTS)}{rng.choice(ZH_VERBS)}{rng.choice(ZH_OBJECTS)}，"
                f"地点在{rng.choice(PLACES)}，第 {i} 条记录，优先级 {rng.randint(1, 5)}。"
            )
        else:
            text = (
                f"{rng.choice(EN_SUBJECTS)} {rng.choice(EN_VERBS)} {rng.choice(EN_OBJECTS)} "
                f"in {rng.choice(PLACES)} (note {i}, priority {rng.randint(1, 5)})."
            )
        out.append(text)
    return out


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def embed_rate(embedder: USEEmbedder, texts: list[str]) -> float:
    t0 = time.perf_counter()
    for start in range(0, len(texts), 256):
        embedder.embed(texts[start : start + 256])
    return len(texts) / (time.perf_counter() - t0)


def import_rate(embedder: USEEmbedder, texts: list[str], tmp: Path, run: int) -> float:
    path = tmp / f"import-{run}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for n, text in enumerate(texts):
            fh.write(json.dumps({"id": f"m{n}", "text": text, "meta": {"category": "other"}}, ensure_ascii=False))
            fh.write("\n")
    l2 = SemanticMemory(tmp / f"import-{run}", embedder)
    t0 = time.perf_counter()
    count = l2.import_jsonl(path)
    elapsed = time.perf_counter() - t0
    assert count == len(texts) == l2.count() == l2.lexical.count()
    return len(texts) / elapsed


def latency(
    embedder: USEEmbedder, size: int, pool: list[str], pool_vectors: np.ndarray, queries: list[str], tmp: Path
) -> dict:
    l2 = SemanticMemory(tmp / f"size-{size}", embedder)
    t0 = time.perf_counter()
    step = 5000
    for start in range(0, size, step):
        rows = range(start, min(size, start + step))
        memories = [Memory(id=f"m{n}", text=f"{pool[n % len(pool)]} #{n}") for n in rows]
        l2.upsert(memories, pool_vectors[[n % len(pool) for n in rows]])
    fill = time.perf_counter() - t0
    recaller = Recaller(embedder, l2=l2)
    recaller.recall(queries[0], k=5)  # warm caches
    times = []
    for q in queries:
        t = time.perf_counter()
        recaller.recall(q, k=5)
        times.append((time.perf_counter() - t) * 1000)
    return {
        "size": size,
        "fill_seconds": round(fill, 1),
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(float(np.percentile(times, 95)), 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--import-n", type=int, default=2000, help="memories per import-throughput run")
    parser.add_argument("--runs", type=int, default=3, help="runs of each throughput measure (median kept)")
    parser.add_argument("--pool", type=int, default=5000, help="distinct embedded texts reused for big sizes")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    report: dict = {}

    embedder = USEEmbedder()
    t0 = time.perf_counter()
    embedder.embed(["warm-up"])
    report["model_load_seconds"] = round(time.perf_counter() - t0, 2)

    texts = synthetic_texts(args.import_n, seed=1)
    with tempfile.TemporaryDirectory(prefix="memwiki-bench-store-") as tmp_name:
        tmp = Path(tmp_name)
        embed_runs, import_runs = [], []
        for run in range(args.runs):  # interleaved, so machine load hits both alike
            embed_runs.append(embed_rate(embedder, texts))
            import_runs.append(import_rate(embedder, texts, tmp, run))
        e, i = statistics.median(embed_runs), statistics.median(import_runs)
        report["import"] = {
            "memories": args.import_n,
            "embedder_per_s": round(e, 1),
            "import_per_s": round(i, 1),
            "ratio": round(i / e, 3),
            "runs": args.runs,
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }

        pool = synthetic_texts(args.pool, seed=2)
        t0 = time.perf_counter()
        pool_vectors = np.concatenate([embedder.embed(pool[s : s + 256]) for s in range(0, len(pool), 256)])
        report["pool"] = {"texts": len(pool), "embed_seconds": round(time.perf_counter() - t0, 1)}
        queries = synthetic_texts(args.queries, seed=3)
        report["latency"] = [latency(embedder, size, pool, pool_vectors, queries, tmp) for size in sizes]
    report["peak_rss_mb"] = round(peak_rss_mb(), 1)

    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    imp = report["import"]
    print(f"model load (excluded from all timings): {report['model_load_seconds']} s")
    print(
        f"import of {imp['memories']} memories, median of {imp['runs']} runs: {imp['import_per_s']}/s; "
        f"embedder alone on the same texts: {imp['embedder_per_s']}/s; ratio {imp['ratio']:.0%}"
    )
    print(
        f"latency stores filled with vectors of {report['pool']['texts']} distinct embedded texts, reused "
        f"cyclically (texts made unique); recall = query embedding + dense + lexical + fusion, k=5"
    )
    print(f"{'size':>8} {'fill s':>8} {'p50 ms':>8} {'p95 ms':>8} {'peak RSS MB':>12}")
    for row in report["latency"]:
        print(
            f"{row['size']:>8} {row['fill_seconds']:>8} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['peak_rss_mb']:>12}"
        )
    print(f"peak RSS of the whole run: {report['peak_rss_mb']} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
