"""Every pattern the gate and the markers run ends in linear time on hostile text: no nested quantifier that can
split one run of letters many ways (`(?:[a-z]+\\d*)*$` took 17 s on a TrueNAS API key of 40 characters, and hours
on longer ones, before it was made possessive). Each pattern gets half a second per text, a thousand times what
a linear pattern needs: a pattern that runs out of it backtracks exponentially."""

from __future__ import annotations

import importlib
import pkgutil
import re
import signal
from collections.abc import Iterator

import pytest

import memwiki.site.gate.detect as detect
import memwiki.site.gate.filter
import memwiki.text.markers
from memwiki.site.gate.detect.spans import Rule
from memwiki.text.screen import LazyPattern, Screened

UNITS = ("aB", "a1", "ab", "1a", "a ", "a-", "a.", "1.", "1 ", "1-", "a_", "A", "1", "密", "密 ", "a:", "a=", "a/")
UNITS += ("%2", "\\n", '\\"', ". ", "ab ", "a1-", "Ab1 ", "a b ", "1 2 ")
LEADS = ("", "5-5", "1.1", "v1.1", "password ", "密码是", "key=", "http://a.b/", "a@", '"', "`", "-----BEGIN ", "+86 ")
ENDS = ("!", "_1", "\n", "", "@", "~")


def _patterns() -> Iterator[tuple[str, re.Pattern[str]]]:
    modules = [importlib.import_module(f"{detect.__name__}.{m.name}") for m in pkgutil.iter_modules(detect.__path__)]
    for module in [*modules, memwiki.text.markers, memwiki.site.gate.filter]:
        for name, value in vars(module).items():
            values = value if isinstance(value, (tuple, list)) else (value,)
            for i, item in enumerate(values):
                if isinstance(item, tuple) and item and isinstance(item[0], Rule):  # (rule, how) pairs
                    item = item[0]
                if isinstance(item, Screened):
                    yield f"{module.__name__}.{name}[{i}]", item.pattern.compiled()
                elif isinstance(item, Rule):
                    yield f"{module.__name__}.{name}[{i}]", re.compile(item.pattern)
                elif isinstance(item, LazyPattern):  # (compiled where first used: here)
                    yield f"{module.__name__}.{name}[{i}]", item.compiled()
                elif isinstance(item, re.Pattern):
                    yield f"{module.__name__}.{name}[{i}]", item


class _TooLong(Exception):
    pass


def _stop(*_: object) -> None:
    raise _TooLong


def test_the_patterns_are_many() -> None:
    assert len(dict(_patterns())) > 200  # (the walk finds the rule tables too, not only module-level patterns)


@pytest.mark.parametrize(("name", "pattern"), list(_patterns()), ids=lambda v: v if isinstance(v, str) else "")
def test_no_pattern_backtracks_without_end(name: str, pattern: re.Pattern[str]) -> None:
    texts = [lead + unit * 40 + end for unit in UNITS for lead in LEADS for end in ENDS]
    previous = signal.signal(signal.SIGALRM, _stop)
    try:
        for text in texts:
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            try:
                for _ in pattern.finditer(text):
                    pass
            except _TooLong:
                pytest.fail(f"{name} backtracks without end on {text[:50]!r}")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
