"""What recall reads of the knowledge graph (L3): one page per entity, its facts written out as sentences.

An entity's page is a `WikiPage` of the files layer (path `entity:<id>`), so "who is 周明" or "where does
embed-01 run" finds the graph's facts the way it finds a hand-written page; the site links it to the entity's page.
An entity that a wiki page names (its title or an alias, as `memwiki.layers.graph.entity_id` spells names) is that page:
its facts are added to the page's text, so one thing is one page, as on the site.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from memwiki.layers.graph import entity_id
from memwiki.source import Entity, MemorySource, Triple, WikiPage

ENTITY_PREFIX = "entity:"


def fact_sentence(t: Triple) -> str:
    """'embed-01 located in 机房B (from 2026-02-01, ended 2026-11-01)'."""
    when = [f"from {t.valid_from}"] if t.valid_from else []
    if t.valid_to:
        when.append(f"ended {t.valid_to}")
    tail = f" ({', '.join(when)})" if when else ""
    return f"{t.subject_name or t.subject} {t.predicate.replace('_', ' ')} {t.object_name or t.object}{tail}"


def entity_pages(entities: Sequence[Entity], triples: Sequence[Triple]) -> list[WikiPage]:
    """One page per entity: its name (and aliases) as title, the facts it is part of (current first) as body."""
    facts: dict[str, list[Triple]] = defaultdict(list)
    for t in triples:
        facts[t.subject].append(t)
        if t.object != t.subject:
            facts[t.object].append(t)
    pages = []
    for e in entities:
        aliases = e.properties.get("aliases")
        names = tuple(str(a) for a in aliases) if isinstance(aliases, list | tuple) else ()
        mine = sorted(facts.get(e.id, ()), key=lambda t: (not t.current, t.valid_from))
        body = "\n".join(fact_sentence(t) for t in mine)
        pages.append(WikiPage(f"{ENTITY_PREFIX}{e.id}", e.name or e.id, names, (e.type,), body, e.created))
    return pages


def with_entities(wiki: Sequence[WikiPage], entities: Sequence[WikiPage]) -> list[WikiPage]:
    """The wiki pages, each with the facts of the entities it names added, then the other entities' pages."""
    page_of = {entity_id(name): n for n, page in enumerate(wiki) for name in (page.title, *page.aliases)}
    pages = list(wiki)
    rest = []
    for e in entities:
        n = next((page_of[k] for k in map(entity_id, (e.title, *e.aliases)) if k in page_of), None)
        if n is None:
            rest.append(e)
        elif e.body:
            pages[n] = replace(pages[n], body=f"{pages[n].body.rstrip()}\n\n{e.body}")
    return pages + rest


def recall_pages(source: MemorySource) -> list[WikiPage]:
    """The files layer of recall: the source's wiki pages (with the facts of the entities they name), then the
    other entities' pages."""
    return with_entities(source.wiki_pages(), entity_pages(source.entities(), source.triples()))
