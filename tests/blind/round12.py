"""Blind canary set, round 12: written blind on 2026-12-04, without reading the gate's code or earlier rounds.

Theme: three people who keep an AI agent's memory.

1. A family / household assistant: smart-home hubs (Home Assistant long-lived tokens, MQTT brokers, Zigbee and
   Z-Wave network keys, camera RTSP URLs, NAS shares, router admin), door-lock temporary codes, parcel pick-up codes,
   estate access cards, the children's school accounts, medical-insurance cards, family members' ID, passport and
   phone numbers, bank cards, Alipay / WeChat Pay PINs, insurance policies, medical details tied to a named person,
   the home address.
2. An e-commerce shop operator in China: Taobao / Pinduoduo / Douyin shop / Youzan app secrets, Kdniao and Cainiao
   keys, Alibaba Cloud and Tencent Cloud key pairs, Qiniu and Upyun, WeCom / Feishu / DingTalk bot webhooks, WeChat
   Pay merchant API v3 keys, customers' names, phones and addresses in order notes, refund bank accounts, business
   licence numbers.
3. An SRE on call: PagerDuty / Opsgenie keys, Grafana service-account tokens, Prometheus basic auth, Terraform
   Cloud and Cloudflare tokens, Kubernetes secrets, etcd keys, Consul ACL tokens, DSNs in many drivers' syntaxes,
   Redis, RabbitMQ, SMTP, LDAP, JWT and webhook HMAC secrets, internal host names.

Shapes: prose, chat turns, voice-dictation transcripts, values wrapped over two lines, values far from or before
their label, Markdown tables with and without headers, code spans and fences, JSON / YAML / .env / TOML / INI / XML /
properties, shell commands and history, URLs, forwarded e-mails, screenshot descriptions, log lines, Chinese quotes
and full-width characters, invented token prefixes, bare high-entropy strings and low-entropy human passwords that
only the context reveals.

- KINDS: kind -> function(rng) -> (secret, text carrying it); the secret must not reach the site.
- CHINESE: the kinds phrased in Chinese (or mixed Chinese / English).
- TEXT_MARKERS: ways to mark one note private inline.
- FRONTMATTER_MARKERS: frontmatter entries that mark a wiki page private.
- PERSONA_PRIVATE_HEADINGS: headings that open a private section of SOUL.md.
- ORDINARY: technical strings that are no secrets and must be published unchanged.
"""

# ruff: noqa: E501

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
from collections.abc import Callable

# --------------------------------------------------------------------------------------------------------------
# generators
# --------------------------------------------------------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
HEX = "0123456789abcdef"
SYMBOLS = "!@#$%+=?"


def _w(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _hex(r: random.Random, n: int) -> str:
    return _w(r, n, HEX)


def _digits(r: random.Random, n: int) -> str:
    return _w(r, n, DIGITS)


def _bytes(r: random.Random, n: int) -> bytes:
    return bytes(r.randrange(256) for _ in range(n))


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uuid(r: random.Random) -> str:
    h = _hex(r, 32)
    h = h[:12] + "4" + h[13:16] + r.choice("89ab") + h[17:]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _pw(r: random.Random, n: int = 12, symbols: str = SYMBOLS) -> str:
    """A strong password somebody chose: every class at least once."""
    chars = [r.choice(UPPER), r.choice(LOWER), r.choice(DIGITS), r.choice(symbols)]
    chars += [r.choice(ALNUM) for _ in range(n - 4)]
    r.shuffle(chars)
    return "".join(chars)


def _pw_url(r: random.Random, n: int = 14) -> str:
    """A password that needs no escaping inside a URL's user-info."""
    return _pw(r, n, "-.~")


def _luhn(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + _digits(r, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return body + str((10 - total % 10) % 10)


def _group4(s: str, sep: str = " ") -> str:
    return sep.join(s[i : i + 4] for i in range(0, len(s), 4))


def _iban(r: random.Random) -> str:
    country, bban = r.choice(
        [
            ("DE", _digits(r, 8) + _digits(r, 10)),
            ("GB", _w(r, 4, UPPER) + _digits(r, 6) + _digits(r, 8)),
            ("NL", _w(r, 4, UPPER) + _digits(r, 10)),
            ("AT", _digits(r, 5) + _digits(r, 11)),
        ]
    )
    numeric = "".join(str(int(c, 36)) for c in bban + country + "00")
    check = 98 - int(numeric) % 97
    return f"{country}{check:02d}{bban}"


ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)

CITIES = [
    ("北京市", "", "朝阳区", "110105", ["望京西路", "酒仙桥路", "广顺北大街"]),
    ("上海市", "", "浦东新区", "310115", ["张杨路", "锦绣路", "芳甸路"]),
    ("浙江省", "杭州市", "西湖区", "330106", ["文三路", "古墩路", "教工路"]),
    ("广东省", "深圳市", "南山区", "440305", ["科技南十二路", "南海大道", "白石路"]),
    ("广东省", "广州市", "天河区", "440106", ["天河北路", "中山大道西", "黄埔大道西"]),
    ("四川省", "成都市", "武侯区", "510107", ["桐梓林北路", "玉林南路", "科华北路"]),
    ("江苏省", "南京市", "鼓楼区", "320106", ["中山北路", "湖南路", "广州路"]),
    ("湖北省", "武汉市", "洪山区", "420111", ["珞喻路", "雄楚大道", "关山大道"]),
]
COMPOUNDS = [
    "阳光花园",
    "翠湖天地",
    "金色家园",
    "锦绣江南",
    "万科城",
    "绿城桂花园",
    "保利香槟国际",
    "碧桂园凤凰城",
    "华润橡树湾",
    "龙湖春江郦城",
]


def _cn_id(r: random.Random, lo: int = 1950, hi: int = 2018) -> str:
    code = r.choice(CITIES)[3]
    body = f"{code}{r.randint(lo, hi):04d}{r.randint(1, 12):02d}{r.randint(1, 28):02d}{r.randint(0, 999):03d}"
    s = sum(int(c) * w for c, w in zip(body, ID_WEIGHTS, strict=True))
    return body + "10X98765432"[s % 11]


USCC_CHARS = "0123456789ABCDEFGHJKLMNPQRTUWXY"
USCC_WEIGHTS = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)


def _uscc(r: random.Random) -> str:
    """统一社会信用代码 (GB 32100-2015), its organisation code with its own GB 11714 check digit."""
    org = _digits(r, 8)
    c9 = 11 - sum(int(c) * w for c, w in zip(org, (3, 7, 9, 10, 5, 8, 4, 2), strict=True)) % 11
    org += {10: "X", 11: "0"}.get(c9, str(c9))
    body = "91" + r.choice(CITIES)[3] + org
    s = sum(USCC_CHARS.index(c) * w for c, w in zip(body, USCC_WEIGHTS, strict=True))
    return body + USCC_CHARS[(31 - s % 31) % 31]


def _mrz_check(s: str) -> str:
    total = 0
    for i, c in enumerate(s):
        v = 0 if c == "<" else int(c, 36)
        total += v * (7, 3, 1)[i % 3]
    return str(total % 10)


PHONE_PREFIXES = [
    "134",
    "135",
    "136",
    "137",
    "138",
    "139",
    "150",
    "151",
    "152",
    "157",
    "158",
    "159",
    "182",
    "183",
    "187",
    "188",
    "130",
    "131",
    "132",
    "155",
    "156",
    "185",
    "186",
    "133",
    "153",
    "180",
    "181",
    "189",
    "177",
    "199",
    "191",
    "166",
    "173",
]


def _phone(r: random.Random) -> str:
    return r.choice(PHONE_PREFIXES) + _digits(r, 8)


SURNAMES_ZH = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁沈姚卢姜崔钟谭陆汪范金石廖贾夏韦方白邹孟熊秦邱江薛段雷侯龙史陶黎贺顾毛郝龚邵万严"
GIVEN_ZH = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超兰霞平刚桂华玉萍红玲芬建国志宇浩然轩涵欣怡诺桐远辰睿琪嘉悦晨曦梓"
PY_SURNAMES = [
    "Wang",
    "Li",
    "Zhang",
    "Liu",
    "Chen",
    "Yang",
    "Huang",
    "Zhao",
    "Wu",
    "Zhou",
    "Xu",
    "Sun",
    "Ma",
    "Zhu",
    "Hu",
    "Guo",
    "He",
    "Lin",
    "Luo",
    "Zheng",
    "Liang",
    "Xie",
    "Song",
    "Tang",
    "Han",
    "Feng",
    "Deng",
    "Cao",
    "Peng",
    "Zeng",
]
PY_GIVEN = [
    "Guifang",
    "Jianguo",
    "Xiuying",
    "Yuxuan",
    "Zihan",
    "Haoran",
    "Yinuo",
    "Xinyi",
    "Mingyuan",
    "Shufen",
    "Lihua",
    "Weidong",
    "Jiayi",
    "Ruoxi",
    "Zhiqiang",
    "Yutong",
    "Chenxi",
    "Meiling",
    "Junjie",
    "Hongmei",
]
EN_FIRST = [
    "Emma",
    "Olivia",
    "Noah",
    "Liam",
    "Ava",
    "Mia",
    "Lucas",
    "Ethan",
    "Sophie",
    "Grace",
    "Daniel",
    "Hannah",
    "Oscar",
    "Chloe",
    "Leo",
    "Ruby",
]
EN_LAST = [
    "Whitfield",
    "Okafor",
    "Lindqvist",
    "Marchetti",
    "Brennan",
    "Hartley",
    "Kowalczyk",
    "Delacroix",
    "Nakamura",
    "Ferreira",
]


def _zh_name(r: random.Random) -> str:
    return r.choice(SURNAMES_ZH) + "".join(r.choice(GIVEN_ZH) for _ in range(r.choice((1, 2))))


def _py_name(r: random.Random) -> tuple[str, str]:
    return r.choice(PY_SURNAMES), r.choice(PY_GIVEN)


def _address_zh(r: random.Random) -> str:
    prov, city, dist, _, roads = r.choice(CITIES)
    return (
        f"{prov}{city}{dist}{r.choice(roads)}{r.randint(1, 999)}号{r.choice(COMPOUNDS)}"
        f"{r.randint(1, 28)}栋{r.randint(1, 4)}单元{r.randint(2, 33)}{r.randint(1, 4):02d}室"
    )


def _jwt(r: random.Random, payload: dict) -> str:
    header = _b64u(b'{"alg":"HS256","typ":"JWT"}')
    body = _b64u(json.dumps(payload, separators=(",", ":")).encode())
    return f"{header}.{body}.{_b64u(_bytes(r, 32))}"


def _ha_token(r: random.Random) -> str:
    iat = r.randint(1_700_000_000, 1_790_000_000)
    return _jwt(r, {"iss": _hex(r, 32), "iat": iat, "exp": iat + 315_360_000})


def _host(r: random.Random) -> str:
    """A made-up internal host name, random enough that no other planted text holds it."""
    tag = _w(r, 3, LOWER) + str(r.randint(1, 9))
    return r.choice(
        [
            f"{r.choice(['pg', 'mysql', 'redis', 'mq', 'ldap', 'etcd'])}-{tag}.{r.choice(['db', 'data', 'infra', 'core'])}.{r.choice(['zhuque', 'lanhai', 'qingniao', 'beiming'])}.internal",
            f"{r.choice(['prom', 'grafana', 'vault', 'consul', 'nexus'])}-{tag}.{r.choice(['ops', 'sre', 'plat'])}.{r.choice(['corp', 'lan'])}",
            f"{r.choice(['nas', 'hub', 'hass', 'cam-door', 'printer'])}-{tag}.{r.choice(['home.arpa', 'lan'])}",
            f"{r.choice(['api', 'mq', 'cache', 'search'])}-{tag}.{r.choice(['prod', 'stg'])}.{r.choice(['tianmu-shop', 'hexiang', 'yunque'])}-inc.cn",
        ]
    )


ZH_DIGITS = dict(zip("0123456789", "零幺二三四五六七八九", strict=True))
ZH_DIGITS_ONE = dict(zip("0123456789", "零一二三四五六七八九", strict=True))
EN_DIGITS = dict(
    zip("0123456789", ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"], strict=True)
)
EN_SYMBOLS = {
    "!": "exclamation mark",
    "@": "at sign",
    "#": "hash",
    "$": "dollar sign",
    "%": "percent",
    "+": "plus",
    "=": "equals",
    "?": "question mark",
    "-": "dash",
    ".": "dot",
}

BANKS = [
    ("中国工商银行", "622202", 19),
    ("中国建设银行", "621700", 19),
    ("中国农业银行", "622848", 19),
    ("招商银行", "622588", 16),
    ("中国银行", "621661", 19),
    ("交通银行", "622262", 19),
]

# --------------------------------------------------------------------------------------------------------------
# kinds
# --------------------------------------------------------------------------------------------------------------

KINDS: dict[str, Callable[[random.Random], tuple[str, str]]] = {}
_ZH: set[str] = set()


def _kind(name: str, zh: bool = False) -> Callable:
    def register(fn: Callable[[random.Random], tuple[str, str]]) -> Callable[[random.Random], tuple[str, str]]:
        assert name not in KINDS, name
        KINDS[name] = fn
        if zh:
            _ZH.add(name)
        return fn

    return register


# ---- 1. family / household -----------------------------------------------------------------------------------


@_kind("home assistant token in secrets.yaml")
def _k_ha_secrets_yaml(r):
    s = _ha_token(r)
    return s, (
        "Copied the new secrets file over from the old Pi:\n\n```yaml\n# /config/secrets.yaml\n"
        f"home_latitude: 31.{r.randint(100, 999)}\nha_api_token: {s}\n"
        "weather_units: metric\n```\n"
        "rest_command.kitchen_speaker uses `!secret ha_api_token`."
    )


@_kind("home assistant token curl")
def _k_ha_curl(r):
    s = _ha_token(r)
    return s, (
        "to check the garage sensor from the laptop:\n"
        f'curl -s -H "Authorization: Bearer {s}" -H "Content-Type: application/json" '
        "http://homeassistant.local:8123/api/states/binary_sensor.garage_door"
    )


@_kind("home assistant token chat zh", zh=True)
def _k_ha_chat_zh(r):
    s = _ha_token(r)
    return s, (
        "【家庭群】\n老公：HA 的长期访问令牌我生成好了，有效期十年\n"
        f"老公：{s}\n"
        "我：好，我填到米家那个集成里，然后把消息删了\n老公：别发到别的群"
    )


@_kind("mqtt broker url")
def _k_mqtt_url(r):
    user = r.choice(["zigbee2mqtt", "frigate", "tasmota", "esphome", "hass"])
    s = _pw_url(r, 16)
    return (
        s,
        f"zigbee2mqtt keeps dropping; broker is mqtt://{user}:{s}@mosquitto.home.arpa:1883 — check the retained messages",
    )


@_kind("mqtt password zh", zh=True)
def _k_mqtt_zh(r):
    s = _pw(r, 14)
    return s, (
        f"家里的 mosquitto 给 Homebridge 单独开了一个账号：用户名 homebridge，密码「{s}」。"
        "ESP32 那几个温湿度计用的也是它，改密码的话要一个个重新烧录。"
    )


@_kind("zigbee network key")
def _k_zigbee_key(r):
    s = "[" + ", ".join(str(b) for b in _bytes(r, 16)) + "]"
    pan = f"0x{r.randint(0x1000, 0xFFFE):04X}"
    return s, (
        "zigbee2mqtt `configuration.yaml` after re-pairing the coordinator (keep a copy, losing it means re-pairing all 43 devices):\n\n"
        f"```yaml\nadvanced:\n  pan_id: {pan}\n  channel: 25\n  network_key: {s}\n```"
    )


@_kind("z-wave s2 keys zh", zh=True)
def _k_zwave_zh(r):
    s = _hex(r, 32).upper()
    return s, (
        "Z-Wave JS UI → 设置 → Security Keys，门锁是 S2 Access Control，必须用这把：\n"
        f"| 类型 | 值 |\n|---|---|\n| S2_AccessControl | {s} |\n| S0_Legacy | （没用） |\n"
        "重装 docker 的时候记得填回去，不然门锁要重新入网。"
    )


@_kind("rtsp camera url")
def _k_rtsp(r):
    s = _pw_url(r, 12)
    ip = f"192.168.{r.choice([1, 31, 50])}.{r.randint(60, 99)}"
    return s, (
        f"Frigate config for the front door cam:\n`path: rtsp://admin:{s}@{ip}:554/Streaming/Channels/101`\n"
        "sub-stream is channel 102 at 640x360 for detection."
    )


@_kind("camera verification code zh", zh=True)
def _k_ezviz_zh(r):
    s = _w(r, 6, UPPER)
    return s, (
        f"[截图描述] 萤石摄像头底部的标签照片：型号 CS-C6Cn，序列号 {_w(r, 9, UPPER + DIGITS)}，"
        f"验证码 {s}。添加到 App 和视频加密都要用这个验证码。"
    )


@_kind("nas smb mount")
def _k_nas_mount(r):
    s = _pw(r, 13, "!%+=?")
    return s, (
        "fstab line didn't survive the upgrade so I mounted it by hand:\n"
        f"sudo mount -t cifs //nas.home.arpa/photos /mnt/photos -o username=family,password='{s}',uid=1000,vers=3.0"
    )


@_kind("nas accounts table zh", zh=True)
def _k_nas_table_zh(r):
    kid = r.choice(["xiaoyu", "tongtong", "nuonuo", "lele", "doudou"])
    s = _pw(r, 11)
    p2 = _pw(r, 10)
    return s, (
        "群晖 DS920+ 账户整理：\n\n"
        f"| 用户 | 密码 | 权限 |\n|---|---|---|\n| admin | {s} | 管理员 |\n| {kid} | {p2} | 只读 photo |\n| guest | 已停用 | - |"
    )


@_kind("router admin birthday password zh", zh=True)
def _k_router_bday_zh(r):
    mm, dd = r.randint(1, 12), r.randint(1, 28)
    room = f"{r.randint(2, 33)}{r.randint(1, 4):02d}"
    s = f"{r.randint(1982, 1995)}{mm:02d}{dd:02d}{room}"
    return s, (f"路由器后台 192.168.31.1，管理密码还是老规矩：老婆生日加房号，也就是 {s}。上次升级固件之后没改。")


@_kind("guest wifi voice dictation")
def _k_wifi_voice(r):
    pw = _pw(r, 10, "!@#$%?")
    parts = []
    for c in pw:
        if c.isupper():
            parts.append(f"capital {c}")
        elif c.isdigit():
            parts.append(EN_DIGITS[c])
        elif c.islower():
            parts.append(c)
        else:
            parts.append(EN_SYMBOLS[c])
    s = ", ".join(parts)
    ssid = r.choice(["Lins-Guest", "HomeNet-5G-guest", "TheNest_Guests"])
    return s, (
        f"[voice memo, 07:42, transcribed] okay so um the guest wifi for the party is {ssid} and the password is {s}, "
        "and that's it, put it on the card by the door"
    )


@_kind("door lock temp code zh", zh=True)
def _k_door_temp_zh(r):
    s = _digits(r, r.choice([6, 8]))
    return s, (f"保洁阿姨周三上午来，门锁临时密码 {s}，只能用一次，10:00–12:00 有效，用完自动失效。")


@_kind("parcel pickup code zh", zh=True)
def _k_pickup_zh(r):
    s = f"{r.randint(1, 30)}-{r.randint(1, 6)}-{r.randint(1000, 9999)}"
    return s, (
        f"【菜鸟驿站】您的{r.choice(['中通', '圆通', '韵达', '申通'])}包裹已到{r.choice(COMPOUNDS)}北门菜鸟驿站，"
        f"请凭取件码{s}于 21:00 前领取。— 帮我记一下，晚上下班顺路拿"
    )


@_kind("estate access card zh", zh=True)
def _k_access_card_zh(r):
    s = _digits(r, 10)
    uid = _hex(r, 8).upper()
    return s, (f"小区门禁卡丢了一张，物业说补办要报卡号：{s}（卡面印的），芯片 UID {uid}。另一张在女儿书包里。")


@_kind("child school account zh", zh=True)
def _k_school_zh(r):
    name = _zh_name(r)
    sid = "2024" + _digits(r, 6)
    s = _pw(r, 10, "@#")
    return s, (
        f"{name}的智学网账号：学号 {sid}，初始密码被老师改成了 {s}，周末要在上面交数学作业，别让他自己改密码又忘了。"
    )


@_kind("child school portal")
def _k_school_en(r):
    first = r.choice(EN_FIRST)
    s = _pw(r, 10, "!")
    return s, (
        f"School portal for {first} (Year 4): login is {first.lower()}.{r.choice(EN_LAST).lower()}{_digits(r, 2)}@students.oakridge-primary.org.uk, "
        f"password {s}. Reading log has to be filled in every Sunday."
    )


@_kind("medical insurance card zh", zh=True)
def _k_yibao_zh(r):
    s = r.choice(UPPER) + _digits(r, 8)
    name = _zh_name(r)
    return s, (f"{name}的社会保障卡（医保卡）卡号 {s}，门诊统筹额度今年还剩 1200 左右，取药的时候出示电子医保码也行。")


@_kind("family id numbers zh", zh=True)
def _k_family_ids_zh(r):
    s = _cn_id(r, 1952, 1965)
    return s, (
        "家庭成员信息（订机票用）：\n"
        f"- 爸爸 {_zh_name(r)}，身份证 {_cn_id(r, 1955, 1965)}\n"
        f"- 妈妈 {_zh_name(r)}，身份证 {s}\n"
        f"- 女儿 {_zh_name(r)}，身份证 {_cn_id(r, 2012, 2018)}"
    )


@_kind("mother's phone voice zh", zh=True)
def _k_phone_voice_zh(r):
    p = _phone(r)
    s = " ".join(["".join(ZH_DIGITS[c] for c in part) for part in (p[:3], p[3:7], p[7:])])
    return s, f"[语音转文字] 帮我记一下，我妈的新手机号是 {s}，老号码下个月停机，微信绑定记得改。"


@_kind("id number voice zh", zh=True)
def _k_id_voice_zh(r):
    idn = _cn_id(r, 1950, 1960)
    s = "".join(ZH_DIGITS_ONE[c] if c.isdigit() else "叉" for c in idn)
    return s, f"[语音输入] 给外婆挂号用的身份证号，{s}，最后一位是叉不是十。"


@_kind("passport mrz zh", zh=True)
def _k_passport_mrz_zh(r):
    sur, given = _py_name(r)
    s = "E" + _digits(r, 8)
    dob = f"{r.randint(70, 99)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    exp = f"{r.randint(28, 35)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    sex = r.choice("MF")
    line1 = f"P<CHN{sur.upper()}<<{given.upper()}".ljust(44, "<")
    pers = "<" * 14
    l2 = s + _mrz_check(s) + "CHN" + dob + _mrz_check(dob) + sex + exp + _mrz_check(exp) + pers + "<"
    l2 += _mrz_check(l2[0:10] + l2[13:20] + l2[21:43])
    return s, (f"签证材料：护照扫描件 OCR 结果（护照号 {s}，有效期到 20{exp[:2]} 年）\n\n```\n{line1}\n{l2}\n```")


@_kind("passport number en")
def _k_passport_en(r):
    s = "E" + _digits(r, 8)
    sur, given = _py_name(r)
    return (
        s,
        f"Hotel in Osaka wants passport numbers for everyone. {given} {sur}: {s}, expires 2031-03. Kids' ones are in the blue folder.",
    )


@_kind("family phone list zh", zh=True)
def _k_family_phones_zh(r):
    s = _phone(r)
    return s, (
        "紧急联系人（贴在冰箱上那张）：\n"
        f"爷爷 {_phone(r)}\n奶奶 {s}\n阿姨（钟点工）{_phone(r)}\n小区物业 0571-8888 1234"
    )


@_kind("bank card zh", zh=True)
def _k_bank_card_zh(r):
    bank, prefix, length = r.choice(BANKS)
    s = _group4(_luhn(r, prefix, length))
    return s, f"房贷还款卡是{bank}的，卡号 {s}，每月 18 号扣款，月初记得往里转钱。"


@_kind("credit card en")
def _k_card_en(r):
    prefix, length = r.choice([("4", 16), ("51", 16), ("53", 16), ("2221", 16), ("37", 15)])
    s = _luhn(r, prefix, length)
    return s, (
        f"Family card for subscriptions: {s} exp {r.randint(1, 12):02d}/{r.randint(27, 31)} cvv {_digits(r, 3)}. "
        "Netflix, iCloud+ and the kids' Nintendo account are all on it."
    )


@_kind("alipay payment pin zh", zh=True)
def _k_alipay_pin_zh(r):
    s = _digits(r, 6)
    return s, f"妈妈不会用支付宝付款码，我把她的支付密码写在这里以防她忘：{s}（跟她银行卡取款密码不一样）"


@_kind("wechat pay pin from birthday zh", zh=True)
def _k_wxpay_bday_zh(r):
    y, m, d = r.randint(50, 65), r.randint(1, 12), r.randint(1, 28)
    s = f"{y:02d}{m:02d}{d:02d}"
    return s, (f"爸爸的微信支付密码就是他生日 19{y:02d} 年 {m} 月 {d} 日的后六位——{s}，他自己说的，提醒他改一个。")


@_kind("insurance policy zh", zh=True)
def _k_policy_zh(r):
    s = "P" + _digits(r, 2) + "0" + _digits(r, 15)
    name = _zh_name(r)
    return s, (
        f"{name}的重疾险：保单号 {s}，年缴 8,460 元，"
        f"受益人是 {_zh_name(r)}，每年 {r.randint(1, 12)} 月续期，理赔电话 95511。"
    )


@_kind("insurance policy en")
def _k_policy_en(r):
    s = f"HH-{_digits(r, 4)}-{_w(r, 6, UPPER + DIGITS)}"
    return s, (
        "Home contents insurance renewed with Direct Line.\n"
        f"Policy number {s}; excess £250; claims line 0345 246 8704. Bikes need to be listed separately."
    )


@_kind("medical detail named person zh", zh=True)
def _k_medical_zh(r):
    name = _zh_name(r)
    cond = r.choice(
        [
            "确诊二型糖尿病，在打胰岛素",
            "确诊阿尔茨海默病早期",
            "乳腺癌术后在做第三期化疗",
            "确诊抑郁症，在吃舍曲林",
            "HIV 阳性，在服抗病毒药",
        ]
    )
    s = f"{name}{cond}"
    return s, f"家里的事别对外说：{s}，每个月 {r.randint(2, 28)} 号复诊，陪诊轮流排。"


@_kind("medical detail named person en")
def _k_medical_en(r):
    first = r.choice(EN_FIRST)
    cond = r.choice(
        [
            "was diagnosed with epilepsy",
            "has stage 2 melanoma",
            "is on lithium for bipolar disorder",
            "tested positive for hepatitis B",
        ]
    )
    s = f"{first} {r.choice(EN_LAST)} {cond}"
    return s, f"School nurse form is due Friday. {s}; the consultant letter is scanned in Documents/Health."


@_kind("home address zh", zh=True)
def _k_address_zh(r):
    s = _address_zh(r)
    return s, f"网购默认收货地址：{s}，收件人写我，电话留老公的，放门口就行不用敲门。"


@_kind("home address en")
def _k_address_en(r):
    s = f"{r.randint(2, 180)} {r.choice(['Wellesley', 'Ashby', 'Mornington', 'Harcourt'])} {r.choice(['Road', 'Gardens', 'Crescent'])}, {r.choice(['Didsbury, Manchester M20', 'Headingley, Leeds LS6', 'Clifton, Bristol BS8'])} {r.randint(1, 9)}{_w(r, 2, 'ABDEFGHJLNPQRSTUWXYZ')}"
    return s, f"New address for the removal company and the GP: {s}. Keys handed over on the 14th."


@_kind("apple id password en")
def _k_appleid(r):
    s = _pw(r, 12)
    return s, f"Grandma's iPad: Apple ID is the gmail one, password {s} — she writes it in her diary anyway."


@_kind("wifi qr payload")
def _k_wifi_qr(r):
    s = _pw(r, 16, "!$%+?")
    return s, f"Printed the Wi-Fi QR for the fridge, payload `WIFI:T:WPA;S:OurHome-5G;P:{s};H:false;;`"


@_kind("homekit setup code")
def _k_homekit(r):
    s = f"{_digits(r, 3)}-{_digits(r, 2)}-{_digits(r, 3)}"
    return s, f"The Aqara hub's HomeKit sticker fell off; setup code was {s}, pairing again from scratch otherwise."


@_kind("alarm code from anniversary")
def _k_alarm(r):
    m, d = r.randint(1, 12), r.randint(1, 28)
    s = f"{d:02d}{m:02d}"
    return s, f"Burglar alarm disarm code is still our wedding day, day then month: {s}. The panel is behind the coats."


# ---- 2. e-commerce shop operator ---------------------------------------------------------------------------------


@_kind("taobao appsecret env zh", zh=True)
def _k_taobao_zh(r):
    s = _hex(r, 32)
    return s, (
        "淘宝开放平台 ERP 对接，`.env.production`：\n\n```\n"
        f"TOP_APP_KEY={_digits(r, 8)}\nTOP_APP_SECRET={s}\nTOP_SESSION_EXPIRES=2027-03-01\n```\n"
        "session 三个月要重新授权一次。"
    )


@_kind("pinduoduo client secret json zh", zh=True)
def _k_pdd_zh(r):
    s = _hex(r, 40)
    return s, (
        "拼多多开放平台应用配置（多多进宝 + 订单同步）：\n"
        + json.dumps(
            {
                "client_id": _hex(r, 32),
                "client_secret": s,
                "redirect_uri": "https://erp.tianmu-shop.cn/pdd/callback",
                "备注": "正式环境",
            },
            ensure_ascii=False,
            indent=2,
        )
    )


@_kind("douyin shop secret toml zh", zh=True)
def _k_doudian_zh(r):
    s = _uuid(r)
    return s, (
        "抖店开放平台，自研应用：\n\n```toml\n[doudian]\n"
        f'app_key = "7{_digits(r, 18)}"\napp_secret = "{s}"\nshop_id = {r.randint(10_000_000, 99_999_999)}\n```'
    )


@_kind("youzan client secret properties zh", zh=True)
def _k_youzan_zh(r):
    s = _hex(r, 32)
    return s, (
        "有赞云的配置放在 application-prod.properties 里：\n"
        f"youzan.client-id={_hex(r, 16)}\nyouzan.client-secret={s}\nyouzan.grant-id={_digits(r, 8)}\n"
        "# 有赞云 token 7 天过期，定时任务每天刷新"
    )


@_kind("kdniao api key code zh", zh=True)
def _k_kdniao_zh(r):
    s = _uuid(r)
    return s, (
        "快递鸟轨迹查询，测试通过的代码：\n\n```python\n"
        f'EBUSINESS_ID = "1{_digits(r, 6)}"\nAPI_KEY = "{s}"  # 快递鸟后台 → 我的API\n'
        "data_sign = base64(md5(request_data + API_KEY))\n```"
    )


@_kind("cainiao app secret xml zh", zh=True)
def _k_cainiao_zh(r):
    s = _w(r, 32)
    return s, (
        "菜鸟电子面单（云打印）的 spring 配置：\n\n```xml\n<cainiao>\n"
        f"  <appKey>{_digits(r, 6)}</appKey>\n  <appSecret>{s}</appSecret>\n"
        "  <env>online</env>\n</cainiao>\n```"
    )


@_kind("aliyun accesskey screenshot zh", zh=True)
def _k_aliyun_shot_zh(r):
    ak = "LTAI5t" + _w(r, 18)
    s = _w(r, 30)
    return s, (
        "[截图描述] 阿里云 RAM 控制台「创建 AccessKey」弹窗，"
        f"AccessKey ID：{ak}，AccessKey Secret：{s}，"
        "下方红字提示“请及时保存或发送 AccessKey 信息至对应员工，弹窗关闭后将无法再次获取该信息”。"
    )


@_kind("aliyun cli configure")
def _k_aliyun_cli(r):
    s = _w(r, 30)
    return s, (
        "$ history | grep aliyun\n"
        f"  512  aliyun configure set --profile oss-backup --mode AK --region cn-hangzhou --access-key-id LTAI5t{_w(r, 18)} --access-key-secret {s}\n"
        "  513  aliyun oss ls oss://tianmu-product-images/"
    )


@_kind("tencent cloud secretkey zh", zh=True)
def _k_tencent_zh(r):
    sid = "AKID" + _w(r, 32)
    s = _w(r, 32)
    return s, (f"腾讯云短信（验证码）用的子账号密钥：\nSecretId：{sid}\nSecretKey：{s}\n只授权了 QcloudSMSFullAccess。")


@_kind("tencent cloud env")
def _k_tencent_env(r):
    s = _w(r, 32)
    return s, (
        "COS sync job env (cron on the office box):\n"
        f"TENCENTCLOUD_SECRET_ID=AKID{_w(r, 32)}\nTENCENTCLOUD_SECRET_KEY={s}\nCOS_BUCKET=shop-assets-{_digits(r, 10)}"
    )


@_kind("qiniu ak sk zh", zh=True)
def _k_qiniu_zh(r):
    alpha = ALNUM + "-"
    s = _w(r, 40, alpha)
    return s, (
        f"七牛云图床（商品详情页的图都在这）\nAK：{_w(r, 40, alpha)}\nSK：{s}\n"
        "空间名 tianmu-detail，CDN 域名 img.tianmu-shop.cn"
    )


@_kind("upyun operator password zh", zh=True)
def _k_upyun_zh(r):
    s = _pw(r, 16, "!")
    return s, f"又拍云的操作员账号是 shopupload，操作员密码（不是登录密码）是“{s}”，只给了 读取+写入 权限。"


@_kind("wecom webhook key zh", zh=True)
def _k_wecom_zh(r):
    s = _uuid(r)
    return s, (
        "企业微信「发货异常」群机器人：\n"
        f"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={s}\n"
        "超过 20 条/分钟会被限流。"
    )


@_kind("feishu bot webhook zh", zh=True)
def _k_feishu_zh(r):
    s = _uuid(r)
    return s, (
        f"飞书机器人：`https://open.feishu.cn/open-apis/bot/v2/hook/{s}`，"
        f"开了签名校验，签名密钥 {_w(r, 22)}，每天 9 点推昨日 GMV。"
    )


@_kind("dingtalk robot sign secret zh", zh=True)
def _k_dingtalk_zh(r):
    s = "SEC" + _hex(r, 64)
    return s, (
        "钉钉「库存预警」机器人，安全设置选的加签：\n"
        f"webhook: https://oapi.dingtalk.com/robot/send?access_token={_hex(r, 64)}\n"
        f"加签密钥: {s}"
    )


@_kind("wechat pay api v3 key zh", zh=True)
def _k_wxpay_v3_zh(r):
    s = _w(r, 32)
    return s, (
        "微信支付商户平台 → 账户中心 → API 安全：\n"
        f"| 项目 | 值 |\n|---|---|\n| 商户号 | 16{_digits(r, 8)} |\n| APIv3 密钥 | {s} |\n"
        f"| 证书序列号 | {_hex(r, 40).upper()} |"
    )


@_kind("alipay app private key zh", zh=True)
def _k_alipay_key_zh(r):
    s = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + base64.b64encode(_bytes(r, 150)).decode()
    return s, (f"支付宝当面付，应用 APPID 2021{_digits(r, 12)}，应用私钥（RSA2）：{s} ——支付宝公钥另存了一份在桌面。")


@_kind("customer order note phone zh", zh=True)
def _k_order_phone_zh(r):
    s = _phone(r)
    name = _zh_name(r)
    return s, (
        f"订单 {_digits(r, 19)} 买家留言：“麻烦发顺丰，收件人{name}，电话 {s}，白天不在家放快递柜。” — 已改成顺丰到付"
    )


@_kind("customer address order table zh", zh=True)
def _k_order_addr_zh(r):
    s = _address_zh(r)
    return s, (
        "今天需要人工处理的订单：\n\n| 订单号 | 收件人 | 地址 | 备注 |\n|---|---|---|---|\n"
        f"| {_digits(r, 18)} | {_zh_name(r)} | {s} | 补发赠品 |"
    )


@_kind("refund bank account zh", zh=True)
def _k_refund_zh(r):
    bank, prefix, length = r.choice(BANKS)
    s = _luhn(r, prefix, length)
    return s, (f"买家不要原路退款，让打到银行卡：{bank}，户名 {_zh_name(r)}，卡号 {s}，金额 389 元，财务周五统一打款。")


@_kind("business licence uscc zh", zh=True)
def _k_uscc_zh(r):
    s = _uscc(r)
    return s, f"个体店转公司了，新营业执照统一社会信用代码 {s}，法人是我妈，开票信息要一起改。"


@_kind("qianniu sub-account zh", zh=True)
def _k_qianniu_zh(r):
    s = _pw(r, 11)
    return s, (
        f"客服小妹：千牛子账号 天目旗舰店:客服{r.randint(1, 9)}，密码 {s}，只开了「接待」和「订单查看」，不许退款。"
    )


@_kind("douyin buyer id in chat zh", zh=True)
def _k_buyer_id_zh(r):
    s = _cn_id(r, 1975, 2000)
    return s, (
        "[抖店客服会话]\n买家：跨境的那个奶粉要实名吧\n客服：是的亲，需要收件人身份证号做清关\n"
        f"买家：{s}\n客服：收到，已备注"
    )


@_kind("supplier iban forwarded email")
def _k_iban(r):
    s = _iban(r)
    return s, (
        "---------- Forwarded message ---------\nFrom: accounts@hansen-verpackung.de\nSubject: Updated bank details\n\n"
        f"Dear partner, from invoice 2026-118 please pay to IBAN {s}, BIC {_w(r, 4, UPPER)}DE{_w(r, 2, UPPER)}XXX.\n"
        "Kind regards, Petra"
    )


@_kind("oss signed url zh", zh=True)
def _k_oss_signed_zh(r):
    sig = base64.b64encode(_bytes(r, 20)).decode()
    s = urllib.parse.quote(sig, safe="")
    return s, (
        "发给设计师的私有 bucket 下载链接（7 天过期）：\n"
        f"https://tianmu-raw.oss-cn-hangzhou.aliyuncs.com/shoot/2026-11.zip?OSSAccessKeyId=LTAI5t{_w(r, 18)}&Expires={r.randint(1_790_000_000, 1_800_000_000)}&Signature={s}"
    )


@_kind("shop erp db password zh", zh=True)
def _k_erp_pw_zh(r):
    s = _pw(r, 12)
    return s, f"聚水潭导出的数据库是本地 MySQL，root 密码（装的时候随手设的）：{s}，只在办公室那台电脑上。"


# ---- 3. SRE on call ----------------------------------------------------------------------------------------------


@_kind("pagerduty routing key json")
def _k_pd_json(r):
    s = _hex(r, 32)
    return s, (
        "Alertmanager → PagerDuty test event that finally worked:\n\n```json\n"
        + json.dumps(
            {
                "routing_key": s,
                "event_action": "trigger",
                "payload": {"summary": "etcd member down", "source": "prom-02", "severity": "critical"},
            },
            indent=2,
        )
        + "\n```"
    )


@_kind("pagerduty key chat zh", zh=True)
def _k_pd_chat_zh(r):
    s = _hex(r, 32)
    return s, (
        "值班交接 @阿杰：\n1. 支付网关的 PD 集成 key 换了，新的是 "
        f"{s}，alertmanager 的 receiver 我还没改\n2. 周三凌晨有数据库维护，提前静默告警"
    )


@_kind("opsgenie genie key curl")
def _k_opsgenie(r):
    s = _uuid(r)
    return s, (
        "curl -X POST https://api.opsgenie.com/v2/alerts "
        f'-H "Authorization: GenieKey {s}" -H "Content-Type: application/json" '
        '-d \'{"message": "disk 95% on nexus.ops.corp"}\''
    )


@_kind("grafana service account token env")
def _k_grafana_env(r):
    s = "glsa_" + _w(r, 32) + "_" + _hex(r, 8)
    return s, f"dashboard-sync CI variables:\nGRAFANA_URL=https://grafana.sre.corp\nGRAFANA_TOKEN={s}\nDRY_RUN=false"


@_kind("grafana token screenshot zh", zh=True)
def _k_grafana_zh(r):
    s = "glsa_" + _w(r, 32) + "_" + _hex(r, 8)
    return s, (
        "[截图描述] Grafana → Administration → Service accounts → terraform-bot → Add token 之后的绿色提示框，"
        f"里面是 {s}，旁边一行小字 “You will not be able to see this token again”。"
    )


@_kind("prometheus scrape basic auth")
def _k_prom_basic(r):
    s = _pw(r, 18, "!%+=")
    return s, (
        "```yaml\nscrape_configs:\n  - job_name: node-edge\n    scheme: https\n    basic_auth:\n"
        f"      username: prometheus\n      password: '{s}'\n    static_configs:\n      - targets: ['edge-01.sre.corp:9100']\n```"
    )


@_kind("terraform cloud token tfrc")
def _k_tfc(r):
    s = f"{_w(r, 14)}.atlasv1.{_w(r, 67)}"
    return s, (
        "~/.terraform.d/credentials.tfrc.json on the jump box:\n"
        + json.dumps({"credentials": {"app.terraform.io": {"token": s}}}, indent=2)
    )


@_kind("cloudflare api token shell history")
def _k_cf_token(r):
    s = _w(r, 40, ALNUM + "-")
    return s, (
        f"  901  export CLOUDFLARE_API_TOKEN={s}\n"
        "  902  terraform -chdir=dns plan\n  903  terraform -chdir=dns apply -auto-approve"
    )


@_kind("cloudflare global key zh", zh=True)
def _k_cf_global_zh(r):
    s = _hex(r, 37)
    return s, (
        "老的 DNS 脚本还在用 Global API Key（不是 token），"
        f"X-Auth-Email 是 ops 邮箱，X-Auth-Key：{s}，迁完就去 Cloudflare 后台 roll 掉。"
    )


@_kind("kubernetes secret yaml")
def _k_k8s_yaml(r):
    s = base64.b64encode(_pw(r, 16).encode()).decode()
    return s, (
        "```yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: orders-db\n  namespace: shop\ntype: Opaque\ndata:\n"
        f"  username: {base64.b64encode(b'orders_rw').decode()}\n  password: {s}\n```"
    )


@_kind("kubectl create secret zh", zh=True)
def _k_kubectl_zh(r):
    s = _pw(r, 15, "!%+=")
    return s, (
        "凌晨 3 点的修复记录：secret 被误删了，手动重建——\n"
        f"`kubectl -n payments create secret generic gateway-db --from-literal=username=gw --from-literal=password='{s}'`\n"
        "然后 rollout restart。"
    )


@_kind("etcd client key pem")
def _k_etcd_pem(r):
    der = (
        bytes.fromhex("30770201010420")
        + _bytes(r, 32)
        + bytes.fromhex("a00a06082a8648ce3d030107a144034200")
        + b"\x04"
        + _bytes(r, 64)
    )
    body = base64.b64encode(der).decode()
    s = (
        "-----BEGIN EC PRIVATE KEY-----\n"
        + "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
        + "\n-----END EC PRIVATE KEY-----"
    )
    return s, f"etcd client key for the backup cron (/etc/etcd/pki/backup-client.key):\n\n```\n{s}\n```"


@_kind("etcdctl user password zh", zh=True)
def _k_etcdctl_zh(r):
    s = _pw(r, 14)
    return s, (
        "etcd 开了 auth 之后备份命令要带账号：\n"
        f"ETCDCTL_API=3 etcdctl --endpoints=https://etcd-01.infra.beiming.internal:2379 --user root:{s} snapshot save /backup/etcd.db"
    )


@_kind("consul token before label")
def _k_consul_before(r):
    s = _uuid(r)
    return s, (
        f"{s}\n\n"
        "^ that one. Don't lose it again. It is the bootstrap token for the consul cluster (SecretID, not AccessorID), "
        "the policy is global-management."
    )


@_kind("consul acl token zh", zh=True)
def _k_consul_zh(r):
    s = _uuid(r)
    return s, f"consul 的 CONSUL_HTTP_TOKEN（给 nomad 用的那个，SecretID）：「{s}」，AccessorID 是另一串，别搞混。"


@_kind("postgres url log line")
def _k_pg_log(r):
    s = _pw_url(r, 16)
    return s, (
        f'2026-11-30T02:14:07Z level=error svc=orders msg="connect failed" '
        f'dsn="postgres://orders_rw:{s}@pg-03.db.zhuque.internal:5432/orders?sslmode=require" err="timeout"'
    )


@_kind("mysql go dsn")
def _k_mysql_go(r):
    s = _pw(r, 14, "!%+=?")
    return (
        s,
        f'In config.go the fallback DSN is hard-coded: `"inventory:{s}@tcp(mysql-02.data.lanhai.internal:3306)/inventory?parseTime=true&loc=Local"`',
    )


@_kind("jdbc spring properties zh", zh=True)
def _k_jdbc_zh(r):
    s = _pw(r, 13)
    return s, (
        "老的 Java 服务配置（application-prod.properties）：\n"
        "spring.datasource.url=jdbc:mysql://mysql-01.core.qingniao.internal:3306/mall?useSSL=false\n"
        f"spring.datasource.username=mall\nspring.datasource.password={s}\n"
        "# TODO 迁到 KMS"
    )


@_kind("sqlserver ado connection string")
def _k_mssql(r):
    s = _pw(r, 15, "!#%+=?")
    return s, (
        "appsettings.Production.json, reporting service:\n"
        + json.dumps(
            {
                "ConnectionStrings": {
                    "Reports": f"Server=tcp:sql-rpt.corp,1433;Database=Reports;User Id=rpt_reader;Password={s};Encrypt=True;TrustServerCertificate=True;"
                }
            },
            indent=2,
        )
    )


@_kind("oracle ezconnect")
def _k_oracle(r):
    s = _pw(r, 12, "#")
    return s, f"legacy billing still on Oracle: sqlplus billing_ro/{s}@//ora-bill.data.beiming.internal:1521/BILLPDB1"


@_kind("mongodb srv url")
def _k_mongo(r):
    s = _pw_url(r, 20)
    return s, f"MONGODB_URI='mongodb+srv://analytics:{s}@cluster0.x7k2p.mongodb.net/events?retryWrites=true&w=majority'"


@_kind("libpq keyword dsn zh", zh=True)
def _k_libpq_zh(r):
    s = _pw(r, 14)
    return s, (
        "pgbouncer 后面的连接串用的是 key=value 写法：\n"
        f"`host=pg-01.db.lanhai.internal port=6432 dbname=ledger user=ledger_app password={s} sslmode=verify-full`"
    )


@_kind("percent-encoded dsn")
def _k_pct_dsn(r):
    raw = _pw(r, 10) + r.choice(["@", "/", ":", "#"]) + _pw(r, 5, "?")
    s = urllib.parse.quote(raw, safe="")
    return (
        s,
        f"SQLALCHEMY_DATABASE_URI = 'mysql+pymysql://etl:{s}@10.20.3.14:3306/warehouse?charset=utf8mb4'  # password url-encoded",
    )


@_kind("clickhouse dsn zh", zh=True)
def _k_clickhouse_zh(r):
    s = _pw_url(r, 15)
    return (
        s,
        f"日志分析用 ClickHouse：clickhouse://reader:{s}@ch-01.infra.zhuque.internal:9000/logs?secure=true ，只读账号。",
    )


@_kind("redis auth history")
def _k_redis_cli(r):
    s = _w(r, 24)
    return s, (
        f"$ redis-cli -h cache.prod.yunque-inc.cn -p 6380 --tls -a '{s}' --no-auth-warning INFO memory\n"
        "used_memory_human:11.92G"
    )


@_kind("redis requirepass conf zh", zh=True)
def _k_redis_conf_zh(r):
    s = _pw(r, 20, "!%+=")
    return s, (
        "```\n# redis.conf —— 生产（只改了下面三行）\nbind 0.0.0.0\nprotected-mode yes\n"
        f"requirepass {s}\n```\n重启后 sentinel 的 auth-pass 也要同步。"
    )


@_kind("rabbitmq amqps url")
def _k_amqp(r):
    s = _pw_url(r, 18)
    return s, f"celery broker: BROKER_URL=amqps://worker:{s}@mq.prod.hexiang-inc.cn:5671/%2Fshop"


@_kind("qq mail smtp auth code zh", zh=True)
def _k_qq_smtp_zh(r):
    s = _w(r, 16, LOWER)
    return s, (
        "发货通知邮件走 QQ 企业邮的 SMTP：smtp.exmail.qq.com:465，"
        f"账号 notice@tianmu-shop.cn，授权码（不是登录密码）{s}。"
    )


@_kind("smtp credentials ini")
def _k_smtp_ini(r):
    s = _pw(r, 16)
    return s, (
        "```ini\n[smtp]\nhost = smtp.sendgrid.net\nport = 587\nuser = apikey\n"
        f"password = SG.{_w(r, 22)}.{_w(r, 43)}\n\n[smtp_fallback]\nhost = mail.sre.corp\nuser = alerts\npassword = {s}\n```"
    )


@_kind("ldap bind ldapsearch")
def _k_ldap(r):
    s = _pw(r, 14, "!%+=?")
    return s, (
        "to see why the grafana login broke:\n"
        f"ldapsearch -x -H ldaps://ldap-01.infra.beiming.internal -D 'cn=svc-grafana,ou=svc,dc=beiming,dc=corp' -w '{s}' -b 'ou=people,dc=beiming,dc=corp' '(uid=liwei)'"
    )


@_kind("ldap bind password chat zh", zh=True)
def _k_ldap_zh(r):
    s = _pw(r, 12)
    return s, (
        "小王：Jenkins 的 LDAP 绑定账号 cn=jenkins,ou=svc 密码是多少\n"
        f"我：{s}\n小王：好了，可以登录了\n我：用完把这条删了"
    )


@_kind("jwt signing secret far from label")
def _k_jwt_far(r):
    s = _w(r, 48)
    return s, (
        "```\n# .env.production\nNODE_ENV=production\nPORT=8080\nLOG_LEVEL=info\nCORS_ORIGINS=https://shop.example\n"
        f"AUTH_JWT_KEY={s}\nAUTH_JWT_TTL=15m\n```\n\n"
        "Note to self: AUTH_JWT_KEY above is the HS256 signing secret, rotating it logs everyone out."
    )


@_kind("issued jwt in log zh", zh=True)
def _k_jwt_log_zh(r):
    iat = r.randint(1_780_000_000, 1_800_000_000)
    s = _jwt(r, {"sub": _digits(r, 9), "role": "admin", "iat": iat, "exp": iat + 86400})
    return s, (
        "排查 403 的时候从 nginx 日志里抠出来的管理员 token（24 小时有效）：\n"
        f'10.20.1.7 - - [01/Dec/2026:03:12:44 +0800] "GET /admin/api/orders HTTP/1.1" 403 "Bearer {s}"'
    )


@_kind("webhook hmac secret toml")
def _k_hmac_toml(r):
    s = _hex(r, 40)
    return s, (
        '```toml\n[github]\nwebhook_path = "/hooks/github"\n'
        f'webhook_secret = "{s}"\nallowed_events = ["push", "pull_request"]\n```'
    )


@_kind("stripe webhook signing secret")
def _k_whsec(r):
    s = "whsec_" + _w(r, 32)
    return s, f"Stripe CLI printed: Ready! Your webhook signing secret is {s} (^C to quit)"


@_kind("vault token")
def _k_vault(r):
    s = "hvs." + _w(r, 24)
    return (
        s,
        f"vault login worked with the root token from the unseal ceremony envelope: {s} — revoke after the migration",
    )


@_kind("internal host name zh", zh=True)
def _k_host_zh(r):
    s = _host(r)
    return s, f"内网跳板后面的那台机器叫 {s}，对外不要提这个域名，防火墙只放了办公网。"


@_kind("internal host forwarded email")
def _k_host_email(r):
    s = _host(r)
    return s, (
        "---------- Forwarded message ---------\nFrom: it-helpdesk\nSubject: maintenance tonight\n\n"
        f"Hi all, {s} will be down 23:00–01:00 for patching. Please don't schedule jobs against it.\n"
    )


@_kind("token wrapped over two lines zh", zh=True)
def _k_wrapped_zh(r):
    tok = "AKID" + _w(r, 32)
    key = _w(r, 32)
    s = key[:16] + "\n" + key[16:]
    return s, (f"手机备忘录抄过来的（屏幕太窄换行了）：\nSecretId {tok}\nSecretKey {s}\n这是 CDN 刷新用的子账号。")


@_kind("token wrapped over two lines")
def _k_wrapped_en(r):
    tok = "glsa_" + _w(r, 32) + "_" + _hex(r, 8)
    s = tok[:21] + "\n" + tok[21:]
    return s, f"from the pager SMS (it wrapped):\n{s}\nthat's the grafana SA token for the status page."


@_kind("bare high-entropy line")
def _k_bare(r):
    s = _w(r, 44, ALNUM + "+/")
    return s, f"{s}\n"


@_kind("bare token in memo zh", zh=True)
def _k_bare_zh(r):
    s = _w(r, 40)
    return s, f"备忘：\n{s}\n（周五前换掉）"


@_kind("invented token prefix")
def _k_invented(r):
    s = "hbx_live_" + _w(r, 30)
    return s, f"Hearthbox (the family calendar app) gave me an integration key `{s}` for the kitchen display."


@_kind("invented prefix zh", zh=True)
def _k_invented_zh(r):
    s = "tmk-" + _w(r, 8, LOWER + DIGITS) + "-" + _w(r, 24)
    return s, f"天目 ERP 内部开放接口的调用凭证是 {s}，写在 Header 的 X-Tm-Auth 里。"


@_kind("full-width password zh", zh=True)
def _k_fullwidth_zh(r):
    raw = _pw(r, 10, "!#%")
    s = "".join(chr(ord(c) + 0xFEE0) for c in raw)
    return s, f"输入法切到全角了，所以后台管理员密码就这么设上了：{s}，登录时也要切全角。"


@_kind("forwarded email temp password zh", zh=True)
def _k_fwd_temp_zh(r):
    s = _pw(r, 10, "@")
    return s, (
        "-------- 转发的邮件 --------\n发件人: noreply@cloud.tencent.com\n主题: 子用户登录信息\n\n"
        f"您好，子用户 ops-oncall 已创建，登录地址 https://cloud.tencent.com/login/subAccount，初始密码：{s}，首次登录需修改。"
    )


@_kind("grafana admin password pattern chat zh", zh=True)
def _k_grafana_pattern_zh(r):
    co = r.choice(["zhuque", "lanhai", "qingniao", "beiming"])
    s = f"{co.capitalize()}@{r.randint(2019, 2026)}{r.choice(['!', '#', ''])}"
    return s, (
        "新人：grafana admin 的密码是啥\n老李：还是那个老套路，公司名拼音首字母大写 + @ + 上线那年，"
        f"{s}\n新人：……这也太好猜了"
    )


@_kind("webhook url with token query")
def _k_hook_query(r):
    s = _w(r, 32)
    return (
        s,
        f"status page ingest: https://status.sre.corp/api/v1/incidents?source=alertmanager&token={s}&team=platform",
    )


@_kind("maven settings xml password")
def _k_maven(r):
    s = _pw(r, 16, "!%+=")
    return s, (
        "```xml\n<servers>\n  <server>\n    <id>nexus-releases</id>\n    <username>ci-deployer</username>\n"
        f"    <password>{s}</password>\n  </server>\n</servers>\n```"
    )


@_kind("basic auth header in access log")
def _k_basic_log(r):
    s = base64.b64encode(f"scraper:{_pw(r, 12, '!%+=')}".encode()).decode()
    return s, (
        f'10.8.0.14 - - [30/Nov/2026:22:01:09 +0000] "GET /federate HTTP/1.1" 401 0 "-" "Prometheus/2.53" '
        f'auth="Basic {s}"'
    )


@_kind("opsgenie key mixed note zh", zh=True)
def _k_opsgenie_zh(r):
    s = _uuid(r)
    return s, f"Opsgenie 的 API integration（给 Zabbix 用）key = {s}，只开了 Create and Update Access。"


@_kind("pagerduty user api token")
def _k_pd_user(r):
    s = "u+" + _w(r, 18, ALNUM + "-")
    return s, f"my personal PD REST token for the on-call CLI: {s} (scope: read/write, expires never — fix that)"


CHINESE: frozenset[str] = frozenset(_ZH)

# --------------------------------------------------------------------------------------------------------------
# markers
# --------------------------------------------------------------------------------------------------------------

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"【私密】{t}",
    lambda t: f"{t}（仅自己可见）",
    lambda t: f"PRIVATE: {t}",
    lambda t: f"{t} — keep this private, don't publish",
    lambda t: f"［私人］{t}",
    lambda t: f"<private>{t}</private>",
    lambda t: f"{t} #私密",
    lambda t: f"Private note: {t}",
    lambda t: f"不要公开：{t}",
    lambda t: f"{t} (private)",
    lambda t: f"🔒 {t}",
    lambda t: f"(personal, do not share) {t}",
    lambda t: f"{t} 【勿外传】",
    lambda t: f"<!-- private --> {t}",
    lambda t: f"〔隐私〕{t}",
    lambda t: f"{t} [confidential]",
    lambda t: f"#private #family {t}",
    lambda t: f"私人备注：{t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"private": "yes"},
    {"visibility": "private"},
    {"私密": True},
    {"publish": False},
    {"可见性": "仅自己"},
    {"confidential": "true"},
    {"tags": ["family", "private"]},
    {"access": "me-only"},
    {"公开": "否"},
    {"sensitivity": "confidential"},
    {"隐私": "是"},
    {"share": "no"},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "## Private notes",
    "### 私人信息",
    "# 隐私（不要公开）",
    "## Personal — do not share",
    "#### 仅限本人",
    "## 私密备注",
    "### Confidential",
    "## Family details (private)",
]

# --------------------------------------------------------------------------------------------------------------
# ordinary strings: no secrets, must be published unchanged
# --------------------------------------------------------------------------------------------------------------

ORDINARY: list[str] = [
    "密码至少 8 位，需包含大小写字母和数字",
    "Password rotation every 90 days is enforced by the IdP.",
    "password: ${DB_PASSWORD}",
    "secret_ref: vault://kv/prod/payments#api_key",
    "REDIS_PASSWORD=${REDIS_PASSWORD:?must be set}",
    "spring.datasource.password=${SPRING_DATASOURCE_PASSWORD}",
    "postgresql://<user>:<password>@<host>:5432/<db>",
    "The router admin password is stored in 1Password under 'Home / Network'.",
    "the Wi-Fi password is on the sticker under the router",
    "请在 .env 中设置 ALIYUN_ACCESS_KEY_SECRET，不要提交到 git",
    "支付密码请勿告诉任何人，客服不会向您索要验证码",
    "门锁临时密码功能在米家 App → 门锁 → 临时密码 里设置",
    "快递取件码一般是「货架号-层号-编号」的格式",
    "Home Assistant 的长期访问令牌在 个人资料 → 安全 页面底部创建",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 is the digest of an empty file",
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  test.txt",
    "git cherry-pick 4e1f0c2b9a7d3e58f6c1a0b2d4e6f8091a3c5e7b",
    "fixed in commit 1a2b3c4 (Luhn check in the card validator)",
    "image: nginx@sha256:4c0fdaa8b6341bfdeca5f18f7837462c80cff90527ee35ef185571e1c327beac",
    "request_id=3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "UUIDv7 example from RFC 9562: 017F22E2-79B0-7CC3-98C4-DC0C0C07398F",
    "ghcr.io/home-assistant/home-assistant:2024.11.3",
    "numpy==1.26.4",
    "torch>=2.3,<2.5",
    "docker pull redis:7.2-alpine",
    "10.0.0.0/8, 172.16.0.0/12 and 192.168.0.0/16 are the RFC 1918 private ranges",
    "TEST-NET-3 is 203.0.113.0/24 (RFC 5737), safe to use in docs",
    "https://example.com/oauth/callback?state=xyz&code=AUTH_CODE",
    "*/15 * * * * /usr/local/bin/backup.sh >> /var/log/backup.log 2>&1",
    "github.com ED25519 host key fingerprint (published by GitHub): SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU",
    "GPG fingerprint of the Python 3.12 release manager key (public, on python.org): 7169 605F 62C7 5135 6D05 4A26 A821 E680 E5FA 6305",
    "^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$",
    "base64 of 'hello world' is aGVsbG8gd29ybGQ=",
    'class="flex items-center justify-between px-4 py-2 text-sm font-medium text-gray-700 hover:bg-gray-50 dark:text-gray-200"',
    'font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "PingFang SC", "Microsoft YaHei", sans-serif;',
    "华为 Mate 60 Pro 12GB+512GB 雅川青",
    "iPhone 15 Pro Max 256GB 原色钛金属",
    "小米米家智能门锁 2 Pro 支持指纹、密码、NFC 开锁",
    "2024 年双十一 GMV 同比增长 23.5%",
    "订单状态：WAIT_SELLER_SEND_GOODS → WAIT_BUYER_CONFIRM_GOODS",
    "快递鸟接口文档：RequestType=1002 为即时查询",
    "淘宝 TOP API 的签名方法是 md5 或 hmac-sha256",
    "测试卡号 4111 1111 1111 1111 是 Visa 公开的测试号，沙箱环境不会扣款",
    "IBAN 格式：DE + 2 位校验码 + 18 位数字，总长 22 位",
    "身份证号第 18 位是校验码，可能是 X",
    "GB/T 2260 行政区划代码 110105 表示北京市朝阳区",
    "MQTT 默认端口 1883，TLS 端口 8883",
    "Zigbee channel 25 avoids overlap with Wi-Fi channels 1, 6 and 11",
    "mosquitto_passwd -c /mosquitto/config/passwd <username>",
    "kubectl get secret db-creds -o jsonpath='{.data.password}' | base64 -d",
    "kubectl -n monitoring rollout restart deploy/grafana",
    "consul acl token list -format=json | jq '.[].Description'",
    "ldapsearch -x -H ldaps://ldap.example.com -b dc=example,dc=com '(uid=jdoe)'",
    "redis-cli -h redis.example.com -p 6379 PING",
    "scrape_interval: 15s",
    'terraform { required_version = ">= 1.6.0" }',
    "Grafana 默认端口 3000，Prometheus 9090，Alertmanager 9093",
    "PagerDuty escalation policy: primary → secondary after 15 min",
    "smtp.qq.com 端口 465（SSL）或 587（STARTTLS）",
    "JWT 由 header.payload.signature 三部分组成，各段用 base64url 编码",
    "JWT exp 设为 15 分钟，refresh token 7 天",
    "HMAC-SHA256(secret, body) 的结果放在 X-Hub-Signature-256 头里",
    "Cloudflare 的 API token 权限建议只给 Zone:DNS:Edit",
    "Vault 路径 secret/data/shop/payment 只存引用，不存明文",
    "openssl rand -hex 32 生成 32 字节随机密钥",
    "TOTP 使用 30 秒步长和 6 位数字（RFC 6238）",
    "password_hash = bcrypt(password, rounds=12)",
    'ssh-keygen -t ed25519 -C "laptop 2024"',
    "export KUBECONFIG=~/.kube/config:~/.kube/staging.yaml",
    "curl -fsSL https://get.docker.com | sh",
    "Content-Security-Policy: default-src 'self'; img-src 'self' data: https:",
    "max_connections = 200",
    'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"',
    "MAC 地址格式如 00:1A:2B:3C:4D:5E",
    "电费 2024-11：386 度，231.60 元",
    "EXIF GPS 信息在上传前会被自动去除",
    "ISBN 978-7-115-54608-1",
    "营业执照示例图片里的号码已打码",
    "顺丰开放平台文档里的示例运单号 SF1234567890123，仅供演示，不是真实包裹",
    "演示店铺的公开订单号 DEMO-20261204-0001 可以在沙箱后台查到",
    "amqp://guest:guest@localhost:5672/ is RabbitMQ's default and only works from localhost",
    "ruff check --select E,F,W,I --fix .",
]
