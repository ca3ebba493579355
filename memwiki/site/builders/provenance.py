"""Where a knowledge-graph fact came from: its `source` (`memory m-018`, `session s-1020-infra`, a MemPalace
drawer id, `SOUL.md`) resolved to the place on this site that shows it, for a link and for the source text.

A source that names nothing published here (an unknown id, or one the privacy gate withheld) resolves to
nothing and stays plain text: never a dead link.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memwiki.site.builders import PERSONA, Site, message_anchor
from memwiki.site.model.render import esc
from memwiki.source import Triple

_MEMORY = re.compile(r"(?:memory|drawer|mem)\s+(\S+)", re.IGNORECASE)
_SESSION = re.compile(r"session\s+(\S+?)(?:\s*(?:#|turn\s+|msg\s+|message\s+)(\S+))?", re.IGNORECASE)
_PERSONA_FILES = {"soul.md": "soul", "memory.md": "", "user.md": ""}


@dataclass(frozen=True)
class Origin:
    """A fact's source as shown on this site: the page and anchor, and the text found there."""

    src_uri: str
    anchor: str
    kind: str  # "memory" | "session" | "persona"
    text: str = ""  # raw (untrusted) text: the memory, or the session turn
    ref: str = ""  # the memory's or the session's id


def _turn(s: Site, session_id: str, ref: str, t: Triple) -> int:
    """The 1-based turn a session source means: the one it names (`#3`, `msg-3` or a message id), else the
    first turn that names both ends of the fact (see memwiki.site.model.mentions), else one that names either; 0 when
    none does."""
    messages = s.messages.get(session_id, [])
    if ref:
        number = ref.removeprefix("msg-")
        if number.isdigit() and 1 <= int(number) <= len(messages):
            return int(number)
        return next((n for n, m in enumerate(messages, 1) if m.id == ref), 0)
    ends = [c for c in (s.index.for_entity(t.subject), s.index.for_entity(t.object)) if c is not None]
    mentions, uri = s.mentions(), s.session_uri(session_id)
    named = [
        sum(any(c is end for c in mentions.named_in(uri, message_anchor(n))) for end in ends)
        for n in range(1, len(messages) + 1)
    ]
    for need in (len(ends), 1):
        found = next((n for n, count in enumerate(named, 1) if need and count >= need), 0)
        if found:
            return found
    return 0


def origin(s: Site, t: Triple) -> Origin | None:
    """Where the source of fact `t` is shown on this site, or None when it names nothing published here."""
    source = (t.source or "").strip()
    if not source:
        return None
    memories = s.memory_by_id()
    match = _MEMORY.fullmatch(source)
    memory_id = match.group(1) if match else source
    if memory_id in s.memory_home:
        page, anchor = s.memory_home[memory_id]
        return Origin(page, anchor, "memory", memories[memory_id].text, memory_id)
    match = _SESSION.fullmatch(source)
    session_id, ref = (match.group(1), match.group(2) or "") if match else (source, "")
    if session_id in s.session_uris:
        n = _turn(s, session_id, ref, t)
        text = s.messages[session_id][n - 1].content if n else ""
        return Origin(s.session_uri(session_id), message_anchor(n) if n else "", "session", text, session_id)
    if source.casefold() in _PERSONA_FILES and s.persona is not None:
        return Origin(PERSONA, _PERSONA_FILES[source.casefold()], "persona")
    return None


_NO_SOURCE = "the graph does not say where this fact came from"


def source_html(s: Site, t: Triple, url: Callable[[str, str], str]) -> str:
    """The source of fact `t` as HTML: a link to where it is shown (`url(src_uri, anchor)` makes the href from
    the page it is seen on), else plain text; "not recorded" when the fact names no source (a palace's facts
    often do not: MemPalace fills the source columns only when its writer gives one)."""
    if not t.source:
        return (
            '<span class="memwiki-muted" title="the graph does not say where this fact came from">not recorded</span>'
        )
    label = f"<code>{esc(t.source)}</code>"
    found = origin(s, t)
    if found is None:
        return label
    target = esc(url(found.src_uri, found.anchor))
    return f'<a class="mw-provenance mw-provenance-{found.kind}" href="{target}">{label}</a>'


def origin_key(s: Site, t: Triple) -> tuple[str, str] | None:
    """What a page showing fact `t`'s source link depends on besides the fact (for page caches)."""
    found = origin(s, t)
    return (found.src_uri, found.anchor) if found is not None else None
