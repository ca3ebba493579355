"""Persona and hot memory: SOUL.md, MEMORY.md and USER.md with capacity gauges, entry categories
and the history of what sank to L2 and when."""

from __future__ import annotations

from memory.snapshot import CORE_CATEGORIES, HotFile
from plugins.builders import PERSONA, BuildResult, Site, frontmatter, hot_anchor, site
from plugins.pages import BuildContext, GeneratedPage
from plugins.render import block, esc, href

FILE_NAMES = {"memory": "MEMORY.md", "user": "USER.md"}


def gauge(used: int, cap: int, threshold: float | None) -> str:
    """A capacity bar: used / cap, with the threshold line (e.g. 70%) drawn on it."""
    ratio = used / cap if cap else 0.0
    state = "over" if ratio > 1 else "warn" if threshold is not None and ratio > threshold else "ok"
    line = ""
    label = f"{used:,} / {cap:,} chars ({ratio:.0%})"
    if threshold is not None:
        line = (
            f'<span class="mw-gauge-line" style="left:{threshold * 100:.1f}%" '
            f'title="sink threshold {threshold:.0%}" data-label="{threshold:.0%}"></span>'
        )
        label += f" · sinks above {threshold:.0%}"
    return (
        f'<div class="mw-gauge mw-gauge-{state}" role="meter" aria-valuemin="0" aria-valuemax="{cap}" '
        f'aria-valuenow="{used}"><span class="mw-gauge-fill" style="width:{min(ratio, 1) * 100:.1f}%"></span>'
        f'{line}</div><p class="mw-gauge-label">{label}</p>'
    )


def category_badge(category: str) -> str:
    kind = "core" if category in CORE_CATEGORIES else "sinkable"
    return f'<span class="mw-cat mw-cat-{kind}" title="{kind}">{esc(category)}</span>'


def _hot_section(s: Site, hot: HotFile) -> str:
    name = FILE_NAMES.get(hot.target, hot.target)
    items = []
    for entry in hot.entries:
        tag = " · tagged" if entry.tagged else ""
        items.append(
            f'<li id="{hot_anchor(hot.target, entry.index)}">{category_badge(entry.category)}'
            f'<span class="mw-muted">{tag}</span>{s.renderer.html(entry.text, PERSONA)}</li>'
        )
    entries = block(f'<ol class="mw-entries">{"".join(items)}</ol>', cls="mw-hot") if items else "\n*No entries.*\n"
    where = f" · <code>{esc(hot.path)}</code>" if hot.path else ""
    return (
        f"\n## {name}\n"
        + block(
            gauge(hot.chars, hot.cap, hot.threshold) + f'<p class="mw-muted">{len(hot.entries)} entries{where}</p>',
            cls="mw-gauge-box",
        )
        + entries
    )


def _sinks(s: Site) -> str:
    if not s.sinks:
        return "\n## Sunk to L2\n\nNothing has sunk from hot memory yet.\n"
    rows = []
    for k in sorted(s.sinks, key=lambda k: k.sunk_at, reverse=True):
        home = s.memory_home.get(k.memory_id)
        target = (
            f'<a href="{esc(href(PERSONA, home[0], home[1], s.directory_urls))}">{esc(k.memory_id)}</a>'
            if home
            else f"{esc(k.memory_id)} <span class='mw-muted'>(not published)</span>"
        )
        rows.append(
            f"<tr><td>{esc(k.sunk_at[:16].replace('T', ' '))}</td><td>{esc(FILE_NAMES.get(k.target, k.target))}</td>"
            f"<td>{category_badge(k.category)}</td><td>{s.renderer.inline(k.text, PERSONA)}</td>"
            f"<td>{target}</td><td>{esc(k.reason)}</td></tr>"
        )
    table = (
        "<table><thead><tr><th>when</th><th>from</th><th>category</th><th>entry</th><th>now in L2</th>"
        f"<th>why</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return "\n## Sunk to L2\n\nEntries that left hot memory when it passed its threshold, newest first.\n" + block(
        table, cls="mw-sinks"
    )


def build(ctx: BuildContext) -> BuildResult:
    s = site(ctx)
    md = frontmatter("Persona and hot memory") + "# Persona and hot memory\n\n"
    md += "What the agent reads on every turn: its persona (L0) and hot memory (L1).\n"
    persona = s.persona
    md += "\n## SOUL.md\n"
    if persona is None:
        md += "\nNo persona.\n"
    else:
        md += block(gauge(persona.chars, persona.cap, None), cls="mw-gauge-box")
        if persona.truncated:
            md += '\n!!! warning "Persona over its cap"\n    The text was cut on read (head and tail kept).\n'
        md += block(s.renderer.html(persona.text, PERSONA, shift=2), cls="mw-text mw-soul", attrs=' id="soul"')
    for hot in s.hot:
        md += _hot_section(s, hot)
    md += _sinks(s)
    return [GeneratedPage(PERSONA, "Persona and hot memory", md, in_nav=True, meta={"order": 1})], []
