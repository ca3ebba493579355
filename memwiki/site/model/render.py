"""Safe output helpers: escaping, page URLs, and the renderer for untrusted memory text.

Every string that comes from a memory source is untrusted. It reaches a page in one of two ways:
- `esc()` / `md_esc()`: plain text, HTML-escaped (and Markdown-neutralised where Python-Markdown will
  read it), for titles, names, table cells;
- `TextRenderer.html()`: Markdown of a memory rendered by markdown-it-py with raw HTML off and the link,
  image and autolink rules off, so tags, `onerror=` and `javascript:` come out as text. The only links
  it makes are `[[wikilinks]]`, to pages of this site, with hrefs computed here.
The HTML goes into the page as a raw block (`block()`), which Python-Markdown passes through untouched.
"""

from __future__ import annotations

import html
import posixpath
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from markdown_it.token import Token

from memwiki.site.model.concept_index import ConceptIndex, norm, slugify
from memwiki.site.model.wikilinks import WikiLink, make_parser

_MD_SPECIAL = re.compile(r"[\\`*_{}\[\]()<>#+!|~^:&\"'$=-]")
_WS = re.compile(r"\s+")
_SLOT = re.compile("\0(\\d+)\0")
_MD_INERT = tuple((c, f"&#{ord(c)};") for c in "[]`\\{}")


def esc(text: object) -> str:
    """HTML-escape any value (quotes included), and the marks of Markdown links, code and attribute lists (square
    and curly brackets, backquote, backslash) as entities: the text stays text in raw HTML and in a Markdown line
    alike (no link from `[x](javascript:...)`, no attribute from `*x*{: onclick=...}` outside a raw block)."""
    out = html.escape(str(text), quote=True)
    for raw, entity in _MD_INERT:
        if raw in out:
            out = out.replace(raw, entity)
    return out


def md_esc(text: object) -> str:
    """Plain text for a Markdown context: one line, every Markdown/HTML special as a numeric entity."""
    flat = _WS.sub(" ", str(text)).strip()
    return _MD_SPECIAL.sub(lambda m: f"&#{ord(m.group(0))};", flat)


@lru_cache(maxsize=1 << 16)
def page_url(src_uri: str, directory_urls: bool = False) -> str:
    """Where a docs page ends up, relative to the site root (MkDocs' rule)."""
    stem, _ = posixpath.splitext(src_uri)
    if not directory_urls:
        return stem + ".html"
    if posixpath.basename(stem) == "index":
        return posixpath.dirname(stem) + "/" if posixpath.dirname(stem) else ""
    return stem + "/"


def _relative(there: str, base: str) -> str:
    """posixpath.relpath(there or ".", base or ".") for clean relative paths (no `.`, `..` or `//`), as strings."""
    to = there.split("/") if there else []
    start = base.split("/") if base else []
    common = 0
    for a, b in zip(to, start, strict=False):
        if a != b:
            break
        common += 1
    return "/".join([".."] * (len(start) - common) + to[common:]) or "."


def href(from_src: str, to_src: str, anchor: str = "", directory_urls: bool = False) -> str:
    """A relative link from one docs page to another (or to an asset path when `to_src` is not .md)."""
    here = page_url(from_src, directory_urls)
    there = page_url(to_src, directory_urls) if to_src.endswith(".md") else to_src
    base = here.rstrip("/") if here.endswith("/") else posixpath.dirname(here)
    rel = _relative(there.rstrip("/"), base)
    if there.endswith("/") and not rel.endswith("/"):
        rel += "/"
    return rel + (f"#{anchor}" if anchor else "")


def block(inner_html: str, cls: str = "mw-text", tag: str = "div", attrs: str = "") -> str:
    """Raw HTML as a Markdown block: blank lines around it, none inside (so Python-Markdown keeps it whole)."""
    body = "\n".join(line for line in inner_html.splitlines() if line.strip())
    return f'\n<{tag} class="{cls}"{attrs}>\n{body}\n</{tag}>\n'


def _level(token: Token, env: dict) -> int:
    """The rendered level of a heading token: its own, shifted by env["shift"], at most 6."""
    return min(int(token.tag[1]) + env.get("shift", 0), 6)


def _heading_close(token: Token, env: dict) -> str:
    return "</strong></p>\n" if env.get("flat") else f"</h{_level(token, env)}>\n"


def verbatim(text: str) -> str:
    """`text` as escaped preformatted code (a source file's chunk), safe inside a raw HTML block."""
    return _guard_blank_lines(f'<pre class="mw-verbatim"><code>{esc(text)}</code></pre>')


def _repeats_title(tokens: Sequence[Token], title: str) -> bool:
    """True when the tokens open with an ATX `# heading` whose text is `title`."""
    return (
        len(tokens) >= 3
        and tokens[0].type == "heading_open"
        and tokens[0].tag == "h1"
        and tokens[0].markup == "#"
        and norm(tokens[1].content) == norm(title)
    )


def _guard_blank_lines(rendered: str) -> str:
    """Blank lines inside <pre> would end a raw HTML block; keep them as an entity newline."""
    return re.sub(r"\n(?=\n)", "\n&#8203;", rendered)


class TextRenderer:
    """Renders untrusted Markdown to inert HTML, turning wikilinks into links to concept pages."""

    def __init__(self, index: ConceptIndex, directory_urls: bool = False) -> None:
        self.index = index
        self.directory_urls = directory_urls
        md = make_parser()
        # markdown-it binds render rules to its renderer, so they get it as first argument
        md.add_render_rule(
            "wikilink", lambda _r, tokens, idx, options, env: self._render_wikilink(tokens, idx, options, env)
        )
        md.add_render_rule("heading_open", lambda _r, tokens, idx, options, env: self._heading_open(tokens, idx, env))
        md.add_render_rule("heading_close", lambda _r, tokens, idx, options, env: _heading_close(tokens[idx], env))
        self.md = md

    def link(self, from_src: str, link: WikiLink) -> str:
        """An `<a>` for one wikilink as seen from page `from_src`; wanted concepts get class `mw-wanted`."""
        label = esc(link.text)
        if not link.target:  # [[#heading]]: a link inside the same page
            return f'<a class="mw-wikilink" href="#{esc(slugify(link.heading))}">{label}</a>'
        concept = self.index.link_target(link)
        assert concept is not None
        anchor = ""
        if link.heading and not concept.wanted:
            anchor = concept.anchors.get(norm(link.heading)) or slugify(link.heading)
        url = href(from_src, concept.src_uri, anchor, self.directory_urls)
        cls = "mw-wikilink mw-wanted" if concept.wanted else "mw-wikilink"
        note = ' title="no page yet: a stub lists where it is wanted"' if concept.wanted else ""
        return f'<a class="{cls}" href="{esc(url)}"{note}>{label}</a>'

    def _render_wikilink(self, tokens: Sequence[Token], idx: int, options: Any, env: dict) -> str:
        link = tokens[idx].meta["link"]
        slots = env.get("slots")
        if slots is None:
            return self.link(env.get("from", ""), link)
        slots.append([link.target, link.heading, link.label])  # filled per page by _fill
        return f"\0{len(slots) - 1}\0"

    def _fill(self, cached: list, from_src: str) -> str:
        """A cached [html with a NUL-marked slot per wikilink, the links] as seen from page `from_src`.

        markdown-it turns NUL in the text into U+FFFD, so only slots can hold one."""
        template, links = cached
        if not links:
            return template
        return _SLOT.sub(lambda m: self.link(from_src, WikiLink(*links[int(m.group(1))])), template)

    def _heading_open(self, tokens: Sequence[Token], idx: int, env: dict) -> str:
        if env.get("flat"):
            return f'<p class="mw-h mw-h{_level(tokens[idx], env)}"><strong>'
        anchor = slugify(tokens[idx + 1].content)
        used = env.setdefault("anchors", {})
        if anchor in used:
            used[anchor] += 1
            anchor = f"{anchor}_{used[anchor]}"
        else:
            used[anchor] = 0
        return f'<h{_level(tokens[idx], env)} id="{esc(anchor)}">'

    def html(self, text: str, from_src: str, *, shift: int = 0, skip_title: str = "", flat: bool = False) -> str:
        """Block-level HTML for a memory text shown on page `from_src` (rendered once per text, see TextCache).

        `skip_title`: leave out a leading `# heading` that repeats this title (the page shows it already).
        `flat`: headings become bold lines without anchors (a text quoted inside a card, not a part of the page)."""
        texts = self.index.texts

        def compute() -> list:
            tokens = texts.parse(text)
            if skip_title and _repeats_title(tokens, skip_title):
                tokens = tokens[3:]
            env: dict = {"shift": shift, "slots": [], "flat": flat}
            return [_guard_blank_lines(self.md.renderer.render(tokens, self.md.options, env)), env["slots"]]

        kind = f"html:{shift}:{norm(skip_title)}" if skip_title else f"html:{shift}"
        return self._fill(texts.derived(text, kind + (":flat" if flat else ""), compute, last=True), from_src)

    def quote(self, before: str, marked: str, after: str, from_src: str) -> str:
        """A sentence quoted around a name it holds, the name marked: the sentence's `[[links]]` rendered as
        everywhere else (`inline`), the name escaped in `<mark>`."""
        return f"{self.inline(before, from_src)}<mark>{esc(marked)}</mark>{self.inline(after, from_src)}"

    def inline(self, text: str, from_src: str) -> str:
        """Inline HTML (no paragraph) for a short text such as a backlink sentence."""
        flat = _WS.sub(" ", text)

        def compute() -> list:
            env: dict = {"slots": []}
            return [self.md.renderInline(flat, env), env["slots"]]

        return self._fill(self.index.texts.derived(flat, "inline", compute), from_src)
