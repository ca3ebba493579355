"""Which ranking stages earn their place: k-fold cross-validation over every set of ../shared/bench.

Each retriever's ranking is computed once per case through the real code path (a real SemanticMemory in a
temporary folder, the default embedder, `Recaller.query_vector`, the FTS5 lexical index);
the fused ranking of any setting is then `memwiki.recall.cascade.fuse` over those lists, exactly as recall fuses them.
The settings form a grid over every stage (each turn indexed after the previous one or not, lexical weight,
peak weighting). Commit 3e634c3 ran the same over the stages since removed (the English-gloss bridge, a
recency-weighted dialogue query vector, reciprocal-rank and min-max fusion): none helped on held-out folds.

Cross-validation: each set's cases are split into k folds, once per seed. For fold i, the setting that scores
best on the other folds of every set (mean gain over plain dense retrieval across sets and metrics, a loss
counted twice) is chosen and scored on fold i. Reported per set: the held-out mean and spread over folds of
plain dense retrieval, of that tuned pipeline, and of each stage forced off (the tuned pipeline without it),
so a stage that does not help on held-out folds shows; and the shipped `RecallConfig()` scored on every fold.

Usage: python scripts/bench_cv.py [--data DIR] [--folds 5] [--seeds 0,1,2] [--only zh,madial,locomo] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_recall import Dataset, load_locomo, load_madial, load_zh, score  # noqa: E402

from memwiki.layers.semantic.memory import SemanticMemory  # noqa: E402
from memwiki.recall.cascade import RecallConfig, Recaller, fuse  # noqa: E402
from memwiki.text.embedders import USEEmbedder  # noqa: E402

METRICS = ("hit@1", "hit@5", "recall@5")
DEPTH = 50
K_EVAL = 10


@dataclass(frozen=True)
class Setting:
    """One point of the grid: which stages are on, and how much the lexical list weighs."""

    context: bool = True  # index each turn after the previous one (LoCoMo; no effect on the other sets)
    lexical: float = 1.0  # weight of the lexical list (0: dense only)
    peak: bool = True  # peak weighting of the z fusion

    def config(self) -> RecallConfig:
        return RecallConfig(lexical_weight=self.lexical, peak_weighting=self.peak)

    def label(self) -> str:
        if self.lexical == 0:
            return f"dense only (context={self.context})"
        return ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


SHIPPED = Setting(True, RecallConfig().lexical_weight, RecallConfig().peak_weighting)


def grid() -> list[Setting]:
    """Every setting, simpler ones (fewer stages on) first."""
    out = []
    for context, lexical, peak in itertools.product((False, True), (0.0, 0.25, 0.5, 1.0, 2.0), (False, True)):
        if not (lexical == 0 and peak):  # dense alone: peak weighting changes nothing
            out.append(Setting(context, lexical, peak))
    return out


@dataclass
class CaseLists:
    """Every retriever's ranking of one case, for each index (plain, with context)."""

    dataset: str
    gold: set[str]
    baseline: list[str]  # plain dense retrieval: the plain index, the query's vector
    dense: dict[bool, list[tuple[str, float]]]
    lexical: dict[bool, list[tuple[str, float]]]


def collect(datasets: list[Dataset], embedder: USEEmbedder, tmp: Path) -> list[CaseLists]:
    out: list[CaseLists] = []
    for ds in datasets:
        for n, corpus in enumerate(ds.corpora):
            with_context = any("context" in m.meta for m in corpus.memories)
            indexes = {True: SemanticMemory(tmp / f"{ds.name}-{n}", embedder)}
            indexes[True].upsert(corpus.memories)
            if with_context:
                indexes[False] = SemanticMemory(tmp / f"{ds.name}-{n}-plain", embedder)
                indexes[False].upsert([replace(m, meta={}) for m in corpus.memories])
            else:
                indexes[False] = indexes[True]
            recaller = Recaller(embedder)
            for case in corpus.cases:
                qv = recaller.query_vector(case.query)
                dense = {c: index.search_ids(qv, DEPTH) for c, index in indexes.items()}
                lexical = {c: index.lexical_search(case.query, DEPTH) for c, index in indexes.items()}
                baseline = [i for i, _ in dense[False][:K_EVAL]]
                out.append(CaseLists(ds.name, case.gold, baseline, dense, lexical))
    return out


def ranked(case: CaseLists, s: Setting) -> list[str]:
    dense = case.dense[s.context]
    if s.lexical == 0:
        return [i for i, _ in dense[:K_EVAL]]
    return [r.id for r in fuse(dense, case.lexical[s.context], s.config())[:K_EVAL]]


Table = dict[Setting | None, np.ndarray]  # per setting (None: plain dense), cases × METRICS


def score_table(cases: list[CaseLists], settings: list[Setting]) -> Table:
    """Every case's metrics under every setting (None: plain dense retrieval), computed once."""
    table: Table = {}
    for s in (None, *settings):
        rows = [score(c.baseline if s is None else ranked(c, s), c.gold) for c in cases]
        table[s] = np.array([[r[m] for m in METRICS] for r in rows])
    return table


def scores(cases: list[CaseLists], rows: np.ndarray, members: list[int]) -> dict[str, dict[str, float]]:
    """Per data set, the mean of each metric over the cases `members`."""
    out: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(cases[n].dataset for n in members):
        mine = [n for n in members if cases[n].dataset == name]
        out[name] = dict(zip(METRICS, (float(v) for v in rows[mine].mean(axis=0)), strict=True))
    return out


def objective(ours: dict[str, dict[str, float]], dense: dict[str, dict[str, float]]) -> float:
    """Mean gain over plain dense retrieval across sets and metrics; a loss counts twice."""
    gains = [ours[d][m] - dense[d][m] for d in ours for m in METRICS]
    return float(np.mean([g if g >= 0 else 2 * g for g in gains]))


def folds_of(cases: list[CaseLists], k: int, seed: int) -> list[int]:
    """A fold number per case, each set split evenly."""
    rng = random.Random(seed)
    fold = [0] * len(cases)
    by_set: dict[str, list[int]] = {}
    for n, c in enumerate(cases):
        by_set.setdefault(c.dataset, []).append(n)
    for members in by_set.values():
        rng.shuffle(members)
        for pos, n in enumerate(members):
            fold[n] = pos % k
    return fold


def cross_validate(cases: list[CaseLists], settings: list[Setting], k: int, seeds: list[int]) -> dict:
    """Repeated k-fold cross-validation: k folds for each seed; means and spreads are over all k × seeds folds."""
    stages = {
        "context": lambda s: s.context,
        "lexical list": lambda s: s.lexical > 0,
        "peak weighting": lambda s: s.peak and s.lexical > 0,
    }
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"dense": [], "tuned": [], "shipped": []}
    runs.update({f"without {name}": [] for name in stages})
    chosen: list[str] = []
    shipped = SHIPPED
    table = score_table(cases, [*settings, shipped] if shipped not in settings else settings)
    for seed, i in itertools.product(seeds, range(k)):
        fold = folds_of(cases, k, seed)
        train = [n for n, f in enumerate(fold) if f != i]
        held = [n for n, f in enumerate(fold) if f == i]
        dense_train = scores(cases, table[None], train)
        gain = {s: objective(scores(cases, table[s], train), dense_train) for s in settings}

        def best(pool: list[Setting], gain: dict[Setting, float] = gain) -> Setting:
            """The pool's best on the training folds; of equals, the first (the grid lists simpler ones first)."""
            return max(pool, key=lambda x: (gain[x], -settings.index(x)))

        tuned = best(settings)
        chosen.append(tuned.label())
        runs["dense"].append(scores(cases, table[None], held))
        runs["tuned"].append(scores(cases, table[tuned], held))
        runs["shipped"].append(scores(cases, table[shipped], held))
        for name, on in stages.items():
            runs[f"without {name}"].append(scores(cases, table[best([s for s in settings if not on(s)])], held))
    summary: dict = {"folds": k, "seeds": seeds, "chosen": chosen}
    for name, per_fold in runs.items():
        summary[name] = {
            d: {
                m: (float(np.mean([f[d][m] for f in per_fold])), float(np.std([f[d][m] for f in per_fold])))
                for m in METRICS
            }
            for d in per_fold[0]
        }
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds: k folds for each")
    parser.add_argument("--only", default="zh,madial,locomo")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    loaders = {"zh": load_zh, "madial": load_madial, "locomo": load_locomo}
    datasets = [ds for name in args.only.split(",") if (ds := loaders[name.strip()](args.data)) is not None]
    if not datasets:
        print(f"no benchmark data found in {args.data}", file=sys.stderr)
        return 2
    embedder = USEEmbedder()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memwiki-cv-") as tmp:
        cases = collect(datasets, embedder, Path(tmp))
    t1 = time.perf_counter()
    settings = grid()
    seeds = [int(x) for x in args.seeds.split(",")]
    summary = cross_validate(cases, settings, args.folds, seeds)
    summary["seconds"] = {"retrieval": round(t1 - t0, 1), "cross-validation": round(time.perf_counter() - t1, 1)}
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    print(f"{len(cases)} cases, {len(settings)} settings, {args.folds} folds × seeds {seeds}; {summary['seconds']} s")
    for n, label in enumerate(summary["chosen"]):
        print(f"  fold {n}: chose {label}")  # seeds × folds, in order
    names = [n for n in summary if isinstance(summary[n], dict) and n != "seconds"]
    for d in summary["dense"]:
        print(f"\n== {d}: held-out mean ± spread over folds")
        print(f"{'run':<26} " + " ".join(f"{m:>15}" for m in METRICS))
        for name in names:
            row = summary[name][d]
            print(f"{name:<26} " + " ".join(f"{row[m][0]:>8.3f} ±{row[m][1]:.3f}" for m in METRICS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
