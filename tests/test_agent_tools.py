"""The tools both agent hosts call (memwiki.agents.tools): called directly, as the hermes provider calls them, on a
real store; the same functions the MCP server declares (tests/test_mcp.py drives them through the SDK's client)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memwiki.agents import mcp_server, tools
from memwiki.errors import MemwikiError
from memwiki.source import Memory
from memwiki.store.store import Store


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[tools.Opened]:
    with Store.init(tmp_path / "store") as store:
        store.semantic.upsert([Memory("m-blog", "The blog is built with Hugo and hosted on Cloudflare Pages.")])
    opened = tools.Opened.store_at(tmp_path / "store")
    yield opened
    opened.close()


def test_a_direct_call_checks_its_arguments_as_the_mcp_server_does(opened: tools.Opened) -> None:
    with pytest.raises(MemwikiError, match=r"memwiki_recall: k: Input should be greater than or equal to 1"):
        tools.call(opened, "memwiki_recall", {"query": "blog", "k": 0})
    with pytest.raises(MemwikiError, match=r"memwiki_kg_add: .*object"):  # a required argument missing
        tools.call(opened, "memwiki_kg_add", {"subject": "blog", "predicate": "hosted_on"})
    assert tools.call(opened, "memwiki_stats", {"verbose": True})["L2"]["memories"] == 1  # ignored, as MCP does
    with pytest.raises(MemwikiError, match="no tool 'memwiki_nope'"):
        tools.call(opened, "memwiki_nope", {})


def test_a_direct_call_reads_and_writes_the_store(opened: tools.Opened) -> None:
    found = tools.call(opened, "memwiki_recall", {"query": "Where is the blog hosted?"})
    assert found["hits"][0]["id"] == "m-blog"
    fact = tools.call(opened, "memwiki_kg_add", {"subject": "blog", "predicate": "hosted_on", "object": "Cloudflare"})
    facts = tools.call(opened, "memwiki_kg_query", {"entity": "blog"})["facts"]
    assert [f["id"] for f in facts] == [fact["id"]]
    added = tools.call(opened, "memwiki_memory", {"action": "add", "content": "[env] laptop: ThinkPad X1"})
    assert added["success"] and "laptop: ThinkPad X1" in tools.call(opened, "memwiki_context", {})["context"]
    refused = tools.call(opened, "memwiki_memory", {"action": "remove"})  # hermes's own refusal, not an exception
    assert refused == {"success": False, "error": refused["error"]} and "old_text" in refused["error"]


def test_read_only_sources_refuse_a_write(opened: tools.Opened) -> None:
    read_only = tools.Opened(opened.source, lambda: opened.recaller)
    with pytest.raises(MemwikiError, match="read-only"):
        tools.call(read_only, "memwiki_remember_long", {"text": "a long memory"})


def test_the_server_declares_every_tool_from_its_function() -> None:
    declared = mcp_server.tool_schemas(list(tools.TOOLS))
    for schema in declared:
        tool = tools.TOOLS[schema["name"]]
        assert schema["description"] == " ".join((tool.__doc__ or "").split())
        assert set(schema["parameters"]["properties"]) == set(tools.parameters(tool))
