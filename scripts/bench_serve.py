"""Benchmark: how long after an agent's write `mkdocs serve` shows the new memory, on scripts/bench_build.py's site.

A real `mkdocs serve` (MkDocs' own watcher and rebuild, the memwiki plugin's caches warm from a first build) runs on
a loopback port over bench_build's generated store of --size concepts. Each run writes one L2 memory through the
store API, as an agent's memory provider does (`Store.semantic.upsert`: its text carries a fresh token), and polls
the served search data (every 0.1 s) until the token is in it: the time from the write's return to that response is
the figure (MkDocs' watcher, the rebuild, the server). Prints the median of --runs, each run, the rebuilds' own
"Documentation built" times from the log, and the load average; the baseline beside it is a plain `mkdocs build` of
the same project with nothing changed (what any rebuild pays before memwiki's own work).

    python scripts/bench_serve.py --size 10000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from bench_build import WORK, _load, generate_store, write_memwiki_project  # noqa: E402

from memwiki.site.builders.search import assembled  # noqa: E402
from memwiki.source import Memory  # noqa: E402
from memwiki.store.store import Store  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def search_text(root: str) -> str:
    """The served site's search data as the page assembles it (its parts put back), as text ("" while a file of it
    cannot be fetched or read: a rebuild is writing it)."""
    try:
        return json.dumps(assembled(lambda rel: get(root + rel)), ensure_ascii=False)
    except (OSError, ValueError, KeyError):
        return ""


def write_memory(store: Path, token: str) -> None:
    """One memory written as an agent writes it: through the store, embedded where it is written."""
    with Store.open(store) as s:
        s.semantic.upsert([Memory(id=f"serve-{token}", text=f"The okapi scanner {token} moved to room 43.")])


def serve_once(config: Path, store: Path, runs: int, written_ids: list[str]) -> tuple[list[float], list[float]]:
    """(seconds from each write to the served data holding it, the rebuilds' own times from MkDocs' log); the ids
    of the memories written are added to `written_ids`."""
    port = free_port()
    log = config.parent / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "-f", str(config), "-a", f"127.0.0.1:{port}"],
            cwd=config.parent,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    shown: list[float] = []
    try:
        deadline = time.monotonic() + 900
        while "Serving on" not in log.read_text():
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(log.read_text()[-3000:])
            time.sleep(0.5)
        root = f"http://127.0.0.1:{port}/"
        for r in range(runs):
            time.sleep(3)  # (the watcher settles: a write lands on an idle server)
            token = f"t{os.getpid()}x{r}x{int(time.time())}"
            write_memory(store, token)
            written_ids.append(f"serve-{token}")
            written = time.monotonic()
            while token not in search_text(root):
                if time.monotonic() - written > 120:
                    raise SystemExit(f"not shown after 120 s\n{log.read_text()[-3000:]}")
                time.sleep(0.1)
            shown.append(time.monotonic() - written)
            print(f"run {r + 1}: shown {shown[-1]:.2f} s after the write", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=60)
    built = [float(x) for x in re.findall(r"Documentation built in ([\d.]+) seconds", log.read_text())]
    return shown, built[1:]  # (the first is the serve's own first build)


def plain_rebuild(config: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)], check=True, cwd=config.parent)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000, help="bench_build's concepts")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    base = WORK / str(args.size)
    store = generate_store(args.size, base / "gen")
    config = write_memwiki_project(base / "memwiki", store)
    before = _load()
    unchanged = [plain_rebuild(config) for _ in range(2)]
    written: list[str] = []
    try:
        shown, built = serve_once(config, store, args.runs, written)
    finally:
        with Store.open(store) as s:  # the bench's memories go again: the store is bench_build's
            s.semantic.delete(written)
    print(f"size {args.size}: new memory shown by `mkdocs serve` {statistics.median(shown):.2f} s after the write")
    print(f"  (median of {len(shown)}: {', '.join(f'{x:.2f}' for x in shown)})")
    print(f"  serve's rebuilds (MkDocs' own figure): {', '.join(f'{x:.2f}' for x in built)} s")
    print(f"  baseline: `mkdocs build` with nothing changed {statistics.median(unchanged):.2f} s")
    print(f"  load average (1, 5, 15 min) and speed probe: {before} before, {_load()} after; {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
