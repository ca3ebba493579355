"""HermesHome over a copy of a hermes-agent home made by hermes-agent itself (tests/fixture_homes.py)."""

from __future__ import annotations

import fcntl
import re
import sqlite3
from pathlib import Path

import pytest
from fixture_copies import Holder, checksums, copy_fixtures, leave_rows_in_wal, make_readonly, make_writable
from fixture_homes import pristine

from memwiki.errors import SourceError
from memwiki.readers.hermes import HermesHome
from memwiki.source import CATEGORIES, MemorySource

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return copy_fixtures(tmp_path) / "hermes_home"


def _raw_entries(path: Path) -> list[str]:
    return [e.strip() for e in path.read_text(encoding="utf-8").split("\n§\n")]


def _raw_messages(db: Path) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    rows = conn.execute(
        "SELECT id, session_id, role, content, tool_name, timestamp FROM messages ORDER BY id"
    ).fetchall()
    conn.close()
    return rows


def _raw_latest_start(db: Path) -> float:
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    (latest,) = conn.execute("SELECT max(started_at) FROM sessions").fetchone()
    conn.close()
    return latest


def test_persona_and_hot_files_with_hermes_limits_and_categories(home: Path) -> None:
    source = HermesHome(home)
    assert isinstance(source, MemorySource)
    persona = source.persona()
    soul = (home / "SOUL.md").read_text(encoding="utf-8")
    assert persona is not None and persona.text == soul and persona.cap == 3000 and not persona.truncated
    files = {f.target: f for f in source.hot_files()}
    assert set(files) == {"memory", "user"}
    for target, name, cap, chars in (("memory", "MEMORY.md", 2200, 2133), ("user", "USER.md", 1375, 1274)):
        hot = files[target]
        assert [e.text for e in hot.entries] == _raw_entries(home / "memories" / name)
        assert len(hot.entries) == 12 and hot.cap == cap and hot.chars == chars
        assert hot.usage == pytest.approx(chars / cap)
        assert all(e.category in CATEGORIES for e in hot.entries)
        assert hot.modified and hot.path.endswith(name)
    memory = {e.text[:3]: e.category for e in files["memory"].entries}
    assert memory["坑：k"] == "pitfall" and memory["授权声"] == "authorisation"
    assert files["user"].entries[5].category == "authorisation"  # "Authorization: Lin allows me to read ..."


def test_caps_come_from_config_yaml(home: Path) -> None:
    config = home / "config.yaml"
    config.write_text(config.read_text() + "\nmemory:\n  memory_char_limit: 4000\n  user_char_limit: 1800\n")
    caps = {f.target: f.cap for f in HermesHome(home).hot_files()}
    assert caps == {"memory": 4000, "user": 1800}
    assert {f.target: f.cap for f in HermesHome(home, memory_cap=5000).hot_files()}["memory"] == 5000


def test_sessions_and_messages_with_tool_calls(home: Path) -> None:
    source = HermesHome(home)
    sessions = source.sessions()
    assert len(sessions) == 4
    assert {s.title for s in sessions} >= {"k3s Postgres PVC 权限问题", "Unbound host override NXDOMAIN"}
    assert all(ISO.match(s.started) and ISO.match(s.ended) and s.source for s in sessions)
    raw = _raw_messages(home / "state.db")
    read = [m for s in sessions for m in source.messages(s.id)]
    assert len(read) == len(raw) == 40
    assert sum(s.message_count for s in sessions) == 40
    by_id = {m.id: m for m in read}
    for mid, sid, role, content, _tool, _ts in raw:
        message = by_id[str(mid)]
        assert (message.session_id, message.role) == (sid, role) and ISO.match(message.time)
        if content:
            assert message.content.startswith(content)
    call = next(m for m in read if m.role == "assistant" and m.tool_name)
    assert call.tool_name == "memory" and '"action": "replace"' in call.content and "7d/4w/12m" in call.content
    result = next(m for m in read if m.role == "tool")
    assert result.tool_name == "memory" and '"success": true' in result.content


@pytest.mark.parametrize(
    ("query", "title"),
    [
        ("幂等键", "order-service idempotency key TTL"),
        ("账单", "restic 备份保留策略调整"),
        ("negative cache NXDOMAIN", "Unbound host override NXDOMAIN"),
        ("initContainer chown", "k3s Postgres PVC 权限问题"),
    ],
)
def test_session_search_chinese_and_english(home: Path, query: str, title: str) -> None:
    hits = HermesHome(home).search_sessions(query, 3)
    assert hits and hits[0].session.title == title
    assert hits[0].snippets and hits[0].message_ids
    assert any(word.lower() in " ".join(hits[0].snippets).lower() for word in query.split())


def test_reading_everything_leaves_every_byte(home: Path) -> None:
    before = checksums(home)
    source = HermesHome(home)
    source.info(), source.persona(), source.hot_files(), source.fingerprint()
    for session in source.sessions():
        source.messages(session.id)
    source.search_sessions("restic prune", 5)
    source.close()
    assert checksums(home) == before
    assert checksums(pristine() / "hermes_home") == before  # the originals match the copy, untouched


def test_write_protected_home_still_reads(home: Path) -> None:
    make_readonly(home)
    try:
        source = HermesHome(home)
        assert len(source.sessions()) == 4 and len(source.hot_files()) == 2
        assert source.search_sessions("Tailscale MagicDNS", 1)[0].session.title == "Unbound host override NXDOMAIN"
    finally:
        make_writable(home)


def test_rows_left_in_wal_are_read_from_a_snapshot(home: Path) -> None:
    db = home / "state.db"
    later = _raw_latest_start(db) + 60  # the newest session
    leave_rows_in_wal(
        db,
        f"INSERT INTO sessions (id, source, started_at, title) VALUES ('s5', 'cli', {later}, 'wal only')",
        "INSERT INTO messages (session_id, role, content, timestamp) "
        f"VALUES ('s5', 'user', '只在 WAL 里的消息', {later + 0.1})",
    )
    before = checksums(home)
    source = HermesHome(home)
    sessions = source.sessions()
    assert len(sessions) == 5 and sessions[-1].title == "wal only"
    assert source.messages("s5")[0].content == "只在 WAL 里的消息"
    assert source.search_sessions("WAL 消息", 1)[0].session.id == "s5"
    assert any("snapshot copy" in n for n in source.info().notes)
    assert checksums(home) == before


def test_locked_by_a_running_agent(home: Path) -> None:
    holder = Holder(
        home / "state.db",
        "BEGIN IMMEDIATE",
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('x', 'user', 'uncommitted', 1.0)",
    )
    lock = open(home / "memories" / "MEMORY.md.lock", "rb")  # noqa: SIM115
    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
    try:
        source = HermesHome(home)
        assert len(source.sessions()) == 4
        assert all(m.content != "uncommitted" for s in source.sessions() for m in source.messages(s.id))
        assert len(source.hot_files()[0].entries) == 12
        notes = " ".join(source.info().notes)
        assert f"locked by a running writer (pid {holder.proc.pid})" in notes
        assert "MEMORY.md: the hermes memory tool is writing it right now" in notes
    finally:
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        lock.close()
        holder.release()


def test_missing_and_empty_homes(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no hermes home"):
        HermesHome(tmp_path / "nowhere")
    empty = HermesHome(tmp_path)
    assert empty.persona() is None and empty.hot_files() == [] and empty.sessions() == []
    assert empty.search_sessions("anything") == []
    assert any("empty hermes home" in n for n in empty.info().notes)


def test_bad_hot_file_is_a_note_and_the_rest_reads(home: Path) -> None:
    (home / "memories" / "MEMORY.md").write_bytes(b"ok entry\n\xc3(\n")
    source = HermesHome(home)
    files = source.hot_files()
    assert [f.target for f in files] == ["user"] and len(files[0].entries) == 12
    assert any("MEMORY.md" in n and "invalid UTF-8 at line 2" in n for n in source.info().notes)


def test_newer_schema_version_is_named_and_read(home: Path) -> None:
    conn = sqlite3.connect(home / "state.db")
    conn.execute("UPDATE schema_version SET version = 99")
    conn.commit()
    conn.close()
    source = HermesHome(home)
    assert len(source.sessions()) == 4
    assert any("schema version 99 is newer" in n for n in source.info().notes)


def test_schema_v1_layout_without_titles(tmp_path: Path) -> None:
    """hermes's first state.db layout: no title column (v3), no billing or reasoning columns."""
    conn = sqlite3.connect(tmp_path / "state.db")
    conn.executescript(
        """
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (1);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT,
            model_config TEXT, system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL,
            ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,
            input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
            content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
            token_count INTEGER);
        INSERT INTO sessions (id, source, started_at) VALUES ('old', 'telegram', 1700000000.0);
        INSERT INTO messages (session_id, role, content, timestamp) VALUES
            ('old', 'user', '周末一起去跳舞吧', 1700000001.0), ('old', 'assistant', '好的', 1700000002.0);
        """
    )
    conn.close()
    source = HermesHome(tmp_path)
    (session,) = source.sessions()
    assert session.title == "周末一起去跳舞吧" and session.started == "2023-11-14T22:13:20Z" and session.ended == ""
    assert [m.role for m in source.messages("old")] == ["user", "assistant"]
    assert source.search_sessions("跳舞", 1)[0].session.id == "old"


def test_persona_over_its_cap_is_cut_with_a_note(home: Path) -> None:
    """The record keeps the whole file (the privacy gate reads it as written); the agent is given the cut."""
    from memwiki.layers.persona import injected

    source = HermesHome(home, persona_cap=200)
    persona = source.persona()
    assert persona is not None and persona.truncated and persona.chars > 200 and len(persona.text) == persona.chars
    assert len(injected(persona)) <= 300
    assert any("over the 200-char cap" in n for n in source.info().notes)
