"""CJK-aware tokens: stop characters on the query side, unigrams on the index side, coverage."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwiki.layers.sessions import SessionHistory
from memwiki.text.lexical import LexicalIndex
from memwiki.text.tokens import STOP_CHARS, coverage, fts_query, fts_text, is_cjk, tokens


def test_question_scaffolding_is_dropped_on_the_query_side_only() -> None:
    query = "存储服务器是什么型号，挂在哪个路径？"
    assert tokens(query) == ["存储", "储服", "服务", "务器", "型号", "路径"]
    assert "什么" in tokens(query, stop_words=False) and "器是" in tokens(query, stop_words=False)
    assert tokens("什么") == [] and tokens("什么", stop_words=False) == ["什么"]
    assert fts_query("是什么") == '"是什" AND "什么"'  # all scaffolding: fall back to every token
    assert all(not STOP_CHARS.intersection(t) for t in tokens("我的晨练习惯是什么？"))


def test_index_side_holds_cjk_unigrams_and_bigrams() -> None:
    body = fts_text("我家的猫很可爱 cats")
    assert body.split() == ["我家", "家的", "的猫", "猫很", "很可", "可爱", *"我家的猫很可爱", "cat"]
    assert tokens("猫") == ["猫"]  # a one-character query asks for the character


@pytest.fixture()
def history(tmp_path: Path) -> SessionHistory:
    sessions = SessionHistory(tmp_path / "sessions.sqlite3")
    sessions.add_session("pets", title="pets", started="2026-01-02T10:00:00Z")
    sessions.add_message("pets", "user", "我家的猫很可爱", "2026-01-02T10:00:00Z")
    sessions.add_session("dance", title="dance", started="2026-01-03T10:00:00Z")
    sessions.add_message("dance", "user", "我周末去学跳舞了", "2026-01-03T10:00:00Z")
    sessions.add_message("dance", "user", "跳舞课在周三晚上，舞蹈老师很好", "2026-01-03T10:05:00Z")
    sessions.add_session("other", title="other", started="2026-01-04T10:00:00Z")
    sessions.add_message("other", "user", "舞台上的灯光太亮了，跳过这一段", "2026-01-04T10:00:00Z")
    yield sessions
    sessions.close()


def test_one_character_query_finds_its_message(history: SessionHistory) -> None:
    hits = history.search("猫")
    assert [h.session.id for h in hits] == ["pets"] and "«猫»" in hits[0].snippets[0]


def test_two_character_query_still_matches_bigrams(history: SessionHistory) -> None:
    hits = history.search("跳舞")
    # "other" holds 跳 and 舞 apart but not the bigram 跳舞: it is not a match.
    assert [h.session.id for h in hits] == ["dance"] and len(hits[0].snippets) == 2


def test_lexical_index_ranks_bigram_matches_first() -> None:
    index = LexicalIndex(":memory:")
    try:
        index.upsert([("a", "用户周末会去跳舞"), ("b", "舞台灯光，跳过"), ("c", "猫")])
        assert [i for i, _ in index.search("跳舞", 5)] == ["a"]
        assert [i for i, _ in index.search("猫", 5)] == ["c"]
    finally:
        index.close()


def test_coverage_counts_informative_tokens() -> None:
    query = "restic 备份的保留策略改成了什么？"
    assert coverage(query, "备份：restic 每天凌晨，保留策略 7d/4w/12m") == pytest.approx(5 / 7)
    assert coverage(query, "用户的咖啡只喝美式") == 0.0
    assert coverage("Which port does SSH use?", "SSH listens on port 2222") == pytest.approx(2 / 3)
    assert coverage("？？", "anything") == 0.0


def test_tokens_without_cjk_are_the_other_words_unchanged() -> None:
    text = "用户 uses Docker 容器 on the café's NAS（ＡＢＣ）"
    plain = tokens(text, stop_words=False, cjk=False)
    assert plain == [t for t in tokens(text, stop_words=False) if not is_cjk(t)]
    assert "docker" in plain and not any(is_cjk(t) for t in plain)
