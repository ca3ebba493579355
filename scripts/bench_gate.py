"""Benchmark: the privacy gate and the site's final scan, this checkout beside a baseline checkout.

The gate is timed as a build uses it: every layer of a store read through `PrivacyFilter` (persona, hot memory,
sinks, memories, graph, sessions with their messages, wiki pages), each string cleaned once, with a worker process
per core but one beside it when this checkout has them (memwiki.site.gate.workers). The scan is
`SiteScan` over a built site (no scan cache: every file read but the search's vector slices, which a build names as
numbers). Each side runs in its own process, importing
memwiki from its own checkout, `--runs` times alternately; the median, the process's peak RSS and the ratio
to the baseline are printed with the load average.

    git worktree add /tmp/memwiki-base HEAD          # the code before the change
    python scripts/bench_gate.py --store .cache/bench_build/10000/store --site .cache/bench_build/10000/site \\
        --baseline /tmp/memwiki-base --runs 3

`--store` and `--site` are what `scripts/bench_build.py --sizes 10000` generates and builds. The scan of this
checkout reads the files memwiki generated with the independent net (as a build does: every file but the pages of
the site's own `docs/`), the baseline's with every class.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
store, site, what = sys.argv[1], sys.argv[2], sys.argv[3]
out = {}
if what == "gate":
    try:  # (a baseline before the folders first: the editable install would lend it this checkout's new modules)
        from memwiki.store import Store
        from memwiki.site.privacy import PrivacyFilter, PrivacyRules
    except ImportError:
        from memwiki.store.store import Store
        from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    load_key = getattr(sys.modules[PrivacyFilter.__module__], "load_key", None)  # (the gate's own module)
    key = load_key() if load_key is not None else None
    with Store.open(store) as opened:
        reader = opened.reader()
        t0 = time.perf_counter()
        import inspect, os
        if "workers" in inspect.signature(PrivacyFilter).parameters:  # a large layer's strings judged on every core
            gate = PrivacyFilter(reader, PrivacyRules(), key=key, workers=len(os.sched_getaffinity(0)) - 1)
        else:  # (the baseline: the editable install's finder would lend it this checkout's modules)
            gate = PrivacyFilter(reader, PrivacyRules(), key=key)
        n = 0
        gate.persona()
        n += sum(len(h.entries) for h in gate.hot_files())
        n += len(gate.sinks())
        n += sum(1 for _ in gate.memories())
        n += len(gate.entities()) + len(gate.triples())
        for s in gate.sessions():
            n += len(gate.messages(s.id))
        n += len(gate.wiki_pages())
        if hasattr(gate, "stop_workers"):
            gate.stop_workers()
        out["seconds"] = time.perf_counter() - t0
        out["records"] = n
else:
    try:  # (a baseline's names first, as above; the oldest kept the detectors in one module)
        from memwiki.site.site_scan import SiteScan
        try:
            from memwiki.site.detect import Detectors
        except ImportError:
            from memwiki.site.detectors import Detectors
    except ImportError:
        from memwiki.site.gate.detect import Detectors
        from memwiki.site.gate.scan import SiteScan
    import material
    try:
        from memwiki.site import site_build
    except ImportError:
        from memwiki.site import pipeline as site_build
    exports = (Path(site).parent / "cache" / "use").glob("*/")  # the browser embedder's model
    vis = [site_build.PYVIS_VIS] if hasattr(site_build, "PYVIS_VIS") else []  # the graph's vis-network files
    static = [Path(material.__file__).parent / "templates", site_build.ASSETS, *vis, *exports]  # (a build skips copies
    # of its inputs)
    t0 = time.perf_counter()
    try:  # this checkout: the independent net over what memwiki generated (every page but the docs' own)
        docs = {p.stem for p in Path(site).parent.glob("docs/**/*.md")}
        generated = {
            p.relative_to(site).as_posix() for p in Path(site).rglob("*") if p.is_file() and p.stem not in docs
        }
        net = Detectors(library=False, net=True)
        numbers = {g for g in generated if g.startswith("assets/memwiki/search/vectors/")}  # (as a build names them)
        scan = SiteScan(Detectors(library=False), static, generated=generated, net=net, numbers=numbers)
    except TypeError:  # the baseline: every class over every file
        scan = SiteScan(Detectors(library=False), static)
    leaks = scan.scan(Path(site))
    out["seconds"] = time.perf_counter() - t0
    out["findings"] = len(leaks)
    out["files"] = scan.read_files
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run(checkout: Path, store: Path, site: Path, what: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(store), str(site), what],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{checkout} {what}: failed\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the code before the change")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--what", default="gate,scan", help="gate, scan or both (default: %(default)s)")
    args = parser.parse_args()
    sides = {"baseline": args.baseline.resolve(), "this": ROOT}
    for what in args.what.split(","):
        results: dict[str, list[dict]] = {name: [] for name in sides}
        for _ in range(args.runs):
            for name, checkout in sides.items():
                results[name].append(run(checkout, args.store.resolve(), args.site.resolve(), what))
        load = os.getloadavg()
        medians = {name: statistics.median(r["seconds"] for r in rs) for name, rs in results.items()}
        for name, rs in results.items():
            extra = {k: v for k, v in rs[-1].items() if k not in ("seconds", "peak_mb")}
            print(
                f"{what:4} {name:8} median {medians[name]:7.2f} s over {len(rs)} runs, "
                f"peak {max(r['peak_mb'] for r in rs):6.0f} MB, {extra}"
            )
        print(
            f"{what:4} ratio this/baseline {medians['this'] / medians['baseline']:.2f}   "
            f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})\n"
        )


if __name__ == "__main__":
    main()
