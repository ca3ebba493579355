"""memwiki as a hermes-agent memory provider (`memory.provider: memwiki` in hermes's config.yaml).

hermes keeps its own MEMORY.md / USER.md and refuses a new entry when a file is full; this provider makes a
memwiki store the agent's memory while it works:
- `prefetch(query)`: the recall cascade's confident hits, as a short block hermes adds to the turn (a prompt
  with no word worth looking up recalls nothing);
- `sync_turn`: the turn is appended to L4 session history; a memory write hermes refused because a file was full
  is kept in the store's hot memory, where the 70% sink makes room (nothing is lost);
- `on_memory_write`: hermes's successful MEMORY.md / USER.md writes are mirrored into the store's hot memory;
- `on_session_switch` / `on_session_end`: `/new`, `/resume` and exit open and close sessions in L4;
- tools: recall, long memory and the knowledge graph, the same definitions as `memwiki mcp` serves.

Install: `memwiki hermes-install --hermes-home ~/.hermes --store DIR` writes `plugins/memwiki/` there (hermes
loads memory providers from `$HERMES_HOME/plugins/<name>/`) and says what to put in config.yaml:
`memory: {provider: memwiki}` and `plugins: {memwiki: {store: DIR}}` (or set $MEMWIKI_STORE).

hermes calls a provider from three threads (the agent's, a prefetch thread, a sync worker); every store call
runs on the provider's one `StoreThread`.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import yaml
from agent.memory_provider import MemoryProvider

from memwiki.agents import tools
from memwiki.agents.mcp_server import tool_schemas
from memwiki.agents.store_thread import StoreThread
from memwiki.common.times import utc_now
from memwiki.errors import DuplicateEntryError, MemwikiError
from memwiki.readers.locate import hermes_home_path
from memwiki.recall.cascade import Hit, turn_text
from memwiki.store.layout import is_store
from memwiki.store.store import Store
from memwiki.text.tokens import tokens

log = logging.getLogger(__name__)
NAME = "memwiki"
TOOLS = (
    "memwiki_recall",
    "memwiki_remember_long",
    "memwiki_forget_long",
    "memwiki_kg_add",
    "memwiki_kg_query",
    "memwiki_kg_invalidate",
    "memwiki_kg_supersede",
    "memwiki_kg_timeline",
)
PREFETCH_HITS = 5
HIT_CHARS = 300
# hermes's memory-tool errors when a file is full, and after three of those in a turn ("leave memory unchanged")
REFUSED_FULL = ("would exceed the limit", "consolidation failed")


def store_path(hermes_home: str | Path | None = None) -> Path | None:
    """The store: `plugins.memwiki.store` in hermes's config.yaml, else $MEMWIKI_STORE."""
    home = hermes_home_path(hermes_home)
    try:
        config = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        config = {}
    plugins = config.get("plugins") if isinstance(config, dict) else None
    mine = plugins.get(NAME) if isinstance(plugins, dict) else None
    chosen = (mine or {}).get("store") if isinstance(mine, dict) else None
    chosen = chosen or os.environ.get("MEMWIKI_STORE")
    return Path(str(chosen)).expanduser() if chosen else None


def recall_block(hits: list[Hit]) -> str:
    """The confident hits as the lines hermes adds to a turn (it wraps them in its own memory-context tags)."""
    lines = []
    for h in hits:
        text = " ".join(h.text.split())
        text = text if len(text) <= HIT_CHARS else text[: HIT_CHARS - 1] + "…"
        lines.append(f"- [{h.layer} {h.id}] {text}")
    return "memwiki recalled:\n" + "\n".join(lines) if lines else ""


def worth_recalling(query: str) -> bool:
    """A prompt with at least one informative word (`hi`, `ok`, `？？？` have none worth a lookup)."""
    return len(query.strip()) >= 3 and bool(tokens(query))


class MemwikiProvider(MemoryProvider):
    """hermes-agent's `MemoryProvider` over a memwiki store."""

    def __init__(self, store: str | Path | None = None) -> None:
        self._store_path = Path(store) if store else None
        self._schemas = tool_schemas(TOOLS)  # hermes routes tools before initialize(): they are fixed here
        self._thread: StoreThread | None = None
        self._store: Store | None = None
        self._opened: tools.Opened | None = None
        self._writes = True
        self.session_id = ""
        self._seen_calls: set[str] = set()  # tool calls of the transcript already looked at (sync_turn)

    @property
    def name(self) -> str:
        return NAME

    def _path(self) -> Path | None:
        return self._store_path or store_path()

    def is_available(self) -> bool:
        path = self._path()
        return path is not None and is_store(path)

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        path = self._path()
        if path is None:
            raise MemwikiError("memwiki: no store (set plugins.memwiki.store in config.yaml or $MEMWIKI_STORE)")
        # subagents, cron jobs and flushes read the store but do not write the user's memory
        self._writes = kwargs.get("agent_context", "primary") == "primary"
        thread = self._thread = StoreThread()

        self._opened = thread.call(
            lambda: tools.Opened.store_at(path).ready()
        )  # (its connections belong to that thread)
        self._store = self._opened.store
        self._open_session(session_id, str(kwargs.get("platform") or "hermes"))

    def _call(self, work: Any) -> Any:  # noqa: ANN401
        assert self._thread is not None, "initialize() first"
        return self._thread.call(work)

    def _open_session(self, session_id: str, source: str = "hermes") -> None:
        self.session_id = session_id
        if session_id and self._writes:
            self._call(lambda: self._store.sessions.add_session(session_id, source=source))

    # -- turns ----------------------------------------------------------------------------------------

    def system_prompt_block(self) -> str:
        return (
            "Long-term memory (memwiki): relevant memories are recalled into each turn. Use memwiki_recall to look "
            "further, memwiki_remember_long for facts too long for the memory tool, and memwiki_kg_* for facts "
            "that change over time (supersede the old value rather than adding a second one)."
        )

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        if self._store is None or not worth_recalling(query):
            return ""
        try:
            hits = self._call(lambda: self._store.recall(query, k=PREFETCH_HITS))
        except MemwikiError as exc:
            log.warning("memwiki: recall failed: %s", exc)
            return ""
        return recall_block([h for h in hits if h.confident])

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        if self._store is None or not self._writes:
            return
        sid = session_id or self.session_id
        store = self._store

        def append() -> None:
            if user_content:
                store.sessions.add_message(sid, "user", user_content)
            if assistant_content:
                store.sessions.add_message(sid, "assistant", assistant_content)
            # the turns' vectors, made now (where they are written) for every later recall and build
            store.text_vectors.ensure(turn_text(c) for c in (user_content, assistant_content) if c)

        self._call(append)
        for target, content in self._refused_writes(messages or []):
            self._remember(target, content)

    def _refused_writes(self, messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """(target, content) of the memory-tool adds in the transcript that hermes refused because a file was full."""
        asked: dict[str, dict[str, Any]] = {}
        for m in messages:
            for call in m.get("tool_calls") or ():
                fn = call.get("function") or {}
                if fn.get("name") == "memory":
                    try:
                        asked[str(call.get("id"))] = json.loads(fn.get("arguments") or "{}")
                    except (TypeError, ValueError):
                        continue
        refused = []
        for m in messages:
            call_id = str(m.get("tool_call_id"))
            if m.get("role") != "tool" or call_id not in asked or call_id in self._seen_calls:
                continue
            self._seen_calls.add(call_id)
            args = asked[call_id]
            full = any(reason in str(m.get("content")) for reason in REFUSED_FULL)
            if full and args.get("action") == "add" and args.get("content"):
                refused.append((str(args.get("target") or "memory"), str(args["content"])))
        return refused

    def _remember(self, target: str, content: str) -> None:
        try:
            self._call(lambda: self._store.remember(content, target=target))
        except DuplicateEntryError:
            pass
        except MemwikiError as exc:
            log.warning("memwiki: could not keep %s entry %r: %s", target, content[:60], exc)

    def on_memory_write(self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None) -> None:
        """Mirror one of hermes's own MEMORY.md / USER.md writes into the store's hot memory (the sink runs there)."""
        if self._store is None or not self._writes or target not in ("memory", "user"):
            return
        old = (metadata or {}).get("old_text") or ""
        store = self._store
        try:
            if action == "add":
                self._remember(target, content)
            elif action == "replace" and old:
                self._call(lambda: store.replace(old, content, target=target))
            elif action == "remove" and old:
                self._call(lambda: store.forget(old, target=target))
        except MemwikiError as exc:  # e.g. the entry was never mirrored: hermes's own file stays the truth
            log.warning("memwiki: could not mirror %s on %s: %s", action, target, exc)

    def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str = "", reset: bool = False, rewound: bool = False, **kw: Any
    ) -> None:
        if self._store is None:
            return
        if reset and self.session_id and self._writes:
            self._end_session(self.session_id)
        self._open_session(new_session_id)

    def _end_session(self, session_id: str) -> None:
        self._call(lambda: self._store.sessions.add_session(session_id, ended=utc_now()))

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        if self._store is not None and self.session_id and self._writes:
            self._end_session(self.session_id)

    # -- tools ----------------------------------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return self._schemas

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """A JSON string: the tool's result, or {"error": ...} (as hermes's tools answer)."""
        opened = self._opened
        if opened is None:
            return json.dumps({"error": "memwiki is not initialised"})
        if tool_name not in TOOLS:
            return json.dumps({"error": f"memwiki has no tool {tool_name!r}"})
        try:  # the tool itself, on the store's thread (its arguments checked as the MCP server checks them)
            result = self._call(lambda: tools.call(opened, tool_name, dict(args or {})))
        except Exception as exc:  # bad arguments, a memwiki error, a file system's: the line an agent reads
            return json.dumps({"error": tools.tool_error(exc)}, ensure_ascii=False)
        return json.dumps(result, ensure_ascii=False)

    def backup_paths(self) -> list[str]:
        path = self._path()
        return [str(path)] if path is not None else []

    def shutdown(self) -> None:
        if self._thread is None:
            return
        if self._store is not None:
            self._thread.call(self._store.close)
        self._thread.close()
        self._thread = self._store = self._opened = None
