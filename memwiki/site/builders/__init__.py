"""Page builders: one module per kind of page, each `build(ctx) -> (pages, assets)`.

`site(ctx)` reads the (privacy-filtered) source once per build and holds what several builders share:
the records, the concept index with its backlinks, the text renderer, where each memory is shown and where
each concept is named (`mentions`). `provenance` resolves a fact's source to the place that shows it.
`build_all(ctx)` runs every builder, the graph and search builders included when they are present.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memwiki.site.builder_io import BuildContext, GeneratedAsset, GeneratedPage
from memwiki.site.concept_index import Concept, ConceptIndex, TextSource, UniquePaths, claim_order, paged_uri
from memwiki.site.mentions import MentionIndex
from memwiki.site.render import TextRenderer, block, esc, href
from memwiki.site.speed import cache_file
from memwiki.site.speed.memo import PageMemo, key_of
from memwiki.site.speed.text_cache import TextCache
from memwiki.source import Entity, HotFile, Memory, Message, Persona, Session, SinkRecord, SourceInfo, Triple, WikiPage

log = logging.getLogger("mkdocs.plugins.memwiki")

HOME = "index.md"
PERSONA = "persona.md"
CONCEPTS = "concepts/index.md"
MEMORY = "memory/index.md"
SESSIONS = "sessions/index.md"
AUDIT = "audit.md"
GRAPH = "graph/index.md"
SEARCH = "search/index.md"
SESSION_PAGES = re.compile(r"sessions/(index|page-\d+)\.md")  # the timeline's own pages (builders.sessions)
PER_PAGE = 40
INDEX_CACHE = "concept-index.marshal"  # in cache_dir: the concept index before the scan (see _fill_index)
TEXT_CACHE = "texts.marshal"  # in cache_dir: what was derived from each memory text (see memwiki.site.speed.text_cache)

BuildResult = tuple[list[GeneratedPage], list[GeneratedAsset]]


def hot_anchor(target: str, index: int) -> str:
    return f"{target}-{index}"


def message_anchor(n: int) -> str:
    return f"msg-{n}"


def _pages_of(count: int) -> int:
    return max(1, -(-count // PER_PAGE))


def _newest_first(memories: list[Memory]) -> list[Memory]:
    return sorted(memories, key=lambda m: (m.created or m.sunk_at, m.id), reverse=True)


@dataclass
class Site:
    """Everything read from the source for one build, plus the shared concept index."""

    info: SourceInfo
    persona: Persona | None
    hot: list[HotFile]
    sinks: list[SinkRecord]
    memories: list[Memory]
    entities: list[Entity]
    triples: list[Triple]
    sessions: list[Session]
    messages: dict[str, list[Message]]
    wiki: list[WikiPage]
    index: ConceptIndex
    renderer: TextRenderer
    directory_urls: bool
    today: str
    memory_home: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (page, anchor) of its card
    entity_names: dict[str, str] = field(default_factory=dict)
    session_by_id: dict[str, Session] = field(default_factory=dict)
    # where things are shown, claimed once per build so that names colliding after slugging get -2, -3 (see _paths)
    session_uris: dict[str, str] = field(default_factory=dict)  # session id -> its digest page
    category_bases: dict[str, str] = field(default_factory=dict)  # category -> base of its pages (paged_uri)
    room_bases: dict[tuple[str, str], str] = field(default_factory=dict)  # (wing, room) -> base of its pages
    memory_anchors: dict[str, str] = field(default_factory=dict)  # memory id -> anchor of its card
    _memory_ids: dict[str, Memory] = field(default_factory=dict)
    _mentions: MentionIndex | None = None

    def memory_by_id(self) -> dict[str, Memory]:
        """Memory id -> memory (made on first use)."""
        if len(self._memory_ids) != len(self.memories):
            self._memory_ids = {m.id: m for m in self.memories}
        return self._memory_ids

    def session_uri(self, session_id: str) -> str:
        return self.session_uris[session_id]

    def category_base(self, category: str) -> str:
        return self.category_bases[category or "other"]

    def room_base(self, wing: str, room: str) -> str:
        return self.room_bases[(wing, room)]

    def memory_anchor(self, memory_id: str) -> str:
        return self.memory_anchors[memory_id]

    def by_category(self) -> dict[str, list[Memory]]:
        groups: dict[str, list[Memory]] = {}
        for memory in self.memories:
            groups.setdefault(memory.category or "other", []).append(memory)
        return {k: _newest_first(v) for k, v in sorted(groups.items())}

    def by_room(self) -> dict[tuple[str, str], list[Memory]]:
        groups: dict[tuple[str, str], list[Memory]] = {}
        for memory in self.memories:
            if memory.wing or memory.room:
                groups.setdefault((memory.wing, memory.room), []).append(memory)
        return {k: _newest_first(v) for k, v in sorted(groups.items())}

    def layer_texts(self) -> Iterator[tuple[str, TextSource]]:
        """Every text of the layers (persona, hot, L2, L4) with the page and anchor it is shown at."""
        if self.persona and self.persona.text:
            yield "persona", TextSource(PERSONA, "soul", "SOUL.md", self.persona.text)
        for hot in self.hot:
            name = "MEMORY.md" if hot.target == "memory" else "USER.md"
            for n, entry in enumerate(hot.entries, 1):  # numbered as the persona page numbers them
                yield "hot", TextSource(PERSONA, hot_anchor(hot.target, entry.index), f"{name} · entry {n}", entry.text)
        for memory in self.memories:
            page, anchor = self.memory_home[memory.id]
            yield "L2", TextSource(page, anchor, f"L2 memory {memory.id}", memory.text)
        for session in self.sessions:
            for n, message in enumerate(self.messages.get(session.id, ()), 1):
                title = session.title or session.id
                yield "L4", TextSource(self.session_uri(session.id), message_anchor(n), title, message.content)

    def texts(self) -> Iterator[TextSource]:
        """Every memory text with the page and anchor it is shown at (for backlinks): the layers', the wiki's."""
        for _, source in self.layer_texts():
            yield source
        for concept in self.index.concepts:
            if concept.wiki is not None:
                yield TextSource(concept.src_uri, "", concept.title, concept.wiki.body)

    def mentions(self) -> MentionIndex:
        """Where each wiki page and entity is named in the layers' texts (made on first use, after the scan
        for links: see memwiki.site.mentions)."""
        if self._mentions is None:
            self._mentions = MentionIndex(self.index.concepts)
            self._mentions.scan(self.layer_texts())
        return self._mentions

    def orphans(self) -> list[Concept]:
        """Wiki pages and entities that nothing links to and no text of the layers names (graph edges aside)."""
        mentions = self.mentions()
        kinds = ("wiki", "entity")
        return [c for c in self.index.concepts if c.kind in kinds and not c.backlinks and not mentions.of(c)]


def _read(ctx: BuildContext) -> Site:
    """The layers, read in the order the store writes what joins them, so that a build while the agent writes
    sees no dangling reference: hot memory before L2 (a sink writes L2, then leaves the hot file), L2 before
    sessions (a memory's session is written first), facts before entities (a fact's entities are made first)."""
    source = ctx.source
    hot, sinks = list(source.hot_files()), list(source.sinks())
    memories = list(source.memories())
    triples = list(source.triples())
    entities = list(source.entities())
    sessions = sorted(source.sessions(), key=lambda s: (s.started, s.id), reverse=True)
    index = ConceptIndex(TextCache(cache_path(ctx, TEXT_CACHE)))
    directory_urls = bool(ctx.options.get("use_directory_urls", False))
    site = Site(
        info=source.info(),
        persona=source.persona(),
        hot=hot,
        sinks=sinks,
        memories=memories,
        entities=entities,
        triples=triples,
        sessions=sessions,
        messages={s.id: list(source.messages(s.id)) for s in sessions},
        wiki=sorted(source.wiki_pages(), key=lambda p: p.path),
        index=index,
        renderer=TextRenderer(index, directory_urls),
        directory_urls=directory_urls,
        today=ctx.options.get("today") or datetime.now(UTC).strftime("%Y-%m-%d"),
    )
    site.session_by_id = {x.id: x for x in sessions}
    _fill_index(ctx, site)
    site.entity_names = {e.id: e.name or e.id for e in site.entities}
    _paths(site)
    for category, memories in site.by_category().items():
        for i, memory in enumerate(memories):
            site.memory_home[memory.id] = (
                paged_uri(site.category_base(category), i // PER_PAGE + 1),
                site.memory_anchor(memory.id),
            )
    index.scan(site.texts())
    return site


def _paths(site: Site) -> None:
    """Claim the paths of session pages, category and wing / room listings and memory anchors: distinct for
    names that collide after slugging (`Foo Bar`, `foo-bar`, `café` in NFC and NFD), never a section's own
    index, and the same for the same store (names claim in `claim_order`)."""
    sessions = UniquePaths(SESSION_PAGES)
    site.session_uris = {
        sid: sessions.claim(sid, "sessions/", suffix=".md") + ".md"
        for sid in sorted(site.session_by_id, key=claim_order)
    }
    categories = UniquePaths()
    by_category = site.by_category()
    site.category_bases = {
        c: categories.claim(c, "memory/category/", suffix=".md", pages=_pages_of(len(by_category[c])))
        for c in sorted(by_category, key=claim_order)
    }
    by_room = site.by_room()
    wings, rooms = UniquePaths(), {}
    folders = {w: wings.claim(w or "no-wing", "memory/wing/") for w in sorted({w for w, _ in by_room}, key=claim_order)}
    for wing, room in sorted(by_room, key=lambda pair: (claim_order(pair[0]), claim_order(pair[1]))):
        paths = rooms.setdefault(wing, UniquePaths())
        pages = _pages_of(len(by_room[(wing, room)]))
        site.room_bases[(wing, room)] = paths.claim(room or "no-room", folders[wing] + "/", suffix=".md", pages=pages)
    anchors = UniquePaths()
    site.memory_anchors = {m: anchors.claim(m, "mem-") for m in sorted((m.id for m in site.memories), key=claim_order)}


def _fill_index(ctx: BuildContext, site: Site) -> None:
    """The concept index's pages, wiki pages and entities (before the scan for links): kept across builds by
    the wiki and graph layers' fingerprints (making it was a tenth of a 10k-page rebuild)."""
    fingerprints = getattr(ctx.source, "fingerprints", None)
    path = cache_path(ctx, INDEX_CACHE)
    if not (isinstance(fingerprints, dict) and {"wiki", "graph"} <= fingerprints.keys()):
        path = None  # the index is kept only by the layers' fingerprints
    key = cache_file.version("concept-index", names_version(ctx, site)) if path is not None else ""
    saved = cache_file.load(path, key) if path is not None else None
    index = site.index
    if saved is not None:
        try:
            index.restore(saved, site.wiki, site.entities)
            return
        except (ValueError, TypeError, IndexError, KeyError):
            pass  # not what this code saves: made again
    index.add_page("Audit", AUDIT, ["审计", "audit page"])
    index.add_page("Persona and hot memory", PERSONA, ["persona", "hot memory", "热记忆", "人格"])
    for page in site.wiki:
        index.add_wiki(page)
    for entity in site.entities:
        index.add_entity(entity)
    if path is not None:
        cache_file.dump(path, key, index.export(site.wiki, site.entities))


def layer_version(ctx: BuildContext, layer: str, records: object) -> str:
    """The state of one layer: the source's fingerprint of it when it has one (see memwiki.site.speed.layer_cache), else a
    digest of its records."""
    fingerprints = getattr(ctx.source, "fingerprints", None)
    if isinstance(fingerprints, dict) and layer in fingerprints:
        return f"fp:{fingerprints[layer]}"
    return key_of(records)


def names_version(ctx: BuildContext, s: Site) -> str:
    """How every name resolves in this build (see ConceptIndex.digest): what each page's links depend on
    besides the page's own text."""
    cached = ctx.__dict__.get("_memwiki_names")
    if cached is None:
        built_from = key_of(layer_version(ctx, "wiki", s.wiki), layer_version(ctx, "graph", s.entities))
        cached = ctx.__dict__["_memwiki_names"] = s.index.digest(built_from)
    return cached


def cache_path(ctx: BuildContext, name: str) -> Path | None:
    """A file in the plugin's cache folder; None when caches are off (no cache_dir, or page_cache: false)."""
    cache_dir = ctx.options.get("cache_dir")
    keep = bool(cache_dir) and ctx.options.get("page_cache", True)
    return Path(cache_dir) / name if keep else None


def page_memo(ctx: BuildContext, name: str) -> PageMemo:
    """A builder's memo of its pages across builds (see memwiki.site.speed.memo); the plugin gives the page cache's
    `reusable_page`."""
    return PageMemo(cache_path(ctx, f"memo/{name}.marshal"), ctx.options.get("reusable_page"))


def site(ctx: BuildContext) -> Site:
    """The shared state of this build (read on first use, then kept on the context)."""
    cached = ctx.__dict__.get("_memwiki_site")
    if cached is None:
        cached = ctx.__dict__["_memwiki_site"] = _read(ctx)
    return cached


def _optional(module: str) -> Callable[[BuildContext], BuildResult] | None:
    """The `build` of an optional builder module, or None while it does not exist yet."""
    try:
        return importlib.import_module(module).build
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        return None


def build_all(ctx: BuildContext) -> BuildResult:
    """Run every builder; the concept builder goes after the others so it sees every backlink."""
    from memwiki.site.builders import audit, concepts, home, persona, privacy, semantic, sessions

    site(ctx)
    with contextlib.suppress(ModuleNotFoundError):  # the graph files may be drawn in a forked process meanwhile
        importlib.import_module("memwiki.site.builders.graph").prepare(ctx)
    # then (no thread may run while the build forks) session digests embed in a thread while the others build
    s = site(ctx)
    sessions.digester_of(ctx, s).prefetch([s.messages.get(x.id, []) for x in s.sessions])
    builders: list[Callable[[BuildContext], BuildResult]] = [home.build, persona.build, semantic.build, sessions.build]
    for name in ("memwiki.site.builders.graph", "memwiki.site.builders.search"):
        build = _optional(name)
        if build is not None:
            builders.append(build)
        else:
            ctx.notes.append(f"{name} is not available: its pages were not built")
    builders += [concepts.build, audit.build, privacy.build]
    pages: list[GeneratedPage] = []
    assets: list[GeneratedAsset] = []
    for build in builders:
        p, a = build(ctx)
        pages += p
        assets += a
    # a build that kept pages without making them did not see every text: it must not drop the unseen ones
    site(ctx).index.texts.save(prune=not any(p.hollow for p in pages))
    return pages, assets


def pager(base: str, page: int, pages: int, here: str, du: bool) -> str:
    """Links to the pages of a paged listing (`paged_uri(base, n)`), the current one in bold."""
    if pages <= 1:
        return ""
    links = []
    for n in range(1, pages + 1):
        uri = paged_uri(base, n)
        links.append(
            f"<strong>{n}</strong>" if n == page else f'<a href="{esc(href(here, uri, directory_urls=du))}">{n}</a>'
        )
    return block(" ".join(links), cls="mw-pager", tag="nav")


def frontmatter(title: str, **meta: Any) -> str:
    """YAML frontmatter with a safe title (JSON strings are valid YAML) and extra keys."""
    import json

    lines = [f"title: {json.dumps(safe_title(title), ensure_ascii=False)}"]
    lines += [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in meta.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n"


def safe_title(title: str) -> str:
    """A page title that stays plain text even where a theme prints it unescaped."""
    flat = " ".join(str(title).split())
    return flat.replace("<", "‹").replace(">", "›").replace("&", "＆")[:120] or "untitled"
