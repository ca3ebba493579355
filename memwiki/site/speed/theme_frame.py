"""Generated pages without a template render each: the theme's page, rendered once per folder, with holes.

Most of a large site's pages are generated pages outside the navigation, and MkDocs spent most of its time
on each one building a new Markdown converter, rendering the theme's Jinja templates, and the search plugin
parsing the HTML back. For such pages, all of the theme's output is the same within one folder but for the
title, the table of contents, the "skip to content" anchor and the content. So the plugin gives MkDocs one
*probe* page per folder, with marker strings in those places; `ThemeFrame.parse` cuts the rendered probe into
literal parts and holes, and `ThemeFrame.fill` makes each page by joining the parts with its own values.
`FastPages` converts a page's Markdown with one reused converter set up as MkDocs sets up its own (same
extensions and options), so headings, anchors and the TOC come out the same. tests/test_fast_pages.py builds
the demo both ways and compares every page.

The table of contents follows mkdocs-material's `partials/toc.html` and `toc-item.html`: this module supports
the Material theme only (the plugin uses it only there).
"""

from __future__ import annotations

import html
import posixpath
import re
from dataclasses import dataclass
from typing import Any

import markdown
from mkdocs.structure.toc import AnchorLink, TableOfContents, get_toc
from mkdocs.utils import meta as frontmatter

from memwiki.errors import MemwikiError
from memwiki.site.speed.raw_blocks import join, split

_HOLE = re.compile("\0([A-Z])\0")
_TAGS = re.compile(r"<[^>]*>")
_WS = re.compile(r"\s+")


def probe_name(nonce: str) -> str:
    return f"mwframe-{nonce}"


def probe_markdown(nonce: str) -> str:
    """The probe page: markers for the title (also the first heading's id), one TOC entry and the content."""
    return (
        f"---\ntitle: mwtitle{nonce}\nsearch:\n  exclude: true\n---\n\n"
        f"# mwtitle{nonce}\n\n## mwhead{nonce}\n\nmwbody{nonce}\n"
    )


def _cut(text: str, start: int, end: int, hole: str) -> str:
    return text[:start] + f"\0{hole}\0" + text[end:]


def toc_items(toc: list[AnchorLink]) -> str:
    """mkdocs-material's toc-item.html for a list of TOC entries (titles are HTML from Python-Markdown)."""
    out = []
    for item in toc:
        out.append(
            f'<li class="md-nav__item">\n<a href="{item.url}" class="md-nav__link">\n'
            f'<span class="md-ellipsis">\n{item.title}\n</span>\n</a>\n'
        )
        if item.children:
            label = html.escape(_WS.sub(" ", html.unescape(_TAGS.sub("", item.title))).strip())
            out.append(
                f'<nav class="md-nav" aria-label="{label}">\n<ul class="md-nav__list">\n'
                f"{toc_items(item.children)}</ul>\n</nav>\n"
            )
        out.append("</li>\n")
    return "".join(out)


@dataclass(frozen=True)
class ThemeFrame:
    """The theme's HTML for one folder of the site: literal parts and holes (T title, S skip link, N TOC,
    C content, U the page's own name in URLs, e.g. a canonical link)."""

    parts: tuple[str, ...]
    toc_label: str  # the TOC's heading (<label ...>...</label>), as the theme wrote it
    skip_text: str = "Skip to content"  # the "skip to content" link's text, in the site's language

    @classmethod
    def parse(cls, page_html: str, nonce: str) -> ThemeFrame:
        """Cut the rendered probe page into parts; a clear error when the theme did not write what we expect."""
        title, body, name = f"mwtitle{nonce}", f"mwbody{nonce}", probe_name(nonce)
        text = page_html
        try:
            end = text.index(f"<p>{body}</p>") + len(f"<p>{body}</p>")
            start = text.rindex("<h1", 0, end)
            text = _cut(text, start, end, "C")
            nav = text.index('<nav class="md-nav md-nav--secondary"')
            toc_start = text.index(">", nav) + 1
            toc_end = text.index("</nav>", toc_start)
            label = re.search(r'<label class="md-nav__title" for="__toc">.*?</label>', text[toc_start:toc_end], re.S)
            if label is None:
                raise ValueError("no TOC label")
            text = _cut(text, toc_start, toc_end, "N")
        except ValueError as exc:
            raise MemwikiError(
                f"the theme's page layout is not the one fast_pages knows ({exc}); set `fast_pages: false`"
            ) from None
        skip = re.search(rf'<a href="#{title}" class="md-skip">(.*?)</a>', text, re.S)
        skip_text = skip.group(1).strip() if skip is not None else ""
        if skip is not None:
            text = text[: skip.start()] + "\0S\0" + text[skip.end() :]
        text = text.replace(title, "\0T\0").replace(name, "\0U\0")
        return cls(tuple(_HOLE.split(text)), label.group(0), skip_text)

    def fill(self, *, title: str, content: str, toc: TableOfContents, name: str) -> str:
        """One page: `title` plain text, `content` its HTML, `toc` its TOC, `name` its file stem in URLs."""
        items = list(toc)
        if items and items[0].level == 1:
            items = items[0].children
        nav = ""
        if items:
            nav = (
                f'{self.toc_label}\n<ul class="md-nav__list" data-md-component="toc" data-md-scrollfix>\n'
                f"{toc_items(items)}</ul>\n"
            )
        first = next(iter(toc), None)
        skip = f'<a href="#{first.id}" class="md-skip">\n{self.skip_text}\n</a>' if first is not None else ""
        # quotes too: a theme may print the title inside an attribute (e.g. a feedback link)
        values = {"T": html.escape(title), "C": content, "N": nav, "S": skip, "U": name}
        parts = self.parts
        return "".join(values[p] if i % 2 else p for i, p in enumerate(parts))


@dataclass
class Converted:
    """A generated page converted to HTML (what MkDocs' Page.render would give)."""

    content: str
    toc: TableOfContents
    meta: dict


class FastPages:
    """Converts generated pages' Markdown with one reused Python-Markdown instance, set up as MkDocs does."""

    def __init__(self, extensions: list[Any], extension_configs: dict[str, Any] | None, nonce: str) -> None:
        """`extensions`, `extension_configs`: MkDocs' `markdown_extensions` and `mdx_configs`."""
        self.nonce = nonce
        self.md = markdown.Markdown(extensions=extensions, extension_configs=extension_configs or {})

    def convert(self, page_markdown: str) -> Converted:
        body, meta = frontmatter.get_data(page_markdown)
        stub, blocks = split(body, self.nonce)  # see memwiki.site.speed.raw_blocks
        self.md.reset()
        content = join(self.md.convert(stub), self.nonce, blocks)
        return Converted(content, get_toc(getattr(self.md, "toc_tokens", [])), meta)


def frame_folder(src_uri: str) -> str:
    """The folder whose frame a page uses (its Markdown file's folder)."""
    return posixpath.dirname(src_uri)


def framed_ok(src_uri: str) -> bool:
    """Pages whose output sits where a probe in the same folder sits (not an index page)."""
    return posixpath.basename(src_uri) != "index.md"
