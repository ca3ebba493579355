"""Blind canary set, round 8: written blind (without reading the detectors, the tests or rounds 1-7) on 2026-12-03.

Format as in tests/blind/example_set.py. Every generator draws all of its random parts from the rng it is given and
returns (secret, text) with the secret verbatim in the text.

What it covers: the odd corners of a developer's life that a rule list is unlikely to have anticipated rather than
the well-known provider keys: credentials of less common and invented providers, some with no telling word nearby
(Telegram bot tokens inside the API URL, Discord webhooks, Terraform Cloud, Artifactory, Mailchimp, Tailscale,
Atlassian, Twilio SID/token pairs, Azure SAS signatures, S3/OSS presigned signatures, Google client secrets, ya29
access and refresh tokens, Home Assistant JWTs); passwords written down every way people do (prose, voice-memo
transcripts spelled in NATO words or in Chinese numerals, dictated letters and IT-desk mails, Markdown tables,
tab-separated Excel pastes, CSV exports of password managers, Wi-Fi QR payloads, .netrc/.pgpass, mysql -pPASS,
sshpass, net use, PowerShell SecureString, JDBC/ODBC/AMQP URLs, Maven settings.xml, Gradle signing configs, HTML
comments, <details> blocks, footnotes, Markdown links with user:pass@, JSON tool output, tracebacks, access logs,
git diffs, code that splits a token across string literals, a password sent in two halves); key material (OpenSSH,
RSA, PGP and PuTTY key bodies, WireGuard, age, Vault unseal keys and root tokens, Cisco type-7, kubeadm and swarm
join tokens, Django/Rails/Laravel app secrets, AES keys in hex, base64-wrapped passwords, htpasswd/shadow/bcrypt
hashes); recovery material (BitLocker keys, 1Password Secret Keys, BIP39 seed phrases in English and Chinese, WIF
and Ethereum private keys, TOTP seeds, GitHub and Google recovery codes, Steam revocation codes, SIM PUKs);
PINs, door, garage, safe and smart-lock codes, parcel pick-up codes, SMS codes; personal data with valid check
digits (Chinese, Hong Kong and Taiwan ids, US SSN, UK NI and NHS numbers, Medicare MBI, IBANs of DE/GB/NL/CH,
ABA routing + account, Luhn-valid Visa/Amex/UnionPay cards, passport MRZ lines, German ID card, Dutch BSN, Spanish
DNI, Polish PESEL, Brazilian CPF, Indian Aadhaar with Verhoeff, Singapore NRIC, Japanese My Number, Korean RRN,
French NIR, Chinese VINs), phones of ten countries and regions, e-mails (obfuscated, full-width ＠, plus-addressed, QQ),
home and delivery addresses, licence plates (CN, UK, DE), health and insurance numbers; internal host names,
private IPv4/IPv6, Tailscale and DDNS names, jump hosts; account names; and Chinese IM and tool habits (全角标点,
mm/账密/口令, 秘钥/密匙 typos, 群聊 and 聊天 turns, 网盘提取码, 腾讯会议, 钉钉/企微/飞书 robots, 小程序 and
微信支付 secrets, B站 SESSDATA, BDUSS, 机场订阅, vmess UUIDs, ss:// links, 宝塔 install output, ToDesk codes,
光猫超级密码, 宽带账号). ORDINARY holds 86 strings that must pass; 39 of them look secret-ish.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable

Gen = Callable[[random.Random], tuple[str, str]]

KINDS: dict[str, Gen] = {}
_ZH: set[str] = set()


def _kind(name: str, *, zh: bool = False) -> Callable[[Gen], Gen]:
    def register(fn: Gen) -> Gen:
        if name in KINDS:
            raise ValueError(f"duplicate kind {name!r}")
        KINDS[name] = fn
        if zh:
            _ZH.add(name)
        return fn

    return register


# ---------------------------------------------------------------- alphabets and small helpers

_LOW = string.ascii_lowercase
_UP = string.ascii_uppercase
_DIG = string.digits
_ALNUM = string.ascii_letters + string.digits
_LOWDIG = _LOW + _DIG
_UPDIG = _UP + _DIG
_HEX = "0123456789abcdef"
_B64URL = _ALNUM + "-_"
_B64 = _ALNUM + "+/"
_B32 = _UP + "234567"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_SYM = "!%+=?@.-"  # symbols that Markdown leaves alone
_URLSYM = "-."  # symbols that need no escaping in a URL or a shell word
_CN_DIGITS = "零一二三四五六七八九"


def _w(r: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _d(r: random.Random, n: int) -> str:
    """n digits, the first not 0."""
    return r.choice("123456789") + _w(r, n - 1, _DIG)


def _hex(r: random.Random, n: int) -> str:
    return _w(r, n, _HEX)


def _bytes(r: random.Random, n: int) -> bytes:
    return bytes(r.getrandbits(8) for _ in range(n))


def _b64(r: random.Random, n: int) -> str:
    return base64.b64encode(_bytes(r, n)).decode()


def _b64s(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _b64url_json(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _pw(r: random.Random, n: int = 14, sym: str = _SYM) -> str:
    """A password of n characters: every class present, a letter or digit at both ends."""
    core = [r.choice(_UP), r.choice(_LOW), r.choice(_DIG), r.choice(sym)]
    core += [r.choice(_ALNUM + sym) for _ in range(n - 6)]
    r.shuffle(core)
    return r.choice(_ALNUM) + "".join(core) + r.choice(_ALNUM)


def _upw(r: random.Random, n: int = 16) -> str:
    """A password that is safe inside a URL or a shell word."""
    return _pw(r, n, _URLSYM)


def _uuid(r: random.Random) -> str:
    return str(uuid.UUID(int=r.getrandbits(128), version=4))


def _ip10(r: random.Random) -> str:
    return f"10.{r.randint(16, 250)}.{r.randint(2, 250)}.{r.randint(2, 250)}"


def _ip172(r: random.Random) -> str:
    return f"172.{r.randint(16, 31)}.{r.randint(2, 250)}.{r.randint(2, 250)}"


def _ip192(r: random.Random) -> str:
    return f"192.168.{r.randint(2, 250)}.{r.randint(2, 250)}"


def _pubip(r: random.Random) -> str:
    return f"{r.choice([47, 39, 101, 121, 139])}.{r.randint(16, 250)}.{r.randint(2, 250)}.{r.randint(2, 250)}"


_SYLLABLES = ["zen", "kor", "vali", "mira", "tek", "lum", "quor", "brix", "nova", "sel", "dra", "fen", "oru", "pax"]


def _co(r: random.Random) -> str:
    """A made-up company word, random enough to be found only where it was planted."""
    return r.choice(_SYLLABLES) + r.choice(_SYLLABLES) + _w(r, 2, _LOWDIG)


_FIRST = ["marta", "jonas", "priya", "tomasz", "keiko", "diego", "ines", "henrik", "amara", "lucas", "sofia", "niamh"]
_LAST = ["kowalczyk", "okafor", "lindqvist", "nakamura", "fernandes", "haddad", "brennan", "varga", "moreau"]
_PY_SUR = ["zhang", "wang", "li", "liu", "chen", "yang", "zhao", "huang", "zhou", "wu", "xu", "sun", "gao", "lin"]
_PY_GIVEN = ["wei", "fang", "xiuying", "min", "jing", "qiang", "lei", "jun", "yong", "yan", "jie", "tao", "ming"]
_CN_SUR = "张王李刘陈杨赵黄周吴徐孙胡朱高林何郭马罗"
_CN_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰涛明超秀霞平刚桂英华"


def _user(r: random.Random) -> str:
    return f"{r.choice(_FIRST)}.{r.choice(_LAST)}{r.randint(2, 98)}"


def _py(r: random.Random) -> str:
    return r.choice(_PY_SUR) + r.choice(_PY_GIVEN)


def _cn_name(r: random.Random) -> str:
    return r.choice(_CN_SUR) + r.choice(_CN_GIVEN) + r.choice(["", r.choice(_CN_GIVEN)])


def _pem_line(r: random.Random, n: int = 64) -> str:
    return _w(r, n, _B64)


# ---------------------------------------------------------------- check digits

_CN_REGIONS = ["110105", "310104", "440305", "330106", "510107", "420111", "320102", "500103", "370202", "610113"]


def _cn_id(r: random.Random) -> str:
    birth = f"{r.randint(1962, 2003)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    body = r.choice(_CN_REGIONS) + birth + _w(r, 3, _DIG)
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(body, weights, strict=True))
    return body + "10X98765432"[total % 11]


def _hkid(r: random.Random) -> str:
    letter, digits = r.choice(_UP), _w(r, 6, _DIG)
    total = 36 * 9 + (ord(letter) - 55) * 8 + sum(int(c) * w for c, w in zip(digits, range(7, 1, -1), strict=True))
    check = (11 - total % 11) % 11
    return f"{letter}{digits}({'A' if check == 10 else check})"


_TW_LETTERS = dict(zip("ABCDEFGHJKLMNPQRSTUVXYWZIO", range(10, 36), strict=True))


def _twid(r: random.Random) -> str:
    letter = r.choice("ABCDEFGHJKLMNPQRSTUVXYWZ")
    n = _TW_LETTERS[letter]
    digits = r.choice("12") + _w(r, 7, _DIG)
    total = n // 10 + (n % 10) * 9 + sum(int(c) * w for c, w in zip(digits, range(8, 0, -1), strict=True))
    return f"{letter}{digits}{(10 - total % 10) % 10}"


def _luhn(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + _w(r, length - len(prefix) - 1, _DIG)
    total = 0
    for i, ch in enumerate(reversed(body)):
        v = int(ch) * (2 if i % 2 == 0 else 1)
        total += v - 9 if v > 9 else v
    return body + str((10 - total % 10) % 10)


def _groups(s: str, *sizes: int, sep: str = " ") -> str:
    out, i = [], 0
    for n in sizes:
        out.append(s[i : i + n])
        i += n
    return sep.join(out)


def _iban(cc: str, bban: str) -> str:
    num = "".join(str(int(c, 36)) for c in bban + cc + "00")
    raw = f"{cc}{98 - int(num) % 97:02d}{bban}"
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def _mrz_check(s: str) -> str:
    total = sum((0 if ch == "<" else int(ch, 36)) * (7, 3, 1)[i % 3] for i, ch in enumerate(s))
    return str(total % 10)


def _nhs(r: random.Random) -> str:
    while True:
        body = r.choice("4567") + _w(r, 8, _DIG)
        check = 11 - sum(int(c) * w for c, w in zip(body, range(10, 1, -1), strict=True)) % 11
        check = 0 if check == 11 else check
        if check != 10:
            return _groups(body + str(check), 3, 3, 4)


_MBI_ALPHA = "ACDEFGHJKMNPQRTUVWXY"


def _mbi(r: random.Random) -> str:
    a, n = _MBI_ALPHA, _DIG
    shape = ["123456789", a, a + n, n, a, a + n, n, a, a, n, n]
    return _groups("".join(r.choice(x) for x in shape), 4, 3, 4, sep="-")


def _aba(r: random.Random) -> str:
    head = f"{r.choice([r.randint(1, 12), r.randint(21, 32)]):02d}" + _w(r, 6, _DIG)
    d = [int(c) for c in head]
    partial = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5])
    return head + str((10 - partial % 10) % 10)


def _bsn(r: random.Random) -> str:
    while True:
        body = r.choice("123456789") + _w(r, 7, _DIG)
        last = sum(int(c) * w for c, w in zip(body, range(9, 1, -1), strict=True)) % 11
        if last < 10:
            return body + str(last)


def _dni(r: random.Random) -> str:
    n = _d(r, 8)
    return n + "TRWAGMYFPDXBNJZSQVHLCKE"[int(n) % 23]


def _pesel(r: random.Random) -> str:
    year, month, day = r.randint(1965, 2004), r.randint(1, 12), r.randint(1, 28)
    body = f"{year % 100:02d}{month + (20 if year >= 2000 else 0):02d}{day:02d}{_w(r, 4, _DIG)}"
    total = sum(int(c) * w for c, w in zip(body, (1, 3, 7, 9, 1, 3, 7, 9, 1, 3), strict=True))
    return body + str((10 - total % 10) % 10)


def _cpf(r: random.Random) -> str:
    d = [int(c) for c in _d(r, 9)]
    for n in (10, 11):
        rem = sum(v * w for v, w in zip(d, range(n, 1, -1), strict=True)) % 11
        d.append(0 if rem < 2 else 11 - rem)
    s = "".join(map(str, d))
    return f"{s[:3]}.{s[3:6]}.{s[6:9]}-{s[9:]}"


_VD = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
    [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
    [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
    [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
    [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
    [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
]
_VP = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
    [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
    [9, 4, 5, 3, 1, 2, 8, 7, 6, 0],
    [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
    [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
]
_VINV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]


def _verhoeff(body: str) -> str:
    c = 0
    for i, ch in enumerate(reversed(body)):
        c = _VD[c][_VP[(i + 1) % 8][int(ch)]]
    return str(_VINV[c])


def _aadhaar(r: random.Random) -> str:
    body = r.choice("23456789") + _w(r, 10, _DIG)
    return _groups(body + _verhoeff(body), 4, 4, 4)


def _nric(r: random.Random) -> str:
    digits = _w(r, 7, _DIG)
    total = sum(int(c) * w for c, w in zip(digits, (2, 7, 6, 5, 4, 3, 2), strict=True))
    return f"S{digits}{'JZIHGFEDCBA'[total % 11]}"


def _my_number(r: random.Random) -> str:
    body = r.choice("123456789") + _w(r, 10, _DIG)
    total = sum(int(ch) * (n + 1 if n <= 6 else n - 5) for n, ch in enumerate(reversed(body), start=1))
    rem = total % 11
    return _groups(body + str(0 if rem <= 1 else 11 - rem), 4, 4, 4)


def _rrn(r: random.Random) -> str:
    body = f"{r.randint(60, 99):02d}{r.randint(1, 12):02d}{r.randint(1, 28):02d}{r.choice('12')}{_w(r, 5, _DIG)}"
    total = sum(int(c) * w for c, w in zip(body, (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5), strict=True))
    return f"{body[:6]}-{body[6:]}{(11 - total % 11) % 10}"


def _nir(r: random.Random) -> str:
    dept = r.randint(1, 95)
    dept = 21 if dept == 20 else dept
    parts = [r.choice("12"), f"{r.randint(60, 99):02d}", f"{r.randint(1, 12):02d}", f"{dept:02d}"]
    parts += [f"{r.randint(1, 999):03d}", f"{r.randint(1, 999):03d}"]
    key = 97 - int("".join(parts)) % 97
    return " ".join([*parts, f"{key:02d}"])


def _nino(r: random.Random) -> str:
    while True:
        pre = r.choice("ABCEGHJKLMNOPRSTWXYZ") + r.choice("ABCEGHJKLMNPRSTWXYZ")
        if pre not in {"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"}:
            break
    return f"{pre} {_groups(_w(r, 6, _DIG), 2, 2, 2)} {r.choice('ABCD')}"


_DE_ID = "CFGHJKLMNPRTVWXYZ0123456789"


def _de_id(r: random.Random) -> str:
    body = r.choice("LMNPRTVWXY") + _w(r, 8, _DE_ID)
    return body + _mrz_check(body)


_VIN_ALPHA = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
_VIN_VAL = {str(i): i for i in range(10)}
_VIN_VAL |= dict(zip("ABCDEFGH", range(1, 9), strict=True)) | dict(zip("JKLMN", range(1, 6), strict=True))
_VIN_VAL |= {"P": 7, "R": 9} | dict(zip("STUVWXYZ", range(2, 10), strict=True))
_VIN_W = (8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2)


def _vin(r: random.Random) -> str:
    draft = r.choice(["LSV", "LFV", "LGB", "LVS", "LHG", "LRW"]) + _w(r, 5, _VIN_ALPHA) + "0"
    draft += r.choice("LMNPRS") + r.choice(_VIN_ALPHA) + _w(r, 6, _DIG)
    c = sum(_VIN_VAL[ch] * w for ch, w in zip(draft, _VIN_W, strict=True)) % 11
    return draft[:8] + ("X" if c == 10 else str(c)) + draft[9:]


# ---------------------------------------------------------------- word lists

_BIP39 = (
    "abandon ability absorb abstract access accident acid acoustic acquire action actress adapt addict adjust admit "
    "advance aerobic affair afford agent airport aisle alarm album alcohol alien alley almost alpha amateur amazing "
    "anchor ancient angle animal ankle announce antenna antique anxiety apology approve arctic arena armor arrow "
    "artefact artwork asthma athlete atom auction august autumn avocado awkward axis badge bamboo banana barrel basket "
    "beauty bench betray bicycle biology blanket blossom blouse blush bonus border borrow bracket brass breeze brisk "
    "broccoli bronze broom bubble buddy buffalo bulb bundle bunker burger cabbage cactus canal canoe canvas canyon "
    "captain carbon cargo carpet casino castle catalog cattle caution ceiling celery cement census cereal chalk "
    "chaos chimney chronic chuckle cinnamon citizen clarify claw clinic clog clump cluster clutch coconut coil comic "
    "copper coral cotton couch coyote cradle crane crater cricket crisp crouch crucial crumble crystal cupboard "
    "curtain cushion cycle dolphin donkey dragon drastic eagle eclipse elbow embark empower enrich erosion estate "
    "fabric falcon fatigue ferry fiction fossil fragile galaxy garlic gesture giraffe glacier gorilla gravity "
    "hamster harvest hedgehog helmet hybrid iceberg igloo jaguar jungle kangaroo kiwi lantern lizard lobster "
    "magnet mango marble meadow mosquito muffin napkin nephew oyster paddle panther pelican pepper pistol plunge "
    "pumpkin puzzle quantum rabbit raccoon ribbon rocket saddle salmon scorpion sponsor squirrel tornado tortoise "
    "trumpet tunnel turtle umbrella unicorn vacuum velvet volcano walnut whisper wombat yogurt zebra"
).split()

_BIP39_ZH = list(
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所"
    "民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日"
)

_NATO = (
    "alfa bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo "
    "sierra tango uniform victor whiskey xray yankee zulu zero one two three four five six seven eight niner"
).split()

_STREETS = ["Larkspur", "Wexford", "Juniper", "Alder", "Sycamore", "Hawthorne", "Linden", "Mulberry", "Tamarack"]
_CITIES = [("Somerville", "MA", "021"), ("Evanston", "IL", "602"), ("Boulder", "CO", "803"), ("Tacoma", "WA", "984")]
_CN_CITY = [
    ("上海市", "徐汇区"),
    ("北京市", "朝阳区"),
    ("深圳市", "南山区"),
    ("杭州市", "西湖区"),
    ("成都市", "武侯区"),
]
_CN_ROADS = ["漕溪北路", "望京西路", "科苑南路", "文三路", "天府大道", "体育西路", "中山北路", "珞喻路", "长寿路"]
_CN_PROV = "京沪粤浙苏川鄂"
_PLATE = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"


# ================================================================ English kinds
# ---------------------------------------------------------------- tokens of less common and invented providers


@_kind("telegram bot token inside the API url")
def k_telegram(r: random.Random) -> tuple[str, str]:
    s = f"{r.randint(5_000_000_000, 7_999_999_999)}:AA{_w(r, 33, _B64URL)}"
    return s, (
        f"ops notifier cron: curl -s https://api.telegram.org/bot{s}/sendMessage "
        f"-d chat_id=-100{_d(r, 10)} -d text=backup-ok"
    )


@_kind("discord webhook url, no telling word")
def k_discord(r: random.Random) -> tuple[str, str]:
    s = f"https://discord.com/api/webhooks/{_d(r, 19)}/{_w(r, 68, _B64URL)}"
    return s, f"build alerts for the homelab go to {s} (the #ops channel)"


@_kind("gmail app password written with spaces")
def k_gmail_app(r: random.Random) -> tuple[str, str]:
    s = " ".join(_w(r, 4, _LOW) for _ in range(4))
    return s, f"Thunderbird/IMAP on the ThinkPad wants the 16-letter one, not the normal login: {s}"


@_kind("apple app-specific password")
def k_apple_asp(r: random.Random) -> tuple[str, str]:
    s = "-".join(_w(r, 4, _LOW) for _ in range(4))
    return s, f"iCloud app-specific pw for DAVx5 (calendar + contacts sync on the Pixel) = {s}"


@_kind("1password secret key from the emergency kit")
def k_1password(r: random.Random) -> tuple[str, str]:
    a = "23456789ABCDEFGHJKLMNPQRSTVWXYZ"
    s = "A3-" + "-".join(_w(r, n, a) for n in (6, 6, 5, 5, 5, 5))
    return s, f"Emergency Kit (printed, in the fire safe): sign-in my.1password.eu, Secret Key {s}"


@_kind("bitlocker recovery key")
def k_bitlocker(r: random.Random) -> tuple[str, str]:
    s = "-".join(_w(r, 6, _DIG) for _ in range(8))
    key_id = _uuid(r).upper()
    return s, (
        "BitLocker asked for recovery after the BIOS update on the Dell.\n"
        f"Recovery key ID: {key_id[:8]}\nFull ID: {key_id}\nRecovery key: {s}"
    )


@_kind("hashicorp vault root token, legacy s. form")
def k_vault_root(r: random.Random) -> tuple[str, str]:
    s = "s." + _w(r, 24)
    return s, (
        f"output of `vault operator init` on vault-0:\n\nInitial Root Token: {s}\n\n"
        "Vault initialized with 5 key shares and a key threshold of 3."
    )


@_kind("cisco type-7 password in a running-config paste")
def k_cisco7(r: random.Random) -> tuple[str, str]:
    s = f"0{r.randint(0, 9)}" + _w(r, 18, "0123456789ABCDEF")
    return s, (
        f"core-sw1#show run | i username\nusername netadmin privilege 15 password 7 {s}\n"
        "(type 7 is reversible, fix this)"
    )


@_kind("age secret key file")
def k_age(r: random.Random) -> tuple[str, str]:
    s = "AGE-SECRET-KEY-1" + _w(r, 58, _BECH32.upper())
    return s, (
        f"~/.config/sops/age/keys.txt\n# created: 2026-11-02T21:14:09+01:00\n"
        f"# public key: age1{_w(r, 58, _BECH32)}\n{s}"
    )


@_kind("bip39 seed phrase on a recovery sheet")
def k_bip39(r: random.Random) -> tuple[str, str]:
    s = " ".join(r.choice(_BIP39) for _ in range(12))
    return s, f"Ledger Nano recovery sheet, copied off the card before shredding it: {s}"


@_kind("bitcoin WIF private key, no telling word")
def k_wif(r: random.Random) -> tuple[str, str]:
    s = r.choice("KL") + _w(r, 51, _B58)
    return s, f"paper wallet from 2017 found in the desk drawer, sweep it when fees are low: {s}"


@_kind("google backup code")
def k_google_backup(r: random.Random) -> tuple[str, str]:
    codes = [f"{_w(r, 4, _DIG)} {_w(r, 4, _DIG)}" for _ in range(10)]
    s = codes[r.randrange(10)]
    lines = "\n".join(f"{i + 1}. {c}" for i, c in enumerate(codes))
    return s, f"Backup codes for {_user(r)}@gmail.com (each can be used once):\n{lines}"


@_kind("sim card PUK")
def k_puk(r: random.Random) -> tuple[str, str]:
    s = _d(r, 8)
    return s, f"SIM holder card (Vodafone, the travel SIM): PIN1 0000, PUK1 {s}, PUK2 {_d(r, 8)}"


@_kind("garage keypad code")
def k_garage(r: random.Random) -> tuple[str, str]:
    s = _w(r, 6, _DIG)
    return s, f"Garage keypad: {s} then the bell key. Neighbours' kid knows the old one, changed it in spring."


@_kind("safe combination")
def k_safe(r: random.Random) -> tuple[str, str]:
    s = f"{r.randint(10, 99)}-{r.randint(10, 99)}-{r.randint(10, 99)}"
    return s, f"Basement safe (passports, birth certificates): combo {s}, right-left-right"


@_kind("password spelled in NATO words in a voice memo transcript")
def k_nato(r: random.Random) -> tuple[str, str]:
    s = " ".join(r.choice(_NATO) for _ in range(9))
    return s, (
        f"[voice memo 08:14, transcribed] ...okay so the NAS admin one is {s}, "
        "all lower case, no spaces. Got it? Okay, bye."
    )


@_kind("diceware passphrase of a password manager")
def k_diceware(r: random.Random) -> tuple[str, str]:
    s = "-".join(r.choice(_BIP39) for _ in range(5)) + str(r.randint(10, 99))
    return s, f"KeePassXC database (Passwords.kdbx on the USB stick) opens with {s}"


# ---------------------------------------------------------------- passwords in config files and commands


@_kind(".netrc line")
def k_netrc(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 16)
    return s, f"~/.netrc on the build box:\nmachine git.{_co(r)}.io login ci-bot password {s}"


@_kind(".pgpass line")
def k_pgpass(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 18)
    return s, f"~/.pgpass (chmod 600 or psql ignores it):\npg-{_w(r, 4, _LOW)}.internal:5432:billing:billing_rw:{s}"


@_kind("mysql -pPASS glued to the flag")
def k_mysql_p(r: random.Random) -> tuple[str, str]:
    s = _w(r, 14)
    return s, f"$ mysql -h {_ip10(r)} -uroot -p{s} shop_prod -e 'show processlist'"


@_kind("sshpass one-liner")
def k_sshpass(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 14)
    return s, f"sshpass -p '{s}' ssh -o StrictHostKeyChecking=no deploy@{_ip172(r)} 'sudo systemctl restart api'"


@_kind("windows net use with a password")
def k_net_use(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 12)
    return s, f"map the finance share: net use Z: \\\\fs01\\finance {s} /user:CORP\\{r.choice(_FIRST)} /persistent:yes"


@_kind("powershell ConvertTo-SecureString with a literal")
def k_securestring(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 15)
    return s, (
        f"$pw = ConvertTo-SecureString '{s}' -AsPlainText -Force\n"
        "$cred = New-Object PSCredential('CORP\\svc-backup', $pw)"
    )


@_kind("jdbc url with password parameter")
def k_jdbc(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 16)
    return s, f"jdbc:postgresql://{_ip10(r)}:5432/ledger?user=ledger_app&password={s}&ssl=true"


@_kind("odbc connection string")
def k_odbc(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 16)
    return s, (
        f"Server=tcp:sql-prod-{r.randint(1, 9)}.{_co(r)}.local,1433;Database=crm;User Id=sa;"
        f"Password={s};Encrypt=True;TrustServerCertificate=True"
    )


@_kind("amqp url with credentials")
def k_amqp(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 18)
    return s, f"CELERY_BROKER_URL=amqp://orders:{s}@mq-{_w(r, 3, _LOWDIG)}.internal:5672/%2F"


@_kind("http basic auth header in a curl")
def k_basic_header(r: random.Random) -> tuple[str, str]:
    s = _b64s(f"{r.choice(_FIRST)}:{_pw(r, 14)}")
    return s, f"curl -H 'Authorization: Basic {s}' https://jenkins.{_co(r)}.lan/job/nightly/buildWithParameters"


@_kind("session cookie from DevTools copy-as-curl")
def k_cookie_curl(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 40)
    return s, (
        f"curl 'https://admin.{_co(r)}.com/api/orders?page=2' -H 'accept: application/json' "
        f"-H 'cookie: theme=dark; _admin_session={s}; tz=Europe%2FBerlin' --compressed"
    )


@_kind("s3 presigned url signature")
def k_s3_presigned(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 64)
    return s, (
        f"share link for the invoice (7 days): https://{_co(r)}-invoices.s3.eu-central-1.amazonaws.com/2026/"
        f"{_d(r, 6)}.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261203T091500Z&X-Amz-Expires=604800"
        f"&X-Amz-SignedHeaders=host&X-Amz-Signature={s}"
    )


@_kind("password reset link in a Markdown link")
def k_reset_link(r: random.Random) -> tuple[str, str]:
    s = _w(r, 43, _ALNUM)
    return s, f"Support sent this, valid 24h: [Reset password](https://id.{_co(r)}.io/reset?token={s}&lang=en)"


@_kind("workspace invite link")
def k_invite(r: random.Random) -> tuple[str, str]:
    s = _w(r, 26)
    return s, f"Priya asked me to join their Mattermost: https://chat.{_co(r)}.org/signup_user_complete/?id={s}"


@_kind("google oauth client secret in client_secret.json")
def k_gocspx(r: random.Random) -> tuple[str, str]:
    s = "GOCSPX-" + _w(r, 28, _ALNUM)
    cid = f"{_d(r, 12)}-{_w(r, 32, _LOWDIG)}.apps.googleusercontent.com"
    return s, (
        f'client_secret.json: {{"installed":{{"client_id":"{cid}","project_id":"calendar-sync-{_d(r, 6)}",'
        f'"client_secret":"{s}","redirect_uris":["http://localhost"]}}}}'
    )


@_kind("gcloud access token printed by a tool call")
def k_ya29(r: random.Random) -> tuple[str, str]:
    s = "ya29.a0" + _w(r, 150, _ALNUM)
    return s, f"$ gcloud auth print-access-token\n{s}\n$ # used it for the curl below"


@_kind("google refresh token in rclone.conf")
def k_refresh(r: random.Random) -> tuple[str, str]:
    s = "1//0" + r.choice("cdeg") + _w(r, 98, _ALNUM)
    return s, (
        f'[gdrive]\ntype = drive\nscope = drive\ntoken = {{"access_token":"ya29.expired","token_type":"Bearer",'
        f'"refresh_token":"{s}","expiry":"2026-12-03T10:15:00Z"}}'
    )


def _jwt(r: random.Random, payload: dict) -> str:
    return f"{_b64url_json({'alg': 'HS256', 'typ': 'JWT'})}.{_b64url_json(payload)}.{_w(r, 43, _ALNUM)}"


@_kind("home assistant long-lived access token")
def k_ha_jwt(r: random.Random) -> tuple[str, str]:
    iat = r.randint(1_760_000_000, 1_790_000_000)
    s = _jwt(r, {"iss": _hex(r, 32), "iat": iat, "exp": iat + 315_360_000})
    return s, f"Home Assistant → Profile → Long-lived tokens → 'wall tablet': {s}"


@_kind("django SECRET_KEY")
def k_django(r: random.Random) -> tuple[str, str]:
    s = "django-insecure-" + _w(r, 50, _LOWDIG + "!@%^=+-")
    return s, f"settings.py on the staging box still has SECRET_KEY = '{s}' — rotate before launch"


@_kind("rails master.key content")
def k_rails(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"config/master.key for the billing app (not in git, only on my laptop): {s}"


@_kind("laravel APP_KEY")
def k_laravel(r: random.Random) -> tuple[str, str]:
    s = "base64:" + _b64(r, 32)
    return s, f"copied .env from prod to debug locally: APP_ENV=local APP_KEY={s} APP_DEBUG=true"


@_kind("artifactory api key")
def k_artifactory(r: random.Random) -> tuple[str, str]:
    s = "AKCp8" + _w(r, 68)
    return s, f"curl -H 'X-JFrog-Art-Api: {s}' -T dist.tgz https://{_co(r)}.jfrog.io/artifactory/npm-local/"


@_kind("pip.conf with credentials in the index url")
def k_pipconf(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 20)
    return s, f"/etc/pip.conf\n[global]\nindex-url = https://deploy:{s}@nexus.{_co(r)}.internal/repository/pypi/simple"


@_kind("gradle signing config")
def k_gradle(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 14)
    return s, (
        "signingConfigs {\n    release {\n        storeFile file('release.jks')\n"
        f"        storePassword '{s}'\n        keyAlias 'upload'\n        keyPassword '{_upw(r, 14)}'\n    }}\n}}"
    )


@_kind("maven settings.xml server password")
def k_maven(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 16)
    return s, (
        "~/.m2/settings.xml:\n<servers>\n  <server>\n    <id>corp-releases</id>\n    <username>ci</username>\n"
        f"    <password>{s}</password>\n  </server>\n</servers>"
    )


@_kind("htpasswd apr1 hash")
def k_htpasswd(r: random.Random) -> tuple[str, str]:
    a = _ALNUM + "./"
    s = f"$apr1${_w(r, 8, a)}${_w(r, 22, a)}"
    return s, f"/etc/nginx/.htpasswd for the staging basic auth:\n{r.choice(_FIRST)}:{s}"


@_kind("/etc/shadow line")
def k_shadow(r: random.Random) -> tuple[str, str]:
    a = _ALNUM + "./"
    s = f"$6${_w(r, 16, a)}${_w(r, 86, a)}"
    return s, f"from the old VM's /etc/shadow (to crack later?):\nroot:{s}:19700:0:99999:7:::"


@_kind("sql CREATE USER with password")
def k_create_user(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 16).replace("'", "")
    return s, f"CREATE USER 'report'@'%' IDENTIFIED BY '{s}';\nGRANT SELECT ON shop.* TO 'report'@'%';"


@_kind("sdk constructor of an invented provider, no telling word")
def k_sdk_ctor(r: random.Random) -> tuple[str, str]:
    s = f"nw1.{_w(r, 8, _LOWDIG)}.{_w(r, 32)}"
    return s, f'```python\nfrom northwind import Client\n\nnw = Client("{s}")\nnw.orders.list(limit=5)\n```'


@_kind("javascript env fallback dsn")
def k_js_dsn(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 16)
    return s, f'const url = process.env.DATABASE_URL ?? "postgres://app:{s}@{_ip10(r)}:5432/app";'


@_kind("go const hmac secret")
def k_go_const(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f'```go\n// webhook verification\nconst signingSecret = "{s}"\n```'


@_kind("secret in a git diff")
def k_git_diff(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 16)
    return s, (
        "diff --git a/.env.production b/.env.production\n@@ -3,2 +3,2 @@\n"
        f"-SMTP_PASS=\n+SMTP_PASS={s}\n SMTP_HOST=smtp.{_co(r)}.com"
    )


@_kind("api key in a debug log of request headers")
def k_debug_headers(r: random.Random) -> tuple[str, str]:
    s = f"ak_{_w(r, 6, _LOWDIG)}_{_w(r, 30)}"
    return s, (
        f"2026-12-02 23:41:07,112 DEBUG urllib3.connectionpool https://api.{_co(r)}.com:443 "
        f"\"POST /v2/ingest HTTP/1.1\" 202 headers={{'X-Api-Key': '{s}', 'Accept': 'application/json'}}"
    )


@_kind("dsn in a traceback")
def k_traceback(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 16)
    return s, (
        'Traceback (most recent call last):\n  File "etl/load.py", line 88, in <module>\n'
        f'    engine = create_engine("postgresql+psycopg2://etl:{s}@{_ip10(r)}:5432/warehouse")\n'
        "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection refused"
    )


@_kind("token in an nginx access log query string")
def k_access_log(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40)
    return s, (
        f'{_ip10(r)} - - [03/Dec/2026:09:12:44 +0100] "GET /api/export.csv?access_token={s}&from=2026-11-01 '
        'HTTP/1.1" 200 48213 "-" "python-requests/2.32.3"'
    )


@_kind("mailchimp key pasted in a chat turn")
def k_mailchimp(r: random.Random) -> tuple[str, str]:
    s = f"{_hex(r, 32)}-us{r.randint(2, 21)}"
    return s, (
        f"user: here, use this for the newsletter import and then forget it: {s}\n"
        "assistant: Imported 1,204 contacts into the 'Launch' audience."
    )


@_kind("temporary password in a dictated letter")
def k_letter(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12)
    return s, (
        f"Dear {r.choice(_FIRST).title()},\n\nas discussed on the phone, the temporary password for the payroll "
        f"portal is {s}. Please change it on first login.\n\nKind regards,\nHR"
    )


@_kind("credentials in a Markdown table")
def k_md_table(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, (
        "| service | url | user | password |\n|---|---|---|---|\n"
        f"| grafana | http://{_ip192(r)}:3000 | admin | {s} |\n"
        f"| minio | http://{_ip192(r)}:9001 | root | {_pw(r, 14)} |"
    )


@_kind("password manager CSV export")
def k_csv_export(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 20)
    return s, (
        "name,url,username,password,note\n"
        f"Hetzner,https://accounts.hetzner.com,{_user(r)},{s},\n"
        f"Fritzbox,http://fritz.box,,{_pw(r, 12)},router"
    )


@_kind("wi-fi QR payload")
def k_wifi_qr(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, f"the QR sticker on the fridge decodes to WIFI:T:WPA;S:{r.choice(_LAST).title()}-Guest;P:{s};;"


@_kind("minecraft rcon password")
def k_rcon(r: random.Random) -> tuple[str, str]:
    s = _w(r, 12)
    return s, f"kids' server.properties:\nenable-rcon=true\nrcon.port=25575\nrcon.password={s}\nmotd=Mina's world"


@_kind("snmp community string")
def k_snmp(r: random.Random) -> tuple[str, str]:
    s = _w(r, 10, _LOWDIG) + "-ro"
    return s, f"snmp-server community {s} RO 10\nsnmp-server location rack B3"


@_kind("ipsec PSK in ipsec.secrets")
def k_psk(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f'/etc/ipsec.secrets on the office gateway:\n{_pubip(r)} %any : PSK "{s}"'


# ---------------------------------------------------------------- key bodies and split secrets


@_kind("openssh private key body line")
def k_openssh(r: random.Random) -> tuple[str, str]:
    s = _pem_line(r, 70)
    return s, (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        f"{s}\n{_pem_line(r, 70)}\n{_pem_line(r, 40)}\n-----END OPENSSH PRIVATE KEY-----"
    )


@_kind("pgp private key block line")
def k_pgp(r: random.Random) -> tuple[str, str]:
    s = _pem_line(r, 64)
    return s, (
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQdGBG{_pem_line(r, 58)}\n{s}\n{_pem_line(r, 64)}\n"
        f"={_w(r, 4, _B64)}\n-----END PGP PRIVATE KEY BLOCK-----"
    )


@_kind("putty ppk private lines")
def k_ppk(r: random.Random) -> tuple[str, str]:
    s = _pem_line(r, 64)
    return s, (
        "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: rsa-key-20261203\n"
        f"Public-Lines: 1\nAAAAB3NzaC1yc2E{_pem_line(r, 40)}\nPrivate-Lines: 2\n{s}\n{_pem_line(r, 30)}\n"
        f"Private-MAC: {_hex(r, 64)}"
    )


@_kind("token split across two string literals")
def k_split_literal(r: random.Random) -> tuple[str, str]:
    s = "zk_live_" + _w(r, 20)
    return s, f'```python\n# split so the scanner does not flag it\nTOKEN = (\n    "{s}"\n    "{_w(r, 20)}"\n)\n```'


@_kind("password in an html comment")
def k_html_comment(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, f"Runbook: restart the queue worker first.\n<!-- TODO remove: admin pw for the dashboard is {s} -->"


@_kind("credentials in a details block")
def k_details(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, f"<details><summary>staging login</summary>\n\nuser `qa`, pass `{s}`\n\n</details>"


@_kind("credentials in a footnote")
def k_footnote(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, f"Deploys go through the shared jump box[^1].\n\n[^1]: ops / {s}"


@_kind("session id in JSON tool output")
def k_json_tool(r: random.Random) -> tuple[str, str]:
    s = _w(r, 48, _ALNUM)
    return s, (
        f'tool auth.login returned {{"ok":true,"user":"{_user(r)}","session":"{s}",'
        f'"expires_at":"2026-12-04T09:00:00Z"}}'
    )


@_kind("ssh password in a chat with an emoji")
def k_emoji_chat(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12)
    return s, f"Jonas 🙃: box is up, ubuntu@{_ip172(r)} pw {s} 🔑 change it pls"


@_kind("password as hex")
def k_hex_pw(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12).encode().hex()
    return s, f"the vendor sent the admin password hex-encoded (their 'security'): {s}"


@_kind("twilio sid and token pair, no telling word")
def k_twilio(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"sms: AC{_hex(r, 32)} / {s} (from +1 415 area number)"


@_kind("azure SAS signature")
def k_azure_sas(r: random.Random) -> tuple[str, str]:
    s = _b64(r, 32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    return s, (
        f"https://{_co(r)}backups.blob.core.windows.net/db?sv=2022-11-02&ss=b&srt=co&sp=rwl"
        f"&se=2027-01-01T00:00:00Z&st=2026-12-01T00:00:00Z&spr=https&sig={s}"
    )


@_kind("terraform cloud token")
def k_tfc(r: random.Random) -> tuple[str, str]:
    s = f"{_w(r, 14)}.atlasv1.{_w(r, 67)}"
    return s, f'~/.terraform.d/credentials.tfrc.json: {{"credentials":{{"app.terraform.io":{{"token":"{s}"}}}}}}'


@_kind("tailscale auth key")
def k_tailscale_key(r: random.Random) -> tuple[str, str]:
    s = f"tskey-auth-k{_w(r, 11)}CNTRL-{_w(r, 32)}"
    return s, f"tailscale up --authkey={s} --advertise-exit-node --hostname=pi-garage"


@_kind("atlassian api token")
def k_atlassian(r: random.Random) -> tuple[str, str]:
    s = "ATATT3xFfGF0" + _w(r, 170, _B64URL) + "=" + _hex(r, 8).upper()
    return s, f"jira-cli config: login {_user(r)}@{_co(r)}.com, token {s}"


@_kind("teamviewer id and password")
def k_teamviewer(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8, _LOWDIG)
    return s, f"Dad's laptop, TeamViewer ID {_d(r, 3)} {_d(r, 3)} {_d(r, 3)}, password {s} (he never changes it)"


@_kind("security question answer")
def k_security_answer(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(_BIP39)} {r.choice(_BIP39)} {r.randint(1000, 9999)}"
    return s, f"bank security question 'name of your first pet' — the random answer I gave: {s}"


# ---------------------------------------------------------------- personal data


@_kind("us social security number on a W-4 note")
def k_ssn(r: random.Random) -> tuple[str, str]:
    area = r.choice([r.randint(1, 665), r.randint(667, 899)])
    s = f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"
    return s, f"W-4 for the new job is done; SSN {s}, filing single, no extra withholding"


@_kind("uk national insurance number")
def k_nino(r: random.Random) -> tuple[str, str]:
    s = _nino(r)
    return s, f"HMRC letter came — my NI number is {s}, keep it for the Self Assessment sign-up"


@_kind("nhs number")
def k_nhs(r: random.Random) -> tuple[str, str]:
    s = _nhs(r)
    return s, f"GP surgery moved me to the new practice; NHS number {s}, repeat prescription on the 14th"


@_kind("medicare beneficiary identifier")
def k_mbi(r: random.Random) -> tuple[str, str]:
    s = _mbi(r)
    return s, f"Mom's new Medicare card: MBI {s}, Part A and B effective 2026-01-01"


@_kind("german IBAN")
def k_iban_de(r: random.Random) -> tuple[str, str]:
    s = _iban("DE", r.choice(["10070024", "50010517", "20041155", "43060967"]) + _w(r, 10, _DIG))
    return s, f"Miete überweisen an Frau {r.choice(_LAST).title()}: {s}, Verwendungszweck 'Miete 12/2026'"


@_kind("uk IBAN")
def k_iban_gb(r: random.Random) -> tuple[str, str]:
    s = _iban("GB", r.choice(["NWBK", "BARC", "LOYD", "HBUK"]) + _w(r, 6, _DIG) + _w(r, 8, _DIG))
    return s, f"invoice 2026-11 paid to my personal account {s} (sole trader, not the Ltd)"


@_kind("dutch IBAN without spaces")
def k_iban_nl(r: random.Random) -> tuple[str, str]:
    s = _iban("NL", r.choice(["ABNA", "INGB", "RABO", "TRIO"]) + _w(r, 10, _DIG)).replace(" ", "")
    return s, f"Tikkie didn't work, so Sofia wants it straight to {s}"


@_kind("swiss IBAN")
def k_iban_ch(r: random.Random) -> tuple[str, str]:
    s = _iban("CH", f"{r.randint(100, 899):05d}" + _w(r, 12, _DIG))
    return s, f"salary goes to the PostFinance account {s} since November"


@_kind("us routing and account number")
def k_aba(r: random.Random) -> tuple[str, str]:
    s = _d(r, 10)
    return s, f"direct deposit form: routing {_aba(r)}, checking account {s}"


@_kind("visa card with expiry and CVC")
def k_visa(r: random.Random) -> tuple[str, str]:
    s = _groups(_luhn(r, "4" + r.choice(["147", "532", "916", "024"]), 16), 4, 4, 4, 4)
    return s, f"card on file for the AWS account: {s}, exp 0{r.randint(1, 9)}/2{r.randint(7, 9)}, CVC {_d(r, 3)}"


@_kind("amex card number")
def k_amex(r: random.Random) -> tuple[str, str]:
    s = _groups(_luhn(r, r.choice(["34", "37"]), 15), 4, 6, 5)
    return s, f"corporate Amex (travel only!) {s}"


@_kind("passport number in MRZ lines")
def k_mrz(r: random.Random) -> tuple[str, str]:
    number = r.choice(_UP) + _w(r, 8, _UPDIG)
    surname, given = r.choice(_LAST).upper(), r.choice(_FIRST).upper()
    line1 = f"P<NLD{surname}<<{given}".ljust(44, "<")
    dob = f"{r.randint(60, 99)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    exp = f"3{r.randint(0, 4)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    personal = "<" * 14
    part = f"{number}{_mrz_check(number)}NLD{dob}{_mrz_check(dob)}{r.choice('MF')}{exp}{_mrz_check(exp)}"
    part += f"{personal}{_mrz_check(personal)}"
    composite = part[0:10] + part[13:20] + part[21:43]
    line2 = part + _mrz_check(composite)
    return number, f"passport scan OCR for the visa form:\n{line1}\n{line2}"


@_kind("german ID card number")
def k_de_id(r: random.Random) -> tuple[str, str]:
    s = _de_id(r)
    return s, f"Personalausweis für die Kontoeröffnung: Ausweisnummer {s}, gültig bis 03.2034"


@_kind("dutch BSN")
def k_bsn(r: random.Random) -> tuple[str, str]:
    s = _bsn(r)
    return s, f"the gemeente registration letter says BSN {s}, needed for the huisarts"


@_kind("spanish DNI")
def k_dni(r: random.Random) -> tuple[str, str]:
    s = _dni(r)
    return s, f"Ines' DNI for the rental contract: {s}"


@_kind("polish PESEL")
def k_pesel(r: random.Random) -> tuple[str, str]:
    s = _pesel(r)
    return s, f"Tomasz needs his PESEL ({s}) on the B2B invoice, put it in the template"


@_kind("brazilian CPF")
def k_cpf(r: random.Random) -> tuple[str, str]:
    s = _cpf(r)
    return s, f"Diego's CPF for the Pix transfer: {s}"


@_kind("indian aadhaar with verhoeff check")
def k_aadhaar(r: random.Random) -> tuple[str, str]:
    s = _aadhaar(r)
    return s, f"Priya's Aadhaar (for the PAN link) {s}"


@_kind("singapore NRIC")
def k_nric(r: random.Random) -> tuple[str, str]:
    s = _nric(r)
    return s, f"SingPass login is the NRIC {s} plus the app, landlord asked for it too"


@_kind("japanese my number")
def k_my_number(r: random.Random) -> tuple[str, str]:
    s = _my_number(r)
    return s, f"Keiko's マイナンバー for the year-end tax adjustment: {s}"


@_kind("korean resident registration number")
def k_rrn(r: random.Random) -> tuple[str, str]:
    s = _rrn(r)
    return s, f"Seoul office needs my colleague's 주민등록번호 {s} for the insurance enrolment"


@_kind("french NIR")
def k_nir(r: random.Random) -> tuple[str, str]:
    s = _nir(r)
    return s, f"numéro de sécurité sociale pour la mutuelle : {s}"


@_kind("us mobile number")
def k_phone_us(r: random.Random) -> tuple[str, str]:
    s = f"({r.choice([617, 312, 720, 253, 415, 646])}) {r.randint(201, 989)}-{_w(r, 4, _DIG)}"
    return s, f"Dr. Haddad's personal cell, texts only, don't give to patients: {s}"


@_kind("uk mobile number")
def k_phone_uk(r: random.Random) -> tuple[str, str]:
    s = f"+44 7{_w(r, 3, _DIG)} {_w(r, 6, _DIG)}"
    return s, f"Niamh (childminder) {s}, whatsapp works better than calling"


@_kind("german mobile number")
def k_phone_de(r: random.Random) -> tuple[str, str]:
    s = f"+49 15{r.choice('12579')} {_w(r, 8, _DIG)}"
    return s, f"Handynummer vom Vermieter: {s} (nur bei Wasserschaden)"


@_kind("indian mobile number")
def k_phone_in(r: random.Random) -> tuple[str, str]:
    s = f"+91 9{_w(r, 4, _DIG)} {_w(r, 5, _DIG)}"
    return s, f"Priya's mum in Pune: {s}"


@_kind("brazilian mobile number")
def k_phone_br(r: random.Random) -> tuple[str, str]:
    s = f"+55 11 9{_w(r, 4, _DIG)}-{_w(r, 4, _DIG)}"
    return s, f"Diego's new number {s}, the old one was stolen in Lapa"


@_kind("japanese mobile number")
def k_phone_jp(r: random.Random) -> tuple[str, str]:
    s = f"090-{_w(r, 4, _DIG)}-{_w(r, 4, _DIG)}"
    return s, f"Airbnb host in Kyoto, Tanaka-san: {s}"


@_kind("french mobile number")
def k_phone_fr(r: random.Random) -> tuple[str, str]:
    s = f"+33 6 {_w(r, 2, _DIG)} {_w(r, 2, _DIG)} {_w(r, 2, _DIG)} {_w(r, 2, _DIG)}"
    return s, f"portable de Moreau (plombier) {s}"


@_kind("obfuscated personal email")
def k_email_obf(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(_FIRST)}.{r.choice(_LAST)}{r.randint(10, 99)} (at) proton (dot) me"
    return s, f"her private address, written the way she sends it: {s}"


@_kind("plus-addressed personal email")
def k_email_plus(r: random.Random) -> tuple[str, str]:
    s = f"{_user(r)}+bank@fastmail.com"
    return s, f"the address the bank knows is {s} — if a mail to it comes from elsewhere it's phishing"


@_kind("us home address")
def k_addr_us(r: random.Random) -> tuple[str, str]:
    city, st, zip3 = r.choice(_CITIES)
    s = f"{r.randint(12, 4999)} {r.choice(_STREETS)} {r.choice(['Ln', 'Rd', 'Ave', 'Ct'])}, Apt {r.randint(1, 9)}B"
    return s, f"ship the replacement router to {s}, {city}, {st} {zip3}{_w(r, 2, _DIG)}"


@_kind("uk home address with postcode")
def k_addr_uk(r: random.Random) -> tuple[str, str]:
    s = f"Flat {r.randint(2, 19)}, {r.randint(3, 180)} {r.choice(_STREETS)} Road, London SW{r.randint(2, 19)} "
    s += f"{r.randint(1, 9)}{r.choice('ABDEFGHJLNPQRSTUWXYZ')}{r.choice('ABDEFGHJLNPQRSTUWXYZ')}"
    return s, f"new flat from the 1st: {s}"


@_kind("uk licence plate")
def k_plate_uk(r: random.Random) -> tuple[str, str]:
    age = r.choice([r.randint(51, 75), r.randint(10, 25)])
    s = f"{_w(r, 2, 'ABCDEFGHKLMNOPRSVWY')}{age} {_w(r, 3, 'ABCDEFGHJKLMNPRSTUVWXYZ')}"
    return s, f"visitor parking permit registered to {s} (the Corsa)"


@_kind("german licence plate")
def k_plate_de(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(['M', 'B', 'HH', 'K', 'S'])}-{_w(r, 2, 'ABCDEFGHJKLMNPRSTUVWXYZ')} {_d(r, 4)}{r.choice(['', 'E'])}"
    return s, f"Kennzeichen vom Firmenwagen: {s}, Tankkarte im Handschuhfach"


@_kind("california driver licence")
def k_dl_ca(r: random.Random) -> tuple[str, str]:
    s = r.choice(_UP) + _w(r, 7, _DIG)
    return s, f"rental car form: CA driver license {s}, exp 2029"


@_kind("health insurance member id")
def k_member_id(r: random.Random) -> tuple[str, str]:
    s = f"XJH{_d(r, 9)}"
    return s, f"Blue Shield card: member ID {s}, group {_d(r, 6)}, Rx BIN 610014"


@_kind("medical record number in a discharge note")
def k_mrn(r: random.Random) -> tuple[str, str]:
    s = f"MRN {_w(r, 8, _DIG)}"
    return s, f"Discharge summary ({s}): type 2 diabetes, metformin 500 mg twice daily, follow-up in 6 weeks"


# ---------------------------------------------------------------- internal hosts, addresses and accounts


@_kind("internal host name with ssh jump")
def k_internal_host(r: random.Random) -> tuple[str, str]:
    s = f"pg-primary-{_w(r, 3, _LOWDIG)}.{_w(r, 5, _LOW)}.corp.internal"
    return s, f"ssh -J bastion.{_co(r)}.net postgres@{s}  # replica lag dashboards live there too"


@_kind("private ip of a device with context")
def k_private_ip(r: random.Random) -> tuple[str, str]:
    s = _ip10(r)
    return s, f"the office printer's admin UI is http://{s}:631, nobody changed the default login"


@_kind("ipv6 ULA of the home server")
def k_ula(r: random.Random) -> tuple[str, str]:
    s = f"fd{_hex(r, 2)}:{_hex(r, 4)}:{_hex(r, 4)}::{_hex(r, 3)}"
    return s, f"home server has a stable ULA {s}, use it in /etc/hosts instead of the DHCP address"


@_kind("tailscale magicdns name")
def k_magicdns(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(_FIRST)}-nas.tail{_hex(r, 5)}.ts.net"
    return (
        s,
        f"Jellyfin from anywhere: https://{s}:8920 (100.{r.randint(64, 127)}.{r.randint(0, 255)}.{r.randint(1, 254)})",
    )


@_kind("internal dashboard url in a Markdown link")
def k_internal_url(r: random.Random) -> tuple[str, str]:
    s = f"kibana.{_w(r, 4, _LOW)}.int.{_co(r)}.net"
    return s, f"errors spiked again, see [Kibana](https://{s}/app/discover#/view/{_uuid(r)})"


@_kind("sso username")
def k_sso_user(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(_FIRST)}.{r.choice(_LAST)}{r.randint(10, 99)}@{_co(r)}.onmicrosoft.com"
    return s, f"work SSO login is {s}, MFA via Authenticator on the old iPhone"


# ================================================================ Chinese kinds
# ---------------------------------------------------------------- 证件、电话、邮箱、地址


@_kind("身份证号 订票乘车人", zh=True)
def z_id_ticket(r: random.Random) -> tuple[str, str]:
    s, name = _cn_id(r), _cn_name(r)
    return s, f"帮{name}订了周五去杭州的高铁，乘车人：{name}，身份证 {s}，座位要靠窗。"


@_kind("身份证号 按 6-8-4 分组", zh=True)
def z_id_grouped(r: random.Random) -> tuple[str, str]:
    s = _groups(_cn_id(r), 6, 8, 4)
    return s, f"租房合同上房东的证件号：{s}（抄的时候按 6-8-4 分开写的）"


@_kind("身份证号 实名接口返回 JSON", zh=True)
def z_id_json(r: random.Random) -> tuple[str, str]:
    s = _cn_id(r)
    name = _cn_name(r)
    return s, f'调用 realname.verify 返回：{{"code":0,"data":{{"name":"{name}","idNo":"{s}","match":true}}}}'


@_kind("香港身份证号", zh=True)
def z_hkid(r: random.Random) -> tuple[str, str]:
    s = _hkid(r)
    return s, f"香港同事 {_cn_name(r)} 的身份证号 {s}，帮他开内地银行卡要用"


@_kind("台湾身分证字号", zh=True)
def z_twid(r: random.Random) -> tuple[str, str]:
    s = _twid(r)
    return s, f"台湾客户的身分證字號：{s}（繁体表格里那一栏）"


@_kind("护照号", zh=True)
def z_passport(r: random.Random) -> tuple[str, str]:
    s = r.choice(["E" + _w(r, 8, _DIG), "E" + r.choice("ABCDEFGH") + _w(r, 7, _DIG)])
    return s, f"护照号：{s}，签发地 上海，有效期至 2034 年 03 月，日本签证材料要复印首页"


@_kind("港澳通行证号", zh=True)
def z_hk_permit(r: random.Random) -> tuple[str, str]:
    s = "C" + r.choice("ABCDEFGHJKLMNPQRSTUVWXY") + _w(r, 7, _DIG)
    return s, f"港澳通行证 {s}，G 签注还剩 1 次，下个月去香港前记得续签"


@_kind("台胞证号", zh=True)
def z_tw_permit(r: random.Random) -> tuple[str, str]:
    s = _d(r, 8)
    return s, f"台湾同事的台胞证号码 {s}，订酒店入住要用"


@_kind("韩国身份证号 中文备注", zh=True)
def z_rrn(r: random.Random) -> tuple[str, str]:
    s = _rrn(r)
    return s, f"首尔分公司同事金敏俊的居民登录号 {s}，办社保时 HR 要"


@_kind("手机号 空格分组", zh=True)
def z_mobile_spaced(r: random.Random) -> tuple[str, str]:
    s = f"1{r.choice('3456789')}{r.choice(_DIG)} {_w(r, 4, _DIG)} {_w(r, 4, _DIG)}"
    return s, f"房东电话 {s}（微信同号），周末别打"


@_kind("手机号 +86 连字符", zh=True)
def z_mobile_86(r: random.Random) -> tuple[str, str]:
    s = f"+86-1{r.choice('3456789')}{r.choice(_DIG)}-{_w(r, 4, _DIG)}-{_w(r, 4, _DIG)}"
    return s, f"紧急联系人：我妈，{s}"


@_kind("座机 带分机", zh=True)
def z_landline(r: random.Random) -> tuple[str, str]:
    s = f"021-{r.choice('56')}{_w(r, 7, _DIG)}"
    return s, f"家里座机 {s} 转 {r.randint(800, 899)}（老爸书房那台）"


@_kind("香港手机号", zh=True)
def z_hk_mobile(r: random.Random) -> tuple[str, str]:
    s = f"+852 {r.choice('5679')}{_w(r, 3, _DIG)} {_w(r, 4, _DIG)}"
    return s, f"WhatsApp 加一下香港那边的 Kelvin：{s}"


@_kind("台湾手机号", zh=True)
def z_tw_mobile(r: random.Random) -> tuple[str, str]:
    s = f"09{_w(r, 2, _DIG)}-{_w(r, 3, _DIG)}-{_w(r, 3, _DIG)}"
    return s, f"台北民宿老板娘手机 {s}，LINE 也是这个号"


@_kind("QQ 邮箱", zh=True)
def z_qq_mail(r: random.Random) -> tuple[str, str]:
    s = f"{_d(r, r.randint(9, 10))}@qq.com"
    return s, f"简历投递用的邮箱是 {s}，别写成工作邮箱"


@_kind("邮箱 全角＠", zh=True)
def z_mail_fullwidth(r: random.Random) -> tuple[str, str]:
    s = f"{_py(r)}_{_w(r, 4, _DIG)}"
    return s, f"新邮箱：{s}＠163．com（手机上打的全角，复制的时候注意）"


@_kind("邮箱 at dot 防爬写法", zh=True)
def z_mail_at_dot(r: random.Random) -> tuple[str, str]:
    s = f"{_py(r)}{_w(r, 4, _DIG)} at 126 dot com"
    return s, f"对外留的邮箱写成 {s}，防止被爬虫抓"


@_kind("微信号 wxid", zh=True)
def z_wxid(r: random.Random) -> tuple[str, str]:
    s = "wxid_" + _w(r, 14, _LOWDIG)
    return s, f"加家长群用的是小号 {s}，主号只留给同事"


@_kind("微信号 vx 缩写", zh=True)
def z_vx(r: random.Random) -> tuple[str, str]:
    s = f"{_py(r)}{_w(r, 3, _LOWDIG)}"
    return s, f"装修队长 vx：{s}，备注写“装修-3号楼”"


@_kind("家庭住址", zh=True)
def z_home_addr(r: random.Random) -> tuple[str, str]:
    city, dist = r.choice(_CN_CITY)
    s = f"{r.choice(_CN_ROADS)}{r.randint(10, 999)}弄{r.randint(1, 60)}号{r.randint(1, 32)}0{r.randint(1, 6)}室"
    return s, f"家里地址：{city}{dist}{s}，快递放门口就行"


@_kind("收货地址 订单 JSON", zh=True)
def z_delivery_json(r: random.Random) -> tuple[str, str]:
    city, dist = r.choice(_CN_CITY)
    s = f"{r.choice(_CN_ROADS)}{r.randint(10, 999)}号{r.randint(1, 20)}栋"
    s += f"{r.randint(1, 4)}单元{r.randint(1, 33)}0{r.randint(1, 4)}"
    return s, (
        f'订单查询工具返回：{{"orderId":"{_d(r, 18)}","receiver":"{_cn_name(r)}",'
        f'"province":"{city}","district":"{dist}","detail":"{s}","status":"已签收"}}'
    )


@_kind("车牌 燃油车", zh=True)
def z_plate(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(_CN_PROV)}{r.choice('ABCDEF')}·{_w(r, 5, _PLATE)}"
    return s, f"单位停车场登记的车牌 {s}，月卡 11 月底到期"


@_kind("车牌 新能源", zh=True)
def z_plate_ev(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(_CN_PROV)}{r.choice('ABCDEF')}{r.choice('DF')}{_w(r, 5, _DIG)}"
    return s, f"老婆的新能源车 {s}，小区充电桩绑定的就是这个"


@_kind("车架号 VIN", zh=True)
def z_vin(r: random.Random) -> tuple[str, str]:
    s = _vin(r)
    return s, f"车险续保要的车架号：{s}（行驶证上抄的），发动机号在照片里"


@_kind("社保个人编号", zh=True)
def z_social(r: random.Random) -> tuple[str, str]:
    s = _d(r, 10)
    return s, f"上海社保个人编号 {s}，查缴费记录和办居住证积分用"


@_kind("公积金账号", zh=True)
def z_hpf(r: random.Random) -> tuple[str, str]:
    s = _d(r, 12)
    return s, f"住房公积金个人账号：{s}，提取要先在 App 上预约"


@_kind("住院号 病历", zh=True)
def z_inpatient(r: random.Random) -> tuple[str, str]:
    s = "ZY" + _w(r, 8, _DIG)
    return s, f"爸爸的住院号 {s}，心内科 12 床，诊断：冠心病 PCI 术后，出院带药 5 种"


@_kind("保单号", zh=True)
def z_policy(r: random.Random) -> tuple[str, str]:
    s = "P" + _w(r, 2, _UP) + _d(r, 14)
    return s, f"重疾险保单号 {s}，受益人是孩子，每年 3 月扣款"


# ---------------------------------------------------------------- 银行、支付、验证码、门锁


@_kind("银行卡 银联 19 位 分组", zh=True)
def z_unionpay(r: random.Random) -> tuple[str, str]:
    bank, prefix = r.choice([("工行", "622202"), ("建行", "621700"), ("农行", "622848"), ("招行", "621483")])
    s = _groups(_luhn(r, prefix, 19), 4, 4, 4, 4, 3)
    return s, f"工资卡（{bank}）{s}，开户行 上海分行营业部"


@_kind("信用卡号 无空格", zh=True)
def z_credit_card(r: random.Random) -> tuple[str, str]:
    s = _luhn(r, r.choice(["622588", "625802", "622155"]), 16)
    return s, f"信用卡 {s} 账单日 5 号，还款日 23 号，额度 5 万"


@_kind("香港银行账户", zh=True)
def z_hk_bank(r: random.Random) -> tuple[str, str]:
    s = f"{_w(r, 3, _DIG)}-{_w(r, 6, _DIG)}-{_w(r, 3, _DIG)}"
    return s, f"汇丰香港户口：{s}，转数快 FPS ID {_d(r, 8)}"


@_kind("德国 IBAN 中文备注", zh=True)
def z_iban(r: random.Random) -> tuple[str, str]:
    s = _iban("DE", "50010517" + _w(r, 10, _DIG))
    return s, f"德国那边的工资账户 IBAN：{s}，开户名用拼音"


@_kind("支付密码", zh=True)
def z_pay_pin(r: random.Random) -> tuple[str, str]:
    s = _w(r, 6, _DIG)
    return s, f"支付宝支付密码换成 {s} 了（跟银行卡取款的不一样）"


@_kind("U盾口令", zh=True)
def z_ukey(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 10)
    return s, f"工行 U 盾口令 {s}，网银转账超过 5 万才要插"


@_kind("短信验证码", zh=True)
def z_sms(r: random.Random) -> tuple[str, str]:
    s = _w(r, 6, _DIG)
    return s, f"【招商银行】您的动态验证码为{s}，您正在进行网银转账，请勿向任何人泄露。"


@_kind("单元门密码", zh=True)
def z_door(r: random.Random) -> tuple[str, str]:
    s = _w(r, 6, _DIG) + "#"
    return s, f"3 号楼单元门密码 {s}，外卖小哥也知道"


@_kind("快递取件码", zh=True)
def z_pickup(r: random.Random) -> tuple[str, str]:
    s = _d(r, 8)
    return s, f"【丰巢】您的快递已到小区东门 {r.randint(1, 9)} 号柜，取件码 {s}，请凭码取件。"


@_kind("智能门锁临时密码", zh=True)
def z_smart_lock(r: random.Random) -> tuple[str, str]:
    s = _d(r, 10)
    return s, f"给保洁阿姨开的门锁临时密码：{s}，周六 9:00-12:00 有效"


@_kind("腾讯会议密码", zh=True)
def z_meeting(r: random.Random) -> tuple[str, str]:
    s = _w(r, 6, _DIG)
    return s, f"#腾讯会议：{_d(r, 3)}-{_w(r, 3, _DIG)}-{_w(r, 3, _DIG)}\n会议密码：{s}\n主题：季度绩效面谈（一对一）"


@_kind("12306 账号密码", zh=True)
def z_12306(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12)
    return s, f"12306 用户名 {_py(r)}{_w(r, 3, _DIG)}，登录密码 {s}，常用联系人里有爸妈"


@_kind("Apple ID 密码", zh=True)
def z_apple_id(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12)
    return s, f"Apple ID {_py(r)}{_w(r, 2, _DIG)}@icloud.com 密码 {s}（家庭共享的主账号）"


@_kind("Steam 令牌恢复码", zh=True)
def z_steam(r: random.Random) -> tuple[str, str]:
    s = "R" + _w(r, 5, _DIG)
    return s, f"Steam 令牌恢复码 {s}，换手机时要用"


@_kind("Windows 激活码", zh=True)
def z_product_key(r: random.Random) -> tuple[str, str]:
    s = "-".join(_w(r, 5, "BCDFGHJKMPQRTVWXY2346789") for _ in range(5))
    return s, f"Windows 11 专业版激活码：{s}（京东买的零售版，可以转机）"


@_kind("宽带账号密码", zh=True)
def z_pppoe(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8, _LOWDIG)
    return s, f"电信宽带 PPPoE 账号 0571{_d(r, 8)}，密码 {s}，换路由器时要重新拨号"


@_kind("光猫超级密码", zh=True)
def z_ont(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 8)
    return s, f"电信光猫超级管理员 telecomadmin，密码 {s}（装维师傅给的），改桥接要用"


@_kind("群晖 QuickConnect 与管理员密码", zh=True)
def z_synology(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12)
    return s, f"群晖 DS920+：QuickConnect ID {_w(r, 8, _LOWDIG)}，admin 密码 {s}"


@_kind("DDNS 家庭域名", zh=True)
def z_ddns(r: random.Random) -> tuple[str, str]:
    s = f"{_w(r, 6, _LOW)}{_d(r, 2)}.synology.me"
    return s, f"家里 NAS 外网访问：https://{s}:5001（DDNS 指向家里宽带的公网 IP）"


@_kind("ToDesk 临时密码", zh=True)
def z_todesk(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8, _LOWDIG)
    return s, f"帮我妈远程：ToDesk 设备代码 {_d(r, 3)} {_w(r, 3, _DIG)} {_w(r, 3, _DIG)}，临时密码 {s}"


# ---------------------------------------------------------------- 口令的各种写法


@_kind("WiFi 密码 全角标点", zh=True)
def z_wifi(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12)
    return s, f"家里 WiFi：ChinaNet-{_w(r, 4, _UPDIG)}（5G），密码：{s}。访客网络是另一个。"


@_kind("mm 缩写", zh=True)
def z_mm(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12)
    return s, f"公司 vpn mm：{s}，每 90 天强制改一次"


@_kind("账密 斜杠", zh=True)
def z_zhangmi(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, f"堡垒机账密 ops_{_py(r)} / {s}"


@_kind("测试账号 密码同账号名", zh=True)
def z_same_as_user(r: random.Random) -> tuple[str, str]:
    s = f"qa_{_py(r)}{_d(r, 4)}"
    return s, f"测试环境账号 {s}，密码同账号名（老习惯了）"


@_kind("初始密码", zh=True)
def z_initial(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 10)
    return s, f"OA 系统新员工初始密码统一为 {s}，首次登录后强制修改。"


@_kind("root 口令", zh=True)
def z_koul(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 16)
    return s, f"生产 db-{_w(r, 3, _LOWDIG)} 的 root 口令：{s}"


@_kind("秘钥 错别字", zh=True)
def z_miyao_typo(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, _B64URL)
    return s, f"七牛对象存储 AK={_w(r, 40, _B64URL)}\n七牛的秘钥 SK={s}"


@_kind("密匙 错别字", zh=True)
def z_mishi_typo(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"对接方给的加密密匙：{s}（AES-128 ECB，他们坚持这么用）"


@_kind("语音转文字 中文数字密码", zh=True)
def z_voice(r: random.Random) -> tuple[str, str]:
    s = _py(r) + "".join(r.choice(_CN_DIGITS) for _ in range(5)) + r.choice(["井号", "感叹号", "艾特"])
    return s, f"（语音转文字）嗯那个路由器后台密码是{s}对全是小写的数字你自己转成阿拉伯数字"


@_kind("表格 中文表头", zh=True)
def z_table(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, (
        "| 系统 | 地址 | 账号 | 密码 |\n|---|---|---|---|\n"
        f"| 禅道 | http://{_ip10(r)}/zentao | admin | {s} |\n"
        f"| Jenkins | http://{_ip10(r)}:8080 | deploy | {_pw(r, 14)} |"
    )


@_kind("群聊 改密码通知", zh=True)
def z_group_chat(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, f"[群聊-后端组] 王工：@所有人 测试库密码改成 {s} 了，老的作废"


@_kind("私聊 收到 token", zh=True)
def z_private_chat(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"我：发你微信了\n小李：收到👌 {s}\n我：用完记得撤回"


@_kind("登录接口返回 JSON token", zh=True)
def z_login_json(r: random.Random) -> tuple[str, str]:
    s = _w(r, 48, _ALNUM)
    return s, f'调用 /api/login 返回：{{"code":0,"msg":"成功","data":{{"token":"{s}","expire":7200}}}}'


@_kind("邮件 开通账号", zh=True)
def z_mail(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12)
    return s, (
        f"{_cn_name(r)}您好：\n\n    您的 VPN 账号已开通。\n    登录账号：{_py(r)}\n    初始密码：{s}\n"
        "    请于首次登录后修改。\n\n此致\n敬礼\nIT 服务台"
    )


@_kind("密 码 是 字间空格", zh=True)
def z_spaced(r: random.Random) -> tuple[str, str]:
    s = _w(r, 10, _LOWDIG)
    return s, f"密 码 是 {s} 哈 别 弄 错 了"


@_kind("中英混排 pwd 紧贴", zh=True)
def z_mixed(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, f"prod 的 DB pwd 是{s}，别和 staging 的搞混了"


@_kind("Excel 粘贴 制表符", zh=True)
def z_excel(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 12)
    return s, f"服务器\tIP\t用户\t密码\nweb01\t{_ip10(r)}\troot\t{s}\nweb02\t{_ip10(r)}\troot\t{_pw(r, 12)}"


@_kind("密码分两行发", zh=True)
def z_two_halves(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 10)
    return s, f"密码太长，分两条发：\n前半段 {s}\n后半段 {_w(r, 6)}\n拼起来就行"


@_kind("Markdown 链接 内嵌账密", zh=True)
def z_md_link(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 12)
    return s, f"[CMS 后台](https://admin:{s}@cms.{_co(r)}.cn/admin/) 直接点就能登"


@_kind("base64 过的密码", zh=True)
def z_b64_pw(r: random.Random) -> tuple[str, str]:
    s = _b64s(_pw(r, 12))
    return s, f"密码我 base64 了一下免得被扫：{s}"


@_kind("AES 密钥 hex", zh=True)
def z_aes(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 64)
    return s, f"数据库手机号字段加密 AES-256 密钥（hex）：{s}\nIV：{_hex(r, 32)}"


# ---------------------------------------------------------------- 网盘、会员、IM 机器人、开放平台


@_kind("百度网盘 链接 提取码", zh=True)
def z_baidu_pan(r: random.Random) -> tuple[str, str]:
    code = _w(r, 4, _LOWDIG)
    s = f"https://pan.baidu.com/s/1{_w(r, 22, _ALNUM)}?pwd={code}"
    return s, f"链接: {s} 提取码: {code} \n--来自百度网盘超级会员v5的分享"


@_kind("阿里云盘 分享", zh=True)
def z_alipan(r: random.Random) -> tuple[str, str]:
    s = f"https://www.alipan.com/s/{_w(r, 11)}"
    return s, f"「体检报告2026.pdf」{s} 提取码: {_w(r, 4, _LOWDIG)} 点击链接保存，或者复制本段内容"


@_kind("QQ 邮箱 SMTP 授权码", zh=True)
def z_smtp_code(r: random.Random) -> tuple[str, str]:
    s = _w(r, 16, _LOW)
    return s, f"Foxmail 配 QQ 邮箱，SMTP 授权码 {s}（不是 QQ 密码）"


@_kind("钉钉机器人 加签 SEC", zh=True)
def z_dingtalk_sec(r: random.Random) -> tuple[str, str]:
    s = "SEC" + _hex(r, 64)
    return s, f"钉钉告警机器人 安全设置选的加签：{s}"


@_kind("钉钉机器人 webhook", zh=True)
def z_dingtalk_hook(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 64)
    return s, f"告警群机器人 https://oapi.dingtalk.com/robot/send?access_token={s}"


@_kind("企业微信 群机器人 key", zh=True)
def z_wecom_hook(r: random.Random) -> tuple[str, str]:
    s = _uuid(r)
    return s, f"企微群机器人 Webhook 地址：https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={s}"


@_kind("飞书 群机器人 hook", zh=True)
def z_feishu_hook(r: random.Random) -> tuple[str, str]:
    s = _uuid(r)
    return s, f"飞书群机器人：https://open.feishu.cn/open-apis/bot/v2/hook/{s}（部署完成通知用）"


@_kind("飞书 自建应用 App Secret", zh=True)
def z_feishu_app(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"飞书自建应用：App ID cli_{_hex(r, 16)}，App Secret {s}"


@_kind("小程序 AppSecret", zh=True)
def z_miniapp(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"小程序 AppID：wx{_hex(r, 16)}\nAppSecret：{s}\n（后台“开发管理→开发设置”里重置过一次）"


@_kind("微信支付 APIv3 密钥", zh=True)
def z_wxpay(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"商户号 {_d(r, 10)}，APIv3 密钥 {s}，证书放在 /etc/wxpay/"


@_kind("支付宝 应用私钥 无头尾", zh=True)
def z_alipay_key(r: random.Random) -> tuple[str, str]:
    s = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + _w(r, 120, _B64)
    return s, f"支付宝开放平台 应用私钥（PKCS8，密钥工具生成，没有头尾）：\n{s}"


@_kind("B站 SESSDATA", zh=True)
def z_sessdata(r: random.Random) -> tuple[str, str]:
    s = f"{_hex(r, 8)}%2C{r.randint(1_760_000_000, 1_790_000_000)}%2C{_w(r, 5)}%2A{_w(r, 2)}{_w(r, 80, _ALNUM)}"
    return s, f"B站 cookie（下载脚本用）SESSDATA={s}; bili_jct={_hex(r, 32)}"


@_kind("百度 BDUSS", zh=True)
def z_bduss(r: random.Random) -> tuple[str, str]:
    s = _w(r, 192, _B64URL)
    return s, f"bypy 登录态，浏览器里复制的 BDUSS={s}"


@_kind("淘宝 cookie2", zh=True)
def z_taobao(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"抢购脚本用的淘宝 cookie：cookie2={s}; t={_hex(r, 32)}; _tb_token_={_w(r, 13, _LOWDIG)}"


@_kind("Gitee 私人令牌", zh=True)
def z_gitee(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"gitee 私人令牌 {s}（勾了 projects 和 pull_requests 权限）"


@_kind("阿里云 RAM 子账号登录名", zh=True)
def z_ram_login(r: random.Random) -> tuple[str, str]:
    s = f"{_py(r)}@{_d(r, 16)}.onaliyun.com"
    return s, f"阿里云子账号登录名 {s}，密码在 KeePass 里"


@_kind("OSS 签名链接", zh=True)
def z_oss_signed(r: random.Random) -> tuple[str, str]:
    s = _b64(r, 20).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    return s, (
        f"合同 PDF 临时链接（1 小时）：https://{_co(r)}-docs.oss-cn-hangzhou.aliyuncs.com/contract/{_d(r, 6)}.pdf"
        f"?Expires={r.randint(1_760_000_000, 1_790_000_000)}&OSSAccessKeyId=TMP.3K{_w(r, 20)}&Signature={s}"
    )


@_kind("机场订阅链接", zh=True)
def z_proxy_sub(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"机场订阅（每月 200G）：https://{_w(r, 6, _LOW)}.xyz/api/v1/client/subscribe?token={s}"


@_kind("vmess 用户 UUID", zh=True)
def z_vmess(r: random.Random) -> tuple[str, str]:
    s = _uuid(r)
    return s, (
        f'v2ray 服务端 config.json：{{"inbounds":[{{"port":443,"protocol":"vmess",'
        f'"settings":{{"clients":[{{"id":"{s}","alterId":0}}]}}}}]}}'
    )


@_kind("shadowsocks ss 链接", zh=True)
def z_ss(r: random.Random) -> tuple[str, str]:
    s = _b64s(f"aes-256-gcm:{_w(r, 16)}").rstrip("=")
    return s, f"ss://{s}@{_pubip(r)}:{r.randint(10000, 60000)}#香港-01"


@_kind("frp token", zh=True)
def z_frp(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24)
    return s, f'frpc.toml：\nserverAddr = "{_pubip(r)}"\nserverPort = 7000\nauth.token = "{s}"'


@_kind("宝塔面板 安装输出", zh=True)
def z_bt_panel(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8, _LOWDIG)
    port, path = r.randint(10000, 40000), _w(r, 8, _LOWDIG)
    return s, (
        "==================================================================\n"
        "Congratulations! Installed successfully!\n"
        f"外网面板地址: https://{_pubip(r)}:{port}/{path}\n内网面板地址: https://{_ip172(r)}:{port}/{path}\n"
        f"username: {_w(r, 8, _LOWDIG)}\npassword: {s}\n"
        "=================================================================="
    )


# ---------------------------------------------------------------- 开发日常：命令、配置、代码


@_kind("Python 代码 中文注释 api_key", zh=True)
def z_python(r: random.Random) -> tuple[str, str]:
    s = f"sk-{_hex(r, 32)}"
    return s, (
        "```python\n# 老板说先别提交，跑通再说\n"
        f'client = OpenAI(base_url="https://api.deepseek.com", api_key="{s}")\n```'
    )


@_kind("mysql 命令 导数据", zh=True)
def z_mysql(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 14)
    return s, f"导数据：`mysql -h {_ip10(r)} -P 3306 -uroot -p'{s}' erp < dump.sql` 跑了 40 分钟"


@_kind("docker login 阿里云镜像仓库", zh=True)
def z_acr(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 16)
    return s, (f"推镜像前先 docker login --username={_py(r)}@{_d(r, 16)} registry.cn-hangzhou.aliyuncs.com -p {s}")


@_kind("git remote 带令牌", zh=True)
def z_git_remote(r: random.Random) -> tuple[str, str]:
    s = _w(r, 20)
    return s, f"换了令牌：git remote set-url origin https://oauth2:{s}@git.{_co(r)}.cn/infra/deploy.git"


@_kind("redis yaml 中文注释", zh=True)
def z_redis_yaml(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 16)
    return s, f"spring:\n  redis:\n    host: {_ip10(r)}\n    port: 6379\n    password: {s}   # 生产的，别动"


@_kind("redis-cli -a", zh=True)
def z_redis_cli(r: random.Random) -> tuple[str, str]:
    s = _w(r, 20)
    return s, f"清缓存：redis-cli -h cache-{_w(r, 2, _DIG)}.{_co(r)}.internal -a {s} --no-auth-warning FLUSHDB"


@_kind("nacos 数据源配置", zh=True)
def z_nacos(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, (
        "nacos 里 order-service.yaml 的数据源：\n"
        f"spring.datasource.url=jdbc:mysql://{_ip10(r)}:3306/order\n"
        f"spring.datasource.username=order_rw\nspring.datasource.password={s}"
    )


@_kind("docker compose 环境变量", zh=True)
def z_compose(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 16)
    return s, f"docker-compose.yml 里写死的：\n  environment:\n    POSTGRES_USER: app\n    POSTGRES_PASSWORD: {s}"


@_kind("MinIO root 密码", zh=True)
def z_minio(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24)
    return s, f"MinIO 启动参数 MINIO_ROOT_USER=admin MINIO_ROOT_PASSWORD={s}，控制台 9001 端口"


@_kind("terraform tfvars 中文", zh=True)
def z_tfvars(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 16)
    return s, f'terraform.tfvars（没进 git）：\nregion = "cn-shanghai"\ndb_admin_password = "{s}"'


@_kind("restic 备份脚本", zh=True)
def z_restic(r: random.Random) -> tuple[str, str]:
    s = _w(r, 28)
    return s, (
        "NAS 每晚备份脚本：\nexport RESTIC_REPOSITORY=s3:oss-cn-shanghai.aliyuncs.com/bak\n"
        f"export RESTIC_PASSWORD='{s}'"
    )


@_kind("borg 口令 systemd", zh=True)
def z_borg(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 20)
    return s, f"/etc/systemd/system/borg.service 里：\nEnvironment=BORG_PASSPHRASE={s}\n丢了这个备份就解不开"


@_kind("ansible 提权密码 inventory", zh=True)
def z_ansible(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, f"hosts.ini：\n[web]\n{_ip10(r)} ansible_user=deploy ansible_become_pass={s}"


@_kind("kubeadm join 命令", zh=True)
def z_kubeadm(r: random.Random) -> tuple[str, str]:
    s = f"{_w(r, 6, _LOWDIG)}.{_w(r, 16, _LOWDIG)}"
    return s, (
        f"k8s 加节点命令（24 小时有效）：kubeadm join {_ip10(r)}:6443 --token {s} "
        f"--discovery-token-ca-cert-hash sha256:{_hex(r, 64)}"
    )


@_kind("docker swarm join", zh=True)
def z_swarm(r: random.Random) -> tuple[str, str]:
    s = f"SWMTKN-1-{_w(r, 50, _LOWDIG)}-{_w(r, 25, _LOWDIG)}"
    return s, f"新节点执行：docker swarm join --token {s} {_ip10(r)}:2377"


@_kind("k8s Secret base64", zh=True)
def z_k8s_secret(r: random.Random) -> tuple[str, str]:
    s = _b64s(_pw(r, 14))
    return s, (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-cred\ntype: Opaque\ndata:\n"
        f"  username: YXBw\n  password: {s}   # 明文在飞书文档里"
    )


@_kind("docker config.json auths", zh=True)
def z_docker_auth(r: random.Random) -> tuple[str, str]:
    s = _b64s(f"ci-bot:{_pw(r, 16)}")
    return s, f'cat ~/.docker/config.json 的输出：{{"auths":{{"harbor.{_co(r)}.cn":{{"auth":"{s}"}}}}}}'


@_kind("Vault 解封密钥", zh=True)
def z_vault_unseal(r: random.Random) -> tuple[str, str]:
    keys = [_b64(r, 32) for _ in range(5)]
    s = keys[1]
    return s, "Vault 解封密钥，5 取 3，我保管第 2 把：\n" + "\n".join(
        f"Unseal Key {i + 1}: {k}" for i, k in enumerate(keys)
    )


@_kind("WireGuard 客户端配置", zh=True)
def z_wireguard(r: random.Random) -> tuple[str, str]:
    s = _b64(r, 32)
    return s, (
        f"手机上的 WireGuard 配置：\n[Interface]\nPrivateKey = {s}\nAddress = 10.8.0.{r.randint(2, 250)}/32\n"
        f"[Peer]\nPublicKey = {_b64(r, 32)}\nEndpoint = {_pubip(r)}:51820"
    )


@_kind("小狐狸钱包 导出私钥", zh=True)
def z_eth_key(r: random.Random) -> tuple[str, str]:
    s = "0x" + _hex(r, 64)
    return s, f"MetaMask（小狐狸）账户详情→导出私钥：{s}"


@_kind("TOTP 种子 otpauth", zh=True)
def z_totp(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, _B32)
    return s, f"二维码扫不出来，解码后是 otpauth://totp/Hetzner:{_py(r)}?secret={s}&issuer=Hetzner"


@_kind("JumpServer MFA 种子", zh=True)
def z_mfa_seed(r: random.Random) -> tuple[str, str]:
    s = _w(r, 16, _B32)
    return s, f"JumpServer 的 MFA 二维码扫不了，手动输入密钥：{s}"


@_kind("GitHub 恢复码", zh=True)
def z_gh_codes(r: random.Random) -> tuple[str, str]:
    codes = [f"{_hex(r, 5)}-{_hex(r, 5)}" for _ in range(16)]
    s = codes[r.randrange(16)]
    return s, "GitHub 恢复码（github-recovery-codes.txt 的内容）：\n" + "\n".join(codes)


@_kind("中文助记词", zh=True)
def z_mnemonic_zh(r: random.Random) -> tuple[str, str]:
    s = " ".join(r.choice(_BIP39_ZH) for _ in range(12))
    return s, f"imToken 钱包助记词（按顺序抄的）：{s}"


@_kind("英文助记词 中文备注", zh=True)
def z_mnemonic_en(r: random.Random) -> tuple[str, str]:
    s = " ".join(r.choice(_BIP39) for _ in range(24))
    return s, f"冷钱包助记词，24 个词，抄一份在这：\n{s}"


@_kind("RSA 私钥 一行", zh=True)
def z_rsa_line(r: random.Random) -> tuple[str, str]:
    s = _pem_line(r, 64)
    return s, (
        "把服务器私钥贴这里备份一下：\n-----BEGIN RSA PRIVATE KEY-----\n"
        f"MIIEowIBAAKCAQEA{_pem_line(r, 48)}\n{s}\n{_pem_line(r, 64)}\n-----END RSA PRIVATE KEY-----"
    )


@_kind("localStorage 里的 JWT", zh=True)
def z_jwt(r: random.Random) -> tuple[str, str]:
    s = _jwt(r, {"uid": int(_d(r, 8)), "role": "admin", "exp": r.randint(1_760_000_000, 1_790_000_000)})
    return s, f"前端 localStorage 里拿到的 token：{s}，过期时间 7 天"


@_kind("跳板机 内网 IP", zh=True)
def z_jump_ip(r: random.Random) -> tuple[str, str]:
    s = _ip10(r)
    return s, f"跳板机 {s}，端口 {r.randint(20000, 60000)}，先连 VPN 再 ssh，用户名是工号"


@_kind("内网域名 测试环境", zh=True)
def z_internal_domain(r: random.Random) -> tuple[str, str]:
    s = f"{_w(r, 3, _LOW)}-{r.choice(['test', 'uat', 'pre'])}-{_w(r, 4, _LOWDIG)}.{_co(r)}.corp"
    return s, f"测试环境网关 http://{s}:8080/ ，只能内网访问"


@_kind("内网 IPv4 172 段 数据库", zh=True)
def z_db_ip(r: random.Random) -> tuple[str, str]:
    s = _ip172(r)
    return s, f"主库 {s}:3306，从库在隔壁机房，DBA 说别直连主库"


@_kind("ZeroTier 网络 ID", zh=True)
def z_zerotier(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 16)
    return s, f"家里和公司组网用的 ZeroTier 网络 ID {s}，加入后要在后台手动批准"


@_kind("mysql 日志里的改密语句", zh=True)
def z_mysql_log(r: random.Random) -> tuple[str, str]:
    s = _pw(r, 14)
    return s, (f"grep 慢日志找到的：\n# Time: 2026-12-02T15:03:11.204518Z\nALTER USER 'app'@'%' IDENTIFIED BY '{s}';")


@_kind("htpasswd 中文", zh=True)
def z_htpasswd(r: random.Random) -> tuple[str, str]:
    a = _ALNUM + "./"
    s = f"$apr1${_w(r, 8, a)}${_w(r, 22, a)}"
    return s, f"内部文档站加了 basic auth，.htpasswd 内容：\nwiki:{s}"


@_kind("bcrypt 初始化脚本", zh=True)
def z_bcrypt(r: random.Random) -> tuple[str, str]:
    s = f"$2b$12${_w(r, 53, _ALNUM + './')}"
    return s, f"init.sql 里的管理员：INSERT INTO users(name, pwd_hash) VALUES ('admin', '{s}');"


@_kind("公司代理 带账密", zh=True)
def z_proxy(r: random.Random) -> tuple[str, str]:
    s = _upw(r, 14)
    return s, f"公司电脑装包要走代理：export https_proxy=http://{_py(r)}:{s}@proxy.{_co(r)}.com:3128"


@_kind("机票 PNR", zh=True)
def z_pnr(r: random.Random) -> tuple[str, str]:
    s = _w(r, 6, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
    return s, f"东航订单 PNR {s}，乘机人 {_cn_name(r)}，改签要用这个编码加姓名"


CHINESE: frozenset[str] = frozenset(_ZH)

# ================================================================ private markers

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"(private) {t}",
    lambda t: f"{t} (don't share)",
    lambda t: f"🔒 {t}",
    lambda t: f"PRIVATE: {t}",
    lambda t: f"{t}  #私密",
    lambda t: f"【私密】{t}",
    lambda t: f"{t}（仅自己可见）",
    lambda t: f"[  private  ] {t}",
    lambda t: f"{t} — keep this between us",
    lambda t: f"〔不公开〕{t}",
    lambda t: f"{t} [do not publish]",
    lambda t: f"🤫 {t}",
    lambda t: f"（私人）{t}",
    lambda t: f"Private note: {t}",
    lambda t: f"{t}\n\n—— 仅限本人，勿外传",
    lambda t: f"[confidential] {t}",
    lambda t: f"NOT FOR THE WIKI: {t}",
    lambda t: f"{t} (off the record)",
    lambda t: f"#隐私 {t}",
    lambda t: f"【保密】{t}",
    lambda t: f"<!-- private -->\n{t}",
    lambda t: f"{t}\n\n(私密，别发到群里)",
    lambda t: f"私 密 ： {t}",
    lambda t: f"🔐私密🔐 {t}",
    lambda t: f"{t} 🙈 only me",
    lambda t: f"#private\n{t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"private": "true"},
    {"visibility": "private"},
    {"public": False},
    {"publish": False},
    {"tags": ["work", "private"]},
    {"access": "private"},
    {"visibility": "私密"},
    {"私密": True},
    {"confidential": "yes"},
    {"share": False},
    {"Private": True},
    {"status": "private"},
    {"classification": "confidential"},
    {"private": 1},
    {"publish": "no"},
    {"tags": ["私密"]},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "# Private",
    "### Personal (private)",
    "## 私密",
    "## 隐私信息",
    "#### Not for publication",
    "## 🔒 Private notes",
    "### 仅自己可见",
    "## Private — do not share",
    "## 私人笔记（不公开）",
]

# ================================================================ ordinary strings that must pass unchanged

ORDINARY: list[str] = [
    # plain technical text
    "pip install --upgrade 'mkdocs-material>=9.5'",
    "python3.12 -m venv .venv && source .venv/bin/activate",
    "ruff check --fix . && ruff format .",
    "numpy==2.1.3",
    "Node.js v20.11.1",
    "docker compose up -d --build",
    "kubectl rollout restart deployment/api -n staging",
    "git log --oneline --graph --decorate -n 20",
    "https://docs.python.org/3/library/secrets.html",
    "https://github.com/squidfunk/mkdocs-material/releases",
    "support@python.org",
    "security@github.com",
    "The password must be at least 12 characters long and may not reuse the last 5 passwords.",
    "密码长度至少8位，需包含大小写字母和数字",
    "忘记密码请点击登录页的“找回密码”，验证码会发送到绑定手机",
    "请勿在群里发送密码、验证码或身份证照片",
    "把 token 放进环境变量，不要写进代码里",
    "使用 pip install -i https://pypi.tuna.tsinghua.edu.cn/simple 加速下载",
    "npm config set registry https://registry.npmmirror.com",
    "pip 镜像：https://mirrors.aliyun.com/pypi/simple/",
    "color: #1e66f5; background: rgb(239, 241, 245);",
    "localhost:8000",
    "127.0.0.1:6379",
    "2026-12-03T09:15:00+08:00",
    "EXPOSE 8080",
    "CUDA 12.4 + cuDNN 9.1",
    "RFC 7519 (JSON Web Token)",
    "pypi.org",
    "registry.npmjs.org",
    "mkdocs build --strict",
    "ssh-keygen -t ed25519 -C 'work laptop'",
    "max_tokens=4096",
    "数据库连接池最大连接数设置为 20",
    "验证码有效期为 5 分钟",
    "默认端口 3306，可在 my.cnf 里修改",
    "PYTHONPATH=src pytest -q -k 'not slow'",
    "SELECT count(*) FROM users WHERE created_at > now() - interval '7 days';",
    "git clone https://github.com/python/cpython.git",
    "curl -fsSL https://get.docker.com | sh",
    "Asia/Shanghai",
    "UTF-8 编码的中文文件名在 Windows 上可能乱码",
    "周五下午发版，发版前跑一遍冒烟测试",
    "export LANG=zh_CN.UTF-8",
    "uvicorn app.main:app --host 0.0.0.0 --port 8000 --reload",
    "Cache-Control: public, max-age=31536000, immutable",
    "1 Gbps 光纤，上行 50 Mbps",
    "cron: 0 3 * * 1",
    # tricky: look secret-ish, are not
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    'hash = "sha256:4b2a0e4e5b6f1c3d8a9e7f0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d"',
    "integrity sha512-Vv2YcBkL7x0eDZb3N1qTQ0s8gR5u1cN9PjKZ2oYw3hE6mF4aXtJ7iV9lQeUoS8rWdTyH1bGnC5kM2zA0fP6xLw==",
    "md5sum of an empty file is d41d8cd98f00b204e9800998ecf8427e",
    "123e4567-e89b-12d3-a456-426614174000",
    "python:3.12-slim@sha256:2be8daddbb82756f7d1f2c7ece706aadcb284bf6ab6d769ea695cc3ed6016743",
    "password: ${DB_PASSWORD}",
    "API_KEY=<your-api-key>",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "SMTP_PASSWORD=  # set in the deploy environment, never in the repo",
    "Authorization: Bearer $TOKEN",
    "passwd: files systemd",
    '"token_type": "bearer", "expires_in": 3600',
    "secretKeyRef: {name: db-credentials, key: password}",
    "10.0.0.0/8, 172.16.0.0/12 and 192.168.0.0/16 are the private ranges of RFC 1918",
    "192.168.1.1 是大多数路由器的默认管理地址",
    "4242 4242 4242 4242 is Stripe's documented test Visa number",
    "AWS docs use AKIAIOSFODNN7EXAMPLE as the sample access key id",
    "IBAN 格式示例：DE89 3704 0044 0532 0130 00（维基百科上的示例）",
    "user@example.com",
    "192.0.2.10 (TEST-NET-1, for documentation)",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ada@example.com",
    "CVE-2024-3094 (xz backdoor)",
    "ORCID 0000-0002-1825-0097",
    "ISBN 978-0-13-468599-1",
    "E.164 example from the docs: +1 202 555 0143",
    "ghp_ prefix means a GitHub personal access token",
    "sk-... 开头的是 OpenAI 的 key，别贴到群里",
    "base64 of 'hello world' is aGVsbG8gd29ybGQ=",
    "SHA1 of the release tarball: 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
    "默认用户名 admin，首次登录会强制修改密码",
    "PIN 码为 6 位数字，连续输错 3 次将锁卡",
    "chmod 600 ~/.ssh/id_ed25519",
    "openssl rand -base64 32",
    "HTTP 401 Unauthorized: invalid api key",
    "测试环境的数据库密码请到 Vault 里查，不要问同事要",
    "GUID {21EC2020-3AEA-1069-A2DD-08002B30309D}",
    "0x7fffffff",
]
