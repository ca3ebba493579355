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
import inspect
import json
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, TextContent

from memwiki.agents import tools
from memwiki.agents.store_thread import StoreThread
from memwiki.agents.tools import Opened, tool_error
from memwiki.common.jsonl import unpaired_surrogate

SERVER_NAME = "memwiki"
INSTRUCTIONS = (
    "memwiki: the agent's memory in five layers. Call memwiki_recall before answering from memory; "
    "memwiki_memory keeps the small hot memory (hermes-agent's memory tool); long facts go to "
    "memwiki_remember_long; facts that change over time go to the knowledge graph (memwiki_kg_*)."
)


@dataclass
class Served:
    """What the server holds open (a store, or read-only sources), and the one thread every call runs on."""

    opened: Opened
    thread: StoreThread = field(default_factory=StoreThread, repr=False)  # the thread that opened it

    async def run(self, tool: tools.Tool, args: dict[str, Any]) -> Any:  # noqa: ANN401
        """The tool on the store's thread; a failure becomes the tool's error text (the model reads it)."""

        def guarded() -> Any:  # noqa: ANN401
            try:
                return tool(self.opened, **args)
            except Exception as exc:  # the agent sees the cause, not "Error executing tool"
                raise ToolError(tool_error(exc)) from None

        return await self.thread.acall(guarded)


def _hermes_result(body: dict[str, Any]) -> CallToolResult:
    """A result as hermes-agent's memory tool returns it (its JSON as text, `success` false on an error), so an
    agent's handling of that tool keeps working; a success also carries the same dict as structured content."""
    text = json.dumps(body, ensure_ascii=False)
    failed = body.get("success") is False
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=None if failed else body, is_error=failed
    )


def build_server(served: Served, writable: bool | None = None) -> MCPServer:
    """The MCP server over `served`: the reading tools always, the writing ones when it holds a store (or
    `writable`)."""
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")
    writes = served.opened.store is not None if writable is None else writable
    for tool in (*tools.READING, *(tools.WRITING if writes else ())):
        _serve_tool(server, served, tool)
    return server


def _serve_tool(server: MCPServer, served: Served, tool: tools.Tool) -> None:
    """Declare `tool` on `server`: its parameters after `opened` are the tool's, its docstring the description."""
    declared = tools.parameters(tool)
    hermes_format = tool is tools.memwiki_memory  # (answers as hermes-agent's memory tool: see _hermes_result)

    async def serve(**args: Any) -> Any:  # noqa: ANN401
        result = await served.run(tool, args)
        return _hermes_result(result) if hermes_format else result

    serve.__name__ = tool.__name__
    signature = inspect.signature(tool)
    kept = [p.replace(annotation=declared[p.name]) for p in signature.parameters.values() if p.name in declared]
    serve.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=kept,
        return_annotation=CallToolResult if hermes_format else dict[str, Any],
    )
    server.tool(description=" ".join(inspect.getdoc(tool).split()))(serve)


def run_to_end(coro: Any) -> Any:  # noqa: ANN401
    """Run a coroutine to its end from sync code, whatever event loop the calling thread may be running."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def tool_schemas(names: Sequence[str]) -> list[dict[str, Any]]:
    """The named tools' OpenAI-style function schemas (name, description, parameters), as the MCP server
    declares them: one definition of each tool for every agent host."""
    declared = run_to_end(build_server(Served(Opened(None, None)), writable=True).list_tools())  # type: ignore[arg-type]
    by_name = {t.name: t for t in declared}
    return [{"name": n, "description": by_name[n].description, "parameters": by_name[n].input_schema} for n in names]


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


def serve(open_: Callable[[], Opened]) -> None:
    """Open what is served on its thread (stdout pointed at stderr meanwhile: chromadb prints banners), then
    speak MCP on stdio until the client closes it."""
    thread = StoreThread()
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        opened = thread.call(open_)
    finally:
        sys.stdout = real_stdout
    try:
        anyio.run(run_stdio, build_server(Served(opened, thread)))
    finally:
        thread.call(opened.close)
        thread.close()
