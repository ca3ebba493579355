"""Concept pages: hand-written wiki pages and one page per graph entity, each with its backlinks (and the
sentence that links), stub pages for wanted concepts, and the concept index."""

from __future__ import annotations

from dataclasses import astuple

from memwiki.site.builders import (
    AUDIT,
    CONCEPTS,
    BuildResult,
    Site,
    frontmatter,
    safe_title,
    site,
)
from memwiki.site.builders.audit import Flag, entity_flags, flag_html
from memwiki.site.builders.graph import entity_section
from memwiki.site.builders.provenance import origin_key
from memwiki.site.gate.detect import WITHHELD_NAME
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.concept_index import Concept, norm
from memwiki.site.model.generated import GeneratedPage
from memwiki.site.model.mentions import Mentions
from memwiki.site.model.render import block, esc, md_esc
from memwiki.site.speed.memo import PageMemo, key_of
from memwiki.source import Triple

PER_LIST_PAGE = 300
INDEX_MARKDOWN = "memo/concepts-index.marshal"  # in cache_dir: the Markdown of the concepts' first page


def backlinks(s: Site, concept: Concept, *, heading: str = "Backlinks") -> str:
    """The pages that link here, each with the sentence that holds the link."""
    here = concept.src_uri
    if not concept.backlinks:
        return f"\n## {heading}\n\nNothing links here yet.\n"
    items = []
    for b in sorted(concept.backlinks, key=lambda b: (b.title, b.anchor)):
        url = s.href(here, b.src_uri, b.anchor)
        items.append(
            f'<li><a href="{esc(url)}">{esc(b.title)}</a>'
            f'<blockquote class="mw-context">{s.renderer.inline(b.sentence, here)}</blockquote></li>'
        )
    links = block(f"<ul>{''.join(items)}</ul>", cls="mw-backlinks")
    return f"\n## {heading}\n" + links


MENTIONS_SHOWN = 50  # places listed under "Mentioned in" (the rest are counted)
LAYERS = {"persona": "persona", "hot": "hot memory", "L2": "L2 memory", "L4": "session"}


def _unlinked_mentions(s: Site, concept: Concept) -> Mentions:
    """The places that name a concept without linking it (those that link are its backlinks)."""
    return s.mentions().of(concept, besides={(b.src_uri, b.anchor) for b in concept.backlinks})


def mentioned_in(s: Site, concept: Concept) -> str:
    """The hot entries, memories and session turns that name the concept (or an alias) without a link, each
    with its sentence, the name marked."""
    here = concept.src_uri
    found = _unlinked_mentions(s, concept)
    head = "\n## Mentioned in\n\n"
    if not found:
        return head + "No hot entry, memory or session turn names it without a link.\n"
    items = []
    for m in found[:MENTIONS_SHOWN]:
        url = s.href(here, m.src_uri, m.anchor)
        title = f"{m.title} · turn {m.anchor.removeprefix('msg-')}" if m.layer == "L4" else m.title
        before, after = m.context()
        items.append(
            f'<li><a href="{esc(url)}">{esc(title)}</a> <span class="mw-muted">{esc(LAYERS.get(m.layer, m.layer))}'
            f'</span><blockquote class="mw-context">{s.renderer.quote(before, m.name, after, here)}'
            "</blockquote></li>"
        )
    more = len(found) - MENTIONS_SHOWN
    tail = f'<p class="mw-muted">{more:,} more not listed.</p>' if more > 0 else ""
    places = f"{len(found):,} place" + ("s name" if len(found) != 1 else " names")
    intro = f"{places} it or an alias without a <code>[[link]]</code>.\n"
    listing = block(f"<ul>{''.join(items)}</ul>{tail}", cls="mw-mentions")
    return head + intro + listing


def concept_page(ctx: BuildContext, s: Site, concept: Concept) -> GeneratedPage:
    uri = concept.src_uri
    md = frontmatter(concept.title) + f"# {md_esc(concept.title)}\n\n"
    labels = []
    if concept.wanted:
        labels.append('<span class="mw-badge mw-badge-wanted">wanted</span>')
    if concept.wiki is not None:
        labels.append('<span class="mw-badge">wiki page</span>')
    if concept.entity is not None:
        labels.append(f'<span class="mw-badge mw-badge-entity">entity · {esc(concept.entity.type)}</span>')
    if concept.aliases:
        labels.append("also: " + ", ".join(f"<em>{esc(a)}</em>" for a in concept.aliases))
    if concept.tags:
        labels.append(" ".join(f'<span class="mw-tag">#{esc(t)}</span>' for t in concept.tags))
    md += block(" · ".join(labels), cls="mw-labels", tag="p")
    found = entity_flags(ctx).get(concept.entity.id, []) if concept.entity is not None else []
    if found:
        items = "".join(f"<li>{flag_html(s, [f], uri)} {esc(f.title)}</li>" for f in found)
        md += block(f"<ul>{items}</ul>", cls="mw-flags")
    if concept.wanted:
        md += block(
            "<p><strong>No page yet.</strong> Memory text links to this concept, but no wiki page or graph entity "
            "has this name. Write a page in the store's wiki folder (title or alias "
            f"<code>{esc(concept.title)}</code>) to fill it in.</p>",
            cls="mw-stub admonition warning",
        )
        md += backlinks(s, concept, heading="Wanted by")
        return GeneratedPage(uri, safe_title(concept.title), md, section="concepts", meta={"wanted": True})
    if concept.wiki is not None:
        md += block(s.renderer.html(concept.wiki.body, uri, skip_title=concept.title), cls="mw-text mw-wiki")
    if concept.entity is not None:
        md += "\n" + entity_section(ctx, concept.entity.id) + "\n"
    md += backlinks(s, concept) + mentioned_in(s, concept)
    return GeneratedPage(uri, safe_title(concept.title), md, section="concepts")


def _item(s: Site, here: str, c: Concept) -> str:
    url = s.href(here, c.src_uri)
    cls = "mw-wikilink mw-wanted" if c.wanted else "mw-wikilink"
    kind = f"{c.entity.type}" if c.entity is not None and c.wiki is None else "wiki" if c.wiki else c.kind
    return (
        f'<li><a class="{cls}" href="{esc(url)}">{esc(c.title)}</a> <span class="mw-muted">{esc(kind)} · '
        f"{len(c.backlinks)} backlinks</span></li>"
    )


def _index(s: Site, listed: list[Concept], memo: PageMemo) -> list[GeneratedPage]:
    wiki = [c for c in listed if c.wiki is not None]
    wanted = [c for c in listed if c.wanted]
    others = [c for c in listed if c.wiki is None and not c.wanted]
    chunks, list_uris = _chunks(listed)
    md = frontmatter("Concepts") + "# Concepts\n\n"
    md += f"{len(wiki):,} hand-written pages, {len(others):,} pages from graph entities, {len(wanted):,} wanted.\n"
    md += "\n## Hand-written pages\n"
    md += (
        block(f"<ul class='mw-columns'>{''.join(_item(s, CONCEPTS, c) for c in wiki)}</ul>", cls="mw-index")
        if wiki
        else "\nNone.\n"
    )
    md += "\n## Graph entities\n"
    if len(chunks) == 1:
        md += block(f"<ul class='mw-columns'>{''.join(_item(s, CONCEPTS, c) for c in others)}</ul>", cls="mw-index")
    elif chunks:
        links = "".join(
            f'<li><a href="{esc(s.href(CONCEPTS, u))}">{esc(ch[0].title)} … {esc(ch[-1].title)}</a></li>'
            for u, ch in zip(list_uris, chunks, strict=True)
        )
        md += block(f"<ul>{links}</ul>", cls="mw-index")
    else:
        md += "\nNone.\n"
    md += "\n## Wanted concepts\n\nLinked from memory text but without a page; each stub lists where it is wanted.\n"
    shown = wanted[:PER_LIST_PAGE]
    md += (
        block(f"<ul class='mw-columns'>{''.join(_item(s, CONCEPTS, c) for c in shown)}</ul>", cls="mw-index")
        if shown
        else "\nNone.\n"
    )
    if len(wanted) > len(shown):
        audit = esc(s.href(CONCEPTS, AUDIT))
        md += f'\n{len(wanted) - len(shown):,} more on the <a href="{audit}">audit page</a>.\n'
    pages = [GeneratedPage(CONCEPTS, "Concepts", md, section="concepts", in_nav=True, meta={"order": 2})]
    return pages + _list_pages(s, chunks, list_uris, memo)


def _list_pages(s: Site, chunks: list[list[Concept]], list_uris: list[str], memo: PageMemo) -> list[GeneratedPage]:
    """The list pages of graph entities (when there is more than one page of them)."""
    pages: list[GeneratedPage] = []
    if len(chunks) > 1:
        for n, (uri, chunk) in enumerate(zip(list_uris, chunks, strict=True), 1):
            head = f"Concepts {n}/{len(chunks)}"

            def make(uri: str = uri, head: str = head, chunk: list[Concept] = chunk) -> GeneratedPage:
                items = "".join(_item(s, uri, c) for c in chunk)
                body = frontmatter(head) + f"# {head}\n" + block(f"<ul class='mw-columns'>{items}</ul>", cls="mw-index")
                return GeneratedPage(uri, head, body, section="concepts")

            shown = [(c.title, c.src_uri, c.kind, c.entity.type if c.entity else "", len(c.backlinks)) for c in chunk]
            pages.append(memo.page(uri, (head, shown), make))
    return pages


def _cached_index(ctx: BuildContext, s: Site, listed: list[Concept], lists: PageMemo) -> list[GeneratedPage]:
    """`_index`, its first page (in the navigation: always rendered, never kept) kept by what it lists: each
    concept's path and backlink count, and the wanted concepts' titles, with what all concept pages share."""
    key = key_of(lists.shared, [(c.src_uri, len(c.backlinks)) for c in listed], [c.title for c in listed if c.wanted])
    markdown = ctx.speed.load(INDEX_MARKDOWN, key)
    if isinstance(markdown, str):
        main = GeneratedPage(CONCEPTS, "Concepts", markdown, section="concepts", in_nav=True, meta={"order": 2})
        return [main, *_list_pages(s, *_chunks(listed), lists)]
    pages = _index(s, listed, lists)
    ctx.speed.keep(INDEX_MARKDOWN, key, pages[0].markdown)
    return pages


def _chunks(listed: list[Concept]) -> tuple[list[list[Concept]], list[str]]:
    """The graph entities' concepts, PER_LIST_PAGE a page, and those pages' paths."""
    others = [c for c in listed if c.wiki is None and not c.wanted]
    chunks = [others[i : i + PER_LIST_PAGE] for i in range(0, len(others), PER_LIST_PAGE)]
    return chunks, [f"concepts/list-{n}.md" for n in range(1, len(chunks) + 1)]


def _inputs(s: Site, c: Concept, facts: dict[str, list[Triple]], audit: dict[str, list[Flag]]) -> tuple:
    """What a concept page is made from, besides what every concept page depends on (see build). Its wiki page
    and entity are named, not spelled out: the memo's shared part holds the wiki and graph layers' versions;
    where its facts' sources are shown (memory cards, session turns) is spelled out."""
    wiki = c.wiki.path if c.wiki is not None else None
    entity = c.entity.id if c.entity is not None else None
    backlinks = sorted(map(tuple, c.backlinks))  # (src_uri, anchor, title, sentence) each
    origins = [origin_key(s, t) for t in facts.get(entity, ())] if entity is not None else []
    found = _unlinked_mentions(s, c) if not c.wanted else []
    mentions = (
        len(found),
        [(m.src_uri, m.anchor, m.title, m.layer, m.name, *m.context()) for m in found[:MENTIONS_SHOWN]],
    )
    flagged = [astuple(f) for f in audit.get(entity, [])] if entity is not None else []
    return (c.title, c.src_uri, c.kind, c.aliases, c.tags, wiki, entity, backlinks, origins, mentions, flagged)


def _facts_by_entity(s: Site) -> dict[str, list[Triple]]:
    """Each entity's facts (as subject or object)."""
    out: dict[str, list[Triple]] = {}
    for t in s.triples:
        out.setdefault(t.subject, []).append(t)
        if t.object != t.subject:
            out.setdefault(t.object, []).append(t)
    return out


def build(ctx: BuildContext) -> BuildResult:
    s = site(ctx)
    listed = sorted((c for c in s.index.concepts if c.kind != "page"), key=lambda c: norm(c.title))
    graph = s.layer_version("graph", (s.entities, s.triples))  # every concept page shows facts and neighbours
    memo = ctx.speed.memo("concepts", graph)
    facts = _facts_by_entity(s)
    audit = entity_flags(ctx)
    pages = [memo.page(c.src_uri, _inputs(s, c, facts, audit), lambda c=c: concept_page(ctx, s, c)) for c in listed]
    named = [c for c in listed if not WITHHELD_NAME.fullmatch(c.title)]  # (its page stays: facts link to it)
    index = _cached_index(ctx, s, named, ctx.speed.memo("concept-lists", graph))
    return index + pages, []
