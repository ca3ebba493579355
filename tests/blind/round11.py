"""Blind canary set, round 11: written blind (without reading the detectors, the tests or the earlier rounds; only the
set format in tests/blind/example_set.py and the harness's docstring) on 2026-12-04.

Theme: the memory of an agent that serves three kinds of people.

1. A university researcher / lab manager: HPC and Slurm accounts (sshpass in cron, slurmdbd.conf), JupyterHub and
   W&B and Hugging Face tokens in sbatch scripts, Overleaf edit links, Zotero and S3 keys, ORCIDs of students who
   keep them private, journal submission logins and reviewer-only links, instrument PC passwords, VPN PSKs, grant
   portals, 学校统一身份认证, 校园卡, 知网/万方, 学号 beside names and grades, health details tied to a person.
2. A small accounting / legal office: 统一社会信用代码 and 身份证号 (valid check characters), 银行回单 account numbers,
   cards with a valid Luhn digit, IBANs with a valid MOD 97, 社保卡号, 个税 App, 电子签章 PIN, 网银 U盾, 公积金,
   client names beside case numbers that are fine to publish, SSNs, IRS IP PINs, passports, home addresses.
3. An indie game / mobile app developer: App Store Connect .p8 keys, Google Play service-account JSON, Steamworks
   publisher keys, Unity serials, EOS client secrets, keystore passwords in gradle.properties, FCM server keys,
   穿山甲 / 友盟 / 极光 / 小米 / 华为 secrets, 微信小程序 AppSecret, 支付宝 private keys, code-signing passwords,
   TestFlight invite codes, Sentry DSNs, app-specific passwords, Discord bot tokens, PlayFab, RevenueCat.

Shapes: prose, chat turns (English, Chinese, mixed), voice-dictation transcripts, values wrapped across lines, values
far from or before their label, Markdown tables, code spans and fences, JSON / YAML / .env / properties / plist / XML
/ ini, shell commands and history, URLs (user-info, query strings, percent-encoding), forwarded e-mails, screenshots
described in words, tool-call outputs, log lines, 「」“”（）quoting, full-width digits and letters, invented token
prefixes, bare high-entropy strings with no word near them and low-entropy human passwords only context reveals.
"""

# ruff: noqa: E501

from __future__ import annotations

import random
import string
import urllib.parse
from collections.abc import Callable

LOW = string.ascii_lowercase
UP = string.ascii_uppercase
DIG = string.digits
ALNUM = string.ascii_letters + string.digits
UPNUM = UP + DIG
LOWNUM = LOW + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"

Kind = Callable[[random.Random], tuple[str, str]]


# ---------------------------------------------------------------- drawing helpers


def _w(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _p(r: random.Random, *options: str) -> str:
    return r.choice(options)


def _luhn_digit(partial: str) -> str:
    """The check digit that makes partial + digit pass the Luhn test."""
    total = 0
    for i, ch in enumerate(reversed(partial)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def _card(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + _w(r, length - len(prefix) - 1, DIG)
    return body + _luhn_digit(body)


def _groups(s: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(s[i : i + size] for i in range(0, len(s), size))


_REGIONS = (
    "110105",
    "110108",
    "310104",
    "310115",
    "440305",
    "440106",
    "330106",
    "510107",
    "420111",
    "320102",
    "610113",
    "370202",
    "120101",
    "500103",
    "350203",
    "430104",
)


def _cn_id(r: random.Random) -> str:
    """18-character resident id; the last character is the ISO 7064 MOD 11-2 check (GB 11643)."""
    body = f"{r.choice(_REGIONS)}{r.randint(1962, 2006):04d}{r.randint(1, 12):02d}{r.randint(1, 28):02d}{_w(r, 3, DIG)}"
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(body, weights, strict=True))
    return body + "10X98765432"[total % 11]


def _mod11_2(digits: str) -> str:
    total = 0
    for ch in digits:
        total = (total + int(ch)) * 2
    res = (12 - total % 11) % 11
    return "X" if res == 10 else str(res)


def _orcid(r: random.Random) -> str:
    base = "0000000" + str(r.randint(1, 3)) + _w(r, 7, DIG)
    full = base + _mod11_2(base)
    return "-".join(full[i : i + 4] for i in range(0, 16, 4))


_USCC = "0123456789ABCDEFGHJKLMNPQRTUWXY"
_USCC_W = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)


def _org_code(r: random.Random) -> str:
    body = _w(r, 8, DIG)
    total = sum(int(c) * w for c, w in zip(body, (3, 7, 9, 10, 5, 8, 4, 2), strict=True))
    c = 11 - total % 11
    return body + ("X" if c == 10 else "0" if c == 11 else str(c))


def _uscc(r: random.Random) -> str:
    """统一社会信用代码 (GB 32100-2015) with valid organisation-code and final check characters."""
    body = "9" + r.choice("123") + r.choice(_REGIONS) + _org_code(r)
    total = sum(_USCC.index(ch) * w for ch, w in zip(body, _USCC_W, strict=True))
    c = 31 - total % 31
    return body + _USCC[0 if c == 31 else c]


def _iban_de(r: random.Random) -> str:
    bban = _w(r, 18, DIG)
    check = 98 - int(bban + "131400") % 97
    return f"DE{check:02d}{bban}"


def _fw(s: str) -> str:
    """Full-width form of the printable ASCII in s."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


_PW_WORDS = (
    "sunflower",
    "tigers",
    "bluesky",
    "dragon",
    "monkey",
    "pelican",
    "qwerty",
    "welcome",
    "summer",
    "panda",
    "matlab",
    "neuron",
    "protein",
    "oxford",
    "galaxy",
    "coffee",
    "kitten",
    "bruker",
)
_PINYIN = (
    "zhangwei",
    "liuyang",
    "wangfang",
    "chenjing",
    "lixiaoming",
    "zhaolei",
    "huangli",
    "zhoujie",
    "xuqing",
    "sunhao",
    "majun",
    "linyu",
    "guoqiang",
    "hexin",
)


def _human_pw(r: random.Random) -> str:
    w = r.choice(_PW_WORDS)
    return _p(
        r,
        w.capitalize() + str(r.randint(1980, 2026)) + r.choice("!@#."),
        w + _w(r, 4, DIG),
        w.capitalize() + r.choice("@#_") + _w(r, 3, DIG),
        w + r.choice(("123", "888", "666", "520")) + r.choice(("", "!", "..")),
        r.choice(_PINYIN) + f"{r.randint(1, 12):02d}{r.randint(1, 28):02d}",
        r.choice(_PINYIN).capitalize() + "@" + str(r.randint(1975, 2005)),
    )


def _strong_pw(r: random.Random, n: int = 14) -> str:
    return _w(r, n - 2, ALNUM) + r.choice("!#%*+=") + r.choice(DIG)


_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗高郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦方白邹孟熊秦邱江尹薛段雷侯龙史陶黎贺顾毛郝龚邵万钱严武戴莫孔汤"
_GIVEN = (
    "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉兰萍红鹏辉宇浩然欣怡涵梓轩晨曦思远嘉雨婷佳琪俊峰文博诺瑶璐萱"
)


def _zh_name(r: random.Random) -> str:
    return r.choice(_SURNAMES) + r.choice(_GIVEN) + r.choice(_GIVEN)


_FIRST = (
    "Priya",
    "Daniel",
    "Mei",
    "Tomasz",
    "Aisha",
    "Lukas",
    "Hannah",
    "Kwame",
    "Sofia",
    "Mateo",
    "Yuki",
    "Ingrid",
    "Omar",
    "Chloe",
    "Rafael",
    "Nadia",
    "Eitan",
    "Grace",
    "Arjun",
    "Freya",
)
_LAST = (
    "Raman",
    "Okafor",
    "Lindqvist",
    "Kowalski",
    "Haddad",
    "Brennan",
    "Nakamura",
    "Osei",
    "Moreau",
    "Alvarez",
    "Fischer",
    "Thompson",
    "Castillo",
    "Novak",
    "Sato",
    "Whitfield",
    "Abara",
    "Keller",
    "Iyer",
    "Dubois",
)


def _en_name(r: random.Random) -> str:
    return f"{r.choice(_FIRST)} {r.choice(_LAST)}"


def _user(r: random.Random) -> str:
    return _p(
        r, r.choice(_PINYIN) + _w(r, 2, DIG), _w(r, 2, LOW) + _w(r, 4, DIG), r.choice(_LAST).lower() + _w(r, 1, LOW)
    )


def _cn_mobile(r: random.Random) -> str:
    return "1" + r.choice("3456789") + _w(r, 9, DIG)


def _uuid(r: random.Random) -> str:
    h = _w(r, 32, HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{r.choice('89ab')}{h[17:20]}-{h[20:]}"


_HOSTS = (
    "login2.hpc.univ-example.edu",
    "greatlakes.arc.univ-example.edu",
    "sherlock.hpc.example.edu",
    "cluster.physik.example.de",
)


# ================================================================ 1. research lab, English


def _hpc_sshpass(r: random.Random) -> tuple[str, str]:
    s, u, host = _human_pw(r), _user(r), r.choice(_HOSTS)
    return s, _p(
        r,
        f"cron on the analysis box runs: sshpass -p '{s}' ssh {u}@{host} 'squeue -u {u} -h | wc -l'",
        f"Group HPC account {u} on {host}. Password: {s} (set by the PI, shared by the three postdocs)",
        f"$ history | tail -4\n  511  module load cuda/12.2\n  512  sshpass -p {s} rsync -av out/ {u}@{host}:/scratch/{u}/\n  513  ls\n  514  exit",
    )


def _jupyterhub_token(r: random.Random) -> tuple[str, str]:
    s, u = _w(r, 32, HEX), _user(r)
    return s, _p(
        r,
        f"JupyterHub shortcut (skips the Duo prompt): https://jupyter.hpc.univ-example.edu/user/{u}/lab?token={s}",
        f"export JUPYTERHUB_API_TOKEN={s}   # made on the hub's token page, no expiry",
        f"curl -H 'Authorization: token {s}' https://hub.lab.univ-example.edu/hub/api/users/{u}",
    )


def _student_orcid(r: random.Random) -> tuple[str, str]:
    s, n = _orcid(r), _en_name(r)
    return s, _p(
        r,
        f"{n} (first-year PhD, record still set to private) registered ORCID {s}; keep it off the lab page until she decides.",
        f"Fellowship form needs {n}'s ORCID iD — {s}. He asked me not to list it anywhere public.",
        f"orcid: {s}  # {n}, trusted-individual access only",
    )


def _journal_login(r: random.Random) -> tuple[str, str]:
    n = _en_name(r)
    e = n.lower().replace(" ", ".") + "@univ-example.edu"
    s = _human_pw(r)
    return s, _p(
        r,
        f"Editorial Manager (Ecology Letters) login: {e} / {s}",
        f"ScholarOne for J. Neurosci.: user {e}, pass {s} (reset in March after the phishing mail)",
        f"submission system\n  username: {e}\n  password: {s}\n  roles: Author, Reviewer",
    )


def _reviewer_link(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24, ALNUM)
    ms = f"JAE-2026-{r.randint(1, 999):04d}"
    return s, _p(
        r,
        f"Reviewer access link for {ms} (no login needed, do not forward): https://mc.manuscriptcentral.com/jae?URL_MASK={s}",
        f"Private note, reviewer 2 on {ms}: the authors are almost certainly the Hendricks group. Quick link "
        f"https://www.editorialmanager.com/ecolet/l.asp?i={r.randint(100000, 999999)}&l={s}",
    )


def _instrument_pc(r: random.Random) -> tuple[str, str]:
    s = _p(
        r,
        "Topspin#" + _w(r, 3, DIG),
        "Zeiss" + _w(r, 4, DIG) + "!",
        "LSM880_" + _w(r, 4, LOW),
        "Bruker@" + _w(r, 4, DIG),
    )
    return s, _p(
        r,
        f"Confocal PC (Zeiss LSM 880, Windows 7, never on the network): local admin password {s}",
        f"{s}  <- that's the NMR console login, the sticky note fell off again",
        f"| room | instrument | login |\n|---|---|---|\n| B214 | Bruker 600 MHz | nmrsu / {s} |\n| B220 | FACS Aria | ask the core |",
    )


def _vpn_psk(r: random.Random) -> tuple[str, str]:
    s, u = _w(r, 24, ALNUM), _user(r)
    return s, _p(
        r,
        f"Field station VPN (IPsec, FortiClient): gateway vpn.fieldstation.example.org, pre-shared key {s}",
        f'vpn.conf\n[Tunnel]\nremote = 203.0.113.7\npsk = "{s}"\nuser = {u}',
        f"For the remote sequencer: L2TP, server 198.51.100.20, secret {s}, then your own login.",
    )


def _slurmdbd(r: random.Random) -> tuple[str, str]:
    s = _w(r, 16, ALNUM)
    return s, _p(
        r,
        f"# /etc/slurm/slurmdbd.conf on head01\nDbdHost=head01\nStorageType=accounting_storage/mysql\nStorageUser=slurm\nStoragePass={s}\nStorageLoc=slurm_acct_db",
        f"slurm accounting DB: mysql user slurm, pass {s} (same as StoragePass in slurmdbd.conf)",
    )


def _wandb(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, HEX)
    return s, _p(
        r,
        f"#!/bin/bash\n#SBATCH --job-name=sweep\n#SBATCH --gres=gpu:a100:2\n#SBATCH --time=48:00:00\nexport WANDB_API_KEY={s}\nsrun python train.py --config cfg/base.yaml",
        f"wandb login {s}",
        f"tool output (ssh gpu03 cat ~/.netrc):\nmachine api.wandb.ai\n  login user\n  password {s}",
    )


def _hf_token(r: random.Random) -> tuple[str, str]:
    s = "hf_" + _w(r, 34, ALNUM)
    return s, _p(
        r,
        f"huggingface-cli login --token {s}",
        f"HF token with write access to the lab org (for pushing checkpoints): {s}",
        f"`HF_TOKEN={s} python push.py`",
    )


def _overleaf(r: random.Random) -> tuple[str, str]:
    s = _w(r, 10, DIG) + _w(r, 12, LOW)
    return s, _p(
        r,
        f"Overleaf EDIT link for the R01 draft (anyone holding it can edit): https://www.overleaf.com/{s}",
        f"Co-authors edit here -> https://www.overleaf.com/{s} (the read-only link is fine to share, this one isn't)",
    )


def _zotero(r: random.Random) -> tuple[str, str]:
    s, lib = _w(r, 24, ALNUM), r.randint(2000000, 5999999)
    return s, _p(
        r,
        f"Zotero API key for group library {lib}: {s} (read/write)",
        f"zotero:\n  library_type: group\n  library_id: {lib}\n  api_key: {s}",
    )


def _aws_secret(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, ALNUM + "/+")
    kid = "AKIA" + _w(r, 16, UPNUM)
    return s, _p(
        r,
        f"[lab-s3]\naws_access_key_id = {kid}\naws_secret_access_key = {s}\nregion = us-east-2",
        f"S3 creds for the imaging archive: key id {kid}, secret {s}",
    )


def _irods(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 12)
    return s, _p(
        r,
        f"iinit for the sequencing core's iRODS zone asks for the password; it's {s}",
        f"irods_environment.json is fine to share, the password is not: {s}",
    )


def _mrn_health(r: random.Random) -> tuple[str, str]:
    s, n = _w(r, 8, DIG), _en_name(r)
    return s, _p(
        r,
        f"{n} (postdoc) had the seizure in the lab on Tuesday; campus health MRN {s}, neurology follow-up on the 14th.",
        f"Sick-leave form for {n}: type 1 diabetes, medical record no. {s}. Keep this out of the lab calendar.",
    )


def _github_pat(r: random.Random) -> tuple[str, str]:
    s = "ghp_" + _w(r, 36, ALNUM)
    return s, _p(
        r,
        f"git remote set-url origin https://{s}@github.com/lab-org/pipeline.git",
        f"PAT for the lab org bot (repo + workflow scopes): {s}",
    )


def _slack_webhook(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24, ALNUM)
    url = f"https://hooks.slack.com/services/T{_w(r, 8, UPNUM)}/B{_w(r, 10, UPNUM)}/{s}"
    return s, _p(
        r,
        f"Slurm end-of-job notifier posts to {url}",
        f'SLACK_WEBHOOK="{url}"',
    )


# ================================================================ 2. accounting / legal office, English


def _ssn(r: random.Random) -> tuple[str, str]:
    a = r.choice((r.randint(1, 665), r.randint(667, 899)))
    s = f"{a:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"
    n, n2 = _en_name(r), _en_name(r)
    return s, _p(
        r,
        f"Client intake: {n}, SSN {s}, filing jointly with {n2}.",
        f"W-9 came back from {n}: TIN (SSN) {s}",
        f"{n} (client since 2019)\n  ssn: {s}\n  spouse: {n2}",
    )


def _iban(r: random.Random) -> tuple[str, str]:
    ib = _iban_de(r)
    s = _p(r, ib, _groups(ib))
    return s, _p(
        r,
        f"Refund goes to the client's German account, IBAN {s} (Sparkasse Köln-Bonn).",
        f"Fwd from {_en_name(r)}: wire details — IBAN: {s}, BIC COLSDE33",
    )


def _card_en(r: random.Random) -> tuple[str, str]:
    raw = _card(r, r.choice(("4", "51", "52", "53", "54", "55")), 16)
    s = _p(r, raw, _groups(raw), _groups(raw, sep="-"))
    n = _en_name(r)
    return s, _p(
        r,
        f"Retainer card on file for {n}: {s}, exp {r.randint(1, 12):02d}/{r.randint(27, 31)}, CVC on the paper form.",
        f"Chat, client: you can just charge my card {s} for the filing fee",
        f"{s}\n^ {n}'s Amex? no, Visa. for the court fees",
    )


def _quickbooks(r: random.Random) -> tuple[str, str]:
    s = _human_pw(r)
    return s, _p(
        r,
        f"QuickBooks Online for Harbor Dental (client): login books@harbordental.example, password {s}",
        f"Voice memo, transcribed: okay so for the Thompson bakery books the Xero login is the usual email and the password is {s} capital first letter",
    )


def _ip_pin(r: random.Random) -> tuple[str, str]:
    s, n = str(r.randint(100000, 999999)), _en_name(r)
    return s, _p(
        r,
        f"{n}'s IRS Identity Protection PIN for this season: {s} (changes every January)",
        f"IP PIN {s} ({n}), needed before we can e-file",
    )


def _passport_en(r: random.Random) -> tuple[str, str]:
    s = _p(r, r.choice(UP) + _w(r, 8, DIG), _w(r, 9, DIG), r.choice(UP) + r.choice(UP) + _w(r, 7, DIG))
    n = _en_name(r)
    return s, _p(
        r,
        f"{n}'s passport no. {s}, expires 2031-05, for the conference visa letter",
        f"Travel booking, Kyoto workshop\n  traveller: {n}\n  passport: {s}\n  nationality: Canada",
    )


_STREETS = ("Maple", "Hawthorne", "Linden", "Cedar Ridge", "Willow", "Beacon", "Orchard", "Ashford", "Kingsley")


def _address_en(r: random.Random) -> tuple[str, str]:
    city, st, z = r.choice(
        (
            ("Madison", "WI", "537"),
            ("Ann Arbor", "MI", "481"),
            ("Berkeley", "CA", "947"),
            ("Ithaca", "NY", "148"),
            ("Durham", "NC", "277"),
        )
    )
    s = f"{r.randint(12, 9800)} {r.choice(_STREETS)} {r.choice(('St', 'Ave', 'Rd', 'Ln'))}, Apt {r.randint(1, 40)}{r.choice('ABC')}, {city}, {st} {z}{_w(r, 2, DIG)}"
    n = _en_name(r)
    return s, _p(
        r,
        f"Send the signed engagement letter to {n}'s home: {s}",
        f"{n} moved; new home address {s}",
        f"ship the dev kit to\n{n}\n{s}",
    )


def _phone_us(r: random.Random) -> tuple[str, str]:
    a, b, c = r.randint(201, 989), r.randint(200, 999), r.randint(0, 9999)
    s = _p(r, f"({a}) {b}-{c:04d}", f"+1 {a}-{b}-{c:04d}", f"{a}.{b}.{c:04d}", f"+1{a}{b}{c:04d}")
    n = _en_name(r)
    return s, _p(r, f"{n}'s cell: {s}", f"call {n} at {s} after 6pm, not the office line")


def _phone_uk(r: random.Random) -> tuple[str, str]:
    d = "7" + _w(r, 9, DIG)
    s = _p(r, f"+44 {d[:4]} {d[4:]}", f"0{d[:4]} {d[4:]}", f"+44{d}", f"+44 (0){d[:4]} {d[4:7]} {d[7:]}")
    n = _en_name(r)
    return s, _p(r, f"UK collaborator {n}, mobile {s}", f"{n}: {s} (WhatsApp only)")


def _phone_jp_de(r: random.Random) -> tuple[str, str]:
    s = _p(
        r,
        f"090-{_w(r, 4, DIG)}-{_w(r, 4, DIG)}",
        f"+81 80 {_w(r, 4, DIG)} {_w(r, 4, DIG)}",
        f"+49 151 {_w(r, 8, DIG)}",
        f"0176 {_w(r, 4, DIG)} {_w(r, 4, DIG)}",
    )
    n = _en_name(r)
    return s, _p(r, f"{n}'s private number while on sabbatical: {s}", f"Reach {n} on {s} during the visit")


def _email_personal(r: random.Random) -> tuple[str, str]:
    first, last = r.choice(_FIRST).lower(), r.choice(_LAST).lower()
    user = f"{first}.{last}{_w(r, 2, DIG)}"
    dom = r.choice(("gmail", "protonmail", "outlook", "fastmail"))
    s = _p(r, f"{user} at {dom} dot com", f"{user}[at]{dom}[dot]com", f"{user}@{dom}.com", f"{user} (at) {dom}.com")
    return s, _p(
        r,
        f"{first.capitalize()}'s private address (not the uni one): {s}",
        f"Cc: {s}\nSubject: Re: custody hearing dates",
    )


def _forwarded_email(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 12)
    e = r.choice(_FIRST).lower() + "@univ-example.edu"
    return s, (
        "---------- Forwarded message ---------\nFrom: IT Service Desk <servicedesk@univ-example.edu>\n"
        f"Date: Mon, 3 Nov 2026 09:14\nSubject: Your temporary password\nTo: <{e}>\n\nHello,\n\n"
        + _p(r, f"your temporary password is: {s}\n", f"use {s} at first login, then change it.\n")
        + "Please change it within 24 hours.\n"
    )


def _wrapped_key_email(r: random.Random) -> tuple[str, str]:
    a, b = _w(r, 38, B64URL), _w(r, 26, B64URL)
    s = f"{a}\n{b}"
    return s, _p(
        r,
        f"> Here is the API key for the grant portal, it is long so my mail client wrapped it:\n> \n{a}\n{b}\n> \n> Best, Grants Office",
        f"From the vendor's mail (the line break is not part of it):\n\n{a}\n{b}\n\nRegards",
    )


# ================================================================ 3. game / app developer, English


def _asc_p8(r: random.Random) -> tuple[str, str]:
    kid = _w(r, 10, UPNUM)
    lines = [
        "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg" + _w(r, 16, B64),
        _w(r, 64, B64),
        _w(r, 52, B64) + "Ab==",
    ]
    style = r.randrange(3)
    sep = "\\n" if style == 2 else "\n"
    s = sep.join(lines)
    pem = f"-----BEGIN PRIVATE KEY-----{sep}{s}{sep}-----END PRIVATE KEY-----"
    if style == 0:
        return s, f"App Store Connect API key (Key ID {kid}, Admin role), AuthKey_{kid}.p8:\n```\n{pem}\n```"
    if style == 1:
        return s, f"$ cat ~/private_keys/AuthKey_{kid}.p8\n{pem}\n$ "
    return s, '{"key_id": "' + kid + '", "issuer_id": "' + _uuid(r) + '", "key": "' + pem + '", "in_house": false}'


def _play_json(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64, B64)
    proj = f"tiny-dungeon-{_w(r, 6, DIG)}"
    pk = (
        "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ"
        + _w(r, 14, B64)
        + "\\n"
        + s
        + "\\n"
        + _w(r, 64, B64)
        + "\\n-----END PRIVATE KEY-----\\n"
    )
    js = (
        '{\n  "type": "service_account",\n  "project_id": "'
        + proj
        + '",\n  "private_key_id": "'
        + _w(r, 40, HEX)
        + '",\n  "private_key": "'
        + pk
        + '",\n  "client_email": "play-publisher@'
        + proj
        + '.iam.gserviceaccount.com"\n}'
    )
    return s, _p(
        r,
        "Google Play publisher service account (play-console.json), used by fastlane supply:\n" + js,
        "pasted into the chat by mistake:\n```json\n" + js + "\n```",
    )


def _steam_key(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, "0123456789ABCDEF")
    return s, _p(
        r,
        f"Steamworks Web API publisher key (group 'Tiny Dungeon Devs'): {s}",
        f"curl 'https://partner.steam-api.com/ISteamUser/CheckAppOwnership/v2/?key={s}&steamid=76561198{_w(r, 9, DIG)}&appid={r.randint(1000000, 3200000)}'",
    )


def _unity_serial(r: random.Random) -> tuple[str, str]:
    s = r.choice(("E3", "SC", "U3", "F4")) + "-" + "-".join(_w(r, 4, UPNUM) for _ in range(5))
    return s, _p(
        r,
        f"Unity Pro seat serial: {s} (activated on the studio iMac, return the seat before reinstalling)",
        f"/Applications/Unity/Hub/Editor/2022.3.21f1/Unity.app/Contents/MacOS/Unity -batchmode -serial {s} -username builds@studio.example -quit",
    )


def _eos_secret(r: random.Random) -> tuple[str, str]:
    s = _w(r, 43, B64URL)
    cid = "xyza7891" + _w(r, 24, ALNUM)
    return s, _p(
        r,
        f"EOS client (Dev Portal > Product Settings > Clients):\n  ClientId: {cid}\n  ClientSecret: {s}",
        f'; Config/DefaultEngine.ini\n[/Script/OnlineSubsystemEOS.EOSSettings]\n+Artifacts=(ArtifactName="TinyDungeon",ClientId="{cid}",ClientSecret="{s}",ProductId="{_w(r, 32, HEX)}")',
    )


def _gradle_keystore(r: random.Random) -> tuple[str, str]:
    s = _p(r, _human_pw(r), _strong_pw(r, 16))
    return s, _p(
        r,
        f"# gradle.properties (NOT in git)\nandroid.useAndroidX=true\nRELEASE_STORE_FILE=../keys/release.jks\nRELEASE_STORE_PASSWORD={s}\nRELEASE_KEY_ALIAS=upload\nRELEASE_KEY_PASSWORD={s}",
        f"keytool -list -v -keystore upload.jks -storepass {s}",
        f"signingConfigs {{ release {{ storeFile file('upload.jks'); storePassword '{s}'; keyAlias 'upload'; keyPassword '{s}' }} }}",
    )


def _fcm_server_key(r: random.Random) -> tuple[str, str]:
    s = "AAAA" + _w(r, 7, B64URL) + ":APA91b" + _w(r, 134, B64URL)
    return s, _p(
        r,
        f"FCM legacy server key (Cloud Messaging tab): {s}",
        f"curl -X POST -H 'Authorization: key={s}' -H 'Content-Type: application/json' https://fcm.googleapis.com/fcm/send -d @push.json",
    )


def _google_server_key(r: random.Random) -> tuple[str, str]:
    s = "AIza" + _w(r, 35, B64URL)
    return s, _p(
        r,
        f"Places API key for the leaderboard server (unrestricted, rotate it!): {s}",
        f"GOOGLE_MAPS_SERVER_KEY={s}",
    )


def _signtool(r: random.Random) -> tuple[str, str]:
    s = _w(r, 10, ALNUM) + r.choice("!#$%")
    return s, _p(
        r,
        f'signtool sign /f codesign-2026.pfx /p "{s}" /fd SHA256 /tr http://timestamp.digicert.com /td SHA256 Build\\TinyDungeon.exe',
        f"The Sectigo code-signing cert (.pfx) password is {s}; the USB token PIN is a different thing.",
    )


def _testflight(r: random.Random) -> tuple[str, str]:
    s = _w(r, 8, ALNUM)
    return s, _p(
        r,
        f"Closed beta, don't post publicly: https://testflight.apple.com/join/{s}",
        f"TestFlight invite for the Discord mods only -> testflight.apple.com/join/{s}",
    )


def _sentry(r: random.Random) -> tuple[str, str]:
    s, org, proj = _w(r, 32, HEX), r.randint(100000, 999999), r.randint(1000000, 9999999)
    pub = _w(r, 32, HEX)
    return s, _p(
        r,
        f"SENTRY_DSN=https://{pub}:{s}@sentry.studio.example/{proj}",
        f"Sentry.init({{ dsn: 'https://{s}@o{org}.ingest.us.sentry.io/{proj}' }});",
        f"raven config (old self-hosted): public key {pub}, secret key {s}, project {proj}",
    )


def _app_specific(r: random.Random) -> tuple[str, str]:
    s = "-".join(_w(r, 4, LOW) for _ in range(4))
    return s, _p(
        r,
        f"xcrun altool --upload-app -f TinyDungeon.ipa -u dev@studio.example -p {s}",
        f"Apple ID app-specific password for Transporter: {s}",
    )


def _match_password(r: random.Random) -> tuple[str, str]:
    s = _w(r, 20, ALNUM)
    return s, _p(
        r,
        f"fastlane match passphrase (decrypts the certs repo): MATCH_PASSWORD={s}",
        f"# fastlane/.env.default\nMATCH_GIT_URL=git@github.com:studio/certs.git\nMATCH_PASSWORD={s}\nFASTLANE_USER=dev@studio.example",
    )


def _discord_bot(r: random.Random) -> tuple[str, str]:
    s = "MT" + _w(r, 24, ALNUM) + "." + _w(r, 6, B64URL) + "." + _w(r, 38, B64URL)
    return s, _p(r, f"Bot token for the community server's build-notify bot: {s}", f'DISCORD_BOT_TOKEN="{s}"')


def _butler(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, ALNUM)
    return s, _p(
        r,
        f"BUTLER_API_KEY={s} butler push build/win studio/tiny-dungeon:windows",
        f"itch.io API key (butler login): {s}",
    )


def _playfab(r: random.Random) -> tuple[str, str]:
    s, tid = _w(r, 52, UPNUM), _w(r, 5, "0123456789ABCDEF")
    return s, _p(
        r,
        f"PlayFab title {tid} developer secret key: {s}",
        f"curl -H 'X-SecretKey: {s}' https://{tid}.playfabapi.com/Admin/GetTitleData",
    )


def _revenuecat(r: random.Random) -> tuple[str, str]:
    s = "sk_" + _w(r, 32, ALNUM)
    return s, _p(r, f"RevenueCat secret API key (server only, v1): {s}", f"REVENUECAT_SECRET={s}")


def _invented_a(r: random.Random) -> tuple[str, str]:
    s = r.choice(("gmz_live_", "qrk1_", "nbx-prod-", "lumo_sk_", "vtx_srv_")) + _w(r, 36, ALNUM)
    return s, _p(
        r,
        f"analytics ingest credential: {s}",
        '{"ingest": {"endpoint": "https://in.gamezoo.example/v2", "credential": "' + s + '"}}',
        f"got the leaderboard service working with {s} finally",
    )


def _invented_b(r: random.Random) -> tuple[str, str]:
    s = _w(r, 3, LOW) + _w(r, 1, DIG) + r.choice(".:~") + _w(r, 40, B64URL)
    return s, _p(
        r,
        f"new matchmaking relay key {s}",
        f"relay:\n  region: ap-east\n  key: {s}",
        f"-> {s}",
    )


def _bare_entropy_en(r: random.Random) -> tuple[str, str]:
    s = _w(r, r.randint(40, 64), ALNUM)
    return s, _p(r, s, f"{s}\n", f"> {s}", f"({s})", f"    {s}\n\n")


def _low_entropy_en(r: random.Random) -> tuple[str, str]:
    s = _p(
        r,
        r.choice(_PW_WORDS) + str(r.randint(10, 99)),
        "letmein" + _w(r, 3, DIG),
        "Summer" + str(r.randint(2015, 2026)),
    )
    return s, _p(
        r,
        f"the old Mac in the microscopy room still opens with {s}, same as the printer",
        f"Dana logs into the plate reader PC as 'lab' with {s}; she says everyone knows it",
        f"sign in: lab / {s}",
    )


def _voice_en(r: random.Random) -> tuple[str, str]:
    s = _human_pw(r)
    return s, _p(
        r,
        f"[voice memo, auto-transcribed] okay note for later um the Bruker login is nmr admin and the uh the pass word is {s} no spaces okay thanks",
        f"Transcript 00:01:12 Speaker 1: so it's {s}, capital first letter. Speaker 2: got it, I'll put it in the sheet.",
    )


def _url_userinfo(r: random.Random) -> tuple[str, str]:
    s, u = _w(r, 14, ALNUM), _user(r)
    return s, _p(
        r,
        f"git clone https://ci-bot:{s}@gitlab.lab.univ-example.edu/imaging/pipeline.git",
        f"svn co https://{u}:{s}@svn.physics.univ-example.edu/repos/thesis",
        f"DATABASE_URL=postgres://labdb:{s}@db.internal.univ-example.edu:5432/samples",
    )


def _percent_encoded(r: random.Random) -> tuple[str, str]:
    raw = _w(r, 6, ALNUM) + r.choice("@#!$") + _w(r, 5, ALNUM) + r.choice("@#!$&/")
    s = urllib.parse.quote(raw, safe="")
    u = _user(r)
    return s, _p(
        r,
        f"mongodb://analysis:{s}@mongo01.lab.univ-example.edu:27017/?authSource=admin",
        f"https://grants.univ-example.edu/login?user={u}&pass={s}&remember=1",
    )


def _query_token(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, ALNUM)
    return s, _p(
        r,
        f"ELN export: https://eln.univ-example.edu/api/v1/notebooks/42/export?format=pdf&access_token={s}",
        f"GET /v2/builds?status=failed&api_key={s} HTTP/1.1",
    )


def _tool_output(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 18)
    return s, _p(
        r,
        'tool_call vault_kv_get(path="lab/nas") -> {"data": {"username": "labadmin", "password": "'
        + s
        + '"}, "lease_duration": 0}',
        f"[tool: read_file ~/.pgpass]\ndb.lab.univ-example.edu:5432:*:labadmin:{s}",
    )


def _log_bearer(r: random.Random) -> tuple[str, str]:
    s = _w(r, 48, B64URL)
    return s, _p(
        r,
        f"2026-11-03T09:12:44Z DEBUG httpx request: POST https://api.labgrants.example/v2/upload headers={{'Authorization': 'Bearer {s}'}}",
        f"[2026-11-03 09:12:44,118] WARNING retrying with token={s} (attempt 2/5)",
    )


def _jwt(r: random.Random) -> tuple[str, str]:
    s = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + _w(r, 72, B64URL) + "." + _w(r, 43, B64URL)
    return s, _p(r, f"session cookie from the grant portal: {s}", f"Authorization: Bearer {s}")


def _plist(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, ALNUM)
    return s, (
        "<key>CFBundleShortVersionString</key>\n<string>1.4.2</string>\n"
        + _p(r, "<key>TDAnalyticsSecret</key>", "<key>ServerSharedSecret</key>", "<key>GCSecret</key>")
        + f"\n<string>{s}</string>"
    )


def _xml_password(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 15)
    return s, _p(
        r,
        f"<server>\n  <id>lab-nexus</id>\n  <username>deploy</username>\n  <password>{s}</password>\n</server>",
        f'<string name="server_client_secret" translatable="false">{s}</string>',
    )


def _yaml_secret(r: random.Random) -> tuple[str, str]:
    s = _w(r, 28, ALNUM)
    return s, _p(
        r,
        f"# docker-compose.yml for the LIMS\nservices:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: {s}",
        f"appcenter:\n  owner: tiny-studio\n  app: TinyDungeon-iOS\n  api_token: {s}",
    )


def _shell_history(r: random.Random) -> tuple[str, str]:
    s = _human_pw(r)
    return s, _p(
        r,
        f"   87  cd /srv/lims\n   88  mysql -h 10.2.0.14 -u root -p{s} lims\n   89  exit",
        f"mysqldump -u backup --password={s} --all-databases > /backup/lims.sql",
    )


def _value_far_en(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 13)
    return s, (
        "Plate reader PC password (see bottom)\n\n- calibrate monthly\n- export as .xlsx, not .csv\n"
        "- Prof. Weber wants raw data on the share by Friday\n- the USB port on the left is broken\n\n" + s
    )


# ================================================================ Chinese kinds


def _tongyi_zh(r: random.Random) -> tuple[str, str]:
    s, sid, n = _human_pw(r), _w(r, 8, DIG), _zh_name(r)
    return s, _p(
        r,
        f"学校统一身份认证：工号 {sid}，密码 {s}（邮箱、VPN、财务系统都用这个）",
        f"帮{n}老师登统一身份认证，账号是工号，密码「{s}」",
        f"统一认证\n账号：{sid}\n密码：{s}",
    )


def _campus_card_zh(r: random.Random) -> tuple[str, str]:
    s, n = str(r.randint(100000, 999999)), _zh_name(r)
    return s, _p(r, f"校园卡消费密码{s}，食堂大额消费要输", f"{n}的校园卡丢了，挂失要查询密码：{s}")


def _cnki_zh(r: random.Random) -> tuple[str, str]:
    s, u = _human_pw(r), _user(r)
    return s, _p(
        r,
        f"知网个人账号（校外用）：{u} / {s}",
        f"在家下论文用知网的个人账号，用户名{u}，密码是{s}，别和学生说",
    )


def _wanfang_zh(r: random.Random) -> tuple[str, str]:
    s, u = _strong_pw(r, 11), _user(r)
    return s, _p(r, f"万方数据 机构账号 {u}，密码：{s}（图书馆给的，只能课题组用）", f"万方：账号{u}，口令{s}")


def _nsfc_zh(r: random.Random) -> tuple[str, str]:
    s = _human_pw(r)
    return s, _p(
        r,
        f"科学基金网络信息系统依托单位管理员密码：{s}，申请书提交截止前别改",
        f"国自然申请人账号 {r.choice(_PINYIN)}@univ.edu.cn 密码 {s}",
    )


def _exmail_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 16, LOW)
    return s, _p(
        r,
        f"学校邮箱（腾讯企业邮）绑定 Outlook 需要客户端专用密码：{s}",
        f"Foxmail 里填的不是登录密码，是专用密码 {s}",
    )


def _eduroam_zh(r: random.Random) -> tuple[str, str]:
    s, sid = _human_pw(r), _w(r, 8, DIG)
    return s, _p(r, f"eduroam 账号 {sid}@univ.edu.cn，密码{s}", f"出差连 eduroam：用户名是学号加后缀，密码 {s}")


def _door_zh(r: random.Random) -> tuple[str, str]:
    s = str(r.randint(1000, 999999))
    return s, _p(r, f"实验室门禁密码 {s}#，周末进楼要先刷卡再按", f"B214 的密码锁：{s}")


def _student_grade_zh(r: random.Random) -> tuple[str, str]:
    s, n = f"{r.randint(2021, 2025)}{_w(r, 6, DIG)}", _zh_name(r)
    g1, g2 = r.randint(30, 99), r.randint(30, 99)
    return s, _p(
        r,
        f"| 姓名 | 学号 | 期末 | 总评 |\n|---|---|---|---|\n| {n} | {s} | {g1} | {g2} |",
        f"{n}（学号{s}）期末{g1}分，挂了，要不要给补考机会",
        f"成绩录入：{s} {n} 平时{g1} 期末{g2}",
    )


def _student_id_card_zh(r: random.Random) -> tuple[str, str]:
    s, n = _cn_id(r), _zh_name(r)
    return s, _p(
        r,
        f"{n}的身份证号：{s}，报销差旅费要用",
        f"劳务费发放表\n姓名：{n}\n身份证号：{s}\n银行卡：见附件",
        f"{n} {s} 工商银行",
    )


def _student_phone_zh(r: random.Random) -> tuple[str, str]:
    m, n = _cn_mobile(r), _zh_name(r)
    s = _p(r, m, f"{m[:3]} {m[3:7]} {m[7:]}", f"+86 {m[:3]}-{m[3:7]}-{m[7:]}", f"+86{m}", f"{m[:3]}-{m[3:7]}-{m[7:]}")
    return s, _p(r, f"{n}手机{s}，有事直接打", f"新来的硕士生{n}，电话 {s}，微信同号")


def _easyconnect_zh(r: random.Random) -> tuple[str, str]:
    s, u = _human_pw(r), _user(r)
    return s, _p(r, f"校外访问要先开 EasyConnect（深信服），用户{u}，密码{s}", f"VPN 账号：{u}\nVPN 密码：{s}")


def _supercomputer_zh(r: random.Random) -> tuple[str, str]:
    s, u = _strong_pw(r, 12), _user(r)
    return s, _p(
        r,
        f"国家超算中心的账号 {u}，登录密码 {s}，动态口令在手机上",
        f"超算跳板：ssh -p 65022 {u}@th-hpc.example.cn，密码{s}",
    )


def _instrument_zh(r: random.Random) -> tuple[str, str]:
    s = _p(r, "Agilent" + _w(r, 4, DIG), "hplc@" + _w(r, 3, DIG), "Waters#" + _w(r, 4, DIG), _human_pw(r))
    return s, _p(r, f"液相色谱那台电脑（Win7）开机密码：{s}，不要联网", f"{s} ← 质谱工作站管理员密码，贴纸掉了记在这")


def _submission_zh(r: random.Random) -> tuple[str, str]:
    s, u = _human_pw(r), _user(r)
    return s, _p(
        r,
        f"《中国科学》投稿系统 账号 {u}@univ.edu.cn 密码 {s}",
        f"审稿系统（腾云采编）登录：{u}，密码：{s}；我是二审，别让作者知道",
    )


def _health_zh(r: random.Random) -> tuple[str, str]:
    s, n = _w(r, 10, DIG), _zh_name(r)
    return s, _p(
        r,
        f"{n}（博士生）住院了，抑郁症复发，病案号{s}，这学期组会别点她",
        f"{n}的体检报告：乙肝表面抗原阳性，门诊号 {s}，只告诉了我",
    )


_COMPANY_A = ("杭州", "深圳", "成都", "苏州", "武汉", "北京", "上海")
_COMPANY_B = ("云启", "晨光", "拾光", "青禾", "远山", "鼎信", "佳和", "星野")
_COMPANY_C = ("餐饮管理", "科技", "文化传媒", "商贸", "建材", "口腔门诊")


def _company(r: random.Random) -> str:
    return r.choice(_COMPANY_A) + r.choice(_COMPANY_B) + r.choice(_COMPANY_C) + "有限公司"


def _uscc_zh(r: random.Random) -> tuple[str, str]:
    s, c = _uscc(r), _company(r)
    return s, _p(
        r,
        f"客户{c}，统一社会信用代码{s}，小规模纳税人",
        f"开票信息\n名称：{c}\n税号：{s}\n开户行：招商银行",
        f"{s}（{c}的税号，开专票用）",
    )


def _client_id_table_zh(r: random.Random) -> tuple[str, str]:
    s, n = _cn_id(r), _zh_name(r)
    case = f"（{r.randint(2022, 2026)}）沪0115民初{r.randint(1000, 99999)}号"
    return s, _p(
        r,
        f"| 当事人 | 证件号 | 案号 |\n|---|---|---|\n| {n} | {s} | {case} |",
        f"个税代扣：纳税人识别号（即身份证）{s}，{n}",
    )


def _receipt_account_zh(r: random.Random) -> tuple[str, str]:
    s = _card(r, r.choice(("6222", "6217", "6228", "6214")), 19)
    return s, _p(
        r,
        f"工行电子回单：付款人账号 {s}，收款人 代理记账中心，金额 ¥12,800.00",
        f"回单上看到客户的账户 {s}，备注写了“代理记账费”",
    )


def _social_card_zh(r: random.Random) -> tuple[str, str]:
    s, n = r.choice(UP) + _w(r, 8, DIG), _zh_name(r)
    return s, _p(r, f"{n}的社保卡卡号{s}，补缴要用", f"社保\n姓名：{n}\n社保卡号：{s}")


def _tax_app_zh(r: random.Random) -> tuple[str, str]:
    s, n = _human_pw(r), _zh_name(r)
    return s, _p(
        r,
        f"帮{n}办个税汇算，个人所得税 App 登录密码 {s}（她授权的）",
        f"个税APP：手机号登录，密码{s}",
    )


def _seal_pin_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, r.choice((6, 8)), DIG)
    return s, _p(r, f"电子签章 Ukey 的 PIN 码是 {s}，合同盖章时输入", f"所里的电子公章 PIN：{s}，只有主任和我知道")


def _ushield_zh(r: random.Random) -> tuple[str, str]:
    s = _p(r, _strong_pw(r, 10), _human_pw(r))
    return s, _p(r, f"工行网银 U盾 密码：{s}", f"对公网银：操作员 001，U盾口令 {s}，复核员是李姐")


def _housing_fund_zh(r: random.Random) -> tuple[str, str]:
    s, n = _w(r, 12, DIG), _zh_name(r)
    return s, _p(r, f"{n}的公积金个人账号 {s}，提取要用", f"住房公积金\n个人账号：{s}\n缴存比例：12%")


def _client_name_zh(r: random.Random) -> tuple[str, str]:
    s = _zh_name(r)
    case = f"（{r.randint(2022, 2026)}）京0105民初{r.randint(1000, 99999)}号"
    return s, _p(
        r,
        f"案号{case}可以写进周报；当事人{s}的名字别出现",
        f"{case}，原告{s}，代理费已结清",
        f"今天见了{s}，离婚案，{case}",
    )


def _etax_zh(r: random.Random) -> tuple[str, str]:
    s = _human_pw(r)
    return s, _p(
        r,
        f"电子税务局（{r.choice(('浙江', '广东', '四川'))}）：办税员实名登录，密码{s}",
        f"税务局网站 登录密码 {s}（法人授权给我们了）",
    )


def _kingdee_zh(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 11)
    return s, _p(r, f"金蝶云星空 账号 admin，密码 {s}，账套是{_company(r)}", f"用友畅捷通 T+：manager/{s}")


_ZH_CITY = (
    ("北京市", "海淀区"),
    ("上海市", "浦东新区"),
    ("广州市", "天河区"),
    ("杭州市", "西湖区"),
    ("成都市", "武侯区"),
)
_ZH_ROAD = ("学院路", "文三路", "天府大道", "中山路", "科苑路", "长寿路")
_ZH_ESTATE = ("阳光花园", "锦绣家园", "翠湖苑", "金桂园", "和平里")


def _address_zh(r: random.Random) -> tuple[str, str]:
    city, dist = r.choice(_ZH_CITY)
    s = (
        f"{city}{dist}{r.choice(_ZH_ROAD)}{r.randint(1, 999)}号{r.choice(_ZH_ESTATE)}"
        f"{r.randint(1, 30)}栋{r.randint(1, 6)}单元{r.randint(1, 33)}{r.randint(1, 4):02d}室"
    )
    n = _zh_name(r)
    return s, _p(r, f"{n}家住{s}，材料寄这里", f"寄件信息：收件人{n}，地址：{s}", f"{s}（{n}老家）")


def _passport_zh(r: random.Random) -> tuple[str, str]:
    s, n = _p(r, "E" + _w(r, 8, DIG), "E" + r.choice("ABCDE") + _w(r, 7, DIG)), _zh_name(r)
    return s, _p(r, f"{n}护照号{s}，办签证邀请函要写", f"出国审批表\n姓名：{n}\n护照号码：{s}")


def _hk_pass_zh(r: random.Random) -> tuple[str, str]:
    s, n = "C" + _w(r, 8, UPNUM), _zh_name(r)
    return s, _p(r, f"{n}的港澳通行证：{s}，去香港开会订票用", f"港澳通行证 {s}（{n}）")


def _bank_card_zh(r: random.Random) -> tuple[str, str]:
    raw = _card(r, r.choice(("622202", "621700", "622848", "623052", "621483")), 19)
    s = _p(r, raw, _groups(raw))
    n = _zh_name(r)
    return s, _p(r, f"劳务费打到{n}的卡：{s}（建设银行）", f"卡号：{s}\n开户行：招商银行深圳分行\n户名：{n}")


def _email_zh(r: random.Random) -> tuple[str, str]:
    p = r.choice(_PINYIN) + _w(r, 3, DIG)
    s = _p(r, f"{p}（at）qq.com", f"{p}#163.com", f"{_w(r, 9, DIG)}@qq.com", f"{p} at 126 点 com")
    n = _zh_name(r)
    return s, _p(r, f"{n}的私人邮箱：{s}（#换成@）", f"给{n}发材料用这个邮箱 {s}，别用单位的")


def _pangle_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, HEX)
    return s, _p(
        r,
        f"穿山甲（Pangle）App Secret：{s}，服务端验证激励视频回调用",
        f"csj:\n  app_id: 5{_w(r, 6, DIG)}\n  secret: {s}",
    )


def _umeng_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, LOWNUM)
    return s, _p(
        r,
        f"友盟推送 AppKey 是 {_w(r, 24, HEX)}（可以写进客户端），App Master Secret 是 {s}（只放服务端）",
        f"友盟 master secret：{s}",
    )


def _wxmini_zh(r: random.Random) -> tuple[str, str]:
    s, appid = _w(r, 32, HEX), "wx" + _w(r, 16, HEX)
    return s, _p(
        r,
        f"小程序 AppID {appid}，AppSecret {s}，换 access_token 用",
        f"curl 'https://api.weixin.qq.com/cgi-bin/token?grant_type=client_credential&appid={appid}&secret={s}'",
        f"微信后台截图：开发者ID(AppID) {appid}；开发者密码(AppSecret) {s}（重置过一次）",
    )


def _alipay_key_zh(r: random.Random) -> tuple[str, str]:
    s = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + _w(r, 250, B64)
    return s, _p(
        r,
        f"支付宝开放平台 应用私钥（RSA2，密钥工具生成的一整行）：\n{s}",
        f"alipay.app-private-key={s}\nalipay.app-id=2021{_w(r, 12, DIG)}",
        f"`{s}` ← 这个是应用私钥，公钥已经传到开放平台了",
    )


def _keystore_chat_zh(r: random.Random) -> tuple[str, str]:
    s = _p(r, _human_pw(r), _strong_pw(r, 12))
    return s, _p(
        r,
        f"我：release 的 keystore 密码是多少来着\n小周：{s}，key 的密码一样\n我：好",
        f"[群聊] 阿杰: jks 密码 {s}\n[群聊] 我: 收到，别发群里啊",
    )


def _p12_zh(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 10)
    return s, _p(r, f"iOS 发布证书导出的 p12，密码设成了 {s}", f"证书.p12 密码：{s}（钥匙串导出时设的）")


def _apple_specific_zh(r: random.Random) -> tuple[str, str]:
    s = "-".join(_w(r, 4, LOW) for _ in range(4))
    return s, _p(r, f"Apple ID 的 App 专用密码：{s}，Transporter 上传用", f"专用密码 {s} 只给 CI 用，别登录网页")


def _steam_admin_zh(r: random.Random) -> tuple[str, str]:
    s, u = _human_pw(r), _user(r)
    return s, _p(r, f"Steamworks 后台账号 {u}，密码 {s}，手机令牌在阿杰手里", f"Steam 合作伙伴后台：{u} / {s}")


def _huawei_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64, "0123456789ABCDEF")
    return s, _p(
        r, f"华为 AGC 的 Client Secret：{s}（Connect API 用，管理员权限）", f"client_secret={s}  # AppGallery Connect"
    )


def _jpush_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24, HEX)
    return s, _p(r, f"极光推送 AppKey {_w(r, 24, HEX)}，Master Secret {s}", f"JPush 服务端鉴权用 master secret「{s}」")


def _mipush_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 22, B64) + "=="
    return s, _p(r, f"小米推送 AppSecret：{s}", f"小米开放平台 → 推送服务 → AppSecret {s}")


def _invented_zh(r: random.Random) -> tuple[str, str]:
    s = r.choice(("yq-sk-", "hlx_", "mdz.", "qb_srv_")) + _w(r, 32, ALNUM)
    return s, _p(
        r,
        f"新接的“云雀统计”SDK 服务端密钥：{s}",
        f"打点服务的 token 换成 {s} 了，旧的作废",
        f"就是这个：{s}",
    )


def _bare_entropy_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, r.randint(36, 56), ALNUM + "+/")
    return s, _p(r, f"「{s}」", f"{s}。", f"（{s}）", f"“{s}”")


def _low_entropy_zh(r: random.Random) -> tuple[str, str]:
    s = _p(
        r,
        r.choice(("lily", "coco", "momo", "xiaobao")) + f"{r.randint(1, 12):02d}{r.randint(1, 28):02d}",
        r.choice(_PINYIN) + "123",
    )
    return s, _p(
        r,
        f"王老师那台电脑开机是他女儿小名加生日：{s}",
        f"打印机管理页面 admin {s}",
        f"会议室电脑就是 {s}，大家都知道",
    )


def _voice_zh(r: random.Random) -> tuple[str, str]:
    s = _human_pw(r)
    return s, _p(
        r,
        f"【语音转文字】喂，那个服务器密码你记一下啊，是{s}，对，前面大写",
        f"语音消息（转文字）：网银密码改成 {s} 了，下次别再问我了哈",
    )


def _fullwidth_pw_zh(r: random.Random) -> tuple[str, str]:
    s = _fw(_human_pw(r))
    return s, _p(r, f"密码：{s}", f"服务器 root 口令是{s}（全角打的，登录时要换成半角）")


def _fullwidth_id_zh(r: random.Random) -> tuple[str, str]:
    s = _fw(_p(r, _cn_id(r), _cn_mobile(r)))
    n = _zh_name(r)
    return s, _p(r, f"{n}：{s}", f"客户发来的（输入法全角）：{s}，{n}")


def _split_zh(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 12)
    return s, _p(
        r,
        f"NAS 管理员\n账号：admin\n密码在下一行\n\n{s}\n\n（别存浏览器）",
        f"网银登录名 {_user(r)}\n登录\n密码\n{s}",
    )


def _before_label_zh(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 12)
    return s, _p(r, f"{s} ← 这是超算的密码", f"{s}（上面这个是U盾密码）", f"{s} 是财务系统的，别搞混")


def _far_zh(r: random.Random) -> tuple[str, str]:
    s = _strong_pw(r, 13)
    return s, (
        "报销系统的密码写在最后一行。\n\n1. 先在网上预约\n2. 打印单据，负责人签字\n3. 发票背面写学号\n"
        "4. 投到财务处一楼的投递箱\n\n" + s
    )


def _table_zh(r: random.Random) -> tuple[str, str]:
    s, u = _human_pw(r), _user(r)
    return s, f"| 系统 | 账号 | 密码 |\n|---|---|---|\n| 财务报销 | {u} | {s} |\n| 图书馆 | {u} | 同上 |"


def _chat_mixed_zh(r: random.Random) -> tuple[str, str]:
    s = "AAAA" + _w(r, 7, B64URL) + ":APA91b" + _w(r, 60, B64URL)
    return s, _p(
        r,
        f"me: Firebase 那个 server key 发我一下\nXiao Zhou: {s}\nme: thx，用完我删",
        f"A: push 又挂了\nB: key 换了，new one is {s}\nA: ok 我更新一下",
    )


def _screenshot_zh(r: random.Random) -> tuple[str, str]:
    s = _p(r, _w(r, 32, ALNUM), _strong_pw(r, 12))
    return s, _p(
        r,
        f"（截图描述）后台页面右上角是“密钥管理”，表格第二行：名称 prod，密钥 {s}，创建于 2026-10-02",
        f"用户发来一张截图：显示器上的便利贴写着 “WiFi: Lab-5G / {s}”",
    )


def _env_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 20, ALNUM)
    return s, _p(
        r,
        f"# 生产环境，别提交\nDB_HOST=10.0.3.8\nDB_PASSWORD={s}\nREDIS_URL=redis://10.0.3.9:6379/0",
        f"`.env` 里 SECRET_KEY={s}，上线前要换",
    )


def _quotes_zh(r: random.Random) -> tuple[str, str]:
    s = _human_pw(r)
    return s, _p(r, f"他说密码是「{s}」，中间没有空格", f"口令“{s}”，记得区分大小写", f"（密码：{s}）")


def _url_zh(r: random.Random) -> tuple[str, str]:
    s, u = _w(r, 12, ALNUM), _user(r)
    return s, _p(r, f"论文仓库：svn://{u}:{s}@svn.lab.example.cn/thesis", f"共享盘挂载 ftp://{u}:{s}@10.10.8.2/data/")


def _shell_zh(r: random.Random) -> tuple[str, str]:
    s = _human_pw(r)
    return s, _p(
        r,
        f"备份脚本里写死了：mysqldump -uroot -p{s} finance > /data/bak.sql",
        f"在终端里敲：`redis-cli -a {s} ping`",
    )


def _wxpay_zh(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, ALNUM)
    return s, _p(
        r, f"微信支付商户号 16{_w(r, 8, DIG)}，APIv3 密钥 {s}", f"wxpay:\n  mchid: 16{_w(r, 8, DIG)}\n  api-v3-key: {s}"
    )


def _orcid_zh(r: random.Random) -> tuple[str, str]:
    s, n = _orcid(r), _zh_name(r)
    return s, _p(r, f"{n}的 ORCID 是 {s}，她还没公开，先别放到课题组主页", f"{s}（{n}，申请博士后要填）")


KINDS: dict[str, Kind] = {
    # research lab
    "hpc sshpass": _hpc_sshpass,
    "jupyterhub token": _jupyterhub_token,
    "student orcid": _student_orcid,
    "journal submission login": _journal_login,
    "reviewer access link": _reviewer_link,
    "instrument pc password": _instrument_pc,
    "vpn pre-shared key": _vpn_psk,
    "slurmdbd storage password": _slurmdbd,
    "wandb api key": _wandb,
    "huggingface token": _hf_token,
    "overleaf edit link": _overleaf,
    "zotero api key": _zotero,
    "aws secret key": _aws_secret,
    "irods password": _irods,
    "medical record number": _mrn_health,
    "github pat": _github_pat,
    "slack webhook": _slack_webhook,
    # accounting / legal
    "ssn": _ssn,
    "iban": _iban,
    "card number": _card_en,
    "bookkeeping login": _quickbooks,
    "irs ip pin": _ip_pin,
    "passport number": _passport_en,
    "home address": _address_en,
    "phone us": _phone_us,
    "phone uk": _phone_uk,
    "phone jp de": _phone_jp_de,
    "personal email": _email_personal,
    "forwarded temp password": _forwarded_email,
    "key wrapped across lines": _wrapped_key_email,
    # game / app dev
    "app store connect p8": _asc_p8,
    "play service account key": _play_json,
    "steam publisher key": _steam_key,
    "unity serial": _unity_serial,
    "eos client secret": _eos_secret,
    "gradle keystore password": _gradle_keystore,
    "fcm server key": _fcm_server_key,
    "google server api key": _google_server_key,
    "code signing password": _signtool,
    "testflight invite code": _testflight,
    "sentry dsn secret": _sentry,
    "app-specific password": _app_specific,
    "match passphrase": _match_password,
    "discord bot token": _discord_bot,
    "butler api key": _butler,
    "playfab secret key": _playfab,
    "revenuecat secret key": _revenuecat,
    "invented prefix token": _invented_a,
    "invented random prefix key": _invented_b,
    "bare high-entropy string": _bare_entropy_en,
    "low-entropy password by context": _low_entropy_en,
    "voice transcript password": _voice_en,
    "url user-info password": _url_userinfo,
    "percent-encoded password": _percent_encoded,
    "query string token": _query_token,
    "tool output password": _tool_output,
    "log line bearer": _log_bearer,
    "jwt": _jwt,
    "plist secret": _plist,
    "xml password": _xml_password,
    "yaml secret": _yaml_secret,
    "shell history password": _shell_history,
    "value far from label": _value_far_en,
    # Chinese
    "统一身份认证 zh": _tongyi_zh,
    "校园卡密码 zh": _campus_card_zh,
    "知网账号 zh": _cnki_zh,
    "万方账号 zh": _wanfang_zh,
    "基金委系统密码 zh": _nsfc_zh,
    "邮箱专用密码 zh": _exmail_zh,
    "eduroam 密码 zh": _eduroam_zh,
    "门禁密码 zh": _door_zh,
    "学号成绩 zh": _student_grade_zh,
    "学生身份证 zh": _student_id_card_zh,
    "学生手机 zh": _student_phone_zh,
    "校园 vpn zh": _easyconnect_zh,
    "超算密码 zh": _supercomputer_zh,
    "仪器电脑密码 zh": _instrument_zh,
    "投稿审稿系统 zh": _submission_zh,
    "病案号 zh": _health_zh,
    "统一社会信用代码 zh": _uscc_zh,
    "客户证件号 zh": _client_id_table_zh,
    "回单账号 zh": _receipt_account_zh,
    "社保卡号 zh": _social_card_zh,
    "个税 app 密码 zh": _tax_app_zh,
    "电子签章 pin zh": _seal_pin_zh,
    "u盾密码 zh": _ushield_zh,
    "公积金账号 zh": _housing_fund_zh,
    "当事人姓名 zh": _client_name_zh,
    "电子税务局密码 zh": _etax_zh,
    "财务软件密码 zh": _kingdee_zh,
    "家庭住址 zh": _address_zh,
    "护照号 zh": _passport_zh,
    "港澳通行证 zh": _hk_pass_zh,
    "银行卡号 zh": _bank_card_zh,
    "私人邮箱 zh": _email_zh,
    "穿山甲 secret zh": _pangle_zh,
    "友盟 master secret zh": _umeng_zh,
    "小程序 appsecret zh": _wxmini_zh,
    "支付宝私钥 zh": _alipay_key_zh,
    "keystore 聊天 zh": _keystore_chat_zh,
    "p12 证书密码 zh": _p12_zh,
    "apple 专用密码 zh": _apple_specific_zh,
    "steam 后台密码 zh": _steam_admin_zh,
    "华为 client secret zh": _huawei_zh,
    "极光 master secret zh": _jpush_zh,
    "小米推送 secret zh": _mipush_zh,
    "自造前缀密钥 zh": _invented_zh,
    "无标签高熵串 zh": _bare_entropy_zh,
    "弱口令靠语境 zh": _low_entropy_zh,
    "语音转文字密码 zh": _voice_zh,
    "全角密码 zh": _fullwidth_pw_zh,
    "全角证件手机 zh": _fullwidth_id_zh,
    "分行书写 zh": _split_zh,
    "值在标签前 zh": _before_label_zh,
    "值远离标签 zh": _far_zh,
    "表格账号密码 zh": _table_zh,
    "中英混合聊天 zh": _chat_mixed_zh,
    "截图描述 zh": _screenshot_zh,
    "env 文件 zh": _env_zh,
    "引号包裹 zh": _quotes_zh,
    "url 内嵌密码 zh": _url_zh,
    "命令行密码 zh": _shell_zh,
    "微信支付密钥 zh": _wxpay_zh,
    "学生 orcid zh": _orcid_zh,
}

CHINESE: frozenset[str] = frozenset(k for k in KINDS if k.endswith(" zh"))

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"[private] {t}",
    lambda t: f"(private) {t}",
    lambda t: f"{t} #private",
    lambda t: f"PRIVATE: {t}",
    lambda t: f"{t} [do not publish]",
    lambda t: f"<private>{t}</private>",
    lambda t: f"【私密】{t}",
    lambda t: f"{t}（私密）",
    lambda t: f"#隐私 {t}",
    lambda t: f"[仅自己可见] {t}",
    lambda t: f"私人：{t}",
    lambda t: f"{t} 【勿公开】",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"private": True},
    {"visibility": "private"},
    {"publish": False},
    {"tags": ["notes", "private"]},
    {"access": "private"},
    {"public": False},
    {"私密": True},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "## Private",
    "## Private notes (do not publish)",
    "## 私密信息",
    "### 隐私（勿公开）",
    "## Secrets",
    "## 个人隐私",
]

ORDINARY: list[str] = [
    # English
    "doi:10.1038/s41586-021-03819-2",
    "https://doi.org/10.1145/3597503.3639187",
    "arXiv:2310.06825v2",
    "Submitted batch job 48213377",
    "sbatch -p gpu -N 2 -t 24:00:00 train.sh",
    "squeue -u $USER",
    "sacct -j 48213377 -o JobID,Elapsed,MaxRSS",
    "module load gcc/12.2.0 openmpi/4.1.5",
    "git checkout 3f9c2a7e5b1d48c0a6e2f7d91b3c5e8a0d4f6b21",
    "sha256 of the release tarball: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "Unity 2022.3.21f1 LTS",
    "Gradle 8.5, AGP 8.2.1, minSdk 24, targetSdk 34",
    "CFBundleVersion 1.4.2 (207)",
    "ISBN 978-0-262-04630-4",
    "the public dataset UUID is 5b1e0c5e-7a2d-4c3b-9f1e-2d8a6b4c0e17",
    "Case No. 1:23-cv-04567 (S.D.N.Y.)",
    "SKU TD-PLUSH-RED-001",
    "link colour is hex 1f6feb",
    "ssh login.hpc.univ-example.edu",
    "The token expires after 30 days.",
    "Passwords must be at least 12 characters long.",
    "Reset your password from the account page; we never e-mail it.",
    "Steam app id 1245620",
    "p < 0.001 (two-sided t-test, n = 24)",
    "GEO accession GSE164378",
    "ClinicalTrials.gov NCT04368728",
    "PMID 31827280",
    "version 2.14.0-rc.1",
    "Build 20261104.3 passed on macOS 14.6",
    "IPv4 192.0.2.10 is a documentation address",
    "AdMob mediation waterfall refreshed every 24 hours",
    # Chinese
    "密码至少12位，包含大小写字母和数字",
    "令牌有效期30天，到期自动失效",
    "组会改到周四下午三点，地点生科楼B214",
    "请把知网下载的全文放到共享盘的文献文件夹",
    "（2024）京0105民初12345号 已公开宣判",
    "（2025）沪01民终6789号 二审维持原判",
    "增值税小规模纳税人征收率1%",
    "发票抬头写学校全称，税号找财务处要",
    "个税汇算清缴截止到6月30日",
    "社保缴费基数每年7月调整",
    "公积金缴存比例在5%到12%之间",
    "国自然面上项目申请代码 C0901",
    "DOI：10.11821/dlxb202401001",
    "ISBN 978-7-111-54742-6",
    "Slurm 作业号 48213377 已完成",
    "用 sinfo -p gpu 查看 GPU 分区空闲节点",
    "版本号 v3.2.1，构建号 20261104",
    "主色调 FF6A00，辅助色 1F6FEB",
    "商品编码 SKU-TD-2026-RED",
    "小程序审核一般需要1到7个工作日",
    "TestFlight 外部测试最多一万名测试员",
    "Unity 版本锁定在 2022.3 LTS",
    "安卓包名 com.tinydungeon.game",
    "上传 App Store 前先跑一遍 fastlane gym",
    "学号一般是10位数字，前四位是入学年份",
    "忘记密码请到统一身份认证页面自助找回",
    "网银 U盾 插上后等指示灯亮再操作",
    "电子签章要在合同定稿后再盖",
    "校园卡可以在圈存机上充值",
    "课题组服务器 login.hpc.univ-example.edu 只允许校内访问",
    "提交 3f9c2a7 修复了闪退",
    "这篇论文的 arXiv 编号是 2310.06825",
    "期末考试安排在第18周",
    "审稿意见需要在14天内返回",
    "统一社会信用代码是18位",
    "身份证号最后一位可能是X",
]
