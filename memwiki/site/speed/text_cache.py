"""What a build derives from each memory text (its links, the names it holds, heading anchors, rendered HTML), kept
across builds.

Most memory texts do not change between two builds, and parsing them with markdown-it is the plugin's costliest
step of its own. Results are keyed by the text's hash and by what was derived (`kind`), and saved in
the plugin's cache folder; a change to the code drops them all. Within a build each text is parsed at most once,
whatever is derived.

They are kept in a SQLite table (speed.kept_table), read one text at a time: a rebuild asks about the few texts
it scans or renders again (what the scans found in the others is kept by block, speed.scan_memo), and loading
every text's values whole was most of the cache's cost at 100k memories.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from markdown_it.token import Token

from memwiki.site.model.wikilinks import scanner
from memwiki.site.speed import cache_file
from memwiki.site.speed.kept_table import KeptTable
from memwiki.text.vectors import text_key

FORMAT = 3  # 3: every kind in SQLite
_FORMER = ("texts.marshal", "texts.marshal.journal")  # where format 2 kept what every build asked of every text


class TextCache:
    """Memoises `compute()` per (text, kind); `path`: the SQLite file it persists to (None: this build only)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.version = cache_file.version("texts", FORMAT)
        self._store = KeptTable(path, self.version) if path is not None else None
        for old in _FORMER if path is not None else ():  # the dict texts were kept in before, beside this file
            if old != path.name:
                (path.parent / old).unlink(missing_ok=True)
        self._entries: dict[bytes, dict[str, Any]] = {}  # the kinds of each text this build asked about
        self._changed: set[bytes] = set()  # texts that got a new derived value in this build
        self._tokens: dict[str, list[Token]] = {}
        self._keys: dict[str, bytes] = {}  # text -> its key (each text is asked for several times in a build)
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

    def _set(self, key: bytes, kind: str, value: Any) -> None:  # noqa: ANN401 - plain data
        self._entry(key)[kind] = value
        self.misses += 1
        self._changed.add(key)

    def _key(self, text: str) -> bytes:
        key = self._keys.get(text)
        if key is None:
            key = self._keys[text] = text_key(text)
        return key

    def _entry(self, key: bytes) -> dict[str, Any]:
        """The derived values of the text of `key` (those kept from earlier builds at first)."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _kinds(self._store.get(key)) if self._store is not None else {}
        return entry

    def save(self, prune: bool = True) -> None:
        """Keep what this build derived anew. `prune`: this build saw every text, so the texts it did not use are
        dropped when the store holds more than twice what it used."""
        self._tokens.clear()  # (the build is done with them: parsed for links, some texts were never rendered)
        if self._store is None:
            return
        used = (lambda: set(self._entries)) if prune else None
        self._store.save({k: self._entries[k] for k in self._changed}, used, len(self._entries))
        self._changed.clear()
        self._store.close()


def _kinds(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
