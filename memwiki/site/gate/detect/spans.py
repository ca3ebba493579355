"""Spans to withhold, and the engine that runs a class's regular-expression rules cheaply.

A `Rule` pairs a Python pattern (what the secret is) with an RE2 trigger (a cheap necessary condition): one RE2
set tells which rules' triggers a block of text holds, and each rule is only run in a window around its
triggers. Every detector class (`memwiki.site.gate.detect.*`) gives spans in the same shape, so they compose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import re2

from memwiki.text.screen import LazyPattern, Present, re2_safe, shared_pattern

REDACTED_PREFIX = "[redacted: "  # how every label starts: no detector takes a label for a secret
WITHHELD_NAME = LazyPattern(r"\[redacted: [^\]]+\]")  # a name the gate withheld whole: it names nothing to list
NOT_A_LABEL = r"(?!\[|redacted[-_ :·])"  # a label (maybe cut short, maybe slugged) is no secret
BEHIND = 160  # how far before a trigger a rule's match may start (a local part, a scheme, "password for X")
AHEAD = 400  # how far after it a rule looks (a longer match is followed to its end)
BLOCK = 4096  # a long text is asked block by block which rules' triggers it holds
OVERLAP = 128  # blocks overlap by this much, so a trigger across a block's end is seen whole


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    rank: int = 1000  # where two spans start together, the lower rank names them


@dataclass(frozen=True)
class Rule:
    """One detector: `pattern` (Python re) finds the secret (group `group`; 0 = the whole match); `trigger` (RE2)
    finds where `pattern` may match; `check`, when given, must accept the candidate (a checksum, a word list)."""

    kind: str
    pattern: str
    trigger: str
    group: int = 0
    check: Callable[[str], bool] | None = None


class RuleSet:
    """Runs rules near their triggers only, reading a text once with RE2."""

    def __init__(self, rules: Iterable[Rule], rank: int = 0) -> None:
        self.rules = list(rules)
        self._rank = rank
        self._patterns = [shared_pattern(r.pattern) for r in self.rules]
        compiled: dict[str, object] = {}  # rules that share a trigger share its compiled form and its hits
        self._triggers = [compiled.setdefault(r.trigger, re2.compile(r.trigger)) for r in self.rules]
        self._any = Present(rule.trigger for rule in self.rules)

    def find(self, text: str, near: Callable[[int, int], bool] | None = None) -> list[Span]:
        """Each rule looks only near its triggers (a window around each), and only in the blocks of `text` where
        the RE2 set says they occur; a match that reaches its window's end is read again to its real end.
        `near(start, end)`, when given, must accept a trigger's place for its rules to look there."""
        found: dict[tuple[int, int, int], Span] = {}  # (rule, start, end): two rules may read the same lead
        looked: set[tuple[int, int]] = set()
        covered = [0] * len(self.rules)  # where the last span each rule found ends: triggers inside it are skipped
        n = len(text)
        for block in range(0, n, BLOCK):
            stop = min(n, block + BLOCK + OVERLAP)
            chunk = re2_safe(text[block:stop])
            hits: dict[int, list[tuple[int, int]]] = {}  # id of a compiled trigger -> its hits in this chunk
            for i in sorted(self._any(chunk)):
                rule, pattern, trigger = self.rules[i], self._patterns[i], self._triggers[i]
                found_here = hits.get(id(trigger))
                if found_here is None:
                    found_here = hits[id(trigger)] = [m.span() for m in trigger.finditer(chunk)]
                for hit_start, hit_end in found_here:
                    at = block + hit_start
                    if (i, at) in looked or at < covered[i] or (near and not near(at, block + hit_end)):
                        continue
                    looked.add((i, at))
                    start, end = max(at - BEHIND, 0), min(n, block + hit_end + AHEAD)
                    for match in pattern.finditer(text, start, end):
                        if match.end() >= end - 1 and end < n:
                            match = pattern.match(text, match.start()) or match
                        a, b = match.span(rule.group)
                        if a < b and (i, a, b) not in found and (rule.check is None or rule.check(text[a:b])):
                            found[(i, a, b)] = Span(a, b, rule.kind, self._rank + i)
                            covered[i] = max(covered[i], b)
        return list(found.values())


_CJK = LazyPattern("[\u4e00-\u9fff]")


def has_cjk(text: str) -> bool:
    """Whether `text` holds a Chinese character (the detectors' Chinese readings are skipped otherwise)."""
    return _CJK.search(text) is not None


def has_digit(text: str) -> bool:
    return any(map(str.isdigit, text))


def digit_count(text: str) -> int:
    return sum(map(str.isdigit, text))


def disjoint(spans: list[Span]) -> list[Span]:
    """Sorted, not overlapping: an overlap withholds the union, under the kind of the span that starts first."""
    spans.sort(key=lambda s: (s.start, -(s.end - s.start), s.rank))
    kept: list[Span] = []
    for span in spans:
        if kept and span.start < kept[-1].end:
            if span.end > kept[-1].end:
                kept[-1] = Span(kept[-1].start, span.end, kept[-1].kind, kept[-1].rank)
            continue
        kept.append(span)
    return kept
