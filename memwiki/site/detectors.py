"""Secret detectors: `detect-secrets`' provider, keyword and high-entropy plugins, plus our own rules for what
it misses (passwords in English and Chinese prose, credentials in URLs, PEM keys across lines, JWTs, bearer
tokens, e-mail addresses, phone numbers, private addresses and internal host names).

`Detectors.find(text)` gives the spans to withhold with their kind; `Detectors.redact(text, label)` replaces
each span by `label(kind, secret)`. Both are deterministic. The same detectors scan the built site at the end
(memwiki.site.site_scan), so whatever reaches an output by a path the privacy filter does not cover fails the build.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

import re2

log = logging.getLogger("mkdocs.plugins.memwiki")

REDACTED_PREFIX = "[redacted: "  # how every label starts: the rules never take a label for a secret
_NOT_A_LABEL = r"(?!\[|redacted[-_ :·])"  # a label (maybe cut short, maybe slugged) is no secret
_END = r"""(?=[\s"'”’)\]}>,;，。；、！？!?]|\.(?:\s|$)|$)"""  # a value ends at a space, a quote or a sentence's end


@dataclass(frozen=True)
class Rule:
    """One detector: `pattern` (Python re) finds the secret (group `group`; 0 = the whole match); `trigger` (RE2)
    is a cheap necessary condition that finds where `pattern` may match, so a text is read once by RE2 and each
    rule only looks near its triggers."""

    kind: str  # what the audit counts and the label says
    pattern: str
    trigger: str
    group: int = 0


_PW_WORD = r"(?<![A-Za-z])(?:password|passwd|passcode|passphrase|pass phrase|pwd|pin|pw)s?(?![A-Za-z])"
_PW_FOR = r"(?:\s+(?:for|of|to|on)\s+(?:the\s+|my\s+|our\s+)?[^\s:：=]{1,40}?)?"
_PW_VALUE = r"[\"'“‘`]?" + _NOT_A_LABEL + r"([^\s\"'”’`]+?)" + _END
_PASSWORD_EN = (  # "password: X", "password=X", "pass: X", "my password is X": any X
    r"(?i)(?:(?<![A-Za-z])(?:my|our|your|his|her|their)\s+(?:\w+\s+)?"
    + _PW_WORD
    + _PW_FOR
    + r"\s*(?:'s|\bis\b:?|\bwas\b|\bare\b)|"
    + _PW_WORD
    + _PW_FOR
    + r"\s*(?:=|:|：|->|=>)|(?<![A-Za-z])pass(?![A-Za-z])\s*[:=：])\s*"
    + _PW_VALUE
)
_PASSWORD_EN_IS = (  # "the password for X is Y": Y must look like a password (a digit or a symbol in it), not "wrong"
    r"(?i)"
    + _PW_WORD
    + _PW_FOR
    + r"\s*(?:\bis\b:?|\bwas\b|\bare\b)\s*[\"'“‘`]?"
    + _NOT_A_LABEL
    + r"(?=[^\s\"'”’`]*?[\d!@#$%^&*_+=~|<>/\\-])([^\s\"'”’`]+?)"
    + _END
)
_PASSWORD_ZH = (  # a password is typed in ASCII: 密码是什么？ 密码是必填项 are not passwords
    r"(?:密码|密碼|口令|(?i:pin)码|(?i:(?<![A-Za-z])(?:password|passwd|pwd|pass)(?![A-Za-z])(?=\s*(?:是|为|為))))"
    r"(?:\s*(?:是|为|為|都是|改成了?|改为|设为|设置为|:|：|=)\s*|\s+|(?=[A-Za-z0-9（(【「]))"
    r"[\"'“‘「（(【]?" + _NOT_A_LABEL + r"([^\s\"'”’」）)】，。；,;、？！\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+)"
)
_SECRET_EN = (
    r"(?i)\b(?:secret|api[_ -]?key|access[_ -]?key|client[_ -]?secret|auth[_ -]?token|access[_ -]?token"
    r"|private[_ -]?key|token|credentials?)\b\s*(?:is\b|[:=：])\s*[\"'“‘`]?"
    + _NOT_A_LABEL
    + r"([^\s\"'”’`]{6,}?)"
    + _END
)
_SECRET_ZH = (
    r"(?:密钥|秘钥|令牌|私钥|访问码)(?:\s*(?:是|为|為|:|：|=)\s*|\s+)[\"'“‘「]?"
    + _NOT_A_LABEL
    + r"([^\s\"'”’」，。；,;、]{6,})"
)
_PRIVATE_V4 = (
    r"(?<![A-Za-z0-9.])(?:10(?:\.\d{1,3}){3}|172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2}|192\.168(?:\.\d{1,3}){2}"
    r"|169\.254(?:\.\d{1,3}){2})(?::\d{1,5})?(?!\.?\d)"  # RFC 1918 and link-local (not 100.64/10: Tailscale's DNS)
)
_B = r"(?<![A-Za-z0-9])"  # a token starts here: ids join words with "_", so \b is not enough
_E = r"(?![A-Za-z0-9])"
_INTERNAL = "internal|intranet|intra|corp|lan|local|localdomain|home\\.arpa|priv"

RULES: tuple[Rule, ...] = (
    Rule(
        "private key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY",
    ),
    Rule("openai key", r"(?i)" + _B + r"sk-(?:proj-|ant-|live-|test-)?(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{16,}", r"(?i)sk-"),
    Rule("stripe key", r"(?i)" + _B + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}", r"(?i)[srp]k_(?:live|test)_"),
    Rule(
        "aws key",
        r"(?i)" + _B + r"(?:AKIA|ASIA|AGPA|AIDA|AROA)(?=[A-Z]*\d)[0-9A-Z]{16}" + _E,
        r"(?i)A(?:KIA|SIA|GPA|IDA|ROA)",
    ),
    Rule(
        "aws secret",
        r"(?i)\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})\b",
        r"(?i)aws_?secret",
        1,
    ),
    Rule(
        "github token",
        r"(?i)" + _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
        r"(?i)gh[pousr]_|github_pat_",
    ),
    Rule("gitlab token", r"(?i)" + _B + r"glpat-[A-Za-z0-9_-]{20,}", r"(?i)glpat-"),
    Rule("slack token", r"(?i)" + _B + r"xox[abposr]-[A-Za-z0-9-]{10,}", r"(?i)xox[abposr]-"),
    Rule(
        "authorization header",
        r"(?i)(?<![a-z])authorization(?![a-z])[\"']?[\s_]*[:=][\s_]*[\"']?(?:basic|bearer|token|digest)[\s_]+"
        + _NOT_A_LABEL
        + r"([A-Za-z0-9._~+/=-]{8,})",
        r"(?i)authorization",
        1,
    ),
    Rule(
        "webhook",
        r"(?i)https://(?:discord(?:app)?\.com/api/webhooks|[\w.-]+\.webhook\.office\.com|chat\.googleapis\.com/v1/spaces)"
        r"/[^\s\"'<>]+",
        r"(?i)discord(?:app)?\.com/api/webhooks|webhook\.office\.com|chat\.googleapis\.com/v1/spaces",
    ),
    Rule(
        "api key",
        r"(?<![A-Za-z0-9])(?:GOCSPX-[A-Za-z0-9_-]{20,}|whsec_[A-Za-z0-9]{20,}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"
        r"|dop_v1_[a-f0-9]{64}|pypi-[A-Za-z0-9_-]{50,}|xapp-\d-[A-Za-z0-9-]{20,})",
        r"GOCSPX-|whsec_|shp(?:at|ss|ca|pa)_|dop_v1_|pypi-|xapp-",
    ),
    Rule("slack webhook", r"(?i)https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+", r"(?i)hooks\.slack\.com"),
    Rule("google key", r"(?i)" + _B + r"AIza[0-9A-Za-z_-]{35}", r"(?i)AIza"),
    Rule("hugging face token", r"(?i)" + _B + r"hf_[A-Za-z0-9]{30,}", r"(?i)hf_"),
    Rule("npm token", r"(?i)" + _B + r"npm_[A-Za-z0-9]{36}" + _E, r"(?i)npm_"),
    Rule("sendgrid key", r"(?i)" + _B + r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", r"(?i)SG\."),
    Rule("telegram token", r"(?i)(?<!\d)\d{8,10}:AA[A-Za-z0-9_-]{30,}", r"(?i)\d:AA"),
    Rule("jwt", r"(?i)" + _B + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", r"(?i)eyJ"),
    Rule(
        "bearer token",
        r"(?i)" + _B + r"(?:bearer[\s_:]+|(?:token|basic)\s+(?=\S*\d))" + _NOT_A_LABEL + r"([A-Za-z0-9._~+/=-]{16,})",
        r"(?i)(?:^|[^a-z])(?:bearer|token|basic)",
        1,
    ),
    Rule(
        "url credentials",
        r"(?i)(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]{1,20}://([^\s:/@\[\]]*:[^\s@/]+)@",
        r"://[^\s:/@]*:[^\s@/]+@",
        1,
    ),
    Rule(
        "url secret",
        r"(?i)[?&](?:access_token|token|api_?key|key|secret|password|passwd|pwd|sig|signature|auth)="
        + _NOT_A_LABEL
        + r"([^&\s#\"'<>]{6,})",
        r"(?i)[?&](?:access_token|token|api_?key|key|secret|password|passwd|pwd|sig|signature|auth)=",
        1,
    ),
    Rule("password", _PASSWORD_EN, r"(?i)(?:^|[^a-z])(?:pass|pwd|pin|pw)", 1),
    Rule("password", _PASSWORD_EN_IS, r"(?i)(?:^|[^a-z])(?:pass|pwd|pin|pw)", 1),
    Rule("password", _PASSWORD_ZH, r"密码|密碼|口令|(?i:pin)码|(?i:pass|pwd)\S{0,6}\s*(?:是|为|為)", 1),
    Rule("secret", _SECRET_EN, r"(?i)(?:^|[^a-z])(?:secret|api|access|client|auth|private|key|token|credential)", 1),
    Rule("secret", _SECRET_ZH, r"密钥|秘钥|令牌|私钥|访问码", 1),
    Rule(
        "email",
        r"(?<![A-Za-z0-9.%+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])",
        r"@[A-Za-z0-9-]+\.",
    ),
    Rule(
        "phone",
        r"(?<![A-Za-z0-9+])(?:\+?86[\s_-]?)?1[3-9]\d[\s_-]?\d{4}[\s_-]?\d{4}(?!\d)",
        r"1[3-9]\d[\s_-]?\d{4}[\s_-]?\d{4}",
    ),
    Rule("phone", r"(?<![A-Za-z0-9+])\+\d{1,3}(?:[\s._-]?\(?\d{1,4}\)?){2,5}(?!\d)", r"\+\d"),
    Rule(
        "phone",
        r"(?<![A-Za-z0-9-])(?:\(\d{3}\)\s?|\d{3}[.-])\d{3}[.-]\d{4}(?![A-Za-z0-9-])",
        r"\(\d{3}\)\s?\d{3}[.-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4}",
    ),
    Rule("phone", r"(?<![A-Za-z0-9-])0\d{2,3}-\d{3,4}[ -]?\d{4}(?![A-Za-z0-9-])", r"0\d{2,3}-\d{3,4}[ -]?\d{4}"),
    Rule("private ip", _PRIVATE_V4, r"(?:10|172\.(?:1[6-9]|2\d|3[01])|192\.168|169\.254)(?:\.\d{1,3}){1,3}\.\d"),
    Rule(
        "private ip",
        r"(?i)(?<![A-Za-z0-9:])(?:f[cd][0-9a-f]{2}|fe[89ab][0-9a-f]):[0-9a-f:]*[0-9a-f](?:%\w+)?(?![A-Za-z0-9:])",
        r"(?i)f[cd][0-9a-f]{2}:|fe[89ab][0-9a-f]:",
    ),
    Rule(
        "internal host",
        rf"(?i)(?<![A-Za-z0-9-])(?:[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.)+(?:{_INTERNAL})(?![A-Za-z0-9-]|\.[A-Za-z0-9]|\s*\()",
        rf"(?i)\.(?:{_INTERNAL})",
    ),
    Rule(  # 4-4-4-4, 4-6-5 (Amex) or unbroken; the Luhn sum decides
        "card number",
        r"(?<!\d)(?<!\d\.)[2-6]\d{3}[ _-]?\d{4,6}[ _-]?\d{4,5}(?:[ _-]?\d{1,4}){0,2}(?!\d|\.\d)",
        r"[2-6]\d{3}[ _-]?\d{4,6}[ _-]?\d{4}",
    ),
    Rule(
        "id number",
        r"(?<!\d)[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\dA-Za-z])",
        r"\d{17}[\dXx]",
    ),
)
CONTACT_KINDS = frozenset({"email", "phone", "private ip", "internal host"})
PROSE_KINDS = frozenset({"password"})  # rules over sentences, which ids and predicates write with "_"
BEHIND = 160  # how far before a trigger a rule's match may start (a local part, a scheme, "password for X")
AHEAD = 400  # how far after it a rule looks (a longer match is followed to its end)
BLOCK = 4096  # a long text is asked block by block which rules' triggers it holds
OVERLAP = 128  # blocks overlap by this much, so a trigger across a block's end is seen whole

# Checks a candidate must pass besides its pattern (a card number's Luhn sum, an ID number's check digit).
_CHECKS: dict[str, Callable[[str], bool]] = {}

# detect-secrets plugins left out: public addresses are not secrets (private ones are our own rule)
_SKIPPED_PLUGINS = {"Public IP (ipv4)"}
# a line worth handing to detect-secrets (it costs about 0.1 ms a line): a long token, a keyword or a PEM header
_WORTH_SCANNING = re.compile(r"[A-Za-z0-9+/_=.-]{16,}|(?i:key|secret|token|pass|pwd|auth|cred|BEGIN)")
_PLUGIN_KINDS = {
    "Secret Keyword": "secret",
    "Base64 High Entropy String": "high-entropy string",
    "Hex High Entropy String": "high-entropy string",
    "Basic Auth Credentials": "url credentials",
    "JSON Web Token": "jwt",
    "Private Key": "private key",
}


def _luhn(candidate: str) -> bool:
    digits = [int(c) for c in candidate if c.isdigit()]
    if not 15 <= len(digits) <= 19 or len(set(digits)) < 2:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        total += d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2)
    return total % 10 == 0


def _id_check(candidate: str) -> bool:
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(candidate[:17], weights, strict=True))
    return "10X98765432"[total % 11] == candidate[17].upper()


def _phone_digits(candidate: str) -> bool:
    return 8 <= sum(c.isdigit() for c in candidate) <= 15


_CHECKS["card number"] = _luhn
_CHECKS["id number"] = _id_check
_CHECKS["phone"] = _phone_digits


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    rank: int = 1000  # the rule's place in RULES: where two spans start together, the earlier rule names them


class Detectors:
    """Our rules and detect-secrets' plugins; `contact`: also e-mail addresses, phone numbers, private
    addresses and internal host names (on by default); `extra`: the user's own patterns (kind "custom");
    `library`: detect-secrets' plugins too (the site scan leaves them out: they take hashes for secrets)."""

    def __init__(
        self,
        contact: bool = True,
        extra: Iterable[re.Pattern[str]] = (),
        library: bool = True,
        rules: Iterable[Rule] = RULES,
    ) -> None:
        self.rules = [r for r in rules if contact or r.kind not in CONTACT_KINDS]
        self._patterns = [re.compile(r.pattern) for r in self.rules]
        self._triggers = [re2.compile(r.trigger) for r in self.rules]
        self._any = re2.Set.SearchSet()  # which rules' triggers occur in a text, in one pass
        for rule in self.rules:
            self._any.Add(rule.trigger)
        self._any.Compile()
        self.extra = tuple(extra)
        self.library = library

    @cached_property
    def _plugins(self) -> list[object]:
        try:
            from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        except ImportError:  # pragma: no cover - a dependency of the package
            log.warning("memwiki: detect-secrets is not installed; only memwiki's own secret rules run")
            return []
        plugins = []
        for secret_type, cls in sorted(get_mapping_from_secret_type_to_class().items()):
            if secret_type in _SKIPPED_PLUGINS:
                continue
            if "High Entropy" in secret_type:
                plugins.append(cls(limit=4.5 if "Base64" in secret_type else 3.0))
            else:
                plugins.append(cls())
        return plugins

    def find(self, text: str) -> list[Span]:
        """The spans of `text` to withhold, sorted and not overlapping (an overlap withholds the union)."""
        if not text:
            return []
        spans = self._rule_spans(text)
        if "_" in text:  # an id or a predicate joins a sentence's words with "_": read it as the sentence too
            spans += self._prose._rule_spans(text.replace("_", " "))
        for pattern in self.extra:
            spans += [Span(*m.span(), "custom", 999) for m in pattern.finditer(text) if m.end() > m.start()]
        if self.library:
            spans += self._library_spans(text)
        return _disjoint(spans)

    @cached_property
    def _prose(self) -> Detectors:
        """The rules that read prose ("my password is X"), for a text whose words are joined by "_"."""
        return Detectors(library=False, rules=[r for r in self.rules if r.kind in PROSE_KINDS])

    def _rule_spans(self, text: str) -> list[Span]:
        """Each rule looks only near its triggers (a window around each), and only in the blocks of `text` where
        RE2's set says they occur. Windows are not chained: a secret is read whole in its own trigger's window,
        and a match that reaches a window's end is read again to its real end."""
        found: dict[tuple[int, int], Span] = {}
        looked: set[tuple[int, int]] = set()  # (rule, trigger start) already read
        covered = [0] * len(self.rules)  # where the last span each rule found ends: triggers inside it are not read
        n = len(text)
        for block in range(0, n, BLOCK):
            stop = min(n, block + BLOCK + OVERLAP)
            chunk = _re2_safe(text[block:stop])  # (RE2 encodes what it is given: a slice, not the whole text each time)
            for i in sorted(self._any.Match(chunk) or ()):
                rule, pattern = self.rules[i], self._patterns[i]
                check = _CHECKS.get(rule.kind)
                for hit in self._triggers[i].finditer(chunk):
                    if (i, block + hit.start()) in looked or block + hit.start() < covered[i]:
                        continue
                    looked.add((i, block + hit.start()))
                    start, end = max(block + hit.start() - BEHIND, 0), min(n, block + hit.end() + AHEAD)
                    for match in pattern.finditer(text, start, end):
                        if match.end() >= end - 1 and end < n:  # it may go on past the window: read it whole
                            match = pattern.match(text, match.start()) or match
                        a, b = match.span(rule.group)
                        if a < b and (a, b) not in found and (check is None or check(text[a:b])):
                            found[(a, b)] = Span(a, b, rule.kind, i)
                            covered[i] = max(covered[i], b)
        return list(found.values())

    def _library_spans(self, text: str) -> list[Span]:
        spans = []
        offset = 0
        for line in text.splitlines(keepends=True):
            if _WORTH_SCANNING.search(line):
                for plugin in self._plugins:
                    for secret in plugin.analyze_line(filename="memory.yaml", line=line, line_number=1):
                        value = secret.secret_value
                        if not value or len(value) < 6 or value.startswith(REDACTED_PREFIX):
                            continue
                        kind = _PLUGIN_KINDS.get(secret.type, secret.type.lower())
                        at = line.find(value)
                        while at >= 0:
                            spans.append(Span(offset + at, offset + at + len(value), kind))
                            at = line.find(value, at + len(value))
            offset += len(line)
        return spans

    def redact(self, text: str, label: Callable[[str, str], str]) -> tuple[str, list[str]]:
        """`text` with each span replaced by `label(kind, secret)`, and the kinds replaced (in order)."""
        spans = self.find(text)
        if not spans:
            return text, []
        out, at = [], 0
        for span in spans:
            out += [text[at : span.start], label(span.kind, text[span.start : span.end])]
            at = span.end
        out.append(text[at:])
        return "".join(out), [s.kind for s in spans]


_SURROGATE = re.compile("[\ud800-\udfff]")


def _re2_safe(text: str) -> str:
    """`text` as RE2 can take it: a lone surrogate (from invalid UTF-8 kept as it was) becomes U+FFFD, one
    code point for one, so offsets stay those of `text`."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _disjoint(spans: list[Span]) -> list[Span]:
    spans.sort(key=lambda s: (s.start, -(s.end - s.start), s.rank))
    kept: list[Span] = []
    for span in spans:
        if kept and span.start < kept[-1].end:
            if span.end > kept[-1].end:  # overlapping: withhold the union, under the first one's kind
                kept[-1] = Span(kept[-1].start, span.end, kept[-1].kind)
            continue
        kept.append(span)
    return kept
