"""Huge inputs (issue 11): long memories are split into passages that recall returns with a pointer to the whole
memory, inputs over the store's hard limit get a clear error and write nothing, a huge hot entry or session
message costs little, and a huge query is cut with a warning. Real Chroma, embedder and SQLite throughout."""

from __future__ import annotations

import json
import logging
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memwiki.agents.cli import main
from memwiki.common.textio import utf8_size
from memwiki.errors import CapacityError, InputTooLargeError
from memwiki.layers.semantic.passages import LONG_BYTES, PASSAGE_BYTES, PASSAGE_KEY, is_long, split
from memwiki.recall.cascade import cut_query
from memwiki.source import Memory
from memwiki.store.config import load_config, save_config
from memwiki.store.store import Store

NEEDLE = "The spare key to the server room is taped under the third drawer of Maria's desk."
FILLER = (
    "The weather report said clouds over the hills and light wind in the valley",
    "Minutes of the weekly meeting were read aloud and approved without changes",
    "The train to the coast left on time and arrived a few minutes early",
    "Somebody brought cake for the birthday and everybody had a slice",
)


def long_text(n_paragraphs: int = 60, needle_at: int = 37, seed: int = 3) -> str:
    rng = random.Random(seed)
    paragraphs = [". ".join(rng.choice(FILLER) for _ in range(6)) + "." for _ in range(n_paragraphs)]
    paragraphs[needle_at] += " " + NEEDLE
    return "\n\n".join(paragraphs)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def store_with_long_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    root = tmp_path / "store"
    assert run(capsys, "--store", str(root), "init")[0] == 0
    text = long_text()
    rows = [
        {"id": "long-1", "text": text, "meta": {"category": "environment"}},
        {"id": "short-1", "text": "Alice drinks green tea every morning before work.", "meta": {}},
        {"id": "short-2", "text": "The user's blog is built with Hugo and hosted on Cloudflare Pages.", "meta": {}},
    ]
    code, out, err = run(
        capsys, "--store", str(root), "import", str(write_jsonl(tmp_path / "m.jsonl", rows)), "--layer", "L2"
    )
    assert code == 0, err
    assert "imported 3 memories" in out
    return root, text


# ── passages ─────────────────────────────────────────────────────────────────────────────────────────


def test_split_tiles_the_text_at_breaks_and_within_the_size() -> None:
    text = long_text()
    spans = split(text)
    assert "".join(text[s.start : s.end] for s in spans) == text
    assert [s.index for s in spans] == list(range(len(spans)))
    assert all(utf8_size(text[s.start : s.end]) <= PASSAGE_BYTES * 1.25 for s in spans)
    assert sum(text[s.start : s.end].endswith((". ", ".\n\n", ".")) for s in spans) >= len(spans) - 1  # at sentences
    cjk = "没有标点的中文" * 2000  # no break anywhere: cut by size, never inside a character
    spans = split(cjk)
    assert "".join(cjk[s.start : s.end] for s in spans) == cjk
    assert max(utf8_size(cjk[s.start : s.end]) for s in spans) <= PASSAGE_BYTES
    assert not is_long("short") and is_long("x" * (LONG_BYTES + 1)) and not is_long("猫" * (LONG_BYTES // 3))


def test_a_long_memory_is_stored_whole_once_and_searched_by_its_passages(
    store_with_long_memory: tuple[Path, str],
) -> None:
    root, text = store_with_long_memory
    with Store.open(root) as store:
        sm = store.semantic
        assert sm.count() == 3
        passages = list(sm._all_passages())
        assert len(passages) == len(split(text)) > 10
        for pid, doc, meta in passages:
            assert pid == f"long-1#p{meta['passage']}" and meta["memory_id"] == "long-1"
            assert doc == text[meta["start"] : meta["end"]]
        assert sm.lexical.count() == 3 + len(passages)  # the long memory's words are its passages'
        reader = store.reader()
        whole = {m.id: m for m in reader.memories()}
        assert sorted(whole) == ["long-1", "short-1", "short-2"] and reader.memory_count() == 3
        assert whole["long-1"].text == text and whole["long-1"].category == "environment"
        assert reader.memory_vectors(["long-1", "short-1"]).shape == (2, 512)
        dense = [i for i, _ in sm.search_ids(store.embedder.embed([NEEDLE])[0], 5)]
        assert "long-1" not in dense and any(i.startswith("long-1#p") for i in dense)


def test_recall_returns_the_passage_and_points_to_the_whole_memory(
    store_with_long_memory: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, text = store_with_long_memory
    with Store.open(root) as store:
        hits = [h for h in store.recall("where is the spare key to the server room", k=3) if h.layer == "L2"]
    assert hits[0].id == "long-1"
    pointer = hits[0].provenance["passage"]
    assert NEEDLE in hits[0].text and len(hits[0].text) < 2 * PASSAGE_BYTES
    assert text[pointer["start"] : pointer["end"]] == hits[0].text
    assert pointer["memory_id"] == "long-1" and pointer["chars"] == len(text) and pointer["count"] == len(split(text))
    assert pointer["id"] == f"long-1#p{pointer['index']}"
    assert f"passage {pointer['index'] + 1} of {pointer['count']} of memory long-1" in hits[0].why
    assert hits[0].provenance["category"] == "environment" and PASSAGE_KEY not in hits[0].provenance.get("meta", {})
    assert len({h.id for h in hits}) == len(hits)  # one hit per memory, however many of its passages match

    code, out, _ = run(capsys, "--store", str(root), "recall", "spare key server room", "--json", "-k", "3")
    assert code == 0 and len(out) < 3 * PASSAGE_BYTES + 2000  # the passage, not the whole memory
    first = json.loads(out)["hits"][0]
    assert first["id"] == "long-1" and NEEDLE in first["text"] and first["provenance"]["passage"]["index"] >= 0


def test_a_memory_made_short_again_loses_its_passages_and_old_stores_open(tmp_path: Path) -> None:
    with Store.init(tmp_path / "s") as store:
        sm = store.semantic
        sm.upsert([Memory("m", long_text()), Memory("n", "A short one.")])
        assert sm._passages.count() > 10
        sm.upsert([Memory("m", "Now it is short.")])
        assert sm._passages.count() == 0 and sm.lexical.count() == 2
        assert [h.id for h in store.recall("now it is short", k=1)] == ["m"]
        sm.upsert([Memory("m", long_text())])
        sm.delete(["m"])
        assert sm._passages.count() == 0 and sm.lexical.count() == 1 and sm.count() == 1
        store.semantic.client.delete_collection(sm._passages.name)  # a store made before passages existed
    with Store.open(tmp_path / "s") as store:
        assert store.semantic.count() == 1 and store.semantic.lexical.count() == 1
        assert [m.id for m in store.semantic.all()] == ["n"]
        assert [h.id for h in store.recall("a short one", k=1)] == ["n"]


# ── the hard limit ───────────────────────────────────────────────────────────────────────────────────


def _limit(root: Path, max_bytes: int) -> None:
    config = load_config(root)
    config.limits.max_input_bytes = max_bytes
    save_config(root, config)


def test_an_input_over_the_hard_limit_is_refused_with_its_line_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "store"
    assert run(capsys, "--store", str(root), "init")[0] == 0
    _limit(root, 20_000)
    rows = [{"id": "a", "text": "fine"}, {"id": "b", "text": "x " * 15_000}, {"id": "c", "text": "also fine"}]
    code, out, err = run(
        capsys, "--store", str(root), "import", str(write_jsonl(tmp_path / "m.jsonl", rows)), "--layer", "L2"
    )
    assert code == 2 and out == ""
    assert "m.jsonl:2:" in err and "0.0 MB (20,000 bytes" in err and "limits.max_input_bytes" in err
    assert "nothing was imported" in err and err.count("\n") == 1
    messages = [
        {"session_id": "s", "role": "user", "content": "hello", "time": "2026-01-01T00:00:00Z"},
        {"session_id": "s", "role": "user", "content": "y" * 30_000, "time": "2026-01-01T00:00:01Z"},
        {"session_id": "s", "role": "user", "content": "z" * 30_000, "time": "2026-01-01T00:00:02Z"},
    ]
    code, _, err = run(
        capsys, "--store", str(root), "import", str(write_jsonl(tmp_path / "s.jsonl", messages)), "--layer", "L4"
    )
    assert code == 2 and "s.jsonl:2:" in err and "1 more line(s) over it" in err
    with Store.open(root) as store:
        assert store.semantic.count() == 0 and store.sessions.stats()["messages"] == 0
        store.semantic.max_input_bytes = 20_000
        with pytest.raises(InputTooLargeError, match="memory 'big' is"):
            store.semantic.upsert([Memory("big", "w" * 20_001)])
        assert store.semantic.count() == 0


def test_store_config_refuses_a_bad_limit(tmp_path: Path) -> None:
    Store.init(tmp_path / "s").close()
    path = tmp_path / "s" / "store.json"
    raw = json.loads(path.read_text())
    raw["limits"] = {"max_input_bytes": "lots"}
    path.write_text(json.dumps(raw))
    with pytest.raises(Exception, match="max_input_bytes must be a positive whole number"):
        load_config(tmp_path / "s")


# ── hot entries, session messages and queries ────────────────────────────────────────────────────────


FIVE_MB = 5_000_000


def test_a_five_megabyte_hot_entry_is_refused_at_once(tmp_path: Path) -> None:
    with Store.init(tmp_path / "s") as store:
        started = time.perf_counter()
        entry = ("log line " * (FIVE_MB // 9 + 1))[: FIVE_MB - 3] + "end"
        with pytest.raises(CapacityError, match=r"entry is 5,000,000 chars, over the 2,200-char limit"):
            store.hot("memory").add(entry)
        assert time.perf_counter() - started < 2.0
        assert store.hot("memory").view().entries == ()


_PEAK_AT_EXIT = (  # the process's own peak memory, written to stderr as it exits (Linux)
    "import atexit, sys; atexit.register(lambda: sys.stderr.write("
    "next(line for line in open('/proc/self/status') if line.startswith('VmHWM'))))"
)


def test_a_five_megabyte_session_message_imports_and_is_found_in_a_small_process(tmp_path: Path) -> None:
    """The import runs in a child process, which reports its own peak memory (VmHWM: its memory's high-water mark
    since it started the interpreter; a fork-exec child's rusage counts the test process it was forked from)."""
    rng = random.Random(9)
    words = "agent deploy mirror package retry network timeout build runner cache".split()
    big = " ".join(rng.choice(words) for _ in range(FIVE_MB // 7))[:FIVE_MB] + " zanzibar"
    rows = [
        {"session_id": "s1", "role": "tool", "content": big, "time": "2026-01-01T00:00:00Z", "title": "log"},
        {"session_id": "s1", "role": "assistant", "content": "Noted.", "time": "2026-01-01T00:00:01Z"},
    ]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    root = tmp_path / "store"
    Store.init(root).close()
    cmd = [
        sys.executable,
        "-c",
        f"{_PEAK_AT_EXIT}; from memwiki.agents.cli import main; main()",
        "--store",
        str(root),
        "import",
        str(path),
    ]
    proc = subprocess.Popen([*cmd, "--layer", "L4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = (b.decode() for b in proc.communicate())
    assert proc.returncode == 0, err
    assert "imported 2 messages in 1 sessions" in out
    peak = re.search(r"VmHWM:\s+(\d+) kB", err)
    assert peak is not None and int(peak.group(1)) / 1024 < 1024, err  # MB: the memory target
    with Store.open(root) as store:
        hits = store.sessions.search("zanzibar", 5)
        assert [h.session.id for h in hits] == ["s1"]
        assert store.sessions.messages("s1")[0].content == big
        vectors = store.reader().embed([big, "Noted."])  # a digest's key turns: the head of a huge message
        assert vectors.shape == (2, 512)


def test_a_huge_query_is_cut_to_what_the_embedder_reads_with_a_warning(
    store_with_long_memory: tuple[Path, str], capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    root, _ = store_with_long_memory
    query = "where is the spare key to the server room " + "and also " * 6_670
    assert len(query) > 60_000
    with caplog.at_level(logging.WARNING, logger="memwiki.recall.cascade"), Store.open(root) as store:
        hits = store.recall(query, k=3)
    assert hits and hits[0].id == "long-1"
    assert any("query of 60,0" in r.getMessage() and "cut to its beginning" in r.getMessage() for r in caplog.records)
    cut = cut_query(query)
    assert query.startswith(cut.strip()) and utf8_size(cut) <= LONG_BYTES
    dialogue = "\n".join(f"turn {i}: " + "words " * 100 for i in range(40)) + "\nlast: where is the spare key?"
    assert cut_query(dialogue).endswith("last: where is the spare key?")  # a dialogue keeps its last turns
    code, out, err = run(capsys, "--store", str(root), "recall", query, "-k", "1")
    assert code == 0 and "long-1" in out
    assert "memwiki: warning: query of 60,0" in err and "characters cut to its beginning" in err
