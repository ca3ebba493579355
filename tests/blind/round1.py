"""Blind held-out canaries for the memwiki privacy gate, round 1.

How this was written: blind. The author never saw the gate's detectors, the project's existing canaries,
its privacy tests or any issue text, and did not run the project's code. Every shape below comes from
general knowledge of what people and agents actually put into memory notes, chat turns, config snippets
and wiki pages, so these cases measure how well the gate generalises rather than how well it fits its
own fixtures.

Names defined here:

- KINDS: kind name -> function(rng) -> (secret, text). ``secret`` is the exact substring of ``text`` that
  must NOT appear anywhere on the published site (the whole value: full token, full password, whole
  key body, whole phrase). ``text`` is how a person or agent would really write it. Each function is
  deterministic for a given ``random.Random`` and produces different values and shapes between calls.
- CHINESE: the kinds whose text is a Chinese phrasing (their names end in ``_zh``).
- TEXT_MARKERS: ways a person marks ONE note/line as private while typing it (English and Chinese).
- FRONTMATTER_MARKERS: YAML frontmatter entries a person would use to mark a wiki page private.
- PERSONA_PRIVATE_HEADINGS: Markdown headings that open a private section of a persona file.
- ORDINARY: ordinary technical strings (including near-misses) that are not secrets and must be
  published unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import struct
import zlib
from collections.abc import Callable
from urllib.parse import quote

# ---------------------------------------------------------------------------------------------------------
# alphabets and small helpers

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
B32 = string.ascii_uppercase + "234567"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
PUNCT = "!;,#&()@$%^*?-_.~+=[]{}<>|"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _d(rng: random.Random, n: int) -> str:
    return _s(rng, string.digits, n)


def _bytes(rng: random.Random, n: int) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(n))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _wrap(s: str, width: int = 64) -> str:
    return "\n".join(s[i : i + width] for i in range(0, len(s), width))


def _sstr(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b


def _date(rng: random.Random) -> str:
    return f"{rng.randint(2022, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _uuid(rng: random.Random) -> str:
    h = _s(rng, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def _group(s: str, n: int = 4, sep: str = " ") -> str:
    return sep.join(s[i : i + n] for i in range(0, len(s), n))


FIRST = [
    "alice",
    "bob",
    "maria",
    "james",
    "priya",
    "kenji",
    "lucas",
    "sofia",
    "omar",
    "hannah",
    "david",
    "emma",
    "noah",
    "olivia",
    "mateo",
    "fatima",
    "liam",
    "chloe",
    "ravi",
    "ingrid",
]
LAST = [
    "smith",
    "nguyen",
    "garcia",
    "mueller",
    "tanaka",
    "okafor",
    "kowalski",
    "rossi",
    "johansson",
    "patel",
    "oconnor",
    "dubois",
    "silva",
    "kim",
    "novak",
    "haddad",
]
COMPANIES = [
    "acme-robotics",
    "northwind",
    "bluefin-labs",
    "kestrel-ai",
    "larkspur",
    "orbitaldyn",
    "pinecrest",
    "quanta-health",
    "redwoodfin",
    "tidepool",
    "hollowtree",
    "brightwave",
]
WORDS = [
    "sunflower",
    "marble",
    "tiger",
    "copper",
    "violet",
    "harbor",
    "falcon",
    "maple",
    "orbit",
    "pepper",
    "rocket",
    "saturn",
    "willow",
    "zebra",
    "nebula",
    "cobalt",
    "panda",
    "mango",
    "river",
    "winter",
]
PHRASE_WORDS = [
    "correct",
    "horse",
    "battery",
    "staple",
    "purple",
    "monkey",
    "dishwasher",
    "lantern",
    "glacier",
    "velvet",
    "thunder",
    "pickle",
    "cactus",
    "mellow",
    "sparrow",
    "quartz",
    "biscuit",
    "tundra",
    "violin",
    "meadow",
    "ember",
    "walrus",
    "nimbus",
    "pretzel",
    "saffron",
    "kettle",
    "otter",
    "fjord",
]
PINYIN = [
    "zhangwei",
    "liuyang",
    "wangfang",
    "woaini",
    "chenjie",
    "xiaoming",
    "lihua",
    "huangxin",
    "zhaolei",
    "sunli",
    "yangyang",
    "zhoujie",
]
SERVICES = [
    "Synology",
    "Proxmox",
    "Grafana",
    "Jenkins",
    "Nextcloud",
    "Portainer",
    "pfSense",
    "Home Assistant",
    "GitLab",
    "Bitwarden",
    "iCloud",
    "Gmail",
    "Netflix",
    "AWS root",
    "Cloudflare",
    "Plex",
]
ZH_SERVICES = [
    "群晖",
    "路由器后台",
    "宝塔面板",
    "阿里云控制台",
    "公司 VPN",
    "Jenkins",
    "GitLab",
    "NAS",
    "服务器",
    "邮箱",
    "支付宝",
    "微信",
    "Apple ID",
    "淘宝",
    "12306",
]

# BIP-39 English words (a real subset of the official 2048-word list).
BIP39_EN = (
    "abandon ability able about above absent absorb abstract absurd abuse access accident account accuse achieve "
    "acid acoustic acquire across act action actor actress actual adapt add addict address adjust admit adult "
    "advance advice aerobic affair afford afraid again age agent agree ahead aim air airport aisle alarm album "
    "alcohol alert alien all alley allow almost alone alpha already also alter always amateur amazing among "
    "amount amused analyst anchor ancient anger angle angry animal ankle announce annual another answer antenna "
    "antique anxiety any apart apology appear apple approve april arch arctic area arena argue arm armed armor "
    "army around arrange arrest arrive arrow art artefact artist artwork ask aspect assault asset assist assume "
    "asthma athlete atom attack attend attitude attract auction audit august aunt author auto autumn average "
    "avocado avoid awake aware away awesome awful awkward axis baby bachelor bacon badge bag balance balcony "
    "ball bamboo banana banner bar barely bargain barrel base basic basket battle beach bean beauty because "
    "become beef before begin behave behind believe below belt bench benefit best betray better between beyond "
    "bicycle bid bike bind biology bird birth bitter black blade blame blanket blast bleak bless blind blood "
    "blossom blouse blue blur blush board boat body boil bomb bone bonus book boost border boring borrow boss "
    "bottom bounce box boy bracket brain brand brass brave bread breeze brick bridge brief bright bring brisk "
    "broccoli broken bronze broom brother brown brush bubble buddy budget buffalo build bulb bulk bullet bundle "
    "bunker burden burger burst bus business busy butter buyer buzz"
).split()

# BIP-39 Chinese (simplified) words (a real subset of the official list).
BIP39_ZH = list(
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经"
    "十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平"
    "形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题"
)


def _password(rng: random.Random, spaces: bool = False, punct: str = PUNCT) -> str:
    """A password the way people pick them."""
    style = rng.randrange(5) if spaces else rng.randrange(4)
    if style == 0:
        chars = list(_s(rng, ALNUM, rng.randint(9, 14)))
        for _ in range(rng.randint(1, 3)):
            chars.insert(rng.randint(1, len(chars) - 1), rng.choice(punct))
        return "".join(chars)
    if style == 1:
        sep = rng.choice(["", "_", "-", "."])
        return f"{rng.choice(WORDS).capitalize()}{sep}{rng.randint(10, 2029)}{rng.choice('!?#$&*')}"
    if style == 2:
        leet = rng.choice(WORDS).translate(str.maketrans("aeiost", "4310$7"))
        return leet[0].upper() + leet[1:] + rng.choice(["!", "#1", "@99", "&Co", "(2)", "!!"]) + _d(rng, 2)
    if style == 3:
        return rng.choice(PINYIN) + rng.choice(["@", "#", "_", "!", ".", ""]) + str(rng.randint(1975, 2012))
    words = rng.sample(PHRASE_WORDS, rng.randint(3, 5))
    return " ".join(words) + rng.choice(["", "", f" {rng.randint(2, 99)}", "!"])


def _punct_password(rng: random.Random) -> str:
    chars = list(_s(rng, ALNUM, rng.randint(9, 13)))
    for p in rng.sample("!;,#&()", rng.randint(2, 3)):
        chars.insert(rng.randint(1, len(chars) - 1), p)
    return "".join(chars)


def _simple_password(rng: random.Random) -> str:
    return _s(rng, ALNUM, rng.randint(10, 16))


def _url_password(rng: random.Random) -> str:
    """A password as it appears inside a URL (percent-encoded where needed)."""
    return quote(_password(rng), safe="-_.~")


def _user(rng: random.Random) -> str:
    return rng.choice(
        [
            "admin",
            "deploy",
            "app",
            "root",
            "svc_backup",
            "ci-bot",
            "postgres",
            "grafana",
            "jenkins",
            rng.choice(FIRST),
            f"{rng.choice(FIRST)}.{rng.choice(LAST)}",
        ]
    )


def _dbhost(rng: random.Random) -> str:
    co = rng.choice(COMPANIES)
    return rng.choice(
        [
            f"db.{co}.com",
            f"{co}-prod.cluster-{_s(rng, LOWER_ALNUM, 12)}.eu-west-1.rds.amazonaws.com",
            f"pg-{rng.randint(1, 9)}.{co}.net",
            f"{co}.postgres.database.azure.com",
            "localhost",
        ]
    )


# ---------------------------------------------------------------------------------------------------------
# check-digit helpers


def _luhn_digit(partial: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(partial)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def _luhn(prefix: str, length: int, rng: random.Random) -> str:
    partial = prefix + _d(rng, length - len(prefix) - 1)
    return partial + _luhn_digit(partial)


def _iban(rng: random.Random) -> str:
    cc = rng.choice(["DE", "GB", "FR", "NL", "ES", "IT", "BE", "CH"])
    if cc == "DE":
        bban = _d(rng, 18)
    elif cc == "GB":
        bban = rng.choice(["NWBK", "BARC", "LOYD", "HBUK", "MIDL"]) + _d(rng, 14)
    elif cc == "FR":
        bban = _d(rng, 23)
    elif cc == "NL":
        bban = rng.choice(["ABNA", "INGB", "RABO", "TRIO"]) + _d(rng, 10)
    elif cc == "ES":
        bban = _d(rng, 20)
    elif cc == "IT":
        bban = rng.choice(string.ascii_uppercase) + _d(rng, 22)
    elif cc == "BE":
        bban = _d(rng, 12)
    else:
        bban = _d(rng, 17)
    num = "".join(str(int(c, 36)) for c in bban + cc + "00")
    return f"{cc}{98 - int(num) % 97:02d}{bban}"


def _cn_id(rng: random.Random) -> str:
    area = rng.choice(
        [
            "110105",
            "310104",
            "440305",
            "330106",
            "510107",
            "420106",
            "320102",
            "370202",
            "210202",
            "500103",
            "350203",
            "610113",
        ]
    )
    body = f"{area}{rng.randint(1960, 2005)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randint(0, 999):03d}"
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    s = sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11
    return body + "10X98765432"[s]


_TW_LETTERS = {
    "A": 10,
    "B": 11,
    "C": 12,
    "D": 13,
    "E": 14,
    "F": 15,
    "G": 16,
    "H": 17,
    "J": 18,
    "K": 19,
    "L": 20,
    "M": 21,
    "N": 22,
    "P": 23,
    "Q": 24,
    "R": 25,
    "S": 26,
    "T": 27,
    "U": 28,
    "V": 29,
}


def _tw_id(rng: random.Random) -> str:
    letter = rng.choice(sorted(_TW_LETTERS))
    digits = rng.choice("12") + _d(rng, 7)
    code = _TW_LETTERS[letter]
    total = code // 10 + (code % 10) * 9 + sum(int(c) * w for c, w in zip(digits, range(8, 0, -1), strict=True))
    return f"{letter}{digits}{(10 - total % 10) % 10}"


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
    [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
    [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
    [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
]
_VINV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]


def _aadhaar(rng: random.Random) -> str:
    partial = rng.choice("23456789") + _d(rng, 10)
    c = 0
    for i, ch in enumerate(reversed(partial)):
        c = _VD[c][_VP[(i + 1) % 8][int(ch)]]
    return partial + str(_VINV[c])


def _b58(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def _b58check(payload: bytes) -> str:
    return _b58(payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4])


def _bech32(hrp: str, data: bytes) -> str:
    acc = bits = 0
    five: list[int] = []
    for b in data:
        acc = (acc << 8) | b
        bits += 8
        while bits >= 5:
            bits -= 5
            five.append((acc >> bits) & 31)
    if bits:
        five.append((acc << (5 - bits)) & 31)
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + five + [0] * 6:
        top = chk >> 25
        chk = ((chk & 0x1FFFFFF) << 5) ^ v
        for i in range(5):
            if (top >> i) & 1:
                chk ^= gen[i]
    chk ^= 1
    return hrp + "1" + "".join(BECH32[d] for d in five + [(chk >> 5 * (5 - i)) & 31 for i in range(6)])


def _crc24(data: bytes) -> int:
    crc = 0xB704CE
    for b in data:
        crc ^= b << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


# ---------------------------------------------------------------------------------------------------------
# token generators (formats as the vendors issue them)


def _gh_classic(rng: random.Random, prefix: str = "ghp_") -> str:
    body = _s(rng, ALNUM, 30)
    c = zlib.crc32(body.encode())
    enc = ""
    for _ in range(6):
        c, r = divmod(c, 62)
        enc = B62[r] + enc
    return prefix + body + enc


def _github(rng: random.Random) -> str:
    if rng.random() < 0.35:
        return "github_pat_11" + _s(rng, UPPER_ALNUM, 20) + "_" + _s(rng, ALNUM, 59)
    return _gh_classic(rng, rng.choice(["ghp_", "ghp_", "gho_", "ghs_", "ghu_"]))


def _openai(rng: random.Random) -> str:
    if rng.random() < 0.7:
        kind = rng.choice(["proj-", "svcacct-", "admin-"])
        return f"sk-{kind}{_s(rng, URLSAFE, 74)}T3BlbkFJ{_s(rng, URLSAFE, 74)}"
    return f"sk-{_s(rng, ALNUM, 20)}T3BlbkFJ{_s(rng, ALNUM, 20)}"


def _anthropic(rng: random.Random) -> str:
    return f"sk-ant-{rng.choice(['api03', 'api03', 'admin01'])}-{_s(rng, URLSAFE, 93)}AA"


def _gitlab(rng: random.Random) -> str:
    return rng.choice(["glpat-", "glpat-", "gldt-", "glrt-"]) + _s(rng, URLSAFE, 20)


def _slack_bot(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.5:
        return f"xoxb-{_d(rng, 12)}-{_d(rng, 13)}-{_s(rng, ALNUM, 24)}"
    if r < 0.8:
        return f"xoxp-{_d(rng, 12)}-{_d(rng, 12)}-{_d(rng, 13)}-{_s(rng, HEX, 32)}"
    return f"xapp-1-A{_s(rng, UPPER_ALNUM, 10)}-{_d(rng, 13)}-{_s(rng, HEX, 64)}"


def _discord(rng: random.Random) -> str:
    uid = str(rng.randint(10**17, 13 * 10**17))
    return f"{_b64url(uid.encode())}.{_s(rng, URLSAFE, 6)}.{_s(rng, URLSAFE, 38)}"


def _telegram(rng: random.Random) -> str:
    return f"{rng.randint(5 * 10**8, 8 * 10**9)}:AA{_s(rng, URLSAFE, 33)}"


def _stripe(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.6:
        return rng.choice(["sk_live_", "rk_live_"]) + "51" + _s(rng, ALNUM, rng.choice([22, 97]))
    return "whsec_" + _s(rng, ALNUM, 32)


def _jwt(rng: random.Random, payload: dict, alg: str = "HS256", sig_len: int = 43) -> str:
    head = _b64url(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    body = _b64url(json.dumps(payload, separators=(",", ":")).encode())
    return f"{head}.{body}.{_s(rng, URLSAFE, sig_len)}"


def _supabase(rng: random.Random) -> str:
    iat = rng.randint(1_690_000_000, 1_730_000_000)
    payload = {
        "iss": "supabase",
        "ref": _s(rng, string.ascii_lowercase, 20),
        "role": "service_role",
        "iat": iat,
        "exp": iat + 315_360_000,
    }
    return _jwt(rng, payload)


def _mapbox(rng: random.Random) -> str:
    body = _b64url(
        json.dumps({"u": rng.choice(FIRST) + _d(rng, 2), "a": _s(rng, LOWER_ALNUM, 25)}, separators=(",", ":")).encode()
    )
    return f"sk.{body}.{_s(rng, URLSAFE, 22)}"


def _mailgun(r: random.Random) -> str:
    if r.random() < 0.5:
        return "key-" + _s(r, HEX, 32)
    return f"{_s(r, HEX, 32)}-{_s(r, HEX, 8)}-{_s(r, HEX, 8)}"


VENDOR_GENERATORS: dict[str, tuple[Callable[[random.Random], str], list[str], list[str], list[str]]] = {
    # kind: (generator, display names, env var names, API hosts)
    "openai_key": (_openai, ["OpenAI", "OpenAI project"], ["OPENAI_API_KEY"], ["api.openai.com/v1/models"]),
    "anthropic_key": (_anthropic, ["Anthropic", "Claude API"], ["ANTHROPIC_API_KEY"], ["api.anthropic.com/v1/models"]),
    "github_token": (_github, ["GitHub", "GitHub PAT"], ["GITHUB_TOKEN", "GH_TOKEN"], ["api.github.com/user"]),
    "gitlab_token": (
        _gitlab,
        ["GitLab", "GitLab PAT"],
        ["GITLAB_TOKEN", "CI_JOB_TOKEN_OVERRIDE"],
        ["gitlab.com/api/v4/user"],
    ),
    "google_api_key": (
        lambda r: "AIzaSy" + _s(r, URLSAFE, 33),
        ["Google Maps", "Gemini", "Firebase web"],
        ["GOOGLE_API_KEY", "GEMINI_API_KEY"],
        ["generativelanguage.googleapis.com/v1beta/models"],
    ),
    "google_oauth_secret": (
        lambda r: "GOCSPX-" + _s(r, URLSAFE, 28),
        ["Google OAuth client secret"],
        ["GOOGLE_CLIENT_SECRET"],
        ["oauth2.googleapis.com/token"],
    ),
    "slack_token": (
        _slack_bot,
        ["Slack bot", "Slack"],
        ["SLACK_BOT_TOKEN", "SLACK_TOKEN"],
        ["slack.com/api/auth.test"],
    ),
    "discord_bot_token": (
        _discord,
        ["Discord bot"],
        ["DISCORD_TOKEN", "DISCORD_BOT_TOKEN"],
        ["discord.com/api/v10/users/@me"],
    ),
    "telegram_bot_token": (
        _telegram,
        ["Telegram bot", "BotFather"],
        ["TELEGRAM_BOT_TOKEN", "TG_TOKEN"],
        ["api.telegram.org/getMe"],
    ),
    "stripe_key": (
        _stripe,
        ["Stripe", "Stripe live"],
        ["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET"],
        ["api.stripe.com/v1/charges"],
    ),
    "twilio_auth_token": (
        lambda r: _s(r, HEX, 32),
        ["Twilio"],
        ["TWILIO_AUTH_TOKEN"],
        ["api.twilio.com/2010-04-01/Accounts.json"],
    ),
    "sendgrid_key": (
        lambda r: f"SG.{_s(r, URLSAFE, 22)}.{_s(r, URLSAFE, 43)}",
        ["SendGrid"],
        ["SENDGRID_API_KEY"],
        ["api.sendgrid.com/v3/mail/send"],
    ),
    "mailgun_key": (_mailgun, ["Mailgun"], ["MAILGUN_API_KEY"], ["api.mailgun.net/v3/domains"]),
    "huggingface_token": (
        lambda r: "hf_" + _s(r, string.ascii_letters, 34),
        ["Hugging Face", "HF"],
        ["HF_TOKEN", "HUGGINGFACEHUB_API_TOKEN"],
        ["huggingface.co/api/whoami-v2"],
    ),
    "npm_token": (
        lambda r: "npm_" + _s(r, ALNUM, 36),
        ["npm publish", "npm"],
        ["NPM_TOKEN", "NODE_AUTH_TOKEN"],
        ["registry.npmjs.org/-/whoami"],
    ),
    "pypi_token": (
        lambda r: "pypi-AgEIcHlwaS5vcmcCJ" + _s(r, URLSAFE, 150),
        ["PyPI upload", "PyPI"],
        ["TWINE_PASSWORD", "UV_PUBLISH_TOKEN"],
        ["upload.pypi.org/legacy/"],
    ),
    "dockerhub_pat": (
        lambda r: "dckr_pat_" + _s(r, URLSAFE, 27),
        ["Docker Hub"],
        ["DOCKERHUB_TOKEN"],
        ["hub.docker.com/v2/users/login"],
    ),
    "digitalocean_token": (
        lambda r: "dop_v1_" + _s(r, HEX, 64),
        ["DigitalOcean"],
        ["DIGITALOCEAN_TOKEN"],
        ["api.digitalocean.com/v2/account"],
    ),
    "azure_client_secret": (
        lambda r: _s(r, ALNUM, 3) + "8Q~" + _s(r, ALNUM + "_.~-", 34),
        ["Azure AD app"],
        ["AZURE_CLIENT_SECRET", "ARM_CLIENT_SECRET"],
        ["login.microsoftonline.com/common"],
    ),
    "shopify_token": (
        lambda r: r.choice(["shpat_", "shpss_", "shpca_"]) + _s(r, HEX, 32),
        ["Shopify admin"],
        ["SHOPIFY_ACCESS_TOKEN"],
        ["mystore.myshopify.com/admin/api/2024-04/shop.json"],
    ),
    "atlassian_token": (
        lambda r: "ATATT3xFfGF0" + _s(r, URLSAFE, 170) + "=" + _s(r, "0123456789ABCDEF", 8),
        ["Jira", "Confluence", "Atlassian"],
        ["JIRA_API_TOKEN", "CONFLUENCE_TOKEN"],
        ["yourteam.atlassian.net/rest/api/3/myself"],
    ),
    "linear_key": (lambda r: "lin_api_" + _s(r, ALNUM, 40), ["Linear"], ["LINEAR_API_KEY"], ["api.linear.app/graphql"]),
    "notion_token": (
        lambda r: r.choice(["secret_" + _s(r, ALNUM, 43), "ntn_" + _d(r, 11) + _s(r, ALNUM, 35)]),
        ["Notion integration"],
        ["NOTION_TOKEN", "NOTION_API_KEY"],
        ["api.notion.com/v1/users/me"],
    ),
    "cloudflare_token": (
        lambda r: _s(r, URLSAFE, 40),
        ["Cloudflare"],
        ["CLOUDFLARE_API_TOKEN", "CF_API_TOKEN"],
        ["api.cloudflare.com/client/v4/user/tokens/verify"],
    ),
    "datadog_key": (
        lambda r: _s(r, HEX, r.choice([32, 40])),
        ["Datadog"],
        ["DD_API_KEY", "DD_APP_KEY"],
        ["api.datadoghq.com/api/v1/validate"],
    ),
    "sentry_token": (
        lambda r: "sntryu_" + _s(r, HEX, 64),
        ["Sentry"],
        ["SENTRY_AUTH_TOKEN"],
        ["sentry.io/api/0/organizations/"],
    ),
    "grafana_token": (
        lambda r: "glsa_" + _s(r, ALNUM, 32) + "_" + _s(r, HEX, 8),
        ["Grafana service account"],
        ["GRAFANA_TOKEN"],
        ["grafana.com/api/orgs"],
    ),
    "newrelic_key": (
        lambda r: "NRAK-" + _s(r, UPPER_ALNUM, 27),
        ["New Relic"],
        ["NEW_RELIC_API_KEY"],
        ["api.newrelic.com/graphql"],
    ),
    "groq_key": (lambda r: "gsk_" + _s(r, ALNUM, 52), ["Groq"], ["GROQ_API_KEY"], ["api.groq.com/openai/v1/models"]),
    "replicate_token": (
        lambda r: "r8_" + _s(r, ALNUM, 37),
        ["Replicate"],
        ["REPLICATE_API_TOKEN"],
        ["api.replicate.com/v1/account"],
    ),
    "vault_token": (
        lambda r: r.choice(["hvs." + _s(r, ALNUM, 24), "hvs.CAESI" + _s(r, URLSAFE, 86)]),
        ["Vault", "HashiCorp Vault root"],
        ["VAULT_TOKEN"],
        ["vault.example.com:8200/v1/sys/health"],
    ),
    "terraform_token": (
        lambda r: _s(r, ALNUM, 14) + ".atlasv1." + _s(r, ALNUM, 67),
        ["Terraform Cloud"],
        ["TFE_TOKEN", "TF_TOKEN_app_terraform_io"],
        ["app.terraform.io/api/v2/account/details"],
    ),
    "tailscale_key": (
        lambda r: f"tskey-{r.choice(['auth', 'api', 'client'])}-k{_s(r, ALNUM, 10)}CNTRL-" + _s(r, ALNUM, 33),
        ["Tailscale"],
        ["TS_AUTHKEY", "TAILSCALE_API_KEY"],
        ["api.tailscale.com/api/v2/tailnet/-/devices"],
    ),
    "ngrok_authtoken": (
        lambda r: "2" + _s(r, ALNUM, 26) + "_" + _s(r, ALNUM, 21),
        ["ngrok"],
        ["NGROK_AUTHTOKEN"],
        ["api.ngrok.com/tunnels"],
    ),
    "postman_key": (
        lambda r: f"PMAK-{_s(r, HEX, 24)}-{_s(r, HEX, 34)}",
        ["Postman"],
        ["POSTMAN_API_KEY"],
        ["api.getpostman.com/me"],
    ),
    "figma_token": (lambda r: "figd_" + _s(r, URLSAFE, 40), ["Figma"], ["FIGMA_TOKEN"], ["api.figma.com/v1/me"]),
    "airtable_pat": (
        lambda r: "pat" + _s(r, ALNUM, 14) + "." + _s(r, HEX, 64),
        ["Airtable"],
        ["AIRTABLE_API_KEY"],
        ["api.airtable.com/v0/meta/whoami"],
    ),
    "langsmith_key": (
        lambda r: f"lsv2_{r.choice(['pt', 'sk'])}_{_s(r, HEX, 32)}_{_s(r, HEX, 10)}",
        ["LangSmith"],
        ["LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"],
        ["api.smith.langchain.com/info"],
    ),
    "pinecone_key": (
        lambda r: f"pcsk_{_s(r, ALNUM, 5)}_{_s(r, ALNUM, 64)}",
        ["Pinecone"],
        ["PINECONE_API_KEY"],
        ["api.pinecone.io/indexes"],
    ),
    "buildkite_token": (
        lambda r: "bkua_" + _s(r, HEX, 40),
        ["Buildkite"],
        ["BUILDKITE_API_TOKEN"],
        ["api.buildkite.com/v2/user"],
    ),
    "circleci_token": (
        lambda r: f"CCIPAT_{_s(r, ALNUM, 22)}_{_s(r, HEX, 40)}",
        ["CircleCI"],
        ["CIRCLECI_TOKEN"],
        ["circleci.com/api/v2/me"],
    ),
    "firebase_server_key": (
        lambda r: f"AAAA{_s(r, URLSAFE, 7)}:APA91b{_s(r, URLSAFE, 134)}",
        ["FCM server key"],
        ["FCM_SERVER_KEY"],
        ["fcm.googleapis.com/fcm/send"],
    ),
    "mapbox_secret": (_mapbox, ["Mapbox secret"], ["MAPBOX_SECRET_TOKEN"], ["api.mapbox.com/tokens/v2"]),
    "square_token": (
        lambda r: r.choice(["EAAA" + _s(r, URLSAFE, 60), "sq0csp-" + _s(r, URLSAFE, 43)]),
        ["Square"],
        ["SQUARE_ACCESS_TOKEN"],
        ["connect.squareup.com/v2/locations"],
    ),
    "braintree_token": (
        lambda r: f"access_token$production${_s(r, LOWER_ALNUM, 16)}${_s(r, HEX, 32)}",
        ["Braintree", "PayPal Braintree"],
        ["BRAINTREE_ACCESS_TOKEN"],
        ["payments.braintree-api.com/graphql"],
    ),
    "razorpay_secret": (
        lambda r: _s(r, ALNUM, 24),
        ["Razorpay"],
        ["RAZORPAY_KEY_SECRET"],
        ["api.razorpay.com/v1/payments"],
    ),
    "okta_token": (
        lambda r: "00" + _s(r, URLSAFE, 40),
        ["Okta"],
        ["OKTA_API_TOKEN"],
        ["dev-123456.okta.com/api/v1/users/me"],
    ),
    "algolia_admin_key": (
        lambda r: _s(r, HEX, 32),
        ["Algolia admin"],
        ["ALGOLIA_ADMIN_API_KEY"],
        ["latency-dsn.algolia.net/1/keys"],
    ),
    "mistral_key": (
        lambda r: _s(r, ALNUM, 32),
        ["Mistral", "La Plateforme"],
        ["MISTRAL_API_KEY"],
        ["api.mistral.ai/v1/models"],
    ),
    "heroku_key": (
        lambda r: "HRKU-AA" + _s(r, URLSAFE, 58),
        ["Heroku"],
        ["HEROKU_API_KEY"],
        ["api.heroku.com/account"],
    ),
    "supabase_service_role": (
        _supabase,
        ["Supabase service_role"],
        ["SUPABASE_SERVICE_ROLE_KEY"],
        ["xyzcompany.supabase.co/rest/v1/"],
    ),
    "planetscale_password": (
        lambda r: "pscale_pw_" + _s(r, URLSAFE, 43),
        ["PlanetScale"],
        ["DATABASE_PASSWORD"],
        ["api.planetscale.com/v1/organizations"],
    ),
    "doppler_token": (
        lambda r: "dp.st.prd." + _s(r, ALNUM, 43),
        ["Doppler"],
        ["DOPPLER_TOKEN"],
        ["api.doppler.com/v3/me"],
    ),
}


ZH_VENDOR_GENERATORS: dict[str, tuple[Callable[[random.Random], str], list[str], list[str], list[str]]] = {
    "deepseek_key_zh": (
        lambda r: "sk-" + _s(r, HEX, 32),
        ["DeepSeek", "深度求索"],
        ["DEEPSEEK_API_KEY"],
        ["api.deepseek.com/models"],
    ),
    "moonshot_key_zh": (
        lambda r: "sk-" + _s(r, ALNUM, 48),
        ["Kimi", "月之暗面"],
        ["MOONSHOT_API_KEY"],
        ["api.moonshot.cn/v1/models"],
    ),
    "dashscope_key_zh": (
        lambda r: "sk-" + _s(r, HEX, 32),
        ["通义千问", "阿里百炼"],
        ["DASHSCOPE_API_KEY"],
        ["dashscope.aliyuncs.com/compatible-mode/v1/models"],
    ),
    "zhipu_key_zh": (
        lambda r: f"{_s(r, HEX, 32)}.{_s(r, ALNUM, 16)}",
        ["智谱", "GLM"],
        ["ZHIPUAI_API_KEY"],
        ["open.bigmodel.cn/api/paas/v4/models"],
    ),
    "qianfan_key_zh": (
        lambda r: f"bce-v3/ALTAK-{_s(r, ALNUM, 21)}/{_s(r, HEX, 40)}",
        ["百度千帆", "文心一言"],
        ["QIANFAN_API_KEY"],
        ["qianfan.baidubce.com/v2/models"],
    ),
    "huawei_sk_zh": (
        lambda r: _s(r, ALNUM, 40),
        ["华为云 SK", "华为云"],
        ["HUAWEICLOUD_SDK_SK"],
        ["iam.myhuaweicloud.com/v3/auth/tokens"],
    ),
    "volcengine_ark_zh": (_uuid, ["火山方舟", "豆包"], ["ARK_API_KEY"], ["ark.cn-beijing.volces.com/api/v3/models"]),
    "qiniu_sk_zh": (
        lambda r: _s(r, URLSAFE, 40),
        ["七牛云", "七牛"],
        ["QINIU_SECRET_KEY"],
        ["api.qiniu.com/v6/domain"],
    ),
    "feishu_app_secret_zh": (
        lambda r: _s(r, ALNUM, 32),
        ["飞书应用", "飞书"],
        ["FEISHU_APP_SECRET"],
        ["open.feishu.cn/open-apis/auth/v3/tenant_access_token/internal"],
    ),
    "wechat_appsecret_zh": (
        lambda r: _s(r, HEX, 32),
        ["公众号", "微信小程序"],
        ["WECHAT_APP_SECRET"],
        ["api.weixin.qq.com/cgi-bin/token"],
    ),
    "gitee_token_zh": (lambda r: _s(r, HEX, 32), ["Gitee", "码云"], ["GITEE_TOKEN"], ["gitee.com/api/v5/user"]),
    "openai_key_zh": (_openai, ["OpenAI", "ChatGPT 接口"], ["OPENAI_API_KEY"], ["api.openai.com/v1/models"]),
    "github_token_zh": (_github, ["GitHub", "GitHub 令牌"], ["GITHUB_TOKEN"], ["api.github.com/user"]),
    "anthropic_key_zh": (_anthropic, ["Claude", "Anthropic"], ["ANTHROPIC_API_KEY"], ["api.anthropic.com/v1/models"]),
}

_EN_TOKEN_TEMPLATES: list[Callable[[str, str, str, str], str]] = [
    lambda t, n, e, h: f"{e}={t}",
    lambda t, n, e, h: f'export {e}="{t}"',
    lambda t, n, e, h: f"New {n} key: {t} (rotated today, the old one is revoked)",
    lambda t, n, e, h: f"Remember: the {n} API key is {t}",
    lambda t, n, e, h: json.dumps({e.lower(): t, "timeout": 30}),
    lambda t, n, e, h: f"{n.lower().replace(' ', '_')}:\n  api_key: {t}\n  retries: 3",
    lambda t, n, e, h: f"User pasted their {n} token in chat: `{t}` - saved it for the deploy script.",
    lambda t, n, e, h: f"curl -s https://{h} -H 'Authorization: Bearer {t}'",
    lambda t, n, e, h: f'[{n.lower().replace(" ", "-")}]\napi_key = "{t}"',
    lambda t, n, e, h: f"- {n}: switched to the new key {t} after the leak scare",
    lambda t, n, e, h: f'os.environ["{e}"] = "{t}"  # TODO move this to the vault',
    lambda t, n, e, h: f"{n} token -> {t}",
    lambda t, n, e, h: f"gh secret set {e} --body '{t}'",
]

_ZH_TOKEN_TEMPLATES: list[Callable[[str, str, str, str], str]] = [
    lambda t, n, e, h: f"{n} 的 API key：{t}",
    lambda t, n, e, h: f"记一下，{n} 的密钥是 {t}，别弄丢了",
    lambda t, n, e, h: f"把 {e} 设成 {t} 之后就能跑通了",
    lambda t, n, e, h: f"用户给了 {n} 的 token：`{t}`，已经配到 .env 里",
    lambda t, n, e, h: f"{n} 新申请的 key 是 {t}（旧的已作废）",
    lambda t, n, e, h: f"配置如下：\n{e}={t}\n记得不要提交到仓库",
    lambda t, n, e, h: f"今天轮换了 {n} 的密钥，新值：{t}",
    lambda t, n, e, h: f"调用 {n} 接口一直报 401，换成 {t} 就好了",
    lambda t, n, e, h: f"{n}密钥={t}",
    lambda t, n, e, h: f'测试命令：curl https://{h} -H "Authorization: Bearer {t}"',
]


def _vendor(
    gen: Callable[[random.Random], str], names: list[str], envs: list[str], hosts: list[str], zh: bool
) -> Callable[[random.Random], tuple[str, str]]:
    templates = _ZH_TOKEN_TEMPLATES if zh else _EN_TOKEN_TEMPLATES

    def kind(rng: random.Random) -> tuple[str, str]:
        tok = gen(rng)
        tpl = rng.choice(templates)
        return tok, tpl(tok, rng.choice(names), rng.choice(envs), rng.choice(hosts))

    return kind


# ---------------------------------------------------------------------------------------------------------
# cloud credentials and webhooks


def _aws_id(rng: random.Random) -> str:
    return rng.choice(["AKIA", "AKIA", "ASIA"]) + _s(rng, B32, 16)


def k_aws_credentials(rng: random.Random) -> tuple[str, str]:
    kid, sec = _aws_id(rng), _s(rng, ALNUM + "+/", 40)
    region = rng.choice(["us-east-1", "eu-west-1", "ap-southeast-2", "eu-central-1"])
    profile = rng.choice(["default", "prod", "backup", "personal"])
    shapes = [
        f"[{profile}]\naws_access_key_id = {kid}\naws_secret_access_key = {sec}\nregion = {region}",
        f"export AWS_ACCESS_KEY_ID={kid}\nexport AWS_SECRET_ACCESS_KEY={sec}\nexport AWS_DEFAULT_REGION={region}",
        f"~/.aws/credentials on the build box:\n[{profile}]\naws_access_key_id={kid}\naws_secret_access_key={sec}",
        f"AWS keys for the backup bucket: {kid} / {sec}",
        f"aws configure set aws_secret_access_key {sec} --profile {profile}",
        f"The IAM user s3-uploader has access key {kid} and secret {sec}.",
    ]
    return sec, rng.choice(shapes)


def k_aws_access_key_id(rng: random.Random) -> tuple[str, str]:
    kid = _aws_id(rng)
    shapes = [
        f"Access key id {kid} belongs to the ci-deployer IAM user.",
        f"aws_access_key_id={kid}",
        f"Found {kid} hard-coded in scripts/upload.sh, need to rotate it",
        f'"AccessKeyId": "{kid}",',
    ]
    return kid, rng.choice(shapes)


def _rsa_der(rng: random.Random) -> bytes:
    pre = bytes.fromhex("308204a40201000282010100") + bytes([rng.randint(0x80, 0xFF)]) + _bytes(rng, 255)
    pre += bytes.fromhex("0203010001")
    return pre + _bytes(rng, 1192 - len(pre))


def _pkcs8_rsa_der(rng: random.Random) -> bytes:
    return bytes.fromhex("308204be020100300d06092a864886f70d0101010500048204a8") + _rsa_der(rng)


def _pem(label: str, der: bytes) -> str:
    return f"-----BEGIN {label}-----\n{_wrap(_b64(der))}\n-----END {label}-----"


def k_gcp_service_account(rng: random.Random) -> tuple[str, str]:
    project = f"{rng.choice(COMPANIES)}-{rng.randint(100000, 999999)}"
    pem = _pem("PRIVATE KEY", _pkcs8_rsa_der(rng)) + "\n"
    sa = rng.choice(["deployer", "bigquery-reader", "gcs-backup", "vertex-ai"])
    doc = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": _s(rng, HEX, 40),
        "private_key": pem,
        "client_email": f"{sa}@{project}.iam.gserviceaccount.com",
        "client_id": _d(rng, 21),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    secret = json.dumps(pem)[1:-1]
    body = json.dumps(doc, indent=2)
    text = rng.choice([f"Service account key for {sa}:\n{body}", f"```json\n{body}\n```", body])
    return secret, text


def k_azure_storage(rng: random.Random) -> tuple[str, str]:
    key = _b64(_bytes(rng, 64))
    acct = rng.choice(COMPANIES).replace("-", "") + _d(rng, 3)
    cs = f"DefaultEndpointsProtocol=https;AccountName={acct};AccountKey={key};EndpointSuffix=core.windows.net"
    shapes = [
        f'AZURE_STORAGE_CONNECTION_STRING="{cs}"',
        json.dumps({"ConnectionStrings": {"Blob": cs}}, indent=2),
        f"Storage account {acct} key1: {key}",
        f"az storage blob upload --account-name {acct} --account-key {key} -c backups -f db.dump",
    ]
    return key, rng.choice(shapes)


def k_slack_webhook(rng: random.Random) -> tuple[str, str]:
    tok = _s(rng, ALNUM, 24)
    url = f"https://hooks.slack.com/services/T{_s(rng, UPPER_ALNUM, 8)}/B{_s(rng, UPPER_ALNUM, 10)}/{tok}"
    shapes = [
        f"Alerts go to #ops via {url}",
        f"SLACK_WEBHOOK_URL={url}",
        f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy done\"}}' {url}",
        f"webhook: {url}",
    ]
    return tok, rng.choice(shapes)


def k_discord_webhook(rng: random.Random) -> tuple[str, str]:
    tok = _s(rng, URLSAFE, 68)
    url = f"https://discord.com/api/webhooks/{rng.randint(3 * 10**17, 13 * 10**17)}/{tok}"
    shapes = [
        f"Discord webhook for the #builds channel: {url}",
        f"DISCORD_WEBHOOK={url}",
        f"notify:\n  discord: {url}",
    ]
    return tok, rng.choice(shapes)


def k_s3_presigned_url(rng: random.Random) -> tuple[str, str]:
    sig = _s(rng, HEX, 64)
    d = _date(rng).replace("-", "")
    bucket = rng.choice(COMPANIES) + "-exports"
    url = (
        f"https://{bucket}.s3.amazonaws.com/reports/q3.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential={_aws_id(rng)}%2F{d}%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date={d}T101500Z"
        f"&X-Amz-Expires=604800&X-Amz-SignedHeaders=host&X-Amz-Signature={sig}"
    )
    shapes = [f"Shared the report with the client: {url}", f"presigned link (7 days): {url}", url]
    return sig, rng.choice(shapes)


# ---------------------------------------------------------------------------------------------------------
# passwords by context, CLI flags, connection strings


def k_password_prose(rng: random.Random) -> tuple[str, str]:
    pw, svc, user = _password(rng), rng.choice(SERVICES), _user(rng)
    shapes = [
        f"I changed the password to {pw}",
        f"New password for the {svc} admin account: {pw}",
        f"{svc} login is {user} / {pw}",
        f"Mom's {svc} password is {pw} (she asked me to remember it)",
        f"pw for {svc}: {pw}",
        f"The {svc} password got reset, it's now {pw}",
        f"Password: {pw}",
        f"login {user}, pass {pw}",
        f"User said: my {svc} password is {pw}, please keep it for next time.",
        f"creds for {svc} -> user: {user} pwd: {pw}",
    ]
    return pw, rng.choice(shapes)


def k_password_quoted(rng: random.Random) -> tuple[str, str]:
    pw, svc = _punct_password(rng), rng.choice(SERVICES)
    shapes = [
        f"The {svc} password is `{pw}`",
        f'Set the DB password to "{pw}" and restarted the service.',
        f"passwd: '{pw}'",
        f"the guest account password is \u201c{pw}\u201d",
        f"password=`{pw}` (yes, with the punctuation)",
        f"{svc}: username `admin`, password `{pw}`",
        f"Typed '{pw}' into the {svc} prompt and it worked.",
    ]
    return pw, rng.choice(shapes)


def k_passphrase(rng: random.Random) -> tuple[str, str]:
    words = rng.sample(PHRASE_WORDS, rng.randint(4, 6))
    if rng.random() < 0.3:
        words[0] = words[0].capitalize()
    p = rng.choice([" ", " ", "-"]).join(words) + rng.choice(["", "", f" {rng.randint(2, 99)}", "."])
    shapes = [
        f"My 1Password master passphrase: {p}",
        f'Vault unseal passphrase is "{p}"',
        f"GPG key passphrase = {p}",
        f"Disk encryption passphrase: `{p}`",
        f"LUKS passphrase for the laptop is '{p}'",
        f"The SSH key is protected with the passphrase {p}",
    ]
    return p, rng.choice(shapes)


def k_mysql_cli(rng: random.Random) -> tuple[str, str]:
    pw, simple, host, user = _password(rng), _simple_password(rng), _dbhost(rng), _user(rng)
    db = rng.choice(["app", "wordpress", "shop", "analytics"])
    shapes = [
        (pw, f"mysql -h {host} -u {user} -p'{pw}' {db}"),
        (pw, f"mysql --user={user} --password='{pw}' --host={host} {db}"),
        (simple, f"mysqldump -u root -p{simple} --all-databases > all.sql"),
        (pw, f"MYSQL_PWD='{pw}' mysql -u {user} -h {host} -e 'show databases'"),
        (simple, f"Connect with: mysql -u{user} -p{simple} -h {host} -P 3306"),
    ]
    return rng.choice(shapes)


def k_sshpass(rng: random.Random) -> tuple[str, str]:
    pw, simple, user = _password(rng), _simple_password(rng), _user(rng)
    host = rng.choice([f"{rng.choice(COMPANIES)}.com", f"203.0.113.{rng.randint(2, 254)}", "vps.example.net"])
    shapes = [
        (pw, f"sshpass -p '{pw}' ssh {user}@{host}"),
        (simple, f"sshpass -p {simple} scp backup.tar.gz {user}@{host}:/srv/backups/"),
        (pw, f"rsync -av -e \"sshpass -p '{pw}' ssh -p 2222\" ./site/ {user}@{host}:/var/www/"),
        (simple, f"ansible all -i hosts -e ansible_ssh_pass={simple} -m ping"),
    ]
    return rng.choice(shapes)


def k_docker_login(rng: random.Random) -> tuple[str, str]:
    pw, simple, tok, user = _password(rng), _simple_password(rng), _gh_classic(rng), _user(rng).replace(".", "")
    registry = rng.choice(["registry.gitlab.com", "harbor.internal.example", "docker.io", "quay.io"])
    shapes = [
        (pw, f"docker login -u {user} -p '{pw}' {registry}"),
        (tok, f"echo {tok} | docker login ghcr.io -u {user} --password-stdin"),
        (simple, f"docker login {registry} --username {user} --password {simple}"),
        (simple, f"podman login -u {user} -p {simple} {registry}"),
    ]
    return rng.choice(shapes)


def k_curl_basic_auth(rng: random.Random) -> tuple[str, str]:
    pw, simple, user = _password(rng), _simple_password(rng), _user(rng)
    host = f"{rng.choice(['jenkins', 'nexus', 'artifactory', 'api'])}.{rng.choice(COMPANIES)}.com"
    shapes = [
        (pw, f"curl -u '{user}:{pw}' https://{host}/api/json"),
        (simple, f"curl --user {user}:{simple} -X POST https://{host}/job/deploy/build"),
        (simple, f"wget --http-user={user} --http-password={simple} https://{host}/files/dump.sql.gz"),
        (pw, f"http -a '{user}:{pw}' GET https://{host}/v1/status"),
    ]
    return rng.choice(shapes)


def k_api_header(rng: random.Random) -> tuple[str, str]:
    tok = _s(rng, rng.choice([ALNUM, URLSAFE, HEX]), rng.choice([32, 40, 48, 64]))
    host = f"api.{rng.choice(COMPANIES)}.io"
    shapes = [
        f"curl https://{host}/v2/items -H 'Authorization: Bearer {tok}'",
        f'curl -H "X-API-Key: {tok}" https://{host}/v1/search?q=test',
        f"GET /v1/me HTTP/1.1\nHost: {host}\nAuthorization: Token {tok}\nAccept: application/json",
        f"fetch('https://{host}/v1/data', {{ headers: {{ 'x-api-key': '{tok}' }} }})",
        f"curl --header 'PRIVATE-TOKEN: {tok}' https://gitlab.{rng.choice(COMPANIES)}.com/api/v4/projects",
        f"requests.get(url, headers={{'Authorization': 'Bearer {tok}'}})",
    ]
    return tok, rng.choice(shapes)


def k_psql(rng: random.Random) -> tuple[str, str]:
    pw, simple, enc, host, user = (_password(rng), _simple_password(rng), _url_password(rng), _dbhost(rng), _user(rng))
    db = rng.choice(["app", "metrics", "prod", "memories"])
    shapes = [
        (pw, f"PGPASSWORD='{pw}' psql -h {host} -U {user} -d {db}"),
        (simple, f'psql "host={host} port=5432 dbname={db} user={user} password={simple} sslmode=require"'),
        (enc, f"psql postgresql://{user}:{enc}@{host}:5432/{db}"),
        (simple, f"pg_dump --dbname=postgresql://{user}:{simple}@{host}/{db} -Fc -f {db}.dump"),
    ]
    return rng.choice(shapes)


def k_database_url(rng: random.Random) -> tuple[str, str]:
    enc, host, user = _url_password(rng), _dbhost(rng), _user(rng)
    db = rng.choice(["app", "app_prod", "saas", "agent"])
    scheme = rng.choice(["postgres", "postgresql", "postgresql+psycopg", "mysql", "mysql+pymysql", "mariadb"])
    port = 3306 if scheme.startswith(("mysql", "mariadb")) else 5432
    url = f"{scheme}://{user}:{enc}@{host}:{port}/{db}"
    shapes = [
        f"DATABASE_URL={url}",
        f'SQLALCHEMY_DATABASE_URI = "{url}"',
        f"Prod DB: {url}",
        f'datasource db {{\n  provider = "postgresql"\n  url      = "{url}"\n}}',
        f"engine = create_engine('{url}?sslmode=require')",
    ]
    return enc, rng.choice(shapes)


def k_mongodb_uri(rng: random.Random) -> tuple[str, str]:
    enc, user = _url_password(rng), _user(rng)
    cluster = f"cluster0.{_s(rng, LOWER_ALNUM, 5)}.mongodb.net"
    shapes = [
        f"MONGODB_URI=mongodb+srv://{user}:{enc}@{cluster}/?retryWrites=true&w=majority",
        f"mongosh \"mongodb+srv://{cluster}/app\" --username {user} --password '{enc}'",
        f"client = MongoClient('mongodb://{user}:{enc}@10.0.{rng.randint(0, 9)}.12:27017/?authSource=admin')",
    ]
    return enc, rng.choice(shapes)


def k_redis(rng: random.Random) -> tuple[str, str]:
    simple, enc = _simple_password(rng), _url_password(rng)
    host = rng.choice([f"{_s(rng, LOWER_ALNUM, 8)}.upstash.io", "redis.internal", "cache.example.org"])
    shapes = [
        (enc, f"REDIS_URL=redis://:{enc}@{host}:6379/0"),
        (enc, f"rediss://default:{enc}@{host}:6379"),
        (simple, f"redis-cli -h {host} -p 6379 -a '{simple}' ping"),
        (simple, f"# redis.conf\nbind 0.0.0.0\nrequirepass {simple}"),
        (simple, f"CELERY_BROKER_URL = 'redis://:{simple}@{host}:6379/1'"),
    ]
    return rng.choice(shapes)


def k_sqlserver_jdbc(rng: random.Random) -> tuple[str, str]:
    pw = _password(rng, punct="!#@$%^*?-_.~+=")
    enc = quote(pw, safe="-_.~")
    server = rng.choice(COMPANIES).replace("-", "")
    shapes = [
        (
            pw,
            f"Server=tcp:{server}.database.windows.net,1433;Initial Catalog=app;User ID=sa;Password={pw};Encrypt=True;",
        ),
        (enc, f"jdbc:mysql://{_dbhost(rng)}:3306/app?user=app&password={enc}&useSSL=true"),
        (pw, f'"ConnectionStrings": {{ "Default": "Host=db;Database=app;Username=app;Password={pw}" }}'),
        (enc, f"spring.datasource.url=jdbc:postgresql://{_dbhost(rng)}:5432/app?user=svc&password={enc}"),
    ]
    return rng.choice(shapes)


# ---------------------------------------------------------------------------------------------------------
# config files


def _django_key(rng: random.Random) -> str:
    return _s(rng, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50)


def k_dotenv(rng: random.Random) -> tuple[str, str]:
    options = [
        ("SESSION_SECRET", _s(rng, HEX, 64)),
        ("JWT_SECRET", _b64(_bytes(rng, 32))),
        ("SECRET_KEY", _django_key(rng)),
        ("NEXTAUTH_SECRET", _b64(_bytes(rng, 32))),
        ("ENCRYPTION_KEY", _s(rng, HEX, 64)),
        ("SMTP_PASSWORD", _password(rng)),
        ("ADMIN_PASSWORD", _password(rng)),
    ]
    name, value = rng.choice(options)
    written = f'"{value}"' if any(c in value for c in " #$&;") else value
    rest = [
        "NODE_ENV=production",
        f"PORT={rng.choice([3000, 8000, 8080])}",
        "LOG_LEVEL=info",
        f"{name}={written}",
        f"APP_URL=https://app.{rng.choice(COMPANIES)}.com",
    ]
    rng.shuffle(rest)
    body = "\n".join([rng.choice(["# .env (production)", "# .env.local", "cat .env"]), *rest])
    return value, body


def k_yaml_config(rng: random.Random) -> tuple[str, str]:
    pw = _password(rng)
    shapes = [
        f"spring:\n  datasource:\n    url: jdbc:postgresql://{_dbhost(rng)}:5432/app\n    username: app\n"
        f'    password: "{pw}"',
        f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: app\n"
        f"      POSTGRES_PASSWORD: '{pw}'",
        f'# secrets.yaml (Home Assistant)\nmqtt_username: ha\nmqtt_password: "{pw}"',
        f'smtp:\n  host: smtp.{rng.choice(COMPANIES)}.com\n  port: 587\n  user: alerts\n  pass: "{pw}"',
        f"grafana:\n  adminUser: admin\n  adminPassword: '{pw}'",
    ]
    return pw, rng.choice(shapes)


def k_json_config(rng: random.Random) -> tuple[str, str]:
    pw = _password(rng)
    user = _user(rng)
    shapes = [
        {"database": {"host": _dbhost(rng), "port": 5432, "user": user, "password": pw}},
        {"smtp": {"server": "smtp.gmail.com", "port": 587, "username": f"{user}@gmail.com", "password": pw}},
        {"mqtt": {"broker": "mqtt.local", "user": user, "pass": pw, "tls": False}},
        {"admin": {"username": user, "passwd": pw}, "debug": False},
    ]
    doc = rng.choice(shapes)
    text = json.dumps(doc, indent=rng.choice([None, 2]))
    return pw, rng.choice([text, f"config.json:\n{text}"])


def k_ini_toml(rng: random.Random) -> tuple[str, str]:
    pw, simple, enc = _password(rng), _simple_password(rng), _url_password(rng)
    co = rng.choice(COMPANIES)
    shapes = [
        (pw, f"[database]\nhost = {_dbhost(rng)}\nuser = app\npassword = {pw}\n"),
        (pw, f'[smtp]\nserver = "smtp.{co}.com"\nusername = "noreply"\npassword = "{pw}"'),
        (enc, f"# pip.conf\n[global]\nindex-url = https://ci:{enc}@pypi.{co}.com/simple"),
        (pw, f'# ~/.my.cnf\n[client]\nuser=root\npassword="{pw}"'),
        (simple, f"[pypi]\nusername = __token__\npassword = {simple}"),
        (pw, f'[tool.poetry.http-basic.private]\nusername = "deploy"\npassword = "{pw}"'),
    ]
    return rng.choice(shapes)


def k_netrc(rng: random.Random) -> tuple[str, str]:
    pw = _password(rng, punct="!#&()@$%^*?-_.~+=")
    tok = _gh_classic(rng)
    user = _user(rng)
    shapes = [
        (pw, f"machine ftp.{rng.choice(COMPANIES)}.com\n  login {user}\n  password {pw}"),
        (tok, f"# ~/.netrc\nmachine github.com login {user} password {tok}"),
        (pw, f"machine api.heroku.com\n    login {user}@{rng.choice(COMPANIES)}.com\n    password {pw}"),
    ]
    return rng.choice(shapes)


def k_pgpass(rng: random.Random) -> tuple[str, str]:
    pw = _password(rng, punct="!;,#&()@$%^*?-_.~+=")
    host = _dbhost(rng)
    shapes = [
        f"{host}:5432:app:app_user:{pw}",
        f"# ~/.pgpass\n{host}:5432:*:postgres:{pw}\nlocalhost:5432:test:test:test",
        f"added to .pgpass -> *:*:*:replicator:{pw}",
    ]
    return pw, rng.choice(shapes)


def k_kube_token(rng: random.Random) -> tuple[str, str]:
    r = rng.random()
    if r < 0.6:
        ns = rng.choice(["default", "kube-system", "ci", "monitoring"])
        payload = {
            "iss": "kubernetes/serviceaccount",
            "kubernetes.io/serviceaccount/namespace": ns,
            "sub": f"system:serviceaccount:{ns}:deployer",
        }
        tok = _jwt(rng, payload, alg="RS256", sig_len=342)
    else:
        tok = f"K10{_s(rng, HEX, 64)}::server:{_s(rng, HEX, 32)}"
    shapes = [
        f"users:\n- name: deployer\n  user:\n    token: {tok}",
        f"kubectl --server=https://k8s.{rng.choice(COMPANIES)}.com:6443 --token={tok} get pods",
        f"K3S_TOKEN={tok}",
        f"kubectl config set-credentials ci --token={tok}",
    ]
    return tok, rng.choice(shapes)


def k_kube_client_key(rng: random.Random) -> tuple[str, str]:
    ec = bytes.fromhex("30770201010420") + _bytes(rng, 32) + bytes.fromhex("a00a06082a8648ce3d030107a14403420004")
    pem = _pem("EC PRIVATE KEY", ec + _bytes(rng, 64)) + "\n"
    data = _b64(pem.encode())
    cert = _b64(b"-----BEGIN CERTIFICATE-----\n" + _bytes(rng, 60))
    text = (
        f"apiVersion: v1\nkind: Config\nusers:\n- name: admin@homelab\n  user:\n"
        f"    client-certificate-data: {cert}\n    client-key-data: {data}\n"
        f"current-context: admin@homelab"
    )
    return data, text


def k_docker_config(rng: random.Random) -> tuple[str, str]:
    user, pw = _user(rng).replace(".", ""), _password(rng)
    auth = _b64(f"{user}:{pw}".encode())
    reg = rng.choice(
        [
            "https://index.docker.io/v1/",
            "ghcr.io",
            "registry.gitlab.com",
            f"{_d(rng, 12)}.dkr.ecr.us-east-1.amazonaws.com",
        ]
    )
    doc = json.dumps({"auths": {reg: {"auth": auth}}}, indent=rng.choice([2, 4, None]))
    return auth, rng.choice([doc, f"~/.docker/config.json:\n{doc}"])


def k_git_credential_url(rng: random.Random) -> tuple[str, str]:
    gh, gl = _gh_classic(rng), "glpat-" + _s(rng, URLSAFE, 20)
    org, repo = rng.choice(COMPANIES), rng.choice(["infra", "website", "agent", "dotfiles"])
    shapes = [
        (gh, f"git clone https://{rng.choice(FIRST)}:{gh}@github.com/{org}/{repo}.git"),
        (gl, f"# ~/.git-credentials\nhttps://oauth2:{gl}@gitlab.com"),
        (gh, f"git remote set-url origin https://x-access-token:{gh}@github.com/{org}/{repo}"),
        (gl, f"pip install git+https://gitlab-ci-token:{gl}@gitlab.com/{org}/{repo}.git@v1.4.0"),
    ]
    return rng.choice(shapes)


def k_url_query_secret(rng: random.Random) -> tuple[str, str]:
    tok = _s(rng, rng.choice([ALNUM, HEX, URLSAFE]), rng.choice([32, 40, 48]))
    co = rng.choice(COMPANIES)
    shapes = [
        f"https://api.{co}.com/v2/export?api_key={tok}&format=csv",
        f"Webhook endpoint: https://hooks.{co}.io/ingest?token={tok}",
        f"wss://stream.{co}.com/feed?access_token={tok}&channel=prices",
        f"curl 'https://api.{co}.com/v1/report?client_id=web&client_secret={tok}'",
        f"The calendar feed is https://calendar.{co}.com/ical/private.ics?key={tok}",
    ]
    return tok, rng.choice(shapes)


def k_url_encoded_redirect(rng: random.Random) -> tuple[str, str]:
    co = rng.choice(COMPANIES)
    tok = _s(rng, ALNUM, 40) if rng.random() < 0.5 else _b64(_bytes(rng, 30))
    inner = f"https://app.{co}.com/callback?access_token={tok}&state=xyz"
    once = quote(inner, safe="")
    twice = quote(f"https://auth.{co}.com/continue?next={once}", safe="")
    enc1, enc2 = quote(tok, safe=""), quote(quote(tok, safe=""), safe="")
    shapes = [
        (enc1, f"https://login.{co}.com/logout?redirect_uri={once}"),
        (enc1, f"Clicked https://auth.{co}.com/continue?next={once} and it logged me straight in"),
        (enc1, f"https://www.google.com/url?q={once}&sa=D"),
        (enc2, f"Redirect chain from the e-mail link: https://sso.{co}.com/login?return_to={twice}"),
    ]
    return rng.choice(shapes)


def k_basic_auth_header(rng: random.Random) -> tuple[str, str]:
    cred = _b64(f"{_user(rng)}:{_password(rng)}".encode())
    shapes = [
        f"curl -H 'Authorization: Basic {cred}' https://registry.{rng.choice(COMPANIES)}.com/v2/_catalog",
        f'proxy_set_header Authorization "Basic {cred}";',
        f"Request headers:\nAuthorization: Basic {cred}\nUser-Agent: python-requests/2.32.3",
    ]
    return cred, rng.choice(shapes)


def k_session_cookie(rng: random.Random) -> tuple[str, str]:
    r = rng.random()
    if r < 0.35:
        val = _s(rng, LOWER_ALNUM, 32)
        text = f"Cookie: sessionid={val}; csrftoken={_s(rng, ALNUM, 32)}"
    elif r < 0.7:
        val = _b64url(_bytes(rng, 120))
        text = f"__Secure-next-auth.session-token={val}"
    else:
        val = f"s%3A{_s(rng, URLSAFE, 32)}.{_s(rng, URLSAFE, 43)}"
        text = f"document.cookie shows connect.sid={val} - paste it into the scraper"
    return val, rng.choice([text, f"Logged-in cookie for the scraper:\n{text}"])


# ---------------------------------------------------------------------------------------------------------
# private keys


def _key_text(rng: random.Random, label: str, lines: list[str], json_ok: bool = True) -> tuple[str, str]:
    style = rng.randrange(6 if json_ok else 5)
    if style == 5:
        pem = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"
        return json.dumps("\n".join(lines))[1:-1], json.dumps({"private_key": pem})
    if style == 4:
        ind = "    "
        body = ("\n" + ind).join(lines)
        return body, f"tls.key: |\n{ind}-----BEGIN {label}-----\n{ind}{body}\n{ind}-----END {label}-----"
    body = "\n".join(lines)
    pem = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
    shapes = [
        f"Deploy key for the prod box:\n{pem}",
        f"```\n{pem}\n```",
        f"cat > ~/.ssh/id_deploy <<'EOF'\n{pem}\nEOF\nchmod 600 ~/.ssh/id_deploy",
        f"key.pem:\n\n{pem}\n",
    ]
    return body, shapes[style]


def k_pem_rsa(rng: random.Random) -> tuple[str, str]:
    return _key_text(rng, "RSA PRIVATE KEY", _wrap(_b64(_rsa_der(rng))).split("\n"))


def k_pem_ec(rng: random.Random) -> tuple[str, str]:
    der = bytes.fromhex("30770201010420") + _bytes(rng, 32) + bytes.fromhex("a00a06082a8648ce3d030107a14403420004")
    return _key_text(rng, "EC PRIVATE KEY", _wrap(_b64(der + _bytes(rng, 64))).split("\n"))


def k_pem_pkcs8(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        der = bytes.fromhex("302e020100300506032b657004220420") + _bytes(rng, 32)
    else:
        der = _pkcs8_rsa_der(rng)
    return _key_text(rng, "PRIVATE KEY", _wrap(_b64(der)).split("\n"))


def k_pem_other(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        pre = bytes.fromhex("3082051c304e06092a864886f70d01050d")
        label, der = "ENCRYPTED PRIVATE KEY", pre + _bytes(rng, 1312 - len(pre))
    else:
        pre = bytes.fromhex("308201bb02010002818100")
        label, der = "DSA PRIVATE KEY", pre + _bytes(rng, 447 - len(pre))
    return _key_text(rng, label, _wrap(_b64(der)).split("\n"))


def _openssh_lines(rng: random.Random, comment: str) -> list[str]:
    pub, priv = _bytes(rng, 32), _bytes(rng, 32)
    pubblob = _sstr(b"ssh-ed25519") + _sstr(pub)
    chk = _bytes(rng, 4)
    sec = chk + chk + _sstr(b"ssh-ed25519") + _sstr(pub) + _sstr(priv + pub) + _sstr(comment.encode())
    pad = 1
    while len(sec) % 8:
        sec += bytes([pad])
        pad += 1
    data = (
        b"openssh-key-v1\0"
        + _sstr(b"none")
        + _sstr(b"none")
        + _sstr(b"")
        + struct.pack(">I", 1)
        + _sstr(pubblob)
        + _sstr(sec)
    )
    return _wrap(_b64(data), 70).split("\n")


def k_openssh_key(rng: random.Random) -> tuple[str, str]:
    comment = f"{rng.choice(FIRST)}@{rng.choice(['laptop', 'desktop', 'mbp', 'thinkpad'])}"
    return _key_text(rng, "OPENSSH PRIVATE KEY", _openssh_lines(rng, comment), json_ok=False)


def k_putty_ppk(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        algo, version = "ssh-ed25519", 3
        pub = _sstr(b"ssh-ed25519") + _sstr(_bytes(rng, 32))
        priv = _sstr(_bytes(rng, 32))
        comment = f"eddsa-key-{_date(rng).replace('-', '')}"
        mac = _s(rng, HEX, 64)
    else:
        algo, version = "ssh-rsa", 2
        pub = _sstr(b"ssh-rsa") + _sstr(b"\x01\x00\x01") + _sstr(b"\x00" + _bytes(rng, 256))
        priv = b"".join(_sstr(b"\x00" + _bytes(rng, n)) for n in (256, 128, 128, 128))
        comment = f"rsa-key-{_date(rng).replace('-', '')}"
        mac = _s(rng, HEX, 40)
    pub_lines = _wrap(_b64(pub)).split("\n")
    priv_lines = _wrap(_b64(priv)).split("\n")
    text = (
        f"PuTTY-User-Key-File-{version}: {algo}\nEncryption: none\nComment: {comment}\n"
        f"Public-Lines: {len(pub_lines)}\n"
        + "\n".join(pub_lines)
        + f"\nPrivate-Lines: {len(priv_lines)}\n"
        + "\n".join(priv_lines)
        + f"\nPrivate-MAC: {mac}"
    )
    secret = "\n".join(priv_lines)
    return secret, rng.choice([text, f"The .ppk for WinSCP:\n{text}", f"```\n{text}\n```"])


def k_pgp_private(rng: random.Random) -> tuple[str, str]:
    ts = struct.pack(">I", rng.randint(1_500_000_000, 1_730_000_000))
    uid = f"{rng.choice(FIRST).capitalize()} {rng.choice(LAST).capitalize()} <{rng.choice(FIRST)}@proton.me>"
    data = (
        b"\x94\x58\x04"
        + ts
        + b"\x16\x09\x2b\x06\x01\x04\x01\xda\x47\x0f\x01\x01\x07\x40"
        + _bytes(rng, 70)
        + b"\xb4"
        + bytes([len(uid)])
        + uid.encode()
        + b"\x88\x93\x04\x13\x16\x0a"
        + _bytes(rng, 145)
        + b"\x9c\x5d\x04"
        + ts
        + _bytes(rng, 90)
    )
    lines = _wrap(_b64(data)).split("\n")
    crc = "=" + _b64(_crc24(data).to_bytes(3, "big"))
    body = "\n".join(lines)
    block = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n{crc}\n-----END PGP PRIVATE KEY BLOCK-----"
    shapes = [block, f"Backup of my GPG secret key:\n{block}", f"gpg --import <<'EOF'\n{block}\nEOF"]
    return body, rng.choice(shapes)


def k_wireguard(rng: random.Random) -> tuple[str, str]:
    priv, peer = _b64(_bytes(rng, 32)), _b64(_bytes(rng, 32))
    addr = f"10.{rng.randint(0, 200)}.0.{rng.randint(2, 50)}"
    conf = (
        f"[Interface]\nPrivateKey = {priv}\nAddress = {addr}/24\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = {peer}\n"
        f"Endpoint = vpn.{rng.choice(COMPANIES)}.com:51820\nAllowedIPs = 0.0.0.0/0"
    )
    shapes = [conf, f"wg0.conf on the phone:\n{conf}", f"WireGuard private key for the laptop: {priv}"]
    return priv, rng.choice(shapes)


def k_misc_private_key(rng: random.Random) -> tuple[str, str]:
    r = rng.randrange(4)
    if r == 0:
        key = _bech32("age-secret-key-", _bytes(rng, 32)).upper()
        return key, rng.choice(
            [
                f"# created: {_date(rng)}T10:12:44Z\n# public key: age1{_s(rng, BECH32, 58)}\n{key}",
                f"age identity for sops: {key}",
            ]
        )
    if r == 1:
        key = _bech32("nsec", _bytes(rng, 32))
        return key, rng.choice([f"Nostr nsec (don't lose it): {key}", f"nostr private key = {key}"])
    if r == 2:
        key = _b64(b"EdScB2" + _bytes(rng, 152))
        return key, f"untrusted comment: minisign encrypted secret key\n{key}"
    key = _b64(_bytes(rng, 64))
    return key, rng.choice(
        [f"ed25519 signing key (base64): {key}", f"SIGNING_KEY={key}", f"signing:\n  private_key_b64: {key}"]
    )


# ---------------------------------------------------------------------------------------------------------
# 2FA, codes, Wi-Fi


def _totp_seed(rng: random.Random) -> str:
    seed = _s(rng, B32, rng.choice([16, 32]))
    r = rng.random()
    if r < 0.3:
        return _group(seed.lower())
    if r < 0.45:
        return _group(seed)
    return seed


def k_totp_seed(rng: random.Random) -> tuple[str, str]:
    seed, svc = _totp_seed(rng), rng.choice(SERVICES)
    shapes = [
        f"2FA setup key for {svc}: {seed}",
        f"TOTP secret (in case I lose my phone): {seed}",
        f"Authenticator seed for {svc} - {seed}",
        f"{svc} MFA: can't scan the QR, manual key is {seed}",
        f"oathtool --totp -b {seed.replace(' ', '')}" if " " not in seed else f"Google Authenticator key: {seed}",
    ]
    return seed, rng.choice(shapes)


def k_otpauth_uri(rng: random.Random) -> tuple[str, str]:
    seed = _s(rng, B32, rng.choice([16, 26, 32]))
    issuer = rng.choice(["GitHub", "AWS", "Google", "Discord", "Binance", "Proton"])
    acct = quote(f"{rng.choice(FIRST)}.{rng.choice(LAST)}@gmail.com", safe="@.")
    uri = f"otpauth://totp/{issuer}:{acct}?secret={seed}&issuer={issuer}&algorithm=SHA1&digits=6&period=30"
    return seed, rng.choice([uri, f"QR decoded to {uri}", f"Backup of the {issuer} 2FA QR:\n{uri}"])


def _recovery_codes(rng: random.Random) -> list[str]:
    style = rng.randrange(4)
    if style == 0:
        return [f"{_s(rng, HEX, 5)}-{_s(rng, HEX, 5)}" for _ in range(10)]
    if style == 1:
        return [f"{_d(rng, 4)} {_d(rng, 4)}" for _ in range(10)]
    if style == 2:
        return ["-".join(_s(rng, UPPER_ALNUM, 4) for _ in range(3)) for _ in range(8)]
    return [_s(rng, LOWER_ALNUM, 10) for _ in range(10)]


def k_recovery_codes(rng: random.Random) -> tuple[str, str]:
    codes = _recovery_codes(rng)
    svc = rng.choice(["GitHub", "Google", "Proton", "Bitwarden", "Discord", "Microsoft"])
    shapes = [
        f"{svc} recovery codes:\n" + "\n".join(codes),
        f"Backup codes for {svc}: " + ", ".join(codes),
        f"## {svc} 2FA backup codes\n" + "\n".join(f"- {c}" for c in codes),
        f"{svc} recovery codes (each works once): " + " ".join(f"`{c}`" for c in codes),
    ]
    return rng.choice(codes), rng.choice(shapes)


def k_sms_code(rng: random.Random) -> tuple[str, str]:
    code = _d(rng, rng.choice([6, 6, 6, 8]))
    shapes = [
        f"Your verification code is {code}",
        f"2FA code from the bank: {code} (expires in 5 min)",
        f"User: the SMS says {code}, can you log in for me?",
        f"G-{code} is your Google verification code.",
        f"Login code for Steam: {code}",
        f"Use {code} to verify your WhatsApp account. Don't share this code.",
    ]
    return code, rng.choice(shapes)


def _door_code(rng: random.Random) -> str:
    r = rng.randrange(5)
    if r == 0:
        return _d(rng, 6)
    if r == 1:
        return "*" + _d(rng, 5) + "#"
    if r == 2:
        return f"{rng.randint(1, 59):02d}-{rng.randint(1, 59):02d}-{rng.randint(1, 59):02d}"
    if r == 3:
        return _d(rng, 4) + "#" + _d(rng, 2)
    return "#" + _d(rng, 6)


def k_door_code(rng: random.Random) -> tuple[str, str]:
    code = _door_code(rng)
    shapes = [
        f"Gate code for the building is {code}",
        f"Garage door keypad: {code}",
        f"The lockbox on the side gate opens with {code}",
        f"Office alarm disarm code {code}",
        f"Safe combination: {code}",
        f"Airbnb check-in: door code {code}, key in the lockbox",
    ]
    return code, rng.choice(shapes)


SSIDS = [
    "TP-LINK_5G_{x}",
    "ChinaNet-{x}",
    "HUAWEI-{x}",
    "Xiaomi_{x}",
    "NETGEAR{x}",
    "FRITZ!Box 7590 {x}",
    "Vodafone-{x}",
    "BT-Hub6-{x}",
    "MyHome_5G",
    "CMCC-{x}",
]


def _ssid(rng: random.Random) -> str:
    return rng.choice(SSIDS).replace("{x}", _s(rng, UPPER_ALNUM, 4))


def k_wifi_password(rng: random.Random) -> tuple[str, str]:
    pw, ssid = _password(rng, spaces=True), _ssid(rng)
    shapes = [
        f"Wi-Fi: {ssid} / {pw}",
        f"The guest wifi password is {pw}",
        f"SSID {ssid}, key {pw}",
        f"wpa_passphrase={pw}",
        f'network={{\n    ssid="{ssid}"\n    psk="{pw}"\n}}',
        f"home wifi ({ssid}) pw: {pw}",
    ]
    return pw, rng.choice(shapes)


def _wifi_escape(s: str) -> str:
    return "".join("\\" + c if c in '\\;,:"' else c for c in s)


def k_wifi_qr(rng: random.Random) -> tuple[str, str]:
    pw = _password(rng, punct="!;,#&()@$%^*?-_.~+=:")
    esc, ssid = _wifi_escape(pw), _wifi_escape(_ssid(rng))
    qr = rng.choice([f"WIFI:T:WPA;S:{ssid};P:{esc};H:false;;", f"WIFI:S:{ssid};T:WPA2;P:{esc};;"])
    return esc, rng.choice([qr, f"Decoded the Wi-Fi QR on the fridge: {qr}", f"qrencode '{qr}' -o wifi.png"])


def k_token_wrapped(rng: random.Random) -> tuple[str, str]:
    tok = rng.choice([_gh_classic, _anthropic, _slack_bot, _openai, _github])(rng)
    cut = rng.randint(len(tok) // 3, 2 * len(tok) // 3)
    a, b = tok[:cut], tok[cut:]
    shapes = [
        ("\n", f"Token (it wrapped when I copied it from the terminal):\n{a}\n{b}"),
        ("\\\n", f'export API_TOKEN="{a}\\\n{b}"'),
        ("\n", f"```\n{a}\n{b}\n```\n(it is one line, the chat window wrapped it)"),
        ("\n> ", f"> here is the key\n> {a}\n> {b}"),
        ("\n    ", f"api_key:\n    {a}\n    {b}"),
    ]
    sep, text = rng.choice(shapes)
    return a + sep + b, text


# ---------------------------------------------------------------------------------------------------------
# personal data (English phrasings)


def k_phone_us_uk(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.55:
        a = rng.choice(["415", "212", "646", "312", "617", "206", "512", "303", "718", "408", "919", "602"])
        e = str(rng.randint(201, 989)).replace("555", "556")
        n = _d(rng, 4)
        phone = rng.choice([f"({a}) {e}-{n}", f"+1 {a}-{e}-{n}", f"{a}.{e}.{n}", f"+1 ({a}) {e} {n}", f"{a}-{e}-{n}"])
    else:
        mid = rng.choice("45789") + _d(rng, 2)
        rest = _d(rng, 6)
        phone = rng.choice([f"07{mid} {rest}", f"+44 7{mid} {rest}", f"+44 (0)7{mid} {rest[:3]} {rest[3:]}"])
    name = rng.choice(FIRST).capitalize()
    shapes = [
        f"Call me at {phone}",
        f"Emergency contact: Mom, {phone}",
        f"{name}'s mobile: {phone}",
        f"My number changed to {phone}",
        f"WhatsApp {name} on {phone} about the keys",
        f"- phone: {phone}",
    ]
    return phone, rng.choice(shapes)


def k_phone_intl(rng: random.Random) -> tuple[str, str]:
    country = rng.randrange(7)
    if country == 0:
        p = "1" + rng.choice("567") + _d(rng, 1)
        rest = _d(rng, 8)
        phone = rng.choice([f"+49 {p} {rest}", f"0{p} {rest}", f"0{p}/{rest}"])
    elif country == 1:
        pairs = " ".join(_d(rng, 2) for _ in range(4))
        m = rng.choice("67")
        phone = rng.choice([f"0{m} {pairs}", f"+33 {m} {pairs}", f"+33 (0){m} {pairs}"])
    elif country == 2:
        p = rng.choice(["90", "80", "70"])
        a, b = _d(rng, 4), _d(rng, 4)
        phone = rng.choice([f"0{p}-{a}-{b}", f"+81 {p}-{a}-{b}", f"+81 {p} {a} {b}"])
    elif country == 3:
        a = rng.choice("6789") + _d(rng, 4)
        b = _d(rng, 5)
        phone = rng.choice([f"+91 {a} {b}", f"+91-{a}{b}", f"0{a}{b}"])
    elif country == 4:
        a, b = "9" + _d(rng, 4), _d(rng, 4)
        ddd = rng.choice(["11", "21", "31", "41"])
        phone = rng.choice([f"+55 {ddd} {a}-{b}", f"({ddd}) {a}-{b}"])
    elif country == 5:
        a, b, c = "4" + _d(rng, 2), _d(rng, 3), _d(rng, 3)
        phone = rng.choice([f"+61 {a} {b} {c}", f"0{a} {b} {c}"])
    else:
        a, b = "6" + _d(rng, 2), _d(rng, 6)
        phone = rng.choice([f"+31 {a[0]} {a[1:]}{b}", f"06-{a[1:]}{b}"])
    shapes = [
        f"Landlord's number: {phone}",
        f"Contact for the Berlin trip: {phone}",
        f"Call the hotel guy at {phone} if the check-in fails",
        f"phone = {phone}",
        f"My new SIM number is {phone}",
    ]
    return phone, rng.choice(shapes)


def k_ssn(rng: random.Random) -> tuple[str, str]:
    area = rng.randint(1, 899)
    area = 667 if area == 666 else area
    a, g, s = f"{area:03d}", f"{rng.randint(1, 99):02d}", f"{rng.randint(1, 9999):04d}"
    ssn = rng.choice([f"{a}-{g}-{s}", f"{a} {g} {s}", f"{a}{g}{s}"])
    shapes = [
        f"SSN: {ssn}",
        f"My social is {ssn}",
        f"For the tax form, dad's SSN is {ssn}",
        f"social security number {ssn} (needed for the W-9)",
    ]
    return ssn, rng.choice(shapes)


def k_uk_nino(rng: random.Random) -> tuple[str, str]:
    while True:
        pre = rng.choice("ABCEGHJKLMNOPRSTWXYZ") + rng.choice("ABCEGHJKLMNPRSTWXYZ")
        if pre not in {"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"}:
            break
    digits, suf = _d(rng, 6), rng.choice("ABCD")
    nino = rng.choice([f"{pre} {digits[:2]} {digits[2:4]} {digits[4:]} {suf}", f"{pre}{digits}{suf}"])
    shapes = [f"My NI number is {nino}", f"National Insurance: {nino}", f"NINO {nino} - for the HMRC form"]
    return nino, rng.choice(shapes)


def k_aadhaar(rng: random.Random) -> tuple[str, str]:
    num = _aadhaar(rng)
    shown = rng.choice([_group(num), num, _group(num, sep="-")])
    shapes = [f"Aadhaar: {shown}", f"My Aadhaar number is {shown}", f"KYC form - Aadhaar no. {shown}, PAN pending"]
    return shown, rng.choice(shapes)


def k_passport(rng: random.Random) -> tuple[str, str]:
    r = rng.randrange(4)
    if r == 0:
        p = rng.choice(["5", "6", "A", "B"]) + _d(rng, 8)
    elif r == 1:
        p = "1" + _d(rng, 8)
    elif r == 2:
        p = rng.choice("CFGHJK") + _s(rng, "CFGHJKLMNPRTVWXYZ0123456789", 8)
    else:
        p = rng.choice("JKLMNPRSTUVZ") + _d(rng, 7)
    exp = f"{rng.randint(2027, 2035)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    shapes = [
        f"Passport number {p}, expires {exp}",
        f"Booking needs my passport no.: {p}",
        f"Travel doc: passport {p} (renewed last year)",
        f"ESTA form - passport: {p}",
    ]
    return p, rng.choice(shapes)


def _card(rng: random.Random) -> str:
    r = rng.randrange(4)
    if r == 0:
        num = _luhn("4", 16, rng)
    elif r == 1:
        num = _luhn("5" + rng.choice("12345"), 16, rng)
    elif r == 2:
        num = _luhn(rng.choice(["34", "37"]), 15, rng)
        return rng.choice([f"{num[:4]} {num[4:10]} {num[10:]}", num])
    else:
        num = _luhn(rng.choice(["2221", "2720", "6011"]), 16, rng)
    return rng.choice([_group(num), _group(num, sep="-"), num])


def k_bank_card(rng: random.Random) -> tuple[str, str]:
    card = _card(rng)
    exp = f"{rng.randint(1, 12):02d}/{rng.randint(26, 31)}"
    shapes = [
        f"Card on file: {card} exp {exp} CVV {_d(rng, 3)}",
        f"Use my Visa {card} for the AWS account",
        f"Company card: {card}, expiry {exp}",
        f'billing:\n  card_number: "{card}"\n  exp: "{exp}"',
    ]
    return card, rng.choice(shapes)


def k_iban(rng: random.Random) -> tuple[str, str]:
    iban = _iban(rng)
    shown = rng.choice([_group(iban), iban])
    name = f"{rng.choice(FIRST).capitalize()} {rng.choice(LAST).capitalize()}"
    shapes = [
        f"Rent goes to {name}, IBAN {shown}",
        f"IBAN: {shown}",
        f"Bank details for the invoice: {shown} (BIC on the PDF)",
        f"Pay the deposit to {shown}",
    ]
    return shown, rng.choice(shapes)


def _email_user(rng: random.Random) -> str:
    f, last = rng.choice(FIRST), rng.choice(LAST)
    return rng.choice(
        [f"{f}.{last}", f"{f}{last}{rng.randint(1, 99)}", f"{f[0]}{last}{rng.randint(1970, 2005)}", f"{f}_{last}"]
    )


def k_email(rng: random.Random) -> tuple[str, str]:
    dom = rng.choice(
        [
            "gmail.com",
            "outlook.com",
            "yahoo.com",
            "icloud.com",
            "proton.me",
            "hotmail.co.uk",
            "gmx.de",
            "web.de",
            "fastmail.com",
        ]
    )
    e = f"{_email_user(rng)}@{dom}"
    name = rng.choice(FIRST).capitalize()
    shapes = [
        f"My personal email is {e}",
        f"Send the invoice to {e}",
        f"Contact: {name} <{e}>",
        f"{name}'s private address: {e} (don't use the work one)",
        f'git config --global user.email "{e}"',
        f"- email: {e}",
    ]
    return e, rng.choice(shapes)


def k_email_obfuscated(rng: random.Random) -> tuple[str, str]:
    user = _email_user(rng)
    dom, tld = rng.choice([("gmail", "com"), ("protonmail", "com"), ("outlook", "com"), ("yahoo", "co.uk")])
    e = rng.choice(
        [
            f"{user} [at] {dom} [dot] {tld}",
            f"{user}(at){dom}(dot){tld}",
            f"{user} at {dom} dot {tld}",
            f"{user} AT {dom} DOT {tld}",
            f"{user}\uff20{dom}.{tld}",
            f"{user} {{at}} {dom} {{dot}} {tld}",
            f"{user}[@]{dom}.{tld}",
        ]
    )
    shapes = [f"Reach me at {e}", f"email: {e}", f"(write to {e}, spam bots can't read this)"]
    return e, rng.choice(shapes)


def k_messenger_handle(rng: random.Random) -> tuple[str, str]:
    h = f"{rng.choice(FIRST)}{rng.choice(['_', '', '.'])}{rng.choice(LAST)[:4]}{rng.randint(10, 99)}"
    h_tg = h.replace(".", "_")
    shapes = [
        (h_tg, f"Telegram: @{h_tg}"),
        (h_tg, f"ping me on telegram, t.me/{h_tg}"),
        (h, f"my Discord is {h}"),
        (h, f"Signal username {h}.{rng.randint(10, 99)}"),
        (h_tg, f"Her Instagram is @{h_tg} (private account)"),
    ]
    return rng.choice(shapes)


def k_home_address(rng: random.Random) -> tuple[str, str]:
    r = rng.randrange(3)
    if r == 0:
        city, st, zipc = rng.choice(
            [
                ("Springfield", "IL", "62704"),
                ("Austin", "TX", "78704"),
                ("Portland", "OR", "97214"),
                ("Brooklyn", "NY", "11215"),
                ("Denver", "CO", "80205"),
                ("Madison", "WI", "53703"),
            ]
        )
        street = rng.choice(["Maple Ave", "Oak Street", "Linden Blvd", "Cedar Ln", "Hillcrest Dr", "Elm St"])
        apt = rng.choice(["", f", Apt {rng.randint(1, 12)}{rng.choice('ABCD')}"])
        addr = f"{rng.randint(12, 9876)} {street}{apt}, {city}, {st} {zipc}"
    elif r == 1:
        out = rng.choice(["N16", "SW11", "E8", "M14", "BS6", "EH3", "LS6"])
        pc = f"{out} {rng.randint(1, 9)}{_s(rng, 'ABDEFGHJLNPQRSTUWXYZ', 2)}"
        street = rng.choice(["Elm Grove", "Victoria Road", "Albert Street", "Church Lane", "Park Terrace"])
        town = rng.choice(["London", "Bristol", "Leeds"])
        addr = f"Flat {rng.randint(1, 9)}, {rng.randint(2, 120)} {street}, {town} {pc}"
    else:
        street = rng.choice(["Lindenstraße", "Hauptstraße", "Schillerstr.", "Bergmannstraße", "Am Kanal"])
        city, plz = rng.choice([("Berlin", "10969"), ("München", "80331"), ("Hamburg", "20357"), ("Köln", "50667")])
        addr = f"{street} {rng.randint(1, 140)}, {plz} {city}"
    shapes = [
        f"Ship the package to {addr}",
        f"I live at {addr}",
        f"Home address: {addr}",
        f"My parents' place is {addr}, spare key under the mat",
        f'address:\n  home: "{addr}"',
    ]
    return addr, rng.choice(shapes)


def _seed(rng: random.Random, words: list[str], n: int) -> list[str]:
    return [rng.choice(words) for _ in range(n)]


def k_seed_phrase(rng: random.Random) -> tuple[str, str]:
    words = _seed(rng, BIP39_EN, rng.choice([12, 12, 24]))
    r = rng.randrange(3)
    if r == 0:
        phrase = " ".join(words)
    elif r == 1:
        phrase = "\n".join(f"{i + 1}. {w}" for i, w in enumerate(words))
    else:
        phrase = ", ".join(words)
    wallet = rng.choice(["MetaMask", "Ledger", "Phantom", "Trust Wallet", "Electrum", "hardware wallet"])
    shapes = [
        f"{wallet} seed phrase: {phrase}",
        f"Recovery phrase for the {wallet}:\n{phrase}",
        f"Backup words ({len(words)}) - {phrase}",
        f'mnemonic = "{phrase}"' if r != 1 else f"mnemonic:\n{phrase}",
    ]
    return phrase, rng.choice(shapes)


def _crypto_key(rng: random.Random) -> tuple[str, str]:
    r = rng.randrange(3)
    if r == 0:
        raw = _s(rng, HEX, 64)
        return rng.choice(["0x" + raw, raw]), "ETH"
    if r == 1:
        return _b58check(b"\x80" + _bytes(rng, 32) + b"\x01"), "BTC WIF"
    return _b58(_bytes(rng, 64)), "Solana"


def k_crypto_private_key(rng: random.Random) -> tuple[str, str]:
    key, what = _crypto_key(rng)
    shapes = [
        f"{what} private key: {key}",
        f"PRIVATE_KEY={key}",
        f"Imported the hot wallet into the bot with key {key}",
        f"const wallet = new Wallet('{key}')" if what == "ETH" else f"wallet import key {key}",
    ]
    return key, rng.choice(shapes)


def _internal_host(rng: random.Random) -> str:
    svc = rng.choice(
        [
            "nas",
            "pve",
            "truenas",
            "pihole",
            "router",
            "homeassistant",
            "jellyfin",
            "grafana",
            "gitea",
            "backup",
            "vault",
            "k3s-master",
            "printer",
            "unifi",
        ]
    )
    co = rng.choice(COMPANIES)
    return rng.choice(
        [
            f"{svc}.lan",
            f"{svc}-{rng.randint(1, 9)}.local",
            f"{svc}.home.arpa",
            f"{svc}.internal",
            f"{svc}.service.{rng.choice(['dc1', 'home', 'fra1'])}.consul",
            f"{svc}.tail{_s(rng, HEX, 5)}.ts.net",
            f"{svc}.corp.{co}.com",
            f"{svc}.int.{co}.io",
            f"ip-10-{rng.randint(0, 255)}-{rng.randint(0, 255)}-{rng.randint(1, 254)}.ec2.internal",
            f"{svc}.{rng.choice(['prod', 'infra', 'data'])}.svc.cluster.local",
        ]
    )


def k_internal_host(rng: random.Random) -> tuple[str, str]:
    h = _internal_host(rng)
    shapes = [
        f"Grafana is at http://{h}:3000",
        f"ssh admin@{h}",
        f"Home Assistant: http://{h}:8123",
        f"mount -t cifs //{h}/media /mnt/media",
        f"VAULT_ADDR=https://{h}:8200",
        f"The backup job pushes to {h} every night.",
    ]
    return h, rng.choice(shapes)


def _private_ip(rng: random.Random) -> str:
    ip = rng.choice(
        [
            f"192.168.{rng.choice([0, 1, 1, 2, 10, 31, 50, 178])}.{rng.randint(2, 254)}",
            f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
            f"172.{rng.randint(16, 31)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
            f"100.{rng.randint(64, 127)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
        ]
    )
    port = rng.choice([22, 2222, 3000, 5000, 5001, 5432, 6379, 8006, 8080, 8123, 8443, 9000, 9090, 32400, 51820])
    return f"{ip}:{port}"


def k_private_ip(rng: random.Random) -> tuple[str, str]:
    s = _private_ip(rng)
    shapes = [
        f"Proxmox UI: https://{s}",
        f"Plex runs on http://{s}/web",
        f"jump host is {s}",
        f"ssh -L 5432:localhost:5432 forwarded through {s}",
        f"OLLAMA_HOST={s}",
        f"- upstream: {s}",
    ]
    return s, rng.choice(shapes)


def k_router_admin(rng: random.Random) -> tuple[str, str]:
    pw = _password(rng)
    gw = rng.choice(["192.168.1.1", "192.168.0.1", "10.0.0.1", "192.168.31.1"])
    shapes = [
        f"Router admin page http://{gw}, login admin / {pw}",
        f"The NAS admin user is admin and the password is {pw}",
        f"Printer web UI: http://{gw}:8080 (user: admin, pass: {pw})",
        f"Camera NVR login: admin {pw}",
    ]
    return pw, rng.choice(shapes)


# ---------------------------------------------------------------------------------------------------------
# Chinese phrasings


def k_aliyun_ak_zh(rng: random.Random) -> tuple[str, str]:
    kid, sec = "LTAI5t" + _s(rng, ALNUM, 18), _s(rng, ALNUM, 30)
    shapes = [
        f"阿里云 AccessKey ID：{kid}\nAccessKey Secret：{sec}",
        f"OSS 上传用的 AK/SK：{kid} / {sec}",
        f"export ALIBABA_CLOUD_ACCESS_KEY_SECRET={sec}  # 子账号 ram-deploy 的密钥",
        f"aliyun configure 的时候填：\n  Access Key Id: {kid}\n  Access Key Secret: {sec}",
        f"阿里云主账号的 secret 是 {sec}，千万别外泄",
    ]
    return sec, rng.choice(shapes)


def k_tencent_sk_zh(rng: random.Random) -> tuple[str, str]:
    sid, skey = "AKID" + _s(rng, ALNUM, 32), _s(rng, ALNUM, 32)
    shapes = [
        f"腾讯云 API 密钥：SecretId={sid}，SecretKey={skey}",
        f"COS 的密钥对：\nsecret_id: {sid}\nsecret_key: {skey}",
        f"TENCENTCLOUD_SECRET_KEY={skey}（刚在控制台新建的）",
        f"腾讯云 SecretKey 记在这：{skey}",
    ]
    return skey, rng.choice(shapes)


def k_dingtalk_webhook_zh(rng: random.Random) -> tuple[str, str]:
    tok, sign = _s(rng, HEX, 64), "SEC" + _s(rng, HEX, 64)
    url = f"https://oapi.dingtalk.com/robot/send?access_token={tok}"
    shapes = [
        (tok, f"钉钉告警机器人 webhook：{url}"),
        (sign, f"钉钉机器人开了加签，密钥是 {sign}"),
        (tok, f"监控脚本里的钉钉地址：\n{url}\n关键词：告警"),
    ]
    return rng.choice(shapes)


def k_wecom_webhook_zh(rng: random.Random) -> tuple[str, str]:
    key = _uuid(rng)
    url = f"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={key}"
    shapes = [
        f"企业微信群机器人：{url}",
        f"企微 webhook 的 key 是 {key}",
        f"把部署通知发到企业微信：\ncurl '{url}' -d @msg.json",
    ]
    return key, rng.choice(shapes)


def k_alipay_private_key_zh(rng: random.Random) -> tuple[str, str]:
    blob = _b64(_pkcs8_rsa_der(rng))
    shapes = [
        f"支付宝开放平台应用私钥（RSA2）：\n{blob}",
        f"# 支付宝应用私钥，别提交\nalipay.app-private-key={blob}",
        f"支付宝私钥在这里，千万别泄露：{blob}",
    ]
    return blob, rng.choice(shapes)


def k_password_prose_zh(rng: random.Random) -> tuple[str, str]:
    pw, svc, user = _password(rng), rng.choice(ZH_SERVICES), _user(rng)
    shapes = [
        f"我把密码改成了 {pw}",
        f"{svc} 的登录密码：{pw}",
        f"账号 {user}，密码 {pw}",
        f"老妈的{svc}密码是 {pw}，别忘了",
        f"新密码 {pw}（上次那个被盗了）",
        f"记住：{svc} 管理员密码 {pw}",
        f"用户说他的{svc}密码是{pw}，下次登录要用",
    ]
    return pw, rng.choice(shapes)


def k_root_password_zh(rng: random.Random) -> tuple[str, str]:
    pw, ip = _password(rng), f"47.{rng.randint(90, 120)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
    shapes = [
        f"服务器 root 密码：{pw}",
        f"ssh root@{ip}，密码 {pw}",
        f"宝塔面板 用户名 admin 密码 {pw}",
        f"新买的云服务器，初始密码是 {pw}，记得改",
        f"跳板机：{ip}  root / {pw}",
    ]
    return pw, rng.choice(shapes)


def k_passphrase_zh(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        p = " ".join(rng.sample(PHRASE_WORDS, rng.randint(4, 5)))
    else:
        p = " ".join(
            rng.sample(
                [
                    "wo",
                    "ai",
                    "bei",
                    "jing",
                    "tian",
                    "an",
                    "men",
                    "chang",
                    "cheng",
                    "hai",
                    "shang",
                    "xiao",
                    "mao",
                    "chi",
                    "yu",
                ],
                rng.randint(5, 7),
            )
        )
    shapes = [
        f"硬盘加密口令：{p}",
        f"GPG 私钥的密码短语是「{p}」",
        f"钱包密码短语（带空格）：{p}",
        f"1Password 主密码：{p}",
    ]
    return p, rng.choice(shapes)


def k_mysql_cli_zh(rng: random.Random) -> tuple[str, str]:
    pw, simple, host = _password(rng), _simple_password(rng), _dbhost(rng)
    shapes = [
        (pw, f"连数据库用这个：mysql -h {host} -u root -p'{pw}'"),
        (simple, f"导出命令 mysqldump -uroot -p{simple} shop > shop.sql"),
        (pw, f"线上库：mysql --host={host} --user=app --password='{pw}'，只读账号"),
    ]
    return rng.choice(shapes)


def k_sshpass_zh(rng: random.Random) -> tuple[str, str]:
    pw, simple = _password(rng), _simple_password(rng)
    ip = f"{rng.choice(['47', '121', '39', '106'])}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
    shapes = [
        (pw, f"自动部署脚本：sshpass -p '{pw}' ssh root@{ip}"),
        (simple, f"用 sshpass -p {simple} scp dist.tar.gz root@{ip}:/opt/ 上传"),
        (pw, f"批量执行：sshpass -p '{pw}' ssh -o StrictHostKeyChecking=no ubuntu@{ip} 'sudo reboot'"),
    ]
    return rng.choice(shapes)


def k_db_url_zh(rng: random.Random) -> tuple[str, str]:
    enc, host, user = _url_password(rng), _dbhost(rng), _user(rng)
    shapes = [
        f"数据库连接串：postgresql://{user}:{enc}@{host}:5432/app",
        f"MongoDB 地址 mongodb://{user}:{enc}@{host}:27017/admin",
        f"生产库的 DATABASE_URL=mysql://{user}:{enc}@{host}:3306/shop，别动",
    ]
    return enc, rng.choice(shapes)


def k_redis_zh(rng: random.Random) -> tuple[str, str]:
    simple, enc = _simple_password(rng), _url_password(rng)
    shapes = [
        (simple, f"Redis 密码：{simple}，端口 6379"),
        (enc, f"缓存连接 redis://:{enc}@r-bp1{_s(rng, LOWER_ALNUM, 12)}.redis.rds.aliyuncs.com:6379/0"),
        (simple, f"redis-cli -a {simple} 登录后执行 FLUSHDB 清缓存"),
    ]
    return rng.choice(shapes)


def k_dotenv_zh(rng: random.Random) -> tuple[str, str]:
    name, value = rng.choice(
        [
            ("JWT_SECRET", _b64(_bytes(rng, 32))),
            ("SECRET_KEY", _django_key(rng)),
            ("DB_PASSWORD", _password(rng)),
            ("APP_SECRET", _s(rng, HEX, 32)),
        ]
    )
    written = f'"{value}"' if any(c in value for c in " #$&;") else value
    body = f"APP_ENV=prod\nPORT=8080\n{name}={written}\nTZ=Asia/Shanghai"
    shapes = [f"项目的 .env 内容：\n{body}", f"服务器上的环境变量（别提交）：\n{body}", f"{name} 设置成 {value} 了"]
    text = rng.choice(shapes)
    return value, text


def k_totp_zh(rng: random.Random) -> tuple[str, str]:
    seed = _totp_seed(rng)
    shapes = [
        f"谷歌验证器的密钥：{seed}（换手机要用）",
        f"两步验证的备用密钥 {seed}",
        f"币安的 2FA 秘钥：{seed}，截图已删",
        f"身份验证器绑定密钥：{seed}",
    ]
    return seed, rng.choice(shapes)


def k_recovery_codes_zh(rng: random.Random) -> tuple[str, str]:
    codes = _recovery_codes(rng)
    svc = rng.choice(["GitHub", "谷歌账号", "微软账号", "Bitwarden"])
    shapes = [
        f"{svc} 恢复码（每个只能用一次）：\n" + "\n".join(codes),
        f"{svc} 备用验证码：" + "，".join(codes),
        f"## {svc} 紧急恢复码\n" + "\n".join(f"- {c}" for c in codes),
    ]
    return rng.choice(codes), rng.choice(shapes)


def k_sms_code_zh(rng: random.Random) -> tuple[str, str]:
    code = _d(rng, 6)
    shapes = [
        f"验证码 {code}，5 分钟内有效",
        f"【招商银行】您的验证码是{code}，请勿泄露。",
        f"用户：短信验证码是 {code}，帮我登录一下",
        f"【支付宝】校验码{code}，您正在进行登录操作",
        f"刚收到的动态码：{code}",
    ]
    return code, rng.choice(shapes)


def k_door_code_zh(rng: random.Random) -> tuple[str, str]:
    code = _door_code(rng)
    shapes = [
        f"小区门禁密码 {code}",
        f"保险柜密码：{code}",
        f"家里密码锁是 {code}，阿姨来的时候告诉她",
        f"公司前台门禁：{code}",
        f"民宿入住密码 {code}，房间 1203",
    ]
    return code, rng.choice(shapes)


def k_wifi_zh(rng: random.Random) -> tuple[str, str]:
    pw, ssid = _password(rng, spaces=True), _ssid(rng)
    shapes = [
        f"家里 WiFi：{ssid}，密码 {pw}",
        f"无线网密码是 {pw}",
        f"办公室 Wi-Fi 名称 {ssid} 密码：{pw}",
        f"客人来了告诉他们 wifi 密码 {pw}",
    ]
    return pw, rng.choice(shapes)


def k_payment_password_zh(rng: random.Random) -> tuple[str, str]:
    code = _d(rng, 6)
    shapes = [
        f"支付宝支付密码 {code}",
        f"工资卡取款密码：{code}",
        f"老爸的银行卡密码是 {code}，帮他记着",
        f"微信支付密码改成 {code} 了",
    ]
    return code, rng.choice(shapes)


def _cn_mobile(rng: random.Random) -> str:
    p = rng.choice(
        [
            "130",
            "131",
            "133",
            "135",
            "136",
            "138",
            "139",
            "150",
            "152",
            "157",
            "158",
            "159",
            "166",
            "177",
            "180",
            "183",
            "186",
            "188",
            "189",
            "191",
            "199",
        ]
    )
    a, b = _d(rng, 4), _d(rng, 4)
    return rng.choice(
        [f"{p}{a}{b}", f"{p} {a} {b}", f"{p}-{a}-{b}", f"+86 {p} {a} {b}", f"+86-{p}{a}{b}", f"(+86) {p}{a}{b}"]
    )


def k_phone_cn_zh(rng: random.Random) -> tuple[str, str]:
    phone = _cn_mobile(rng)
    name = rng.choice(["张伟", "李娜", "王芳", "刘洋", "陈杰", "老妈", "房东", "王师傅"])
    shapes = [
        f"我的手机号 {phone}",
        f"{name} 电话：{phone}",
        f"快递联系电话 {phone}，到了打这个",
        f"{name}的手机是{phone}",
        f"紧急联系人：{name}，{phone}",
    ]
    return phone, rng.choice(shapes)


def k_phone_hk_tw_zh(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        a, b = rng.choice("569") + _d(rng, 3), _d(rng, 4)
        phone = rng.choice([f"+852 {a} {b}", f"852-{a}{b}", f"(852) {a}-{b}"])
        shapes = [f"香港同事的手机 {phone}", f"深水埗那家店的電話：{phone}", f"香港卡号码 {phone}"]
    else:
        a, b = "9" + _d(rng, 2), _d(rng, 3)
        c = _d(rng, 3)
        phone = rng.choice([f"0{a}-{b}-{c}", f"+886 {a} {b} {c}", f"0{a}{b}{c}"])
        shapes = [f"我的手機號碼是 {phone}", f"台北房東電話：{phone}", f"聯絡人手機 {phone}"]
    return phone, rng.choice(shapes)


def k_cn_id_zh(rng: random.Random) -> tuple[str, str]:
    cid = _cn_id(rng)
    name = rng.choice(["张伟", "李娜", "王芳", "刘洋", "陈杰", "我妈", "我"])
    shapes = [
        f"{name}的身份证号：{cid}",
        f"身份证 {cid}，订票要用",
        f"实名认证用的证件号码是 {cid}",
        f"入住登记：{name}，身份证号码{cid}",
    ]
    return cid, rng.choice(shapes)


def k_cn_id_spaced_zh(rng: random.Random) -> tuple[str, str]:
    cid = _cn_id(rng)
    shown = rng.choice(
        [
            f"{cid[:6]} {cid[6:14]} {cid[14:]}",
            f"{cid[:6]} {cid[6:10]} {cid[10:14]} {cid[14:]}",
            f"{cid[:6]}-{cid[6:14]}-{cid[14:]}",
        ]
    )
    shapes = [f"身份证号 {shown}（按证件上的分组抄的）", f"帮我填表，身份证：{shown}", f"证件号码：{shown}"]
    return shown, rng.choice(shapes)


def k_tw_id_zh(rng: random.Random) -> tuple[str, str]:
    tid = _tw_id(rng)
    shapes = [f"身分證字號：{tid}", f"我的身分證是 {tid}，報名要用", f"健保卡上的身分證號 {tid}"]
    return tid, rng.choice(shapes)


def k_passport_zh(rng: random.Random) -> tuple[str, str]:
    p = rng.choice(["E" + _d(rng, 8), "E" + rng.choice("ABCDEFGHJKLMNPQRS") + _d(rng, 7), "G" + _d(rng, 8)])
    shapes = [f"护照号码 {p}", f"订机票需要护照号：{p}", f"我的护照号是{p}，有效期到 2031 年", f"签证材料：护照 {p}"]
    return p, rng.choice(shapes)


def k_hk_macau_permit_zh(rng: random.Random) -> tuple[str, str]:
    p = rng.choice(["C" + _d(rng, 8), "C" + rng.choice("ABCDEFGHJKLMN") + _d(rng, 7)])
    shapes = [f"港澳通行证号码：{p}", f"去香港要填通行证号 {p}", f"往来港澳通行证 {p}，签注还剩两次"]
    return p, rng.choice(shapes)


def k_bank_card_zh(rng: random.Random) -> tuple[str, str]:
    num = _luhn(rng.choice(["622202", "622848", "622588", "621700", "621483", "623058"]), rng.choice([16, 19]), rng)
    shown = rng.choice([_group(num), num])
    bank = rng.choice(["工商银行", "农业银行", "招商银行", "建设银行", "中国银行"])
    shapes = [
        f"{bank}卡号 {shown}",
        f"工资卡：{shown}（{bank}）",
        f"转账到这张卡：{shown}，户名张伟",
        f"房租打到 {bank} {shown}",
    ]
    return shown, rng.choice(shapes)


def k_email_zh(rng: random.Random) -> tuple[str, str]:
    user = rng.choice([str(rng.randint(10**7, 3 * 10**9)), rng.choice(PINYIN) + str(rng.randint(80, 2010))])
    dom = rng.choice(["qq.com", "163.com", "126.com", "foxmail.com", "sina.com"])
    e = rng.choice([f"{user}@{dom}", f"{user}#{dom}", f"{user} 艾特 {dom}", f"{user}(at){dom}"])
    shapes = [f"我的邮箱是 {e}", f"简历发到 {e}", f"联系邮箱：{e}（# 换成 @）", f"老板的私人邮箱 {e}"]
    return e, rng.choice(shapes)


def k_wechat_id_zh(rng: random.Random) -> tuple[str, str]:
    w = rng.choice(
        [
            "wxid_" + _s(rng, LOWER_ALNUM, 14),
            rng.choice(PINYIN) + rng.choice(["_", "-", ""]) + str(rng.randint(80, 2010)),
        ]
    )
    shapes = [
        f"我微信号 {w}，加的时候备注一下",
        f"微信：{w}",
        f"VX: {w}（备注：网站用户）",
        f"加我 wx {w}",
        f"客户的微信是 {w}",
    ]
    return w, rng.choice(shapes)


def k_qq_zh(rng: random.Random) -> tuple[str, str]:
    q = str(rng.randint(10**7, 3 * 10**9))
    shapes = [f"QQ号 {q}", f"扣扣：{q}", f"有事 Q 我：{q}", f"我的QQ是{q}，群里找不到就直接加"]
    return q, rng.choice(shapes)


def k_home_address_zh(rng: random.Random) -> tuple[str, str]:
    city, district = rng.choice(
        [
            ("北京市", "朝阳区"),
            ("上海市", "浦东新区"),
            ("广州市", "天河区"),
            ("深圳市", "南山区"),
            ("杭州市", "西湖区"),
            ("成都市", "武侯区"),
        ]
    )
    road = rng.choice(["建国路", "张杨路", "天河路", "科技园南路", "文三路", "人民南路"])
    compound = rng.choice(["阳光花园", "翠苑小区", "万科城", "锦绣家园", "金地名苑"])
    addr = (
        f"{city}{district}{road}{rng.randint(1, 999)}号{compound}{rng.randint(1, 30)}栋"
        f"{rng.randint(1, 6)}单元{rng.randint(1, 33)}{rng.randint(1, 4):02d}室"
    )
    shapes = [f"我家地址：{addr}", f"快递寄到 {addr}，收件人张伟", f"爸妈住在{addr}", f"收货地址 {addr}"]
    return addr, rng.choice(shapes)


def k_seed_phrase_zh(rng: random.Random) -> tuple[str, str]:
    words = _seed(rng, BIP39_ZH, rng.choice([12, 12, 24]))
    phrase = rng.choice([" ".join(words), "  ".join(words)])
    shapes = [f"钱包助记词：{phrase}", f"imToken 备份的中文助记词\n{phrase}", f"助记词（按顺序）：{phrase}，抄在纸上了"]
    return phrase, rng.choice(shapes)


def k_seed_phrase_en_in_zh(rng: random.Random) -> tuple[str, str]:
    phrase = " ".join(_seed(rng, BIP39_EN, rng.choice([12, 24])))
    shapes = [f"MetaMask 助记词：{phrase}", f"小狐狸钱包的恢复短语是 {phrase}", f"冷钱包助记词备份：\n{phrase}"]
    return phrase, rng.choice(shapes)


def k_crypto_private_key_zh(rng: random.Random) -> tuple[str, str]:
    key, what = _crypto_key(rng)
    shapes = [f"钱包私钥 {key}", f"{what} 私钥：{key}，导入到 OKX 钱包", f"机器人用的热钱包私钥是 {key}"]
    return key, rng.choice(shapes)


def k_internal_host_zh(rng: random.Random) -> tuple[str, str]:
    h = _internal_host(rng)
    shapes = [
        f"NAS 在 {h}，管理界面端口 5001",
        f"内网 Jenkins 地址：http://{h}:8080",
        f"公司内部 wiki 在 {h} 上",
        f"家里的 Home Assistant：http://{h}:8123",
    ]
    return h, rng.choice(shapes)


def k_private_ip_zh(rng: random.Random) -> tuple[str, str]:
    s = _private_ip(rng)
    shapes = [f"软路由后台 http://{s}", f"内网数据库地址 {s}", f"群晖管理页面：https://{s}", f"摄像头 RTSP 在 {s}"]
    return s, rng.choice(shapes)


def k_token_wrapped_zh(rng: random.Random) -> tuple[str, str]:
    tok = rng.choice([_gh_classic, _anthropic, _openai, lambda r: "sk-" + _s(r, HEX, 32)])(rng)
    cut = rng.randint(len(tok) // 3, 2 * len(tok) // 3)
    a, b = tok[:cut], tok[cut:]
    shapes = [
        ("\n", f"复制的时候换行了，其实是一行：\n{a}\n{b}"),
        ("\n", f"密钥太长分两行发：\n{a}\n{b}"),
        ("\\\n", f'export API_KEY="{a}\\\n{b}"  # 用户发来的'),
    ]
    sep, text = rng.choice(shapes)
    return a + sep + b, text


def k_nas_login_zh(rng: random.Random) -> tuple[str, str]:
    pw = _password(rng)
    shapes = [
        f"群晖账号 admin，密码 {pw}",
        f"路由器后台 192.168.31.1 登录密码 {pw}",
        f"摄像头管理员密码改成了 {pw}",
        f"公司 VPN：用户名 zhangwei 密码 {pw}",
    ]
    return pw, rng.choice(shapes)


# ---------------------------------------------------------------------------------------------------------
# the registry

KINDS: dict[str, Callable[[random.Random], tuple[str, str]]] = {}
for _name, (_gen, _names, _envs, _hosts) in VENDOR_GENERATORS.items():
    KINDS[_name] = _vendor(_gen, _names, _envs, _hosts, zh=False)
for _name, (_gen, _names, _envs, _hosts) in ZH_VENDOR_GENERATORS.items():
    KINDS[_name] = _vendor(_gen, _names, _envs, _hosts, zh=True)
KINDS.update({name[2:]: fn for name, fn in sorted(globals().items()) if name.startswith("k_") and callable(fn)})

CHINESE: frozenset[str] = frozenset(k for k in KINDS if k.endswith("_zh"))

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"(private) {t}",
    lambda t: f"[private] {t}",
    lambda t: f"[PRIVATE] {t}",
    lambda t: f"{t} (private)",
    lambda t: f"Private: {t}",
    lambda t: f"PRIVATE - {t}",
    lambda t: f"<!-- private --> {t}",
    lambda t: f"{t} <!-- private -->",
    lambda t: f"#private {t}",
    lambda t: f"{t} #private",
    lambda t: f"{{private}} {t}",
    lambda t: f"<private>{t}</private>",
    lambda t: f"( Private ) {t}",
    lambda t: f"{t} [Private]",
    lambda t: f"\U0001f512 {t}",
    lambda t: f"[do not publish] {t}",
    lambda t: f"（私密）{t}",
    lambda t: f"【私密】{t}",
    lambda t: f"【隐私】 {t}",
    lambda t: f"「私密」{t}",
    lambda t: f"{t}（私密）",
    lambda t: f"[私密] {t}",
    lambda t: f"#私密 {t}",
    lambda t: f"私密：{t}",
    lambda t: f"<!-- 私密 -->{t}",
    lambda t: f"〔不公开〕{t}",
    lambda t: f"『仅自己可见』{t}",
    lambda t: f"（private）{t}",
    lambda t: f"《私人》{t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"private": True},
    {"private": "true"},
    {"private": "yes"},
    {"Private": True},
    {"visibility": "private"},
    {"public": False},
    {"publish": False},
    {"published": False},
    {"draft": True},
    {"tags": ["private"]},
    {"tags": ["notes", "私密"]},
    {"access": "private"},
    {"privacy": "private"},
    {"sensitive": True},
    {"confidential": True},
    {"visibility": "私密"},
    {"私密": True},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "## Private",
    "## Private notes",
    "### Secrets",
    "## Personal (private)",
    "# Private - do not publish",
    "## \U0001f512 Private",
    "## 私密",
    "## 隐私",
    "### 私人信息",
    "## 个人隐私（不公开）",
]

ORDINARY: list[str] = [
    # the eight required strings
    "The password is 12+ characters",
    "The PIN is 4-6 digits",
    "CI summary: pass: 118",
    "conda pin: python=3.11",
    "secret: optional",
    '{"commit": "9fceb02d0ae598e95dc970b74767f19372d61af8"}',
    "sha512-Lw7pVqJgxN4Aq0xhv5XKvPbOQGm3Ln5w2m2Qm3Xy6d3ZpQzv0m1KXyqF1y7m2J5f6T8l2w3e4r5t6y7u8i9o0pA==",
    "git clone git@github.com:psf/requests.git",
    # version pins, dates, paths
    "requests==2.32.3",
    "numpy>=1.26,<2.0",
    "node v20.11.1 / npm 10.2.4",
    "Released on 2024-03-15",
    "The meeting moved to 2024-06-18 14:30 UTC",
    "/usr/local/lib/python3.11/site-packages/",
    "~/.config/memwiki/config.yaml",
    "v1.2.3-rc.1+build.5",
    "Timestamp 1700000000 is 2023-11-14T22:13:20Z",
    # hashes, SHAs, UUIDs, digests
    "Merged PR #482 (commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b)",
    "git checkout 3f4e2a1 -- src/app.py",
    "image: python:3.11-slim@sha256:5a3b9c2e8f1d4a7b6c0e9f8d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b",
    "md5sum: d41d8cd98f00b204e9800998ecf8427e  empty.txt",
    "sha1: 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
    "run_id: 3f2b8c1e-9d4a-4e7b-b6c5-0a1f2e3d4c5b",
    "GitHub's SSH host key fingerprint is SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU",
    "ISBN 978-0-596-52068-7",
    # colours, ports, hosts, URLs
    "#1e88e5 is the primary colour; accent #ff7043",
    "https://docs.python.org/3/library/secrets.html",
    "https://github.com/psf/requests/blob/main/README.md",
    "curl https://pypi.org/simple/requests/",
    "mkdocs serve -a 127.0.0.1:8000",
    "docker run -p 5432:5432 postgres:16",
    "Redis listens on port 6379 by default",
    "DNS servers: 1.1.1.1 and 8.8.8.8",
    "RFC 1918 private ranges: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16",
    "0.0.0.0:8000 -> container port 8000",
    "PORT=8080\nLOG_LEVEL=info\nWORKERS=4",
    # CLI commands without secrets
    "mysql -u root -p",
    "psql -h localhost -U postgres -W",
    "docker login ghcr.io -u octocat --password-stdin < token.txt",
    "chmod 600 ~/.pgpass ~/.netrc",
    "ssh-keygen -t ed25519 -C 'laptop'",
    "kubectl get pods -n monitoring -o wide",
    'export PATH="$HOME/.local/bin:$PATH"',
    "git log --oneline -n 5",
    "Use `pass show email/work` to read it from the password store",
    "SELECT id, email FROM users WHERE created_at > '2024-01-01';",
    # statements about secrets that contain none
    "password: ${DB_PASSWORD}",
    "password: ********",
    "api_key: null",
    "token_count: 4096",
    "max_tokens=8192, temperature=0.7",
    "Put the API key in the Authorization header as a Bearer token.",
    "Set OPENAI_API_KEY in your shell; never hard-code it.",
    "The sk- prefix marks OpenAI keys; ghp_ marks GitHub classic tokens.",
    "TOTP codes rotate every 30 seconds",
    "WPA2 passphrases must be 8-63 characters",
    "The door code is on the sticky note in the office",
    "Error 401: invalid_api_key (the key was revoked, the new one is in the vault)",
    "Use `secrets.token_urlsafe(32)` to generate session keys",
    "base64('hello') == 'aGVsbG8='",
    "Fixes #1234; see also #1240",
    "random_state=42",
    "CVE-2024-3094 (xz backdoor)",
    # Chinese
    "密码至少 12 位，需包含大小写字母和数字",
    "验证码 5 分钟内有效",
    "不要把 API key 提交到 git 仓库",
    "已经把 token 挪到环境变量里了",
    "端口 8080 被占用，改用 8081",
    "版本号升级到 v2.3.1",
    "超时时间从 30 秒调到 60 秒",
    "密码管理器用的是 Bitwarden",
    "数据库备份每天凌晨 3 点执行",
    "门禁密码在物业那里登记了",
    "手机号格式为 11 位数字",
    "身份证号需要 18 位，最后一位可能是 X",
]
