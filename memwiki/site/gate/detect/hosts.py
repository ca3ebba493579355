"""Class 4, internal hosts and addresses: what says where the owner's machines are.

- Private addresses: RFC 1918, link-local, shared (100.64/10, Tailscale's nodes), IPv6 unique-local and
  link-local, with a port when one follows.
- Host names whose suffix is not a public suffix (the Public Suffix List as `publicsuffixlist` bundles it: no
  download), written where a host is (a URL, `user@`, `:port`, after ssh/ping/host/server/主机...), and names
  under the suffixes private networks use whatever the list says (`.lan`, `.local`, `.internal`, `.home.arpa`,
  `.fritz.box`, `.consul`, `.ts.net`, ...).
- Internal-looking subdomains of public domains: `git.corp.example.com`, `jenkins.internal.example.io`, a
  service under an environment's label (`search-1.prod.example.cn`), and
  any subdomain (but `www`) of a sentence that says it is reached from inside (VPN, 内网, intranet).
"""

from __future__ import annotations

import functools
import re

from memwiki.site.gate.detect.spans import Rule, RuleSet, Span, has_digit
from memwiki.text.screen import LazyPattern

_V4 = (
    r"(?<![A-Za-z0-9.])(?:10(?:\.\d{1,3}){3}|172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2}|192\.168(?:\.\d{1,3}){2}"
    r"|169\.254(?:\.\d{1,3}){2}|100\.(?:6[4-9]|[7-9]\d|1[01]\d|12[0-7])(?:\.\d{1,3}){2})(?::\d{1,5})?(?!\.?\d)"
)
ADDRESS_RULES = (
    Rule("private ip", _V4, r"(?:10|172\.(?:1[6-9]|2\d|3[01])|192\.168|169\.254|100\.\d{2,3})(?:\.\d{1,3}){1,3}\.\d"),
    Rule(
        "private ip",
        r"(?i)(?<![A-Za-z0-9:])(?:f[cd][0-9a-f]{2}|fe[89ab][0-9a-f]):[0-9a-f:]*[0-9a-f](?:%\w+)?(?![A-Za-z0-9:])",
        r"(?i)f[cd][0-9a-f]{2}:|fe[89ab][0-9a-f]:",
    ),
)
PRIVATE_SUFFIXES = tuple(
    """lan local localdomain internal intranet intra corp home home.arpa priv private fritz.box consul ts.net
    tailscale.net localhost docker.internal cluster.local svc k8s vpn office workgroup router gateway nas""".split()
)
INTERNAL_LABELS = frozenset(
    "corp internal intranet intra int lan priv private office local home dmz mgmt ad corpnet inside".split()
)
# an environment's label under a company's domain, below a service's name: `search-esz2.prod.hexiang-inc.cn`
ENVIRONMENT_LABELS = frozenset("prod production stg staging dev devel test qa uat preprod pre-prod nonprod".split())
# a dashed label's last words that say a cloud's private endpoint: `oss-cn-hangzhou-internal`, `s3-vpc`
_INTERNAL_PARTS = frozenset({"internal", "intranet", "vpc", "private"})
_FILE_ENDINGS = frozenset(
    """yaml yml json toml ini cfg conf txt log md rst html htm js mjs cjs ts tsx jsx py pyc pyi ipynb sh bash zsh
    fish lock csv tsv xml svg png jpg jpeg gif webp pdf zip gz tgz bz2 xz tar whl egg so dll exe bin dat db sqlite
    sqlite3 css scss map env example sample bak tmp swp pem crt key pub rs go java kt c h cpp hpp cs rb php lua pl
    sql proto graphql vue svelte wasm jar war plist mod sum""".split()
)
_HOST = LazyPattern(
    r"(?i)(?<![A-Za-z0-9_.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}(?![A-Za-z0-9_-]|\.[A-Za-z0-9])"
)
_HOST_BEFORE = LazyPattern(
    r"(?i)(?:://|@|\b(?:ssh|ping|host|hostname|server|curl|wget|nc|telnet|rsync|scp|mount|dig|nslookup|connect|at)"
    r"\s+(?:-\S+\s+)*|(?:主机|服务器|地址|域名|内网)\s*[:：是为]?\s*|host(?:name)?\s*:\s*)$"
)
_INTERNAL_SAID = LazyPattern(
    r"(?i)\bvpn\b|内网|內網|\bintranet\b|internal[ -]only|office\s+network|公司网络|堡垒机|跳板机|corporate\s+network"
)
_HOST_AFTER = LazyPattern(r":\d{2,5}(?!\d)")


@functools.cache
def _psl() -> object:
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


# the private ranges themselves, as documentation names them: no one's network is told by them
# a home router's address as its manual prints it: every home has it, so it names none
_ROUTER_DEFAULTS = frozenset("192.168.0.1 192.168.1.1 192.168.1.254 192.168.0.254 10.0.0.1 10.0.0.138".split())
# dynamic DNS: a name that follows a home's changing address (`nas48.synology.me`): it leads to that home
DYNAMIC_DNS = tuple(
    """synology.me myds.me quickconnect.to ddns.net duckdns.org no-ip.org no-ip.biz noip.me hopto.org zapto.org
    sytes.net dyndns.org dynu.net myfritz.net tplinkdns.com asuscomm.com freeddns.org ddnsfree.com dnsalias.com
    3322.org f3322.net oicp.net oicp.io vicp.net vicp.io oray.net""".split()
)
_WELL_KNOWN_RANGES = frozenset(
    "10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 169.254.0.0/16 100.64.0.0/10 fc00::/7 fd00::/8 fe80::/10".split()
)


class HostDetector:
    """Finds private addresses and internal host names."""

    kinds = ("private ip", "internal host")

    def __init__(self) -> None:
        self._addresses = RuleSet(ADDRESS_RULES, rank=400)

    def find(self, text: str) -> list[Span]:
        spans = self._addresses.find(text) if has_digit(text) or ":" in text else []
        spans = [s for s in spans if not _well_known_range(text, s) and not _router_default(text, s)]
        if "." in text:
            hosts = (m for m in _HOST.finditer(text) if _internal(text, m))
            spans += [Span(*_with_path(text, m), "internal host", 410) for m in hosts]
        return spans


def _with_path(text: str, m: re.Match[str]) -> tuple[int, int]:
    """An internal host's span, with the rest of its URL when it is one (an intranet page's path names its
    projects and people too)."""
    if text.endswith("://", 0, m.start()) and (path := _URL_REST.match(text, m.end())) is not None:
        return m.start(), path.end()
    return m.span()


_URL_REST = LazyPattern(r"(?::\d{1,5})?[/?#][^\s<>\"'`)\]，。）】]*")


def _router_default(text: str, span: Span) -> bool:
    return text[span.start : span.end] in _ROUTER_DEFAULTS


def _well_known_range(text: str, span: Span) -> bool:
    m = re.match(r"/\d{1,3}", text[span.end : span.end + 4])
    return m is not None and text[span.start : span.end] + m.group() in _WELL_KNOWN_RANGES


def _internal(text: str, m: re.Match[str]) -> bool:
    if text.startswith("…", m.end()):
        return False  # a label cut short ("api.exampl…"): no host is named
    host = m.group().lower().rstrip(".")
    labels = host.split(".")
    if labels[-1] in _FILE_ENDINGS or labels[-1].isdigit():
        return False
    if any(host.endswith("." + s) for s in PRIVATE_SUFFIXES):
        return len(labels[0]) >= 2
    if any(host.endswith("." + s) for s in DYNAMIC_DNS):
        return len(labels[0]) >= 3
    psl = _psl()
    registrable = psl.privatesuffix(host, accept_unknown=False)  # type: ignore[attr-defined]
    if registrable is None:  # no public suffix: a private name, when it stands where a host stands (as written:
        return m.group().islower() and _in_host_place(text, m)  # code's `Math.PI`, `p.test` are not hosts)
    sub = host[: -len(registrable)].rstrip(".").split(".") if host != registrable else []
    if any(label in INTERNAL_LABELS or set(label.split("-")[1:]) & _INTERNAL_PARTS for label in sub):
        return True
    if len(sub) >= 2 and sub[-1] in ENVIRONMENT_LABELS:
        return True
    return bool(sub) and sub != ["www"] and _said_internal(text, m)


def _said_internal(text: str, m: re.Match[str], reach: int = 60) -> bool:
    """A sentence around the host says it is reached from inside ("发布平台在 git.x.org，要先连公司 VPN")."""
    return bool(_INTERNAL_SAID.search(text, max(0, m.start() - reach), m.end() + reach))


def _in_host_place(text: str, m: re.Match[str]) -> bool:
    before = text[max(0, m.start() - 40) : m.start()]
    return bool(_HOST_BEFORE.search(before) or _HOST_AFTER.match(text, m.end()))
