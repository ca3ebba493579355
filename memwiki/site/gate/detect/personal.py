"""Class 3, personal data, from kept libraries where they exist.

- Phone numbers of every region (`phonenumbers`, leniency VALID): international `+…` numbers in any region,
  local ones as written in the regions whose users memwiki has (China, the US, the UK and a few more).
- Numbers with a check digit (`python-stdnum`): IBANs, card numbers (Luhn), the Chinese resident id (grouped
  with spaces or not), US social security numbers.
- E-mail addresses, obfuscated ones too (`name [at] host [dot] com`, `name(at)host.com`, full-width ＠).
- Network hardware addresses (MAC): they name a person's device.
- Ids that need a word to be ids: IMEI, passports, WeChat, QQ, Telegram, LINE, WhatsApp, Signal; home addresses.
- Wallet seed phrases: twelve or more words of a BIP-39 list (`mnemonic`'s lists, Chinese included).
"""

from __future__ import annotations

import functools
import itertools
import re

import phonenumbers
import re2
from mnemonic import Mnemonic
from stdnum import luhn
from stdnum.cn import ric, uscc
from stdnum.iso7064 import mod_11_2, mod_97_10
from stdnum.us import ssn

from memwiki.site.gate.detect.spans import NOT_A_LABEL, Span, digit_count, has_cjk, has_digit
from memwiki.site.gate.detect.values import documented_example, value_span
from memwiki.text.screen import LazyPattern, Present, Screened, re2_safe

REGIONS = ("CN", "US", "GB", "DE", "FR", "JP", "IN", "AU", "CA", "HK", "TW", "SG", "KR", "BR", "ES", "IT", "NL", "MX")
# The shapes of numbers that name a person, each screened by RE2 (`_D`: any digit, as Python's `\d` is).
_D = r"\p{Nd}"
_PHONE_CANDIDATE = Screened(  # (a CJK character beside a number is no part of it: 电话18106803027)
    r"(?<![A-Za-z0-9_.+/-])(?:\+|\(\d)?\d[\d \t().-]{6,18}\d(?![A-Za-z0-9_.]\d|[A-Za-z0-9_])",
    rf"{_D}[{_D} \t().-]{{6,18}}{_D}",
)
_DATE_OR_VERSION = LazyPattern(  # (and a compact time stamp, as hermes names its sessions: 20261130_030058)
    r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|^\d+(?:\.\d+){1,3}$|\d{1,2}:\d{2}"
    r"|^(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])[ _T-]?(?:[01]\d|2[0-3])[0-5]\d(?:[0-5]\d)?$"
)
_DOTTED_PHONE = LazyPattern(r"^(?:\d{3}\.\d{3}\.\d{4}|1[3-9]\d\.\d{4}\.\d{4})$")  # 408.313.6571, 180.7836.1631
_BARE_PHONE = LazyPattern(r"^(?:1[3-9]\d{9}|0\d{9,10}|1\d{10})$")  # a run with no separator: CN mobile, trunk 0, US 1
_CN_MOBILE = LazyPattern(r"^(?:\+?86[ -]?)?1[3-9]\d(?:[ -]\d{4}){2}$")  # written 3-4-4 (bare: see _said_phone)
_PHONE_WORDS = LazyPattern(r"(?i)电话|手机|手机号|联系|致电|打给|tel\b|phone|mobile|cell|call\b|whatsapp|微信")
_PROVINCES = "京津沪渝冀豫云辽黑湘皖鲁新苏浙赣鄂桂甘晋蒙陕吉闽贵粤青藏川宁琼使领"
_PLATE = Screened(  # a Chinese plate (province, letter, five or six): 苏B·FCM0Z; a UK one needs its word
    rf"(?i)(?<![\u4e00-\u9fff])[{_PROVINCES}][A-Z][·•.\s-]?[A-HJ-NP-Z0-9]{{5,6}}(?![A-Za-z0-9])",
    rf"(?i)[{_PROVINCES}][A-Z][·•.\s-]?[A-HJ-NP-Z0-9]{{5}}",
)
_PLATE_UK = Screened(  # the UK's since 2001: AL46 HTE
    r"(?<![A-Za-z0-9])[A-Z]{2}\d{2} ?[A-Z]{3}(?![A-Za-z0-9])", r"[A-Z]{2}\p{Nd}{2} ?[A-Z]{3}"
)
_VEHICLE = Screened(
    r"(?i)\b(?:car|cars|auto|vehicle|plates?|reg|registered|registration|parking|parked|permit|mot|dvla|insurance"
    r"|garage|van|motorbike|congestion)\b|车"
)
_CAR = Screened(
    r"(?i)\b(?:car|cars|auto|vehicle|plate|kennzeichen|nummernschild|wagen|motorbike|van|rental|toll|maut)\b|车牌"
)
_PLATE_DE = LazyPattern(r"(?<![\w-])[A-ZÄÖÜ]{1,3}-[A-Z]{1,2}\s?\d{1,4}[EH]?(?![\w-])")  # K-KS 1314, said of a car
_NINO = Screened(
    r"(?<![A-Za-z0-9])[A-CEGHJ-PR-TW-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D](?![A-Za-z0-9])",
    rf"[A-CEGHJ-PR-TW-Z]{{2}} ?{_D}{{2}} ?{_D}{{2}} ?{_D}{{2}} ?[A-D]",
)
_IBAN = Screened(  # (lower-cased too)
    r"(?i)(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}(?![A-Za-z0-9])",
    rf"(?i)[A-Z]{{2}}{_D}{{2}}(?: ?[A-Z0-9]){{11}}",
)
_IBAN_WORD = LazyPattern(r"(?i)\biban\b")
_CARD = Screened(r"(?<![\d.])[2-6]\d{3}(?:[ -]?\d){9,15}(?![\d]|\.\d)", rf"[2-6]{_D}{{3}}(?:[ -]?{_D}){{9}}")
_RIC = Screened(
    r"(?<![\d])[1-9]\d{5}[ -]?(?:19|20)\d{2}[ -]?\d{2}[ -]?\d{2}[ -]?\d{3}[\dXx](?![\dA-Za-z])"
    r"|(?<!\d)\d{6}(?: \d{4}){3}(?: ?[\dXx]{2})(?![\dA-Za-z])",
    rf"[1-9]{_D}{{5}}[ -]?(?:19|20){_D}{{2}}[ -]?{_D}{{2}}[ -]?{_D}{{2}}[ -]?{_D}{{3}}[{_D}Xx]"
    rf"|{_D}{{6}}(?: {_D}{{4}}){{3}} ?[{_D}Xx]{{2}}",
)
_ORCID = Screened(r"(?<![\w-])\d{4}-\d{4}-\d{4}-\d{3}[\dX](?![\w-])", rf"{_D}{{4}}-{_D}{{4}}-{_D}{{4}}-{_D}{{3}}")
_USCC = Screened(r"(?<![\w-])[0-9A-HJ-NPQRTUWXY]{2}\d{6}[0-9A-HJ-NPQRTUWXY]{10}(?![\w-])", rf"{_D}{{6}}[0-9A-Z]{{10}}")
_SSN = Screened(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])", rf"{_D}{{3}}-{_D}{{2}}-{_D}{{4}}")
_EMAIL = LazyPattern(r"(?<![A-Za-z0-9.%+-])[A-Za-z0-9._%+-]+[@＠](?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])")
_HASH_EMAIL = Screened(
    r"(?<![\w.+-])[A-Za-z0-9._%+-]{2,64}#(?:[A-Za-z0-9-]+\.)+(?:com|cn|net|org|edu|io|me|co|jp|de|uk|hk|tw)(?![\w-])",
    r"[A-Za-z0-9._%+-]{2}#(?:[A-Za-z0-9-]+\.)+(?:com|cn|net|org|edu|io|me|co|jp|de|uk|hk|tw)",
)
_ODD_DOT = LazyPattern("[·。．]")  # `name@host·com`: a dot no address holds
_MAC = Screened(  # (screened without its look-arounds and back-reference)
    r"(?<![\w:-])[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}(?![\w:-])",
    r"(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}",
)
_AT_WORD = Screened(r"[\[({<（【]\s*(?:at|@|dot|\.)\s*[\])}>）】]|\sat\s|艾特")
_AT = r"\s*(?:[\[(（【{<]\s*(?:at|@|艾特)\s*[\])）】}>]|\s(?:at|AT)\s|艾特|@)\s*"
_DOT = r"\s*(?:[\[(（【{<]\s*(?:dot|\.|点)\s*[\])）】}>]|\s(?:dot|DOT)\s|点|[·。．])\s*"
_EMAIL_OBFUSCATED = LazyPattern(
    rf"(?i)(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{{2,64}}{_AT}[A-Za-z0-9-]{{2,63}}(?:(?:{_DOT}|\.)[A-Za-z0-9-]{{2,24}})*"
    rf"(?:{_DOT}|\.)(?:com|net|org|edu|gov|info|biz|io|me|co|app|dev|mail|[a-z]{{2}})(?![A-Za-z0-9-])"
)
_ID_WORDS = {
    "passport": r"passport(?:\s*(?:no\.?|number|#))?|护照(?:号码?)?|護照(?:號碼?)?|パスポート",
    "wechat": r"wechat(?:\s*id)?|weixin|微信(?:号|號|id)?|vx|wx|绿泡泡|綠泡泡|v信|威信|薇信",
    "qq": r"qq(?:\s*(?:小号|大号|账号|号|號|number|no\.?))?|扣扣|q\s*我|企鹅号?|企鵝號?",
    "messenger": r"(?:telegram|tg|line(?:\s*id)|whatsapp|signal|threema(?:\s*id)?|session\s+id|电报|discord(?:\s*id)?"
    r"|skype|钉钉"
    r"|飞书|instagram|ig|支付宝|支付寶|alipay|paypal|venmo|cash\s*app"
    r"|twitter|微博|小红书|抖音|threads|mastodon|bluesky)"
    r"(?:\s*(?:user(?:name)?|id|handle|number|号|账号))?",
    "address": r"home\s+address|mailing\s+address|street\s+address|i\s+live\s+at|住址|家庭住址|家住|住在|收货地址|寄到"
    r"|(?:我家|家里|家的|住宅|收件|寄件|公寓)?地址(?:是|为)?",
    "id number": r"imei|meid|ssn|social(?:\s+security)?(?:\s+number)?|身份证(?:字号|号码?)?|身份證(?:字號|號碼?)?"
    r"|身分證(?:字號|號碼?)?|身份证字号|社保号|驾照号"
    r"|national\s+(?:id|insurance)(?:\s+number)?|ni\s+number|nino|aadhaar(?:\s+(?:number|no\.?))?"
    r"|pan(?:\s+no\.?)|证件号码?|證件號碼?|通行证(?:号码?)?"
    r"|通行證(?:號碼?)?|回乡证|台胞证|居留证|tax\s+id|税号|driver'?s?\s+licen[cs]e(?:\s+number)?|学号|工号|医保卡?号|健保卡?号"
    r"|personal\s+id(?:\s+number)?|id\s+card(?:\s+number)?|bsn|burgerservicenummer|hkid|香港身份[证證](?:号码?|號碼?)?"
    r"|nric|tfn|steuer-?id|steuernummer|personalausweis(?:nummer)?|ausweisnummer|codice\s+fiscale|dni|nie|curp|cpf|pesel"
    r"|(?:numéro\s+de\s+)?sécurité\s+sociale|nir|社保(?:个人)?编号|个人编号|居民登录号|居民登錄號|numéro\s+de\s+sécu"
    r"|rijksregister(?:nummer)?|numéro\s+national|henkilötunnus|hetu|rx\s*(?:#|no\.?|number)"
    r"|prescription\s+(?:#|no\.?|number)|体检报告编号|报告编号|结婚证(?:字号)?|customer\s+(?:id|number|no\.?)|客户号|客户编号"
    r"|personnummer|my\s*number|マイナンバー|个人番号|個人番号|sin(?:\s+number)?|resident\s+registration\s+number|rrn"
    r"|주민등록번호|身分证字号|身分证号?|mrn|medical\s+record(?:\s+number)?|patient\s+id|住院号|病历号|病案号|就诊卡号"
    r"|门诊号|车架号|车辆识别代?号|vin(?:\s+(?:number|no\.?))?"
    # what a card, a policy or a licence is known by: "Member ID X", "MBI X", 保单号 X, 驾驶证档案编号 X
    r"|member\s+(?:id|no\.?|number)|subscriber\s+id|policy\s+(?:no\.?|number|id)|mbi|medicare(?:\s+(?:number|id))?"
    r"|insurance\s+(?:no\.?|number|id)|licen[cs]e\s+(?:no\.?|number)|file\s+(?:no\.?|number)|permit\s+(?:no\.?|number)"
    r"|社保卡(?:卡号|号)?|社会保障卡(?:卡号|号)?|社會保障卡(?:卡號|號)?|医保卡|醫保卡|保单号码?|保單號碼?|档案编号|檔案編號|驾驶证(?:号|编号)?|駕駛證(?:號|編號)?|会员号|會員號"
    r"|医保号|参保号|证书编号|证号|保单|保單|统一社会信用代码|統一社會信用代碼|信用代码|纳税人识别号|納稅人識別號"
    r"|taxpayer\s+id(?:entification)?(?:\s+number)?|orcid(?:\s+id)?"
    # an access card's or a tag's id (`门禁卡卡号 F7C3706D`), a Singapore or Malaysian identity card
    r"|门禁(?:\s*ic)?\s*卡(?:\s*uid|卡?号)?|門禁(?:\s*ic)?\s*卡(?:\s*uid|卡?號)?|门卡号?|(?:access\s+card|card|tag|nfc|rfid)\s+uid"
    r"|(?:singapore|malaysian?)\s+ic|mykad",
    "account name": r"(?:steam\s+)?login(?:\s+name)?|user\s*name|用户名|登录名|账户名",
    "booking reference": r"pnr|订座记录|booking\s+(?:ref(?:erence)?|code)|confirmation\s+(?:code|number)|预订号",
    "licence plate": r"(?:car\s+)?reg(?:istration)?(?:\s+(?:no\.?|number|plate))?|(?:number|licen[cs]e)\s+plate|plate"
    r"|kennzeichen|nummernschild|车牌号?|車牌號?|ナンバー",
    "account number": r"(?:bank\s+)?account(?:\s*(?:no\.?|number|#|nr\.?))?|acct\.?|a/c"
    r"|routing(?:\s*(?:no\.?|number|#))?"
    r"|aba|sort\s*code|bsb|konto(?:nummer)?|kontonr\.?|账号|帳號|账户|帳戶|卡号|卡號|银行卡号?|銀行卡號?|户号|收款账号|户口|戶口",
}
_ID_SEP = (  # "NI number (for the payroll form): X"; `_` where a graph's predicate joined the words; `"passport": "X"`
    r"(?:[\"'](?=\s*[:=]))?(?:\s*[(（](?![A-Z0-9]{5,}[)）])[^()（）\n]{0,30}[)）])?(?:\s+(?:for|of|on|pour|für|para|per|di|de|du)\s+[^:：\n.]{0,30}?(?=\s*[:：]|\s+is\b))?"
    r"(?:卡号|卡號|号码?|號碼?|编号|編號)?[\s_]*(?:[:=：]|\bis\b|\bnumber\b|是|为|号是|号码是|号：|,)?[\s_]*"
    r"(?:[\"'“‘`「【\[(（]|t\.me/|-(?=\w))?"  # (or joined by a dash: `MRN-FP75669046`; in brackets: `PESEL (…)`)
)
_ID_LEAD = {
    # (a word that ends in Chinese may have its value right after it: `社保卡卡号U51371290`)
    kind: LazyPattern(rf"(?i)(?<![A-Za-z])(?:{words})(?:(?<=[^\x00-\x7f])|(?![A-Za-z])){_ID_SEP}" + NOT_A_LABEL)
    for kind, words in _ID_WORDS.items()
}
_ID_PRESENT = Present(rf"(?i)(?:^|[^A-Za-z])(?:{words})(?:[^A-Za-z]|$)" for words in _ID_WORDS.values())
# what an address holds: a Chinese place word, or a number beside a word (`12 Oak Street`); not an IP range
_PLACE = LazyPattern(r"[省市区區县縣镇鎮乡鄉村路街巷号號楼樓栋棟室弄道苑园園座]|\d+\s*[A-Za-z]{3,}|[A-Za-z]{3,}\s*\d+")
_ID_VALUE = {
    "passport": LazyPattern(r"[A-Za-z]{0,2}\d{6,9}|[A-Za-z0-9]{6,9}"),
    "wechat": LazyPattern(r"@?[A-Za-z][-_A-Za-z0-9]{5,19}|1[3-9]\d{9}"),
    "qq": LazyPattern(r"[1-9]\d{4,10}"),
    "messenger": LazyPattern(
        r"(?:t\.me/|@)[A-Za-z][A-Za-z0-9_.]{3,31}|live:[.\w-]{4,40}|\+?\d[\d -]{6,16}\d|[A-Za-z0-9][A-Za-z0-9_.]{4,31}"
    ),
    "id number": LazyPattern(r"[A-Za-z0-9][A-Za-z0-9 .-]{4,24}[A-Za-z0-9](?:\([0-9A]\))?(?![A-Za-z0-9])"),
    "account number": LazyPattern(r"\d[\d -]{4,30}\d(?![\d-])"),
    "booking reference": LazyPattern(r"[A-Z0-9]{6}(?![A-Za-z0-9])"),
    "account name": LazyPattern(r"[A-Za-z][A-Za-z0-9_.-]{3,31}(?![\w@.-])"),
    "licence plate": LazyPattern(r"(?i)[A-Z0-9\u4e00-\u9fff]{1,3}[A-Z0-9]{0,3}[·•.\s-]?[A-Z0-9]{3,8}(?![A-Za-z0-9])"),
}
_STREET = (
    r"Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Grove|Drive|Dr|Court|Ct|Way|Place|Pl|Close|Crescent|Terrace|Boulevard"
    r"|Blvd|Square|Sq|Gardens|Mews|Row|Walk|Hill|Park|Parkway|Pkwy|Highway|Hwy|Straße|Strasse|Gasse|Weg|Rue"
)
_ADDRESS_EN = Screened(
    r"(?:(?:Flat|Apt\.?|Apartment|Unit|Suite|Room)\s+\w{1,5},?\s+)?\b\d{1,5}[A-Za-z]?,?\s+(?:[NSEW]\.?\s+)?"
    r"(?:\d{1,3}(?:st|nd|rd|th)\s+|(?:[A-Z][a-z]+\s+){1,3})"
    rf"(?:{_STREET})\b\.?(?:,?\s+(?:Apt\.?|Unit|Suite|\#)\s*\w{{1,5}})?(?:,?\s+[A-Z][a-z]+(?:\s[A-Z][a-z]+){{0,2}})?(?:,?\s+[A-Z]{{1,2}}\d[A-Z\d]?\s?\d[A-Z]{{2}}|,?\s+[A-Z]{{2}}\s+\d{{5}})?"
)
# what is written around a street address: its room, building and floor before it (`Room 2503, Building 9, No.`,
# `10/F,`), a postcode after its city (`Hangzhou 310096`)
_ADDRESS_HEAD = LazyPattern(
    r"(?i)(?:(?:room|rm\.?|flat|unit|apt\.?|apartment|suite|building|bldg\.?|block|blk\.?|tower|floor|no\.)\s*[\w-]{0,6}"
    r"\s*,?\s*|\d{1,3}/f\s*,?\s*)+$"
)
_ADDRESS_TAIL = LazyPattern(r"\s*,?\s*\d{5,6}(?!\d)")


def _whole_address(text: str, start: int, end: int) -> Span:
    """A street address with the room, building and floor written before it and the postcode after it."""
    if head := _ADDRESS_HEAD.search(text, max(0, start - 60), start):
        start = head.start()
    if tail := _ADDRESS_TAIL.match(text, end):
        end = tail.end()
    return Span(start, end, "address", 321)


_POSTCODE_SCREEN = r"(?i)\s\d{1,4}[a-z]?,\s*\d{5}\s+[A-ZÄÖÜ]"  # (what every such address holds)
_ADDRESS_POSTCODE = Screened(  # "Am Park 13, 12901 Berlin", "Kastanienallee 7a, 10435 Berlin": a number, a postcode
    r"(?i)(?<![\w-])(?:(?:Am|An der|Auf dem|Im|In der|Zum|Zur|Alt|Unter den)\s+[A-ZÄÖÜ][\wäöüß.-]+"
    r"|[A-ZÄÖÜ][\wäöüß-]*(?:str\.|straße|strasse|weg|allee|platz|gasse|ring|damm|ufer|chaussee|markt|park|hof|berg"
    r"|garten|graben|steig|pfad|kamp|tor))\s+\d{1,4}[a-z]?,\s*\d{5}\s+[A-ZÄÖÜ][\wäöüß-]+",
    _POSTCODE_SCREEN,
)
_ADDRESS_LOWER = Screened(  # lower-cased by a graph's predicate: a street, then a ZIP or postcode to be sure
    rf"(?i)\b\d{{1,5}}[a-z]?\s+(?:[a-z]+\s+){{1,3}}(?:{_STREET})\b\.?[^\n]{{0,40}}?"
    r"\b(?:[a-z]{2}\s+\d{5}(?:-\d{4})?|[a-z]{1,2}\d[a-z\d]?\s?\d[a-z]{2})\b"
)
_ADDRESS_DE = Screened(
    r"\b[A-ZÄÖÜ][a-zäöüß]+(?:str\.|straße|strasse|weg|gasse|platz|allee|ring)\s+\d{1,4}[a-z]?(?:,\s*\d{5}\s+[A-ZÄÖÜ][\wäöüß-]+)?"
)
_ADDRESS_ZH_STREET = LazyPattern(  # a street, its number and a flat, without the district (a form's own field)
    r"[\u4e00-\u9fff]{1,8}(?:路|街|大道|巷|弄|胡同)[0-9]+号(?:[0-9A-Za-z-]{1,6}(?:栋|幢|号楼|单元|室|楼|层))+[0-9]{0,5}"
)
_ADDRESS_ZH = LazyPattern(
    r"(?:[\u4e00-\u9fff]{2,6}(?:省|自治区|市)){0,2}[\u4e00-\u9fff]{1,8}(?:区|县|市|镇)[\u4e00-\u9fff0-9]{1,20}"
    r"(?:路|街|道|巷|弄|大道|胡同|里)[0-9一二三四五六七八九十]+号(?:[\u4e00-\u9fff0-9A-Za-z-]{0,30}(?:栋|幢|号楼|单元|室|楼|层))*"
)
_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATE = (
    rf"\d{{1,2}}\.?\s+(?:{_MONTHS})\.?,?\s+(?:19|20)\d\d|(?:{_MONTHS})\.?\s+\d{{1,2}},?\s+(?:19|20)\d\d"
    r"|(?:19|20)\d\d[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.](?:19|20)\d\d|(?:19|20)\d\d年\d{1,2}月\d{1,2}日"
)
_BIRTH = Screened(  # a date said to be someone's birth: "born 25 September 1975", "2017年3月20日出生", "DOB: …"
    rf"(?i)\b(?:born(?:\s+on)?|date\s+of\s+birth|d\.?o\.?b\.?|birthday(?:\s+is)?|geboren(?:\s+am)?)\s*[:：]?\s*({_DATE})"
    rf"|({_DATE})\s*(?:出生|生日|生)|(?:生日|出生日期|出生于|出生在)\s*(?:是|为|：|:)?\s*({_DATE})"
    # a child named with a date beside: "小儿子陈语嫣（2021.2.25）", "our daughter Mia (born 3/4/2019)"
    rf"|(?:儿子|兒子|女儿|女兒|孩子|宝宝|寶寶|闺女|閨女|\b(?:son|daughter|kid|baby))[^\n，。,.;；:：]{{0,12}}?[（(]\s*({_DATE})\s*[)）]"
)
_NUMBERED_THING = LazyPattern(r"(?:\b(?:GB(?:/T)?|ISO|IEC|RFC|DIN|EN|ERROR|Error|error|errno)|错误|标准)\s*$")
_MRZ = LazyPattern(r"(?<![A-Z0-9<])[A-Z0-9<]{28,44}(?![A-Z0-9<])")  # a passport's machine-readable lines
_COORDINATES = LazyPattern(r"(?<![\d.])-?\d{1,2}\.\d{4,},\s*-?\d{1,3}\.\d{4,}(?![\d.])")  # to about 10 m: a place
_JP_ADDRESS = LazyPattern(r"〒\s?\d{3}-?\d{4}[^\n，。;；]{0,60}")  # a Japanese postcode, the address after it
_PROPERTY_CERT = LazyPattern(  # 沪（2021）徐字不动产权第2624361号: a deed's number names its owner's home
    r"[\u4e00-\u9fff][（(]\d{4}[)）][\u4e00-\u9fff]{0,8}(?:不动产权|房权证|房地证)[\u4e00-\u9fff]{0,4}第\s*\d{4,}\s*号"
)
_WXID = LazyPattern(r"(?<![A-Za-z0-9])wxid_[a-z0-9]{8,}")
_SEED_SEP = LazyPattern(r"[\s,，、;]+(?:\d{1,2}[.):]\s*)?")


@functools.cache
def _mnemonic(language: str) -> Mnemonic:
    return Mnemonic(language)


@functools.cache
def _wordlist(language: str) -> frozenset[str]:
    return frozenset(_mnemonic(language).wordlist)


_BANK = Screened(r"(?i)银行|銀行|支行|分行|开户行|開戶行|信用社|农商行|\bbank\b|\bbanque\b|\bsparkasse\b")
_ACCOUNT_DIGITS = LazyPattern(r"(?<![\d.,:/-])\d{4}(?: ?\d){8,26}(?![\d.,:/-])")  # 12 to 30 digits, in groups or not


def _banked(text: str, m: re.Match[str]) -> bool:
    """Whether the line of a long number names a bank (its branch, `开户行`, `bank`): an account number."""
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    return _BANK.search(text[start : len(text) if end < 0 else end]) is not None


_PAYMENT_LINK = LazyPattern(
    r"(?i)(?:https?://)?(?:qr\.alipay\.com|(?:www\.)?paypal\.me|venmo\.com/u|cash\.app)/[\w$.-]{3,}|wxp://[\w-]{8,}"
)
# health: a diagnosis said as one (`确诊X`, `diagnosed with X`, `Name: X (diagnosed in 2024)`), a lab result with its
# value (`糖化血红蛋白 7.5%`), a medicine with its dose where it is taken (`started medication sertraline 50 mg`)
_HEALTH = Screened(  # (a medicine is screened by its dose: `吃`, `taking` alone are in most texts)
    r"(?i)确诊|確診|诊断|診斷|患有|diagnosed|\bdx\b|medication|treatment|\d\s*(?:mg|mcg|µg|ml|iu|毫克)"
    r"|糖化血红蛋白|血糖|血压|血壓|尿酸|胆固醇|甘油三酯|低密度脂蛋白|肌酐|转氨酶|hba1c|ldl|blood\s+(?:pressure|sugar|glucose)"
    r"|\bon\s+[a-z-]{4,20}\s+for\b|阳性|陽性|术后|術後|化疗|化療|放疗|放療|透析|positive\s+for|\bstage\s+(?:[0-4]|i{1,3}v?|iv)\b"
)
_DIAGNOSIS_ZH = LazyPattern(  # (not `确诊病例`: a count of cases)
    r"(?:确诊|確診|诊断(?:为|是|出了?)|診斷(?:為|是|出)|患有)(?:为|為|是|了)?\s*(?!病例|人数|人數|数|數|率)"
    r"([^，。,;；！!？?\n（(：:]{2,20})"
)
_DIAGNOSIS_EN = LazyPattern(
    r"(?i)\bdiagnosed\s+with\s+([a-z0-9][^.,;:()\n]{2,50}?)(?=\s+(?:in|on|last|this)\b|[.,;()\n]|$)"
)
_POSITIVE_EN = LazyPattern(
    r"(?i)\btested\s+positive\s+for\s+([a-z0-9][^.,;:()\n]{1,40}?)(?=\s+(?:in|on|last|this)\b|[.,;()\n]|$)"
)
_STAGED = LazyPattern(
    r"(?i)\b(stage\s+(?:[0-4]|i{1,3}v?|iv)[abc]?\s+[a-z][a-z -]{2,30}?)(?=[.,;()\n]|\s+(?:and|but)\b|$)"
)
# a condition said by its test or its treatment: `HIV 阳性`, `乳腺癌术后`, `在做第三期化疗`
_CONDITION_ZH = LazyPattern(
    r"((?:[A-Za-z0-9]{2,10}|[\u4e00-\u9fff]{2,6})\s*(?:阳性|陽性)(?![率数數])|[\u4e00-\u9fff]{2,8}(?:术后|術後)"
    r"|(?:在做|在打|在服|在吃)?[^，。,;；\n]{0,8}?(?:化疗|化療|放疗|放療|透析))"
)
_CONDITIONS_EN = (
    r"disorder|disease|syndrome|cancer|diabetes|depression|anxiety|adhd|epilepsy|asthma|hypertension|infection"
    r"|hepatitis\s*[a-e]?|hiv|aids|arthritis|migraines?|schizophrenia|dementia|leukemia|lymphoma|tumou?r"
)
_TREATED_FOR = LazyPattern(  # "is on lithium for bipolar disorder"
    rf"(?i)\b(?:is|was|been|still)\s+on\s+([a-z][a-z-]{{3,20}}\s+for\s+[a-z][a-z' -]{{0,30}}?(?:{_CONDITIONS_EN}))\b"
)
_CONDITION_NAMED = LazyPattern(  # "Grace Wu: type 2 diabetes (diagnosed in 2024)", "…: X, started medication …"
    r"(?i)(?<=:\s)([^:\n(),;]{3,60}?)"
    r"(?=\s*\((?:diagnosed|dx)\s+(?:in|on|at|\d)|,\s*(?:started|on|taking)\s+(?:medication|treatment)\b)"
)
_DOSE = LazyPattern(
    r"(?i)(?:\b(?:medication|prescribed|taking)|服用|吃)\s*([a-z\u4e00-\u9fff]{3,20}\s*\d+(?:\.\d+)?\s*(?:mg|mcg|µg|ml|iu|毫克))"
)
_LAB = LazyPattern(
    r"(?i)(?:糖化血红蛋白|空腹血糖|餐后血糖|血糖|血压|血壓|尿酸|总胆固醇|胆固醇|甘油三酯|低密度脂蛋白|肌酐|转氨酶"
    r"|(?<![a-z])(?:hba1c|ldl-?c?|blood\s+(?:pressure|sugar|glucose)))"
    r"\s*(?:是|为|[:：=])?\s*\d+(?:\.\d+)?(?:\s*/\s*\d+)?(?:\s*(?:%|mmol/l|mg/dl|mmhg))?"
)


_SUBJECT = LazyPattern(  # who it is said of, right before: "Ava Brennan was ", "Grandad has "
    r"(?<![\w'])[A-Z][a-z]+(?:[ -][A-Z][a-z]+){0,2}\s+(?:(?:was|is|has|had|got|just|recently|still|been)\s+){0,3}$"
)
_SUBJECT_LOWER = LazyPattern(_SUBJECT.pattern.replace("[A-Z][a-z]", "[a-z][a-z]"))  # (a store lower-cased the text)


def _health(text: str) -> list[Span]:
    """What a person's health is: a diagnosis, a lab result with its value, a medicine and its dose; in English,
    with the person it is said of (the name and the condition are the secret together)."""
    said = (_DIAGNOSIS_ZH, _CONDITION_NAMED, _DOSE, _CONDITION_ZH)
    spans = [Span(*m.span(1), "health data", 326) for p in said for m in p.finditer(text)]
    subject = _SUBJECT if any(c.isupper() for c in text) else _SUBJECT_LOWER
    for p in (_DIAGNOSIS_EN, _POSITIVE_EN, _STAGED, _TREATED_FOR):
        for m in p.finditer(text):
            said_of = subject.search(text, max(0, m.start() - 60), m.start())
            spans.append(Span(said_of.start() if said_of else m.start(1), m.end(1), "health data", 326))
    return spans + [
        Span(*m.span(), "health data", 326) for m in _LAB.finditer(text) if any(c.isdigit() for c in m.group())
    ]


_BIRTH_HEADER = LazyPattern(r"(?i)\|[^|\n]*(?:生日|出生|birthday|date\s+of\s+birth|\bdob\b|\bborn\b)")
_TABLE_DATE = LazyPattern(r"\d{4}[-./年]\d{1,2}[-./月]\d{1,2}日?|\d{1,2}[-./]\d{1,2}[-./]\d{4}")


_ID_HEADER = LazyPattern(
    r"(?i)\|[^|\n]*(?:学号|學號|工号|工號|身份证|身份證|证件号|證件號|护照|護照|社保|医保|student\s*(?:id|no)|employee\s*(?:id|no)"
    r"|\bssn\b|passport|\bid\s*(?:no\.?|number|#))"
)
_TABLE_ID = LazyPattern(r"(?<![\w-])(?=(?:[A-Za-z-]*\d){5})[A-Za-z0-9][A-Za-z0-9-]{4,24}(?![\w-])")


def _table_column(text: str, header: re.Pattern[str], value: re.Pattern[str], kind: str, rank: int) -> list[Span]:
    """The values in a Markdown table's column whose heading `header` finds (`| 孩子 | 生日 |`, `| 姓名 | 学号 |`):
    each row's is someone's."""
    spans, column, at = [], None, 0
    for line in text.split("\n"):
        bars = [i for i, c in enumerate(line) if c == "|"]  # (a heading row may follow words: `Noted: | 姓名 | 学号 |`)
        if len(bars) < 2:
            bars = []
        elif line.rstrip()[-1:] != "|":
            bars.append(len(line))
        cells = [(a + 1, b) for a, b in itertools.pairwise(bars)]  # (where each cell starts and ends in the line)
        if not cells:
            column = None
        elif column is None:
            heads = [n for n, (a, b) in enumerate(cells) if header.search(f"|{line[a:b]}")]
            column = heads[0] if heads else None
        elif column < len(cells) and (m := value.search(line, *cells[column])):
            spans.append(Span(at + m.start(), at + m.end(), kind, rank))
        at += len(line) + 1
    return spans


class PersonalDetector:
    """Finds phone numbers, checked numbers, e-mail addresses, ids by context and seed phrases."""

    kinds = (
        "phone",
        "email",
        "card number",
        "iban",
        "id number",
        "passport",
        "wechat",
        "qq",
        "messenger",
        "address",
        "seed phrase",
        "account number",
        "licence plate",
        "birth date",
        "mac address",
        "health data",
        "payment link",
        "booking reference",
        "account name",
    )

    def find(self, text: str) -> list[Span]:
        spans: list[Span] = []
        if "@" in text or "＠" in text:
            found = (m for m in _EMAIL.finditer(text) if not _scm_remote(text, m) and not public_address(m.group()))
            spans += [Span(*m.span(), "email", 300) for m in found]
        low = text.lower()
        if "#" in text:
            spans += [Span(*m.span(), "email", 300) for m in _HASH_EMAIL.finditer(text)]
        if _AT_WORD.search(low) or (("@" in text or "＠" in text) and _ODD_DOT.search(text)):
            spans += [Span(*m.span(), "email", 300) for m in _EMAIL_OBFUSCATED.finditer(text)]
        if digit_count(text) >= 6:  # (a UK NI number holds six)
            spans += self._numbers(text)
        spans += self._ids(text, low)
        if has_cjk(text):
            spans += [Span(*m.span(), "licence plate", 323) for m in _PLATE.finditer(text)]
        if "-" in text and _CAR.search(text):
            spans += [Span(*m.span(), "licence plate", 323) for m in _PLATE_DE.finditer(text)]
        if _PLATE_UK.search(text) and _VEHICLE.search(text):  # "Parking permit registered for AL46 HTE"
            spans += [Span(*m.span(), "licence plate", 323) for m in _PLATE_UK.finditer(text)]
        if has_digit(text):
            spans += [_whole_address(text, *m.span()) for m in _ADDRESS_EN.finditer(text)]
            spans += [Span(*m.span(), "address", 321) for m in _ADDRESS_DE.finditer(text)]
            spans += [Span(*m.span(), "address", 321) for m in _ADDRESS_POSTCODE.finditer(text)]
            spans += [Span(*m.span(), "address", 321) for m in _ADDRESS_LOWER.finditer(text)]
            if "号" in text:
                spans += [Span(*m.span(), "address", 321) for m in _ADDRESS_ZH.finditer(text)]
                spans += [Span(*m.span(), "address", 321) for m in _ADDRESS_ZH_STREET.finditer(text)]
        spans += seed_phrases(text)
        spans += _places_and_papers(text)
        if text.count(":") >= 5 or text.count("-") >= 5:  # a device's hardware address names the device's owner
            spans += [Span(*m.span(), "mac address", 325) for m in _MAC.finditer(text) if _some_mac(m.group())]
        if has_digit(text):
            spans += [Span(*m.span(m.lastindex or 0), "birth date", 324) for m in _BIRTH.finditer(text)]
        if "://" in text or "paypal.me" in text.lower():  # a code to pay someone: it names their account
            spans += [Span(*m.span(), "payment link", 327) for m in _PAYMENT_LINK.finditer(text)]
        if _HEALTH.occurs(text):
            spans += _health(text)
        if "|" in text and _BIRTH_HEADER.search(text):
            spans += _table_column(text, _BIRTH_HEADER, _TABLE_DATE, "birth date", 324)
        if "|" in text and _ID_HEADER.search(text):
            spans += _table_column(text, _ID_HEADER, _TABLE_ID, "id number", 322)
        return spans

    def _numbers(self, text: str) -> list[Span]:
        spans = []
        for m in _IBAN.finditer(text):
            if documented_example(m.group()):
                continue
            if (iban := _iban_prefix(m.group())) is not None:
                spans.append(Span(m.start(), m.start() + len(iban), "iban", 310))
            elif _IBAN_WORD.search(text, max(0, m.start() - 12), m.start()):  # named, whatever its check digits
                spans.append(Span(m.start(), m.start() + len(_named_iban(m.group())), "iban", 310))
        for m in _CARD.finditer(text):
            digits = re.sub(r"\D", "", m.group())
            if documented_example(digits):
                continue
            if 13 <= len(digits) <= 19 and len(set(digits)) > 2 and luhn.is_valid(digits):
                spans.append(Span(*m.span(), "card number", 311))
        for m in _RIC.finditer(text):
            if _resident_id(re.sub(r"[ -]", "", m.group())):
                spans.append(Span(*m.span(), "id number", 312))
        for m in _NINO.finditer(text):
            if re.search(r"\d", m.group()) and m.group()[:2] not in ("BG", "GB", "NK", "KN", "TN", "NT", "ZZ"):
                spans.append(Span(*m.span(), "id number", 313))
        for m in _USCC.finditer(text):  # a company's unified social credit code, by its check character
            if uscc.is_valid(m.group()):
                spans.append(Span(*m.span(), "id number", 313))
        for m in _ORCID.finditer(text):  # a researcher's id: by its check digit (ISO 7064 11-2), as an e-mail is
            if mod_11_2.is_valid(m.group().replace("-", "")) and not documented_example(m.group()):
                spans.append(Span(*m.span(), "id number", 313))
        for m in _SSN.finditer(text):
            if ssn.is_valid(m.group()):
                spans.append(Span(*m.span(), "id number", 313))
        if _BANK.search(text):  # an account number beside its bank: `开户行及账号：招商银行…支行 6214…`, a table's row
            spans += [
                Span(*m.span(), "account number", 315) for m in _ACCOUNT_DIGITS.finditer(text) if _banked(text, m)
            ]
        for m in _PHONE_CANDIDATE.finditer(text):
            candidate = m.group().strip()
            if _NUMBERED_THING.search(text, max(0, m.start() - 10), m.start()):
                continue  # `GB 11643-1999`, `ERROR 1045 (28000)`: a standard's or an error's number
            if _is_phone(candidate) or (_BARE_CN_MOBILE.match(candidate) and _said_phone(text, m.start())):
                spans.append(Span(*m.span(), "phone", 314))
        return spans

    def _ids(self, text: str, low: str) -> list[Span]:
        spans = [Span(*m.span(), "wechat", 320) for m in _WXID.finditer(text)] if "wxid_" in low else []
        present = _ID_PRESENT(text)
        for i, (kind, lead) in enumerate(_ID_LEAD.items()):
            for m in lead.finditer(text) if i in present else ():
                start = m.end()
                if kind == "address":
                    a, b = value_span(text, start, phrase=True)
                    while a < b and text[a] in " \t:：,，":
                        a += 1
                    if b - a >= 6 and text[a] != "[" and _PLACE.search(text[a:b]) and "://" not in text[a:b]:
                        spans.append(Span(a, b, kind, 321))
                    continue
                value = _ID_VALUE[kind].match(text, start)
                handle = kind in ("wechat", "messenger")
                named = kind == "booking reference"  # (six letters after `PNR`: no digit needed, no separator)
                # (a number of letters only, said to be one: `港澳通行证：CFOGWJSWC`)
                lettered = kind == "id number" and value is not None and _said_in_capitals(m.group(), value.group())
                if value is None or not (handle or named or lettered or any(c.isdigit() for c in value.group())):
                    continue
                if documented_example(value.group()):
                    continue
                if kind == "account number" and sum(c.isdigit() for c in value.group()) < 6:
                    continue
                said = re.search(r"[:：=是]|\bis\b|\s@|id|user|handle|号", m.group(), re.I)
                said = said or value.group().startswith(("@", "t.me/"))  # "add me on telegram @liam_q": a handle
                if handle and not said and not _made_handle(value.group()):
                    continue  # "WeChat group" is not an id: an id needs a separator, a word that says so, or digits
                spans.append(Span(*value.span(), kind, 322))
        if _PASSPORT in present:
            spans += _passports_nearby(text)
        return spans


_PASSPORT = list(_ID_LEAD).index("passport")  # (its place among the kinds `_ID_PRESENT` tells)
_PASSPORT_SHAPE = LazyPattern(r"(?<![A-Za-z0-9])[A-Z]{1,2}\d{7,8}(?![A-Za-z0-9])")  # `E29141777`, `EA1234567`
PASSPORT_NEAR = 200  # a passport's number in the lines after the word (a list: "Name: E29141777")


def _passports_nearby(text: str) -> list[Span]:
    """Numbers of a passport's shape in the same paragraph after a passport word, beside names or on a list."""
    spans = []
    for word in _ID_LEAD["passport"].finditer(text):
        end = text.find("\n\n", word.start(), word.start() + PASSPORT_NEAR)
        window = end if end >= 0 else word.start() + PASSPORT_NEAR
        spans += [Span(*m.span(), "passport", 322) for m in _PASSPORT_SHAPE.finditer(text, word.end(), window)]
    return spans


def _said_in_capitals(lead: str, value: str) -> bool:
    """An id of capitals only after a word and its separator (`：`, `是`): no word of a sentence is written so."""
    said = re.search(r"[:：=是]", lead) is not None or (8 <= len(value) <= 9 and not lead.strip().isascii())
    return len(value) >= 6 and value.isalpha() and value.isupper() and said


def _places_and_papers(text: str) -> list[Span]:
    """Where someone lives and the papers that say who they are, by their shape: a passport's machine-readable
    lines (`<<` fillers and digits), coordinates precise to a house, a Japanese address after its 〒 postcode, a
    Chinese property deed's number."""
    spans = []
    if "<<" in text:
        spans += [Span(*m.span(), "passport", 318) for m in _MRZ.finditer(text) if "<<" in m.group()]
    if "." in text and "," in text:
        spans += [Span(*m.span(), "address", 321) for m in _COORDINATES.finditer(text)]
    if "〒" in text:
        spans += [Span(*m.span(), "address", 321) for m in _JP_ADDRESS.finditer(text)]
    if "第" in text:
        spans += [Span(*m.span(), "id number", 322) for m in _PROPERTY_CERT.finditer(text)]
    return spans


_BARE_CN_MOBILE = LazyPattern(r"^1[3-9]\d{9}$")


def _said_phone(text: str, at: int) -> bool:
    """A bare Chinese mobile in a range the library does not know yet counts when a phone word is just before it."""
    return bool(_PHONE_WORDS.search(text, max(0, at - 16), at))


def _resident_id(number: str) -> bool:
    """A Chinese resident id by its check digit and birth date (ISO 7064 mod 11-2). `stdnum`'s own check also asks
    for a birth place it knows, and a person's id is private whether or not its county code is in that list."""
    try:
        ric.get_birth_date(number)
    except ValueError:
        return False
    return len(number) == 18 and ric.calc_check_digit(number) == number[17].upper()  # (it reads the first 17)


def _named_iban(candidate: str) -> str:
    """The IBAN at the start of a run the IBAN pattern took (it may take the words after it: "… BIC", "… for"):
    its longest grouped prefix with good check digits, else its groups that hold a digit or a bank code."""
    groups = candidate.split(" ")
    for n in range(len(groups), 0, -1):
        if _iban(" ".join(groups[:n])):
            return " ".join(groups[:n])
    kept = [groups[0]]
    for group in groups[1:]:
        if not (any(c.isdigit() for c in group) or re.fullmatch("[A-Z]{4}", group)):
            break
        kept.append(group)
    return " ".join(kept)


def _some_mac(value: str) -> bool:
    """Not a placeholder address (`00:00:…`, `aa:bb:cc:dd:ee:ff`, `01:23:45:67:89:ab`, a run like
    `00:1A:2B:3C:4D:5E`) nor one of the range RFC 7042 keeps for documentation (`00:00:5E:00:53:xx`)."""
    digits = value.lower().replace(":", "").replace("-", "")
    pairs = [digits[i : i + 2] for i in range(0, 12, 2)]
    steps = {int(b, 16) - int(a, 16) for a, b in zip(pairs[1:], pairs[2:], strict=False)}
    placeholder = len(set(digits)) <= 2 or all(p[0] == p[1] for p in pairs) or digits in "0123456789abcdef"
    return not (placeholder or len(steps) == 1 or digits.startswith("00005e0053"))


def _made_handle(value: str) -> bool:
    """`livry9951`, `11SXIXOW`: letters and digits together, as a chosen handle is written."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and len(value) >= 6


def _iban_prefix(candidate: str) -> str | None:
    """The IBAN `candidate` starts with: itself, or itself without the words a lower-cased match read on into
    (`CH84 0011 7033 0766 6193 4 since` in any case)."""
    while True:
        if _iban(candidate):
            return candidate
        if " " not in candidate:
            return None
        candidate = candidate.rsplit(" ", 1)[0]


def _iban(candidate: str) -> bool:
    """An IBAN's own check (ISO 7064 mod 97-10); a bank's national check digits are not asked for."""
    compact = candidate.replace(" ", "").upper()
    return 15 <= len(compact) <= 34 and mod_97_10.is_valid(compact[4:] + compact[:4])


_RESERVED_DOMAINS = ("example.com", "example.org", "example.net", "example", "test", "invalid", "localhost")
_ROLE_ACCOUNTS = frozenset(
    """support security info help contact hello sales press media abuse postmaster webmaster hostmaster noreply
    no-reply donotreply do-not-reply privacy legal billing jobs careers feedback team office""".split()
)


def public_address(address: str) -> bool:
    """An address that names nobody: a documentation domain (RFC 2606: `user@example.com`) or an organisation's
    role account (`support@python.org`, `security@github.com`)."""
    local, _, domain = address.lower().rpartition("@")
    domain = domain.rstrip(".")
    if any(domain == d or domain.endswith("." + d) for d in _RESERVED_DOMAINS):
        return True
    return local in _ROLE_ACCOUNTS


def _scm_remote(text: str, m: re.Match[str]) -> bool:
    """`git@github.com:owner/repo`: a version-control service's account, not a person's address."""
    return m.group().split("@")[0].lower() in ("git", "hg", "svn") and text[m.end() : m.end() + 1] == ":"


# NANP reserves 555-0100 to 555-0199 for films and documentation
_FICTIONAL_PHONE = LazyPattern(r"^(?:\+?1)?(?:\(?\d{3}\)?)?555(01\d\d)$")


def _is_phone(candidate: str) -> bool:
    if _FICTIONAL_PHONE.match(re.sub(r"[\s.-]", "", candidate)):
        return False
    digits = sum(c.isdigit() for c in candidate)
    if not 7 <= digits <= 15 or (_DATE_OR_VERSION.search(candidate) and not _DOTTED_PHONE.match(candidate)):
        return False
    if _CN_MOBILE.match(candidate):
        return True  # written 3-4-4, as a Chinese mobile is: newer ranges (14x, 19x) before the library knows them
    if candidate.isdigit() and not _BARE_PHONE.match(candidate):
        return False  # an unbroken number is a count, an id, a port...: only the shapes phones are written in
    candidate = candidate.replace("(0)", " ")  # a trunk prefix written beside a country code
    groups = [g for g in re.split(r"[\s().+-]+", candidate) if g]
    if any(len(g) == 1 for g in groups[2 if candidate.startswith("+") else 1 :]) or any(
        len(g) < 3 for g in candidate.split(".")[1:]
    ):
        return False  # decimals and coordinates (`6.5 6.5 0 0 1`, `1.61-.59`), not a number written in groups
    regions: tuple[str | None, ...] = (None,) if candidate.startswith("+") else REGIONS
    if not candidate.startswith("+") and candidate[0] not in "0(" and not candidate.isdigit():
        candidate_plus = "+" + candidate  # "852-5674 7258": a country code without its plus
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(candidate_plus, None)):
                return True
        except phonenumbers.NumberParseException:
            pass
    for region in regions:
        try:
            number = phonenumbers.parse(candidate, region)
        except phonenumbers.NumberParseException:
            continue
        # written with its country code, a number need only be possible there; written locally, valid
        if phonenumbers.is_valid_number(number) or (region is None and phonenumbers.is_possible_number(number)):
            return True
    return False


_SEED_WORDS = Screened(r"(?i)助记词|助記詞|种子|種子|seed|mnemonic|钱包|錢包|wallet|私钥|恢复短语")
_ZH_RUN = LazyPattern(r"(?<![\u4e00-\u9fff])[\u4e00-\u9fff]{12,24}(?![\u4e00-\u9fff])")


def _joined_zh_seeds(text: str) -> list[Span]:
    """Twelve to twenty-four list characters written together, said to be a seed and passing BIP-39's checksum."""
    spans = []
    for m in _ZH_RUN.finditer(text):
        run = m.group()
        if len(run) % 3 == 0:
            for language in ("chinese_simplified", "chinese_traditional"):
                if set(run) <= _wordlist(language) and _mnemonic(language).check(" ".join(run)):
                    spans.append(Span(*m.span(), "seed phrase", 330))
                    break
    return spans


_LETTERS = LazyPattern(r"[A-Za-z]+")


@functools.cache
def _english_screen() -> re2._Regexp:
    """Twelve list words in a row with anything but letters between them: RE2 reads most texts only once."""
    words = "(?:" + "|".join(_mnemonic("english").wordlist) + ")"
    options = re2.Options()
    options.case_sensitive = False
    options.max_mem = 64 << 20
    return re2.compile(rf"(?:^|[^A-Za-z]){words}(?:[^A-Za-z]+{words}){{11}}(?:[^A-Za-z]|$)", options)


@functools.cache
def _zh_words() -> frozenset[str]:
    return _wordlist("chinese_simplified") | _wordlist("chinese_traditional")


def _english_runs(text: str, seedy: bool) -> list[Span]:
    words = _wordlist("english")
    tokens = list(_LETTERS.finditer(text))
    listed = "".join("1" if m.group().lower() in words else "0" for m in tokens)
    spans = []
    # twelve list words in a row (their separators are read below); said to be a seed, one word miscopied in them
    run = "1+0?1*" if seedy else "1{12,}"
    for block in re.finditer(run, listed):
        if block.end() - block.start() >= 12:
            spans += _english_seeds(text, tokens[block.start() : block.end()])
    return spans


def _english_seeds(text: str, tokens: list[re.Match[str]]) -> list[Span]:
    """The runs of twelve or more among `tokens` (list words in a row) whose separators are a seed's."""
    spans = []
    first = last = tokens[0]
    count = 1
    for m in tokens[1:]:
        if _SEED_SEP.fullmatch(text[last.end() : m.start()]):
            count += 1
        else:
            if count >= 12:
                spans.append(Span(first.start(), last.end(), "seed phrase", 330))
            first, count = m, 1
        last = m
    if count >= 12:
        spans.append(Span(first.start(), last.end(), "seed phrase", 330))
    return spans


def seed_phrases(text: str) -> list[Span]:
    """Twelve or more BIP-39 words in a row (English), or twelve or more list characters written apart (Chinese)."""
    spans = []
    seedy = _SEED_WORDS.search(text) is not None or "recovery" in text.lower()  # (said to be one: one word miscopied)
    if seedy or _english_screen().search(re2_safe(text)):
        spans += _english_runs(text, seedy)
    if has_cjk(text):
        zh = _zh_words()
        if _SEED_WORDS.search(text):
            spans += _joined_zh_seeds(text)
        for m in re.finditer(r"(?:[\u4e00-\u9fff](?:[\s,，、]|\d{1,2}[.)、])+){11,}[\u4e00-\u9fff]", text):
            run: list[int] = []  # positions of consecutive list characters written apart
            for i in range(m.start(), m.end()):
                c = text[i]
                if c.isspace() or c in ",，、.)" or c.isdigit():  # (numbered: "1.呆 2.偏 …")
                    continue
                if c in zh and (not run or re.fullmatch(r"(?:[\s,，、]|\d{1,2}[.)、])*", text[run[-1] + 1 : i])):
                    run.append(i)
                else:
                    if len(run) >= 12:
                        spans.append(Span(run[0], run[-1] + 1, "seed phrase", 330))
                    run = [i] if c in zh else []
            if len(run) >= 12:
                spans.append(Span(run[0], run[-1] + 1, "seed phrase", 330))
    return spans
