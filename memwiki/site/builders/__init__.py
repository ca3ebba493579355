"""Page builders: one module per kind of page, each `build(ctx) -> (pages, assets)`.

`site(ctx)` reads the (privacy-filtered) source once per build and holds what several builders share:
the records, the concept index with its backlinks, the text renderer, where each memory and entity is shown
and where each concept is named (`mentions`). `provenance` resolves a fact's source to the place that shows it.
memwiki.site.pipeline runs them.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
import operator
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from memwiki.layers.graph_types import literal_ids, with_types
from memwiki.readers.vector_cache import memory_digest
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.concept_index import Concept, ConceptIndex, TextSource, UniquePaths, claim_order, paged_uri
from memwiki.site.model.generated import GeneratedAsset, GeneratedPage
from memwiki.site.model.mentions import MentionIndex
from memwiki.site.model.render import TextRenderer, block, esc, href, page_url
from memwiki.site.speed import cache_file
from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.site.speed.memo import key_of, memory_token, values_of
from memwiki.site.speed.scan_memo import BlockMemo, TextBlock
from memwiki.site.speed.text_cache import TextCache
from memwiki.source import (
    Entity,
    HotFile,
    Memory,
    MemorySource,
    Message,
    Persona,
    Session,
    SinkRecord,
    SourceInfo,
    Triple,
    WikiPage,
)
from memwiki.store.layout import HOT_FILES, PERSONA_FILE

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
TEXT_CACHE = "texts.sqlite3"  # in cache_dir: what was derived from each memory text (see speed.text_cache)
ANCHORS_CACHE = "memory-anchors.marshal"  # in cache_dir: each memory's card anchor, by the ids (_memory_anchors)
SCAN_CACHE = "scan-blocks.marshal"  # in cache_dir: what the scans found in each block of texts (speed.scan_memo)
TEXT_BLOCK = 50  # memories a block of texts (a changed memory scans its block again)

BuildResult = tuple[list[GeneratedPage], list[GeneratedAsset]]


def hot_anchor(target: str, index: int) -> str:
    return f"{target}-{index}"


def message_anchor(n: int) -> str:
    return f"msg-{n}"


def _pages_of(count: int) -> int:
    return max(1, -(-count // PER_PAGE))


def _dated(memory: Memory) -> tuple[str, str]:
    return memory.created or memory.sunk_at, memory.id


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
    fingerprints: dict[str, str]  # the source's fingerprint of each layer it can tell (MemorySource.layer_fingerprints)
    scans: BlockMemo  # what the scans for links and names found, by block of texts (see text_blocks)
    memory_home: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (page, anchor) of its card
    literals: frozenset[str] = frozenset()  # entities that are values (`1.3`): no page, no node (graph_types)
    entity_names: dict[str, str] = field(default_factory=dict)
    session_by_id: dict[str, Session] = field(default_factory=dict)
    # where things are shown, claimed once per build so that names colliding after slugging get -2, -3 (see _paths)
    session_uris: dict[str, str] = field(default_factory=dict)  # session id -> its digest page
    category_bases: dict[str, str] = field(default_factory=dict)  # category -> base of its pages (paged_uri)
    room_bases: dict[tuple[str, str], str] = field(default_factory=dict)  # (wing, room) -> base of its pages
    memory_anchors: dict[str, str] = field(default_factory=dict)  # memory id -> anchor of its card
    _memory_ids: dict[str, Memory] = field(default_factory=dict)
    _groups: dict[str, dict] = field(default_factory=dict)  # by_category and by_room, made once (the records stay)
    _mentions: MentionIndex | None = None
    _block_keys: list[str] | None = None
    _blocks: list[TextBlock] | None = None
    _urls: dict[str, str] = field(default_factory=dict)  # src_uri -> its URL (see url)
    _oldest_first: list[Memory] | None = None  # (made once: the records stay)
    _embedded_from: dict[str, str] | None = None
    _tokens: dict[str, str] | None = None

    def layer_version(self, layer: str, records: object) -> str:
        """The state of one layer: the source's fingerprint of it when it has one, else a digest of its records."""
        if layer in self.fingerprints:
            return f"fp:{self.fingerprints[layer]}"
        return key_of(records)

    @cached_property
    def sessions_version(self) -> str:
        """The sessions layer's state (`layer_version`), made once: six parts of a build are kept by it."""
        return self.layer_version("sessions", (self.sessions, self.messages))

    @cached_property
    def names_version(self) -> str:
        """How every name resolves in this build (see ConceptIndex.digest), and so where every entity and memory
        link points: what each page's links depend on besides the page's own text."""
        built_from = key_of(self.layer_version("wiki", self.wiki), self.layer_version("graph", self.entities))
        return key_of(self.index.digest(built_from), self.directory_urls)

    def url(self, src_uri: str) -> str:
        """The URL (from the site root) of the page made from `src_uri`, as this build's settings write URLs (made
        once a page: a 100k store's cards are on a few thousand pages)."""
        found = self._urls.get(src_uri)
        if found is None:
            found = self._urls[src_uri] = page_url(src_uri, self.directory_urls)
        return found

    def href(self, from_src: str, to_src: str, anchor: str = "") -> str:
        """A link from the page `from_src` to `to_src` (a page or a file), relative, as this build writes URLs."""
        return href(from_src, to_src, anchor, self.directory_urls)

    def entity_url(self, entity_id: str) -> str:
        """The URL (from the site root) of the page that shows an entity; "" when none does."""
        concept = self.index.for_entity(entity_id)
        return self.url(concept.src_uri) if concept else ""

    def memory_url(self, memory: Memory) -> str:
        """The URL (from the site root) of a memory's card."""
        page, anchor = self.memory_home.get(memory.id, ("", ""))
        return f"{self.url(page)}#{anchor}" if page else ""

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

    def oldest_first(self) -> list[Memory]:
        """The memories by date, then id, oldest first (sorted once: the listings read them newest first, the
        search oldest first)."""
        if self._oldest_first is None:
            self._oldest_first = sorted(self.memories, key=_dated)
        return self._oldest_first

    def embedded_from(self) -> dict[str, str]:
        """Memory id -> `memory_digest` (what its vector is made from): the audit's kept clusters and the search's
        kept rows are keyed by it. As the source kept them, else made once."""
        if self._embedded_from is None:
            self._embedded_from = {m.id: memory_digest(m) for m in self.memories}
        return self._embedded_from

    def memory_tokens(self) -> dict[str, str]:
        """Memory id -> `memory_token` (a digest of all its fields): the listings' page memos are keyed by it. As
        the source kept them, else made once."""
        if self._tokens is None:
            self._tokens = {m.id: memory_token(values_of(m)) for m in self.memories}
        return self._tokens

    def by_category(self) -> dict[str, list[Memory]]:
        """The memories by category, newest first (made once: the paths, the cards' homes and the listings ask)."""
        if "category" not in self._groups:
            groups: dict[str, list[Memory]] = {}
            for memory in reversed(self.oldest_first()):
                groups.setdefault(memory.category or "other", []).append(memory)
            self._groups["category"] = dict(sorted(groups.items()))
        return self._groups["category"]

    def by_room(self) -> dict[tuple[str, str], list[Memory]]:
        """The memories with a wing or room by (wing, room), newest first (made once)."""
        if "room" not in self._groups:
            groups: dict[tuple[str, str], list[Memory]] = {}
            for memory in reversed(self.oldest_first()):
                if memory.wing or memory.room:
                    groups.setdefault((memory.wing, memory.room), []).append(memory)
            self._groups["room"] = dict(sorted(groups.items()))
        return self._groups["room"]

    def text_blocks(self) -> list[TextBlock]:
        """Every text of the layers (persona, hot, L2, L4) with the page and anchor it is shown at, in blocks (made
        once: the scans for links and for names both read them, and keep what they found by block, see
        speed.scan_memo): the persona and hot memory, then the memories TEXT_BLOCK at a time oldest first, then
        every session turn."""
        if self._blocks is None:
            self._blocks = [self._hot_block(), *self._memory_blocks(), self._turns_block()]
        return self._blocks

    def _hot_block(self) -> TextBlock:
        places: list[tuple[str, TextSource]] = []
        if self.persona and self.persona.text:
            places.append(("persona", TextSource(PERSONA, "soul", PERSONA_FILE, self.persona.text)))
        for hot in self.hot:
            name = HOT_FILES.get(hot.target, hot.target)
            for n, entry in enumerate(hot.entries, 1):  # numbered as the persona page numbers them
                where = TextSource(PERSONA, hot_anchor(hot.target, entry.index), f"{name} · entry {n}", entry.text)
                places.append(("hot", where))
        return TextBlock("", lambda: places, lambda n: places[n][1].text)  # (a few texts: always scanned)

    def _memory_blocks(self) -> Iterator[TextBlock]:
        """The memories TEXT_BLOCK at a time, oldest first (not in the source's order, which an edit may change:
        every block after it would be scanned again)."""
        memories = self.oldest_first()
        for key, start in zip(self.memory_block_keys(), range(0, len(memories), TEXT_BLOCK), strict=True):
            chunk = memories[start : start + TEXT_BLOCK]
            yield TextBlock(key, functools.partial(self._memory_places, chunk), lambda n, c=chunk: c[n].text)

    def memory_block_keys(self) -> list[str]:
        """A key of each block of TEXT_BLOCK memories oldest first: their tokens (each card's text and fields) and
        homes (where the card is). The scans and the search keep what they make of a block by it (made once)."""
        if self._block_keys is None:
            token, home, memories = self.memory_tokens().__getitem__, self.memory_home.__getitem__, self.oldest_first()
            self._block_keys = []
            for start in range(0, len(memories), TEXT_BLOCK):
                ids = ids_of(memories[start : start + TEXT_BLOCK])
                self._block_keys.append(key_of("L2", list(map(token, ids)), list(map(home, ids))))
        return self._block_keys

    def _memory_places(self, memories: list[Memory]) -> list[tuple[str, TextSource]]:
        return [("L2", TextSource(*self.memory_home[m.id], f"L2 memory {m.id}", m.text)) for m in memories]

    def _turns_block(self) -> TextBlock:
        turns = [m for x in self.sessions for m in self.messages.get(x.id, ())]
        key = key_of("L4", self.sessions_version)  # (pages: by the ids)
        return TextBlock(key, self._turn_places, lambda n: turns[n].content)

    def _turn_places(self) -> list[tuple[str, TextSource]]:
        places = []
        for session in self.sessions:
            uri, title = self.session_uri(session.id), session.title or session.id
            for n, message in enumerate(self.messages.get(session.id, ()), 1):
                places.append(("L4", TextSource(uri, message_anchor(n), title, message.content)))
        return places

    def link_blocks(self) -> list[TextBlock]:
        """The texts the scan for links reads: the layers' (`text_blocks`), then the wiki's pages (what they are,
        and where each is shown, follow from how names resolve)."""
        wiki = [("wiki", TextSource(c.src_uri, "", c.title, c.wiki.body)) for c in self.index.concepts if c.wiki]
        return [
            *self.text_blocks(),
            TextBlock(key_of("wiki", self.names_version), lambda: wiki, lambda n: wiki[n][1].text),
        ]

    def scan_links(self) -> None:
        """The scan for links over every text (see ConceptIndex.link), kept block by block."""

        def links(block: TextBlock) -> list:
            return self.index.links_in_places([source for _, source in block.places()])

        blocks = self.link_blocks()
        self.index.link(row for b in blocks for row in self.scans.found(b.key, "links", functools.partial(links, b)))

    def mentions(self) -> MentionIndex:
        """Where each wiki page and entity is named in the layers' texts (made on first use, after the scan
        for links: see memwiki.site.model.mentions), kept block by block."""
        if self._mentions is None:
            mentions = self._mentions = MentionIndex(self.index.concepts)
            blocks, names = self.text_blocks(), mentions.names_digest
            found = [self.scans.kept(block.key, "names", names) for block in blocks]
            todo = [n for n, value in enumerate(found) if value is None]
            # the blocks not kept, in one search: RE2's pattern of every name over many texts at once, one text at
            # a time over a few (see MentionIndex)
            for n, value in zip(
                todo, mentions.names_in_blocks([blocks[n] for n in todo], self.index.texts), strict=True
            ):
                self.scans.put(blocks[n].key, "names", value, names)
                found[n] = value
            for block, value in zip(blocks, found, strict=True):
                mentions.add(value, block.text)
            self._blocks = None  # (both scans are done: what they found is kept, and let go)
            self.scans.save()
        return self._mentions

    def orphans(self) -> list[Concept]:
        """Wiki pages and entities that nothing links to and no text of the layers names (graph edges aside)."""
        mentions = self.mentions()
        kinds = ("wiki", "entity")
        return [c for c in self.index.concepts if c.kind in kinds and not c.backlinks and not mentions.named(c)]


def _read(ctx: BuildContext) -> Site:
    """The layers, read in the order the store writes what joins them, so that a build while the agent writes
    sees no dangling reference: hot memory before L2 (a sink writes L2, then leaves the hot file), L2 before
    sessions (a memory's session is written first), facts before entities (a fact's entities are made first)."""
    source = ctx.source
    hot, sinks = list(source.hot_files()), list(source.sinks())
    memories = list(source.memories())
    triples = list(source.triples())
    recorded = list(source.entities())
    entities = with_types(recorded, triples)  # (a palace records no types: its facts say them)
    sessions = sorted(source.sessions(), key=lambda s: (s.started, s.id), reverse=True)
    index = ConceptIndex(TextCache(ctx.speed.cache_path(TEXT_CACHE)))
    directory_urls = ctx.settings.directory_urls
    site = Site(
        info=source.info(),
        persona=source.persona(),
        hot=hot,
        sinks=sinks,
        memories=memories,
        entities=entities,
        literals=literal_ids(recorded, triples),
        triples=triples,
        sessions=sessions,
        messages={s.id: list(source.messages(s.id)) for s in sessions},
        wiki=sorted(source.wiki_pages(), key=lambda p: p.path),
        index=index,
        renderer=TextRenderer(index, directory_urls),
        directory_urls=directory_urls,
        today=ctx.settings.day(),
        fingerprints=dict(source.layer_fingerprints()),
        scans=BlockMemo(ctx.speed.cache_path(SCAN_CACHE), cache_file.version("scan-blocks"), ctx.speed.check_memos),
        _embedded_from=_kept(source, "memory_digests"),
        _tokens=_kept(source, "memory_tokens"),
    )
    site.session_by_id = {x.id: x for x in sessions}
    _fill_index(ctx.speed, site)
    site.entity_names = {e.id: e.name or e.id for e in site.entities}
    _paths(site)
    site.memory_anchors = _memory_anchors(ctx.speed, ids_of(site.memories))
    anchor = site.memory_anchors.__getitem__
    for category, memories in site.by_category().items():
        for start in range(0, len(memories), PER_PAGE):
            page = paged_uri(site.category_base(category), start // PER_PAGE + 1)
            ids = ids_of(memories[start : start + PER_PAGE])
            homes = zip(itertools.repeat(page, len(ids)), map(anchor, ids), strict=True)
            site.memory_home.update(zip(ids, homes, strict=True))
    site.scan_links()
    return site


def ids_of(memories: Sequence[Memory]) -> list[str]:
    """The memories' ids (in a map: the scans and the listings ask for each of a 100k store's memories)."""
    return list(map(_ID, memories))


_ID = operator.attrgetter("id")


def _kept(source: MemorySource, name: str) -> dict[str, str] | None:
    """A digest of each memory as the source kept it (speed.layer_cache `memory_digests`, `memory_tokens`: made
    when each memory was written), or None (the source keeps none: `Site` makes them)."""
    kept = getattr(source, name, None)
    return kept() if kept is not None else None


def _paths(site: Site) -> None:
    """Claim the paths of session pages and of category and wing / room listings: distinct for
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


def _memory_anchors(speed: BuildSpeed, ids: list[str]) -> dict[str, str]:
    """Each memory's card anchor (`mem-<slug>`; `-2`, `-3` for slugs that collide), claimed in `claim_order`;
    kept across builds for the same ids (claiming a hundred thousand anew was a thirtieth of a rebuild)."""
    key = hashlib.blake2b("\0".join(ids).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    kept = speed.load(ANCHORS_CACHE, key)
    if isinstance(kept, dict) and len(kept) == len(ids):
        return kept
    anchors = UniquePaths()
    made = {m: anchors.claim(m, "mem-") for m in sorted(ids, key=claim_order)}
    speed.keep(ANCHORS_CACHE, key, made)
    return made


def _fill_index(speed: BuildSpeed, site: Site) -> None:
    """The concept index's pages, wiki pages and entities (before the scan for links): kept across builds by
    the wiki and graph layers' fingerprints (making it was a tenth of a 10k-page rebuild)."""
    kept = {"wiki", "graph"} <= site.fingerprints.keys()  # the index is kept only by the layers' fingerprints
    key = key_of(site.fingerprints["wiki"], site.fingerprints["graph"]) if kept else ""
    saved = speed.load(INDEX_CACHE, key) if kept else None
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
        if entity.id not in site.literals:  # a value is shown in its subject's facts, not as a concept
            index.add_entity(entity)
    if kept:
        speed.keep(INDEX_CACHE, key, index.export(site.wiki, site.entities))


def site(ctx: BuildContext) -> Site:
    """The shared state of this build (read on first use)."""
    return ctx.part(Site, _read)


def pager(s: Site, base: str, page: int, pages: int, here: str) -> str:
    """Links to the pages of a paged listing (`paged_uri(base, n)`), the current one in bold."""
    if pages <= 1:
        return ""
    links = []
    for n in range(1, pages + 1):
        uri = paged_uri(base, n)
        links.append(f"<strong>{n}</strong>" if n == page else f'<a href="{esc(s.href(here, uri))}">{n}</a>')
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
