"""All classes together: what the privacy gate redacts, and what the site's final scan looks for.

`Detectors.find(text)` gives the spans to withhold, sorted and disjoint; `Detectors.redact(text, label)` replaces
each by `label(kind, secret)`. Both are deterministic. A span that stops inside a token is carried to the
token's end, so no rule's short match leaves a tail of its secret behind.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from memwiki.site.gate.detect.context import CREDENTIAL_WORD, ContextDetector
from memwiki.site.gate.detect.hosts import HostDetector
from memwiki.site.gate.detect.personal import PersonalDetector
from memwiki.site.gate.detect.providers import ProviderDetector
from memwiki.site.gate.detect.shapes import ShapeDetector, wrapped_end, wrapped_start
from memwiki.site.gate.detect.spans import Span, disjoint
from memwiki.site.gate.detect.values import is_value, made_code
from memwiki.text.screen import LazyPattern, Screened

_FULL_WIDTH = LazyPattern("[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff20\uff0e]")  # full-width digits, letters, ＠．
_TO_ASCII = {
    code: code - 0xFEE0
    for code in [*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B), 0xFF20, 0xFF0E, 0xFF0D, 0xFF3F]
}  # (and ＠．－＿; brackets and colons stay full-width: they end a value)
_ZH_DIGITS = str.maketrans("〇零一幺二两三四五六七八九叉", "0011223456789X")  # (幺, 两: 1, 2 read out; 叉: an id's X)
_UPPER = LazyPattern("[A-Z]")
_LOWER = LazyPattern("[a-z]")
_SPOKEN_DIGITS = LazyPattern("[〇零一幺二两三四五六七八九]{4,}")
_SPACED_CJK = LazyPattern("[\u4e00-\u9fff] [\u4e00-\u9fff] [\u4e00-\u9fff]")
_SPACED_RUN = LazyPattern("[\u4e00-\u9fff](?: [\u4e00-\u9fff])+")
_LINES_APART = 8  # a text of fewer lines is read whole in each view
CONTACT_KINDS = frozenset(PersonalDetector.kinds + HostDetector.kinds)
_ALWAYS = CONTACT_KINDS | {"private key"}  # never a placeholder (a key's bytes `[134, 207, …]` look like `[x]`)
_TOKEN_CHAR = LazyPattern(r"[A-Za-z0-9_+/=~$-]")
_WHOLE_TOKEN_KINDS = frozenset({"token", "api key"}) | frozenset(
    k
    for k in (
        "openai key",
        "stripe key",
        "aws key",
        "github token",
        "gitlab token",
        "slack token",
        "google key",
        "hugging face token",
        "npm token",
        "sendgrid key",
        "telegram token",
        "jwt",
    )
)


class Detectors:
    """The five classes; `contact`: personal data and internal hosts too (on by default); `extra`: the user's
    own patterns (kind "custom"); `library`: the provider libraries too; `net`: the site scan's independent net
    over what memwiki generated from gated records: provider keys and token shapes only."""

    def __init__(
        self, contact: bool = True, extra: Iterable[re.Pattern[str]] = (), library: bool = True, net: bool = False
    ) -> None:
        self.context = None if net else ContextDetector()
        self.classes: list[object] = [ProviderDetector(library), ShapeDetector()]
        if self.context is not None:
            self.classes.insert(1, self.context)
        if contact and not net:
            self.classes += [PersonalDetector(), HostDetector()]
        self.extra = tuple(extra)
        self.contact = contact
        self.library = library

    def describe(self) -> list[str]:
        """What decides the spans (for cache keys): the classes and the user's patterns."""
        return [type(c).__name__ for c in self.classes] + [p.pattern for p in self.extra]

    def find(self, text: str) -> list[Span]:
        """The spans of `text` to withhold, sorted and not overlapping (an overlap withholds the union)."""
        if not text:
            return []
        spans: list[Span] = []
        for detector in self.classes:
            spans += detector.find(text)  # type: ignore[attr-defined]
        for at, piece in _views(text):  # (not the providers': their keys hold `_` and are typed in ASCII)
            for detector in self.classes[1:]:
                found = detector.find(piece)  # type: ignore[attr-defined]
                spans += [Span(s.start + at, s.end + at, s.kind, s.rank) for s in found] if at else found
        # a value read out: what is found in it covers all of it (not in the scan's net: no class of its own)
        if self.context is not None and (dictated := _dictated(text)) is not None:
            view, runs = dictated
            for detector in self.classes[1:]:
                spans += [_over_runs(s, runs) for s in detector.find(view)]  # type: ignore[attr-defined]
            if CREDENTIAL_WORD.occurs(text):  # a value read out where a password is spoken of: that password
                spans += [Span(a, b, "password", 500) for a, b in runs]
        if ":--" in text:  # a URL in a file or page name, its slashes made dashes: `https:--user:pw@host-path`
            urls = text.replace(":--", "://")  # (its credentials only: `host.com-path` is no host name)
            if self.context is not None:
                spans += [s for s in self.context.find(urls) if s.kind.startswith("url")]
        for pattern in self.extra:
            spans += [Span(*m.span(), "custom", 999) for m in pattern.finditer(text) if m.end() > m.start()]
        spans = [s for s in spans if s.kind in _ALWAYS or is_value(text[s.start : s.end], 1)]  # no `PASSWORD`
        return disjoint([_whole(text, s) for s in spans])

    def redact(self, text: str, label: Callable[[str, str], str]) -> tuple[str, list[str]]:
        """`text` with each span replaced by `label(kind, secret)`, and the kinds replaced (in order)."""
        return self.apply(text, self.find(text), label)

    @staticmethod
    def apply(text: str, spans: list[Span], label: Callable[[str, str], str]) -> tuple[str, list[str]]:
        """`redact` with the spans `find` gave (found elsewhere: in a worker process)."""
        if not spans:
            return text, []
        out, at = [], 0
        for span in spans:
            out += [text[at : span.start], label(span.kind, text[span.start : span.end])]
            at = span.end
        out.append(text[at:])
        return "".join(out), [s.kind for s in spans]


def _views(text: str) -> list[tuple[int, str]]:
    """`text` read other ways, one character for one (so spans keep their offsets), as pieces with where each starts
    in `text`: an id or a predicate joins a sentence's words with `_` (and its store lower-cases them: read
    upper-cased too); a Chinese input method types full-width digits and letters (`１８８５７７３９６６１`,
    `name＠163．com`); dictation writes digits as Chinese numerals; a chat typed with a space after each character
    (`密 码 是 X`); a tool's JSON output escapes its line breaks and quotes (`\\n`, `\\"`: read as a space and
    the character, two for two)."""
    views = []
    if "\\n" in text or '\\"' in text:  # a JSON string as written (a tool's output): its lines and quotes
        views.append(text.replace("\\n", " \n").replace('\\"', ' "').replace("\\t", " \t"))
    views += [v.replace("_", " ") for v in [text, *views] if "_" in v]
    if "_" in text and not _UPPER.search(text) and _LOWER.search(text):  # an id or a predicate lower-cased by its store
        views.append("\n".join(_upper(line.replace("_", " ")) if "_" in line else line for line in text.split("\n")))
    if _FULL_WIDTH.search(text):
        views.append(text.translate(_TO_ASCII))
    if _SPOKEN_DIGITS.search(text):  # a number dictated in Chinese: 一八八八二八八四零四二
        views.append(text.translate(_ZH_DIGITS))
    if _SPACED_CJK.search(text):  # "密 码 是 X": each run's spaces moved to its end (what follows keeps its place)
        views.append(_SPACED_RUN.sub(lambda m: m.group().replace(" ", "") + " " * m.group().count(" "), text))
    return [piece for view in views for piece in _where_changed(text, view)]


def _upper(text: str) -> str:
    """`text` upper-cased, one character for one (`ß` stays)."""
    return "".join(c.upper() if len(c.upper()) == 1 else c for c in text)


def _where_changed(text: str, view: str) -> list[tuple[int, str]]:
    """The parts of `view`, a text of many lines, that read differently from `text`, and where each starts: the
    lines it changed and the line after each, blank lines between not counted (a value may follow its label
    there), runs of them together. A long page, or the site scan's new lines of a file, is read again only there."""
    if text.count("\n", 0, 4096) < _LINES_APART:
        return [(0, view)]
    old, new = text.split("\n"), view.split("\n")
    if len(old) != len(new):  # (a JSON string's `\\n` read as line breaks)
        return [(0, view)]
    pieces: list[tuple[int, str]] = []
    run: list[str] = []
    at = start = 0
    after_change = False
    for a, b in zip(old, new, strict=True):
        if a != b or after_change:
            if not run:
                start = at
            run.append(b)
        elif run:
            pieces.append((start, "\n".join(run)))
            run = []
        after_change = a != b or (after_change and not a.strip())  # (blank lines between a label and its value)
        at += len(b) + 1
    if run:
        pieces.append((start, "\n".join(run)))
    return pieces


# a value read out one character at a time: digits and Chinese numerals, signs and letters said by name
_SAID_SIGNS = {
    "井号": "#", "井字号": "#", "星号": "*", "点": ".", "横杠": "-", "杠": "-", "减号": "-", "下划线": "_",
    "艾特": "@", "感叹号": "!", "叹号": "!", "加号": "+", "百分号": "%", "美元符号": "$", "美元符": "$",
    "dot": ".", "dash": "-", "hyphen": "-", "underscore": "_", "hash": "#", "star": "*", "asterisk": "*",
    "exclamation mark": "!", "exclamation point": "!", "at sign": "@", "dollar sign": "$", "dollar": "$",
    "plus": "+", "percent": "%", "percent sign": "%", "ampersand": "&", "caret": "^", "tilde": "~",
    "equals": "=", "question mark": "?", "slash": "/", "colon": ":", "semicolon": ";", "period": ".",
}  # fmt: skip
_ZH_NUMERALS = frozenset("〇零一幺二两三四五六七八九")
_SAID_DIGITS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine".split())}
_SAID_CASE = r"(?:大写|小写|uppercase|lowercase|capital|small)(?:的|\s+)?[A-Za-z](?![A-Za-z])"
_SAID_TOKEN = (  # (a letter said alone, `z`, only before a comma: "…, z, capital G, y, …")
    rf"[〇零一幺二两三四五六七八九]{{1,4}}|[0-9](?![0-9])|{_SAID_CASE}|[a-z](?![^,])"
    rf"|(?i:{'|'.join(sorted(_SAID_DIGITS, key=len, reverse=True))})(?![A-Za-z])"
    rf"|(?i:{'|'.join(sorted(_SAID_SIGNS, key=len, reverse=True))})(?![A-Za-z])"
)
_SAID_TOKEN_READ = re.sub(r"\(\?!\[[^]]*\]\)", "", _SAID_TOKEN)  # (its look-aheads dropped: RE2 reads it)
_SAID_RUN = Screened(  # (screened by the run without its look-arounds, which RE2 has not: four parts in a row)
    rf"(?<![0-9A-Za-z])(?:{_SAID_TOKEN})(?:[ \t、，,]+(?:{_SAID_TOKEN})){{3,}}",
    rf"(?:{_SAID_TOKEN_READ})(?:[ \t、，,]+(?:{_SAID_TOKEN_READ})){{3}}",
)
_SAID_PART = LazyPattern(rf"{_SAID_TOKEN}")


def _dictated(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """`text` with each value read out (`五 七 九 三 八 三`, `六 井号 九 0 六 点 大写D`, `dot, zero, six`) written as
    typed, spaces after it to its run's end; and where the runs are. None when nothing was read out."""
    out, runs, at = [], [], 0
    for m in _SAID_RUN.finditer(text):
        parts = _SAID_PART.findall(m.group())
        if not _read_out(parts):
            continue
        value = "".join(_typed(p) for p in parts)
        out += [text[at : m.start()], value.ljust(m.end() - m.start())]
        runs.append(m.span())
        at = m.end()
    if not runs:
        return None
    out.append(text[at:])
    return "".join(out), runs


def _read_out(parts: list[str]) -> bool:
    """Parts that read out a value: four or more with a sign or a letter said by its case among them, or with three
    digits in Chinese numerals; six or more where all are digits in ASCII or English words ("one, two, three,
    four" counts steps more often than it spells a code)."""
    said = sum(not (p.isdigit() or p.lower() in _SAID_DIGITS or p[0] in _ZH_NUMERALS or len(p) == 1) for p in parts)
    chinese = sum(p[0] in _ZH_NUMERALS for p in parts)
    return said > 0 or chinese >= 3 or len(parts) >= 6


def _typed(part: str) -> str:
    """One part of a value read out, as typed."""
    low = part.lower()
    if low in _SAID_DIGITS:
        return _SAID_DIGITS[low]
    if low in _SAID_SIGNS:
        return _SAID_SIGNS[low]
    if len(part) > 1 and part[-1].isascii() and part[-1].isalpha():  # 大写D, lowercase d
        return part[-1].upper() if low.startswith(("大写", "uppercase", "capital")) else part[-1].lower()
    return part.translate(_ZH_DIGITS)


def _over_runs(span: Span, runs: list[tuple[int, int]]) -> Span:
    """`span`, found in a value read out, over the whole of what was read."""
    for a, b in runs:
        if span.start < b and span.end > a:
            span = Span(min(span.start, a), max(span.end, b), span.kind, span.rank)
    return span


_TOKEN_HEAD = LazyPattern(r"(?<![\w-])([A-Za-z0-9_-]{6,64}):$")


def _whole(text: str, span: Span) -> Span:
    """A token's span carried to both ends of its token (a rule that stopped short leaves no tail), and over a line
    break or a string concatenation that cut it."""
    if span.kind in CONTACT_KINDS:
        return span
    a, b = span.start, span.end
    if span.kind in _WHOLE_TOKEN_KINDS:
        while a > 0 and _TOKEN_CHAR.match(text[a - 1]) and text[a - 1] not in "-_":
            a -= 1  # (not over `-` or `_`: the words of a slug or an id before a token are no part of it)
        while b < len(text) and _TOKEN_CHAR.match(text[b]):
            b += 1
        head = _TOKEN_HEAD.search(text, max(0, a - 65), a)
        if head is not None and made_code(head.group(1)) and not head.group(1).isupper():  # (`API_KEY:` is a name)
            a = head.start()  # a key's id and its secret joined by `:` (`AAAAkdsxpxm:APA91b…`): one key
    if b - a >= 12:
        if span.kind in _WHOLE_TOKEN_KINDS:
            a = wrapped_start(text, a)
        b = wrapped_end(text, a, b)
    return Span(a, b, span.kind, span.rank) if (a, b) != (span.start, span.end) else span
