"""Benchmark: the share of a cold build that the privacy gate and the site's final scan take, this checkout beside
a baseline checkout.

The store `scripts/bench_build.py` generates (10k concepts by default) is built cold (no plugin cache, the browser
model export kept) with the public profile (every record through the gate, every output file through the final
scan) and with the private profile (neither), alternately, `--runs` times each, with this checkout's code and with
the baseline's (its memwiki first on PYTHONPATH). Printed per checkout and profile: the median wall time, CPU time
and peak RSS; then each checkout's share, (public - private) / public: what the gate and the scan take of a public
build; with the load average before and after.

    python scripts/bench_build.py --sizes 10000 --generate-only
    git worktree add /tmp/memwiki-base <rev>
    python scripts/bench_gate_share.py --baseline /tmp/memwiki-base --runs 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_build import (  # noqa: E402
    ROOT,
    WORK,
    Build,
    _load,
    clear_caches,
    generate_store,
    make_vectors,
    run_build,
    set_aside,
    write_memwiki_project,
)

PROFILES = ("public", "private")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="concepts of the generated store")
    parser.add_argument("--runs", type=int, default=3, help="cold builds per checkout and profile")
    parser.add_argument("--baseline", type=Path, help="a checkout of the code before the change")
    args = parser.parse_args(argv)
    store = generate_store(args.size, WORK / str(args.size) / "gen")
    make_vectors(store)
    checkouts = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    work, trash = WORK / "gate-share", WORK / "gate-share-trash"
    projects = {
        (name, profile): write_memwiki_project(work / f"{name}-{profile}", store, privacy=profile)
        for name in checkouts
        for profile in PROFILES
    }
    before = _load()
    builds: dict[tuple[str, str], list[Build]] = {key: [] for key in projects}
    try:
        for r in range(max(1, args.runs)):
            for (name, profile), project in projects.items():
                site = project.parent / "site"
                set_aside(site, trash)
                clear_caches(project.parent / "cache", trash)
                b = run_build(project, site, code=checkouts[name])
                builds[name, profile].append(b)
                print(f"{name} {profile} cold build {r + 1}: {b.seconds:.1f}s ({b.cpu_s:.0f}s CPU)", file=sys.stderr)
    finally:
        shutil.rmtree(trash, ignore_errors=True)
    print(f"{'checkout':<10} {'profile':<8} {'median_s':>9} {'cpu_s':>7} {'peak_MB':>8}  runs")
    median = {key: statistics.median(b.seconds for b in done) for key, done in builds.items()}
    for (name, profile), done in builds.items():
        cpu = statistics.median(b.cpu_s for b in done)
        peak = max(b.peak_mb for b in done)
        runs = " ".join(f"{b.seconds:.1f}" for b in done)
        print(f"{name:<10} {profile:<8} {median[name, profile]:>9.1f} {cpu:>7.0f} {peak:>8.0f}  {runs}")
    for name in checkouts:
        extra = median[name, "public"] - median[name, "private"]
        print(f"{name}: gate and scan {extra:.1f}s, {extra / median[name, 'public']:.0%} of the public build")
    print(f"load average (1, 5, 15 min) and speed probe: {before} before, {_load()} after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
