# ruff: noqa: E501
"""Blind canary set, round 3: written without reading the filter (see tests/blind/example_set.py for the format).

Secrets are drawn per call, so every canary is unique. Kinds whose name ends in " zh" are phrased in Chinese.
Classes covered: credentials by context (prose, key=value, CLI flags, config files, URLs, tables), secret-shaped
tokens with no credential word beside them (real and invented providers, JWTs, key blocks, wrapped tokens),
personal data (phones, IDs with valid check digits, cards with valid Luhn, IBANs with valid mod-97, e-mails,
messenger ids, addresses, plates, seed phrases) and internal hosts and addresses.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable

LOW = string.ascii_lowercase
UP = string.ascii_uppercase
DIG = string.digits
ALNUM = string.ascii_letters + string.digits
UPDIG = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = string.ascii_letters + string.digits + "+/"
B64URL = string.ascii_letters + string.digits + "-_"
BASE32 = string.ascii_uppercase + "234567"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"

# Real words of the English BIP-39 list (a subset).
BIP39 = """
able access across addict affair aim alien also analyst announce apart area arrange ask atom aunt aware bacon
banner battle begin best bind blanket blue bone bottom brave brisk bubble bundle butter cake candy car cash
cattle census chaos chef choose citizen clean clip clump coil comic consider core course crane crew crowd
crystal curve dance debate deer demise deputy detail diary dinner dismiss doctor donor drastic drive dust
earn edge elder embark enable engage ensure era essence exact exercise expect eyebrow false fashion february
fetch film firm flame flock fog forget fox front furnace gap gate genuine girl globe gold grab green guard
hair harsh heart hero hobby hood hour hungry icon image inch infant inmate inspire iron jar joke junk kid
kitten labor later layer leg leopard life liquid local lounge luxury main mansion marriage matter medal mercy
middle minute mixture monster motion mule myself nation nephew next north nuclear obscure off olympic opera
ordinary outer oxygen palm park pattern pelican person picture pipe play point portion power prevent prize
proof pull purity quantum raccoon rally rather rebuild reform relief rent resemble reunion rich ripple robust
rough run salad satisfy scare scout seat select session shed shock shrug sign sing ski slender slush snap
soft soon space spend spoil spy stairs stem stone struggle success sun surge swap sword tail tattoo tent
theory throw time today tone torch town trap tribe true tumble twice unable unhappy unusual urban utility
vanish venture viable violin vocal wagon warrior weapon welcome where win wisdom wool wrestle young
""".split()

_HUMAN_WORDS = [
    "Harbor",
    "Mango",
    "Tiger",
    "Lotus",
    "Falcon",
    "Panda",
    "Summer",
    "Winter",
    "Qiuqiu",
    "Xiaomi",
    "Dragon",
    "Maple",
    "Coffee",
    "Sunny",
    "Lucky",
    "Rocket",
    "Ocean",
    "Jasmine",
    "Bamboo",
    "Kitty",
    "Shadow",
    "Wuhan",
    "Hangzhou",
    "Dolphin",
    "Pepper",
    "Cherry",
    "Nemo",
    "Totoro",
    "Pikachu",
    "Snoopy",
]
_PINYIN = ["wang", "li", "zhang", "liu", "chen", "yang", "huang", "zhao", "zhou", "wu", "xu", "sun", "lin", "guo", "he"]
_GIVEN = ["xiaoyu", "wei", "fang", "jing", "lei", "ting", "hao", "min", "yan", "qiang", "lili", "jun", "xin", "bo"]
_FIRST = [
    "dana",
    "mike",
    "sophie",
    "liam",
    "emma",
    "noah",
    "olivia",
    "jonas",
    "hannah",
    "kenji",
    "yuki",
    "priya",
    "tom",
]
_LAST = ["miller", "schmidt", "tanaka", "okafor", "garcia", "novak", "kowalski", "fischer", "brennan", "sato", "patel"]
_COMPANIES = [
    "acme-robotics",
    "northwind",
    "globex",
    "initech",
    "umbrella-labs",
    "contoso",
    "hooli",
    "vandelay",
    "tyrell",
    "wayne-ent",
]
_CN_COMPANIES = ["xingchen", "haina", "yunfan", "tianyi", "jinshan", "lanhai", "qiming", "zhiyuan"]
_SERVICES = [
    "jenkins",
    "grafana",
    "gitlab",
    "sonar",
    "nexus",
    "kibana",
    "vault",
    "harbor",
    "argo",
    "prom",
    "minio",
    "jira",
]


def _w(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _d(rng: random.Random, n: int) -> str:
    return _w(rng, n, DIG)


def _pw(rng: random.Random, syms: str = "!#%;,.?+=-", n: int | None = None) -> str:
    """A random password: upper, lower, digit and one or two of `syms` inside, starting and ending alphanumeric."""
    n = n or rng.randint(10, 15)
    inner = [rng.choice(UP), rng.choice(LOW), rng.choice(DIG), rng.choice(syms), rng.choice(syms)]
    inner += [rng.choice(ALNUM) for _ in range(n - 2 - len(inner))]
    rng.shuffle(inner)
    return rng.choice(ALNUM) + "".join(inner) + rng.choice(ALNUM)


def _pw_human(rng: random.Random) -> str:
    """The way people really pick them: a word, some digits (a year, a birthday), a symbol."""
    word = rng.choice(_HUMAN_WORDS)
    digits = rng.choice([_d(rng, 4), str(rng.randint(1970, 2012)) + _d(rng, 2), _d(rng, 6)])
    sym = rng.choice("!#?%@")
    return rng.choice([f"{word}{digits}{sym}", f"{word}{sym}{digits}", f"{word.lower()}{sym}{digits}{rng.choice(UP)}"])


def _passphrase(rng: random.Random) -> str:
    words = rng.sample(BIP39, 4)
    words.insert(rng.randint(1, 3), str(rng.randint(10, 999)))
    return " ".join(words)


def _b64(rng: random.Random, nbytes: int, urlsafe: bool = False) -> str:
    raw = bytes(rng.getrandbits(8) for _ in range(nbytes))
    return (base64.urlsafe_b64encode(raw).decode().rstrip("=")) if urlsafe else base64.b64encode(raw).decode()


def _uuid(rng: random.Random) -> str:
    h = _w(rng, 32, HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def _group(s: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(s[i : i + size] for i in range(0, len(s), size))


def _luhn(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + _d(rng, length - len(prefix) - 1)
    total = 0
    for i, c in enumerate(reversed(body)):
        n = int(c)
        if i % 2 == 0:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return body + str((10 - total % 10) % 10)


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _cn_id(rng: random.Random) -> str:
    region = rng.choice(["110105", "310115", "440305", "330106", "510104", "420106", "320102", "370202", "610113"])
    body = f"{region}{rng.randint(1960, 2004)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randint(0, 999):03d}"
    check = sum(int(c) * w for c, w in zip(body, _ID_WEIGHTS, strict=True)) % 11
    return body + "10X98765432"[check]


def _iban(country: str, bban: str) -> str:
    digits = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{bban}"


def _cn_mobile(rng: random.Random) -> str:
    return "1" + rng.choice("3456789") + _d(rng, 9)


def _private_ip(rng: random.Random) -> str:
    block = rng.randrange(3)
    if block == 0:
        return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
    if block == 1:
        return f"172.{rng.randint(16, 31)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
    return f"192.168.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


def _jwt(rng: random.Random) -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = {
        "sub": _d(rng, 8),
        "name": rng.choice(_FIRST),
        "role": rng.choice(["admin", "ops", "user"]),
        "iat": rng.randint(1_700_000_000, 1_760_000_000),
    }
    payload = base64.urlsafe_b64encode(json.dumps(claims, separators=(",", ":")).encode()).decode().rstrip("=")
    return f"{header}.{payload}.{_b64(rng, 32, urlsafe=True)}"


def _b64_lines(rng: random.Random, lead: str, lines: int, width: int = 64) -> list[str]:
    body = lead + "".join(rng.choice(B64) for _ in range(lines * width - len(lead)))
    return [body[i : i + width] for i in range(0, len(body), width)]


def _seed(rng: random.Random) -> str:
    return " ".join(rng.choice(BIP39) for _ in range(12))


KINDS: dict[str, Callable[[random.Random], tuple[str, str]]] = {}


def kind(
    name: str,
) -> Callable[[Callable[[random.Random], tuple[str, str]]], Callable[[random.Random], tuple[str, str]]]:
    def register(make: Callable[[random.Random], tuple[str, str]]) -> Callable[[random.Random], tuple[str, str]]:
        KINDS[name] = make
        return make

    return register


# ── 1. credentials by context, English ─────────────────────────────────────────────────────────────


@kind("mysql -p flag")
def _(r):
    s = _pw(r, "!#%;,.?+=")
    return s, f"backup job: mysqldump -h db01 -u backup -p'{s}' --single-transaction shop > shop.sql"


@kind("psql url password")
def _(r):
    s = _pw(r, "!%;,.+=-")
    return s, f'reporting: psql "postgresql://report_ro:{s}@pg-replica:5432/analytics?sslmode=require"'


@kind("redis-cli -a")
def _(r):
    s = _w(r, r.randint(16, 24))
    return s, f"flush the queue with redis-cli -h cache01 -p 6380 -a {s} --no-auth-warning FLUSHDB"


@kind("sshpass -p")
def _(r):
    s = _pw_human(r)
    return (
        s,
        f"the old deploy script does sshpass -p '{s}' ssh -o StrictHostKeyChecking=no deploy@web3 'systemctl restart app'",
    )


@kind("docker login -p")
def _(r):
    s = _pw(r, "!#%.+=-")
    return s, f"docker login -u ci-bot -p {s} registry.gitlab.com  (the CI variable is masked, this is the raw one)"


@kind("curl -u user:pass")
def _(r):
    s = _pw(r, "!%.+=-")
    return s, f"export from the old CRM: curl -u admin:{s} https://crm.example.org/api/v2/export?format=csv -o crm.csv"


@kind("htpasswd -b")
def _(r):
    s = _pw_human(r)
    return s, f"grafana basic auth was set with `htpasswd -b /etc/nginx/.htpasswd grafana {s}`"


@kind("git credential url")
def _(r):
    s = _w(r, 20, ALNUM + "-_")
    return s, f"~/.git-credentials has https://oauth2:{s}@gitlab.com for the infra repo"


@kind("dotenv password")
def _(r):
    s = _pw(r, "!%;,.?+-")
    return s, f"staging .env:\nDB_HOST=pg-staging\nDB_PASSWORD={s}"


@kind("yaml password")
def _(r):
    s = _pw(r, "!#%;,.?+=-")
    return s, f'config/prod.yml ->\ndatabase:\n  username: app\n  password: "{s}"'


@kind("json config pass")
def _(r):
    s = _pw(r, "!#%;,.?+=-")
    return s, '{"smtp": {"host": "smtp.mailgun.org", "user": "postmaster", "pass": "' + s + '"}}'


@kind("ini smtp_password")
def _(r):
    s = _pw(r, "!%,.?+=-")
    return s, f"[mail]\nsmtp_user = alerts\nsmtp_password = {s}"


@kind("netrc password")
def _(r):
    s = _w(r, 32, HEX)
    return s, f"~/.netrc line: machine api.heroku.com login ops-team password {s}"


@kind("pgpass line")
def _(r):
    s = _pw(r, "!#%;,.?+=-")
    return s, f"added to ~/.pgpass (chmod 600): db.prod:5432:*:postgres:{s}"


@kind("aws credentials file")
def _(r):
    s = _w(r, 40, ALNUM + "+/")
    return s, f"[default]\naws_access_key_id = AKIA{_w(r, 16, UPDIG)}\naws_secret_access_key = {s}"


@kind("docker config auth")
def _(r):
    user = r.choice(_FIRST)
    s = base64.b64encode(f"{user}:{_pw(r, '!.+-')}".encode()).decode()
    return s, '~/.docker/config.json: {"auths": {"ghcr.io": {"auth": "' + s + '"}}}'


@kind("kubeconfig token")
def _(r):
    s = _w(r, 6, LOW + DIG) + "." + _w(r, 16, LOW + DIG)
    return s, f"kubeconfig for the lab cluster:\nusers:\n- name: admin\n  user:\n    token: {s}"


@kind("npmrc authToken")
def _(r):
    s = _w(r, 40, ALNUM)
    return s, f".npmrc: //npm.pkg.github.com/:_authToken={s}"


@kind("pip.conf index url")
def _(r):
    s = _pw(r, "!;,.+=-")
    return s, f"[global]\nindex-url = https://ci:{s}@nexus.example.com/repository/pypi/simple"


@kind("url query api_key")
def _(r):
    s = _w(r, 32, LOW + DIG)
    return s, f"weather widget pulls https://api.openweathermap.org/data/2.5/weather?q=Berlin&appid={s}&units=metric"


@kind("markdown table password")
def _(r):
    s = _pw(r, "!#%;,.?+=-")
    return s, f"| service | user | password |\n| --- | --- | --- |\n| grafana | admin | {s} |"


@kind("quoted passphrase with spaces")
def _(r):
    s = _passphrase(r)
    return s, f'passphrase for the laptop ssh key: "{s}"'


@kind("wifi password with punctuation")
def _(r):
    s = _pw(r, ";,#!", n=r.randint(11, 14))
    return s, f"Guest wifi is Cafe-5G, password {s} (yes, with the comma)"


@kind("mongo --password")
def _(r):
    s = _pw(r, "!%.+=-")
    return s, f"mongosh --host mongo2 --username root --password '{s}' --authenticationDatabase admin"


@kind("basic auth header")
def _(r):
    s = base64.b64encode(f"{r.choice(_FIRST)}:{_pw(r, '!.-')}".encode()).decode()
    return s, f'-H "Authorization: Basic {s}" works against the staging API'


@kind("bearer header")
def _(r):
    s = _w(r, 48, ALNUM + "-_")
    return s, f"curl https://api.example.com/v1/me -H 'Authorization: Bearer {s}'"


@kind("dotnet connection string")
def _(r):
    s = _pw(r, "!#%,.?+-")
    return s, f"Server=sql01;Database=crm;User Id=sa;Password={s};TrustServerCertificate=True"


@kind("mongodb+srv uri")
def _(r):
    s = _w(r, 16, ALNUM)
    return s, f"atlas: mongodb+srv://app:{s}@cluster0.{_w(r, 5, LOW + DIG)}.mongodb.net/prod?retryWrites=true"


@kind("wireguard private key")
def _(r):
    s = _b64(r, 32)
    return s, f"[Interface]\nPrivateKey = {s}\nAddress = 10.66.66.2/32"


@kind("hmac key hex")
def _(r):
    s = _w(r, 64, HEX)
    return s, f"webhook HMAC signing key: {s}"


@kind("totp seed")
def _(r):
    s = _w(r, 32, BASE32)
    return s, f"2FA seed for the shared admin account (add to any authenticator): {s}"


# ── 2. secret-shaped tokens with no credential word beside them, English ─────────────────────────


@kind("invented provider token")
def _(r):
    prefix = r.choice(["zk_live_", "qnt_pat_", "brx-prod-", "lmn_sk_", "vrt1_", "oaq-live-"])
    s = prefix + _w(r, 40)
    return s, f"rolled {s} into the staging runner this morning"


@kind("github classic pat")
def _(r):
    s = "ghp_" + _w(r, 36)
    return s, f"left {s} in the old laptop's gitconfig, revoke later"


@kind("github fine-grained pat")
def _(r):
    s = "github_pat_11" + _w(r, 20, UPDIG) + "_" + _w(r, 59)
    return s, f"for the release bot: {s}"


@kind("slack bot")
def _(r):
    s = f"xoxb-{_d(r, 12)}-{_d(r, 13)}-{_w(r, 24)}"
    return s, f"#alerts bot -> {s}"


@kind("aws pair no context")
def _(r):
    s = _w(r, 40, ALNUM + "+/")
    return s, f"AKIA{_w(r, 16, UPDIG)} / {s} (the terraform user)"


@kind("jwt")
def _(r):
    s = _jwt(r)
    return s, f"this one still works against staging: {s}"


@kind("pem rsa block")
def _(r):
    lines = _b64_lines(r, "MIIEpAIBAAKCAQEA", 4)
    s = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"
    return s, f"old deploy key, still on web2:\n{s}"


@kind("openssh key block")
def _(r):
    lines = _b64_lines(r, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", 4, 70)
    s = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----"
    return s, f"id_ed25519 of the backup box\n{s}"


@kind("pgp key block")
def _(r):
    lines = _b64_lines(r, "lQOYBG", 4)
    s = (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        + "\n".join(lines)
        + f"\n={_w(r, 4, B64)}\n-----END PGP PRIVATE KEY BLOCK-----"
    )
    return s, f"signing subkey export:\n{s}"


@kind("putty private lines")
def _(r):
    s = _b64(r, 48)
    text = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240312\nPublic-Lines: 2\n"
        f"AAAAC3NzaC1lZDI1NTE5AAAAI{_w(r, 43, B64)}\nPrivate-Lines: 1\n{s}\nPrivate-MAC: {_w(r, 64, HEX)}"
    )
    return s, text


@kind("bare base64 blob")
def _(r):
    s = _b64(r, 48)
    return s, f"kept {s} from the old cluster just in case"


@kind("token wrapped over two lines")
def _(r):
    a, b = "pat_" + _w(r, 28), _w(r, 28)
    s = f"{a}\n{b}"
    return s, f"runner registration (the chat app wrapped it):\n{s}"


@kind("google api key")
def _(r):
    s = "AIza" + _w(r, 35, ALNUM + "-_")
    return s, f"maps embed on the landing page uses {s}"


@kind("sendgrid key")
def _(r):
    s = f"SG.{_w(r, 22, ALNUM + '-_')}.{_w(r, 43, ALNUM + '-_')}"
    return s, f"newsletter sender: {s}"


@kind("discord webhook url")
def _(r):
    s = _w(r, 68, ALNUM + "-_")
    return s, f"build notifications go to https://discord.com/api/webhooks/{_d(r, 18)}/{s}"


@kind("telegram bot")
def _(r):
    s = f"{_d(r, 10)}:AA{_w(r, 33, ALNUM + '-_')}"
    return s, f"@home_alarm_bot = {s}"


@kind("age secret key")
def _(r):
    s = "AGE-SECRET-KEY-1" + _w(r, 58, BECH32)
    return s, f"sops recipient for the homelab repo: {s}"


# ── 3. personal data, English ──────────────────────────────────────────────────────────────────


@kind("us phone")
def _(r):
    area = r.choice(["212", "415", "646", "617", "312", "206", "512", "303"])
    exch = str(r.randint(2, 9)) + _d(r, 2)
    line = _d(r, 4)
    s = r.choice([f"({area}) {exch}-{line}", f"+1 {area}-{exch}-{line}", f"{area}.{exch}.{line}"])
    return s, f"Call Dana's landlord at {s} about the heating"


@kind("uk phone")
def _(r):
    s = r.choice([f"+44 7{_d(r, 3)} {_d(r, 6)}", f"07{_d(r, 3)} {_d(r, 3)} {_d(r, 3)}"])
    return s, f"plumber in Leeds: {s}, prefers texts"


@kind("de phone")
def _(r):
    s = r.choice([f"+49 151 {_d(r, 4)} {_d(r, 4)}", f"0176 {_d(r, 8)}", f"+49 (0)30 {_d(r, 3)} {_d(r, 4)}"])
    return s, f"Frau Becker (Hausverwaltung) erreichbar unter {s}"


@kind("jp phone")
def _(r):
    s = r.choice([f"090-{_d(r, 4)}-{_d(r, 4)}", f"+81 80-{_d(r, 4)}-{_d(r, 4)}"])
    return s, f"Kenji's number in Osaka: {s}"


@kind("us passport")
def _(r):
    s = r.choice(UP) + _d(r, 8)
    return s, f"passport no. {s}, expires 2031"


@kind("visa card")
def _(r):
    n = _luhn(r, "4", 16)
    s = r.choice([_group(n), _group(n, sep="-")])
    return s, f"company card {s} exp 08/27, ask finance before using it"


@kind("iban de grouped")
def _(r):
    s = _group(_iban("DE", _d(r, 8) + _d(r, 10)))
    return s, f"rent goes to {s} (Sparkasse), by the 3rd"


@kind("iban gb compact")
def _(r):
    s = _iban("GB", r.choice(["NWBK", "BARC", "HBUK", "LOYD", "MIDL"]) + _d(r, 14))
    return s, f"pay the nanny to {s}, reference JULY"


@kind("email plain")
def _(r):
    s = f"{r.choice(_FIRST)}.{r.choice(_LAST)}{_d(r, 2)}@{r.choice(['gmail.com', 'outlook.com', 'proton.me', 'yahoo.co.uk', 'web.de'])}"
    return s, f"my personal address is {s}, use it for the school forms"


@kind("email obfuscated")
def _(r):
    local = f"{r.choice(_FIRST)}{_d(r, 3)}"
    s = r.choice([f"{local} at gmail dot com", f"{local} [at] fastmail [dot] com", f"{local}(at)posteo(dot)de"])
    return s, f"reach the treasurer at {s} (spelled out so bots don't scrape it)"


@kind("us address")
def _(r):
    s = f"{r.randint(100, 9899)} {r.choice(['Maple', 'Oak', 'Cedar', 'Linden', 'Willow'])} {r.choice(['St', 'Ave', 'Dr', 'Ln'])}, Apt {r.randint(1, 30)}{r.choice('ABCD')}, {r.choice(['Austin, TX 787', 'Portland, OR 972', 'Denver, CO 802'])}{_d(r, 2)}"
    return s, f"ship the monitor to {s}"


@kind("uk address")
def _(r):
    s = f"Flat {r.randint(1, 40)}, {r.randint(2, 199)} {r.choice(['Elm Grove', 'Victoria Road', 'Church Lane', 'Mill Street'])}, London SE{r.randint(1, 28)} {r.randint(1, 9)}{r.choice(UP)}{r.choice(UP)}"
    return s, f"new flat: {s}"


@kind("de address")
def _(r):
    s = f"{r.choice(['Lindenstraße', 'Schillerweg', 'Goethestr.', 'Am Park'])} {r.randint(1, 120)}{r.choice(['', 'a', 'b'])}, {r.randint(10115, 14199)} Berlin"
    return s, f"Oma wohnt jetzt in der {s}"


@kind("uk plate")
def _(r):
    s = f"{_w(r, 2, UP)}{r.randint(51, 74)} {_w(r, 3, UP)}"
    return s, f"my car reg is {s} for the parking permit"


@kind("us ssn")
def _(r):
    s = f"{r.randint(100, 665):03d}-{r.randint(10, 99)}-{r.randint(1000, 9999)}"
    return s, f"Dana's SSN for the tax return: {s}"


@kind("uk ni number")
def _(r):
    s = f"{r.choice('ABCEHJKLMNPRSTWXYZ')}{r.choice('ABCEHJKLMNPRSTWXYZ')} {_d(r, 2)} {_d(r, 2)} {_d(r, 2)} {r.choice('ABCD')}"
    return s, f"NI number (for the payroll form): {s}"


@kind("bip39 seed")
def _(r):
    s = _seed(r)
    return s, f"ledger backup words: {s}"


# ── 4. internal hosts and addresses, English ─────────────────────────────────────────────────────


@kind("private ip with port")
def _(r):
    s = f"{_private_ip(r)}:{r.choice([3000, 8080, 8443, 9090, 5601])}"
    return s, f"Grafana moved to {s} after the rack swap"


@kind("lan host url")
def _(r):
    s = f"{r.choice(['printer', 'nas', 'pihole', 'hass', 'plex'])}-{_w(r, 4, LOW + DIG)}.lan"
    return s, f"the printer UI is http://{s}:631/ if you need to clear jobs"


@kind("internal suffix host")
def _(r):
    s = f"{r.choice(_SERVICES)}-{r.randint(1, 40)}.{r.choice(['payments', 'data', 'ml', 'core'])}.internal"
    return s, f"metrics scrape target is {s}:9100"


@kind("home.arpa host")
def _(r):
    s = f"{r.choice(['router', 'ha', 'frigate', 'unifi'])}.{_w(r, 5, LOW)}.home.arpa"
    return s, f"Home Assistant lives at https://{s}:8123"


@kind("corp host")
def _(r):
    s = f"{r.choice(_SERVICES)}{r.randint(1, 9)}.{r.choice(['emea', 'us', 'apac'])}-{_w(r, 3, LOW)}.corp"
    return s, f"ticket links point to https://{s}/browse/OPS-1432"


@kind("mdns local host")
def _(r):
    s = f"{r.choice(['raspberrypi', 'octopi', 'macmini', 'esp32'])}-{_w(r, 4, HEX)}.local"
    return s, f"3D printer: ssh pi@{s}"


@kind("internal subdomain of public domain")
def _(r):
    s = f"{r.choice(_SERVICES)}{r.randint(1, 99)}.int.{r.choice(_COMPANIES)}.com"
    return s, f"nightly builds run on https://{s}/job/nightly/"


@kind("ssh config hostname")
def _(r):
    s = _private_ip(r)
    return s, f"Host bastion\n  HostName {s}\n  User ops\n  Port 2222"


@kind("ipv6 ula")
def _(r):
    s = f"fd{_w(r, 2, HEX)}:{_w(r, 4, HEX)}:{_w(r, 4, HEX)}::{r.randint(2, 250):x}"
    return s, f"the NAS answers on [{s}]:5001 over the tunnel"


# ── 1. credentials by context, Chinese ───────────────────────────────────────────────────────────


@kind("wifi password zh")
def _(r):
    s = _pw(r, "!#%.?+=-")
    return s, f"家里WiFi改了，新密码：{s}"


@kind("password changed to zh")
def _(r):
    s = _pw_human(r)
    return s, f"公司邮箱密码改成 {s} 了，下次登录用这个"


@kind("vpn passphrase zh")
def _(r):
    s = _pw(r, "!#%.?+=-")
    return s, f"VPN 口令为{s}，每90天要换一次"


@kind("jump host login zh")
def _(r):
    s = _pw(r, "!#%.?+=-")
    return s, f"登录跳板机用 ops / {s}，记得先开 VPN"


@kind("server root password zh")
def _(r):
    s = _pw(r, "!#%;,.?+=-")
    return s, f"阿里云那台 ECS 的 root 密码：{s}（别发群里）"


@kind("mysql url zh")
def _(r):
    s = _pw(r, "!%;,.+=-")
    return s, f"测试库连接串 mysql://dev:{s}@db-test:3306/test ，只在内网能连"


@kind("bank pin zh")
def _(r):
    s = _d(r, 6)
    return s, f"工行卡取款密码 {s}，别告诉别人"


@kind("door code zh")
def _(r):
    s = _d(r, 6)
    return s, f"小区门禁密码 #{s}#，快递柜另说"


@kind("safe code zh")
def _(r):
    s = _d(r, 8)
    return s, f"卧室保险箱密码是{s}，先左转三圈"


@kind("sms code zh")
def _(r):
    s = _d(r, 6)
    return s, f"刚收到的验证码：{s}，五分钟内有效"


@kind("alipay login zh")
def _(r):
    s = _pw_human(r)
    return s, f"支付宝登录密码 {s}，支付密码另外记"


@kind("gitlab token zh")
def _(r):
    s = "glpat-" + _w(r, 20, ALNUM + "-_")
    return s, f"gitlab 的个人访问令牌：{s}（只读权限）"


@kind("env export api key zh")
def _(r):
    s = "sk-" + _w(r, 32, HEX)
    return s, f"在 ~/.bashrc 里加了 export DEEPSEEK_API_KEY={s}"


@kind("yaml password zh")
def _(r):
    s = _pw(r, "!%;,.?+=-")
    return s, f"nacos 生产配置：\n  username: nacos\n  password: {s}  # 别改"


@kind("modem superadmin zh")
def _(r):
    s = _w(r, 4, LOW) + _d(r, 4) + _w(r, 2, UP)
    return s, f"光猫超级管理员 telecomadmin，密码 {s}"


@kind("nas login zh")
def _(r):
    s = _pw_human(r)
    return s, f"群晖 NAS 登录：admin / {s}"


@kind("disk passphrase zh")
def _(r):
    s = _passphrase(r)
    return s, f"移动硬盘 BitLocker 的口令是“{s}”，带空格"


@kind("markdown table zh")
def _(r):
    s = _pw(r, "!#%;,.?+=-")
    return s, f"| 系统 | 账号 | 密码 |\n| --- | --- | --- |\n| 财务系统 | zhangsan | {s} |"


@kind("semicolon password fullwidth colon zh")
def _(r):
    s = _pw(r, ";,#", n=r.randint(10, 13))
    return s, f"堡垒机密码：{s}，分号逗号都是密码的一部分"


@kind("mixed zh-en password zh")
def _(r):
    s = _pw(r, "!#%.?+=-")
    return s, f"staging 的 db password 是 {s} 哈，prod 的找老王要"


@kind("family apple id zh")
def _(r):
    s = r.choice(_PINYIN) + r.choice(_GIVEN) + f"{r.randint(1950, 1975)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    return s, f"老妈的 Apple ID 密码是她名字拼音加生日：{s}"


@kind("redis cli zh")
def _(r):
    s = _w(r, 20)
    return s, f"清缓存：redis-cli -h 10.20.1.5 -a '{s}' flushdb，慎用"


@kind("sshpass zh")
def _(r):
    s = _pw(r, "!%.+=-")
    return s, f"批量脚本里写的是 sshpass -p {s} ssh root@$host，后面改成密钥"


@kind("docker login zh")
def _(r):
    s = _pw_human(r)
    return s, f"私有镜像仓库登录：docker login harbor.{r.choice(_CN_COMPANIES)}.com -u admin -p {s}"


@kind("jwt secret env zh")
def _(r):
    s = _w(r, 32)
    return s, f"生产 .env 里 JWT_SECRET={s}，泄露了所有会话都得失效"


@kind("smart lock code zh")
def _(r):
    s = _d(r, 8)
    return s, f"智能门锁临时密码 {s}，给保洁阿姨周三用"


@kind("jdbc url zh")
def _(r):
    s = _pw(r, "!%.+-")
    return s, f"报表服务连库：jdbc:mysql://rds-report:3306/bi?user=bi_ro&password={s}&useSSL=false"


@kind("x-api-key header zh")
def _(r):
    s = _w(r, 40, ALNUM)
    return s, f"调用内部接口要带 header X-Api-Key: {s}"


@kind("recovery codes zh")
def _(r):
    s = " ".join(f"{_w(r, 5, LOW + DIG)}-{_w(r, 5, LOW + DIG)}" for _ in range(3))
    return s, f"GitHub 恢复码（前三个）：{s}"


@kind("bank login password zh")
def _(r):
    s = _pw(r, "!#%.?+=-")
    return s, f"招行网银登录密码 {s}，U盾在抽屉里"


# ── 2. secret-shaped tokens, Chinese ───────────────────────────────────────────────────────────────


@kind("aliyun accesskey secret zh")
def _(r):
    s = _w(r, 30)
    return s, f"阿里云子账号 AccessKey ID: LTAI5t{_w(r, 18)}\nAccessKey Secret: {s}"


@kind("tencent secretid no context zh")
def _(r):
    s = "AKID" + _w(r, 32)
    return s, f"腾讯云那个子账号 {s} 还没删，记得清理"


@kind("private key zh")
def _(r):
    lines = _b64_lines(r, "MHcCAQEEI", 3)
    s = "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END EC PRIVATE KEY-----"
    return s, f"服务器私钥先贴这儿：\n{s}"


@kind("jwt zh")
def _(r):
    s = _jwt(r)
    return s, f"小程序后台调试时抓到的登录态：{s}"


@kind("invented sms provider key zh")
def _(r):
    s = "smsk_" + _w(r, 32)
    return s, f"新接的短信平台给的 {s}，按条计费"


@kind("wrapped token zh")
def _(r):
    a, b = "tk-" + _w(r, 26), _w(r, 26)
    s = f"{a}\n{b}"
    return s, f"这串太长，微信里被折成两行了：\n{s}"


@kind("feishu webhook zh")
def _(r):
    s = _uuid(r)
    return s, f"飞书告警机器人：https://open.feishu.cn/open-apis/bot/v2/hook/{s}"


@kind("dingtalk webhook zh")
def _(r):
    s = _w(r, 64, HEX)
    return s, f"钉钉群机器人 https://oapi.dingtalk.com/robot/send?access_token={s}"


@kind("wecom webhook zh")
def _(r):
    s = _uuid(r)
    return s, f"企业微信群机器人地址 https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={s}"


# ── 3. personal data, Chinese ──────────────────────────────────────────────────────────────────────


@kind("cn mobile spaced zh")
def _(r):
    m = _cn_mobile(r)
    s = f"{m[:3]} {m[3:7]} {m[7:]}"
    return s, f"快递员电话 {s}，下午才送"


@kind("cn mobile dashed zh")
def _(r):
    m = _cn_mobile(r)
    s = f"{m[:3]}-{m[3:7]}-{m[7:]}"
    return s, f"房东手机：{s}（王阿姨）"


@kind("cn mobile +86 zh")
def _(r):
    m = _cn_mobile(r)
    s = r.choice([f"+86 {m}", f"+86-{m[:3]}-{m[3:7]}-{m[7:]}", f"+8613{m[2:]}", f"(+86){m}"])
    return s, f"我爸的手机号 {s}，紧急联系人填这个"


@kind("cn bare mobile zh")
def _(r):
    s = _cn_mobile(r)
    return s, f"小区物业张经理{s}"


@kind("cn landline zh")
def _(r):
    s = r.choice(
        [f"021-{r.randint(5, 6)}{_d(r, 7)}", f"(010) {r.randint(5, 8)}{_d(r, 3)}-{_d(r, 4)}", f"0755-{_d(r, 8)}"]
    )
    return s, f"公司前台座机 {s}，转 8021"


@kind("resident id zh")
def _(r):
    s = _cn_id(r)
    return s, f"我身份证号 {s}，订机票用"


@kind("resident id grouped zh")
def _(r):
    n = _cn_id(r)
    s = f"{n[:6]} {n[6:14]} {n[14:]}"
    return s, f"老婆的身份证：{s}（给酒店登记）"


@kind("resident id no label zh")
def _(r):
    s = _cn_id(r)
    return s, f"帮我妈订高铁，乘车人 王秀兰 {s}"


@kind("passport zh")
def _(r):
    s = r.choice(["E", "EA", "EB", "EC"])
    s += _d(r, 9 - len(s))
    return s, f"护照号码 {s}，2031年到期"


@kind("hk macau permit zh")
def _(r):
    s = "C" + _d(r, 8)
    return s, f"港澳通行证 {s}，签注还剩两次"


@kind("unionpay card spaced zh")
def _(r):
    n = _luhn(r, r.choice(["622202", "621700", "622848", "621483"]), 19)
    s = _group(n)
    return s, f"工资卡 {s}，开户行 建行深圳分行"


@kind("unionpay card bare zh")
def _(r):
    s = _luhn(r, r.choice(["622588", "622609", "621226"]), 16)
    return s, f"报销打到这张卡：{s}"


@kind("iban zh")
def _(r):
    s = _group(_iban("NL", r.choice(["ABNA", "INGB", "RABO"]) + _d(r, 10)))
    return s, f"荷兰房东的收款账户 IBAN：{s}"


@kind("qq mail zh")
def _(r):
    s = f"{r.randint(10000000, 3999999999)}@qq.com"
    return s, f"发票寄到我QQ邮箱 {s}"


@kind("wechat wxid zh")
def _(r):
    s = "wxid_" + _w(r, 14, LOW + DIG)
    return s, f"加我老婆微信：{s}"


@kind("wechat custom id zh")
def _(r):
    s = f"{r.choice(_PINYIN)}_{r.choice(_GIVEN)}{_d(r, 4)}"
    return s, f"小林的微信号是 {s}，备注写同事"


@kind("qq number zh")
def _(r):
    s = str(r.randint(100000000, 3999999999))
    return s, f"我QQ号 {s}，小号另说"


@kind("alipay phone account zh")
def _(r):
    s = _cn_mobile(r)
    return s, f"收款支付宝账号：{s}（王*明）"


@kind("home address zh")
def _(r):
    city, district, roads = r.choice(
        [
            ("上海市", "浦东新区", ["张杨路", "世纪大道", "锦绣路"]),
            ("北京市", "朝阳区", ["望京西路", "建国路", "酒仙桥路"]),
            ("广州市", "天河区", ["体育西路", "天河北路"]),
            ("杭州市", "西湖区", ["文三路", "古墩路"]),
            ("深圳市", "南山区", ["科技园南路", "后海大道"]),
        ]
    )
    s = f"{city}{district}{r.choice(roads)}{r.randint(1, 2999)}弄{r.randint(1, 60)}号{r.randint(1, 32)}0{r.randint(1, 6)}室"
    return s, f"家里地址：{s}"


@kind("delivery address no label zh")
def _(r):
    s = f"成都市武侯区{r.choice(['天府大道', '人民南路', '科华北路'])}{r.randint(1, 999)}号{r.choice(['锦江花园', '翠苑小区', '阳光城'])}{r.randint(1, 30)}栋{r.randint(1, 6)}单元{r.randint(1, 33)}0{r.randint(1, 4)}"
    return s, f"快递寄到 {s}，收件人写我"


@kind("licence plate zh")
def _(r):
    s = (
        r.choice("沪京粤浙苏川鄂")
        + r.choice("ABCDEF")
        + r.choice(["·", "", " "])
        + _w(r, 5, "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789")
    )
    return s, f"我的车牌 {s}，停 B2 层"


@kind("seed phrase zh")
def _(r):
    s = _seed(r)
    return s, f"冷钱包助记词（按顺序）：{s}"


# ── 4. internal hosts and addresses, Chinese ───────────────────────────────────────────────────────


@kind("private ip zh")
def _(r):
    s = f"192.168.{r.randint(0, 255)}.{r.randint(2, 254)}:{r.choice([8080, 5000, 8443])}"
    return s, f"内网 Jenkins 在 {s}，需要先连 VPN"


@kind("lan host zh")
def _(r):
    s = f"gitlab-{_w(r, 4, LOW + DIG)}.lan"
    return s, f"测试环境 gitlab 地址 http://{s}/ ，外网访问不了"


@kind("corp wiki host zh")
def _(r):
    s = f"wiki.{r.choice(_CN_COMPANIES)}-{_w(r, 3, LOW)}.corp"
    return s, f"公司 wiki 在 https://{s}/pages/viewpage.action?pageId=1024"


@kind("internal subdomain zh")
def _(r):
    s = f"api-pre{r.randint(1, 9)}-{_w(r, 3, LOW)}.internal.{r.choice(_CN_COMPANIES)}.cn"
    return s, f"预发布环境接口 https://{s}/v1 ，只能办公网访问"


@kind("gateway ip zh")
def _(r):
    a, b = r.randint(0, 255), r.randint(0, 255)
    s = f"10.{a}.{b}.1"
    return s, f"办公网段 10.{a}.{b}.0/24，网关 {s}"


CHINESE: frozenset[str] = frozenset(name for name in KINDS if name.endswith(" zh"))

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"(private) {t}",
    lambda t: f"{t} [PRIVATE]",
    lambda t: f"🔒 {t}",
    lambda t: f"{t} 🔒",
    lambda t: f"【私密】{t}",
    lambda t: f"{t}（仅自己可见）",
    lambda t: f"{t} #private",
    lambda t: f"Private: {t}",
    lambda t: f"{t} — do not publish",
    lambda t: f"DO NOT PUBLISH: {t}",
    lambda t: f"{{private}} {t}",
    lambda t: f"{t} #私密",
    lambda t: f"私人笔记：{t}",
    lambda t: f"{t}（不要公开）",
    lambda t: f"[confidential] {t}",
    lambda t: f"{t} (personal, keep private)",
    lambda t: f"<private>{t}</private>",
    lambda t: f"[隐私] {t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"private": True},
    {"visibility": "private"},
    {"public": False},
    {"publish": False},
    {"tags": ["personal", "private"]},
    {"access": "private"},
    {"confidential": True},
    {"private": "yes"},
    {"visibility": "私密"},
    {"sensitive": True},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "## Private",
    "### Private notes",
    "# Personal (do not share)",
    "## 私密",
    "### 隐私信息",
    "## 🔒 Private",
    "## 个人隐私（不公开）",
]

ORDINARY: list[str] = [
    "The password is 12+ characters",
    "The PIN is 4-6 digits",
    "CI summary: pass: 118",
    "conda pin: python=3.11",
    "secret: optional",
    '{"sha": "3f9a1c0e7b2d4f6a8c1e3b5d7f9a2c4e6b8d0f1a"}',
    "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
    "git clone git@github.com:owner/repo.git",
    "Rotate the password every 90 days.",
    "The token lives in the vault, never in the repo.",
    "Use `pass show work/vpn` to fetch the VPN password.",
    "export GITHUB_TOKEN=$(gh auth token)",
    "DB_PASSWORD=${DB_PASSWORD}",
    "password: <set in the secret manager>",
    "The API returns 401 when the token has expired.",
    "version 2.14.3 released on 2024-05-17",
    "commit 9c1e2f4 fixed the flaky test",
    "uuid: 123e4567-e89b-12d3-a456-426614174000",
    "https://docs.python.org/3/library/secrets.html",
    "sha256 of the empty file is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "docker run -p 8080:80 nginx:1.25-alpine",
    "kubectl -n monitoring get pods -o wide",
    "ssh-keygen -t ed25519 -C 'work laptop'",
    "pytest -q tests/test_store.py -k 'not slow'",
    "pip install 'requests>=2.31,<3'",
    "Node v20.11.1, npm 10.2.4",
    "listen 0.0.0.0:8000",
    "DNS servers 8.8.8.8 and 1.1.1.1",
    "#1e90ff is the accent colour",
    "2024-03-15T08:30:00Z",
    "PostgreSQL listens on 5432 by default",
    "docs/guide/install.md",
    "HTTP 429 Too Many Requests: back off for 60 s",
    "https://pypi.org/project/mkdocs/1.6.0/",
    "example.com and example.org are reserved for documentation",
    "Set max_connections = 200 in postgresql.conf",
    "RFC 1918 ranges: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16",
    "OpenAI keys start with sk- and GitHub tokens with ghp_",
    "rgb(34, 139, 34)",
    "The build took 3m 42s on 8 cores",
    "image digest sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1",
    "2FA: use an authenticator app, not SMS",
    "ed25519 keys are 256-bit",
    "timeout: 30s, retries: 3",
    "ISO 8601 date: 2025-01-31",
    "密码至少 12 位，包含大小写字母和数字",
    "验证码 5 分钟内有效",
    "服务器每天凌晨 3 点自动备份",
    "用 pnpm install --frozen-lockfile 安装依赖",
    "Python 3.12 的 asyncio.TaskGroup 很好用",
    "本周发布 v1.8.0，修复了 17 个 bug",
    "密钥放在 Vault 里，不要写进代码库",
    "手机号是 11 位，以 1 开头",
    "版本号 3.2.1-rc.2",
    "上线时间定在 2025 年 3 月 1 日",
]
