"""The store as an agent uses it: init, the five layers together, overflow into L2, recall, bad stores."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memwiki.errors import CapacityError, EmbedderMismatchError, MemwikiError, NotAStoreError
from memwiki.layers.semantic.memory import SemanticMemory
from memwiki.recall.cascade import OpeningL2
from memwiki.store.config import StoreConfig
from memwiki.store.demo import build_demo_store
from memwiki.store.store import Store
from memwiki.text.embedders import OllamaEmbedder


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    with Store.init(tmp_path / "s") as s:
        yield s


def test_init_creates_every_layer_and_reopens(tmp_path: Path) -> None:
    root = tmp_path / "s"
    Store.init(root).close()
    for name in (
        "store.json",
        "SOUL.md",
        "MEMORY.md",
        "USER.md",
        "wiki",
        "l2",
        "knowledge_graph.sqlite3",
        "sessions.sqlite3",
    ):
        assert (root / name).exists(), name
    with Store.open(root) as s:
        assert s.stats()["L2"]["memories"] == 0


def test_open_refuses_a_folder_that_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(NotAStoreError, match="not a memwiki store"):
        Store.open(tmp_path)


def test_half_written_store_is_refused_and_init_completes_it(tmp_path: Path) -> None:
    root = tmp_path / "s"
    Store.init(root).close()
    (root / "USER.md").unlink()
    with pytest.raises(NotAStoreError, match="half-written.*USER.md"):
        Store.open(root)
    shutil.rmtree(root / "l2")
    with pytest.raises(NotAStoreError, match="half-written.*USER.md, l2"):
        Store.open(root)
    assert not (root / "l2").exists(), "opening must not recreate a lost layer empty"
    with Store.init(root) as store:
        assert store.repaired == ["USER.md", "l2"]
    Store.open(root).close()


def test_demo_build_never_replaces_a_real_store(tmp_path: Path) -> None:
    root = tmp_path / "mine"
    with Store.init(root) as store:
        store.remember("[pref] my precious note", target="user")
    with pytest.raises(MemwikiError, match="not a demo store"):
        build_demo_store(Path(__file__).parents[1] / "demo", root)
    assert "my precious note" in (root / "USER.md").read_text(encoding="utf-8")


def test_store_made_with_another_embedder_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "s"
    Store.init(root).close()
    with pytest.raises(EmbedderMismatchError, match="use-multilingual-v3"):
        Store.open(root, embedder=OllamaEmbedder("qwen3-embedding:0.6b", "http://127.0.0.1:9", dim=1024))


def test_context_is_frozen_at_session_start(store: Store) -> None:
    store.set_persona("你是小忆，一个记忆助手。")
    store.remember("Prefers answers in Chinese.", target="user")
    block = store.start_session()
    assert "小忆" in block and "Prefers answers in Chinese." in block
    store.remember("用户讨厌长篇免责声明。", target="user")
    assert store.context() == block, "a write during the session must not change the frozen block"
    assert "用户讨厌长篇免责声明。" in (store.hot("user").path.read_text(encoding="utf-8"))
    assert "用户讨厌长篇免责声明。" in store.start_session()


def test_overflow_sinks_non_core_entries_and_recall_still_finds_them(tmp_path: Path) -> None:
    config = StoreConfig()
    config.caps.memory = 280
    with Store.init(tmp_path / "s", config) as store:
        store.remember("[rule] Never batch several prod changes into one step.")
        store.remember("[env] 开发机是 MacBook Pro M3 Max，shell 用 zsh + starship。")
        store.remember("[network] 家庭网关 OPNsense 在 192.168.10.1，WireGuard 端口 51820/udp。")
        records = store.remember("[project] order-service 用 Go 1.22，部署在 ArgoCD 的 order-svc-prod。")
        hot = store.hot("memory").view()
        assert hot.usage <= 0.70
        sunk = store.sink_log.records()
        assert sunk and records, "something must have sunk past 70% of 280 chars"
        assert all(r.category not in ("rule", "preference", "pitfall", "authorisation") for r in sunk)
        assert any("Never batch" in e.text for e in hot.entries), "core entries stay hot"
        in_l2 = {m.id: m for m in store.semantic.get([r.memory_id for r in sunk])}
        assert len(in_l2) == len(sunk) and all(m.source == "L1" for m in in_l2.values())
        every = {e.text for e in hot.entries} | {m.text for m in in_l2.values()}
        assert len(every) == 4, "nothing is lost on the way down"
        hits = store.recall("开发机是什么型号，用什么 shell？", k=3, all_layers=True)
        assert any(h.layer == "L2" and "starship" in h.text for h in hits)


def test_a_one_shot_recall_opens_l2_aside_and_an_opening_that_failed_is_tried_again(tmp_path: Path) -> None:
    """`memwiki recall`'s recaller opens L2 in a thread while the query is embedded and finds what the store's own
    recaller finds; an opening that failed raises at first use and opens again at the next (a server back up)."""
    root = tmp_path / "s"
    config = StoreConfig()
    config.caps.memory = 280
    with Store.init(root, config) as store:  # (a small hot file: entries sink into L2)
        store.remember("[rule] Never batch several prod changes into one step.")
        store.remember("[env] 开发机是 MacBook Pro M3 Max，shell 用 zsh + starship。")
        store.remember("[network] 家庭网关 OPNsense 在 192.168.10.1，WireGuard 端口 51820/udp。")
        store.remember("[project] order-service 用 Go 1.22，部署在 ArgoCD 的 order-svc-prod。")
        assert store.semantic.count()
        want = [(h.layer, h.text) for h in store.recall("开发机用什么 shell？", k=3, all_layers=True)]
        assert any(layer == "L2" for layer, _ in want)
    with Store.open(root) as store:
        recaller = store.recaller_for_one_query()
        assert isinstance(recaller.l2, OpeningL2) and store.recaller is recaller
        assert [(h.layer, h.text) for h in store.recall("开发机用什么 shell？", k=3, all_layers=True)] == want
    with Store.open(root) as store:
        tries: list[int] = []

        def open_once_down() -> SemanticMemory:
            tries.append(1)
            if len(tries) == 1:
                raise MemwikiError("the Chroma server is down")
            return store.semantic

        l2 = OpeningL2(open_once_down)
        with pytest.raises(MemwikiError, match="down"):
            l2.lexical_search("starship", 3)
        assert l2.lexical_search("starship", 3) and len(tries) == 2


def test_add_that_cannot_fit_even_after_sinking_is_refused(tmp_path: Path) -> None:
    config = StoreConfig()
    config.caps.user = 120
    with Store.init(tmp_path / "s", config) as store:
        store.remember("[pref] Conclusion first, then reasons; no long preambles please.", target="user")
        before = store.hot("user").path.read_bytes()
        with pytest.raises(CapacityError):
            store.remember("[rule] " + "Always confirm before any destructive operation. " * 2, target="user")
        assert store.hot("user").path.read_bytes() == before
        assert store.sink_log.records() == []


def test_reader_offers_every_layer(store: Store, tmp_path: Path) -> None:
    store.set_persona("persona")
    store.remember("[pref] 先给结论。", target="user")
    store.graph.add_triple("memwiki", "uses", "Chroma", valid_from="2026-01-01")
    sessions = tmp_path / "s.jsonl"
    sessions.write_text(
        json.dumps(
            {"session_id": "a", "role": "user", "content": "我们周末去跳舞吧", "time": "2026-11-01T10:00:00Z"},
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    store.sessions.import_jsonl(sessions)
    (store.wiki_dir / "chroma.md").write_text("---\ntitle: Chroma\naliases: [向量库]\n---\nThe L2 store.\n")
    reader = store.reader()
    assert reader.persona().text == "persona"
    assert [f.target for f in reader.hot_files()] == ["memory", "user"]
    assert [t.predicate for t in reader.triples()] == ["uses"]
    assert [s.id for s in reader.sessions()] == ["a"]
    assert reader.search_sessions("跳舞")[0].session.id == "a"
    assert reader.wiki_pages()[0].aliases == ("向量库",)
    before = reader.fingerprint()
    store.remember("[pref] 回答用中文。", target="user")
    assert reader.fingerprint() != before


def test_an_entry_the_rules_miss_but_that_reads_core_stays_hot(tmp_path: Path) -> None:
    """The rules see no core word in it; its meaning (nearest labelled examples) keeps it from sinking."""
    from memwiki.layers.hot.categories import category_of

    unmarked = "Address the user as Professor Li in every email."
    assert category_of(unmarked)[0] == "other", "precondition: the rules alone would sink it"
    config = StoreConfig()
    config.caps.memory = 240
    with Store.init(tmp_path / "s", config) as store:
        store.remember(unmarked)
        store.remember("[env] Build box: Debian 12, Python 3.11, repo in ~/src/memwiki.")
        store.remember("[network] Embedding server embed-01 at 10.0.3.17, port 11434.")
        sunk = [r.text for r in store.sink_log.records()]
        hot = [e.text for e in store.hot("memory").view().entries]
        assert unmarked in hot and unmarked not in sunk
        assert sunk, "a non-core entry went down instead"
