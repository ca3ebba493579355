"""What page builders produce and what they are given. Builders depend on this module, the records of
`memwiki.source` and small helpers of this package, not on MkDocs: the plugin turns their output into
MkDocs files, so another engine could host the same builders later."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from memwiki.source import MemorySource


@runtime_checkable
class GatedSource(MemorySource, Protocol):
    """A source seen through the privacy gate (memwiki.site.privacy): the only kind a builder is given."""

    @property
    def profile(self) -> str:
        """The profile, "public" or "private" (see memwiki.site.privacy)."""
        ...

    def withheld(self) -> dict[str, dict[str, int]]:
        """What the gate withheld, per layer and kind: counts, never values."""
        ...


@dataclass(frozen=True)
class GeneratedPage:
    """A Markdown page for the site. `src_uri` is its path under docs_dir, e.g. "concepts/chroma.md"."""

    src_uri: str
    title: str
    markdown: str
    section: str = ""  # section index it is listed on ("concepts", "sessions", ...); "" = top level
    in_nav: bool = False  # only a few pages go into the navigation; the rest hang off section indexes
    meta: dict[str, Any] = field(default_factory=dict)  # "lexical": False keeps it out of the theme's text search
    # changes when the page's content changes (used to skip unchanged pages on rebuild); made from the title and
    # the Markdown unless given
    fingerprint: str = ""
    # a page kept from the last build whose Markdown was not made again: its final HTML is in the page cache
    # (see memwiki.site.speed.memo), so `markdown` is empty and the page must not be rendered
    hollow: bool = False

    def __post_init__(self) -> None:
        if not self.fingerprint:
            object.__setattr__(self, "fingerprint", hashlib.sha1(f"{self.title}\0{self.markdown}".encode()).hexdigest())


@dataclass(frozen=True)
class GeneratedAsset:
    """A file copied as it is into the built site, e.g. "graph/global.html" or "search/vectors.bin"."""

    dest_uri: str
    content: bytes
    sha1: str = ""  # hex SHA-1 of `content`, when the builder has it at hand (made once per asset otherwise)

    @property
    def digest(self) -> str:
        return self.sha1 or hashlib.sha1(self.content).hexdigest()


@dataclass
class BuildContext:
    """What every builder is given: the source through the privacy gate, and the plugin's options. A source
    that has not been through the gate is put through it with the default (public) rules here, so no builder
    ever reads around it."""

    source: GatedSource
    options: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # things a person should see on the audit page

    def __post_init__(self) -> None:
        if not isinstance(self.source, GatedSource):
            from memwiki.site.privacy import PrivacyFilter

            self.source = PrivacyFilter(self.source)
