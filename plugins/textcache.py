"""What a build derives from each memory text (its links, heading anchors, rendered HTML), kept across builds.

Parsing memory text with markdown-it was most of the plugin's own time, and most texts do not change
between two builds. Results are keyed by the text's hash and by what was derived (`kind`), and saved as
JSON in the plugin's cache folder; a change to the code that derives them (this package's Markdown
modules) drops the whole file. Within a build each text is parsed at most once, whatever is derived.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from markdown_it.token import Token

from plugins.cachefile import replace_file
from plugins.wikilinks import scanner

_CODE = Path(__file__).resolve().parent
_DEPENDS = ("textcache.py", "wikilinks.py", "render.py", "concepts.py")  # the code that derives the values


def _code_version() -> str:
    digest = hashlib.sha1()
    for name in _DEPENDS:
        digest.update((_CODE / name).read_bytes())
    return digest.hexdigest()


class TextCache:
    """Memoises `compute()` per (text, kind); `path`: the JSON file it persists to (None: this build only)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.version = _code_version()
        self._old: dict[str, dict[str, Any]] = {}
        if path is not None and path.is_file():
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
                if saved.get("version") == self.version:
                    self._old = saved["texts"]
            except (OSError, ValueError, KeyError, TypeError):
                self._old = {}
        self._new: dict[str, dict[str, Any]] = {}  # what this build used (the only part saved)
        self._tokens: dict[str, list[Token]] = {}
        self.misses = 0

    def parse(self, text: str) -> list[Token]:
        """The token stream of a text (parsed once per build; shared, so never change it)."""
        tokens = self._tokens.get(text)
        if tokens is None:
            tokens = self._tokens[text] = scanner().parse(text)
        return tokens

    def derived(self, text: str, kind: str, compute: Callable[[], Any], *, last: bool = False) -> Any:  # noqa: ANN401
        """`compute()` (a JSON-able value derived from `text`, e.g. from `parse(text)`), from the cache when
        this text was seen before.

        `last`: this is usually the text's last use in a build, so its tokens are let go."""
        key = hashlib.sha1(text.encode()).hexdigest()
        entry = self._new.get(key)
        if entry is None:
            entry = self._new[key] = self._old.get(key, {})
        if kind in entry:
            return entry[kind]
        self.misses += 1
        value = entry[kind] = compute()
        if last:
            self._tokens.pop(text, None)
        return value

    def save(self) -> None:
        """Write what this build used (nothing when it all came from the file and nothing was dropped)."""
        if self.path is None or (not self.misses and len(self._new) == len(self._old)):
            return
        saved = {"version": self.version, "texts": self._new}
        replace_file(self.path, json.dumps(saved, ensure_ascii=False).encode("utf-8"))
