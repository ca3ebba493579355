"""What a session was about and what came out of it, taken from its own words (extractive: nothing is generated).

- the question: the first sentence of the first thing the user said;
- the outcome: the first sentence of the last thing the assistant said in words (a tool call is no answer);
- decisions: sentences of either side that say something was decided, fixed or found out.

Tool outputs and an assistant's tool-call lines (`→ name(arguments)`, as memwiki's hermes reader writes them) are
never quoted: they are what was run, not what was said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memwiki.source import Message

SPOKEN_ROLES = ("user", "assistant")
SENTENCE_CHARS = 220
MAX_DECISIONS = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_DECIDED = re.compile(
    r"(?i)\b(?:decided|decision|we'll|we will|going with|went with|settled on|chose|switched to|fixed|the fix"
    r"|root cause|turned out|resolved|the cause|from now on|instead of)\b"
    r"|决定|结论|原因是|根因|改成|改为|换成|最终|修复|搞定|解决了|以后都|统一用|定下来"
)
_WORDS = re.compile(r"[A-Za-z\u4e00-\u9fff]")


@dataclass
class Turn:
    """One quoted sentence and the message it comes from (1-based, as the page's anchors count)."""

    n: int
    role: str
    text: str


@dataclass
class About:
    asked: Turn | None = None
    outcome: Turn | None = None
    decisions: list[Turn] = field(default_factory=list)

    def line(self) -> str:
        """One plain line for an index: the question, and what came out when it differs."""
        parts = [t.text for t in (self.asked, self.outcome) if t is not None]
        return " → ".join(dict.fromkeys(parts))


def spoken(messages: list[Message]) -> list[int]:
    """Indexes (0-based) of the messages that are words said by either side: not tool output, not tool calls."""
    return [i for i, m in enumerate(messages) if m.role in SPOKEN_ROLES and said(m.content)]


def said(text: str) -> str:
    """A message's words without its tool-call lines."""
    lines = [line for line in text.splitlines() if not line.startswith("→ ")]
    words = "\n".join(lines).strip()
    return words if _WORDS.search(words) else ""


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(said(text)) if s and s.strip()]


def first_sentence(text: str, limit: int = SENTENCE_CHARS) -> str:
    """The first sentence of a message's words, cut at `limit` characters with "…"."""
    first = next(iter(sentences(text)), "")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def about(messages: list[Message], decisions: bool = True) -> About:
    """The session's question, outcome and (`decisions`) decisions, each a sentence of its own turns."""
    out = About()
    first_user = next((i for i, m in enumerate(messages) if m.role == "user" and said(m.content)), None)
    if first_user is not None:
        out.asked = Turn(first_user + 1, "user", first_sentence(messages[first_user].content))
    last_assistant = next(
        (i for i in reversed(range(len(messages))) if messages[i].role == "assistant" and said(messages[i].content)),
        None,
    )
    if last_assistant is not None and last_assistant != first_user:
        out.outcome = Turn(last_assistant + 1, "assistant", first_sentence(messages[last_assistant].content))
    if not decisions:
        return out  # (an index's line: a session's other turns are not read)
    quoted = {t.text for t in (out.asked, out.outcome) if t is not None}
    for i in spoken(messages):
        for sentence in sentences(messages[i].content):
            if len(out.decisions) >= MAX_DECISIONS:
                return out
            if _DECIDED.search(sentence) and sentence not in quoted:
                cut = sentence if len(sentence) <= SENTENCE_CHARS else sentence[: SENTENCE_CHARS - 1] + "…"
                out.decisions.append(Turn(i + 1, messages[i].role, cut))
                quoted.add(sentence)
    return out


def both_sides(chosen: list[int], messages: list[Message], candidates: list[int]) -> list[int]:
    """Key turns that quote both sides: a side the choice left out gets its first turn among `candidates`."""
    out = list(chosen)
    for role in SPOKEN_ROLES:
        if not any(messages[i].role == role for i in out):
            first = next((i for i in candidates if messages[i].role == role), None)
            if first is not None:
                out.append(first)
    return sorted(out)
