"""Class 2, secret-shaped tokens: what a key looks like, with no word around it.

- Key blocks of any kind: `-----BEGIN … PRIVATE KEY-----` (PEM, OpenSSH, PGP's `PRIVATE KEY BLOCK`), PuTTY
  `.ppk` files, and base64 blobs of them (`LS0tLS1CRUdJTi…`, as kubeconfig's `client-key-data` holds).
- Made tokens: a run of a token alphabet long enough and random enough (Shannon entropy and how often the
  characters switch between lower case, upper case, digits and symbols), read whole with any prefix
  (`sk-ant-api03-…`), and carried over a line break when the next line goes on with the same token.

Allowed, because a wiki reader needs them: versions, dates, paths and URLs' words, public host names, UUIDs,
git SHAs and content hashes (hex of 7–12, 40, 64 or 128 digits; `sha256:`, `sha512-` and such prefixes),
colours, and identifiers made of words. A lower-cased copy of a token (a graph id, a slug) is still a token.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

from memwiki.site.gate.detect.spans import Span
from memwiki.text.screen import LazyPattern, Screened

_RUN = Screened(  # (`=` only as padding: `key=VALUE`)
    r"(?<![A-Za-z0-9])[A-Za-z0-9][A-Za-z0-9+/_~.-]{15,}={0,3}",
    r"[A-Za-z0-9][A-Za-z0-9+/_~.-]{15}",
)
_KEY_BLOCK = LazyPattern(  # (any case: a graph predicate or a slug is lower-cased by the tools that make it)
    r"(?i)-----BEGIN [A-Z0-9 ]*(?:PRIVATE KEY|PRIVATE KEY BLOCK|SECRET KEY|ENCRYPTED [A-Z ]*)-----[\s\S]*?"
    r"(?:-----END [A-Z0-9 ]*-----|\Z)"
)
_PUTTY = LazyPattern(
    r"(?i)(?:PuTTY-User-Key-File-\d+:|Private-Lines:[\s_]*\d+[\s_])[\s\S]*?(?:Private-MAC:\s*[0-9a-f]+|\Z)"
)
_B64_KEY = LazyPattern(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{20,}")  # base64 of "-----BEGIN"
_B64_LINES = Screened(  # a key's body, its header lost
    r"(?:^[ \t]*[A-Za-z0-9+/]{40,}={0,2}[ \t]*(?:\n|$)){3,}", r"[A-Za-z0-9+/]{40}(?:={0,2})[ \t]*\n", re.M
)
_HASH_PREFIX = LazyPattern(r"(?i)(?:sha(?:1|224|256|384|512)|md5|blake2[bs]?|sri)[-:]\s*[+/]?$")
_KEY_WORDS = LazyPattern(  # (a key's own name: `master.key`, `aes key`, 加密密匙; not a hash's: see _HASH_WORDS)
    r"(?i)wallet|priv(?:ate)?[ _-]?key|privkey|secret|私钥|钱包|seed|\bkeys?\b|密钥|密匙|秘钥|session|cookie"
    r"|[前后後]半段?|(?:first|second|other)\s+half|rest\s+of\s+(?:it|the\s+key)"  # a key sent in two messages
)
_HASH_WORDS = LazyPattern(r"(?i)md5|sha\d*|hash|digest|checksum|etag|fingerprint|commit|sum\b|摘要|校验")
_HASHED = LazyPattern(r"(?i)^(?:sha(?:1|224|256|384|512)|md5|blake2[bs]?)[-:]")  # an integrity or digest string
_UUID = LazyPattern(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_ADVISORY = LazyPattern(
    r"^(?:GHSA(?:-[2-9cfghjmpqrvwx]{4}){3}|CVE-\d{4}-\d{4,}|(?:PYSEC|RUSTSEC|GO)-\d{4}-\d+)$"
)  # public ids
_HEX = LazyPattern(r"^[0-9a-f]+$|^[0-9A-F]+$")


def _upper_key(token: str) -> bool:
    """128 or 256 bits in capital hex (a Z-Wave or Zigbee key, an AES key as tools print it): digests are written
    in small letters, and one in capitals (`Get-FileHash`) has a hash's name beside it."""
    return len(token) in (32, 64) and token.isupper() and any(c.isdigit() for c in token)


_VERSIONISH = LazyPattern(r"^[vV]?\d+(?:[._-]\d+)+(?:[._+-]?[A-Za-z]++\d*+)*+$")  # (possessive: see test_redos)
_SPLIT = LazyPattern(r"[_.~/+=-]+")
_CAMEL = LazyPattern(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_WORD = LazyPattern(
    r"^(?:[A-Za-z][a-z]*[aeiouy][a-z]*\d{0,3}|[A-Z]{1,5}\d{0,3}|(?=[A-Z]{2,9}$)[A-Z]*[AEIOUY][A-Z]*"
    r"|[A-Za-z][a-z]{0,2}\d{0,3}|\d+)$"
)
_HASH_LENGTHS = frozenset({40, 64, 96, 128}) | frozenset(range(7, 13))


def entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _class(c: str) -> int:
    return 0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3


_CLASSES = str.maketrans(
    {
        chr(c): "a" if chr(c).islower() else "A" if chr(c).isupper() else "0" if chr(c).isdigit() else "."
        for c in range(128)
    }
)


def switches(s: str) -> float:
    """How often neighbouring characters change class (lower, upper, digit, symbol), per character: about 0.5 for
    a random base62 token, under 0.2 for words and identifiers."""
    if s.isascii():  # (each character as its class's letter, symbols as themselves, compared in C)
        classes = s.translate(_CLASSES)
        changes = sum(map(str.__ne__, classes, classes[1:]))
    else:
        changes = sum(_class(a) != _class(b) for a, b in zip(s, s[1:], strict=False))
    return changes / max(len(s) - 1, 1)


@functools.lru_cache(maxsize=1 << 16)
def made(token: str) -> bool:
    """Whether `token` looks generated rather than written: long and random enough for its alphabet (remembered:
    a site's paths and ids come back on every page)."""
    core = token.strip("=.-_~")
    n = len(core)
    if n < 16:
        return False
    if (core.islower() or core.isupper()) and not any(map(str.isdigit, core)):
        return False  # one case and no digit: words, or a key too plain to tell (see `_one_case_made`)
    if _UUID.match(core) or _VERSIONISH.match(core) or _ADVISORY.match(core):
        return False
    if _HEX.match(core):
        return False  # digests and ids (git, MemPalace, Mongo): a hex key is known by the words around it
    if _written(core):
        return False  # words joined: an identifier, a path, a slug
    digits = sum(c.isdigit() for c in core)
    letters = sum(c.isalpha() for c in core)
    if letters < 4:
        return False  # a number with separators: a date, a phone, a version
    e, sw = entropy(core), switches(core)
    upper = any(c.isupper() for c in core)
    lower = any(c.islower() for c in core)
    if upper and lower:
        return e >= 3.6 and sw >= 0.28 and (digits > 0 or n >= 24)
    # one case only (a lower-cased copy of a token, or an upper-case key): a long random part, digits mixed in
    return any(_one_case_made(p) for p in re.split(r"[-_.~]+", core))


def _one_case_made(part: str) -> bool:
    """A part in one case: digits mixed in, or letters too poor in vowels to be words (a lower-cased key)."""
    if len(part) < 16 or not part.isalnum() or entropy(part) < 3.4 or _HEX.match(part):
        return False  # (hex inside an identifier is a digest or an id: a hex key is known by its context)
    digits = sum(c.isdigit() for c in part)
    letters = [c for c in part.lower() if c.isalpha()]
    vowels = sum(c in "aeiouy" for c in letters) / max(len(letters), 1)
    runs = [m.start() for m in re.finditer(r"\d+", part)]  # digits strewn through it, not a number at its end
    strewn = len(runs) >= 3 and runs[0] < len(part) * 0.6 and entropy(part) >= 3.8
    return (
        (digits >= 3 and switches(part) >= 0.25)
        or (len(part) >= 20 and digits >= 1 and vowels < 0.25)
        or (len(part) >= 20 and strewn)
    )


def _written(token: str) -> bool:
    """Words joined by separators or camel case (`site-packages`, `MyServiceName2024`, `getElementById`): each
    part a pronounceable word, an abbreviation or a short number, and most letters in words of three or more."""
    parts = []
    for seg in _SPLIT.split(token):
        if len(re.findall(r"(?<=[A-Za-z])\d|(?<=\d)[A-Za-z]", seg)) > 2:
            return False  # letters and digits interleaved: made, not written
        camel = _CAMEL.findall(seg)
        parts += camel if "".join(camel) == seg else [seg]
    if not parts or not all(_WORD.match(p) for p in parts):
        return False
    letters = [sum(c.isalpha() for c in p) for p in parts]
    if sum(n == 1 and len(p) == 1 for n, p in zip(letters, parts, strict=True)) > 2:
        return False  # cut by case into many short pieces (`FNmxajVoewYBzVC…`): random, not words joined
    return sum(n for n in letters if n >= 3) >= 0.6 * max(sum(letters), 1)


def _written_head(token: str) -> int:
    """Where the made part of a joined run starts: two or more parts before it (`entity-c681-https-api-example-com-
    v1-access-token-9382dffx…`, a slug or an id made from a sentence) are no part of the secret and stay readable."""
    parts = list(re.finditer(r"[^-_.~/]+", token))
    for i, part in enumerate(parts):
        if len(part.group()) >= 16 and made(part.group()):
            return part.start() if i >= 2 else 0  # (one part before it is a prefix: `hvs.`, `sk-`: kept with it)
    return 0


@functools.lru_cache(maxsize=1 << 16)
def _made_somewhere(token: str) -> bool:
    """`token` made, or a part of it (`discord_bot_token_mtycupkl…`: the run as a whole reads as words)."""
    return made(token) or any(made(p) for p in re.split(r"[-_./:]+", token) if len(p) >= 16)


class ShapeDetector:
    """Finds key blocks and made tokens; used by the gate and, on its own, by the site's final scan."""

    kinds = ("private key", "token")

    def find(self, text: str) -> list[Span]:
        spans: list[Span] = []
        low = text.lower()
        if "-----begin" in low:
            spans += [Span(*m.span(), "private key", 100) for m in _KEY_BLOCK.finditer(text)]
        if "putty-user-key-file" in low or "private-lines:" in low:
            spans += [Span(*m.span(), "private key", 100) for m in _PUTTY.finditer(text)]
        if "LS0tLS1CRUdJTi" in text:
            spans += [Span(*m.span(), "private key", 100) for m in _B64_KEY.finditer(text)]
        if "\n" in text:
            spans += [Span(m.start(), m.end(), "private key", 100) for m in _B64_LINES.finditer(text)]
        if "[" in text:
            spans += [Span(*m.span(), "private key", 100) for m in _BYTE_ARRAY.finditer(text) if _key_bytes(m.group())]
        if "\n" in text:  # a token wrapped over lines, each line only a part of it
            for m in _TOKEN_LINES.finditer(text):
                joined = "".join(m.group().split())
                if made(joined) and not made(m.group().split()[0]):
                    spans.append(Span(m.start(), m.end(), "token", 500))
        spans += _grouped_keys(text) + _typed_keys(text) + _spelled(text)
        for m in _QUOTED.finditer(text):  # '8ECa(#!LRGfHp': quoted, and typed like a password
            if typed(m.group(2)):
                spans.append(Span(m.start(2), m.end(2), "password", 500))
        for m in _RUN.finditer(text):
            token = m.group()
            hexadecimal = _HEX.match(token) is not None  # (never made: a hex key is known by the words before it)
            if not (hexadecimal and len(token) >= 20 or _made_somewhere(token)):
                continue
            if _HASH_PREFIX.search(text, max(0, m.start() - 8), m.start()) or _HASHED.match(token):
                continue
            if "redacted" in token.lower():
                continue  # a label, slugged into a URL or an id
            if _PUBLIC_KEY_TYPE.search(text, max(0, m.start() - 40), m.start()) or _jwt_header(token):
                continue  # a public key (`ssh-ed25519 AAAA…`, a known_hosts line), a JWT's header alone
            if hexadecimal:
                near, before = max(0, m.start() - 40), max(0, m.start() - 80)
                keyed = _KEY_WORDS.search(text, before, m.start()) or _upper_key(token)
                if keyed and not _HASH_WORDS.search(text, near if not _upper_key(token) else before, m.start()):
                    spans.append(Span(m.start(), m.end(), "private key", 500))  # a wallet's key, not a digest
            else:
                a, b = wrapped_start(text, m.start() + _written_head(token)), wrapped_end(text, m.start(), m.end())
                spans.append(Span(a, b, "token", 500))
        return spans


_PUBLIC_KEY_TYPE = LazyPattern(
    r"(?:ssh-(?:ed25519|rsa|dss)|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)\s+$"
)
_GROUPED = Screened(
    r"(?<![\w-])[A-Za-z0-9]{4,6}([- ])[A-Za-z0-9]{4,6}(?:\1[A-Za-z0-9]{4,6}){3,}(?![\w-])",
    r"[A-Za-z0-9]{4,6}(?:[- ][A-Za-z0-9]{4,6}){4}",
)
# a group with a digit and two more groups on one side of it: five groups with a digit among them have that (words
# of a sentence seldom do: the groups are looked for only then)
_DIGIT_GROUPS = Screened(
    r"[A-Za-z0-9]*[0-9][A-Za-z0-9]*[- ][A-Za-z0-9]{4,6}[- ][A-Za-z0-9]{4,6}"
    r"|[A-Za-z0-9]{4,6}[- ][A-Za-z0-9]{4,6}[- ][A-Za-z0-9]*[0-9]"
)
_YUBIKEY_OTP = LazyPattern(r"(?<![a-z])cccc[cbdefghijklnrtuv]{40}(?![a-z])")  # a YubiKey's one-time password
_LOWER_KEY = LazyPattern(r"(?<![\w-])sk-[a-z]{32,}(?![\w-])")  # an `sk-` key of one case (SiliconFlow and others)


def _grouped_keys(text: str) -> list[Span]:
    """Keys written in equal groups: a product key (`QTFV6-QBV99-…`, five of five), a BitLocker recovery key
    (eight of six digits), a Matrix security key (twelve of four). Not a fingerprint (hex), a date or a phone."""
    spans = []
    if ("-" not in text and " " not in text) or not _DIGIT_GROUPS.occurs(text):
        return spans
    for m in _GROUPED.finditer(text):
        groups = m.group().split(m.group(1))
        if len({len(g) for g in groups}) != 1 or not any(c.isdigit() for c in m.group()):
            continue
        digits_only = all(g.isdigit() for g in groups)
        if digits_only and not (m.group(1) == "-" and len(groups) >= 6):
            continue  # numbers in groups: a card or a phone is known by its own rule
        if not digits_only and all(_HEX.match(g) for g in groups):
            continue  # a fingerprint, a hash in groups
        if not digits_only and m.group(1) == " " and len(groups) < 6:
            continue  # words of four or five letters and digits in a sentence
        if sum(g.isalpha() and (g.islower() or g.istitle()) for g in groups) * 2 >= len(groups):
            continue  # words of one length in a sentence (`2716 wiki fact fact rule wiki`), not drawn characters
        spans.append(Span(*m.span(), "token", 500))
    return spans


def _typed_keys(text: str) -> list[Span]:
    """A YubiKey's one-time password, an `sk-` key of one case."""
    spans = []
    for pattern, literal in ((_YUBIKEY_OTP, "cccc"), (_LOWER_KEY, "sk-")):
        if literal in text:
            spans += [Span(*m.span(), "token", 500) for m in pattern.finditer(text) if len(set(m.group())) > 6]
    return spans


_NATO = frozenset(
    """alfa alpha bravo charlie delta echo foxtrot golf hotel india juliet juliett kilo lima mike november oscar
    papa quebec romeo sierra tango uniform victor whiskey whisky xray x-ray yankee zulu""".split()
)
_SAID_DIGITS = frozenset("zero oh one two three four five six seven eight nine niner".split())
_SPOKEN = "|".join(sorted(_NATO | _SAID_DIGITS, key=len, reverse=True)).replace("-", "\\-")
_SPELLED = Screened(  # six or more words of the phonetic alphabet and spoken digits in a row
    rf"(?i)(?<![\w-])(?:(?:{_SPOKEN})[ ,]+){{5,}}(?:{_SPOKEN})(?![\w-])",
    rf"(?i)(?:(?:{_SPOKEN})[ ,]+){{5}}(?:{_SPOKEN})",
)
GOOGLE_APP_PASSWORD = Screened(  # four groups of four letters
    r"(?<![\w-])[a-z]{4}(?: [a-z]{4}){3}(?![\w-])",
    r"(?:^|[^\w-])[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4}(?:[^\w-]|$)",  # (whole words: four-letter words of prose)
)


def _spelled(text: str) -> list[Span]:
    """A secret read out: six words or more of the phonetic alphabet and spoken digits, two of them phonetic
    (`two india xray golf charlie india`); an app password in four groups of four letters, two or more of
    them no syllable (three consonants in a row: `cava ggbp mwmn csug`)."""
    spans = []
    for m in _SPELLED.finditer(text):
        if sum(w in _NATO for w in re.split(r"[ ,]+", m.group().lower())) >= 2:
            spans.append(Span(*m.span(), "password", 500))
    if " " in text:
        for m in GOOGLE_APP_PASSWORD.finditer(text):
            if sum(bool(re.search("[^aeiou]{3}", g)) for g in m.group().split()) >= 2:  # (no syllable: `hqja`)
                spans.append(Span(*m.span(), "password", 500))
    return spans


def _jwt_header(token: str) -> bool:
    """Only a JWT's first part (`eyJhbGciOi…`, no dots): base64 of `{"alg": …}`, no secret in it."""
    if not token.startswith("eyJ") or "." in token:
        return False
    import base64
    import json

    try:
        header = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except ValueError:
        return False
    return isinstance(header, dict) and "alg" in header and set(header) <= {"alg", "typ", "kid", "cty", "x5t"}


_BYTE = r"(?:0[xX][0-9a-fA-F]{1,2}|\d{1,3})"
_BYTE_ARRAY = LazyPattern(rf"\[\s*(?:{_BYTE}\s*,\s*){{15,}}{_BYTE}\s*\]")


def _key_bytes(array: str) -> bool:
    """A list of 16, 32 or 64 bytes is a key's bytes (a Zigbee network key, a Solana keypair file, a seed)."""
    values = [int(v, 0) for v in re.findall(r"0[xX][0-9a-fA-F]+|\d+", array)]
    return len(values) in (16, 32, 64) and max(values) <= 255 and len(set(values)) > 8


_QUOTED = Screened(  # (and in the corner brackets Chinese quotes with: 「X」)
    r"""([`'"‘“「『])(?<!\w['"`‘“])([^\s'"`‘’“”「」『』]{8,64})(['"`’”」』])""",  # (a quote first: Python's
    # engine then skips to the next quote; the look-behind after it keeps a quote after a letter out)
    r"""['"`‘“「『][^\s'"`‘’“”「」『』]{8,64}['"`’”」』]""",
)
_TOKEN_LINES = LazyPattern(r"(?m)^[ \t]*[A-Za-z0-9+/=_.-]{6,}[ \t]*(?:\n[ \t]*[A-Za-z0-9+/=_.-]{6,}[ \t]*)+$")


@functools.lru_cache(maxsize=1 << 14)
def typed(value: str) -> bool:
    """A password as people type one: no spaces, symbols inside it, and three kinds of character or all four."""
    if value.startswith(("http", "/", "$", "{", "<", "%", "#")):
        return False
    classes = {_class(c) for c in value}
    if not classes >= {0, 1, 3}:
        return False  # (both cases and a symbol: what both shapes below need, and most quoted strings lack)
    if _written(re.sub(r"[^A-Za-z0-9]+", "_", value).strip("_")):
        return False  # code: `secrets.token_urlsafe(32)`
    inner = sum(_class(c) == 3 for c in value[1:-1])
    if "/" in value or "\\" in value or re.search(r"\.[a-z]{1,5}$", value):
        return False  # a path, a URL, a file name
    if classes == {0, 1, 2, 3}:
        return inner >= 1
    return classes == {0, 1, 3} and inner >= 2 and len(value) >= 10


_NEXT_LINE = LazyPattern(  # (a line break a one-line field made a space: then the part is 12 or more)
    r"(?:[\"'][ \t]*\+?[ \t]*)?(?:\n[ \t]*[\"']?([A-Za-z0-9+/=_-]{6,})|[ \t][\"']?([A-Za-z0-9+/=_-]{12,}))"
    r"(?=[\"'\s;,)]|$)"
)


_PART_BEFORE = LazyPattern(r"(?<![^\s])([A-Za-z0-9_+/=-]{12,64})[ \t]*\n?[ \t]*$")
# a provider token's head: a short lower-case prefix and `_`, then both cases and digits (`glsa_ZfiptxroqpQ4ymly`)
_PREFIXED_HEAD = LazyPattern(r"[a-z]{2,8}_(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{12,}")


def wrapped_start(text: str, start: int) -> int:
    """A token whose first part was cut off by a line break (or a one-line field's space) before it: that part, when
    it is typed as a token's head is (`glsa_Fmlm1cvbkslelfzx`: a prefix, a digit, both cases). Across a line break
    itself, a run of two kinds of character is enough (`nlWTWkNAwLJEWKxy`): a 12-character run alone on the end of
    the line before a token is seldom anything but its head; across a space, a head with a provider's prefix."""
    m = _PART_BEFORE.search(text, max(0, start - 80), start)
    if m is None or m.end() != start:
        return start
    part = m.group(1)
    if any(c.isdigit() for c in part) and (made(part) or typed(part)):
        return m.start(1)
    if "\n" in text[m.end(1) : start]:
        return m.start(1) if len({_class(c) for c in part if c.isalnum()}) >= 2 else start
    return m.start(1) if _PREFIXED_HEAD.fullmatch(part) else start


def wrapped_end(text: str, start: int, end: int) -> int:
    """A token cut by a line break (or by a string concatenation, `"ab" +\n "cd"`) goes on on the next line when
    that line is one more run of its alphabet: made, or written only in the characters the token has."""
    alphabet = set(text[start:end])
    hex_tail = bool(_HEX.match(re.split(r"[-_]", text[start:end])[-1]))
    while (m := _NEXT_LINE.match(text, end)) is not None:
        group = 1 if m.group(1) else 2
        part = m.group(group)
        same = any(c.isdigit() for c in part) and (set(part) <= alphabet or (hex_tail and bool(_HEX.match(part))))
        joined = "+" in text[end : m.start(group)]  # `"ab" + "cd"`: said to be one string
        if not (same if group == 2 and not joined else made(part) or switches(part) >= 0.3 or same):
            break
        end = m.end(group)
    return end
