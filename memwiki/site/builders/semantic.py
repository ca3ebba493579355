"""Semantic memory (L2): browsable by category and by wing / room, each memory with its provenance."""

from __future__ import annotations

import operator
from dataclasses import astuple
from pathlib import PurePosixPath

from memwiki.layers.semantic.passages import is_long
from memwiki.site.builders import (
    MEMORY,
    PER_PAGE,
    BuildResult,
    Site,
    frontmatter,
    ids_of,
    message_anchor,
    paged_uri,
    pager,
    site,
)
from memwiki.site.builders.audit import Flag, Flags, flag_html
from memwiki.site.builders.audit import flags as audit_flags
from memwiki.site.builders.persona import category_badge, legend
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.generated import GeneratedPage
from memwiki.site.model.render import block, esc, md_esc, verbatim
from memwiki.site.speed.memo import PageMemo
from memwiki.source import Memory


def _when(value: str) -> str:
    return esc(value[:16].replace("T", " ")) if value else ""


def card(s: Site, memory: Memory, page: str, *, with_room: bool = True, flags: str = "") -> str:
    """One memory with its provenance: category, wing / room, session, time, sunk or not; `flags`: the audit's
    findings about it (HTML, see audit.flag_html)."""
    bits = [category_badge(memory.category)]
    if with_room and (memory.wing or memory.room):
        url = s.href(page, paged_uri(s.room_base(memory.wing, memory.room), 1))
        bits.append(f'<a href="{esc(url)}">{esc(memory.wing or "—")} / {esc(memory.room or "—")}</a>')
    if memory.session_id:
        session = s.session_by_id.get(memory.session_id)
        if session is not None:
            anchor = ""
            if memory.message_id:
                ids = [m.id for m in s.messages.get(session.id, ())]
                anchor = message_anchor(ids.index(memory.message_id) + 1) if memory.message_id in ids else ""
            url = s.href(page, s.session_uri(session.id), anchor)
            bits.append(f'session <a href="{esc(url)}">{esc(session.title or session.id)}</a>')
        else:
            bits.append(f"session {esc(memory.session_id)}")
    if memory.created:
        bits.append(f"created {_when(memory.created)}")
    if memory.sunk_at or memory.source == "L1":
        bits.append(f'<span class="mw-sunk">sunk from hot memory {_when(memory.sunk_at)}</span>')
    elif memory.source and memory.source != "L2":
        bits.append(f"via {esc(memory.source)}")
    if flags:
        bits.append(flags)
    meta = " · ".join(bits)
    body = _body(s, memory, page)
    if is_long(memory.text):  # split into passages for recall (memwiki.layers.semantic.passages): shown whole, folded
        head = esc(" ".join(memory.text[:160].split()))
        size = f'<span class="mw-muted">({len(memory.text):,} characters)</span>'
        body = f'<details class="mw-long"><summary>{head}… {size}</summary>{body}</details>'
    return (
        f'<article class="mw-memory" id="{esc(s.memory_anchor(memory.id))}">'
        f"<header><code>{esc(memory.id)}</code> {meta}</header>{body}</article>"
    )


MINED = ("project_file", "conversation")  # MemPalace's kinds of drawer cut from a mined file (memwiki.readers)
PROSE = frozenset({"", ".md", ".markdown", ".mdx", ".txt", ".rst", ".jsonl", ".json"})  # chunks read as text


def _body(s: Site, memory: Memory, page: str) -> str:
    """A memory's text in its card, headings flattened (a card is not a part of the page). A MemPalace drawer
    or mined chunk is a quotation: a source file's chunk verbatim (code stays code), anything else as Markdown,
    with where it was cut from."""
    if memory.source != "mempalace":
        return s.renderer.html(memory.text, page, flat=True)
    source = str(memory.meta.get("source_file") or "")
    kind = memory.meta.get("kind")
    if kind == "project_file" and PurePosixPath(source).suffix.lower() not in PROSE:
        inner = verbatim(memory.text)
    else:
        inner = s.renderer.html(memory.text, page, flat=True)
    where = []
    if source:
        where.append(f"<code>{esc(PurePosixPath(source.replace(chr(92), '/')).name)}</code>")
    if kind in MINED and memory.meta.get("chunk_index") not in (None, ""):
        where.append(f"chunk {esc(memory.meta['chunk_index'])}")
    caption = f'<footer class="mw-muted">from {" · ".join(where)}</footer>' if where else ""
    return f'<blockquote class="mw-quote">{inner}{caption}</blockquote>'


_ROOM = operator.attrgetter("wing", "room")


def _listing(
    s: Site,
    memo: PageMemo,
    base: str,
    title: str,
    memories: list[Memory],
    with_room: bool,
    flags: Flags,
) -> list[GeneratedPage]:
    """The pages of one category or room (the memo's keys hold what every listing depends on besides its memories)."""
    pages = max(1, -(-len(memories) // PER_PAGE))
    token, anchor, room = s.memory_tokens().__getitem__, s.memory_anchors.__getitem__, s.room_bases.get
    flags_of = flags.memories.get
    out = []

    def flagged(memory: Memory) -> list[Flag]:
        return flags_of(memory.id) or []

    for n in range(1, pages + 1):
        uri = paged_uri(base, n)
        chunk = memories[(n - 1) * PER_PAGE : n * PER_PAGE]
        head = f"{title} ({n}/{pages})" if pages > 1 else title

        def make(uri: str = uri, head: str = head, chunk: list[Memory] = chunk, n: int = n) -> GeneratedPage:
            back = s.href(uri, MEMORY)
            md = frontmatter(head) + f"# {md_esc(head)}\n\n"
            all_link = f'<a href="{esc(back)}">all of semantic memory</a>'
            md += f'<p class="mw-muted">{len(memories):,} memories · {all_link}</p>\n'
            md += pager(s, base, n, pages, uri)
            cards = [card(s, m, uri, with_room=with_room, flags=flag_html(s, flagged(m), uri)) for m in chunk]
            md += block("".join(cards), cls="mw-memories")
            md += pager(s, base, n, pages, uri)
            return GeneratedPage(uri, head, md, section="memory")

        # each card: its memory's fields, its anchor and room link (claimed among all memories, see
        # memwiki.site.builders._paths) and the audit's findings about it (in maps: a 100k store's listings
        # show every memory twice)
        ids = ids_of(chunk)
        shown = (list(map(token, ids)), list(map(anchor, ids)), list(map(room, map(_ROOM, chunk))))
        found = [[astuple(f) for f in made] if made else () for made in map(flags_of, ids)]
        out.append(memo.page(uri, (head, len(memories), pages, n, with_room, shown, found), make))
    return out


def build(ctx: BuildContext) -> BuildResult:
    s = site(ctx)
    pages: list[GeneratedPage] = []
    cats = s.by_category()
    rooms = s.by_room()
    memo = ctx.speed.memo("memory-listings", s.sessions_version)  # cards link turns
    flags = audit_flags(ctx)
    for category, memories in cats.items():
        pages += _listing(s, memo, s.category_base(category), f"Category: {category}", memories, True, flags)
    for (wing, room), memories in rooms.items():
        room_title = f"{wing or '—'} / {room or '—'}"
        pages += _listing(s, memo, s.room_base(wing, room), room_title, memories, False, flags)

    sunk = sum(1 for m in s.memories if m.sunk_at or m.source == "L1")
    md = frontmatter("Semantic memory") + "# Semantic memory\n\n"
    md += f"{len(s.memories):,} memories in L2, recalled on demand; {sunk:,} of them sank from hot memory.\n"
    md += "\n## By category\n"
    items = [
        f'<li>{category_badge(c)} <a href="{esc(s.href(MEMORY, paged_uri(s.category_base(c), 1)))}">'
        f"{esc(c)}</a> <span class='mw-muted'>{len(ms):,}</span></li>"
        for c, ms in cats.items()
    ]
    if items:
        md += block(legend(hot=False), cls="mw-legend-box")
    md += block(f"<ul class='mw-columns'>{''.join(items)}</ul>", cls="mw-index") if items else "\nNo memories.\n"
    md += "\n## By wing and room\n"
    wings: dict[str, list[str]] = {}
    for (wing, room), ms in rooms.items():
        url = s.href(MEMORY, paged_uri(s.room_base(wing, room), 1))
        wings.setdefault(wing, []).append(
            f'<li><a href="{esc(url)}">{esc(room or "—")}</a> <span class="mw-muted">{len(ms):,}</span></li>'
        )
    if wings:
        md += block(
            "".join(f"<h3>{esc(w or '—')}</h3><ul class='mw-columns'>{''.join(r)}</ul>" for w, r in wings.items()),
            cls="mw-index",
        )
    else:
        md += "\nNo memory has a wing or room.\n"
    pages.insert(0, GeneratedPage(MEMORY, "Semantic memory", md, in_nav=True, meta={"order": 3}))
    return pages, []
