"""Blind canary set, round 7: written blind (without reading the detectors under memwiki/, the other rounds or the
tests) on 2026-12-03, from the set format (tests/blind/example_set.py) and the harness docstring only.

What it covers: keys of Chinese clouds, IM platforms and model APIs (Aliyun, Tencent Cloud, Baidu, Huawei Cloud,
Volcengine, Feishu/Lark, DingTalk, WeCom, WeChat, Qiniu, Upyun, DeepSeek, Moonshot, Zhipu, DashScope, SiliconFlow,
MiniMax, Amap, Gitee, proxy subscriptions) and of international SaaS (including invented providers with shapes no rule
list knows); database, broker and Git URLs with credentials (plain and percent-encoded, Chinese passwords included);
config files pasted whole (.env, YAML, JSON, TOML, INI, HCL, XML, Dockerfile, compose, k8s, systemd, nginx, apache,
crontab, WireGuard, frp, Ansible, Helm); shell history, logs, stack traces, CI output and notebook output; JWTs,
Basic-auth headers, cookies, signed URLs, private keys of five kinds, wallet seeds and keys; one-time, recovery,
door, locker, safe, pickup, PUK and PIN codes; Wi-Fi and router passwords; bank cards (valid Luhn), IBANs (valid
check digits), national ids (Chinese with check digit, HK, Taiwan, US, UK, Spain), passports (with an MRZ line),
medical and insurance numbers, licence plates, a VIN; phone numbers of eleven countries written many ways (full-width
digits, spoken Chinese digits); personal e-mails (plain, obfuscated in English and Chinese); home addresses in five
countries; social accounts; internal hosts. Texts are notes to self, chat turns, forwarded e-mails and IM threads,
voice transcripts, Markdown tables, quotes, code spans and fences, secrets wrapped over two lines.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from urllib.parse import quote

Gen = Callable[[random.Random], tuple[str, str]]

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = string.ascii_letters + string.digits
LALNUM = LOWER + DIGITS
UALNUM = UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
SYMS = "!@#%^-.+="
URL_SYMS = "-.~!"

_PW_WORDS = [
    "Sunflower", "Maple", "Tiger", "Ocean", "Winter", "Falcon", "Pumpkin", "Galaxy", "Orchid", "Panda",
    "Mango", "Cobalt", "Harbor", "Lantern", "Willow", "Bamboo", "Thunder", "Cactus", "Meteor", "Saffron",
]  # fmt: skip
_PINYIN_PW = ["woaini", "laowang", "xiaomi", "huahua", "dabao", "lele", "tiantian", "xiaoyu", "mengmeng", "wangcai"]
_LOWER_WORDS = [
    "copper", "river", "violet", "anchor", "pepper", "glacier", "orbit", "velvet", "tundra", "marble",
    "falcon", "ember", "nectar", "quartz", "saddle", "timber", "walnut", "zephyr", "cobalt", "lagoon",
    "prism", "meadow", "canyon", "thistle", "harvest", "beacon", "sparrow", "juniper", "pebble", "lantern",
]  # fmt: skip
_ZH_PHRASES = [
    "天王盖地虎", "芝麻开门", "床前明月光", "好好学习天天向上", "春眠不觉晓", "白日依山尽", "一帆风顺", "风雨无阻",
]  # fmt: skip
_BIP39 = (
    "abandon ability able about above absent absorb abstract absurd abuse access accident account accuse achieve "
    "acid acoustic acquire across act action actor actress actual adapt add addict address adjust admit adult "
    "advance advice aerobic affair afford afraid again age agent agree ahead aim air airport aisle alarm album "
    "alcohol alert alien all alley allow almost alone alpha already also alter always amateur amazing among amount "
    "amused analyst anchor ancient anger angle angry animal ankle announce annual another answer antenna antique "
    "anxiety any apart apology appear apple approve april arch arctic area arena argue arm armed armor army around "
    "arrange arrest arrive arrow art artefact artist artwork ask aspect assault asset assist assume asthma athlete "
    "atom attack attend attitude attract auction audit august aunt author auto autumn average avocado avoid awake "
    "aware away awesome awful awkward axis baby bachelor bacon badge bag balance balcony ball bamboo banana banner "
    "bar barely bargain barrel base basic basket battle beach bean beauty because become beef before begin behave "
    "behind believe below belt bench benefit best betray better between beyond bicycle bid bike bind biology bird "
    "birth bitter black blade blame blanket blast bleak bless blind blood blossom blouse blue blur blush board boat "
    "body boil bomb bone bonus book boost border boring borrow boss bottom bounce box boy bracket brain brand brass "
    "brave bread breeze brick bridge brief bright bring brisk broccoli broken bronze broom brother brown brush "
    "cabbage cabin cable cactus cage cake call calm camera camp canal cancel candy cannon canoe canvas canyon"
).split()
_CN_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗高郑梁谢宋唐许韩冯邓曹彭曾"
_CN_GIVEN = ["伟", "芳", "娜", "敏", "静", "丽", "强", "磊", "军", "洋", "勇", "艳", "杰", "娟", "涛", "明", "超",
             "秀英",
             "霞", "平", "刚", "桂英", "子涵", "浩然", "欣怡", "宇轩", "梓萱", "一鸣", "思远", "雨桐"]  # fmt: skip
_PY_SUR = ["zhang", "wang", "li", "liu", "chen", "yang", "huang", "zhao", "wu", "zhou", "xu", "sun", "ma", "zhu", "hu"]
_PY_GIVEN = ["wei", "fang", "na", "min", "jing", "qiang", "lei", "jun", "yong", "yan", "jie", "tao", "ming", "chao",
             "hao", "yu", "xin", "yi", "haoran", "zihan", "yuxuan", "siyuan", "yutong"]  # fmt: skip
_FIRST = ["James", "Olivia", "Liam", "Emma", "Noah", "Ava", "Ethan", "Mia", "Lucas", "Chloe", "Mateo", "Priya",
          "Hannah", "Daniel", "Sofia", "Yusuf", "Ingrid", "Kofi"]  # fmt: skip
_LAST = ["Smith", "Garcia", "Nguyen", "Patel", "Rossi", "Kowalski", "Okafor", "Johansson", "Tanaka", "Fischer",
         "Dubois", "Walsh", "Silva", "Novak"]  # fmt: skip
_CN_PLACES = [
    ("北京市", "朝阳区", ["望京西路", "酒仙桥路", "东三环中路", "广顺北大街"]),
    ("上海市", "浦东新区", ["张杨路", "世纪大道", "锦绣路", "杨高南路"]),
    ("深圳市", "南山区", ["科技园南路", "深南大道", "后海大道", "沙河西路"]),
    ("杭州市", "西湖区", ["文三路", "天目山路", "古墩路", "文一西路"]),
    ("成都市", "武侯区", ["天府大道北段", "科华北路", "玉林南路"]),
    ("广州市", "天河区", ["天河北路", "体育西路", "黄埔大道西"]),
    ("南京市", "鼓楼区", ["中山北路", "湖南路", "草场门大街"]),
    ("武汉市", "洪山区", ["珞喻路", "光谷大道", "雄楚大道"]),
]
_CN_COMPOUNDS = [
    "阳光花园", "金地格林小镇", "万科城市花园", "保利天悦", "融创壹号院", "龙湖春江郦城", "绿城桂花园", "华润城润府",
]  # fmt: skip
_CN_REGIONS = ["110105", "110108", "310104", "310115", "440305", "440106", "330106", "320102", "510107", "420111"]
_CN_MOBILE_PREFIX = [
    "130", "131", "132", "133", "135", "136", "137", "138", "139", "150", "151", "152", "155", "156", "157",
    "158", "159", "166", "173", "176", "177", "180", "181", "182", "185", "186", "187", "188", "189", "198", "199",
]  # fmt: skip
_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
_SPOKEN = "零幺二三四五六七八九"


def _w(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _b64(r: random.Random, nbytes: int) -> str:
    return base64.b64encode(bytes(r.getrandbits(8) for _ in range(nbytes))).decode()


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _uuid(r: random.Random) -> str:
    return str(uuid.UUID(int=r.getrandbits(128), version=4))


def _ts(r: random.Random) -> int:
    return r.randint(1_760_000_000, 1_800_000_000)


def _jwt(r: random.Random, claims: dict) -> str:
    head = {"alg": r.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"}
    claims = {**claims, "iat": _ts(r), "jti": _w(r, 12)}
    body = _b64url(json.dumps(claims, separators=(",", ":")).encode())
    return f"{_b64url(json.dumps(head, separators=(',', ':')).encode())}.{body}.{_w(r, r.choice([43, 86]), B64URL)}"


def _pw(r: random.Random, url_safe: bool = False) -> str:
    """A password as people pick them: word+year+symbol, random, pinyin+digits, passphrase, mixed blocks."""
    syms = URL_SYMS if url_safe else SYMS
    style = r.randrange(5)
    if style == 0:
        return r.choice(_PW_WORDS) + str(r.randint(1000, 9999)) + r.choice(syms)
    if style == 1:
        body = [r.choice(UPPER), r.choice(LOWER), r.choice(DIGITS), r.choice(syms)]
        body += [r.choice(ALNUM + syms) for _ in range(r.randint(9, 14))]
        r.shuffle(body)
        return r.choice(ALNUM) + "".join(body)
    if style == 2:
        return r.choice(_PINYIN_PW) + r.choice(syms) + str(r.randint(100000, 999999))
    if style == 3:
        return "-".join(r.sample(_LOWER_WORDS, 3)) + str(r.randint(10, 99))
    return _w(r, 4, UPPER) + r.choice(syms) + _w(r, 6, LALNUM) + r.choice(syms) + _w(r, 2, DIGITS)


def _passphrase(r: random.Random) -> str:
    return " ".join(r.sample(_LOWER_WORDS, 4)) + f" {r.randint(10, 99)}"


def _ip10(r: random.Random) -> str:
    return f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}"


def _cn_name(r: random.Random) -> str:
    return r.choice(_CN_SURNAMES) + r.choice(_CN_GIVEN)


def _pinyin(r: random.Random) -> str:
    return r.choice(_PY_SUR) + r.choice(_PY_GIVEN)


def _en_email(r: random.Random) -> str:
    dom = r.choice(["gmail.com", "outlook.com", "fastmail.com", "icloud.com", "proton.me"])
    return f"{r.choice(_FIRST).lower()}.{r.choice(_LAST).lower()}{r.randint(1, 99)}@{dom}"


def _cn_mobile(r: random.Random) -> str:
    return r.choice(_CN_MOBILE_PREFIX) + _w(r, 8, DIGITS)


def _cn_address(r: random.Random) -> str:
    city, district, roads = r.choice(_CN_PLACES)
    return (
        f"{city}{district}{r.choice(roads)}{r.randint(1, 999)}号{r.choice(_CN_COMPOUNDS)}"
        f"{r.randint(1, 30)}栋{r.randint(1, 6)}单元{r.randint(1, 33)}{r.randint(1, 8):02d}室"
    )


def _group(s: str, n: int = 4, sep: str = " ") -> str:
    return sep.join(s[i : i + n] for i in range(0, len(s), n))


def _luhn(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + _w(r, length - len(prefix) - 1, DIGITS)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


def _iban(cc: str, bban: str) -> str:
    digits = "".join(str(int(ch, 36)) for ch in bban + cc + "00")
    return f"{cc}{98 - int(digits) % 97:02d}{bban}"


def _cn_id(r: random.Random) -> str:
    body = (
        f"{r.choice(_CN_REGIONS)}{r.randint(1955, 2006):04d}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
        f"{r.randint(0, 999):03d}"
    )
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    return body + "10X98765432"[sum(int(c) * k for c, k in zip(body, weights, strict=True)) % 11]


def _hkid(r: random.Random) -> str:
    letter, digits = r.choice(UPPER), _w(r, 6, DIGITS)
    total = 36 * 9 + (ord(letter) - 55) * 8 + sum(int(c) * k for c, k in zip(digits, [7, 6, 5, 4, 3, 2], strict=True))
    check = (11 - total % 11) % 11
    return f"{letter}{digits}({'A' if check == 10 else check})"


_TW_CODES = dict(zip("ABCDEFGHJKLMNPQRSTUVXYWZIO", range(10, 36), strict=True))


def _twid(r: random.Random) -> str:
    letter = r.choice("ABCDEFGHJKLMNPQRSTUVXYWZ")
    code = _TW_CODES[letter]
    digits = r.choice("12") + _w(r, 7, DIGITS)
    total = code // 10 + (code % 10) * 9 + sum(int(c) * k for c, k in zip(digits, range(8, 0, -1), strict=True))
    return f"{letter}{digits}{(10 - total % 10) % 10}"


def _nhs(r: random.Random) -> str:
    while True:
        d = _w(r, 9, DIGITS)
        check = 11 - sum(int(c) * (10 - i) for i, c in enumerate(d)) % 11
        check = 0 if check == 11 else check
        if check != 10:
            return f"{d[:3]} {d[3:6]} {d[6:]}{check}"


_VIN_VALUES = {**{str(i): i for i in range(10)}, **dict(zip("ABCDEFGH", range(1, 9), strict=True))}
_VIN_VALUES |= {"J": 1, "K": 2, "L": 3, "M": 4, "N": 5, "P": 7, "R": 9}
_VIN_VALUES |= dict(zip("STUVWXYZ", range(2, 10), strict=True))


def _vin(r: random.Random) -> str:
    chars = list(r.choice(["1HG", "WVW", "JTD", "5YJ", "LSV", "WBA"]) + _w(r, 14, "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"))
    weights = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2]
    check = sum(_VIN_VALUES[c] * w for c, w in zip(chars, weights, strict=True)) % 11
    chars[8] = "X" if check == 10 else str(check)
    return "".join(chars)


def _mrz_check(s: str) -> str:
    def value(c: str) -> int:
        return 0 if c == "<" else int(c) if c.isdigit() else ord(c) - 55

    return str(sum(value(c) * (7, 3, 1)[i % 3] for i, c in enumerate(s)) % 10)


def _pem_lines(r: random.Random, head: str, n: int, width: int = 64) -> list[str]:
    lines = [head + _w(r, width - len(head), B64)] + [_w(r, width, B64) for _ in range(n - 1)]
    return [*lines, _w(r, r.randint(12, 56), B64) + "="]


KINDS: dict[str, Gen] = {}
_ZH: set[str] = set()


def _kind(name: str, zh: bool = False) -> Callable[[Gen], Gen]:
    def register(fn: Gen) -> Gen:
        if name in KINDS:
            raise ValueError(f"duplicate kind {name!r}")
        KINDS[name] = fn
        if zh:
            _ZH.add(name)
        return fn

    return register


# ------------------------------------------------------------------ Chinese clouds, IM platforms, model APIs


@_kind("aliyun accesskey pair zh", zh=True)
def _aliyun_ak(r: random.Random) -> tuple[str, str]:
    s = _w(r, 30)
    return s, (
        "阿里云 RAM 子账号 deploy-bot 新建的 AccessKey：\n"
        f"AccessKey ID：LTAI5t{_w(r, 18)}\nAccessKey Secret：{s}\n（控制台只显示这一次，已截图）"
    )


@_kind("aliyun cli config json")
def _aliyun_cli(r: random.Random) -> tuple[str, str]:
    s = _w(r, 30)
    profile = {"name": "default", "mode": "AK", "access_key_id": "LTAI5t" + _w(r, 18), "access_key_secret": s}
    cfg = {"current": "default", "profiles": [{**profile, "region_id": "cn-hangzhou", "output_format": "json"}]}
    return s, "$ cat ~/.aliyun/config.json\n" + json.dumps(cfg, indent=2)


@_kind("aliyun oss presigned url zh", zh=True)
def _oss_url(r: random.Random) -> tuple[str, str]:
    sig = quote(_b64(r, 20), safe="")
    url = (
        f"https://{r.choice(['acme-backup', 'fin-reports', 'hr-files'])}.oss-cn-shanghai.aliyuncs.com/db/"
        f"{r.randint(20260101, 20261231)}.sql.gz?OSSAccessKeyId=LTAI5t{_w(r, 18)}&Expires={_ts(r)}&Signature={sig}"
    )
    return sig, f"备份的临时下载链接发给老周了，24 小时内有效：{url}"


@_kind("aliyun rds pymysql zh", zh=True)
def _rds(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "# 连阿里云 RDS（白名单只放了办公室出口 IP）\n"
        f"conn = pymysql.connect(host='rm-{_w(r, 17, LALNUM)}.mysql.rds.aliyuncs.com', port=3306,\n"
        f"                       user='bi_reader', password='{p}', database='dw', charset='utf8mb4')"
    )


@_kind("aliyun sms dotenv zh", zh=True)
def _alisms(r: random.Random) -> tuple[str, str]:
    s = _w(r, 30)
    return s, (
        "# 短信验证码服务 .env（阿里云短信）\n"
        f"ALIYUN_SMS_ACCESS_KEY_ID=LTAI5t{_w(r, 18)}\nALIYUN_SMS_ACCESS_KEY_SECRET={s}\n"
        f"ALIYUN_SMS_SIGN_NAME=青禾科技\nALIYUN_SMS_TEMPLATE_CODE=SMS_{r.randint(100000000, 999999999)}"
    )


@_kind("tencent cloud api key zh", zh=True)
def _tc_key(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"腾讯云主账号 API 密钥（千万别传 GitHub）\nSecretId = AKID{_w(r, 32)}\nSecretKey = {s}"


@_kind("tencent cos python snippet")
def _cos_py(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, (
        "from qcloud_cos import CosConfig, CosS3Client\n\n"
        f"config = CosConfig(Region='ap-guangzhou', SecretId='AKID{_w(r, 32)}', SecretKey='{s}')\n"
        "client = CosS3Client(config)\n"
        "client.upload_file(Bucket='assets-1250000000', LocalFilePath='logo.png', Key='logo.png')"
    )


@_kind("tccli configure zh", zh=True)
def _tccli(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, (
        "# 新机器上配一下 tccli，地域用广州\n"
        f"tccli configure set secretId AKID{_w(r, 32)}\ntccli configure set secretKey {s}\n"
        "tccli configure set region ap-guangzhou"
    )


@_kind("tencent cvm root password zh", zh=True)
def _cvm(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    ip = f"{r.choice([43, 49, 81, 101, 119])}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}"
    return p, f"轻量服务器重装了系统，公网 IP {ip}，控制台重置的 root 密码：{p}（安全组只开了 22/80/443）"


@_kind("baota panel install output zh", zh=True)
def _baota(r: random.Random) -> tuple[str, str]:
    p = _w(r, 8, LALNUM)
    return p, (
        "宝塔装完的输出，先记着：\n==================================================================\n"
        f"外网面板地址: https://{r.randint(100, 223)}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}"
        f":{r.randint(10000, 40000)}/{_w(r, 8, LALNUM)}\n"
        f"username: {_w(r, 8, LALNUM)}\npassword: {p}\n"
        "=================================================================="
    )


@_kind("baidu qianfan ak sk zh", zh=True)
def _qianfan(r: random.Random) -> tuple[str, str]:
    sk = _w(r, 32)
    return sk, f"千帆大模型平台，应用「知识库助手」：API Key = {_w(r, 24)}，Secret Key = {sk}；换 access_token 要用这俩"


@_kind("baidu map ak in url zh", zh=True)
def _bmap(r: random.Random) -> tuple[str, str]:
    ak = _w(r, 32)
    return ak, (
        "地理编码接口能通了：https://api.map.baidu.com/geocoding/v3/?address=北京市海淀区上地十街10号"
        f"&output=json&ak={ak}&callback=showLocation"
    )


@_kind("huawei cloud credentials csv zh", zh=True)
def _hw_csv(r: random.Random) -> tuple[str, str]:
    sk = _w(r, 40)
    return sk, (
        "华为云控制台下载的 credentials.csv，内容原样贴这：\n"
        f"User Name,Access Key Id,Secret Access Key\nhw-ops,{_w(r, 20, UALNUM)},{sk}"
    )


@_kind("huawei obs env zh", zh=True)
def _hw_env(r: random.Random) -> tuple[str, str]:
    sk = _w(r, 40)
    return sk, (
        f"# OBS 每晚同步脚本要的环境变量（华为云）\nexport HUAWEICLOUD_SDK_AK={_w(r, 20, UALNUM)}\n"
        f"export HUAWEICLOUD_SDK_SK={sk}\nexport OBS_ENDPOINT=obs.cn-north-4.myhuaweicloud.com"
    )


@_kind("volcengine access key zh", zh=True)
def _volc(r: random.Random) -> tuple[str, str]:
    sk = _b64(r, 45)
    return sk, (
        f"火山引擎 IAM 访问密钥\nAccessKeyId: AKLT{_w(r, 40, B64URL)}\nSecretAccessKey: {sk}\n下次记得只给 TOS 的权限"
    )


@_kind("volcengine ark api key zh", zh=True)
def _ark(r: random.Random) -> tuple[str, str]:
    k = _uuid(r)
    return k, (
        f"豆包（方舟）的 API Key：{k}，推理接入点 ep-{r.randint(20250101, 20261231)}{r.randint(100000, 999999)}"
        f"-{_w(r, 5, LALNUM)}，base_url 填 https://ark.cn-beijing.volces.com/api/v3"
    )


@_kind("feishu app secret zh", zh=True)
def _feishu_app(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, (
        f"飞书自建应用「周报机器人」凭证与基础信息\nApp ID：cli_a{_w(r, 15, HEX)}\nApp Secret：{s}\n"
        "权限：发消息、读通讯录"
    )


@_kind("feishu tenant access token zh", zh=True)
def _feishu_tat(r: random.Random) -> tuple[str, str]:
    t = "t-g" + _w(r, 4, DIGITS) + _w(r, 36, ALNUM)
    return t, (
        "调 auth/v3/tenant_access_token/internal 返回："
        f'{{"code":0,"expire":7200,"tenant_access_token":"{t}"}} 两小时过期'
    )


@_kind("lark bot webhook")
def _lark_hook(r: random.Random) -> tuple[str, str]:
    u = _uuid(r)
    return u, f"Lark custom bot for #oncall-payments: https://open.larksuite.com/open-apis/bot/v2/hook/{u} (unsigned)"


@_kind("feishu bot sign secret zh", zh=True)
def _feishu_sign(r: random.Random) -> tuple[str, str]:
    s = _w(r, 22)
    return s, (
        f"群机器人地址 https://open.feishu.cn/open-apis/bot/v2/hook/{_uuid(r)}\n"
        f"安全设置勾了「签名校验」，密钥 {s}，用 timestamp 加换行加密钥做 HmacSHA256"
    )


@_kind("dingtalk robot webhook zh", zh=True)
def _ding_hook(r: random.Random) -> tuple[str, str]:
    t = _w(r, 64, HEX)
    return t, f"钉钉告警群机器人 👉 https://oapi.dingtalk.com/robot/send?access_token={t}\n关键词设置的是「告警」"


@_kind("dingtalk sign secret zh", zh=True)
def _ding_sec(r: random.Random) -> tuple[str, str]:
    s = "SEC" + _w(r, 64, HEX)
    return s, f"加签：{s}\n（python 里 hmac.new(secret.encode(), string_to_sign, sha256) 再 base64 + urlencode）"


@_kind("dingtalk app credentials")
def _ding_app(r: random.Random) -> tuple[str, str]:
    s = _w(r, 1) + _w(r, 63, B64URL)
    return s, (
        f"DingTalk internal app (attendance sync)\nAppKey: ding{_w(r, 16, LALNUM)}\nAppSecret: {s}\n"
        f"AgentId: {r.randint(1000000000, 3999999999)}"
    )


@_kind("wecom robot webhook zh", zh=True)
def _wecom_hook(r: random.Random) -> tuple[str, str]:
    k = _uuid(r)
    return k, (
        f"企业微信群机器人：curl 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={k}' "
        '-H \'Content-Type: application/json\' -d \'{"msgtype":"text","text":{"content":"发布完成"}}\''
    )


@_kind("wecom corpsecret zh", zh=True)
def _wecom_secret(r: random.Random) -> tuple[str, str]:
    s = _w(r, 1) + _w(r, 42, B64URL)
    return s, f"企业微信后台 → 应用管理 → 自建「打卡同步」：corpid=ww{_w(r, 16, HEX)}，agentid=1000002，secret={s}"


@_kind("wechat official account appsecret zh", zh=True)
def _wx_mp(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, HEX)
    return s, f"公众号 开发 → 基本配置：AppID wx{_w(r, 16, HEX)}，AppSecret {s}（重置过一次，旧的已作废）"


@_kind("wechat pay apiv3 key zh", zh=True)
def _wx_pay(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, f"微信支付商户平台：商户号 16{_w(r, 8, DIGITS)}，APIv3 密钥 {s}，证书序列号 {_w(r, 40, HEX).upper()}"


@_kind("alipay app private key one line zh", zh=True)
def _alipay_key(r: random.Random) -> tuple[str, str]:
    k = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + _w(r, r.randint(300, 400), B64)
    return k, f"支付宝开放平台，应用私钥（RSA2，PKCS8，工具生成的一行版）：\n{k}\n公钥已上传，私钥只存在这儿"


@_kind("qiniu access secret key zh", zh=True)
def _qiniu(r: random.Random) -> tuple[str, str]:
    sk = _w(r, 1) + _w(r, 39, B64URL)
    return sk, f"七牛 Kodo 图床：\n- AK：{_w(r, 40, B64URL)}\n- SK：{sk}\n- 空间：static-img（华东-浙江）"


@_kind("upyun operator password zh", zh=True)
def _upyun(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"又拍云存储 操作员 ops_{_w(r, 4, LOWER)}，密码 {p}，服务名 cdn-assets，FTP 也用这个"


@_kind("deepseek key export")
def _deepseek(r: random.Random) -> tuple[str, str]:
    k = "sk-" + _w(r, 32, HEX)
    return k, f"$ export DEEPSEEK_API_KEY={k}   # platform.deepseek.com, topped up 50 CNY\n$ python chat.py"


@_kind("moonshot kimi key zh", zh=True)
def _kimi(r: random.Random) -> tuple[str, str]:
    k = "sk-" + _w(r, 48)
    return k, f"Kimi 开放平台的 key 给你：{k}（余额还剩 {r.randint(10, 99)} 元，别拿去跑批量）"


@_kind("zhipu glm key zh", zh=True)
def _zhipu(r: random.Random) -> tuple[str, str]:
    k = f"{_w(r, 32, HEX)}.{_w(r, 16)}"
    return k, f"智谱 bigmodel.cn 的 API Key 是 {k} ，调 glm-4-plus 用"


@_kind("dashscope python zh", zh=True)
def _dashscope(r: random.Random) -> tuple[str, str]:
    k = "sk-" + _w(r, 32, HEX)
    return k, (
        f'import dashscope\n\ndashscope.api_key = "{k}"  # 通义千问，先写死，回头挪到环境变量\n'
        'resp = dashscope.Generation.call(model="qwen-max", prompt="你好")'
    )


@_kind("siliconflow key zh", zh=True)
def _silicon(r: random.Random) -> tuple[str, str]:
    k = "sk-" + _w(r, 48, LOWER)
    return k, f"硅基流动注册送的额度，key={k}，OpenAI 兼容，base_url 是 api.siliconflow.cn/v1"


@_kind("minimax jwt key zh", zh=True)
def _minimax(r: random.Random) -> tuple[str, str]:
    gid = _w(r, 19, DIGITS)
    k = _jwt(r, {"GroupName": "personal", "UserName": _pinyin(r), "GroupID": gid, "TokenType": 1})
    return k, f"MiniMax 开放平台 group_id={gid} 的接口密钥（很长）：{k}"


@_kind("openrouter key zh", zh=True)
def _openrouter(r: random.Random) -> tuple[str, str]:
    k = "sk-or-v1-" + _w(r, 64, HEX)
    return k, f"OpenRouter 充了 10 刀，key：{k}，Claude 和 Gemini 都能调"


@_kind("amap web key zh", zh=True)
def _amap(r: random.Random) -> tuple[str, str]:
    k = _w(r, 32, HEX)
    return k, (
        f"天气接口：https://restapi.amap.com/v3/weather/weatherInfo?city=110101&key={k}&extensions=all "
        "（高德 Web 服务 key，个人开发者额度）"
    )


@_kind("gitee private token zh", zh=True)
def _gitee(r: random.Random) -> tuple[str, str]:
    t = _w(r, 32, HEX)
    return t, f"码云（Gitee）私人令牌：{t}\n勾了 projects 和 pull_requests，镜像同步脚本用"


@_kind("bilibili sessdata cookie zh", zh=True)
def _bili(r: random.Random) -> tuple[str, str]:
    s = f"{_w(r, 8, HEX)}%2C{_ts(r)}%2C{_w(r, 5)}%2A{_w(r, 2, HEX)}"
    return s, (
        f"B 站下载器要登录态，F12 复制的 cookie：SESSDATA={s}; bili_jct={_w(r, 32, HEX)}; "
        f"DedeUserID={r.randint(10000000, 999999999)}"
    )


@_kind("baidu netdisk share link zh", zh=True)
def _pan(r: random.Random) -> tuple[str, str]:
    sid = "1" + _w(r, 22, B64URL)
    return sid, (
        f"链接: https://pan.baidu.com/s/{sid} 提取码: {_w(r, 4, LALNUM)}\n"
        "--来自百度网盘超级会员v5的分享（里面是全家户口本的扫描件）"
    )


@_kind("tencent meeting password zh", zh=True)
def _txmeeting(r: random.Random) -> tuple[str, str]:
    p = _w(r, 6, DIGITS)
    return p, (
        f"#腾讯会议：{_w(r, 3, DIGITS)}-{_w(r, 3, DIGITS)}-{_w(r, 3, DIGITS)}\n"
        f"会议密码：{p}\n复制该信息，打开腾讯会议即可参与（董事会，别转发）"
    )


@_kind("proxy subscription url zh", zh=True)
def _clash(r: random.Random) -> tuple[str, str]:
    t = _w(r, 32, HEX)
    return t, (
        f"机场订阅链接（Clash 导入）：https://sub.{_w(r, 6, LOWER)}.xyz/api/v1/client/subscribe?token={t}"
        "&flag=clash  每月 200G"
    )


@_kind("shadowsocks link zh", zh=True)
def _ss(r: random.Random) -> tuple[str, str]:
    b = _b64url(f"chacha20-ietf-poly1305:{_w(r, 16)}".encode())
    return b, (
        f"自建的节点，导入小火箭：ss://{b}@{r.randint(100, 223)}.{r.randint(0, 255)}.{r.randint(0, 255)}"
        f".{r.randint(2, 254)}:{r.randint(20000, 60000)}#东京-自建"
    )


@_kind("frp client token zh", zh=True)
def _frp(r: random.Random) -> tuple[str, str]:
    t = _w(r, 24)
    return t, (
        "# frpc.toml 内网穿透，家里 NAS 用\n"
        f'serverAddr = "frp.{_w(r, 5, LOWER)}.top"\nserverPort = 7000\nauth.token = "{t}"\n\n'
        '[[proxies]]\nname = "nas-web"\ntype = "tcp"\nlocalPort = 5000\nremotePort = 15000'
    )


@_kind("taobao login zh", zh=True)
def _taobao(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"淘宝/支付宝登录：手机号 {_cn_mobile(r)}，登录密码 {p}（和支付密码不一样）"


@_kind("12306 account zh", zh=True)
def _12306(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"12306 用户名 {_pinyin(r)}{r.randint(10, 99)}，密码 {p} ，常用乘车人已经加了爸妈"


@_kind("qq mail smtp auth code zh", zh=True)
def _qqsmtp(r: random.Random) -> tuple[str, str]:
    c = _w(r, 16, LOWER)
    return c, f"QQ 邮箱开了 SMTP，授权码：{c}（不是 QQ 密码！）smtp.qq.com:465 SSL"


@_kind("163 mail client password zh", zh=True)
def _163(r: random.Random) -> tuple[str, str]:
    c = _w(r, 16, UPPER)
    return c, f"网易邮箱大师绑定 163 的客户端授权密码 {c}，IMAP 服务器 imap.163.com"


@_kind("jd gift card secret zh", zh=True)
def _jdcard(r: random.Random) -> tuple[str, str]:
    c = "-".join(_w(r, 4, UALNUM) for _ in range(4))
    return c, f"公司发的京东 E 卡 500 元：卡号 JDV{_w(r, 16, DIGITS)}，卡密 {c}，还没绑定"


@_kind("broadband pppoe account zh", zh=True)
def _pppoe(r: random.Random) -> tuple[str, str]:
    p = _w(r, 8, DIGITS)
    return p, f"电信宽带拨号：宽带账号 021{_w(r, 8, DIGITS)}，宽带密码 {p}（装机师傅写在单子上的）"


@_kind("optical modem super admin zh", zh=True)
def _guangmao(r: random.Random) -> tuple[str, str]:
    p = "telecomadmin" + _w(r, 8, DIGITS)
    return p, f"光猫超级管理员：用户名 telecomadmin，密码 {p}，改桥接用的，打 10000 问来的"


@_kind("housing fund account zh", zh=True)
def _gjj(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"公积金个人账号 {_w(r, 12, DIGITS)}，网厅查询密码 {p}，贷款审批要登录"


# ------------------------------------------------------------------ international providers and unknown shapes


@_kind("openai project key dotenv")
def _openai(r: random.Random) -> tuple[str, str]:
    k = "sk-proj-" + _w(r, 74, B64URL) + "T3BlbkFJ" + _w(r, 74, B64URL)
    return k, f"OPENAI_API_KEY={k}\nOPENAI_ORG_ID=org-{_w(r, 24)}\nMODEL=gpt-4o-mini"


@_kind("anthropic key in chat turn")
def _anthropic(r: random.Random) -> tuple[str, str]:
    k = "sk-ant-api03-" + _w(r, 93, B64URL) + "AA"
    return k, (
        f"user: ok here's the anthropic key, put it in the config for me: {k}\n"
        "assistant: Done, it's in ~/.config/agent/keys.toml."
    )


@_kind("github classic pat in remote url")
def _ghp(r: random.Random) -> tuple[str, str]:
    t = "ghp_" + _w(r, 36)
    return t, f"git remote set-url origin https://{t}@github.com/acme-corp/infra.git\ngit push -u origin main"


@_kind("github fine grained pat zh", zh=True)
def _ghfg(r: random.Random) -> tuple[str, str]:
    t = f"github_pat_11{_w(r, 20, UALNUM)}_{_w(r, 59)}"
    return t, f"新建了个细粒度 token，只给了 blog 仓库的 contents 读写，90 天过期：{t}"


@_kind("gitlab token in ci log")
def _gitlab_ci(r: random.Random) -> tuple[str, str]:
    t = "glpat-" + _w(r, 20, B64URL)
    return t, (
        f'$ echo "pushing tags with $RELEASE_TOKEN"\npushing tags with {t}\n'
        f"$ git push --tags https://release-bot:{t}@gitlab.example.com/platform/api.git\nJob succeeded"
    )


@_kind("slack bot token")
def _slack(r: random.Random) -> tuple[str, str]:
    t = f"xoxb-{_w(r, 11, DIGITS)}-{_w(r, 13, DIGITS)}-{_w(r, 24)}"
    return t, f"SLACK_BOT_TOKEN={t}  # workspace acme-eng, scopes chat:write channels:read"


@_kind("slack incoming webhook zh", zh=True)
def _slack_hook(r: random.Random) -> tuple[str, str]:
    s = _w(r, 24)
    url = f"https://hooks.slack.com/services/T{_w(r, 8, UALNUM)}/B{_w(r, 10, UALNUM)}/{s}"
    return s, f"海外团队的 Slack 告警频道 webhook：{url}"


@_kind("stripe live secret key")
def _stripe(r: random.Random) -> tuple[str, str]:
    k = "sk_live_51" + _w(r, 97)
    return k, f"Stripe dashboard, Developers, API keys. Revealed the live secret once: {k}. Publishable one is fine."


@_kind("stripe webhook secret zh", zh=True)
def _whsec(r: random.Random) -> tuple[str, str]:
    k = "whsec_" + _w(r, 32)
    return k, f"stripe listen --forward-to localhost:8000/webhook 打出来的签名密钥：{k}，本地调试用"


@_kind("aws credentials file")
def _aws(r: random.Random) -> tuple[str, str]:
    s = _w(r, 40, B64)
    return s, (
        f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = AKIA{_w(r, 16, UALNUM)}\n"
        f"aws_secret_access_key = {s}\nregion = eu-west-1"
    )


@_kind("aws session token zh", zh=True)
def _aws_sts(r: random.Random) -> tuple[str, str]:
    t = "IQoJb3JpZ2luX2VjE" + _w(r, 300, B64)
    return t, (
        f"sts assume-role 拿到的临时凭证（1 小时）：\nAWS_ACCESS_KEY_ID=ASIA{_w(r, 16, UALNUM)}\n"
        f"AWS_SECRET_ACCESS_KEY={_w(r, 40, B64)}\nAWS_SESSION_TOKEN={t}"
    )


@_kind("s3 presigned url")
def _s3url(r: random.Random) -> tuple[str, str]:
    sig = _w(r, 64, HEX)
    return sig, (
        "presigned (7 days): https://acme-exports.s3.eu-west-1.amazonaws.com/q3/payroll.xlsx"
        f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA{_w(r, 16, UALNUM)}%2F20261203%2Feu-west-1%2Fs3"
        f"%2Faws4_request&X-Amz-Date=20261203T091500Z&X-Amz-Expires=604800&X-Amz-SignedHeaders=host"
        f"&X-Amz-Signature={sig}"
    )


@_kind("google maps key in html")
def _gkey(r: random.Random) -> tuple[str, str]:
    k = "AIza" + _w(r, 35, B64URL)
    return k, (
        "```html\n"
        f'<script src="https://maps.googleapis.com/maps/api/js?key={k}&callback=initMap" async defer></script>\n'
        "```\nunrestricted key, add an HTTP referrer restriction later"
    )


@_kind("gcp service account json")
def _gcp_sa(r: random.Random) -> tuple[str, str]:
    lines = _pem_lines(r, "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ", 6)
    pk = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"
    doc = {
        "type": "service_account",
        "project_id": f"acme-data-{r.randint(100000, 999999)}",
        "private_key_id": _w(r, 40, HEX),
        "private_key": pk,
        "client_email": "etl-runner@acme-data.iam.gserviceaccount.com",
        "client_id": _w(r, 21, DIGITS),
    }
    return lines[1], "key.json for the ETL runner:\n" + json.dumps(doc, indent=2)


@_kind("google oauth client secret zh", zh=True)
def _gocspx(r: random.Random) -> tuple[str, str]:
    s = "GOCSPX-" + _w(r, 28, B64URL)
    client = f"{_w(r, 12, DIGITS)}-{_w(r, 32, LALNUM)}.apps.googleusercontent.com"
    doc = {"installed": {"client_id": client, "project_id": "home-photos-sync", "client_secret": s}}
    return s, "下载的 client_secret.json（桌面应用类型）：\n" + json.dumps(doc, ensure_ascii=False)


@_kind("google refresh token zh", zh=True)
def _refresh(r: random.Random) -> tuple[str, str]:
    t = "1//0" + _w(r, 100, B64URL)
    return t, f"Drive 同步脚本的 refresh_token（长期有效，泄露了要去账号里撤销授权）：{t}"


@_kind("azure storage connection string")
def _azure(r: random.Random) -> tuple[str, str]:
    k = _b64(r, 64)
    return k, (
        f'AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=https;AccountName=acmelogs{r.randint(10, 99)};'
        f'AccountKey={k};EndpointSuffix=core.windows.net"'
    )


@_kind("azure openai api-key header")
def _azoai(r: random.Random) -> tuple[str, str]:
    k = _w(r, 32, HEX)
    return k, (
        "curl https://acme-eastus.openai.azure.com/openai/deployments/gpt4o/chat/completions"
        "?api-version=2024-06-01 \\\n"
        f'  -H "api-key: {k}" -H "Content-Type: application/json" -d @req.json'
    )


@_kind("twilio auth token")
def _twilio(r: random.Random) -> tuple[str, str]:
    t = _w(r, 32, HEX)
    return t, f"TWILIO_ACCOUNT_SID=AC{_w(r, 32, HEX)}\nTWILIO_AUTH_TOKEN={t}\nTWILIO_FROM=+1415{_w(r, 7, DIGITS)}"


@_kind("sendgrid key")
def _sg(r: random.Random) -> tuple[str, str]:
    k = f"SG.{_w(r, 22, B64URL)}.{_w(r, 43, B64URL)}"
    return k, f"EMAIL_BACKEND=sendgrid\nSENDGRID_API_KEY='{k}'"


@_kind("mailgun key in curl")
def _mailgun(r: random.Random) -> tuple[str, str]:
    k = "key-" + _w(r, 32, HEX)
    return k, (
        f"curl -s --user 'api:{k}' https://api.eu.mailgun.net/v3/mg.acme.io/messages "
        "-F from='ops@mg.acme.io' -F to=me -F subject=test -F text=hi"
    )


@_kind("discord bot token")
def _discord(r: random.Random) -> tuple[str, str]:
    t = f"{r.choice('MN')}{_w(r, 25, B64URL)}.{_w(r, 6, B64URL)}.{_w(r, 38, B64URL)}"
    return t, (
        f'bot.py\n\nimport discord\nclient = discord.Client(intents=discord.Intents.default())\nclient.run("{t}")'
    )


@_kind("telegram bot token zh", zh=True)
def _tgbot(r: random.Random) -> tuple[str, str]:
    t = f"{r.randint(5000000000, 7999999999)}:AA{_w(r, 33, B64URL)}"
    return t, f"BotFather 给的：Use this token to access the HTTP API: {t}\n这个机器人每天早上 8 点推天气"


@_kind("npmrc auth token")
def _npm(r: random.Random) -> tuple[str, str]:
    t = "npm_" + _w(r, 36)
    return t, f"# ~/.npmrc\nregistry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={t}\nsave-exact=true"


@_kind("pypirc token")
def _pypi(r: random.Random) -> tuple[str, str]:
    t = "pypi-AgEIcHlwaS5vcmc" + _w(r, 160, B64URL)
    return t, f"[distutils]\nindex-servers = pypi\n\n[pypi]\n  username = __token__\n  password = {t}"


@_kind("docker hub pat in shell history")
def _dckr(r: random.Random) -> tuple[str, str]:
    t = "dckr_pat_" + _w(r, 27, B64URL)
    return t, f"  611  docker login -u acmebot -p {t}\n  612  docker push acmebot/worker:1.8.2"


@_kind("docker config auths base64")
def _dockercfg(r: random.Random) -> tuple[str, str]:
    b = base64.b64encode(f"ci-{_w(r, 4, LOWER)}:{_pw(r)}".encode()).decode()
    cfg = {"auths": {f"registry.corp.{_w(r, 5, LOWER)}.lan:5000": {"auth": b}}}
    return b, "~/.docker/config.json on the build box:\n" + json.dumps(cfg, indent=4)


@_kind("huggingface token notebook")
def _hf(r: random.Random) -> tuple[str, str]:
    t = "hf_" + _w(r, 34)
    return t, (
        f'In [2]: from huggingface_hub import login\n   ...: login(token="{t}")\n'
        "Token is valid (permission: write).\nLogin successful"
    )


@_kind("cloudflare api token zh", zh=True)
def _cf(r: random.Random) -> tuple[str, str]:
    t = _w(r, 1) + _w(r, 39, B64URL)
    return t, f"Cloudflare 的 DNS 编辑令牌（只给了博客那个区域）：{t}，certbot 的 dns-cloudflare 插件用"


@_kind("digitalocean token terraform")
def _do(r: random.Random) -> tuple[str, str]:
    t = "dop_v1_" + _w(r, 64, HEX)
    return t, (
        'terraform {\n  required_providers {\n    digitalocean = { source = "digitalocean/digitalocean" }\n  }\n}\n\n'
        f'provider "digitalocean" {{\n  token = "{t}"\n}}'
    )


@_kind("sentry auth token")
def _sentry(r: random.Random) -> tuple[str, str]:
    t = "sntrys_" + _w(r, 100, B64URL)
    return t, f"sentry-cli releases new -p web 4.2.0  (ran with SENTRY_AUTH_TOKEN={t} SENTRY_ORG=acme)"


@_kind("datadog agent yaml")
def _dd(r: random.Random) -> tuple[str, str]:
    k = _w(r, 32, HEX)
    return k, (
        f"# /etc/datadog-agent/datadog.yaml\napi_key: {k}\nsite: datadoghq.eu\nlogs_enabled: true\n"
        f"hostname: web-{r.randint(1, 40):02d}"
    )


@_kind("groq key zh", zh=True)
def _groq(r: random.Random) -> tuple[str, str]:
    k = "gsk_" + _w(r, 52)
    return k, f"Groq 免费档限速 30 RPM，先用这个 key：{k}"


@_kind("replicate token zh", zh=True)
def _replicate(r: random.Random) -> tuple[str, str]:
    k = "r8_" + _w(r, 37)
    return k, f"跑 flux 出图用的 Replicate token：{k}，按秒计费，跑完记得看账单"


@_kind("pinecone key zh", zh=True)
def _pinecone(r: random.Random) -> tuple[str, str]:
    k = f"pcsk_{_w(r, 5)}_{_w(r, 64)}"
    return k, f"向量库迁到 Pinecone serverless 了，索引 kb-prod，API key：{k}"


@_kind("notion integration secret")
def _notion(r: random.Random) -> tuple[str, str]:
    k = "ntn_" + _w(r, 11, DIGITS) + _w(r, 35)
    return k, f"Notion integration journal-sync, internal secret: {k} (shared with the Reading List db only)"


@_kind("linear api key")
def _linear(r: random.Random) -> tuple[str, str]:
    k = "lin_api_" + _w(r, 40)
    return k, (
        f"graphql smoke test: curl -H 'Authorization: {k}' -H 'Content-Type: application/json' "
        'https://api.linear.app/graphql -d \'{"query":"{ viewer { id } }"}\''
    )


@_kind("vault operator init output")
def _vault(r: random.Random) -> tuple[str, str]:
    t = "hvs." + _w(r, 24)
    keys = "\n".join(f"Unseal Key {i}: {_b64(r, 33)}" for i in range(1, 6))
    return t, (
        f"$ vault operator init\n{keys}\n\nInitial Root Token: {t}\n\n"
        "Vault initialized with 5 key shares and a key threshold of 3."
    )


@_kind("tailscale auth key")
def _ts_key(r: random.Random) -> tuple[str, str]:
    k = f"tskey-auth-k{_w(r, 10)}CNTRL-{_w(r, 33)}"
    return k, f"sudo tailscale up --authkey={k} --advertise-routes=192.168.50.0/24 --ssh"


@_kind("ngrok authtoken zh", zh=True)
def _ngrok(r: random.Random) -> tuple[str, str]:
    t = f"2{_w(r, 26)}_{_w(r, 21)}"
    return t, f"内网穿透临时用 ngrok：\nngrok config add-authtoken {t}\nngrok http 8080"


@_kind("atlassian api token")
def _atl(r: random.Random) -> tuple[str, str]:
    t = "ATATT3xFfGF0" + _w(r, 170, B64URL) + "=" + _w(r, 8, UALNUM)
    return t, f"jira cli check: curl -u {_en_email(r)}:{t} https://acme.atlassian.net/rest/api/3/myself"


@_kind("okta ssws token")
def _okta(r: random.Random) -> tuple[str, str]:
    t = "00" + _w(r, 40, B64URL)
    return t, (
        f"GET /api/v1/users?limit=200 HTTP/1.1\nHost: acme.okta.com\nAccept: application/json\nAuthorization: SSWS {t}"
    )


@_kind("shopify admin token zh", zh=True)
def _shopify(r: random.Random) -> tuple[str, str]:
    t = "shpat_" + _w(r, 32, HEX)
    return t, f"独立站后台自定义应用的 Admin API 访问令牌：{t}（只显示一次），店铺域名 {_w(r, 8, LOWER)}.myshopify.com"


@_kind("binance api secret")
def _binance(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64)
    return s, (
        f"Binance API (spot trading, withdrawals off, IP whitelist 203.0.113.7)\nAPI Key: {_w(r, 64)}\nSecret Key: {s}"
    )


@_kind("okx api secret zh", zh=True)
def _okx(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, HEX).upper()
    return s, f"OKX 量化用的 API：apikey = {_uuid(r)}，secretkey = {s}，Passphrase = {_pw(r)}，只开了读取和交易"


@_kind("unknown provider prefixed key")
def _fennel(r: random.Random) -> tuple[str, str]:
    k = "fnl_live_" + _w(r, 32, LALNUM)
    return k, f"Fennel Labs onboarding call: sandbox works, they emailed the prod key {k} - expires never?? ask Priya"


@_kind("unknown provider dotted key")
def _quill(r: random.Random) -> tuple[str, str]:
    k = f"qk.{_w(r, 8, HEX)}.{_w(r, 40, B64URL)}"
    return k, f"Quill dashboard > Settings > Access. Copied: {k}"


@_kind("unknown chinese provider key zh", zh=True)
def _tianheng(r: random.Random) -> tuple[str, str]:
    k = f"th-{_w(r, 8, LALNUM)}-{_w(r, 24)}"
    return k, f"新接的数据供应商「天衡数据」的接口密钥：{k}，按调用次数计费，月底对账"


@_kind("bare opaque token in todo")
def _bare(r: random.Random) -> tuple[str, str]:
    t = _w(r, 40, HEX)
    return t, f"- [ ] swap {t} for the new one once Marco rotates the reporting creds"


@_kind("fcm server key")
def _fcm(r: random.Random) -> tuple[str, str]:
    k = f"AAAA{_w(r, 7, B64URL)}:APA91b{_w(r, 134, B64URL)}"
    return k, f"legacy FCM push (still used by Android app v3): Authorization: key={k}"


@_kind("mapbox secret token")
def _mapbox(r: random.Random) -> tuple[str, str]:
    payload = _b64url(json.dumps({"u": _w(r, 8, LOWER), "a": _w(r, 25, LALNUM)}).encode())
    k = f"sk.{payload}.{_w(r, 22, B64URL)}"
    return k, f"MAPBOX_DOWNLOADS_TOKEN={k}  # gradle needs it to pull the SDK"


@_kind("jenkins initial admin password")
def _jenkins(r: random.Random) -> tuple[str, str]:
    p = _w(r, 32, HEX)
    return p, f"$ docker exec jenkins cat /var/jenkins_home/secrets/initialAdminPassword\n{p}"


@_kind("elasticsearch reset password zh", zh=True)
def _es(r: random.Random) -> tuple[str, str]:
    p = _w(r, 1) + _w(r, 19, ALNUM + "=_+-")
    return p, (
        "es 8 装完忘了密码，重置：\n$ bin/elasticsearch-reset-password -u elastic\n"
        f"Password for the [elastic] user successfully reset.\nNew value: {p}"
    )


@_kind("minio root credentials zh", zh=True)
def _minio(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        f"NAS 上的 MinIO：控制台 http://192.168.{r.randint(0, 9)}.{r.randint(2, 254)}:9001\n"
        f"MINIO_ROOT_USER=admin\nMINIO_ROOT_PASSWORD={p}"
    )


# ------------------------------------------------------------------ URLs and connection strings


@_kind("postgres url dotenv")
def _pg(r: random.Random) -> tuple[str, str]:
    p = _pw(r, url_safe=True)
    return p, f"DATABASE_URL=postgresql://app_user:{p}@db-prod-1.internal.acme.io:5432/orders?sslmode=require"


@_kind("mysql jdbc url zh", zh=True)
def _jdbc(r: random.Random) -> tuple[str, str]:
    p = _pw(r, url_safe=True)
    return p, (
        f"CRM 的 Spring 配置我是这么写的：jdbc:mysql://{_ip10(r)}:3306/crm?useSSL=false&user=crm_rw&password={p}"
        "&serverTimezone=Asia/Shanghai"
    )


@_kind("redis url without user zh", zh=True)
def _redis(r: random.Random) -> tuple[str, str]:
    p = _w(r, 24)
    return p, (
        f"缓存改连这个：redis://:{p}@172.{r.randint(16, 31)}.{r.randint(0, 255)}.{r.randint(2, 254)}:6379/2 ，"
        "老的那台下周下线"
    )


@_kind("amqp broker url")
def _amqp(r: random.Random) -> tuple[str, str]:
    p = _pw(r, url_safe=True)
    return p, f'CELERY_BROKER_URL = "amqps://celery:{p}@mq.internal:5671/prod"\nCELERY_RESULT_BACKEND = "rpc://"'


@_kind("mongodb srv uri zh", zh=True)
def _mongo(r: random.Random) -> tuple[str, str]:
    p = _pw(r, url_safe=True)
    return p, (
        f"Atlas 集群连接串（只读用户 reader）：mongodb+srv://reader:{p}@cluster0.{_w(r, 5, LALNUM)}.mongodb.net/"
        "?retryWrites=true&w=majority&appName=Cluster0"
    )


@_kind("sql server connection string")
def _mssql(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        '"ConnectionStrings": { "Billing": "Server=tcp:sql-prod-02,1433;Database=Billing;User Id=sa;'
        f'Password={p};TrustServerCertificate=True;" }}'
    )


@_kind("clickhouse client password zh", zh=True)
def _ch(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "查埋点日志（线上只读账号）：\n"
        f"clickhouse-client --host {_ip10(r)} --port 9000 --user analyst --password '{p}' --database logs"
    )


@_kind("pgpass line")
def _pgpass(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"echo 'db.internal:5432:analytics:etl:{p}' >> ~/.pgpass && chmod 600 ~/.pgpass"


@_kind("percent-encoded password in url")
def _pct(r: random.Random) -> tuple[str, str]:
    enc = quote(_pw(r) + r.choice(["@", "#", "/", "?", ":"]) + str(r.randint(10, 99)), safe="")
    return enc, f"Synology bookmark: https://admin:{enc}@nas.home.arpa:5001/ (special chars, so url-encoded)"


@_kind("percent-encoded chinese password zh", zh=True)
def _pct_zh(r: random.Random) -> tuple[str, str]:
    enc = quote(r.choice(_ZH_PHRASES) + str(r.randint(100, 9999)), safe="")
    return enc, (
        "浏览器地址栏复制出来的，密码是中文所以被编码了："
        f"http://root:{enc}@192.168.{r.randint(0, 9)}.{r.randint(2, 254)}:8080/manage"
    )


@_kind("git remote -v with oauth2 token")
def _gitremote(r: random.Random) -> tuple[str, str]:
    t = "glpat-" + _w(r, 20, B64URL)
    url = f"https://oauth2:{t}@gitlab.corp.acme.io/platform/billing-api.git"
    return t, f"$ git remote -v\norigin\t{url} (fetch)\norigin\t{url} (push)"


@_kind("gitee clone with password zh", zh=True)
def _gitee_clone(r: random.Random) -> tuple[str, str]:
    u, p = _pinyin(r) + str(r.randint(1, 999)), _pw(r, url_safe=True)
    return p, f"git clone https://{u}:{p}@gitee.com/{u}/notes.git   # 账号密码直接写进 URL，懒得配 ssh 了"


@_kind("git credentials store file")
def _gitcred(r: random.Random) -> tuple[str, str]:
    t = "ghp_" + _w(r, 36)
    return t, (
        "turns out credential.helper=store writes plain text:\n"
        f"$ cat ~/.git-credentials\nhttps://{_w(r, 6, LOWER)}:{t}@github.com"
    )


@_kind("netrc heroku")
def _netrc(r: random.Random) -> tuple[str, str]:
    t, e = _uuid(r), _en_email(r)
    block = f"  login {e}\n  password {t}"
    return t, f"machine api.heroku.com\n{block}\nmachine git.heroku.com\n{block}"


@_kind("oauth token in url fragment")
def _fragment(r: random.Random) -> tuple[str, str]:
    t = _w(r, 48, B64URL)
    return t, (
        f"the implicit flow lands on https://app.example.org/callback#access_token={t}&token_type=Bearer"
        "&expires_in=3600&state=xyz , copy it from the address bar"
    )


@_kind("nginx access log token in query")
def _acclog(r: random.Random) -> tuple[str, str]:
    t = _w(r, 40, B64URL)
    return t, (
        f'10.0.4.17 - - [03/Dec/2026:09:12:44 +0800] "GET /api/export?format=csv&access_token={t} HTTP/1.1" '
        '200 51234 "-" "python-requests/2.32.3"'
    )


@_kind("zoom link with pwd")
def _zoom(r: random.Random) -> tuple[str, str]:
    p = _w(r, 32, ALNUM) + ".1"
    return p, f"board call moved to Thu 4pm: https://us06web.zoom.us/j/{_w(r, 11, DIGITS)}?pwd={p}"


# ------------------------------------------------------------------ config files pasted whole


@_kind("dotenv file whole")
def _dotenv(r: random.Random) -> tuple[str, str]:
    s = _w(r, 64, HEX)
    return s, (
        "NODE_ENV=production\nPORT=3000\nLOG_LEVEL=info\n"
        f"JWT_SECRET={s}\nJWT_EXPIRES_IN=7d\nCORS_ORIGIN=https://app.acme.io\n"
    )


@_kind("docker compose mysql zh", zh=True)
def _compose(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "# 本地起一套 MySQL，端口映射到 13306\nservices:\n  db:\n    image: mysql:8.4\n    restart: always\n"
        f'    environment:\n      MYSQL_ROOT_PASSWORD: "{p}"   # 和线上一样，方便导数据\n'
        '      MYSQL_DATABASE: shop\n    ports:\n      - "13306:3306"'
    )


@_kind("dockerfile pip index with creds")
def _dockerfile(r: random.Random) -> tuple[str, str]:
    p = _pw(r, url_safe=True)
    return p, (
        "FROM python:3.12-slim\n"
        f"ENV PIP_INDEX_URL=https://deploy:{p}@nexus.internal.acme.io/repository/pypi/simple\n"
        "COPY requirements.txt .\nRUN pip install -r requirements.txt"
    )


@_kind("k8s secret manifest base64")
def _k8s_b64(r: random.Random) -> tuple[str, str]:
    b = base64.b64encode(_pw(r).encode()).decode()
    return b, (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\n  namespace: prod\ntype: Opaque\n"
        f"data:\n  username: YXBw\n  password: {b}"
    )


@_kind("k8s secret stringdata zh", zh=True)
def _k8s_str(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "# 生产的 secret 先手动 apply，后面再接 sealed-secrets\napiVersion: v1\nkind: Secret\n"
        f'metadata:\n  name: redis-auth\nstringData:\n  REDIS_PASSWORD: "{p}"'
    )


@_kind("systemd unit environment")
def _systemd(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "# /etc/systemd/system/mailer.service\n[Unit]\nDescription=Outbound mailer\n\n[Service]\nUser=mailer\n"
        f'Environment="SMTP_USER=noreply@acme.io"\nEnvironment="SMTP_PASSWORD={p}"\n'
        "ExecStart=/opt/mailer/bin/run\nRestart=on-failure\n\n[Install]\nWantedBy=multi-user.target"
    )


@_kind("nginx proxy basic auth header")
def _nginx_basic(r: random.Random) -> tuple[str, str]:
    b = base64.b64encode(f"grafana:{_pw(r)}".encode()).decode()
    return b, (
        "location /grafana/ {\n    proxy_pass http://127.0.0.1:3000/;\n"
        f'    proxy_set_header Authorization "Basic {b}";\n}}'
    )


@_kind("htpasswd with plaintext zh", zh=True)
def _htpasswd(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        f"/etc/nginx/.htpasswd 里只有一行：admin:$apr1${_w(r, 8, LALNUM)}${_w(r, 22, ALNUM + './')}\n"
        f"明文是 {p}，记这儿免得又忘"
    )


@_kind("apache setenv")
def _apache(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "```apache\n<VirtualHost *:443>\n    ServerName intranet.acme.local\n"
        f"    SetEnv DB_PASS {p}\n    DocumentRoot /var/www/intranet\n</VirtualHost>\n```"
    )


@_kind("crontab curl upload zh", zh=True)
def _cron(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "crontab -l\n# 每天凌晨两点把数据库打包传到 NAS\n"
        f"0 2 * * * /usr/bin/curl -s -u backup:{p} -T /data/db.tar.gz "
        f"ftp://192.168.{r.randint(0, 9)}.{r.randint(2, 254)}/backup/"
    )


@_kind("terraform tfvars")
def _tfvars(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        '# terraform.tfvars (prod) -- NOT in git, right??\nregion        = "eu-central-1"\n'
        f'instance_type = "db.t4g.medium"\ndb_username   = "admin"\ndb_password   = "{p}"'
    )


@_kind("terraform alicloud provider zh", zh=True)
def _tf_ali(r: random.Random) -> tuple[str, str]:
    s = _w(r, 30)
    return s, (
        f'main.tf 开头（临时写死，跑完就删）：\nprovider "alicloud" {{\n  access_key = "LTAI5t{_w(r, 18)}"\n'
        f'  secret_key = "{s}"\n  region     = "cn-beijing"\n}}'
    )


@_kind("terraform state snippet")
def _tfstate(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    attrs = {"identifier": "orders-db", "engine": "postgres", "username": "orders", "password": p, "port": 5432}
    doc = {"type": "aws_db_instance", "name": "orders", "instances": [{"attributes": attrs}]}
    return p, "terraform.tfstate still has it in plain text:\n" + json.dumps(doc, indent=2)


@_kind("ansible group vars zh", zh=True)
def _ansible(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "group_vars/prod.yml（还没用 ansible-vault 加密！）\n"
        f'ansible_user: deploy\nansible_become_pass: "{p}"\nnginx_worker_processes: auto'
    )


@_kind("jupyter cell output env")
def _jupyter(r: random.Random) -> tuple[str, str]:
    k = _w(r, 40, HEX)
    return k, f"In [7]: import os; os.environ[\"WANDB_API_KEY\"]\nOut[7]: '{k}'\n\nIn [8]: wandb.login()"


@_kind("pip.conf private index zh", zh=True)
def _pipconf(r: random.Random) -> tuple[str, str]:
    p, dom = _pw(r, url_safe=True), _w(r, 5, LOWER)
    return p, (
        "# ~/.pip/pip.conf 公司内部源，账号就是 LDAP 的\n[global]\n"
        f"index-url = https://{_pinyin(r)}:{p}@pypi.corp.{dom}.cn/simple\ntrusted-host = pypi.corp.{dom}.cn"
    )


@_kind("maven settings xml")
def _maven(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "```xml\n<servers>\n  <server>\n    <id>nexus-releases</id>\n    <username>ci-deployer</username>\n"
        f"    <password>{p}</password>\n  </server>\n</servers>\n```"
    )


@_kind("android signing config zh", zh=True)
def _android(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "app/build.gradle 里的签名配置（keystore 在 ~/keys/release.jks）：\nsigningConfigs {\n    release {\n"
        f"        storePassword '{p}'\n        keyAlias 'upload'\n        keyPassword '{p}'\n    }}\n}}"
    )


@_kind("kafka sasl jaas")
def _kafka(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain."
        f'PlainLoginModule required username="svc-orders" password="{p}";'
    )


@_kind("ldapsearch bind password")
def _ldap(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        f"ldapsearch -x -H ldap://{_ip10(r)} -D 'cn=admin,dc=corp,dc=local' -w '{p}' "
        "-b 'ou=people,dc=corp,dc=local' '(uid=jdoe)'"
    )


@_kind("spring application yml zh", zh=True)
def _springyml(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "application-prod.yml（nacos 上那份的本地副本）\nspring:\n  datasource:\n"
        f"    url: jdbc:mysql://{_ip10(r)}:3306/order\n    username: order_rw\n    password: {p}\n"
        f"  redis:\n    host: {_ip10(r)}"
    )


@_kind("spring mail properties")
def _springmail(r: random.Random) -> tuple[str, str]:
    p = _w(r, 16, LOWER)
    return p, (
        f"spring.mail.host=smtp.gmail.com\nspring.mail.port=587\nspring.mail.username={_en_email(r)}\n"
        f"spring.mail.password={p}\nspring.mail.properties.mail.smtp.starttls.enable=true"
    )


@_kind("helm set password zh", zh=True)
def _helm(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "装 bitnami/postgresql 的命令，以后升级要带上同样的密码：\n"
        f"helm upgrade --install pg bitnami/postgresql -n data --set auth.postgresPassword='{p}' "
        "--set primary.persistence.size=50Gi"
    )


@_kind("alertmanager smtp password")
def _am(r: random.Random) -> tuple[str, str]:
    p = _w(r, 16, LOWER)
    return p, (
        "global:\n  smtp_smarthost: 'smtp.gmail.com:587'\n  smtp_from: 'alerts@acme.io'\n"
        f"  smtp_auth_username: 'alerts@acme.io'\n  smtp_auth_password: '{p}'\nroute:\n  receiver: oncall"
    )


@_kind("home assistant secrets yaml")
def _ha(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        f'# secrets.yaml\nmqtt_username: homeassistant\nmqtt_password: "{p}"\n'
        f"hue_bridge_ip: 192.168.1.{r.randint(2, 254)}"
    )


@_kind("xiaomi device token zh", zh=True)
def _miio(r: random.Random) -> tuple[str, str]:
    t = _w(r, 32, HEX)
    return t, f"米家扫地机器人局域网 token：{t}（用 token extractor 从云端拉的），IP 192.168.31.{r.randint(2, 254)}"


@_kind("tuya local key zh", zh=True)
def _tuya(r: random.Random) -> tuple[str, str]:
    k = _w(r, 1) + _w(r, 15, ALNUM + "^.!@")
    return k, f"涂鸦智能插座 device_id {_w(r, 22, LALNUM)}，local_key：{k}，接 Home Assistant 的 localtuya 要用"


@_kind("wireguard config")
def _wg(r: random.Random) -> tuple[str, str]:
    k = _b64(r, 32)
    return k, (
        f"[Interface]\nPrivateKey = {k}\nAddress = 10.8.0.2/24\nDNS = 10.8.0.1\n\n[Peer]\n"
        f"PublicKey = {_b64(r, 32)}\nEndpoint = vpn.{_w(r, 6, LOWER)}.net:51820\nAllowedIPs = 0.0.0.0/0"
    )


@_kind("ipsec pre shared key zh", zh=True)
def _ipsec(r: random.Random) -> tuple[str, str]:
    k = _pw(r)
    return k, f"公司 VPN（L2TP/IPsec）：服务器 vpn.{_w(r, 5, LOWER)}.com.cn，预共享密钥 {k}，账号是工号，密码同域账号"


@_kind("openvpn auth-user-pass file")
def _ovpn(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"client.ovpn has auth-user-pass creds.txt, and creds.txt is just:\n\n    jdoe\n    {p}"


@_kind("kubeconfig sa token")
def _kubecfg(r: random.Random) -> tuple[str, str]:
    sub = f"system:serviceaccount:ci:deployer-{_w(r, 5, LALNUM)}"
    t = _jwt(r, {"iss": "kubernetes/serviceaccount", "sub": sub})
    return t, (
        f"users:\n- name: ci-deployer\n  user:\n    token: {t}\ncontexts:\n"
        "- context: {cluster: prod, user: ci-deployer}\n  name: prod"
    )


@_kind("kubectl secret decoded")
def _kubectl(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"$ kubectl -n monitoring get secret grafana -o jsonpath='{{.data.admin-password}}' | base64 -d\n{p}"


@_kind("postman environment json")
def _postman(r: random.Random) -> tuple[str, str]:
    k = _w(r, 40)
    values = [
        {"key": "base_url", "value": "https://api.acme.io", "enabled": True},
        {"key": "api_key", "value": k, "type": "secret", "enabled": True},
    ]
    return k, json.dumps({"name": "prod", "values": values}, indent=2)


@_kind("github actions hardcoded env zh", zh=True)
def _gha(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32)
    return s, (
        ".github/workflows/deploy.yml 里（TODO：改成 secrets.COS_SECRET_KEY）\n"
        f"env:\n  COS_SECRET_ID: AKID{_w(r, 32)}\n  COS_SECRET_KEY: {s}\n  COS_BUCKET: site-1300000000"
    )


@_kind("ci debug log unmasked")
def _cilog(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "2026-12-02T09:41:07.118Z ##[debug]Evaluating: secrets.REGISTRY_PASSWORD\n"
        f"2026-12-02T09:41:07.119Z ##[debug]=> '{p}'\n2026-12-02T09:41:07.120Z ##[debug]Result: '{p}'"
    )


@_kind("redis.conf requirepass")
def _redisconf(r: random.Random) -> tuple[str, str]:
    p = _w(r, 64, HEX)
    return p, f"bind 10.0.2.15\nport 6379\nrequirepass {p}\nmaxmemory 2gb\nmaxmemory-policy allkeys-lru"


@_kind("my.cnf client section zh", zh=True)
def _mycnf(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f'~/.my.cnf 配好了，省得每次敲密码：\n[client]\nuser=root\npassword="{p}"\nhost=127.0.0.1'


# ------------------------------------------------------------------ logs, traces, shell, HTTP


@_kind("python traceback with db url")
def _tb(r: random.Random) -> tuple[str, str]:
    p, ip = _pw(r, url_safe=True), _ip10(r)
    return p, (
        'Traceback (most recent call last):\n  File "/srv/report/app.py", line 14, in <module>\n'
        f'    engine = create_engine("mysql+pymysql://report:{p}@{ip}:3306/report")\n'
        "sqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) "
        f"(2003, \"Can't connect to MySQL server on '{ip}' (timed out)\")"
    )


@_kind("java stack trace jdbc zh", zh=True)
def _java(r: random.Random) -> tuple[str, str]:
    p = _pw(r, url_safe=True)
    return p, (
        "线上支付服务起不来，日志贴一下：\n"
        "org.springframework.beans.factory.BeanCreationException: Error creating bean with name 'dataSource'\n"
        f"Caused by: org.postgresql.util.PSQLException: 连接尝试失败。 url=jdbc:postgresql://{_ip10(r)}:5432/pay"
        f"?user=pay_svc&password={p}\n"
        "\tat org.postgresql.core.v3.ConnectionFactoryImpl.openConnectionImpl(ConnectionFactoryImpl.java:331)"
    )


@_kind("curl bearer opaque token")
def _curl_bearer(r: random.Random) -> tuple[str, str]:
    t = _w(r, 1) + _w(r, 39, B64URL)
    return t, f'curl -sS -H "Authorization: Bearer {t}" "https://api.internal.acme.io/v2/reports?from=2026-11" | jq .'


@_kind("basic auth header base64 zh", zh=True)
def _basic_zh(r: random.Random) -> tuple[str, str]:
    b = base64.b64encode(f"{_pinyin(r)}:{_pw(r)}".encode()).decode()
    return b, f"抓包看到请求头 Authorization: Basic {b} ，base64 一解就是我的账号密码……这个内部系统居然是 http"


@_kind("django session cookie")
def _cookie(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, LALNUM)
    return s, (
        "Copy as cURL from devtools:\n"
        f"curl 'https://admin.acme.io/orders/' -H 'Cookie: csrftoken={_w(r, 32)}; sessionid={s}' --compressed"
    )


@_kind("jwt in pasted request")
def _jwt_req(r: random.Random) -> tuple[str, str]:
    t = _jwt(r, {"sub": str(r.randint(10000, 99999)), "email": _en_email(r), "role": "admin", "exp": _ts(r)})
    return t, f"POST /graphql HTTP/2\nhost: api.acme.io\nauthorization: Bearer {t}\ncontent-type: application/json"


@_kind("jwt in chat zh", zh=True)
def _jwt_zh(r: random.Random) -> tuple[str, str]:
    t = _jwt(r, {"uid": r.randint(100000, 999999), "name": _pinyin(r), "exp": _ts(r)})
    return t, f"帮我看下这个 token 过期没：{t} 前端一直报 401"


@_kind("supabase service role key")
def _supa(r: random.Random) -> tuple[str, str]:
    ref = _w(r, 20, LOWER)
    t = _jwt(r, {"iss": "supabase", "ref": ref, "role": "service_role", "exp": _ts(r)})
    return t, f"NEXT_PUBLIC_SUPABASE_URL=https://{ref}.supabase.co\nSUPABASE_SERVICE_ROLE_KEY={t}"


@_kind("x-api-key request zh", zh=True)
def _xapikey(r: random.Random) -> tuple[str, str]:
    k = _w(r, 32)
    return k, (
        f"OCR 接口调试通过，请求原文：\nPOST /v1/ocr/idcard HTTP/1.1\nHost: ocr.{_w(r, 5, LOWER)}.internal\n"
        f"X-Api-Key: {k}\nContent-Type: application/json\n\n注意：这个 key 按次收费"
    )


@_kind("mysql password in shell history")
def _hist(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f" 1041  cd /srv/app\n 1042  mysql -uroot -p'{p}' -h {_ip10(r)} shop < dump.sql\n 1043  history | tail"


@_kind("sshpass in history zh", zh=True)
def _sshpass(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        f"history | grep ssh 翻出来的：\n  523  sshpass -p '{p}' ssh -p 22022 root@{_ip10(r)}\n"
        "这台机器的密码原来一直没改"
    )


@_kind("macos keychain output")
def _keychain(r: random.Random) -> tuple[str, str]:
    t = _w(r, 32)
    return t, f"$ security find-generic-password -s 'deploy-bot' -a ci -w\n{t}"


@_kind("django secret key in diff")
def _django(r: random.Random) -> tuple[str, str]:
    k = "django-insecure-" + _w(r, 50, LALNUM + "!@#%^(-_=+)")
    return k, (
        "diff --git a/settings.py b/settings.py\n@@ -21,7 +21,7 @@\n"
        f'-SECRET_KEY = os.environ["SECRET_KEY"]\n+SECRET_KEY = "{k}"'
    )


# ------------------------------------------------------------------ private keys and wallets


@_kind("rsa private key pem")
def _rsa(r: random.Random) -> tuple[str, str]:
    body = "\n".join(_pem_lines(r, "MIIEpAIBAAKCAQEA", 24))
    return body, f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


@_kind("openssh private key zh", zh=True)
def _openssh(r: random.Random) -> tuple[str, str]:
    body = "\n".join(_pem_lines(r, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAA", 6, width=70))
    return body, (
        "堡垒机登录用的私钥，先存这儿，回头放进 1Password：\n```\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
        f"{body}\n-----END OPENSSH PRIVATE KEY-----\n```"
    )


@_kind("ec private key pem")
def _ec(r: random.Random) -> tuple[str, str]:
    body = "\n".join(_pem_lines(r, "MHcCAQEEI", 2))
    return body, (
        "signing key for the webhook verifier (prime256v1):\n"
        f"-----BEGIN EC PRIVATE KEY-----\n{body}\n-----END EC PRIVATE KEY-----"
    )


@_kind("pgp private key block")
def _pgp(r: random.Random) -> tuple[str, str]:
    body = "\n".join(_pem_lines(r, "lQdGBF", 18))
    return body, (
        "gpg --export-secret-keys --armor 0xA1B2C3D4\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        f"{body}\n={_w(r, 4, B64)}\n-----END PGP PRIVATE KEY BLOCK-----"
    )


@_kind("putty ppk private lines zh", zh=True)
def _ppk(r: random.Random) -> tuple[str, str]:
    public = "\n".join(["AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + _w(r, 34, B64)] + [_w(r, 64, B64) for _ in range(5)])
    priv = "\n".join(["AAABAQ" + _w(r, 58, B64)] + [_w(r, 64, B64) for _ in range(13)])
    return priv, (
        "Windows 上 WinSCP 用的 ppk 文件内容：\nPuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\n"
        f"Comment: rsa-key-20261203\nPublic-Lines: 6\n{public}\nPrivate-Lines: 14\n{priv}\n"
        f"Private-MAC: {_w(r, 64, HEX)}"
    )


@_kind("app store connect p8 key zh", zh=True)
def _p8(r: random.Random) -> tuple[str, str]:
    lines = ["MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg" + _w(r, 16, B64), _w(r, 64, B64), _w(r, 64, B64)]
    body = "\n".join([*lines, _w(r, 8, B64)])
    return body, (
        f"App Store Connect API 密钥 AuthKey_{_w(r, 10, UALNUM)}.p8（只能下载一次！），Issuer ID {_uuid(r)}：\n"
        f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
    )


@_kind("ssh key passphrase zh", zh=True)
def _ssh_phrase(r: random.Random) -> tuple[str, str]:
    p = _passphrase(r)
    return p, f"新生成的 id_ed25519 设了 passphrase：{p}\nssh-add --apple-use-keychain 之后就不用每次输了"


@_kind("ethereum private key hex")
def _eth(r: random.Random) -> tuple[str, str]:
    k = _w(r, 64, HEX)
    return k, f"MetaMask, Account details, Show private key (account 2, the one with the NFTs):\n{k}"


@_kind("bip39 seed phrase zh", zh=True)
def _seed12(r: random.Random) -> tuple[str, str]:
    s = " ".join(r.choice(_BIP39) for _ in range(12))
    return s, f"小狐狸钱包助记词（按顺序，别截图）：{s}"


@_kind("bip39 24 words fenced")
def _seed24(r: random.Random) -> tuple[str, str]:
    words = [r.choice(_BIP39) for _ in range(24)]
    s = "\n".join(" ".join(words[i : i + 4]) for i in range(0, 24, 4))
    return s, f"Ledger recovery sheet, typed up before I shred the card:\n```\n{s}\n```"


@_kind("bitcoin wif key")
def _wif(r: random.Random) -> tuple[str, str]:
    k = r.choice("KL") + _w(r, 51, B58)
    return k, f"electrum> importprivkey p2wpkh:{k}\n(old paper wallet from 2017)"


@_kind("solana keypair json")
def _sol(r: random.Random) -> tuple[str, str]:
    arr = "[" + ",".join(str(r.randrange(256)) for _ in range(64)) + "]"
    return arr, f"$ cat ~/.config/solana/id.json\n{arr}"


@_kind("eth keystore password zh", zh=True)
def _keystore(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"以太坊 keystore 文件 UTC--2026-0{r.randint(1, 9)}-15T08-00-00.000Z--{_w(r, 40, HEX)} 的解锁密码：{p}"


@_kind("hardware wallet passphrase")
def _trezor(r: random.Random) -> tuple[str, str]:
    p = _passphrase(r)
    return p, f'Trezor hidden wallet: the passphrase (25th word) is "{p}" (case sensitive, no trailing space)'


@_kind("exchange fund password zh", zh=True)
def _fundpw(r: random.Random) -> tuple[str, str]:
    p = _w(r, 6, DIGITS)
    return p, f"币安资金密码（6 位数字）{p}，提币要用，和登录密码不是一个"


# ------------------------------------------------------------------ one-time, recovery and physical codes


@_kind("totp otpauth uri")
def _otpauth(r: random.Random) -> tuple[str, str]:
    s = _w(r, 32, B32)
    return s, (
        f"the QR decodes to otpauth://totp/ACME%20VPN:jdoe?secret={s}&issuer=ACME%20VPN&algorithm=SHA1"
        "&digits=6&period=30"
    )


@_kind("totp seed grouped zh", zh=True)
def _totp_zh(r: random.Random) -> tuple[str, str]:
    s = _group(_w(r, 32, B32).lower(), 4)
    return s, f"扫不了码时手动输入的密钥（谷歌身份验证器）：{s} —— 阿里云主账号 MFA"


@_kind("github recovery codes zh", zh=True)
def _ghrec(r: random.Random) -> tuple[str, str]:
    s = "\n".join(f"{_w(r, 5, HEX)}-{_w(r, 5, HEX)}" for _ in range(8))
    return s, f"GitHub 两步验证恢复码（用一个划一个）：\n{s}\n下载时间 2026-11-2{r.randint(0, 9)}"


@_kind("google backup codes")
def _gbackup(r: random.Random) -> tuple[str, str]:
    s = ", ".join(f"{_w(r, 4, DIGITS)} {_w(r, 4, DIGITS)}" for _ in range(10))
    return s, f"Google account backup codes (each works once): {s}"


@_kind("bank sms otp zh", zh=True)
def _smsotp(r: random.Random) -> tuple[str, str]:
    c = _w(r, 6, DIGITS)
    bank = r.choice(["招商银行", "工商银行", "建设银行"])
    return c, f"【{bank}】您尾号{_w(r, 4, DIGITS)}的账户正在进行网上支付，验证码{c}，5分钟内有效，请勿泄露。"


@_kind("slack confirmation code")
def _slackcode(r: random.Random) -> tuple[str, str]:
    c = f"{_w(r, 3, UALNUM)}-{_w(r, 3, UALNUM)}"
    return c, f"Your confirmation code is {c}. Enter it in the browser window where you started signing in to Slack."


@_kind("unit door code zh", zh=True)
def _doorzh(r: random.Random) -> tuple[str, str]:
    c = _w(r, 6, DIGITS)
    return c, f"新家单元门禁密码：{c}#（按完井号门就开），快递和外卖都让放门卫"


@_kind("lockbox code")
def _lockbox(r: random.Random) -> tuple[str, str]:
    c = _w(r, 4, DIGITS)
    return c, f"Airbnb check-in: key lockbox by the blue door, code {c}, then put the key back and scramble the dials"


@_kind("hotel safe code zh", zh=True)
def _safe(r: random.Random) -> tuple[str, str]:
    c = _w(r, 6, DIGITS)
    return c, f"酒店房间保险箱密码设的 {c}，护照和现金都在里面"


@_kind("gym locker combination")
def _locker(r: random.Random) -> tuple[str, str]:
    c = f"{r.randint(0, 39):02d}-{r.randint(0, 39):02d}-{r.randint(0, 39):02d}"
    return c, f"gym locker no. {r.randint(100, 399)}, combo {c} (right, left, right)"


@_kind("parcel locker pickup code zh", zh=True)
def _fengchao(r: random.Random) -> tuple[str, str]:
    c = _w(r, 8, DIGITS)
    return c, f"【丰巢】您的快递已到小区东门丰巢柜，取件码 {c}，请于24小时内取件"


@_kind("bitlocker recovery key")
def _bitlocker(r: random.Random) -> tuple[str, str]:
    k = "-".join(_w(r, 6, DIGITS) for _ in range(8))
    return k, f"BitLocker recovery key for the work laptop (key ID starts 7F3A):\n{k}"


@_kind("1password secret key")
def _1p(r: random.Random) -> tuple[str, str]:
    k = f"A3-{_w(r, 6, UALNUM)}-{_w(r, 6, UALNUM)}-" + "-".join(_w(r, 5, UALNUM) for _ in range(4))
    return k, f"1Password Emergency Kit, Secret Key: {k}"


@_kind("matrix security key")
def _matrix(r: random.Random) -> tuple[str, str]:
    k = "Es" + _w(r, 2, B58) + " " + " ".join(_w(r, 4, B58) for _ in range(11))
    return k, f"Element asked me to save this Security Key for the encrypted message backup: {k}"


@_kind("apple recovery key zh", zh=True)
def _applerec(r: random.Random) -> tuple[str, str]:
    k = "-".join(_w(r, 4, UALNUM) for _ in range(7))
    return k, f"Apple ID 开了恢复密钥：{k}，打印了一份放在书房抽屉"


@_kind("icloud app specific password zh", zh=True)
def _icloud_asp(r: random.Random) -> tuple[str, str]:
    k = "-".join(_w(r, 4, LOWER) for _ in range(4))
    return k, f"Thunderbird 收 iCloud 邮件要用 App 专用密码：{k}（appleid.apple.com 生成的）"


@_kind("gmail app password zh", zh=True)
def _gmail_asp(r: random.Random) -> tuple[str, str]:
    k = " ".join(_w(r, 4, LOWER) for _ in range(4))
    return k, f"Gmail 应用专用密码「{k}」，群晖 Mail Server 转发用"


@_kind("windows product key")
def _winkey(r: random.Random) -> tuple[str, str]:
    k = "-".join(_w(r, 5, "BCDFGHJKMPQRTVWXY2346789") for _ in range(5))
    return k, f"Win11 Pro retail key from the box (do not reuse on the VM): {k}"


@_kind("sim puk code zh", zh=True)
def _puk(r: random.Random) -> tuple[str, str]:
    c = _w(r, 8, DIGITS)
    return c, f"副卡 PIN 输错三次锁了，PUK 码在卡托背面：{c}，再错十次卡就废了"


@_kind("debit card pin")
def _pin(r: random.Random) -> tuple[str, str]:
    c = _w(r, 4, DIGITS)
    return c, f"reminder: debit card PIN is {c} (the new card, not the old one)"


@_kind("online banking usb key password zh", zh=True)
def _ushield(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"网银 U 盾口令 {p}，登录密码是另一个，别搞混"


@_kind("yubikey otp")
def _yubi(r: random.Random) -> tuple[str, str]:
    k = "cccccc" + _w(r, 38, "cbdefghijklnrtuv")
    return k, f"oops, touched the yubikey while the chat box had focus: {k}"


@_kind("telegram cloud password zh", zh=True)
def _tg2fa(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"电报开了两步验证，云密码 {p}，提示词写的是「老家的狗」"


@_kind("signal registration lock pin")
def _signalpin(r: random.Random) -> tuple[str, str]:
    p = _w(r, 1, LOWER) + _w(r, 7, LALNUM)
    return p, f"Signal PIN (alphanumeric, registration lock is on): {p}"


# ------------------------------------------------------------------ Wi-Fi, routers, hosts


@_kind("studio wifi zh", zh=True)
def _wifi_zh(r: random.Random) -> tuple[str, str]:
    p = _w(r, 8, DIGITS)
    return p, f"工作室 Wi-Fi 名 Studio_{_w(r, 4, UALNUM)}，密码就是八位数字 {p}，访客网络另说"


@_kind("wifi qr payload")
def _wifiqr(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"decoded the sticker QR on the router: WIFI:T:WPA;S:Home-{_w(r, 4, UALNUM)};P:{p};H:false;;"


@_kind("wpa supplicant psk")
def _wpa(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "/etc/wpa_supplicant/wpa_supplicant.conf on the pi:\n\n"
        f'network={{\n    ssid="Attic-5G"\n    psk="{p}"\n    key_mgmt=WPA-PSK\n}}'
    )


@_kind("router admin page zh", zh=True)
def _router(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"小米路由器后台 miwifi.com（192.168.31.1），管理密码改成了 {p}，原来和 Wi-Fi 一样"


@_kind("jump host ip port zh", zh=True)
def _jump(r: random.Random) -> tuple[str, str]:
    s = f"{_ip10(r)}:{r.randint(20000, 65000)}"
    return s, f"跳板机 {s}，用户 ops，只能从公司网络连，外网走 VPN"


@_kind("internal db hostname")
def _inthost(r: random.Random) -> tuple[str, str]:
    s = (
        f"{r.choice(['pg', 'mysql', 'mongo', 'redis'])}-prod-{r.randint(1, 9):02d}."
        f"{r.choice(['fra1', 'sha2', 'iad3'])}.corp.{_w(r, 6, LOWER)}.internal"
    )
    return s, f"prod primary is {s}, replicas are -02 and -03; never run migrations against it from a laptop"


@_kind("k8s service dns with port")
def _svc(r: random.Random) -> tuple[str, str]:
    s = (
        f"{r.choice(['billing', 'ledger', 'kyc'])}-{_w(r, 5, LALNUM)}.{r.choice(['payments', 'risk'])}"
        f".svc.cluster.local:{r.randint(8000, 9999)}"
    )
    return s, f"from inside the mesh: curl http://{s}/healthz (no auth on that port!)"


@_kind("intranet admin url zh", zh=True)
def _intraurl(r: random.Random) -> tuple[str, str]:
    s = f"192.168.{r.randint(0, 255)}.{r.randint(2, 254)}:{r.randint(8000, 9999)}"
    return s, f"内网管理后台：http://{s}/admin/ 账号 admin，登录后记得切到「生产」租户"


@_kind("ipmi bmc credentials")
def _ipmi(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"iDRAC for rack B3 box 7: https://{_ip10(r)} root / {p} (changed from the factory default)"


@_kind("synology quickconnect zh", zh=True)
def _syno(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"群晖 QuickConnect ID：{_pinyin(r)}-nas，管理员 admin 密码 {p}，外网访问走这个"


# ------------------------------------------------------------------ passwords in many shapes and places


@_kind("password in markdown table zh", zh=True)
def _pwtable(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        f"| 系统 | 账号 | 密码 |\n| --- | --- | --- |\n| 财务系统 | cw_{_w(r, 3, DIGITS)} | {p} |\n"
        "| OA | 工号 | 同域账号 |"
    )


@_kind("temp password in quoted email")
def _quoted(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        f"> Hello,\n>\n> Your account has been created. Temporary password: {p}\n"
        "> You will be asked to change it at first sign-in.\n>\n> IT Service Desk"
    )


@_kind("password in code span zh", zh=True)
def _codespan(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"测试服登录：用户名 `tester`，密码 `{p}`，别用在生产"


@_kind("password in fenced block")
def _fenced(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"staging box creds\n\n```\nhost: {_ip10(r)}\nuser: admin\npass: {p}\n```"


@_kind("fullwidth brackets password zh", zh=True)
def _fullwidth(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"【账号】admin【密码】{p}【地址】内网 OA"


@_kind("voice transcribed spaced code")
def _voice_en(r: random.Random) -> tuple[str, str]:
    s = " ".join(_w(r, 2, LALNUM) for _ in range(r.randint(4, 6)))
    return s, f"voice memo transcript: ok so the alarm panel master code uh is {s} and then hit enter twice"


@_kind("voice transcribed password zh", zh=True)
def _voice_zh(r: random.Random) -> tuple[str, str]:
    parts = []
    for _ in range(r.randint(7, 9)):
        if r.random() < 0.5:
            parts.append(_SPOKEN[r.randrange(10)])
        elif r.random() < 0.5:
            parts.append("大写" + r.choice(UPPER))
        else:
            parts.append("小写" + r.choice(LOWER))
    s = " ".join(parts)
    return s, f"（语音输入）NAS 的密码是 {s} 对就这个 别记错"


@_kind("token split over two lines")
def _split(r: random.Random) -> tuple[str, str]:
    t = _w(r, 64)
    s = t[:38] + "\n" + t[38:]
    return s, f"the key from the vendor came wrapped in their PDF:\n{s}\n(join the two lines, no space)"


@_kind("secret split over two lines zh", zh=True)
def _split_zh(r: random.Random) -> tuple[str, str]:
    t = "sk-" + _w(r, 48)
    s = t[:25] + "\n" + t[25:]
    return s, f"微信里发过来被截断成两行了：\n{s}\n拼起来用"


@_kind("mixed zh en db password zh", zh=True)
def _mixed(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"prod 的 DB password 是 {p}, 别告诉 intern，下周 rotate"


@_kind("im forwarded chat zh", zh=True)
def _im(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"[聊天记录] 运维群\n老王 14:02\n服务器 root 密码改成 {p} 了\n我 14:03\n收到👌"


@_kind("forwarded it email")
def _fwd(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "---------- Forwarded message ---------\nFrom: IT Service Desk\nDate: Mon, 1 Dec 2026 at 08:02\n"
        f"Subject: Your VPN account\n\nUsername: jdoe\nInitial password: {p}\nPlease change it within 24 hours."
    )


@_kind("user chat turn staging login")
def _chatuser(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        f"User: can you remember this for me? staging admin login is admin / {p}\n"
        "Assistant: Got it, I'll remember the staging admin credentials."
    )


@_kind("assistant turn saving password zh", zh=True)
def _chatasst(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, (
        "用户：Jenkins 的管理员密码你记一下\n"
        f"助手：好的，已记住：Jenkins 管理员账号 admin，密码 {p}。下次部署前我会提醒你更换。"
    )


@_kind("note to self master password")
def _note(r: random.Random) -> tuple[str, str]:
    p = _passphrase(r)
    return p, f"note to self: new bitwarden master pw = {p}  (4 words + number, lowercase)"


@_kind("apple id password zh", zh=True)
def _appleid(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"Apple ID 密码改成 {p} 了，iPad 和 Mac 上都要重新登录一下"


@_kind("chinese characters password zh", zh=True)
def _hanzi(r: random.Random) -> tuple[str, str]:
    p = r.choice(_ZH_PHRASES) + str(r.randint(1000, 9999))
    return p, f"内网 wiki 的密码居然支持中文，我设的是「{p}」"


@_kind("pinyin birthday password zh", zh=True)
def _pinyinbd(r: random.Random) -> tuple[str, str]:
    p = f"{_pinyin(r)}{r.randint(1950, 2010)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    return p, f"爸妈的电脑开机密码：{p}（拼音加生日，劝过了不改）"


@_kind("steam account zh", zh=True)
def _steam(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"Steam 账号 {_w(r, 8, LALNUM)}，密码 {p}，令牌绑在旧手机上（抽屉里那台）"


@_kind("company mailbox initial password zh", zh=True)
def _corpmail(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"新同事入职：企业邮箱 {_pinyin(r)}@公司域名，初始密码 {p}，首次登录强制修改"


@_kind("university portal login zh", zh=True)
def _jiaowu(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"教务系统：学号 20{r.randint(18, 25)}{_w(r, 8, DIGITS)}，密码 {p}，选课周记得抢体育课"


@_kind("vpn portal credentials")
def _vpn(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"GlobalProtect portal vpn.acme.com: user jdoe, pw {p}, MFA via Okta push"


@_kind("tax app password zh", zh=True)
def _geshui(r: random.Random) -> tuple[str, str]:
    p = _pw(r)
    return p, f"个人所得税 App 登录密码 {p}，年度汇算在三月，专项附加扣除填了房贷和赡养老人"


# ------------------------------------------------------------------ money


@_kind("unionpay salary card zh", zh=True)
def _unionpay(r: random.Random) -> tuple[str, str]:
    s = _group(_luhn(r, "62" + r.choice(["2588", "1700", "2848", "1226"]), 19))
    return s, f"工资卡是招商银行的，卡号 {s}，开户行 上海张江支行"


@_kind("visa card with expiry")
def _visa(r: random.Random) -> tuple[str, str]:
    n = _luhn(r, "4", 16)
    return n, (
        f"card for the AWS account: {n} exp {r.randint(1, 12):02d}/{r.randint(27, 31)} cvv {_w(r, 3, DIGITS)} "
        f"(billing zip {_w(r, 5, DIGITS)})"
    )


@_kind("amex card dashed")
def _amex(r: random.Random) -> tuple[str, str]:
    n = _luhn(r, r.choice(["34", "37"]), 15)
    s = f"{n[:4]}-{n[4:10]}-{n[10:]}"
    return s, f"Corporate Amex {s}, ask finance before using it for SaaS"


@_kind("mastercard in markdown table zh", zh=True)
def _mc_table(r: random.Random) -> tuple[str, str]:
    n = _luhn(r, str(r.randint(51, 55)), 16)
    return n, (
        f"| 卡 | 卡号 | 有效期 | 用途 |\n|---|---|---|---|\n"
        f"| 信用卡 | {n} | {r.randint(1, 12):02d}/{r.randint(27, 31)} | 海外订阅 |\n| 借记卡 | 见钱包 | - | 日常 |"
    )


@_kind("credit card cvn zh", zh=True)
def _cvn(r: random.Random) -> tuple[str, str]:
    s = _group(_luhn(r, "6259", 16), 4, "-")
    return s, f"给老婆绑的附属卡 {s}，有效期 {r.randint(1, 12):02d}/{r.randint(27, 31)}，背面 CVN2 {_w(r, 3, DIGITS)}"


@_kind("iban german spaced")
def _iban_de(r: random.Random) -> tuple[str, str]:
    s = _group(_iban("DE", _w(r, 18, DIGITS)))
    return s, f"Please transfer the deposit to IBAN {s} (BIC COBADEFFXXX), reference: flat 3B"


@_kind("iban uk in forwarded email")
def _iban_gb(r: random.Random) -> tuple[str, str]:
    i = _iban("GB", r.choice(["NWBK", "BARC", "HBUK", "LOYD"]) + _w(r, 14, DIGITS))
    return i, (
        "---------- Forwarded message ---------\nFrom: Lettings Team\nSubject: rent\n\n"
        f"Hi, new account for the rent from January: {i}. Thanks!"
    )


@_kind("iban french zh", zh=True)
def _iban_fr(r: random.Random) -> tuple[str, str]:
    s = _group(_iban("FR", _w(r, 10, DIGITS) + _w(r, 11, UALNUM) + _w(r, 2, DIGITS)))
    return s, f"法国房东的收款账户 IBAN：{s}，BIC BNPAFRPPXXX，备注写 loyer décembre"


@_kind("iban dutch in chat")
def _iban_nl(r: random.Random) -> tuple[str, str]:
    i = _iban("NL", r.choice(["INGB", "RABO", "ABNA"]) + _w(r, 10, DIGITS))
    s = i.lower()
    return s, f"tikkie didn't work, just wire it: {s} (lowercase is fine, the bank app accepts it)"


@_kind("alipay payment password zh", zh=True)
def _alipay_pay(r: random.Random) -> tuple[str, str]:
    c = _w(r, 6, DIGITS)
    return c, f"给爸妈开的亲情号：支付宝账号 {_cn_mobile(r)}，支付密码六位 {c}"


@_kind("us bank account ach")
def _ach(r: random.Random) -> tuple[str, str]:
    a = _w(r, 1, "123456789") + _w(r, r.randint(9, 11), DIGITS)
    return a, f"direct deposit form: routing 021000021, checking account {a}, Chase, Jane Roe"


@_kind("bank transfer details zh", zh=True)
def _transfer(r: random.Random) -> tuple[str, str]:
    a = _luhn(r, "6212", 19)
    return a, f"转账信息：户名 {_cn_name(r)}；开户行 中国工商银行北京海淀支行；账号 {a}"


# ------------------------------------------------------------------ identity documents, health, vehicles


@_kind("cn resident id zh", zh=True)
def _cnid(r: random.Random) -> tuple[str, str]:
    i = _cn_id(r)
    return i, f"帮我订周五去成都的机票，乘机人 {_cn_name(r)}，身份证 {i}"


@_kind("cn id in family table zh", zh=True)
def _cnid_table(r: random.Random) -> tuple[str, str]:
    ids = [_cn_id(r) for _ in range(3)]
    return ids[1], f"| 家庭成员 | 身份证号 |\n|---|---|\n| 爸爸 | {ids[0]} |\n| 妈妈 | {ids[1]} |\n| 我 | {ids[2]} |"


@_kind("cn id grouped voice zh", zh=True)
def _cnid_voice(r: random.Random) -> tuple[str, str]:
    i = _cn_id(r)
    s = f"{i[:6]} {i[6:14]} {i[14:]}"
    return s, f"（语音转文字）嗯 身份证号是 {s} 对 最后一位如果是 X 就是大写"


@_kind("us ssn")
def _ssn(r: random.Random) -> tuple[str, str]:
    area = r.randint(1, 899)
    area = 667 if area == 666 else area
    s = f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"
    return s, f"W-9 for the contractor gig: SSN {s}, address same as on the lease"


@_kind("uk national insurance number")
def _nino(r: random.Random) -> tuple[str, str]:
    letters = "ABCEGHJKLMNPRSTWXYZ"
    pairs = " ".join(_w(r, 2, DIGITS) for _ in range(3))
    s = f"{r.choice(letters)}{r.choice(letters)} {pairs} {r.choice('ABCD')}"
    return s, f"HMRC letter says my NI number is {s} - needed for the new payroll"


@_kind("hong kong id zh", zh=True)
def _hkid_kind(r: random.Random) -> tuple[str, str]:
    h = _hkid(r)
    return h, f"香港身份证号码 {h}，办银行卡时用的，复印件在文件夹里"


@_kind("taiwan id zh", zh=True)
def _twid_kind(r: random.Random) -> tuple[str, str]:
    t = _twid(r)
    return t, f"外婆的身分證字號 {t}，健保卡上也有，掛號要用"


@_kind("spanish dni")
def _dni(r: random.Random) -> tuple[str, str]:
    n = r.randint(10000000, 99999999)
    s = f"{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[n % 23]}"
    return s, f"rental contract for the flat in Valencia needs the landlord's DNI: {s}"


@_kind("cn passport zh", zh=True)
def _cnpass(r: random.Random) -> tuple[str, str]:
    prefix = r.choice(["E", "EA", "EB", "EC"])
    p = prefix + _w(r, 9 - len(prefix), DIGITS)
    return p, f"护照号 {p}，有效期到 20{r.randint(28, 35)} 年，签证申请表上要填"


@_kind("passport mrz line")
def _mrz(r: random.Random) -> tuple[str, str]:
    num = _w(r, 9, DIGITS)
    dob = f"{r.randint(60, 99):02d}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    exp = f"{r.randint(27, 36):02d}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    opt = "<" * 14
    composite = num + _mrz_check(num) + dob + _mrz_check(dob) + exp + _mrz_check(exp) + opt + "0"
    line2 = (
        f"{num}{_mrz_check(num)}USA{dob}{_mrz_check(dob)}{r.choice('MF')}{exp}{_mrz_check(exp)}{opt}0"
        f"{_mrz_check(composite)}"
    )
    names = f"{r.choice(_LAST).upper()}<<{r.choice(_FIRST).upper()}"
    line1 = ("P<USA" + names).ljust(44, "<")
    return line2, f"scanned the passport page, OCR gave:\n```\n{line1}\n{line2}\n```"


@_kind("hk macau permit zh", zh=True)
def _hkmacau(r: random.Random) -> tuple[str, str]:
    p = "C" + _w(r, 8, UALNUM)
    return p, f"港澳通行证号 {p}，签注还剩两次，下次去香港前看一眼"


@_kind("uk driving licence")
def _ukdl(r: random.Random) -> tuple[str, str]:
    surname = r.choice(["MORGA", "SMITH", "PATEL", "WALSH", "JONES", "TAYLO"])
    s = f"{surname}{_w(r, 6, DIGITS)}{_w(r, 2, UPPER)}9{_w(r, 2, UALNUM)}"
    return s, f"hire car form wants the licence number: {s}, issue 12"


@_kind("cn driving licence file number zh", zh=True)
def _jiazhao(r: random.Random) -> tuple[str, str]:
    n = _w(r, 12, DIGITS)
    return n, f"驾驶证档案编号 {n}，交管 12123 绑定时要填，准驾车型 C1"


@_kind("property certificate number zh", zh=True)
def _budongchan(r: random.Random) -> tuple[str, str]:
    s = f"沪（20{r.randint(15, 26)}）{r.choice(['浦', '徐', '静'])}字不动产权第{_w(r, 7, DIGITS)}号"
    return s, f"房产证：{s}，贷款合同和这个放一个袋子里"


@_kind("hospital record number zh", zh=True)
def _mrn(r: random.Random) -> tuple[str, str]:
    n = _w(r, 10, DIGITS)
    return n, f"协和门诊病案号 {n}，下周三复查甲状腺，记得空腹"


@_kind("social security card zh", zh=True)
def _shebao(r: random.Random) -> tuple[str, str]:
    n = r.choice(UPPER) + _w(r, 8, DIGITS)
    return n, f"社保卡卡号（不是身份证号那个）：{n}，医保个人账户余额在支付宝里能查"


@_kind("nhs number")
def _nhs_kind(r: random.Random) -> tuple[str, str]:
    n = _nhs(r)
    return n, f"GP registration: NHS no. {n}, surgery on Mill Road"


@_kind("us medicare mbi")
def _mbi(r: random.Random) -> tuple[str, str]:
    a = "ACDEFGHJKMNPQRTUVWXY"
    an = a + DIGITS
    s = (
        f"{r.randint(1, 9)}{r.choice(a)}{r.choice(an)}{r.choice(DIGITS)}-{r.choice(a)}{r.choice(an)}"
        f"{r.choice(DIGITS)}-{r.choice(a)}{r.choice(a)}{r.choice(DIGITS)}{r.choice(DIGITS)}"
    )
    return s, f"Mom's Medicare card: MBI {s}, Part A and B since 2024"


@_kind("health insurance member id")
def _policy(r: random.Random) -> tuple[str, str]:
    s = f"HLT-{_w(r, 8, DIGITS)}-{_w(r, 2, UPPER)}"
    return s, f"> Member ID {s}\n> Group 00{_w(r, 4, DIGITS)}\n\n(from the insurer's email, for the dentist)"


@_kind("car insurance policy zh", zh=True)
def _carins(r: random.Random) -> tuple[str, str]:
    s = "PDAA2026" + _w(r, 14, DIGITS)
    return s, f"车险保单号 {s}，出险了直接报保单号就行，到期日 2027-03-01"


@_kind("diagnosis with patient id zh", zh=True)
def _diag(r: random.Random) -> tuple[str, str]:
    n = "ZY" + _w(r, 8, DIGITS)
    return n, f"爸爸住院号 {n}，诊断：2 型糖尿病伴周围神经病变，胰岛素每天两次，别让亲戚知道"


@_kind("vin with valid check digit")
def _vin_kind(r: random.Random) -> tuple[str, str]:
    v = _vin(r)
    return v, f"insurance quote needs the VIN: {v} (it's on the windscreen sticker)"


@_kind("cn licence plate zh", zh=True)
def _plate(r: random.Random) -> tuple[str, str]:
    alnum = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
    tail = r.choice("DF") + _w(r, 5, DIGITS) if r.random() < 0.5 else _w(r, 5, alnum)
    s = f"{r.choice('京沪粤浙苏川鄂湘')}{r.choice('ABCDEFGHJK')}·{tail}"
    return s, f"我的车牌 {s}，停在 B2-{r.randint(100, 399)}，物业登记过了"


@_kind("us licence plate")
def _usplate(r: random.Random) -> tuple[str, str]:
    s = f"{r.randint(1, 9)}{_w(r, 3, UPPER)}{_w(r, 3, DIGITS)}"
    return s, f"parking permit app wants my plate: CA {s}, silver Corolla"


# ------------------------------------------------------------------ phones, e-mails, social accounts


@_kind("cn mobile plain zh", zh=True)
def _cnm1(r: random.Random) -> tuple[str, str]:
    m = _cn_mobile(r)
    return m, f"我新换的手机号 {m}，旧号下个月停机"


@_kind("cn mobile +86 dashed zh", zh=True)
def _cnm2(r: random.Random) -> tuple[str, str]:
    m = _cn_mobile(r)
    s = f"+86-{m[:3]}-{m[3:7]}-{m[7:]}"
    return s, f"房东{_cn_name(r)}：{s}（微信同号）"


@_kind("cn mobile fullwidth digits zh", zh=True)
def _cnm3(r: random.Random) -> tuple[str, str]:
    s = _cn_mobile(r).translate(_FULLWIDTH)
    return s, f"快递单上电话是全角的：{s}，复制到拨号盘要先转一下"


@_kind("cn mobile spoken digits zh", zh=True)
def _cnm4(r: random.Random) -> tuple[str, str]:
    s = "".join(_SPOKEN[int(c)] for c in _cn_mobile(r))
    return s, f"（语音备忘）记一下 王阿姨的电话 {s} 嗯 她是钟点工"


@_kind("cn mobile spaced in contact card zh", zh=True)
def _cnm5(r: random.Random) -> tuple[str, str]:
    m = _cn_mobile(r)
    s = f"{m[:3]} {m[3:7]} {m[7:]}"
    return s, f"名片：{_cn_name(r)} ｜ 私人手机 {s} ｜ 周末请勿打扰"


@_kind("cn home landline zh", zh=True)
def _landline(r: random.Random) -> tuple[str, str]:
    s = f"0{r.choice(['21', '10', '755', '571'])}-{r.choice('2345678')}{_w(r, 7, DIGITS)}"
    return s, f"爷爷家座机 {s}，他不看手机，有急事打这个"


@_kind("us phone parenthesised")
def _usph(r: random.Random) -> tuple[str, str]:
    s = f"({r.randint(201, 989)}) {r.randint(200, 999)}-{_w(r, 4, DIGITS)}"
    return s, f"call Dr. Alvarez's cell after 6 if the fever's back: {s}"


@_kind("us phone dotted in signature")
def _usdot(r: random.Random) -> tuple[str, str]:
    s = f"{r.randint(201, 989)}.{r.randint(200, 999)}.{_w(r, 4, DIGITS)}"
    return s, f"Thanks,\nJane Roe\npersonal cell {s} | she/her"


@_kind("uk mobile")
def _ukph(r: random.Random) -> tuple[str, str]:
    s = f"+44 (0)7{_w(r, 3, DIGITS)} {_w(r, 6, DIGITS)}"
    return s, f"Tom from the climbing club, WhatsApp {s}"


@_kind("german mobile")
def _deph(r: random.Random) -> tuple[str, str]:
    s = f"+49 1{r.choice(['51', '52', '60', '62', '70', '76'])} {_w(r, 8, DIGITS)}"
    return s, f"Kontakt Vermieterin (Frau Becker): {s}, nur werktags"


@_kind("french mobile")
def _frph(r: random.Random) -> tuple[str, str]:
    s = "0" + r.choice("67") + " " + " ".join(_w(r, 2, DIGITS) for _ in range(4))
    return s, f"numéro perso de Camille : {s} (elle préfère les SMS)"


@_kind("japanese mobile")
def _jpph(r: random.Random) -> tuple[str, str]:
    s = f"0{r.choice(['80', '90', '70'])}-{_w(r, 4, DIGITS)}-{_w(r, 4, DIGITS)}"
    return s, f"Tokyo host family (Sato-san) mobile {s}"


@_kind("indian mobile")
def _inph(r: random.Random) -> tuple[str, str]:
    s = f"+91 {r.choice('6789')}{_w(r, 4, DIGITS)} {_w(r, 5, DIGITS)}"
    return s, f"Ravi's number for the UPI split: {s}"


@_kind("hong kong mobile zh", zh=True)
def _hkph(r: random.Random) -> tuple[str, str]:
    s = f"+852 {r.choice('5679')}{_w(r, 3, DIGITS)} {_w(r, 4, DIGITS)}"
    return s, f"香港表姐的号码 {s}，WhatsApp 也是这个"


@_kind("taiwan mobile zh", zh=True)
def _twph(r: random.Random) -> tuple[str, str]:
    s = f"09{_w(r, 2, DIGITS)}-{_w(r, 3, DIGITS)}-{_w(r, 3, DIGITS)}"
    return s, f"台北朋友阿哲的手機 {s}，LINE 也加了"


@_kind("australian mobile")
def _auph(r: random.Random) -> tuple[str, str]:
    s = f"04{_w(r, 2, DIGITS)} {_w(r, 3, DIGITS)} {_w(r, 3, DIGITS)}"
    return s, f"sister in Melbourne has a new number: {s}"


@_kind("brazilian mobile")
def _brph(r: random.Random) -> tuple[str, str]:
    s = f"+55 (11) 9{_w(r, 4, DIGITS)}-{_w(r, 4, DIGITS)}"
    return s, f"Lucas (São Paulo office) zap: {s}"


@_kind("qq mail address zh", zh=True)
def _qqmail(r: random.Random) -> tuple[str, str]:
    e = f"{r.choice('123456789')}{_w(r, r.randint(7, 9), DIGITS)}@qq.com"
    return e, f"简历投递邮箱用我私人的 {e}，别用公司邮箱"


@_kind("163 mail address zh", zh=True)
def _163mail(r: random.Random) -> tuple[str, str]:
    e = f"{_pinyin(r)}{r.randint(1980, 2005)}@163.com"
    return e, f"老同学群里说的：有事发邮件 {e}"


@_kind("obfuscated gmail")
def _obf(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(_FIRST).lower()}.{r.choice(_LAST).lower()}{r.randint(10, 99)} (at) gmail (dot) com"
    return s, f"posted on the forum as {s} so the bots don't scrape it"


@_kind("obfuscated email zh", zh=True)
def _obfzh(r: random.Random) -> tuple[str, str]:
    s = f"{_pinyin(r)}{r.randint(100, 999)} 艾特 outlook 点 com"
    return s, f"她说邮箱是 {s}（语音说的，我照打的）"


@_kind("email in mailto link")
def _mailto(r: random.Random) -> tuple[str, str]:
    e = f"{_w(r, 6, LOWER)}{r.randint(1, 99)}@proton.me"
    return e, f"If this laptop is found: [email me](mailto:{e}) or leave it at the front desk."


@_kind("email in outlook forward header")
def _fwdhdr(r: random.Random) -> tuple[str, str]:
    first, last = r.choice(_FIRST), r.choice(_LAST)
    e = f"{first.lower()}{last.lower()[:3]}{r.randint(100, 999)}@icloud.com"
    return e, (
        f"From: {first} {last} [mailto:{e}]\nSent: Tuesday, 2 December 2026 21:14\nSubject: Re: spare key\n\n"
        "I'll drop it in your mailbox tomorrow."
    )


@_kind("wechat id zh", zh=True)
def _wxid(r: random.Random) -> tuple[str, str]:
    s = r.choice(LOWER) + _w(r, r.randint(6, 12), LALNUM + "_-")
    return s, f"加我微信：{s}（搜手机号搜不到，关了）"


@_kind("wechat wxid in export zh", zh=True)
def _wxid2(r: random.Random) -> tuple[str, str]:
    s = "wxid_" + _w(r, 14, LALNUM)
    return s, f"聊天记录导出工具里看到的原始 ID：{s}，备注「二舅」"


@_kind("qq number zh", zh=True)
def _qqnum(r: random.Random) -> tuple[str, str]:
    s = str(r.randint(100000000, 3999999999))
    return s, f"我的 QQ 小号 {s}，游戏登录用，大号别加"


@_kind("xiaohongshu douyin ids zh", zh=True)
def _xhs(r: random.Random) -> tuple[str, str]:
    s = str(r.randint(100000000, 9999999999))
    return s, f"小号矩阵：小红书号 {s}，抖音号 dy{_w(r, 8, LALNUM)}，都是我私人的，别在公司群里发"


@_kind("telegram handle")
def _tg(r: random.Random) -> tuple[str, str]:
    s = "@" + r.choice(LOWER) + _w(r, r.randint(6, 12), LALNUM)
    return s, f"ping me on telegram {s} instead of email, I read it faster"


@_kind("signal username")
def _signal(r: random.Random) -> tuple[str, str]:
    s = f"{r.choice(_FIRST).lower()}{_w(r, 3, LOWER)}.{r.randint(10, 99)}"
    return s, f"Signal: {s} (username, not phone; my number is hidden)"


@_kind("line id")
def _line(r: random.Random) -> tuple[str, str]:
    s = r.choice(LOWER) + _w(r, 8, LALNUM)
    return s, f"LINE ID: {s}, the Osaka hostel owner, for late check-in"


# ------------------------------------------------------------------ addresses and places


@_kind("cn home address zh", zh=True)
def _cnaddr(r: random.Random) -> tuple[str, str]:
    a = _cn_address(r)
    return a, f"家庭住址：{a}，门口有两个石狮子"


@_kind("cn delivery address zh", zh=True)
def _cndeliv(r: random.Random) -> tuple[str, str]:
    a = _cn_address(r)
    return a, f"收货信息：{_cn_name(r)}，{_cn_mobile(r)}，{a}（工作日放驿站）"


@_kind("hong kong address zh", zh=True)
def _hkaddr(r: random.Random) -> tuple[str, str]:
    s = (
        f"香港九龍旺角{r.choice(['彌敦道', '亞皆老街', '西洋菜南街'])}{r.randint(1, 700)}號"
        f"{r.choice(['信和', '富榮', '金輝'])}大廈{r.randint(2, 30)}樓{r.choice('ABCDEFGH')}室"
    )
    return s, f"寄到表姐家：{s}，收件人写英文名"


@_kind("us home address")
def _usaddr(r: random.Random) -> tuple[str, str]:
    street = f"{r.choice(['Maple', 'Oak', 'Cedar', 'Elm', 'Willow', 'Sunset'])} {r.choice(['St', 'Ave', 'Dr', 'Ln'])}"
    city = r.choice(["Portland, OR", "Austin, TX", "Madison, WI", "Raleigh, NC"])
    s = f"{r.randint(100, 9999)} {street}, Apt {r.randint(1, 40)}{r.choice('ABCD')}, {city} {_w(r, 5, DIGITS)}"
    return s, f"ship the replacement router to {s}, not the office"


@_kind("uk home address")
def _ukaddr(r: random.Random) -> tuple[str, str]:
    road = f"{r.randint(1, 200)} {r.choice(['Brixton', 'Holloway', 'Kingsland', 'Cowley', 'Gloucester'])} Road"
    inward = f"{r.randint(1, 9)}{_w(r, 2, 'ABDEFGHJLNPQRSTUWXYZ')}"
    post = f"{r.choice(['SW', 'N', 'E', 'OX', 'BS'])}{r.randint(1, 19)} {inward}"
    s = f"Flat {r.randint(1, 30)}, {road}, {r.choice(['London', 'Oxford', 'Bristol'])} {post}"
    return s, f"new address for the council tax: {s}"


@_kind("german home address")
def _deaddr(r: random.Random) -> tuple[str, str]:
    street = r.choice(["Lindenstraße", "Bergmannstraße", "Schillerweg", "Am Rosengarten"])
    city = r.choice(["Berlin", "Leipzig", "Köln"])
    s = f"{street} {r.randint(1, 120)}{r.choice(['', 'a', 'b'])}, {_w(r, 5, DIGITS)} {city}"
    return s, f"Lieferadresse (privat): {s}, drittes OG links"


@_kind("japanese address")
def _jpaddr(r: random.Random) -> tuple[str, str]:
    s = (
        f"〒{_w(r, 3, DIGITS)}-{_w(r, 4, DIGITS)} 東京都{r.choice(['世田谷区', '杉並区', '目黒区'])}"
        f"{r.choice(['代沢', '高円寺南', '中町'])}{r.randint(1, 5)}-{r.randint(1, 30)}-{r.randint(1, 20)} "
        f"{r.choice(['メゾン', 'コーポ', 'ハイツ'])}{r.randint(101, 405)}"
    )
    return s, f"Airbnb in Tokyo, address for the taxi driver: {s}"


@_kind("home gps coordinates")
def _gps(r: random.Random) -> tuple[str, str]:
    s = f"{r.uniform(22, 55):.5f}, {r.uniform(-122, 121):.5f}"
    return s, f"home (for the drone geofence and the pizza app): {s}"


@_kind("kids school pickup zh", zh=True)
def _school(r: random.Random) -> tuple[str, str]:
    c = _w(r, 6, DIGITS)
    return c, f"女儿学校接送卡密码 {c}，班主任电话在家长群，放学时间 16:30"


# ------------------------------------------------------------------ the set's other parts

CHINESE: frozenset[str] = frozenset(_ZH)

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"(private) {t}",
    lambda t: f"PRIVATE: {t}",
    lambda t: f"{t} [do not publish]",
    lambda t: f"【私密】{t}",
    lambda t: f"（私人）{t}",
    lambda t: f"{t} #私密",
    lambda t: f"🔒 {t}",
    lambda t: f"{t} 🔒",
    lambda t: f"<!-- private --> {t}",
    lambda t: f"私人笔记：{t}",
    lambda t: f"{t}（勿公开）",
    lambda t: f"[confidential] {t}",
    lambda t: f"NOT FOR WIKI: {t}",
    lambda t: f"{t} // private",
    lambda t: f"[仅自己可见] {t}",
    lambda t: f"{t} #nopublish",
    lambda t: f"〔机密〕{t}",
    lambda t: f"#secret {t}",
    lambda t: f"{t} (internal only, keep off the wiki)",
    lambda t: f"🤫 {t}",
    lambda t: f"{t} #保密",
    lambda t: f"Private note - {t}",
    lambda t: f"[[private]] {t}",
    lambda t: f"不要公开：{t}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"visibility": "private"},
    {"publish": False},
    {"access": "private"},
    {"tags": ["private"]},
    {"confidential": True},
    {"secret": True},
    {"sensitivity": "confidential"},
    {"public": False},
    {"私密": True},
    {"visibility": "私密"},
    {"tags": ["私人", "家庭"]},
    {"privacy": "private"},
    {"published": False},
    {"private": "true"},
    {"private": "yes"},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "# Private",
    "## Private notes",
    "### Secrets",
    "## 私密",
    "## 隐私信息",
    "## Personal (do not share)",
    "## 不要公开",
    "## 🔒 Private",
    "## Confidential",
    "### 私人备忘",
    "## Keep private",
]

ORDINARY: list[str] = [
    # commands, versions, public hashes and ids
    "git cherry-pick 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "sha256sum: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "md5 of an empty file is d41d8cd98f00b204e9800998ecf8427e",
    "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "integrity sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs817LiJQb6ac5hlbthM/ATM9Lg==",
    "requests==2.32.3 --hash=sha256:70761cfe03c773ceb22aa2f671b4757976145175cdfca038c02654d061d6dcc6",
    "docker pull python:3.12-slim@sha256:2d8a5f8b1bb2c3f7d8e3c6a0f4b0a1f2c5e9d7b6a4c3e2f1d0b9a8c7e6f5d4c3",
    "uuid 123e4567-e89b-12d3-a456-426614174000 from the RFC example",
    "ETag: 33a64df551425fcc55e4d42a148795d9f25f89d4",
    "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    "git clone git@github.com:psf/requests.git",
    "ssh-copy-id -i ~/.ssh/id_ed25519.pub deploy@staging",
    "python -m pip install --upgrade pip==24.3.1",
    "kubectl rollout restart deployment/web -n staging",
    "kubectl create secret generic db-creds --from-env-file=.env",
    "aws secretsmanager get-secret-value --secret-id prod/db",
    "pytest -k 'not slow' -x --maxfail=1",
    "chmod 600 ~/.ssh/id_ed25519",
    "mysql -u root -p",
    "redis-cli -a $REDIS_PASSWORD ping",
    "v2.14.0-rc.1+build.5",
    "image: ghcr.io/home-assistant/home-assistant:2024.11.3",
    "The zero address 0x0000000000000000000000000000000000000000 burns tokens",
    "ISBN 978-0-13-468599-1",
    # placeholders and references, not values
    "API_KEY=changeme",
    "password: <your password>",
    "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "Authorization: Bearer YOUR_TOKEN_HERE",
    "DB_PASSWORD=",
    "password: null",
    "api_key: [REDACTED]",
    "secret_key: ${SECRET_KEY}",
    "SECRET_KEY = os.environ['SECRET_KEY']",
    "password = getpass.getpass()",
    "POSTGRES_PASSWORD=example is only for the throwaway container in the docs",
    "postgresql://user:password@localhost:5432/mydb is the template in the README",
    "curl -H 'Authorization: Bearer $TOKEN' https://api.github.com/user",
    "Set REDIS_PASSWORD in the .env file (leave it empty for local dev)",
    # sentences about secrets that hold none
    "rotate the API key monthly",
    "password must be at least 12 characters and contain a digit",
    "ghp_ prefixes mark a classic GitHub personal access token",
    "AKIA prefixes identify long-term AWS access keys, ASIA temporary ones",
    "The JWT header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 only says alg HS256",
    "base64 of hello world is aGVsbG8gd29ybGQ=",
    "Test card 4242 4242 4242 4242 always succeeds in Stripe test mode",
    "Bearer tokens expire after 15 minutes and refresh tokens after 30 days",
    "OTP window is 30 seconds, 6 digits, SHA1",
    "PIN codes are 4 to 6 digits long",
    "pbkdf2_sha256 with 600000 iterations",
    # errors, logs, network, colours, dates
    "HTTP 401 Unauthorized: invalid_api_key",
    "fatal: Authentication failed for 'https://github.com/octocat/Hello-World.git/'",
    "Traceback (most recent call last): KeyError: 'OPENAI_API_KEY'",
    "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)",
    "npm ERR! code E404 404 Not Found - GET https://registry.npmjs.org/left-pad-x",
    "Error: EACCES: permission denied, open '/usr/local/lib/node_modules'",
    "2026-12-03 14:05:33,120 INFO uvicorn.access 127.0.0.1:51234 - GET /health 200",
    "RFC 1918 ranges: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16",
    "192.0.2.10 and 2001:db8::1 are documentation addresses",
    "port 5432 is PostgreSQL, 6379 Redis, 27017 MongoDB",
    "listen 0.0.0.0:8080",
    "color: #1e90ff; background: #fafafa",
    "font-family: 'Noto Sans SC', sans-serif",
    "2026-11-30T08:15:00Z",
    "HSTS max-age=31536000; includeSubDomains",
    "Content-Security-Policy: default-src 'self'",
    "max_tokens=4096, temperature=0.2",
    "https://docs.python.org/3/library/secrets.html",
    "https://platform.openai.com/docs/api-reference/authentication",
    "SELECT id, email FROM users WHERE created_at > now() - interval '7 days';",
    # Chinese technical text
    "密码至少12位，需包含大小写字母和数字",
    "API 密钥每 90 天轮换一次",
    "把 AccessKey 放到环境变量里，不要写进代码",
    "阿里云 AccessKey ID 以 LTAI 开头，格式类似 LTAIxxxxxxxxxxxxxxxx",
    "请在 .env 中填写 DASHSCOPE_API_KEY=你的密钥",
    "密码：请联系管理员获取",
    "身份证号码由 18 位组成，最后一位是校验码，可能是 X",
    "手机号格式校验正则：^1[3-9]\\d{9}$",
    "镜像地址 https://mirrors.aliyun.com/pypi/simple/",
    "pip config set global.index-url https://pypi.tuna.tsinghua.edu.cn/simple",
    "npm config set registry https://registry.npmmirror.com",
    "飞书机器人 Webhook 地址格式：https://open.feishu.cn/open-apis/bot/v2/hook/xxxxxxxx",
    "钉钉机器人加签密钥以 SEC 开头",
    "错误码 40001：获取 access_token 时 AppSecret 错误",
    '接口返回 {"errcode":0,"errmsg":"ok"}',
    "版本号 v3.2.1，发布于 2025-06-18",
    "提交 9fceb02 修复了内存泄漏",
    "端口 8080 被占用，改成 8081",
    "颜色用 #FF5733，圆角 8px",
    "UUID 示例：550e8400-e29b-41d4-a716-446655440000",
    "数据库密码通过 Vault 下发，本地不保存",
    "数据库连接串格式：mysql://用户名:密码@主机:3306/库名",
    "两步验证建议用 TOTP，不要用短信",
    "银行卡号需要通过 Luhn 校验",
    "验证码六位数字，五分钟内有效",
    "请勿在日志中打印 token",
    "报错：ModuleNotFoundError: No module named 'dashscope'",
    "证书路径 /etc/nginx/ssl/fullchain.pem",
    "DeepSeek 的 API 兼容 OpenAI 格式，base_url 是 https://api.deepseek.com",
    "密钥长度 256 位，算法 AES-GCM",
    "GB 11643-1999 规定了公民身份号码的结构",
    "SSH 端口改成非 22 的端口更安全",
    "使用 ed25519 代替 rsa 生成密钥",
    "门禁密码每季度更换一次，新密码见物业通知",
]
