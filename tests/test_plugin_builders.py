"""Pure parts of the builders: audit checks over triples, extractive digest selection."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memwiki.site.builders.audit import conflicts, expired
from memwiki.site.builders.sessions import mmr, tfidf_vectors
from memwiki.site.model.digest import about, both_sides, spoken
from memwiki.source import Message, Triple


def _t(s: str, p: str, o: str, start: str = "2025-01-01", end: str = "") -> Triple:
    return Triple(id=f"{s}-{p}-{o}", subject=s, predicate=p, object=o, valid_from=start, valid_to=end)


def test_conflicts_are_current_facts_with_different_objects() -> None:
    triples = [
        _t("kb", "endpoint", "v1"),
        _t("kb", "endpoint", "v2"),
        _t("kb", "endpoint", "v0", end="2024-01-01"),  # ended: no conflict
        _t("box", "in", "a", end="2026-02-10"),
        _t("box", "in", "b", start="2026-02-10"),  # superseded: no conflict
    ]
    groups = conflicts(triples)
    assert len(groups) == 1 and {t.object for t in groups[0]} == {"v1", "v2"}


def test_expired_facts_have_no_current_successor() -> None:
    triples = [
        _t("agent", "access", "db", "2026-09-01", "2026-09-30"),
        _t("box", "in", "a", end="2026-02-10"),
        _t("box", "in", "b", start="2026-02-10"),
        _t("x", "until", "later", end="2099-01-01"),  # ends in the future
    ]
    assert [t.object for t in expired(triples, "2026-11-30")] == ["db"]


def test_mmr_picks_central_yet_diverse_turns_in_order() -> None:
    texts = [
        "embed-01 moved to 机房B and its IP changed",
        "ok",
        "embed-01 moved to 机房B, the IP changed too",
        "the cloud knowledge base migrates to v2 with integer scores",
        "embed-01 runs Ollama with qwen3-embedding on 机房B",
    ]
    vectors = tfidf_vectors(texts)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1)
    chosen = mmr(vectors, 2, weights=np.array([1.0, 0.3, 1.0, 1.0, 1.0]))
    assert chosen == sorted(chosen) and 1 not in chosen
    assert not {0, 2} <= set(chosen)  # two near-identical turns are not both chosen
    assert mmr(vectors[:0], 3) == [] and len(mmr(vectors, 10)) == len(texts)


def test_a_session_digest_lists_only_the_facts_that_cite_that_session(tmp_path: Path) -> None:
    """`session s-1` must not claim the facts of `session s-10`."""
    from memwiki.site.builders import sessions as session_pages
    from memwiki.site.model.build_context import BuildContext
    from memwiki.site.speed.builder_speed import BuildSpeed
    from memwiki.store.store import Store

    with Store.init(tmp_path / "s") as store:
        store.graph.add_triple("Juniper", "uses", "Chroma", valid_from="2026-01-01", source_file="session s-1")
        store.graph.add_triple("Juniper", "uses", "SQLite", valid_from="2026-01-01", source_file="session s-10")
        rows = [
            {"session_id": sid, "role": "user", "content": f"hello from {sid}", "time": "2026-11-01T10:00:00Z"}
            for sid in ("s-1", "s-10")
        ]
        (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        store.sessions.import_jsonl(tmp_path / "s.jsonl")
        pages, _ = session_pages.build(BuildContext(store.reader(), speed=BuildSpeed.at(tmp_path / "cache")))
        digest = next(p for p in pages if p.src_uri.endswith("s-1.md"))
        assert "Chroma" in digest.markdown and "SQLite" not in digest.markdown


def _m(role: str, content: str) -> Message:
    return Message(id="", session_id="s", role=role, content=content)


def test_a_digest_says_what_was_asked_what_came_out_and_what_was_decided() -> None:
    messages = [
        _m("user", "Why were the dask workers killed last night? They were fine on Monday."),
        _m("assistant", '→ terminal({"command": "dmesg | tail"})'),
        _m("tool", "Out of memory: Killed process 4242 (dask-worker)"),
        _m("assistant", "The root cause is memory: each worker grew to 14 GB. We decided to cap them at 8 GB."),
        _m("user", "ok, 以后都用 8GB 的上限。"),
        _m("assistant", "Done: the workers now start with --memory-limit 8GB."),
    ]
    summary = about(messages)
    assert summary.asked is not None and summary.asked.n == 1
    assert summary.asked.text == "Why were the dask workers killed last night?"
    assert summary.outcome is not None and summary.outcome.n == 6 and "memory-limit" in summary.outcome.text
    decided = [t.text for t in summary.decisions]
    assert "The root cause is memory: each worker grew to 14 GB." in decided and "ok, 以后都用 8GB 的上限。" in decided
    assert all("dmesg" not in t and "Killed process" not in t for t in decided)  # tool calls and output: never
    assert spoken(messages) == [0, 3, 4, 5]
    assert summary.line().startswith("Why were the dask workers killed last night? → Done:")
    line_only = about(messages + [_m("assistant", '→ terminal({"command": "true"})')], decisions=False)
    assert line_only.line() == summary.line() and not line_only.decisions  # (an index reads no other turn)


def test_key_turns_quote_both_sides() -> None:
    messages = [_m("user", "one question"), _m("assistant", "answer a"), _m("assistant", "answer b")]
    assert both_sides([1, 2], messages, [0, 1, 2]) == [0, 1, 2]
    assert both_sides([0, 1], messages, [0, 1, 2]) == [0, 1]
    assert about([_m("tool", "output only")]).line() == ""
