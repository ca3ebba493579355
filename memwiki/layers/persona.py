"""L0 persona: SOUL.md, capped (3,000 characters by default).

Over the cap, a write is refused (CapacityError); a read warns, keeps the whole text in the record and gives the
agent (`injected`) what hermes-agent gives it of a long context file: 70% of the cap from the head and
20% from the tail, with a marker in between. The record keeps the whole text so that the privacy gate reads it
as written: a secret across the cut is seen whole.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from memwiki.common.textio import atomic_write_text, file_lock, read_text
from memwiki.common.times import mtime_iso
from memwiki.errors import CapacityError, InputFormatError
from memwiki.source import Persona
from memwiki.store.layout import PERSONA_FILE

HEAD_RATIO = 0.7
TAIL_RATIO = 0.2


class PersonaTruncatedWarning(UserWarning):
    """SOUL.md is over its cap; the injected text was cut."""


def head_tail(text: str, cap: int) -> tuple[str, str]:
    """hermes's cut of an over-long text: its first 70% and last 20% of `cap` characters."""
    head, tail = int(cap * HEAD_RATIO), int(cap * TAIL_RATIO)
    return text[:head], text[-tail:] if tail else ""


def truncate(text: str, cap: int, name: str = PERSONA_FILE) -> str:
    """hermes's head/tail cut: the text unchanged if it fits, else head + marker + tail."""
    if len(text) <= cap:
        return text
    head, tail = head_tail(text, cap)
    marker = (
        f"\n\n[...truncated {name}: kept {len(head)}+{len(tail)} of {len(text)} chars. "
        "Use file tools to read the full file.]\n\n"
    )
    return head + marker + tail


TEMPLATE = """<!--
SOUL.md is who the agent is (layer L0). memwiki gives it to the agent at the start of every turn, so keep it
short (3,000 characters at most) and about how the agent is and works, not about facts: facts go into hot
memory (`memwiki remember "..."`) and the other layers. Comments like this one are notes for whoever edits
the file: the agent is not given them. Write the persona below, for example:

You are a careful assistant. Answer in the language you are asked in (中文或英文), say when you are unsure,
and look in your memory before you guess.
-->
"""
_COMMENT = re.compile(r"<!--(?:(?!-->)[\s\S])*-->\n?")


def injected(persona: Persona) -> str:
    """What the agent reads each turn: the persona's text without HTML comments (notes to whoever edits the file,
    as `TEMPLATE` has), cut hermes-style when it is over the cap."""
    text = _COMMENT.sub("", persona.text) if "<!--" in persona.text else persona.text
    return truncate(text, persona.cap, Path(persona.path).name or PERSONA_FILE)


def read_persona(path: Path, cap: int) -> Persona:
    """Read SOUL.md. Missing → an empty Persona; over the cap → a warning and the text cut hermes-style."""
    path = Path(path)
    if not path.exists():
        return Persona(text="", cap=cap, chars=0, path=str(path))
    text = read_text(path)
    truncated = len(text) > cap
    if truncated:
        warnings.warn(
            f"{path}: {len(text):,} chars, over the {cap:,}-char persona cap; injecting head and tail only",
            PersonaTruncatedWarning,
            stacklevel=2,
        )
    return Persona(
        text=text,
        cap=cap,
        chars=len(text),
        truncated=truncated,
        path=str(path),
        modified=mtime_iso(path),
    )


def write_persona(path: Path, text: str, cap: int) -> None:
    """Write SOUL.md atomically under `SOUL.md.lock`; over the cap → CapacityError, nothing written."""
    path = Path(path)
    if len(text) > cap:
        raise CapacityError(
            f"{path}: persona is {len(text):,} chars, over the {cap:,}-char cap by {len(text) - cap:,}; "
            f"nothing written. Shorten it."
        )
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise InputFormatError(f"{path}: persona text holds a NUL byte at line {line}; nothing written")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputFormatError(f"{path}: persona text cannot be encoded as UTF-8 ({exc.reason})") from None
    with file_lock(path.with_name(path.name + ".lock")):
        atomic_write_text(path, text)
