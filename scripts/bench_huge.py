"""Benchmarks for huge and repeated input (issue 11): one 5 MB memory's import, and the build of a store in which an
agent logged the same thing 745 times.

- `import`: `memwiki import` of one memory of --size-mb MB (English words) into a fresh store, in a child process:
  wall time and the child's peak RSS (wait4's ru_maxrss), median of --runs. Beside it, the baseline: the same
  text imported as ordinary memories of about 1,000 bytes each (what the embedder has to read either way), and
  the ratios huge / baseline.
- `neardup`: a cold `mkdocs build` (the plugin's caches set aside) of the demo store plus 745 near-identical
  memories, beside the same build of the plain demo store: median wall time, peak RSS, pages, the size of
  audit.html and the near-duplicate clusters the audit found.

`--code DIR` runs the children on another checkout's code (e.g. `git archive HEAD | tar -x -C DIR`), for a
before / after figure on the same data.

    python scripts/bench_huge.py import --size-mb 5 --runs 3
    python scripts/bench_huge.py neardup --runs 1

Generated files are kept in `.cache/bench_huge/`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_build import clear_caches, set_aside, site_stats, write_memwiki_project  # noqa: E402

from memwiki.layers.semantic.passages import split  # noqa: E402
from memwiki.store.demo import build_demo_store  # noqa: E402

WORK = ROOT / ".cache" / "bench_huge"
WORDS = (
    "the agent logged a retry of the deploy job because the network timed out while fetching packages from "
    "the mirror again and the backup of the home lab finished late so the user asked for a summary of what "
    "changed in the build server configuration since last week"
).split()
NEAR_DUPLICATES = 745


def run_child(cmd: list[str], cwd: Path, code: Path) -> tuple[float, float, float, str]:
    """Run `cmd` with `code` first on PYTHONPATH: (wall seconds, CPU seconds, the child's peak RSS in MB, its
    output). CPU time is the work done, whatever else the shared machine was doing."""
    env = dict(os.environ, PYTHONPATH=str(code) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    log = WORK / "child.log"
    with log.open("w") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
    text = log.read_text(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{text[-3000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def _memwiki(code: Path) -> list[str]:
    cli = "memwiki.agents.cli" if (code / "memwiki" / "agents").is_dir() else "memwiki.cli"  # (a baseline's own)
    return [sys.executable, "-c", f"from {cli} import main; main()"]


# ── one huge memory ──────────────────────────────────────────────────────────────────────────────────


def huge_files(size_mb: float) -> tuple[Path, Path]:
    """(one memory of `size_mb` MB, the same text as ordinary ~1,000-byte memories), made once per size."""
    rng = random.Random(11)
    n = int(size_mb * 1e6)
    huge, ordinary = WORK / f"huge-{size_mb:g}MB.jsonl", WORK / f"ordinary-{size_mb:g}MB.jsonl"
    if not (huge.is_file() and ordinary.is_file()):
        words = []
        size = 0
        while size < n:
            words.append(rng.choice(WORDS) + ("." if rng.random() < 0.07 else ""))
            size += len(words[-1]) + 1
        text = " ".join(words)[:n]
        huge.write_text(json.dumps({"id": "huge", "text": text, "meta": {"category": "technical"}}) + "\n")
        with ordinary.open("w") as out:
            for s in split(text, 1000):
                out.write(json.dumps({"id": f"m-{s.index}", "text": text[s.start : s.end]}) + "\n")
    return huge, ordinary


def bench_import(size_mb: float, runs: int, code: Path) -> None:
    huge, ordinary = huge_files(size_mb)
    rows = {}
    for label, path in (("one huge memory", huge), ("ordinary memories (baseline)", ordinary)):
        times, cpus, peaks = [], [], []
        for _ in range(runs):
            store = WORK / "store-import"
            shutil.rmtree(store, ignore_errors=True)
            run_child([*_memwiki(code), "--store", str(store), "init"], WORK, code)
            seconds, cpu, peak, out = run_child(
                [*_memwiki(code), "--store", str(store), "import", str(path), "--layer", "L2"], WORK, code
            )
            times.append(seconds)
            cpus.append(cpu)
            peaks.append(peak)
            print(f"  {label}: {seconds:.1f} s ({cpu:.1f} s CPU), peak {peak:,.0f} MB", flush=True)
        rows[label] = (statistics.median(times), statistics.median(cpus), statistics.median(peaks))
        lines = sum(1 for _ in path.open())
        print(f"{label}: {path.stat().st_size / 1e6:.1f} MB in {lines:,} line(s)", flush=True)
    (t_huge, c_huge, m_huge), (t_base, c_base, m_base) = rows.values()
    print(f"\nimport of {size_mb:g} MB, median of {runs} run(s), code {code}")
    for label, (t, c, m) in rows.items():
        print(f"  {label:30s} {t:7.1f} s  {c:7.1f} s CPU  peak RSS {m:7,.0f} MB")
    print(
        f"  ratio huge / baseline: time {t_huge / t_base:.2f}x, CPU {c_huge / c_base:.2f}x, "
        f"peak memory {m_huge / m_base:.2f}x"
    )


# ── many near-identical memories ─────────────────────────────────────────────────────────────────────


def near_duplicate(i: int, rng: random.Random) -> dict[str, object]:
    """What an agent logging in a loop writes: the same sentence, a time and a count apart."""
    text = (
        f"Checked the deploy queue again at 2026-03-{1 + i % 28:02d} {i % 24:02d}:{(7 * i) % 60:02d}: "
        f"{rng.randint(2, 4)} jobs still waiting on the build runner, nothing new to report."
    )
    return {"id": f"loop-{i:04d}", "text": text, "meta": {"category": "project"}}


def neardup_store() -> Path:
    """The demo store plus NEAR_DUPLICATES near-identical memories (built by this checkout's code)."""
    src = WORK / "demo-neardup"
    if not src.is_dir():
        shutil.copytree(ROOT / "demo", src)
        rng = random.Random(5)
        with (src / "memories.jsonl").open("a") as out:
            for i in range(NEAR_DUPLICATES):
                out.write(json.dumps(near_duplicate(i, rng)) + "\n")
    return build_demo_store(src, WORK / "store-neardup")


def _audit_figures(site: Path) -> tuple[float, str]:
    """audit.html's size (KB) and what its summary says it found of near-duplicates."""
    audit = site / "audit.html"
    html = audit.read_text(errors="replace")
    found = re.search(r"<td>Near-duplicate memories</td>\s*<td>([\d,]+)</td>", html)
    return audit.stat().st_size / 1024, found.group(1) if found else "?"


def bench_neardup(runs: int, code: Path) -> None:
    stores = {
        "demo": build_demo_store(ROOT / "demo", WORK / "store-demo"),
        f"demo + {NEAR_DUPLICATES} near-duplicates": neardup_store(),
    }
    trash = WORK / "trash"
    print(f"cold mkdocs build, median of {runs} run(s), code {code}")
    for label, store in stores.items():
        project = WORK / f"project-{store.name}"
        config = write_memwiki_project(project, store)
        times, cpus, peaks = [], [], []
        for _ in range(runs):
            clear_caches(project / "cache", trash)
            set_aside(project / "site", trash)
            seconds, cpu, peak, _ = run_child(
                [sys.executable, "-m", "mkdocs", "build", "-f", str(config), "-d", str(project / "site")], project, code
            )
            times.append(seconds)
            cpus.append(cpu)
            peaks.append(peak)
        stats = site_stats(project / "site")
        audit_kb, found = _audit_figures(project / "site")
        print(
            f"  {label:32s} {statistics.median(times):7.1f} s ({statistics.median(cpus):.1f} s CPU)  "
            f"peak RSS {statistics.median(peaks):6,.0f} MB  "
            f"{stats['pages']:,.0f} pages  audit.html {audit_kb:,.0f} KB  near-duplicates found: {found}"
        )
    shutil.rmtree(trash, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("import", "neardup", "all"))
    p.add_argument("--size-mb", type=float, default=5.0, help="size of the huge memory (default 5)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--code", type=Path, default=ROOT, help="the memwiki checkout the children run (default this)")
    args = p.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    code = args.code.resolve()
    if args.what in ("import", "all"):
        bench_import(args.size_mb, args.runs, code)
    if args.what in ("neardup", "all"):
        bench_neardup(args.runs, code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
