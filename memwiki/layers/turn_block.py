"""The per-turn injection block (persona + hot memory with usage), frozen once per session.

The layout follows hermes-agent's system-prompt blocks: a rule line, a header with usage such as
`MEMORY (your personal notes) [96% — 2,133/2,200 chars]`, a rule line, then the entries joined by `§`.
Empty hot files are left out, as hermes leaves them out. A file that grew far past its cap outside the
tool is cut head + tail at render time so it cannot flood the context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memwiki.common.times import utc_now
from memwiki.layers.hot.files import join_entries, usage_text
from memwiki.layers.persona import head_tail, injected
from memwiki.source import HotFile, Persona

RULE = "═" * 46
HEADERS = {"memory": "MEMORY (your personal notes)", "user": "USER PROFILE (who the user is)"}


def render_hot_file(hot: HotFile) -> str:
    """One hot file's block, or "" when it has no entries."""
    if not hot.entries:
        return ""
    content = join_entries([e.text for e in hot.entries])
    current = len(content)
    render_cap = max(hot.cap * 2, 4000)
    if current > render_cap:
        head, tail = head_tail(content, render_cap)
        content = (
            head + f"\n\n[... {current - len(head) - len(tail):,} chars truncated — memory over budget "
            f"({current:,}/{hot.cap:,}); consolidate via memory(action=remove/replace) ...]\n\n" + tail
        )
    over = " ⚠ OVER BUDGET" if current > hot.cap else ""
    header = f"{HEADERS.get(hot.target, hot.target.upper())} [{usage_text(current, hot.cap)}{over}]"
    return f"{RULE}\n{header}\n{RULE}\n{content}"


def render_context(persona: Persona | None, hot_files: Sequence[HotFile]) -> str:
    """The per-turn block: the persona text, then each non-empty hot file with its usage header."""
    parts = [injected(persona).strip()] if persona is not None and injected(persona).strip() else []
    parts += [block for block in (render_hot_file(h) for h in hot_files) if block]
    return "\n\n".join(parts)


@dataclass(frozen=True)
class FrozenContext:
    """The block captured once at session start; later writes change the files, never `.text`."""

    text: str
    frozen_at: str

    @classmethod
    def freeze(cls, persona: Persona | None, hot_files: Sequence[HotFile]) -> FrozenContext:
        return cls(render_context(persona, hot_files), utc_now())
