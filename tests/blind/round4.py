# ruff: noqa: E501
"""Blind canary set, round 4: written without looking at the filter (format: tests/blind/example_set.py).

Leans on how people actually paste things into notes to an assistant in 2026: credentials in many languages,
config formats and CLI flags; secret-shaped tokens with no word around them (invented prefixes, bech32, base58,
split across a space or a line); personal data of many countries with valid check digits; internal hosts in
notations beyond dotted quads. At least half of the kinds are phrased in Chinese (names ending in " zh").
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from collections.abc import Callable

from mnemonic import Mnemonic

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = string.ascii_letters + string.digits
LOWNUM = LOWER + DIGITS
HEX = "0123456789abcdef"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
PW_SYMS = "!-.+=^#@"  # no markdown-active characters (* _ ` ~ [ ] < > &) and no $ (reads as a placeholder)
URL_SYMS = "-."  # unreserved in a URL's userinfo

_BIP39 = Mnemonic("english")


# ── random pieces ────────────────────────────────────────────────────────────────────────────────────


def _w(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _d(r: random.Random, n: int) -> str:
    """n digits, the first not 0."""
    return r.choice("123456789") + _w(r, n - 1, DIGITS)


def _pw(r: random.Random, n: int | None = None, syms: str = PW_SYMS) -> str:
    """A human-made password: mixed case, a digit, maybe a symbol."""
    n = n or r.randint(11, 16)
    while True:
        s = _w(r, n, ALNUM + syms)
        if any(c.isdigit() for c in s) and any(c.islower() for c in s) and any(c.isupper() for c in s):
            return s


def _uuid(r: random.Random) -> str:
    return str(uuid.UUID(int=r.getrandbits(128), version=4))


def _b64(r: random.Random, nbytes: int, urlsafe: bool = False, pad: bool = True) -> str:
    raw = bytes(r.getrandbits(8) for _ in range(nbytes))
    s = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(raw).decode()
    return s if pad else s.rstrip("=")


def _groups(s: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(s[i : i + size] for i in range(0, len(s), size))


def _name(r: random.Random) -> str:
    return r.choice(FIRST) + r.choice(["", ".", "_"]) + r.choice(LAST).lower() + _w(r, r.randint(0, 3), DIGITS)


def _domain(r: random.Random) -> str:
    return r.choice(
        ["northwind", "brightlane", "kestrel-labs", "oakmoor", "tidewater", "fernhill", "quillon"]
    ) + r.choice([".io", ".com", ".dev", ".net", ".cn"])


def _mnemonic(r: random.Random, words: int) -> str:
    return _BIP39.to_mnemonic(bytes(r.getrandbits(8) for _ in range(words * 4 // 3)))


FIRST = ["alice", "marta", "jonas", "priya", "kenji", "oluwa", "sofia", "mateo", "ingrid", "tariq", "hana", "leon"]
LAST = ["Okafor", "Lindqvist", "Haddad", "Moreau", "Kowalski", "Tanaka", "Ferreira", "Brennan", "Ivanova", "Nakamura"]
CN_NAMES = ["王芳", "李娜", "张伟", "刘洋", "陈静", "杨磊", "赵敏", "黄婷", "周杰", "吴昊", "林小满", "郑秀英"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


# ── check digits ─────────────────────────────────────────────────────────────────────────────────────


def _luhn_complete(partial: str) -> str:
    total = 0
    for i, c in enumerate(reversed(partial)):
        d = int(c)
        if i % 2 == 0:  # these are doubled once the check digit is appended
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return partial + str((10 - total % 10) % 10)


def _card(r: random.Random, prefix: str, length: int) -> str:
    return _luhn_complete(prefix + _w(r, length - len(prefix) - 1, DIGITS))


def _iban(country: str, bban: str) -> str:
    n = "".join(str(int(c, 36)) for c in (bban + country + "00").upper())
    return f"{country}{98 - int(n) % 97:02d}{bban}"


def _iban_de(r: random.Random) -> str:
    return _iban("DE", _d(r, 8) + _w(r, 10, DIGITS))


def _iban_gb(r: random.Random) -> str:
    return _iban("GB", r.choice(["NWBK", "BARC", "LOYD", "MIDL", "HBUK"]) + _w(r, 14, DIGITS))


def _iban_fr(r: random.Random) -> str:
    bank, branch, account = _d(r, 5), _w(r, 5, DIGITS), _w(r, 11, DIGITS)
    key = 97 - (89 * int(bank) + 15 * int(branch) + 3 * int(account)) % 97
    return _iban("FR", f"{bank}{branch}{account}{key:02d}")


def _iban_nl(r: random.Random) -> str:
    while True:
        account = _w(r, 10, DIGITS)
        if sum(int(c) * w for c, w in zip(account, range(10, 0, -1), strict=True)) % 11 == 0:
            return _iban("NL", r.choice(["ABNA", "RABO", "INGB", "TRIO", "KNAB"]) + account)


_CN_AREAS = ["110101", "310104", "440106", "330106", "350203", "320102", "420106", "370202"]


def _cn_ric(r: random.Random) -> str:
    body = (
        r.choice(_CN_AREAS) + f"{r.randint(1960, 2005)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}" + _w(r, 3, DIGITS)
    )
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    return body + "10X98765432"[sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11]


_TW_LETTERS = dict(zip("ABCDEFGHJKLMNPQRSTUVXYWZIO", range(10, 36), strict=True))


def _tw_id(r: random.Random) -> str:
    letter = r.choice("ABCDEFGHJKLMNPQRSTUVXYWZ")
    digits = r.choice("12") + _w(r, 7, DIGITS)
    code = _TW_LETTERS[letter]
    total = code // 10 + (code % 10) * 9 + sum(int(c) * w for c, w in zip(digits, range(8, 0, -1), strict=True))
    return letter + digits + str((10 - total % 10) % 10)


def _hkid(r: random.Random) -> str:
    letter = r.choice("ACDEGHKMPRVYZ")
    digits = _w(r, 6, DIGITS)
    total = 36 * 9 + (ord(letter) - 55) * 8 + sum(int(c) * w for c, w in zip(digits, range(7, 1, -1), strict=True))
    check = (11 - total % 11) % 11
    return f"{letter}{digits}({'A' if check == 10 else check})"


def _kr_rrn(r: random.Random) -> str:
    year = r.randint(1950, 2012)
    head = f"{year % 100:02d}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    body = r.choice("12" if year < 2000 else "34") + f"{r.randint(0, 88):02d}" + _w(r, 3, DIGITS)
    digits = head + body
    total = sum(int(c) * w for c, w in zip(digits, [2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5], strict=True))
    return f"{head}-{body}{(11 - total % 11) % 10}"


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


def _aadhaar(r: random.Random) -> str:
    body = r.choice("23456789") + _w(r, 10, DIGITS)
    c = 0
    for i, ch in enumerate(reversed(body)):
        c = _VD[c][_VP[(i + 1) % 8][int(ch)]]
    return _groups(body + str(_VINV[c]))


def _cpf(r: random.Random) -> str:
    digits = [int(c) for c in _w(r, 9, DIGITS)]
    for n in (10, 11):
        rest = sum(d * w for d, w in zip(digits, range(n, 1, -1), strict=True)) * 10 % 11
        digits.append(0 if rest == 10 else rest)
    s = "".join(map(str, digits))
    return f"{s[:3]}.{s[3:6]}.{s[6:9]}-{s[9:]}"


def _dni(r: random.Random) -> str:
    n = _w(r, 8, DIGITS)
    return n + "TRWAGMYFPDXBNJZSQVHLCKE"[int(n) % 23]


def _my_number(r: random.Random) -> str:
    body = _d(r, 11)
    total = sum(int(c) * (n + 1 if n <= 6 else n - 5) for n, c in enumerate(reversed(body), start=1))
    rest = total % 11
    return _groups(body + str(0 if rest <= 1 else 11 - rest))


def _cn_mobile(r: random.Random) -> str:
    return r.choice(["134", "138", "139", "150", "152", "158", "177", "181", "186", "188", "191", "199"]) + _w(
        r, 8, DIGITS
    )


# ── the kinds ────────────────────────────────────────────────────────────────────────────────────────

KINDS: dict[str, Callable[[random.Random], tuple[str, str]]] = {}


def kind(
    name: str,
) -> Callable[[Callable[[random.Random], tuple[str, str]]], Callable[[random.Random], tuple[str, str]]]:
    def register(make: Callable[[random.Random], tuple[str, str]]) -> Callable[[random.Random], tuple[str, str]]:
        assert name not in KINDS, name
        KINDS[name] = make
        return make

    return register


# 1. credentials by context: prose


@kind("prose went with new password")
def _(r):
    s = _pw(r)
    return s, f"Rotated the Wi-Fi on Sunday; I went with {s} as the new password, the old one is dead."


@kind("prose 密码我设的是 zh")
def _(r):
    s = _pw(r)
    return s, f"路由器恢复出厂了，密码我设的是{s}，电视那边记得重新连一下"


@kind("prose 登录口令 zh")
def _(r):
    s = _pw(r)
    return s, f"OA 系统登录口令：{s}（下个月到期要改）"


@kind("prose shed lock passcode")
def _(r):
    s = _w(r, r.choice([6, 7, 8]), DIGITS)
    return s, f"the passcode for the shed lock is {s}, Dad keeps forgetting it"


@kind("prose 保险柜组合 zh")
def _(r):
    s = _w(r, 8, DIGITS)
    return s, f"书房保险柜的组合改成了 {s}，只有我和老婆知道"


@kind("prose root 改成 zh")
def _(r):
    s = _pw(r)
    return s, f"把 {s} 作为新的 root 密码了，旧的那台 VPS 也同步改掉"


@kind("prose 光猫超级密码 zh")
def _(r):
    s = _pw(r, 10, "%#")
    return s, f"电信光猫超级账号 telecomadmin，超级密码 {s}，改桥接的时候要用"


@kind("prose same as laptop")
def _(r):
    s = _pw(r)
    return s, f"Mum's iPad unlocks with the same thing as my laptop ({s}) so she can install apps herself."


@kind("prose 支付密码 zh")
def _(r):
    s = _w(r, 6, DIGITS)
    return s, f"提醒自己：这张卡的支付密码是 {s}，不是生日"


# 1. credentials by context: code


@kind("go short var decl")
def _(r):
    s = _pw(r)
    return s, f'func main() {{\n\tdbPassword := "{s}"\n\tdb, _ := sql.Open("pgx", dsn(dbPassword))\n}}'


@kind("rust str literal")
def _(r):
    s = _w(r, 32, ALNUM)
    return s, f'let api_secret: &str = "{s}"; // until we wire up the keyring crate'


@kind("java constant zh")
def _(r):
    s = _pw(r)
    return s, f'这段 Java 先这么写着：private static final String KEYSTORE_PASS = "{s}"; 上线前再改成读环境变量'


@kind("csharp NetworkCredential args")
def _(r):
    s = _pw(r)
    return s, f'var creds = new NetworkCredential("svc-backup", "{s}", "CORP");'


@kind("ruby smtp settings zh")
def _(r):
    s = _pw(r)
    return (
        s,
        f"Rails 发不出邮件，我的配置：config.action_mailer.smtp_settings = {{ user_name: 'noreply', password: '{s}', port: 465 }}",
    )


@kind("php wp-config define")
def _(r):
    s = _pw(r, 20)
    return s, f"define( 'DB_PASSWORD', '{s}' ); // wp-config.php on the blog box"


@kind("swift clientSecret zh")
def _(r):
    s = _w(r, 40, B64URL)
    return s, f'iOS 那边 let clientSecret = "{s}" 先硬编码了，提审前一定要删掉'


@kind("python ftplib positional")
def _(r):
    s = _pw(r)
    return s, f'ftp = ftplib.FTP("ftp.{_domain(r)}", "backup", "{s}")'


@kind("pymysql connect positional zh")
def _(r):
    s = _pw(r)
    return s, f'导报表的脚本：conn = pymysql.connect("db.{_domain(r)}", "report", "{s}", "sales")'


@kind("kotlin data class default zh")
def _(r):
    s = _pw(r)
    return s, f'Kotlin 里 data class MqttConfig(val user: String = "iot", val pass: String = "{s}") 先这样'


@kind("js object literal auth")
def _(r):
    s = _pw(r)
    return s, f"const client = new Client({{ host: 'pg.{_domain(r)}', user: 'etl', password: '{s}' }});"


# 1. credentials by context: config formats


@kind("hcl terraform password")
def _(r):
    s = _pw(r)
    return (
        s,
        f'resource "aws_db_instance" "main" {{\n  engine   = "postgres"\n  username = "dbadmin"\n  password = "{s}"\n}}',
    )


@kind("nix initialPassword")
def _(r):
    s = _pw(r)
    return s, f'users.users.alice = {{ isNormalUser = true; initialPassword = "{s}"; }};'


@kind("systemd Environment zh")
def _(r):
    s = _pw(r)
    return s, f'grafana 的 unit 文件里加了 Environment="GF_SECURITY_ADMIN_PASSWORD={s}"，daemon-reload 之后生效'


@kind("k8s secret stringData")
def _(r):
    s = _pw(r, 18)
    return (
        s,
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: pg-auth\ntype: Opaque\nstringData:\n  username: app\n  password: {s}\n",
    )


@kind("compose environment list zh")
def _(r):
    s = _pw(r)
    return (
        s,
        f"compose 文件这样写的：\nservices:\n  db:\n    image: mariadb:11\n    environment:\n      - MARIADB_ROOT_PASSWORD={s}\n",
    )


@kind("github actions with password")
def _(r):
    s = _w(r, 36, ALNUM)
    return (
        s,
        f"- uses: docker/login-action@v3\n  with:\n    registry: ghcr.io\n    username: octo-bot\n    password: {s}\n",
    )


@kind("ansible become pass zh")
def _(r):
    s = _pw(r)
    return s, f"host_vars/nas.yml 里写着 ansible_become_pass: {s}，vault 还没来得及配"


@kind("spring properties")
def _(r):
    s = _pw(r)
    return (
        s,
        f"application-prod.properties:\nspring.datasource.url=jdbc:postgresql://db:5432/shop\nspring.datasource.password={s}",
    )


@kind("tomcat xml attribute zh")
def _(r):
    s = _pw(r)
    return s, f'tomcat-users.xml 里：<user username="admin" password="{s}" roles="manager-gui"/>'


@kind("maven settings xml element")
def _(r):
    s = _pw(r)
    return s, f"<server><id>nexus-releases</id><username>deployer</username><password>{s}</password></server>"


@kind("frp toml token zh")
def _(r):
    s = _w(r, 24, ALNUM)
    return s, f'frpc.toml 里 auth.token = "{s}"，服务端 frps 也要填一样的'


@kind("ini pgpass line zh")
def _(r):
    s = _pw(r)
    return s, f"~/.pgpass 加了一行 db.{_domain(r)}:5432:shop:report:{s}，psql 就不用再输了"


@kind("wireguard conf zh")
def _(r):
    s = _b64(r, 32)
    return s, f"家里的 wg0.conf：\n[Interface]\nPrivateKey = {s}\nListenPort = 51820"


# 1. credentials by context: connection strings


@kind("odbc connection string")
def _(r):
    s = _pw(r, 14, "!-.+=^")
    return (
        s,
        f"Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:sql-{_w(r, 6, LOWER)}.database.windows.net,1433;Database=ledger;Uid=reporter;Pwd={s};Encrypt=yes;",
    )


@kind("sql server appsettings zh")
def _(r):
    s = _pw(r, 14, "!-.+=^")
    return (
        s,
        f'appsettings.json 的连接串："Server=db01;Database=Erp;User Id=sa;Password={s};TrustServerCertificate=True"',
    )


@kind("amqp url")
def _(r):
    s = _pw(r, 16, URL_SYMS)
    return s, f"CELERY_BROKER_URL=amqp://orders:{s}@rabbit.{_domain(r)}:5672/prod"


@kind("mqtt url zh")
def _(r):
    s = _pw(r, 16, URL_SYMS)
    return s, f"Home Assistant 连 MQTT：mqtts://ha-bridge:{s}@{_w(r, 8, LOWNUM)}.s1.eu.hivemq.cloud:8883"


@kind("smtp url")
def _(r):
    s = _pw(r, 16, URL_SYMS)
    return s, f"EMAIL_URL=smtp+tls://alerts%40{_domain(r)}:{s}@smtp.mailgun.org:587"


@kind("redis password only zh")
def _(r):
    s = _pw(r, 16, URL_SYMS)
    return s, f"缓存地址 redis://:{s}@cache.{_domain(r)}:6379/2 ，只有密码没有用户名"


@kind("mongodb srv url")
def _(r):
    s = _pw(r, 16, URL_SYMS)
    return s, f"mongodb+srv://analytics:{s}@cluster0.{_w(r, 5, LOWNUM)}.mongodb.net/?retryWrites=true"


# 1. credentials by context: CLI invocations


@kind("openssl passout")
def _(r):
    s = _pw(r, 14, "-.+=")
    return s, f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{s}"


@kind("gpg passphrase zh")
def _(r):
    s = _pw(r)
    return s, f"解密备份：gpg --batch --pinentry-mode loopback --passphrase '{s}' -d photos-2025.tar.gpg"


@kind("keytool storepass")
def _(r):
    s = _pw(r, 12, "-.+=")
    return s, f"keytool -importcert -alias corp-root -file root.crt -keystore truststore.jks -storepass {s} -noprompt"


@kind("vault userpass login zh")
def _(r):
    s = _pw(r, 14, "-.+=")
    return s, f"vault login -method=userpass username=ops password={s}  # 每周一轮换"


@kind("az service principal -p")
def _(r):
    s = _w(r, 3, ALNUM) + "8Q~" + _w(r, 34, ALNUM + "-.")
    return s, f"az login --service-principal -u {_uuid(r)} -p {s} --tenant {_uuid(r)}"


@kind("aws configure set zh")
def _(r):
    s = _w(r, 40, B64)
    return s, f"新电脑上跑了 aws configure set aws_secret_access_key {s} --profile personal"


@kind("gcloud set-password")
def _(r):
    s = _pw(r, 14, "-.+=")
    return s, f"gcloud sql users set-password postgres --instance=main-db --password={s}"


@kind("lftp -u user,pass zh")
def _(r):
    s = _pw(r, 14, "-.+=")
    return s, f"同步脚本：lftp -u backup,{s} sftp://files.{_domain(r)} -e 'mirror -R ./out /upload; quit'"


@kind("smbclient user%pass")
def _(r):
    s = _pw(r, 14, "-.+=")
    return s, f"smbclient //fileserver/scans -U alice%{s} -c 'ls'"


@kind("rclone obscured pass")
def _(r):
    s = _b64(r, 30, urlsafe=True, pad=False)
    return s, f"rclone.conf:\n[b2]\ntype = webdav\nuser = me\npass = {s}\n"


@kind("mysql -p attached zh")
def _(r):
    s = _pw(r, 14, "-.+=")
    return s, f"导数据用 mysql -uroot -p{s} -h db.{_domain(r)} shop < dump.sql，密码连着 -p 写"


@kind("sshpass zh")
def _(r):
    s = _pw(r, 14, "-.+=")
    return s, f"批量上机器：sshpass -p '{s}' ssh -o StrictHostKeyChecking=no root@bastion.{_domain(r)}"


@kind("htpasswd -b")
def _(r):
    s = _pw(r, 14, "-.+=")
    return s, f"htpasswd -bc /etc/nginx/.htpasswd grafana {s}"


@kind("docker login -p zh")
def _(r):
    s = _w(r, 32, ALNUM)
    return s, f"阿里云镜像仓库：docker login --username=dev@{_domain(r)} -p {s} registry.cn-hangzhou.aliyuncs.com"


# 1. credentials by context: headers, URLs, otpauth


@kind("cookie header sessionid")
def _(r):
    s = _w(r, 32, LOWNUM)
    return s, f"Cookie: _ga=GA1.2.{_d(r, 9)}.{_d(r, 10)}; sessionid={s}; theme=dark"


@kind("x-auth-token curl zh")
def _(r):
    s = _w(r, 40, ALNUM)
    return s, f'接口调不通，我是这样请求的：curl -H "X-Auth-Token: {s}" https://api.{_domain(r)}/v2/servers'


@kind("authorization basic b64")
def _(r):
    s = base64.b64encode(f"{r.choice(FIRST)}:{_pw(r)}".encode()).decode()
    return s, f"Postman shows Authorization: Basic {s} on the request that works"


@kind("telegram bot url")
def _(r):
    s = f"{_d(r, 10)}:AA{_w(r, 33, B64URL)}"
    return s, f"curl https://api.telegram.org/bot{s}/sendMessage -d chat_id=-100{_d(r, 10)} -d text=done"


@kind("feishu webhook zh")
def _(r):
    s = _uuid(r)
    return s, f"飞书群机器人：https://open.feishu.cn/open-apis/bot/v2/hook/{s} 发告警用"


@kind("dingtalk sign secret zh")
def _(r):
    s = "SEC" + _w(r, 64, HEX)
    return s, f"钉钉机器人加签用的是 {s}，webhook 在群设置里找"


@kind("wecom webhook key zh")
def _(r):
    s = _uuid(r)
    return s, f"企业微信：https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={s}"


@kind("mega link key fragment")
def _(r):
    s = _w(r, 43, B64URL)
    return s, f"the scans are at https://mega.nz/file/{_w(r, 8, ALNUM)}#{s}"


@kind("oauth implicit fragment")
def _(r):
    s = _w(r, 48, B64URL)
    return s, f"got redirected to https://app.{_domain(r)}/callback#access_token={s}&token_type=Bearer&expires_in=3600"


@kind("clash subscribe token zh")
def _(r):
    s = _w(r, 32, HEX)
    return s, f"机场订阅：https://{_w(r, 6, LOWER)}.{r.choice(['xyz', 'top', 'cc'])}/api/v1/client/subscribe?token={s}"


@kind("vless uuid zh")
def _(r):
    s = _uuid(r)
    return (
        s,
        f"节点：vless://{s}@hk1.{_w(r, 6, LOWER)}.xyz:443?encryption=none&security=reality&sni=www.microsoft.com#HK-01",
    )


@kind("shadowsocks userinfo zh")
def _(r):
    s = base64.urlsafe_b64encode(f"chacha20-ietf-poly1305:{_pw(r, 16, URL_SYMS)}".encode()).decode().rstrip("=")
    return s, f"备用节点 ss://{s}@jp2.{_w(r, 6, LOWER)}.net:8388#JP-Tokyo"


@kind("otpauth uri")
def _(r):
    s = _w(r, 32, B32)
    return s, f"otpauth://totp/Bitwarden:me%40{_domain(r)}?secret={s}&issuer=Bitwarden&digits=6"


@kind("totp setup key grouped zh")
def _(r):
    s = _groups(_w(r, 32, B32.lower()))
    return s, f"谷歌验证器扫不了码，手动输入的设置密钥是：{s}"


@kind("signed url sig param")
def _(r):
    s = _w(r, 64, HEX)
    return (
        s,
        f"https://storage.googleapis.com/exports/q3.csv?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Expires=604800&X-Goog-Signature={s}",
    )


# 1. credentials by context: tables and lists


@kind("markdown table creds")
def _(r):
    s = _pw(r)
    return (
        s,
        f"| service | user | pass |\n| --- | --- | --- |\n| grafana | admin | {s} |\n| minio | root | (same as grafana) |",
    )


@kind("list creds zh")
def _(r):
    s = _pw(r)
    return s, f"家里设备账号：\n- 群晖：admin / {s}\n- 打印机：没有密码"


@kind("qq mail auth code zh")
def _(r):
    s = _w(r, 16, LOWER)
    return s, f"QQ 邮箱的 SMTP 授权码是 {s}，Thunderbird 里填这个，不是 QQ 密码"


@kind("jianguoyun app password zh")
def _(r):
    s = _w(r, 16, LOWNUM)
    return s, f"坚果云 WebDAV 应用密码：{s}（Zotero 同步用）"


@kind("aliyun accesskey secret zh")
def _(r):
    s = _w(r, 30, ALNUM)
    return s, f"阿里云 RAM 子账号：AccessKey ID LTAI5t{_w(r, 18, ALNUM)}，AccessKey Secret {s}"


@kind("wechat pay apiv3 key zh")
def _(r):
    s = _w(r, 32, ALNUM)
    return s, f"微信支付商户平台的 APIv3 密钥设成了 {s}"


@kind("zhipu api key zh")
def _(r):
    s = _w(r, 32, HEX) + "." + _w(r, 16, ALNUM)
    return s, f"智谱的 key 给你，先用着：{s}"


@kind("tencent secretkey zh")
def _(r):
    s = _w(r, 32, ALNUM)
    return s, f"腾讯云 COS：SecretId AKID{_w(r, 32, ALNUM)} SecretKey {s}"


# 2. secret-shaped tokens with no context word


@kind("invented prefix live token")
def _(r):
    s = "zpk_live_" + _w(r, 32, ALNUM)
    return s, f"ok here: {s} (works in staging too)"


@kind("invented prefix dash v2")
def _(r):
    s = "lmx-v2-" + _w(r, 40, ALNUM)
    return s, f"pasting for later {s}"


@kind("bare base62 zh")
def _(r):
    s = _w(r, 40, ALNUM)
    return s, f"把这个填进去就行：{s}"


@kind("wif base58")
def _(r):
    s = r.choice("KL") + _w(r, 51, B58)
    return s, f"imported {s} into Sparrow last night"


@kind("solana base58 zh")
def _(r):
    s = _w(r, 88, B58)
    return s, f"钱包导出来的是这一串：{s}"


@kind("age secret key")
def _(r):
    s = "AGE-SECRET-KEY-1" + _w(r, 58, BECH32.upper())
    return s, f"# created: 2026-01-04T10:12:55+01:00\n# public key: age1{_w(r, 58, BECH32)}\n{s}"


@kind("minisign secret key")
def _(r):
    s = "RWRTY0Iy" + _b64(r, 150)
    return s, f"untrusted comment: minisign encrypted secret key\n{s}"


@kind("nostr nsec zh")
def _(r):
    s = "nsec1" + _w(r, 58, BECH32)
    return s, f"存一下，换手机要用：{s}"


@kind("eth hex 0x")
def _(r):
    s = "0x" + _w(r, 64, HEX)
    return s, f"pasted {s} into Rabby and the old balance showed up"


@kind("bare hex 64 zh")
def _(r):
    s = _w(r, 64, HEX.upper())
    return s, f"冷钱包那个导出来是 {s}，先抄这儿"


@kind("paseto local")
def _(r):
    s = "v4.local." + _b64(r, 96, urlsafe=True, pad=False)
    return s, f"the session cookie decodes to nothing readable: {s}"


@kind("jwt split across lines")
def _(r):
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(f'{{"sub":"{_d(r, 8)}","exp":{_d(r, 10)}}}'.encode()).decode().rstrip("=")
    s = f"{head}.{body}\n.{_b64(r, 32, urlsafe=True, pad=False)}"
    return s, f"the token came wrapped from the terminal:\n{s}\nno idea why it breaks"


@kind("anthropic key split by space zh")
def _(r):
    s = "sk-ant-api03-" + _w(r, 30, B64URL) + " " + _w(r, 60, B64URL)
    return s, f"复制的时候中间断开了：{s}"


@kind("openai key split across lines")
def _(r):
    s = "sk-proj-" + _w(r, 40, B64URL) + "\n" + _w(r, 40, B64URL)
    return s, f"terminal wrapped it, sorry:\n{s}"


@kind("fernet token")
def _(r):
    s = "gAAAAAB" + _b64(r, 70, urlsafe=True)
    return s, f"this came back from the encrypt endpoint: {s}"


@kind("discord-like triple zh")
def _(r):
    s = f"{base64.b64encode(_d(r, 18).encode()).decode().rstrip('=')}.{_w(r, 6, B64URL)}.{_w(r, 38, B64URL)}"
    return s, f"机器人在线用的是 {s}，重置了再告诉你"


@kind("ssh private key body zh")
def _(r):
    s = "b3BlbnNzaC1rZXktdjEAAAAA" + _b64(r, 36)
    return s, f"跳板机的 key 中间一行是 {s}，整个文件在 U 盘里"


# 3. personal data: phone numbers


@kind("us phone with extension")
def _(r):
    s = f"({r.choice(['646', '415', '312', '617', '206'])}) {_d(r, 3)}-{_w(r, 4, DIGITS)} ext. {_d(r, 3)}"
    return s, f"Dr. Patel's office: {s}, ask for the billing desk"


@kind("uk mobile")
def _(r):
    s = f"07{_w(r, 3, DIGITS)} {_w(r, 6, DIGITS)}"
    return s, f"my UK number while I'm in Leeds: {s}"


@kind("german phone with durchwahl")
def _(r):
    s = f"+49 (0)30 {_d(r, 7)}-{_w(r, 2, DIGITS)}"
    return s, f"Büro Frau Lindqvist: {s}"


@kind("french mobile")
def _(r):
    s = "06 " + " ".join(_w(r, 2, DIGITS) for _ in range(4))
    return s, f"le portable de Mathilde : {s}"


@kind("cn mobile spaced zh")
def _(r):
    m = _cn_mobile(r)
    s = f"{m[:3]} {m[3:7]} {m[7:]}"
    return s, f"我换号了，新号码 {s}，旧号下个月停机"


@kind("cn mobile fullwidth zh")
def _(r):
    s = _cn_mobile(r).translate(str.maketrans("0123456789", "０１２３４５６７８９"))
    return s, f"房东电话：{s}（输入法打成全角了）"


@kind("cn landline extension zh")
def _(r):
    s = f"021-{_d(r, 8)} 转 {_d(r, 4)}"
    return s, f"公司座机 {s}，找行政小刘"


@kind("japan mobile zh")
def _(r):
    s = f"{r.choice(['090', '080', '070'])}-{_w(r, 4, DIGITS)}-{_w(r, 4, DIGITS)}"
    return s, f"在日本的手机号是 {s}，LINE 也是这个"


@kind("taiwan mobile zh")
def _(r):
    s = f"09{_w(r, 2, DIGITS)}-{_w(r, 3, DIGITS)}-{_w(r, 3, DIGITS)}"
    return s, f"台湾的表姐电话 {s}"


@kind("korea mobile zh")
def _(r):
    s = f"010-{_w(r, 4, DIGITS)}-{_w(r, 4, DIGITS)}"
    return s, f"首尔民宿老板的电话 {s}"


@kind("brazil mobile")
def _(r):
    s = f"(11) 9{_w(r, 4, DIGITS)}-{_w(r, 4, DIGITS)}"
    return s, f"Ana's WhatsApp: {s}"


@kind("india mobile")
def _(r):
    s = f"+91 {r.choice('6789')}{_w(r, 4, DIGITS)} {_w(r, 5, DIGITS)}"
    return s, f"driver in Bengaluru, call {s} when you land"


@kind("hk mobile zh")
def _(r):
    s = f"+852 {r.choice('569')}{_w(r, 3, DIGITS)} {_w(r, 4, DIGITS)}"
    return s, f"香港同事的电话 {s}"


# 3. personal data: ID numbers


@kind("cn resident id zh")
def _(r):
    s = _cn_ric(r)
    return s, f"订机票用的身份证号 {s}，名字{r.choice(CN_NAMES)}"


@kind("cn resident id no context zh")
def _(r):
    s = _cn_ric(r)
    return s, f"实名信息：{r.choice(CN_NAMES)} {s}"


@kind("taiwan id zh")
def _(r):
    s = _tw_id(r)
    return s, f"表妹的台湾身分证字号 {s}，填签证表用"


@kind("hkid zh")
def _(r):
    s = _hkid(r)
    return s, f"香港身份证号码 {s}，开户的时候要"


@kind("korean rrn")
def _(r):
    s = _kr_rrn(r)
    return s, f"Jisoo's resident registration number for the visa form: {s}"


@kind("aadhaar")
def _(r):
    s = _aadhaar(r)
    return s, f"Aadhaar for the KYC form: {s}"


@kind("brazil cpf")
def _(r):
    s = _cpf(r)
    return s, f"Ana's CPF for the Pix transfer: {s}"


@kind("spanish dni")
def _(r):
    s = _dni(r)
    return s, f"Marta's DNI for the rental contract is {s}"


@kind("japan my number zh")
def _(r):
    s = _my_number(r)
    return s, f"日本的个人番号（マイナンバー）{s}，报税要用"


@kind("passport number zh")
def _(r):
    s = "E" + _d(r, 8)
    return s, f"护照号 {s}，有效期到 2031 年"


# 3. personal data: bank cards and IBANs


@kind("unionpay card grouped zh")
def _(r):
    s = _groups(_card(r, r.choice(["622202", "621700", "622848", "621483"]), 19))
    return s, f"工资卡卡号 {s}，开户行是招行深圳分行"


@kind("amex 4-6-5")
def _(r):
    n = _card(r, r.choice(["34", "37"]), 15)
    s = f"{n[:4]} {n[4:10]} {n[10:]}"
    return s, f"use the Amex for the hotel: {s}, exp 09/28"


@kind("visa dashes")
def _(r):
    s = _groups(_card(r, "4", 16), sep="-")
    return s, f"virtual card for subscriptions {s}"


@kind("mastercard bare zh")
def _(r):
    s = _card(r, r.choice(["51", "52", "53", "54", "55"]), 16)
    return s, f"境外网站付款刷这张 {s}"


@kind("iban de grouped")
def _(r):
    s = _groups(_iban_de(r))
    return s, f"rent goes to {s} (Hausverwaltung Müller)"


@kind("iban gb zh")
def _(r):
    s = _groups(_iban_gb(r))
    return s, f"英国房东的收款 IBAN：{s}"


@kind("iban fr compact")
def _(r):
    s = _iban_fr(r)
    return s, f"virement pour la caution: {s}"


@kind("iban nl lower-cased")
def _(r):
    s = _iban_nl(r).lower()
    return s, f"tikkie didn't work so pay back to {s}"


# 3. personal data: e-mails and handles


@kind("email bracket at dot")
def _(r):
    s = f"{_name(r)} [at] proton [dot] me"
    return s, f"her private address is {s}, not the work one"


@kind("email fullwidth at zh")
def _(r):
    s = f"{_name(r)}＠qq.com"
    return s, f"私人邮箱 {s}"


@kind("email 艾特 zh")
def _(r):
    s = f"{_w(r, 4, LOWER)}{_w(r, 4, DIGITS)} 艾特 163 点 com"
    return s, f"邮箱是 {s}，怕被爬虫抓所以这么写"


@kind("email plus tag")
def _(r):
    s = f"{_name(r)}+bank@fastmail.com"
    return s, f"the bank only knows {s}"


@kind("email at spelled out")
def _(r):
    s = f"{_name(r)} at gmail dot com"
    return s, f"reach Tom at {s} for the reunion"


@kind("wechat id zh")
def _(r):
    s = _w(r, 1, LOWER) + _w(r, r.randint(7, 11), LOWNUM + "_-")
    return s, f"加我微信：{s}，备注一下是谁"


@kind("qq number zh")
def _(r):
    s = _d(r, r.choice([9, 10]))
    return s, f"QQ 号 {s}，群里找不到就直接加"


@kind("alipay account zh")
def _(r):
    s = _cn_mobile(r)
    return s, f"支付宝账号 {s}（{r.choice(CN_NAMES)[0]}**），房租转这里"


@kind("douyin id zh")
def _(r):
    s = _w(r, 1, LOWER) + _w(r, 9, LOWNUM)
    return s, f"我的抖音号 {s}，别在群里说"


@kind("xiaohongshu id zh")
def _(r):
    s = _d(r, 10)
    return s, f"小红书号：{s}（小号，不想被同事看到）"


# 3. personal data: addresses, plates, dates of birth, medical, seed phrases


@kind("cn address zh")
def _(r):
    s = f"上海市浦东新区张杨路{r.randint(100, 2999)}弄{r.randint(1, 60)}号{r.randint(1, 30)}0{r.randint(1, 4)}室"
    return s, f"快递寄到 {s}，收件人写我"


@kind("japanese address zh")
def _(r):
    s = f"〒{_w(r, 3, DIGITS)}-{_w(r, 4, DIGITS)} 東京都世田谷区三軒茶屋{r.randint(1, 4)}-{r.randint(1, 30)}-{r.randint(1, 20)} メゾン桜{r.randint(1, 9)}0{r.randint(1, 5)}号室"
    return s, f"寄到日本的地址：{s}"


@kind("taiwan address zh")
def _(r):
    s = f"台北市大安區復興南路一段{r.randint(10, 390)}巷{r.randint(1, 60)}號{r.randint(2, 15)}樓"
    return s, f"台湾那边的地址 {s}"


@kind("uk address")
def _(r):
    s = f"Flat {r.randint(1, 9)}B, {r.randint(2, 180)} {r.choice(['Elmwood', 'Cardigan', 'Ash Grove', 'Hyde Park'])} Road, Leeds LS{r.randint(1, 17)} {r.randint(1, 9)}{_w(r, 2, 'ABDEFGHJLNPQRSTUWXYZ')}"
    return s, f"new flat from March: {s}"


@kind("us address")
def _(r):
    s = f"{r.randint(100, 9999)} {r.choice(['Juniper', 'Alcatraz', 'Telegraph', 'Chestnut'])} St Apt {r.randint(1, 40)}, Oakland, CA 946{r.randint(0, 19):02d}"
    return s, f"ship the monitor to {s}"


@kind("cn plate zh")
def _(r):
    s = f"{r.choice('沪京粤浙苏川')}{r.choice('ABCDE')}·{r.choice('DF')}{_w(r, 5, DIGITS)}"
    return s, f"我的车牌 {s}，小区门禁登记用"


@kind("german plate")
def _(r):
    s = f"{r.choice(['M', 'B', 'HH', 'K'])}-{_w(r, 2, UPPER)} {_d(r, 4)}"
    return s, f"my car in Germany is {s}, parked at the Hauptbahnhof"


@kind("uk plate")
def _(r):
    s = f"{_w(r, 2, 'ABDEFGHKLMNOPRSVWY')}{r.choice(['71', '22', '72', '23', '73'])} {_w(r, 3, 'ABCDEFGHJKLMNPRSTUVWXYZ')}"
    return s, f"the hire car reg is {s}"


@kind("dob with name")
def _(r):
    s = f"{r.randint(1, 28)} {r.choice(MONTHS)} {r.randint(1940, 1975)}"
    return s, f"Grandma {r.choice(LAST)} was born {s}, her card needs it"


@kind("dob zh")
def _(r):
    s = f"{r.randint(2012, 2024)}年{r.randint(1, 12)}月{r.randint(1, 28)}日"
    return s, f"女儿{r.choice(CN_NAMES)}是{s}出生的，办护照要填"


@kind("medical record number")
def _(r):
    s = "MRN " + _d(r, 10)
    return s, f"St. Luke's patient portal, {s}, cardiology follow-up"


@kind("住院号 zh")
def _(r):
    s = f"ZY{r.randint(2023, 2026)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}{_w(r, 4, DIGITS)}"
    return s, f"我爸的住院号 {s}，复查的时候报这个"


@kind("bip39 12 words")
def _(r):
    s = _mnemonic(r, 12)
    return s, f"recovery phrase for the old Ledger: {s}"


@kind("bip39 24 words zh")
def _(r):
    s = _mnemonic(r, 24)
    return s, f"助记词抄在这里了：{s}"


@kind("bip39 12 comma no context")
def _(r):
    s = ", ".join(_mnemonic(r, 12).split())
    return s, f"don't lose this: {s}"


# 4. internal hosts


@kind("private cidr")
def _(r):
    s = f"10.{r.randint(1, 254)}.{r.randint(0, 254)}.0/24"
    return s, f"allow {s} through the bastion security group"


@kind("private ip with port zh")
def _(r):
    s = f"172.{r.randint(16, 31)}.{r.randint(0, 254)}.{r.randint(2, 254)}:{r.choice([8443, 9090, 3306, 6443])}"
    return s, f"测试环境接口在 {s}，要先连 VPN"


@kind("ipv6 ula")
def _(r):
    s = f"fd{_w(r, 2, HEX)}:{_w(r, 4, HEX)}:{_w(r, 4, HEX)}:{r.randint(1, 99)}::{r.randint(16, 4095):x}"
    return s, f"the NAS answers on {s} inside the house"


@kind("ipv6 link-local zh")
def _(r):
    s = f"fe80::{_w(r, 4, HEX)}:{_w(r, 2, HEX)}ff:fe{_w(r, 2, HEX)}:{_w(r, 4, HEX)}%en0"
    return s, f"打印机的 IPv6 地址是 {s}"


@kind("ipv6 bracket url")
def _(r):
    s = f"[fd00:{_w(r, 4, HEX)}::{_w(r, 3, HEX)}]:8123"
    return s, f"Home Assistant at http://{s}/lovelace"


@kind("ipv4-mapped ipv6 zh")
def _(r):
    s = f"::ffff:192.168.{r.randint(2, 254)}.{r.randint(2, 254)}"
    return s, f"日志里客户端地址是 {s}，就是家里那台 NAS"


@kind("nas admin url zh")
def _(r):
    s = f"192.168.{r.randint(2, 254)}.{r.randint(2, 254)}:5001"
    return s, f"群晖后台 https://{s}/ ，外网走 QuickConnect"


@kind("router luci zh")
def _(r):
    s = f"192.168.{r.randint(2, 254)}.1/cgi-bin/luci"
    return s, f"路由器后台 http://{s}/admin/network ，改 DNS 在这"


@kind("home.arpa host")
def _(r):
    s = f"{r.choice(['wiki', 'paperless', 'jellyfin', 'immich'])}-{_w(r, 3, LOWNUM)}.home.arpa"
    return s, f"docs live at http://{s}:8080 now"


@kind("intranet host zh")
def _(r):
    s = f"gitlab.{_w(r, 5, LOWER)}.intranet"
    return s, f"内网 GitLab：https://{s}/，外网打不开"


@kind("internal suffix ssh")
def _(r):
    s = f"build-{r.randint(1, 40):02d}.ci.{_w(r, 6, LOWER)}.internal"
    return s, f"ssh deploy@{s} and check the runner logs"


@kind("mdns local zh")
def _(r):
    s = f"{r.choice(['brother', 'epson', 'hp'])}-{_w(r, 6, HEX)}.local"
    return s, f"打印机的名字是 {s}，mac 上直接能找到"


@kind("corp subdomain of public")
def _(r):
    s = f"ops-{_w(r, 4, LOWNUM)}.int.{_domain(r)}"
    return s, f"admin console: https://{s}/login (VPN only)"


@kind("oa corp subdomain zh")
def _(r):
    s = f"oa.corp.{_w(r, 6, LOWER)}.cn:{r.choice([8088, 8080, 7001])}"
    return s, f"报销系统 http://{s} ，只能公司网络访问"


@kind("k8s service fqdn")
def _(r):
    s = f"{r.choice(['payments', 'ledger', 'auth'])}-api.{r.choice(['prod', 'staging', 'core'])}-{_w(r, 3, LOWER)}.svc.cluster.local:{r.choice([8080, 9000, 50051])}"
    return s, f"from inside the mesh call {s}"


@kind("k8s short svc zh")
def _(r):
    s = f"{r.choice(['order', 'user', 'risk'])}-svc.{_w(r, 5, LOWER)}.svc:8080"
    return s, f"集群里直接调 http://{s}/api/v1 就行，不走网关"


@kind("ec2 internal hostname")
def _(r):
    s = f"ip-10-{r.randint(0, 255)}-{r.randint(0, 255)}-{r.randint(2, 254)}.ec2.internal"
    return s, f"the worker that keeps dying is {s}"


@kind("aws compute internal zh")
def _(r):
    s = f"ip-172-31-{r.randint(0, 255)}-{r.randint(2, 254)}.ap-northeast-1.compute.internal"
    return s, f"东京那台机器内网名是 {s}"


@kind("tailscale magicdns")
def _(r):
    s = f"{r.choice(['nas', 'pi', 'desktop', 'mbp'])}.tail{_w(r, 5, HEX)}.ts.net"
    return s, f"reach it from anywhere at https://{s}"


@kind("tailscale cgnat ip zh")
def _(r):
    s = f"100.{r.randint(64, 127)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
    return s, f"家里 NAS 的 Tailscale 地址 {s}，出门在外也能连"


@kind("consul service host")
def _(r):
    s = f"vault.service.{r.choice(['dc1', 'fra1', 'sgp1'])}-{_w(r, 3, LOWER)}.consul:8200"
    return s, f"VAULT_ADDR should point at https://{s}"


# ── markers and ordinary text ────────────────────────────────────────────────────────────────────────

CHINESE: frozenset[str] = frozenset(k for k in KINDS if k.endswith(" zh"))

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"(personal) {t}",
    lambda t: f"{t} — just for me",
    lambda t: f"🔒 {t}",
    lambda t: f"{t}，别发出去",
    lambda t: f"【私密】{t}",
    lambda t: f"confidential – {t}",
    lambda t: f"<!-- private -->\n{t}",
    lambda t: f"{t} #personal",
    lambda t: f"仅自己可见：{t}",
    lambda t: f"{t}（私人）",
    lambda t: f"{t} (don't publish)",
    lambda t: f"🤫 {t}",
    lambda t: f"{t} [not for the wiki]",
    lambda t: f"DO NOT SHARE: {t}",
    lambda t: f"（隐私）{t}",
    lambda t: f"{t} #私密",
    lambda t: f"不要公开：{t}",
    lambda t: f"Private note: {t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"private": "yes"},
    {"visibility": "private"},
    {"publish": False},
    {"Private": "true"},
    {"私密": True},
    {"可见性": "仅自己"},
    {"tags": ["notes", "private"]},
    {"public": "no"},
    {"confidential": True},
    {"隐私": "是"},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "## Private notes",
    "### Personal (do not share)",
    "## 私人信息",
    "## 🔒 Just for me",
    "# Confidential",
    "## 隐私",
    "### 不要公开",
]

_SHA512_NPM = "sha512-" + base64.b64encode(hashlib.sha512(b"left-pad@1.3.0").digest()).decode()
_DIGEST = hashlib.sha256(b"postgres:16.4-alpine").hexdigest()

ORDINARY: list[str] = [
    "The password is 12+ characters",
    "The PIN is 4-6 digits",
    "CI summary: pass: 118",
    "conda pin: python=3.11",
    "secret: optional",
    '{"commit": "3f9a1c2e8b7d4a6f0e5c9b8a7d6e5f4c3b2a1908", "ref": "main"}',
    f'"integrity": "{_SHA512_NPM}"',
    "git clone git@github.com:owner/repo.git",
    "pip install 'httpx[http2]>=0.27'",
    "docker pull ghcr.io/astral-sh/uv:0.5.11",
    f"image: postgres:16.4-alpine@sha256:{_DIGEST}",
    "request id 3b241101-e2bb-4255-8caf-4136c566a962",
    "https://docs.python.org/3/library/secrets.html",
    "https://github.com/astral-sh/ruff/releases/tag/0.8.4",
    "export OPENAI_API_KEY=${OPENAI_API_KEY}",
    "api_key: <your-token>",
    "password: ${DB_PASSWORD}",
    "Authorization: Bearer $GITHUB_TOKEN",
    'token = "{{ vault_token }}"',
    "DATABASE_URL=postgresql://USER:PASSWORD@HOST:5432/DBNAME",
    "Set a passphrase of at least five words for the vault",
    "Forgot password? The reset link expires after 30 minutes",
    "密码至少 12 位，必须包含大小写字母和数字",
    "默认端口是 8080，可以在 config.yaml 里改",
    "用 pnpm install --frozen-lockfile 安装依赖",
    "把 Python 升级到 3.12.7 之后测试全过了",
    "这个函数的时间复杂度是 O(n log n)",
    "在设置页点击“重置密码”即可，验证码 5 分钟内有效",
    "服务监听在 0.0.0.0:3000",
    "2026-03-14T09:30:00+08:00",
    "Release 4.2.0 shipped on 2025-11-03",
    "#1e90ff",
    "rgb(34, 139, 34)",
    "port 5432/tcp open",
    "/usr/local/lib/python3.11/site-packages/numpy/__init__.py",
    "~/.config/nvim/init.lua",
    "kubectl -n monitoring get pods -o wide",
    'ssh-keygen -t ed25519 -C "laptop"',
    "curl -fsSL https://deb.nodesource.com/setup_22.x | bash -",
    "ruff check --fix .",
    "sha256sum: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "md5 d41d8cd98f00b204e9800998ecf8427e",
    'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"',
    "npm ERR! code ERESOLVE",
    "HTTP 401 Unauthorized: token expired",
    "The API key goes in the X-Api-Key header",
    "Rotate the deploy key every 90 days",
    "ISBN 978-0-13-468599-1",
    "v1.2.3-rc.1+build.456",
    "python -m http.server 8000",
    "http://localhost:5173/",
    "8.8.8.8 and 1.1.1.1 are public resolvers",
    "git checkout -b feature/login-page",
    "TOTP codes are 6 digits and rotate every 30 seconds",
    "UUID v7: 01890a5d-ac96-774b-bcce-b302099a8057",
    "docker run -p 127.0.0.1:6379:6379 redis:7",
    "AWS region ap-northeast-1, instance type t3.medium",
    "统一使用 UTF-8 编码，避免中文乱码",
    "升级到 Node 22 LTS 之后要重新 npm ci",
    "Kubernetes 的 Secret 只是 base64，不是加密",
]
