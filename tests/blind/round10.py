"""Blind canary set, round 10: written blind on 2026-12-04, without reading the gate or any earlier round.

The memory of an agent that helps three people at once:

- a small Chinese e-commerce shop owner: 淘宝/千牛, 拼多多, 抖店, 有赞, 微店, 1688 back-ends, 快递 and 电子面单
  accounts (顺丰丰桥, 快递100, 快递鸟, 菜鸟, 中通), 收款码 payloads, 对公账户, 发票 and 电子税务局, 客服 sub-accounts,
  聚水潭 and 旺店通 ERP keys, 微信支付/支付宝/企业微信/钉钉/飞书 secrets, buyers' phones and addresses;
- a home-lab and SRE person: Proxmox, TrueNAS, OPNsense, pfSense, UniFi, Portainer, Gitea, Harbor, ArgoCD,
  Vaultwarden, Keycloak, authentik, Nginx Proxy Manager, Traefik, Restic, Borg, Kopia, rsyncd, Samba, NFS, iSCSI
  CHAP, SMTP relays, Postfix, Dovecot, acme.sh, Certbot, EAB, Sentry, PagerDuty, Opsgenie, Grafana Cloud, New Relic,
  Elastic, Supabase, Firebase, Vercel, Netlify, Render, Fly.io, Railway, Heroku, DigitalOcean, Linode, Hetzner,
  Vultr, OVH, B2, Wasabi, R2 and the usual provider tokens, private hosts and addresses;
- a family: school and 医保 accounts, bank and credit cards (Luhn-valid), CVV, U盾 PIN, 支付密码, door codes,
  plates, 身份证 (valid check character), passports, 港澳通行证, 户口本, medical facts, children's names with
  birthdays, home addresses in Chinese and English, and foreign ids with valid check digits (IBAN, HKID, NRIC, ...).

Secrets come in every shape people write them: prose (English and Chinese), voice transcripts, values split over two
lines or messages, Markdown tables, code spans, fences, JSON/YAML/TOML/INI/XML/HCL/.env, shell history, compose,
systemd, Kubernetes, crontab, URLs (user-info, query, fragment, percent-encoded), forwarded e-mails, chat logs, tool
output, stack traces, log lines, QR payloads, label far from value, value before label, 「」『』“”（） quoting and
full-width text.

- KINDS: kind -> function(rng) -> (secret, text carrying it); the secret must not reach the site.
- CHINESE: the kinds phrased in Chinese.
- TEXT_MARKERS: ways to mark one note private inline.
- FRONTMATTER_MARKERS: frontmatter entries that mark a wiki page private.
- PERSONA_PRIVATE_HEADINGS: headings that open a private section of SOUL.md.
- ORDINARY: technical strings that are no secrets and must be published unchanged.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from urllib.parse import quote

Gen = Callable[[random.Random], tuple[str, str]]
Draw = Callable[[random.Random], str]

_LOWER = string.ascii_lowercase
_UPPER = string.ascii_uppercase
_DIGITS = string.digits
_ALNUM = string.ascii_letters + string.digits
_LOWNUM = _LOWER + _DIGITS
_UPNUM = _UPPER + _DIGITS
_HEXD = "0123456789abcdef"
_B64A = _ALNUM + "+/"
_B64U = _ALNUM + "-_"
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_SYM = "!@#$%&?.+=-"

KINDS: dict[str, Gen] = {}
_ZH: list[str] = []


# ---------------------------------------------------------------------------------------------------------------
# value helpers


def _w(r: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _hex(r: random.Random, n: int) -> str:
    return _w(r, n, _HEXD)


def _num(r: random.Random, n: int) -> str:
    return r.choice("123456789") + _w(r, n - 1, _DIGITS)


def _pin(r: random.Random, n: int) -> str:
    return _w(r, n, _DIGITS)


def _raw(r: random.Random, n: int) -> bytes:
    return bytes(r.randrange(256) for _ in range(n))


def _b64(r: random.Random, n: int) -> str:
    return base64.b64encode(_raw(r, n)).decode()


def _b64u(r: random.Random, n: int) -> str:
    return base64.urlsafe_b64encode(_raw(r, n)).decode().rstrip("=")


def _b64json(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _uuid(r: random.Random) -> str:
    h = _hex(r, 32)
    h = h[:12] + "4" + h[13:16] + r.choice("89ab") + h[17:]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _group(s: str, n: int, sep: str = " ") -> str:
    return sep.join(s[i : i + n] for i in range(0, len(s), n))


def _jwt(r: random.Random, claims: dict | None = None) -> str:
    body = dict(claims or {})
    body.setdefault("iat", r.randint(1_700_000_000, 1_790_000_000))
    body["jti"] = _hex(r, 16)
    return f"{_b64json({'alg': 'HS256', 'typ': 'JWT'})}.{_b64json(body)}.{_b64u(r, 32)}"


_EN = (
    "maple", "harbor", "lemon", "marble", "orbit", "pepper", "river", "silver", "timber", "velvet", "wagon", "zebra",
    "canyon", "donkey", "eagle", "fossil", "galaxy", "hammer", "island", "jungle", "kitten", "ladder", "magnet",
    "napkin", "oyster", "pencil", "rabbit", "saddle", "tunnel", "violin", "walnut", "yellow", "anchor", "biscuit",
    "cactus", "dolphin", "ember", "falcon", "ginger", "hazel", "igloo", "jasmine", "kettle", "lantern", "mango",
    "nectar", "olive", "panda", "quartz", "rocket", "sunset", "tulip", "umber", "vortex", "willow", "copper",
    "meadow", "thunder", "pickle", "glacier",
)  # fmt: skip
_PY = (
    "xiaomao", "dahai", "chuntian", "yueliang", "baobei", "xingxing", "huanghe", "taiyang", "pengyou", "kuaile",
    "hongdou", "mantou", "jiaozi", "shanshui", "laohu", "xiongmao", "qiezi", "tudou", "xigua", "putao", "feiji",
    "dengpao", "chuanghu", "lanqiu", "baicai", "yunduo", "xiaoyu", "chaye", "huoguo", "tangyuan",
)  # fmt: skip
_BIP = (
    "abandon", "ability", "absorb", "abstract", "access", "accident", "acid", "acoustic", "action", "actress",
    "adapt", "advice", "aerobic", "affair", "agent", "airport", "aisle", "album", "alcohol", "alien", "alley",
    "almost", "alpha", "amateur", "amazing", "analyst", "anchor", "ancient", "angle", "ankle", "announce", "antenna",
    "antique", "anxiety", "apology", "april", "arctic", "arena", "armor", "arrow", "artefact", "artwork", "aspect",
    "asthma", "athlete", "auction", "august", "autumn", "avocado", "awkward", "bachelor", "bacon", "badge", "balcony",
    "bamboo", "banana", "barrel", "basket", "battle", "beauty", "betray", "bicycle", "biology", "blanket", "blossom",
    "blouse", "bonus", "border", "bounce", "bracket", "brass", "breeze", "brick", "broccoli", "bronze", "broom",
    "bubble", "buddy", "buffalo", "bullet", "bundle", "bunker", "burger", "butter", "cabbage", "cabin", "cactus",
    "camera", "canal", "cannon", "canoe", "canvas", "canyon", "captain", "carbon", "cargo", "carpet", "casino",
    "castle", "catalog", "cattle", "ceiling", "celery", "cement", "census", "cereal", "chalk", "champion", "chaos",
    "cherry", "chimney", "chronic", "chuckle", "cinnamon", "citizen", "clarify", "clinic", "cluster", "coconut",
    "coffee", "column", "comic", "copper", "coral", "cotton", "coyote", "cradle", "crater", "cricket", "crisp",
    "crucial", "crumble", "crystal", "cupboard", "curtain", "cushion",
)  # fmt: skip


def _cap(word: str) -> str:
    return word[0].upper() + word[1:]


def _pw(r: random.Random) -> str:
    """A password as people make them: words, years, a symbol; sometimes fully random."""
    k = r.randrange(6)
    if k == 0:
        return _cap(r.choice(_EN)) + _pin(r, r.randint(2, 4)) + r.choice(_SYM)
    if k == 1:
        return r.choice(_EN) + r.choice(_SYM) + r.choice(_EN) + _pin(r, 2)
    if k == 2:
        return r.choice(_PY) + str(r.randint(1960, 2019)) + r.choice(_SYM)
    if k == 3:
        return _w(r, r.randint(10, 14), _ALNUM + "!@#$%&?") + r.choice("!@#$%&?")
    if k == 4:
        leet = _cap(r.choice(_EN)).replace("a", "@").replace("o", "0").replace("e", "3")
        return leet + r.choice(_SYM) + _pin(r, 2)
    return _cap(r.choice(_PY)) + r.choice(".-") + _cap(r.choice(_PY)) + _pin(r, r.randint(1, 3))


def _alnum_pw(r: random.Random) -> str:
    """A password safe inside URLs and connection strings."""
    return r.choice((_cap(r.choice(_PY)), _cap(r.choice(_EN)), _w(r, 6, _ALNUM))) + _w(r, r.randint(6, 10), _ALNUM)


def _phrase(r: random.Random) -> str:
    sep = r.choice(("-", " ", ".", "-"))
    return sep.join(r.choice(_EN) for _ in range(r.randint(4, 6)))


def _py_phrase(r: random.Random) -> str:
    return r.choice(("-", " ", "")).join(r.choice(_PY) for _ in range(r.randint(3, 4))) + _pin(r, r.randint(0, 3))


def _pw_or_phrase(r: random.Random) -> str:
    return r.choice((_pw, _phrase, _py_phrase))(r)


_ZH_DIG = "零一二三四五六七八九"


def _spoken_zh(r: random.Random) -> str:
    parts = []
    for _ in range(r.randint(7, 10)):
        k = r.random()
        if k < 0.3:
            parts.append(_ZH_DIG[r.randrange(10)])
        elif k < 0.45:
            parts.append(r.choice(_DIGITS))
        elif k < 0.65:
            parts.append("大写" + r.choice(_UPPER))
        elif k < 0.9:
            parts.append("小写" + r.choice(_LOWER))
        else:
            parts.append(r.choice(("井号", "艾特", "感叹号", "下划线", "点", "星号")))
    return " ".join(parts)


_EN_DIG = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _spoken_en(r: random.Random) -> str:
    parts = []
    for _ in range(r.randint(7, 10)):
        k = r.random()
        if k < 0.35:
            parts.append(r.choice(_EN_DIG))
        elif k < 0.55:
            parts.append("capital " + r.choice(_UPPER))
        elif k < 0.85:
            parts.append("lowercase " + r.choice(_LOWER))
        else:
            parts.append(r.choice(("hash", "at sign", "exclamation mark", "dash", "dot", "underscore")))
    return r.choice((" ", ", ")).join(parts)


def _spaced(s: str) -> str:
    return " ".join(s)


def _fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


# --- identifiers with check digits ------------------------------------------------------------------------------

_AREAS = (
    "110105", "110108", "310115", "310104", "440305", "440106", "330106", "330108", "510107", "320102", "420106",
    "370202", "210203", "500103", "610113", "350203", "430104", "120101",
)  # fmt: skip
_ID_W = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _ymd(r: random.Random, lo: int, hi: int) -> tuple[int, int, int]:
    return r.randint(lo, hi), r.randint(1, 12), r.randint(1, 28)


def _cn_id(r: random.Random, lo: int = 1950, hi: int = 2001) -> str:
    y, m, d = _ymd(r, lo, hi)
    body = f"{r.choice(_AREAS)}{y:04d}{m:02d}{d:02d}{r.randint(1, 999):03d}"
    return body + "10X98765432"[sum(int(c) * w for c, w in zip(body, _ID_W, strict=True)) % 11]


def _child_id(r: random.Random) -> str:
    return _cn_id(r, 2010, 2021)


def _luhn(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + _pin(r, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


_DEBIT = (("622202", 19), ("621226", 19), ("622848", 19), ("621700", 19), ("621661", 19), ("622588", 16))
_DEBIT += (("621483", 16), ("623058", 19), ("621799", 19), ("622609", 16))
_CREDIT = (("622575", 16), ("625802", 16), ("439225", 16), ("518710", 16), ("4", 16), ("52", 16), ("6258", 16))


def _debit(r: random.Random) -> str:
    prefix, length = r.choice(_DEBIT)
    n = _luhn(r, prefix, length)
    return r.choice((n, _group(n, 4), _group(n, 4, "-")))


def _credit(r: random.Random) -> str:
    prefix, length = r.choice(_CREDIT)
    n = _luhn(r, prefix, length)
    return r.choice((n, _group(n, 4), _group(n, 4, "-")))


def _iban(r: random.Random, country: str | None = None) -> str:
    cc = country or r.choice(("DE", "GB", "FR", "NL", "ES", "IT"))
    if cc == "DE":
        bban = _pin(r, 8) + _pin(r, 10)
    elif cc == "GB":
        bban = r.choice(("NWBK", "BARC", "HBUK", "LOYD", "MIDL")) + _pin(r, 6) + _pin(r, 8)
    elif cc == "NL":
        bban = r.choice(("ABNA", "INGB", "RABO", "TRIO", "BUNQ")) + _pin(r, 10)
    elif cc == "ES":
        bban = _pin(r, 20)
    elif cc == "IT":
        bban = r.choice(_UPPER) + _pin(r, 10) + _pin(r, 12)
    else:
        bank, branch, acct = _num(r, 5), _pin(r, 5), _pin(r, 11)
        key = 97 - (89 * int(bank) + 15 * int(branch) + 3 * int(acct)) % 97
        bban = f"{bank}{branch}{acct}{key:02d}"
    rearranged = bban + cc + "00"
    check = 98 - int("".join(str(int(c, 36)) for c in rearranged)) % 97
    iban = f"{cc}{check:02d}{bban}"
    return r.choice((iban, _group(iban, 4)))


def _hkid(r: random.Random) -> str:
    letter, digits = r.choice(_UPPER), _pin(r, 6)
    total = 9 * 36 + 8 * (ord(letter) - 55) + sum((7 - i) * int(c) for i, c in enumerate(digits))
    check = (11 - total % 11) % 11
    return f"{letter}{digits}({'A' if check == 10 else check})"


def _nric(r: random.Random) -> str:
    prefix, digits = r.choice("ST"), _pin(r, 7)
    total = sum(int(c) * w for c, w in zip(digits, (2, 7, 6, 5, 4, 3, 2), strict=True)) + (4 if prefix == "T" else 0)
    return prefix + digits + "JZIHGFEDCBA"[total % 11]


def _twid(r: random.Random) -> str:
    letter = r.choice(_UPPER)
    code = "ABCDEFGHJKLMNPQRSTUVXYWZIO".index(letter) + 10
    digits = r.choice("12") + _pin(r, 7)
    total = code // 10 + (code % 10) * 9 + sum(int(c) * w for c, w in zip(digits, range(8, 0, -1), strict=True))
    return letter + digits + str((10 - total % 10) % 10)


def _my_number(r: random.Random) -> str:
    body = _pin(r, 11)
    total = sum(int(body[11 - n]) * (n + 1 if n <= 6 else n - 5) for n in range(1, 12))
    rem = total % 11
    full = body + str(0 if rem <= 1 else 11 - rem)
    return r.choice((full, _group(full, 4)))


def _ssn(r: random.Random) -> str:
    return f"{r.randint(1, 665):03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"


def _nino(r: random.Random) -> str:
    while True:
        pre = r.choice("ABCEGHJKLMNOPRSTWXYZ") + r.choice("ABCEGHJKLMNPRSTWXYZ")
        if pre not in ("BG", "GB", "NK", "KN", "TN", "NT", "ZZ"):
            break
    d = _pin(r, 6)
    return r.choice((f"{pre}{d}{r.choice('ABCD')}", f"{pre} {d[:2]} {d[2:4]} {d[4:]} {r.choice('ABCD')}"))


_USCC_CH = "0123456789ABCDEFGHJKLMNPQRTUWXY"
_USCC_W = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)


def _uscc(r: random.Random) -> str:
    org = _pin(r, 8)
    c9 = 11 - sum(int(c) * w for c, w in zip(org, (3, 7, 9, 10, 5, 8, 4, 2), strict=True)) % 11
    body = r.choice(("91", "92")) + r.choice(_AREAS) + org + ("X" if c9 == 10 else "0" if c9 == 11 else str(c9))
    return body + _USCC_CH[(31 - sum(_USCC_CH.index(c) * w for c, w in zip(body, _USCC_W, strict=True)) % 31) % 31]


def _passport_cn(r: random.Random) -> str:
    return r.choice(("E" + _pin(r, 8), "E" + r.choice("ABCDEFGH") + _pin(r, 7), "EJ" + _pin(r, 7)))


def _hk_permit(r: random.Random) -> str:
    return r.choice(("C" + _pin(r, 8), "C" + r.choice("ABCDEFGHJK") + _pin(r, 7), "CE" + _pin(r, 7)))


_PLATE_PROV = "京沪粤浙苏川鄂湘闽鲁渝津"
_PLATE_L = "ABCDEFGHJKLMNPQRSTUVWXYZ"


def _plate(r: random.Random) -> str:
    head = r.choice(_PLATE_PROV) + r.choice("ABCDEFG")
    if r.random() < 0.4:
        tail = r.choice("DF") + _pin(r, 5)
    else:
        tail = "".join(r.choice(_PLATE_L + _DIGITS) for _ in range(4)) + r.choice(_DIGITS)
    return head + r.choice(("", "·", " ")) + tail


# --- people, contacts, places -------------------------------------------------------------------------------------

_SUR = "王李张刘陈杨赵黄周吴徐孙胡朱高林何郭马罗"
_GIVEN = (
    "一诺", "子涵", "欣怡", "梓萱", "浩然", "宇轩", "思远", "雨桐", "若汐", "沐阳", "嘉怡", "俊熙", "诗涵", "明轩",
    "可馨", "天佑", "语嫣", "星辰", "安然", "乐言",
)  # fmt: skip
_ADULT = ("建国", "丽华", "志强", "秀英", "海燕", "伟", "静", "敏", "磊", "晓东", "红梅", "国庆", "玉兰", "春生")
_PY_SUR = ("Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Zhao", "Huang", "Zhou", "Wu", "Xu", "Lin", "Guo", "Ma")
_EN_FIRST = ("Emma", "Olivia", "Lucas", "Ethan", "Mia", "Chloe", "Ryan", "Grace", "Leo", "Ava", "Nathan", "Ivy")
_PY_GIVEN = ("Yinuo", "Zihan", "Xinyi", "Haoran", "Yuxuan", "Siyuan", "Yutong", "Muyang", "Jiayi", "Tianyou")


def _cn_name(r: random.Random) -> str:
    return r.choice(_SUR) + r.choice(_GIVEN)


def _adult_name(r: random.Random) -> str:
    return r.choice(_SUR) + r.choice(_ADULT)


def _en_name(r: random.Random) -> str:
    return f"{r.choice(_EN_FIRST + _PY_GIVEN)} {r.choice(_PY_SUR)}"


_CN_PFX = (
    "130", "131", "132", "135", "136", "137", "138", "139", "150", "151", "152", "157", "158", "159", "166", "176",
    "177", "178", "180", "181", "182", "183", "185", "186", "187", "188", "189", "191", "198", "199",
)  # fmt: skip


def _cn_mobile_digits(r: random.Random) -> str:
    return r.choice(_CN_PFX) + _pin(r, 8)


def _cn_mobile(r: random.Random) -> str:
    d = _cn_mobile_digits(r)
    forms = (
        d,
        f"{d[:3]} {d[3:7]} {d[7:]}",
        f"{d[:3]}-{d[3:7]}-{d[7:]}",
        f"+86 {d[:3]} {d[3:7]} {d[7:]}",
        f"+86-{d}",
        f"+86{d}",
        f"0086 {d}",
        f"(+86) {d[:3]}-{d[3:7]}-{d[7:]}",
        f"{d[:3]} {d[3:6]} {d[6:]}",
        f"{d[:3]}.{d[3:7]}.{d[7:]}",
    )
    return r.choice(forms)


def _intl_phone(r: random.Random) -> str:
    forms = (
        f"+1 ({r.randint(201, 989)}) {r.randint(200, 999)}-{_pin(r, 4)}",
        f"+44 7{_pin(r, 3)} {_pin(r, 6)}",
        f"+852 {r.choice('569')}{_pin(r, 3)} {_pin(r, 4)}",
        f"+81 90-{_pin(r, 4)}-{_pin(r, 4)}",
        f"+49 15{r.randint(1, 9)} {_pin(r, 8)}",
        f"+886 9{_pin(r, 2)} {_pin(r, 3)} {_pin(r, 3)}",
        f"+65 {r.choice('89')}{_pin(r, 3)} {_pin(r, 4)}",
        f"+853 6{_pin(r, 3)} {_pin(r, 4)}",
    )
    return r.choice(forms)


_MAILDOM = ("qq.com", "163.com", "126.com", "gmail.com", "outlook.com", "foxmail.com", "icloud.com", "sina.com")
_MAILDOM += ("proton.me", "yeah.net", "hotmail.com", "aliyun.com")


def _local(r: random.Random) -> str:
    forms = (
        r.choice(_PY_SUR).lower() + r.choice(_PY_GIVEN).lower() + str(r.randint(70, 99)),
        f"{r.choice(_PY_GIVEN).lower()}.{r.choice(_PY_SUR).lower()}",
        r.choice(_PY) + "_" + _pin(r, 4),
        _num(r, r.randint(6, 10)),
        r.choice(_EN_FIRST).lower() + r.choice(_PY_SUR).lower() + _pin(r, 2),
    )
    return r.choice(forms)


def _email(r: random.Random) -> str:
    return f"{_local(r)}@{r.choice(_MAILDOM)}"


_CITIES = (
    ("上海市", ("浦东新区", "徐汇区", "闵行区", "静安区", "杨浦区"), "Shanghai", "2001"),
    ("北京市", ("朝阳区", "海淀区", "丰台区", "东城区"), "Beijing", "1000"),
    ("广东省深圳市", ("南山区", "福田区", "宝安区", "龙华区"), "Shenzhen", "5180"),
    ("浙江省杭州市", ("西湖区", "滨江区", "余杭区", "拱墅区"), "Hangzhou", "3100"),
    ("四川省成都市", ("武侯区", "高新区", "锦江区", "青羊区"), "Chengdu", "6100"),
    ("江苏省南京市", ("鼓楼区", "建邺区", "玄武区"), "Nanjing", "2100"),
)
_ROADS = (
    ("锦绣路", "Jinxiu"), ("丹桂路", "Dangui"), ("文一西路", "Wenyi West"), ("科苑南路", "Keyuan South"),
    ("天府大道", "Tianfu"), ("龙华中路", "Longhua Middle"), ("望京西路", "Wangjing West"), ("滨河路", "Binhe"),
    ("学府路", "Xuefu"), ("春晖路", "Chunhui"), ("松柏路", "Songbai"), ("梧桐街", "Wutong"),
)  # fmt: skip
_ESTATES = (
    "阳光花园",
    "翠湖苑",
    "金桥新村",
    "绿地世纪城",
    "万科城市花园",
    "锦绣华庭",
    "东方名苑",
    "海棠湾",
    "紫薇公寓",
)


def _cn_address(r: random.Random) -> str:
    prov, dists, _, _ = r.choice(_CITIES)
    road = r.choice(_ROADS)[0]
    unit = f"{r.randint(1, 32)}栋{r.randint(1, 4)}单元{r.randint(2, 33)}{r.randint(1, 4):02d}室"
    if r.random() < 0.5:
        return f"{prov}{r.choice(dists)}{road}{r.randint(1, 3999)}号{r.choice(_ESTATES)}{unit}"
    return f"{prov}{r.choice(dists)}{road}{r.randint(1, 999)}弄{r.randint(1, 99)}号{r.randint(101, 2604)}室"


def _py_address(r: random.Random) -> str:
    _, _, city, zip4 = r.choice(_CITIES)
    road = r.choice(_ROADS)[1]
    return (
        f"Room {r.randint(2, 33)}{r.randint(1, 4):02d}, Building {r.randint(1, 32)}, "
        f"No. {r.randint(1, 3999)} {road} Road, {city} {zip4}{r.randint(10, 99)}"
    )


_US_STREETS = ("Maple Crest", "Willow Bend", "Harbor View", "Cedar Hollow", "Orchard Hill", "Sycamore", "Juniper")
_US_CITIES = (("Sunnyvale", "CA", "940"), ("Bellevue", "WA", "980"), ("Austin", "TX", "787"), ("Edison", "NJ", "088"))


def _en_address(r: random.Random) -> str:
    k = r.randrange(3)
    if k == 0:
        city, st, z = r.choice(_US_CITIES)
        suffix = r.choice(("Drive", "Lane", "Court", "Avenue"))
        return f"{r.randint(100, 9999)} {r.choice(_US_STREETS)} {suffix}, {city}, {st} {z}{r.randint(10, 99)}"
    if k == 1:
        road = r.choice(("Tai Hang", "Po Shan", "Conduit", "Kennedy", "Waterloo"))
        flat = f"Flat {r.randint(1, 40)}{r.choice('ABCDEFGH')}, {r.randint(2, 45)}/F"
        return f"{flat}, {r.randint(1, 200)} {road} Road, Hong Kong"
    district = f"{r.choice(('SW', 'NW', 'SE', 'N', 'E'))}{r.randint(1, 19)}"
    pc = f"{district} {r.randint(1, 9)}{r.choice(_UPPER)}{r.choice(_UPPER)}"
    return f"{r.randint(1, 240)} {r.choice(('Belsize', 'Elgin', 'Mortimer', 'Cavendish'))} Road, London {pc}"


# --- hosts --------------------------------------------------------------------------------------------------------

_SVC = (
    "pve", "pve01", "pve-02", "truenas", "nas", "opnsense", "gw", "unifi", "portainer", "gitea", "harbor", "argocd",
    "vault", "keycloak", "auth", "npm", "traefik", "jellyfin", "immich", "grafana", "prom", "minio", "k3s-master",
    "k3s-node2", "backup", "pbs", "ha", "paperless", "nextcloud", "frigate",
)  # fmt: skip
_FAM = ("wanghome", "lin-family", "kestrel", "zhoujia", "maplehouse", "chenlab", "nest42", "laolin")


def _lan_host(r: random.Random) -> str:
    svc = r.choice(_SVC) + r.choice(("", "", str(r.randint(1, 9)), f"-{_w(r, 2, _LOWNUM)}"))
    dom = r.choice(
        (
            "home.arpa",
            "lan",
            "internal",
            "local",
            f"{r.choice(_FAM)}.lan",
            f"{r.choice(_FAM)}.home.arpa",
            f"int.{r.choice(_FAM)}.net",
            f"corp.{r.choice(_FAM)}.internal",
        )
    )
    return f"{svc}.{dom}"


def _priv_ip(r: random.Random) -> str:
    k = r.randrange(3)
    if k == 0:
        return f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}"
    if k == 1:
        return f"172.{r.randint(16, 31)}.{r.randint(0, 255)}.{r.randint(2, 254)}"
    return f"192.168.{r.randint(0, 255)}.{r.randint(2, 254)}"


def _ts_ip(r: random.Random) -> str:
    return f"100.{r.randint(64, 127)}.{r.randint(0, 255)}.{r.randint(1, 254)}"


def _ula(r: random.Random) -> str:
    return f"fd{_hex(r, 2)}:{_hex(r, 4)}:{_hex(r, 4)}::{r.choice(('', _hex(r, 2) + ':'))}{_hex(r, 3)}"


def _hm(r: random.Random) -> str:
    return f"{r.randint(7, 23):02d}:{r.randint(0, 59):02d}"


def _day(r: random.Random) -> str:
    return f"2026-{r.randint(1, 11):02d}-{r.randint(1, 28):02d}"


_SHOPS = ("小鹿优选", "山野茶舍", "阿福家纺", "糖糖童装", "老林干货", "柚见手作", "南山蜂蜜", "喵星球宠物", "知竹文具")
_SHOPS += ("暖冬羊毛", "阿香米线", "拾光饰品")


def _shop(r: random.Random) -> str:
    return r.choice(_SHOPS) + r.choice(("旗舰店", "专营店", "小店", "工作室", ""))


def _sub(r: random.Random) -> str:
    return f"{r.choice(_SHOPS)}:{r.choice(('客服', '运营', '发货', '售后'))}{r.randint(1, 9)}"


def _user(r: random.Random) -> str:
    return r.choice(("admin", "backup", "svc-backup", "mama", "baba", "media", "homelab", "ops", "deploy", "lin"))


# ---------------------------------------------------------------------------------------------------------------
# registration


def _register(name: str, gen: Gen, zh: bool) -> None:
    if name in KINDS:
        raise ValueError(f"duplicate kind {name!r}")
    KINDS[name] = gen
    if zh:
        _ZH.append(name)


def _fill(template: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


def _add(name: str, make: Draw, templates: tuple[str, ...], /, *, zh: bool = False, **extras: Draw) -> None:
    """A kind whose secret `make` draws; one of `templates` carries it as {s}, the extras' draws as {name}."""

    def gen(r: random.Random) -> tuple[str, str]:
        secret = make(r)
        values = {key: draw(r) for key, draw in extras.items()}
        values["s"] = secret
        return secret, _fill(r.choice(templates), values)

    _register(name, gen, zh)


def _kind(name: str, zh: bool = False) -> Callable[[Gen], Gen]:
    def deco(fn: Gen) -> Gen:
        _register(name, fn, zh)
        return fn

    return deco


# ===============================================================================================================
# (a) the e-commerce shop
# ===============================================================================================================

_add(
    "taobao qianniu password zh",
    _pw,
    (
        "淘宝千牛主账号「{shop}」，登录密码：{s}，换电脑要扫码",
        "{shop} 的淘宝后台密码改成了 {s} （上周被风控后重置的）",
        "千牛 {shop} 登录 → 密码 {s}",
        "提醒自己：淘宝卖家中心 密码＝{s}，别再输错三次被锁",
    ),
    zh=True,
    shop=_shop,
)
_add(
    "pinduoduo merchant subaccount zh",
    _pw,
    (
        "拼多多商家后台 子账号 {acct} 密码 {s}",
        "拼多多商家版 登录：{phone} / {s}",
        "| 平台 | 账号 | 密码 |\n|---|---|---|\n| 拼多多 | {acct} | {s} |",
    ),
    zh=True,
    acct=_sub,
    phone=_cn_mobile_digits,
)
_add(
    "douyin shop backend password zh",
    _pw,
    (
        "抖店后台 fxg.jinritemai.com 账号 {phone}，密码 {s}",
        "抖音小店的登录密码：『{s}』",
        "老婆问抖店密码，我发给她了：{s}",
    ),
    zh=True,
    phone=_cn_mobile,
)
_add(
    "youzan client secret zh",
    lambda r: _hex(r, 32),
    (
        '有赞云应用配置：\n```json\n{"client_id": "{cid}", "client_secret": "{s}", "grant_id": "{gid}"}\n```',
        "有赞 client_secret 是 {s}，client_id {cid}",
        "有赞云 → 应用管理 → 密钥：{s}",
    ),
    zh=True,
    cid=lambda r: _hex(r, 18),
    gid=lambda r: _num(r, 8),
)
_add(
    "weidian app secret zh",
    lambda r: _hex(r, 32),
    (
        "微店开放平台 appkey={ak}  secret={s}",
        "微店 API 的 secret（不是 appkey）：{s}",
        "WEIDIAN_APPKEY={ak}\nWEIDIAN_SECRET={s}  # 微店",
    ),
    zh=True,
    ak=lambda r: _num(r, 6),
)
_add(
    "jushuitan partner key zh",
    lambda r: _hex(r, 32),
    (
        "| 聚水潭 | 值 |\n|---|---|\n| partnerid | {pid} |\n| partnerkey | {s} |",
        "聚水潭开放平台 partnerkey：{s}（partnerid {pid}）",
        "聚水潭 app_secret 换成了 {s}，老的作废",
    ),
    zh=True,
    pid=lambda r: _hex(r, 16),
)
_add(
    "wangdiantong appsecret zh",
    lambda r: _w(r, 32, _LOWNUM),
    (
        "旺店通 ERP：sid={sid} appkey={ak} appsecret={s}",
        "# 旺店通企业版\nWDT_SID={sid}\nWDT_APPKEY={ak}\nWDT_APPSECRET={s}",
        "旺店通的 appsecret 我存在这：「{s}」",
    ),
    zh=True,
    sid=lambda r: _w(r, 6, _LOWER),
    ak=lambda r: _w(r, 6, _LOWER) + "2-ot",
)
_add(
    "kuaidi100 key zh",
    lambda r: _w(r, 16, _ALNUM),
    (
        "快递100 授权 key：{s}，customer：{cust}",
        "kuaidi100 实时查询接口 key={s}&customer={cust}",
        "快递100 企业版 key 是 {s}",
    ),
    zh=True,
    cust=lambda r: _w(r, 32, "0123456789ABCDEF"),
)
_add(
    "sf express checkword zh",
    lambda r: _w(r, 32, _ALNUM),
    (
        "顺丰丰桥 顾客编码 {code}，校验码（checkword）{s}",
        "丰桥沙箱换成生产了：partnerID={code}, checkWord={s}",
        "顺丰月结卡号 {card}，接口校验码：{s}",
    ),
    zh=True,
    code=lambda r: _w(r, 10, _UPNUM),
    card=lambda r: _num(r, 10),
)
_add(
    "cainiao waybill voice zh",
    _spoken_zh,
    (
        "（语音转文字）菜鸟电子面单那个账号密码是 {s} 你记一下",
        "语音备忘：菜鸟打单的密码，{s}，对，就这个",
    ),
    zh=True,
)
_add(
    "zto open api key zh",
    lambda r: _w(r, 24, _ALNUM),
    ("中通开放平台 company_id={cid} key={s}", "中通快递管家 appKey {ak}，appSecret {s}"),
    zh=True,
    cid=lambda r: _hex(r, 32),
    ak=lambda r: _hex(r, 20),
)
_add(
    "alipay receive qr zh",
    lambda r: "https://qr.alipay.com/" + r.choice(("fkx", "tsx", "bax")) + _num(r, 5) + _w(r, 14, _LOWNUM),
    (
        "店里支付宝收款码解出来是 {s}",
        "收款码（支付宝）：{s} ——别发到群里",
        "支付宝个人收款码 {s} 打印在收银台",
    ),
    zh=True,
)
_add(
    "wechat pay receive qr zh",
    lambda r: "wxp://f2f" + r.choice("01") + _w(r, 40, _B64U),
    ("微信收款码内容：{s}", "二维码扫出来是 {s}，是我微信个人收款码", "收款码 payload → {s}"),
    zh=True,
)

_CORP_BANKS = (
    ("中国工商银行", "1001", 19),
    ("招商银行", "1219", 15),
    ("中国建设银行", "3105", 20),
    ("交通银行", "3100", 21),
)
_BRANCHES = ("上海张江支行", "杭州滨江支行", "深圳科技园支行", "成都高新支行", "北京望京支行")


@_kind("corporate bank account zh", zh=True)
def k_corp_account(r: random.Random) -> tuple[str, str]:
    bank, prefix, length = r.choice(_CORP_BANKS)
    acct = prefix + _pin(r, length - len(prefix))
    s = r.choice((acct, _group(acct, 4)))
    branch = r.choice(_BRANCHES)
    t = r.choice(
        (
            f"对公账户：{bank}{branch}，账号 {s}",
            f"公司对公户 账号 {s}（{bank}）",
            f"| 开户行 | 账号 |\n|---|---|\n| {bank}{branch} | {s} |",
        )
    )
    return s, t


_add(
    "e-tax bureau password zh",
    _pw,
    (
        "电子税务局 登录：统一社会信用代码 {uscc}，密码 {s}",
        "开发票用的税务 UKey 密码 / 电子税务局密码都是 {s}",
        "税务数字账户 个人密码改成 {s} 了",
    ),
    zh=True,
    uscc=_uscc,
)
_add(
    "wechat pay apiv3 key zh",
    lambda r: _w(r, 32, _ALNUM),
    (
        "微信支付 商户号 {mch}，APIv3 密钥：{s}",
        "商户平台 → API安全 → APIv3密钥 设置为 {s}",
        "WECHATPAY_MCH_ID={mch}\nWECHATPAY_API_V3_KEY={s}",
    ),
    zh=True,
    mch=lambda r: "16" + _pin(r, 8),
)
_add(
    "alipay app private key zh",
    lambda r: _w(r, 64, _B64A),
    (
        "支付宝开放平台 应用私钥（PKCS8）：\n-----BEGIN PRIVATE KEY-----\n"
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ{pre}\n{s}\n{post}\n-----END PRIVATE KEY-----",
        "alipay.private_key=MIIEvgIBADANBgkqhkiG9w0BAQEFAASC{s}  # 支付宝应用私钥，线上",
    ),
    zh=True,
    pre=lambda r: _w(r, 14, _B64A),
    post=lambda r: _w(r, 64, _B64A),
)
_add(
    "1688 buyer password zh",
    _pw,
    ("1688 采购账号 {phone}，密码 {s}", "阿里巴巴1688 批发 登录密码是 {s} ，和淘宝的不一样"),
    zh=True,
    phone=_cn_mobile,
)


@_kind("customer service subaccount chat zh", zh=True)
def k_cs_chat(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    who = r.choice(("阿May（客服）", "小鱼-售后", "客服小王", "晓晓"))
    t = (
        f"[{_day(r)} {_hm(r)}] {who}: 老板，客服子账号登不上了\n"
        f"[{_hm(r)}] 我: {_sub(r)} 的密码重置成 {s} 了\n"
        f"[{_hm(r)}] {who}: 好的收到"
    )
    return s, t


_add(
    "douyin open platform secret zh",
    _uuid,
    ("抖店开放平台 app_key {ak}，app_secret {s}", "抖音电商 应用密钥 AppSecret：{s}"),
    zh=True,
    ak=lambda r: _num(r, 19),
)
_add(
    "pdd open platform secret zh",
    lambda r: _hex(r, 40),
    ("拼多多开放平台 client_id={cid}\nclient_secret={s}", "多多进宝 client_secret 是 {s}"),
    zh=True,
    cid=lambda r: _hex(r, 32),
)
_add(
    "taobao top appsecret zh",
    lambda r: _hex(r, 32),
    ("淘宝开放平台 AppKey {ak}，AppSecret {s}", "TOP 应用证书：appkey={ak}&appsecret={s}"),
    zh=True,
    ak=lambda r: _num(r, 8),
)
_add(
    "kdniao api key zh",
    _uuid,
    ("快递鸟 EBusinessID {eid}，ApiKey {s}", "快递鸟用户ID {eid}  API key：{s}"),
    zh=True,
    eid=lambda r: "1" + _pin(r, 6),
)
_add(
    "wecom corpsecret zh",
    lambda r: _w(r, 43, _ALNUM),
    ("企业微信 corpid={cid} corpsecret={s}", "企微自建应用“订单通知”的 Secret：{s}"),
    zh=True,
    cid=lambda r: "ww" + _hex(r, 16),
)
_add(
    "dingtalk robot sign secret zh",
    lambda r: "SEC" + _hex(r, 64),
    (
        "钉钉群机器人 加签密钥：{s}",
        "钉钉 webhook https://oapi.dingtalk.com/robot/send?access_token={tok} 加签 {s}",
    ),
    zh=True,
    tok=lambda r: _hex(r, 64),
)
_add(
    "feishu bot webhook zh",
    _uuid,
    ("飞书群机器人地址 https://open.feishu.cn/open-apis/bot/v2/hook/{s}", "飞书 webhook 的 hook id：{s}（发货提醒群）"),
    zh=True,
)
_add(
    "wechat mp appsecret zh",
    lambda r: _hex(r, 32),
    ("公众号 AppID {aid}，AppSecret {s}（开发者密码）", "微信公众平台 开发者密码(AppSecret)：{s}"),
    zh=True,
    aid=lambda r: "wx" + _hex(r, 16),
)
_add(
    "mini program secret json zh",
    lambda r: _hex(r, 32),
    (
        '小程序配置：{"appid": "{aid}", "secret": "{s}", "env": "prod"}',
        'miniprogram:\n  appid: {aid}\n  appsecret: "{s}"  # 小程序密钥',
    ),
    zh=True,
    aid=lambda r: "wx" + _hex(r, 16),
)
_add(
    "aliyun accesskey secret zh",
    lambda r: _w(r, 30, _ALNUM),
    (
        "阿里云 AccessKey ID：LTAI5t{akid}\nAccessKey Secret：{s}",
        "OSS 图片空间用的 AK/SK：LTAI5t{akid} / {s}",
        "阿里云子账号 oss-uploader 的 AccessKeySecret={s}",
    ),
    zh=True,
    akid=lambda r: _w(r, 18, _ALNUM),
)
_add(
    "tencent cloud secretkey zh",
    lambda r: _w(r, 32, _ALNUM),
    ("腾讯云 SecretId: AKID{sid}\nSecretKey: {s}", "COS 的 SecretKey 是 {s}（SecretId AKID{sid}）"),
    zh=True,
    sid=lambda r: _w(r, 32, _ALNUM),
)
_add(
    "qiniu secret key zh",
    lambda r: _w(r, 40, _B64U),
    ("七牛云 AK {ak} SK {s}", "七牛 SecretKey：「{s}」"),
    zh=True,
    ak=lambda r: _w(r, 40, _B64U),
)
_add(
    "shop sms code zh",
    lambda r: _pin(r, 6),
    (
        "【抖店】验证码 {s}，五分钟内有效，请勿泄露。",
        "刚收到的拼多多验证码：{s}",
        "验证码 {s} 发给客服了，让她登一下后台",
    ),
    zh=True,
)
_add(
    "alipay payment password zh",
    lambda r: _pin(r, 6),
    ("店铺支付宝的支付密码：{s}", "支付宝 支付密码 {s} ，和银行卡密码不一样", "付款密码（支付宝企业账户）＝ {s}"),
    zh=True,
)


@_kind("erp logins table zh", zh=True)
def k_erp_table(r: random.Random) -> tuple[str, str]:
    rows = [(sys_, _sub(r), _pw(r)) for sys_ in ("聚水潭", "旺店通", "快麦打单", "有赞")]
    pick = r.randrange(len(rows))
    body = "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)
    return rows[pick][2], f"| 系统 | 账号 | 密码 |\n|---|---|---|\n{body}"


_add(
    "buyer phone in order zh",
    _cn_mobile,
    ("订单 {oid} 收件人 {name}，电话 {s}，要求下午送", "买家 {name} 留的手机号 {s}，说快递别放驿站"),
    zh=True,
    oid=lambda r: _num(r, 19),
    name=_adult_name,
)
_add(
    "buyer address in order zh",
    _cn_address,
    ("收货信息：{name}，{phone}，{s}", "退货寄回地址改成 {s}（{name} 收）"),
    zh=True,
    name=_adult_name,
    phone=_cn_mobile,
)
_add(
    "legal person id zh",
    _cn_id,
    ("营业执照法人：{name}，身份证号 {s}", "开店实名认证用的身份证：{s}"),
    zh=True,
    name=_adult_name,
)


@_kind("invoice bank account zh", zh=True)
def k_invoice(r: random.Random) -> tuple[str, str]:
    bank, prefix, length = r.choice(_CORP_BANKS)
    s = prefix + _pin(r, length - len(prefix))
    t = (
        f"开票信息\n名称：{r.choice(_SHOPS)}电子商务有限公司\n税号：{_uscc(r)}\n"
        f"地址电话：{_cn_address(r)} 0{r.randint(20, 29)}-{_num(r, 8)}\n开户行及账号：{bank}{r.choice(_BRANCHES)} {s}"
    )
    return s, t


_add(
    "jushuitan voice password zh",
    _spoken_zh,
    ("聚水潭登录密码（语音输入的）：{s}", "那个聚水潭的密码我念一下 {s} 好了"),
    zh=True,
)
_add(
    "douyin webhook secret env zh",
    lambda r: _w(r, 32, _ALNUM),
    (
        "```dotenv\n# 抖店消息推送\nDOUDIAN_PUSH_SECRET={s}\n```",
        "抖店消息推送的签名密钥放在 .env：DOUDIAN_PUSH_SECRET={s}",
    ),
    zh=True,
)


@_kind("taobao session key split messages zh", zh=True)
def k_tb_split(r: random.Random) -> tuple[str, str]:
    a, b = _hex(r, 24), _hex(r, 24)
    s = r.choice((a, b))
    t = f"[{_hm(r)}] 我: 淘宝授权 sessionkey 前半段 6100{a}\n[{_hm(r)}] 我: 后半段 {b}\n[{_hm(r)}] 我: 拼起来用"
    return s, t


_add(
    "youzan password value first zh",
    _pw,
    ("{s} —— 这是有赞微商城的登录密码", "「{s}」是有赞后台的，别跟抖店的搞混"),
    zh=True,
)
_add(
    "weidian password code span zh",
    _pw,
    ("微店后台密码 `{s}`", "微店：账号 {phone}，密码 `{s}`"),
    zh=True,
    phone=_cn_mobile,
)
_add(
    "cloud printer secret zh",
    lambda r: _hex(r, 32),
    ("快麦云打印 appkey {ak}，appsecret {s}", "易联云打印机 终端密钥：{s}（机器码 {mc}）"),
    zh=True,
    ak=lambda r: _num(r, 8),
    mc=lambda r: _num(r, 10),
)
_add(
    "xiaohongshu shop password zh",
    _pw,
    ("小红书店铺 专业号 登录密码：{s}", "小红书千帆 后台（{phone}）密码＝{s}"),
    zh=True,
    phone=_cn_mobile,
)
_add(
    "jushuitan curl history zh",
    lambda r: _hex(r, 32),
    (
        "$ curl -s -H 'Authorization: Bearer {s}' https://openapi.jushuitan.com/open/inventory/query  # 查库存",
        "  1042  curl -X POST https://openapi.jushuitan.com/open/orders/single/query "
        "-d 'access_token={s}'  # 聚水潭查单",
    ),
    zh=True,
)


@_kind("wdt sync stack trace zh", zh=True)
def k_wdt_trace(r: random.Random) -> tuple[str, str]:
    s = _alnum_pw(r)
    ip = _priv_ip(r)
    t = (
        f"同步旺店通订单失败：\nTraceback (most recent call last):\n"
        f'  File "/opt/sync/wdt.py", line {r.randint(20, 400)}, in pull\n'
        f"sqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) (2003, \"Can't connect to MySQL server on "
        f"'{ip}'\")\n(engine url: mysql+pymysql://wdt_sync:{s}@{ip}:3306/erp)"
    )
    return s, t


_add(
    "shop wifi qr zh",
    _pw,
    ("店里给客人用的 WiFi 二维码：WIFI:T:WPA;S:{ssid};P:{s};;", "仓库 WiFi（{ssid}）密码 {s} ，打包的同事都知道"),
    zh=True,
    ssid=lambda r: r.choice(_SHOPS) + "-" + r.choice(("5G", "仓库", "Guest")),
)
_add(
    "taobao subaccount phone zh",
    _cn_mobile,
    ("售后子账号绑定的手机：{s}（晓晓的私人号）", "客服 {name} 的手机号 {s} ，晚上别打"),
    zh=True,
    name=_adult_name,
)

# ===============================================================================================================
# (b) the home lab and SRE work
# ===============================================================================================================

_add(
    "proxmox root password",
    _pw,
    (
        "pve01 root password: {s}",
        "Proxmox web UI login root@pam / {s}",
        "Reset the Proxmox root pw to {s} after the reinstall",
    ),
)
_add(
    "proxmox api token hcl",
    _uuid,
    (
        'provider "proxmox" {\n  pm_api_url          = "https://{host}:8006/api2/json"\n'
        '  pm_api_token_id     = "terraform@pve!tf"\n  pm_api_token_secret = "{s}"\n}',
        "curl -H 'Authorization: PVEAPIToken=root@pam!monitoring={s}' https://{host}:8006/api2/json/nodes",
    ),
    host=_lan_host,
)
_add("proxmox api token zh", _uuid, ("PVE 的 API token（root@pam!backup）secret 是 {s}",), zh=True)
_add(
    "truenas api key",
    lambda r: f"{r.randint(1, 9)}-" + _w(r, 64, _ALNUM),
    (
        'curl -H "Authorization: Bearer {s}" http://{ip}/api/v2.0/pool',
        "TrueNAS API key for the homepage widget: {s}",
        '{"truenas": {"url": "https://{host}", "key": "{s}"}}',
    ),
    ip=_priv_ip,
    host=_lan_host,
)
_add(
    "truenas root password zh",
    _pw,
    ("TrueNAS 的 truenas_admin 密码：{s}", "群晖换 TrueNAS 后，web 管理密码设成了 {s}"),
    zh=True,
)
_add(
    "opnsense api secret",
    lambda r: _w(r, 80, _B64A),
    ("OPNsense apikey.txt:\nkey={key}\nsecret={s}", "opnsense api: key {key} secret {s}"),
    key=lambda r: _w(r, 80, _B64A),
)
_add(
    "pfsense admin password zh",
    _pw,
    ("pfSense 后台 https://{ip} 账号 admin 密码 {s}", "pfSense 的 admin 密码我改成 {s} 了，默认的不能用了"),
    zh=True,
    ip=_priv_ip,
)
_add(
    "unifi device ssh password",
    _pw,
    (
        "UniFi > Settings > System > Device SSH Authentication: user {user} / {s}",
        "unifi controller admin pass {s} (local account, not the ui.com one)",
    ),
    user=_user,
)
_add(
    "portainer api key",
    lambda r: "ptr_" + _w(r, 43, _B64A),
    (
        "Portainer access token for the homepage dashboard: {s}",
        'curl -H "X-API-Key: {s}" https://{host}:9443/api/endpoints',
    ),
    host=_lan_host,
)
_add(
    "portainer admin password zh",
    _pw,
    ("Portainer 首次登录设的 admin 密码：{s}", "portainer 管理员：admin / {s}"),
    zh=True,
)
_add(
    "gitea token remote url",
    lambda r: _hex(r, 40),
    ("git remote set-url origin https://oauth2:{s}@{host}/me/dotfiles.git", "gitea access token (repo scope) = {s}"),
    host=_lan_host,
)
_add(
    "gitea runner token zh",
    lambda r: _w(r, 40, _ALNUM),
    (
        "act_runner register --no-interactive --instance https://{host} --token {s}  # Gitea 的 runner 注册令牌",
        "Gitea Actions 注册令牌：{s}",
    ),
    zh=True,
    host=_lan_host,
)
_add(
    "harbor robot secret",
    lambda r: _w(r, 32, _ALNUM),
    (
        "echo '{s}' | docker login {host} -u 'robot$ci+push' --password-stdin",
        "Harbor robot account robot$homelab+pull secret: {s}",
    ),
    host=_lan_host,
)
_add(
    "argocd initial admin password",
    lambda r: _w(r, 16, _B64U),
    (
        "$ kubectl -n argocd get secret argocd-initial-admin-secret -o jsonpath='{.data.password}' | base64 -d\n{s}",
        "argocd login {host} --username admin --password {s}",
    ),
    host=_lan_host,
)
_add(
    "argocd account token zh",
    lambda r: _jwt(r, {"iss": "argocd", "sub": "ci:apiKey", "nbf": r.randint(1_700_000_000, 1_790_000_000)}),
    ("ArgoCD 的 ci 账号 token：{s}", "argocd 生成的 API 令牌（别过期）{s}"),
    zh=True,
)


@_kind("vaultwarden admin token compose")
def k_vw_admin(r: random.Random) -> tuple[str, str]:
    if r.random() < 0.5:
        s = _w(r, 43, _ALNUM + "+/")
        token = f"$$argon2id$$v=19$$m=65540,t=3,p=4$${_w(r, 43, _ALNUM + '+/')}$${s}"
    else:
        s = _b64(r, 48)
        token = s
    t = (
        "services:\n  vaultwarden:\n    image: vaultwarden/server:latest\n    environment:\n"
        f"      - ADMIN_TOKEN={token}\n      - SIGNUPS_ALLOWED=false"
    )
    return s, t


_add(
    "vaultwarden master password zh",
    _pw_or_phrase,
    ("Vaultwarden 主密码（全家的密码都在里面）：{s}", "密码库的主密码是“{s}”，写在纸上放保险柜了"),
    zh=True,
)
_add(
    "keycloak client secret zh",
    lambda r: _w(r, 32, _ALNUM),
    (
        "Keycloak realm home，client grafana 的 Client secret：{s}",
        "Grafana 接 Keycloak 的 OIDC：client_id=grafana，client_secret={s}",
    ),
    zh=True,
)
_add(
    "keycloak admin systemd",
    _pw,
    (
        "[Service]\nEnvironment=KC_BOOTSTRAP_ADMIN_USERNAME=admin\nEnvironment=KC_BOOTSTRAP_ADMIN_PASSWORD={s}\n"
        "ExecStart=/opt/keycloak/bin/kc.sh start",
        'Environment="KEYCLOAK_ADMIN_PASSWORD={s}"',
    ),
)
_add(
    "authentik secret key env",
    lambda r: _w(r, 50, _ALNUM),
    (
        "PG_PASS={pg}\nAUTHENTIK_SECRET_KEY={s}\nAUTHENTIK_ERROR_REPORTING__ENABLED=false",
        "authentik secret key (from openssl rand): {s}",
    ),
    pg=lambda r: _w(r, 36, _ALNUM),
)
_add(
    "authentik bootstrap token zh",
    lambda r: _w(r, 60, _ALNUM),
    ("authentik 初始化用的 AUTHENTIK_BOOTSTRAP_TOKEN={s}", "authentik API 令牌（akadmin 的）：{s}"),
    zh=True,
)
_add(
    "nginx proxy manager login zh",
    _pw,
    ("Nginx Proxy Manager 默认账号已改成 {email} / {s}", "NPM 面板 http://{ip}:81 登录密码 {s}"),
    zh=True,
    email=_email,
    ip=_priv_ip,
)
_add(
    "traefik basicauth bcrypt",
    lambda r: _w(r, 53, _ALNUM + "./"),
    (
        "labels:\n  - traefik.http.middlewares.auth.basicauth.users=admin:$$2y$$05$${s}",
        "users.htpasswd:\nadmin:$2y$05${s}",
    ),
)
_add(
    "traefik dashboard password zh",
    _pw,
    ("Traefik dashboard 的 basic auth：admin / {s}", "traefik 面板账号 admin，密码（htpasswd 之前的明文）{s}"),
    zh=True,
)
_add(
    "restic password shell",
    _pw_or_phrase,
    (
        " 2231  export RESTIC_PASSWORD='{s}'",
        "RESTIC_REPOSITORY=b2:{bucket}:/restic\nRESTIC_PASSWORD='{s}'",
        "the passphrase for the backup is {s}",
    ),
    bucket=lambda r: r.choice(_FAM) + "-restic",
)
_add(
    "restic password zh",
    _pw_or_phrase,
    ("restic 仓库密码（B2 那个）：{s}", "备份仓库口令：{s}  丢了就全没了"),
    zh=True,
)
_add(
    "borg passphrase crontab",
    _phrase,
    (
        "30 2 * * * BORG_PASSPHRASE='{s}' borg create ssh://borg@{host}/./repo::'{hostname}-{now}' /etc /home",
        'export BORG_PASSPHRASE="{s}"',
    ),
    host=_lan_host,
)
_add(
    "borg key export",
    lambda r: _w(r, 76, _B64A),
    (
        "BORG_KEY {rid}\nhqlhbGdvcml0aG2mc2hhMjU2pGRhdGHaAZ{pre}\n{s}\n{post}",
        "borg key export (paper backup):\nBORG_KEY {rid}\n{s}",
    ),
    rid=lambda r: _hex(r, 64),
    pre=lambda r: _w(r, 42, _B64A),
    post=lambda r: _w(r, 76, _B64A),
)
_add(
    "kopia password zh",
    _pw_or_phrase,
    ("kopia 仓库（Wasabi）的密码是 {s}", "kopia repository connect 时要输的密码：{s}"),
    zh=True,
)
_add(
    "rsyncd secrets",
    _pw,
    ("/etc/rsyncd.secrets\nbackup:{s}", "rsync daemon user backup, password {s} (module [photos] on {host})"),
    host=_lan_host,
)
_add(
    "samba credentials file",
    _alnum_pw,
    (
        "/root/.smbcredentials\nusername={user}\npassword={s}\ndomain=WORKGROUP",
        "//{ip}/media /mnt/media cifs username={user},password={s},uid=1000 0 0",
    ),
    user=_user,
    ip=_priv_ip,
)
_add(
    "samba password zh",
    _pw,
    ("家里共享盘 smbpasswd -a {user}，密码设成 {s}", "NAS 共享文件夹 \\\\{ip}\\照片 账号 {user} 密码 {s}"),
    zh=True,
    user=_user,
    ip=_priv_ip,
)
_add(
    "nfs server private ip",
    _priv_ip,
    ("mount -t nfs4 {s}:/mnt/tank/media /srv/media", "fstab: {s}:/export/backup  /backup  nfs  defaults,_netdev  0 0"),
)
_add(
    "iscsi chap secret",
    lambda r: _w(r, r.randint(12, 16), _ALNUM),
    (
        "node.session.auth.username = {user}\nnode.session.auth.password = {s}",
        "iSCSI target iqn.2005-10.org.freenas.ctl:vm-disks CHAP secret {s}",
    ),
    user=_user,
)
_add(
    "iscsi chap zh",
    lambda r: _w(r, r.randint(12, 16), _ALNUM),
    ("iSCSI CHAP 密钥：{s}（TrueNAS 要求 12 到 16 位）", "Proxmox 挂 iSCSI 的 CHAP 用户 {user}，密钥 {s}"),
    zh=True,
    user=_user,
)
_add(
    "msmtp relay password",
    _pw,
    (
        "~/.msmtprc\naccount default\nhost smtp.fastmail.com\nport 465\nuser {email}\npassword {s}",
        "SMTP relay for alerts: {email} app password {s}",
    ),
    email=_email,
)
_add(
    "postfix sasl sendgrid",
    lambda r: "SG." + _w(r, 22, _B64U) + "." + _w(r, 43, _B64U),
    ("/etc/postfix/sasl_passwd\n[smtp.sendgrid.net]:587 apikey:{s}", "relayhost creds: apikey / {s}"),
)
_add(
    "postfix sasl aliyun zh",
    _alnum_pw,
    ("# 阿里云邮件推送\n[smtpdm.aliyun.com]:465 notify@{dom}:{s}", "postfix 中继密码（阿里云邮件推送 SMTP 密码）：{s}"),
    zh=True,
    dom=lambda r: r.choice(_FAM) + ".cn",
)
_add(
    "dovecot sha512 hash",
    lambda r: _w(r, 86, _ALNUM + "./"),
    ("/etc/dovecot/users\n{email}:{SHA512-CRYPT}$6${salt}${s}::::::",),
    email=_email,
    salt=lambda r: _w(r, 16, _ALNUM + "./"),
)
_add(
    "acme.sh cloudflare token",
    lambda r: _w(r, 40, _B64U),
    (
        'export CF_Token="{s}"\nexport CF_Account_ID="{acc}"\nacme.sh --issue --dns dns_cf -d "*.{dom}"',
        "acme.sh account.conf: SAVED_CF_Token='{s}'",
    ),
    acc=lambda r: _hex(r, 32),
    dom=lambda r: r.choice(_FAM) + ".net",
)
_add(
    "acme.sh aliyun zh",
    lambda r: _w(r, 30, _ALNUM),
    (
        'export Ali_Key="LTAI5t{ak}"\nexport Ali_Secret="{s}"  # 阿里云 DNS，签通配符证书用',
        "acme.sh 用的阿里云 Ali_Secret：{s}",
    ),
    zh=True,
    ak=lambda r: _w(r, 18, _ALNUM),
)
_add(
    "acme.sh dnspod zh",
    lambda r: _hex(r, 32),
    ('export DP_Id="{id}"\nexport DP_Key="{s}"  # DNSPod 令牌', "DNSPod API Token：{id},{s}"),
    zh=True,
    id=lambda r: _num(r, 6),
)
_add(
    "certbot cloudflare ini",
    lambda r: _w(r, 40, _B64U),
    (
        "# /etc/letsencrypt/cloudflare.ini\ndns_cloudflare_api_token = {s}",
        "certbot certonly --dns-cloudflare --dns-cloudflare-credentials ~/.secrets/cf.ini  (token inside: {s})",
    ),
)
_add(
    "acme eab hmac key",
    lambda r: _w(r, 86, _B64U),
    (
        "certbot register --eab-kid {kid} --eab-hmac-key {s} --server https://acme.zerossl.com/v2/DV90",
        "ZeroSSL EAB: kid={kid} hmac={s}",
    ),
    kid=lambda r: _w(r, 22, _B64U),
)
_add(
    "acme eab zh",
    lambda r: _w(r, 86, _B64U),
    ("Google Trust Services 的 EAB：keyId {kid}，b64MacKey {s}",),
    zh=True,
    kid=lambda r: _hex(r, 32),
)
_add(
    "sentry dsn",
    lambda r: _hex(r, 32),
    (
        "SENTRY_DSN=https://{s}@o{org}.ingest.sentry.io/{proj}",
        'sentry_sdk.init(dsn="https://{s}@o{org}.ingest.us.sentry.io/{proj}", traces_sample_rate=0.2)',
    ),
    org=lambda r: _num(r, 6),
    proj=lambda r: _num(r, 7),
)
_add(
    "sentry dsn zh",
    lambda r: _hex(r, 32),
    (
        "Sentry 的 DSN：https://{s}@o{org}.ingest.sentry.io/{proj} ，别提交到仓库",
        "sentry:\n  dsn: https://{s}@sentry.{host}/{proj}  # 自建 Sentry",
    ),
    zh=True,
    org=lambda r: _num(r, 6),
    proj=lambda r: _num(r, 2),
    host=_lan_host,
)
_add(
    "pagerduty routing key",
    lambda r: _hex(r, 32),
    (
        '{"routing_key": "{s}", "event_action": "trigger", "payload": {"summary": "zpool degraded", '
        '"severity": "critical", "source": "truenas"}}',
        "PagerDuty integration key for the homelab service: {s}",
    ),
)
_add(
    "pagerduty api token zh",
    lambda r: "u+" + _w(r, 18, _B64U),
    ("PagerDuty REST API token：{s}", "值班表脚本用的 PagerDuty 令牌 Token token={s}"),
    zh=True,
)
_add(
    "opsgenie api key",
    _uuid,
    ('curl -H "Authorization: GenieKey {s}" https://api.opsgenie.com/v2/alerts', "opsgenie integration key: {s}"),
)
_add(
    "grafana cloud token",
    lambda r: "glc_" + _w(r, 100, _B64A),
    ("GRAFANA_CLOUD_TOKEN={s}", "grafana alloy remote_write basic_auth password: {s}"),
)
_add(
    "grafana service account token zh",
    lambda r: "glsa_" + _w(r, 32, _ALNUM) + "_" + _hex(r, 8),
    ("Grafana 服务账号令牌：{s}", "homepage 里 Grafana 小组件的 key 填 {s}"),
    zh=True,
)
_add(
    "new relic user key",
    lambda r: "NRAK-" + _w(r, 27, _UPNUM),
    ("New Relic user API key: {s}", "NEW_RELIC_API_KEY={s}"),
)
_add(
    "new relic license key zh",
    lambda r: _hex(r, 36) + "NRAL",
    ("New Relic 的 license key：{s}", "newrelic-infra.yml:\nlicense_key: {s}  # 许可证密钥"),
    zh=True,
)
_add(
    "elastic cloud api key",
    lambda r: base64.b64encode(f"{_w(r, 20, _B64U)}:{_w(r, 22, _B64U)}".encode()).decode(),
    ("ELASTIC_CLOUD_ID=homelab:{cid}\nELASTIC_API_KEY={s}", "Authorization: ApiKey {s}"),
    cid=lambda r: base64.b64encode(f"us-central1.gcp.cloud.es.io${_hex(r, 32)}${_hex(r, 32)}".encode()).decode(),
)
_add(
    "elastic password zh",
    _alnum_pw,
    ("elastic 超级用户密码：{s}", "curl -u elastic:{s} https://{host}:9200/_cat/indices  # ES 集群"),
    zh=True,
    host=_lan_host,
)
_add(
    "supabase service role key",
    lambda r: _jwt(r, {"iss": "supabase", "ref": _w(r, 20, _LOWER), "role": "service_role"}),
    ("SUPABASE_SERVICE_ROLE_KEY={s}", "const supabase = createClient('https://{ref}.supabase.co', '{s}')"),
    ref=lambda r: _w(r, 20, _LOWER),
)
_add(
    "supabase db password zh",
    _alnum_pw,
    (
        "Supabase 数据库连接串：postgresql://postgres.{ref}:{s}@aws-0-ap-southeast-1.pooler.supabase.com:6543/postgres",
        "Supabase 项目 {ref} 的数据库密码：{s}",
    ),
    zh=True,
    ref=lambda r: _w(r, 20, _LOWER),
)
_add(
    "firebase service account private key",
    lambda r: _w(r, 64, _B64A),
    (
        '{\n  "type": "service_account",\n  "project_id": "{proj}",\n  "private_key_id": "{kid}",\n'
        '  "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQ{pre}\\n'
        '{s}\\n-----END PRIVATE KEY-----\\n",\n'
        '  "client_email": "firebase-adminsdk-x1@{proj}.iam.gserviceaccount.com"\n}',
    ),
    proj=lambda r: r.choice(_FAM) + "-" + _num(r, 5),
    kid=lambda r: _hex(r, 40),
    pre=lambda r: _w(r, 14, _B64A),
)
_add(
    "fcm server key zh",
    lambda r: "AAAA" + _w(r, 7, _B64U) + ":APA91b" + _w(r, 134, _B64U),
    ("Firebase 云消息 旧版服务器密钥：{s}", "推送用的 FCM server key 是 {s}"),
    zh=True,
)
_add(
    "vercel token",
    lambda r: _w(r, 24, _ALNUM),
    ("VERCEL_TOKEN={s} vercel deploy --prod", "vercel token for the CI (scope: personal): {s}"),
)
_add(
    "netlify token zh",
    lambda r: "nfp_" + _w(r, 36, _ALNUM),
    ("Netlify 个人访问令牌：{s}", "NETLIFY_AUTH_TOKEN={s}  # 博客自动部署"),
    zh=True,
)
_add(
    "render api key",
    lambda r: "rnd_" + _w(r, 28, _ALNUM),
    ("Render API key: {s}", 'curl -H "Authorization: Bearer {s}" https://api.render.com/v1/services'),
)
_add(
    "fly.io token",
    lambda r: "FlyV1 fm2_" + _w(r, 120, _B64A),
    ("fly tokens create deploy output:\n{s}", 'FLY_API_TOKEN="{s}"'),
)
_add(
    "railway token zh",
    _uuid,
    ("Railway 项目令牌 RAILWAY_TOKEN={s}", "railway 的 project token：{s}"),
    zh=True,
)
_add(
    "heroku api key",
    lambda r: "HRKU-AA" + _w(r, 58, _B64U),
    ("HEROKU_API_KEY={s}", "heroku authorizations:create output, Token: {s}"),
)
_add(
    "digitalocean token",
    lambda r: "dop_v1_" + _hex(r, 64),
    ("doctl auth init -t {s}", "DigitalOcean PAT for the droplet terraform: {s}"),
)
_add(
    "linode token zh",
    lambda r: _hex(r, 64),
    ("Linode（Akamai）个人访问令牌：{s}", "linode-cli 配置 token = {s}"),
    zh=True,
)
_add(
    "hetzner cloud token hcl",
    lambda r: _w(r, 64, _ALNUM),
    ('provider "hcloud" {\n  token = "{s}"\n}', "hcloud context create homelab  # pasted token {s}"),
)
_add(
    "vultr api key zh",
    lambda r: _w(r, 36, _UPNUM),
    ("Vultr API Key：{s}（只允许家里 IP 访问）", "vultr-cli 用的 VULTR_API_KEY={s}"),
    zh=True,
)
_add(
    "ovh application secret ini",
    lambda r: _w(r, 32, _ALNUM),
    (
        "[default]\nendpoint=ovh-eu\n\n[ovh-eu]\napplication_key={ak}\napplication_secret={s}\nconsumer_key={ck}",
        "OVH API app secret {s} (app key {ak})",
    ),
    ak=lambda r: _w(r, 16, _ALNUM),
    ck=lambda r: _w(r, 32, _ALNUM),
)
_add(
    "backblaze b2 application key",
    lambda r: "K00" + r.choice("345") + _w(r, 27, _ALNUM + "+/"),
    ("B2_ACCOUNT_ID={kid}\nB2_ACCOUNT_KEY={s}", "b2 account authorize {kid} {s}"),
    kid=lambda r: "00" + r.choice("345") + _hex(r, 22),
)
_add(
    "wasabi secret key zh",
    lambda r: _w(r, 40, _ALNUM),
    (
        "Wasabi 访问密钥：{ak} / {s}",
        "[wasabi]\naws_access_key_id = {ak}\naws_secret_access_key = {s}  # Wasabi 存冷备份",
    ),
    zh=True,
    ak=lambda r: _w(r, 20, _UPNUM),
)
_add(
    "cloudflare r2 rclone",
    lambda r: _hex(r, 64),
    (
        "[r2]\ntype = s3\nprovider = Cloudflare\naccess_key_id = {ak}\nsecret_access_key = {s}\n"
        "endpoint = https://{acc}.r2.cloudflarestorage.com",
        "R2 token secret: {s}",
    ),
    ak=lambda r: _hex(r, 32),
    acc=lambda r: _hex(r, 32),
)
_add(
    "github classic pat",
    lambda r: "ghp_" + _w(r, 36, _ALNUM),
    ("git clone https://{s}@github.com/me/homelab-private.git", "GH_TOKEN={s} gh release create v1.2"),
)
_add(
    "github fine-grained pat zh",
    lambda r: "github_pat_11" + _w(r, 20, _UPNUM) + "_" + _w(r, 59, _ALNUM),
    ("GitHub 细粒度令牌（只给 homelab 仓库）：{s}", "Renovate 机器人用的 GitHub token：{s}"),
    zh=True,
)
_add(
    "gitlab pat",
    lambda r: "glpat-" + _w(r, 20, _B64U),
    ("GITLAB_TOKEN={s}", "gitlab PAT (api, read_registry): {s}"),
)
_add(
    "slack bot token",
    lambda r: f"xoxb-{_num(r, 12)}-{_num(r, 13)}-{_w(r, 24, _ALNUM)}",
    ("SLACK_BOT_TOKEN={s}", "alertmanager slack_api_url no longer used; bot token is {s}"),
)
_add(
    "discord bot token zh",
    lambda r: _b64u(r, 14) + "." + _w(r, 6, _B64U) + "." + _w(r, 38, _B64U),
    ("家里 Discord 通知机器人的 token：{s}", "discord bot 令牌：{s}（服务器：家庭）"),
    zh=True,
)
_add(
    "telegram bot token zh",
    lambda r: f"{_num(r, 10)}:AA{_w(r, 33, _B64U)}",
    ("Telegram 告警机器人 token：{s}", "TG_BOT_TOKEN={s}  # 群 ID -100{chat}"),
    zh=True,
    chat=lambda r: _num(r, 10),
)
_add(
    "openai project key",
    lambda r: "sk-proj-" + _w(r, 100, _B64U),
    ("OPENAI_API_KEY={s}", "openai key for the paperless-ai container: {s}"),
)
_add(
    "anthropic key zh",
    lambda r: "sk-ant-api03-" + _w(r, 86, _B64U) + "AA",
    ("Claude API key：{s}", "给家里 Home Assistant 语音助手用的 Anthropic 密钥：{s}"),
    zh=True,
)
_add(
    "stripe live key",
    lambda r: r.choice(("sk_live_", "rk_live_")) + _w(r, 99, _ALNUM),
    ("STRIPE_SECRET_KEY={s}", "stripe restricted key for the shop webhook: {s}"),
)
_add(
    "aws credentials ini",
    lambda r: _w(r, 40, _ALNUM + "+/"),
    (
        "[default]\naws_access_key_id = AKIA{kid}\naws_secret_access_key = {s}\nregion = ap-east-1",
        "AWS_ACCESS_KEY_ID=AKIA{kid} AWS_SECRET_ACCESS_KEY={s} aws s3 ls",
    ),
    kid=lambda r: _w(r, 16, _UPNUM),
)
_add(
    "google oauth client secret zh",
    lambda r: "GOCSPX-" + _w(r, 28, _B64U),
    ("Google OAuth 客户端密钥：{s}（Immich 登录用）", "client_secret.json 里的 client_secret 是 {s}"),
    zh=True,
)
_add(
    "npm token npmrc",
    lambda r: "npm_" + _w(r, 36, _ALNUM),
    ("//registry.npmjs.org/:_authToken={s}", "npm automation token: {s}"),
)
_add(
    "pypi token pypirc",
    lambda r: "pypi-AgEIcHlwaS5vcmc" + _w(r, 140, _B64U),
    ("[pypi]\n  username = __token__\n  password = {s}", "twine upload -u __token__ -p {s} dist/*"),
)
_add(
    "docker hub pat zh",
    lambda r: "dckr_pat_" + _w(r, 27, _B64U),
    ("Docker Hub 访问令牌：{s}", "docker login -u {user} 输的是 token 不是密码：{s}"),
    zh=True,
    user=lambda r: r.choice(_FAM),
)
_add(
    "huggingface token",
    lambda r: "hf_" + _w(r, 34, _ALNUM),
    ("HF_TOKEN={s}", "huggingface read token for the local LLM box: {s}"),
)
_add(
    "tailscale auth key zh",
    lambda r: "tskey-auth-k" + _w(r, 10, _ALNUM) + "CNTRL-" + _w(r, 32, _ALNUM),
    ("Tailscale 预授权密钥（可复用）：{s}", "tailscale up --authkey={s}  # 新装的 pve 节点"),
    zh=True,
)


@_kind("cloudflare tunnel token")
def k_cf_tunnel(r: random.Random) -> tuple[str, str]:
    s = base64.b64encode(json.dumps({"a": _hex(r, 32), "t": _uuid(r), "s": _b64(r, 32)}).encode()).decode()
    t = r.choice(
        (
            f"cloudflared service install {s}",
            "services:\n  tunnel:\n    image: cloudflare/cloudflared\n    command: tunnel run\n"
            f"    environment:\n      - TUNNEL_TOKEN={s}",
        )
    )
    return s, t


_add(
    "ngrok authtoken zh",
    lambda r: "2" + _w(r, 26, _ALNUM) + "_" + _w(r, 21, _ALNUM),
    ("ngrok config add-authtoken {s}", "ngrok 的 authtoken：{s}"),
    zh=True,
)
_add(
    "wireguard private key",
    lambda r: _b64(r, 32),
    (
        "[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {s}\nDNS = {ip}",
        "wg0 private key of the travel router: {s}",
    ),
    ip=_priv_ip,
)
_add(
    "wireguard private key zh",
    lambda r: _b64(r, 32),
    ("手机 WireGuard 配置的私钥：{s}", "回家的 VPN（wg）私钥 {s} ，公钥在路由器上"),
    zh=True,
)
_add(
    "openssh private key line",
    lambda r: _w(r, 70, _B64A),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "{s}\n{more}\n-----END OPENSSH PRIVATE KEY-----",
    ),
    more=lambda r: _w(r, 70, _B64A),
)
_add(
    "age secret key",
    lambda r: "AGE-SECRET-KEY-1" + _w(r, 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    ("# created: 2026-03-02\n# public key: age1{pub}\n{s}", "sops age key: {s}"),
    pub=lambda r: _w(r, 58, "qpzry9x8gf2tvdw0s3jn54khce6mua7l"),
)
_add(
    "gpg passphrase zh",
    _pw_or_phrase,
    ("GPG 私钥的 passphrase：{s}", "pass（密码管理器）那把 gpg 钥匙的口令是 {s}"),
    zh=True,
)


@_kind("k8s secret manifest base64")
def k_k8s_secret(r: random.Random) -> tuple[str, str]:
    pw = _pw(r)
    s = base64.b64encode(pw.encode()).decode()
    t = (
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: immich-db\n  namespace: media\ntype: Opaque\n"
        f"data:\n  username: aW1taWNo\n  password: {s}"
    )
    return s, t


_add(
    "k8s stringdata zh",
    _pw,
    (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: nextcloud\nstringData:\n  # 数据库密码\n  db-password: '{s}'",
        "k8s 里 nextcloud 的 Secret（stringData）db-password 写的是 {s}",
    ),
    zh=True,
)
_add(
    "k3s node token",
    lambda r: f"K10{_hex(r, 64)}::server:{_hex(r, 32)}",
    (
        "curl -sfL https://get.k3s.io | K3S_URL=https://{ip}:6443 K3S_TOKEN={s} sh -",
        "/var/lib/rancher/k3s/server/node-token: {s}",
    ),
    ip=_priv_ip,
)
_add(
    "kubeconfig token",
    lambda r: _jwt(r, {"iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:ci:deployer"}),
    ("users:\n- name: ci-deployer\n  user:\n    token: {s}",),
)
_add(
    "compose env list password",
    _alnum_pw,
    (
        "services:\n  db:\n    image: postgres:16\n    environment:\n"
        "      - POSTGRES_USER=immich\n      - POSTGRES_PASSWORD={s}",
        "docker-compose.yml → environment:\n  - MYSQL_ROOT_PASSWORD={s}\n  - MYSQL_DATABASE=nextcloud",
    ),
)
_add(
    "compose env map gitea zh",
    _alnum_pw,
    (
        "gitea:\n  environment:\n    GITEA__database__DB_TYPE: postgres\n"
        "    GITEA__database__PASSWD: {s}  # 数据库密码",
        "Gitea 容器的 GITEA__database__PASSWD 设成了 {s}",
    ),
    zh=True,
)
_add(
    "systemd environment token",
    lambda r: _w(r, 40, _ALNUM),
    (
        '[Service]\nEnvironment="HOMEPAGE_VAR_JELLYFIN_KEY={s}"\nExecStart=/usr/local/bin/homepage',
        "systemctl edit backup.service\n[Service]\nEnvironment=HC_PING_KEY={s}",
    ),
)
_add(
    "crontab curl basic auth",
    _alnum_pw,
    (
        "*/5 * * * * curl -fsS -u monitor:{s} https://{host}/api/health > /dev/null",
        "0 4 * * 0 wget -q --user=backup --password={s} http://{host}/export.tar",
    ),
    host=_lan_host,
)
_add(
    "shell history mysql",
    _pw,
    ("  512  mysql -uroot -p'{s}' -h {ip}", "$ mysqldump -u root --password='{s}' nextcloud > nc.sql"),
    ip=_priv_ip,
)
_add(
    "shell history vault token",
    lambda r: "hvs." + _w(r, 24, _ALNUM),
    ("  88  export VAULT_TOKEN={s}", "$ vault login {s}"),
)
_add(
    "sshpass history zh",
    _pw,
    (
        "  301  sshpass -p '{s}' ssh root@{ip}  # 爸妈家的软路由",
        "sshpass -p {s} scp backup.tar root@{ip}:/mnt/  （临时用一下）",
    ),
    zh=True,
    ip=_priv_ip,
)


@_kind("stack trace connection string")
def k_trace(r: random.Random) -> tuple[str, str]:
    s = _alnum_pw(r)
    host = r.choice((_lan_host(r), _priv_ip(r)))
    t = (
        'Traceback (most recent call last):\n  File "/app/worker.py", line 88, in <module>\n    engine.connect()\n'
        f'sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at "{host}", port 5432 '
        f'failed: FATAL:  password authentication failed for user "app"\n'
        f"[SQL: SELECT 1]\n(Background on this error at: https://sqlalche.me/e/20/e3q8) "
        f"dsn=postgresql://app:{s}@{host}:5432/app"
    )
    return s, t


_add(
    "log line bearer",
    lambda r: _w(r, 48, _B64U),
    (
        '{ip} - - [03/Dec/2026:21:14:07 +0800] "GET /api/v1/items?access_token={s} HTTP/1.1" 200 512',
        "2026-12-03T21:14:07Z DEBUG http: request headers: {'Authorization': 'Bearer {s}', 'Accept': '*/*'}",
    ),
    ip=_priv_ip,
)
_add(
    "url userinfo password",
    _alnum_pw,
    ("https://admin:{s}@{host}:5001/", "webdav: https://{user}:{s}@{host}/remote.php/dav/files/{user}/"),
    host=_lan_host,
    user=_user,
)
_add(
    "url query token zh",
    lambda r: _jwt(r, {"iss": _hex(r, 32), "exp": r.randint(1_800_000_000, 2_100_000_000)}),
    (
        "Home Assistant 的长效 token 放在这个链接里 https://{host}:8123/api/states?token={s}",
        "摄像头直播地址：http://{host}:5000/api/live?token={s}",
    ),
    zh=True,
    host=_lan_host,
)
_add(
    "url fragment token",
    lambda r: _w(r, 40, _B64U),
    ("https://{host}/callback#access_token={s}&token_type=bearer&expires_in=3600",),
    host=_lan_host,
)


@_kind("url percent encoded password")
def k_pct(r: random.Random) -> tuple[str, str]:
    pw = _cap(r.choice(_PY)) + r.choice("@#%&?+=") + _pin(r, 4) + r.choice("@#!:/")
    s = quote(pw, safe="")
    t = r.choice(
        (
            f"smb://mama:{s}@{_priv_ip(r)}/photos",
            f"DATABASE_URL=postgres://nextcloud:{s}@{_lan_host(r)}:5432/nextcloud",
            f"redis://:{s}@{_priv_ip(r)}:6379/0",
        )
    )
    return s, t


_add(
    "wifi qr payload",
    _pw,
    ("WIFI:T:WPA;S:{ssid};P:{s};H:false;;", "QR for the guest network: WIFI:S:{ssid};T:WPA;P:{s};;"),
    ssid=lambda r: r.choice(("TP-LINK_", "Xiaomi_", "ChinaNet-", "HUAWEI-")) + _w(r, 4, "0123456789ABCDEF"),
)
_add(
    "otpauth uri",
    lambda r: _w(r, 32, _B32),
    (
        "otpauth://totp/Vaultwarden:{email}?secret={s}&issuer=Vaultwarden&algorithm=SHA1&digits=6&period=30",
        "otpauth://totp/Proxmox:root@pam?secret={s}&issuer=Proxmox",
    ),
    email=_email,
)
_add(
    "totp seed grouped zh",
    lambda r: _group(_w(r, 32, _B32).lower(), 4),
    ("两步验证的密钥（手动输入那串）：{s}", "Gitea 2FA 的设置密钥 {s} ，手机丢了就靠它"),
    zh=True,
)


@_kind("recovery codes list")
def k_recovery(r: random.Random) -> tuple[str, str]:
    codes = [f"{_w(r, 5, _LOWNUM)}-{_w(r, 5, _LOWNUM)}" for _ in range(6)]
    s = r.choice(codes)
    return s, "GitHub recovery codes (unused):\n" + "\n".join(codes)


_add(
    "bitwarden recovery code zh",
    lambda r: _group(_w(r, 32, _UPNUM), 4, "-"),
    ("Vaultwarden 两步登录恢复代码：{s}", "恢复码 {s} （如果 YubiKey 丢了用这个）"),
    zh=True,
)
_add(
    "bip39 seed phrase",
    lambda r: " ".join(r.choice(_BIP) for _ in range(r.choice((12, 24)))),
    ("hardware wallet seed (keep offline!): {s}", "Trezor recovery words:\n{s}"),
)
_add(
    "bip39 seed zh",
    lambda r: " ".join(r.choice(_BIP) for _ in range(12)),
    ("冷钱包助记词：{s}", "助记词（抄在纸上的那份）“{s}”"),
    zh=True,
)
_add(
    "vault unseal key zh",
    lambda r: _b64(r, 33),
    ("Vault 解封密钥 Unseal Key 1: {s}", "vault operator unseal {s}  # 第二把在老婆那"),
    zh=True,
)
_add(
    "maven settings xml",
    _pw,
    (
        "<servers>\n  <server>\n    <id>nexus-releases</id>\n    <username>deploy</username>\n"
        "    <password>{s}</password>\n  </server>\n</servers>",
    ),
)
_add(
    "xml config secret zh",
    lambda r: _w(r, 30, _ALNUM),
    (
        "<!-- 阿里云 OSS 备份 -->\n<oss>\n  <endpoint>oss-cn-hangzhou.aliyuncs.com</endpoint>\n"
        "  <accessKeySecret>{s}</accessKeySecret>\n</oss>",
    ),
    zh=True,
)
_add(
    "terraform variable default",
    lambda r: _w(r, 32, _ALNUM),
    (
        'variable "cloudflare_api_token" {\n  type    = string\n  default = "{s}"\n}',
        'cloudflare_api_token = "{s}"  # terraform.tfvars',
    ),
)
_add(
    "toml token",
    lambda r: _w(r, 40, _ALNUM),
    (
        '[registries.gitea]\ntoken = "Bearer {s}"',
        '[sinks.es]\ntype = "elasticsearch"\nauth.strategy = "basic"\nauth.password = "{s}"',
    ),
)
_add(
    "mysql cnf password",
    _pw,
    ('[client]\nuser = root\npassword = "{s}"\nhost = {ip}', "~/.my.cnf has password={s}"),
    ip=_priv_ip,
)
_add("pgpass line", _alnum_pw, ("{host}:5432:*:postgres:{s}",), host=_lan_host)
_add(
    "netrc zh",
    lambda r: _hex(r, 40),
    ("~/.netrc（给 git 用的）\nmachine {host} login me password {s}", "netrc 里 {host} 的密码字段就是 gitea token {s}"),
    zh=True,
    host=_lan_host,
)
_add(
    "git credentials store",
    lambda r: "ghp_" + _w(r, 36, _ALNUM),
    ("~/.git-credentials\nhttps://me:{s}@github.com",),
)
_add(
    "pip conf index token",
    lambda r: _w(r, 32, _ALNUM),
    ("[global]\nindex-url = https://__token__:{s}@{host}/api/packages/me/pypi/simple",),
    host=_lan_host,
)


@_kind("docker config auth zh", zh=True)
def k_docker_auth(r: random.Random) -> tuple[str, str]:
    s = base64.b64encode(f"{_user(r)}:{_alnum_pw(r)}".encode()).decode()
    host = _lan_host(r)
    t = r.choice(
        (
            f'~/.docker/config.json（家里 Harbor）：{{"auths": {{"{host}": {{"auth": "{s}"}}}}}}',
            f"docker 登录凭据（base64）：{s}",
        )
    )
    return s, t


_add(
    "tool call output env",
    _alnum_pw,
    (
        'tool_result {"tool": "read_file", "path": "/srv/immich/.env", '
        '"content": "DB_USERNAME=postgres\\nDB_PASSWORD={s}\\n"}',
        '<tool_call name="shell">cat /srv/paperless/.env</tool_call>\n<tool_output>\nPAPERLESS_DBPASS={s}\nPAPERLESS_URL=https://{host}\n</tool_output>',
    ),
    host=_lan_host,
)


@_kind("forwarded email root password")
def k_fwd_email(r: random.Random) -> tuple[str, str]:
    s = _w(r, 20, _ALNUM)
    ip = f"{r.randint(5, 200)}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
    t = (
        "---------- Forwarded message ---------\nFrom: Hetzner Cloud <noreply@hetzner.com>\n"
        f'Date: Tue, 1 Dec 2026 at 09:{r.randint(10, 59)}\nSubject: Your server "ubuntu-4gb-fsn1-1" was created\n'
        f"To: {_email(r)}\n\nIPv4: {ip}\nUser: root\nPassword: {s}\n\nPlease change the password after login."
    )
    return s, t


@_kind("forwarded email password zh", zh=True)
def k_fwd_email_zh(r: random.Random) -> tuple[str, str]:
    s = _alnum_pw(r)
    t = (
        "-------- 转发的邮件 --------\n发件人: 阿里云 <no-reply@notice.aliyun.com>\n"
        f"收件人: {_email(r)}\n主题: 【阿里云】轻量应用服务器创建成功\n\n"
        f"您好，实例已创建。登录用户 root，初始密码：{s}，请尽快修改。"
    )
    return s, t


@_kind("chat log nas password")
def k_chat_en(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    who = r.choice(("Sam", "Mei", "Dad", "Jun"))
    t = (
        f"[{_hm(r)}] {who}: what's the NAS admin pass again? the photo app logged me out\n"
        f"[{_hm(r)}] me: {s}\n[{_hm(r)}] {who}: thx, deleting this msg"
    )
    return s, t


@_kind("label far from value")
def k_far(r: random.Random) -> tuple[str, str]:
    s = _pw_or_phrase(r)
    filler = (
        "Replaced the two 8 TB disks in the backup box this weekend. "
        "The old pair had crossed 45k power-on hours and one "
        "was throwing reallocated sectors. Resilvering took about nine hours, scrub came back clean, and the SMART "
        "long test is scheduled for Sunday night. Also moved the UPS to the lower shelf so the fan has room, and "
        "relabelled the cables. Next time order the CMR model, not the SMR one, it makes a difference on rebuilds."
    )
    t = f"Offsite backup drive: the LUKS passphrase is at the very bottom of this note.\n\n{filler}\n\n→ {s}"
    return s, t


_add(
    "value before label en",
    lambda r: "ptr_" + _w(r, 43, _B64A),
    ("{s} <- that's the Portainer API key, don't lose it", "{s}\n^ Portainer token (homepage widget)"),
)


@_kind("token split over two lines")
def k_split_lines(r: random.Random) -> tuple[str, str]:
    a, b = _w(r, 32, _ALNUM), _w(r, 32, _ALNUM)
    s = r.choice((a, b))
    return s, f"the hetzner token, my terminal wrapped it:\n{a}\n{b}"


@_kind("token split two messages zh", zh=True)
def k_split_msgs(r: random.Random) -> tuple[str, str]:
    a, b = _w(r, 20, _B64U), _w(r, 20, _B64U)
    s = r.choice((a, b))
    t = f"[{_hm(r)}] 我: Cloudflare token 前半段 {a}\n[{_hm(r)}] 我: 后半段 {b}（微信发太长会断）"
    return s, t


_add(
    "fenced block export",
    lambda r: _w(r, 64, _ALNUM),
    ("```bash\nexport HCLOUD_TOKEN={s}\nterraform apply\n```", "```sh\n$ export CF_API_TOKEN={s}\n```"),
)
_add(
    "ini grafana zh",
    _pw,
    (
        "# grafana.ini 里我改过的部分\n[security]\nadmin_user = admin\nadmin_password = {s}",
        "Grafana 管理员密码（grafana.ini）{s}",
    ),
    zh=True,
)
_add(
    "home assistant secrets yaml",
    _pw,
    ('# secrets.yaml\nmqtt_password: "{s}"\nlatitude: 31.2', "ha secrets.yaml: router_password: {s}"),
)
_add(
    "home assistant long lived token",
    lambda r: _jwt(r, {"iss": _hex(r, 32), "exp": r.randint(1_800_000_000, 2_100_000_000)}),
    ("HA long-lived access token (node-red): {s}",),
)
_add(
    "mosquitto password zh",
    _pw,
    ("mosquitto_pub -h {ip} -u iot -P '{s}' -t home/door -m open  # 门磁测试", "MQTT 账号 iot，密码 {s}"),
    zh=True,
    ip=_priv_ip,
)
_add(
    "redis requirepass",
    lambda r: _w(r, 24, _ALNUM),
    ("# redis.conf\nrequirepass {s}", "redis-cli -h {ip} -a {s} info"),
    ip=_priv_ip,
)
_add(
    "internal hostname",
    _lan_host,
    ("Jellyfin moved to {s}, update the TV app", "added an A record for {s} in the router"),
)
_add(
    "internal hostname zh",
    _lan_host,
    ("家里的相册服务地址：https://{s}", "爸妈那边连回来要用的内网域名 {s}"),
    zh=True,
)
_add("private ip", _priv_ip, ("NAS is at {s}", "ssh root@{s}", "Pi-hole on {s} (DHCP reservation)"))
_add(
    "private ip zh",
    _priv_ip,
    ("小米路由器管理后台 http://{s}/cgi-bin/luci", "打印机的固定 IP 是 {s}", "Portainer 在 {s}:9443"),
    zh=True,
)


@_kind("ssh config private host")
def k_ssh_cfg(r: random.Random) -> tuple[str, str]:
    s = _priv_ip(r)
    name = r.choice(("pve", "nas", "gw", "k3s-1", "backup"))
    t = f"~/.ssh/config\nHost {name}\n  HostName {s}\n  User root\n  Port {r.choice(('22', '2222', '22022'))}"
    return s, t


_add("ipv6 ula zh", _ula, ("家里 IPv6 内网地址（ULA）：{s}", "AdGuard 的 v6 地址 {s}"), zh=True)
_add(
    "tailscale ip",
    _ts_ip,
    ("tailnet: pve is {s} (magicdns {host})", "reach the NAS over tailscale at {s}"),
    host=lambda r: f"{r.choice(_SVC)}.tail{_hex(r, 5)}.ts.net",
)
_add(
    "private cidr home lan",
    lambda r: f"192.168.{r.randint(2, 254)}.0/24",
    ("Home LAN is {s}, DHCP pool from .100 to .199", "wg AllowedIPs = {s}"),
)
_add(
    "internal host in table",
    _lan_host,
    ("| service | url |\n|---|---|\n| Immich | https://{s} |\n| Grafana | https://{other} |",),
    other=_lan_host,
)
_add(
    "k8s ingress internal host",
    _lan_host,
    ("spec:\n  rules:\n  - host: {s}\n    http:\n      paths:\n      - path: /\n        pathType: Prefix",),
)

# --- generic shapes of secrets --------------------------------------------------------------------------------------

_add(
    "invented token no prefix",
    lambda r: _w(r, 40, _ALNUM),
    ("the webhook secret is {s}", "signing secret for the uptime-kuma push: {s}"),
)
_add("hex key", lambda r: _hex(r, 64), ("AES-256 key (hex): {s}", "encryption_key: {s}"))
_add(
    "base64 key zh",
    lambda r: _b64(r, 32),
    ("加密用的 key（base64）：{s}", "Immich 备份加密密钥「{s}」"),
    zh=True,
)
_add("short human password", _pw, ("pw: {s}", "password for the old laptop is {s}", "login {user} / {s}"), user=_user)
_add(
    "pinyin passphrase zh",
    _py_phrase,
    ("备份硬盘口令：{s}", "LUKS 解锁口令“{s}”", "口令 {s} （拼音的，好记）"),
    zh=True,
)
_add(
    "english passphrase",
    _phrase,
    ("the passphrase for the backup is {s}", "KeePassXC database passphrase: {s}"),
)
_add("pin changed", lambda r: _pin(r, r.choice((4, 6))), ("pin changed to {s}", "SIM PIN is now {s}"))
_add(
    "pin changed zh",
    lambda r: _pin(r, r.choice((4, 6, 8))),
    ("pin 改成了 {s}", "YubiKey 的 PIN：{s}", "手机卡 PIN 码 {s} （PUK 在卡托上）"),
    zh=True,
)
_add(
    "kouling zh",
    _pw,
    ("口令：{s}", "动态口令卡背面手写的静态口令 {s}", "进群口令是 {s}"),
    zh=True,
)
_add(
    "voice transcript password en",
    _spoken_en,
    ("(voice note) ok the wifi password is {s} got it?", "transcript: the router password is {s}"),
)
_add(
    "secret in corner quotes zh",
    _pw,
    ("路由器管理密码「{s}」", "网盘密码『{s}』", "备用邮箱密码“{s}”"),
    zh=True,
)
_add(
    "secret in fullwidth parens zh",
    _pw,
    ("NAS（密码 {s}）放在书房", "老电脑开机密码（{s}）"),
    zh=True,
)
_add(
    "mixed zh en password",
    _pw,
    ("Proxmox 的 root pw 是 {s}，backup 用同一个", "新装的 TrueNAS，admin password = {s}，记得开 2FA"),
    zh=True,
)
_add(
    "fullwidth punctuation secret zh",
    _pw,
    ("密码：{s}；账号：{user}。", "【NAS】用户名：{user}，密码：{s}！"),
    zh=True,
    user=_user,
)
_add(
    "seed hex",
    lambda r: _hex(r, 64),
    ("ed25519 seed for the signing key: {s}", "raw seed (hex) {s}"),
)

# ===============================================================================================================
# (c) the family
# ===============================================================================================================

_add(
    "resident id zh",
    _cn_id,
    ("老婆身份证号 {s}", "{name}的身份证：{s}", "爸爸 身份证号码 {s} （办医保要用）"),
    zh=True,
    name=_adult_name,
)
_add("resident id en", _cn_id, ("Mum's resident ID: {s}", "ID card no. {s} (expires 2031)"))


@_kind("resident id table zh", zh=True)
def k_id_table(r: random.Random) -> tuple[str, str]:
    rows = [(_cn_name(r), _child_id(r)) for _ in range(2)] + [(_adult_name(r), _cn_id(r))]
    pick = r.randrange(len(rows))
    body = "\n".join(f"| {n} | {i} |" for n, i in rows)
    return rows[pick][1], f"| 家庭成员 | 身份证号 |\n|---|---|\n{body}"


@_kind("resident id grouped zh", zh=True)
def k_id_grouped(r: random.Random) -> tuple[str, str]:
    i = _cn_id(r)
    s = r.choice((f"{i[:6]} {i[6:14]} {i[14:]}", f"{i[:6]}-{i[6:14]}-{i[14:]}", _group(i, 4)))
    return s, r.choice((f"身份证 {s}", f"证件号码：{s}（复印件在抽屉里）"))


_add(
    "resident id voice zh",
    lambda r: _spaced(_cn_id(r)),
    ("（语音）身份证号是 {s}", "念给银行客服的身份证号：{s}"),
    zh=True,
)
_add(
    "bank card zh",
    _debit,
    ("工资卡 招行 {s}", "老婆的银行卡号：{s}", "房贷扣款卡 {s} ，每月 15 号前存钱"),
    zh=True,
)
_add("bank card en", _debit, ("ICBC debit card {s}", "card number for the school fees: {s}"))
_add(
    "credit card zh",
    _credit,
    ("信用卡 {s} 有效期 {mm}/{yy}", "招行信用卡卡号 {s}，账单日 5 号"),
    zh=True,
    mm=lambda r: f"{r.randint(1, 12):02d}",
    yy=lambda r: str(r.randint(27, 31)),
)
_add(
    "credit card cvv zh",
    lambda r: _pin(r, 3),
    ("信用卡背面 CVV：{s}", "安全码 {s} ，有效期 {mm}/{yy}", "卡背后三位数是 {s}"),
    zh=True,
    mm=lambda r: f"{r.randint(1, 12):02d}",
    yy=lambda r: str(r.randint(27, 31)),
)
_add(
    "credit card cvv en",
    lambda r: _pin(r, 3),
    ("Visa ending {last}, exp {mm}/{yy}, CVV {s}", "security code on the back: {s}"),
    last=lambda r: _pin(r, 4),
    mm=lambda r: f"{r.randint(1, 12):02d}",
    yy=lambda r: str(r.randint(27, 31)),
)


@_kind("credit card full line en")
def k_cc_full(r: random.Random) -> tuple[str, str]:
    s = _credit(r)
    return s, f"card: {s} | exp {r.randint(1, 12):02d}/{r.randint(27, 31)} | cvc {_pin(r, 3)} | {_en_name(r).upper()}"


_add(
    "ebank ukey pin zh",
    lambda r: r.choice((_pin(r, 6), _pin(r, 8), _w(r, 8, _LOWNUM))),
    ("网银 U盾 PIN 改成了 {s}", "工行 U盾 密码：{s}", "K宝（建行）口令 {s}"),
    zh=True,
)
_add(
    "wechat payment password zh",
    lambda r: _pin(r, 6),
    ("微信支付密码 {s}", "零钱支付密码：{s}，别让孩子看到", "支付密码是 {s} 。"),
    zh=True,
)
_add("atm pin en", lambda r: _pin(r, r.choice((4, 6))), ("ATM PIN for the ICBC card: {s}", "debit card pin {s}"))
_add(
    "bank pin voice zh",
    lambda r: " ".join(r.choice(_ZH_DIG) for _ in range(6)),
    ("（语音转文字）银行卡密码是 {s}", "妈妈说取款密码：{s}"),
    zh=True,
)
_add(
    "bank pin fullwidth zh",
    lambda r: _fullwidth(_pin(r, 6)),
    ("银行卡密码：{s}", "存折密码 {s}"),
    zh=True,
)
_add(
    "door code zh",
    lambda r: _pin(r, r.choice((4, 6))),
    ("单元门密码 #{s}#", "楼下门禁密码：{s}，按完再按#", "快递柜取件码 {s}"),
    zh=True,
)
_add(
    "door card uid zh",
    lambda r: r.choice((_num(r, 10), _w(r, 8, "0123456789ABCDEF"))),
    ("门禁卡卡号 {s}（复制到手环用的）", "小区门禁 IC 卡 UID：{s}"),
    zh=True,
)
_add(
    "smart lock code zh",
    lambda r: _pin(r, 8),
    ("智能门锁 临时密码 {s} ，阿姨今天来打扫", "门锁管理员密码：{s}"),
    zh=True,
)
_add(
    "door code en",
    lambda r: _pin(r, r.choice((4, 5, 6))),
    ("garage keypad code: {s}", "building door code {s}, then press the bell icon"),
)
_add("license plate zh", _plate, ("我们家车牌 {s}", "老婆的车 {s} ，停 B2-118", "车牌号：{s}"), zh=True)
_add("license plate en", _plate, ("our car plate is {s}", "parking permit for {s} expires in March"))
_add("passport zh", _passport_cn, ("护照号 {s}", "{name} 的护照：{s}，有效期到 2033"), zh=True, name=_cn_name)
_add("passport en", _passport_cn, ("passport no. {s}", "Passport number {s} (renewed 2025)"))
_add(
    "hk macau permit zh",
    _hk_permit,
    ("港澳通行证号 {s}", "{name}的往来港澳通行证 {s}，签注还剩 1 次"),
    zh=True,
    name=_cn_name,
)
_add(
    "hukou number zh",
    lambda r: _num(r, 9),
    ("户口本户号：{s}", "户口簿 户号 {s} ，户主 {name}"),
    zh=True,
    name=_adult_name,
)
_add(
    "school platform password zh",
    _pw,
    ("孩子学校 智慧校园 家长账号 {phone}，密码 {s}", "学习通 {name} 的密码：{s}", "钉钉家校 登录密码改成 {s}"),
    zh=True,
    phone=_cn_mobile,
    name=_cn_name,
)
_add(
    "student registration number zh",
    lambda r: "G" + _child_id(r),
    ("全国学籍号 {s}", "{name} 学籍号：{s}"),
    zh=True,
    name=_cn_name,
)
_add(
    "student id number zh",
    lambda r: str(r.randint(2019, 2025)) + _pin(r, 6),
    ("女儿的学号 {s}（食堂充值用）", "学号：{s}，班级 三年二班"),
    zh=True,
)
_add(
    "medical insurance number zh",
    lambda r: r.choice(("1" + _pin(r, 9), _w(r, 2, _UPPER) + _num(r, 9))),
    ("医保卡号 {s}", "{name}的医保个人编号：{s}"),
    zh=True,
    name=_adult_name,
)
_add(
    "medical insurance pin zh",
    lambda r: _pin(r, 6),
    ("社保卡密码 {s}", "医保电子凭证 支付密码：{s}", "爸爸的社保卡金融账户密码：{s}"),
    zh=True,
)
_add(
    "hospital record number zh",
    lambda r: r.choice(("ZY" + _num(r, 8), _num(r, 10), "MZ" + _num(r, 9))),
    ("妈妈在瑞金医院的住院号 {s}", "病历号：{s}（复诊要带）"),
    zh=True,
)

_DIAG_ZH = ("甲状腺乳头状癌", "2型糖尿病", "乳腺结节 BI-RADS 4a", "中度抑郁", "高血压三级", "乙肝小三阳", "焦虑障碍")
_DIAG_EN = ("type 2 diabetes", "early-stage breast cancer", "major depressive disorder", "ADHD", "stage 2 hypertension")


@_kind("medical diagnosis zh", zh=True)
def k_diag_zh(r: random.Random) -> tuple[str, str]:
    s = f"{_adult_name(r)}确诊{r.choice(_DIAG_ZH)}"
    t = r.choice((f"{s}，下周一复查，别跟外人说", f"体检报告出来了：{s}。", f"家里的事：{s}，正在吃药"))
    return s, t


@_kind("medical data en")
def k_diag_en(r: random.Random) -> tuple[str, str]:
    s = f"{_en_name(r)}: {r.choice(_DIAG_EN)}"
    t = r.choice(
        (
            f"{s}, started medication {r.choice(('sertraline 50 mg', 'metformin 500 mg', 'amlodipine 5 mg'))}",
            f"health notes — {s} (diagnosed in {r.randint(2019, 2026)})",
        )
    )
    return s, t


_add(
    "lab result zh",
    lambda r: f"糖化血红蛋白 {r.randint(60, 110) / 10}%",
    ("爸爸这次{s}，医生说要加药", "{name}的化验单：{s}，空腹血糖 {g}"),
    zh=True,
    name=_adult_name,
    g=lambda r: f"{r.randint(55, 130) / 10}",
)


@_kind("child name birthday zh", zh=True)
def k_child_zh(r: random.Random) -> tuple[str, str]:
    name = _cn_name(r)
    y, m, d = _ymd(r, 2012, 2022)
    form = r.randrange(3)
    if form == 0:
        s = f"{name}，{y}年{m}月{d}日"
        t = f"大女儿{s}生，属{r.choice('鼠牛虎兔龙蛇马羊猴鸡狗猪')}"
    elif form == 1:
        s = f"{name} | {y}-{m:02d}-{d:02d}"
        t = f"| 孩子 | 生日 |\n|---|---|\n| {s} |"
    else:
        s = f"{name}（{y}.{m}.{d}）"
        t = f"小儿子{s}，今年报名小学"
    return s, t


@_kind("child name birthday en")
def k_child_en(r: random.Random) -> tuple[str, str]:
    name = f"{r.choice(_EN_FIRST)} {r.choice(_PY_SUR)}"
    y, m, d = _ymd(r, 2012, 2022)
    month = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October")
    month += ("November", "December")
    s = r.choice((f"{name}, born {d} {month[m - 1]} {y}", f"{name} (DOB {y}-{m:02d}-{d:02d})"))
    return s, r.choice((f"kids: {s}", f"school form — child: {s}, allergies: peanuts"))


_add(
    "home address zh",
    _cn_address,
    ("家庭住址：{s}", "我家地址 {s}，快递放门口", "给爸妈寄东西：{s}（{name}收）"),
    zh=True,
    name=_adult_name,
)
_add("home address en", _en_address, ("home address: {s}", "ship to {s}"))
_add("home address pinyin", _py_address, ("Our address in English for the visa form: {s}", "Mailing address: {s}"))
_add(
    "family phone zh",
    _cn_mobile,
    ("老婆手机 {s}", "{name}的电话：{s}", "紧急联系人 {name} {s}"),
    zh=True,
    name=_adult_name,
)
_add(
    "family phone spoken zh",
    lambda r: " ".join(
        "".join("零幺二三四五六七八九"[int(c)] for c in part) for part in _group(_cn_mobile_digits(r), 4).split()
    ),
    ("（语音）我妈手机号 {s}", "电话是 {s} ，你记一下"),
    zh=True,
)
_add("family phone en", _cn_mobile, ("Mum's mobile: {s}", "call Grandpa on {s}"))
_add("foreign phone", _intl_phone, ("Aunt in Vancouver: {s}", "school contact in HK {s}", "tel {s}"))
_add("personal email", _email, ("my personal mail is {s}", "send the invoice to {s}"))
_add(
    "email obfuscated en",
    lambda r: (
        f"{_local(r)} {r.choice(('at', '[at]', '(at)'))} "
        f"{r.choice(('gmail', 'qq', '163', 'outlook'))} {r.choice(('dot', '[dot]'))} com"
    ),
    ("reach me at {s}", "email: {s}"),
)
_add(
    "email obfuscated zh",
    lambda r: r.choice(
        (
            f"{_local(r)}＠{r.choice(_MAILDOM)}",
            f"{_local(r)}#{r.choice(_MAILDOM)}",
            f"{_local(r)} 艾特 {r.choice(_MAILDOM)}",
        )
    ),
    ("邮箱 {s}（#换成@）", "老婆的邮箱：{s}", "发到 {s} 就行"),
    zh=True,
)
_add("qq number zh", lambda r: _num(r, r.randint(8, 10)), ("QQ：{s}", "我妈的 QQ 号 {s} ，密码是我帮她设的"), zh=True)
_add(
    "wechat id zh",
    lambda r: r.choice(("wxid_" + _w(r, 14, _LOWNUM), r.choice(_PY) + "_" + _pin(r, 4) + _w(r, 2, _LOWER))),
    ("微信号 {s}", "加我老婆微信：{s}，备注买家"),
    zh=True,
)
_add(
    "home wifi zh",
    _pw,
    ("家里 WiFi {ssid} 密码 {s}", "WiFi：{ssid} / {s}（客厅那个 AP）"),
    zh=True,
    ssid=lambda r: r.choice(("ChinaNet-", "CMCC-", "Xiaomi_", "HUAWEI-")) + _w(r, 4, "0123456789ABCDEF"),
)
_add(
    "router admin en",
    _pw,
    ("router admin http://{ip} admin/{s}", "the router login is admin and {s}"),
    ip=_priv_ip,
)
_add(
    "12306 password zh", _pw, ("12306 账号 {phone} 密码 {s}", "买火车票的 12306 密码是 {s}"), zh=True, phone=_cn_mobile
)
_add("apple id password zh", _pw, ("Apple ID {email} 密码 {s}", "家庭共享的 Apple ID 密码：{s}"), zh=True, email=_email)
_add("housing fund password zh", _pw, ("公积金 查询密码 {s}", "住房公积金 网厅 登录密码：{s}"), zh=True)
_add(
    "tax app password zh", _pw, ("个人所得税 APP 登录密码 {s}", "个税 app 密码改成 {s}，专项扣除填了孩子教育"), zh=True
)
_add(
    "insurance policy number zh",
    lambda r: r.choice(("P" + _num(r, 15), _num(r, 20), "8" + _num(r, 17))),
    ("重疾险保单号 {s}", "{name}的医疗险保单：{s}，受益人是我"),
    zh=True,
    name=_cn_name,
)


@_kind("property certificate zh", zh=True)
def k_property(r: random.Random) -> tuple[str, str]:
    city = r.choice((("沪", "浦东新区"), ("京", "朝阳区"), ("粤", "深圳市"), ("浙", "杭州市")))
    s = f"{city[0]}({r.randint(2008, 2025)}){city[1]}不动产权第{_num(r, 7)}号"
    return s, r.choice((f"房产证号：{s}", f"不动产权证书 {s}，原件在银行抵押"))


_add("safe combination zh", lambda r: _pin(r, r.choice((6, 8))), ("保险柜密码 {s}", "书房保险箱：{s}"), zh=True)
_add(
    "luggage lock en",
    lambda r: _pin(r, 3),
    ("the luggage lock is {s}", "suitcase TSA lock: {s}"),
)
_add(
    "baidu pan share code zh",
    lambda r: "1" + _w(r, 22, _B64U),
    ("宝宝照片 链接: https://pan.baidu.com/s/{s} 提取码: {code}", "全家福原图 https://pan.baidu.com/s/{s}?pwd={code}"),
    zh=True,
    code=lambda r: _w(r, 4, _LOWNUM),
)
_add(
    "aliyun drive share zh",
    lambda r: _w(r, 11, _ALNUM),
    ("阿里云盘 分享 https://www.alipan.com/s/{s} 提取码 {code}",),
    zh=True,
    code=lambda r: _w(r, 4, _LOWNUM),
)
_add("online banking password en", _pw, ("HSBC online banking password {s}", "bank login: {user} / {s}"), user=_local)
_add(
    "screen time passcode en",
    lambda r: _pin(r, 4),
    ("Screen Time passcode on the kids' iPad: {s}", "parental controls code {s}"),
)
_add(
    "school pickup code zh",
    lambda r: r.choice(_PY) + _pin(r, 3),
    ("接孩子的暗号：{s}（告诉过老师）", "幼儿园接送口令 {s}"),
    zh=True,
)
_add("iban de", lambda r: _iban(r, "DE"), ("IBAN for the rent: {s}", "Überweisung an {s}"))
_add("iban gb en", lambda r: _iban(r, "GB"), ("UK account IBAN {s}", "send the deposit to {s}"))
_add("iban fr zh", lambda r: _iban(r, "FR"), ("姐姐在法国的账户 IBAN：{s}", "法国房东的 IBAN {s}"), zh=True)
_add("iban nl en", lambda r: _iban(r, "NL"), ("Dutch IBAN: {s}", "refund goes to {s}"))
_add("iban other zh", _iban, ("海外收款账户 IBAN {s}", "给代购转账用的 IBAN：{s}"), zh=True)
_add("us ssn", _ssn, ("SSN {s}", "social security number: {s}"))
_add("uk ni number", _nino, ("NI number {s}", "National Insurance: {s}"))
_add("hk id zh", _hkid, ("香港身份证 {s}", "表妹的香港身份证号码：{s}"), zh=True)
_add("taiwan id zh", _twid, ("台湾身份证字号 {s}", "姑父的身分证号 {s}"), zh=True)
_add("singapore nric", _nric, ("NRIC {s}", "Singapore IC: {s}"))
_add("japan my number", _my_number, ("My Number (個人番号): {s}", "マイナンバー {s}"))


@_kind("family yaml zh", zh=True)
def k_family_yaml(r: random.Random) -> tuple[str, str]:
    s = _cn_id(r)
    t = f'family:\n  - name: {_adult_name(r)}\n    role: 爸爸\n    id_card: "{s}"\n    phone: {_cn_mobile_digits(r)}'
    return s, t


@_kind("passport json en")
def k_passport_json(r: random.Random) -> tuple[str, str]:
    s = _passport_cn(r)
    y, m, d = _ymd(r, 1975, 1995)
    return s, json.dumps({"name": _en_name(r), "passport": s, "dob": f"{y}-{m:02d}-{d:02d}"}, ensure_ascii=False)


_add("bank card corner quotes zh", _debit, ("卡号「{s}」", "转账到这张卡『{s}』"), zh=True)
_add("pin in parens zh", lambda r: _pin(r, 6), ("建行卡（密码 {s}）", "老人机（解锁码 {s}）"), zh=True)
_add(
    "card number voice zh",
    lambda r: _spaced(_luhn(r, r.choice(("622202", "622848")), 19)),
    ("（语音）卡号 {s}", "银行卡一位一位念：{s}"),
    zh=True,
)
_add(
    "credit card markdown table zh",
    _credit,
    ("| 卡 | 卡号 | 有效期 |\n|---|---|---|\n| 招行 Visa | {s} | {mm}/{yy} |",),
    zh=True,
    mm=lambda r: f"{r.randint(1, 12):02d}",
    yy=lambda r: str(r.randint(27, 31)),
)
_add(
    "parent phone value before label zh",
    _cn_mobile,
    ("{s} 是我爸的手机号", "{s} ← 小区物业经理（私人号）"),
    zh=True,
)
_add(
    "id number value before label en",
    _cn_id,
    ("{s} is my wife's resident ID, needed for the hotel",),
)
_add(
    "chinese numeral password zh",
    lambda r: "".join(r.choice(_ZH_DIG) for _ in range(r.randint(6, 8))),
    ("保险箱密码 {s}（大写数字记的）", "密码是 {s} ，我用中文写的防偷看"),
    zh=True,
)
_add(
    "wechat family chat zh",
    _pw,
    (
        "[{day} {hm}] 老婆: 爱奇艺会员密码多少\n[{hm}] 我: {s}\n[{hm}] 老婆: 好",
        "[{hm}] 妈: 儿子，电视的开机密码？\n[{hm}] 我: {s}",
    ),
    zh=True,
    day=_day,
    hm=_hm,
)

CHINESE: frozenset[str] = frozenset(_ZH)

# ===============================================================================================================
# markers
# ===============================================================================================================

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"【私密】{t}",
    lambda t: f"{t}（仅自己可见）",
    lambda t: f"(不要公开) {t}",
    lambda t: f"🔒 {t}",
    lambda t: f"{t} — keep this between us",
    lambda t: f"PRIVATE NOTE: {t}",
    lambda t: f"<!-- private -->\n{t}",
    lambda t: f"{t} #私人",
    lambda t: f"{t} #nopublish",
    lambda t: f"[do not publish] {t}",
    lambda t: f"{t} (off the record)",
    lambda t: f"私事，勿外传：{t}",
    lambda t: f"> [!private]\n> {t}",
    lambda t: f"{t}\n\n（以上内容不要同步到 wiki）",
    lambda t: f"[仅家人可见] {t}",
    lambda t: f"Confidential — {t}",
    lambda t: f"{t} [personal, not for the wiki]",
    lambda t: f"隐私：{t}",
    lambda t: f"[保密] {t}",
    lambda t: f"::: private\n{t}\n:::",
    lambda t: f"{t} 🤫 别公开",
    lambda t: f"not for publication: {t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"visibility": "private"},
    {"public": False},
    {"publish": False},
    {"tags": ["private", "family"]},
    {"access": "owner-only"},
    {"隐私": True},
    {"可见范围": "仅自己"},
    {"sensitivity": "confidential"},
    {"share": False},
    {"audience": "me"},
    {"classification": "restricted"},
    {"status": "private"},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "## 私密",
    "## 不公开",
    "## Off the record",
    "### Just between us",
    "## Confidential",
    "## 家庭隐私（不公开）",
    "## Personal — do not publish",
    "## 仅自己可见",
]

# ===============================================================================================================
# ordinary strings: no secrets, must be published unchanged
# ===============================================================================================================

ORDINARY: list[str] = [
    # versions, images, packages
    "Proxmox VE 8.2.4",
    "TrueNAS SCALE 24.04.2 (Dragonfish)",
    "OPNsense 24.7.9",
    "pfSense CE 2.7.2",
    "UniFi Network Application 8.4.62",
    "portainer/portainer-ce:2.21.4",
    "gitea/gitea:1.22.3-rootless",
    "goharbor/harbor-core:v2.11.1",
    "vaultwarden/server:1.32.5",
    "quay.io/keycloak/keycloak:26.0.5",
    "ghcr.io/goauthentik/server:2024.10.4",
    "jc21/nginx-proxy-manager:2.12.1",
    "traefik:v3.2.1",
    "restic 0.17.3 compiled with go1.23.3 on linux/amd64",
    "borg 1.4.0",
    "supabase/postgres:15.6.1.139",
    "v1.29.10+k3s1",
    "linux-image-6.8.0-49-generic",
    "Ubuntu 24.04.1 LTS (Noble Numbat)",
    "Debian 12.8 bookworm",
    "go1.23.4 linux/arm64",
    "node v22.11.0 (LTS Jod)",
    "OpenSSH_9.6p1 Ubuntu-3ubuntu13.5",
    "nginx/1.27.3",
    "PostgreSQL 16.6 on x86_64-pc-linux-gnu",
    "MariaDB 11.4.4",
    "semver 2.0.0-rc.1+build.5",
    "pkg:pypi/requests@2.32.3",
    "requests==2.32.3",
    "Elastic Cloud deployment version 8.15.3",
    # hashes and ids of public things
    "sha256 of the empty string is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "md5 of the empty string: d41d8cd98f00b204e9800998ecf8427e",
    "git revert 7c2e9f41b8d05a3e6f1c4b9d2a7e8f30c5b1d6a4",
    "Docker image ID 3f57d9401f8d",
    "UUID namespace DNS 6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    "UUID namespace URL 6ba7b811-9dad-11d1-80b4-00c04fd430c8",
    "nil UUID 00000000-0000-0000-0000-000000000000",
    "EFI System Partition GUID C12A7328-F81F-11D2-BA4B-00A0C93EC93B",
    "Linux root (x86-64) partition type 4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709",
    "Microsoft basic data partition EBD0A0A2-B9E5-4433-87C0-68B6B72699C7",
    "Linux LVM partition type E6D6D379-F507-44C2-A23C-238F2A3DF928",
    "ISRG Root X1 SHA-256 fingerprint "
    "96:BC:EC:06:26:49:76:F3:74:60:77:9A:CF:28:C5:A7:CF:E8:A3:C0:AA:E1:1A:8F:FD:EE:05:C0:BD:DF:08:C6",
    "CVE-2024-3094 (xz-utils backdoor)",
    "CVE-2021-44228",
    "GHSA-jfh8-c2jp-5v3q",
    "RUSTSEC-2023-0071",
    "ISBN 978-7-115-54608-1",
    "ISBN 978-1-4920-5630-0",
    "AKIAIOSFODNN7EXAMPLE is the access key id used in the AWS documentation examples",
    # docs urls
    "https://docs.docker.com/compose/how-tos/use-secrets/",
    "https://pve.proxmox.com/wiki/Proxmox_VE_API",
    "https://restic.readthedocs.io/en/stable/030_preparing_a_new_repo.html",
    "https://borgbackup.readthedocs.io/en/stable/quickstart.html",
    "https://letsencrypt.org/docs/rate-limits/",
    "https://developers.cloudflare.com/r2/api/s3/tokens/",
    "https://www.backblaze.com/docs/cloud-storage-application-keys",
    "https://github.com/acmesh-official/acme.sh/wiki/dnsapi",
    "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/managing-your-personal-access-tokens",
    "https://events.pagerduty.com/v2/enqueue",
    "https://open.taobao.com/api.htm?docId=285&docType=2",
    "https://open.pinduoduo.com/application/document/api?id=pdd.order.list.get",
    "https://op.jinritemai.com/docs/guide-docs/10/23",
    "https://doc.youzanyun.com/",
    "https://openweb.jushuitan.com/doc",
    "https://api.kuaidi100.com/document/",
    "https://www.kuaidi100.com/all/sf.shtml",
    "https://pay.weixin.qq.com/doc/v3/merchant/4012062524",
    "https://etax.chinatax.gov.cn/",
    "https://letsencrypt.org/certificates/",
    # config option names and policy statements
    "smtp_sasl_password_maps = hash:/etc/postfix/sasl_passwd",
    "postmap /etc/postfix/sasl_passwd",
    "smtp_sasl_auth_enable = yes",
    "smtp_tls_security_level = encrypt",
    "auth_mechanisms = plain login",
    "doveadm pw -s SHA512-CRYPT",
    "PasswordAuthentication no",
    "PermitRootLogin prohibit-password",
    "KbdInteractiveAuthentication no",
    "auth_basic_user_file /etc/nginx/.htpasswd;",
    "traefik.http.middlewares.auth.basicauth.usersfile=/etc/traefik/users",
    "token_endpoint_auth_method: client_secret_basic",
    "grant_type=client_credentials",
    "OAuth 2.0 PKCE uses code_verifier and code_challenge (S256)",
    "pam_pwquality: minlen=12 dcredit=-1 ucredit=-1",
    "PASSWORD_MIN_LENGTH=12",
    "ADMIN_TOKEN is optional; leaving it unset disables the admin page",
    "KC_BOOTSTRAP_ADMIN_USERNAME replaces KEYCLOAK_ADMIN in Keycloak 26",
    "AUTHENTIK_SECRET_KEY must be at least 50 characters long",
    "export RESTIC_PASSWORD_FILE=/run/secrets/restic",
    "BORG_PASSCOMMAND=cat /root/.borg-pass",
    "POSTGRES_PASSWORD_FILE=/run/secrets/pg_password",
    "env var names: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN",
    "PAGERDUTY_ROUTING_KEY is read from the environment",
    "Sentry SDK option traces_sample_rate=0.2",
    "New Relic license keys are 40 characters and end in NRAL",
    "Rotate API keys every 90 days",
    "The token field accepts 40 hex characters",
    "Set SECRET_KEY from the environment, never from git",
    "password hash algorithm: argon2id (m=65536, t=3, p=4)",
    "bcrypt cost factor 12",
    "PBKDF2-HMAC-SHA256 with 600000 iterations",
    "AES-256-GCM with a 96-bit nonce",
    "RSA public exponent 65537",
    "Ed25519 public keys are 32 bytes",
    "TOTP period 30 s, 6 digits, SHA1 (RFC 6238)",
    "otpauth://totp/LABEL?secret=BASE32SECRET&issuer=NAME is the URI format",
    "WIFI:T:WPA;S:SSID;P:PASSWORD;; is the QR payload format",
    "PCI DSS forbids storing the CVV after authorization",
    "SIM PIN is blocked after 3 wrong attempts; use the PUK",
    "PIN entry uses pinentry-curses",
    "The default PIN of the YubiKey PIV applet is documented as 123456",
    "ZeroSSL requires External Account Binding (EAB) credentials",
    "OPNsense API key and secret are sent as HTTP basic auth",
    "Luhn checksum (mod 10) validates card numbers",
    "ISO 13616 IBAN check digits use ISO 7064 MOD 97-10",
    "X-Api-Key header name is case-insensitive",
    "Set-Cookie: SameSite=Lax; Secure; HttpOnly",
    "max-age=31536000; includeSubDomains; preload",
    # commands with placeholders
    "curl -u admin:$PASSWORD https://api.example.com/health",
    "docker login -u robot -p <token> registry.example.com",
    "Authorization: Bearer <token>",
    "kubectl -n argocd get secret argocd-initial-admin-secret",
    "restic -r b2:bucket-name:/repo init",
    "acme.sh issue with dns_cf or dns_ali as the DNS hook",
    "certbot certonly -d example.org",
    "openssl rand -base64 32",
    "wg genkey | wg pubkey",
    "age-keygen -o key.txt",
    "ssh-keygen -t ed25519 -C laptop",
    "vault operator init -key-shares=5 -key-threshold=3",
    "zfs set compression=zstd tank/photos",
    "zpool status -x",
    "smartctl -a /dev/sda",
    "systemctl status restic-backup.timer",
    "showmount -e",
    "vercel env pull .env.local",
    "flyctl secrets list",
    "heroku config:get DATABASE_URL",
    "doctl compute droplet list",
    "b2 sync /srv/backup b2://family-archive",
    # error codes and log shapes with no secret
    "HTTP 401 Unauthorized: invalid token",
    "Error 0x80070005 (E_ACCESSDENIED)",
    "ERR_SSL_PROTOCOL_ERROR",
    "ORA-01017: invalid username/password; logon denied",
    "sshd: Failed password for invalid user admin from 203.0.113.45 port 52144 ssh2",
    "Permission denied (publickey,password).",
    # ports and public ranges
    "Ports: 22, 80, 443, 8006 (Proxmox), 8007 (PBS), 9443 (Portainer)",
    "TCP 3260 is iSCSI, 2049 is NFS, 445 is SMB",
    "192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24 are documentation ranges",
    "IPv6 documentation prefix 2001:db8::/32",
    "Cloudflare DNS 1.1.1.1 and 1.0.0.1",
    "AliDNS 223.5.5.5 and 223.6.6.6",
    "DNSPod public DNS 119.29.29.29",
    "Grafana Cloud stack region prod-eu-west-2",
    "Wasabi endpoint s3.ap-northeast-1.wasabisys.com",
    "vm.max_map_count=262144",
    # Chinese
    "密码至少 12 位，包含大小写字母和数字",
    "支付密码不要和银行卡密码相同",
    "验证码 5 分钟内有效，请勿泄露给他人",
    "网银 U盾 用完要及时拔出",
    "身份证号码由 18 位组成，最后一位是校验码，可能是 X",
    "公民身份号码校验码算法见 GB 11643-1999",
    "银行卡号一般为 16 到 19 位，校验使用 Luhn 算法",
    "IBAN 校验位采用 ISO 7064 MOD 97-10",
    "淘宝订单号是 19 位数字，拼多多订单号带日期前缀",
    "顺丰运单号以 SF 开头，后面跟 13 位数字",
    "有赞云 API 调用前需要先获取 access_token",
    "淘宝开放平台的 appkey 和 appsecret 在 控制台 → 应用管理 里查看",
    "抖店的 app_secret 只在创建应用时展示一次，要马上保存",
    "旺店通 旗舰版 和 企业版 的接口地址不同",
    "发票抬头分个人和单位，单位需要填写纳税人识别号",
    "小规模纳税人 增值税征收率 1%",
    "对公账户转账需要 U盾 或 动态口令卡",
    "收款码要贴在收银台显眼处",
    "微信支付 APIv3 使用 AEAD_AES_256_GCM 解密回调",
    "支付宝开放平台支持 RSA2（SHA256WithRSA）签名",
    "错误码 40001：access_token 无效或已过期",
    "错误码 E1003：签名校验失败",
    "NAS 用的是 群晖 DS923+",
    "家里的路由器型号是 Redmi AX6000",
    "Proxmox 备份服务器默认端口 8007",
    "TrueNAS 的存储池叫 tank，数据集按用途划分",
    "OPNsense 防火墙规则：默认拒绝入站",
    "Vaultwarden 是 Bitwarden 服务端的 Rust 实现",
    "Keycloak 的 realm 名称用小写",
    "证书每 60 天由 acme.sh 自动续期",
    "Let's Encrypt 证书有效期 90 天",
    "备份遵循 3-2-1 原则：3 份副本、2 种介质、1 份异地",
    "restic 仓库密码丢了就无法恢复，务必离线保存",
    "不要把 token 写进 git 仓库",
    "API 密钥泄露后要立刻吊销并重新生成",
    "两步验证请使用 TOTP，不要用短信",
    "口令应定期更换，但不要只改最后一位数字",
    "医保电子凭证可以在国家医保服务平台 App 里激活",
    "港澳通行证签注分为团队旅游和个人旅游",
    "护照有效期不足 6 个月的，建议提前换发",
    "户口本首页和本人页都要复印",
    "信用卡的 CVV 是背面的三位数字，千万不要告诉别人",
    "门禁卡丢失后去物业挂失，补卡费 20 元",
    "新能源车牌是 8 位，燃油车牌是 7 位",
    "文档示例地址用 192.0.2.0/24，不要用真实 IP",
    "端口列表：80、443、8080、8443、9000、9443",
    "环境变量 MYSQL_ROOT_PASSWORD 必须设置，否则容器无法启动",
    "把 $PASSWORD 换成你自己的密码再执行",
    "PIN 码输错 3 次 SIM 卡会被锁",
    "U盾的 PIN 码忘了要带身份证去柜台重置",
    "邮箱格式示例 user@example.com",
    "Git 提交 a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 修复了登录页",
    "ISBN 978-7-121-41823-5",
    "ISBN 978-7-302-58112-3",
    "《密码法》自 2020 年 1 月 1 日起施行",
    "版本号 v2.11.1-rc.3",
    "配置项 password_reset_timeout 默认 3 天",
    "拼多多商家后台登录地址 https://mms.pinduoduo.com/",
    "抖店后台地址 https://fxg.jinritemai.com/",
    "千牛工作台 版本 9.8.125",
    "电子面单模板尺寸 76×130 mm",
    "微信支付商户号是 10 位数字",
    "增值税专用发票需要填写开户行及账号",
    "统一社会信用代码共 18 位，最后一位是校验码",
    "聚水潭开放平台签名算法：对参数排序后拼接 app_secret 再取 MD5",
    "港澳通行证成人有效期 10 年",
    "学籍号以 G 开头，后接身份证号",
    "医保个人账户余额可以家庭共济",
    "Proxmox 集群至少 3 个节点才能做 HA",
    "ZFS 的 ARC 默认最多占用一半内存",
    "Traefik 的 basic auth 写进 compose 时 $ 要写成 $$",
    "acme.sh 默认 CA 已改为 ZeroSSL",
    "Sentry 的 DSN 可以放在前端，但 auth token 不行",
    "Vaultwarden 的 ADMIN_TOKEN 建议用 argon2 哈希而不是明文",
    "家里网络分 VLAN：10 管理、20 IoT、30 访客",
    "备份任务每天凌晨 3 点运行，保留 7 个日快照和 4 个周快照",
    "密钥长度 256 位，口令长度 20 个字符以上",
]
