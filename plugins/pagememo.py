"""Generated pages kept across builds, keyed by a digest of what each was made from.

On a large store most pages' inputs do not change between two builds (one memory changed: a handful of
concept pages get a new backlink), but making every page's Markdown again was most of a rebuild. A builder
names each page's inputs in a key (`PageMemo.page(src_uri, key, make)`); when the key is the one saved with
the page, the saved page is used and `make` is not called. Keys also carry the version of the code that makes
pages (`code_digest`), so a change to the builders remakes every page.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from plugins.pages import GeneratedPage

FORMAT = 1
_PACKAGES = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "memory")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of the plugin's and the store's code (what builders run)."""
    digest = hashlib.sha1()
    for root in _PACKAGES:
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root.parent).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def key_of(*parts: object) -> str:
    """A digest of a page's inputs (their repr: strings, numbers, tuples and records of them)."""
    return hashlib.sha1(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


class PageMemo:
    """The pages one builder made in the last build, in `path` (None: this build only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._old: dict[str, tuple[str, GeneratedPage]] = {}
        if path is not None and path.is_file():
            try:
                with path.open("rb") as f:
                    saved = pickle.load(f)  # noqa: S301 - the plugin's own cache folder, written by save()
                if isinstance(saved, dict) and saved.get("format") == FORMAT and saved.get("code") == code_digest():
                    self._old = saved["pages"]
            except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, KeyError, TypeError):
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with tmp.open("wb") as f:
            pickle.dump({"format": FORMAT, "code": code_digest(), "pages": self._new}, f, pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, self.path)  # no fsync: a lost memo only means making the pages again
