"""Where a concept is named in memory text: hot entries, L2 memories and session turns that name a wiki page
or a graph entity by its title, name or an alias, with or without a `[[wikilink]]`.

Names match case-insensitively (RE2's Unicode case folding), Chinese included; a name that begins or ends
with a Latin letter or digit matches only as a whole word there (RE2's `\\b` is ASCII: `学rust服务` names
`rust`, `trust` does not). All names are one RE2 pattern, leftmost-longest (`云知识库` is not also `知识库`),
run once over all the texts joined: linear in the texts whatever the number of names. A rebuild's few changed
texts do not pay for that pattern of every name: they are searched with one of the names they may hold
(`MentionIndex._find_few`).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple, overload

import re2

from memwiki.site.model.concept_index import Concept, TextSource, norm
from memwiki.site.speed.text_cache import TextCache

if TYPE_CHECKING:
    from memwiki.site.speed.scan_memo import TextBlock

MIN_NAME = 2  # characters: a one-letter name would be found everywhere
CONTEXT = 90  # characters shown on each side of a name, at most (less when a sentence ends first)
_JOIN = "\n\0\n"  # between texts: no name holds it, and it ends a sentence
_SENTENCE_END = re.compile(r"[.!?。！？；;\n]")
_ASCII_WORD = re.compile(r"[0-9A-Za-z_]")
_KEPT_KIND = "mentions"  # in the build's TextCache: (digest of the names looked for, spans of names found)
_GLOSS = re.compile(r"([^()（）]+?)\s*[(（]([^()（）]+)[)）]")
FEW_TEXTS = 50  # at most this many texts to search: each with a pattern of only the names it may hold


class Mention(NamedTuple):
    """A place that names a concept: where it is shown, its layer, and where in its text the name is. (A tuple: a
    100k store's texts name concepts a few hundred thousand times, made in every build.)"""

    src_uri: str
    anchor: str
    title: str
    layer: str  # "persona" | "hot" | "L2" | "L4"
    text: str  # raw (untrusted) text of the place
    start: int = 0  # the name is text[start:end]
    end: int = 0

    @property
    def name(self) -> str:
        """The name as written there."""
        return self.text[self.start : self.end]

    def context(self) -> tuple[str, str]:
        """The sentence before the name and after it (raw text, at most CONTEXT characters each)."""
        return _context(self.text, self.start, self.end)


def concept_names(concept: Concept) -> list[str]:
    """The names a concept is known by in text: title, aliases, its entity's name and `aliases` property, and
    both halves of a name that glosses itself (`宁波海洋实验室 (Ningbo marine lab)`, as MemPalace names them)."""
    names = [concept.title, *concept.aliases]
    entity = concept.entity
    if entity is not None:
        names.append(entity.name)
        extra = entity.properties.get("aliases") if isinstance(entity.properties, dict) else None
        if isinstance(extra, list | tuple):
            names += [a for a in extra if isinstance(a, str)]
    names += [half for n in names if n and (gloss := _GLOSS.fullmatch(n.strip())) for half in gloss.groups()]
    return [n for n in dict.fromkeys(" ".join(n.split()) for n in names if n) if len(n) >= MIN_NAME]


def _pattern(name: str) -> str:
    r"""RE2 syntax for one name: its words escaped, any run of spaces between them, `\b` at a Latin end."""
    body = r"\s+".join(re.escape(word) for word in name.split())
    if _ASCII_WORD.match(name[0]):
        body = r"\b" + body
    if _ASCII_WORD.match(name[-1]):
        body += r"\b"
    return body


def _compile(names: list[str]) -> re2._Regexp:
    """One leftmost-longest, case-insensitive RE2 pattern of these names."""
    options = re2.Options()
    options.longest_match = True
    options.case_sensitive = False
    options.max_mem = 256 << 20  # the DFA of thousands of names: RE2's default 8 MB makes it fall back
    return re2.compile("|".join(_pattern(n) for n in names), options)


def _folded(text: str) -> str:
    """Case-folded, runs of white space as one space: where a name's folded form is, if RE2 finds the name."""
    return " ".join(text.casefold().split())


def _clean(text: str) -> str:
    """`text` as RE2 takes it, one code point for one: NUL (our separator) and lone surrogates as U+FFFD."""
    text = text.replace("\0", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]", "\ufffd", text)
    return text


_CODE_SPAN = re.compile(r"`[^`\n]+`")


def _in_code(text: str, at: int) -> bool:
    """Whether position `at` of `text` is inside an inline code span."""
    return any(m.start() < at < m.end() for m in _CODE_SPAN.finditer(text))


def _flat(text: str) -> str:
    return " ".join(text.split())


def _context(text: str, start: int, end: int) -> tuple[str, str]:
    """The sentence around text[start:end]: at most CONTEXT characters each side, `…` where that cut it."""
    lo, hi = _outside_links(text, max(0, start - CONTEXT), min(len(text), end + CONTEXT))
    head = text[lo:start]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    before = head[ends[-1] :] if ends else ("…" if lo > 0 else "") + head
    tail = text[end:hi]
    stop = _SENTENCE_END.search(tail)
    after = tail[: stop.end()] if stop else tail + ("…" if hi < len(text) else "")
    space_before = " " if before[-1:].isspace() else ""
    space_after = " " if after[:1].isspace() else ""
    return _flat(before) + space_before, space_after + _flat(after)


_LINK = re.compile(r"\[\[[^\[\]\n]*\]\]")


def _outside_links(text: str, lo: int, hi: int) -> tuple[int, int]:
    """A window's ends moved out of any `[[link]]` they fall inside (a quote renders whole links, never halves)."""
    for m in _LINK.finditer(text, max(0, lo - 200), min(len(text), hi + 200)):
        if m.start() < lo < m.end():
            lo = m.start()
        if m.start() < hi < m.end():
            hi = m.end()
    return lo, hi


FoundNames = list[tuple[int, str, str, str, str, list[tuple[int, int, str]], bool]]  # see names_in_places


class MentionIndex:
    """Which concepts each text names, and where each concept is named: `scan` once, then ask `of(concept)`
    or `named_in(src_uri, anchor)`. Only wiki and entity concepts are looked for."""

    def __init__(self, concepts: Iterable[Concept]) -> None:
        self._by_name: dict[str, Concept] = {}
        for concept in concepts:
            if concept.kind in ("wiki", "entity"):
                for name in concept_names(concept):
                    self._by_name.setdefault(norm(name), concept)
        self._places: dict[int, list[_Named]] = {}  # id(concept) -> where it is named, in scan order
        self._found: list[tuple[FoundNames, Callable[[int], str]]] = []  # what `add` was given
        self._named: dict[tuple[str, str], list[Concept]] | None = None  # made when first asked (`named_in`)
        self._names = sorted(self._by_name, key=lambda n: (-len(n), n))
        self._digest = hashlib.sha1("\0".join(self._names).encode("utf-8", "surrogatepass")).hexdigest()

    @functools.cached_property
    def _regex(self) -> re2._Regexp:
        return _compile(self._names)

    @functools.cached_property
    def _folded(self) -> list[str]:
        """Each name as `_folded` text holds it wherever RE2 finds it (same order as `_names`)."""
        return [_folded(n) for n in self._names]

    @property
    def names_digest(self) -> str:
        """A hash of the names looked for (what is found in a text depends on them)."""
        return self._digest

    def scan(self, sources: Iterable[tuple[str, TextSource]], kept: TextCache | None = None) -> None:
        """Find every name in these (layer, text) pairs, in one pass over those `kept` has no names of (where
        the names are found in each text is kept across builds with the names looked for)."""
        places = list(sources)
        self.add(self.names_in_places(places, kept), lambda n: places[n][1].text)

    def names_in_places(self, places: list[tuple[str, TextSource]], kept: TextCache | None = None) -> FoundNames:
        """The names in these (layer, text) pairs as plain data: (n, layer, src_uri, anchor, title, [(start, end,
        name as `norm` makes it), ...], whether its text holds what `_clean` replaces) for the n-th place when it
        names any (a name shown as code, `` `[[x]]` ``, is written out, not said: not one)."""
        if not self._by_name or not places:
            return []
        texts = [_clean(source.text) for _, source in places]
        out = []
        for n, spans in enumerate(self._kept_spans(texts, kept)):
            if not spans:
                continue
            text = texts[n]
            code = "`" in text
            names = [(at, to, norm(text[at:to])) for at, to in spans if not (code and _in_code(text, at))]
            if names:
                layer, source = places[n]
                out.append((n, layer, source.src_uri, source.anchor, source.title, names, text is not source.text))
        return out

    def names_in_blocks(self, blocks: list[TextBlock], kept: TextCache | None = None) -> list[FoundNames]:
        """`names_in_places` of each block's places (speed.scan_memo), found in one pass over all of them."""
        places = [block.places() for block in blocks]
        starts = list(itertools.accumulate((len(p) for p in places), initial=0))
        out: list[FoundNames] = [[] for _ in blocks]
        for n, *rest in self.names_in_places([p for block in places for p in block], kept):
            at = bisect_right(starts, n) - 1
            out[at].append((n - starts[at], *rest))
        return out

    def add(self, found: FoundNames, text: Callable[[int], str]) -> None:
        """Record the places `names_in_places` found (`text(n)`: the n-th place's text), each concept once a place.
        Kept as found, a `Mention` made when asked for (`of`): a 100k store's texts name concepts a few hundred
        thousand times, and a rebuild asks for the mentions of few concepts (the loop is kept lean)."""
        by_name, places = self._by_name, self._places
        self._found.append((found, text))
        self._named = None
        for place in found:
            seen: set[int] = set()
            for start, end, name in place[5]:
                concept = by_name.get(name)
                if concept is None or id(concept) in seen:
                    continue
                seen.add(id(concept))
                places.setdefault(id(concept), []).append((place, text, start, end))

    def _kept_spans(self, texts: list[str], kept: TextCache | None) -> list[list[tuple[int, int]]]:
        """Where a name is in each text: kept from an earlier build that looked for the same names, else found."""
        found: list[list[tuple[int, int]] | None] = [None] * len(texts)
        if kept is not None:
            for n, text in enumerate(texts):
                value = kept.get(text, _KEPT_KIND)
                if isinstance(value, tuple) and len(value) == 2 and value[0] == self._digest:
                    found[n] = value[1]
        todo = [n for n, spans in enumerate(found) if spans is None]
        for n, spans in zip(todo, self._find([texts[n] for n in todo]), strict=True):
            found[n] = spans
            if kept is not None:
                kept.put(texts[n], _KEPT_KIND, (self._digest, spans))
        return found  # type: ignore[return-value]

    def _find(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """The spans of names in each text, found in one RE2 pass over them all, joined."""
        if len(texts) <= FEW_TEXTS:
            return [self._find_few(text) for text in texts]
        spans: list[list[tuple[int, int]]] = [[] for _ in texts]
        starts, at = [], 0
        for text in texts:
            starts.append(at)
            at += len(text) + len(_JOIN)
        for match in self._regex.finditer(_JOIN.join(texts)):
            at, to = match.span()
            n = bisect_right(starts, at) - 1
            spans[n].append((at - starts[n], to - starts[n]))
        return spans

    def _find_few(self, text: str) -> list[tuple[int, int]]:
        """`_find` for one text, with a pattern of the names whose folded form is in the folded text: a name RE2
        finds is always among them (its matches are case-fold orbits, and Python's casefold maps an orbit to one
        string), and leftmost-longest over fewer names that can match gives the same spans."""
        folded = _folded(text)
        names = [n for n, f in zip(self._names, self._folded, strict=True) if f in folded]
        return [m.span() for m in _compile(names).finditer(text)] if names else []

    def of(self, concept: Concept, besides: Collection[tuple[str, str]] = ()) -> Mentions:
        """The places that name `concept`, in the order they were scanned; not those at `besides` ((src_uri,
        anchor) pairs)."""
        named = self._places.get(id(concept), [])
        return Mentions([x for x in named if (x[0][2], x[0][3]) not in besides] if besides else named)

    def named(self, concept: Concept) -> bool:
        """Whether any place names `concept`."""
        return id(concept) in self._places

    def named_in(self, src_uri: str, anchor: str) -> list[Concept]:
        """The concepts the text shown at (src_uri, anchor) names, in the order they first appear."""
        if self._named is None:
            self._named = {}
            for found, _ in self._found:
                for _, _, at_uri, at_anchor, _, names, _ in found:
                    concepts = {id(c): c for c in (self._by_name.get(name) for _, _, name in names) if c is not None}
                    if concepts:
                        self._named.setdefault((at_uri, at_anchor), []).extend(concepts.values())
        return self._named.get((src_uri, anchor), [])


_Named = tuple[tuple, Callable[[int], str], int, int]  # (a place `names_in_places` found, its texts, start, end)


class Mentions(Sequence[Mention]):
    """Places that name a concept, each made a `Mention` when read (a concept page lists fifty of thousands)."""

    def __init__(self, named: list[_Named]) -> None:
        self._named = named

    def __len__(self) -> int:
        return len(self._named)

    @overload
    def __getitem__(self, at: int) -> Mention: ...
    @overload
    def __getitem__(self, at: slice) -> list[Mention]: ...
    def __getitem__(self, at: int | slice) -> Mention | list[Mention]:
        if isinstance(at, slice):
            return [_mention(*x) for x in self._named[at]]
        return _mention(*self._named[at])


def _mention(place: tuple, text: Callable[[int], str], start: int, end: int) -> Mention:
    n, layer, src_uri, anchor, title, _, unclean = place
    shown = _clean(text(n)) if unclean else text(n)
    return Mention(src_uri, anchor, title, layer, shown, start, end)
