"""Many processes, one store: an MCP server, two CLI writers, an import and builds at once, then what survived.

For `--seconds`, on one store (the embedded default: Chroma in the store's own folder):
- an MCP server (`memwiki mcp`, driven by the `mcp` SDK's stdio client) writes a long memory every 100 ms
  (`memwiki_remember_long`) and recalls a row another process imported, counting recalls that miss it;
  (the hot entries are worded unlike the imported rows, so that a miss is a row the server cannot see);
- CLI writer 1 imports 20-row files (`memwiki import --layer L2`) in a loop; CLI writer 2 runs `memwiki remember`
  (hot memory; past 70% of the cap entries sink into L2) in a loop;
- one `memwiki import` of `--rows` rows at the start;
- `mkdocs build` of a site over the store in a loop;
- with `--kills`, a random CLI writer is SIGKILLed every few seconds (a killed command acknowledged nothing).

Then a fresh process opens the store and checks every acknowledged row: stored, its vector readable, and found
by its own vector among the 10 nearest. Prints (and `--json` writes) acknowledged rows, missing rows, unreadable
vectors, rows their own vector does not find, failed commands (non-zero exit, not killed), failed builds,
recall misses in the server, with the load average. Goal: 0 of each.

    python scripts/bench_processes.py --seconds 120
    python scripts/bench_processes.py --seconds 120 --kills
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = "harbour lantern meadow copper violet summit orchard glacier falcon cedar ember tundra".split()


@dataclass
class Tally:
    acknowledged: set[str] = field(default_factory=set)
    commands: int = 0
    failed_commands: list[str] = field(default_factory=list)
    killed: int = 0
    builds: int = 0
    failed_builds: list[str] = field(default_factory=list)
    server_writes: int = 0
    server_errors: list[str] = field(default_factory=list)
    recalls: int = 0
    recall_misses: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _cli(*argv: str) -> list[str]:
    return [sys.executable, "-m", "memwiki.agents.cli", *argv]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}


def _text(prefix: str, i: int) -> str:
    rng = random.Random(f"{prefix}-{i}")
    return f"{prefix} note {i}: the {rng.choice(WORDS)} box keeps the {rng.choice(WORDS)} backups on shelf {i}."


def _write_rows(path: Path, prefix: str, start: int, n: int) -> list[str]:
    ids = [f"{prefix}-{i}" for i in range(start, start + n)]
    path.write_text(
        "".join(json.dumps({"id": mid, "text": _text(prefix, start + k)}) + "\n" for k, mid in enumerate(ids)),
        encoding="utf-8",
    )
    return ids


class Runner:
    """Starts and watches the CLI processes; `kill_one` SIGKILLs a running one."""

    def __init__(self, store: Path, tally: Tally) -> None:
        self.store, self.tally = store, tally
        self.running: dict[int, subprocess.Popen[bytes]] = {}
        self.killed: set[int] = set()
        self.guard = threading.Lock()

    def run(self, argv: list[str], timeout: float = 600) -> bool:
        """Run a command; True when it exited 0. A failure (not a kill) is kept with its stderr's last line."""
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=ROOT)
        with self.guard:
            self.running[proc.pid] = proc
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        with self.guard:
            self.running.pop(proc.pid, None)
            killed = proc.pid in self.killed
        with self.tally.lock:
            self.tally.commands += 1
            if killed:
                self.tally.killed += 1
            elif proc.returncode != 0:
                last = (err.decode(errors="replace").strip().splitlines() or [""])[-1]
                self.tally.failed_commands.append(f"{' '.join(argv[3:5])}: exit {proc.returncode}: {last[:200]}")
        return proc.returncode == 0 and not killed

    def kill_one(self, rng: random.Random) -> None:
        with self.guard:
            writers = [p for p in self.running.values() if "mkdocs" not in " ".join(map(str, p.args))]
            if not writers:
                return
            victim = rng.choice(writers)
            self.killed.add(victim.pid)
        victim.send_signal(signal.SIGKILL)


def _import_loop(runner: Runner, work: Path, stop: threading.Event) -> None:
    i = 0
    while not stop.is_set():
        path = work / f"batch-{i}.jsonl"
        ids = _write_rows(path, "cli", i * 20, 20)
        if runner.run(_cli("--store", str(runner.store), "import", str(path), "--layer", "L2")):
            with runner.tally.lock:
                runner.tally.acknowledged.update(ids)
        i += 1


def _remember_loop(runner: Runner, stop: threading.Event) -> None:
    i = 0
    while not stop.is_set():
        entry = f"[env] the office printer on floor {i} takes toner cartridge model T{i} since the spring"
        runner.run(_cli("--store", str(runner.store), "remember", entry, "--target", "memory"))
        i += 1


def _build_loop(runner: Runner, config: Path, stop: threading.Event) -> None:
    while not stop.is_set():
        proc = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)],
            capture_output=True,
            env=_env(),
            cwd=config.parent,
        )
        with runner.tally.lock:
            runner.tally.builds += 1
            if proc.returncode != 0:
                last = (proc.stderr.decode(errors="replace").strip().splitlines() or [""])[-1]
                runner.tally.failed_builds.append(f"exit {proc.returncode}: {last[:200]}")


async def _server(store: Path, tally: Tally, stop: threading.Event, known: list[str]) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=_cli("--store", str(store), "mcp")[1:], env=_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        i = 0
        while not stop.is_set():
            mid = f"mcp-{i}"
            result = await session.call_tool("memwiki_remember_long", {"text": _text("mcp", i), "id": mid})
            with tally.lock:
                tally.server_writes += 1
                if result.is_error:
                    tally.server_errors.append(" ".join(getattr(c, "text", "") for c in result.content)[:200])
                else:
                    tally.acknowledged.add(mid)
            if i % 5 == 0 and known:
                target = random.Random(i).choice(known)
                n = int(target.rsplit("-", 1)[1])
                found = await session.call_tool("memwiki_recall", {"query": _text("start", n), "k": 5})
                ids = {h.get("id") for h in (found.structured_content or {}).get("hits", [])}
                with tally.lock:
                    tally.recalls += 1
                    if target not in ids:
                        tally.recall_misses.append(target)
            i += 1
            await asyncio.sleep(0.1)


CHECK = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from memwiki.store.store import Store
    ids = json.load(open(sys.argv[2]))
    out = {"missing": [], "unreadable": [], "not_found_by_own_vector": []}
    with Store.open(sys.argv[1]) as store:
        sem = store.semantic
        stored = {m.id for m in sem.get(ids)}
        out["missing"] = sorted(set(ids) - stored)
        for mid in sorted(stored):
            try:
                vector = sem.vectors([mid])[0]
            except Exception as exc:
                out["unreadable"].append(f"{mid}: {exc}"[:200])
                continue
            if mid not in {h.memory.id for h in sem.search(np.asarray(vector), 10)}:
                out["not_found_by_own_vector"].append(mid)
        out["l2_memories"] = sem.count()
    print(json.dumps(out))
    """
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--rows", type=int, default=1500, help="rows of the import at the start")
    parser.add_argument("--kills", action="store_true", help="SIGKILL a random CLI writer every 2-6 s")
    parser.add_argument("--no-builds", action="store_true")
    parser.add_argument("--work", type=Path, help="folder for the store and the site (default: a temporary one)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    work = args.work or Path(tempfile.mkdtemp(prefix="memwiki-processes-"))
    shutil.rmtree(work / "store", ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    store = work / "store"
    subprocess.run(_cli("--store", str(store), "init"), check=True, env=_env(), capture_output=True)
    config = work / "mkdocs.yml"
    (work / "docs").mkdir(exist_ok=True)
    config.write_text(
        f"site_name: processes\nuse_directory_urls: false\nsite_dir: {work / 'site'}\n"
        f"plugins:\n  - search\n  - memwiki:\n      store: {store}\n",
        encoding="utf-8",
    )
    tally, stop = Tally(), threading.Event()
    runner = Runner(store, tally)
    start_ids = _write_rows(work / "start.jsonl", "start", 0, args.rows)
    started = time.perf_counter()
    threads = [threading.Thread(target=_import_loop, args=(runner, work, stop), daemon=True)]
    threads.append(threading.Thread(target=_remember_loop, args=(runner, stop), daemon=True))
    if not args.no_builds:
        threads.append(threading.Thread(target=_build_loop, args=(runner, config, stop), daemon=True))
    known: list[str] = []

    def first_import() -> None:
        if runner.run(_cli("--store", str(store), "import", str(work / "start.jsonl"), "--layer", "L2")):
            with tally.lock:
                tally.acknowledged.update(start_ids)
            known.extend(start_ids)

    threads.append(threading.Thread(target=first_import, daemon=True))
    server = threading.Thread(target=lambda: asyncio.run(_server(store, tally, stop, known)), daemon=True)
    for t in [*threads, server]:
        t.start()
    rng = random.Random(7)
    while time.perf_counter() - started < args.seconds:
        time.sleep(rng.uniform(2, 6) if args.kills else 1)
        if args.kills:
            runner.kill_one(rng)
    stop.set()
    for t in [*threads, server]:
        t.join(timeout=900)
    elapsed = time.perf_counter() - started

    ids_file = work / "acknowledged.json"
    ids_file.write_text(json.dumps(sorted(tally.acknowledged)), encoding="utf-8")
    check = subprocess.run(
        [sys.executable, "-c", CHECK, str(store), str(ids_file)], capture_output=True, text=True, env=_env()
    )
    if check.returncode != 0:
        print(check.stderr[-2000:], file=sys.stderr)
        found = {"open_failed": check.stderr.strip().splitlines()[-1:]}
    else:
        found = json.loads(check.stdout.strip().splitlines()[-1])
    figures = {
        "seconds": round(elapsed, 1),
        "load_average": os.getloadavg(),
        "kills": args.kills,
        "acknowledged": len(tally.acknowledged),
        "missing": len(found.get("missing", [])),
        "unreadable_vectors": len(found.get("unreadable", [])),
        "not_found_by_own_vector": len(found.get("not_found_by_own_vector", [])),
        "commands": tally.commands,
        "killed": tally.killed,
        "failed_commands": len(tally.failed_commands),
        "builds": tally.builds,
        "failed_builds": len(tally.failed_builds),
        "server_writes": tally.server_writes,
        "server_errors": len(tally.server_errors),
        "recalls": tally.recalls,
        "recall_misses": len(tally.recall_misses),
        "examples": {
            "failed_commands": tally.failed_commands[:5],
            "failed_builds": tally.failed_builds[:3],
            "server_errors": tally.server_errors[:3],
            "recall_misses": tally.recall_misses[:5],
            **{k: v[:5] for k, v in found.items() if isinstance(v, list)},
        },
    }
    print(json.dumps({k: v for k, v in figures.items() if k != "examples"}))
    for name, examples in figures["examples"].items():
        for line in examples:
            print(f"  {name}: {line}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=list), encoding="utf-8")
    bad = ("missing", "unreadable_vectors", "not_found_by_own_vector", "failed_commands", "failed_builds")
    return 1 if any(figures[k] for k in bad) or figures["server_errors"] or "open_failed" in found else 0


if __name__ == "__main__":
    sys.exit(main())
