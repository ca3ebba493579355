"""What page builders produce: Markdown pages and files for the site. Nothing here depends on MkDocs: the plugin
turns these into MkDocs files, so another engine could host the same builders."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GeneratedPage:
    """A Markdown page for the site. `src_uri` is its path under docs_dir, e.g. "concepts/chroma.md"."""

    src_uri: str
    title: str
    markdown: str
    section: str = ""  # section index it is listed on ("concepts", "sessions", ...); "" = top level
    in_nav: bool = False  # only a few pages go into the navigation; the rest hang off section indexes
    meta: dict[str, Any] = field(default_factory=dict)  # "order": its place in the navigation
    # changes when the page's content changes (used to skip unchanged pages on rebuild); made from the title and
    # the Markdown unless given
    fingerprint: str = ""
    # kept from the last build without its Markdown being made again: its final HTML is in the page cache (see
    # speed.memo), so `markdown` is empty and the page must not be rendered
    kept: bool = False

    def __post_init__(self) -> None:
        if not self.fingerprint:
            object.__setattr__(self, "fingerprint", hashlib.sha1(f"{self.title}\0{self.markdown}".encode()).hexdigest())


@dataclass(frozen=True)
class GeneratedAsset:
    """A file copied as it is into the built site, e.g. "graph/global.html" or "search/vectors.bin"."""

    dest_uri: str
    content: bytes
    sha1: str = ""  # hex SHA-1 of `content`, when the builder has it at hand (made once per asset otherwise)
    numbers: bool = False  # only numbers (the search's int8 vectors): no text of a memory, the final scan skips it

    @property
    def digest(self) -> str:
        return self.sha1 or hashlib.sha1(self.content).hexdigest()
