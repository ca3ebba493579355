"""`[[wikilinks]]`: a markdown-it-py inline rule, so a `[[x]]` inside code stays code.

Forms: `[[name]]`, `[[name|label]]`, `[[name#heading]]`, `[[name#heading|label]]`. The rule only makes
`wikilink` tokens; what they link to is decided by whoever renders them (see `memwiki.site.model.render`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

_MAX_TARGET = 200
MIN_SENTENCE = 40  # characters: a shorter linking sentence is shown with the one before it
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s+|(?<=[。！？；])")


@dataclass(frozen=True)
class WikiLink:
    """One parsed link: the concept named, an optional heading and the text shown."""

    target: str
    heading: str = ""
    label: str = ""

    @property
    def text(self) -> str:
        """What a reader sees: the label, else the target (with its heading)."""
        if self.label:
            return self.label
        return f"{self.target} › {self.heading}" if self.heading and self.target else self.target or self.heading


_RAW_LINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")


def as_words(text: str) -> str:
    """`text` with each `[[link]]` as the words a reader sees (for a title or an attribute, where no link fits)."""
    return _RAW_LINK.sub(lambda m: parse_link(m.group(1)).text, text) if "[[" in text else text


def parse_link(raw: str) -> WikiLink:
    """Split the inside of `[[...]]` into target, heading and label."""
    body, _, label = raw.partition("|")
    target, _, heading = body.partition("#")
    return WikiLink(target.strip(), heading.strip(), label.strip())


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("[[", pos):
        return False
    end = src.find("]]", pos + 2)
    if end == -1:
        return False
    raw = src[pos + 2 : end]
    if not raw.strip() or "\n" in raw or "[" in raw or "]" in raw or len(raw) > _MAX_TARGET:
        return False
    link = parse_link(raw)
    if not link.target and not link.heading:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.content = raw
        token.meta = {"link": link}
    state.pos = end + 2
    return True


def wikilinks_plugin(md: MarkdownIt) -> None:
    """Register the `wikilink` inline rule (before links, so `[[x]]` is not read as a link)."""
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)


def make_parser() -> MarkdownIt:
    """The markdown-it setup for memory text: CommonMark with tables and strikethrough, raw HTML, links,
    images and autolinks off (memory text makes no link but its wikilinks)."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"]).disable(["link", "image", "autolink"])
    md.use(wikilinks_plugin)
    md.validateLink = lambda url: False
    return md


@lru_cache(maxsize=1)
def scanner() -> MarkdownIt:
    """The shared parser (tokenising only; see `make_parser`)."""
    return make_parser()


@dataclass(frozen=True)
class Found:
    """A wikilink found in a text, with the sentence around it (raw Markdown of that sentence)."""

    link: WikiLink
    sentence: str


def _sentence(content: str, raw: str) -> str:
    """The sentence of an inline block that holds `[[raw]]` (the whole block if it is short)."""
    needle = f"[[{raw}]]"
    parts = [p.strip() for p in _SENTENCE_END.split(content) if p and p.strip()]
    for i, part in enumerate(parts):
        if needle in part:
            start = i
            while start > 0 and len(" ".join(parts[start : i + 1])) < MIN_SENTENCE:  # "e.g. [[x]]." needs context
                start -= 1
            return "".join(
                p if j == start or parts[j - 1][-1] in "。！？；" else " " + p
                for j, p in enumerate(parts)
                if start <= j <= i
            )
    return content.strip()


def iter_wikilink_tokens(tokens: list[Token]) -> Iterator[tuple[Token, Token]]:
    """(inline token, wikilink child) pairs of a token stream, in order."""
    for token in tokens:
        if token.type == "inline" and token.children:
            for child in token.children:
                if child.type == "wikilink":
                    yield token, child


def links_in(tokens: list[Token]) -> list[Found]:
    """Every wikilink of a token stream, each with its sentence."""
    return [
        Found(child.meta["link"], _sentence(inline.content, child.content))
        for inline, child in iter_wikilink_tokens(tokens)
    ]


class TextMemo(Protocol):
    """What `link_rows` needs of a memo of texts: their tokens, and values derived from them
    (memwiki.site.speed.text_cache.TextCache is one; it parses with `scanner`, so it depends on this module)."""

    def parse(self, text: str) -> list[Token]: ...
    def derived(self, text: str, kind: str, compute: Callable[[], Any], *, last: bool = False) -> Any: ...  # noqa: ANN401
    def get(self, text: str, kind: str) -> Any: ...  # noqa: ANN401


def link_rows(text: str, texts: TextMemo) -> list[list[str]]:
    """`find_links` as plain rows [target, heading, label, sentence], memoised in `texts` (shared: never change
    them)."""
    if "[[" not in text:
        return []

    def compute() -> list[list[str]]:
        return [[f.link.target, f.link.heading, f.link.label, f.sentence] for f in links_in(texts.parse(text))]

    # its tokens go with this use (a 100k store's texts held 340 MB of them until each was rendered, most builds
    # render none of them: a text rendered later is parsed again)
    return texts.derived(text, "links", compute, last=True)


def link_rows_each(texts: list[str], memo: TextMemo) -> list[list[list[str]]]:
    """`link_rows` of each text, those already derived taken as they are (a scan of every text of the layers: the
    closure `link_rows` makes for each was a third of the scan's time at 100k memories)."""
    out: list[list[list[str]]] = []
    for text in texts:
        rows = memo.get(text, "links") if "[[" in text else []
        out.append(rows if rows is not None else link_rows(text, memo))
    return out


def find_links(text: str, texts: TextMemo | None = None) -> list[Found]:
    """Every wikilink of a Markdown text outside code, each with its sentence (`texts`: memoised there)."""
    if "[[" not in text:
        return []
    if texts is None:
        return links_in(scanner().parse(text))
    return [Found(WikiLink(t, h, lab), sentence) for t, h, lab, sentence in link_rows(text, texts)]
