"""Cross-layer recall: is the answer in the default `memwiki recall` top 5 when it lives in a lower layer than a
decoy, and does `confident` mean right?

The questions of `scripts/heldout/crosslayer/` and `crosslayer_b/` (each written blind, without the ranking code, on
its own day; see their READMEs) are asked of two sources built here from each set's JSON: a memwiki store (hot memory,
L2 notes, sessions, wiki pages) and a hermes-agent home made with hermes-agent's own code (hot memory and sessions).
For each question the default recall (k=5) is asked and scored:

- top 5: the expected item is among the hits (a session answer counts by its session, as the site shows it);
- confident precision: of the questions whose first confident hit exists, the share where it is the answer;
- confident recall: of the answerable questions, the share whose answer is returned marked confident;
- false confidence on the questions with no answer (layer "none"): the share with any confident hit.

Plain dense retrieval (every layer's texts ranked by cosine alone, top 5 over all layers) is printed beside it.
`--folds K` chooses the recall's `min_confidence` / `min_coverage` / `min_cosine_with_words` on K-1 folds and
scores the held-out fold.

    python scripts/bench_crosslayer.py
    python scripts/bench_crosslayer.py --folds 5
    python scripts/bench_crosslayer.py --sets crosslayer_b --show   # one set, each miss printed
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memwiki.recall.cascade import Hit, Recaller  # noqa: E402
from memwiki.recall.sources import recaller_for  # noqa: E402
from memwiki.store.store import Store  # noqa: E402

HELDOUT = ROOT / "scripts" / "heldout"
SET_NAMES = ("crosslayer", "crosslayer_b")  # each written blind, on its own day (see their READMEs)


@dataclass
class Question:
    id: str
    corpus: str
    lang: str
    query: str
    layer: str
    expect: Any
    decoy: Any


def load_questions(corpus: dict[str, Any], name: str) -> list[Question]:
    return [
        Question(q["id"], name, q["lang"], q["query"], q["layer"], q["expect"], q.get("decoy"))
        for q in corpus["questions"]
    ]


def build_store(corpus: dict[str, Any], root: Path) -> Store:
    """A memwiki store holding the corpus as written (no sinking: the hot files stay under their caps)."""
    store = Store.init(root)
    for target in ("memory", "user"):
        store.hot(target).write_entries(corpus[target])
    notes = root / "notes.jsonl"
    notes.write_text("".join(json.dumps(n, ensure_ascii=False) + "\n" for n in corpus.get("memories", [])), "utf-8")
    store.semantic.import_jsonl(notes)
    for s in corpus["sessions"]:
        store.sessions.add_session(s["id"], title=s.get("title", ""), started=s.get("started"))
        for turn in s["turns"]:
            store.sessions.add_message(s["id"], turn["role"], turn["text"])
    for page in corpus.get("wiki", []):
        body = f"---\ntitle: {json.dumps(page['title'], ensure_ascii=False)}\n---\n\n{page['body']}\n"
        (store.wiki_dir / page["path"]).write_text(body, encoding="utf-8")
    return store


def build_hermes(corpus: dict[str, Any], home: Path) -> Recaller:
    """A hermes-agent home made by hermes-agent's own code, read in place as memwiki reads any home."""
    from memwiki.readers.hermes import HermesHome
    from tests.homes import HermesMessage, HermesSession, make_hermes_home

    sessions = [
        HermesSession(
            s["id"], title=s.get("title", ""), messages=[HermesMessage(t["role"], t["text"]) for t in s["turns"]]
        )
        for s in corpus["sessions"]
    ]
    make_hermes_home(home, None, corpus["memory"], corpus["user"], sessions)
    return recaller_for(HermesHome(home))


def is_answer(hit: Hit, q: Question, corpus: dict[str, Any]) -> bool:
    expect = q.expect
    if q.layer == "L1":
        return hit.layer == "L1" and hit.text.strip() == corpus[expect["file"]][expect["index"]].strip()
    if q.layer == "L2":
        return hit.layer == "L2" and hit.id == expect
    if q.layer == "L4":
        return hit.layer == "L4" and hit.provenance.get("session_id") == expect["session"]
    if q.layer == "files":
        return hit.layer == "files" and str(hit.provenance.get("path", "")).endswith(expect)
    return False


@dataclass
class Asked:
    q: Question
    hits: list[Hit]
    right: list[bool]


def ask(recaller: Recaller, questions: list[Question], corpus: dict[str, Any], k: int = 5) -> list[Asked]:
    out = []
    for q in questions:
        hits = recaller.recall(q.query, k=k)
        out.append(Asked(q, hits, [is_answer(h, q, corpus) for h in hits]))
    return out


def dense_top(recaller: Recaller, questions: list[Question], corpus: dict[str, Any], k: int = 5) -> list[bool]:
    """Plain dense retrieval: every layer's candidates (each layer asked with `all_layers`, depth 50) ranked by
    cosine alone; whether the answer is in the top `k`."""
    out = []
    for q in questions:
        hits = recaller.recall(q.query, k=50, all_layers=True)
        hits.sort(key=lambda h: -h.confidence)
        out.append(any(is_answer(h, q, corpus) for h in hits[:k]))
    return out


def score(asked: list[Asked]) -> dict[str, float]:
    answerable = [a for a in asked if a.q.layer != "none"]
    none = [a for a in asked if a.q.layer == "none"]
    top5 = sum(any(a.right) for a in answerable) / max(len(answerable), 1)
    firsts = [(a, next((i for i, h in enumerate(a.hits) if h.confident), None)) for a in answerable]
    with_conf = [(a, i) for a, i in firsts if i is not None]
    precision = sum(a.right[i] for a, i in with_conf) / max(len(with_conf), 1)
    recall = sum(any(r and h.confident for r, h in zip(a.right, a.hits, strict=True)) for a in answerable) / max(
        len(answerable), 1
    )
    false_conf = sum(any(h.confident for h in a.hits) for a in none) / max(len(none), 1)
    lower = [a for a in answerable if a.q.decoy is not None]
    decoyed = sum(any(a.right) for a in lower) / max(len(lower), 1)
    return {
        "top5": top5,
        "top5_with_decoy": decoyed,
        "confident_precision": precision,
        "confident_recall": recall,
        "false_confidence_on_unanswerable": false_conf,
        "questions": len(asked),
    }


def table(title: str, scores: dict[str, float], dense: float | None = None) -> str:
    line = (
        f"{title:<28} top5 {scores['top5']:.2f} (with a decoy above {scores['top5_with_decoy']:.2f})"
        f" · confident precision {scores['confident_precision']:.2f} recall {scores['confident_recall']:.2f}"
        f" · unanswerable marked confident {scores['false_confidence_on_unanswerable']:.2f}"
    )
    return line + (f" · plain dense top5 {dense:.2f}" if dense is not None else "")


def by_layer(asked: list[Asked]) -> str:
    rows = {}
    for a in asked:
        rows.setdefault(a.q.layer, []).append(any(a.right))
    return ", ".join(f"{layer} {sum(v)}/{len(v)}" for layer, v in sorted(rows.items()) if layer != "none")


GRID = [
    (floor, cover, words)
    for floor in (0.4, 0.45, 0.5, 0.55, 0.6)
    for cover in (0.5, 0.6, 0.7, 0.8)
    for words in (0.0, 0.1, 0.2, 0.3)
]


def cross_validate(
    recallers: dict[str, Recaller], corpora: dict[str, dict], questions: list[Question], folds: int, seed: int
) -> list[dict[str, float]]:
    """Each fold's (min_confidence, min_coverage, min_cosine_with_words) chosen on the other folds (by top 5 +
    confident precision), scored on its own questions."""
    rng = random.Random(seed)
    order = questions[:]
    rng.shuffle(order)
    parts = [order[i::folds] for i in range(folds)]
    results: dict[tuple[float, ...], dict[str, Asked]] = {}
    for setting in GRID:
        for name, recaller in recallers.items():
            base = recaller.config
            recaller.config = replace(
                base, min_confidence=setting[0], min_coverage=setting[1], min_cosine_with_words=setting[2]
            )
            qs = [q for q in questions if q.corpus == name]
            for a in ask(recaller, qs, corpora[name]):
                results.setdefault(setting, {})[a.q.id] = a  # type: ignore[index]
            recaller.config = base
    held_out = []
    for i, part in enumerate(parts):
        train = [q for j, p in enumerate(parts) if j != i for q in p]

        def objective(setting: tuple[float, ...], train: list[Question] = train) -> float:
            s = score([results[setting][q.id] for q in train])  # type: ignore[index]
            return s["top5"] + s["confident_precision"]

        best = max(GRID, key=objective)
        s = score([results[best][q.id] for q in part])  # type: ignore[index]
        s["min_confidence"], s["min_coverage"], s["min_cosine_with_words"] = best
        held_out.append(s)
    return held_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(SET_NAMES), help="sets under scripts/heldout/, comma-separated")
    parser.add_argument("--folds", type=int, default=0, help="cross-validate the confidence floors (0: no)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", action="store_true", help="print each question that misses")
    args = parser.parse_args(argv)
    sets = [name.strip() for name in args.sets.split(",") if name.strip()]
    corpora = {
        f"{set_name}/{name}": json.loads((HELDOUT / set_name / f"corpus_{name}.json").read_text("utf-8"))
        for set_name in sets
        for name in ("store", "hermes")
    }
    questions = [q for name, c in corpora.items() for q in load_questions(c, name)]
    with tempfile.TemporaryDirectory(prefix="memwiki-crosslayer-") as tmp:
        stores = {name: build_store(c, Path(tmp) / name) for name, c in corpora.items() if name.endswith("/store")}
        recallers: dict[str, Recaller] = {
            name: stores[name].recaller if name in stores else build_hermes(corpora[name], Path(tmp) / name)
            for name in corpora
        }
        everything: list[Asked] = []
        for name, recaller in recallers.items():
            qs = [q for q in questions if q.corpus == name]
            asked = ask(recaller, qs, corpora[name])
            dense = dense_top(recaller, [q for q in qs if q.layer != "none"], corpora[name])
            everything += asked
            print(table(f"{name} ({len(qs)} questions)", score(asked), sum(dense) / max(len(dense), 1)))
            print(f"  answer in top 5 by layer: {by_layer(asked)}")
            if args.show:
                for a in asked:
                    if a.q.layer != "none" and not any(a.right):
                        got = "; ".join(f"{h.layer}{'*' if h.confident else ''} {h.text[:40]!r}" for h in a.hits)
                        print(f"    miss {a.q.id} [{a.q.layer}] {a.q.query!r}: {got}")
        for set_name in sets:
            print(table(f"{set_name} (both)", score([a for a in everything if a.q.corpus.startswith(f"{set_name}/")])))
        print(table("all", score(everything)))
        if args.folds:
            held = cross_validate(recallers, corpora, questions, args.folds, args.seed)
            keys = ("top5", "top5_with_decoy", "confident_precision", "confident_recall")
            means = {key: statistics.mean(s[key] for s in held) for key in keys}
            chosen = [(s["min_confidence"], s["min_coverage"], s["min_cosine_with_words"]) for s in held]
            print(f"{args.folds}-fold held-out means: " + ", ".join(f"{k} {v:.2f}" for k, v in means.items()))
            print(f"  chosen per fold (min_confidence, min_coverage, min_cosine_with_words): {chosen}")
        for store in stores.values():
            store.close()
    print(f"load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
