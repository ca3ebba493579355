"""RE2 in front of Python's `re`: one linear pass over a text tells which costlier patterns may match at all.

Used by the privacy markers (memwiki.text.markers) and by the site's detectors (memwiki.site.gate.detect).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

import re2

_SURROGATE = re.compile("[\ud800-\udfff]")


@functools.cache
def _ascii_forms() -> tuple[re2._Regexp, dict[str, str]]:
    """Unicode spaces as a space and Unicode digits as ASCII ones: RE2's `\\s` and `\\d` read ASCII only, Python's
    read them all (a no-break space pasted from a web page, full-width or Arabic-Indic digits)."""
    forms = {}
    for code in range(128, 0x20000):
        char = chr(code)
        if char.isspace():
            forms[char] = " "
        elif (digit := unicodedata.decimal(char, None)) is not None:
            forms[char] = str(digit)
    return re2.compile("[" + "".join(forms) + "]"), forms


@functools.lru_cache(maxsize=16)  # (a text is screened by several sets in a row: made ready once)
def re2_safe(text: str) -> str:
    """`text` as RE2 can take it and as a screen must read it, one code point for one (offsets kept): a lone
    surrogate as U+FFFD, Unicode spaces and digits in their ASCII forms."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _SURROGATE.sub("\ufffd", text)
    unusual, forms = _ascii_forms()
    if unusual.search(text):
        for char in set(text).intersection(forms):  # (a few kinds of character, each replaced in one C pass)
            text = text.replace(char, forms[char])
    return text


class LazyPattern:
    """A Python pattern compiled where it is first used, read like the `re.Pattern` it becomes: the detectors hold
    some 300 patterns, and a process that reads a few texts (a rebuild, a worker's first chunk) meets a third of
    them; compiling every one at import was a tenth of a second of each build's start. Every pattern made here is
    listed in `LAZY`, so a test compiles them all."""

    _METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags
        LAZY.append(self)

    def compiled(self) -> re.Pattern[str]:
        compiled = re.compile(self.pattern, self._flags)
        for method in self._METHODS:  # (found on the instance from now on: no __getattr__ on the way)
            self.__dict__[method] = getattr(compiled, method)
        return compiled

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 - the compiled pattern's attribute
        if name.startswith("__") or name in ("pattern", "_flags"):
            raise AttributeError(name)  # (copy's and pickle's questions, and an instance not yet set up)
        return getattr(self.compiled(), name)


LAZY: list[LazyPattern] = []


@functools.cache
def shared_pattern(pattern: str) -> LazyPattern:
    """One LazyPattern per source, for patterns made per instance (a detector's rules): compiled once a process."""
    return LazyPattern(pattern)


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
    look-around). The screens of a `group` (the patterns that read the same texts) are read in one RE2 pass per
    text, all together: a text with nothing a detector looks for costs one linear pass, and the Python engine
    reads only the rest. (Patterns that read other texts, such as the private markers reading a case-folded copy,
    are a group of their own: one automaton over every screen would grow its states for texts most never read.)"""

    def __init__(self, pattern: str, screen: str | None = None, flags: int = 0, group: str = "detectors") -> None:
        self.pattern = LazyPattern(pattern, flags)
        self.screen = screen or pattern
        re2.compile(self.screen)  # (a screen RE2 cannot read fails here, not at the first text read)
        self._group = _GROUPS.setdefault(group, _Screens())
        self._index = self._group.add(self.screen)

    def occurs(self, text: str) -> bool:
        """Whether the screen occurs in `text`: the pattern may match."""
        return self._index in self._group.found_in(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(text) if self.occurs(text) else iter(())

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(text) if self.occurs(text) else None


class _Screens:
    """The screens of one group, read together: one RE2 set, and what it found in the last texts read (the
    detectors read a text in turn)."""

    def __init__(self) -> None:
        self._screens: list[str] = []
        self._set: re2.Set | None = None
        self._found: dict[str, frozenset[int]] = {}

    def add(self, screen: str) -> int:
        self._screens.append(screen)
        self._set = None  # (made again, with this screen too, at the next text)
        self._found.clear()
        return len(self._screens) - 1

    def found_in(self, text: str) -> frozenset[int]:
        """Which screens occur in `text`."""
        found = self._found.get(text)
        if found is None:
            if len(self._found) >= 64:
                self._found.clear()
            found = self._found[text] = frozenset(self._made().Match(re2_safe(text)) or ())
        return found

    def _made(self) -> re2.Set:
        if self._set is None:
            options = re2.Options()
            options.max_mem = 64 << 20  # (the set's automaton: some 40 screens, a few MB)
            screens = re2.Set.SearchSet(options)
            for screen in self._screens:
                screens.Add(screen)
            screens.Compile()
            self._set = screens
        return self._set


_GROUPS: dict[str, _Screens] = {}
