"""memwiki over MCP: a stdio server on the official `mcp` SDK (`MCPServer`) that keeps one store open.

`memwiki mcp --store DIR` serves the five layers to any MCP client (Claude Desktop, hermes-agent's
`mcp_servers`, …): recall, hot memory with hermes-agent's own memory-tool arguments (the 70% sink runs as in
the store), long memory, the knowledge graph, session search, the per-turn context and stats. Over read-only
sources (a hermes home, a MemPalace palace) only the reading tools are offered.

The embedder and the store are opened once, before the protocol starts (chromadb's banners and the model's
logs go to stderr: stdout is the protocol), on one worker thread that then serves every call in turn: the
store's SQLite connections stay on the thread that made them, and two calls never meet inside the store.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import anyio
from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from memwiki.categories import category_of
from memwiki.context import render_context
from memwiki.errors import MemwikiError, describe_os_error
from memwiki.graph import entity_id, select_facts, select_timeline
from memwiki.jsonable import jsonable
from memwiki.jsonl import unpaired_surrogate
from memwiki.recall import Recaller
from memwiki.source import CATEGORIES, Memory, MemorySource
from memwiki.source_stats import source_stats
from memwiki.store_thread import StoreThread
from memwiki.times import utc_now

SERVER_NAME = "memwiki"
Query = Annotated[str, Field(min_length=1, max_length=4096, description="what to look for, in any language")]
Name = Annotated[str, Field(min_length=1, max_length=500)]
Date = Annotated[str | None, Field(description="YYYY-MM-DD (default: today)")]
Target = Literal["memory", "user"]


@dataclass
class Served:
    """What the server holds open: a store (read and write), or read-only sources and their recall."""

    source: MemorySource
    recaller: Recaller
    store: Any = None  # memwiki.store.Store when writable
    thread: StoreThread = field(default_factory=StoreThread, repr=False)  # the thread that opened them

    async def run(self, work: Callable[[], Any]) -> Any:  # noqa: ANN401
        """`work()` on the store's thread; a memwiki error becomes the tool's error text (the model reads it)."""

        def guarded() -> Any:  # noqa: ANN401
            try:
                return work()
            except Exception as exc:  # the agent sees the cause, not "Error executing tool"
                raise ToolError(tool_error(exc)) from None

        return await self.thread.acall(guarded)

    async def write(self, work: Callable[[], Any]) -> Any:  # noqa: ANN401
        """Like `run`, for a write: refused when the store's folder is gone (a write would make a partial one)."""

        def present_then(work: Callable[[], Any]) -> Any:  # noqa: ANN401
            if self.store is not None:
                self.store.check_present()
            return work()

        return await self.run(lambda: present_then(work))


def tool_error(exc: BaseException) -> str:
    """The one line an agent reads for a failed tool call: memwiki's own message, a file system's cause, or the
    exception's type and text."""
    if isinstance(exc, MemwikiError):
        return str(exc)
    if isinstance(exc, OSError):
        return describe_os_error(exc)
    return f"{type(exc).__name__}: {exc}"


def _hermes_result(body: dict[str, Any]) -> CallToolResult:
    """A result as hermes-agent's memory tool returns it (its JSON as text, `success` false on an error), so an
    agent's handling of that tool keeps working; a success also carries the same dict as structured content."""
    text = json.dumps(body, ensure_ascii=False)
    failed = body.get("success") is False
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=None if failed else body, is_error=failed
    )


def _hermes_error(message: str) -> CallToolResult:
    return _hermes_result({"success": False, "error": message})


def _usage(store: Any, target: str) -> dict[str, Any]:
    view = store.hot(target).view()
    pct = round(100 * view.chars / view.cap) if view.cap else 0
    return {"usage": f"{pct}% — {view.chars:,}/{view.cap:,} chars", "entry_count": len(view.entries)}


def build_server(served: Served, writable: bool | None = None) -> MCPServer:
    """The MCP server over `served`: reading tools always, writing tools when it holds a store (or `writable`)."""
    server = MCPServer(
        SERVER_NAME,
        instructions=(
            "memwiki: the agent's memory in five layers. Call memwiki_recall before answering from memory; "
            "memwiki_memory keeps the small hot memory (hermes-agent's memory tool); long facts go to "
            "memwiki_remember_long; facts that change over time go to the knowledge graph (memwiki_kg_*)."
        ),
        log_level="WARNING",
    )

    @server.tool(description="Recall in priority order (hot memory, semantic memory, session history, wiki pages).")
    async def memwiki_recall(
        query: Query,
        k: Annotated[int, Field(ge=1, le=50)] = 5,
        all_layers: Annotated[
            bool, Field(description="up to k hits from every layer, not only the first that answers")
        ] = False,
    ) -> dict[str, Any]:
        hits = await served.run(lambda: served.recaller.recall(query, k=k, all_layers=all_layers))
        return {"query": query, "confident": any(h.confident for h in hits), "hits": [h.to_json() for h in hits]}

    @server.tool(description="Facts about an entity, current ones or those valid on a date.")
    async def memwiki_kg_query(
        entity: Name,
        as_of: Date = None,
        direction: Literal["outgoing", "incoming", "both"] = "both",
    ) -> dict[str, Any]:
        facts = await served.run(lambda: _graph(served).query_entity(entity, as_of=as_of, direction=direction))
        return {"entity": entity, "as_of": as_of, "facts": jsonable(facts)}

    @server.tool(description="Every fact about an entity (or all facts), current and ended, in time order.")
    async def memwiki_kg_timeline(
        entity: Name | None = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> dict[str, Any]:
        facts = await served.run(lambda: _graph(served).timeline(entity))
        return {"entity": entity, "total": len(facts), "facts": jsonable(facts[offset : offset + limit])}

    @server.tool(description="Search past sessions by words (Chinese included); best sessions with their snippets.")
    async def memwiki_session_search(query: Query, limit: Annotated[int, Field(ge=1, le=50)] = 10) -> dict[str, Any]:
        hits = await served.run(lambda: served.source.search_sessions(query, limit))
        sessions = [
            {"session": jsonable(h.session), "score": h.score, "snippets": list(h.snippets), "ids": list(h.message_ids)}
            for h in hits
        ]
        return {"query": query, "sessions": sessions}

    @server.tool(description="The persona and hot memory block injected into every turn, with usage.")
    async def memwiki_context() -> dict[str, Any]:
        def context() -> str:
            if served.store is not None:
                return served.store.context()
            return render_context(served.source.persona(), served.source.hot_files())

        return {"context": await served.run(context)}

    @server.tool(description="Counts per layer.")
    async def memwiki_stats() -> dict[str, Any]:
        stats = served.store.stats if served.store is not None else lambda: source_stats(served.source)
        return jsonable(await served.run(stats))

    if served.store is not None if writable is None else writable:
        _writing_tools(server, served)
    return server


def run_to_end(coro: Any) -> Any:  # noqa: ANN401
    """Run a coroutine to its end from sync code, whatever event loop the calling thread may be running."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def tool_schemas(names: Sequence[str]) -> list[dict[str, Any]]:
    """The named tools' OpenAI-style function schemas (name, description, parameters), as the MCP server
    declares them: one definition of each tool for every agent host."""
    tools = run_to_end(build_server(Served(None, None), writable=True).list_tools())  # type: ignore[arg-type]
    by_name = {t.name: t for t in tools}
    return [{"name": n, "description": by_name[n].description, "parameters": by_name[n].input_schema} for n in names]


def _graph(served: Served) -> Any:
    """The knowledge graph to query: the store's, or a read-only one over the sources' facts."""
    if served.store is not None:
        return served.store.graph
    return _SourceGraph(served.source)


class _SourceGraph:
    """`query_entity` / `timeline` over a read-only source's facts (`memwiki.graph.select_facts`)."""

    def __init__(self, source: MemorySource) -> None:
        self.source = source

    def query_entity(self, name: str, as_of: str | None = None, direction: str = "both") -> list[Any]:
        facts = select_facts(self.source.triples(), name, as_of=as_of)
        eid = entity_id(name.strip())
        if direction == "outgoing":
            return [t for t in facts if t.subject == eid]
        return [t for t in facts if t.object == eid] if direction == "incoming" else facts

    def timeline(self, entity: str | None = None) -> list[Any]:
        return select_timeline(self.source.triples(), entity)


def long_memory(text: str, memory_id: str | None = None, category: str | None = None) -> Memory:
    """An L2 memory an agent writes: its id (default: a digest of the text, so the same text is one memory),
    the time, and its category (default: as memwiki's classifier files the text)."""
    if not text.strip():
        raise MemwikiError("text cannot be empty")
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return Memory(
        id=memory_id or f"m-{digest}",
        text=text,
        category=category or category_of(text)[0],
        source="mcp",
        created=utc_now(),
    )


def _writing_tools(server: MCPServer, served: Served) -> None:
    store = served.store

    def with_vectors(result: Any) -> Any:  # noqa: ANN401 - the write's own result
        """A graph write's result, once the vectors of the pages it changed are made (memwiki.text_vectors)."""
        store.keep_page_vectors()
        return result

    @server.tool(
        description=(
            "Hot memory, with hermes-agent's memory-tool arguments: add, replace or remove an entry of MEMORY.md "
            "(target memory: the agent's notes) or USER.md (target user: about the user). Past 70% of a file's cap "
            "non-core entries sink into semantic memory instead of being refused; nothing is lost."
        )
    )
    async def memwiki_memory(
        action: Literal["add", "replace", "remove"],
        target: Target = "memory",
        content: str | None = None,
        old_text: str | None = None,
    ) -> CallToolResult:
        if action == "add" and content is None:
            return _hermes_error("Content is required for 'add' action.")
        if action == "replace" and content is None:
            return _hermes_error("content is required for 'replace' action.")
        if action != "add" and old_text is None:
            return _hermes_error(
                f"'{action}' needs old_text -- a short unique substring of the entry to {action}. None was provided."
            )

        def write() -> dict[str, Any]:
            try:
                store.check_present()
                if action == "add":
                    sunk, message = store.remember(content, target=target), "Entry added."
                elif action == "replace":
                    sunk, message = store.replace(old_text, content, target=target), "Entry replaced."
                else:
                    store.forget(old_text, target=target)
                    sunk, message = [], "Entry removed."
            except (MemwikiError, OSError) as exc:
                return {"success": False, "error": tool_error(exc)}
            out = {"success": True, "target": target, **_usage(store, target), "message": message}
            if sunk:
                out["sunk"] = [{"memory_id": r.memory_id, "text": r.text, "reason": r.reason} for r in sunk]
            return out

        return _hermes_result(await served.run(write))  # (the store's presence checked in write())

    @server.tool(description="Keep a long memory in semantic memory (L2); returns its id.")
    async def memwiki_remember_long(
        text: Annotated[str, Field(min_length=1)],
        id: Annotated[str | None, Field(max_length=200)] = None,
        category: Literal[CATEGORIES] | None = None,  # type: ignore[valid-type]
    ) -> dict[str, Any]:
        def remember() -> Memory:
            memory = long_memory(text, id, category)
            store.semantic.upsert([memory])
            return memory

        memory = await served.write(remember)
        return {"id": memory.id, "category": memory.category}

    @server.tool(description="Delete a long memory (L2) by id.")
    async def memwiki_forget_long(id: Annotated[str, Field(min_length=1, max_length=200)]) -> dict[str, Any]:
        def forget() -> None:
            if not store.semantic.get([id]):
                raise MemwikiError(f"no long memory {id!r}")
            store.semantic.delete([id])

        await served.write(forget)
        return {"id": id, "deleted": True}

    @server.tool(description="Add a fact (subject, predicate, object) to the knowledge graph, valid from a date.")
    async def memwiki_kg_add(
        subject: Name,
        predicate: Name,
        object: Name,
        valid_from: Date = None,
        source: Annotated[
            str | None, Field(description="where the fact comes from: 'session s-…', 'memory m-…'")
        ] = None,
    ) -> dict[str, Any]:
        def add() -> str:
            return store.graph.add_triple(subject, predicate, object, valid_from=valid_from, source_file=source)

        return {"id": await served.write(lambda: with_vectors(add()))}

    @server.tool(description="End a current fact on a date (it stays in the graph's history).")
    async def memwiki_kg_invalidate(subject: Name, predicate: Name, object: Name, ended: Date = None) -> dict[str, Any]:
        def invalidate() -> int:
            return store.graph.invalidate(subject, predicate, object, ended=ended)

        return {"ended": await served.write(lambda: with_vectors(invalidate()))}

    @server.tool(
        description=(
            "Replace a fact in one step: end (subject, predicate, old_object) and add (subject, predicate, "
            "new_object) from the same date. A query as of that date returns only the new value."
        )
    )
    async def memwiki_kg_supersede(
        subject: Name, predicate: Name, old_object: Name, new_object: Name, at: Date = None
    ) -> dict[str, Any]:
        def supersede() -> str:
            return store.graph.supersede(subject, predicate, new_object, date=at, old_object=old_object)

        return {"id": await served.write(lambda: with_vectors(supersede()))}


async def run_stdio(server: MCPServer) -> None:
    """The SDK's stdio transport, with one addition: a request its parser refuses (a lone surrogate escape such as
    `\\ud800` in an argument) gets a JSON-RPC error naming the cause, where the SDK would drop it and leave the
    client waiting."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 - the SDK's own run_stdio_async does the same
    async with stdio_server() as (read, write):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def forward() -> None:
            async with send:
                async for item in read:
                    refusal = refused(item) if isinstance(item, Exception) else None
                    if refusal is not None:
                        await write.send(SessionMessage(refusal))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(forward)
            await lowlevel.run(receive, write, lowlevel.create_initialization_options())


def refused(exc: Exception) -> types.JSONRPCError | None:
    """The error owed to a request the SDK could not parse, when its text still names an id (else None)."""
    errors = exc.errors() if callable(getattr(exc, "errors", None)) else []
    raw = errors[0].get("input") if errors else None
    try:
        message = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message or not isinstance(message.get("id"), int | str):
        return None
    field = unpaired_surrogate(message.get("params"))
    cause = (
        f"{field or 'an argument'} holds a lone surrogate (half of a character): not text any layer can store"
        if field is not None
        else str(errors[0].get("msg", "not a valid request"))
    )
    return types.JSONRPCError(
        jsonrpc="2.0", id=message["id"], error=types.ErrorData(code=types.INVALID_PARAMS, message=cause)
    )


def serve(opener: Callable[[StoreThread], Served]) -> None:
    """Open what is served on its thread (stdout pointed at stderr meanwhile: chromadb prints banners), then
    speak MCP on stdio until the client closes it."""
    thread = StoreThread()
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        served = thread.call(lambda: opener(thread))
    finally:
        sys.stdout = real_stdout
    try:
        anyio.run(run_stdio, build_server(served))
    finally:
        if served.store is not None:
            thread.call(served.store.close)
        thread.close()
