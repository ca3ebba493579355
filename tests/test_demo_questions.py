"""The demo store answers its own questions: tests/demo_questions.jsonl through the real `memwiki recall`.

The demo store is built from demo/ into a temporary folder (the real store, Chroma and the default USE
embedder; no network), and every question of tests/demo_questions.jsonl is asked through the CLI's entry point
(`memwiki.agents.cli.main`, `memwiki recall --batch FILE --all-layers --json -k 5`); a few are asked again through the
installed console script in a subprocess, one query at a time, which must answer the same.

Format of tests/demo_questions.jsonl (one JSON object a line). The site's search test reads the same file, so
keep it stable: add fields, do not rename or remove them.

- `id`: "dq-NN", unique.
- `lang`: "zh", "en" or "mixed", the language of the query (about a third each).
- `query`: what a user asks, in their own words: a paraphrase of the demo's content, not a copy of it.
- `layer`: "L1" (hot memory), "L2" (semantic memory), "L4" (session history) or "files" (the store's wiki
  pages and entity pages): the layer whose first hit must be `expect`.
- `expect`: what must come first in that layer.
    - L1: a substring of exactly one hot-memory entry (MEMORY.md or USER.md) as the demo store holds it after
      its sinks, or a hit id `memory:N` / `user:N` (fragile: indexes move when entries sink).
    - L2: a memory id (`m-018`), or a substring of the text of exactly one memory (for memories that sank
      from hot memory, whose ids are hashes).
    - L4: a session id (`s-1020-infra`): any turn of that session counts.
    - files: a wiki page's path inside the store's wiki folder (`embed-01.md`, the page built from
      demo/wiki/embed-01.md), or an entity page id (`entity:<slug>`).
- `why`: the fact that answers the query, for whoever reads a failure.

The list was written from demo/ alone, question by question, before looking at what the ranking returns
(dq-01..dq-42). README's recall examples are in it (`嵌入服务跑在哪台机器上？`, `备份策略`, `向量库要注意什么？`);
dq-43 is README's first example, chosen after dq-01 showed that the default embedder does not take 向量模型 for
"embedding model". Do not edit a question to make it pass: a question that fails is a finding about the ranking
(or about the demo).

Checks (`layer rank`: where the expected item stands among its layer's hits; `overall`: in the whole answer, in
the order the CLI returns it, the order a reader of `memwiki recall --all-layers` or of the site's search sees):
- `test_the_readme_examples_answer`: each README example's item is first in its layer and in the top 3 overall;
- `test_the_demo_answers_its_own_questions`: the shares of the list first in their layer, in their layer's top 5
  and in the top 3 overall stay above measured floors (FIRST_IN_LAYER …), every miss listed when one falls.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memwiki.agents.cli import main
from memwiki.store.demo import build_demo_store
from memwiki.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS_FILE = ROOT / "tests" / "demo_questions.jsonl"
LAYERS = ("L1", "L2", "L4", "files")
K = 5  # hits per layer, as in README's example
TOP = 3
README_QUERIES = ("嵌入服务跑在哪台机器上？", "备份策略", "向量库要注意什么？")


def load_questions(path: Path = QUESTIONS_FILE) -> list[dict[str, str]]:
    """The questions of the list, in file order."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


QUESTIONS = load_questions()
BY_ID = {q["id"]: q for q in QUESTIONS}


def hits_of(answer: Any) -> list[dict[str, Any]]:  # noqa: ANN401 - parsed JSON
    """The hits of one query's JSON answer (`{"query", "confident", "hits"}`, or a bare list of hits)."""
    return answer["hits"] if isinstance(answer, dict) else answer


def matches(hit: dict[str, Any], expect: str) -> bool:
    """Whether a hit is the item `expect` names (see the module docstring for what names what)."""
    if hit["id"] == expect:
        return True
    layer, prov = hit["layer"], hit.get("provenance") or {}
    if layer in ("L1", "L2"):
        return expect in hit["text"]
    if layer == "L4":
        return prov.get("session_id") == expect or hit["id"].partition("#")[0] == expect
    return prov.get("path") == expect


def describe(hit: dict[str, Any] | None) -> str:
    if hit is None:
        return "nothing"
    text = " ".join(hit["text"].split())
    return f"{hit['layer']} {hit['id']} ({text[:60]}{'…' if len(text) > 60 else ''})"


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store built from demo/ in a temporary folder (never the shared .cache/demo-store)."""
    return build_demo_store(ROOT / "demo", tmp_path_factory.mktemp("demo-questions") / "store")


def run_cli(argv: list[str]) -> str:
    """`memwiki ARGV` through the console script's entry point, in this process: its stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0, f"memwiki {' '.join(argv)} exited with {exit_.value.code}"
    return out.getvalue()


@pytest.fixture(scope="module")
def answers(demo_store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Every question asked once, in one `memwiki recall --batch` run: question id -> hits in the CLI's order."""
    batch = tmp_path_factory.mktemp("demo-questions-batch") / "queries.jsonl"
    batch.write_text(
        "".join(json.dumps({"id": q["id"], "query": q["query"]}, ensure_ascii=False) + "\n" for q in QUESTIONS),
        encoding="utf-8",
    )
    out = run_cli(["--store", str(demo_store), "recall", "--batch", str(batch), "--all-layers", "--json", "-k", str(K)])
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [r["id"] for r in rows] == [q["id"] for q in QUESTIONS]
    return {r["id"]: hits_of(r) for r in rows}


# -- the list itself ---------------------------------------------------------------------------------


def test_the_list_is_well_formed() -> None:
    assert len(QUESTIONS) >= 30
    assert len(BY_ID) == len(QUESTIONS), "question ids must be unique"
    for q in QUESTIONS:
        assert {"id", "lang", "query", "layer", "expect", "why"} <= q.keys(), q
        assert q["layer"] in LAYERS and q["lang"] in ("zh", "en", "mixed"), q
        assert q["query"].strip() and q["expect"].strip() and q["why"].strip(), q
    langs = Counter(q["lang"] for q in QUESTIONS)
    assert all(langs[lang] >= len(QUESTIONS) // 4 for lang in ("zh", "en", "mixed")), langs  # about a third each
    assert {q["layer"] for q in QUESTIONS} == set(LAYERS)
    assert set(README_QUERIES) <= {q["query"] for q in QUESTIONS}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(query in readme for query in README_QUERIES), "README's recall examples changed: update the list"


def test_each_expectation_names_one_real_item_of_the_demo(demo_store: Path) -> None:
    """An expectation that names nothing (the demo changed) or several items (a substring too short) fails
    here, not as a ranking failure."""
    with Store.open(demo_store) as store:
        source = store.reader()
        hot = {f"{f.target}:{e.index}": e.text for f in source.hot_files() for e in f.entries}
        memories = {m.id: m.text for m in source.memories()}
        sessions = {s.id for s in source.sessions()}
        pages = {p.path for p in source.wiki_pages()} | {f"entity:{e.id}" for e in source.entities()}
    wrong = []
    for q in QUESTIONS:
        expect, layer = q["expect"], q["layer"]
        if layer in ("L1", "L2"):
            items = hot if layer == "L1" else memories
            found = 1 if expect in items else sum(expect in text for text in items.values())
        else:
            found = int(expect in (sessions if layer == "L4" else pages))
        if found != 1:
            wrong.append(f"{q['id']}: {layer} {expect!r} names {found} items")
    assert wrong == []


# -- the answers -------------------------------------------------------------------------------------


def layer_rank(hits: list[dict[str, Any]], q: dict[str, str]) -> int | None:
    """Where the expected item stands among the hits of its layer (1 = first), None when it is not there."""
    layer_hits = [h for h in hits if h["layer"] == q["layer"]]
    return next((n for n, h in enumerate(layer_hits, 1) if matches(h, q["expect"])), None)


def overall_rank(hits: list[dict[str, Any]], q: dict[str, str]) -> int | None:
    return next((n for n, h in enumerate(hits, 1) if h["layer"] == q["layer"] and matches(h, q["expect"])), None)


def misses(answers: dict[str, list[dict[str, Any]]], ok: Any) -> list[str]:  # noqa: ANN401 - a predicate
    """The questions `ok(hits, question)` rejects, each with what came first instead."""
    out = []
    for q in QUESTIONS:
        hits = answers[q["id"]]
        if not ok(hits, q):
            first = next((h for h in hits if h["layer"] == q["layer"]), None)
            out.append(
                f"{q['id']} {q['query']!r}: want {q['layer']} {q['expect']!r} ({q['why']}); in its layer "
                f"#{layer_rank(hits, q)}, overall #{overall_rank(hits, q)}; first of the layer: {describe(first)}"
            )
    return out


# Floors for the whole list (43 questions, the default USE embedder): what the ranking reaches, so that a change
# that answers fewer of the demo's own questions fails here, with every miss listed. Measured at this commit:
# first in its layer 33 of 43, in the layer's top 5 38 of 43, in the top 3 overall 28 of 43 (first in its layer
# 32 since recall asks every layer and returns each layer's weak guesses too, issue 23). The misses are the
# embedder's (向量模型 for "embedding model", a Chinese question about an English memory, an English question
# about a Chinese entry) or a near neighbour ranked just above: see the note of issue 12.
FIRST_IN_LAYER = 0.74
IN_LAYER_TOP5 = 0.85
TOP3_OVERALL = 0.6


def test_the_readme_examples_answer(answers: dict[str, list[dict[str, Any]]]) -> None:
    """README's recall examples bring what they are about first in its layer, in the top 3 of the answer."""
    wanted = [q for q in QUESTIONS if q["query"] in README_QUERIES]
    assert {q["query"] for q in wanted} == set(README_QUERIES)
    bad = [q for q in wanted if layer_rank(answers[q["id"]], q) != 1 or (overall_rank(answers[q["id"]], q) or 99) > TOP]
    assert bad == [], misses(answers, lambda hits, q: q not in bad)


def test_the_demo_answers_its_own_questions(answers: dict[str, list[dict[str, Any]]]) -> None:
    n = len(QUESTIONS)
    for floor, ok in (
        (FIRST_IN_LAYER, lambda hits, q: layer_rank(hits, q) == 1),
        (IN_LAYER_TOP5, lambda hits, q: layer_rank(hits, q) is not None),
        (TOP3_OVERALL, lambda hits, q: (overall_rank(hits, q) or 99) <= TOP),
    ):
        missed = misses(answers, ok)
        assert (n - len(missed)) / n >= floor, f"{n - len(missed)} of {n} answered (floor {floor:.0%}):\n" + "\n".join(
            missed
        )


def _console_script() -> list[str]:
    script = shutil.which("memwiki", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    return [script] if script else [sys.executable, "-m", "memwiki.agents.cli"]


@pytest.mark.parametrize("qid", ["dq-01", "dq-16", "dq-31"])  # one Chinese, one English, one mixed
def test_the_console_script_answers_as_the_batch(
    demo_store: Path, answers: dict[str, list[dict[str, Any]]], qid: str
) -> None:
    """`memwiki recall QUERY` in its own process (the installed console script) ranks as the batch run did."""
    q = BY_ID[qid]
    argv = [*_console_script(), "--store", str(demo_store), "recall", q["query"], "--all-layers", "--json"]
    argv += ["-k", str(K)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=demo_store.parent, env=env)
    assert done.returncode == 0, done.stderr
    alone = hits_of(json.loads(done.stdout))
    assert [(h["layer"], h["id"]) for h in alone] == [(h["layer"], h["id"]) for h in answers[qid]]
