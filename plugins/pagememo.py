"""Generated pages kept across builds, keyed by a digest of what each was made from.

On a large store most pages' inputs do not change between two builds (one memory changed: a handful of
concept pages get a new backlink), but making every page's Markdown again was most of a rebuild. A builder
names each page's inputs in a key (`PageMemo.page(src_uri, key, make)`); when the key is the one saved with
the page, the saved page is used and `make` is not called. Keys also carry the version of the code that makes
pages (plugins.cachefile), so a change to the builders remakes every page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from plugins import cachefile
from plugins.pages import GeneratedPage


def key_of(*parts: object) -> str:
    """A digest of a page's inputs (their repr: strings, numbers, tuples and records of them)."""
    return hashlib.sha1(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _plain(page: GeneratedPage) -> tuple:
    return (page.src_uri, page.title, page.markdown, page.section, page.in_nav, page.meta)


class PageMemo:
    """The pages one builder made in the last build, in `path` (None: this build only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._old: dict[str, tuple[str, GeneratedPage]] = {}
        saved = cachefile.load(path, cachefile.version("pagememo")) if path is not None else None
        if isinstance(saved, dict):
            try:
                self._old = {uri: (key, GeneratedPage(*page)) for uri, (key, page) in saved.items()}
            except (TypeError, ValueError):
                self._old = {}
        self._new: dict[str, tuple[str, GeneratedPage]] = {}
        self.made = 0  # pages made in this build (the others came from the memo)

    def page(self, src_uri: str, key: str, make: Callable[[], GeneratedPage]) -> GeneratedPage:
        old = self._old.get(src_uri)
        if old is not None and old[0] == key:
            self._new[src_uri] = old
            return old[1]
        page = make()
        self.made += 1
        self._new[src_uri] = (key, page)
        return page

    def save(self) -> None:
        """Keep this build's pages (written only when one was made or dropped)."""
        if self.path is None or (not self.made and len(self._new) == len(self._old)):
            return
        plain = {uri: (key, _plain(page)) for uri, (key, page) in self._new.items()}
        cachefile.dump(self.path, cachefile.version("pagememo"), plain)
