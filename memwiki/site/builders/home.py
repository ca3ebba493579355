"""Home page: what each layer holds (counts, sizes, last change) with links into each part."""

from __future__ import annotations

from memwiki.site.builder_io import BuildContext
from memwiki.site.builders import (
    AUDIT,
    CONCEPTS,
    GRAPH,
    HOME,
    MEMORY,
    PERSONA,
    SESSIONS,
    BuildResult,
    frontmatter,
    site,
)
from memwiki.site.builders.privacy import PRIVACY, profile_line
from memwiki.site.generated import GeneratedPage
from memwiki.site.render import block, esc, href


def _latest(*values: str) -> str:
    found = [v for v in values if v]
    return max(found)[:16].replace("T", " ") if found else "—"


def build(ctx: BuildContext) -> BuildResult:
    s = site(ctx)
    du = s.directory_urls
    hot = {h.target: h for h in s.hot}
    mem, user = hot.get("memory"), hot.get("user")
    current = sum(1 for t in s.triples if t.current)
    messages = sum(len(v) for v in s.messages.values())
    wiki_pages = sum(1 for c in s.index.concepts if c.kind == "wiki")
    entity_pages = sum(1 for c in s.index.concepts if c.kind == "entity")

    def link(uri: str, label: str) -> str:
        return f'<a href="{esc(href(HOME, uri, directory_urls=du))}">{esc(label)}</a>'

    def hot_cell(h) -> str:  # noqa: ANN001 - HotFile | None
        if h is None:
            return "—"
        return f"{len(h.entries)} entries · {h.chars:,} / {h.cap:,} chars ({h.usage:.0%})"

    rows = [
        (
            "L0",
            "persona",
            link(PERSONA, "SOUL.md"),
            f"{s.persona.chars:,} / {s.persona.cap:,} chars" if s.persona else "—",
            _latest(s.persona.modified if s.persona else ""),
        ),
        (
            "L1",
            "hot memory",
            link(PERSONA, "MEMORY.md + USER.md"),
            f"MEMORY.md: {hot_cell(mem)}<br>USER.md: {hot_cell(user)}",
            _latest(*(h.modified for h in s.hot), *(k.sunk_at for k in s.sinks)),
        ),
        (
            "L2",
            "semantic memory",
            link(MEMORY, "memories by category, wing and room"),
            f"{len(s.memories):,} memories · {len(s.sinks):,} sunk from hot memory",
            _latest(*(m.created for m in s.memories), *(m.sunk_at for m in s.memories)),
        ),
        (
            "L3",
            "knowledge graph",
            link(GRAPH, "graph") + " · " + link(CONCEPTS, "entities"),
            f"{len(s.entities):,} entities · {len(s.triples):,} facts ({current:,} current)",
            _latest(*(t.extracted_at for t in s.triples), *(t.valid_from for t in s.triples)),
        ),
        (
            "L4",
            "session history",
            link(SESSIONS, "sessions, newest first"),
            f"{len(s.sessions):,} sessions · {messages:,} messages",
            _latest(*(x.ended or x.started for x in s.sessions)),
        ),
        (
            "wiki",
            "concept pages",
            link(CONCEPTS, "concepts"),
            f"{wiki_pages:,} hand-written · {entity_pages:,} from the graph · {len(s.index.wanted):,} wanted",
            _latest(*(p.modified for p in s.wiki)),
        ),
    ]
    body = "".join(
        f"<tr><td><strong>{layer}</strong></td><td>{name}</td><td>{where}</td><td>{size}</td><td>{when}</td></tr>"
        for layer, name, where, size, when in rows
    )
    table = block(
        "<table><thead><tr><th>layer</th><th>what</th><th>pages</th><th>holds</th><th>last change</th></tr></thead>"
        f"<tbody>{body}</tbody></table>",
        cls="mw-layers",
    )
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
        + table
        + "\n## Start here\n\n"
        + f"- {link(PERSONA, 'Persona and hot memory')}: what is injected every turn, with capacity gauges.\n"
        + f"- {link(CONCEPTS, 'Concepts')}: hand-written pages and one page per graph entity, with backlinks.\n"
        + f"- {link(SESSIONS, 'Sessions')}: digests of past conversations, newest first.\n"
        + f"- {link(AUDIT, 'Audit')}: conflicts, expired facts, wanted concepts, near-duplicates.\n"
    )
    return [GeneratedPage(HOME, "Memory wiki", md, in_nav=True, meta={"order": 0})], []
