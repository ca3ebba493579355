"""L2 at scale on a Chroma server (`chroma run` on loopback), beside the embedded store at 100k.

For each size, each run gets a fresh `chroma run` over an empty folder and a fresh client process (so that both
peaks are the run's own), which:

- imports N memories with `SemanticMemory.import_jsonl` (the whole real path: validation, batches, the writer
  thread, Chroma and lexical writes) from a JSONL file: the import rate is memories per second of that call;
- recalls Q queries with `Recaller.recall(query, k=5)` over L2 (dense search on the server + lexical + fusion +
  the records of the hits found by words alone): p50 / p95, and the dense search alone (`search_ids`, depth 50, which
  brings its hits' records with it).

Vectors are reused across rows: a pool of distinct texts is embedded once with the real USE model, and memory n
has the text `<pool text n % P> #n` (unique) and the pool text's vector (embedding a million texts on this
machine would take hours); the queries are embedded once too, so timings leave the model out: the model's own
time for a query is measured apart (add it for a recall from text). Peak memory: the client's ru_maxrss, and
the server's VmHWM from /proc/<pid>/status (read before it is stopped).

Sizes whose estimated memory or disk does not fit what this machine has free are skipped, with the numbers.

`--keep DIR` keeps each size's server folder and store in DIR, and a later run with the same DIR, pool and size
reuses them: it measures recall only (the import rate printed is the first run's, marked "kept"). A 1M import
takes about 35 minutes here, so a change to the recall path is measured against the same data, before and after,
in minutes (`--sizes 1000000 --embedded 0 --keep DIR`).

Usage: python scripts/bench_scale.py [--sizes 10000,100000,1000000] [--runs 3] [--big-runs 1] [--queries 200]
                                     [--embedded 100000] [--pool 5000] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
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

from memwiki.text.embedders import USE_NAME, USEEmbedder  # noqa: E402

CHROMA = Path(sys.executable).with_name("chroma")
DIM = 512
BIG = 1_000_000  # sizes from here on run `--big-runs` times
# What a memory costs, with room to spare: at 100k the server peaked at 424 MB and its folder took 299 MB (HNSW +
# Chroma's SQLite), the client (the whole import file parsed at once) at 191 MB.
SERVER_BYTES, DISK_BYTES, CLIENT_BYTES = 5_000, 4_000, 3_000


# ── the client worker (a process per run) ──────────────────────────────────────────────────────────────


class ReusedVectors:
    """The USE embedder's name and dimension, its vectors looked up: pool texts (a memory's `<pool text> #n`) and
    queries were embedded once with the real model."""

    name = USE_NAME
    dim = DIM

    def __init__(self, texts: list[str], vectors: np.ndarray) -> None:
        self.rows = {t: n for n, t in enumerate(texts)}
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return self.vectors[[self.rows[t if t in self.rows else t.rsplit(" #", 1)[0]] for t in texts]]

    def identity(self) -> str:
        return f"{self.name}/{self.dim}"

    def warm(self) -> None:
        """Nothing to load."""


def worker(args: argparse.Namespace) -> int:
    from memwiki.layers.semantic.memory import SemanticMemory
    from memwiki.recall.cascade import Recaller

    tmp = Path(args.tmp)
    pool = json.loads((tmp / "pool.json").read_text(encoding="utf-8"))
    queries = json.loads((tmp / "queries.json").read_text(encoding="utf-8"))
    vectors = np.concatenate([np.load(tmp / "pool.npy"), np.load(tmp / "queries.npy")])
    embedder = ReusedVectors(pool + queries, vectors)
    work = Path(args.work)
    done = work / "imported.json"  # a kept store whose import finished (--keep)
    if done.is_file():
        imported = json.loads(done.read_text(encoding="utf-8")) | {"import_kept": True}
        l2 = SemanticMemory(work / "l2", embedder, url=args.url or "", create=False)
    else:
        work.mkdir(parents=True)
        path = work / "memories.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for n in range(args.size):
                line = {"id": f"m{n}", "text": f"{pool[n % len(pool)]} #{n}"}
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        l2 = SemanticMemory(work / "l2", embedder, url=args.url or "")
        t0 = time.perf_counter()
        count = l2.import_jsonl(path)
        elapsed = time.perf_counter() - t0
        assert count == args.size, (count, args.size)
        path.unlink()
        imported = {"import_per_s": args.size / elapsed, "import_s": elapsed}
        done.write_text(json.dumps(imported), encoding="utf-8")
    assert args.size == l2.count() == l2.lexical.count(), (args.size, l2.count(), l2.lexical.count())
    recaller = Recaller(embedder, l2=l2)
    for q in queries[:5]:
        recaller.recall(q, k=5)  # warm: the server's index is loaded, caches are filled
    times, dense = [], []
    qv = embedder.embed(queries)
    for q, v in zip(queries, qv, strict=True):
        t = time.perf_counter()
        hits = recaller.recall(q, k=5)
        times.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        l2.search_ids(v, 50)
        dense.append((time.perf_counter() - t) * 1000)
        assert hits, q
    l2.close()
    out = imported | {
        "p50_ms": statistics.median(times),
        "p95_ms": float(np.percentile(times, 95)),
        "dense_p50_ms": statistics.median(dense),
        "client_peak_mb": peak_rss_mb(),
    }
    print(json.dumps(out))
    return 0


# ── the server ─────────────────────────────────────────────────────────────────────────────────────────


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data: Path) -> tuple[subprocess.Popen[bytes], str]:
    import urllib.request

    port = free_port()
    log = open(data.with_name(data.name + ".log"), "ab")  # noqa: SIM115 - the server's, closed with it
    proc = subprocess.Popen(
        [str(CHROMA), "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        env=os.environ | {"RUST_LOG": "warn", "ANONYMIZED_TELEMETRY": "False"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    url = f"http://127.0.0.1:{port}"
    for _ in range(450):
        if proc.poll() is not None:
            raise RuntimeError(f"chroma run exited with {proc.returncode}")
        try:
            with opener.open(f"{url}/api/v2/heartbeat", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.2)
    stop_server(proc)
    raise RuntimeError("chroma run did not answer within 90 s")


def server_peak_mb(pid: int) -> float:
    """The server's peak resident memory (VmHWM), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


# ── one run ────────────────────────────────────────────────────────────────────────────────────────────


def one_run(kind: str, size: int, run: int, tmp: Path, keep: Path | None) -> dict:
    """One client process over a fresh server and store, or (`keep`) over the kept ones of this size."""
    name = f"{size}-{run}" if keep is None else f"{size}-pool{len(json.loads((tmp / 'pool.json').read_text()))}"
    where = keep or tmp
    where.mkdir(parents=True, exist_ok=True)
    work = where / f"{kind}-{name}"
    data = where / f"chroma-{name}" if kind == "server" else None  # the server's folder
    made = [work] if data is None else [work, data]
    if keep is None or not (work / "imported.json").is_file():  # nothing kept, or a kept import cut short
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)
    proc, url = None, ""
    if data is not None:
        proc, url = start_server(data)
    try:
        argv = [sys.executable, __file__, "--worker", kind, "--size", str(size), "--work", str(work), "--tmp", str(tmp)]
        done = subprocess.run(
            [*argv, "--url", url], capture_output=True, text=True, env=os.environ | {"ANONYMIZED_TELEMETRY": "False"}
        )
        if done.returncode:
            raise RuntimeError(f"{kind} {size} run {run} failed: {done.stderr[-3000:]}")
        out = json.loads(done.stdout.strip().splitlines()[-1])
        if proc is not None and data is not None:
            out["server_peak_mb"] = server_peak_mb(proc.pid)
            out["server_disk_mb"] = disk_mb(data)
        else:
            out["disk_mb"] = disk_mb(work / "l2")
        return out
    finally:
        if proc is not None:
            stop_server(proc)
        if keep is None:
            for folder in made:
                shutil.rmtree(folder, ignore_errors=True)


def summary(kind: str, size: int, runs: list[dict]) -> dict:
    kept = any(r.pop("import_kept", False) for r in runs)  # the import rate is that of the run that made the store
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if not k.endswith("peak_mb")}
    peaks = {k: max(r[k] for r in runs) for k in runs[0] if k.endswith("peak_mb")}
    row = {"kind": kind, "size": size, "runs": len(runs), **{k: round(v, 2) for k, v in (med | peaks).items()}}
    return row | {"import_kept": kept}


def fits(size: int, tmp: Path) -> tuple[bool, str]:
    """Whether a run of `size` fits the memory and disk free now, and the numbers that say so."""
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    available = int(meminfo["MemAvailable"].split()[0]) * 1024
    disk = shutil.disk_usage(tmp).free
    need_mem, need_disk = size * (SERVER_BYTES + CLIENT_BYTES), size * DISK_BYTES
    why = (
        f"needs ~{need_mem / 2**30:.1f} GB memory and ~{need_disk / 2**30:.1f} GB disk; "
        f"{available / 2**30:.1f} GB memory available, {disk / 2**30:.1f} GB disk free"
    )
    return need_mem < 0.8 * available and need_disk < 0.8 * disk, why


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--embedded", type=int, default=100_000, help="size of the embedded-store baseline")
    parser.add_argument("--runs", type=int, default=3, help="runs per size below 1M (medians are printed)")
    parser.add_argument("--big-runs", type=int, default=1, help="runs per size from 1M on")
    parser.add_argument("--pool", type=int, default=5000, help="distinct embedded texts, reused across rows")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--max-minutes", type=float, default=25, help="leave out a size whose import would take longer")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep each size's server folder and store here, and reuse them")
    for name in ("--worker", "--size", "--work", "--tmp", "--url"):  # a client run (see one_run)
        parser.add_argument(name, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.size = int(args.size)
        return worker(args)

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    report: dict = {"pool": args.pool, "queries": args.queries, "rows": [], "skipped": []}
    embedder = USEEmbedder()
    embedder.warm()
    with tempfile.TemporaryDirectory(prefix="memwiki-bench-scale-") as tmp_name:
        tmp = Path(tmp_name)
        pool, queries = synthetic_texts(args.pool, seed=2), synthetic_texts(args.queries, seed=3)
        t0 = time.perf_counter()
        np.save(tmp / "pool.npy", np.concatenate([embedder.embed(pool[s : s + 256]) for s in range(0, len(pool), 256)]))
        report["pool_embed_s"] = round(time.perf_counter() - t0, 1)
        query_times = []
        for q in queries:
            t = time.perf_counter()
            embedder.embed([q])
            query_times.append((time.perf_counter() - t) * 1000)
        np.save(
            tmp / "queries.npy",
            np.concatenate([embedder.embed(queries[s : s + 256]) for s in range(0, len(queries), 256)]),
        )
        report["query_embed_p50_ms"] = round(statistics.median(query_times), 2)
        (tmp / "pool.json").write_text(json.dumps(pool, ensure_ascii=False), encoding="utf-8")
        (tmp / "queries.json").write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")

        plan = [("server", size) for size in sizes]
        if args.embedded:
            plan.insert(
                next((i + 1 for i, (_, s) in enumerate(plan) if s == args.embedded), len(plan)),
                ("embedded", args.embedded),
            )
        seconds_per_memory = 0.0  # of the last server import: a size that would import past the run limit is left
        for kind, size in plan:
            ok, why = fits(size, tmp)
            if ok and kind == "server" and size * seconds_per_memory > args.max_minutes * 60:
                ok = False
                why = (
                    f"its import alone would take ~{size * seconds_per_memory / 60:.0f} min at the "
                    f"{1 / seconds_per_memory:,.0f}/s measured at the size before (limit {args.max_minutes} min a run)"
                )
            if not ok:
                report["skipped"].append({"kind": kind, "size": size, "why": why})
                print(f"skipped {kind} {size:,}: {why}", file=sys.stderr)
                continue
            runs = []
            for run in range(args.big_runs if size >= BIG else args.runs):
                t = time.perf_counter()
                runs.append(one_run(kind, size, run, tmp, args.keep))
                print(
                    f"{kind} {size:,} run {run + 1}: {json.dumps(runs[-1])} ({time.perf_counter() - t:.0f} s)",
                    file=sys.stderr,
                )
            report["rows"].append(summary(kind, size, runs) | {"fit": why})
            if kind == "server":
                seconds_per_memory = 1 / report["rows"][-1]["import_per_s"]

    base = next((r for r in report["rows"] if r["kind"] == "embedded"), None)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"vectors of {args.pool} distinct texts embedded once with USE ({report['pool_embed_s']} s) and reused across "
        f"rows (memory n: pool text n % {args.pool} + ' #n'); {args.queries} queries embedded once; timings leave the "
        f"model out (USE embeds one query in {report['query_embed_p50_ms']} ms p50 on this machine: add it for a "
        "recall from text). recall = Recaller.recall(k=5) over L2: dense on Chroma beside lexical, fusion, and the "
        "records of the hits found by words alone"
    )
    head = f"{'store':>9} {'size':>9} {'runs':>4} {'import/s':>9} {'p50 ms':>7} {'p95 ms':>7} {'dense p50':>9}"
    print(head + f" {'client MB':>9} {'server MB':>9} {'disk MB':>8}   vs embedded 100k (p50, import/s)")
    for r in report["rows"]:
        vs = ""
        if base is not None and r is not base:
            vs = f"   p50 x{r['p50_ms'] / base['p50_ms']:.2f}, import x{r['import_per_s'] / base['import_per_s']:.2f}"
        disk = r.get("server_disk_mb", r.get("disk_mb", 0))
        kept = " (kept)" if r["import_kept"] else ""  # the store was made by an earlier run (--keep)
        print(
            f"{r['kind']:>9} {r['size']:>9,} {r['runs']:>4} {r['import_per_s']:>9,.0f} {r['p50_ms']:>7.2f} "
            f"{r['p95_ms']:>7.2f} {r['dense_p50_ms']:>9.2f} {r['client_peak_mb']:>9.0f} "
            f"{r.get('server_peak_mb', 0):>9.0f} {disk:>8.0f}{vs}{kept}"
        )
    for s in report["skipped"]:
        print(f"skipped {s['kind']} {s['size']:,}: {s['why']}")
    print("medians over runs (peaks: the largest); client and server peak RSS from ru_maxrss and /proc VmHWM")
    print(f"load average while it ran: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
