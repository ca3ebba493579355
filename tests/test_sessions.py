"""memwiki.layers.sessions: L4 session history, CJK-aware FTS5 search, all-or-nothing JSONL import."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memwiki.errors import InputFormatError, MemwikiError, StoreLockedError
from memwiki.layers.sessions import SessionHistory, require_fts5, snippet

MESSAGES = [
    {"session_id": "s-dance", "role": "user", "content": "我最近喜欢跳舞，周末去学 Salsa。",
     "time": "2025-01-02T10:00:00+08:00", "title": "爱好"},
    {"session_id": "s-dance", "role": "assistant", "content": "跳舞是很好的运动！Salsa classes in Ningbo start at 7pm.",
     "time": "2025-01-02T02:01:00Z"},
    {"session_id": "s-db", "role": "user", "content": "The TimescaleDB migration failed on the frames table.",
     "time": "2025-02-01T09:00:00Z", "title": "DB migration"},
    {"session_id": "s-db", "role": "tool", "content": "ERROR: column received_at does not exist",
     "time": "2025-02-01T09:00:05Z", "tool_name": "terminal"},
    {"session_id": "s-db", "role": "assistant", "content": "Add the received_at column, then rerun the migration.",
     "time": "2025-02-01T09:01:00Z"},
    {"session_id": "s-misc", "role": "user", "content": "明天的天气怎么样？会下雨吗？", "time": "2025-03-05"},
]  # fmt: skip


def _jsonl(path: Path, rows: list[dict] | list[str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    return path


@pytest.fixture()
def history(tmp_path: Path):
    with SessionHistory(tmp_path / "sessions.sqlite3") as h:
        h.import_jsonl(_jsonl(tmp_path / "seed.jsonl", MESSAGES))
        yield h


# ── import ──


def test_import_reads_sessions_and_messages(history: SessionHistory) -> None:
    sessions = {s.id: s for s in history.sessions()}
    assert set(sessions) == {"s-dance", "s-db", "s-misc"}
    dance = sessions["s-dance"]
    assert (dance.title, dance.source, dance.message_count) == ("爱好", "import", 2)
    assert (dance.started, dance.ended) == ("2025-01-02T02:00:00Z", "2025-01-02T02:01:00Z")
    assert sessions["s-misc"].started == "2025-03-05T00:00:00Z"
    msgs = history.messages("s-db")
    assert [(m.role, m.tool_name) for m in msgs] == [("user", ""), ("tool", "terminal"), ("assistant", "")]
    assert msgs[1].content == "ERROR: column received_at does not exist"
    assert history.messages("nope") == []
    assert history.stats() == {
        "sessions": 3,
        "messages": 6,
        "by_role": {"assistant": 2, "tool": 1, "user": 3},
        "first": "2025-01-02T02:00:00Z",
        "last": "2025-03-05T00:00:00Z",
    }


def test_reimport_does_not_duplicate(history: SessionHistory, tmp_path: Path) -> None:
    again = _jsonl(tmp_path / "again.jsonl", MESSAGES + [{**MESSAGES[0], "time": "2025-01-03T10:00:00Z"}])
    assert history.import_jsonl(again) == (3, 1)  # only the one new message
    assert history.import_jsonl(again) == (3, 0)
    assert history.stats()["messages"] == 7


def test_repeated_identical_lines_are_kept_once_each(tmp_path: Path) -> None:
    line = {"session_id": "s", "role": "user", "content": "ok", "time": "2025-01-01T00:00:00Z"}
    path = _jsonl(tmp_path / "twice.jsonl", [line, line])
    with SessionHistory(tmp_path / "h.sqlite3") as h:
        assert h.import_jsonl(path) == (1, 2)
        assert h.import_jsonl(path) == (1, 0)
        assert len(h.messages("s")) == 2


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"session_id": "s9", "role": "user", "time": "2025-01-01T00:00:00Z"}', "missing key 'content'"),
        ('{"session_id": "s9", "role": "robot", "content": "x", "time": "2025-01-01"}', "role must be one of"),
        ('{"session_id": "s9", "role": "user", "content": "x", "time": "next tuesday"}', "not a valid ISO-8601"),
        (
            '{"session_id": "s9", "role": "user", "content": "x", "time": "2025-02-30T00:00:00Z"}',
            "not a valid ISO-8601",
        ),
        ('{"session_id": "", "role": "user", "content": "x", "time": "2025-01-01"}', "session_id must be"),
        ('{"session_id": "s9", "role": "user", "content": 5, "time": "2025-01-01"}', "content must be a string"),
        ('{"session_id": "s9", "role": "user", "content": "x", "time": "2025-01-01", "title": 3}', "title must be"),
        ('{"session_id": "s9", "role": "user", "content": "x",', "invalid JSON"),
        ('["s9", "user", "x"]', "expected a JSON object"),
    ],
)
def test_a_bad_line_57_writes_nothing(history: SessionHistory, tmp_path: Path, bad_line: str, message: str) -> None:
    rows: list = [
        {"session_id": f"s{i % 9}", "role": "user", "content": f"消息 {i}", "time": f"2025-04-01T00:{i:02d}:00Z"}
        for i in range(1, 61)
    ]
    rows[56] = bad_line  # line 57
    path = _jsonl(tmp_path / "big.jsonl", rows)
    before = (history.sessions(), history.stats())
    with pytest.raises(InputFormatError, match=rf"big.jsonl:57: .*{message}"):
        history.import_jsonl(path)
    assert (history.sessions(), history.stats()) == before


def test_invalid_utf8_and_not_jsonl_files(history: SessionHistory, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(json.dumps(MESSAGES[0]).encode() + b'\n{"content": "\xe8\xb7"}\n')
    with pytest.raises(InputFormatError, match=r"broken.jsonl:2: invalid UTF-8"):
        history.import_jsonl(broken)
    csv = tmp_path / "export.csv"
    csv.write_text("session_id,role,content\ns1,user,hello\n")
    with pytest.raises(InputFormatError, match=r"export.csv:1: invalid JSON"):
        history.import_jsonl(csv)
    assert history.stats()["messages"] == 6


def test_progress_bar_goes_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with SessionHistory(tmp_path / "h.sqlite3") as h:
        h.import_jsonl(_jsonl(tmp_path / "p.jsonl", MESSAGES), progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "checking p.jsonl" in err and "importing p.jsonl" in err


# ── search ──


def test_two_character_chinese_query_finds_its_message(history: SessionHistory) -> None:
    (hit,) = history.search("跳舞")
    assert hit.session.id == "s-dance" and hit.session.message_count == 2
    assert any("«跳舞»" in s for s in hit.snippets)
    assert [h.session.id for h in history.search("下雨")] == ["s-misc"]


def test_raw_unicode61_and_trigram_cannot_do_this(tmp_path: Path) -> None:
    """Why we index CJK bigrams: the two stock FTS5 tokenizers miss a two-character Chinese query."""
    conn = sqlite3.connect(":memory:")
    text = MESSAGES[0]["content"]
    for tokenizer in ("unicode61", "trigram"):
        conn.execute(f"CREATE VIRTUAL TABLE t_{tokenizer} USING fts5(x, tokenize='{tokenizer}')")
        conn.execute(f"INSERT INTO t_{tokenizer} VALUES (?)", (text,))
    count = "SELECT count(*) FROM t_{} WHERE t_{} MATCH ?"
    assert conn.execute(count.format("unicode61", "unicode61"), ('"跳舞"',)).fetchone()[0] == 0  # one token per run
    assert conn.execute(count.format("trigram", "trigram"), ('"跳舞"',)).fetchone()[0] == 0  # needs 3 characters
    assert conn.execute(count.format("trigram", "trigram"), ('"喜欢跳舞"',)).fetchone()[0] == 1
    with SessionHistory(tmp_path / "h.sqlite3") as h:
        h.add_message("s", "user", text)
        assert len(h.search("跳舞")) == 1


def test_mixed_chinese_and_english(history: SessionHistory) -> None:
    (hit,) = history.search("Salsa 跳舞")
    assert hit.session.id == "s-dance"
    assert all("«Salsa»" in s and "«跳舞»" in s for s in hit.snippets)  # original case kept in the snippet
    assert [h.session.id for h in history.search("received_at migration")] == ["s-db"]
    (db,) = history.search("the migration")
    assert all("«the»" not in s and "«migration»" in s for s in db.snippets)  # stop words are not searched


def test_and_first_then_or(history: SessionHistory) -> None:
    (hit,) = history.search("跳舞 Ningbo")  # only one message has both words
    assert hit.session.id == "s-dance" and len(hit.message_ids) == 1
    assert hit.snippets == ("«跳舞»是很好的运动！Salsa classes in «Ningbo»…",)
    hits = history.search("跳舞 migration")  # no message has both: any word will do
    assert {h.session.id for h in hits} == {"s-dance", "s-db"}


def test_ranking_and_limit(history: SessionHistory) -> None:
    history.add_message(
        "s-db", "user", "migration migration migration: the migration again", time="2025-02-02T00:00:00Z"
    )
    history.add_message(
        "s-other", "user", "one migration note, among many other words here", time="2025-02-03T00:00:00Z"
    )
    hits = history.search("migration")
    assert hits[0].session.id == "s-db" and hits[0].score > hits[-1].score
    assert len(hits[0].snippets) == 3 and len(hits[0].message_ids) == 3
    assert [h.session.id for h in history.search("migration", limit=1)] == ["s-db"]


def test_snippets_are_short_and_cut_from_the_original_text() -> None:
    text = "Yesterday we talked for a long time about many things. Then the TimescaleDB MIGRATION failed again."
    cut = snippet(text, ["migration"])
    assert "«MIGRATION»" in cut and cut.startswith("…") and cut.endswith("…")
    assert 25 <= len(cut) <= 45
    assert snippet("no match here", ["zzz"]) == "no match here"
    assert snippet("Ｓａｌｓａ\nclass", ["salsa"]) == "«Ｓａｌｓａ» class"  # full-width kept, whitespace folded
    assert snippet("databases and database", ["databas"]) == "«databases» and «database»"
    assert snippet("redatabase", ["databas"]) == "redatabase"  # Latin matches start at a word boundary


@pytest.mark.parametrize("query", ['"', "NEAR(a b", "a AND", "*", "col:value", "跳舞 OR", '") OR 1=1 --', "^foo"])
def test_fts_syntax_in_queries_does_not_break_search(history: SessionHistory, query: str) -> None:
    assert isinstance(history.search(query), list)


def test_empty_query_is_an_error(history: SessionHistory) -> None:
    for query in ("", "   \n"):
        with pytest.raises(MemwikiError, match="empty query"):
            history.search(query)


def test_hostile_text_is_stored_and_returned_verbatim(tmp_path: Path) -> None:
    evil = '<script>alert("跳舞")</script><img src=x onerror=alert(1)> [x](javascript:alert(1))'
    with SessionHistory(tmp_path / "h.sqlite3") as h:
        mid = h.add_message("s", "assistant", evil, time="2025-01-01T00:00:00Z")
        h.add_session("s", title="<b>title</b>")
        (msg,) = h.messages("s")
        assert (msg.id, msg.content) == (mid, evil)
        (hit,) = h.search("alert")
        assert hit.session.title == "<b>title</b>" and "<script>" in hit.snippets[0]


# ── sessions, errors, locks ──


def test_add_session_and_message(tmp_path: Path) -> None:
    with SessionHistory(tmp_path / "h.sqlite3") as h:
        h.add_session("cli-1", title="first", started="2025-05-01T08:00:00+08:00", source="cli")
        h.add_message("cli-1", "user", "hello", time="2025-05-01T00:05:00Z")
        h.add_session("cli-1", ended="2025-05-01T00:10:00Z")
        (s,) = h.sessions()
        assert (s.title, s.started, s.ended, s.source, s.message_count) == (
            "first",
            "2025-05-01T00:00:00Z",
            "2025-05-01T00:10:00Z",
            "cli",
            1,
        )
        with pytest.raises(MemwikiError, match="role must be one of"):
            h.add_message("cli-1", "robot", "x")
        with pytest.raises(MemwikiError, match="not a valid ISO-8601"):
            h.add_message("cli-1", "user", "x", time="soon")
        with pytest.raises(MemwikiError, match="session id"):
            h.add_session("  ")
        assert h.stats()["messages"] == 1


def test_fts5_is_checked() -> None:
    require_fts5()  # this SQLite has it
    with pytest.raises(MemwikiError, match="SQLite here has no FTS5"):
        require_fts5("fts5_that_does_not_exist")  # same code path as a SQLite built without FTS5


def test_locked_history_is_a_clear_error_and_writes_nothing(history: SessionHistory, tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "more.jsonl", [{**m, "session_id": "new-" + m["session_id"]} for m in MESSAGES])
    locked = SessionHistory(history.path, busy_timeout=0.2)
    other = sqlite3.connect(history.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO sessions (id) VALUES ('other-writer')")
        with pytest.raises(StoreLockedError, match="locked by another writer"):
            locked.import_jsonl(path)
        with pytest.raises(StoreLockedError):
            locked.add_message("s-db", "user", "x")
        with SessionHistory(history.path, busy_timeout=0.2) as reader:  # readers do not wait for the writer
            assert [h.session.id for h in reader.search("跳舞")] == ["s-dance"]
        other.execute("ROLLBACK")
        assert history.stats()["messages"] == 6 and len(history.sessions()) == 3
        assert locked.import_jsonl(path) == (3, 6)
    finally:
        other.close()
        locked.close()


def test_a_session_that_fills_the_top_matches_does_not_hide_the_others(tmp_path: Path) -> None:
    rows = [
        {"session_id": "big", "role": "user", "content": f"migration {i}", "time": "2025-01-01T00:00:00Z"}
        for i in range(300)
    ]
    rows.append(
        {"session_id": "small", "role": "user", "content": "a long note that mentions one migration among many words",
         "time": "2025-01-02T00:00:00Z"}
    )  # fmt: skip
    with SessionHistory(tmp_path / "h.sqlite3") as h:
        h.import_jsonl(_jsonl(tmp_path / "many.jsonl", rows))
        hits = h.search("migration", limit=2)
        assert [hit.session.id for hit in hits] == ["big", "small"]
        assert len(hits[0].snippets) == 3 and hits[0].session.message_count == 300


def test_an_index_from_another_tokenizer_version_is_rebuilt_on_open(tmp_path: Path) -> None:
    """A history indexed by an older `fts_text` (here: bigrams only, no single characters) re-indexes itself."""
    import sqlite3

    from memwiki.text.tokens import TOKENIZER_VERSION

    db = tmp_path / "s.sqlite3"
    with SessionHistory(db) as h:
        h.add_session("s1", "猫")
        h.add_message("s1", "user", "我家的猫很可爱", "2026-11-01T10:00:00Z")
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')")
    conn.execute("INSERT INTO messages_fts (rowid, text) SELECT id, '我家 家的 的猫 猫很 很可 可爱' FROM messages")
    conn.execute(f"PRAGMA user_version = {TOKENIZER_VERSION - 1}")
    conn.commit()
    conn.close()
    with SessionHistory(db) as h:
        assert [hit.session.id for hit in h.search("猫")] == ["s1"]
