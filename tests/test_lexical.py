"""The lexical side index: SQLite FTS5 over CJK-aware tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwiki.text.lexical import LexicalIndex


@pytest.fixture()
def index(tmp_path: Path) -> LexicalIndex:
    ix = LexicalIndex(tmp_path / "lex.sqlite3")
    ix.upsert(
        [
            ("a", "周末去梧桐山跳舞，然后喝咖啡"),
            ("b", "The build server runs nightly backups of PostgreSQL"),
            ("c", "用户喜欢喝美式咖啡，不加糖"),
        ]
    )
    return ix


def test_two_character_chinese_query_finds_its_text(index: LexicalIndex) -> None:
    assert [i for i, _ in index.search("跳舞", 5)] == ["a"]


def test_english_words_are_stemmed_and_scores_are_ordered(index: LexicalIndex) -> None:
    hits = index.search("backup servers", 5)
    assert hits[0][0] == "b"
    both = index.search("咖啡 美式", 5)
    assert [i for i, _ in both] == ["c", "a"]
    assert both[0][1] > both[1][1]


def test_upsert_replaces_and_delete_removes(index: LexicalIndex, tmp_path: Path) -> None:
    index.upsert([("a", "a completely different text about kites")])
    assert index.count() == 3
    assert index.search("跳舞", 5) == []
    assert index.search("kite", 5)[0][0] == "a"
    index.delete(["a", "missing"])
    assert index.count() == 2
    assert index.search("kite", 5) == []
    index.close()
    assert LexicalIndex(tmp_path / "lex.sqlite3").count() == 2  # persisted


def test_fts_syntax_in_a_query_is_plain_text(index: LexicalIndex) -> None:
    assert index.search('NEAR(" AND OR * ^', 5) == []
    assert index.search("   ", 5) == []
    assert index.search("postgresql AND (", 5)[0][0] == "b"


def test_frequent_tokens_are_dropped_past_the_postings_budget() -> None:
    ix = LexicalIndex(":memory:")
    ix.upsert([(f"n{i}", f"common note number {i}") for i in range(40)] + [("rare", "common note zebra")])
    assert ix._affordable(["common", "note", "zebra"], budget=10) == ["zebra"]
    assert ix.search("common note zebra", 3, budget=10)[0][0] == "rare"
    # only tokens in more than half the texts: none is worth its postings (bm25 gives them no weight)
    assert ix._affordable(["common", "note"], budget=10) == [] and ix.search("common note", 3, budget=10) == []
    assert len(ix.search("common note", 3, budget=1000)) == 3  # within the budget, every token is matched
    assert ix._affordable(["common", "zebra"]) == ["zebra", "common"]  # the default budget: rarest first
    assert ix._affordable(["zebra", "7"], budget=1) == ["zebra"]  # one text each: one fits the budget
    assert ix._affordable(["zebra", "7"], budget=0) == []  # even the rarest is over the budget


def test_diacritics_do_not_keep_words_apart() -> None:
    ix = LexicalIndex(":memory:")
    ix.upsert([("a", "A naïve approach at the café"), ("b", "a plain résumé"), ("c", "nothing here")])
    assert [i for i, _ in ix.search("naive", 3)] == ["a"] and [i for i, _ in ix.search("cafe", 3)] == ["a"]
    assert [i for i, _ in ix.search("café naïve", 3)] == ["a"] and [i for i, _ in ix.search("resume", 3)] == ["b"]


def test_equal_scores_are_ranked_by_id() -> None:
    ix = LexicalIndex(":memory:")
    ix.upsert([("m3", "tea time"), ("m1", "tea time"), ("m2", "tea time")])  # the same text: the same bm25
    assert [i for i, _ in ix.search("tea", 3)] == ["m1", "m2", "m3"]


def test_count_and_version_follow_writes_made_through_another_connection(index: LexicalIndex, tmp_path: Path) -> None:
    """`count()` is kept between calls (a million-row count costs ~10 ms a query): another writer's commit (another
    process's, here another connection's) must still be seen at once."""
    other = LexicalIndex(tmp_path / "lex.sqlite3")
    try:
        assert other.count() == index.count() == 3
        before = index.version()
        other.upsert([("d", "新的一条记忆")])
        assert index.version() != before
        assert index.count() == 4 and [i for i, _ in index.search("记忆", 5)] == ["d"]
        other.delete(["a", "d"])
        assert index.count() == 2
        index.upsert([("e", "再来一条")])  # its own write too
        assert index.count() == 3 == other.count()
    finally:
        other.close()
