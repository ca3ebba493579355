"""Benchmark: the rebuild after one memory changed, this checkout beside a baseline checkout, interleaved.

The rebuild is a few seconds on a shared machine whose speed drifts by more than the changes measured: the two
checkouts are built one after the other after each change (the same changed memory, each with its own project,
page cache and site), so drift hits both alike. Each checkout first builds its site cold; then, `--runs` times:
one memory of the store (`scripts/bench_build.py`'s generated store of `--size` concepts) is changed, and each
checkout rebuilds. Prints the median, the runs, the peak RSS and the CPU time of each, the ratio, and the load.

    git worktree add /tmp/before REV
    python scripts/bench_rebuild.py --baseline /tmp/before --runs 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_build import WORK, _load, change_one_memory, generate_store, run_build, write_memwiki_project  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000, help="concepts of the generated store")
    parser.add_argument("--runs", type=int, default=7, help="rebuilds per checkout")
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the code before the change")
    args = parser.parse_args(argv)
    store = generate_store(args.size, WORK / str(args.size) / "gen")
    checkouts = {"this": ROOT, "baseline": args.baseline.resolve()}
    projects = {name: write_memwiki_project(WORK / "rebuild" / name, store) for name in checkouts}
    load_before = _load()
    for name, code in checkouts.items():
        cold = run_build(projects[name], projects[name].parent / "site", code=code)
        print(f"{name} cold build: {cold.seconds:.1f}s", file=sys.stderr)
    builds: dict[str, list] = {name: [] for name in checkouts}
    for r in range(args.runs):
        change_one_memory(store, 100 + r)
        for name, code in checkouts.items() if r % 2 == 0 else reversed(checkouts.items()):
            builds[name].append(run_build(projects[name], projects[name].parent / "site", code=code))
            print(f"{name} rebuild {r + 1}: {builds[name][-1].seconds:.2f}s", file=sys.stderr)
    medians = {name: statistics.median(b.seconds for b in runs) for name, runs in builds.items()}
    print(f"{'checkout':<10} {'median_s':>9} {'cpu_s':>6} {'peak_MB':>8}  runs")
    for name, runs in builds.items():
        cpu = statistics.median(b.cpu_s for b in runs)
        peak = max(b.peak_mb for b in runs)
        seconds = " ".join(f"{b.seconds:.2f}" for b in runs)
        print(f"{name:<10} {medians[name]:>9.2f} {cpu:>6.1f} {peak:>8.0f}  {seconds}")
    print(f"this / baseline: {medians['this'] / medians['baseline']:.2f}")
    print(f"load average (1, 5, 15 min) and speed probe: {load_before} before, {_load()} after; {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
