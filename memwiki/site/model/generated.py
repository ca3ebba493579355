"""What page builders produce: Markdown pages and files for the site. Nothing here depends on MkDocs: the plugin
turns these into MkDocs files, so another engine could host the same builders."""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PACK_OVER = 4096  # characters of Markdown past which a page holds it compressed, until it is written


@dataclass(frozen=True, init=False)
class GeneratedPage:
    """A Markdown page for the site. `src_uri` is its path under docs_dir, e.g. "concepts/chroma.md".

    A long page's Markdown is held compressed (zlib's fastest level): a cold build holds every page it made until
    they are written, and a 100k store's listings and concept pages are 400 MB of HTML in Markdown. (`markdown` is
    an argument, not a field: a changed page is made anew, not `dataclasses.replace`d.)"""

    src_uri: str
    title: str
    section: str  # section index it is listed on ("concepts", "sessions", ...); "" = top level
    in_nav: bool  # only a few pages go into the navigation; the rest hang off section indexes
    meta: dict[str, Any]  # "order": its place in the navigation
    # changes when the page's content changes (used to skip unchanged pages on rebuild); made from the title and
    # the Markdown unless given
    fingerprint: str
    # kept from the last build without its Markdown being made again: its final HTML is in the page cache (see
    # speed.memo), so `markdown` is empty and the page must not be rendered
    kept: bool
    _held: str | bytes = field(repr=False)  # the Markdown, or it compressed (PACK_OVER)

    def __init__(
        self,
        src_uri: str,
        title: str,
        markdown: str,
        section: str = "",
        in_nav: bool = False,
        meta: dict[str, Any] | None = None,
        fingerprint: str = "",
        kept: bool = False,
    ) -> None:
        fingerprint = fingerprint or hashlib.sha1(f"{title}\0{markdown}".encode()).hexdigest()
        held = zlib.compress(markdown.encode("utf-8", "surrogatepass"), 1) if len(markdown) > PACK_OVER else markdown
        fields = dict(src_uri=src_uri, title=title, section=section, in_nav=in_nav, meta=meta or {})
        for name, value in {**fields, "fingerprint": fingerprint, "kept": kept, "_held": held}.items():
            object.__setattr__(self, name, value)

    @property
    def markdown(self) -> str:
        held = self._held
        return held if isinstance(held, str) else zlib.decompress(held).decode("utf-8", "surrogatepass")


@dataclass(frozen=True, init=False)
class GeneratedAsset:
    """A file copied as it is into the built site, e.g. "graph/global.html" or "search/vectors.bin".

    `content` may be given as a function that makes the bytes, with a `content_key`: it is called only where the
    bytes are needed (the page cache keeps assets by that key, so a rebuild makes only the files it does not hold;
    the search's vector scripts were 80 MB made anew in each 100k rebuild)."""

    dest_uri: str
    numbers: bool  # only numbers (the search's int8 vectors): no text of a memory, the final scan skips it
    # a name of the content (the page cache keeps assets by it) when the builder has one at hand: a hash of what
    # the content is made from, with what makes it (hashing the search's 120 MB of vectors again was 0.3 s)
    content_key: str
    _content: bytes | Callable[[], bytes] = field(repr=False)

    def __init__(
        self, dest_uri: str, content: bytes | Callable[[], bytes], numbers: bool = False, content_key: str = ""
    ) -> None:
        if callable(content) and not content_key:
            raise ValueError(f"{dest_uri}: an asset made on demand needs a content_key")
        for name, value in {"dest_uri": dest_uri, "numbers": numbers, "content_key": content_key}.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_content", content)

    @property
    def content(self) -> bytes:
        """The bytes (made on each call when given as a function: the caller keeps them while it needs them)."""
        made = self._content
        return made() if callable(made) else made

    @property
    def digest(self) -> str:
        return self.content_key or hashlib.sha1(self.content).hexdigest()
