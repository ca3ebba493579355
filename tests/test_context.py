"""The per-turn injection block and its frozen snapshot."""

from __future__ import annotations

import shutil
from pathlib import Path

from fixture_homes import pristine

from memwiki.layers.hot.files import HotMemoryFile
from memwiki.layers.persona import read_persona
from memwiki.layers.turn_block import FrozenContext, render_context


def hermes() -> Path:
    """The hermes-agent home of tests/fixture_homes.py (built once per session; copy before writing)."""
    return pristine() / "hermes_home"


def _home(tmp_path: Path) -> tuple[Path, HotMemoryFile, HotMemoryFile]:
    for name in ("MEMORY.md", "USER.md"):
        shutil.copy(hermes() / "memories" / name, tmp_path / name)
    shutil.copy(hermes() / "SOUL.md", tmp_path / "SOUL.md")
    mem = HotMemoryFile(tmp_path / "MEMORY.md", "memory", 2200, 0.7)
    user = HotMemoryFile(tmp_path / "USER.md", "user", 1375, 0.7)
    return tmp_path / "SOUL.md", mem, user


def test_block_has_persona_then_hot_files_with_usage(tmp_path: Path) -> None:
    soul, mem, user = _home(tmp_path)
    text = render_context(read_persona(soul, 3000), [mem.view(), user.view()])
    assert text.startswith("# 小赫 · Hermes persona")
    assert "MEMORY (your personal notes) [96% — 2,133/2,200 chars]" in text
    assert "USER PROFILE (who the user is) [92% — 1,274/1,375 chars]" in text
    assert text.index("小赫") < text.index("MEMORY (") < text.index("USER PROFILE")
    assert mem.path.read_text(encoding="utf-8") in text
    assert user.path.read_text(encoding="utf-8") in text


def test_empty_parts_are_left_out(tmp_path: Path) -> None:
    empty = HotMemoryFile(tmp_path / "USER.md", "user", 1375)
    assert render_context(None, [empty.view()]) == ""
    empty.add("only entry")
    text = render_context(None, [empty.view()])
    assert text.splitlines()[1] == "USER PROFILE (who the user is) [0% — 10/1,375 chars]"
    assert text.endswith("\nonly entry")


def test_an_oversized_hand_grown_file_is_cut_at_render(tmp_path: Path) -> None:
    hot = HotMemoryFile(tmp_path / "MEMORY.md", "memory", 1000)
    hot.path.write_text("\n§\n".join(f"entry {i} " + "x" * 500 for i in range(20)), encoding="utf-8")
    text = render_context(None, [hot.view()])
    assert "⚠ OVER BUDGET" in text and "chars truncated — memory over budget" in text
    assert len(text) < 4500 and "entry 0 " in text and "entry 19 " in text


def test_frozen_block_ignores_later_writes(tmp_path: Path) -> None:
    soul, mem, user = _home(tmp_path)
    frozen = FrozenContext.freeze(read_persona(soul, 3000), [mem.view(), user.view()])
    before = frozen.text
    mem.remove("Behaviour rule")
    user.add("New fact written mid-session.")
    assert frozen.text == before
    assert "Behaviour rule" in frozen.text and "mid-session" not in frozen.text
    fresh = FrozenContext.freeze(read_persona(soul, 3000), [mem.view(), user.view()])
    assert "mid-session" in fresh.text and "Behaviour rule" not in fresh.text
