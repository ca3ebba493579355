"""Generated pages kept across builds, keyed by a digest of what each was made from.

On a large store most pages' inputs do not change between two builds (one memory changed: a handful of concept pages get
a new backlink): a page whose inputs did not change need not be made again. A builder names what each page shows
(`PageMemo.page(src_uri, inputs, make)`); its key is a digest of those inputs and of what every page of the build shares
(settings, how names resolve). When the key is the one saved with the page and the site still holds that page's final
HTML (`reusable`, the page cache's word), the page comes back kept: its title, metadata and fingerprint, without
Markdown, and `make` is not called. Otherwise the page is made. Only what a kept page needs is saved, never the Markdown
(a kept page's Markdown is never read). Keys also carry the version of the code that makes pages (speed.cache_file), so
a change to the builders remakes every page. With `check` (tests: $MEMWIKI_CHECK_MEMOS) every page is made anyway and
one that differs from what its key promised fails the build."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import marshal
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memwiki.site.model.generated import GeneratedPage
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


@functools.cache
def _getter(cls: type) -> Callable[[Any], tuple]:
    getter = operator.attrgetter(*(f.name for f in dataclasses.fields(cls)))
    return getter if len(dataclasses.fields(cls)) > 1 else lambda r: (getter(r),)


def values_of(record: object) -> tuple:
    """A record's (dataclass') field values as a tuple: what key_of digests by marshal, where the record itself
    would be digested by its repr (three times as slow: a 100k store's listings hold every memory)."""
    return _getter(type(record))(record)


def memory_token(fields: tuple) -> str:
    """A memory's token: a digest of all its fields (`values_of`), the same for the same memory in any build. A
    page memo keyed by the tokens of the memories a page shows hashes each memory once, when it is written
    (speed.layer_cache keeps them), not in every build."""
    return key_of(fields)[:20]


class StaleMemo(AssertionError):
    """A memo's key matched but the page it stands for changed: the key misses one of the page's inputs."""


class PageMemo:
    """What one builder made in the last build, in `path` (None: this build only). `reusable`: see above (None:
    every page is made). `shared`: part of every key (the build's settings, how names resolve). `check`: make
    every page anyway and raise StaleMemo when a page whose key matched came out different."""

    def __init__(
        self, path: Path | None, reusable: Reusable | None = None, shared: str = "", check: bool = False
    ) -> None:
        self.path = path
        self.reusable = reusable
        self.shared = shared
        self.check = check
        saved = cache_file.load(path, cache_file.version("pagememo")) if path is not None else None
        # src_uri -> (key, fingerprint, title, section, in_nav, meta)
        self._old: dict[str, tuple] = saved if isinstance(saved, dict) else {}
        self._new: dict[str, tuple] = {}
        self.made = 0  # pages made in this build
        self.kept = 0  # pages that came back from the memo without being made

    @staticmethod
    def saved_at(path: Path) -> bool:
        """Whether this code saved a memo at `path`."""
        return isinstance(cache_file.load(path, cache_file.version("pagememo")), dict)

    def page(self, src_uri: str, inputs: object, make: Callable[[], GeneratedPage]) -> GeneratedPage:
        """The page at `src_uri`, shown from `inputs` (everything it shows besides the shared part of the key):
        made by `make()`, or kept from the last build when its key is the saved one and its HTML is at hand."""
        key = key_of(self.shared, inputs)
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
            if self.check and make().fingerprint != fingerprint:
                raise StaleMemo(f"{src_uri}: its memo key matched, but the page changed: the key misses an input")
            self.kept += 1
            return GeneratedPage(src_uri, title, "", section, in_nav, meta, fingerprint=fingerprint, kept=True)
        page = make()
        self.made += 1
        self._new[src_uri] = (key, page.fingerprint, page.title, page.section, page.in_nav, page.meta)
        return page

    def save(self) -> None:
        """Keep this build's keys (written only when a page was made or dropped)."""
        if self.path is None or (not self.made and len(self._new) == len(self._old)):
            return
        cache_file.dump(self.path, cache_file.version("pagememo"), self._new)
