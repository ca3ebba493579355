"""Recall quality on the benchmark sets: plain dense retrieval (baseline) beside memwiki's recall.

Both runs go through the real code path: each corpus is imported into a real SemanticMemory (Chroma in a
temporary folder, default embedder); the baseline is `SemanticMemory.search` on the embedded query, ours
is `Recaller.recall` over that L2 (peak-weighted z fusion of dense and lexical, `memwiki.recall.cascade.fuse`).

Data sets (formats of ../shared/bench, see its README):
- zh_recall_dev.jsonl: corpus = every memory, query = the paraphrased question, gold = its own memory.
- madial_zh: corpus = memwiki.jsonl, query = the dialogue turns before the first test turn (the point where
  the assistant should recall), gold = the relevant ids present in the corpus.
- locomo_dev.json: corpus = the turns of each conversation ("Speaker: text", plus the caption of a shared
  photo; the previous turn of the session as meta["context"], indexed with it), query = each question of
  categories 1-4, gold = its evidence dia_ids.

Usage: python scripts/bench_recall.py [--data DIR] [--json] [--only zh,madial,locomo] [--calibrate]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memwiki.layers.semantic.memory import SemanticMemory  # noqa: E402
from memwiki.recall.cascade import RecallConfig, Recaller  # noqa: E402
from memwiki.source import Memory  # noqa: E402
from memwiki.text.embedders import USEEmbedder  # noqa: E402
from memwiki.text.tokens import coverage  # noqa: E402

K_EVAL = 10


@dataclass
class Case:
    id: str
    query: str
    gold: set[str]
    category: str = ""


@dataclass
class Corpus:
    memories: list[Memory]
    cases: list[Case]


@dataclass
class Dataset:
    name: str
    corpora: list[Corpus]
    notes: list[str] = field(default_factory=list)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_zh(data: Path, questions: Path | None = None) -> Dataset | None:
    """zh_recall_dev: its memories, asked its own questions or those of `questions` ({"id", "query"} lines)."""
    path = data / "zh_recall_dev.jsonl"
    if not path.is_file():
        return None
    rows = _jsonl(path)
    memories = [Memory(id=str(r["id"]), text=r["memory"]) for r in rows]
    asked = _jsonl(questions) if questions else rows
    cases = [Case(str(r["id"]), r["query"], {str(r["id"])}) for r in asked]
    return Dataset(f"zh_recall ({questions.stem})" if questions else "zh_recall", [Corpus(memories, cases)])


def load_madial(data: Path) -> Dataset | None:
    folder = data / "madial_zh"
    if not (folder / "memwiki.jsonl").is_file():
        return None
    memories = []
    for row in _jsonl(folder / "memwiki.jsonl"):
        for key, m in row.items():
            meta = {k: m[k] for k in ("time", "scene", "emotion") if k in m}
            memories.append(
                Memory(id=str(m.get("id", key)), text=m["event"], created=str(m.get("time", "")), meta=meta)
            )
    ids = {m.id for m in memories}
    cases = []
    for n, d in enumerate(_jsonl(folder / "dialogue.jsonl")):
        gold = {str(r) for r in d["relevant-id"]} & ids
        if not gold:
            continue
        turn = min(d["test-turn"])
        turns = [t.strip() for t in d["dialogue"][:turn] if t.strip() and t.strip() not in ("<BOD>", "<EOD>")]
        cases.append(Case(str(d.get("id", n)), "\n".join(turns), gold))
    return Dataset("madial_zh", [Corpus(memories, cases)])


def locomo_turn_text(turn: dict) -> str:
    """A LoCoMo turn as an agent would store it: who said it, and what a shared photo showed."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def load_locomo(data: Path) -> Dataset | None:
    path = data / "locomo_dev.json"
    if not path.is_file():
        return None
    corpora = []
    for conv in json.loads(path.read_text(encoding="utf-8")):
        c = conv["conversation"]
        memories = []
        for key, turns in c.items():
            if not (key.startswith("session_") and isinstance(turns, list)):
                continue
            date = c.get(f"{key}_date_time", "")
            previous = ""
            for t in turns:
                text = locomo_turn_text(t)
                meta = {"speaker": t["speaker"], "context": previous}
                memories.append(Memory(id=t["dia_id"], text=text, created=date, session_id=key, meta=meta))
                previous = text
        ids = {m.id for m in memories}
        cases = []
        for n, qa in enumerate(conv["qa"]):
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            gold = {e.strip() for e in qa.get("evidence", [])} & ids
            if gold:
                cases.append(Case(f"{conv.get('sample_id', '')}#{n}", qa["question"], gold, str(qa["category"])))
        corpora.append(Corpus(memories, cases))
    return Dataset("locomo", corpora)


def score(ranked: list[str], gold: set[str]) -> dict[str, float]:
    dcg = sum(1 / math.log2(r + 2) for r, i in enumerate(ranked[:K_EVAL]) if i in gold)
    ideal = sum(1 / math.log2(r + 2) for r in range(min(len(gold), K_EVAL)))
    return {
        "hit@1": float(bool(ranked[:1]) and ranked[0] in gold),
        "hit@5": float(any(i in gold for i in ranked[:5])),
        "recall@5": len(gold & set(ranked[:5])) / len(gold),
        "ndcg@10": dcg / ideal,
    }


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]} if rows else {}


def run(datasets: list[Dataset], config: RecallConfig, calibrate: bool = False) -> dict:
    embedder = USEEmbedder()
    embedder.embed(["warm-up"])
    results: dict = {}
    top_cosines: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="memwiki-bench-") as tmp:
        for ds in datasets:
            per: dict[str, dict[str, list]] = {"baseline": defaultdict(list), "ours": defaultdict(list)}
            t0 = time.perf_counter()
            for n, corpus in enumerate(ds.corpora):
                l2 = SemanticMemory(Path(tmp) / f"{ds.name}-{n}", embedder)
                l2.upsert(corpus.memories)
                plain = l2
                if any("context" in m.meta for m in corpus.memories):  # the baseline indexes the bare texts
                    plain = SemanticMemory(Path(tmp) / f"{ds.name}-{n}-plain", embedder)
                    plain.upsert([replace(m, meta={}) for m in corpus.memories])
                recaller = Recaller(embedder, l2=l2, config=config)
                for case in corpus.cases:
                    base = [s.memory.id for s in plain.search(embedder.embed([case.query])[0], K_EVAL)]
                    hits = recaller.recall(case.query, k=K_EVAL)
                    ours = [h.id for h in hits]
                    for name, ranked in (("baseline", base), ("ours", ours)):
                        row = score(ranked, case.gold)
                        per[name]["all"].append(row)
                        if case.category:
                            per[name][f"cat{case.category}"].append(row)
                    if hits:
                        top_cosines[ds.name].append((max(h.confidence for h in hits), hits[0].id in case.gold))
            results[ds.name] = {
                name: {group: {**mean(rows), "n": len(rows)} for group, rows in sorted(groups.items())}
                for name, groups in per.items()
            }
            results[ds.name]["seconds"] = round(time.perf_counter() - t0, 1)
    if calibrate:
        results["calibration"] = calibration(datasets, embedder, top_cosines)
    return results


def calibration(datasets: list[Dataset], embedder: USEEmbedder, answered: dict) -> dict:
    """Top-1 cosine of queries run against a corpus that does NOT hold their answer (another data set's),
    beside the top-1 cosine of answerable queries split by whether top-1 was right."""
    out: dict = {}
    pools = [(ds.name, ds.corpora[0]) for ds in datasets]
    negatives: list[float] = []
    neg_coverage: list[float] = []  # best lexical coverage of the query by any text of the foreign corpus
    pairs = list(zip(pools, pools[1:] + pools[:1], strict=True))
    for ds in datasets:  # same language and kind, other people: conversation n's questions against n+1's turns
        pairs += [((ds.name, a), (ds.name + "'", b)) for a, b in zip(ds.corpora, ds.corpora[1:], strict=False)]
    for (name_q, cq), (name_c, cc) in pairs:
        if name_q == name_c:
            continue
        vectors = embedder.embed([m.text for m in cc.memories])
        for case in cq.cases:
            negatives.append(float((vectors @ embedder.embed([case.query])[0]).max()))
            neg_coverage.append(max(coverage(case.query, m.text) for m in cc.memories))
    gold_coverage = [
        max(coverage(case.query, m.text) for m in corpus.memories if m.id in case.gold)
        for ds in datasets
        for corpus in ds.corpora
        for case in corpus.cases
    ]
    for label, values in (("cov_unanswer", neg_coverage), ("cov_gold", gold_coverage)):
        if values:
            out[label] = {f"p{q}": round(float(np.percentile(values, q)), 3) for q in (50, 90, 95, 99)}
    for t in (0.3, 0.4, 0.5, 0.6, 0.7):
        out[f"cov@{t}"] = {
            "unanswerable_kept": round(float(np.mean([v >= t for v in neg_coverage])), 3),
            "gold_kept": round(float(np.mean([v >= t for v in gold_coverage])), 3),
        }
    right = [c for pairs in answered.values() for c, ok in pairs if ok]
    wrong = [c for pairs in answered.values() for c, ok in pairs if not ok]
    for label, values in (("unanswerable", negatives), ("top1_right", right), ("top1_wrong", wrong)):
        if values:
            out[label] = {f"p{q}": round(float(np.percentile(values, q)), 3) for q in (5, 25, 50, 75, 95)}
    for t in (0.4, 0.45, 0.5, 0.55, 0.6, 0.65):
        out[f"stop@{t}"] = {
            "unanswerable_stopped": round(float(np.mean([v >= t for v in negatives])), 3) if negatives else None,
            "right_stopped": round(float(np.mean([v >= t for v in right])), 3) if right else None,
            "wrong_stopped": round(float(np.mean([v >= t for v in wrong])), 3) if wrong else None,
        }
    return out


def print_table(results: dict) -> None:
    metrics = ("hit@1", "hit@5", "recall@5", "ndcg@10")
    for ds, res in results.items():
        if ds == "calibration":
            continue
        print(f"\n== {ds}  ({res['seconds']} s)")
        print(f"{'group':<8} {'run':<9} {'n':>5} " + " ".join(f"{m:>9}" for m in metrics))
        for group in res["ours"]:
            for name in ("baseline", "ours"):
                row = res[name][group]
                print(f"{group:<8} {name:<9} {row['n']:>5} " + " ".join(f"{row[m]:>9.3f}" for m in metrics))
    if "calibration" in results:
        print("\n== calibration (top-1 cosine; cov*: lexical coverage of the query)")
        for key, value in results["calibration"].items():
            print(f"{key:<14} {value}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--json", action="store_true", help="print machine-readable results")
    parser.add_argument("--only", default="zh,madial,locomo", help="comma-separated data sets to run")
    parser.add_argument("--calibrate", action="store_true", help="also print the early-stop calibration")
    parser.add_argument("--zh-questions", type=Path, help="ask zh_recall's memories these questions (scripts/heldout)")
    parser.add_argument("--config", default="{}", help="JSON overrides of RecallConfig: '{\"peak_weighting\": false}'")
    args = parser.parse_args(argv)
    loaders = {"zh": lambda d: load_zh(d, args.zh_questions), "madial": load_madial, "locomo": load_locomo}
    datasets = [ds for name in args.only.split(",") if (ds := loaders[name.strip()](args.data)) is not None]
    if not datasets:
        print(f"no benchmark data found in {args.data}", file=sys.stderr)
        return 2
    config = RecallConfig(**json.loads(args.config))
    results = run(datasets, config, calibrate=args.calibrate)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"data: {args.data}   embedder: {USEEmbedder().identity()}   config: {config}")
        print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
