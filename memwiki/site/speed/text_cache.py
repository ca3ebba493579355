"""What a build derives from each memory text (its links, heading anchors, rendered HTML), kept across builds.

Most memory texts do not change between two builds, and parsing them with markdown-it is the plugin's costliest
step of its own. Results are keyed by the text's hash and by what was derived (`kind`), and saved in
the plugin's cache folder (memwiki.site.speed.cache_file: marshal, about five times faster to load than the JSON it
was); a change to the code drops the whole file. Within a build each text is parsed at most once,
whatever is derived.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from markdown_it.token import Token

from memwiki.site.model.wikilinks import scanner
from memwiki.site.speed import cache_file


class TextCache:
    """Memoises `compute()` per (text, kind); `path`: the file it persists to (None: this build only)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.version = cache_file.version("texts")
        self._store = cache_file.JournaledDict(path, self.version) if path is not None else None
        self._old: dict[str, dict[str, Any]] = self._store.data if self._store is not None else {}
        self._new: dict[str, dict[str, Any]] = {}  # what this build used
        self._changed: set[str] = set()  # texts that got a new derived value in this build
        self._tokens: dict[str, list[Token]] = {}
        self._keys: dict[str, str] = {}  # text -> its hash (each text is asked for several times in a build)
        self.misses = 0

    def parse(self, text: str) -> list[Token]:
        """The token stream of a text (parsed once per build; shared, so never change it)."""
        tokens = self._tokens.get(text)
        if tokens is None:
            tokens = self._tokens[text] = scanner().parse(text)
        return tokens

    def derived(self, text: str, kind: str, compute: Callable[[], Any], *, last: bool = False) -> Any:  # noqa: ANN401
        """`compute()` (a plain-data value derived from `text`, e.g. from `parse(text)`), from the cache when
        this text was seen before.

        `last`: this is usually the text's last use in a build, so its tokens are let go."""
        key = self._key(text)
        entry = self._entry(key)
        if kind in entry:
            return entry[kind]
        value = compute()
        self._set(key, kind, value)
        if last:
            self._tokens.pop(text, None)
        return value

    def get(self, text: str, kind: str) -> Any:  # noqa: ANN401 - plain data
        """What was derived from `text` as `kind` (in this build or one before), or None."""
        return self._entry(self._key(text)).get(kind)

    def put(self, text: str, kind: str, value: Any) -> None:  # noqa: ANN401 - plain data
        """Keep `value`, derived from `text` as `kind` (a value derived for many texts at once)."""
        self._set(self._key(text), kind, value)

    def _set(self, key: str, kind: str, value: Any) -> None:  # noqa: ANN401 - plain data
        self._entry(key)[kind] = value
        self.misses += 1
        self._changed.add(key)

    def _key(self, text: str) -> str:
        key = self._keys.get(text)
        if key is None:
            key = self._keys[text] = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        return key

    def _entry(self, key: str) -> dict[str, Any]:
        """The derived values of the text of `key` this build uses (those kept from earlier builds at first)."""
        entry = self._new.get(key)
        if entry is None:
            entry = self._new[key] = self._old.get(key, {})
        return entry

    def save(self, prune: bool = True) -> None:
        """Keep what this build derived anew (cache_file.JournaledDict: a few entries, not the whole file).
        `prune`: this build saw every text, so the texts it did not use are dropped when the file holds more
        than twice what it used."""
        self._tokens.clear()  # (the build is done with them: parsed for links, some texts were never rendered)
        if self._store is None:
            return
        if prune and len(self._old) > 2 * len(self._new):
            self._store.replace_all(self._new)
        else:
            for key in self._changed:
                self._store.set(key, self._new[key])
        self._changed.clear()
        self._store.save()
