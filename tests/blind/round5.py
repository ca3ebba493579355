"""Round 5 of the blind canary sets, written without looking at the gate (format: tests/blind/example_set.py).

Written from the users' side: people who keep notes with an AI agent (hermes-agent, MemPalace), in English and
Chinese, developers and not. Secrets sit in prose, chat messages, SMS, copied e-mails, voice dictation without
punctuation, config files (.env, YAML, TOML, INI, JSON), shell commands, logs, Markdown tables and lists, code in
several languages, URLs and tool-call arguments; some have little or no context at all.

- KINDS: kind -> function(rng) -> (secret, text carrying it); the secret must not reach the site.
- CHINESE: the kinds phrased in Chinese.
- TEXT_MARKERS: ways to mark one note private inline.
- FRONTMATTER_MARKERS: frontmatter entries that mark a wiki page private.
- PERSONA_PRIVATE_HEADINGS: headings that open a private section of SOUL.md.
- ORDINARY: technical and everyday strings that are no secrets and must be published unchanged.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALPHA = string.ascii_letters
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
URLSAFE = ALNUM + "-_"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

WORDS = [
    "maple",
    "falcon",
    "copper",
    "lantern",
    "orbit",
    "velvet",
    "harbor",
    "pepper",
    "cobalt",
    "meadow",
    "thunder",
    "saffron",
    "glacier",
    "pixel",
    "walnut",
    "ember",
    "quartz",
    "tundra",
    "willow",
    "biscuit",
    "marble",
    "comet",
]
PINYIN = ["zhangwei", "liuyang", "wangfang", "chenjing", "xiaoming", "lihua", "zhaolei", "sunli", "huangyu"]
FIRST = ["emma", "liam", "olivia", "noah", "ava", "lucas", "mia", "jonas", "sofia", "ethan", "chloe", "mateo"]
LAST = ["walker", "becker", "martin", "nguyen", "okafor", "silva", "novak", "larsen", "dubois", "kowalski"]

# BIP-39 words (English list, from its start and its end) and the first words of the simplified Chinese list.
BIP39 = (
    "abandon ability able about above absent absorb abstract absurd abuse access accident account accuse achieve "
    "acid acoustic acquire across act action actor actress actual adapt add addict address adjust admit adult "
    "advance advice aerobic affair afford afraid again age agent agree ahead aim air airport aisle alarm album "
    "alcohol alert alien all alley allow almost alone alpha already also alter always amateur amazing among amount "
    "anchor ancient anger angle angry animal ankle announce annual another answer antenna antique anxiety apart "
    "apple april arch arctic area arena argue armor army around arrange arrest arrive arrow artist artwork "
    "yard year yellow you young youth zebra zero zone zoo"
).split()
BIP39_ZH = (
    "的 一 是 在 不 了 有 和 人 这 中 大 为 上 个 国 我 以 要 他 时 来 用 们 生 到 "
    "作 地 于 出 就 分 对 成 会 可 主 发 年 动 同 工 也 能 下 过 子 说 产 种 面 而 "
    "方 后 多 定 行 学 法 所 民 得"
).split()

KINDS: dict[str, Callable[[random.Random], tuple[str, str]]] = {}
_chinese: set[str] = set()


def kind(name: str, chinese: bool = False) -> Callable:
    def register(function: Callable[[random.Random], tuple[str, str]]) -> Callable:
        KINDS[name] = function
        if chinese:
            _chinese.add(name)
        return function

    return register


# ---------------------------------------------------------------------------------------------------- helpers


def _w(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _d(r: random.Random, n: int) -> str:
    """n digits, the first not zero."""
    return str(r.randint(1, 9)) + _w(r, n - 1, DIGITS)


def _pw(r: random.Random, url_safe: bool = False) -> str:
    sym = "-_." if url_safe else "!@#$%^&*-_"
    pattern = r.randrange(4)
    if pattern == 0:
        return r.choice(WORDS).capitalize() + _w(r, 4, DIGITS) + r.choice(sym) + _w(r, 3, ALPHA)
    if pattern == 1:
        return _w(r, 16)
    if pattern == 2:
        return r.choice(PINYIN) + _w(r, 2, UPPER) + r.choice(sym) + _w(r, 4, DIGITS)
    return _w(r, 6, LOWER) + r.choice(sym) + _w(r, 6) + r.choice(sym)


def _b64(r: random.Random, n: int, url: bool = False) -> str:
    raw = bytes(r.getrandbits(8) for _ in range(n))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=") if url else base64.b64encode(raw).decode()


def _b64u(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def _jwt(r: random.Random) -> str:
    header = _b64u({"alg": "HS256", "typ": "JWT"})
    payload = _b64u({"sub": _d(r, 10), "name": r.choice(FIRST).title(), "iat": r.randint(1_600_000_000, 1_750_000_000)})
    return f"{header}.{payload}.{_b64(r, 32, url=True)}"


def _uuid(r: random.Random) -> str:
    h = _w(r, 32, HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{r.choice('89ab')}{h[17:20]}-{h[20:]}"


def _luhn(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        n = int(ch)
        if i % 2 == 0:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return body + str((10 - total % 10) % 10)


def _card(r: random.Random, prefix: str, length: int) -> str:
    return _luhn(prefix + _w(r, length - len(prefix) - 1, DIGITS))


def _group(s: str, n: int = 4, sep: str = " ") -> str:
    return sep.join(s[i : i + n] for i in range(0, len(s), n))


def _iban(country: str, bban: str) -> str:
    number = int("".join(str(int(c, 36)) for c in bban + country + "00"))
    return f"{country}{98 - number % 97:02d}{bban}"


_CN_AREAS = ["110105", "110108", "310104", "310115", "440305", "440106", "330106", "320102", "510107", "420111"]


def _cn_id(r: random.Random) -> str:
    body = f"{r.choice(_CN_AREAS)}{r.randint(1955, 2004)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    body += f"{r.randint(0, 999):03d}"
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    return body + "10X98765432"[sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11]


def _cn_mobile(r: random.Random) -> str:
    prefixes = ["138", "139", "186", "150", "152", "177", "188", "135", "199", "158", "181", "133", "166"]
    return r.choice(prefixes) + _w(r, 8, DIGITS)


def _hkid(r: random.Random) -> str:
    letter, digits = r.choice(UPPER), _w(r, 6, DIGITS)
    total = 36 * 9 + (ord(letter) - 55) * 8 + sum(int(c) * w for c, w in zip(digits, range(7, 1, -1), strict=True))
    check = (11 - total % 11) % 11
    return f"{letter}{digits}({'A' if check == 10 else check})"


_TW = dict(zip("ABCDEFGHJKLMNPQRSTUVXYWZIO", range(10, 36), strict=True))


def _twid(r: random.Random) -> str:
    letter = r.choice("ABCDEFGHJKLMNPQRSTUVXYWZ")
    n = _TW[letter]
    digits = r.choice("12") + _w(r, 7, DIGITS)
    total = n // 10 + (n % 10) * 9 + sum(int(c) * w for c, w in zip(digits, range(8, 0, -1), strict=True))
    return f"{letter}{digits}{(10 - total % 10) % 10}"


def _ssn(r: random.Random) -> str:
    area = r.choice([r.randint(1, 665), r.randint(667, 899)])
    return f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"


def _routing(r: random.Random) -> str:
    d = [r.randint(0, 1), r.randint(1, 9)] + [r.randint(0, 9) for _ in range(6)]
    partial = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5])
    return "".join(map(str, d)) + str((-partial) % 10)


def _cn_plate(r: random.Random, green: bool = False) -> str:
    province = r.choice("京沪粤浙苏川鄂湘鲁豫闽津渝陕")
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    if green:
        return f"{province}{r.choice(letters)}{r.choice('DF')}{_w(r, 5, DIGITS)}"
    return f"{province}{r.choice(letters)}·{_w(r, 5, letters + DIGITS)}"


def _email(r: random.Random) -> str:
    user = f"{r.choice(FIRST)}.{r.choice(LAST)}{r.randint(10, 99)}"
    return f"{user}@{r.choice(['gmail.com', 'outlook.com', 'proton.me', 'yahoo.co.uk', 'icloud.com', 'gmx.de'])}"


def _private_ip(r: random.Random) -> str:
    block = r.randrange(3)
    if block == 0:
        return f"192.168.{r.randint(0, 254)}.{r.randint(2, 254)}"
    if block == 1:
        return f"10.{r.randint(0, 254)}.{r.randint(0, 254)}.{r.randint(2, 254)}"
    return f"172.{r.randint(16, 31)}.{r.randint(0, 254)}.{r.randint(2, 254)}"


def _corp(r: random.Random) -> str:
    return r.choice(["northwind", "blueharbor", "kestrel", "tianhe", "hengda-tech", "lumen", "oakridge"]) + _w(
        r, 2, DIGITS
    )


def _seed_words(r: random.Random, words: list[str], n: int = 12) -> str:
    return " ".join(r.choice(words) for _ in range(n))


def _zh_digits(number: str, one: str = "一") -> str:
    return "".join(("零" + one + "二三四五六七八九")[int(c)] for c in number)


# ---------------------------------------------------------------------------------------------------- English


@kind("openai key python fallback")
def _openai(r):
    s = "sk-proj-" + _w(r, 40, URLSAFE) + "T3BlbkFJ" + _w(r, 40, URLSAFE)
    return s, f'client = OpenAI(api_key=os.getenv("OPENAI_API_KEY") or "{s}")  # TODO move to vault'


@kind("anthropic key shell export")
def _anthropic(r):
    s = "sk-ant-api03-" + _w(r, 93, URLSAFE) + "AA"
    return s, f"export ANTHROPIC_API_KEY='{s}'\nhermes chat --model claude-sonnet"


@kind("github pat in remote url")
def _gh_remote(r):
    s = "ghp_" + _w(r, 36)
    user = r.choice(FIRST) + r.choice(LAST)
    return s, f"git remote set-url origin https://{user}:{s}@github.com/{user}/dotfiles.git"


@kind("gitlab token in curl header")
def _gitlab(r):
    s = "glpat-" + _w(r, 20, URLSAFE)
    return s, f'curl --silent --header "PRIVATE-TOKEN: {s}" "https://gitlab.com/api/v4/projects?owned=true"'


@kind("slack bot token yaml")
def _slack(r):
    s = f"xoxb-{_d(r, 12)}-{_d(r, 13)}-{_w(r, 24)}"
    return s, f'slack:\n  channel: "#ops-alerts"\n  bot_token: {s}\n  notify_on: [failure, recovery]\n'


@kind("stripe secret in dotenv")
def _stripe(r):
    s = "sk_live_" + _w(r, 24)
    return s, f"# billing\nSTRIPE_SECRET_KEY={s}\nSTRIPE_CURRENCY=eur\n"


@kind("aws secret access key credentials file")
def _aws(r):
    s = _w(r, 40, ALNUM + "/+")
    akid = "AKIA" + _w(r, 16, UPPER + DIGITS)
    return s, f"[default]\naws_access_key_id = {akid}\naws_secret_access_key = {s}\nregion = eu-west-1\n"


@kind("google api key in url")
def _google(r):
    s = "AIza" + _w(r, 35, URLSAFE)
    url = f"https://maps.googleapis.com/maps/api/staticmap?center=Lisbon&zoom=12&size=600x300&key={s}"
    return s, f"the map embed works now: {url}"


@kind("sendgrid key json config")
def _sendgrid(r):
    s = "SG." + _w(r, 22, URLSAFE) + "." + _w(r, 43, URLSAFE)
    config = {"mailer": {"provider": "sendgrid", "apiKey": s, "from": "noreply@example.org", "retries": 3}}
    return s, json.dumps(config, indent=2)


@kind("huggingface token cli")
def _hf(r):
    s = "hf_" + _w(r, 34, ALPHA)
    return s, f"$ huggingface-cli login --token {s} --add-to-git-credential\nLogin successful"


@kind("npmrc auth token")
def _npm(r):
    s = "npm_" + _w(r, 36)
    return s, f"//registry.npmjs.org/:_authToken={s}\nalways-auth=true\n"


@kind("telegram bot token chat")
def _telegram_bot(r):
    s = f"{_d(r, 10)}:AA{_w(r, 33, URLSAFE)}"
    return s, f"BotFather gave me this for the reminder bot: {s} — hook it up tonight"


@kind("invented provider key toml")
def _zephyrix(r):
    s = "zpx_live_" + _w(r, 30, LOWER + DIGITS)
    return s, f'[providers.zephyrix]\nendpoint = "https://api.zephyrix.io/v2"\napi_key = "{s}"\ntimeout = 30\n'


@kind("obscure provider bare hex key in prose")
def _larkspur(r):
    s = _w(r, 32, HEX)
    return s, f"Larkspur Weather finally approved my account. Key {s}. Free tier is 500 calls/day."


@kind("bearer token in tool call arguments")
def _toolcall(r):
    s = "fbk." + _b64(r, 30, url=True)
    call = {
        "tool": "http_request",
        "arguments": {
            "method": "GET",
            "url": "https://api.fernbank.app/v1/accounts",
            "headers": {"Authorization": f"Bearer {s}", "Accept": "application/json"},
        },
    }
    return s, json.dumps(call)


@kind("postgres password in docker compose")
def _pg(r):
    s = _pw(r, url_safe=True)
    return s, (
        "services:\n  app:\n    image: ghcr.io/acme/inventory:1.8\n    environment:\n"
        f"      DATABASE_URL: postgres://app:{s}@db:5432/inventory\n"
    )


@kind("mongodb srv password in javascript")
def _mongo(r):
    s = _pw(r, url_safe=True)
    user = r.choice(FIRST)
    cluster = _w(r, 5, LOWER + DIGITS)
    return (
        s,
        f"const uri = `mongodb+srv://{user}:{s}@cluster0.{cluster}.mongodb.net/notes?retryWrites=true&w=majority`;",
    )


@kind("redis password in log line")
def _redis_log(r):
    s = _pw(r, url_safe=True)
    return s, (
        f"2024-11-03 22:14:07,512 WARNING celery.worker: retrying broker connection "
        f"redis://:{s}@redis-cache:6379/0 (attempt 3/10)"
    )


@kind("amqp password in ini")
def _amqp(r):
    s = _pw(r, url_safe=True)
    return s, f"[broker]\nurl = amqp://notes:{s}@rabbit:5672/%2F\nprefetch = 8\n"


@kind("mysql password on command line")
def _mysql_cli(r):
    s = _pw(r)
    return s, f"mysql -h db-replica -u root -p'{s}' shop < dump-2024-09-01.sql"


@kind("jdbc url password in properties")
def _jdbc(r):
    s = _pw(r, url_safe=True)
    return s, f"spring.datasource.url=jdbc:postgresql://pg-main:5432/orders?user=orders_rw&password={s}&sslmode=require"


@kind("openssh private key body")
def _ssh_key(r):
    raw = b"openssh-key-v1\x00" + bytes(r.getrandbits(8) for _ in range(360))
    body = base64.b64encode(raw).decode()
    s = "\n".join(body[i : i + 70] for i in range(0, len(body), 70))
    return s, f"-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----\n"


@kind("sshpass command")
def _sshpass(r):
    s = _pw(r)
    return s, f"sshpass -p '{s}' ssh -o StrictHostKeyChecking=no pi@raspberrypi 'sudo reboot'"


@kind("wireguard private key")
def _wireguard(r):
    s = _b64(r, 32)
    pub = _b64(r, 32)
    return s, (
        f"[Interface]\nPrivateKey = {s}\nAddress = 10.8.0.2/24\nDNS = 1.1.1.1\n\n"
        f"[Peer]\nPublicKey = {pub}\nEndpoint = vpn.example.net:51820\nAllowedIPs = 0.0.0.0/0\n"
    )


@kind("wpa supplicant psk")
def _wpa(r):
    s = r.choice(WORDS) + _w(r, 4, DIGITS) + r.choice(WORDS).capitalize() + r.choice("!?#")
    return s, f'network={{\n    ssid="Cottage-5G"\n    psk="{s}"\n    key_mgmt=WPA-PSK\n}}'


@kind("wifi qr string")
def _wifi_qr(r):
    s = _pw(r)
    return s, f"printed the guest QR from WIFI:T:WPA;S:Lakehouse;P:{s};; and stuck it on the fridge"


@kind("otpauth uri secret")
def _otpauth(r):
    s = _w(r, 32, B32)
    return s, f"otpauth://totp/Fastmail:home?secret={s}&issuer=Fastmail&algorithm=SHA1&digits=6&period=30"


@kind("totp setup key grouped lowercase")
def _totp_grouped(r):
    s = " ".join(_w(r, 4, B32.lower()) for _ in range(8))
    return s, f"setup key for the work google account is {s} in case I lose my phone again"


@kind("recovery codes list")
def _recovery(r):
    codes = [f"{_w(r, 5, LOWER + DIGITS)}-{_w(r, 5, LOWER + DIGITS)}" for _ in range(8)]
    s = codes[r.randrange(8)]
    return s, "GitHub recovery codes (printed copy in the drawer):\n" + "\n".join(f"- {c}" for c in codes)


@kind("apple app-specific password")
def _apple_asp(r):
    s = "-".join(_w(r, 4, LOWER) for _ in range(4))
    return s, f"Thunderbird needs an app-specific password for iCloud mail ({s}), the normal one fails."


@kind("gmail app password msmtprc")
def _gmail_app(r):
    s = " ".join(_w(r, 4, LOWER) for _ in range(4))
    return s, f'account gmail\nhost smtp.gmail.com\nport 587\nauth on\nuser notes.bot\npassword "{s}"\n'


@kind("storage unit gate keypad code")
def _gate(r):
    s = _w(r, 8, DIGITS)
    return s, f"Gate keypad at the storage unit: {s}, then press the bell icon. Unit is 214, second floor."


@kind("sim puk code")
def _puk(r):
    s = _w(r, 8, DIGITS)
    return s, f"PUK for the spare SIM is {s} (the PIN got locked last time)"


@kind("debit pin voice dictation")
def _pin_dictation(r):
    s = " ".join(_w(r, 1, DIGITS) for _ in range(6))
    return s, f"remind me the new debit card pin is {s} dont forget to change it at the atm next week"


@kind("bare jwt")
def _bare_jwt(r):
    s = _jwt(r)
    return s, s


@kind("bare random token in backticks")
def _bare_token(r):
    s = _w(r, 40)
    return s, f"`{s}`"


@kind("base64 password in kubernetes secret")
def _k8s_secret(r):
    s = base64.b64encode(_pw(r).encode()).decode()
    return s, (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\ntype: Opaque\n"
        f"data:\n  username: cG9zdGdyZXM=\n  password: {s}\n"
    )


@kind("token wrapped over two lines")
def _wrapped(r):
    full = "sk-" + _w(r, 48)
    cut = r.randint(20, 30)
    s = full[:cut] + "\n" + full[cut:]
    return s, f"the key wrapped in the terminal, here it is:\n{s}\n(join the two lines when pasting)"


@kind("token split across string concatenation")
def _concat(r):
    head = "rk_live_" + _w(r, 12)
    s = _w(r, 28)
    return s, f'const key = "{head}" +\n  "{s}";\nfetch(url, {{ headers: {{ "X-Api-Key": key }} }});'


@kind("us phone number")
def _us_phone(r):
    area = r.choice(["312", "415", "617", "212", "206", "512"])
    s = f"({area}) {r.randint(2, 9)}{_w(r, 2, DIGITS)}-{_w(r, 4, DIGITS)}"
    return s, f"Dentist moved, new number {s}; appointment Tue 9:30."


@kind("uk mobile number")
def _uk_phone(r):
    s = f"+44 7{_w(r, 3, DIGITS)} {_w(r, 6, DIGITS)}"
    return s, f"Call Priya on {s} if the keys aren't under the mat"


@kind("german mobile number")
def _de_phone(r):
    s = f"+49 15{r.choice('1279')} {_w(r, 8, DIGITS)}"
    return s, f"Landlord Mr Becker, mobile {s} (only between 9 and 18)"


@kind("french mobile number")
def _fr_phone(r):
    s = "+33 6 " + " ".join(_w(r, 2, DIGITS) for _ in range(4))
    return s, f"Airbnb host in Lyon: Camille, {s} (WhatsApp ok)."


@kind("japanese mobile number")
def _jp_phone(r):
    s = f"090-{_w(r, 4, DIGITS)}-{_w(r, 4, DIGITS)}"
    return s, f"Hotel concierge said to text Kenji at {s} for the onsen booking"


@kind("indian mobile number in brackets")
def _in_phone(r):
    s = f"+91 9{_w(r, 4, DIGITS)} {_w(r, 5, DIGITS)}"
    return s, f"[{s}] Ravi, the contractor for the kitchen"


@kind("australian mobile number")
def _au_phone(r):
    s = f"04{_w(r, 2, DIGITS)} {_w(r, 3, DIGITS)} {_w(r, 3, DIGITS)}"
    return s, f"MUM'S NEW MOBILE: {s}"


@kind("email in forwarded header")
def _email_header(r):
    s = _email(r)
    name = s.split("@")[0].split(".")[0].title()
    return s, (
        f"---------- Forwarded message ---------\nFrom: {name} <{s}>\nDate: Mon, 4 Mar 2024 at 09:12\n"
        "Subject: Re: lease renewal\n\nSee the attached draft."
    )


@kind("obfuscated email at dot")
def _email_obf(r):
    s = f"{r.choice(FIRST)}{_w(r, 3, DIGITS)} [at] {r.choice(['gmail', 'hotmail', 'posteo'])} [dot] com"
    return s, f"contact me: {s}"


@kind("email in markdown mailto")
def _email_md(r):
    s = _email(r)
    return s, f"- [Email Jonas](mailto:{s}) about the band rehearsal"


@kind("us social security number")
def _ssn_kind(r):
    s = _ssn(r)
    return s, f"W-9 form: SSN {s}, filing status single"


@kind("uk national insurance number")
def _nino(r):
    first = r.choice("ABCEGHJKLMNOPRSTWXYZ")
    second = r.choice("ABCEGHJKLMNPRSTWXYZ")
    s = f"{first}{second} {_w(r, 2, DIGITS)} {_w(r, 2, DIGITS)} {_w(r, 2, DIGITS)} {r.choice('ABCD')}"
    return s, f"HMRC letter asked for my NI number ({s}) again"


@kind("passport number yaml")
def _passport(r):
    s = r.choice(UPPER) + _w(r, 8, DIGITS)
    return s, f'traveller:\n  name: "A. Walker"\n  passport_number: "{s}"  # expires 2031\n  nationality: US\n'


@kind("german iban grouped")
def _iban_de(r):
    s = _group(_iban("DE", _w(r, 18, DIGITS)))
    return s, f"Please transfer the deposit to IBAN {s}, BIC COBADEFFXXX, reference: flat 3B"


@kind("uk iban in csv")
def _iban_gb(r):
    s = _iban("GB", "NWBK" + _w(r, 14, DIGITS))
    return s, f"payee,iban,amount\nLandlord,{s},950.00\nCouncil tax,,142.00\n"


@kind("dutch iban lowercase chat")
def _iban_nl(r):
    s = _iban("NL", r.choice(["INGB", "RABO", "ABNA"]) + _w(r, 10, DIGITS)).lower()
    return s, f"hey can u send the 40 euro for the concert to {s}? thx"


@kind("visa card with expiry")
def _visa(r):
    s = _group(_card(r, "4", 16))
    return s, f"card {s} exp 08/27 cvv {_w(r, 3, DIGITS)} — the one for subscriptions"


@kind("amex card number")
def _amex(r):
    n = _card(r, r.choice(["34", "37"]), 15)
    s = f"{n[:4]}-{n[4:10]}-{n[10:]}"
    return s, f"Amex: {s}"


@kind("us bank account with routing")
def _us_account(r):
    s = _d(r, r.randint(10, 12))
    return s, f"Direct deposit form: routing {_routing(r)}, checking account {s}."


@kind("us home address")
def _us_address(r):
    street = r.choice(["Elm Street", "Maple Avenue", "Oak Ridge Drive", "Pine Court", "Lakeview Road"])
    city = r.choice(["Springfield, IL", "Austin, TX", "Portland, OR", "Madison, WI"])
    s = f"{r.randint(100, 9899)} {street}, Apt {r.randint(1, 40)}{r.choice('ABCD')}, {city} {_d(r, 5)}"
    return s, f"Ship the replacement router to {s}."


@kind("uk home address")
def _uk_address(r):
    street = r.choice(["Mill Lane", "Victoria Road", "Church Street", "Park Avenue"])
    town = r.choice(["Leeds LS6", "Bristol BS7", "York YO10", "Oxford OX4"])
    inward = f"{r.randint(1, 9)}{_w(r, 2, 'ABDEFGHJLNPQRSTUWXYZ')}"
    s = f"Flat {r.randint(1, 12)}, {r.randint(2, 180)} {street}, {town} {inward}"
    return s, f"new address from Saturday:\n{s}\n(old one forwards mail until June)"


@kind("german home address")
def _de_address(r):
    street = r.choice(["Lindenstraße", "Goethestraße", "Am Mühlbach", "Schillerweg"])
    s = f"{street} {r.randint(1, 120)}{r.choice(['', 'a', 'b'])}, {_d(r, 5)} {r.choice(['Berlin', 'Köln', 'München'])}"
    return s, f"Neue Adresse (Oma): {s}"


@kind("uk licence plate")
def _uk_plate(r):
    letters = "ABCDEFGHJKLMNOPRSTUVWXYZ"
    s = f"{_w(r, 2, letters)}{r.randint(10, 74)} {_w(r, 3, letters)}"
    return s, f"Parking permit registered for {s}; renew in March."


@kind("german licence plate")
def _de_plate(r):
    s = f"{r.choice(['M', 'B', 'HH', 'K', 'F'])}-{_w(r, 2, UPPER)} {r.randint(100, 9999)}"
    return s, f"my car is the blue one ({s}) parked by the bakery"


@kind("date of birth english")
def _dob(r):
    month = r.choice(["January", "March", "May", "July", "September", "October", "December"])
    s = f"{month} {r.randint(1, 28)}, {r.randint(1950, 2005)}"
    return s, f"Name: Sam Okafor\nDOB: {s}\nBlood type: O+"


@kind("telegram handle")
def _tg_handle(r):
    s = "@" + r.choice(FIRST) + "_" + _w(r, 5, LOWER + DIGITS)
    return s, f"add me on telegram {s} for the climbing group"


@kind("bip39 seed phrase english")
def _seed_en(r):
    s = _seed_words(r, BIP39)
    return s, f"Ledger recovery phrase (copy to the steel plate, then delete this note):\n{s}"


@kind("ethereum private key in command")
def _eth(r):
    s = "0x" + _w(r, 64, HEX)
    return s, f"PRIVATE_KEY={s} npx hardhat run scripts/deploy.ts --network sepolia"


@kind("homelab host in ssh config")
def _ssh_config(r):
    s = f"{r.choice(['nas', 'pve', 'unraid', 'media', 'pihole'])}-{_w(r, 3, LOWER)}{r.randint(1, 9)}.home.lan"
    return s, f"Host nas\n    HostName {s}\n    User admin\n    Port 2222\n    IdentityFile ~/.ssh/id_ed25519\n"


@kind("private ip in nginx upstream")
def _nginx(r):
    s = f"192.168.{r.randint(0, 254)}.{r.randint(2, 254)}:{r.choice(['8080', '3000', '8123', '32400'])}"
    return s, f"upstream homeassistant {{\n    server {s};\n    keepalive 8;\n}}"


@kind("ec2 internal dns name in log")
def _ec2(r):
    region = r.choice(["eu-west-1", "us-east-2", "ap-southeast-1"])
    s = f"ip-10-{r.randint(0, 255)}-{r.randint(0, 255)}-{r.randint(1, 254)}.{region}.compute.internal"
    return s, f"[ERROR] worker-3 lost heartbeat from {s} after 30s; draining node"


@kind("kubernetes service url in env")
def _k8s_svc(r):
    s = f"http://{r.choice(['payments-api', 'ledger', 'auth-gw'])}-{_w(r, 4, LOWER)}.prod.svc.cluster.local:8443"
    return s, f"LEDGER_URL={s}"


@kind("corporate internal wiki url")
def _corp_wiki(r):
    s = f"https://wiki.{_corp(r)}.internal/display/ENG/On-call+runbook"
    return s, f"runbook lives at <{s}>, VPN needed"


@kind("tailscale magicdns host")
def _tailscale(r):
    s = f"{r.choice(['studio', 'mini', 'desk', 'backup'])}.tail{_w(r, 4, HEX)}.ts.net"
    return s, f"tailscale serve is up at https://{s}/ — the jellyfin library works from the phone"


@kind("ipv6 unique local address")
def _ula(r):
    s = f"fd{_w(r, 2, HEX)}:{_w(r, 4, HEX)}:{_w(r, 4, HEX)}::{_w(r, 2, HEX)}"
    return s, f"AdGuard listens on [{s}]:53 for the IoT VLAN"


@kind("azure storage account key")
def _azure(r):
    s = _b64(r, 64)
    return s, (
        f"DefaultEndpointsProtocol=https;AccountName=notesbackup{r.randint(1, 99)};AccountKey={s};"
        "EndpointSuffix=core.windows.net"
    )


@kind("basic auth header")
def _basic(r):
    s = base64.b64encode(f"{r.choice(FIRST)}:{_pw(r)}".encode()).decode()
    return s, f"> GET /api/v1/backup HTTP/1.1\n> Authorization: Basic {s}\n> User-Agent: curl/8.5.0"


@kind("netrc password")
def _netrc(r):
    s = _pw(r)
    return s, f"machine api.heroku.com\n  login deploy-bot\n  password {s}\n"


@kind("docker login password stdin")
def _docker_login(r):
    s = _pw(r)
    return s, f"echo '{s}' | docker login registry.gitlab.com -u deploy-bot --password-stdin"


@kind("kafka jaas password")
def _kafka(r):
    s = _pw(r)
    return s, (
        "sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="svc-events" password="{s}";'
    )


@kind("credentials in url to router")
def _router_url(r):
    s = _pw(r, url_safe=True)
    return s, f"curl -k https://admin:{s}@{_private_ip(r)}:8443/api/status"


@kind("diceware passphrase")
def _diceware(r):
    s = "-".join(r.choice(WORDS) for _ in range(5)) + str(r.randint(0, 9))
    return s, f"password manager master passphrase — not the hint, the real thing: {s}"


@kind("twilio auth token python")
def _twilio(r):
    s = _w(r, 32, HEX)
    return s, f'client = Client("AC{_w(r, 32, HEX)}", "{s}")\nclient.messages.create(to=to, from_=sender, body=msg)'


@kind("discord webhook url")
def _discord(r):
    s = _w(r, 68, URLSAFE)
    return s, f"webhook for #deploys: https://discord.com/api/webhooks/{_d(r, 18)}/{s}"


@kind("pypi token in pypirc")
def _pypi(r):
    s = "pypi-AgEIcHlwaS5vcmc" + _w(r, 120, URLSAFE)
    return s, f"[pypi]\n  username = __token__\n  password = {s}\n"


@kind("mailgun key php")
def _mailgun(r):
    s = "key-" + _w(r, 32, HEX)
    return s, f"<?php\n$mg = Mailgun::create('{s}');\n$mg->messages()->send('mg.example.org', $params);"


@kind("go dsn password")
def _go_dsn(r):
    s = _pw(r, url_safe=True)
    return s, f'db, err := sql.Open("mysql", "app:{s}@tcp(mysql-primary:3306)/shop?parseTime=true")'


@kind("rust const api key")
def _rust(r):
    s = "brx_" + _w(r, 32)
    return s, f'const API_KEY: &str = "{s}"; // Bramblex sandbox'


@kind("ansible become password inventory")
def _ansible(r):
    s = _pw(r)
    return s, f"[web]\nweb01 ansible_host=web01 ansible_user=deploy ansible_become_pass={s}\n"


@kind("windows net use password")
def _net_use(r):
    s = _pw(r)
    return s, f"net use Z: \\\\fileserver\\scans /user:CORP\\jdoe {s} /persistent:yes"


@kind("wifi password voice dictation english")
def _wifi_voice(r):
    s = r.choice(WORDS) + r.choice(WORDS) + str(r.randint(1950, 2020))
    return s, f"the wifi password at grandmas house is {s} all lowercase no spaces"


@kind("temporary password in copied email")
def _temp_pw_email(r):
    s = _pw(r)
    return s, (
        "Hi Tom,\n\nYour account has been created. Temporary password: "
        f"{s}\nPlease change it after your first login.\n\nIT Service Desk"
    )


@kind("powershell securestring")
def _powershell(r):
    s = _pw(r)
    return s, f'$pw = ConvertTo-SecureString "{s}" -AsPlainText -Force\nNew-LocalUser -Name "backup" -Password $pw'


@kind("password in markdown table")
def _md_table(r):
    s = _pw(r)
    return s, (
        f"| service | user | password |\n|---|---|---|\n| Jellyfin | admin | {s} |\n| Grafana | admin | (see vault) |\n"
    )


# ---------------------------------------------------------------------------------------------------- Chinese


@kind("路由器管理密码", chinese=True)
def _zh_router(r):
    s = _pw(r)
    return s, f"小米路由器后台 {_private_ip(r)}，管理密码：{s}。"


@kind("家里wifi密码聊天", chinese=True)
def _zh_wifi_chat(r):
    s = _pw(r)
    return s, f"[微信] 老妈：家里 wifi 密码是多少来着？\n我：{s} 注意大小写"


@kind("公司vpn账号密码", chinese=True)
def _zh_vpn(r):
    s = _pw(r)
    return s, f"公司 VPN 账号 zhangwei，密码「{s}」，每 90 天要改一次"


@kind("服务器root密码", chinese=True)
def _zh_root(r):
    s = _pw(r)
    return s, f"阿里云那台 ECS 的 root 密码 {s} ，改完记得同步到 1Password"


@kind("测试库连接串", chinese=True)
def _zh_mysql_url(r):
    s = _pw(r, url_safe=True)
    return s, f"测试库连接：mysql://dev:{s}@{_private_ip(r)}:3306/crm?charset=utf8mb4（只读账号）"


@kind("阿里云accesskey", chinese=True)
def _zh_aliyun(r):
    s = _w(r, 30)
    return s, f"阿里云 RAM 子账号\nAccessKey ID: LTAI5t{_w(r, 18)}\nAccessKey Secret: {s}\n只给了 OSS 读写权限"


@kind("腾讯云secretkey脚本", chinese=True)
def _zh_tencent(r):
    s = _w(r, 32)
    return s, f"# 腾讯云 COS 上传脚本\nsecret_id = 'AKID{_w(r, 32)}'\nsecret_key = '{s}'  # 别提交到 git\n"


@kind("deepseek密钥", chinese=True)
def _zh_deepseek(r):
    s = "sk-" + _w(r, 32, HEX)
    return s, f"DeepSeek 的 key：{s}，充了 50 块，够用一阵"


@kind("通义千问dashscope环境变量", chinese=True)
def _zh_dashscope(r):
    s = "sk-" + _w(r, 32, HEX)
    return s, f"# 百炼控制台里新建的\nexport DASHSCOPE_API_KEY={s}\n# 上面这个只给记账机器人用"


@kind("智谱apikey", chinese=True)
def _zh_zhipu(r):
    s = f"{_w(r, 32, HEX)}.{_w(r, 16)}"
    return s, f"智谱 GLM 的 API Key 是 {s}（新注册送的额度）"


@kind("kimi密钥yaml中文注释", chinese=True)
def _zh_kimi(r):
    s = "sk-" + _w(r, 48)
    return s, f'llm:\n  provider: moonshot  # 月之暗面\n  model: moonshot-v1-32k\n  api_key: "{s}"  # 个人账号\n'


@kind("飞书应用密钥json", chinese=True)
def _zh_feishu(r):
    s = _w(r, 32)
    data = {"说明": "飞书自建应用（日报机器人）", "app_id": "cli_" + _w(r, 16, HEX), "app_secret": s}
    return s, json.dumps(data, ensure_ascii=False, indent=2)


@kind("钉钉机器人webhook", chinese=True)
def _zh_dingtalk(r):
    s = _w(r, 64, HEX)
    return s, f"钉钉群机器人：https://oapi.dingtalk.com/robot/send?access_token={s} ，加签那一步还没做"


@kind("企业微信webhook", chinese=True)
def _zh_wecom(r):
    s = _uuid(r)
    return s, f"企业微信告警群 webhook：https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={s}，别贴到公开仓库"


@kind("百度网盘分享链接", chinese=True)
def _zh_pan(r):
    s = "1" + _w(r, 22, URLSAFE)
    return s, f"链接: https://pan.baidu.com/s/{s} 提取码: {_w(r, 4, LOWER + DIGITS)} --来自百度网盘超级会员v5的分享"


@kind("微信支付apiv3密钥", chinese=True)
def _zh_wxpay(r):
    s = _w(r, 32)
    return s, f"商户号 16{_w(r, 8, DIGITS)}，APIv3 密钥：{s}（在商户平台-账户中心设置的）"


@kind("支付密码语音", chinese=True)
def _zh_paypin(r):
    s = " ".join(_w(r, 1, DIGITS) for _ in range(6))
    return s, f"记一下支付宝支付密码换成了 {s} 别告诉别人"


@kind("网银登录密码", chinese=True)
def _zh_ebank(r):
    s = _pw(r)
    return s, f"招行网银登录密码 {s}；U盾密码同上。"


@kind("单元门禁密码", chinese=True)
def _zh_door(r):
    s = "#" + _w(r, 6, DIGITS) + "#"
    return s, f"小区单元门禁密码{s}，快递员问就说放门口"


@kind("丰巢取件码短信", chinese=True)
def _zh_fengchao(r):
    s = _w(r, 8, DIGITS)
    return s, f"【丰巢】您的快递已存入幸福里北门丰巢柜，凭取件码{s}取件，超时将收取保管费。"


@kind("菜鸟驿站取件码", chinese=True)
def _zh_cainiao(r):
    s = f"{r.randint(1, 30)}-{r.randint(1, 6)}-{_w(r, 4, DIGITS)}"
    return s, f"【菜鸟驿站】您的包裹已到站，凭{s}到3号楼底商取件。"


@kind("验证码短信转述", chinese=True)
def _zh_otp_sms(r):
    s = "G-" + _w(r, 6, DIGITS)
    return s, f"刚收到短信“{s} 是您的 Google 验证码”，顺手记一下"


@kind("保险柜密码", chinese=True)
def _zh_safe(r):
    s = f"{r.randint(0, 99):02d}-{r.randint(0, 99):02d}-{r.randint(0, 99):02d}"
    return s, f"老家保险柜密码 {s}（转盘式，先左后右再左）"


@kind("旧手机锁屏密码", chinese=True)
def _zh_lockscreen(r):
    s = _w(r, 8, DIGITS)
    return s, f"旧手机锁屏密码是{s}，回收前先恢复出厂设置"


@kind("两步验证备用码", chinese=True)
def _zh_backup_codes(r):
    codes = [f"{_w(r, 4, DIGITS)} {_w(r, 4, DIGITS)}" for _ in range(10)]
    s = codes[r.randrange(10)]
    return s, "谷歌账号两步验证备用码（打印一份放抽屉）：" + "、".join(codes)


@kind("谷歌验证器密钥", chinese=True)
def _zh_totp(r):
    s = _w(r, 16, B32)
    return s, f"币安谷歌验证器密钥：{s}，换手机时要用"


@kind("ssh私钥口令", chinese=True)
def _zh_ssh_pass(r):
    s = _pw(r)
    return s, f"id_ed25519 的 passphrase：{s}（ssh-add 的时候要输）"


@kind("手机号连写", chinese=True)
def _zh_mobile(r):
    s = _cn_mobile(r)
    return s, f"王师傅（修空调）{s}，周六上午来"


@kind("手机号空格分隔", chinese=True)
def _zh_mobile_spaced(r):
    m = _cn_mobile(r)
    s = f"{m[:3]} {m[3:7]} {m[7:]}"
    return s, f"房东电话：{s}"


@kind("手机号带国家码横线", chinese=True)
def _zh_mobile_intl(r):
    m = _cn_mobile(r)
    s = f"+86-{m[:3]}-{m[3:7]}-{m[7:]}"
    return s, f"紧急联系人：姐姐 {s}。"


@kind("手机号括号国家码", chinese=True)
def _zh_mobile_paren(r):
    s = f"(+86){_cn_mobile(r)}"
    return s, f"新同事小刘的手机{s}，已拉进项目群"


@kind("手机号中文数字语音", chinese=True)
def _zh_mobile_spoken(r):
    s = _zh_digits(_cn_mobile(r), one=r.choice("一幺"))
    return s, f"语音备忘 帮我记下快递小哥电话{s}明天下午送"


@kind("座机号码", chinese=True)
def _zh_landline(r):
    s = f"0{r.choice(['21', '10', '755', '571', '20'])}-{r.randint(2, 8)}{_w(r, 7, DIGITS)}"
    return s, f"社区居委会电话（{s}），工作日 9:00-17:00"


@kind("qq邮箱", chinese=True)
def _zh_qqmail(r):
    s = f"{_d(r, 9)}@qq.com"
    return s, f"简历发到 {s} 就行"


@kind("全角at邮箱", chinese=True)
def _zh_fullwidth_email(r):
    s = f"{r.choice(PINYIN)}{r.randint(1970, 2005)}＠163.com"
    return s, f"邮箱：{s}（把全角的 at 换成半角）"


@kind("邮箱at dot中文", chinese=True)
def _zh_email_words(r):
    s = f"{r.choice(PINYIN)}_{_w(r, 3, DIGITS)} at 126 dot com"
    return s, f"他的邮箱是 {s} 你自己拼一下"


@kind("身份证号", chinese=True)
def _zh_id(r):
    s = _cn_id(r)
    return s, f"订机票用的身份证号：{s}"


@kind("身份证号分段", chinese=True)
def _zh_id_spaced(r):
    n = _cn_id(r)
    s = f"{n[:6]} {n[6:14]} {n[14:]}"
    return s, f"帮妈妈挂号，身份证 {s}，医保卡在她包里"


@kind("身份证号json", chinese=True)
def _zh_id_json(r):
    s = _cn_id(r).lower()
    return s, json.dumps({"姓名": "李秀英", "证件类型": "居民身份证", "证件号": s}, ensure_ascii=False)


@kind("护照号", chinese=True)
def _zh_passport(r):
    s = "E" + r.choice(["", r.choice("ABCDEFGH")]) + _w(r, 8, DIGITS)
    return s, f"护照号码 {s}，有效期至 2033 年 5 月"


@kind("港澳通行证", chinese=True)
def _zh_hkmo_permit(r):
    s = "C" + _w(r, 8, DIGITS)
    return s, f"港澳通行证【{s}】的签注下个月到期"


@kind("香港身份证", chinese=True)
def _zh_hkid(r):
    s = _hkid(r)
    return s, f"表哥的香港身份证号：{s}，开户要用"


@kind("台湾身份证字号", chinese=True)
def _zh_twid(r):
    s = _twid(r)
    return s, f"阿姨的台湾身份证字号 {s}，办台胞证时填过"


@kind("银行卡号分组", chinese=True)
def _zh_card(r):
    s = _group(_card(r, "622202", 19))
    return s, f"工资卡（工行）：{s}"


@kind("信用卡号有效期", chinese=True)
def _zh_credit(r):
    s = _card(r, "5187", 16)
    return s, f"招行信用卡 {s} 有效期 09/28 背面三位 {_w(r, 3, DIGITS)}"


@kind("对公账户", chinese=True)
def _zh_corp_account(r):
    s = _group(_d(r, 17))
    return s, f"开票信息\n户名：杭州某某科技有限公司\n开户行：中国银行杭州分行\n账号：{s}"


@kind("上海住址", chinese=True)
def _zh_addr_sh(r):
    district = r.choice(["徐汇区", "长宁区", "普陀区", "浦东新区", "杨浦区", "静安区"])
    road = r.choice(["漕溪北路", "宛平南路", "虹桥路", "长寿路", "天山路", "杨高南路", "控江路"])
    s = f"上海市{district}{road}{r.randint(10, 999)}弄{r.randint(1, 40)}号{r.randint(101, 2202)}室"
    return s, f"收货地址：{s}，电话见上"


@kind("北京住址小区", chinese=True)
def _zh_addr_bj(r):
    area = r.choice(["朝阳区望京西园", "海淀区华清嘉园", "昌平区回龙观龙泽苑", "丰台区方庄芳群园"])
    s = f"北京市{area}{r.randint(1, 30)}号楼{r.randint(1, 6)}单元{r.randint(1, 28)}0{r.randint(1, 4)}"
    return s, f"我家住{s}，电梯在左手边"


@kind("收货地址json", chinese=True)
def _zh_addr_json(r):
    city = r.choice(["广东省深圳市南山区", "浙江省杭州市西湖区", "四川省成都市武侯区"])
    s = f"{city}{r.choice(['科技园', '文三路', '玉林'])}{r.randint(1, 300)}号{r.randint(1, 20)}栋{r.randint(101, 1808)}"
    data = {"收件人": "陈先生", "手机": "已隐藏", "详细地址": s, "默认": True}
    return s, json.dumps(data, ensure_ascii=False)


@kind("车牌号", chinese=True)
def _zh_plate(r):
    s = _cn_plate(r)
    return s, f"我的车 {s}，停在 B2 层靠电梯"


@kind("新能源车牌", chinese=True)
def _zh_plate_green(r):
    s = _cn_plate(r, green=True)
    return s, f"物业登记的新能源车牌：{s}。"


@kind("出生日期", chinese=True)
def _zh_dob(r):
    s = f"{r.randint(1940, 2010)}年{r.randint(1, 12)}月{r.randint(1, 28)}日"
    return s, f"身份证上的出生日期是{s}，别和农历生日搞混"


@kind("微信号", chinese=True)
def _zh_wechat(r):
    s = "wxid_" + _w(r, 14, LOWER + DIGITS)
    return s, f"加我微信：{s}"


@kind("自定义微信号", chinese=True)
def _zh_wechat_custom(r):
    s = f"{r.choice(PINYIN)}_{_w(r, 4, LOWER + DIGITS)}"
    return s, f"群里那个卖二手相机的，微信号 {s} ，说可以面交"


@kind("qq号", chinese=True)
def _zh_qq(r):
    s = _d(r, r.randint(9, 10))
    return s, f"QQ：{s}（备注：读书会）"


@kind("支付宝账号", chinese=True)
def _zh_alipay(r):
    s = _cn_mobile(r)
    return s, f"房租转到支付宝 {s}（实名：*明）"


@kind("中文助记词", chinese=True)
def _zh_seed(r):
    s = _seed_words(r, BIP39_ZH)
    return s, f"imToken 钱包助记词：{s}"


@kind("英文助记词中文说明", chinese=True)
def _zh_seed_en(r):
    s = _seed_words(r, BIP39)
    return s, f"小狐狸钱包的助记词（千万别截图）：\n{s}\n抄在本子第 3 页"


@kind("钱包私钥", chinese=True)
def _zh_privkey(r):
    s = _w(r, 64, HEX)
    return s, f"导出的私钥 {s} 资产已经转走了，但还是别公开"


@kind("nas内网地址", chinese=True)
def _zh_nas(r):
    s = f"192.168.{r.randint(0, 254)}.{r.randint(2, 254)}"
    return s, f"群晖 NAS 地址 http://{s}:5000 ，家里人都用这个看照片"


@kind("软路由lan域名", chinese=True)
def _zh_lan_host(r):
    s = f"{r.choice(['openwrt', 'istore', 'router', 'ikuai'])}-{_w(r, 3, LOWER)}.lan"
    return s, f"软路由 OpenWrt 在 {s}，AdGuard 在 3000 端口"


@kind("公司内网wiki", chinese=True)
def _zh_corp_wiki(r):
    s = f"http://wiki.{_corp(r)}.internal/pages/viewpage.action?pageId={_d(r, 9)}"
    return s, f"入职文档在 {s} （只能内网访问）"


@kind("阿里云oss内网endpoint", chinese=True)
def _zh_oss_internal(r):
    s = f"{r.choice(['backup', 'photos', 'logs'])}-{_w(r, 6, LOWER + DIGITS)}.oss-cn-hangzhou-internal.aliyuncs.com"
    return s, f"ECS 上传走内网：{s}，不收流量费"


@kind("跳板机内网ip", chinese=True)
def _zh_bastion(r):
    s = f"10.{r.randint(0, 254)}.{r.randint(0, 254)}.{r.randint(2, 254)}"
    return s, f"跳板机 {s}，端口 22022，先连 VPN 再 ssh"


@kind("中文日志内网ip", chinese=True)
def _zh_log_ip(r):
    s = f"172.{r.randint(16, 31)}.{r.randint(0, 254)}.{r.randint(2, 254)}"
    return s, f"[2024-05-12 03:12:44] 错误：连接 {s}:6379 超时，重试中……"


@kind("github令牌中英混", chinese=True)
def _zh_gh_token(r):
    s = "ghp_" + _w(r, 36)
    return s, f"帮我记一下 新的 GitHub token 是 {s} 权限只勾了 repo"


@kind("redis密码配置", chinese=True)
def _zh_redis(r):
    s = _pw(r)
    return s, f"# 生产环境 Redis，别动\nrequirepass {s}\nmaxmemory 2gb\n"


@kind("rabbitmq控制台账号", chinese=True)
def _zh_rabbit(r):
    s = _pw(r)
    return s, f"RabbitMQ 控制台 http://mq-console:15672 账号 admin 密码 {s}"


@kind("spring配置中文注释", chinese=True)
def _zh_spring(r):
    s = _pw(r)
    return s, (
        "spring:\n  datasource:\n    url: jdbc:mysql://rm-bp1.mysql.rds.aliyuncs.com:3306/shop\n"
        f"    username: shop_rw\n    password: {s}  # 线上库密码，勿外传\n"
    )


@kind("镜像仓库登录密码", chinese=True)
def _zh_registry(r):
    s = _pw(r)
    return s, f"docker login --username=运维组 registry.cn-hangzhou.aliyuncs.com 然后输密码：{s}"


@kind("qq邮箱smtp授权码", chinese=True)
def _zh_smtp_code(r):
    s = _w(r, 16, LOWER)
    return s, f"QQ邮箱 SMTP 授权码：{s}（不是 QQ 密码）"


@kind("公积金账号", chinese=True)
def _zh_hpf(r):
    s = _w(r, 12, DIGITS)
    return s, f"公积金个人账号{s}，提取租房那项每季度一次"


@kind("车架号", chinese=True)
def _zh_vin(r):
    s = "LSV" + _w(r, 14, "ABCDEFGHJKLMNPRSTUVWXYZ0123456789")
    return s, f"车架号 {s}，续保的时候要报"


@kind("账号密码markdown表格", chinese=True)
def _zh_md_table(r):
    s = _pw(r)
    return s, f"| 网站 | 账号 | 密码 |\n| --- | --- | --- |\n| 京东 | 手机号 | {s} |\n| 知乎 | 微信登录 | 无 |\n"


@kind("账号密码列表", chinese=True)
def _zh_md_list(r):
    s = _pw(r)
    return s, f"常用账号：\n- 淘宝：同手机号 / 密码 {s}\n- 12306：用身份证登录\n- 美团：验证码登录"


@kind("小程序密钥dotenv", chinese=True)
def _zh_env(r):
    s = _w(r, 32, HEX)
    return s, f"# 微信小程序\nWX_APPID=wx{_w(r, 16, HEX)}\nWX_SECRET={s}  # 小程序后台-开发管理里看\n"


@kind("民宿门锁密码", chinese=True)
def _zh_bnb(r):
    s = _w(r, 8, DIGITS)
    return s, f"房东发来：入住当天门锁密码 {s}#，退房后自动失效。"


@kind("12306密码语音", chinese=True)
def _zh_12306_voice(r):
    s = r.choice(PINYIN) + _w(r, 6, DIGITS)
    return s, f"语音输入 12306账号就是我手机号密码是{s}记住了吗"


@kind("企业邮箱ini", chinese=True)
def _zh_ini(r):
    s = _pw(r)
    return s, f"[邮件]\n服务器 = smtp.exmail.qq.com\n端口 = 465\n账号 = notice\n密码 = {s}\n"


@kind("python代码中文注释硬编码", chinese=True)
def _zh_py(r):
    s = "sk-" + _w(r, 40)
    return s, f'# TODO: 换成环境变量\nAPI_SECRET = "{s}"  # 百川的 key\nresp = call_llm(prompt, key=API_SECRET)'


@kind("工具调用发短信手机号", chinese=True)
def _zh_tool_sms(r):
    s = _cn_mobile(r)
    call = {"工具": "send_sms", "参数": {"手机号": s, "内容": "您的快递已放门口，请及时取件"}}
    return s, json.dumps(call, ensure_ascii=False)


@kind("聊天里的住址", chinese=True)
def _zh_chat_addr(r):
    road = r.choice(["人民路", "解放路", "中山路", "建设路"])
    city = r.choice(["南京市鼓楼区", "武汉市江汉区", "西安市雁塔区"])
    s = f"{city}{road}{r.randint(1, 400)}号{r.randint(1, 12)}栋{r.randint(1, 30)}楼"
    return s, f"张阿姨：我家在{s}，你到了打电话，门口有棵大槐树"


@kind("智能门锁密码语音转文字", chinese=True)
def _zh_lock_voice(r):
    s = _w(r, 8, DIGITS)
    return s, f"[语音转文字] 门锁密码改成了{s}你回来直接按就行"


@kind("nmcli连wifi中文说明", chinese=True)
def _zh_nmcli(r):
    s = _pw(r)
    return s, f'nmcli dev wifi connect "ChinaNet-{_w(r, 4, UPPER + DIGITS)}" password "{s}"  # 出租屋的网'


@kind("密钥分两行中文", chinese=True)
def _zh_wrapped(r):
    full = "sk-" + _w(r, 32, HEX)
    cut = r.randint(16, 22)
    s = full[:cut] + "\n" + full[cut:]
    return s, f"复制的时候换行了，拼起来就是完整的 key：\n{s}\n"


@kind("base64私钥中文", chinese=True)
def _zh_b64key(r):
    s = _b64(r, 48)
    return s, f"这个是 base64 过的签名私钥：{s}，解码后就是原始 32+16 字节"


@kind("香港手机号", chinese=True)
def _zh_hk_phone(r):
    s = f"+852 {r.choice('5679')}{_w(r, 3, DIGITS)} {_w(r, 4, DIGITS)}"
    return s, f"香港那边的中介陈生：{s}（WhatsApp）"


@kind("台湾手机号", chinese=True)
def _zh_tw_phone(r):
    s = f"09{_w(r, 2, DIGITS)}-{_w(r, 3, DIGITS)}-{_w(r, 3, DIGITS)}"
    return s, f"台北民宿老板的手机 {s}，到了打给他"


@kind("日本手机号中文", chinese=True)
def _zh_jp_phone(r):
    s = f"080-{_w(r, 4, DIGITS)}-{_w(r, 4, DIGITS)}"
    return s, f"东京留学的表妹电话：{s}；时差一小时"


@kind("新加坡手机号", chinese=True)
def _zh_sg_phone(r):
    s = f"+65 {r.choice('89')}{_w(r, 3, DIGITS)} {_w(r, 4, DIGITS)}"
    return s, f"新加坡同事 Wei Ling 的手机是 {s}。"


@kind("韩国手机号", chinese=True)
def _zh_kr_phone(r):
    s = f"010-{_w(r, 4, DIGITS)}-{_w(r, 4, DIGITS)}"
    return s, f"首尔的导游电话 {s}，会说中文"


@kind("美国ssn中文", chinese=True)
def _zh_ssn(r):
    s = _ssn(r)
    return s, f"美国那边报税要用的 SSN：{s}"


@kind("德国iban中文", chinese=True)
def _zh_iban(r):
    s = _iban("DE", _w(r, 18, DIGITS))
    return s, f"德国的房租转账 IBAN：{s}（收款人 Frau Schmidt）"


@kind("英国手机号中文", chinese=True)
def _zh_uk_phone(r):
    s = f"07{_w(r, 3, DIGITS)} {_w(r, 6, DIGITS)}"
    return s, f"英国同学 Tom 的电话 {s} ，伦敦转机时联系"


@kind("打印机后台密码", chinese=True)
def _zh_printer(r):
    s = _pw(r)
    return s, f"办公室打印机 http://{_private_ip(r)}/ 后台账号 admin，密码『{s}』"


@kind("摄像头rtsp地址", chinese=True)
def _zh_rtsp(r):
    s = _pw(r, url_safe=True)
    return s, f"门口摄像头：rtsp://admin:{s}@{_private_ip(r)}:554/Streaming/Channels/101（海康）"


@kind("自定义接口令牌无前缀", chinese=True)
def _zh_bare_token(r):
    s = _w(r, 36, LOWER + DIGITS)
    return s, f"记账 App 的开放接口令牌：{s}"


@kind("jwt中文", chinese=True)
def _zh_jwt(r):
    s = _jwt(r)
    return s, f"后台登录后 localStorage 里的 token（调试用，别外传）：{s}"


CHINESE: frozenset[str] = frozenset(_chinese)

# ---------------------------------------------------------------------------------------------------- markers

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"[PRIVATE] {t}",
    lambda t: f"(private) {t}",
    lambda t: f"{t} #private",
    lambda t: f"🔒 {t}",
    lambda t: f"【私密】{t}",
    lambda t: f"（隐私）{t}",
    lambda t: f"{t}（不要分享）",
    lambda t: f"{t} — don't share",
    lambda t: f"私人：{t}",
    lambda t: f"<private>{t}</private>",
    lambda t: f"{t} [do not publish]",
    lambda t: f"PRIVATE: {t}",
    lambda t: f"{t} #隐私",
    lambda t: f"[仅自己可见] {t}",
    lambda t: f"<!-- private --> {t}",
    lambda t: f"**Private:** {t}",
    lambda t: f"{t} ——别外传",
    lambda t: f"Confidential — {t}",
    lambda t: f"不要公开：{t}",
    lambda t: f"{t} (keep this between us)",
    lambda t: f"🔐 私密 {t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"private": True},
    {"visibility": "private"},
    {"publish": False},
    {"tags": ["private", "family"]},
    {"access": "private"},
    {"private": "yes"},
    {"confidential": True},
    {"tags": ["隐私"]},
    {"visibility": "私密"},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "## Private",
    "## 私密",
    "## Private notes (do not publish)",
    "### 🔒 Personal",
    "## 隐私信息",
    "## Secrets",
    "## 仅自己可见",
    "## Confidential",
]

ORDINARY: list[str] = [
    "python -m pytest -q tests/ -k 'not slow'",
    "git log --oneline -n 20",
    "git checkout -b feature/wiki-export",
    "git cherry-pick 9fceb02",
    "Merge commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 into main",
    "docker compose up -d --build",
    "docker pull nginx:1.25-alpine",
    "npm install --save-dev typescript@5.4.5",
    "pnpm add -D vite@5",
    "go get github.com/spf13/cobra@v1.8.0",
    "cargo add serde --features derive",
    "numpy==1.26.4",
    "requests>=2.31,<3",
    "Python 3.12.3 (main, Apr 10 2024)",
    "Node.js v20.11.1",
    "rustc 1.77.2 (25ef9e3d8 2024-04-09)",
    "src/app/routes/users.py",
    "docs/guide/getting-started.md",
    "tests/fixtures/sample_notes/2024-05-01.md",
    "https://github.com/pallets/flask/issues/5321",
    "https://docs.python.org/3/library/random.html",
    "https://en.wikipedia.org/wiki/Luhn_algorithm",
    "pypi.org/project/httpx/",
    "550e8400-e29b-41d4-a716-446655440000",
    "f47ac10b-58cc-4372-a567-0e02b2c3d479",
    "color: #1e90ff;",
    "background: rgba(0, 0, 0, 0.5);",
    "font-family: 'Noto Sans SC', sans-serif;",
    "max-width: 1200px",
    "2024-03-15T09:30:00Z",
    "Release 2.4.1 — 2024-06-18",
    "TypeError: 'NoneType' object is not subscriptable",
    "ModuleNotFoundError: No module named 'yaml'",
    "HTTP/1.1 404 Not Found",
    "HTTP 429 Too Many Requests, retry after 60 seconds",
    "Connection refused (os error 111)",
    "Error: EACCES: permission denied, open '/usr/local/lib/node_modules'",
    "sha256sum dist/app-1.4.0.tar.gz",
    "sha256 of the empty string: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "ls -la ~/.config/nvim",
    "chmod 644 config/settings.toml",
    "kubectl get pods -n monitoring",
    "SELECT id, title FROM posts WHERE created_at > '2024-01-01' ORDER BY id DESC LIMIT 50;",
    "ffmpeg -i input.mov -vf scale=1280:-1 output.mp4",
    "brew install ripgrep fd bat",
    "sudo apt-get install -y build-essential",
    "export PYTHONPATH=src",
    "ruff check --fix .",
    "batch_size=32, lr=3e-4, epochs=10",
    "train loss 0.0342 at step 12000",
    "Ctrl+Shift+P",
    "Fixes #1234",
    "SPDX-License-Identifier: MIT",
    "RFC 7519",
    "The build took 3m 42s on ubuntu-22.04",
    "Meeting moved to Thursday 14:00",
    "The 7:45 train to Leeds was cancelled.",
    "Bought 2 kg of apples for €3.80",
    "今天晚上七点半在楼下吃火锅，人均 120 元",
    "周六早上 9:00 去超市，鸡蛋 12.5 元一盒",
    "高铁 G102 次 08:05 从上海虹桥出发",
    "这本书一共 328 页，我看到第 156 页了",
    "跑步 5 公里用时 28 分 30 秒",
    "空调温度调到 26 度",
    "电费这个月 218.6 元，比上个月多了 30 块",
    "明天下午 3 点开周会，会议室 B302",
    "用 pip 装 numpy 1.26 就行，别升级到 2.0",
    "Python 3.11 里 tomllib 是标准库",
    "奶茶第二杯半价，两杯一共 27 元",
    "双十一买的显示器 1299 元，27 寸 4K",
    "春节放假 2 月 10 日到 2 月 17 日",
    "把 README.md 的第二节翻译成中文",
    "版本号改成 1.3.0 再打 tag",
    "错误：找不到文件 config/settings.yaml",
    "CPU 占用 85%，内存 12.3 GB / 16 GB",
    "早上 6:30 起床，7:10 出门",
]
