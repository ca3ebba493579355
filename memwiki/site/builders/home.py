"""Home page: what each layer holds (counts, sizes, last change) with links into each part."""

from __future__ import annotations

import operator
from collections.abc import Callable

from memwiki.site.builders import (
    AUDIT,
    CONCEPTS,
    GRAPH,
    HOME,
    MEMORY,
    PERSONA,
    SESSIONS,
    BuildResult,
    Site,
    frontmatter,
    site,
)
from memwiki.site.builders.privacy_report import PRIVACY, profile_line
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.generated import GeneratedPage
from memwiki.site.model.render import block, esc
from memwiki.source import HotFile, LayerCounts
from memwiki.store.layout import PERSONA_FILE


def _latest(*values: str) -> str:
    latest = max(filter(None, values), default="")  # (in a map: L2's row passes every memory's dates)
    return latest[:16].replace("T", " ") if latest else "—"


_CREATED, _SUNK_AT = operator.attrgetter("created"), operator.attrgetter("sunk_at")


def build(ctx: BuildContext) -> BuildResult:
    s = site(ctx)

    def link(uri: str, label: str) -> str:
        return f'<a href="{esc(s.href(HOME, uri))}">{esc(label)}</a>'

    info = s.info
    md = (
        frontmatter("Memory wiki")
        + "# Memory wiki\n\n"
        + f"What the agent knows, read from {esc(info.described())}, "
        + (
            f"embedded with <code>{esc(info.embedder)}</code> ({info.dim} dimensions).\n\n"
            if info.dim
            else "which holds no semantic memory (L2).\n\n"
        )
        + f"{profile_line(ctx.source.profile)} {link(PRIVACY, 'What was withheld')}.\n\n"
        + "## Layers\n"
        + _layers_table(s, link)
        + "\n## Start here\n\n"
        + f"- {link(PERSONA, 'Persona and hot memory')}: what is injected every turn, with capacity gauges.\n"
        + f"- {link(CONCEPTS, 'Concepts')}: hand-written pages and one page per graph entity, with backlinks.\n"
        + f"- {link(SESSIONS, 'Sessions')}: digests of past conversations, newest first.\n"
        + f"- {link(AUDIT, 'Audit')}: conflicts, expired facts, wanted concepts, near-duplicates.\n"
    )
    return [GeneratedPage(HOME, "Memory wiki", md, in_nav=True, meta={"order": 0})], []


def _layers_table(s: Site, link: Callable[[str, str], str]) -> str:
    """One row per layer: its pages, what it holds, when it last changed."""
    body = "".join(
        f"<tr><td><strong>{layer}</strong></td><td>{name}</td><td>{where}</td><td>{size}</td><td>{when}</td></tr>"
        for layer, name, where, size, when in _layer_rows(s, link)
    )
    return block(
        "<table><thead><tr><th>layer</th><th>what</th><th>pages</th><th>holds</th><th>last change</th></tr></thead>"
        f"<tbody>{body}</tbody></table>",
        cls="mw-layers",
    )


def _hot_cell(h: HotFile | None) -> str:
    if h is None:
        return "—"
    return f"{len(h.entries)} entries · {h.chars:,} / {h.cap:,} chars ({h.usage:.0%})"


def _counts(s: Site) -> LayerCounts:
    """What each layer holds as the site shows it (through the gate), in the shape `memwiki stats` gives."""
    return LayerCounts(
        info=s.info,
        persona=s.persona,
        hot=s.hot,
        memories=len(s.memories),
        sunk=len(s.sinks),
        entities=len(s.entities),
        facts=len(s.triples),
        current=sum(1 for t in s.triples if t.current),
        sessions=len(s.sessions),
        messages=sum(len(v) for v in s.messages.values()),
        first="",
        last="",
        wiki_pages=sum(1 for c in s.index.concepts if c.kind == "wiki"),
    )


def _layer_rows(s: Site, link: Callable[[str, str], str]) -> list[tuple[str, str, str, str, str]]:
    hot = {h.target: h for h in s.hot}
    n = _counts(s)
    entity_pages = sum(1 for c in s.index.concepts if c.kind == "entity")
    return [
        (
            "L0",
            "persona",
            link(PERSONA, PERSONA_FILE),
            f"{s.persona.chars:,} / {s.persona.cap:,} chars" if s.persona else "—",
            _latest(s.persona.modified if s.persona else ""),
        ),
        (
            "L1",
            "hot memory",
            link(PERSONA, "MEMORY.md + USER.md"),
            f"MEMORY.md: {_hot_cell(hot.get('memory'))}<br>USER.md: {_hot_cell(hot.get('user'))}",
            _latest(*(h.modified for h in s.hot), *(k.sunk_at for k in s.sinks)),
        ),
        (
            "L2",
            "semantic memory",
            link(MEMORY, "memories by category, wing and room"),
            f"{n.memories:,} memories · {n.sunk:,} sunk from hot memory",
            _latest(*map(_CREATED, s.memories), *map(_SUNK_AT, s.memories)),
        ),
        (
            "L3",
            "knowledge graph",
            link(GRAPH, "graph") + " · " + link(CONCEPTS, "entities"),
            f"{n.entities:,} entities · {n.facts:,} facts ({n.current:,} current)",
            _latest(*(t.extracted_at for t in s.triples), *(t.valid_from for t in s.triples)),
        ),
        (
            "L4",
            "session history",
            link(SESSIONS, "sessions, newest first"),
            f"{n.sessions:,} sessions · {n.messages:,} messages",
            _latest(*(x.ended or x.started for x in s.sessions)),
        ),
        (
            "wiki",
            "concept pages",
            link(CONCEPTS, "concepts"),
            f"{n.wiki_pages:,} hand-written · {entity_pages:,} from the graph · {len(s.index.wanted):,} wanted",
            _latest(*(p.modified for p in s.wiki)),
        ),
    ]
