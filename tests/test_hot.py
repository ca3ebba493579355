"""L1 hot memory: hermes's format and actions, atomic locked writes, hand-edit detection."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest
from fixture_homes import pristine

from memwiki.errors import (
    CapacityError,
    DuplicateEntryError,
    EntryMatchError,
    HandEditedError,
    InputFormatError,
    MemwikiError,
)
from memwiki.layers.hot.files import HotMemoryFile, join_entries, parse_entries, usage_text


def hermes() -> Path:
    """The hermes-agent home of tests/fixture_homes.py (built once per session; copy before writing)."""
    return pristine() / "hermes_home"


@pytest.fixture
def mem(tmp_path: Path) -> HotMemoryFile:
    """A copy of the real hermes MEMORY.md (12 entries, 2,133/2,200 chars)."""
    shutil.copy(hermes() / "memories" / "MEMORY.md", tmp_path / "MEMORY.md")
    return HotMemoryFile(tmp_path / "MEMORY.md", "memory", 2200, 0.70)


@pytest.fixture
def small(tmp_path: Path) -> HotMemoryFile:
    return HotMemoryFile(tmp_path / "USER.md", "user", 300, 0.70)


def _backups(hot: HotMemoryFile) -> list[Path]:
    return sorted(hot.path.parent.glob(hot.path.name + ".bak.*"))


@pytest.mark.parametrize("name", ["MEMORY.md", "USER.md"])
def test_fixture_round_trips_byte_for_byte(name: str) -> None:
    raw = (hermes() / "memories" / name).read_text(encoding="utf-8")
    entries = parse_entries(raw)
    assert len(entries) == 12
    assert join_entries(entries) == raw
    assert not raw.endswith("\n")


def test_view_counts_as_hermes(mem: HotMemoryFile) -> None:
    view = mem.view()
    assert view.target == "memory" and len(view.entries) == 12
    assert view.chars == 2133 and view.cap == 2200
    assert usage_text(mem.view().chars, mem.cap) == "96% — 2,133/2,200 chars"
    assert view.modified.endswith("Z")


def test_replay_the_real_tool_call(mem: HotMemoryFile) -> None:
    """The one memory tool call in state.db, replayed: same file bytes and usage as hermes produced."""
    db = sqlite3.connect(f"file:{hermes() / 'state.db'}?mode=ro&immutable=1", uri=True)
    calls, result = db.execute(
        "SELECT a.tool_calls, t.content FROM messages a JOIN messages t ON t.session_id = a.session_id "
        "WHERE a.tool_calls LIKE '%\"memory\"%' AND t.role = 'tool' AND t.tool_name = 'memory'"
    ).fetchone()
    db.close()
    args = json.loads(json.loads(calls)[0]["function"]["arguments"])
    assert args["action"] == "replace"
    original = mem.path.read_bytes()
    # the state before the call: the backup entry still said 6m
    mem.replace("7d/4w/12m", args["content"].replace("7d/4w/12m", "7d/4w/6m"))
    assert mem.path.read_bytes() != original
    mem.replace(args["old_text"], args["content"])
    assert mem.path.read_bytes() == original
    assert usage_text(mem.view().chars, mem.cap) == json.loads(result)["usage"]


def test_add_appends_in_hermes_format(small: HotMemoryFile) -> None:
    assert small.entries() == []
    small.add("first entry")
    small.add("  second\nentry with two lines  ")
    assert small.path.read_text(encoding="utf-8") == "first entry\n§\nsecond\nentry with two lines"
    assert small.lock_path.name == "USER.md.lock" and small.lock_path.exists()


def test_add_with_category_stores_a_tag(small: HotMemoryFile) -> None:
    stored = small.add("VLAN10 is the office network", category="net")
    assert stored == "[network] VLAN10 is the office network"
    entry = small.view().entries[0]
    assert (entry.category, entry.tagged) == ("network", True)
    with pytest.raises(MemwikiError, match="unknown category"):
        small.add("x", category="nonsense")


def test_add_errors_leave_the_file_alone(mem: HotMemoryFile) -> None:
    before = mem.path.read_bytes()
    with pytest.raises(DuplicateEntryError, match="already exists"):
        mem.add(mem.entries()[0])
    with pytest.raises(CapacityError, match=r"Memory at 2,133/2,200 chars\. Adding this entry \(100 chars\)"):
        mem.add("x" * 100)
    with pytest.raises(CapacityError, match="5,000 chars, over the 2,200-char limit"):
        mem.add("y" * 5000)
    for empty in ["", "   \n ", "[env]", "【偏好】  "]:
        with pytest.raises(MemwikiError, match="cannot be empty"):
            mem.add(empty)
    with pytest.raises(MemwikiError, match="'§'"):
        mem.add("one\n§\ntwo")
    assert mem.path.read_bytes() == before
    assert _backups(mem) == []


def test_replace_and_remove_errors(mem: HotMemoryFile) -> None:
    before = mem.path.read_bytes()
    with pytest.raises(EntryMatchError, match="No entry matched 'no such text'"):
        mem.replace("no such text", "new")
    with pytest.raises(EntryMatchError, match="Multiple entries matched 'OPNsense'. Be more specific"):
        mem.remove("OPNsense")
    with pytest.raises(EntryMatchError, match="old_text cannot be empty"):
        mem.remove("  ")
    with pytest.raises(MemwikiError, match="new_content cannot be empty"):
        mem.replace("Behaviour rule", " ")
    with pytest.raises(CapacityError, match="Replacement would put memory at"):
        mem.replace("Behaviour rule", "z" * 300)
    with pytest.raises(DuplicateEntryError):
        mem.replace("Behaviour rule", mem.entries()[0])
    assert mem.path.read_bytes() == before


def test_replace_and_remove(mem: HotMemoryFile) -> None:
    removed = mem.remove("Behaviour rule")
    assert removed.startswith("Behaviour rule: for anything touching prod-*")
    assert len(mem.entries()) == 11 and removed not in mem.entries()
    mem.add("note one", category="project")
    assert mem.replace("note one", "note two") == "[project] note two"  # the explicit tag is kept
    assert mem.entries()[-1] == "[project] note two"


def test_identical_duplicates_are_repaired_not_refused(small: HotMemoryFile) -> None:
    small.path.write_text("a\n§\nb\n§\na", encoding="utf-8")
    assert small.entries() == ["a", "b"]
    small.remove("b")
    assert small.path.read_text(encoding="utf-8") == "a"
    assert _backups(small) == []


def test_trailing_newline_is_repaired_losslessly(small: HotMemoryFile) -> None:
    small.path.write_text("a\n§\nb\n\n", encoding="utf-8")
    small.add("c")
    assert small.path.read_text(encoding="utf-8") == "a\n§\nb\n§\nc"
    assert _backups(small) == []


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"a\r\n\xc2\xa7\r\nb", "carriage return"),
        (b"a\n\xc2\xa7\n\n\xc2\xa7\nb", "stray separator"),
        (b"\xc2\xa7\na\n\xc2\xa7\nb", "stray '§' line"),
        (b"a\n\xc2\xa7\n b", "not separated"),
        (b"a\n\xc2\xa7\nb\xff\xfe c", "invalid UTF-8 at line 3"),
        (b"a\n\xc2\xa7\nb\x00c", "NUL byte"),
        (b"a\n\xc2\xa7\n" + b"q" * 301, "301 chars, longer than the cap of 300"),
    ],
)
def test_hand_edits_are_backed_up_and_refused(small: HotMemoryFile, raw: bytes, why: str) -> None:
    small.path.write_bytes(raw)
    for action in (lambda: small.add("new"), lambda: small.remove("a"), lambda: small.write_entries(["x"])):
        with pytest.raises(HandEditedError, match="Refusing to write") as err:
            action()
        assert why in str(err.value)
    backups = _backups(small)
    assert len(backups) == 1, "a retry reuses the identical backup"
    assert str(backups[0]) in str(err.value)
    assert backups[0].read_bytes() == raw
    assert small.path.read_bytes() == raw


def test_invalid_utf8_read_is_a_clear_error(small: HotMemoryFile) -> None:
    small.path.write_bytes(b"ok\n\xc2\xa7\nbad \xff")
    with pytest.raises(InputFormatError, match=r"USER\.md: invalid UTF-8 at line 3"):
        small.view()


def test_write_entries(small: HotMemoryFile) -> None:
    small.write_entries(["b", "a"])
    assert small.path.read_text(encoding="utf-8") == "b\n§\na"
    with pytest.raises(CapacityError):
        small.write_entries(["x" * 200, "y" * 200])
    with pytest.raises(MemwikiError, match="'§'"):
        small.write_entries(["x\n§"])
    with pytest.raises(DuplicateEntryError):
        small.write_entries(["x", "x"])
    assert small.path.read_text(encoding="utf-8") == "b\n§\na"
    assert [p.name for p in small.path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_concurrent_adds_lose_nothing(tmp_path: Path) -> None:
    hot = HotMemoryFile(tmp_path / "MEMORY.md", "memory", 100_000, 0.7)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(10):
                HotMemoryFile(hot.path, "memory", 100_000).add(f"worker {n} entry {i}")
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(hot.entries()) == sorted(f"worker {n} entry {i}" for n in range(4) for i in range(10))
