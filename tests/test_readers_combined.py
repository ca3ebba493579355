"""CombinedSource and open_sources: a hermes home (L0, L1, L4) with a MemPalace palace (L2, L3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixture_copies import checksums, copy_fixtures
from fixture_homes import pristine

from memwiki.errors import SourceError
from memwiki.readers import CombinedSource, HermesHome, MemPalace
from memwiki.readers.locate import hermes_home_path, palace_path
from memwiki.recall.sources import recaller_for
from memwiki.source import MemorySource
from memwiki.store.open_sources import open_sources
from memwiki.text.embedders import USEEmbedder

EMBEDDER = USEEmbedder()


@pytest.fixture
def fx(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path)


@pytest.fixture
def combined(fx: Path, tmp_path: Path) -> CombinedSource:
    source = open_sources(
        None,
        str(fx / "hermes_home"),
        str(fx / "mempalace_palace"),
        tmp_path / "cache",
        EMBEDDER,
        config_dir=str(fx / "mempalace_config"),
    )
    assert isinstance(source, CombinedSource)
    return source


def test_layers_come_from_the_right_source(combined: CombinedSource, fx: Path) -> None:
    assert isinstance(combined, MemorySource)
    info = combined.info()
    assert info.kind == "combined" and (info.embedder, info.dim) == ("use-multilingual-v3", 512)
    assert "hermes:" in info.location and "mempalace:" in info.location
    assert any("re-embedded" in n for n in info.notes)
    assert combined.persona() is not None and "小赫" in combined.persona().text
    assert sorted(len(f.entries) for f in combined.hot_files()) == [12, 12]
    assert combined.memory_count() == 16 and len(list(combined.memories())) == 16
    assert len(combined.triples()) == 10 and len(combined.entities()) == 14
    assert len(combined.sessions()) == 4 and combined.wiki_pages() == [] and combined.sinks() == []
    first = next(combined.memories())
    assert combined.memory_vectors([first.id]).shape == (1, 512)
    assert combined.embed(["台风"]).shape == (1, 512)
    assert combined.fingerprint() == combined.fingerprint()


def test_recall_over_the_combination_answers_from_each_layer(combined: CombinedSource, fx: Path) -> None:
    before = checksums(fx)
    recaller = recaller_for(combined, EMBEDDER)  # the recall `memwiki --hermes-home --palace recall` runs
    cases = [
        ("L1", "家里的网络怎么连的，VLAN 怎么分？", "VLAN10"),
        ("L1", "What editor and terminal does he use?", "Neovim"),
        ("L2", "台风期间浮标数据延迟是网络问题还是 ingest 的问题？", "NB-017"),
        ("L2", "Who owns data quality and the QARTOD flag rules?", "Priya Raman"),
        ("L4", "restic B2 账单为什么涨了？", "restic"),
        ("L4", "Why does my Mac still get NXDOMAIN after adding an Unbound host override?", "NXDOMAIN"),
    ]
    for layer, question, expected in cases:
        hits = [h for h in recaller.recall(question, k=3, all_layers=True) if h.layer == layer]
        assert hits and expected in hits[0].text, (layer, question, [h.text[:60] for h in hits])
    combined.close()
    assert checksums(fx) == before


def test_open_sources_defaults_and_environment(fx: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("HERMES_HOME", "MEMPALACE_PALACE_PATH", "MEMPALACE_CONFIG_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert hermes_home_path() == tmp_path / "home" / ".hermes"
    assert palace_path() == tmp_path / "home" / ".mempalace" / "palace"
    with pytest.raises(SourceError, match="no memory to read"):
        open_sources(None, None, None, tmp_path / "cache")
    with pytest.raises(SourceError, match="no hermes home"):
        open_sources(None, str(tmp_path / "missing"), None, tmp_path / "cache")

    monkeypatch.setenv("HERMES_HOME", str(fx / "hermes_home"))
    monkeypatch.setenv("MEMPALACE_CONFIG_DIR", str(fx / "mempalace_config"))
    config = fx / "mempalace_config" / "config.json"
    raw = json.loads(config.read_text())
    raw["palace_path"] = str(fx / "mempalace_palace")
    config.write_text(json.dumps(raw))
    assert palace_path() == fx / "mempalace_palace"
    auto = open_sources(None, None, None, tmp_path / "cache", EMBEDDER)
    assert isinstance(auto.layers["L1"], HermesHome) and isinstance(auto.layers["L2"], MemPalace)
    assert auto.memory_count() == 16 and len(auto.sessions()) == 4

    monkeypatch.setenv("MEMPALACE_PALACE_PATH", str(tmp_path / "elsewhere"))
    assert palace_path() == tmp_path / "elsewhere"
    assert palace_path(str(fx / "mempalace_palace")) == fx / "mempalace_palace"  # explicit wins
    only_home = open_sources(None, "auto", None, tmp_path / "cache")
    assert only_home.memory_count() == 0 and len(only_home.sessions()) == 4
    assert not (tmp_path / "home").exists()  # nothing created in the default places


def test_store_fills_the_layers_the_sources_lack(fx: Path, tmp_path: Path) -> None:
    from memwiki.store.store import Store

    store = tmp_path / "store"
    Store.init(store, embedder=EMBEDDER).close()
    (store / "wiki").mkdir(exist_ok=True)
    (store / "wiki" / "homelab.md").write_text("# Homelab\n\nSee [[pve01]].\n", encoding="utf-8")
    source = open_sources(str(store), None, str(fx / "mempalace_palace"), tmp_path / "cache")
    assert len(source.triples()) == 10 and source.memory_count() == 16  # palace: L2, L3
    assert source.sessions() == [] and [p.title for p in source.wiki_pages()] == ["Homelab"]
    assert open_sources(str(store), None, None, None).info().kind == "store"
    assert checksums(fx / "mempalace_palace") == checksums(pristine() / "mempalace_palace")
