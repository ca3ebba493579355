"""Benchmark: one `memwiki recall` process over a store of 10k wiki pages (issue 24: <= 2 s wall, every layer asked).

The store is the one `scripts/bench_build.py --generate-only` generates (`.cache/bench_build/<N>/gen/store`; at 10k:
5,000 wiki pages, 5,000 graph entities, 1,000 memories, 100 sessions), copied to a temporary folder so that the bench
never changes it. Reported, each the median of `--runs` processes:
- `memwiki recall --all-layers QUERY` and `memwiki recall QUERY`: wall time and peak RSS (wait4's ru_maxrss);
- the files layer alone (`Recaller._layer("files", ...)`, timed in a process of its own: what each recall pays for it);
for this checkout and, with `--before DIR`, the code before the change (a checkout of it, e.g.
`git worktree add --detach /tmp/recall-before HEAD`, run with PYTHONPATH=DIR), their runs interleaved. For this
checkout also: the first process (the kept files layer made from nothing, memwiki.recall.files_layer), one right after a
page changed (its stat not trusted yet) and one after the change settled. The load average is printed before and
after.

    python scripts/bench_recall_process.py --runs 5 --before /tmp/recall-before
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUERY = "how do I rotate the backup keys"
SETTLE = 2.2  # seconds after a change before its stat is trusted (memwiki.recall.files_layer.RACY_NS, and a margin)
FILES_LAYER = """
import sys, time
try:  # (a baseline before the folders first: the editable install would lend it this checkout's modules)
    from memwiki.store import Store
except ImportError:
    from memwiki.store.store import Store
store = Store.open(sys.argv[1])
recaller = store.recaller
qv = recaller.query_vector(sys.argv[2])
start = time.perf_counter()
recaller._layer("files", sys.argv[2], qv, 5)
print(time.perf_counter() - start)
"""


def run(code: Path | None, argv: list[str]) -> tuple[float, float, str]:
    """One process of `python argv` on `code` (None: this checkout): wall seconds, peak RSS in MB, its stdout. It
    runs in the system's temporary folder: `python -m` and `-c` put the working folder first on the import path."""
    env = {**os.environ, "PYTHONPATH": str(code or ROOT)}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        argv = [sys.executable, *argv]
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} on {code or ROOT} exited with {proc.returncode}")
    return wall, usage.ru_maxrss / 1024, text


def recall(code: Path | None, store: Path, *flags: str) -> tuple[float, float]:
    cli = "memwiki.agents.cli" if ((code or ROOT) / "memwiki" / "agents").is_dir() else "memwiki.cli"  # (a baseline)
    wall, rss, _ = run(code, ["-m", cli, "--store", str(store), "recall", *flags, QUERY])
    return wall, rss


def files_layer(code: Path | None, store: Path) -> tuple[float, float]:
    _, rss, out = run(code, ["-c", FILES_LAYER, str(store), QUERY])
    return float(out.strip().splitlines()[-1]), rss


def median_of(samples: list[tuple[float, float]]) -> str:
    walls = [s[0] for s in samples]
    spread = f"min {min(walls):.3f}, max {max(walls):.3f}"
    return f"{statistics.median(walls):6.3f} s ({spread}), peak {max(s[1] for s in samples):4.0f} MB"


def edit(store: Path) -> None:
    page = store / "wiki" / "concept-10.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nRotate the backup keys every quarter.\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10000, help="the generated store of this size (default 10000)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", type=Path, help="a checkout of the code before the change, for the baseline")
    args = ap.parse_args()
    source = ROOT / ".cache" / "bench_build" / str(args.size) / "gen" / "store"
    if not (source / "store.json").is_file():
        raise SystemExit(f"{source}: no store; run scripts/bench_build.py --sizes {args.size} --generate-only")
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        store = Path(tmp) / "store"
        shutil.copytree(source, store, symlinks=True)
        for stale in (store / "vectors").glob("files_layer.sqlite3*"):
            stale.unlink()
        time.sleep(SETTLE)
        codes = {"before": args.before, "after": None} if args.before else {"after": None}
        first = recall(None, store, "--all-layers")
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            for name, code in codes.items():
                samples.setdefault((name, "recall --all-layers"), []).append(recall(code, store, "--all-layers"))
                samples.setdefault((name, "recall"), []).append(recall(code, store))
                samples.setdefault((name, "files layer alone"), []).append(files_layer(code, store))
        edit(store)
        changed = recall(None, store, "--all-layers")
        time.sleep(SETTLE)
        settled = recall(None, store, "--all-layers")
        again = recall(None, store, "--all-layers")
    print(f"store: {source} ({args.size:,} pages), query {QUERY!r}, {args.runs} runs each")
    for (name, what), got in samples.items():
        print(f"  {name:6} {what:20} {median_of(got)}")
    print(f"  after  first process (kept layer made)   {first[0]:6.3f} s, peak {first[1]:4.0f} MB")
    print(f"  after  right after a page changed       {changed[0]:6.3f} s, peak {changed[1]:4.0f} MB")
    print(f"  after  the change settled (made again)  {settled[0]:6.3f} s; the next process {again[0]:.3f} s")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
