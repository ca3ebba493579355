"""The concept index: every page a `[[wikilink]]` can name, how names resolve, and who links where.

Concepts come from the store's wiki pages (title, aliases, file name), from knowledge-graph entities
(name, id) and from a few built-in pages (e.g. the audit page). A wiki page and an entity with the same
name are one concept. A name that resolves to nothing becomes a *wanted* concept with a stub page.
Resolution is by title, alias or slug, case-insensitive (NFKC + casefold), Chinese included.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath
from typing import NamedTuple

from markdown_it.token import Token

from memwiki.site.model.wikilinks import WikiLink, link_rows_each, scanner
from memwiki.site.speed.text_cache import TextCache
from memwiki.source import Entity, WikiPage

CONCEPTS_DIR = "concepts"
WANTED_DIR = "concepts/wanted"
_RESERVED = re.compile(r"concepts/(index|list-\d+)\.md")  # the concept list pages (memwiki.site.builders.concepts)
_SLUG_DROP = re.compile(r"[^\w\s-]", re.UNICODE)
_SLUG_SEP = re.compile(r"[./:\\]+")
_SLUG_DASH = re.compile(r"[\s_-]+", re.UNICODE)
_SPACE = re.compile(r"\s+")
SLUG_CHARS = 80
SLUG_BYTES = 200  # UTF-8: with `-NN` and `.html` a slug stays a valid file name


@lru_cache(maxsize=1 << 16)  # a build asks for the same names many times (every link, every page title)
def norm(name: str) -> str:
    """The comparison key of a name: NFKC, case-folded, spaces collapsed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", name).casefold()).strip()


@lru_cache(maxsize=1 << 18)  # (a 100k store's memory anchors: each id slugged twice, to sort and to claim)
def slugify(text: str, fallback: str = "") -> str:
    """A URL- and anchor-safe slug that keeps CJK and other letters: `长期记忆库`, `embed-01`.

    Only word characters and dashes survive, so no slug can hold `/`, `..` or a scheme.
    """
    slug = _SLUG_DASH.sub("-", _SLUG_DROP.sub("", _SLUG_SEP.sub(" ", norm(text)))).strip("-")
    slug = slug[:SLUG_CHARS]
    while len(slug.encode()) > SLUG_BYTES:  # 4-byte letters: a file name has at most 255 bytes
        slug = slug[:-1]
    slug = slug.strip("-")
    if slug:
        return slug
    seed = fallback or text
    return "c-" + hashlib.sha1(seed.encode()).hexdigest()[:10]


def paged_uri(base: str, page: int, suffix: str = ".md") -> str:
    """`memory/category/pitfall.md`, then `memory/category/pitfall-2.md`, ..."""
    return f"{base}{suffix}" if page == 1 else f"{base}-{page}{suffix}"


def claim_order(name: str) -> tuple[bool, str]:
    """The order in which names claim their slugs: a name that is its own slug first (it keeps it whatever
    else collides with it), then by the name itself, so the same names always get the same paths."""
    return slugify(name) != name, name


class UniquePaths:
    """Paths made from names by their slug, each given out once: a name whose path is taken, or matches
    `reserved` (a section's own pages), gets `-2`, `-3`, ... Deterministic for a given order of claims
    (see `claim_order`)."""

    def __init__(self, reserved: re.Pattern[str] | None = None) -> None:
        self.taken: set[str] = set()
        self.reserved = reserved

    def _free(self, path: str) -> bool:
        return path not in self.taken and not (self.reserved and self.reserved.fullmatch(path))

    def claim(self, name: str, prefix: str = "", *, fallback: str = "", suffix: str = "", pages: int = 1) -> str:
        """The first free `prefix + slug(name)` (then with `-2`, `-3`, ...) whose `pages` paged paths
        (`paged_uri(base, n, suffix)`) are all free; they are taken and the base is returned."""
        slug = slugify(name, fallback)
        base, n = prefix + slug, 2
        while not all(self._free(paged_uri(base, p, suffix)) for p in range(1, pages + 1)):
            base, n = f"{prefix}{slug}-{n}", n + 1
        self.taken.update(paged_uri(base, p, suffix) for p in range(1, pages + 1))
        return base


def heading_anchors(markdown: str, texts: TextCache | None = None) -> dict[str, str]:
    """norm(heading text) -> anchor id for each heading of a Markdown body, deduplicated as rendered."""
    if texts is not None:
        return texts.derived(markdown, "anchors", lambda: _anchors(texts.parse(markdown)))
    return _anchors(scanner().parse(markdown))


def _anchors(tokens: list[Token]) -> dict[str, str]:
    anchors: dict[str, str] = {}
    used: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        text = tokens[i + 1].content
        anchor = slugify(text)
        if anchor in used:
            used[anchor] += 1
            anchor = f"{anchor}_{used[anchor]}"
        else:
            used[anchor] = 0
        anchors.setdefault(norm(text), anchor)
    return anchors


class Backlink(NamedTuple):
    """Where a concept is linked from: the page (and anchor), its title and the linking sentence. (A tuple: made
    for every link of every text in each build.)"""

    src_uri: str
    anchor: str
    title: str
    sentence: str  # raw (untrusted) Markdown of the sentence that holds the link


@dataclass
class Concept:
    """A page that wikilinks can reach."""

    title: str
    src_uri: str
    kind: str  # "wiki" | "entity" | "page" (built-in) | "wanted"
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    wiki: WikiPage | None = None
    entity: Entity | None = None
    backlinks: list[Backlink] = field(default_factory=list)
    anchors: dict[str, str] = field(default_factory=dict)  # norm(heading) -> anchor id, filled by builders

    @property
    def wanted(self) -> bool:
        return self.kind == "wanted"

    @property
    def slug(self) -> str:
        return PurePosixPath(self.src_uri).stem


@dataclass(frozen=True)
class TextSource:
    """A piece of memory text as it will appear on the site: on which page, at which anchor."""

    src_uri: str
    anchor: str
    title: str
    text: str


FoundLinks = Iterable[tuple[str, str, str, list[list[str]]]]  # see ConceptIndex.links_in_places


class ConceptIndex:
    """Resolves wikilink targets to concepts and collects backlinks."""

    def __init__(self, texts: TextCache | None = None) -> None:
        self.concepts: list[Concept] = []
        self._by_key: dict[str, Concept] = {}
        self._by_entity: dict[str, Concept] = {}
        self._paths = UniquePaths(_RESERVED)
        self.texts = texts or TextCache()  # what is derived from memory texts, shared with the renderer

    # -- building ---------------------------------------------------------------------------------
    def _uri(self, folder: str, name: str, fallback: str) -> str:
        return self._paths.claim(name, f"{folder}/", fallback=fallback, suffix=".md") + ".md"

    def _claim(self, concept: Concept, names: Iterable[str]) -> None:
        for name in names:
            key = norm(name)
            if key and key not in self._by_key:
                self._by_key[key] = concept

    def add_page(self, title: str, src_uri: str, aliases: Sequence[str] = ()) -> Concept:
        """A built-in page (e.g. the audit page) that wikilinks may name."""
        concept = Concept(title=title, src_uri=src_uri, kind="page", aliases=tuple(aliases))
        self._paths.taken.add(src_uri)
        self.concepts.append(concept)
        self._claim(concept, [title, *aliases])
        return concept

    def add_wiki(self, page: WikiPage) -> Concept:
        stem = PurePosixPath(page.path).stem
        concept = Concept(
            title=page.title,
            src_uri=self._uri(CONCEPTS_DIR, stem or page.title, page.path),
            kind="wiki",
            aliases=page.aliases,
            tags=page.tags,
            wiki=page,
        )
        concept.anchors = heading_anchors(page.body, self.texts)
        self.concepts.append(concept)
        self._claim(concept, [page.title, *page.aliases, stem, concept.slug, slugify(page.title)])
        return concept

    def add_entity(self, entity: Entity) -> Concept:
        """Attach an entity to the concept of the same name, or give it its own page."""
        concept = self._by_key.get(norm(entity.name)) or self._by_key.get(norm(entity.id))
        if concept is not None and concept.entity is None and concept.kind in ("wiki", "entity"):
            concept.entity = entity
        else:
            concept = Concept(
                title=entity.name or entity.id,
                src_uri=self._uri(CONCEPTS_DIR, entity.name or entity.id, entity.id),
                kind="entity",
                entity=entity,
            )
            self.concepts.append(concept)
        self._by_entity[entity.id] = concept
        self._claim(concept, [entity.name, entity.id, slugify(entity.name or entity.id)])
        return concept

    # -- kept across builds -------------------------------------------------------------------------
    def export(self, wiki: Sequence[WikiPage], entities: Sequence[Entity]) -> tuple:
        """The index as plain data (for speed.cache_file), before any scan: wiki pages and entities by their
        position in `wiki` and `entities`, the lists it was built from."""
        assert not any(c.backlinks or c.wanted for c in self.concepts), "export the index before scanning"
        wiki_at = {id(page): i for i, page in enumerate(wiki)}
        entity_at = {id(entity): i for i, entity in enumerate(entities)}
        position = {id(c): i for i, c in enumerate(self.concepts)}
        concepts = [
            (
                c.title,
                c.src_uri,
                c.kind,
                c.aliases,
                c.tags,
                c.anchors,
                wiki_at[id(c.wiki)] if c.wiki is not None else -1,
                entity_at[id(c.entity)] if c.entity is not None else -1,
            )
            for c in self.concepts
        ]
        by_key = {key: position[id(c)] for key, c in self._by_key.items()}
        by_entity = {eid: position[id(c)] for eid, c in self._by_entity.items()}
        return concepts, by_key, by_entity, sorted(self._paths.taken)

    def restore(self, saved: tuple, wiki: Sequence[WikiPage], entities: Sequence[Entity]) -> None:
        """Take back what `export` gave for the same `wiki` and `entities` (an empty index only).
        Raises ValueError, TypeError, IndexError or KeyError on data of another shape, leaving the index as it
        was."""
        assert not self.concepts, "restore into an empty index"
        saved_concepts, by_key, by_entity, uris = saved
        concepts = [
            Concept(
                title,
                src_uri,
                kind,
                tuple(aliases),
                tuple(tags),
                wiki[w] if w >= 0 else None,
                entities[e] if e >= 0 else None,
                anchors=dict(anchors),
            )
            for title, src_uri, kind, aliases, tags, anchors, w, e in saved_concepts
        ]
        keys = {key: concepts[i] for key, i in by_key.items()}
        by_entity_id = {eid: concepts[i] for eid, i in by_entity.items()}
        self.concepts, self._by_key, self._by_entity = concepts, keys, by_entity_id
        self._paths.taken = set(uris)

    # -- lookups ----------------------------------------------------------------------------------
    def resolve(self, target: str) -> Concept | None:
        """The concept a target names (title, alias or slug, case-insensitive), or None."""
        key = norm(target)
        return self._by_key.get(key) or self._by_key.get(slugify(target)) if key else None

    def for_entity(self, entity_id: str) -> Concept | None:
        return self._by_entity.get(entity_id)

    def link_target(self, link: WikiLink) -> Concept | None:
        """Resolve a link, creating the wanted concept when nothing matches (never None for a target)."""
        if not link.target:
            return None
        concept = self.resolve(link.target)
        if concept is None:
            concept = Concept(title=link.target, src_uri=self._uri(WANTED_DIR, link.target, link.target), kind="wanted")
            self.concepts.append(concept)
            self._claim(concept, [link.target, slugify(link.target)])
        return concept

    def scan(self, sources: Iterable[TextSource]) -> None:
        """Find every wikilink in these texts; record a backlink on each concept they reach (once per place)."""
        self.link(self.links_in_places(list(sources)))

    def link(self, found: FoundLinks) -> None:
        """Record a backlink on each concept the links `links_in_places` found reach (once per place), in order."""
        targets: dict[str, Concept | None] = {}  # a name resolves the same way all through the scan
        seen = {(id(c), b.src_uri, b.anchor) for c in self.concepts for b in c.backlinks}
        for src_uri, anchor, title, rows in found:
            for target, heading, label, sentence in rows:
                if target in targets:
                    concept = targets[target]
                else:
                    concept = targets[target] = self.link_target(WikiLink(target, heading, label))
                if concept is None or concept.src_uri == src_uri:
                    continue
                place = (id(concept), src_uri, anchor)
                if place not in seen:
                    seen.add(place)
                    concept.backlinks.append(Backlink(src_uri, anchor, title, sentence))

    def links_in_places(self, sources: list[TextSource]) -> list[tuple[str, str, str, list[list[str]]]]:
        """The wikilinks of these texts as plain data: (src_uri, anchor, title, link rows) for each text that has
        any (`link_rows`: [target, heading, label, sentence])."""
        rows_each = link_rows_each([s.text for s in sources], self.texts)
        return [(s.src_uri, s.anchor, s.title, rows) for s, rows in zip(sources, rows_each, strict=True) if rows]

    def digest(self, built_from: str | None = None) -> str:
        """A hash of how names resolve: every name and entity to its page, and each page's heading anchors
        (what a rendered link depends on besides its own text).

        `built_from`: a key of the wiki pages and entities this index was built from (their layers'
        fingerprints). Every name that resolves to a wiki, entity or built-in page follows from them; any
        other name resolves to the wanted concept of its own slug (`wanted/<slug>.md`: a name with the slug of
        an earlier one resolves to that one by the slug), so a link to it reads the same whatever else is
        wanted. The hash is then that key alone, and stays put when a memory links to a new wanted name."""
        if built_from is not None:
            return hashlib.sha1(f"names:{built_from}".encode()).hexdigest()
        digest = hashlib.sha1()
        for key, c in sorted(self._by_key.items()):
            digest.update(f"{key}\0{c.src_uri}\0{c.kind}\0{sorted(c.anchors.items())}\n".encode())
        for entity_id, c in sorted(self._by_entity.items()):
            digest.update(f"{entity_id}\0{c.src_uri}\n".encode())
        return digest.hexdigest()

    @property
    def wanted(self) -> list[Concept]:
        return [c for c in self.concepts if c.wanted]
