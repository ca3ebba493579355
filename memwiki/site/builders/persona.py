"""Persona and hot memory: SOUL.md, MEMORY.md and USER.md with capacity gauges, entry categories
and the history of what sank to L2 and when."""

from __future__ import annotations

from memwiki.layers.hot.categories import parse_tag
from memwiki.site.builders import PERSONA, BuildResult, Site, frontmatter, hot_anchor, site
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.generated import GeneratedPage
from memwiki.site.model.render import block, esc
from memwiki.source import CORE_CATEGORIES, HotFile
from memwiki.store.layout import HOT_FILES


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


def category_badge(category: str, tagged: bool | None = None) -> str:
    """A category chip: green for core (stays in hot memory), amber for sinkable; for a hot entry, solid when
    its writer tagged it and outlined when memwiki's rules classified it (`tagged` None: not a hot entry)."""
    kind = "core" if category in CORE_CATEGORIES else "sinkable"
    what = "always kept in the agent's view" if kind == "core" else "moves to long-term memory when the file gets full"
    how = ""
    if tagged is not None:
        how = " mw-cat-tagged" if tagged else " mw-cat-guessed"
        what += " · the agent said what kind of note it is" if tagged else " · memwiki guessed the kind from the words"
    return f'<span class="mw-cat mw-cat-{kind}{how}" title="{what}">{esc(category)}</span>'


def untagged(text: str) -> str:
    """An entry's text without its leading category tag (`[network] …`): the chip shows the category."""
    tag, body = parse_tag(text)
    return body if tag else text


def legend(hot: bool = True) -> str:
    """What the category chips mean; `hot`: also solid (tagged) against outlined (classified)."""
    parts = [
        category_badge("rule", True) + " green: always kept in the agent's view",
        category_badge("network", True) + " amber: moved to long-term memory when the file gets full",
    ]
    if hot:
        parts += [
            category_badge("project", True) + " filled: the agent said what kind of note it is",
            category_badge("project", False) + " outlined: memwiki guessed the kind from the words",
        ]
    return f'<p class="mw-legend">{" · ".join(parts)}</p>'


def _hot_section(s: Site, hot: HotFile) -> str:
    name = HOT_FILES.get(hot.target, hot.target)
    items = []
    for n, entry in enumerate(hot.entries, 1):
        items.append(
            f'<li id="{hot_anchor(hot.target, entry.index)}"><span class="mw-entry-n">{n}</span>'
            f"{category_badge(entry.category, entry.tagged)}"
            f'<div class="mw-entry-text">{s.renderer.html(untagged(entry.text), PERSONA)}</div></li>'
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
        title = f' title="L2 memory {esc(k.memory_id)}"'
        target = (
            f'<a href="{esc(s.href(PERSONA, home[0], home[1]))}"{title}>memory card</a>'
            if home
            else f"<span class='mw-muted'{title}>not published</span>"
        )
        source = esc(HOT_FILES.get(k.target, k.target))
        when = f"{esc(k.sunk_at[:16].replace('T', ' '))}<br><span class='mw-muted'>from {source}</span>"
        rows.append(
            f"<tr><td>{category_badge(k.category)} {s.renderer.inline(untagged(k.text), PERSONA)}</td>"
            f"<td>{when}</td><td>{esc(k.reason)}</td><td>{target}</td></tr>"
        )
    table = (
        '<table><colgroup><col class="mw-col-entry"><col><col><col></colgroup>'
        "<thead><tr><th>entry</th><th>sunk</th><th>why</th><th>now in L2</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return "\n## Sunk to L2\n\nEntries that left hot memory when it passed its threshold, newest first.\n" + block(
        table, cls="mw-sinks"
    )


def build(ctx: BuildContext) -> BuildResult:
    s = site(ctx)
    md = frontmatter("Persona and hot memory") + "# Persona and hot memory\n\n"
    md += "What the agent reads on every turn: its persona (L0) and hot memory (L1).\n"
    md += block(legend(), cls="mw-legend-box")
    persona = s.persona
    md += "\n## SOUL.md\n"
    if persona is None:
        md += "\nNo persona.\n"
    else:
        md += block(gauge(persona.chars, persona.cap, None), cls="mw-gauge-box")
        if persona.truncated:
            md += (
                '\n!!! warning "Persona over its cap"\n    The whole file is shown; the agent reads only its head and '
                "tail each turn.\n"
            )
        md += block(s.renderer.html(persona.text, PERSONA, shift=2), cls="mw-text mw-soul", attrs=' id="soul"')
    for hot in s.hot:
        md += _hot_section(s, hot)
    md += _sinks(s)
    return [GeneratedPage(PERSONA, "Persona and hot memory", md, in_nav=True, meta={"order": 1})], []
