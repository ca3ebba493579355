"""`memwiki mcp`: the official `mcp` SDK's own client talks to the server in a real stdio subprocess.

Every tool is listed and called; the store is then opened from disk to check what the calls wrote. Over
read-only sources (a copy of the hermes fixture) the writing tools are not offered.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from fixture_copies import checksums, copy_fixtures
from mcp import ClientSession, StdioServerParameters, stdio_client

from memwiki.source import Memory
from memwiki.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
READ_TOOLS = {
    "memwiki_recall",
    "memwiki_kg_query",
    "memwiki_kg_timeline",
    "memwiki_session_search",
    "memwiki_context",
    "memwiki_stats",
}
WRITE_TOOLS = {
    "memwiki_memory",
    "memwiki_remember_long",
    "memwiki_forget_long",
    "memwiki_kg_add",
    "memwiki_kg_invalidate",
    "memwiki_kg_supersede",
}


def session_with(argv: list[str], body: Callable[[ClientSession], Awaitable[Any]]) -> Any:  # noqa: ANN401
    """Run `body` against `python -m memwiki.agents.cli ARGV` over stdio, through the SDK's client."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memwiki.agents.cli", *argv], env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT)
    )

    async def run() -> Any:  # noqa: ANN401
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return asyncio.run(asyncio.wait_for(run(), timeout=240))


async def call(session: ClientSession, tool: str, **args: Any) -> tuple[bool, Any]:  # noqa: ANN401
    """(is_error, structured result or the error text)."""
    result = await session.call_tool(tool, args)
    if result.is_error:
        return True, " ".join(c.text for c in result.content if hasattr(c, "text"))
    return False, result.structured_content


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    with Store.init(root) as store:
        store.semantic.upsert(
            [
                Memory("m-ollama", "Ollama 跑在 embed-01 上，模型 qwen3-embedding，端口 11434。", "technical"),
                Memory("m-blog", "The user's blog is built with Hugo and hosted on Cloudflare Pages.", "project"),
            ]
        )
        store.remember("[preference] 林晓喜欢先看命令再看解释。", "user")
        store.graph.add_triple("embed-01", "located_in", "机房A", valid_from="2026-01-01")
        store.sessions.add_session("s-1", title="GPU plans", started="2026-11-03T20:00:00Z")
        store.sessions.add_message("s-1", "user", "我们下周把嵌入服务迁到 gpu-box-2。", "2026-11-03T20:01:00Z")
    return root


def test_every_tool_over_stdio_and_the_store_on_disk_after(store_dir: Path) -> None:
    async def body(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": {t.name: t for t in (await s.list_tools()).tools}}
        out["recall"] = await call(s, "memwiki_recall", query="Where is the blog hosted?", k=3)
        out["all"] = await call(s, "memwiki_recall", query="嵌入服务迁到哪台机器？", k=3, all_layers=True)
        out["nothing"] = await call(s, "memwiki_recall", query="xyzzyqqq")
        out["bad_k"] = await call(s, "memwiki_recall", query="x", k=0)
        out["add"] = await call(s, "memwiki_memory", action="add", target="memory", content="[env] dev box: MacBook M3")
        out["dup"] = await call(s, "memwiki_memory", action="add", target="memory", content="[env] dev box: MacBook M3")
        out["no_content"] = await call(s, "memwiki_memory", action="add", target="memory")
        out["replace"] = await call(
            s, "memwiki_memory", action="replace", target="memory", old_text="MacBook M3", content="[env] dev box: M4"
        )
        out["missing"] = await call(s, "memwiki_memory", action="remove", target="memory", old_text="no such entry")
        out["no_old"] = await call(s, "memwiki_memory", action="remove", target="memory")
        out["bad_target"] = await call(s, "memwiki_memory", action="add", target="diary", content="x")
        sunk: list[Any] = []
        for n in range(40):  # past 70% of MEMORY.md's cap the non-core entries sink instead of being refused
            error, result = await call(
                s, "memwiki_memory", action="add", content=f"[network] host-{n:02d} sits at rack {n} of the lab row"
            )
            assert not error, result
            sunk += result.get("sunk", [])
        out["sunk"] = sunk
        out["long"] = await call(s, "memwiki_remember_long", text="Backups run nightly at 02:00 to /srv/backup.")
        out["forget_long"] = await call(s, "memwiki_forget_long", id="m-blog")
        out["forget_none"] = await call(s, "memwiki_forget_long", id="m-nope")
        out["kg_add"] = await call(s, "memwiki_kg_add", subject="memwiki", predicate="uses", object="Chroma")
        out["supersede"] = await call(
            s,
            "memwiki_kg_supersede",
            subject="embed-01",
            predicate="located_in",
            old_object="机房A",
            new_object="机房B",
            at="2026-02-01",
        )
        out["as_of"] = await call(s, "memwiki_kg_query", entity="embed-01", as_of="2026-01-15")
        out["now"] = await call(s, "memwiki_kg_query", entity="embed-01")
        out["invalidate"] = await call(
            s, "memwiki_kg_invalidate", subject="memwiki", predicate="uses", object="Chroma", ended="2026-12-01"
        )
        out["invalidate_none"] = await call(s, "memwiki_kg_invalidate", subject="a", predicate="b", object="c")
        out["timeline"] = await call(s, "memwiki_kg_timeline", entity="embed-01")
        out["bad_date"] = await call(s, "memwiki_kg_query", entity="embed-01", as_of="next tuesday")
        out["sessions"] = await call(s, "memwiki_session_search", query="gpu-box-2")
        out["context"] = await call(s, "memwiki_context")
        out["stats"] = await call(s, "memwiki_stats")
        out["unknown"] = await s.call_tool("no_such_tool", {})
        return out

    out = session_with(["--store", str(store_dir), "mcp"], body)
    assert set(out["tools"]) == READ_TOOLS | WRITE_TOOLS
    schema = out["tools"]["memwiki_memory"].input_schema["properties"]
    assert schema["action"]["enum"] == ["add", "replace", "remove"] and schema["target"]["enum"] == ["memory", "user"]

    error, recall = out["recall"]
    assert not error and recall["hits"][0]["id"] == "m-blog" and recall["confident"] is True
    assert {"layer", "id", "text", "score", "confidence", "confident", "why", "provenance"} <= set(recall["hits"][0])
    error, every = out["all"]
    assert not error and {"L2", "L4"} <= {h["layer"] for h in every["hits"]}
    assert out["nothing"][1]["confident"] is False and all(not h["confident"] for h in out["nothing"][1]["hits"])
    assert out["bad_k"][0] and "greater than or equal to 1" in out["bad_k"][1]

    assert out["add"] == (False, {**out["add"][1], "success": True, "message": "Entry added.", "target": "memory"})
    assert "chars" in out["add"][1]["usage"] and out["add"][1]["entry_count"] == 1
    for key, text in (
        ("dup", "Entry already exists (no duplicate added)."),
        ("no_content", "Content is required for 'add' action."),
        ("missing", "No entry matched 'no such entry'"),
        ("no_old", "'remove' needs old_text"),
        ("bad_target", "Input should be 'memory' or 'user'"),
    ):
        error, text_out = out[key]
        assert error and text in text_out, (key, text_out)
    assert json.loads(out["dup"][1]) == {"success": False, "error": "Entry already exists (no duplicate added)."}
    assert out["replace"][1]["message"] == "Entry replaced."
    assert out["sunk"] and all(r["memory_id"] and "%" in r["reason"] for r in out["sunk"])

    assert out["long"][1]["id"].startswith("m-") and out["long"][1]["category"] == "technical"
    assert out["forget_long"] == (False, {"id": "m-blog", "deleted": True})
    assert out["forget_none"][0] and "no long memory 'm-nope'" in out["forget_none"][1]
    assert [f["object_name"] for f in out["as_of"][1]["facts"]] == ["机房A"]
    assert [f["object_name"] for f in out["now"][1]["facts"]] == ["机房B"]
    assert out["invalidate"] == (False, {"ended": 1})
    assert out["invalidate_none"][0] and "no current fact" in out["invalidate_none"][1]
    timeline = out["timeline"][1]
    assert timeline["total"] == 2 and [f["valid_to"] for f in timeline["facts"]] == ["2026-02-01", ""]
    assert out["bad_date"][0] and "as_of" in out["bad_date"][1]
    assert out["sessions"][1]["sessions"][0]["session"]["id"] == "s-1"
    assert "林晓喜欢先看命令再看解释" in out["context"][1]["context"]
    assert out["stats"][1]["L3"]["triples"] == 3
    assert out["unknown"].is_error and "Unknown tool" in out["unknown"].content[0].text

    with Store.open(store_dir) as store:  # what the calls wrote is on disk
        entries = store.hot("memory").entries()
        texts = [m.text for m in store.semantic.all()]
        assert "[env] dev box: M4" in entries or "dev box: M4" in texts  # replaced, then maybe sunk
        assert not any("MacBook M3" in t for t in [*entries, *texts])
        ids = {m.id for m in store.semantic.all()}
        assert "m-blog" not in ids and out["long"][1]["id"] in ids
        assert {r["memory_id"] for r in out["sunk"]} <= ids  # nothing lost: every sunk entry is in L2
        hot_texts = set(entries)
        for n in range(40):
            text = f"[network] host-{n:02d} sits at rack {n} of the lab row"
            assert text in hot_texts or text.removeprefix("[network] ") in texts
        current = {(t.subject, t.object, t.valid_to) for t in store.graph.triples()}
        assert ("embed-01", "机房b", "") in current and ("memwiki", "chroma", "2026-12-01") in current


def test_read_only_sources_offer_no_writing_tool(tmp_path: Path) -> None:
    fixtures = copy_fixtures(tmp_path)
    before = checksums(fixtures)

    async def body(s: ClientSession) -> dict[str, Any]:
        names = {t.name for t in (await s.list_tools()).tools}
        recalled = await call(s, "memwiki_recall", query="restic 备份的保留策略改成了什么？", all_layers=True)
        refused = await s.call_tool("memwiki_memory", {"action": "add", "content": "x"})
        return {"names": names, "recall": recalled, "refused": refused, "stats": await call(s, "memwiki_stats")}

    out = session_with(["--hermes-home", str(fixtures / "hermes_home"), "mcp"], body)
    assert out["names"] == READ_TOOLS
    assert not out["recall"][0] and out["recall"][1]["hits"]
    assert out["refused"].is_error and "Unknown tool" in out["refused"].content[0].text
    assert out["stats"][1]["source"]["kind"]
    assert checksums(fixtures) == before  # read in place, every byte as it was


def test_a_store_deleted_under_the_server_refuses_writes_with_the_cause(store_dir: Path) -> None:
    """An agent's write into a store whose folder was removed is refused, not acknowledged and lost; every error
    carries its cause."""

    async def body(session: ClientSession) -> dict[str, Any]:
        out = {"blank": await call(session, "memwiki_remember_long", text="   ")}
        shutil.rmtree(store_dir)
        out["memory"] = (await session.call_tool("memwiki_memory", {"action": "add", "content": "new fact"})).content
        out["kg"] = await call(session, "memwiki_kg_add", subject="a", predicate="b", object="c")
        return out

    out = session_with(["--store", str(store_dir), "mcp"], body)
    assert out["blank"][0] and "text cannot be empty" in out["blank"][1]
    memory = json.loads(out["memory"][0].text)
    assert memory["success"] is False and "the store is gone" in memory["error"], memory
    assert out["kg"][0] and "the store is gone" in out["kg"][1], out["kg"]
    assert not store_dir.exists()  # nothing made a partial folder again


def test_a_request_with_a_lone_surrogate_gets_an_error_not_silence(store_dir: Path) -> None:
    """Raw JSON-RPC over the server's stdin (the SDK's client cannot even send this): the SDK's parser refuses the
    line, and the server answers it with an error naming the argument instead of leaving the client waiting."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memwiki.agents.cli", "--store", str(store_dir), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memwiki_memory", '
        '"arguments": {"action": "add", "content": "half \\ud800 a character"}}}',
    ]
    watchdog = threading.Timer(120, proc.kill)  # an unanswered request must fail the test, not hang it
    watchdog.start()
    try:
        proc.stdin.write("".join(line + "\n" for line in lines).encode())
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline() or "{}") for _ in range(2)]
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
    assert answers[0]["id"] == 1 and "result" in answers[0]
    assert answers[1]["id"] == 2 and answers[1]["error"]["code"] == -32602
    assert "arguments.content holds a lone surrogate" in answers[1]["error"]["message"]
