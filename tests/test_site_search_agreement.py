"""The site's search ranks as `memwiki recall --all-layers` ranks, over a store with every layer filled.

The store: the demo (persona, hot memory, L2, graph, sessions, wiki pages) plus the 45 memories of the recall
benchmark's zh_recall_dev.jsonl (benchmark data beside the checkout, not in the repository: without it these tests
are skipped, see `fixture_copies.bench_file`) and a long memory (split into passages). Queries: the benchmark's
questions, tests/demo_questions.jsonl's when it exists, and a few that nothing answers. Python's answer is the real
CLI's (`memwiki recall --all-layers --json --batch`); the site's is search-core.js run by node over the files the
search builder exported for that store, with the query vector Python computes (so that only the ranking is
compared). The browser's own encoder and page are compared in tests/test_site_search_browser.py.

Agreement is counted per layer and position: position i of layer L agrees when both give the same id there (or
neither gives one); the figure is agreeing positions over the positions either gives.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixture_copies import bench_file

from memwiki.recall.cascade import LAYERS, cut_query
from memwiki.site.builders import search
from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
from memwiki.site.model.build_context import BuildContext
from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.source import Memory
from memwiki.store.demo import build_demo_store
from memwiki.store.store import Store

ROOT = Path(__file__).resolve().parents[1]
DEMO_QUESTIONS = ROOT / "tests" / "demo_questions.jsonl"
HARNESS = ROOT / "tests" / "js" / "search_recall.js"
CACHE = ROOT / ".cache" / "memwiki"  # the shared cache: the browser model's export is reused across runs
K = 5
NOTHING = ["xyzzyqqq", "？？？"]  # queries nothing answers
MORE = [
    "向量模型跑在哪台机器上？",  # the README's example
    "备份策略",
    "Which server runs the embedding model?",
    "what did we decide about the release",
    "NAS 的地址",
]
LONG_MEMORY = "\n\n".join(
    f"Runbook step {n}: on the build host, rotate the logs of service {n}, check the disk quota of volume "
    f"vol-{n} and restart the worker pool when its queue holds more than {n * 10} jobs. 第{n}步：检查备份任务。"
    for n in range(1, 40)
)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def queries(bench: Path) -> list[str]:
    """The benchmark-style questions (deduplicated, in order)."""
    found = [row["query"] for row in _jsonl(bench)]
    if DEMO_QUESTIONS.is_file():
        found += [row["query"] for row in _jsonl(DEMO_QUESTIONS) if isinstance(row.get("query"), str)]
    return list(dict.fromkeys(found + MORE + NOTHING))


def full_store(root: Path, bench: Path) -> Path:
    """The demo store with the benchmark's memories and a long memory added to L2."""
    store_dir = build_demo_store(ROOT / "demo", root / "store")
    with Store.open(store_dir) as store:
        rows = _jsonl(bench)
        store.semantic.upsert([Memory(id=r["id"], text=r["memory"], category="other") for r in rows])
        store.semantic.upsert([Memory(id="runbook-long", text=LONG_MEMORY, category="technical")])
    return store_dir


def export(store_dir: Path, site_dir: Path, cache_dir: Path) -> None:
    """What the search builder writes for this store, through the privacy gate with the private profile: the
    public one redacts the demo's private addresses and internal hosts (their texts, and so their vectors, are
    not the store's: what the site must not show it cannot rank by), and this test compares the ranking."""
    with Store.open(store_dir) as store:
        gate = PrivacyFilter(store.reader(), PrivacyRules.from_options({}, "private"))
        ctx = BuildContext(gate, speed=BuildSpeed.at(cache_dir))
        _, assets = search.build(ctx)
    for asset in assets:
        path = site_dir / asset.dest_uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(asset.content)


def cli_recall(store_dir: Path, qs: list[str], k: int = K) -> list[dict]:
    """`memwiki recall --all-layers --json --batch` over `qs`: one JSON answer per query."""
    batch = store_dir.parent / "queries.jsonl"
    batch.write_text("".join(json.dumps({"id": n, "query": q}, ensure_ascii=False) + "\n" for n, q in enumerate(qs)))
    cli = shutil.which("memwiki") or sys.executable
    head = [cli] if cli != sys.executable else [cli, "-m", "memwiki.agents.cli"]
    proc = subprocess.run(
        [*head, "--store", str(store_dir), "recall", "--all-layers", "--json", "-k", str(k), "--batch", str(batch)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def query_vectors(store_dir: Path, qs: list[str]) -> list[list[float]]:
    with Store.open(store_dir) as store:
        return [store.recaller.query_vector(cut_query(q)).tolist() for q in qs]


def node_recall(site_dir: Path, qs: list[str], vectors: list | None, k: int = K) -> dict:
    if shutil.which("node") is None:
        pytest.fail("node is needed to run the site search's JS")
    req = {"k": k, "queries": [{"query": q, "vector": v} for q, v in zip(qs, vectors or [None] * len(qs), strict=True)]}
    proc = subprocess.run(
        ["node", str(HARNESS), str(site_dir)], input=json.dumps(req), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def by_layer(hits: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {layer: [] for layer in LAYERS}
    for h in hits:
        out[h["layer"]].append(h["id"])
    return out


def agreement(python: list[list[dict]], site: list[list[dict]]) -> tuple[int, int, list[str]]:
    """(agreeing positions, positions, what differed) over every query's top `K` of every layer."""
    same = total = 0
    diffs = []
    for n, (py, js) in enumerate(zip(python, site, strict=True)):
        a, b = by_layer(py), by_layer(js)
        for layer in LAYERS:
            for i in range(max(len(a[layer]), len(b[layer]))):
                total += 1
                x = a[layer][i] if i < len(a[layer]) else None
                y = b[layer][i] if i < len(b[layer]) else None
                if x == y:
                    same += 1
                else:
                    diffs.append(f"q{n} {layer}#{i + 1}: recall {x} / site {y}")
    return same, total, diffs


def flat_agreement(python: list[list[dict]], site: list[list[dict]]) -> float:
    """The share of positions of the whole answer (recall's order: confident hits by layer, then the weak ones
    in turn) at which both give the same hit."""
    same = total = 0
    for py, js in zip(python, site, strict=True):
        a = [(h["layer"], h["id"]) for h in py]
        b = [(h["layer"], h["id"]) for h in js]
        total += max(len(a), len(b))
        same += sum(x == y for x, y in zip(a, b, strict=False))
    return same / total


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    bench = bench_file("zh_recall_dev.jsonl")
    root = tmp_path_factory.mktemp("agreement")
    store_dir = full_store(root, bench)
    cache = root / "cache"
    cache.mkdir()
    (cache / "use").symlink_to(CACHE / "use", target_is_directory=True) if (CACHE / "use").is_dir() else None
    export(store_dir, root / "site", cache)
    qs = queries(bench)
    yield {"root": root, "store": store_dir, "site": root / "site", "queries": qs, "cli": cli_recall(store_dir, qs)}


def test_node_top5_equals_recall_all_layers(world: dict) -> None:
    qs = world["queries"]
    js = node_recall(world["site"], qs, query_vectors(world["store"], qs))["results"]
    python = [answer["hits"] for answer in world["cli"]]
    same, total, diffs = agreement(python, [r["hits"] for r in js])
    flat = flat_agreement(python, [r["hits"] for r in js])
    print(
        f"node agreement: {same}/{total} = {same / total:.3f} per layer, {flat:.3f} over the whole answer, over "
        f"{len(qs)} queries; differences: {diffs[:20]}"
    )
    assert total >= 4 * len(qs)  # every layer answered (L2 always; the small layers where they match)
    assert same / total >= 0.95 and flat >= 0.9, diffs[:30]
    # each layer took part, and the confident verdict is recall's
    assert all(any(by_layer(h)[layer] for h in python) for layer in LAYERS)
    verdicts = [(a["confident"], any(h["confident"] for h in r["hits"])) for a, r in zip(world["cli"], js, strict=True)]
    assert sum(x == y for x, y in verdicts) >= 0.95 * len(verdicts), verdicts


def test_node_why_and_confidence_are_recalls(world: dict) -> None:
    """Where both rank the same hit first in a layer, its `why` text and confident flag are recall's."""
    qs = world["queries"]
    js = node_recall(world["site"], qs, query_vectors(world["store"], qs))["results"]
    same_why = compared = 0
    for answer, mine in zip(world["cli"], js, strict=True):
        for layer in LAYERS:
            a = [h for h in answer["hits"] if h["layer"] == layer][:1]
            b = [h for h in mine["hits"] if h["layer"] == layer][:1]
            if a and b and a[0]["id"] == b[0]["id"]:
                compared += 1
                same_why += a[0]["why"] == b[0]["why"] and a[0]["confident"] == b[0]["confident"]
    print(f"same why and flag: {same_why}/{compared}")
    assert compared >= len(qs) and same_why >= 0.9 * compared


def test_nothing_answers_gibberish(world: dict) -> None:
    qs = world["queries"]
    js = {r["query"]: r for r in node_recall(world["site"], qs, query_vectors(world["store"], qs))["results"]}
    cli = {a["query"]: a for a in world["cli"]}
    for q in NOTHING:
        assert cli[q]["confident"] is False, q
        assert not any(h["confident"] for h in js[q]["hits"]), js[q]["hits"]
        assert all("weak" in h["why"] for h in js[q]["hits"])  # every layer's guesses, each said to be weak


def test_lexical_phase_is_recall_by_words(world: dict) -> None:
    """Before the encoder loads the page ranks by words only: never an error; a hit is confident only by naming
    most of the query's words, and the confident hits come first."""
    qs = world["queries"]
    js = node_recall(world["site"], qs, None)["results"]
    assert len(js) == len(qs)
    for r in js:
        for h in r["hits"]:
            assert not h["confident"] or "covers" in h["why"], h
        flags = [h["confident"] for h in r["hits"]]
        assert flags == sorted(flags, reverse=True), r["hits"]
    assert sum(h["confident"] for r in js for h in r["hits"]) >= len(qs) // 4  # words alone find a good share
