"""The Chinese-English bridge: CC-CEDICT glosses of a Chinese query, searched as a third lexical list."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from memory import crosslingual
from memory.crosslingual import browser_table, dictionary_words, english_glosses

HOME_LAB = "The home lab's virtualisation platform is Proxmox VE, on Intel NUC hardware with 64 GB RAM."
CORPUS = [
    ("lab", HOME_LAB),
    ("wifi", "The home Wi-Fi password is kept in Bitwarden, never in notes."),
    ("github", "GitHub is the platform for the user's open-source code; the handle is kalend."),
    ("docker", "踩坑记录：Docker Desktop 在 Mac 上挂载目录很慢，改用 OrbStack 后明显变快。"),
    ("router", "主路由器刷了 OpenWrt，旁路由负责科学上网，网关是 192.168.1.1。"),
    ("kindle", "用户买了一台 Kindle Paperwhite，主要用来看技术书。"),
    ("vps", "The VPS lives in Tokyo, runs Debian 12, and SSH listens on port 2222 with keys only."),
]
QUESTION = "家里的虚拟化平台跑在什么硬件上？"


def test_glosses_are_the_english_of_the_content_words() -> None:
    glosses = english_glosses(QUESTION)
    assert {"home", "platform", "hardware"} <= set(glosses)
    assert "what" not in glosses  # 什么 holds a function character: scaffolding, not content
    assert len(glosses) == len(set(glosses))
    assert english_glosses("硬體") == ["hardware"]  # traditional headwords too


def test_text_without_chinese_has_no_glosses() -> None:
    assert english_glosses("Which port does SSH listen on?") == []
    assert english_glosses("") == []
    assert english_glosses("什么") == []  # only scaffolding


def test_every_dictionary_word_counts_overlaps_included() -> None:
    assert dictionary_words("数据库存储") == ["数据", "数据库", "库存", "存储"]
    assert dictionary_words("我的什么") == []  # function characters: no word holding one is looked up


def test_the_browser_gets_only_glosses_its_memories_can_match() -> None:
    table = browser_table({"hardwar", "platform"})  # tokens, as the page indexes its memories (stemmed)
    assert table["硬件"] == ["hardware"] and "platform" in table["平台"]
    assert "家里" not in table  # "home" is in no memory of this page
    assert all(set(words) <= {"hardware", "platform"} for words in table.values())
    assert browser_table(set()) == {}


def _forget_the_glossary() -> None:
    """As a new process would start: no glossary found yet, no connection, no glosses remembered."""
    crosslingual._glossary_path.cache_clear()
    crosslingual._english_glosses.cache_clear()
    crosslingual._local.__dict__.clear()


def test_the_glossary_is_kept_in_the_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    _forget_the_glossary()
    try:
        glosses = english_glosses(QUESTION)
        (kept,) = (tmp_path / "cache" / "memwiki").glob("cedict-glossary-*.sqlite3")
        made = kept.stat().st_mtime_ns
        _forget_the_glossary()
        assert english_glosses(QUESTION) == glosses and kept.stat().st_mtime_ns == made  # read, not made again

        kept.write_bytes(b"half-written")  # as if a crash had left it (it is renamed in only when complete)
        _forget_the_glossary()
        assert english_glosses(QUESTION) == glosses  # a damaged file is made again
        assert kept.stat().st_size > 1_000_000

        kept.write_bytes(b"damaged under a running process")
        assert english_glosses("数据库存储")[:2] == ["data", "numbers"]  # looked for again, and made again
        assert kept.stat().st_size > 1_000_000

        (tmp_path / "a-file").write_text("not a folder")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))  # no cache folder can be made there
        _forget_the_glossary()
        assert english_glosses(QUESTION) == glosses  # made in this user's own temporary folder instead
        (fallback,) = (tmp_path / "tmp").glob("memwiki-*/cedict-glossary-*.sqlite3")
        assert fallback.parent.stat().st_mode & 0o077 == 0
    finally:
        _forget_the_glossary()
