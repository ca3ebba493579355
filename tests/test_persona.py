"""L0 persona: SOUL.md read with hermes's head/tail cut over the cap, refused on write over the cap."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fixture_homes import pristine

from memwiki.errors import CapacityError, InputFormatError
from memwiki.layers.persona import PersonaTruncatedWarning, injected, read_persona, truncate, write_persona


def soul() -> Path:
    """The persona of tests/fixture_homes.py's hermes home (built once per session; copy before writing)."""
    return pristine() / "hermes_home" / "SOUL.md"


def test_reads_the_real_soul(tmp_path: Path) -> None:
    path = tmp_path / "SOUL.md"
    shutil.copy(soul(), path)
    persona = read_persona(path, 3000)
    assert persona.text == soul().read_text(encoding="utf-8")
    assert persona.chars == 574 and not persona.truncated
    assert persona.path == str(path) and persona.modified.endswith("Z")


def test_missing_file_is_an_empty_persona(tmp_path: Path) -> None:
    persona = read_persona(tmp_path / "SOUL.md", 3000)
    assert (persona.text, persona.chars, persona.cap, persona.truncated) == ("", 0, 3000, False)


def test_over_the_cap_on_read_warns_and_injects_head_and_tail(tmp_path: Path) -> None:
    """The record keeps the whole text (the privacy gate reads it as written); the agent is given the cut."""
    path = tmp_path / "SOUL.md"
    text = "".join(f"第{i}行 line {i}\n" for i in range(400))
    path.write_text(text, encoding="utf-8")
    with pytest.warns(PersonaTruncatedWarning, match="over the 3,000-char persona cap"):
        persona = read_persona(path, 3000)
    assert persona.truncated and persona.chars == len(text) and persona.text == text
    assert injected(persona).startswith(text[:2100])
    assert injected(persona).endswith(text[-600:])
    assert f"[...truncated SOUL.md: kept 2100+600 of {len(text)} chars." in injected(persona)
    assert path.read_text(encoding="utf-8") == text, "reading never rewrites"


def test_truncate_leaves_short_text_alone() -> None:
    assert truncate("short", 10) == "short"


def test_write_refuses_over_the_cap_and_keeps_the_old_text(tmp_path: Path) -> None:
    path = tmp_path / "SOUL.md"
    write_persona(path, "你是小赫。", 3000)
    assert read_persona(path, 3000).text == "你是小赫。"
    with pytest.raises(CapacityError, match="3,001 chars, over the 3,000-char cap by 1"):
        write_persona(path, "x" * 3001, 3000)
    with pytest.raises(InputFormatError, match="NUL byte at line 2"):
        write_persona(path, "a\nb\x00", 3000)
    with pytest.raises(InputFormatError, match="UTF-8"):
        write_persona(path, "lone surrogate \udc80", 3000)
    assert path.read_text(encoding="utf-8") == "你是小赫。"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["SOUL.md", "SOUL.md.lock"]


def test_invalid_utf8_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "SOUL.md"
    path.write_bytes("# 小赫\n\n好的".encode() + b"\xe5\x0a")
    with pytest.raises(InputFormatError, match=r"SOUL\.md: invalid UTF-8 at line 3"):
        read_persona(path, 3000)
    assert path.read_bytes().endswith(b"\xe5\x0a")
