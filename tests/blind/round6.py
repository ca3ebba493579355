"""Blind canary set, round 6: written blind (without reading the detectors under memwiki/, the other rounds or the
tests) on 2026-12-03, from the set format (tests/blind/example_set.py) and the harness (tests/blind/harness.py) only.

- KINDS: kind -> function(rng) -> (secret, text carrying it); the secret must not reach the site.
- CHINESE: the kinds phrased in Chinese.
- TEXT_MARKERS: ways to mark one note private inline.
- FRONTMATTER_MARKERS: frontmatter entries that mark a wiki page private.
- PERSONA_PRIVATE_HEADINGS: headings that open a private section of SOUL.md.
- ORDINARY: technical strings that are no secrets and must be published unchanged.

The kinds are notes people write to their agent, chat turns, agent tool outputs and config pasted into a chat:
credentials in prose and in many config / CLI / header shapes, provider tokens (many of them Chinese clouds and
SaaS), private keys, personal data of many countries (ids with valid check digits, Luhn card numbers, IBANs with
valid check digits), internal hosts, and one-time or physical codes.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
from collections.abc import Callable

Kind = Callable[[random.Random], tuple[str, str]]

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
BASE32 = string.ascii_uppercase + "234567"

KINDS: dict[str, Kind] = {}
_ZH: set[str] = set()


def kind(name: str, zh: bool = False) -> Callable[[Kind], Kind]:
    def register(make: Kind) -> Kind:
        KINDS[name] = make
        if zh:
            _ZH.add(name)
        return make

    return register


# ── helpers ──────────────────────────────────────────────────────────────────────────────────────────


def _w(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _d(r: random.Random, n: int, lead: str = "123456789") -> str:
    return r.choice(lead) + _w(r, n - 1, string.digits)


def _b64(r: random.Random, nbytes: int, urlsafe: bool = False) -> str:
    raw = bytes(r.randrange(256) for _ in range(nbytes))
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()


def _uuid(r: random.Random) -> str:
    h = _w(r, 32, HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{r.choice('89ab')}{h[17:20]}-{h[20:]}"


_WORDS = [
    "maple", "tiger", "orchid", "falcon", "cobalt", "harbor", "violet", "summit", "pepper", "lotus", "copper",
    "meadow", "rocket", "walnut", "juniper", "saffron", "granite", "pelican", "thunder", "biscuit",
]  # fmt: skip
_PINYIN = [
    "woaini", "zhangwei", "xiaoming", "wangfang", "liuyang", "chenjie", "huanghe", "qingdao", "shenzhen",
    "xiaobai", "tiantian", "jiayou", "lixiaolong", "mengmeng", "haoyun", "dabao",
]  # fmt: skip
_SYMBOLS = "!@#%^*-_.?"


def _pw(r: random.Random, url_safe: bool = False) -> str:
    """A password as people really pick them: word + digits + symbol, pinyin + birthday, random, or diceware."""
    sym = "-_." if url_safe else _SYMBOLS
    style = r.randrange(5)
    if style == 0:
        return r.choice(_WORDS).capitalize() + r.choice(sym) + _d(r, 4) + _w(r, 2, string.ascii_lowercase)
    if style == 1:
        return r.choice(_PINYIN) + r.choice("@._" if not url_safe else "._") + _d(r, 4, "01") + _w(r, 3)
    if style == 2:
        body = _w(r, r.randint(13, 18), ALNUM + sym)
        return body[:5] + r.choice(sym) + r.choice(string.digits) + body[5:]
    if style == 3:
        return "-".join(r.sample(_WORDS, 3)) + _d(r, 2)
    return _w(r, 4, string.ascii_uppercase) + _d(r, 4) + _w(r, 4, string.ascii_lowercase) + r.choice(sym)


def _luhn(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + _w(r, length - len(prefix) - 1, string.digits)
    total = 0
    for i, ch in enumerate(reversed(body)):
        n = int(ch)
        if i % 2 == 0:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return body + str((10 - total % 10) % 10)


def _groups(s: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(s[i : i + size] for i in range(0, len(s), size))


def _iban(country: str, bban: str) -> str:
    num = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(num) % 97:02d}{bban}"


def _cn_id(r: random.Random) -> str:
    region = r.choice(["110101", "310115", "440305", "330106", "510104", "420106", "320102", "370202", "610113"])
    birth = f"{r.randint(1950, 2006)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    body = region + birth + _w(r, 3, string.digits)
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    return body + "10X98765432"[sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11]


def _hk_id(r: random.Random) -> str:
    letter, digits = r.choice(string.ascii_uppercase), _w(r, 6, string.digits)
    total = 36 * 9 + (ord(letter) - 55) * 8 + sum(int(c) * w for c, w in zip(digits, range(7, 1, -1), strict=True))
    check = (11 - total % 11) % 11
    return f"{letter}{digits}({'A' if check == 10 else check})"


_TW_LETTERS = dict(zip("ABCDEFGHJKLMNPQRSTUVXYWZIO", range(10, 36), strict=True))


def _tw_id(r: random.Random) -> str:
    letter = r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ")
    digits = r.choice("12") + _w(r, 7, string.digits)
    code = _TW_LETTERS[letter]
    total = code // 10 + (code % 10) * 9 + sum(int(c) * w for c, w in zip(digits, range(8, 0, -1), strict=True))
    return f"{letter}{digits}{(10 - total % 10) % 10}"


def _nhs(r: random.Random) -> str:
    while True:
        digits = _w(r, 9, string.digits)
        check = 11 - sum(int(c) * w for c, w in zip(digits, range(10, 1, -1), strict=True)) % 11
        if check != 10:
            n = digits + str(0 if check == 11 else check)
            return f"{n[:3]} {n[3:6]} {n[6:]}"


def _ssn(r: random.Random) -> str:
    area = r.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"


def _cn_mobile(r: random.Random) -> str:
    return r.choice(["13", "15", "17", "18", "19"]) + r.choice("0123456789") + _w(r, 8, string.digits)


_FIRST = ["Olivia", "Liam", "Emma", "Noah", "Ava", "Lucas", "Mia", "Ethan", "Chloe", "Mason", "Harper", "Owen",
          "Nora", "Caleb", "Ruth", "Dennis", "Helen", "Frank", "Ingrid", "Tomasz"]  # fmt: skip
_LAST = ["Carter", "Nguyen", "Fischer", "Okafor", "Kowalski", "Haddad", "Lindqvist", "Moreau", "Brennan", "Tanaka",
         "Alvarez", "Whitaker", "Novak", "Sorensen", "McAllister", "Castellano"]  # fmt: skip
_XING = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗高"
_MING = ["秀英", "建国", "丽娟", "志强", "婷婷", "子轩", "欣怡", "浩然", "雨桐", "俊杰", "梓涵", "明", "伟", "芳", "静",
         "磊", "晓燕", "国华", "淑珍", "宇航"]  # fmt: skip
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]  # fmt: skip


def _en_name(r: random.Random) -> str:
    return f"{r.choice(_FIRST)} {r.choice(_LAST)}"


def _zh_name(r: random.Random) -> str:
    return r.choice(_XING) + r.choice(_MING)


def _private_ip(r: random.Random) -> str:
    return r.choice(
        [
            f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}",
            f"172.{r.randint(16, 31)}.{r.randint(0, 255)}.{r.randint(2, 254)}",
            f"192.168.{r.randint(0, 255)}.{r.randint(2, 254)}",
        ]
    )


def _kv_secret(r: random.Random) -> str:
    return r.choice([_pw(r), _w(r, 32, HEX), _w(r, 40, ALNUM), _b64(r, 24)])


# ── credentials in prose (en) ────────────────────────────────────────────────────────────────────────


@kind("pw is, prose")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    what = r.choice(["the NAS", "grandma's iPad", "the old Synology", "my Steam account", "the office printer"])
    return s, r.choice(
        [
            f"btw {what} pw is {s} — changed it last week, update the notes",
            f"fyi pass for {what} = {s}",
            f"Remember: {what} uses {s} as its password now (not the old one).",
            f"{what}'s password got reset to {s}, tell me if it asks again",
        ]
    )


@kind("login user slash password")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    user = r.choice(["admin", "root", "ops", "ubnt", "pi", "jenkins", "nextcloud-admin"])
    thing = r.choice(["router panel", "UniFi controller", "Grafana", "the Pi-hole", "IPMI on the rack box"])
    return s, r.choice([f"{thing} login: {user} / {s}", f"{thing} creds {user}:{s}", f"{thing} — u={user} p={s}"])


@kind("safe combination")
def _(r: random.Random) -> tuple[str, str]:
    s = "-".join(f"{r.randint(0, 99):02d}" for _ in range(4))
    return s, r.choice(
        [
            f"the code for the safe in the study is {s} (turn left first)",
            f"Dad's gun safe combo: {s}",
            f"hotel-room safe, I set it to {s} so I don't forget",
        ]
    )


@kind("qa chat turn password")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    q = r.choice(
        [
            "what's the wifi password at the cabin?",
            "what did we set the Jellyfin admin password to?",
            "remind me the VPN password",
        ]
    )
    return s, f"User: {q}\nAssistant: You told me on Tuesday it is {s}.\nUser: right, thanks"


@kind("sent password in chat")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, r.choice(
        [
            f"[10:42] Maya: it's {s}\n[10:42] me: got it, thx",
            f"> the password for the shared Netflix is {s}\nsave that somewhere please",
            f"Sam (WhatsApp): new alarm app password → {s} . don't share",
        ]
    )


# ── key = value in config formats ────────────────────────────────────────────────────────────────────


@kind("dotenv file")
def _(r: random.Random) -> tuple[str, str]:
    s = _kv_secret(r)
    key = r.choice(["APP_SECRET", "SESSION_SECRET", "DB_PASS", "MAIL_PASSWORD", "ENCRYPTION_KEY", "NEXTAUTH_SECRET"])
    return s, f"pasted my .env:\n```\nNODE_ENV=production\nPORT=3000\n{key}={s}\nLOG_LEVEL=info\n```"


@kind("yaml config password")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    quoted = r.choice([s, f'"{s}"', f"'{s}'"])
    return s, f"```yaml\ndatabase:\n  host: db\n  user: app\n  password: {quoted}\n  pool: 10\n```"


@kind("toml config")
def _(r: random.Random) -> tuple[str, str]:
    s = _kv_secret(r)
    return s, f'config.toml:\n\n[smtp]\nhost = "smtp.fastmail.com"\nport = 465\nusername = "me"\npass = "{s}"\n'


@kind("ini my.cnf")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"~/.my.cnf on the backup host:\n[client]\nuser=backup\npassword={s}\nhost=127.0.0.1\n"


@kind("json config apiKey")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_w(r, 39, ALNUM), _w(r, 32, HEX), _b64(r, 30, urlsafe=True)])
    key = r.choice(["apiKey", "api_key", "clientSecret", "secretKey", "authToken"])
    return s, f'settings.json: {{"region": "eu-west-1", "{key}": "{s}", "timeout": 30}}'


@kind("xml attribute")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, r.choice(
        [
            f'web.config: <add key="SmtpPassword" value="{s}" />',
            f'<connectionStrings><add name="Main" connectionString="Server=sql01;User Id=app;Password={s};" />',
            f"<server><id>nexus</id><username>deploy</username><password>{s}</password></server>",
        ]
    )


@kind("java properties")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    key = r.choice(["spring.datasource.password", "spring.mail.password", "keystore.password", "ldap.bind.password"])
    return s, f"application.properties\n  spring.datasource.username=crm\n  {key}={s}\n"


@kind("htpasswd line")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(
        [
            f"$apr1${_w(r, 8, ALNUM + './')}${_w(r, 22, ALNUM + './')}",
            f"$2y$05${_w(r, 53, ALNUM + './')}",
            "{SHA}" + _b64(r, 20),
        ]
    )
    return s, f"/etc/nginx/.htpasswd has one line: deploy:{s}"


@kind("nginx proxy basic auth header")
def _(r: random.Random) -> tuple[str, str]:
    s = base64.b64encode(f"{r.choice(['admin', 'svc', 'monitor'])}:{_pw(r)}".encode()).decode()
    return s, f'location /metrics {{ proxy_set_header Authorization "Basic {s}"; proxy_pass http://prom; }}'


# ── connection strings ───────────────────────────────────────────────────────────────────────────────


@kind("postgres url")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"DATABASE_URL=postgresql://app:{s}@{_private_ip(r)}:5432/prod?sslmode=require"


@kind("mysql url")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"the shop uses mysql://root:{s}@db.internal:3306/shop — move it to vault"


@kind("mongodb srv")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 16, ALNUM)
    host = f"cluster0.{_w(r, 5, LOWER_ALNUM)}.mongodb.net"
    return s, f'MONGO_URI="mongodb+srv://svc-reader:{s}@{host}/?retryWrites=true&w=majority"'


@kind("redis url")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, ALNUM)
    return s, f"cache: rediss://default:{s}@redis-{_d(r, 5)}.c2.eu-west-1-1.ec2.cloud.redislabs.com:{_d(r, 5)}"


@kind("amqp url")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"celery broker = amqp://worker:{s}@rabbit.lan:5672/%2f"


@kind("mssql connection string")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"Server=tcp:sql01.corp,1433;Database=HR;User Id=sa;Password={s};TrustServerCertificate=True;"


@kind("jdbc url")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"jdbc:postgresql://{_private_ip(r)}:5432/crm?user=crm_rw&password={s}&ssl=false"


@kind("smtp url")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 16, string.ascii_lowercase)
    return s, f"EMAIL_URL=smtp+tls://alerts%40example.org:{s}@smtp.gmail.com:587  (gmail app password)"


# ── CLI flags ────────────────────────────────────────────────────────────────────────────────────────


@kind("psql pgpassword")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"$ PGPASSWORD={s} psql -h {_private_ip(r)} -U postgres -d analytics -c '\\dt'"


@kind("redis-cli -a")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24, ALNUM)
    return s, f"redis-cli -h 10.0.{r.randint(0, 9)}.7 -p 6379 -a {s} --no-auth-warning info keyspace"


@kind("mongosh -p")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"mongosh --host mongo.lan -u admin -p {s} --authenticationDatabase admin"


@kind("openssl passin")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    flag = r.choice(["-passin", "-passout"])
    return s, f"openssl pkcs12 -in cert.p12 -nodes {flag} pass:{s} -out cert.pem"


@kind("zip 7z password flag")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, r.choice([f"zip -er -P {s} taxes-2025.zip ~/Documents/taxes", f"7z a -p{s} -mhe=on backup.7z ~/photos"])


@kind("ldapsearch -w")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f'ldapsearch -x -H ldap://dc01.corp -D "cn=svc-ldap,ou=svc,dc=corp" -w {s} -b "dc=corp" "(uid=*)"'


@kind("smbclient user%pass")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"smbclient //nas/family -U alice%{s} -c 'ls'"


@kind("git clone token url")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["glpat-" + _w(r, 20, B64URL), "github_pat_" + _w(r, 22) + "_" + _w(r, 59), _w(r, 32, HEX)])
    host = r.choice(["gitlab.com/team/infra", "github.com/acme/deploy", "gitea.home.arpa/me/dotfiles"])
    return s, f"git clone https://oauth2:{s}@{host}.git"


@kind("rclone obscured pass")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, r.randint(36, 48), B64URL)
    return s, f"rclone.conf\n[b2crypt]\ntype = crypt\nremote = b2:photos\npassword = {s}\n"


@kind("docker login -p")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["dckr_pat_" + _w(r, 27, B64URL), _w(r, 20, ALNUM)])
    return s, f"echo ok && docker login -u mybot -p {s} registry.gitlab.com"


# ── HTTP headers ─────────────────────────────────────────────────────────────────────────────────────


@kind("authorization basic")
def _(r: random.Random) -> tuple[str, str]:
    s = base64.b64encode(f"{r.choice(['me', 'api', 'elastic'])}:{_pw(r)}".encode()).decode()
    return s, f"curl -H 'Authorization: Basic {s}' https://es.lan:9200/_cat/indices"


@kind("authorization bearer opaque")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_w(r, 40, ALNUM), _b64(r, 32, urlsafe=True).rstrip("="), "ya29." + _w(r, 60, B64URL)])
    return s, f"GET /v1/me HTTP/1.1\nHost: api.internal\nAuthorization: Bearer {s}\nAccept: */*"


@kind("x-api-key header")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, ALNUM)
    name = r.choice(["X-Api-Key", "x-api-key", "Ocp-Apim-Subscription-Key", "X-Auth-Token"])
    return s, f'requests.get(url, headers={{"{name}": "{s}"}})'


@kind("cookie session id")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, LOWER_ALNUM)
    return s, f"Cookie: sessionid={s}; csrftoken={_w(r, 32, ALNUM)}; theme=dark"


# ── provider tokens (en) ─────────────────────────────────────────────────────────────────────────────


@kind("cloudflare api token")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, B64URL)
    return s, f"cf token for DNS edit on my zones: {s} (Zone:DNS:Edit, all zones)"


@kind("digitalocean token")
def _(r: random.Random) -> tuple[str, str]:
    s = "dop_v1_" + _w(r, 64, HEX)
    return s, f"doctl auth init --access-token {s}"


@kind("linear api key")
def _(r: random.Random) -> tuple[str, str]:
    s = "lin_api_" + _w(r, 40)
    return s, f"Linear personal key for the triage bot is {s}"


@kind("vercel token")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24)
    return s, f"gh secret set VERCEL_TOKEN --body {s} --repo me/blog"


@kind("supabase secret key")
def _(r: random.Random) -> tuple[str, str]:
    s = "sb_secret_" + _w(r, 31, B64URL)
    return s, f"supabase = create_client(url, '{s}')  # service key, server only"


@kind("netlify token")
def _(r: random.Random) -> tuple[str, str]:
    s = "nfp_" + _w(r, 36)
    return s, f"NETLIFY_AUTH_TOKEN: {s}"


@kind("shopify admin token")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["shpat_", "shpss_", "shpca_"]) + _w(r, 32, HEX)
    return s, f"the store's custom app token: {s} — scopes read_orders,write_products"


@kind("huggingface token")
def _(r: random.Random) -> tuple[str, str]:
    s = "hf_" + _w(r, 34, string.ascii_letters)
    return s, f"huggingface-cli login --token {s} --add-to-git-credential"


@kind("replicate token")
def _(r: random.Random) -> tuple[str, str]:
    s = "r8_" + _w(r, 37)
    return s, f"export REPLICATE_API_TOKEN={s}"


@kind("anthropic key")
def _(r: random.Random) -> tuple[str, str]:
    s = "sk-ant-api03-" + _w(r, 93, B64URL) + "AA"
    return s, f'client = anthropic.Anthropic(api_key="{s}")'


@kind("openrouter key")
def _(r: random.Random) -> tuple[str, str]:
    s = "sk-or-v1-" + _w(r, 64, HEX)
    return s, f"OpenRouter key (budget $20/mo): {s}"


@kind("telegram bot token")
def _(r: random.Random) -> tuple[str, str]:
    s = f"{_d(r, 10)}:AA{_w(r, 33, B64URL)}"
    return s, f"BotFather gave me {s} for @home_alerts_bot"


@kind("discord webhook url")
def _(r: random.Random) -> tuple[str, str]:
    s = f"https://discord.com/api/webhooks/{_d(r, 19)}/{_w(r, 68, B64URL)}"
    return s, f"post build results to {s}"


@kind("notion integration token")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["ntn_" + _w(r, 46), "secret_" + _w(r, 43)])
    return s, f"Notion internal integration secret → {s}"


@kind("groq pinecone airtable keys")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["gsk_" + _w(r, 52), "pcsk_" + _w(r, 5) + "_" + _w(r, 63), "pat" + _w(r, 14) + "." + _w(r, 64, HEX)])
    return s, f"tool output:\n$ grep -r KEY ~/.config/agent/keys.txt\nkey: {s}\n"


@kind("atlassian api token")
def _(r: random.Random) -> tuple[str, str]:
    s = "ATATT3xFfGF0" + _w(r, 170, B64URL) + "=" + _w(r, 8, UPPER_ALNUM)
    return s, f"jira: me@work + API token {s}"


@kind("pypi token")
def _(r: random.Random) -> tuple[str, str]:
    s = "pypi-AgEIcHlwaS5vcmcCJ" + _w(r, 120, B64URL)
    return s, f"~/.pypirc\n[pypi]\n  username = __token__\n  password = {s}\n"


@kind("sentry auth token printenv")
def _(r: random.Random) -> tuple[str, str]:
    s = "sntryu_" + _w(r, 64, HEX)
    return s, f"$ printenv | grep -i token\nSENTRY_AUTH_TOKEN={s}\nHISTCONTROL=ignoreboth"


@kind("totp seed otpauth")
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, BASE32)
    return s, f"otpauth://totp/Proton:me?secret={s}&issuer=Proton — the QR didn't scan so I typed it"


@kind("zoom link with pwd")
def _(r: random.Random) -> tuple[str, str]:
    s = f"https://us06web.zoom.us/j/{_d(r, 11)}?pwd={_w(r, 32)}.1"
    return s, f"therapy call every thursday: {s}"


@kind("jwt")
def _(r: random.Random) -> tuple[str, str]:
    def seg(obj: str) -> str:
        return base64.urlsafe_b64encode(obj.encode()).decode().rstrip("=")

    head = seg('{"alg":"' + r.choice(["HS256", "RS256", "ES256"]) + '","typ":"JWT"}')
    body = seg(f'{{"sub":"{_d(r, 8)}","name":"{_en_name(r)}","iat":{_d(r, 10)},"role":"admin"}}')
    s = f"{head}.{body}.{_w(r, 43, B64URL)}"
    return s, f"token from devtools (expires tonight): {s}"


@kind("openssh private key")
def _(r: random.Random) -> tuple[str, str]:
    blob = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + _b64(r, 280)
    lines = [blob[i : i + 70] for i in range(0, len(blob), 70)]
    s = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----"
    return s, f"deploy key for the pi (id_ed25519):\n```\n{s}\n```"


@kind("age secret key")
def _(r: random.Random) -> tuple[str, str]:
    s = "AGE-SECRET-KEY-1" + _w(r, 58, BECH32).upper()
    return s, f"# created: 2026-11-02T10:11:12Z\n# public key: age1{_w(r, 58, BECH32)}\n{s}"


@kind("wireguard private key")
def _(r: random.Random) -> tuple[str, str]:
    s = _b64(r, 32)
    return s, f"wg0.conf\n[Interface]\nPrivateKey = {s}\nAddress = 10.8.0.2/24\nDNS = 10.8.0.1\n"


@kind("pgp private key block")
def _(r: random.Random) -> tuple[str, str]:
    blob = "lQOYBG" + _b64(r, 300)
    lines = [blob[i : i + 64] for i in range(0, len(blob), 64)]
    s = (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        + "\n".join(lines)
        + f"\n={_w(r, 4, ALNUM)}\n-----END PGP PRIVATE KEY BLOCK-----"
    )
    return s, f"backup of my signing key, paste into `gpg --import`:\n{s}"


@kind("k8s secret base64 blob")
def _(r: random.Random) -> tuple[str, str]:
    s = base64.b64encode(_pw(r).encode()).decode()
    return (
        s,
        f"$ kubectl get secret db-creds -o yaml\napiVersion: v1\ndata:\n  password: {s}\n"
        "  username: YXBw\nkind: Secret",
    )


@kind("docker inspect env")
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f'"Env": [\n  "PATH=/usr/local/bin:/usr/bin",\n  "POSTGRES_PASSWORD={s}",\n  "PGDATA=/var/lib/pg"\n]'


# ── personal data (en) ───────────────────────────────────────────────────────────────────────────────


@kind("phone numbers intl")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(
        [
            f"+44 7{_w(r, 3, string.digits)} {_w(r, 6, string.digits)}",
            f"+49 15{r.randint(1, 9)} {_w(r, 8, string.digits)}",
            f"+33 6 {' '.join(_w(r, 2, string.digits) for _ in range(4))}",
            f"090-{_w(r, 4, string.digits)}-{_w(r, 4, string.digits)}",
            f"+91 9{_w(r, 4, string.digits)} {_w(r, 5, string.digits)}",
            f"+55 11 9{_w(r, 4, string.digits)}-{_w(r, 4, string.digits)}",
            f"04{_w(r, 2, string.digits)} {_w(r, 3, string.digits)} {_w(r, 3, string.digits)}",
        ]
    )
    who = r.choice(["Lukas's new number", "the plumber", "Aunt Marie (mobile)", "landlord"])
    return s, f"{who}: {s}"


@kind("us phone")
def _(r: random.Random) -> tuple[str, str]:
    a, b, c = r.randint(201, 989), r.randint(200, 999), _w(r, 4, string.digits)
    s = r.choice([f"({a}) {b}-{c}", f"+1 {a}-{b}-{c}", f"{a}.{b}.{c}"])
    return s, f"call the vet back at {s} before 5pm"


@kind("us ssn")
def _(r: random.Random) -> tuple[str, str]:
    s = _ssn(r)
    return s, r.choice([f"my SSN for the W-9 is {s}", f"SSN: {s} (Emma's, for the daycare form)"])


@kind("uk ni and nhs numbers")
def _(r: random.Random) -> tuple[str, str]:
    ni = (
        f"{r.choice('ABCEGHJKLMNPRSTWXYZ')}{r.choice('ABCEGHJKLMNPRSTWXYZ')} {_w(r, 2, string.digits)} "
        f"{_w(r, 2, string.digits)} {_w(r, 2, string.digits)} {r.choice('ABCD')}"
    )
    s = r.choice([ni, _nhs(r)])
    return s, f"for the GP registration: {s}"


@kind("passport number")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(
        [
            "C" + _w(r, 8, "CFGHJKLMNPRTVWXYZ0123456789"),  # German
            _d(r, 9),  # US / UK
            _w(r, 2, string.ascii_uppercase) + _w(r, 7, string.digits),  # e.g. Canada, NL-ish
        ]
    )
    return s, f"passport no. {s}, expires 2031 — needed for the ESTA"


@kind("credit card luhn")
def _(r: random.Random) -> tuple[str, str]:
    num = r.choice([_luhn(r, "4", 16), _luhn(r, "5" + r.choice("12345"), 16), _luhn(r, "37", 15)])
    s = r.choice([_groups(num), num, _groups(num, 4, "-")])
    return s, f"card on file {s} exp {r.randint(1, 12):02d}/{r.randint(27, 31)} cvv {_w(r, 3, string.digits)}"


@kind("iban")
def _(r: random.Random) -> tuple[str, str]:
    iban = r.choice(
        [
            _iban("DE", _w(r, 18, string.digits)),
            _iban("GB", _w(r, 4, string.ascii_uppercase) + _w(r, 14, string.digits)),
            _iban("NL", _w(r, 4, string.ascii_uppercase) + _w(r, 10, string.digits)),
            _iban("ES", _w(r, 20, string.digits)),
            _iban("FR", _w(r, 23, string.digits)),
        ]
    )
    s = r.choice([iban, _groups(iban)])
    return s, f"rent goes to {s} (BIC on the contract)"


@kind("tax ids")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(
        [
            f"9{_w(r, 2, string.digits)}-7{r.randint(0, 8)}-{_w(r, 4, string.digits)}",  # ITIN
            _w(r, 5, string.ascii_uppercase) + _w(r, 4, string.digits) + r.choice(string.ascii_uppercase),  # PAN
            f"{_d(r, 2)} {_w(r, 3, string.digits)} {_w(r, 3, string.digits)} {_w(r, 3, string.digits)}",  # Steuer-ID
        ]
    )
    return s, f"accountant needs my tax id: {s}"


@kind("license plate en")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(
        [
            f"{_w(r, 2, 'ABCDEFGHKLMNOPRSVWY')}{r.randint(51, 75)} {_w(r, 3, 'ABCDEFGHJKLMNOPRSTUVWXYZ')}",
            f"{r.randint(1, 9)}{_w(r, 3, string.ascii_uppercase)}-{_w(r, 3, string.digits)}",
            f"{_w(r, 1, 'BMHKS')}-{_w(r, 2, string.ascii_uppercase)} {r.randint(100, 9999)}",
        ]
    )
    return s, f"our car: grey Skoda, plate {s}"


@kind("home address en")
def _(r: random.Random) -> tuple[str, str]:
    street = r.choice(["Maple Ridge Dr", "Kingsley Road", "Alder Ct", "W 43rd St", "Harbor View Ln", "Elm Grove"])
    s = r.choice(
        [
            f"{r.randint(12, 9899)} {street}, Apt {r.randint(1, 30)}{r.choice('ABCD')}, Portland, OR 97{_d(r, 3)}",
            f"Flat {r.randint(1, 40)}, {r.randint(2, 199)} {street}, Bristol BS{r.randint(1, 16)} "
            f"{r.randint(1, 9)}{_w(r, 2, 'ABDEFGHJLNPQRSTUWXYZ')}",
        ]
    )
    return s, f"ship the replacement part to {s}"


@kind("dob with name en")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(
        [
            f"{r.randint(1, 28)} {r.choice(_MONTHS)} {r.randint(1935, 2015)}",
            f"{r.choice(_MONTHS)} {r.randint(1, 28)}, {r.randint(1935, 2015)}",
            f"{r.randint(1, 12):02d}/{r.randint(1, 28):02d}/{r.randint(1935, 2015)}",
        ]
    )
    return s, r.choice([f"for the insurance form — {_en_name(r)}, born {s}", f"{_en_name(r)} (DOB {s}) is my son"])


@kind("medical record number")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([f"MRN {_d(r, 9)}", f"MRN-{_w(r, 2, string.ascii_uppercase)}{_d(r, 8)}"])
    return s, f"oncology follow-up, {s}, bring the MRI CD"


@kind("email personal")
def _(r: random.Random) -> tuple[str, str]:
    domain = r.choice(["gmail.com", "proton.me", "outlook.com", "icloud.com", "fastmail.com", "gmx.de"])
    s = f"{r.choice(_FIRST).lower()}.{r.choice(_LAST).lower()}{_d(r, 4)}@{domain}"
    return s, f"my personal address is {s}, use it for the lawyer"


@kind("email obfuscated")
def _(r: random.Random) -> tuple[str, str]:
    user = f"{r.choice(_FIRST).lower()}{r.choice(['.', '_', ''])}{r.choice(_LAST).lower()}{_d(r, 3)}"
    dom = r.choice(["gmail", "proton", "posteo"])
    s = r.choice(
        [
            f"{user} [at] {dom} [dot] com",
            f"{user} (at) {dom} (dot) com",
            f"{user} AT {dom} DOT com",
            f"{user}@{dom}·com",
        ]
    )
    return s, f"she wrote her email on the form as {s}"


@kind("eth btc wallet address")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["0x" + _w(r, 40, "0123456789abcdefABCDEF"), "bc1q" + _w(r, 38, BECH32)])
    return s, f"send my half of the dinner to {s}"


_BIP39 = (
    "abandon ability absorb bacon badge balance bamboo banana cabin cactus cage damage dance eager eagle early fabric "
    "faculty gadget galaxy gallery habit hammer ice icon idea jacket jaguar kangaroo kettle label ladder machine "
    "magic magnet napkin narrow nation oak obey object paddle palace quality quantum quarter rabbit raccoon saddle "
    "table tackle ugly umbrella unable vacant vacuum valid wagon walnut yard yellow zebra zero winter wisdom wolf "
    "tomato tornado orbit orange ocean oyster pepper piano pilot river robot rocket silver sketch soccer solar spider "
    "sunset tiger timber tunnel velvet village violin vivid voyage muffin museum mushroom music lemon leopard lizard "
    "lobster kitten kiwi knife hockey honey horse glove goat gorilla garlic fossil fox frog desert dinosaur dolphin "
    "donkey crystal cube cupboard coffee coconut clown castle camera canal bridge brisk bronze broccoli alpha anchor "
    "elephant elbow engine enjoy equip"
).split()


@kind("seed phrase en")
def _(r: random.Random) -> tuple[str, str]:
    s = " ".join(r.choice(_BIP39) for _ in range(r.choice([12, 24])))
    return s, f"ledger recovery words, in order:\n{s}\n(keep offline!!)"


# ── internal hosts (en) ──────────────────────────────────────────────────────────────────────────────


@kind("private ip url")
def _(r: random.Random) -> tuple[str, str]:
    s = f"https://{_private_ip(r)}:{r.choice([8006, 8443, 9443, 5001, 8123, 3000])}"
    return s, f"proxmox / home assistant UI lives at {s}/ (self-signed cert, click through)"


@kind("lan local internal host")
def _(r: random.Random) -> tuple[str, str]:
    svc = r.choice(["nas", "printer", "pihole", "hass", "jellyfin", "unifi", "frigate", "backup"])
    tld = r.choice(["lan", "local", "internal", "home.arpa", "corp", "intranet"])
    s = f"{svc}-{r.choice(['attic', 'office', 'den', 'garage', 'rack'])}{r.randint(1, 99):02d}.{tld}"
    return s, f"ssh into {s} and restart the container"


@kind("company intranet host")
def _(r: random.Random) -> tuple[str, str]:
    corp = r.choice(["corp.google.com", "amazon.corp", "intranet.ibm.com", "corp.netflix.net", "corp.stripe.com"])
    s = f"{r.choice(['wiki', 'build', 'jira', 'grafana', 'vault'])}-{_w(r, 4, LOWER_ALNUM)}.{corp}"
    return s, f"dashboards moved to https://{s}/d/latency — VPN first"


@kind("k8s service dns")
def _(r: random.Random) -> tuple[str, str]:
    svc = r.choice(["ledger-api", "payments-worker", "auth-gateway", "pg-primary", "search-indexer"])
    s = f"{svc}.team-{_w(r, 5, string.ascii_lowercase)}-prod.svc.cluster.local:{r.choice([8080, 5432, 9090, 443])}"
    return s, f"from inside the cluster hit {s} directly"


@kind("mac address with device")
def _(r: random.Random) -> tuple[str, str]:
    sep = r.choice([":", "-"])
    s = sep.join(_w(r, 2, HEX) for _ in range(6))
    s = s.upper() if r.random() < 0.5 else s
    dev = r.choice(["Jamie's iPhone", "the kid's Switch", "Ring doorbell", "work laptop", "Sonos in kitchen"])
    return s, f"{dev} — MAC {s}, reserved .{r.randint(10, 250)} in DHCP"


# ── one-time and physical codes (en) ─────────────────────────────────────────────────────────────────


@kind("gate keypad code")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([f"*{_w(r, 6, string.digits)}#", _d(r, 8), f"{_w(r, 4, string.digits)}#{_w(r, 4, string.digits)}"])
    return s, r.choice(
        [f"gate code for the cleaners: {s}", f"front door keypad {s} then the bell", f"Airbnb lockbox code {s}"]
    )


@kind("sms verification code")
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([f"G-{_w(r, 6, string.digits)}", _d(r, 8)])
    return s, f"SMS from 22000: {s} is your verification code. Don't share it."


@kind("2fa backup codes")
def _(r: random.Random) -> tuple[str, str]:
    s = " ".join(f"{_w(r, 5, HEX)}-{_w(r, 5, HEX)}" for _ in range(4))
    return s, f"GitHub recovery codes (the ones I haven't used): {s}"


@kind("sim puk and pin")
def _(r: random.Random) -> tuple[str, str]:
    s = _d(r, 8)
    return s, f"new SIM card: PIN 0000 changed, PUK {s}"


@kind("bike lock combo")
def _(r: random.Random) -> tuple[str, str]:
    s = "-".join(str(r.randint(0, 9)) for _ in range(6))
    return s, f"the U-lock in the shed opens with {s}"


# ── Chinese: credentials in prose ────────────────────────────────────────────────────────────────────


@kind("口令 prose", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, r.choice([f"今晚的口令是{s}，进群要对上", f"VPN 口令：{s}（每季度换一次）", f"口令改成 {s} 了"])


@kind("密钥 prose", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_w(r, 32, HEX), _w(r, 40), _b64(r, 32)])
    return s, r.choice([f"接口密钥：{s}（别发群里）", f"加密用的密钥我记在这：{s}", f"对方给的签名密钥是 {s}"])


@kind("登录密码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    what = r.choice(["教务系统", "公司邮箱", "12306", "个税 App", "社保网厅"])
    return s, r.choice([f"我的{what}登录密码改成了{s}", f"{what}的登录密码：{s}，别忘了", f"{what} 登陆密码 {s}"])


@kind("支付密码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_d(r, 8), _pw(r)])
    return s, r.choice([f"网银支付密码和登录密码都用 {s}", f"PayPal 支付密码：{s}", f"交易密码设成了{s}，别告诉别人"])


@kind("开机密码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, r.choice(
        [f"公司电脑开机密码 {s}，IT 说每 90 天要改", f"家里台式机的开机密码是「{s}」", f"笔记本开机密码：{s}"]
    )


_PY_WORDS = ["tianwang", "gaidihu", "baota", "zhenheyao", "xiaoji", "dunmogu", "yueliang", "dahuilang", "feiyu"]


@kind("暗号", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = "-".join(r.sample(_PY_WORDS, 2)) + _d(r, 4)
    return s, f"接头暗号：{s}，对上了再开门"


@kind("wifi 密码 wechat", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    ssid = f"TP-LINK_5G_{_w(r, 4, HEX.upper())}"
    return s, r.choice([f"【Wi-Fi】名称 {ssid} 密码 {s}", f"wifi密码多少？\n—— {s} （{ssid}）", f"无线：{ssid} / {s}"])


@kind("账号 密码 全角冒号", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"财务系统 账号：{_cn_mobile(r)} 密码：{s}\n老板让我记一下"


@kind("密码发你了", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, r.choice(
        [
            f"密码发你了：{s}，登上去记得改",
            f"[微信] 张姐：密码是{s}\n[微信] 我：收到",
            f"问：服务器 root 密码？\n答：{s}",
        ]
    )


@kind("宝塔面板", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8, LOWER_ALNUM)
    ip = f"{r.randint(39, 121)}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}"
    return (
        s,
        f"宝塔面板 外网地址：https://{ip}:{r.randint(10000, 40000)}/{_w(r, 8, LOWER_ALNUM)}\n用户名：admin 密码：{s}",
    )


@kind("远程 临时密码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8, LOWER_ALNUM)
    return s, r.choice(
        [
            f"ToDesk 设备代码 {_d(r, 3)} {_d(r, 3)} {_d(r, 3)}，临时密码 {s}",
            f"向日葵识别码 {_d(r, 3)} {_d(r, 3)} {_d(r, 3)} 验证码 {s}",
        ]
    )


# ── Chinese: config and CLI ──────────────────────────────────────────────────────────────────────────


@kind("yaml 中文注释", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"application-prod.yml：\n```\nspring:\n  redis:\n    # 生产 Redis 密码，不要提交\n    password: {s}\n```"


@kind("nacos properties", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"Nacos 配置中心里那条：spring.datasource.druid.password={s}，改完要重启"


@kind("mysql -p 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"测试库连接：mysql -h {_private_ip(r)} -P 3306 -uroot -p{s} --default-character-set=utf8mb4"


@kind("sshpass 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"跳板机一键登录：sshpass -p '{s}' ssh -p 22 root@{_private_ip(r)}"


@kind("docker login 阿里云镜像", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"推镜像前先登录：docker login --username=dev@{_d(r, 16)} -p {s} registry.cn-hangzhou.aliyuncs.com"


@kind("redis auth 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 20, ALNUM)
    return s, f"连 Redis 之后先执行 AUTH {s}，不然报 NOAUTH"


@kind("工具输出 env 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _kv_secret(r)
    return s, f"已读取 /srv/app/.env（共 6 项）：\nAPP_KEY={s}\nDB_HOST=mysql\n提示：该文件包含敏感信息。"


# ── Chinese: providers ───────────────────────────────────────────────────────────────────────────────


@kind("阿里云 accesskey id", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = "LTAI5t" + _w(r, 18)
    return s, f"阿里云子账号 AccessKey ID：{s}"


@kind("阿里云 accesskey secret", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 30)
    return s, f"AccessKey ID：LTAI5t{_w(r, 18)}\nAccessKey Secret：{s}\n（只显示一次，赶紧存）"


@kind("阿里云 ossutil", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 30)
    return s, f"ossutil config -e oss-cn-hangzhou.aliyuncs.com -i LTAI5t{_w(r, 18)} -k {s}"


@kind("腾讯云 secretkey", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"腾讯云 API 密钥\nSecretId: AKID{_w(r, 32)}\nSecretKey: {s}"


@kind("腾讯云 secretid", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = "AKID" + _w(r, 32)
    return s, f"COS 上传脚本里写死了 SecretId={s}，下次改成环境变量"


@kind("百度 api secret key", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"百度智能云 OCR：API Key {_w(r, 24)}，Secret Key {s}"


@kind("华为云 ak sk", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40)
    return s, f"华为云 OBS 访问密钥：AK={_w(r, 20, UPPER_ALNUM)} SK={s}"


@kind("飞书 app secret", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"飞书机器人：App ID cli_a{_w(r, 15, HEX)}，App Secret {s}"


@kind("钉钉 webhook access_token", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64, HEX)
    return s, f"告警推到钉钉群：https://oapi.dingtalk.com/robot/send?access_token={s}"


@kind("钉钉 加签 secret", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = "SEC" + _w(r, 64, HEX)
    return s, f"钉钉机器人安全设置选了加签，密钥 {s}"


@kind("企业微信 webhook key", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _uuid(r)
    return s, f"企微群机器人：https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={s}"


@kind("企业微信 corpsecret", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 43, B64URL)
    return s, f"获取 token：GET /cgi-bin/gettoken?corpid=ww{_w(r, 16, HEX)}&corpsecret={s}"


@kind("微信公众号 appsecret", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, HEX)
    return s, f"公众号后台：AppID wx{_w(r, 16, HEX)}，AppSecret {s}（重置过一次）"


@kind("gitee 私人令牌", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, HEX)
    return s, f"Gitee 私人令牌：{s}，git push 时密码填它"


@kind("七牛 ak sk", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, B64URL)
    return s, f"七牛云存储 AK：{_w(r, 40, B64URL)}\nSK：{s}"


@kind("国产大模型 api key", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["sk-" + _w(r, 32, HEX), "sk-" + _w(r, 48), _w(r, 32, HEX) + "." + _w(r, 16), _uuid(r)])
    who = r.choice(["DeepSeek", "Kimi（月之暗面）", "智谱 GLM", "通义千问 DashScope", "火山方舟"])
    return s, f"{who} 的 API Key：{s}，充了 50 块"


@kind("百度网盘 分享链接", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = f"https://pan.baidu.com/s/1{_w(r, 22, B64URL)}?pwd={_w(r, 4, LOWER_ALNUM)}"
    return s, f"链接: {s} 提取码: 见链接 --来自百度网盘超级会员的分享"


@kind("ssh 私钥 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    body = "MIIEpAIBAAKCAQEA" + _b64(r, 400)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    s = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"
    return s, f"服务器私钥我贴这了，用完删掉：\n{s}"


# ── Chinese: personal data ───────────────────────────────────────────────────────────────────────────


@kind("手机号 +86", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    m = _cn_mobile(r)
    s = r.choice(
        [f"+86 {m[:3]} {m[3:7]} {m[7:]}", f"{m[:3]}-{m[3:7]}-{m[7:]}", m, f"+86-{m}", f"{m[:3]} {m[3:7]} {m[7:]}"]
    )
    return s, r.choice([f"快递员电话 {s}", f"我妈手机号：{s}", f"有事打我 {s}（微信同号）"])


@kind("港台手机 座机", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(
        [
            f"+852 {r.choice('5679')}{_w(r, 3, string.digits)} {_w(r, 4, string.digits)}",
            f"09{_w(r, 2, string.digits)}-{_w(r, 3, string.digits)}-{_w(r, 3, string.digits)}",
            f"021-{_d(r, 4)} {_w(r, 4, string.digits)}",
        ]
    )
    return s, f"表姐的电话：{s}"


@kind("身份证号", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _cn_id(r)
    return s, r.choice([f"身份证号 {s}，订机票要用", f"帮我填表：身份证号码：{s}", f"孩子的身份证号是{s}"])


@kind("香港身份证", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _hk_id(r)
    return s, f"香港身份证号码 {s}，开户时用"


@kind("台湾身分证", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _tw_id(r)
    return s, f"外婆的身分證字號：{s}"


@kind("护照号 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["E" + _d(r, 8), "E" + r.choice("ABCDEFGH") + _d(r, 7)])
    return s, f"签证材料：护照号 {s}，有效期到 2033 年"


@kind("银行卡号 银联", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    num = _luhn(r, r.choice(["621483", "622848", "621700", "622202", "623052"]), 19)
    s = r.choice([num, _groups(num)])
    bank = r.choice(["招商银行", "农业银行", "建设银行", "工商银行"])
    return s, f"工资卡（{bank}）卡号 {s}，开户行北京分行"


@kind("车牌 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    prov = r.choice("京沪粤浙苏川鄂湘鲁")
    s = r.choice(
        [
            f"{prov}{r.choice('ABCDE')}·{r.choice('DF')}{_w(r, 5, string.digits)}",
            f"{prov}{r.choice('ABCDEFG')}·{_w(r, 5, UPPER_ALNUM.replace('I', '').replace('O', ''))}",
        ]
    )
    return s, f"我的车牌 {s}，物业登记用"


_CITIES = [("上海市", "浦东新区"), ("北京市", "朝阳区"), ("广东省深圳市", "南山区"), ("浙江省杭州市", "西湖区"),
           ("四川省成都市", "武侯区")]  # fmt: skip
_ROADS = ["张杨路", "建国路", "科苑南路", "文三路", "天府大道", "长寿路", "中山北路"]


@kind("家庭住址 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    city, district = r.choice(_CITIES)
    s = (
        f"{city}{district}{r.choice(_ROADS)}{r.randint(1, 2999)}弄{r.randint(1, 40)}号"
        f"{r.randint(1, 3)}{r.randint(0, 2)}{r.randint(1, 9):02d}室"
    )
    return s, r.choice([f"收货地址：{_zh_name(r)} {s}", f"我家住在{s}，快递放门口就行"])


@kind("生日 带姓名", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(
        [
            f"{r.randint(1935, 2015)}年{r.randint(1, 12)}月{r.randint(1, 28)}日",
            f"{r.randint(1935, 2015)}.{r.randint(1, 12):02d}.{r.randint(1, 28):02d}",
        ]
    )
    return s, r.choice([f"记一下家人生日：{_zh_name(r)} {s} 出生，农历另算", f"我爸{_zh_name(r)}，出生日期 {s}"])


@kind("病历号 住院号", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([f"ZY{_d(r, 10)}", f"MZ{r.randint(2020, 2026)}{_w(r, 6, string.digits)}", _d(r, 10)])
    return s, f"爸爸在瑞金医院的住院号/病案号：{s}，复查带上"


@kind("微信号", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["wxid_" + _w(r, 14, LOWER_ALNUM), r.choice(_PINYIN) + "_" + _w(r, 6, LOWER_ALNUM)])
    return s, r.choice([f"加我微信：{s}", f"中介的微信号是 {s}，备注看房"])


@kind("qq 号 qq邮箱", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    qq = _d(r, r.choice([9, 10]))
    s = r.choice([qq, f"{qq}@qq.com"])
    return s, f"老同学 QQ：{s}"


@kind("支付宝账号", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_cn_mobile(r), f"{r.choice(_PINYIN)}{_d(r, 4)}@163.com"])
    return s, f"房租转到支付宝账号 {s}（*婷），别转错"


@kind("邮箱 #替换@", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(_PINYIN)}{_d(r, 4)}#{r.choice(['qq.com', '163.com', '126.com', 'foxmail.com'])}"
    return s, f"联系邮箱 {s}（#换成@）"


@kind("trc20 钱包地址", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = "T" + _w(r, 33, BASE58)
    return s, f"USDT 收款地址（TRC20）：{s}，转之前先转 1U 试试"


_ZH_BIP39 = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行"
    "学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前"
    "外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系"
)


@kind("中文助记词", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = " ".join(r.choice(_ZH_BIP39) for _ in range(12))
    return s, f"钱包助记词（中文，按顺序）：{s}\n抄在纸上了，锁抽屉里"


# ── Chinese: internal hosts ──────────────────────────────────────────────────────────────────────────


@kind("内网地址 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = f"http://{_private_ip(r)}:{r.choice([8080, 8090, 9000, 5000, 8848])}"
    return s, r.choice([f"内网 Jenkins 在 {s}/ ，账号问我", f"Nacos 控制台 {s}/nacos 只能公司网络访问"])


@kind("群晖 local 地址", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(['DiskStation', 'ds920', 'nas', 'homeserver'])}-{_w(r, 4, LOWER_ALNUM)}.local:5001"
    return s, f"家里群晖的地址：https://{s}，外网用 QuickConnect"


@kind("公司内网域名", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    corp = r.choice(["alibaba-inc.com", "sankuai.com", "byted.org", "corp.kuaishou.com", "oa.corp.netease.com"])
    s = f"{r.choice(['oa', 'git', 'kibana', 'wiki', 'devops'])}-{_w(r, 4, LOWER_ALNUM)}.{corp}"
    return s, f"新同事记一下：发布平台在 {s}，要先连公司 VPN"


@kind("mac 地址 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = ":".join(_w(r, 2, HEX.upper()) for _ in range(6))
    return s, f"儿子的 Switch 的 MAC 地址 {s}，路由器里设了每晚十点断网"


# ── Chinese: one-time and physical codes ─────────────────────────────────────────────────────────────


@kind("取件码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([f"{r.randint(10, 39)}-{r.randint(1, 6)}-{r.randint(1000, 9999)}", _d(r, 8)])
    return s, r.choice(
        [
            f"【菜鸟驿站】您的中通包裹已到小区东门驿站，请凭{s}取件",
            f"【丰巢】取件码 {s}，请在 18 小时内取件",
            f"帮我拿下快递，取件码{s}",
        ]
    )


@kind("动态口令 验证码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _d(r, 8)
    return s, r.choice([f"【某银行】您的动态口令为{s}，5分钟内有效，请勿泄露", f"验证码：{s}，你帮我输一下"])


@kind("门锁 临时密码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_d(r, 8), f"{_w(r, 4, string.digits)}#{_w(r, 4, string.digits)}"])
    return s, r.choice([f"智能门锁临时密码 {s}，保洁阿姨周三用", f"小区大门密码 {s}", f"单元门禁密码是{s}"])


@kind("保险柜密码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = "-".join(f"{r.randint(0, 99):02d}" for _ in range(4))
    return s, f"保险柜密码（先左转）：{s}"


@kind("备用码 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = f"{_w(r, 4, string.digits)} {_w(r, 4, string.digits)}"
    return s, f"谷歌账号两步验证备用码还剩这个：{s}，用掉就划掉"


# ── Chinese: more credentials, tokens and capability links ───────────────────────────────────────────


@kind("邮箱 smtp 授权码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_w(r, 16, string.ascii_lowercase), _w(r, 16, string.ascii_uppercase)])
    box = r.choice(["QQ 邮箱", "163 邮箱", "企业邮箱"])
    return s, f"{box}开了 SMTP，授权码 {s}（不是登录密码），脚本发邮件用"


@kind("b站 sessdata cookie", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = f"{_w(r, 8, HEX)}%2C{_d(r, 10)}%2C{_w(r, 5, HEX)}%2A{_w(r, 2, HEX)}"
    return s, f"下载脚本要 B 站 cookie：SESSDATA={s}; bili_jct={_w(r, 32, HEX)}"


@kind("京东 pt_key cookie", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = "AAJ" + _w(r, 61, B64URL)
    return s, f"签到脚本的 JD_COOKIE：pt_key={s};pt_pin=jd_{_w(r, 10, LOWER_ALNUM)};"


@kind("抓包 bearer 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 48, ALNUM)
    return s, f"用 Charles 抓包看到请求头里有 Authorization: Bearer {s} ，是不是就能直接调接口了？"


@kind("登录接口返回 jwt 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    head = "eyJhbGciOiJIUzUxMiJ9"
    body = base64.urlsafe_b64encode(f'{{"sub":"{_cn_mobile(r)}","exp":{_d(r, 10)}}}'.encode()).decode().rstrip("=")
    s = f"{head}.{body}.{_w(r, 86, B64URL)}"
    return s, f'登录接口返回：{{"code":0,"msg":"成功","data":{{"token":"{s}"}}}}'


@kind("微信支付 apiv3 密钥", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"微信支付商户号 16{_d(r, 8)}，APIv3 密钥 {s}，证书序列号找财务要"


@kind("支付宝 应用私钥", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + _b64(r, 600)
    return s, f"支付宝开放平台 APPID 2021{_d(r, 12)}\n应用私钥（RSA2）：{s}"


@kind("极光 高德 短信 key", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_w(r, 24, HEX), _w(r, 32, HEX)])
    who = r.choice(["极光推送 Master Secret", "高德 Web 服务 Key 的安全密钥", "腾讯云短信 SDK AppKey"])
    return s, f"{who}：{s}"


@kind("github token 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["ghp_" + _w(r, 36), "gho_" + _w(r, 36)])
    return s, f"GitHub 的 token 是 {s} ，Actions 里要用，勾了 repo 权限"


@kind("中转 api key", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = "sk-" + _w(r, 48)
    return s, f"中转站：base_url=https://api.{_w(r, 6, string.ascii_lowercase)}.top/v1 ，key={s} ，一块钱一刀"


@kind("aws 密钥 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, ALNUM + "/+")
    return s, f"海外服务器用的 AWS：访问密钥 AKIA{_w(r, 16, UPPER_ALNUM)}，秘密访问密钥 {s}"


@kind("ecs root 密码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    ip = f"{r.choice([47, 39, 101, 120, 121])}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}"
    return s, f"阿里云 ECS 公网 IP {ip}，root 密码 {s}，22 端口只放行公司 IP"


@kind("机场订阅链接", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = f"https://{_w(r, 6, string.ascii_lowercase)}.xyz/api/v1/client/subscribe?token={_w(r, 32, HEX)}"
    return s, f"机场订阅地址（别外传，会被封）：{s}"


@kind("clash 配置 password", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 22, ALNUM)
    return s, (
        "config.yaml 节点：\nproxies:\n  - {name: 香港01, type: ss, server: hk1.example.net, port: 443, "
        f"cipher: aes-256-gcm, password: {s}}}"
    )


@kind("ss 链接", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = base64.urlsafe_b64encode(f"chacha20-ietf-poly1305:{_w(r, 16)}".encode()).decode().rstrip("=")
    return s, f"分享给你的节点：ss://{s}@{_private_ip(r)}:{r.randint(10000, 60000)}#%E5%AE%B6%E9%87%8C"


@kind("vmess uuid", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _uuid(r)
    return s, f"v2ray 客户端：地址 jp.{_w(r, 5, string.ascii_lowercase)}.net 端口 443 用户ID {s} alterId 0 传输 ws"


@kind("校园网 账号密码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"校园网认证：学号 20{r.randint(19, 25)}{_d(r, 6)}，密码 {s}，宿舍路由器要填"


@kind("wifi 二维码字符串", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"扫码连 Wi-Fi 的二维码内容：WIFI:T:WPA;S:ChinaNet-{_w(r, 4, UPPER_ALNUM)};P:{s};;"


@kind("apple id 密码 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"Apple ID：{r.choice(_PINYIN)}{_d(r, 4)}@icloud.com\n密码：{s}\n密保问题答案都是“小白”"


@kind("光猫超级密码", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_w(r, 8, ALNUM + "%&"), "telecomadmin" + _d(r, 8)])
    return s, f"电信光猫超级管理员账号 telecomadmin，超级密码 {s}，改桥接要用"


@kind("totp 密钥 分组 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = " ".join(_w(r, 4, BASE32.lower()) for _ in range(8))
    return s, f"谷歌验证器扫不了码，手动输入的密钥：{s}"


@kind("币安 api secret", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64)
    return s, f"币安量化机器人 API Key：{_w(r, 64)}\nSecret Key：{s}\n（只开了现货交易，没开提现）"


@kind("pg 连接串 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"报表库连接串：postgresql://report:{s}@{_private_ip(r)}:5432/bi ，只读账号"


@kind("spring jdbc 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, (
        f"订单服务数据源：jdbc:mysql://{_private_ip(r)}:3306/order?useSSL=false&serverTimezone=Asia/Shanghai"
        f"&user=order_rw&password={s}"
    )


@kind("ftp 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _pw(r, url_safe=True)
    return s, f"FileZilla 站点：主机 ftp.{_w(r, 6, string.ascii_lowercase)}.cn 用户 web{_d(r, 3)} 密码 {s} 端口 21"


# ── Chinese: more personal data, wallets, hosts ──────────────────────────────────────────────────────

_VIN_VALUES = dict(zip("0123456789ABCDEFGHJKLMNPRSTUVWXYZ", [*range(10), 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 7, 9, 2,
                   3, 4, 5, 6, 7, 8, 9], strict=True))  # fmt: skip
_VIN_WEIGHTS = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2]


def _vin(r: random.Random) -> str:
    chars = "0123456789ABCDEFGHJKLMNPRSTUVWXYZ"
    vin = r.choice(["LSV", "LFV", "LGB", "LVS", "LRW"]) + _w(r, 5, chars) + "0" + _w(r, 8, chars)
    total = sum(_VIN_VALUES[c] * w for c, w in zip(vin, _VIN_WEIGHTS, strict=True)) % 11
    return vin[:8] + ("X" if total == 10 else str(total)) + vin[9:]


@kind("车架号 vin", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _vin(r)
    return s, f"行驶证上的车架号 {s}，续保要填"


@kind("手机 imei", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = _luhn(r, r.choice(["86", "35"]), 15)
    return s, f"手机丢了，报警要 IMEI：{s}（包装盒上抄的）"


def _b58(raw: bytes) -> str:
    n, out = int.from_bytes(raw, "big"), ""
    while n:
        n, rem = divmod(n, 58)
        out = BASE58[rem] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


@kind("比特币 wif 私钥", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    payload = b"\x80" + bytes(r.randrange(256) for _ in range(32)) + b"\x01"
    s = _b58(payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4])
    return s, f"冷钱包私钥（WIF 格式）：{s}，导入 Electrum 就能用"


@kind("以太坊私钥 小狐狸", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice(["0x", ""]) + _w(r, 64, HEX)
    return s, f"小狐狸钱包导出的私钥：{s}，千万别发给客服"


@kind("支付宝收款码链接", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = f"https://qr.alipay.com/fkx{_w(r, 20, LOWER_ALNUM)}"
    return s, f"我的收款码链接 {s} ，聚餐 AA 转这里"


@kind("k8s svc 中文", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    svc = r.choice(["order-svc", "user-center", "mq-consumer"])
    s = f"{svc}.{_w(r, 4, string.ascii_lowercase)}-prod.svc.cluster.local"
    return s, f"集群内调用地址：http://{s}:8080 ，不要走网关"


@kind("公积金 社保 账号", zh=True)
def _(r: random.Random) -> tuple[str, str]:
    s = r.choice([_d(r, 12), f"{_d(r, 3)}{_w(r, 9, string.digits)}"])
    return s, f"住房公积金个人账号 {s}，提取时要用"


CHINESE: frozenset[str] = frozenset(_ZH)

# ── private markers ──────────────────────────────────────────────────────────────────────────────────

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"(private) {t}",
    lambda t: f"{t} [PRIVATE]",
    lambda t: f"PRIVATE: {t}",
    lambda t: f"Do not publish — {t}",
    lambda t: f"{t} (don't share)",
    lambda t: f"[confidential] {t}",
    lambda t: f"#private {t}",
    lambda t: f"{t} @private",
    lambda t: f"🔒 {t}",
    lambda t: f"<private>{t}</private>",
    lambda t: f"[私密] {t}",
    lambda t: f"【隐私】{t}",
    lambda t: f"{t}（私人，勿公开）",
    lambda t: f"仅自己可见：{t}",
    lambda t: f"{t} #私密",
    lambda t: f"不要公开 | {t}",
    lambda t: f"{t} [保密]",
    lambda t: f"Private — {t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"visibility": "private"},
    {"private": "yes"},
    {"publish": False},
    {"access": "private"},
    {"tags": ["personal", "private"]},
    {"confidential": True},
    {"public": False},
    {"私密": True},
    {"visibility": "私密"},
    {"status": "private"},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "## Private",
    "## Private notes (do not publish)",
    "### Personal — not for the wiki",
    "## Confidential",
    "## 私密",
    "## 隐私信息（不要公开）",
    "### 仅自己可见",
]

# ── ordinary technical strings ───────────────────────────────────────────────────────────────────────

ORDINARY: list[str] = [
    "pip install 'mkdocs-material>=9.5,<10'",
    "Python 3.12.4",
    "git checkout 3f9c2e1",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "request id 550e8400-e29b-41d4-a716-446655440000",
    "uuid4() returns e.g. 0f8fad5b-d9cb-469f-a165-70867728950e",
    "https://docs.python.org/3/library/secrets.html",
    "https://github.com/mkdocs/mkdocs/releases/tag/1.6.1",
    "docs/guide/getting-started.md",
    "src/app/settings.py line 42",
    "password: ${DB_PASSWORD}",
    "Authorization: Bearer <your-token>",
    "export OPENAI_API_KEY=<your-api-key>",
    'api_key = "YOUR_API_KEY_HERE"',
    "DATABASE_URL=postgres://user:password@localhost:5432/dbname",
    "redis://localhost:6379/0",
    'ssh-keygen -t ed25519 -C "laptop"',
    "chmod 600 ~/.ssh/id_ed25519",
    "kubectl -n kube-system get pods -o wide",
    "docker run --rm -p 8000:8000 squidfunk/mkdocs-material",
    "mkdocs serve -a 127.0.0.1:8000",
    "ModuleNotFoundError: No module named 'yaml'",
    "HTTP 401 Unauthorized: the token has expired",
    "ERROR: invalid password (min length 12)",
    "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty.txt",
    "link colour #1e88e5, background #fafafa",
    "released on 2026-11-30",
    "ISO 8601: 2026-12-03T09:30:00Z",
    "node >= 20.11.0",
    "npm install --save-dev prettier@3.3.3",
    "cargo add serde --features derive",
    "go get golang.org/x/crypto@v0.28.0",
    "rg -n 'TODO' src/",
    "curl -fsSL https://astral.sh/uv/install.sh | sh",
    "nameserver 1.1.1.1",
    "listen 0.0.0.0:8080",
    "timeout = 30s, retries = 3",
    "JWT access tokens expire after 15 minutes",
    "password_min_length: 12",
    "token_url: https://oauth2.googleapis.com/token",
    "OAuth scope: read:user repo",
    "RFC 7519 defines JSON Web Tokens",
    "CVE-2024-3094 (xz backdoor)",
    "port 5432 is PostgreSQL's default",
    "git remote add origin git@github.com:owner/repo.git",
    "the ghp_ prefix marks a GitHub personal access token",
    "base64 -d < input.txt > output.bin",
    "10.0.0.0/8, 172.16.0.0/12 and 192.168.0.0/16 are private ranges (RFC 1918)",
    "example.com and example.org are reserved for documentation",
    "e.g. user@example.com",
    "curl http://localhost:3000/api/health",
    "v2.14.0-rc.1",
    "SELECT id, name FROM users WHERE active = true LIMIT 10;",
    "regex ^[A-Za-z0-9_-]{20,}$",
    "Content-Type: application/json; charset=utf-8",
    "Cache-Control: no-store",
    "bcrypt cost factor 12",
    "openssl rand -hex 32",
    "htpasswd -c /etc/nginx/.htpasswd admin",
    "auth_basic_user_file /etc/nginx/.htpasswd;",
    "psql -h localhost -U postgres -W",
    'redis-cli -a "$REDIS_PASSWORD" ping',
    "secret_key: <generated-at-install>",
    "Docker image python:3.12-slim-bookworm",
    "pytest -q tests/test_build.py::test_site",
    "ulimit -n 65535",
    "ISBN 978-0-13-468599-1",
    "git tag -s v1.0.0 -m 'first release'",
    "MAC address format: aa:bb:cc:dd:ee:ff",
    "密码长度至少 12 位，需包含大小写字母和数字",
    "token 过期后需要重新登录",
    "请在 .env 中配置 DEEPSEEK_API_KEY，不要提交到仓库",
    "支付密码连续输错 3 次会被锁定 24 小时",
    "验证码 5 分钟内有效",
    "取件码在短信里，到驿站报手机尾号也行",
    "口令管理器推荐用 KeePassXC 或 Bitwarden",
    "生产环境的密钥统一放在 Vault 里",
    "访问 http://localhost:8000 查看本地预览",
    "第 3 章：部署到 GitHub Pages",
    "UTF-8 编码，换行符用 LF",
    "版本号遵循 SemVer 2.0.0",
    "数据库密码通过环境变量 DB_PASSWORD 传入",
    "mkdocs.yml 里的 site_url 要改成自己的域名",
    "开启 2FA 后登录需要动态口令",
]
