"""RE2 in front of Python's `re`: one linear pass over a text tells which costlier patterns may match at all.

Used by the privacy markers (memwiki.markers) and by the site's detectors (memwiki.site.detect).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import re2

_SURROGATE = re.compile("[\ud800-\udfff]")


def re2_safe(text: str) -> str:
    """`text` as RE2 can take it: a lone surrogate becomes U+FFFD, one code point for one (offsets kept)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


class Present:
    """Which of several RE2 patterns occur in a text, in one pass (a cheap necessary condition for costlier rules)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self._set = re2.Set.SearchSet()
        for pattern in patterns:
            self._set.Add(pattern)
        self._set.Compile()

    def __call__(self, text: str) -> set[int]:
        return set(self._set.Match(re2_safe(text)) or ())


class Screened:
    """A Python pattern run only on texts where RE2 finds `screen` (by default the pattern itself, when it has no
    look-around): one linear pass decides most texts, and the Python engine reads only the rest."""

    def __init__(self, pattern: str, screen: str | None = None, flags: int = 0) -> None:
        self.pattern = re.compile(pattern, flags)
        self._screen = re2.compile(screen or pattern)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(text) if self._screen.search(re2_safe(text)) else iter(())

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(text) if self._screen.search(re2_safe(text)) else None
