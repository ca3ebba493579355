"""The tools agents call, one plain function each over what an agent host holds open (`Opened`).

`memwiki mcp` serves them over MCP (memwiki.agents.mcp_server) and the hermes provider calls them directly
(memwiki.agents.hermes_provider): one definition of each tool for every host. A tool's annotated parameters are its
schema for both, and `call` checks a call's arguments against them as the MCP server does. Each returns JSON-able
data; a failure is a `MemwikiError` (or an `OSError`) that the host turns into the one line an agent reads
(`tool_error`). `memwiki_memory` answers as hermes-agent's own memory tool does, `success` false on a refusal.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_type_hints

from pydantic import ConfigDict, Field, ValidationError, validate_call

from memwiki.agents.as_json import jsonable
from memwiki.common.times import utc_now
from memwiki.errors import MemwikiError, describe_os_error
from memwiki.layers.graph import entity_id, select_facts, select_timeline
from memwiki.layers.hot.categories import category_of
from memwiki.layers.hot.files import usage_text
from memwiki.layers.turn_block import render_context
from memwiki.recall.cascade import Recaller  # (at run time: pydantic reads `Opened`'s fields)
from memwiki.source import CATEGORIES, LayerCounts, Memory, MemorySource

Query = Annotated[str, Field(min_length=1, max_length=4096, description="what to look for, in any language")]
Name = Annotated[str, Field(min_length=1, max_length=500)]
Date = Annotated[str | None, Field(description="YYYY-MM-DD (default: today)")]
Target = Literal["memory", "user"]


@dataclass
class Opened:
    """What an agent host or a command holds open: a store (read and write), or read-only sources; and how their
    recall is made (when first asked: a command that does not recall does not open it)."""

    source: MemorySource
    make_recaller: Callable[[], Recaller]
    store: Any = None  # memwiki.store.store.Store when writable

    @functools.cached_property
    def recaller(self) -> Recaller:
        return self.make_recaller()

    @classmethod
    def store_at(cls, path: Path) -> Opened:
        from memwiki.store.store import Store

        store = Store.open(path)
        return cls(store.reader(), lambda: store.recaller, store)

    @classmethod
    def sources(cls, store: str | None, hermes_home: str | None, palace: str | None) -> Opened:
        """A hermes home and / or a palace read in place (a store beside them for what they lack): read-only."""
        from memwiki.recall.sources import recaller_for
        from memwiki.store.open_sources import open_sources

        source = open_sources(store, hermes_home, palace, None)
        return cls(source, lambda: recaller_for(source))

    def ready(self) -> Opened:
        """Opened now, before an agent's first call: recall (L2 included: a store removed under a long-lived
        process is then never made again by a late opening), and a store's embedder model."""
        recaller = self.recaller
        if self.store is not None:
            recaller.embedder.warm()
        return self

    def writable(self) -> Any:  # noqa: ANN401 - the Store
        """The store to write to, still in its folder; an error over read-only sources."""
        if self.store is None:
            raise MemwikiError("read-only sources are open (a hermes home, a palace): nothing can be written")
        self.store.check_present()  # (a write to a removed folder would make a partial store)
        return self.store

    def graph(self) -> Any:  # noqa: ANN401 - a KnowledgeGraph, or the same two queries over the sources' facts
        """The knowledge graph to query: the store's, or a read-only one over the sources' facts."""
        return self.store.graph if self.store is not None else _SourceGraph(self.source)

    def context(self) -> str:
        """The block injected into every turn: the store's snapshot, or the sources' persona and hot memory."""
        if self.store is not None:
            return self.store.context()
        return render_context(self.source.persona(), self.source.hot_files())

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def open_named(store: str | None, hermes_home: str | None, palace: str | None) -> Opened:
    """What a person named, ready for an agent: read-only sources when a hermes home or a palace is named, else
    the store."""
    if hermes_home or palace:
        return Opened.sources(store, hermes_home, palace).ready()
    from memwiki.store.config import resolve_store_path

    return Opened.store_at(resolve_store_path(store)).ready()


class _SourceGraph:
    """`query_entity` / `timeline` over a read-only source's facts (`memwiki.layers.graph.select_facts`)."""

    def __init__(self, source: MemorySource) -> None:
        self.source = source

    def query_entity(
        self, name: str, as_of: str | None = None, direction: str = "both", include_ended: bool = False
    ) -> list[Any]:
        facts = select_facts(self.source.triples(), name, as_of=as_of, include_ended=include_ended)
        eid = entity_id(name.strip())
        if direction == "outgoing":
            return [t for t in facts if t.subject == eid]
        return [t for t in facts if t.object == eid] if direction == "incoming" else facts

    def timeline(self, entity: str | None = None) -> list[Any]:
        return select_timeline(self.source.triples(), entity)


def tool_error(exc: BaseException) -> str:
    """The one line an agent reads for a failed tool call: memwiki's own message, a file system's cause, or the
    exception's type and text."""
    if isinstance(exc, MemwikiError):
        return str(exc)
    if isinstance(exc, OSError):
        return describe_os_error(exc)
    return f"{type(exc).__name__}: {exc}"


# -- reading tools --------------------------------------------------------------------------------------------


def memwiki_recall(
    opened: Opened,
    query: Query,
    k: Annotated[int, Field(ge=1, le=50)] = 5,
    all_layers: Annotated[
        bool, Field(description="up to k hits from every layer, not only the first that answers")
    ] = False,
) -> dict[str, Any]:
    """Recall in priority order (hot memory, semantic memory, session history, wiki pages)."""
    hits = opened.recaller.recall(query, k=k, all_layers=all_layers)
    return {"query": query, "confident": any(h.confident for h in hits), "hits": [h.to_json() for h in hits]}


def memwiki_kg_query(
    opened: Opened, entity: Name, as_of: Date = None, direction: Literal["outgoing", "incoming", "both"] = "both"
) -> dict[str, Any]:
    """Facts about an entity, current ones or those valid on a date."""
    facts = opened.graph().query_entity(entity, as_of=as_of, direction=direction)
    return {"entity": entity, "as_of": as_of, "facts": jsonable(facts)}


def memwiki_kg_timeline(
    opened: Opened,
    entity: Name | None = None,
    limit: Annotated[int, Field(ge=1, le=500)] = 100,
    offset: Annotated[int, Field(ge=0)] = 0,
) -> dict[str, Any]:
    """Every fact about an entity (or all facts), current and ended, in time order."""
    facts = opened.graph().timeline(entity)
    return {"entity": entity, "total": len(facts), "facts": jsonable(facts[offset : offset + limit])}


def memwiki_session_search(
    opened: Opened, query: Query, limit: Annotated[int, Field(ge=1, le=50)] = 10
) -> dict[str, Any]:
    """Search past sessions by words (Chinese included); best sessions with their snippets."""
    hits = opened.source.search_sessions(query, limit)
    sessions = [
        {"session": jsonable(h.session), "score": h.score, "snippets": list(h.snippets), "ids": list(h.message_ids)}
        for h in hits
    ]
    return {"query": query, "sessions": sessions}


def memwiki_context(opened: Opened) -> dict[str, Any]:
    """The persona and hot memory block injected into every turn, with usage."""
    return {"context": opened.context()}


def memwiki_stats(opened: Opened) -> dict[str, Any]:
    """Counts per layer."""
    return jsonable(opened.store.stats() if opened.store is not None else LayerCounts.of(opened.source).as_json())


# -- writing tools --------------------------------------------------------------------------------------------


def memwiki_memory(
    opened: Opened,
    action: Literal["add", "replace", "remove"],
    target: Target = "memory",
    content: str | None = None,
    old_text: str | None = None,
) -> dict[str, Any]:
    """Hot memory, with hermes-agent's memory-tool arguments: add, replace or remove an entry of MEMORY.md (target
    memory: the agent's notes) or USER.md (target user: about the user). Past 70% of a file's cap non-core entries
    sink into semantic memory instead of being refused; nothing is lost."""
    if action in ("add", "replace") and content is None:
        return {
            "success": False,
            "error": f"{'Content' if action == 'add' else 'content'} is required for '{action}' action.",
        }
    if action != "add" and old_text is None:
        need = f"'{action}' needs old_text -- a short unique substring of the entry to {action}. None was provided."
        return {"success": False, "error": need}
    try:
        store = opened.writable()
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


def _usage(store: Any, target: str) -> dict[str, Any]:  # noqa: ANN401
    """A hot file's usage as hermes's memory tool reports it (its percentage rounded down, as hermes's is)."""
    view = store.hot(target).view()
    return {"usage": usage_text(view.chars, view.cap), "entry_count": len(view.entries)}


def memwiki_remember_long(
    opened: Opened,
    text: Annotated[str, Field(min_length=1)],
    id: Annotated[str | None, Field(max_length=200)] = None,
    category: Literal[CATEGORIES] | None = None,  # type: ignore[valid-type]
) -> dict[str, Any]:
    """Keep a long memory in semantic memory (L2); returns its id."""
    memory = long_memory(text, id, category)
    opened.writable().semantic.upsert([memory])
    return {"id": memory.id, "category": memory.category}


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


def memwiki_forget_long(opened: Opened, id: Annotated[str, Field(min_length=1, max_length=200)]) -> dict[str, Any]:
    """Delete a long memory (L2) by id."""
    store = opened.writable()
    if not store.semantic.get([id]):
        raise MemwikiError(f"no long memory {id!r}")
    store.semantic.delete([id])
    return {"id": id, "deleted": True}


def memwiki_kg_add(
    opened: Opened,
    subject: Name,
    predicate: Name,
    object: Name,
    valid_from: Date = None,
    source: Annotated[str | None, Field(description="where the fact comes from: 'session s-…', 'memory m-…'")] = None,
) -> dict[str, Any]:
    """Add a fact (subject, predicate, object) to the knowledge graph, valid from a date."""
    store = opened.writable()
    triple_id = store.graph.add_triple(subject, predicate, object, valid_from=valid_from, source_file=source)
    store.keep_page_vectors()  # (the vectors of the pages the fact changed: memwiki.text.vectors)
    return {"id": triple_id}


def memwiki_kg_invalidate(
    opened: Opened, subject: Name, predicate: Name, object: Name, ended: Date = None
) -> dict[str, Any]:
    """End a current fact on a date (it stays in the graph's history)."""
    store = opened.writable()
    ended_count = store.graph.invalidate(subject, predicate, object, ended=ended)
    store.keep_page_vectors()
    return {"ended": ended_count}


def memwiki_kg_supersede(
    opened: Opened, subject: Name, predicate: Name, old_object: Name, new_object: Name, at: Date = None
) -> dict[str, Any]:
    """Replace a fact in one step: end (subject, predicate, old_object) and add (subject, predicate, new_object)
    from the same date. A query as of that date returns only the new value."""
    store = opened.writable()
    triple_id = store.graph.supersede(subject, predicate, new_object, date=at, old_object=old_object)
    store.keep_page_vectors()
    return {"id": triple_id}


Tool = Callable[..., dict[str, Any]]
READING: tuple[Tool, ...] = (
    memwiki_recall,
    memwiki_kg_query,
    memwiki_kg_timeline,
    memwiki_session_search,
    memwiki_context,
    memwiki_stats,
)
WRITING: tuple[Tool, ...] = (
    memwiki_memory,
    memwiki_remember_long,
    memwiki_forget_long,
    memwiki_kg_add,
    memwiki_kg_invalidate,
    memwiki_kg_supersede,
)
TOOLS: dict[str, Tool] = {t.__name__: t for t in (*READING, *WRITING)}


@functools.cache
def _checked(name: str) -> Tool:
    """The tool `name` with its arguments validated by pydantic, as the MCP SDK validates them (made on first use)."""
    return validate_call(TOOLS[name], config=ConfigDict(arbitrary_types_allowed=True))


def call(opened: Opened, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The tool `name` over `opened`, its arguments checked against its parameters first (a wrong type, a value
    out of range, a missing one: a `MemwikiError` naming the argument); an argument it does not take is ignored, as
    the MCP server ignores it."""
    if name not in TOOLS:
        raise MemwikiError(f"memwiki has no tool {name!r}")
    known = parameters(TOOLS[name])
    try:
        return _checked(name)(opened, **{k: v for k, v in args.items() if k in known})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
        raise MemwikiError(f"{name}: {problems}") from None


@functools.cache
def parameters(tool: Tool) -> dict[str, Any]:
    """A tool's parameters after `opened`, with their types resolved (what a host declares; resolved once a tool,
    not at every call)."""
    hints = get_type_hints(tool, include_extras=True)
    return {name: hint for name, hint in hints.items() if name not in ("opened", "return")}
