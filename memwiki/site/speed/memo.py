"""Generated pages kept across builds, keyed by a digest of what each was made from.

On a large store most pages' inputs do not change between two builds (one memory changed: a handful of
concept pages get a new backlink), but making every page's Markdown again was most of a rebuild. A builder
names each page's inputs in a key (`PageMemo.page(src_uri, key, make)`). When the key is the one saved with
the page and the site still holds that page's final HTML (`reusable`, the page cache's word), the page comes
back hollow: its title, metadata and fingerprint, without Markdown, and `make` is not called. Otherwise the
page is made. Only what a hollow page needs is saved, never the Markdown: loading 10k pages' Markdown to
use none of it was a large part of a rebuild. Keys also carry the version of the code that makes pages
(memwiki.site.speed.cache_file), so a change to the builders remakes every page.
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Callable
from pathlib import Path

from memwiki.site.builder_io import GeneratedPage
from memwiki.site.speed import cache_file

Reusable = Callable[[str, str], bool]  # (src_uri, fingerprint) -> the final HTML of that page is at hand


def key_of(*parts: object) -> str:
    """A digest of a page's inputs: strings, numbers, tuples, lists and dicts of them (marshal's version 2,
    which writes equal values as equal bytes: no references, no interning; twice as fast as repr), or records
    (by their repr)."""
    try:
        data = b"m" + marshal.dumps(parts, 2)
    except ValueError:  # a record (dataclass) among them
        data = b"r" + repr(parts).encode("utf-8", "surrogatepass")
    return hashlib.sha1(data).hexdigest()


class PageMemo:
    """What one builder made in the last build, in `path` (None: this build only); `reusable`: see above
    (None: every page is made)."""

    def __init__(self, path: Path | None, reusable: Reusable | None = None) -> None:
        self.path = path
        self.reusable = reusable
        saved = cache_file.load(path, cache_file.version("pagememo")) if path is not None else None
        # src_uri -> (key, fingerprint, title, section, in_nav, meta)
        self._old: dict[str, tuple] = saved if isinstance(saved, dict) else {}
        self._new: dict[str, tuple] = {}
        self.made = 0  # pages made in this build (the others came back hollow)

    def page(self, src_uri: str, key: str, make: Callable[[], GeneratedPage]) -> GeneratedPage:
        old = self._old.get(src_uri)
        if (
            old is not None
            and len(old) == 6
            and old[0] == key
            and not old[4]  # pages in the navigation are always rendered
            and self.reusable is not None
            and self.reusable(src_uri, old[1])
        ):
            self._new[src_uri] = old
            _, fingerprint, title, section, in_nav, meta = old
            return GeneratedPage(src_uri, title, "", section, in_nav, meta, fingerprint=fingerprint, hollow=True)
        page = make()
        self.made += 1
        self._new[src_uri] = (key, page.fingerprint, page.title, page.section, page.in_nav, page.meta)
        return page

    def save(self) -> None:
        """Keep this build's keys (written only when a page was made or dropped)."""
        if self.path is None or (not self.made and len(self._new) == len(self._old)):
            return
        cache_file.dump(self.path, cache_file.version("pagememo"), self._new)
