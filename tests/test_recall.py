"""Recall: hybrid ranking, priority order hot memory → L2 → L4 → files, early stop, all layers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memwiki.errors import MemwikiError
from memwiki.layers.semantic.memory import SemanticMemory
from memwiki.layers.sessions import SessionHistory
from memwiki.readers.vector_cache import VectorCache
from memwiki.recall.cascade import Hit, RecallConfig, Recaller, fuse
from memwiki.source import HotEntry, HotFile, Memory, WikiPage
from memwiki.text.embedders import USEEmbedder

CORPUS = [
    ("nas", "家里的 NAS 是群晖 DS920+，地址 192.168.1.10，共享目录挂载在 /mnt/nas。"),
    ("router", "主路由器刷了 OpenWrt，网关是 192.168.1.1。"),
    ("run", "用户每天早上七点跑步五公里，周末会去爬梧桐山。"),
    ("coffee", "用户的咖啡习惯：只喝美式，不加糖不加奶。"),
    ("book", "用户正在读《置身事内》，对地方财政很感兴趣。"),
    ("kid", "The user's daughter Mia starts primary school in September."),
    ("tabs", "The user prefers tabs over spaces only in Go code; everywhere else spaces."),
    ("vps", "The VPS lives in Tokyo, runs Debian 12, and SSH listens on port 2222 with keys only."),
    ("pg", "生产环境数据库是 PostgreSQL 16，每天凌晨三点做一次 pg_dump 全量备份。"),
]
HOT_TEXT = "The user is allergic to peanuts: never suggest recipes with peanuts."


@pytest.fixture(scope="session")
def use() -> USEEmbedder:
    embedder = USEEmbedder()
    embedder.embed(["warm-up"])
    return embedder


@pytest.fixture(scope="module")
def l2(tmp_path_factory: pytest.TempPathFactory, use: USEEmbedder) -> SemanticMemory:
    semantic = SemanticMemory(tmp_path_factory.mktemp("recall") / "l2", use)
    semantic.upsert([Memory(id=i, text=t) for i, t in CORPUS])
    return semantic


def hot() -> list[HotFile]:
    entries = (HotEntry(0, HOT_TEXT, "pitfall"), HotEntry(1, "Answer in Chinese unless asked otherwise.", "rule"))
    return [HotFile("memory", entries, 2200, 0.7, path="MEMORY.md")]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("每天早上几点去锻炼？跑多远？", "run"),
        ("线上数据库什么时候备份，用什么命令？", "pg"),
        ("Which ssh port does the Tokyo server use?", "vps"),
        ("When does my kid begin school?", "kid"),
    ],
)
def test_hybrid_recall_finds_chinese_and_english_paraphrases(
    use: USEEmbedder, l2: SemanticMemory, query: str, expected: str
) -> None:
    hits = Recaller(use, l2=l2).recall(query, k=3)
    assert hits[0].id == expected and hits[0].layer == "L2"
    assert "dense" in hits[0].why and hits[0].provenance["source"] == "L2"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_hot_memory_answers_first(use: USEEmbedder, l2: SemanticMemory) -> None:
    recaller = Recaller(use, hot_files=hot, l2=l2)
    hits = recaller.recall("Is the user allergic to peanuts?", k=5)
    assert hits[0].layer == "L1" and hits[0].id == "memory:0" and hits[0].text == HOT_TEXT and hits[0].confident
    assert hits[0].provenance == {"file": "MEMORY.md", "target": "memory", "index": 0, "category": "pitfall"}
    assert len(hits) == 5 and "L2" in {h.layer for h in hits}  # the other layers are asked too


def test_a_confident_hot_entry_does_not_hide_the_session_that_answers(
    use: USEEmbedder, l2: SemanticMemory, tmp_path: Path
) -> None:
    """Recall asks every layer: a hot rule that names the query's words does not end it before session history."""
    sessions = SessionHistory(tmp_path / "sessions.sqlite3")
    sessions.add_session("s-oom", title="cluster trouble", started="2026-10-02T09:00:00Z")
    sessions.add_message("s-oom", "user", "The dask workers on tesseract died overnight, what happened?")
    sessions.add_message("s-oom", "assistant", "The kernel's OOM killer ended them: each worker grew to 14 GB.")

    def rules() -> list[HotFile]:
        entry = HotEntry(0, "Rule: dask workers on tesseract run with --memory-limit 8GB, never as root.", "rule")
        return [HotFile("memory", (entry,), 2200, 0.7, path="MEMORY.md")]

    hits = Recaller(use, hot_files=rules, l2=l2, sessions=sessions.search).recall("why were the dask workers killed", 5)
    assert any(h.layer == "L4" and h.provenance["session_id"] == "s-oom" for h in hits), [h.text for h in hits]
    sessions.close()


def test_words_alone_with_an_unrelated_meaning_are_never_confident(use: USEEmbedder) -> None:
    recaller = Recaller(use)
    query = "why were the dask workers killed"
    words_only = Hit("L1", "memory:0", "dask workers killed: why were they? see the rule", 1.0, {}, "", confidence=0.02)
    assert recaller.evidence(query, words_only) is None
    meant = replace(words_only, confidence=recaller.config.min_cosine_with_words + 0.05)
    assert recaller.evidence(query, meant) is not None and "covers" in recaller.evidence(query, meant)


def test_all_layers_goes_on_in_priority_order(use: USEEmbedder, l2: SemanticMemory, tmp_path: Path) -> None:
    sessions = SessionHistory(tmp_path / "sessions.sqlite3")
    sessions.add_session("s1", title="dinner plans", started="2026-03-01T18:00:00Z")
    sessions.add_message("s1", "user", "The doctor confirmed that I am allergic to peanuts.", "2026-03-01T18:01:00Z")
    pages = [WikiPage("food.md", "Food", (), ("food",), "# Food\n\nPeanut allergy: check every recipe for peanuts.")]
    recaller = Recaller(use, hot_files=hot, l2=l2, sessions=sessions.search, wiki_pages=lambda: pages)
    hits = recaller.recall("Is the user allergic to peanuts?", k=2, all_layers=True)
    layers = [h.layer for h in hits]
    assert layers[0] == "L1" and "L2" in layers and "L4" in layers and "files" in layers
    confident = [h.layer for h in hits if h.confident]
    firsts = list(dict.fromkeys(confident))  # each layer's best confident hit before any layer's second
    assert confident[: len(firsts)] == firsts == sorted(firsts, key=["L1", "L2", "L4", "files"].index)
    assert [h.confident for h in hits] == sorted((h.confident for h in hits), reverse=True)  # confident first
    assert sum(h.layer == "L2" for h in hits) == 2  # k per layer
    l4 = next(h for h in hits if h.layer == "L4")
    assert l4.id.startswith("s1#") and "peanut" in l4.text.lower() and l4.provenance["title"] == "dinner plans"
    assert l4.provenance["message_id"] == l4.id.split("#", 1)[1]
    sessions.close()


def test_weak_hits_come_after_confident_ones_best_guesses_first(use: USEEmbedder, l2: SemanticMemory) -> None:
    hits = Recaller(use, hot_files=hot, l2=l2).recall("xyzzyqqq", k=3, all_layers=True)
    assert hits and not any(h.confident for h in hits) and all("weak" in h.why for h in hits)
    assert sorted(h.layer for h in hits) == ["L1", "L1", "L2", "L2", "L2"]  # every layer's k, however weak
    assert [h.layer for h in hits[:2]] == ["L1", "L2"]  # every layer's best guess first, in priority order
    rest = [h.confidence for h in hits[2:]]
    assert rest == sorted(rest, reverse=True)  # then the closest (each layer in its own order)
    mixed = Recaller(use, hot_files=hot, l2=l2).recall("群晖 NAS 的挂载目录", k=3, all_layers=True)
    assert mixed[0].layer == "L2" and mixed[0].id == "nas" and mixed[0].confident
    weak = [h for h in mixed if not h.confident]
    assert weak and [h.layer for h in weak[:2]] == ["L1", "L2"]


def test_l2_answers_when_hot_memory_does_not(use: USEEmbedder, l2: SemanticMemory) -> None:
    hits = Recaller(use, hot_files=hot, l2=l2).recall("群晖 NAS 的挂载目录", k=3)
    assert hits[0].layer == "L2" and hits[0].id == "nas" and hits[0].confident
    assert not any(h.confident for h in hits if h.layer == "L1")  # the hot entries, if shown, are weak guesses


def test_empty_query_is_an_error(use: USEEmbedder, l2: SemanticMemory) -> None:
    for query in ("", "   \n\t"):
        with pytest.raises(MemwikiError, match="empty query"):
            Recaller(use, l2=l2).recall(query)


def test_a_dialogue_finds_what_its_last_turn_asks(use: USEEmbedder, l2: SemanticMemory) -> None:
    dialogue = "我们聊聊孩子的学校吧。\n其实我更想问：家里路由器的网关地址是多少？"
    assert Recaller(use, l2=l2).recall(dialogue, k=1)[0].id == "router"


def test_z_fusion_weighs_the_list_whose_best_stands_out() -> None:
    dense = [("a", 0.50), ("b", 0.49), ("c", 0.48), ("e", 0.47)]  # flat: no clear winner by meaning
    lexical = [("c", 12.0), ("d", 1.0), ("a", 0.9), ("b", 0.8)]  # one clear winner by words
    ranked = fuse(dense, lexical, RecallConfig())
    assert {r.id for r in ranked} == {"a", "b", "c", "d", "e"} and ranked[0].id == "c"
    assert ranked[0].why() == "dense 0.48 (#3) + lexical 12.00 (#1)"
    equal = fuse(dense, lexical, RecallConfig(peak_weighting=False))
    assert [r.id for r in fuse(dense, [], RecallConfig())] == ["a", "b", "c", "e"]  # one list: its own order
    assert equal[0].score < ranked[0].score  # without peak weighting the flat list has an equal say


def test_vector_cache_reembeds_only_changes_and_serves_recall(use: USEEmbedder, tmp_path: Path) -> None:
    source = [Memory(id=i, text=t, wing="w") for i, t in CORPUS]
    cache = VectorCache(tmp_path / "cache", use)
    assert cache.update(source) == len(CORPUS)
    assert VectorCache(tmp_path / "cache", use).update(source) == 0  # loaded from disk, nothing re-embedded
    changed = [*source[:-1], Memory(id="pg", text="生产数据库已迁移到 MySQL 8。")]
    assert cache.update(changed) == 1
    hits = Recaller(use, l2=cache).recall("Which ssh port does the Tokyo server use?", k=2)
    assert hits[0].id == "vps" and hits[0].provenance["wing"] == "w"
    assert cache.lexical_search("MySQL", 3)[0][0] == "pg" and cache.lexical_search("pg_dump", 3) == []
    assert cache.update(changed[:3]) == 0 and cache.count() == 3 and cache.lexical.count() == 3


def test_small_layer_hit_kept_by_lexical_coverage(use: USEEmbedder, l2: SemanticMemory) -> None:
    entry = "备份：restic 每天凌晨三点跑，保留策略 7d/4w/12m，仓库在 NAS 上。"

    def files() -> list[HotFile]:
        return [HotFile("memory", (HotEntry(0, entry, "environment"), HotEntry(1, HOT_TEXT, "pitfall")), 2200, 0.7)]

    recaller = Recaller(use, hot_files=files, l2=l2)
    hits = [
        h
        for h in recaller.recall("restic 备份的保留策略改成了什么？", k=3, all_layers=True)
        if h.layer == "L1" and h.confident
    ]
    assert [h.id for h in hits] == ["memory:0"] and "covers 71%" in hits[0].why  # the peanut entry is no answer
    assert hits[0].confidence < recaller.config.min_confidence  # kept by coverage, not by its cosine
    strict = Recaller(use, hot_files=files, l2=l2, config=RecallConfig(min_coverage=1.01))
    hits = [h for h in strict.recall("restic 备份的保留策略改成了什么？", k=3, all_layers=True) if h.layer == "L1"]
    assert hits[0].id == "memory:0" and "first by meaning and by words" in hits[0].why and not hits[0].confident


def test_peak_weighting_gives_a_flat_retriever_less_say() -> None:
    dense = [("a", 0.80), ("b", 0.50), ("c", 0.45), ("d", 0.44), ("e", 0.43)]
    lexical = [("b", 5.0), ("c", 4.9), ("d", 4.8), ("e", 2.0), ("a", 1.0)]  # no clear winner: b, c, d alike
    assert fuse(dense, lexical, RecallConfig(peak_weighting=True))[0].id == "a"
    assert fuse(dense, lexical, RecallConfig(peak_weighting=False))[0].id == "b"
    ranked = fuse([("a", 0.5)], [("b", 3.0)], RecallConfig())  # nothing stands out: equal weights
    assert {r.id for r in ranked} == {"a", "b"}


def test_vector_cache_reindexes_words_made_by_another_tokenizer(use: USEEmbedder, tmp_path: Path) -> None:
    import sqlite3

    from memwiki.text.tokens import TOKENIZER_VERSION

    source = [Memory(id=i, text=t) for i, t in CORPUS]
    VectorCache(tmp_path / "cache", use).update(source)
    (lexical,) = (tmp_path / "cache").glob("*/lexical.sqlite3")
    db = sqlite3.connect(lexical)
    db.execute("UPDATE lex_fts SET body = 'stale'")  # what an older tokenizer might have left
    db.execute("UPDATE lex_df SET df = 999")
    db.execute(f"PRAGMA user_version = {TOKENIZER_VERSION - 1}")
    db.commit()
    db.close()
    cache = VectorCache(tmp_path / "cache", use)
    assert cache.update(source) == 0  # no text embedded again: only the words are indexed again
    assert cache.lexical.current() and cache.lexical_search("pg_dump", 3)[0][0] == "pg"
    assert cache.lexical_search("stale", 3) == []
