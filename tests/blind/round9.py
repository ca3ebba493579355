"""Blind canary set, round 9: written blind (without reading the detectors, the tests or the earlier rounds; only the
set format in tests/blind/example_set.py and the harness's docstring) on 2026-12-03, as a user of an AI agent that
remembers a developer's and a family's life in English and Chinese would write their notes.

What it covers:

- credentials in the config files of less common tools: rclone, aria2, Syncthing, Jellyfin, Home Assistant
  secrets.yaml, OpenVPN auth files, CIFS credentials= files and mount options, the Git credential store,
  pip/npm/yarn/cargo/poetry/composer auth, JetBrains and VS Code settings, Postman and Insomnia exports,
  Kubernetes Secrets (stringData and base64 data), Terraform state, Ansible vault and inventories, crontab lines
  with curl -u, Windows cmdkey, macOS `security`, PowerShell SecureString, .netrc, Docker config.json, .htpasswd,
  SNMP, switch configs, IPsec, WireGuard, Grafana, MinIO, Nextcloud, WordPress, frp, Clash/Shadowsocks/V2Ray,
  宝塔, Alist, Transmission, Pi-hole, IPMI, MQTT, Tailscale, ngrok, cloudflared, Jenkins;
- database connection strings of many engines (SQL Server, Oracle, MySQL, PostgreSQL .pgpass, MongoDB SRV with
  percent-encoding, Redis, ClickHouse, JDBC, ODBC, SQLAlchemy, Neo4j, Elasticsearch, 达梦, OceanBase, InfluxDB),
  LDAP bind passwords, RADIUS shared secrets, router/NAS/camera admin passwords, 802.1X, VNC and RDP files;
- provider tokens, real (GitHub, GitLab, npm, crates.io, OpenAI, Anthropic, Hugging Face, Slack, Discord,
  Telegram, Stripe, Twilio, SendGrid, Google, GCP, Azure, Datadog, Doppler, Vault, AWS, Docker Hub, PyPI,
  Cloudflare, Notion, Figma) and Chinese (阿里云, 腾讯云,
  七牛, 华为云, 火山引擎, 百度, 微信公众号, 微信支付, 支付宝, 飞书, 钉钉, 企业微信, Gitee, DeepSeek, Kimi, 智谱,
  百炼), and invented ones with and without a telling word;
- private key material in unusual wrappers (JSON with \\n escapes, PuTTY .ppk, quoted forwarded OpenSSH keys, PGP
  in XML CDATA, JWK, age, nsec, Ethereum, WIF, Solana arrays, BIP-39 phrases), TOTP seeds and recovery codes;
- one-time codes, PINs, PUKs, door/safe/alarm/keypad/smart-lock codes in natural sentences; password-manager and
  disk recovery secrets (1Password Secret Key, Bitwarden passphrase, BitLocker recovery key), Windows product keys;
- personal data of many countries with valid check digits (中国居民身份证, SSN, NINO, NHS, SIN, Aadhaar, CPF,
  NIR, DNI, BSN, personnummer, 주민등록번호, マイナンバー, 台灣身分證, HKID, NRIC, PESEL, HETU, Belgian national
  number, codice fiscale, TFN), passports, driving licences, phones of many regions, e-mails (also obfuscated),
  street addresses, IBANs, bank and credit cards, US routing/account numbers, health records, licence plates,
  dates of birth; a Chinese family's paperwork (社保卡, 公积金, 个税, 就诊卡, 学籍号, 回乡证, 驾驶证档案编号, VIN
  with its check digit, 不动产权证, 结婚证);
- internal host names and private IPs (RFC 1918, ULA, CGNAT/Tailscale, cluster DNS, AD), and account names;
- phrasing: the secret before, after or far from its telling word, in parentheses and many kinds of quotes, in
  Markdown tables, lists, links, code spans and fences, in JSON/YAML/TOML/INI/XML, in URLs (user-info, query,
  fragment, percent-encoded), with the label and value on different lines, voice transcription, forwarded
  messages, tool-call outputs, full-width punctuation and mixed 中英.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from urllib.parse import quote

Gen = Callable[[random.Random], tuple[str, str]]

LOW = string.ascii_lowercase
UP = string.ascii_uppercase
DIG = string.digits
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-"
B32 = UP + "234567"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
SYM = "!#@+=.-?"

_SYLLABLES = [
    "ka", "lo", "mi", "ren", "tu", "vas", "qin", "zhao", "bel", "dor", "fen", "gu", "hai", "jo", "kes",
    "lan", "mor", "nu", "pei", "ros", "sol", "tam", "wen", "xia", "yor", "bri", "cal", "dex", "ein", "fal",
]  # fmt: skip

_BIP39 = [
    "abandon", "ability", "absorb", "abstract", "accident", "acoustic", "acquire", "actress", "adapt", "address",
    "adjust", "advance", "aerobic", "affair", "afford", "agent", "airport", "aisle", "alarm", "album", "alcohol",
    "alert", "alien", "alley", "almost", "alpha", "amateur", "amazing", "among", "amused", "analyst", "anchor",
    "ancient", "angle", "animal", "ankle", "announce", "annual", "antenna", "antique", "anxiety", "apology",
    "appear", "approve", "arctic", "arena", "armor", "arrange", "arrest", "arrow", "artefact", "artwork",
    "aspect", "assault", "asset", "assume", "asthma", "athlete", "attitude", "auction", "august", "autumn",
    "avocado", "awkward", "velvet", "tiger", "wrist", "zone", "harbor", "lizard", "orbit", "puzzle", "ribbon",
]  # fmt: skip

KINDS: dict[str, Gen] = {}
_CHINESE: set[str] = set()


def _kind(name: str, zh: bool = False) -> Callable[[Gen], Gen]:
    """Register a generator; each kind draws from its own stream (seeded by its name and one draw from the rng
    passed in), so two kinds given equal rngs do not draw the same random parts."""

    def register(fn: Gen) -> Gen:
        if name in KINDS:
            raise ValueError(f"duplicate kind {name!r}")

        def generate(r: random.Random) -> tuple[str, str]:
            return fn(random.Random(f"{name}|{r.getrandbits(64)}"))

        KINDS[name] = generate
        if zh:
            _CHINESE.add(name)
        return fn

    return register


# --------------------------------------------------------------------------------------------------------------
# helpers


def _w(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _d(r: random.Random, n: int) -> str:
    return _w(r, n, DIG)


def _hex(r: random.Random, n: int) -> str:
    return _w(r, n, HEX)


def _syl(r: random.Random, n: int = 2) -> str:
    return "".join(r.choice(_SYLLABLES) for _ in range(n))


def _pw(r: random.Random) -> str:
    """A password as people make them: word-ish, random, passphrase-ish or leet, always with a digit."""
    shape = r.randrange(4)
    if shape == 0:
        return _syl(r, 3).capitalize() + _d(r, r.randint(2, 4)) + r.choice(SYM) + _syl(r, 1)
    if shape == 1:
        core = _w(r, r.randint(8, 12)) + _d(r, 2)
        i = r.randrange(2, len(core) - 2)
        return core[:i] + r.choice(SYM) + core[i:]
    if shape == 2:
        sep = r.choice("-.+=")
        return _syl(r, 2) + sep + _syl(r, 2).capitalize() + sep + str(r.randint(1960, 2024)) + _w(r, 2, UP)
    return _syl(r, 2).capitalize() + r.choice("@#!") + _d(r, 4) + _w(r, 3, UP) + r.choice("!?#")


def _pw_url(r: random.Random) -> str:
    """A password that needs no escaping in a URL's user-info."""
    return _w(r, r.randint(5, 8)) + r.choice("-.~") + _w(r, r.randint(6, 9)) + _d(r, 2)


def _uuid(r: random.Random) -> str:
    return f"{_hex(r, 8)}-{_hex(r, 4)}-4{_hex(r, 3)}-{r.choice('89ab')}{_hex(r, 3)}-{_hex(r, 12)}"


def _jwt(r: random.Random) -> str:
    return "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ" + _w(r, 90) + "." + _w(r, 43, URLSAFE)


def _ip10(r: random.Random) -> str:
    return f"10.{r.randint(16, 250)}.{r.randint(1, 254)}.{r.randint(2, 254)}"


def _ip172(r: random.Random) -> str:
    return f"172.{r.randint(16, 31)}.{r.randint(1, 254)}.{r.randint(2, 254)}"


def _ip192(r: random.Random) -> str:
    return f"192.168.{r.randint(2, 254)}.{r.randint(2, 254)}"


def _ip_pub(r: random.Random) -> str:
    return f"{r.choice([45, 47, 103, 139, 154, 185, 203])}.{r.randint(10, 250)}.{r.randint(1, 254)}.{r.randint(2, 254)}"


def _luhn(payload: str) -> str:
    total = 0
    for i, c in enumerate(reversed(payload)):
        n = int(c)
        if i % 2 == 0:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return str((10 - total % 10) % 10)


def _cn_id(r: random.Random) -> str:
    old = ["110105", "110108", "310104", "120101"]  # assigned before 1950
    area = r.choice([*old, "310115", "440305", "330106", "510107", "320106", "420111", "610113", "350203"])
    y, m, d = _date(r, 1950 if area in old else 1993, 2010)
    body = area + f"{y}{m:02d}{d:02d}" + _d(r, 3)
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    total = sum(int(c) * w for c, w in zip(body, weights, strict=True))
    return body + "10X98765432"[total % 11]


def _iban(country: str, bban: str) -> str:
    digits = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{bban}"


def _group(s: str, n: int = 4) -> str:
    return " ".join(s[i : i + n] for i in range(0, len(s), n))


_VERHOEFF_D = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
]  # fmt: skip
_VERHOEFF_P = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4], [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7], [9, 4, 5, 3, 1, 2, 6, 8, 7, 0], [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
]  # fmt: skip
_VERHOEFF_INV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]


def _verhoeff(payload: str) -> str:
    c = 0
    for i, ch in enumerate(reversed(payload)):
        c = _VERHOEFF_D[c][_VERHOEFF_P[(i + 1) % 8][int(ch)]]
    return str(_VERHOEFF_INV[c])


def _mod11_weighted(digits: str, weights: list[int]) -> int:
    return sum(int(c) * w for c, w in zip(digits, weights, strict=True)) % 11


def _date(r: random.Random, lo: int = 1950, hi: int = 2005) -> tuple[int, int, int]:
    return r.randint(lo, hi), r.randint(1, 12), r.randint(1, 28)


# --------------------------------------------------------------------------------------------------------------
# credentials in the config files of tools


@_kind("rclone webdav obscured pass")
def _k_rclone_webdav(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, URLSAFE)
    return s, (
        "rclone config for the family Nextcloud, from ~/.config/rclone/rclone.conf (obscured, not encrypted!):\n\n"
        f"[{_syl(r)}-cloud]\ntype = webdav\nurl = https://cloud.{_syl(r)}.de/remote.php/dav/files/mei/\n"
        f"vendor = nextcloud\nuser = mei\npass = {s}\n"
    )


@_kind("rclone 阿里云OSS 密钥", zh=True)
def _k_rclone_oss(r: random.Random) -> tuple[str, str]:
    s = _w(r, 30)
    return s, (
        "rclone 配置阿里云 OSS 备份照片，这段是从 rclone.conf 里拷出来的：\n"
        f"[oss]\ntype = s3\nprovider = Alibaba\naccess_key_id = LTAI5t{_w(r, 18)}\n"
        f"secret_access_key = {s}\nendpoint = oss-cn-hangzhou.aliyuncs.com\n"
    )


@_kind("aria2 rpc-secret", zh=True)
def _k_aria2(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24)
    return s, (
        "aria2.conf 改了这几行，AriaNg 里的 RPC 密钥要填一样的：\n```\nenable-rpc=true\nrpc-listen-all=true\n"
        f"rpc-listen-port=6800\nrpc-secret={s}\n```"
    )


@_kind("syncthing gui apikey xml")
def _k_syncthing(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, (
        "Syncthing on the Pi, config.xml gui block after I turned on remote access:\n"
        '<gui enabled="true" tls="true" debugging="false">\n    <address>0.0.0.0:8384</address>\n'
        f"    <user>mei</user>\n    <apikey>{s}</apikey>\n</gui>"
    )


@_kind("Jellyfin API 密钥", zh=True)
def _k_jellyfin(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"Jellyfin 控制台 → 高级 → API 密钥，给客厅电视上的 Infuse 新建了一个：{s}（名字叫 infuse-客厅）"


@_kind("home assistant secrets.yaml")
def _k_ha_secrets(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f'# /config/secrets.yaml\nwifi_ssid: "{_syl(r).capitalize()}Home"\nmqtt_user: ha\nmqtt_password: "{s}"\n'
        "elevation: 3\n"
    )


@_kind("Home Assistant 长期访问令牌", zh=True)
def _k_ha_token(r: random.Random) -> tuple[str, str]:
    s = _jwt(r)
    return s, f"HA 的长期访问令牌（个人资料页最底下生成的，只显示一次！）：\n{s}\n给 iPhone 快捷指令开车库门用"


@_kind("openvpn auth-user-pass file")
def _k_openvpn(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"$ sudo cat /etc/openvpn/client/office.auth\nmwei\n{s}\n"
        "$ grep auth-user-pass office.ovpn\nauth-user-pass /etc/openvpn/client/office.auth"
    )


@_kind("cifs credentials= file")
def _k_cifs_file(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "# /etc/fstab\n//nas.lan/media  /mnt/media  cifs  credentials=/root/.smb-nas,uid=1000,iocharset=utf8  0  0\n\n"
        f"and /root/.smb-nas:\nusername=mei\npassword={s}\ndomain=WORKGROUP"
    )


@_kind("CIFS 挂载参数里的密码", zh=True)
def _k_cifs_inline(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, (
        f"挂载爸妈那边的共享盘：sudo mount -t cifs //{_ip192(r)}/照片 /mnt/photos "
        f"-o username=baba,password={s},vers=3.0,uid=1000"
    )


@_kind("git credential store line")
def _k_git_cred(r: random.Random) -> tuple[str, str]:
    s = "ghp_" + _w(r, 36)
    return s, (
        f"found this in ~/.git-credentials on the old ThinkPad:\nhttps://mei-wei:{s}@github.com\n"
        "need to revoke it before I sell the laptop"
    )


@_kind("pip.conf extra-index user-info")
def _k_pip_conf(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    corp = _syl(r)
    return s, (
        f"[global]\nindex-url = https://pypi.org/simple\nextra-index-url = https://deploy:{s}@pypi.{corp}.io/simple/\n"
        f"trusted-host = pypi.{corp}.io"
    )


@_kind(".npmrc _authToken")
def _k_npmrc(r: random.Random) -> tuple[str, str]:
    s = "npm_" + _w(r, 36)
    return s, f"; ~/.npmrc\nregistry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={s}\nsave-exact=true"


@_kind("yarnrc npmAuthToken 私有源", zh=True)
def _k_yarnrc(r: random.Random) -> tuple[str, str]:
    s = "NpmToken." + _uuid(r)
    corp = _syl(r)
    return s, (
        "公司私有源的 .yarnrc.yml，新电脑要照抄：\n\nnpmScopes:\n"
        f'  {corp}:\n    npmRegistryServer: "https://nexus.{corp}.cn/repository/npm-group/"\n'
        f'    npmAuthToken: "{s}"\n    npmAlwaysAuth: true'
    )


@_kind("cargo credentials.toml")
def _k_cargo(r: random.Random) -> tuple[str, str]:
    s = "cio" + _w(r, 32)
    crate = _syl(r)
    return s, f'~/.cargo/credentials.toml\n\n[registry]\ntoken = "{s}"\n\n(for publishing {crate}-rs from the desktop)'


@_kind("poetry http-basic 私有 PyPI", zh=True)
def _k_poetry(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    corp = _syl(r)
    return s, (
        f"给 poetry 配私有源：\n$ poetry source add --priority=supplemental {corp} https://pypi.{corp}.com.cn/simple/\n"
        f"$ poetry config http-basic.{corp} ci-bot '{s}'"
    )


@_kind("composer auth.json github-oauth")
def _k_composer(r: random.Random) -> tuple[str, str]:
    s = "gho_" + _w(r, 36)
    body = json.dumps({"github-oauth": {"github.com": s}, "http-basic": {}}, indent=4)
    return s, f"auth.json next to composer.json (should be in .gitignore):\n{body}"


@_kind("jetbrains http-client private env")
def _k_jetbrains(r: random.Random) -> tuple[str, str]:
    s = _w(r, 48)
    body = json.dumps({"staging": {"host": f"https://staging-api.{_syl(r)}.dev", "apiToken": s}}, indent=2)
    return s, f"http-client.private.env.json (PhpStorm, gitignored, I hope):\n{body}"


@_kind("VS Code SQLTools 连接密码", zh=True)
def _k_vscode(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    conn = {
        "name": "生产只读",
        "driver": "PostgreSQL",
        "server": _ip10(r),
        "port": 5432,
        "database": "orders",
        "username": "readonly",
        "password": s,
    }
    body = json.dumps({"sqltools.connections": [conn]}, ensure_ascii=False, indent=2)
    return s, f"VS Code 的 settings.json 里 SQLTools 的连接（同步设置时会上传，注意）：\n{body}"


@_kind("postman environment export")
def _k_postman(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    corp = _syl(r)
    env = {
        "name": f"{corp}-prod",
        "values": [
            {"key": "baseUrl", "value": f"https://api.{corp}.com", "enabled": True},
            {"key": "apiKey", "value": s, "type": "secret", "enabled": True},
        ],
    }
    return s, json.dumps(env)


@_kind("Insomnia 导出的环境", zh=True)
def _k_insomnia(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40)
    env = {"_type": "environment", "name": "本地调试", "data": {"base_url": "http://localhost:3000", "bearer": s}}
    return s, "从 Insomnia 导出的环境（别直接丢群里）：\n" + json.dumps(env, ensure_ascii=False)


@_kind("kubernetes secret stringData")
def _k_k8s_stringdata(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-db\n  namespace: prod\ntype: Opaque\nstringData:\n"
        f"  DB_USER: app\n  DB_PASSWORD: '{s}'\n"
    )


@_kind("k8s Secret base64 data 输出", zh=True)
def _k_k8s_data(r: random.Random) -> tuple[str, str]:
    s = base64.b64encode(_pw(r).encode()).decode()
    return s, (
        "kubectl get secret redis-auth -n prod -o yaml 的输出：\napiVersion: v1\ndata:\n"
        f"  password: {s}\nkind: Secret\ntype: Opaque\n（base64 解一下就是明文）"
    )


@_kind("terraform state attributes")
def _k_tfstate(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    inst = {"attributes": {"engine": "postgres", "username": "app", "password": s, "port": 5432}}
    res = {"mode": "managed", "type": "aws_db_instance", "name": "main", "instances": [inst]}
    return s, "terraform.tfstate (excerpt):\n" + json.dumps({"resources": [res]}, indent=2)


@_kind("ansible vault-id password file")
def _k_ansible_vault(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "ansible-playbook -i inventories/prod site.yml --vault-id prod@~/.ansible/vault-prod.txt\n\n"
        f"vault-prod.txt is one line: {s}"
    )


@_kind("ansible inventory become 密码", zh=True)
def _k_ansible_become(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"inventory 里图省事直接写了：\n[nas]\n{_ip192(r)} ansible_user=admin ansible_become_password={s}\n"
        "以后要改成 vault"
    )


@_kind("crontab curl -u")
def _k_crontab(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, (
        "crontab -l\n# ping the healthcheck every 5 minutes\n"
        f"*/5 * * * * curl -fsS -u monitor:{s} https://status.{_syl(r)}.net/api/push >/dev/null 2>&1"
    )


@_kind("windows cmdkey")
def _k_cmdkey(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"cmdkey /generic:TERMSRV/{_ip10(r)} /user:{_syl(r).upper()}\\mwei /pass:{s}"


@_kind("macOS 钥匙串 security 命令", zh=True)
def _k_security(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"mac 上把家里 Wi-Fi 密码存进钥匙串：\nsecurity add-generic-password -a \"$USER\" -s home-wifi -w '{s}'"


@_kind("powershell ConvertTo-SecureString")
def _k_powershell(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"$pass = ConvertTo-SecureString '{s}' -AsPlainText -Force\n"
        f"$cred = New-Object System.Management.Automation.PSCredential('{_syl(r).upper()}\\svc-backup', $pass)\n"
        "Invoke-Command -ComputerName FS01 -Credential $cred -ScriptBlock { Get-PSDrive }"
    )


# --------------------------------------------------------------------------------------------------------------
# databases, directories, network gear


@_kind("sql server connection string")
def _k_mssql(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"Server=tcp:{_syl(r)}-sql.database.windows.net,1433;Initial Catalog=crm;User ID=crm-app;"
        f"Password={s};Encrypt=True;Connection Timeout=30;"
    )


@_kind("Oracle sqlplus 连接串", zh=True)
def _k_oracle(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"sqlplus system/{s}@//{_ip10(r)}:1521/ORCLPDB1  —— 财务系统的库，只读账号还在申请"


@_kind("mysql 命令行 -p 密码", zh=True)
def _k_mysql_cli(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"查订单表用这个：mysql -h {_ip10(r)} -P 3306 -uroot -p'{s}' -e 'show databases;'"


@_kind(".pgpass line")
def _k_pgpass(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"~/.pgpass (chmod 600 or psql ignores it):\npg-{_syl(r)}.internal:5432:analytics:report:{s}"


@_kind("mongodb+srv percent-encoded password")
def _k_mongo(r: random.Random) -> tuple[str, str]:
    s = quote(_w(r, 5) + "@" + _w(r, 4) + "#" + _d(r, 3) + "!", safe="")
    return s, (
        f'MONGO_URI="mongodb+srv://appUser:{s}@cluster0.{_w(r, 5, LOW + DIG)}.mongodb.net/?retryWrites=true&w=majority"'
    )


@_kind("阿里云 Redis redis-cli -a", zh=True)
def _k_redis(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"redis-cli -h r-bp1{_w(r, 14, LOW + DIG)}.redis.rds.aliyuncs.com -p 6379 -a {s} --no-auth-warning"


@_kind("clickhouse-client --password")
def _k_clickhouse(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"clickhouse-client --host ch-{_syl(r)}.internal --user analyst --password '{s}' --query 'SELECT 1'"


@_kind("JDBC URL password 参数", zh=True)
def _k_jdbc(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"DataGrip 连不上，最后用的 URL：\njdbc:mysql://{_ip10(r)}:3306/order?useSSL=false&user=app&password={s}"


@_kind("odbc connection PWD")
def _k_odbc(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "Driver={ODBC Driver 18 for SQL Server};"
        f"Server={_ip10(r)};Database=payroll;UID=report;PWD={s};TrustServerCertificate=yes;"
    )


@_kind("SQLAlchemy URL 百分号编码密码", zh=True)
def _k_sqlalchemy(r: random.Random) -> tuple[str, str]:
    s = quote(_w(r, 4) + "@" + _d(r, 4) + ":" + _w(r, 5), safe="")
    return s, (
        "密码里有 @ 和冒号，要先 URL 编码：\n"
        f'engine = create_engine("mysql+pymysql://report:{s}@{_ip10(r)}:3306/bi?charset=utf8mb4")'
    )


@_kind("neo4j NEO4J_AUTH")
def _k_neo4j(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"docker run -d -p 7474:7474 -p 7687:7687 -e NEO4J_AUTH=neo4j/{s} neo4j:5"


@_kind("Elasticsearch curl -u elastic", zh=True)
def _k_es(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"看索引：curl -k -u elastic:{s} https://es01.{_syl(r)}.internal:9200/_cat/indices?v"


@_kind("达梦 disql 登录", zh=True)
def _k_dm(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"达梦数据库：disql SYSDBA/{s}@{_ip10(r)}:5236 ，SYSDBA 的密码是甲方给的，别改"


@_kind("OceanBase obclient 密码", zh=True)
def _k_ob(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"obclient -h{_ip10(r)} -P2881 -uroot@sys -p'{s}' -Doceanbase -A   # OB 集群 sys 租户"


@_kind("influx config token")
def _k_influx(r: random.Random) -> tuple[str, str]:
    s = _w(r, 86, URLSAFE) + "=="
    return s, (
        f"influx config create --config-name home --host-url http://{_ip192(r)}:8086 --org family --token {s} --active"
    )


@_kind("ldapsearch -w bind password")
def _k_ldap(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    corp = _syl(r)
    return s, (
        f"ldapsearch -x -H ldaps://ldap.{corp}.internal -D 'cn=svc-wiki,ou=services,dc={corp},dc=internal' "
        f"-w '{s}' '(uid=mwei)' mail"
    )


@_kind("sssd.conf ldap_default_authtok", zh=True)
def _k_sssd(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    corp = _syl(r)
    return s, (
        f"新机器加域，/etc/sssd/sssd.conf 的关键几行：\n[domain/{corp}]\nid_provider = ldap\n"
        f"ldap_uri = ldaps://ldap.{corp}.internal\nldap_default_bind_dn = cn=sssd,ou=svc,dc={corp}\n"
        f"ldap_default_authtok = {s}"
    )


@_kind("freeradius clients.conf secret")
def _k_radius(r: random.Random) -> tuple[str, str]:
    s = _w(r, 20)
    room = _syl(r, 1)
    return s, f"client ap-{room} {{\n    ipaddr = {_ip10(r)}\n    secret = {s}\n    shortname = unifi-{room}\n}}"


@_kind("RADIUS 共享密钥", zh=True)
def _k_radius_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 16)
    return s, f"会议室 AP 的 802.1X：RADIUS 服务器 {_ip10(r)}:1812，共享密钥 {s}，计费端口 1813 不用开"


@_kind("TP-Link 路由器管理员密码", zh=True)
def _k_tplink(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"路由器（TP-Link XDR6088）管理员密码：{s}\n后台地址 tplogin.cn，宽带拨号的账号密码也在里面"


@_kind("群晖 admin 密码（标签在后面很远）", zh=True)
def _k_synology(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"今天折腾了一下午 NAS，硬盘终于换好了，阵列重建要跑一晚上。记一下：{s}。"
        "这是群晖 DSM 管理员登录用的，上次忘了只能按 reset 键，别再忘了。"
    )


@_kind("海康摄像头 RTSP 地址", zh=True)
def _k_hikvision(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"门口摄像头的 RTSP 地址（VLC 能直接打开）：rtsp://admin:{s}@{_ip192(r)}:554/Streaming/Channels/101"


@_kind("doorbell camera admin password")
def _k_doorbell(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"Reolink doorbell: user admin, and the password I set during onboarding was {s} (not the app login)"


@_kind("wpa_supplicant 802.1X network block")
def _k_wpa_eap(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        'network={\n    ssid="CorpNet"\n    key_mgmt=WPA-EAP\n    eap=PEAP\n    phase2="auth=MSCHAPV2"\n'
        f'    identity="mwei"\n    password="{s}"\n}}'
    )


@_kind("公司 802.1X 工号和密码", zh=True)
def _k_eap_zh(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"公司 Wi-Fi 是 802.1X（PEAP / MSCHAPv2），身份填工号 E{_d(r, 7)}，密码：{s}，证书选“不验证”"


@_kind("wifi QR payload")
def _k_wifi_qr(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    ssid = _syl(r).capitalize() + "Guest"
    return s, f"the string inside the guest Wi-Fi QR code on the fridge: WIFI:T:WPA;S:{ssid};P:{s};;"


@_kind("x11vnc storepasswd")
def _k_vnc(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8)
    return s, f"x11vnc -storepasswd {s} ~/.vnc/passwd   # VNC only uses 8 chars so that's the whole thing"


@_kind("RDP 文件里的密码 blob", zh=True)
def _k_rdp(r: random.Random) -> tuple[str, str]:
    s = "01000000D08C9DDF0115D1118C7A00C04FC297EB01000000" + _w(r, 96, "0123456789ABCDEF")
    return s, (
        f"远程桌面的 .rdp 文件（勾了“记住凭据”）：\nfull address:s:{_ip10(r)}\nusername:s:CORP\\mwei\n"
        f"password 51:b:{s}\nscreen mode id:i:2"
    )


@_kind(".netrc heroku")
def _k_netrc(r: random.Random) -> tuple[str, str]:
    s = _uuid(r)
    corp = _syl(r)
    return s, (
        f"machine api.heroku.com\n  login mei@{corp}.com\n  password {s}\n"
        f"machine git.heroku.com\n  login mei@{corp}.com\n  password {s}"
    )


@_kind("docker config.json auth 字段", zh=True)
def _k_docker_auth(r: random.Random) -> tuple[str, str]:
    s = base64.b64encode(("mwei:" + _pw(r)).encode()).decode()
    body = json.dumps({"auths": {f"harbor.{_syl(r)}.cn": {"auth": s}}}, indent=2)
    return s, f"~/.docker/config.json（docker login 公司 Harbor 之后）：\n{body}"


@_kind("aws credentials file")
def _k_aws(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, B64)
    return s, (
        f"[default]\naws_access_key_id = AKIA{_w(r, 16, UP + DIG)}\naws_secret_access_key = {s}\nregion = eu-west-1"
    )


@_kind("Django SECRET_KEY .env", zh=True)
def _k_django(r: random.Random) -> tuple[str, str]:
    s = _w(r, 50, ALNUM + "!@#-=+")
    return s, f"博客的 .env（服务器上 /srv/blog/.env）：\nDEBUG=False\nSECRET_KEY={s}\nALLOWED_HOSTS=blog.example.org"


@_kind("htpasswd apr1 line")
def _k_htpasswd(r: random.Random) -> tuple[str, str]:
    s = "$apr1$" + _w(r, 8, ALNUM + "./") + "$" + _w(r, 22, ALNUM + "./")
    return s, f"/etc/nginx/.htpasswd (generated with htpasswd -c):\nadmin:{s}"


@_kind("snmp community string")
def _k_snmp(r: random.Random) -> tuple[str, str]:
    s = _syl(r, 2) + _d(r, 4) + _w(r, 3, LOW)
    return s, f"core switch:\nsnmp-server community {s} RO 10\nsnmp-server location closet-2F"


@_kind("交换机本地用户密码", zh=True)
def _k_switch(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"机房那台华为交换机的配置：\nlocal-user admin password irreversible-cipher {s}\n"
        "local-user admin privilege level 15"
    )


@_kind("ipsec.secrets PSK")
def _k_ipsec(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f'/etc/ipsec.secrets on the office gateway:\n%any {_ip_pub(r)} : PSK "{s}"'


@_kind("WireGuard 私钥", zh=True)
def _k_wireguard(r: random.Random) -> tuple[str, str]:
    s = _w(r, 43, B64) + "="
    return s, (
        f"家里回国的 WireGuard 配置，手机扫码用：\n[Interface]\nPrivateKey = {s}\n"
        "Address = 10.8.0.3/32\nDNS = 223.5.5.5\n\n"
        f"[Peer]\nPublicKey = {_w(r, 43, B64)}=\nEndpoint = {_ip_pub(r)}:51820"
    )


@_kind("grafana.ini admin_password")
def _k_grafana(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"[security]\nadmin_user = admin\nadmin_password = {s}\nsecret_key = SW2YcwTIb9zpOOhoPsMm"


@_kind("MinIO root 密码", zh=True)
def _k_minio(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "docker-compose 里 MinIO 的两行（控制台 9001 端口）：\n      MINIO_ROOT_USER: minioadmin\n"
        f'      MINIO_ROOT_PASSWORD: "{s}"'
    )


@_kind("nextcloud config.php dbpassword")
def _k_nextcloud(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"  'dbtype' => 'mysql',\n  'dbname' => 'nextcloud',\n  'dbhost' => '{_ip172(r)}',\n"
        f"  'dbuser' => 'oc_admin',\n  'dbpassword' => '{s}',"
    )


@_kind("wp-config DB_PASSWORD", zh=True)
def _k_wpconfig(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"老婆的博客 wp-config.php：\ndefine( 'DB_NAME', 'wp_blog' );\ndefine( 'DB_PASSWORD', '{s}' );"


@_kind("frpc auth.token", zh=True)
def _k_frp(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24)
    return s, (
        f'内网穿透 frpc.toml：\nserverAddr = "{_ip_pub(r)}"\nserverPort = 7000\nauth.token = "{s}"\n\n'
        '[[proxies]]\nname = "nas-web"\ntype = "tcp"\nlocalPort = 5000\nremotePort = 15000'
    )


@_kind("机场订阅链接 token", zh=True)
def _k_clash_sub(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    host = f"{_syl(r)}.{_syl(r, 1)}.cc"
    return s, f"机场订阅链接（Clash Verge 导入）：https://{host}/api/v1/client/subscribe?token={s}&flag=clash"


@_kind("ss:// 分享链接", zh=True)
def _k_ss(r: random.Random) -> tuple[str, str]:
    s = base64.b64encode(("aes-256-gcm:" + _pw_url(r)).encode()).decode().rstrip("=")
    return s, f"朋友分享的节点，导进小火箭就行：ss://{s}@{_ip_pub(r)}:8388#HK-01"


@_kind("v2ray vmess 用户 id", zh=True)
def _k_vmess(r: random.Random) -> tuple[str, str]:
    s = _uuid(r)
    return s, (
        f'v2ray 服务端 config.json 的 inbounds 里：\n"clients": [{{"id": "{s}", "alterId": 0}}]\n这个 id 就等于密码'
    )


@_kind("宝塔面板 登录信息", zh=True)
def _k_bt(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8, LOW + DIG)
    return s, (
        "宝塔装好后终端打印的：\n==================================================================\n"
        f"外网面板地址: https://{_ip_pub(r)}:{r.randint(10000, 40000)}/{_w(r, 8, LOW + DIG)}\n"
        f"username: {_w(r, 8, LOW + DIG)}\npassword: {s}\n"
    )


@_kind("Alist admin 密码 输出", zh=True)
def _k_alist(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8)
    return s, (
        f"第一次启动 alist 拿到的初始密码：\nINFO[2026-12-03 10:21:07] Successfully created the admin user and the "
        f"initial password is: {s}"
    )


@_kind("transmission settings.json rpc-password")
def _k_transmission(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    body = json.dumps({"rpc-enabled": True, "rpc-username": "mei", "rpc-password": s, "rpc-port": 9091})
    return s, f"stopped the daemon, edited settings.json, it rehashes on start:\n{body}"


@_kind("pihole setpassword")
def _k_pihole(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"sudo pihole setpassword '{s}'   # web UI at http://pi.hole/admin"


@_kind("ipmitool lanplus")
def _k_ipmi(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"ipmitool -I lanplus -H {_ip10(r)} -U ADMIN -P {s} chassis power cycle"


@_kind("MQTT URL 用户密码", zh=True)
def _k_mqtt(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"zigbee2mqtt 的 configuration.yaml：\nmqtt:\n  server: mqtt://z2m:{s}@{_ip192(r)}:1883"


@_kind("tailscale authkey")
def _k_tailscale(r: random.Random) -> tuple[str, str]:
    s = "tskey-auth-k" + _w(r, 11) + "CNTRL-" + _w(r, 33)
    return s, f"curl -fsSL https://tailscale.com/install.sh | sh && sudo tailscale up --authkey={s} --ssh"


@_kind("ngrok authtoken", zh=True)
def _k_ngrok(r: random.Random) -> tuple[str, str]:
    s = "2" + _w(r, 26) + "_" + _w(r, 21)
    return s, f"给客户演示用的 ngrok：ngrok config add-authtoken {s}\n然后 ngrok http 8080"


@_kind("cloudflared service install token")
def _k_cloudflared(r: random.Random) -> tuple[str, str]:
    s = "eyJhIjoi" + _w(r, 140)
    return s, f"sudo cloudflared service install {s}"


@_kind("jwt bearer in curl")
def _k_jwt_curl(r: random.Random) -> tuple[str, str]:
    s = _jwt(r)
    return s, f'curl -H "Authorization: Bearer {s}" https://api.{_syl(r)}.io/v2/me'


@_kind("B站 SESSDATA cookie", zh=True)
def _k_sessdata(r: random.Random) -> tuple[str, str]:
    s = f"{_hex(r, 8)}%2C{r.randint(1767000000, 1799999999)}%2C{_w(r, 5, LOW + DIG)}%2A{_d(r, 2)}"
    return s, f"下载脚本要登录态，从浏览器里复制的 cookie：SESSDATA={s}; bili_jct={_hex(r, 32)}"


@_kind("basic auth header")
def _k_basic(r: random.Random) -> tuple[str, str]:
    s = base64.b64encode(("mwei:" + _pw(r)).encode()).decode()
    return s, f"GET /api/v1/jobs HTTP/1.1\nHost: ci.{_syl(r)}.internal\nAuthorization: Basic {s}"


@_kind("sshpass 命令", zh=True)
def _k_sshpass(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"批量重启脚本里这样写的：sshpass -p '{s}' ssh -o StrictHostKeyChecking=no root@{_ip10(r)} reboot"


@_kind("gitlab remote oauth2 token")
def _k_gitlab(r: random.Random) -> tuple[str, str]:
    s = "glpat-" + _w(r, 20, URLSAFE)
    return s, f"git remote set-url origin https://oauth2:{s}@gitlab.{_syl(r)}.dev/platform/infra.git"


@_kind("helm values 密码", zh=True)
def _k_helm(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f'values-prod.yaml（这个文件不能进仓库）：\npostgresql:\n  auth:\n    username: app\n    password: "{s}"'


@_kind("docker-compose POSTGRES_PASSWORD")
def _k_compose(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: immich\n"
        f"      POSTGRES_PASSWORD: {s}\n      POSTGRES_DB: immich"
    )


@_kind("systemd Environment= token", zh=True)
def _k_systemd(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40)
    return s, (
        "/etc/systemd/system/backup-bot.service 里加了：\n[Service]\n"
        f"Environment=BOT_TOKEN={s}\nExecStart=/usr/local/bin/backup-bot"
    )


@_kind("jenkins api token curl")
def _k_jenkins(r: random.Random) -> tuple[str, str]:
    s = "11" + _hex(r, 32)
    return s, f"curl -X POST -u mei:{s} https://ci.{_syl(r)}.internal/job/nightly/buildWithParameters?BRANCH=main"


@_kind("gmail app password spaced")
def _k_gmail_app(r: random.Random) -> tuple[str, str]:
    s = " ".join(_w(r, 4, LOW) for _ in range(4))
    return s, f"Gmail app password for the NAS alert e-mails (Security → App passwords): {s}"


@_kind("QQ邮箱 SMTP 授权码", zh=True)
def _k_qqmail_smtp(r: random.Random) -> tuple[str, str]:
    s = _w(r, 16, LOW)
    return s, f"QQ邮箱 SMTP 授权码：{s}（不是QQ密码！发件服务器 smtp.qq.com，端口 465，SSL）"


@_kind("微信支付 APIv3 密钥", zh=True)
def _k_wxpay(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"商户平台 → API安全 → 设置APIv3密钥：{s}\n商户号 16{_d(r, 8)}，证书序列号另存了"


@_kind("支付宝应用私钥", zh=True)
def _k_alipay(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64, B64)
    return s, (
        "支付宝开放平台 应用私钥（RSA2，PKCS8）：\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC"
        f"{_w(r, 13, B64)}\n{s}\n{_w(r, 64, B64)}\n……（后面还有二十多行）"
    )


@_kind("阿里云 AccessKey Secret", zh=True)
def _k_aliyun(r: random.Random) -> tuple[str, str]:
    s = _w(r, 30)
    return s, f"阿里云 RAM 子账号 oss-backup 的 AccessKey：\nAccessKey ID: LTAI5t{_w(r, 18)}\nAccessKey Secret: {s}"


@_kind("腾讯云 SecretKey", zh=True)
def _k_tencent(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f'腾讯云 SDK 调试：\ncred = credential.Credential("AKID{_w(r, 32)}", "{s}")\n# 记得换成环境变量'


@_kind("七牛 AK SK 图床", zh=True)
def _k_qiniu(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, URLSAFE)
    return s, f"七牛云 个人中心 → 密钥管理：AK {_w(r, 40, URLSAFE)} ／ SK {s}，给 PicGo 图床用的"


@_kind("华为云 credentials.csv", zh=True)
def _k_huawei(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40)
    ak = _w(r, 20, UP + DIG)
    return s, f"华为云下载的 credentials.csv：\nUser Name,Access Key Id,Secret Access Key\nmei,{ak},{s}"


@_kind("火山引擎 SK", zh=True)
def _k_volc(r: random.Random) -> tuple[str, str]:
    s = _w(r, 56, B64) + "=="
    return s, f"火山引擎（豆包 API）访问密钥：\nAccessKeyId：AKLT{_w(r, 40)}\nSecretAccessKey：{s}"


@_kind("百度智能云 Secret Key", zh=True)
def _k_baidu(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"百度 OCR 应用：AppID {_d(r, 8)}，API Key {_w(r, 24)}，Secret Key「{s}」"


@_kind("公众号 AppSecret", zh=True)
def _k_mp(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"公众号后台 → 设置与开发 → 基本配置\nAppID：wx{_hex(r, 16)}\nAppSecret：{s}\nIP 白名单要加服务器"


@_kind("飞书机器人 webhook", zh=True)
def _k_feishu(r: random.Random) -> tuple[str, str]:
    s = _uuid(r)
    return s, f"家庭群的飞书机器人，提醒交物业费用：https://open.feishu.cn/open-apis/bot/v2/hook/{s}"


@_kind("钉钉机器人加签密钥", zh=True)
def _k_dingtalk(r: random.Random) -> tuple[str, str]:
    s = "SEC" + _hex(r, 64)
    return s, (
        f"钉钉告警机器人：\nwebhook = https://oapi.dingtalk.com/robot/send?access_token={_hex(r, 64)}\n"
        f"加签 secret = {s}"
    )


@_kind("企业微信群机器人 key", zh=True)
def _k_wecom(r: random.Random) -> tuple[str, str]:
    s = _uuid(r)
    return s, f"企业微信机器人：curl 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={s}' -d @msg.json"


@_kind("Gitee 私人令牌", zh=True)
def _k_gitee(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"Gitee 设置 → 私人令牌（勾了 projects 和 pull_requests）：{s}"


@_kind("DeepSeek API key", zh=True)
def _k_deepseek(r: random.Random) -> tuple[str, str]:
    s = "sk-" + _hex(r, 32)
    return s, f"deepseek 充了 50 块，key 是 {s}，base_url 填 https://api.deepseek.com"


@_kind("Kimi 月之暗面 key", zh=True)
def _k_kimi(r: random.Random) -> tuple[str, str]:
    s = "sk-" + _w(r, 48)
    return s, f"Moonshot 的 key：『{s}』，模型用 moonshot-v1-32k"


@_kind("智谱 API key", zh=True)
def _k_zhipu(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32) + "." + _w(r, 16)
    return s, f"智谱 GLM 的 API Key（id.secret 格式）：{s}"


@_kind("阿里云百炼 DashScope key", zh=True)
def _k_dashscope(r: random.Random) -> tuple[str, str]:
    s = "sk-" + _hex(r, 32)
    return s, f"export DASHSCOPE_API_KEY={s}   # 通义千问，百炼控制台建的"


@_kind("openai project key")
def _k_openai(r: random.Random) -> tuple[str, str]:
    s = "sk-proj-" + _w(r, 74, URLSAFE) + "T3BlbkFJ" + _w(r, 74, URLSAFE)
    return s, f"new OpenAI key for the summariser (project: family-wiki) {s}"


@_kind("anthropic key")
def _k_anthropic(r: random.Random) -> tuple[str, str]:
    s = "sk-ant-api03-" + _w(r, 93, URLSAFE) + "AA"
    return s, f"ANTHROPIC_API_KEY='{s}'"


@_kind("hugging face token")
def _k_hf(r: random.Random) -> tuple[str, str]:
    s = "hf_" + _w(r, 34)
    return s, f"huggingface-cli login --token {s} --add-to-git-credential"


@_kind("github fine-grained pat")
def _k_gh_pat(r: random.Random) -> tuple[str, str]:
    s = "github_pat_" + _w(r, 22) + "_" + _w(r, 59)
    return s, f"fine-grained PAT for the blog repo only, expires in 90 days:\n{s}"


@_kind("slack incoming webhook")
def _k_slack(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24)
    return s, f"https://hooks.slack.com/services/T{_w(r, 8, UP + DIG)}/B{_w(r, 10, UP + DIG)}/{s}"


@_kind("discord webhook url")
def _k_discord(r: random.Random) -> tuple[str, str]:
    s = _w(r, 68, URLSAFE)
    return s, f"the Minecraft server posts to our Discord via https://discord.com/api/webhooks/{_d(r, 19)}/{s}"


@_kind("Telegram bot token", zh=True)
def _k_telegram(r: random.Random) -> tuple[str, str]:
    s = f"{r.randint(5000000000, 7999999999)}:AA{_w(r, 33, URLSAFE)}"
    return s, f"BotFather 给的 token：{s}\n用来把 NAS 的通知推到手机"


@_kind("stripe live secret key")
def _k_stripe(r: random.Random) -> tuple[str, str]:
    s = "sk_live_" + _w(r, 99)
    return s, f"STRIPE_SECRET_KEY={s}\nSTRIPE_PUBLISHABLE_KEY=pk_live_{_w(r, 20)}"


@_kind("twilio auth token")
def _k_twilio(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, f"TWILIO_ACCOUNT_SID=AC{_hex(r, 32)}\nTWILIO_AUTH_TOKEN={s}"


@_kind("sendgrid key")
def _k_sendgrid(r: random.Random) -> tuple[str, str]:
    s = "SG." + _w(r, 22, URLSAFE) + "." + _w(r, 43, URLSAFE)
    return s, f"swapped Mailgun for SendGrid; key: {s}"


@_kind("谷歌地图 API key", zh=True)
def _k_gmaps(r: random.Random) -> tuple[str, str]:
    s = "AIza" + _w(r, 35, URLSAFE)
    return s, f"旅行地图页面用的 Google Maps key（没限制来源，赶紧加限制）：{s}"


@_kind("gcp service account json private_key")
def _k_gcp_sa(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64, B64)
    proj = f"{_syl(r)}-{_d(r, 6)}"
    return s, (
        f'{{"type": "service_account", "project_id": "{proj}", "private_key_id": "{_hex(r, 40)}", '
        '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQC'
        f'{_w(r, 12, B64)}\\n{s}\\n{_w(r, 64, B64)}\\n-----END PRIVATE KEY-----\\n", '
        f'"client_email": "backup@{proj}.iam.gserviceaccount.com"}}'
    )


@_kind("azure storage connection string")
def _k_azure_conn(r: random.Random) -> tuple[str, str]:
    s = _w(r, 86, B64) + "=="
    return s, (
        f"DefaultEndpointsProtocol=https;AccountName={_syl(r)}photos;AccountKey={s};EndpointSuffix=core.windows.net"
    )


@_kind("azure SAS sig percent-encoded")
def _k_azure_sas(r: random.Random) -> tuple[str, str]:
    s = quote(_w(r, 40, B64) + "+/" + _w(r, 2) + "=", safe="")
    return s, (
        f"https://{_syl(r)}photos.blob.core.windows.net/backup?sv=2022-11-02&ss=b&srt=co&sp=rwl"
        f"&se=2027-01-31T00:00:00Z&spr=https&sig={s}"
    )


@_kind("datadog api key install line")
def _k_datadog(r: random.Random) -> tuple[str, str]:
    s = _hex(r, 32)
    return s, (
        f'DD_API_KEY={s} DD_SITE="datadoghq.eu" bash -c '
        '"$(curl -L https://install.datadoghq.com/scripts/install_script_agent7.sh)"'
    )


@_kind("invented provider key with its name")
def _k_invented_named(r: random.Random) -> tuple[str, str]:
    s = "nrk_live_" + _w(r, 30)
    return s, f"Nimbus Relay gave us a new server key after the migration: {s} (old one revoked on the 1st)"


@_kind("invented key as a bare positional argument")
def _k_invented_bare(r: random.Random) -> tuple[str, str]:
    s = _w(r, 36)
    return s, f"larkspur push --profile family-photos ~/Pictures/2026 {s}"


@_kind("同步脚本 无标签的参数", zh=True)
def _k_invented_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, LOW + DIG)
    return s, f"同步脚本最后那个参数别改，改了就连不上：\npython3 sync.py --bucket family-photos --region cn-east-2 {s}"


@_kind("doppler service token")
def _k_doppler(r: random.Random) -> tuple[str, str]:
    s = "dp.st.prd." + _w(r, 43)
    return s, f"doppler run --token {s} -- npm start"


@_kind("Vault token 环境变量", zh=True)
def _k_vault(r: random.Random) -> tuple[str, str]:
    s = "hvs." + _w(r, 24)
    return s, (
        f"export VAULT_ADDR=https://vault.{_syl(r)}.internal:8200\nexport VAULT_TOKEN={s}\n"
        "# 临时 root token，用完立刻 revoke"
    )


# --------------------------------------------------------------------------------------------------------------
# key material, seeds and codes


@_kind("age secret key")
def _k_age(r: random.Random) -> tuple[str, str]:
    s = "AGE-SECRET-KEY-1" + _w(r, 58, BECH32.upper())
    return s, f"# created: 2026-11-30T21:04:11+01:00\n# public key: age1{_w(r, 58, BECH32)}\n{s}"


@_kind("Nostr nsec 私钥", zh=True)
def _k_nsec(r: random.Random) -> tuple[str, str]:
    s = "nsec1" + _w(r, 58, BECH32)
    return s, f"Nostr 账号（Damus 上那个）：私钥 {s}，公钥 npub1{_w(r, 58, BECH32)} 可以公开"


@_kind("以太坊钱包私钥", zh=True)
def _k_eth(r: random.Random) -> tuple[str, str]:
    s = "0x" + _hex(r, 64)
    return s, f"MetaMask 导出的私钥（小钱包，只放了点 gas）：\n{s}"


@_kind("BIP39 助记词", zh=True)
def _k_bip39(r: random.Random) -> tuple[str, str]:
    s = " ".join(r.choice(_BIP39) for _ in range(12))
    return s, f"冷钱包助记词（按顺序）：{s}\n纸质版放在保险柜里了，这里再备份一份"


@_kind("bitcoin WIF key")
def _k_wif(r: random.Random) -> tuple[str, str]:
    s = r.choice("KL") + _w(r, 51, B58)
    return s, f"paper wallet from 2017, the private key (WIF) under the QR: {s}"


@_kind("putty ppk private lines")
def _k_ppk(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64, B64)
    return s, (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: mei@desktop\nPublic-Lines: 2\n"
        f"AAAAC3NzaC1lZDI1NTE5AAAAI{_w(r, 39, B64)}\n{_w(r, 20, B64)}\nPrivate-Lines: 1\n{s}\n"
        f"Private-MAC: {_hex(r, 64)}"
    )


@_kind("转发的 OpenSSH 私钥", zh=True)
def _k_ssh_fwd(r: random.Random) -> tuple[str, str]:
    s = _w(r, 70, B64)
    return s, (
        "> 转发自 老王：\n> 跳板机的私钥，存好别外传\n> -----BEGIN OPENSSH PRIVATE KEY-----\n"
        f"> b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n> {s}\n"
        f"> {_w(r, 70, B64)}\n> -----END OPENSSH PRIVATE KEY-----"
    )


@_kind("pgp private key in xml cdata")
def _k_pgp_xml(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64, B64)
    return s, (
        '<backup><item name="signing-key"><![CDATA[-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n'
        f"lQVYBGXk{_w(r, 56, B64)}\n{s}\n={_w(r, 4, B64)}\n-----END PGP PRIVATE KEY BLOCK-----]]></item></backup>"
    )


@_kind("jwk private d")
def _k_jwk(r: random.Random) -> tuple[str, str]:
    s = _w(r, 43, URLSAFE)
    jwk = {"kty": "EC", "crv": "P-256", "x": _w(r, 43, URLSAFE), "y": _w(r, 43, URLSAFE), "d": s, "kid": "sig-2026"}
    return s, "signing key for the webhook verifier (JWK):\n" + json.dumps(jwk)


@_kind("Solana 私钥数组", zh=True)
def _k_solana(r: random.Random) -> tuple[str, str]:
    s = ",".join(str(r.randint(0, 255)) for _ in range(64))
    return s, f"Phantom 导出的私钥，也就是 ~/.config/solana/id.json 的内容：\n[{s}]"


@_kind("openssl -passout pass:")
def _k_openssl(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"openssl pkcs12 -export -in mei.crt -inkey mei.key -out mei.p12 -passout pass:{s}"


@_kind("安卓签名 keystore.properties", zh=True)
def _k_keystore(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"App 上架签名，key.properties（丢了就再也发不了更新！）：\nstorePassword={s}\nkeyPassword={s}\n"
        "keyAlias=upload\nstoreFile=../upload-keystore.jks"
    )


@_kind("otpauth totp seed")
def _k_totp(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, B32)
    return s, f"the 2FA QR decoded, in case the phone dies: otpauth://totp/GitHub:mei-wei?secret={s}&issuer=GitHub"


@_kind("GitHub 恢复码 列表", zh=True)
def _k_recovery(r: random.Random) -> tuple[str, str]:
    codes = [f"{_hex(r, 5)}-{_hex(r, 5)}" for _ in range(4)]
    s = codes[r.randrange(4)]
    return s, "GitHub 两步验证的恢复码（还剩四个没用）：\n" + "\n".join(f"- {c}" for c in codes)


@_kind("短信验证码 转发", zh=True)
def _k_sms(r: random.Random) -> tuple[str, str]:
    s = _d(r, 6)
    bank = r.choice(["招商银行", "工商银行", "建设银行", "支付宝"])
    return s, f"【{bank}】您的验证码为{s}，5分钟内有效，请勿泄露。← 老妈转发给我的，让我帮她登录手机银行"


@_kind("google verification code")
def _k_gcode(r: random.Random) -> tuple[str, str]:
    s = "G-" + _d(r, 6)
    return s, f"{s} is your Google verification code — Dad read it out over the phone so I could recover his account"


@_kind("单元门禁密码", zh=True)
def _k_door_zh(r: random.Random) -> tuple[str, str]:
    s = _d(r, 6)
    return s, f"小区单元门的密码是 {s}#，快递小哥问的话别告诉他"


@_kind("safe combination")
def _k_safe(r: random.Random) -> tuple[str, str]:
    s = "-".join(f"{r.randint(0, 59):02d}" for _ in range(4))
    return s, f"the safe in the wardrobe: right to {s[:2]}, left past it once… full combination {s}"


@_kind("ipad passcode")
def _k_ipad(r: random.Random) -> tuple[str, str]:
    s = _d(r, 6)
    return s, f"Lily's iPad passcode is {s} now, she changed it again after the screen-time fight"


@_kind("工资卡取款密码", zh=True)
def _k_bank_pin(r: random.Random) -> tuple[str, str]:
    s = _d(r, 6)
    return s, f"爸的工资卡取款密码{s}，他记不住，让我帮他记着"


@_kind("sim PUK")
def _k_puk(r: random.Random) -> tuple[str, str]:
    s = _d(r, 8)
    return s, f"Mum locked her SIM again. PUK: {s} (from the card holder in the drawer)"


@_kind("alarm disarm code")
def _k_alarm(r: random.Random) -> tuple[str, str]:
    s = _d(r, 6)
    return s, f"House alarm: the cleaner disarms with {s} then OFF; the panic code is different"


@_kind("cabin keypad code with dashes")
def _k_keypad(r: random.Random) -> tuple[str, str]:
    s = "-".join(_d(r, 1) for _ in range(6))
    return s, f"Keypad at the cabin: {s} then the lock icon. Spare key is NOT under the mat anymore."


@_kind("访客 Wi-Fi 密码", zh=True)
def _k_guest_wifi(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"客人来了就让他们连 {_syl(r).capitalize()}-Guest，密码 {s}（主网络的密码别给）"


@_kind("12306 账号密码", zh=True)
def _k_12306(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"帮爸妈抢票的 12306 账号：用户名 {_syl(r)}{_d(r, 4)}，密码 {s}"


@_kind("微信支付密码", zh=True)
def _k_wx_paypw(r: random.Random) -> tuple[str, str]:
    s = _d(r, 6)
    return s, f"奶奶的微信支付密码是{s}，她老是输错被锁"


# --------------------------------------------------------------------------------------------------------------
# phrasing: where the secret sits relative to its telling word, and what wraps it


@_kind("voice memo wifi password")
def _k_voice_en(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"okay so um the the wifi at mum's place is uh {s} yeah that's it, "
        f"the network's called {_syl(r).capitalize()}-5G, okay end note"
    )


@_kind("语音转写 路由器后台密码", zh=True)
def _k_voice_zh(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"嗯，那个，路由器后台的密码我改成了，呃，{s}，对，就是这个，大写的那个是第一个字母，下次别忘了"


@_kind("password before its label")
def _k_before_en(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"{s} — that's the new root password for the Hetzner box, changed it after the SSH scare"


@_kind("密码写在说明前面", zh=True)
def _k_before_zh(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"{s} 这个是公司 VPN 的新密码，上周五强制改的"


@_kind("label far after the value")
def _k_far_en(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "Set up the new backup box today. Took forever because the installer kept crashing on the Realtek NIC, "
        f"ended up using a USB dongle. Anyway the thing I need to remember: {s}. It's for the web UI at "
        f"https://{_ip192(r)}:8006, user root@pam."
    )


@_kind("parenthesised router login")
def _k_paren(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"Logged into the router (admin / {s}) and moved the DHCP range to .100–.200"


@_kind("打印机 全角括号", zh=True)
def _k_paren_zh(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"打印机的管理页面（用户名 admin，密码 {s}）在 http://{_ip192(r)}，扫描到邮箱要在那里设置"


@_kind("iCloud 密码 直角引号", zh=True)
def _k_corner_quote(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"老婆说她 iCloud 的密码是「{s}」，让我记在备忘录里，换手机的时候要用"


@_kind("guillemet quoted password")
def _k_guillemet(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"Password for the shared streaming account is «{s}» — Aunt Clara's, don't change it"


@_kind("网易云 双直角引号", zh=True)
def _k_double_corner(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"儿子的网易云音乐账号就是他手机号，密码『{s}』，他要我帮忙续会员"


@_kind("curly quoted password")
def _k_curly(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"School portal: username is Lily's student number, password “{s}” (they issue it on paper)"


@_kind("code span password")
def _k_codespan(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"Proxmox root: `{s}` — same as the BIOS supervisor password"


@_kind("label and value on separate lines")
def _k_split_en(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"Password:\n\n    {s}\n\n(for the Synology, admin account; the 2FA app is on the old phone)"


@_kind("标签和值分两行", zh=True)
def _k_split_zh(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"生产数据库密码写在下面一行：\n\n{s}\n\n上面这个是 prod 的，测试库的密码是另一个"


@_kind("markdown table credentials")
def _k_md_table(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "| service | user | password |\n|---|---|---|\n"
        f"| grafana | admin | {s} |\n| uptime-kuma | mei | (in Bitwarden) |"
    )


@_kind("Markdown 表格 家里账号", zh=True)
def _k_md_table_zh(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"| 设备 | 账号 | 密码 |\n| --- | --- | --- |\n| 小米路由器 | admin | {s} |\n| 电视盒子 | 无 | 无 |"


@_kind("Markdown 列表 账号密码", zh=True)
def _k_md_list_zh(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"电信宽带：\n- 宽带账号：0571{_d(r, 8)}\n- 密码：{s}\n- 客服：10000"


@_kind("markdown link with user-info")
def _k_md_link(r: random.Random) -> tuple[str, str]:
    s = _pw_url(r)
    return s, f"quick link to the NAS: [DSM](https://admin:{s}@nas.lan:5001/) (Safari strips the user-info)"


@_kind("fenced ini password")
def _k_fence_ini(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"```ini\n[database]\nhost = {_ip10(r)}\nuser = ledger\npassword = {s}\n```"


@_kind("toml smtp password")
def _k_toml(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f'[smtp]\nhost = "smtp.fastmail.com"\nport = 465\nusername = "mei@{_syl(r)}.me"\npassword = \'{s}\''


@_kind("maven settings.xml server password")
def _k_maven(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "<settings>\n  <servers>\n    <server>\n      <id>corp-releases</id>\n      <username>deployer</username>\n"
        f"      <password>{s}</password>\n    </server>\n  </servers>\n</settings>"
    )


@_kind("my.cnf 客户端密码", zh=True)
def _k_mycnf(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"为了不在命令行里敲密码，写进了 ~/.my.cnf：\n[client]\nuser=root\npassword={s}\nhost={_ip10(r)}"


@_kind("url query api_key")
def _k_url_query(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"export link that works without login: https://api.{_syl(r)}.io/v1/export?format=csv&api_key={s}&days=30"


@_kind("url fragment access_token")
def _k_url_fragment(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40)
    return s, (
        f"after the OAuth redirect the browser showed https://app.{_syl(r)}.com/callback#access_token={s}"
        "&token_type=bearer&expires_in=3600"
    )


@_kind("全角标点 账号；密码", zh=True)
def _k_fullwidth(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"物业缴费网站——账号：{_syl(r)}{_d(r, 3)}；密码：{s}；（别发到家庭群里！）"


@_kind("forwarded apple id password")
def _k_fwd_appleid(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        "---------- Forwarded message ---------\nFrom: Anna\nDate: Tue, 1 Dec 2026 at 21:14\n"
        "Subject: Re: family sharing\n\n"
        f"here's my apple id password so you can fix the iPad: {s}\nplease don't write it down anywhere lol"
    )


@_kind("forwarded helpdesk temporary password")
def _k_fwd_helpdesk(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (
        f"Fwd: Your account has been reset\n\n> Hello Mei, your temporary password is {s}\n"
        "> You will be asked to change it at next logon.\n> IT Service Desk"
    )


@_kind("转发群消息 root 密码", zh=True)
def _k_fwd_zh(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"【转发】张工：\n测试服务器 {_ip10(r)} root / {s}\n下周迁完就改，先别动数据"


@_kind("tool output kubectl decoded secret")
def _k_tool_kubectl(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, (f"$ kubectl -n prod get secret api-db -o jsonpath='{{.data.password}}' | base64 -d; echo\n{s}\n$ ")


@_kind("工具输出 env grep token", zh=True)
def _k_tool_env(r: random.Random) -> tuple[str, str]:
    s = "ghp_" + _w(r, 36)
    return s, f"帮我看一下环境变量 → 工具输出：\n$ env | grep -i token\nGITHUB_TOKEN={s}\nHOMEBREW_GITHUB_API_TOKEN={s}"


@_kind("tool_result docker inspect json")
def _k_tool_docker(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    stdout = json.dumps(["POSTGRES_USER=app", f"POSTGRES_PASSWORD={s}", "PGDATA=/var/lib/postgresql/data"])
    return s, json.dumps({"tool": "shell", "command": "docker inspect -f '{{json .Config.Env}}' db", "stdout": stdout})


@_kind("工具输出 aws 临时凭证", zh=True)
def _k_tool_aws(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, B64)
    return s, (
        "agent 跑了 aws configure export-credentials --format env，输出：\n"
        f"export AWS_ACCESS_KEY_ID=ASIA{_w(r, 16, UP + DIG)}\nexport AWS_SECRET_ACCESS_KEY={s}\n"
        f"export AWS_SESSION_TOKEN=IQoJb3JpZ2luX2Vj{_w(r, 60, B64)}"
    )


# --------------------------------------------------------------------------------------------------------------
# national ids, passports, licences


@_kind("居民身份证 乘车人", zh=True)
def _k_cnid_1(r: random.Random) -> tuple[str, str]:
    s = _cn_id(r)
    return s, f"帮爸爸在 12306 添加乘车人：王建国，身份证 {s}，手机号填我的"


@_kind("身份证号 表格", zh=True)
def _k_cnid_2(r: random.Random) -> tuple[str, str]:
    s = _cn_id(r)
    return s, f"| 家庭成员 | 身份证号 | 备注 |\n|---|---|---|\n| 妈妈 | {s} | 医保在杭州 |"


@_kind("身份证号 分段写", zh=True)
def _k_cnid_3(r: random.Random) -> tuple[str, str]:
    i = _cn_id(r)
    s = f"{i[:6]} {i[6:14]} {i[14:]}"
    return s, f"孩子的身份证号码是 {s}，办护照和落户都要用"


@_kind("身份证号 JSON", zh=True)
def _k_cnid_4(r: random.Random) -> tuple[str, str]:
    s = _cn_id(r)
    record = {"姓名": "李娜", "证件类型": "居民身份证", "证件号": s, "用途": "酒店入住"}
    return s, json.dumps(record, ensure_ascii=False)


@_kind("us ssn for W-4")
def _k_ssn(r: random.Random) -> tuple[str, str]:
    area = r.choice([r.randint(1, 665), r.randint(667, 899)])
    s = f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"
    return s, f"SSN for the W-4 and the daycare tax form: {s}"


@_kind("uk national insurance number")
def _k_nino(r: random.Random) -> tuple[str, str]:
    prefix = "GB"
    while prefix in {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}:
        prefix = r.choice("ABCEGHJKLMNPRSTWXYZ") + r.choice("ABCEGHJKLMNPRSTWXYZ")
    s = f"{prefix}{_d(r, 6)}{r.choice('ABCD')}"
    return s, f"Tom's NI number (for the new job's payroll): {s}"


@_kind("nhs number")
def _k_nhs(r: random.Random) -> tuple[str, str]:
    while True:
        body = str(r.randint(4, 9)) + _d(r, 8)
        c = 11 - _mod11_weighted(body, [10, 9, 8, 7, 6, 5, 4, 3, 2])
        c = 0 if c == 11 else c
        if c != 10:
            break
    n = body + str(c)
    s = f"{n[:3]} {n[3:6]} {n[6:]}"
    return s, f"Dad's NHS number is {s}; the cardiology referral letter went to the old address"


@_kind("canadian SIN")
def _k_sin(r: random.Random) -> tuple[str, str]:
    body = str(r.choice([1, 2, 3, 4, 5, 6, 7, 9])) + _d(r, 7)
    n = body + _luhn(body)
    s = f"{n[:3]} {n[3:6]} {n[6:]}"
    return s, f"my SIN {s} — the bank in Toronto asked for it again"


@_kind("aadhaar number")
def _k_aadhaar(r: random.Random) -> tuple[str, str]:
    body = str(r.randint(2, 9)) + _d(r, 10)
    n = body + _verhoeff(body)
    s = _group(n)
    return s, f"Priya's Aadhaar for the flat lease: {s}"


@_kind("brazilian CPF")
def _k_cpf(r: random.Random) -> tuple[str, str]:
    digits = [r.randint(0, 9) for _ in range(9)]
    for _ in range(2):
        total = sum(d * w for d, w in zip(digits, range(len(digits) + 1, 1, -1), strict=True))
        rem = total % 11
        digits.append(0 if rem < 2 else 11 - rem)
    n = "".join(map(str, digits))
    s = f"{n[:3]}.{n[3:6]}.{n[6:9]}-{n[9:]}"
    return s, f"CPF da minha sogra (for the Brazil visa form): {s}"


@_kind("french NIR")
def _k_nir(r: random.Random) -> tuple[str, str]:
    y, m, _ = _date(r, 1950, 2000)
    dept = r.choice(["75", "69", "13", "33", "59", "31", "44", "67"])
    body = f"{r.choice('12')}{y % 100:02d}{m:02d}{dept}{_d(r, 3)}{_d(r, 3)}"
    key = 97 - int(body) % 97
    s = f"{body[0]} {body[1:3]} {body[3:5]} {body[5:7]} {body[7:10]} {body[10:13]} {key:02d}"
    return s, f"numéro de sécu de Julien for the mutuelle form: {s}"


@_kind("spanish DNI")
def _k_dni(r: random.Random) -> tuple[str, str]:
    n = r.randint(10000000, 99999999)
    s = f"{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[n % 23]}"
    return s, f"landlord in Valencia needs my DNI ({s}) and a copy of the NIE"


@_kind("dutch BSN")
def _k_bsn(r: random.Random) -> tuple[str, str]:
    while True:
        body = str(r.randint(1, 9)) + _d(r, 7)
        last = sum(int(c) * w for c, w in zip(body, range(9, 1, -1), strict=True)) % 11
        if last < 10:
            break
    s = body + str(last)
    return s, f"BSN {s} — needed for the huisarts registration"


@_kind("swedish personnummer")
def _k_personnummer(r: random.Random) -> tuple[str, str]:
    y, m, d = _date(r)
    body = f"{y % 100:02d}{m:02d}{d:02d}{_d(r, 3)}"
    s = f"{body[:6]}-{body[6:]}{_luhn(body)}"
    return s, f"Erik's personnummer is {s} (he asked me to book the dentist)"


@_kind("korean resident registration number")
def _k_rrn(r: random.Random) -> tuple[str, str]:
    y, m, d = _date(r, 1960, 1999)
    body = f"{y % 100:02d}{m:02d}{d:02d}{r.choice('12')}{r.randint(0, 95):02d}{_d(r, 3)}"
    total = sum(int(c) * w for c, w in zip(body, [2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5], strict=True))
    s = f"{body[:6]}-{body[6:]}{(11 - total % 11) % 10}"
    return s, f"주민등록번호 {s} — Jiwoo's, for the Seoul hotel's foreigner form"


@_kind("日本 个人番号", zh=True)
def _k_mynumber(r: random.Random) -> tuple[str, str]:
    body = _d(r, 11)
    total = 0
    for n, c in enumerate(reversed(body), start=1):
        total += int(c) * (n + 1 if n <= 6 else n - 5)
    rem = total % 11
    s = _group(body + str(0 if rem <= 1 else 11 - rem))
    return s, f"在日本工作时的个人番号（マイナンバー）：{s}，报税要用"


@_kind("台湾 身分證字號", zh=True)
def _k_twid(r: random.Random) -> tuple[str, str]:
    letters = {"A": 10, "B": 11, "C": 12, "D": 13, "E": 14, "F": 15, "H": 17, "K": 19, "N": 22, "T": 27}
    letter = r.choice(sorted(letters))
    v = letters[letter]
    body = r.choice("12") + _d(r, 7)
    total = v // 10 + (v % 10) * 9 + sum(int(c) * w for c, w in zip(body, range(8, 0, -1), strict=True))
    s = f"{letter}{body}{(10 - total % 10) % 10}"
    return s, f"阿嬤的身分證字號 {s}，幫她辦健保卡換發"


@_kind("香港身份證", zh=True)
def _k_hkid(r: random.Random) -> tuple[str, str]:
    while True:
        letter = r.choice("ACDEGHKPRVYZ")
        digits = _d(r, 6)
        total = 36 * 9 + (ord(letter) - 55) * 8 + sum(int(c) * w for c, w in zip(digits, range(7, 1, -1), strict=True))
        c = 11 - total % 11
        if c != 10:
            break
    s = f"{letter}{digits}({0 if c == 11 else c})"
    return s, f"舅舅的香港身份證號碼 {s}，訂高鐵票要填"


@_kind("singapore NRIC")
def _k_nric(r: random.Random) -> tuple[str, str]:
    prefix = r.choice("ST")
    digits = _d(r, 7)
    total = sum(int(c) * w for c, w in zip(digits, [2, 7, 6, 5, 4, 3, 2], strict=True)) + (4 if prefix == "T" else 0)
    s = f"{prefix}{digits}{'JZIHGFEDCBA'[total % 11]}"
    return s, f"NRIC {s} for Wei Ling's condo visitor registration"


@_kind("polish PESEL")
def _k_pesel(r: random.Random) -> tuple[str, str]:
    y, m, d = _date(r, 1950, 2005)
    mm = m + (20 if y >= 2000 else 0)
    body = f"{y % 100:02d}{mm:02d}{d:02d}{_d(r, 4)}"
    total = sum(int(c) * w for c, w in zip(body, [1, 3, 7, 9, 1, 3, 7, 9, 1, 3], strict=True))
    s = body + str((10 - total % 10) % 10)
    return s, f"Kasia's PESEL: {s} — the clinic in Kraków needs it for the appointment"


@_kind("finnish HETU")
def _k_hetu(r: random.Random) -> tuple[str, str]:
    y, m, d = _date(r, 1950, 2010)
    sign = "-" if y < 2000 else "A"
    ind = f"{r.randint(2, 899):03d}"
    num = int(f"{d:02d}{m:02d}{y % 100:02d}{ind}")
    s = f"{d:02d}{m:02d}{y % 100:02d}{sign}{ind}{'0123456789ABCDEFHJKLMNPRSTUVWXY'[num % 31]}"
    return s, f"henkilötunnus {s} (Aino's, for the Kela form)"


@_kind("belgian national number")
def _k_be_nn(r: random.Random) -> tuple[str, str]:
    y, m, d = _date(r, 1950, 1999)
    body = f"{y % 100:02d}{m:02d}{d:02d}{_d(r, 3)}"
    s = f"{body[:2]}.{body[2:4]}.{body[4:6]}-{body[6:]}.{97 - int(body) % 97:02d}"
    return s, f"rijksregisternummer {s} — on the back of Lotte's eID"


_CF_ODD = {
    **dict(zip("0123456789", [1, 0, 5, 7, 9, 13, 15, 17, 19, 21], strict=True)),
    **dict(zip(UP, [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23],
               strict=True)),
}  # fmt: skip


@_kind("italian codice fiscale")
def _k_cf(r: random.Random) -> tuple[str, str]:
    cons = "BCDFGLMNPRSTVZ"
    y, m, d = _date(r)
    day = d + r.choice([0, 40])
    body = (
        _w(r, 3, cons) + _w(r, 3, cons) + f"{y % 100:02d}" + "ABCDEHLMPRST"[m - 1] + f"{day:02d}"
        + r.choice(["H501", "F205", "L219", "G273", "D612"])
    )  # fmt: skip
    total = 0
    for i, c in enumerate(body):
        total += _CF_ODD[c] if i % 2 == 0 else (int(c) if c.isdigit() else ord(c) - 65)
    s = body + chr(65 + total % 26)
    return s, f"codice fiscale di Marco: {s} (for the rental contract)"


@_kind("australian TFN")
def _k_tfn(r: random.Random) -> tuple[str, str]:
    while True:
        body = _d(r, 8)
        last = sum(int(c) * w for c, w in zip(body, [1, 4, 3, 7, 5, 8, 6, 9], strict=True)) % 11
        if last < 10:
            break
    n = body + str(last)
    s = f"{n[:3]} {n[3:6]} {n[6:]}"
    return s, f"TFN {s} — give it to the new employer, not to the recruiter"


@_kind("中国护照号", zh=True)
def _k_cn_passport(r: random.Random) -> tuple[str, str]:
    s = r.choice(["E", "EA", "EB", "EJ"])
    s += _d(r, 9 - len(s))
    return s, f"签证表里填的护照号：{s}，签发地 上海，有效期到 2034 年"


@_kind("港澳通行证号", zh=True)
def _k_hk_permit(r: random.Random) -> tuple[str, str]:
    s = "C" + _w(r, 8, UP + DIG)
    return s, f"妈的港澳通行证 {s}，签注还剩一次"


@_kind("us passport number")
def _k_us_passport(r: random.Random) -> tuple[str, str]:
    s = str(r.randint(5, 6)) + _d(r, 8)
    return s, f"passport no. {s}, expires 2031 — needed for the ESTA-like form for Grandma"


@_kind("uk driving licence number")
def _k_uk_dl(r: random.Random) -> tuple[str, str]:
    y, m, d = _date(r, 1950, 1999)
    surname = r.choice(["MORGA", "WILLI", "PATEL", "HUGHE", "OKAFO", "CHEN9"])
    mm = m + r.choice([0, 50])
    s = f"{surname}{str(y)[2]}{mm:02d}{d:02d}{str(y)[3]}{_w(r, 2, UP)}9{_w(r, 2, UP)}"
    return s, f"driving licence number {s} for the car hire excess insurance"


# --------------------------------------------------------------------------------------------------------------
# phones, e-mails, addresses


@_kind("手机号 分段", zh=True)
def _k_cn_phone_1(r: random.Random) -> tuple[str, str]:
    s = f"1{r.choice('3456789')}{_d(r, 1)} {_d(r, 4)} {_d(r, 4)}"
    return s, f"老爸的新手机号 {s}，旧号码下个月停机"


@_kind("手机号 +86 JSON", zh=True)
def _k_cn_phone_2(r: random.Random) -> tuple[str, str]:
    s = f"+86-1{r.choice('3456789')}{_d(r, 1)}-{_d(r, 4)}-{_d(r, 4)}"
    return s, json.dumps({"联系人": "二姨", "电话": s, "关系": "亲戚"}, ensure_ascii=False)


@_kind("手机号 快递收件", zh=True)
def _k_cn_phone_3(r: random.Random) -> tuple[str, str]:
    s = f"1{r.choice('3456789')}{_d(r, 9)}"
    return s, f"快递收件人写我，电话{s}，放门口别放快递柜"


@_kind("us phone")
def _k_us_phone(r: random.Random) -> tuple[str, str]:
    s = f"({r.choice([206, 312, 415, 617, 512, 303])}) {r.randint(201, 989)}-{_d(r, 4)}"
    if "555" in s:
        s = s.replace("555", "556")
    return s, f"babysitter Kayla's cell is {s}, text don't call"


@_kind("uk mobile")
def _k_uk_phone(r: random.Random) -> tuple[str, str]:
    s = f"+44 7{r.randint(400, 999)} {_d(r, 6)}"
    return s, f"Aunt Rose moved; new mobile {s}"


@_kind("german mobile")
def _k_de_phone(r: random.Random) -> tuple[str, str]:
    s = f"+49 1{r.choice(['51', '52', '57', '60', '70', '76'])} {_d(r, 8)}"
    return s, f"Vermieter Herr Braun: {s} (only for emergencies)"


@_kind("日本手机号", zh=True)
def _k_jp_phone(r: random.Random) -> tuple[str, str]:
    s = f"0{r.choice('789')}0-{_d(r, 4)}-{_d(r, 4)}"
    return s, f"东京那边房东的手机：{s}，只会说日语"


@_kind("香港手机号", zh=True)
def _k_hk_phone(r: random.Random) -> tuple[str, str]:
    s = f"+852 {r.choice('5679')}{_d(r, 3)} {_d(r, 4)}"
    return s, f"表姐香港的号码 {s}，微信加不上就打这个"


@_kind("台湾手机号", zh=True)
def _k_tw_phone(r: random.Random) -> tuple[str, str]:
    s = f"09{_d(r, 2)}-{_d(r, 3)}-{_d(r, 3)}"
    return s, f"台北民宿老板 {s}（Line 同号）"


@_kind("indian mobile")
def _k_in_phone(r: random.Random) -> tuple[str, str]:
    s = f"+91 9{_d(r, 4)} {_d(r, 5)}"
    return s, f"Priya's mum: {s} (WhatsApp)"


@_kind("personal gmail")
def _k_email_gmail(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}.{_syl(r)}{_d(r, 2)}@gmail.com"
    return s, f"Grandpa's e-mail, he only checks it on Sundays: {s}"


@_kind("obfuscated email at dot")
def _k_email_obf(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}{_d(r, 3)}"
    return s, f"reach me at {s} at proton dot me (the other one is for spam)"


@_kind("obfuscated email bracketed")
def _k_email_obf2(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}.{_syl(r, 1)}{_d(r, 2)}"
    return s, f"Lily's teacher: {s} [at] outlook [dot] com"


@_kind("QQ 邮箱", zh=True)
def _k_email_qq(r: random.Random) -> tuple[str, str]:
    s = f"{r.randint(100000000, 3999999999)}@qq.com"
    return s, f"妈妈的邮箱就是她QQ号：{s}，发照片给她用这个"


@_kind("163 邮箱 #换@", zh=True)
def _k_email_163(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}{_d(r, 4)}#163.com"
    return s, f"简历发到 {s}（#换成@）"


@_kind("email in mailto link")
def _k_email_mailto(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}{_d(r, 2)}+family@fastmail.com"
    return s, f"[email Grandma](mailto:{s}) — she prefers e-mail to WhatsApp"


@_kind("邮箱 JSON 联系人", zh=True)
def _k_email_json(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}_{_d(r, 4)}@126.com"
    return s, json.dumps({"联系人": "小舅", "邮箱": s, "生日": "农历八月"}, ensure_ascii=False)


@_kind("家庭住址 楼栋号", zh=True)
def _k_addr_cn(r: random.Random) -> tuple[str, str]:
    s = f"{r.randint(1, 30)}-{r.randint(1, 6)}-{r.randint(2, 33)}0{r.randint(1, 4)}"
    estate = r.choice(["翠苑", "文鼎苑", "嘉绿", "骆家庄"]) + str(r.randint(1, 9))
    return s, f"新家地址：杭州市西湖区{estate}区 {s}，快递填这个"


@_kind("英文地址 寄国际快递", zh=True)
def _k_addr_cn_en(r: random.Random) -> tuple[str, str]:
    road = r.choice(["Caoxi North", "Gubei", "Hongqiao", "Yishan", "Tianlin"])
    s = f"Room {r.randint(2, 33)}0{r.randint(1, 4)}, Building {r.randint(1, 30)}, No. {r.randint(10, 999)} {road} Road"
    return s, f"国外朋友寄礼物用的英文地址：{s}, Xuhui District, Shanghai 200030"


@_kind("us street address")
def _k_addr_us(r: random.Random) -> tuple[str, str]:
    street = r.choice(["Maple Crest", "Old Mill", "Juniper", "Harbor View"])
    s = f"{r.randint(100, 9999)} {street} Dr, Apt {r.randint(1, 9)}{r.choice('ABCD')}"
    return s, f"new place: {s}, Seattle WA 98103 — forward the mail from the old one"


@_kind("uk address")
def _k_addr_uk(r: random.Random) -> tuple[str, str]:
    street = r.choice(["Elmhurst", "Cranbrook", "Westcombe", "Ashgrove"])
    s = f"Flat {r.randint(1, 12)}, {r.randint(2, 199)} {street} Road"
    pc = f"{r.choice(['SE', 'N', 'E', 'NW'])}{r.randint(1, 20)} {r.randint(1, 9)}{_w(r, 2, 'ABDEFGHJLNPQRSTUWXYZ')}"
    return s, f"Tom's new flat: {s}, London {pc}"


@_kind("german address")
def _k_addr_de(r: random.Random) -> tuple[str, str]:
    street = r.choice(["Lindenstrasse", "Goethestr.", "Am Weinberg", "Schillerplatz"])
    s = f"{street} {r.randint(1, 120)}{r.choice(['', 'a', 'b'])}, {r.randint(10115, 99998)}"
    return s, f"Oma's address for the Christmas parcel: {s} Freiburg"


@_kind("日本住址", zh=True)
def _k_addr_jp(r: random.Random) -> tuple[str, str]:
    town = r.choice(["Kitazawa", "Daizawa", "Nakameguro", "Ebisu"])
    s = f"{town} {r.randint(1, 5)}-{r.randint(1, 30)}-{r.randint(1, 20)}"
    return s, f"东京租的房子：〒155-0031 東京都世田谷区 {s}，2楼"


# --------------------------------------------------------------------------------------------------------------
# bank data


@_kind("german IBAN spaced")
def _k_iban_de(r: random.Random) -> tuple[str, str]:
    s = _group(_iban("DE", _d(r, 18)))
    return s, f"Miete bitte an {s} (Sparkasse, Kontoinhaber M. Wei) überweisen — rent reminder for the sublet"


@_kind("英国 IBAN 学费", zh=True)
def _k_iban_gb(r: random.Random) -> tuple[str, str]:
    s = _iban("GB", r.choice(["NWBK", "BARC", "LOYD", "MIDL"]) + _d(r, 14))
    return s, f"儿子在英国的银行账户 IBAN {s}，下学期生活费汇这里"


@_kind("french IBAN with RIB key")
def _k_iban_fr(r: random.Random) -> tuple[str, str]:
    bank, branch, account = _d(r, 5), _d(r, 5), _d(r, 11)
    key = 97 - (89 * int(bank) + 15 * int(branch) + 3 * int(account)) % 97
    s = _group(_iban("FR", f"{bank}{branch}{account}{key:02d}"))
    return s, f"RIB for the nanny's salary: {s}"


@_kind("swiss IBAN in yaml")
def _k_iban_ch(r: random.Random) -> tuple[str, str]:
    s = _iban("CH", _d(r, 17))
    return s, f"payee:\n  name: Kita Sonnenschein\n  iban: {s}\n  reference: Lily monthly fee"


@_kind("工资卡卡号 分段", zh=True)
def _k_cn_card_1(r: random.Random) -> tuple[str, str]:
    body = "6222" + _d(r, 14)
    s = _group(body + _luhn(body))
    return s, f"工资卡卡号 {s}，工商银行，发工资的那张"


@_kind("银行卡 开户行 表格", zh=True)
def _k_cn_card_2(r: random.Random) -> tuple[str, str]:
    body = r.choice(["6217", "6214", "6228", "6226"]) + _d(r, 14)
    s = body + _luhn(body)
    return s, f"| 户名 | 卡号 | 开户行 |\n|---|---|---|\n| 张秀兰 | {s} | 建行杭州文三路支行 |"


@_kind("credit card with cvv")
def _k_credit(r: random.Random) -> tuple[str, str]:
    body = r.choice(["4", "51", "53", "55"])
    body += _d(r, 15 - len(body))
    s = _group(body + _luhn(body))
    return s, f"the family card for subscriptions: {s} exp {r.randint(1, 12):02d}/{r.randint(27, 31)} CVV {_d(r, 3)}"


@_kind("us routing and account")
def _k_us_bank(r: random.Random) -> tuple[str, str]:
    d = [int(c) for c in f"{r.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 21, 22, 26, 31]):02d}" + _d(r, 6)]
    check = (10 - (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5])) % 10) % 10
    routing = "".join(map(str, d)) + str(check)
    s = _d(r, r.randint(10, 12))
    return s, f"direct deposit: routing {routing}, checking account {s} (Chase)"


@_kind("SWIFT 汇款 账号", zh=True)
def _k_swift(r: random.Random) -> tuple[str, str]:
    s = _d(r, r.randint(12, 17))
    return s, f"汇款信息：收款行 Bank of China Hangzhou Branch，SWIFT BKCHCNBJ910，账号 {s}，户名 WEI MEI"


# --------------------------------------------------------------------------------------------------------------
# health


@_kind("门诊病历号 和诊断", zh=True)
def _k_mrn_zh(r: random.Random) -> tuple[str, str]:
    s = f"MZ{_d(r, 8)}"
    return s, f"浙一医院 精神科复诊，病历号 {s}，抑郁症，舍曲林加到 100mg"


@_kind("prescription number")
def _k_rx(r: random.Random) -> tuple[str, str]:
    s = _d(r, 7)
    return s, f"Walgreens Rx #{s}: sertraline 100mg, refill on the 14th — they ask for DOB and the Rx number"


@_kind("health insurance member id")
def _k_member_id(r: random.Random) -> tuple[str, str]:
    s = _w(r, 3, UP) + _d(r, 9)
    return s, f"Blue Cross member ID {s}, group 0{_d(r, 5)} — for Lily's allergist"


@_kind("medicare MBI")
def _k_mbi(r: random.Random) -> tuple[str, str]:
    letters = "ACDEFGHJKMNPQRTUVWXY"
    s = (
        str(r.randint(1, 9)) + r.choice(letters) + r.choice(letters + DIG) + _d(r, 1) + r.choice(letters)
        + r.choice(letters + DIG) + _d(r, 1) + _w(r, 2, letters) + _d(r, 2)
    )  # fmt: skip
    return s, f"Grandma's Medicare number (MBI): {s}"


@_kind("体检报告编号 乙肝", zh=True)
def _k_lab_zh(r: random.Random) -> tuple[str, str]:
    s = f"TJ{r.randint(2024, 2026)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}{_d(r, 4)}"
    return s, f"体检报告编号 {s}，乙肝表面抗原阳性，肝功能正常，公司不知道这事"


# --------------------------------------------------------------------------------------------------------------
# plates, dates of birth


@_kind("新能源车牌", zh=True)
def _k_plate_ev(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice('DF')}{r.choice('ABCDEFGHJK')}{_d(r, 4)}"
    return s, f"新车牌下来了：粤B·{s}，停车场要重新登记"


@_kind("车牌 沪A", zh=True)
def _k_plate_cn(r: random.Random) -> tuple[str, str]:
    s = "A" + _w(r, 5, "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789")
    return s, f"老婆的车 沪{s}，违章短信都发到我这"


@_kind("uk number plate")
def _k_plate_uk(r: random.Random) -> tuple[str, str]:
    s = f"{_w(r, 2, 'ABCDEFGHKLMNOPRSVWY')}{r.randint(15, 74):02d} {_w(r, 3, 'ABCDEFGHJKLMNOPRSTUVWXYZ')}"
    return s, f"parking permit for the visitor bay: reg {s}"


@_kind("german number plate")
def _k_plate_de(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(['M', 'B', 'HH', 'FR', 'S'])}-{_w(r, 2, UP)} {r.randint(1000, 9999)}"
    return s, f"the rental in Munich was {s}, keep it for the toll bill"


@_kind("california plate")
def _k_plate_us(r: random.Random) -> tuple[str, str]:
    s = f"{r.randint(7, 9)}{_w(r, 3, UP)}{_d(r, 3)}"
    return s, f"Kayla's car (for the HOA gate list): silver Civic, plate {s}"


@_kind("出生日期", zh=True)
def _k_dob_zh(r: random.Random) -> tuple[str, str]:
    y, m, d = _date(r, 1940, 2015)
    s = f"{y}-{m:02d}-{d:02d}"
    return s, f"我的出生日期：{s}，填表老是要，身份证上的和户口本一致"


@_kind("dob slashes")
def _k_dob_en(r: random.Random) -> tuple[str, str]:
    y, m, d = _date(r, 1940, 2015)
    s = f"{d:02d}/{m:02d}/{y}"
    return s, f"Lily — DOB {s}, blood type O+, allergic to penicillin"


@_kind("born on, in words")
def _k_dob_words(r: random.Random) -> tuple[str, str]:
    y, m, d = _date(r, 1925, 1960)
    months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December"]  # fmt: skip
    s = f"{d} {months[m - 1]} {y}"
    return s, f"Grandpa was born on {s} in Ningbo — the security question for his bank is his birthday"


# --------------------------------------------------------------------------------------------------------------
# internal hosts and private addresses


@_kind("internal db fqdn")
def _k_host_db(r: random.Random) -> tuple[str, str]:
    s = f"pg-{_syl(r)}-{r.randint(1, 40):02d}.prod.{_syl(r)}.internal"
    return s, f"prod DB primary is {s}; replicas are behind pgbouncer"


@_kind("跳板机 内网 IP", zh=True)
def _k_host_jump(r: random.Random) -> tuple[str, str]:
    s = _ip10(r)
    return s, f"跳板机 {s}，ssh 端口 {r.randint(20000, 60000)}，只允许公司出口 IP"


@_kind("群晖 局域网 IP", zh=True)
def _k_host_nas(r: random.Random) -> tuple[str, str]:
    s = _ip192(r)
    return s, f"群晖在 {s}:5001，路由器里已经做了 DHCP 静态绑定"


@_kind("docker bridge 172 address")
def _k_host_172(r: random.Random) -> tuple[str, str]:
    s = _ip172(r)
    return s, f"the api container answers on {s}:8000 from inside the compose network"


@_kind("ipv6 ULA address")
def _k_host_ula(r: random.Random) -> tuple[str, str]:
    s = f"fd{_hex(r, 2)}:{_hex(r, 4)}:{_hex(r, 4)}::{_hex(r, 3)}"
    return s, f"home server's ULA: {s} (stable, unlike the prefix from the ISP)"


@_kind("tailscale magicdns name")
def _k_host_ts(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}-mbp.tail{_hex(r, 5)}.ts.net"
    ip = f"100.{r.randint(64, 127)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
    return s, f"reach the laptop from anywhere at {s} ({ip})"


@_kind("k8s 集群内服务地址", zh=True)
def _k_host_svc(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}-api.{_syl(r)}-prod.svc.cluster.local"
    return s, f"订单服务在集群里的地址：http://{s}:8080，外面访问不到"


@_kind("active directory dc host")
def _k_host_ad(r: random.Random) -> tuple[str, str]:
    corp = _syl(r)
    s = f"{corp.upper()}-DC0{r.randint(1, 9)}.ad.{corp}.lan"
    return s, f"domain join kept failing until I pointed DNS at {s}"


@_kind("内网 Jenkins 地址", zh=True)
def _k_host_jenkins(r: random.Random) -> tuple[str, str]:
    s = f"jenkins.{_syl(r)}-intra.{_syl(r, 1)}"
    return s, f"内网 Jenkins：http://{s}:8080/job/release/ ，VPN 连上才能打开"


@_kind("home.arpa host")
def _k_host_arpa(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}-nas{r.randint(1, 9)}.home.arpa"
    return s, f"Plex is on {s}:32400, the TV finds it by name"


# --------------------------------------------------------------------------------------------------------------
# account names


@_kind("QQ 号", zh=True)
def _k_acct_qq(r: random.Random) -> tuple[str, str]:
    s = str(r.randint(100000000, 3999999999))
    return s, f"儿子的QQ号 {s}，密码他自己记着，家长守护绑的是我微信"


@_kind("微信号 wxid", zh=True)
def _k_acct_wx(r: random.Random) -> tuple[str, str]:
    s = "wxid_" + _w(r, 14, LOW + DIG)
    return s, f"妈妈的微信号是系统给的 {s}，搜不到她，要扫码"


@_kind("工号 登录名", zh=True)
def _k_acct_emp(r: random.Random) -> tuple[str, str]:
    s = f"E{_d(r, 7)}"
    return s, f"OA 和邮箱都用工号 {s} 登录，初始密码是身份证后六位"


@_kind("steam login name")
def _k_acct_steam(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r, 3)}{_d(r, 3)}"
    return s, f"Steam login (not the display name!): {s} — the kids share it"


@_kind("online banking customer id")
def _k_acct_bank(r: random.Random) -> tuple[str, str]:
    s = _d(r, 10)
    return s, f"HSBC online banking: customer ID {s}, secure key app on the old phone"


@_kind("AD username with domain")
def _k_acct_ad(r: random.Random) -> tuple[str, str]:
    s = f"mwei{_d(r, 3)}"
    return s, f"work login is {_syl(r).upper()}\\{s}, not the e-mail address"


@_kind("学信网 用户名", zh=True)
def _k_acct_chsi(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}{_d(r, 4)}"
    return s, f"学信网用户名 {s}，下学历认证报告要用"


# --------------------------------------------------------------------------------------------------------------
# more of a Chinese family's paperwork and a developer's tokens, phrased in Chinese


@_kind("智能门锁 管理员密码", zh=True)
def _k_smartlock(r: random.Random) -> tuple[str, str]:
    s = _d(r, 8)
    return s, f"家里德施曼指纹锁的管理员密码 {s}，换电池后要用它进设置，阿姨只录了指纹"


@_kind("保险柜密码 语音", zh=True)
def _k_safe_zh(r: random.Random) -> tuple[str, str]:
    s = _d(r, 6)
    return s, f"嗯……卧室保险柜，密码是，呃，{s}，然后按井号，里面有房本和金条"


@_kind("社保卡 服务密码", zh=True)
def _k_sbk(r: random.Random) -> tuple[str, str]:
    s = _d(r, 6)
    return s, f"妈的社保卡（第三代）服务密码：{s}，药店刷卡要输"


@_kind("公积金 个人账号", zh=True)
def _k_gjj(r: random.Random) -> tuple[str, str]:
    s = _d(r, 12)
    return s, f"公积金个人账号 {s}，提取租房的钱要在 App 里填"


@_kind("个税 App 登录密码", zh=True)
def _k_tax_app(r: random.Random) -> tuple[str, str]:
    s = _pw(r)
    return s, f"个人所得税 App：手机号登录，密码 → {s} ←，年度汇算记得填专项附加扣除"


@_kind("医院 就诊卡号", zh=True)
def _k_jzk(r: random.Random) -> tuple[str, str]:
    s = f"{r.randint(1, 9)}{_d(r, 9)}"
    return s, f"儿童医院就诊卡号 {s}，挂号要用，女儿的过敏科在三楼"


@_kind("驾驶证 档案编号", zh=True)
def _k_dl_file(r: random.Random) -> tuple[str, str]:
    s = f"3301{_d(r, 8)}"
    return s, f"驾驶证档案编号：{s}（在驾驶证副页上），交管12123 绑定要用"


_VIN_VALUE = dict(
    zip("ABCDEFGHJKLMNPRSTUVWXYZ", [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 7, 9, 2, 3, 4, 5, 6, 7, 8, 9], strict=True)
)
_VIN_WEIGHTS = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2]


@_kind("行驶证 车架号 VIN", zh=True)
def _k_vin(r: random.Random) -> tuple[str, str]:
    chars = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
    vin = r.choice(["LSV", "LFV", "LGB", "LVS"]) + _w(r, 5, chars) + "0" + r.choice("MNPR") + _w(r, 1, chars) + _d(r, 6)
    total = sum((int(c) if c.isdigit() else _VIN_VALUE[c]) * w for c, w in zip(vin, _VIN_WEIGHTS, strict=True))
    check = total % 11
    s = vin[:8] + ("X" if check == 10 else str(check)) + vin[9:]
    return s, f"续保要填行驶证上的车架号：{s}，发动机号在另一页"


@_kind("不动产权证号", zh=True)
def _k_house_cert(r: random.Random) -> tuple[str, str]:
    s = _d(r, 7)
    return s, f"房本：浙（2023）杭州市不动产权第{s}号，共有人写的是我和老婆"


@_kind("结婚证字号", zh=True)
def _k_marriage(r: random.Random) -> tuple[str, str]:
    s = f"J330106-{r.randint(2005, 2025)}-{_d(r, 6)}"
    return s, f"落户材料：结婚证字号 {s}，登记日期写在内页"


@_kind("git insteadOf 带 token", zh=True)
def _k_git_insteadof(r: random.Random) -> tuple[str, str]:
    s = "ghp_" + _w(r, 36)
    return (
        s,
        f'CI 机器上为了拉私有依赖加的：\ngit config --global url."https://{s}@github.com/".insteadOf "https://github.com/"',
    )


@_kind("Docker Hub 访问令牌", zh=True)
def _k_dockerhub(r: random.Random) -> tuple[str, str]:
    s = "dckr_pat_" + _w(r, 27, URLSAFE)
    return s, f"Docker Hub 的访问令牌（只读）：echo {s} | docker login -u meiwei --password-stdin"


@_kind("PyPI 上传 token", zh=True)
def _k_pypi(r: random.Random) -> tuple[str, str]:
    s = "pypi-AgEIcHlwaS5vcmc" + _w(r, 60, URLSAFE)
    return s, f"~/.pypirc 里：\n[pypi]\nusername = __token__\npassword = {s}\n这个 token 只对 memo-tools 这个项目有效"


@_kind("Cloudflare API 令牌 无前缀", zh=True)
def _k_cf_token(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, URLSAFE)
    return s, f'acme.sh 申请通配符证书：\nexport CF_Token="{s}"\nexport CF_Zone_ID="{_hex(r, 32)}"'


@_kind("Notion 集成密钥", zh=True)
def _k_notion(r: random.Random) -> tuple[str, str]:
    s = "ntn_" + _w(r, 46)
    return s, f"Notion 同步脚本用的 Internal Integration Secret：{s}（记账数据库要先 Connect 一下）"


@_kind("Figma 个人令牌", zh=True)
def _k_figma(r: random.Random) -> tuple[str, str]:
    s = "figd_" + _w(r, 40, URLSAFE)
    return s, f"导出设计稿图标的脚本：curl -H 'X-Figma-Token: {s}' https://api.figma.com/v1/files/{_w(r, 22)}"


@_kind("学籍号", zh=True)
def _k_xjh(r: random.Random) -> tuple[str, str]:
    s = "G" + _cn_id(r)
    return s, f"女儿的全国学籍号：{s}，转学手续要用"


@_kind("回乡证号码", zh=True)
def _k_hxz(r: random.Random) -> tuple[str, str]:
    s = "H" + _d(r, 8)
    return s, f"表哥的回乡证（港澳居民来往内地通行证）号码 {s}，订酒店用"


@_kind("BitLocker 恢复密钥", zh=True)
def _k_bitlocker(r: random.Random) -> tuple[str, str]:
    s = "-".join(_d(r, 6) for _ in range(8))
    return s, f"公司笔记本 BitLocker 恢复密钥（标识符 {_hex(r, 8).upper()}）：\n{s}"


@_kind("Windows 产品密钥", zh=True)
def _k_winkey(r: random.Random) -> tuple[str, str]:
    chars = "BCDFGHJKMPQRTVWXY2346789"
    s = "-".join(_w(r, 5, chars) for _ in range(5))
    return s, f"台式机的 Windows 11 专业版零售密钥 {s}，换主板要重新激活"


@_kind("1Password Secret Key", zh=True)
def _k_1password(r: random.Random) -> tuple[str, str]:
    chars = "ABCDEFGHJKLMNPQRSTVWXYZ23456789"
    s = "A3-" + "-".join(_w(r, n, chars) for n in (6, 6, 5, 5, 5, 5))
    return s, f"1Password 的 Emergency Kit 里：Secret Key {s}，主密码单独记在纸上"


@_kind("Bitwarden 主密码 短语", zh=True)
def _k_bitwarden(r: random.Random) -> tuple[str, str]:
    s = "-".join(r.choice(_BIP39) for _ in range(4)) + str(r.randint(10, 99))
    return s, f"Bitwarden 主密码（忘了就全没了）：{s}"


@_kind("邮箱 语音口述", zh=True)
def _k_email_voice(r: random.Random) -> tuple[str, str]:
    s = f"{_syl(r)}{_d(r, 4)}"
    return s, f"我邮箱是，嗯，{s}，at，163 点 com，对，都是小写"


@_kind("内网机器 IP 表格", zh=True)
def _k_ip_table(r: random.Random) -> tuple[str, str]:
    s = _ip10(r)
    return s, f"| 机器 | IP | 用途 |\n|---|---|---|\n| gpu-01 | {s} | 训练 |\n| 办公打印机 | 见路由器 | 打印 |"


CHINESE: frozenset[str] = frozenset(_CHINESE)


# --------------------------------------------------------------------------------------------------------------
# private records

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"(private) {t}",
    lambda t: f"{t} [私密]",
    lambda t: f"🔒 {t}",
    lambda t: f"{t} 🤫 keep this between us",
    lambda t: f"<!-- private -->\n{t}",
    lambda t: f"{t} <!-- 私密 -->",
    lambda t: f"#私密 {t}",
    lambda t: f"{t} #confidential",
    lambda t: f"PRIVATE: {t}",
    lambda t: f"私人：{t}",
    lambda t: f"【仅自己可见】{t}",
    lambda t: f"{t}（不要公开）",
    lambda t: f"{t} — do not publish",
    lambda t: f"{t}\n\n(not for the wiki)",
    lambda t: f"{{private}} {t}",
    lambda t: f"<private>{t}</private>",
    lambda t: f"⚠️ 保密 ⚠️ {t}",
    lambda t: f"Note to self, private: {t}",
    lambda t: f"[[private]] {t}",
    lambda t: f"{t} ＃隐私",
    lambda t: f"仅限本人：{t}",
    lambda t: f"{t}\n——此条勿外传",
    lambda t: f"> [!PRIVATE]\n> {t}",
    lambda t: f"🔐 off the record: {t}",
    lambda t: f"{t} (private, don't share)",
    lambda t: f"私密｜{t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"visibility": "private"},
    {"private": "yes"},
    {"public": False},
    {"publish": False},
    {"access": "private"},
    {"tags": ["journal", "private"]},
    {"tags": ["私密"]},
    {"visibility": "私密"},
    {"private": "true"},
    {"confidential": True},
    {"share": False},
    {"audience": "only-me"},
    {"权限": "仅自己可见"},
    {"classification": "confidential"},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "# Private notes",
    "## Personal (do not share)",
    "## 私密",
    "### 隐私信息",
    "## 仅自己可见",
    "## Confidential",
    "#### Secrets",
    "## 🔒 Private",
    "### 不公开的部分",
    "## Off the record",
]


# --------------------------------------------------------------------------------------------------------------
# ordinary strings: no secrets, published unchanged (about 40% look secret-ish)

ORDINARY: list[str] = [
    # commands and versions
    "python -m venv .venv",
    "uv pip install -r requirements.txt",
    "npm ci --omit=dev",
    "docker compose up -d --build",
    "kubectl rollout restart deployment/web -n staging",
    "git log --oneline -n 20",
    "Python 3.12.7",
    "node v20.18.1",
    "mkdocs-material 9.5.44",
    "numpy>=1.26,<3",
    "requests~=2.31",
    "v1.2.3-rc.1+build.5",
    "Windows 11 23H2 (build 22631.4460)",
    "ruff check --fix .",
    "SELECT count(1) FROM orders WHERE created_at > now() - interval '7 days';",
    "listen 443 ssl;",
    "ports: 8080:80",
    "aria2c -x 16 -s 16 https://releases.ubuntu.com/24.04/ubuntu-24.04.1-desktop-amd64.iso",
    # public URLs and hosts
    "https://docs.python.org/3/library/secrets.html",
    "https://github.com/mkdocs/mkdocs/releases",
    "https://pypi.tuna.tsinghua.edu.cn/simple",
    "https://mirrors.aliyun.com/pypi/simple/",
    "registry.npmjs.org",
    "api.openai.com/v1/chat/completions",
    # time, units, colours, style
    "2026-12-03T08:15:00+08:00",
    "Unix time 1733212800",
    "rgb(30, 102, 245)",
    "hsl(220 90% 54%)",
    "font-family: Inter, system-ui, sans-serif",
    "max-width: 72ch",
    "Content-Type: application/json; charset=utf-8",
    "HTTP/1.1 304 Not Modified",
    "status code 429 Too Many Requests",
    "TCP 5432 is the PostgreSQL default port",
    "1 TiB = 1024 GiB",
    "Ctrl+Shift+P opens the command palette",
    # Chinese technical sentences
    "时区设置为 Asia/Shanghai",
    "用 pnpm 替换 npm 之后安装快了很多",
    "这个函数的时间复杂度是 O(n log n)",
    "把日志级别调到 DEBUG 再复现一次",
    "二分查找要求数组有序",
    "缓存命中率从 62% 提升到 91%",
    "Redis 默认端口是 6379",
    "每周日凌晨三点自动备份",
    "版本号遵循语义化版本 2.0.0",
    "README 里补充安装步骤",
    "先跑单元测试，再跑集成测试",
    "这个接口的 P99 延迟是 120ms",
    "数据库连接池大小设为 20",
    "把 Nginx 的 gzip 打开后首页小了一半",
    "用 systemd timer 代替 cron",
    "MkDocs 的导航在 mkdocs.yml 的 nav 里配置",
    "周报：修了三个 bug，写了两篇文档",
    "孩子周六上午有游泳课",
    "git switch -c feature/search",
    "pytest -q -k 'not slow'",
    "make -j8 all",
    "go mod tidy",
    "cargo build --release",
    "brew upgrade --cask",
    "sudo apt-get install -y ripgrep fd-find",
    "journalctl -u nginx --since today",
    "du -sh ~/Pictures",
    "tar -czf backup.tar.gz docs/",
    "rsync -avh --delete src/ dst/",
    "ffmpeg -i in.mov -c:v libx264 -crf 23 out.mp4",
    "jq '.items | length' data.json",
    "The build took 3m 42s on CI.",
    "Dark mode follows the system setting.",
    "Page size: A4, margins 2 cm",
    "Meeting moved to Thursday 15:00 CET",
    # math and Markdown-ish prose
    "E = mc^2",
    "sqrt(2) ≈ 1.41421356",
    "a² + b² = c²",
    "H2O, CO2 and NaCl",
    "Use ## for a second-level heading and > for a quote.",
    "ISO 8601 and RFC 9110",
    # tricky: look secret-ish, are not
    "the token expires after 1 hour",
    "密码长度至少8位，需包含大小写字母和数字",
    "access_token 的有效期是 7200 秒",
    "Rotate the API key every 90 days.",
    "DB_PASSWORD=",
    'api_key = "YOUR_API_KEY"',
    "OPENAI_API_KEY=${OPENAI_API_KEY}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password = changeme",
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "DE89 3704 0044 0532 0130 00",
    "4111 1111 1111 1111",
    "ISBN 978-0-262-03384-8",
    "ORCID 0000-0002-1825-0097",
    "arXiv:1706.03762",
    "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "md5 d41d8cd98f00b204e9800998ecf8427e",
    "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
    'hash = "sha256:f01afa67ff4f2e798cd3a86d0eb58cbdd47eae4ac96585f424cc2459dbf03a50"',
    "python@sha256:1d0447543fac833cc86eed3edb0988e1c6ea7dfb011f7448f93bf50a6f1486d0",
    "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    "00000000-0000-0000-0000-000000000000",
    "SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU",
    "git@github.com:mkdocs/mkdocs.git",
    "security@python.org",
    "user@example.com",
    "color: #1e66f5",
    "Issue #1234 fixed in v2.3.1",
    "C# 12 and .NET 8",
    "10086 是中国移动的客服电话",
    "555-0100 to 555-0199 are reserved for fiction",
    "2^32 = 4294967296",
    "http://127.0.0.1:8000/",
    "postgresql://localhost/mydb",
    "Private IP ranges: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16",
    "Tailscale uses the 100.64.0.0/10 CGNAT range",
    "阿里公共 DNS 223.5.5.5，备用 114.114.114.114",
    "8.8.8.8 and 1.1.1.1",
    "255.255.255.0",
    "chmod 600 ~/.ssh/id_ed25519",
    "openssl rand -base64 32",
    "ssh-keygen -t ed25519 -C laptop-2026",
    "-----BEGIN PUBLIC KEY-----",
    "私钥不要提交到 Git 仓库",
    "secrets.yaml 要加进 .gitignore",
    "kubectl create secret generic db-creds --from-env-file=.env",
    "Set PGPASSWORD in the environment instead of the command line",
    "JWT 由 header.payload.signature 三部分组成",
    "Base64 is an encoding, not encryption",
    "the private key never leaves the YubiKey",
    "验证码 60 秒后可重新发送",
    "PIN 码输错三次会锁卡",
    "身份证号码为18位，最后一位可能是X",
    "xkcd 936: correct horse battery staple",
    "GitHub classic tokens start with ghp_",
    "Authorization: Bearer YOUR_TOKEN",
    "CVE-2024-3094",
]
