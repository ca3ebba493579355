"""Crash safety: SIGKILL three kinds of writer at random points, over and over, on ONE store.

Kinds (each a child process of this script, `--child KIND`, that prints `ack ...` and flushes after each
write it has committed, and is killed after a random delay past the moment it says it started writing):

- `sink`:      `Store.remember` of new non-core hot-memory entries; past 70% of MEMORY.md's cap older
               entries sink into L2 (write, read back, log, then rewrite the hot file).
- `import`:    a bulk L2 import of ROWS memories in `WRITE_BATCH` batches (the path of `memwiki import
               --layer L2`; vectors embedded once by the real embedder and reused, every round rewrites
               the same ids with `meta.round` = the round).
- `supersede`: `KnowledgeGraph.supersede(user, lives_in, city-R-I)`: end the current fact and add the
               next one in one SQLite transaction.

After every kill the store is opened the way a user opens it (`Store.open`, every layer) and checked:
- lost: an acknowledged entry is gone (in neither hot memory nor L2; an imported row older than its last
  acknowledged round or with another vector than the one written; a superseded-to fact missing);
- duplicated: an entry twice in a hot file, a memory twice in a vector search or the lexical index out of
  step with Chroma, a fact twice or more than one current fact;
- unfinished: an entry in both hot memory and L2 (a sink killed between its L2 write and its hot rewrite:
  allowed by memwiki/layers/hot/overflow.py, which re-runs it); the next sink must leave none behind;
- hot files must round-trip (parse and re-join to the same bytes, no drift).
Rebuilds of a damaged L2 vector index (memwiki/layers/semantic/recovery.py) are counted per kind.

Usage: python scripts/bench_kill.py [--kills 50] [--seed S] [--rows 3000] [--store DIR] [--json]
Prints the seed, then per kind: kills survived / lost / duplicated / unfinished / rebuilds, median round time.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memwiki.layers.hot.files import drift_reason, join_entries, parse_entries  # noqa: E402
from memwiki.layers.hot.overflow import memory_id  # noqa: E402
from memwiki.layers.semantic.memory import WRITE_BATCH  # noqa: E402
from memwiki.source import Memory  # noqa: E402
from memwiki.store.store import Store  # noqa: E402

KINDS = ("sink", "import", "supersede")
SINK_WRITES = 40  # remembers per sink round (each past the threshold sinks about one entry)
SUPERSEDES = 400  # supersedes per graph round (a few ms each: the kill lands among them)
SUBJECT, PREDICATE = "user", "lives_in"


# ── children ─────────────────────────────────────────────────────────────────────────────────────────


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _rows(n: int) -> list[str]:
    return [f"imported memory {i}: host node-{i % 97} runs service svc-{i % 13} on port {8000 + i}" for i in range(n)]


def child_import(store: Store, work: Path, round_no: int) -> None:
    texts = _rows(int((work / "rows").read_text()))
    vectors = np.load(work / "vectors.npy")
    semantic = store.semantic
    _say("started")
    for start in range(0, len(texts), WRITE_BATCH):
        stop = min(len(texts), start + WRITE_BATCH)
        memories = [
            Memory(f"imp-{i}", texts[i], "other", source="import", meta={"round": round_no}) for i in range(start, stop)
        ]
        semantic.upsert(memories, vectors[start:stop])
        _say(f"ack {start} {stop}")


def child_sink(store: Store, round_no: int) -> None:
    store.embedder.warm()
    store.semantic.count()
    _say("started")
    for i in range(SINK_WRITES):
        entry = f"host h{round_no}-{i} sits at 10.{round_no % 250}.{i}.7 behind the lab switch, VLAN {100 + i}"
        store.remember(entry, "memory", "network")
        _say(f"ack [network] {entry}")


def child_supersede(store: Store) -> None:
    graph = store.graph
    day = graph.stats()["triples"]
    _say("started")
    for i in range(SUPERSEDES):
        city = f"city-{day + i}"
        graph.supersede(SUBJECT, PREDICATE, city, date=_date(day + i))
        _say(f"ack {city}")


def _date(n: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(946684800 + 86400 * n))


def run_child(kind: str, store_dir: Path, work: Path, round_no: int) -> None:
    with Store.open(store_dir) as store:
        if kind == "import":
            child_import(store, work, round_no)
        elif kind == "sink":
            child_sink(store, round_no)
        else:
            child_supersede(store)
    _say("done")


# ── the parent: kill, open, check ────────────────────────────────────────────────────────────────────


@dataclass
class Tally:
    kills: int = 0
    survived: int = 0
    lost: int = 0
    duplicated: int = 0
    unfinished: int = 0
    rebuilds: int = 0
    completed: int = 0  # rounds whose child finished before its kill
    seconds: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class Expected:
    """What the children acknowledged, across all rounds."""

    rows: dict[str, int] = field(default_factory=dict)  # import id -> last acknowledged round
    entries: list[str] = field(default_factory=list)  # hot-memory entries acknowledged
    cities: list[str] = field(default_factory=list)  # facts superseded to


def _spawn(kind: str, store_dir: Path, work: Path, round_no: int) -> subprocess.Popen[str]:
    cmd = [sys.executable, __file__, "--child", kind, "--store", str(store_dir), "--work", str(work)]
    return subprocess.Popen([*cmd, "--round", str(round_no)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def one_round(
    kind: str, store_dir: Path, work: Path, round_no: int, delay: float | None, expected: Expected
) -> tuple[bool, float]:
    """Run one child, kill it `delay` s after it started writing (None: let it finish); record its acks.
    Returns whether it finished by itself, and how long it wrote."""
    child = _spawn(kind, store_dir, work, round_no)
    first = child.stdout.readline()
    if first.strip() != "started":
        child.kill()
        raise SystemExit(f"{kind} child failed to start: {first!r} {child.stderr.read()[-2000:]}")
    began = time.monotonic()
    if delay is not None:
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
    out, err = child.communicate()
    wrote = time.monotonic() - began
    finished = child.returncode == 0
    if delay is None and not finished:
        raise SystemExit(f"{kind} child failed: {err[-2000:]}")
    for line in out.splitlines():
        if not line.startswith("ack "):
            continue
        what = line[4:]
        if kind == "import":
            start, stop = map(int, what.split())
            expected.rows.update((f"imp-{i}", round_no) for i in range(start, stop))
        elif kind == "sink":
            expected.entries.append(what)
        else:
            expected.cities.append(what)
    return finished, wrote


def check(store_dir: Path, work: Path, expected: Expected) -> tuple[int, int, int, list[str]]:
    """Open the store as a user would and count (lost, duplicated, unfinished) acknowledged entries."""
    lost = dup = unfinished = 0
    problems: list[str] = []
    with Store.open(store_dir) as store:
        store.stats()  # every layer opens
        hot = store.hot("memory")
        raw = hot.path.read_bytes() if hot.path.exists() else b""
        text = raw.decode("utf-8")
        if drift_reason(hot.path, raw, hot.cap) or join_entries(parse_entries(text)) != text:
            problems.append(f"MEMORY.md does not round-trip: {drift_reason(hot.path, raw, hot.cap)}")
        raw_entries = [e.strip() for e in text.split("\n§\n") if e.strip()]
        in_hot = set(raw_entries)
        dup += len(raw_entries) - len(in_hot)
        semantic = store.semantic
        sunk = {m.id: m for m in semantic.get([memory_id("memory", e) for e in expected.entries])}
        for entry in expected.entries:
            in_l2 = memory_id("memory", entry) in sunk
            lost += not (entry in in_hot or in_l2)
            unfinished += entry in in_hot and in_l2
        if expected.rows:
            ids = sorted(expected.rows)
            got = {m.id: m for m in semantic.get(ids)}
            vectors = np.load(work / "vectors.npy")
            for i in ids:
                memory = got.get(i)
                if memory is None or int(memory.meta.get("round", -1)) < expected.rows[i]:
                    lost += 1
            present = [i for i in ids if i in got]
            stored = semantic.vectors(present)
            want = vectors[[int(i.split("-")[1]) for i in present]]
            bad = int(np.sum(np.abs(stored - want).max(axis=1) > 1e-4))
            if bad:
                problems.append(f"{bad} imported vectors differ from the ones written")
            lost += bad
            hits = semantic.search_ids(vectors[0], 50)
            dup += len(hits) - len({h[0] for h in hits})
        if semantic.lexical.count() != semantic.count() + _passages(semantic):
            problems.append(f"lexical index holds {semantic.lexical.count()}, Chroma {semantic.count()}")
            dup += 1
        facts = [t for t in store.graph.timeline(SUBJECT) if t.predicate == PREDICATE]
        objects = [t.object for t in facts]
        dup += len(objects) - len(set(objects))
        lost += sum(1 for c in expected.cities if c not in set(objects))
        current = [t for t in facts if not t.valid_to]
        if facts and len(current) != 1:
            problems.append(f"{len(current)} current {PREDICATE} facts")
            dup += max(0, len(current) - 1)
    return lost, dup, unfinished, problems


def _passages(semantic) -> int:  # noqa: ANN001 - long memories' passages are lexically indexed too, when kept
    col = getattr(semantic, "_passages", None)
    return col.count() if col is not None else 0


def _rebuilds(store_dir: Path) -> int:
    return sum(1 for p in store_dir.iterdir() if p.name.startswith("l2.damaged-"))


def prepare(store_dir: Path, work: Path, rows: int) -> None:
    """A new store, and the import's vectors embedded once with the store's embedder."""
    store = Store.init(store_dir)
    with store:
        texts = _rows(rows)
        from memwiki.layers.semantic.memory import index_text

        vectors = store.embedder.embed([index_text(Memory(f"imp-{i}", t, "other")) for i, t in enumerate(texts)])
    np.save(work / "vectors.npy", vectors)
    (work / "rows").write_text(str(rows))


def bench(kills: int, seed: int, rows: int, store_dir: Path, work: Path) -> dict[str, Tally]:
    rng = random.Random(seed)
    expected = Expected()
    tallies = {kind: Tally() for kind in KINDS}
    windows: dict[str, float] = {}
    round_no = 0
    for kind in KINDS:  # one full run each: the store holds every kind of data, and each write's length is known
        round_no += 1
        windows[kind] = one_round(kind, store_dir, work, round_no, None, expected)[1]
    schedule = [kind for kind in KINDS for _ in range(kills)]
    rng.shuffle(schedule)
    for kind in schedule:
        round_no += 1
        tally = tallies[kind]
        began = time.monotonic()
        before = _rebuilds(store_dir)
        delay = rng.uniform(0.0, windows[kind])
        finished, wrote = one_round(kind, store_dir, work, round_no, delay, expected)
        if finished:  # the kill came too late: later ones land within this shorter run
            windows[kind] = min(windows[kind], 0.9 * wrote)
        try:
            lost, dup, unfinished, problems = check(store_dir, work, expected)
        except Exception as exc:  # the store did not open: the worst outcome, recorded, and the bench stops
            tally.kills += 1
            tally.problems.append(f"round {round_no}: store does not open: {exc}")
            break
        tally.kills += 1
        tally.completed += finished
        tally.survived += not (lost or dup or problems)
        tally.lost += lost
        tally.duplicated += dup
        tally.unfinished += unfinished
        tally.rebuilds += _rebuilds(store_dir) - before
        tally.problems += [f"round {round_no} ({kind}, {delay:.2f}s): {p}" for p in problems]
        tally.seconds.append(time.monotonic() - began)
    # an interrupted sink is finished by the next one: after a last, unkilled sink none may be left in both layers
    one_round("sink", store_dir, work, round_no + 1, None, expected)
    lost, dup, unfinished, problems = check(store_dir, work, expected)
    tallies["sink"].problems += [f"after a final sink: {unfinished} entries still in both hot memory and L2"] * bool(
        unfinished
    ) + problems
    tallies["sink"].lost += lost
    tallies["sink"].duplicated += dup
    return tallies


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kills", type=int, default=50, help="kills per kind (default 50)")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock, printed)")
    p.add_argument("--rows", type=int, default=3000, help="memories per bulk import (default 3000)")
    p.add_argument("--store", help="store folder (default: a new temporary one, removed after)")
    p.add_argument("--json", action="store_true", help="print the tallies as one JSON object")
    p.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    p.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        run_child(args.child, Path(args.store), Path(args.work), args.round)
        return 0
    seed = args.seed if args.seed is not None else int(time.time()) % 100_000
    print(f"seed {seed}  kills per kind {args.kills}  rows {args.rows}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="memwiki-kill-"))
    store_dir = Path(args.store) if args.store else tmp / "store"
    try:
        prepare(store_dir, tmp, args.rows)
        tallies = bench(args.kills, seed, args.rows, store_dir, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = {
        kind: {**{k: v for k, v in asdict(t).items() if k != "seconds"}, "median_s": _median(t.seconds)}
        for kind, t in tallies.items()
    }
    if args.json:
        print(json.dumps({"seed": seed, "kinds": report}))
    else:
        for kind, r in report.items():
            print(
                f"{kind:10} kills {r['kills']:3}  survived {r['survived']:3}  lost {r['lost']}  "
                f"duplicated {r['duplicated']}  unfinished {r['unfinished']}  rebuilds {r['rebuilds']}  "
                f"finished-before-kill {r['completed']}  median {r['median_s']:.2f} s/round"
            )
            for problem in r["problems"][:10]:
                print(f"    {problem}")
    bad = any(r["lost"] or r["duplicated"] or r["problems"] or r["survived"] < r["kills"] for r in report.values())
    return 1 if bad else 0


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else 0.0


if __name__ == "__main__":
    sys.exit(main())
