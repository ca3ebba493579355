"""Class 1, credentials by context: a value after a word or flag that says it is a credential.

English and Chinese, in every common shape: prose ("my password is X", "set the password to X", "the password
got reset, it's now X", 密码换成 X), `key=value`, `key: value`, env exports, JSON (escaped quotes included),
XML, CLI flags (`mysql -pX`, `sshpass -p X`, `docker login -p X`, `curl -u user:X`, `redis-cli -a X`,
`--password=X`, `pass:X`), netrc and pgpass lines, `root / X` after a host, URLs' user-info and query
parameters (URL-encoded ones too), Wi-Fi QR strings, grouped TOTP keys, lists of recovery codes, and Markdown
tables whose column says password. The value is read to its natural end (`memwiki.site.gate.detect.values`).
Words match whatever their case, and the detectors also read an identifier's `_` and a slug's `-` as spaces,
so `MYSQL_ROOT_PASSWORD` and a graph predicate `wifi_password_is` are read as the words they join.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from memwiki.site.gate.detect.shapes import GOOGLE_APP_PASSWORD, made, typed
from memwiki.site.gate.detect.spans import NOT_A_LABEL, Rule, RuleSet, Span, has_digit
from memwiki.site.gate.detect.values import is_token, is_value, made_code, value_span
from memwiki.text.screen import LazyPattern, Screened

_A = r"(?<![A-Za-z])"  # a word starts here
_Z = r"(?![A-Za-z])"
# strong words: whatever follows the separator is the credential
STRONG_EN = (
    r"pass(?:word|wd|phrase|code)s?|pass[ -]phrase|pwd|pswd|pw|credentials?|creds|client[ -]?secret|secret[ -]?key"
    r"|secret[ -]?access[ -]?key|api[ -]?keys?|apikey|access[ -]?token|refresh[ -]?token|auth[ -]?token"
    r"|id[ -]?token|session[ -]?token|bearer[ -]?token|private[ -]?key|master[ -]?key|encryption[ -]?key"
    r"|signing[ -]?key|secret|otp[ -]?secret|totp(?:[ -]?(?:seed|secret|key))?|2fa[ -]?(?:seed|secret|key)"
    r"|webhook[ -]?secret|license[ -]?key|product[ -]?key|requirepass|masterauth|auth"
    r"|app[ -]?(?:key|secret)|appkey|appsecret|sdk[ -]?(?:key|secret)|access[ -]?key[ -]?(?:id|secret)"
    r"|(?:admin|root|wi-?fi|login|nas|router|account|vpn)[ -]pass"  # (a pass said after what it opens)
)
# weak words: what follows must look made (digits and letters, or mixed case), not a word
WEAK_EN = r"token|key|code|cookie|session[ -]?id|sid|salt|nonce|license|serial|web[ -]?hook(?:[ -]?id)?|hook[ -]?id"
# codes: digits, maybe with # or *
CODE_EN = (
    r"pin(?:[ -]?code)?|door[ -]?code|gate[ -]?code|alarm[ -]?code|safe[ -]?code|locker[ -]?code|lock[ -]?code"
    r"|access[ -]?code|entry[ -]?code|keypad[ -]?code|sms[ -]?code|verification[ -]?code|one[ -]?time[ -]?code"
    r"|2fa[ -]?code|mfa[ -]?code|otp|combination|combo|lockbox|key[ -]?safe|key[ -]?box|padlock|keypad"
    r"|puk[ -]?(?:code)?|(?:u-?|bike[ -]?|cable[ -]?|gun[ -]?)?lock"
    r"|(?:hotel[ -]?(?:room[ -]?)?|room[ -]?|gun[ -]?|wall[ -]?|home[ -]?)safe"
)
# short codes, three digits or more: said right after their name ("CVV 538", "安全码 033")
SHORT_CODE_EN = (
    r"cvv2?|cvc2?|cvn2?|csc|(?:card[ -]?)?security[ -]?code"
    r"|(?:parental[ -]?controls?|screen[ -]?time|restrictions?)[ -]?(?:pass)?(?:code|pin)"
)
SHORT_CODE_ZH = r"安全码|安全碼|(?:卡背面?|背面)的?(?:后)?三位(?:数字?|码)?|(?i:cvv)码?"
# or with a separator ("the luggage lock is 792", "combination: 0451")
LOCK_EN = r"(?:luggage|suitcase|bike|cable|u-?|pad|combination)[ -]?lock|lock|combination|combo|lockbox|key[ -]?safe"
LOCK_ZH = r"密码锁|行李箱密码|箱子密码|挂锁密码|锁的密码"
_SHORT = r"(?=\d{3,8}(?![\d/.%:-]|,\d|\s*(?:位|digits?|characters?|chars?)))"
PHRASE_EN = (
    r"seed[ -]?phrase|recovery[ -]?phrase|mnemonic(?:[ -]?phrase)?|wallet[ -]?seed|pass[ -]?phrase"
    r"|(?:seed|recovery|backup|mnemonic|wallet)[ -]?words"
)
LIST_EN = r"recovery[ -]?codes?|backup[ -]?codes?|scratch[ -]?codes?|one[ -]?time[ -]?codes|2fa[ -]?codes"
TOTP_EN = r"totp|2fa|mfa|otp|authenticator|manual[ -]?(?:entry[ -]?)?key|setup[ -]?key|secret[ -]?key|seed"
ZH = (
    r"密码|密碼|口令|密钥|密鑰|秘钥|秘鑰|私钥|私鑰|令牌|凭证|凭据|憑證|授权码|授權碼|验证码|驗證碼|校验码|动态码"
    r"|安全码|门禁码|门禁密码|门锁密码|开门密码|保险柜密码|恢复码|备用码|备份码|访问码|取件码|提取码|激活码|序列号"
    r"|识别码|(?i:pin)码|口令码|门禁|密码锁|开锁码|入户码|暗号|暗語|接头暗号|密语|通关密语|卡密|明文|密匙|秘匙|账密|帐密"
    r"|(?<![A-Za-z0-9])(?i:mm)(?=\s*[:：])"  # (`mm` for 密码, said with a colon: not a length)
)
ZH_LIST = r"恢复码|恢復碼|备用码|備用碼|备份码|救援码|紧急恢复码|备用验证码|備用驗證碼|恢复代码|备用代码"
ZH_PHRASE = r"助记词|助記詞|种子短语|种子词|恢复短语|密码短语"
# English credential words inside a Chinese sentence: "AWS 的 secret 是 X", "wifi password 改成 X"
ZH_EN = r"(?i:password|passwd|pwd|pw|pin|key|secret|token|api[ _-]?key|passphrase)"
_ZH_VERB = (
    r"我设的是|设的是|我用的是|我改成了?|我设成了?|是|为|為|都是|就是|改成了?|改为|改為|换成了?|換成|设为|設為"
    r"|设置为|设置成|设成了?|都用|设为了?|变成了?|变更为|更新为|用的是|新值|值"
    r"|统一为|统一是|一律为|一律是|默认为|默认是|目前是|现在是|暂时是|重置成了?|重置为|重设为|重设成了?|改回了?|设置了"
    r"|写的是|写着|填的是|填了"  # what a config file says: "db-password 写的是 X"
)
_LIKE = r"(?:数字|位|字母|字符|符号|大小写|汉字|中文|英文)"  # what a value is like: "八位数字", "全是字母"
_ZH_SEP = rf"\s*(?:的)?\s*(?:{_ZH_VERB}|:|：|=|＝|填)\s*[:：]?\s*"
_ZH_ONLY_SEP = rf"\s*(?:的)?\s*(?:{_ZH_VERB})\s*[:：]?\s*"
_ZH_GAP = r"(?:[，,]?\s*(?:新的?|新值|值)|\s*[（(][^）)\n]{0,40}[）)])?"  # "密钥，新值：X", "密码短语（带空格）：X"
_ZH_ANY = r"(?:我把|把|将|新的?|默认|默認)?"
_FOR = (  # "password for the NAS", "secret (in case I lose my phone)"
    r"(?:\s+(?:for|of|on|to|at)\s+(?:the\s+|my\s+|our\s+|your\s+)?[^\s:：=]{1,40}?(?:\s+[^\s:：=]{1,20}?){0,2}?)?"
    r"(?:\s*[(（][^()（）\n]{0,40}[)）])?"
)
_KEY_END = r"(?:\\?[\"'])?\]?"  # a quoted key's closing quote (maybe escaped), a subscript's bracket
_ASIDE = r"(?:\s*[(（][^()（）\n]{0,40}[)）])?"  # a word in brackets before the value: `TOKEN（给 nomad 用的）：X`
_SEP = r"\s*(?::=|=>|->|[:=：])\s*"
_IS = (  # ("are" before a value with a digit or a sign only: "the key and secret are sent as …" says how)
    r"\s*(?:\bis\s+now\b|\bis\b\s*:?|\bwas\b|\bare\b(?=\s*\S*[\d!@#$%^&*])|\bbecame\b|\bset\s+(?:it\s+)?to\b"
    r"|\bchanged\s+to\b|\bnow\b)\s*"
)
_TO = r"(?:set|change|changed|reset|update|updated|rotate|rotated)\s+(?:the\s+|my\s+|our\s+)?(?:\w+\s+){0,3}?"
_LATER = r"\b[^.\n。;]{0,40}?\b(?:is\s+now|it'?s\s+now|now\s+is|now|became|changed\s+to|set\s+to|to)\b\s*:?\s*"
_SENSITIVE_XML = r"password|passwd|secret|token|api[_-]?key|apikey|private[_-]?key|credentials?"
_SPEAKER = r"\n[ \t]*[^\s:：]{1,12}[:：]"  # the next line is someone's turn: "Assistant: …", "我：…"
_ACCOUNTS = r"root|admin|administrator|ubuntu|pi|sa|postgres|user|用户名?|账号|帐号"

_STRONG_SPACE = (  # where a strong word is followed by a space: what `spaced` reads (RE2 finds it in one pass)
    r"(?i)(?:pass(?:word|wd|phrase|code)s?|pwd|pw|credentials?|creds|secret|passphrase|api[ -]?keys?|apikey|token"
    r"|key)[ \t]+[^\s\[]"
)
_STRONG = rf"(?i){STRONG_EN}"  # triggers: a rule looks only where its own words are
_WEAK = rf"(?i){WEAK_EN}"
_PHRASE = rf"(?i){PHRASE_EN}"
_LIST_TRIGGER = rf"(?i){LIST_EN}"
_ZH_TRIGGER = (
    r"密|秘|口令|私|令牌|凭|憑|码|碼|序列号|助记|助記|种子|恢复短语|门禁|锁|暗号|暗語|密语|明文|(?i:mm)\s*[:：]"
)


def _rule(kind: str, lead: str, trigger: str) -> Rule:
    """A rule that finds where a value starts (its match is the lead-in; the value is read by `_values`)."""
    return Rule(kind, lead, trigger)


# (rule, how its value is judged: "strong" any value, "weak" a made value, "code" digits, "phrase" a clause,
#  "prose" a value that looks typed (a digit or a symbol in it), "zh" ASCII up to Chinese, "list" codes below,
#  "groups" a grouped key like `abcd efgh ijkl mnop`, "wifi" to the next unescaped `;`, "clause" a prose value
#  that is no link or path, "seedwords" six words or more and no sentence, "answer" a typed value in an answer)
LEADS: tuple[tuple[Rule, str], ...] = (
    (
        _rule(
            "password",
            rf"(?i){_A}(?:{LIST_EN}){_Z}[^\n:：]{{0,80}}?[:：]?\s*(?=\n)",
            _LIST_TRIGGER,
        ),
        "list",
    ),
    (_rule("password", rf"(?:{ZH_LIST}){_ZH_GAP}[:：]?\s*(?=\n)", ZH_LIST), "list"),
    (_rule("password", rf"(?i){_A}(?:{LIST_EN}){_Z}[^:\n]{{0,40}}?[:：][ \t]*(?=\S)", _LIST_TRIGGER), "codes"),
    (
        _rule(
            "password",
            rf"(?i){_A}(?:{TOTP_EN}){_Z}[^\n.]{{0,30}}?(?:{_SEP}|{_IS}|\s)(?=(?:[A-Za-z2-7]{{4}} ){{3}})",
            rf"(?i)(?:{TOTP_EN})[^.]{{0,80}}(?:[A-Za-z2-7]{{4}} ){{3}}",
        ),
        "groups",
    ),
    (
        _rule("password", rf"(?i){_A}(?:{PHRASE_EN}){_Z}{_FOR}(?:{_KEY_END}{_SEP}|{_IS})" + NOT_A_LABEL, _PHRASE),
        "phrase",
    ),
    (
        _rule("password", rf"(?i){_A}(?:{STRONG_EN}){_Z}{_FOR}(?:{_KEY_END}{_SEP}|{_IS})" + NOT_A_LABEL, _STRONG),
        "strong",
    ),
    (
        _rule(
            "password",
            rf"(?i){_A}{_TO}(?:{STRONG_EN}|{CODE_EN}){_Z}\s+(?:to|as|=)\s+" + NOT_A_LABEL,
            rf"(?i)(?:{STRONG_EN}|{CODE_EN})\s+(?:to|as|=)\s",
        ),
        "strong",
    ),
    (_rule("password", rf"(?i){_A}(?:{STRONG_EN}){_Z}{_LATER}" + NOT_A_LABEL, _STRONG), "prose"),
    (  # a network device's config: `password 7 <hex>`, `secret 5 <hash>`, `snmp-server community <string> RO`
        _rule(
            "password",
            r"(?i)(?<![\w-])(?:password|secret|key-string|key)\s+\d\s+(?=\S{6})|(?<![\w-])community\s+(?=\S{6})",
            r"(?i)(?:password|secret|key-string|key)\s+\d\s|community\s",
        ),
        "strong",
    ),
    (  # a proxy's config: the user's UUID is its password (`"clients":[{"id":"…"}]` of vmess, vless, trojan)
        _rule(
            "password",
            r"(?i)(?:vmess|vless|trojan|v2ray|xray|hysteria|tuic)[\s\S]{0,300}?[\"']?(?:id|uuid|password)[\"']?\s*[:=]\s*",
            r"(?i)vmess|vless|trojan|v2ray|xray|hysteria|tuic",
        ),
        "strong",
    ),
    (  # the answer to a security question: words to the end of the clause
        _rule(
            "password",
            r"(?i)(?:security|secret)\s+question\b[^\n]{0,80}?\banswer\b[^\n:：]{0,40}[:：]\s*",
            r"(?i)question",
        ),
        "phrase",
    ),
    (_rule("secret", rf"(?i){_A}(?:{WEAK_EN}){_Z}{_KEY_END}{_ASIDE}(?:{_SEP}|{_IS})" + NOT_A_LABEL, _WEAK), "weak"),
    (_rule("secret", rf"(?i){_A}(?:{WEAK_EN}){_Z}\s+" + NOT_A_LABEL, _WEAK), "made"),
    (
        _rule(
            "secret",
            rf"(?i){_A}[a-z]{{2,16}}(?:key|secret|token){_Z}{_KEY_END}(?:{_SEP}|{_IS}|[ \t]*\|[ \t]*)" + NOT_A_LABEL,
            r"(?i)[a-z](?:key|secret|token)",
        ),
        "made",
    ),
    (
        _rule(
            "code",
            rf"(?i){_A}(?:{CODE_EN}){_Z}(?:\s*[(（][^()（）\n]{{0,60}}[)）])?[^.\n]{{0,30}}?"
            rf"(?:{_SEP}|{_IS}|\bwith\b|\bsays\b|\s+#?(?=[\d*#]))\s*",
            rf"(?i){CODE_EN}",
        ),
        "code",
    ),
    (
        _rule(  # ("the setup code was X" says as much as "is")
            "code",
            r"(?i)(?<![A-Za-z<>/])code(?![A-Za-z>])\s*(?:[:=：]|\bis\b|\bwas\b)\s*",
            r"(?i)code\s*(?:[:=：]|is|was)",
        ),
        "code",
    ),
    (
        _rule(
            "code",
            rf"(?i){_A}(?:{SHORT_CODE_EN}){_Z}(?:[^.\n:：]{{0,20}}?(?:{_SEP}|{_IS})|\s*){_SHORT}",
            rf"(?i){SHORT_CODE_EN}",
        ),
        "short",
    ),
    (_rule("code", rf"(?:{SHORT_CODE_ZH})\s*(?:是|为|[:：])?\s*{_SHORT}", SHORT_CODE_ZH), "short"),
    (
        _rule("code", rf"(?i){_A}(?:{LOCK_EN}){_Z}[^.\n]{{0,20}}?(?:{_SEP}|{_IS}){_SHORT}", rf"(?i)(?:{LOCK_EN})"),
        "short",
    ),
    (_rule("code", rf"(?:{LOCK_ZH})\s*(?:是|为|[:：])\s*{_SHORT}", LOCK_ZH), "short"),
    (
        _rule(
            "code",
            r"(?i)(?<![A-Za-z])(?:sms|text(?:ed)?|短信)\b[^.\n]{0,20}?(?:says|code|is|:|：)\s*",
            r"(?i)sms|text|短信",
        ),
        "code",
    ),
    (_rule("password", rf"(?:{ZH_PHRASE}){_ZH_GAP}(?:{_ZH_SEP})", r"助记|助記|种子|短语"), "zhphrase"),
    (_rule("password", rf"(?i)pass\s*phrase{_ZH_ONLY_SEP}", r"(?i)phrase"), "zhphrase"),  # "passphrase 是 处处闻啼鸟 …"
    (
        _rule(
            "password",
            rf"{_ZH_ANY}(?:{ZH}){_ZH_GAP}(?:{_ZH_SEP}|\s*(?=[\"'`“「『])|\s+(?=[A-Za-z0-9#*@%!$^&])"
            r"|(?<=[）)])\s*(?=[A-Za-z0-9#*@%!$^&]))" + NOT_A_LABEL,  # (or right after a bracketed aside)
            _ZH_TRIGGER,
        ),
        "zh",
    ),
    (_rule("password", rf"{_ZH_ANY}(?:{ZH})(?=[A-Za-z0-9#*])", _ZH_TRIGGER), "zh"),
    (  # what the value is like, then the value: "密码就是八位数字 41605574", "资金密码（6 位数字）000319"
        _rule(
            "password",
            rf"(?:{ZH})(?:{_ZH_VERB})?(?:[\u4e00-\u9fff]{{0,6}}{_LIKE}[\u4e00-\u9fff]{{0,4}}\s+|\s*[（(][^）)\n]{{1,16}}[）)]\s*)"
            r"(?=[A-Za-z0-9#*@%!$^&])" + NOT_A_LABEL,
            _ZH_TRIGGER,
        ),
        "zhtyped",
    ),
    (  # the value quoted a few words on: "密码居然支持中文，我设的是「好好学习天天向上6710」"
        _rule("password", rf"(?:{ZH})[^。\n「」『』“”\"]{{0,16}}?(?:{_ZH_VERB})\s*[:：]?\s*(?=[「『“\"])", _ZH_TRIGGER),
        "zhquoted",
    ),
    (  # the value restated after a description: "管理密码还是老规矩：老婆生日加房号，也就是 X", "the PIN, i.e. X"
        _rule(
            "password",
            rf"(?i)(?:{ZH}|{_A}(?:{STRONG_EN}|{CODE_EN}){_Z})[^。\n]{{0,40}}?(?:也就是|也即|换句话说就是|\bi\.e\.|\bthat\s+is\b)"
            r"[ \t,，]*[:：]?[ \t]*(?=[A-Za-z0-9#*@%!$^&])" + NOT_A_LABEL,
            r"(?i)也就是|也即|换句话说|i\.e\.|that\s+is",
        ),
        "zhtyped",
    ),
    (  # a form's bracketed label: "【账号】admin【密码】X", "[password] X"
        _rule("password", rf"(?i)[【\[]\s*(?:{ZH}|password|passwd|pwd|pw)\s*[】\]][ \t:：]*(?=\S)", r"(?i)【|\[\s*p"),
        "strong",
    ),
    (_rule("password", rf"{_ZH_ANY}{ZH_EN}{_ZH_ONLY_SEP}" + NOT_A_LABEL, r"(?i)pass|pw|pin|key|secret|token"), "zh"),
    # env names and config keys whose last word is a credential word: DB_PASSWORD=, "apiKey":, client-key-data:
    (
        _rule(
            "password",
            r"(?i)(?<![A-Za-z0-9])[A-Za-z0-9]*(?:[_.-]?(?:password|passwd|passphrase|pwd|pass|secret|token|apikey"
            r"|api[_-]?key|access[_-]?key|private[_-]?key|key[_-]?data|credentials?|auth|requirepass|psk"
            r"|wpa_passphrase))" + _KEY_END + _ASIDE + _SEP + NOT_A_LABEL,
            rf"(?i)(?:pass\w*|pwd|secret|token|key|data|credentials?|auth|psk){_KEY_END}{_ASIDE}{_SEP}",
        ),
        "strong",
    ),
    # CLI flags
    (
        _rule(
            "password",
            r"(?i)(?:mysql|mariadb|mysqladmin|mysqldump|mysqlsh)\b[^\n]{0,200}?\s-p(?=[^\s-])",
            r"(?i)mysql|mariadb",
        ),
        "strong",
    ),
    (
        _rule(
            "password",
            r"(?i)(?:sshpass|docker\s+login|podman\s+login|nerdctl\s+login|helm\s+(?:repo\s+add|registry\s+login)"
            r"|skopeo\s+login|buildah\s+login|oras\s+login|mongo(?:sh|dump|restore|import|export|stat|top)?)\b"
            r"[^\n]{0,200}?\s-p\s+",
            r"(?i)sshpass|login|helm|mongo",
        ),
        "strong",
    ),
    (_rule("password", r"(?i)redis-cli\b[^\n]{0,200}?\s-a\s+", r"(?i)redis-cli"), "strong"),
    (_rule("password", r"(?i)\bldap\w*\b[^\n]{0,200}?\s-w\s+", r"(?i)ldap"), "strong"),
    (_rule("password", r"(?i)\blogin\b[^\n]{0,120}?\s-p\s+", r"(?i)login"), "strong"),  # `az login -u X -p Y`
    (_rule("password", r"(?i)(?<![\w-])pass\b\s*[:：=]?\s*(?=\S)" + NOT_A_LABEL, r"(?i)pass\b"), "prose"),  # "pass X"
    (  # CI secrets set from the command line: `gh secret set NAME --body X`
        _rule("password", r"(?i)\bsecrets?\s+set\s+\S+[^\n]{0,80}?\s(?:--body|-b)(?:=|\s+)", r"(?i)secrets?\s+set"),
        "strong",
    ),
    (  # "SSID MyHome_5G, key yangyang@2010"
        _rule(
            "password",
            r"(?i)(?:wi-?fi|wlan|ssid)\b[^\n]{0,60}?\b(?:key|pw|pass)\b\s*[:：]?\s*",
            r"(?i)wi-?fi|wlan|ssid",
        ),
        "strong",
    ),
    # config files of `key value` lines (msmtprc, netrc, fetchmailrc): `password 2dWy3D@q69`
    (
        _rule(
            "password",
            r"(?im)^[ \t]*(?:password|passwd|passphrase|pass|secret|token)[ \t]+(?=\S)",
            r"(?im)^[ \t]*(?:pass\w*|secret|token)[ \t]+\S",
        ),
        "prose",
    ),
    # a credential word and a space, then a made or typed value: "password 04UJZyR0!;mo3s"
    (  # (not a label's own word: "[redacted: password · …]")
        _rule("password", rf"(?i)(?<!redacted: ){_A}(?:{STRONG_EN}){_Z}[ \t]+" + NOT_A_LABEL, _STRONG_SPACE),
        "spaced",
    ),
    (  # a Chinese credential word, a few words saying what it is, a colon: "密码是她名字拼音加生日：X"
        _rule("password", rf"(?:{ZH})[\u4e00-\u9fff，,]{{1,14}}[:：]\s*" + NOT_A_LABEL, _ZH_TRIGGER),
        "zh",
    ),
    (  # a typed declaration: `val pass: String = "X"`, `let apiKey: string = "X"`
        _rule(
            "password",
            r"(?i)(?<![A-Za-z0-9])\w*(?:password|passwd|pass|pwd|secret|token|api_?key)\s*:\s*[A-Za-z][\w.<>\[\]]*\??"
            r"\s*=\s*(?=[\"'])",
            r"(?i)(?:pass\w*|pwd|secret|token|key)\s*:\s*[A-Za-z][\w.<>\[\]]*\??\s*=",
        ),
        "strong",
    ),
    (  # a build file's credential, its value quoted after a space: Gradle's `storePassword 'X'`
        _rule(
            "password",
            r"(?i)(?<![A-Za-z0-9])[A-Za-z0-9_]*(?:password|passwd|secret|token)[ \t]+(?=['\"])",
            r"(?i)(?:passw\w*|secret|token)[ \t]+['\"]",
        ),
        "strong",
    ),
    # a credential word, then its value quoted: "password `hgpe807g7a1x`", "the token 'x8…'"
    (
        _rule(
            "password",
            rf"(?i){_A}(?:{STRONG_EN}|{WEAK_EN}){_Z}[ \t]+(?=[`\"'“「])" + NOT_A_LABEL,
            rf"(?i)(?:{STRONG_EN}|{WEAK_EN})[ \t]+[`\"'“「]",
        ),
        "weak",
    ),
    (  # an English credential word in a Chinese sentence, then a colon: "token 先写死在这：X"
        _rule(
            "password",
            rf"{ZH_EN}\s*[\u4e00-\u9fff]{{1,10}}[:：]\s*",
            r"(?i)(?:pass\w*|pwd|pin|key|secret|token)\s*[\x{4e00}-\x{9fff}]{1,10}[:：]",
        ),
        "weak",
    ),
    (  # archives: `unrar x -pSECRET`, `7z a -pSECRET`, `zip -P SECRET`
        _rule("password", r"(?i)\b(?:unrar|rar|7z|7za|7zz|unzip|zip)\b[^\n]{0,120}?\s-p(?=[^\s-])", r"(?i)rar|7z|zip"),
        "strong",
    ),
    (_rule("password", r"\bzip\b[^\n]{0,120}?\s-P\s+", r"zip"), "strong"),
    (  # `htpasswd -b [-c] FILE USER PASSWORD`, `htpasswd -nb USER PASSWORD`
        _rule("password", r"\bhtpasswd(?:\s+-\w*b\w*)(?:\s+-\w+)*(?:\s+(?!-)\S+){2}\s+", r"htpasswd"),
        "strong",
    ),
    (
        _rule("password", r"\bhtpasswd(?:\s+-\w*n\w*b\w*|\s+-\w*b\w*n\w*)(?:\s+-\w+)*\s+(?!-)\S+\s+", r"htpasswd"),
        "strong",
    ),
    (  # Terraform: `variable "db_password" { default = "X" }`
        _rule(
            "password",
            r"(?i)variable\s+\"[^\"\n]*(?:password|passwd|secret|token|api_?key|private_?key)[^\"\n]*\"\s*\{[^}]{0,200}?"
            r"\bdefault\s*=\s*",
            r"(?i)variable",
        ),
        "strong",
    ),
    (  # XML settings: `<add key="ClearTextPassword" value="X" />`
        _rule(
            "password",
            r"(?i)\b(?:key|name)\s*=\s*\"[^\"\n]*(?:password|passwd|secret|token|api_?key|apikey)[^\"\n]*\"\s+value\s*=\s*(?=\")",
            r"(?i)(?:key|name)\s*=\s*\"[^\"\n]*(?:pass|secret|token|key)",
        ),
        "strong",
    ),
    (_rule("password", r"(?i)\baccounts\s*:\s*\[\s*(?=[\"'])", r"(?i)accounts"), "made"),  # hardhat's keys
    (  # "the phrase for the VeraCrypt volume is X"
        _rule(
            "password",
            r"(?i)\bphrase\s+(?:for|of|to|on)\s+[^\n.:]{0,40}?(?:veracrypt|luks|bitlocker|keepass|vault|wallet|gpg|pgp"
            r"|encrypt\w*|volume|disk|drive|backup)[^\n.:]{0,20}?" + _IS,
            r"(?i)phrase",
        ),
        "phrase",
    ),
    (_rule("password", r"(?i)(?<![A-Za-z])(?:requirepass|masterauth)\s+", r"(?i)requirepass|masterauth"), "strong"),
    (  # what a password reset printed: "[elastic] user successfully reset. New value: X"
        _rule(
            "password",
            r"(?i)\breset\b[^\n]{0,80}?\bnew\s+(?:value|password|pass)\s*[:：=]\s*" + NOT_A_LABEL,
            r"(?i)reset[^\n]{0,80}new\s",
        ),
        "strong",
    ),
    (_rule("password", r"(?<![A-Za-z])AUTH\s+(?=\S)", r"AUTH\s"), "weak"),  # Redis: `AUTH X`
    (
        _rule(
            "password", r"(?i)(?:wi-?fi|wlan|ssid|热点|无线)\s*[:：]?\s*\S+\s+/\s+", r"(?i)wi-?fi|wlan|ssid|热点|无线"
        ),
        "strong",
    ),
    (
        _rule(
            "password",
            r"(?i)(?<![A-Za-z0-9-])--?(?:password|passwd|pass|pwd|token|api-?key|secret|client-secret|auth-token"
            r"|access-token|http-password|ftp-password|proxy-password|db-password|admin-password|root-password"
            r"|storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass|passin|passout"
            r"|bind-?pw|passphrase|private-key|requirepass|serial|licen[cs]e|licen[cs]e-key|product-key|activation-key"
            r"|registration-key)(?:=|\s+)" + NOT_A_LABEL,
            r"(?i)-(?:pass|pwd|token|api|secret|client|auth|access|http|ftp|proxy|db|admin|root|store|key|src|dest"
            r"|bind|private|requirepass|serial|licen|product|activation|registration)",
        ),
        "strong",
    ),
    (_rule("password", r"(?i)(?<![A-Za-z0-9])pass:(?=\S)", r"(?i)pass:"), "strong"),
    (
        _rule(
            "password",
            r"(?i)(?<![A-Za-z0-9-])(?:-u|--user|--auth)(?:\s+|=)[\"']?[^\s:,%\"'@/]{1,64}[:,%](?=\S)",
            r"(?i)-u|--user|--auth",
        ),
        "strong",
    ),
    (_rule("password", r"(?i)\bhttps?\b[^\n]{0,80}?\s-a\s+[\"']?[^\s:\"'@/]{1,64}:(?=\S)", r"(?i)http"), "strong"),
    (_rule("password", r"(?i)\blogin\s+\S+\s+password\s+", r"(?i)login"), "strong"),  # netrc
    (  # a CLI's `login` and its token (`wandb login 734f…`): no user name is twenty characters of a key
        _rule(
            "password",
            r"(?i)(?<![\w.-])login\s+(?:--?[a-z][\w-]*\s+)*(?=[A-Za-z0-9_.=-]{20,}(?:\s|$|[\"'`]))",
            r"(?i)login",
        ),
        "strong",
    ),
    (
        _rule(
            # (a host named login.x is no login: `ssh login.hpc.example.edu`)
            "password",
            r"(?i)\blogin(?![.\w-])\s*[:：]?\s*(?!(?:with|to|as|in|on|at|for|via|using|from|into|page|screen)\b)"
            r"\S+?\s*[,;/]?\s+(?:pass(?:word)?|pw|pwd)?\s*[:：]?\s*",
            r"(?i)login",
        ),
        "prose",
    ),
    (
        _rule("password", rf"(?i)\b(?:with|using|via|is)\s+(?:the\s+|a\s+|my\s+)?(?:{PHRASE_EN}){_Z}\s+", _PHRASE),
        "phrase",
    ),
    (
        _rule(
            "password",
            rf"(?i)(?<![\w/.-])(?:{_ACCOUNTS})\s*/\s*(?=\S)",
            rf"(?i)(?:{_ACCOUNTS})\s*/",
        ),
        "prose",
    ),
    (
        _rule("password", r"(?i)<(?:" + _SENSITIVE_XML + r")>(?=[^<\s])", r"(?i)<\w*(?:pass|secret|token|key|cred)"),
        "strong",
    ),
    (_rule("password", r"(?i)\bWIFI:[^\n]{0,120}?(?<=[:;])P:", r"(?i)WIFI:"), "wifi"),
    (_rule("password", r"(?i)(?<![A-Za-z])PGPASSWORD=|MYSQL_PWD=", r"(?i)PGPASSWORD|MYSQL_PWD"), "strong"),
    (  # a strong credential word, then its value quoted, spaces and all: `password "hsre ltpu scta pirh"`
        _rule(
            "password",
            rf"(?i){_A}(?:{STRONG_EN}){_Z}[ \t]+(?=[`\"'“「])" + NOT_A_LABEL,
            rf"(?i)(?:{STRONG_EN})[ \t]+[`\"'“「]",
        ),
        "quoted",
    ),
    (
        _rule("password", rf"(?:{ZH_LIST}){_ZH_GAP}[^:：\n]{{0,20}}?[:：][ \t]*(?=\S)", ZH_LIST),
        "codes",
    ),  # 备用码：a row
    (  # a question for a credential, and its answer: "老妈：家里 wifi 密码是多少？\n我：X", "what's the wifi pw? X"
        _rule(
            "password",
            rf"(?i)(?:{ZH}|{_A}(?:{STRONG_EN}|{CODE_EN}){_Z})[^\n?？]{{0,30}}"
            rf"(?:[?？](?:[^\n]{{0,60}}(?=\n))?|(?={_SPEAKER}))"
            r"[ \t]*\n?[ \t]*"  # (the answer's speaker, maybe after a time stamp: `[12:39] me: X`)
            r"(?:\[[^\]\n]{1,24}\][ \t]*)?(?:[^\s:：?？]{1,10}[:：][ \t]*)?(?:[-—–>→=]+[ \t]*)?" + NOT_A_LABEL,
            rf"(?i)(?:{_ZH_TRIGGER}|pass|pw|pin|code|key|secret|token)[^?？\n]{{0,40}}(?:[?？]|{_SPEAKER})",
        ),
        "answer",
    ),
    (  # what opens something, said by what it is like: "Mum's iPad unlocks with the same as my laptop (X)"
        _rule(
            "password",
            r"(?i)\b(?:unlocks?|unlocked|opens?|log(?:s|ged)?\s*in(?:to)?|sign(?:s|ed)?\s*in(?:to)?)\b[^.\n]{0,30}?"
            r"\bwith\b[ \t]*",
            r"(?i)(?:unlock|open|log\w*\s*in|sign\w*\s*in)[^.]{0,30}with",
        ),
        "answer",
    ),
    (  # "pass for grandma's iPad = X"
        _rule("password", rf"(?i)(?<![\w-])pass{_FOR}{_SEP}" + NOT_A_LABEL, r"(?i)pass\b"),
        "prose",
    ),
    (  # "router panel — u=ops p=X", "user: ops / pw: X"
        _rule(
            "password",
            r"(?i)(?<![\w-])(?:u|user|username|login)\s*[=:]\s*[^\s=:]+[ \t,;/]+(?:p|pw|pwd|pass)\s*[=:]\s*",
            r"(?i)(?:u|user\w*|login)\s*[=:]\s*\S+[ \t,;/]+(?:p|pw|pwd|pass)\s*[=:]",
        ),
        "strong",
    ),
    (  # a cloud's key pair as Chinese docs name it: "AK：X SK：Y", `SecretId: X`, `AccessKeySecret = Y`
        _rule(
            "password",
            r"(?<![A-Za-z0-9])(?:AK|SK|ak|sk|(?i:secret[ _-]?id|access[ _-]?key[ _-]?(?:id|secret)))\s*[:：=]\s*"
            + NOT_A_LABEL,
            r"(?i)(?:ak|sk|secret[ _-]?id|access[ _-]?key[ _-]?(?:id|secret))\s*[:：=]",
        ),
        "strong",
    ),
    (  # a seed phrase's words after a few words about them: "ledger recovery words, in order: …"
        _rule("password", rf"(?i){_A}(?:{PHRASE_EN}){_Z}[^\n.。:：?？]{{1,40}}?[:：][ \t]*" + NOT_A_LABEL, _PHRASE),
        "seedwords",
    ),
    (  # a strong word, a few words about it, a colon: "master passphrase — not the hint, the real thing: X"
        _rule(
            "password",
            rf"(?i){_A}(?:{STRONG_EN}){_Z}(?!/)[^\n.。:：?？]{{3,60}}?[:：][ \t]*"
            + NOT_A_LABEL,  # (not a path's `totp/`)
            rf"(?i)(?:{STRONG_EN})[^.:：]{{3,60}}[:：]",
        ),
        "clause",
    ),
)

# URLs: user-info (`scheme://user:PW@host`, maybe URL-encoded) and credential query parameters
_QUERY_KEYS = (
    r"access_token|refresh_token|id_token|token|auth_token|api_?key|apikey|key|secret|client_secret|password"
    r"|passwd|pwd|pass|sig|signature|auth|code|private_token|session|sessionid|sid|x-amz-signature"
    r"|x-amz-credential|x-amz-security-token|jwt|otp|ticket|appid|app_?key|app_?secret|access_?key|secret_?key"
    r"|apiToken|api_token|accesskey|subscription-key|key_?secret|x-goog-signature|x-goog-credential"
    r"|[\w-]*signature|[\w-]*_token|[\w-]*_secret"
)
_QUERY = rf"(?i)(?:[?&;#]|%3F|%26|%253F|%2526)(?:{_QUERY_KEYS})(?:=|%3D|%253D)"
URL_RULES = (
    Rule(
        "url credentials",
        r"(?i)(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]{1,20}://[^\s:/@\[\]\"']*:([^\s@/\"']+)@",
        r"://[^\s:/@]*:[^\s@/]+@",
        1,
    ),
    Rule("url credentials", r"(?i)%3A%2F%2F[^\s%@]*(?:%3A|:)((?:(?!%40)[^\s@&])+)(?:%40|@)", r"(?i)%3A%2F%2F", 1),
    Rule(  # a webhook's path is its secret: `/open-apis/bot/v2/hook/<id>`, `/webhooks/<id>/<token>`
        "url secret",
        r"(?i)/(?:hooks?|webhooks?)/([A-Za-z0-9_-]{16,}(?:/[A-Za-z0-9_-]{8,}){0,2})",
        r"(?i)/(?:hooks?|webhooks?)/",
        1,
    ),
    Rule(  # a secrets file's `user:password` line after its name (`/etc/rsyncd.secrets backup:X`, read as one line)
        "password",
        r"(?i)(?:rsyncd?\.secrets?|\.secrets|passwd-s3fs|\.git-credentials|\.htpasswd)\s+[\w.@-]{1,32}:(\S{4,128})",
        r"(?i)rsyncd?\.secret|\.secrets|passwd-s3fs|\.git-credentials|\.htpasswd",
        1,
    ),
    Rule(  # `jdbc:oracle:thin:scott/PASSWORD@//host:1521/db`
        "url credentials", r"(?i)jdbc:oracle:\w+:[^/\s@]+/(\S+?)@(?=//|[\w.-]+:\d|\()", r"(?i)jdbc:oracle", 1
    ),
    Rule(  # a link that holds a key is a key: the whole URL goes (`https://x.zoom.us/j/380…?pwd=Zh1…`)
        "url secret",
        r"(?i)((?:(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]{1,20}://[^\s\"'<>]*?)?"
        + _QUERY[4:]
        + NOT_A_LABEL
        # (not a blank: `code=AUTH_CODE`, `secret=BASE32SECRET`, `key={key}`)
        + r"(?!(?-i:[A-Z]+(?:[_ ][A-Z]+)+|[A-Z0-9]*(?:SECRET|TOKEN|KEY|CODE)[A-Z0-9]*)(?:[&\s#\"'<>]|$)|\{|<|\$\{)"
        + r"(?:(?!%26|%2526)[^&\s#\"'<>\\])+)",
        _QUERY,
        1,
    ),
)
# "G-577376 is your Google verification code": the code comes first
CODE_FIRST = Screened(
    r"(?i)(?<![\w-])((?:[A-Z]{1,3}-)?(?:\d{4,8}|\d{3}[ -]\d{3}))\s+is\s+your\s+(?:[\w-]+\s+){0,3}"
    r"(?:code|pin|otp|passcode)\b"
    r"|(?<![\w-])(\d{4,8})\s*(?:是|为)?(?:您|你)的[^。\n]{0,12}?(?:验证码|动态码|校验码)"
    r"|(?i:\buse\s+)(\d{4,8})\s+(?i:to\s+(?:verify|log\s*in|sign\s*in|confirm|reset))",
    r"(?i)\d\s+is\s+your\s|\d\s*(?:是|为)?(?:您|你)的|use\s+\d{4}",
)
# pgpass: host:port:database:user:password
PGPASS = Screened(  # (screened without its look-arounds, and with any name's characters: RE2's `\w` is ASCII)
    r"(?m)(?:^|(?<=[\s'\"]))[\w.*-]+:(?:\d+|\*):[\w.*-]+:[\w.*@-]+:([^\s'\"]+)(?=[\s'\"]|$)",
    r":(?:\d+|\*):[^\s:]+:[^\s:]+:[^\s'\"]",
)
# a credential's name on one line, its value printed alone on the next: a notebook's `Out[7]: '…'`, a CI log's
# `##[debug]=> '…'`, what `… | base64 -d` printed
_NAMED_THEN_PRINTED = Screened(
    r"(?i)(?:password|passwd|secret|token|api[_-]?key|credential)[^\n]{0,120}\n"
    r"[ \t]*(?:\d{4}-\d\d-\d\dT[\d:.]+Z?[ \t]+)?(?:##\[debug\])?(?:=>|->|Out\[\d+\]:|>)?[ \t]*"
    r"(['\"]?)([^\s'\"]{6,128})\1[ \t]*(?=\n|$)",
    r"(?i)(?:password|passwd|secret|token|api[_-]?key|credential)[^\n]{0,120}\n",
)

_TABLE_HEAD = LazyPattern(
    r"(?i)password|passwd|pwd|\bpass\b|secret|token|api[ _-]?key|credential|pin|code|密码|口令|密钥|令牌|验证码"
)
_UNIT = LazyPattern(  # (or a format: "取件码一般是「货架号-层号-编号」的格式")
    r"\s*(?:[-–]?\s*)?(?:digits?|characters?|chars?|letters?|symbols?|long|or more|minimum|位|个字符|字符|个字)"
    r"|[」”\"'』]?\s*(?:这样|这种|之类)?的?(?:格式|形式|样式|规则)|[\"']?\s+(?:format|pattern)\b",
    re.I,
)
_LIST_ITEM = LazyPattern(
    r"[ \t]*(?:[-*•]|\d{1,2}[.)])?[ \t]*([A-Za-z0-9][A-Za-z0-9-]{4,30}[A-Za-z0-9]|\d{3,5}[ -]\d{3,5})[ \t]*"
    r"(?:\n|$|(?=[\"']))"  # (or a closing quote: the list ends a JSON string)
)
_NEXT_ITEM = LazyPattern(r"[`'\"]?(?:[ \t]*[,，、;；][ \t]*|[ \t]+)[`'\"]?")
_CODE_ROW = LazyPattern(  # (maybe in a fence or a bulleted list that a one-line field made one line)
    r"(?:```\w*\s*)?(?:[*•·-][ \t]+)?"
    r"([A-Za-z0-9][A-Za-z0-9-]{3,11}(?:(?:[ \t,;、，；]|\s[*•·]\s)+[A-Za-z0-9][A-Za-z0-9-]{3,11}){2,})"
)
_GROUPS = LazyPattern(r"(?:[A-Za-z2-7]{4}[ -]){3,}[A-Za-z2-7]{2,8}")


def _judge(how: str, text: str, a: int, b: int) -> bool:
    value = text[a:b]
    if how == "quoted" and " " in value.strip():  # words in quotes: a passphrase, or a sentence quoted
        return bool(GOOGLE_APP_PASSWORD.pattern.fullmatch(value)) or not _STOPWORDS & set(value.lower().split())
    if how in ("strong", "zh", "wifi", "zhphrase", "codes", "quoted"):
        return is_value(value, 4) and not _described(text, b)
    if how == "weak":
        return is_token(value)
    if how == "zhtyped":  # after words on what it is like: a value with a digit, or typed
        return is_value(value, 6) and (_has_digit(value) or typed(value)) and not _described(text, b)
    if how == "zhquoted":  # quoted a few words after the credential word: a value with a digit or a symbol
        shaped = any(not c.isalpha() for c in value) and "/" not in value
        return is_value(value, 4) and shaped and not _described(text, b)
    if how == "made":  # "the new key 9XslMuj…": after a weak word and a space only a made token counts
        return made(value) or typed(value) or _hex_key(value)
    if how == "spaced":  # "password ywbM,Ckj2;M": after a credential word and a space, a value of mixed classes
        shaped = made(value) or typed(value) or (_mixed(value) and _has_digit(value))
        return is_value(value, 6) and (shaped or bool(_LETTER_CODE.fullmatch(value)))
    if how == "seedwords":  # six words or more, none of them a little word of a sentence
        words = value.lower().split()
        return len(words) >= 6 and all(w.isalpha() for w in words) and not _STOPWORDS & set(words)
    if how == "answer":  # the answer to a question for a credential: its first value that looks typed
        return "/" not in value
    if how == "clause":  # a value after a colon that ends a few words about a credential: not a link or a path
        return "/" not in value and _judge("prose", text, a, b)
    if how == "prose":  # (a sentence's own mark after a word is no symbol in a value: "the pass again?")
        core = value.rstrip("?!.,;:…。？！，；：")
        typed_here = any(not c.isalpha() for c in core) and any(c.isalpha() for c in value)
        return is_value(value, 6) and typed_here and "://" not in value  # (a link is no password)
    if how == "code":
        digits = sum(c.isdigit() for c in value)
        compact = len(value) - sum(value.count(c) for c in " ,-")  # (digit by digit: "2 7 1 0 7 1", "9-4-4-7")
        if _LETTER_CODE.fullmatch(value) and not _described(text, b):
            return True  # letters and digits: an alphanumeric PIN `xi94igxo`, a sign-in code `6YJ-TSY`
        return digits >= 4 and digits >= compact - 2 and not _described(text, b)
    if how == "short":  # a card's security code, a lock's combination: three digits or more, only digits
        return value.isdigit() and 3 <= len(value) <= 8
    if how == "phrase":
        return is_value(value, 8)
    return how in ("groups", "list")


def _mixed(value: str) -> bool:
    """Upper and lower case with a digit or a symbol, or letters with both: how a typed password is mixed."""
    upper, lower = any(c.isupper() for c in value), any(c.islower() for c in value)
    digit, symbol = any(c.isdigit() for c in value), any(not c.isalnum() for c in value)
    return (upper and lower and (digit or symbol)) or ((upper or lower) and digit and symbol)


def _hex_key(value: str) -> bool:
    """32 hex digits or more: a key, where the words before it name a credential."""
    return len(value) >= 32 and all(c in "0123456789abcdefABCDEF" for c in value)


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _described(text: str, end: int) -> bool:
    """A length or a rule, not a value: "12+ characters", "4-6 digits", "至少8位"."""
    return bool(_UNIT.match(text, end))


def _values(how: str, text: str, start: int) -> list[tuple[int, int]]:
    """Where the value (or, for a list, each value) after a lead-in is."""
    if how == "answer":
        return _answer(text, start)
    if how == "seedwords":
        return [m.span()] if (m := _WORD_RUN.match(text, start)) is not None else []
    if how == "list":
        out, at = [], start + 1
        while (m := _LIST_ITEM.match(text, at)) is not None:
            out.append(m.span(1))
            at = m.end()
        return out
    if how == "codes":  # "backup codes (each works once): 7461 1340 6156 6130 …": the whole row of codes
        if (row := _CODE_ROW.match(text, start)) is not None:
            return [row.span(1)]
        how = "strong"
    if how == "groups":
        m = _GROUPS.match(text, start)
        return [m.span()] if m else []
    if how == "wifi":
        return [(start, _wifi_end(text, start))]
    if how in ("quoted", "zhquoted"):
        return [m.span(1)] if (m := _QUOTED_VALUE.match(text, start)) is not None else []
    if how == "code" and (spoken := _SPOKEN_CODE.match(text, start) or _GROUPED_CODE.match(text, start)):
        return [spoken.span()]  # "pin is 2 7 1 0 7 1", "the code is 910 578"
    if how in ("zh", "zhphrase"):
        a, b = value_span(text, start)
        if how == "zhphrase" and a == b:  # a phrase in Chinese: to the end of its clause
            return [value_span(text, a, phrase=True)]
        if text[a : a + 1] in "\"'`“「":
            return [(a, b)]
        if (words := _CJK_PASSPHRASE.match(text, a)) is not None:  # "主密码 = 欲穷千里目 海内存知己 1996"
            return [words.span()]
        more = [] if text[a:b].isalpha() else _same_shape(text, a, b)  # words: a passphrase; codes: a list
        return [(a, b), *more] if more else [(a, _ascii_phrase_end(text, b))]
    if (tag := _YAML_TAG.match(text, start)) is not None:  # `password: &db_pw "X"`, `!!str X`
        start = tag.end()
    if (literal := _TEMPLATE_LITERAL.match(text, start)) is not None:  # `"{{ 'X' | password_hash('sha512') }}"`
        return [literal.span(2)]
    if how == "strong" and (parts := _CONTINUED.match(text, start)) is not None:  # `KEY = (\n "ab"\n "cd"\n)`
        return [m.span(1) for m in re.finditer(r"[\"']([^\"'\n]*)[\"']", text[: parts.end()]) if m.start() >= start]
    a, b = value_span(text, start, phrase=how == "phrase")
    if how == "strong" and text[a:b].isalpha() and text[a:b].islower() and text[a:b] not in _STOPWORDS:
        b = _words_to_line_end(text, b)  # "pw: violin lantern thunder walrus 5": a passphrase
    return [(a, b), *_same_shape(text, a, b)] if how != "phrase" else [(a, b)]


_LETTER_CODE = LazyPattern(  # (a digit among letters, none of them a word's: `xi94igxo`, `6YJ-TSY`, `K7P-2QX`)
    r"(?=[A-Za-z-]*\d)(?=\d*[A-Za-z])(?:[a-z0-9]{6,16}|[A-Z0-9]{6,16}|[A-Z0-9]{3,4}-[A-Z0-9]{3,4})"
)
_STOPWORDS = frozenset(
    "a an the is are be been must should can will to of and or for in on at by with your you my it this that not "
    "no at least chars characters long letters digits rule rules see use here there than files".split()
)
_QUOTED_VALUE = LazyPattern(r"[`\"'“「]([^\n`\"'”」]{4,128})[`\"'”」]")
_GROUPED_CODE = LazyPattern(r"\d{3,4}[ -]\d{3,4}(?![\d-])")  # a code in two groups, as an SMS writes it
_SPOKEN_CODE = LazyPattern(r"\d(?:[ ,]\s?\d){3,9}(?![\d.])")  # a code read out digit by digit
_TEMPLATE_LITERAL = LazyPattern(r"[\"']?\{\{-?\s*(['\"])([^'\"\n]{4,})\1")
_YAML_TAG = LazyPattern(r"(?:&[\w-]+|!{1,2}[\w-]*)[ \t]+(?=\S)")
_CONTINUED = LazyPattern(  # (on one line too, where a one-line field made the breaks spaces)
    r"[(\[][ \t]*\n?(?:[ \t]*[\"'][^\"'\n]*[\"'][ \t]*,?[ \t]*\n?){2,8}[ \t]*[)\]]"
    r"|[(\[][ \t]*\n(?:[ \t]*[\"'][^\"'\n]*[\"'][ \t]*,?[ \t]*\n){1,8}"
)


def _answer(text: str, start: int, reach: int = 80) -> list[tuple[int, int]]:
    """The first value in an answer's first line that looks typed ("You told me it is WQDP8198qjaz%.")."""
    end = min(len(text), start + reach)
    clause = _CLAUSE_END.search(text, start, end)
    for m in _ANSWER_WORD.finditer(text, start, clause.start() if clause else end):
        a, b = value_span(text, m.start())
        value = text[a:b]
        if a < b and _judge("prose", text, a, b) and _mixed(value) and "/" not in value and not _VERSION.match(value):
            return [(a, b)]
    return []


_CJK_PASSPHRASE = LazyPattern(r"[\u4e00-\u9fff]{2,}(?:[ \t]+[\u4e00-\u9fff]{2,})+(?:[ \t]+\d{2,})?")
_CLAUSE_END = LazyPattern(r"\n|[.;!?。；！？]\s|\s(?:and|then|but)\s|，然后|然后")  # where an answer's line ends
_VERSION = LazyPattern(r"(?i)v?\d+(?:\.\d+)+(?:[-+.]?[a-z]++\d*+)*+$")  # (possessive: see test_redos)
_WORD_RUN = LazyPattern(r"[A-Za-z]+(?:[ \t]+[A-Za-z]+){5,}")
_ANSWER_WORD = LazyPattern(r"(?<![^\s:：,，;；(（\[“\"'`])\S")  # where a word starts


def _words_to_line_end(text: str, end: int) -> int:
    m = re.match(r"(?:[ \t]+[a-z0-9]+){2,8}[ \t]*(?=\n|$)", text[end:])
    return end + len(m.group().rstrip()) if m else end


def _same_shape(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """The values after a first one, written in a row with separators and of the same shape (a list of codes)."""
    first = text[a:b]
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]{4,22}[A-Za-z0-9]", first):
        return []
    out = []
    while (sep := _NEXT_ITEM.match(text, b)) is not None:
        m = re.match(r"[A-Za-z0-9-]+", text[sep.end() :])
        if m is None or abs(len(m.group()) - len(first)) > 2:
            break
        a, b = sep.end(), sep.end() + len(m.group())
        out.append((a, b))
    return out


def _ascii_phrase_end(text: str, end: int) -> int:
    """In Chinese text a password is the ASCII after the word, spaces included ("wifi 密码 meadow saffron 94")."""
    m = re.match(r"(?:[ \t]+[A-Za-z0-9!@#$%^&*_+=.,;:/?~-]+)+", text[end:])
    return end + len(m.group().rstrip(".,;:")) if m else end


class ContextDetector:
    """Finds credentials by the words, flags and shapes around them."""

    kinds = ("password", "secret", "code", "url credentials", "url secret")

    def __init__(self) -> None:
        self._leads = RuleSet([rule for rule, _ in LEADS])
        self._how = [how for _, how in LEADS]
        self._urls = RuleSet(URL_RULES, rank=250)

    def find(self, text: str) -> list[Span]:
        spans = self._find(text)
        if "-" in text:  # slugs join words: read `wifi-password-is-X` as words too, where a dash is near a lead word
            spans += self._find(
                text.replace("-", " "), urls=False, near=lambda a, b: "-" in text[max(0, a - 1) : b + 80]
            )
        if "|" in text:
            spans += table_values(text)
        if " / " in text or "\t/ " in text or ("/" in text and ("：" in text or ":" in text)):
            spans += slash_pairs(text)
        if (
            " as " in text
            or "作为" in text
            or "当" in text
            or "设" in text
            or "改成" in text
            or "换成" in text
            or "是" in text
        ):
            spans += values_before_words(text)
        if "(" in text:
            spans += login_arguments(text)
        if "\n" in text and CREDENTIAL_WORD.occurs(text) and (_POINTER.search(text) or _NEXT_LINE.search(text)):
            spans += pointed_value(text)
        if "^" in text or "↑" in text or "上面" in text:
            spans += values_pointed_up(text)
        spans += human_passwords(text)
        if "://" in text or "/join/" in text or "/invite" in text:
            spans += capability_links(text)
        spans += [Span(*m.span(1), "password", 262) for m in _SAME_AS_ACCOUNT.finditer(text)]
        if _ENCLOSED.search(text) or "-" in text:
            spans += enclosed_in_login_sentences(text)
        spans += values_in_place(text)
        spans += typed_near_words(text)
        if has_digit(text):
            spans += access_codes(text)
        for m in CODE_FIRST.finditer(text):
            group = next(i for i in (1, 2, 3) if m.group(i))
            spans.append(Span(*m.span(group), "code", 260))
        if ":" in text and "\n" in text or text.count(":") >= 4:
            spans += [Span(*m.span(1), "password", 260) for m in PGPASS.finditer(text) if not m.group(1).isdigit()]
        if "\n" in text:
            for m in _NAMED_THEN_PRINTED.finditer(text):
                value = m.group(2)
                if made(value) or typed(value) or (_mixed(value) and _has_digit(value)) or _hex_key(value):
                    spans.append(Span(*m.span(2), "password", 263))
        return spans

    def _find(self, text: str, urls: bool = True, near: Callable[[int, int], bool] | None = None) -> list[Span]:
        out = []
        for lead in self._leads.find(text, near):
            if _inside_reference(text, lead.start):
                continue  # a name inside a reference to a value: `${REDIS_PASSWORD:?must be set}`, `{.data.password}`
            how = self._how[lead.rank]
            for a, b in _values(how, text, lead.end):
                if a < b and _judge(how, text, a, b):
                    out.append(Span(a, b, lead.kind, 200 + lead.rank))
        if urls:
            out += [s for s in self._urls.find(text) if not _loopback_default(text, s)]
        return out


_LOOPBACK_LOGIN = LazyPattern(r"://([^\s:/@]+):$")
_LOOPBACK_HOST = LazyPattern(r"@(?:localhost|127\.0\.0\.1|\[::1\])(?![\w.-])")


def _loopback_default(text: str, span: Span) -> bool:
    """A login whose password is its user's name on this machine's own address (`amqp://guest:guest@localhost`):
    a server's documented default, reachable from nowhere else."""
    user = _LOOPBACK_LOGIN.search(text, max(0, span.start - 64), span.start)
    same = user is not None and user.group(1) == text[span.start : span.end]
    return same and _LOOPBACK_HOST.match(text, span.end) is not None


_REFERENCE_OPEN = LazyPattern(r"(?:\$\{|\{\{|%\(|#\{|\{\.|\{\$)[^{}()\n]*$")  # `${X`, `{{ .Values.x`, `{.data.x`


def _inside_reference(text: str, at: int) -> bool:
    """Whether `at` is inside a reference that a shell, a template or a JSONPath fills in (not a value)."""
    return _REFERENCE_OPEN.search(text, max(0, at - 80), at) is not None


# `someone@example.org / Pa55!word`, "the router creds → anna.k / Snowy,1979&": an account, a slash, its password
_PAIR = LazyPattern(
    r"(?<![\w/])([\w.+-]+@[\w-]+(?:\.[\w-]+)+|[\w.@+-]{2,40})[ \t]+/[ \t]+([^\s/]{6,64})(?=\s|$|[，。)）])"
)
_ACCOUNT_WORDS = LazyPattern(
    r"(?i)\b(?:creds?|credentials?|login|log\s*in|sign\s*in|account|user(?:name)?|wi-?fi|wlan|ssid|router|hotspot"
    r"|admin)\b|账号|帳號|账户|登录|登陆|用户名|热点|路由器|无线|账密|帳密|堡垒机|后台|後台|管理页面|管理端"
)


# a password said to be the account's name: the name is the password ("账号 qa_x，密码同账号名")
_SAME_AS_ACCOUNT = Screened(
    r"(?i)(?:账号|帳號|用户名|user(?:name)?|login|account)\s*[:：=]?\s*([A-Za-z0-9_.@-]{4,40})[^\n]{0,30}?"
    r"(?:密码同|密码和|密码与|密码跟|password\s+(?:is\s+)?(?:the\s+)?same\s+as)",
    r"(?i)密码同|密码和|密码与|密码跟|password\s+(?:is\s+)?(?:the\s+)?same\s+as",
)


# the value before its word: "I went with X as the new password", "把 X 作为新的 root 密码"
_VALUE_FIRST = LazyPattern(
    r"(?i)\b(?:went\s+with|chose|picked|settled\s+on|use|uses|using|set)\s+[`'\"“]?([^\s`'\"”]{6,64})[`'\"”]?\s+as\s+"
    r"(?:the\s+|my\s+|our\s+|his\s+|her\s+|its\s+|their\s+)?(?:new\s+)?(?:[\w-]+\s+){0,2}?(?:password|passphrase|passcode|pin|token|key)\b"
    r"|(?:把|将)\s*[`'\"“「]?([!-~]{6,64}?)[`'\"”」]?\s*(?:作为|当作|当成|设为|设成|改成|换成)[^，。,\n]{0,12}?(?:密码|口令|密钥|PIN码?)"
    # a line that opens with the value: "X —— 这是有赞微商城的登录密码", "X ← 质谱工作站管理员密码"
    r"|(?m:^)\s*[`'\"“「]?([!-~]{6,64}?)[`'\"”」]?\s*(?:(?:——|—|--|-|:|：)?\s*(?:这|它|这个)?(?:就)?是|←|<-{1,2}|⬅)"
    r"[^，。,\n]{0,16}?(?:密码|口令|密钥|password|passcode)"
)
# a call that logs in or connects, its arguments in quotes: `ftplib.FTP("host", "user", "X")`, `NetworkCredential(…)`
_LOGIN_CALL = LazyPattern(
    r"(?i)\b[\w.]*(?:connect|login|logon|log_in|ftp|ftp_tls|smtp(?:_ssl)?|imap4(?:_ssl)?|pop3|credentials?"
    r"|authenticate|auth|basicauth|client)\s*\(([^()\n]{0,400})\)"
)
_QUOTED_ARG = LazyPattern(r"[\"']([^\"'\s]{6,128})[\"']")


# a sentence about unlocking or logging in, a value in brackets or quotes: "unlocks with the same as my laptop (X)"
_UNLOCK = Screened(  # (screened by RE2: its `\W` is any space)
    r"(?i)\b(?:unlocks?|unlocked|log(?:s|ged)?\s*in|sign(?:s|ed)?\s*in|passcode|password|login)\b|解锁|登录|登陆",
    r"(?i)unlock|log(?:s|ged)?\W*in|sign(?:s|ed)?\W*in|passcode|password|解锁|登录|登陆",
)
_ENCLOSED = LazyPattern(r"[(（\[「\"'`]([^\s()（）\[\]「」\"'`]{10,64})[)）\]」\"'`]")


def enclosed_in_login_sentences(text: str) -> list[Span]:
    """A value in brackets or quotes, typed like a password, in a sentence about unlocking or logging in."""
    spans: list[Span] = []
    if not _UNLOCK.search(text):
        return spans  # (no sentence says it: one search of the whole text, not one a sentence)
    for sentence in _SENTENCE.finditer(text):
        if not _UNLOCK.search(sentence.group()):
            continue
        at = sentence.start()
        spans += [Span(at + m.start(), at + m.end(), "password", 263) for m in _APP_PASSWORD.finditer(sentence.group())]
        for m in _ENCLOSED.finditer(sentence.group()):
            value = m.group(1)
            if (made(value) or typed(value) or (_mixed(value) and _has_digit(value))) and "/" not in value:
                a = sentence.start() + m.start(1)
                spans.append(Span(a, a + len(value), "password", 263))
    return spans


# a value in a command's or a message's own place, the words around it say what it is (screen, pattern, group)
_IN_PLACE = (
    (
        "password-stdin",
        LazyPattern(r"(?i)\becho\s+(?:-n\s+)?(['\"]?)([^\s'\"|]{4,128})\1\s*\|[^\n]{0,200}?--password-stdin"),
        2,
    ),
    ("@", LazyPattern(r"(?<![\w/:@])[\w.-]{1,64}:([^@\s\"'/:()]{4,128})@(?:tcp|udp|unix)\("), 1),  # Go's DSN
    ("/user:", LazyPattern(r"(?i)\bnet\s+use\b[^\n]{0,200}?/user:\S+\s+(?![/*])(\S+)"), 1),
    ("/user:", LazyPattern(r"(?i)\bnet\s+use\s+(?:[a-z]:\s+)?\\\\\S+\s+(?![/*])(\S+)\s+/user:"), 1),  # (or before it)
    ("SecureString", LazyPattern(r"(?i)ConvertTo-SecureString\s+(?:-String\s+)?(['\"])([^'\"\n]{4,128})\1"), 2),
    (
        "码",
        LazyPattern(
            r"([A-Z]-?\d{4,8}|\d{4,8})\s*(?:是|为)(?:您|你)的[^，。\n“”]{0,16}?(?:验证码|校验码|动态码|登录码)"
        ),
        1,
    ),
    ("凭", LazyPattern(r"凭\s*([A-Za-z0-9][A-Za-z0-9-]{3,11})\s*(?:到|去|至|在)?[^，。\n]{0,20}?取(?:件|货|餐)"), 1),
    # command lines that take a password in their own place: `-p'X'` glued, macOS `security … -w X`, x11vnc,
    # poetry's `http-basic.NAME user X`, `user/X@host` of Oracle-style clients, a switch's `password cipher X`
    ("-p", LazyPattern(r"(?<![\w-])-p(['\"])([^'\"\n]{4,128})\1"), 2),
    # `-u NAME -P X` (mosquitto, redis-cli's -a aside): a password flag beside a user flag on one command line
    (
        "-P",
        LazyPattern(r"(?<![\w-])-u\s+\S+[^\n]{0,80}?\s-P\s+(['\"]?)(?!\d+\1(?:\s|$))([^\s'\"]{4,128})\1(?=\s|$)"),
        2,
    ),
    ("-u", LazyPattern(r"(?<![\w-])-P\s+(['\"]?)([^\s'\"-][^\s'\"]{3,127})\1\s[^\n]{0,80}?\s-u\s+\S"), 2),
    # `-u NAME … -p X` (xcrun altool, many clients): not a port (`docker run -u 1000 -p 8080:80`)
    (
        "-p",
        LazyPattern(
            r"(?<![\w-])-u\s+\S+[^\n]{0,120}?\s-p\s+(['\"]?)(?!\d+(?::\d+)*\1(?:\s|$))([^\s'\"-][^\s'\"]{3,127})\1"
        ),
        2,
    ),
    # a signing tool's certificate password: `signtool sign /f x.pfx /p "X"`, `jarsigner -storepass X`
    (
        "sign",
        LazyPattern(
            r"(?i)\b(?:signtool|pvk2pfx|certutil|makecert|osslsigncode|jarsigner|apksigner)\b[^\n]{0,200}?\s[/-]"
            r"(?:p|pi|po|pass|password|storepass|keypass)(?::|=|\s+)(['\"]?)([^\s'\"]{4,128})"
        ),
        2,
    ),
    # an XML element named as a secret: `<string name="server_client_secret">X</string>`, `<entry key="password">`
    (
        "<",
        LazyPattern(
            r"(?i)<(\w+)\b[^>\n]*?\b(?:name|key|id)\s*=\s*[\"'][^\"'\n]*?(?:secret|passw(?:or)?d|passphrase|token"
            r"|api_?key|apikey|private_?key|credential)(?![^\"'\n]*(?:hint|label|title|desc|prompt|placeholder|message))"
            r"[^\"'\n]*[\"'][^>\n]*>\s*([^<\s]{4,200})\s*</\1>"
        ),
        2,
    ),
    # an address and its password, as sasl_passwd, a credentials list or a combo line has them: `NAME@HOST:X`
    (
        "@",
        LazyPattern(
            r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}:(?!\d+(?:[\s'\"]|$))([^\s/:@'\"]{4,128})(?=[\s'\"]|$)"
        ),
        1,
    ),
    # a share link with its extraction code: the link's id opens it too (`…/s/tbxAk7jqevt 提取码 avet`)
    (
        "://",
        LazyPattern(
            r"https?://[^\s/]+/(?:[^\s?#]*/)?(?=[\w-]*[0-9A-Z])([A-Za-z0-9_-]{6,64})[ \t]*[,，;；]?[ \t]*"
            r"(?:提取码|提取碼|访问码|訪問碼|密码|密碼|pwd|password|access code)[ \t]*[:：]?[ \t]*[A-Za-z0-9]{4}"
        ),
        1,
    ),
    # an Authorization header, whatever its scheme: `Authorization: GenieKey X`, `"authorization": "Basic X"`
    (
        "uthorization",
        LazyPattern(r"(?i)\bauthorization['\"]?\s*[:=]\s*['\"]?(?:[A-Za-z][\w-]{1,20}\s+)?([^\s'\",;]{8,512})"),
        1,
    ),
    (
        "-password",
        LazyPattern(r"(?i)\bsecurity\s+add-(?:generic|internet)-password\b[^\n]*?\s-w\s+(['\"]?)([^\s'\"]{4,128})\1"),
        2,
    ),
    ("storepasswd", LazyPattern(r"(?i)-storepasswd\s+(['\"]?)([^\s'\"]{4,128})\1"), 2),
    ("http-basic", LazyPattern(r"(?i)\bhttp-basic\.\S+\s+\S+\s+(['\"]?)([^\s'\"]{4,128})\1"), 2),
    (
        "@",
        LazyPattern(r"(?i)\b(?:sqlplus|disql|isql|obclient|rman|expdp|impdp|exp|imp)\s+\S*?\w/([^\s@/'\"]{4,128})@"),
        1,
    ),
    ("cipher", LazyPattern(r"(?i)\bpassword\s+(?:irreversible-cipher|cipher|simple|encrypted)\s+(\S{6,128})"), 1),
)
_APP_PASSWORD = LazyPattern(r"(?<![\w-])[a-z]{4}-[a-z]{4}-[a-z]{4}-[a-z]{4}(?![\w-])")  # Apple's app-specific ones


def values_in_place(text: str) -> list[Span]:
    """`echo 'X' | docker login --password-stdin`, `user:X@tcp(host)`, `net use … /user:NAME X` (or `X /user:NAME`),
    `ConvertTo-SecureString "X"`, “X 是您的验证码”, 凭 X 取件: the value where the command or message puts it."""
    spans = []
    for screen, pattern, group in _IN_PLACE:
        if screen in text:
            spans += [Span(*m.span(group), "password", 263) for m in pattern.finditer(text)]
    return spans


CREDENTIAL_WORD = Screened(
    r"(?i)\b(?:pass(?:word|wd|code|phrase)s?|pwd|log\s*in|sign\s*in|wi-?fi|wlan|unlock|credentials?)\b"
    r"|密码|密碼|口令|登录|登陆|管理员|后台|解锁"
)
_TYPED_TOKEN = LazyPattern(r"(?<![\w@/.:=-])[^\s'\"`“”‘’「」『』，。；：、（）()\[\]<>|]{8,64}")
_PARAGRAPH = LazyPattern(r"(?:[^\n]|\n(?![ \t]*\n))+")
NEAR = 250  # how far from a credential word a typed value is taken for its value (a note's own paragraph)


def typed_near_words(text: str) -> list[Span]:
    """A value typed as passwords are (both cases, digits, a symbol inside) in a paragraph that speaks of a
    password or a login, before or after the word: "Roshai#5446KYT# 这个是公司 VPN 的新密码", "…remember:
    Xiatudex88-tam. It's for the web UI", a voice memo's "the wifi is uh Rosfenqin7295=fal yeah"."""
    if not CREDENTIAL_WORD.occurs(text):
        return []
    spans = []
    lowered = "_" in text and " " not in text and not any(c.isupper() for c in text)  # a predicate as stored
    for paragraph in _PARAGRAPH.finditer(text):
        words = [m.start() + paragraph.start() for m in CREDENTIAL_WORD.pattern.finditer(paragraph.group())]
        if not words:
            continue
        for m in _TYPED_TOKEN.finditer(paragraph.group()):
            value = m.group().rstrip(".,;:?")
            a = paragraph.start() + m.start()
            if "=" in value[1:] and not is_value(value.partition("=")[2], 1):
                continue  # `spring.datasource.password=${SPRING_DATASOURCE_PASSWORD}`: a key and a reference
            if _near(words, a) and _typed_by_hand(value, lowered):
                spans.append(Span(a, a + len(value), "password", 264))
    return spans


# a password made as people make them, a word and digits (`letmein398`, `Guoqiang@1991`, `hplc@906`), said beside a
# word of logging in on its line: a product and its number (`rtx4090`, `ubuntu2204`) is not said so
_HUMAN_WORD = Screened(  # (read by RE2 first: most texts name none of these)
    r"(?i)\b(?:pass(?:word|wd|code)?s?|pwd|pw|log\s*in|logs?\s+(?:in(?:to)?|on)|logged\s+in(?:to)?|sign\s*in"
    r"|opens?\s+with|unlocks?(?:\s+with)?|capital\s+first|first\s+letter\s+capital)\b"
    r"|密码|密碼|口令|登录|登陆|開機|开机|解锁|管理页面|管理后台|前面大写|首字母大写"
    r"|(?:电脑|主机|笔记本|工作站|服务器|路由器|打印机|账号|帳號)(?:的)?(?:就)?是"
)
_HUMAN_PASSWORD = LazyPattern(
    r"(?<![A-Za-z0-9_@#/.:=+-])([A-Za-z][a-z]{2,15}[@#!._*-]?\d{2,8}[!@#$%&*?]?)(?![A-Za-z0-9_@/-])"
)
_PRODUCT_WORDS = frozenset(
    "python py ubuntu debian centos rhel win windows macos ios android node java jdk jre gcc clang utf sha md rtx gtx "
    "gpt iphone ipad pixel galaxy room port vlan eth wlan ens enp eno sda nvme gen rev build level step day page item "
    "test case job task issue ticket order sku model type mode version http https tls ssl ipv arm amd intel xeon "
    "ryzen core cuda mysql postgres postgresql redis mongo php net dotnet vue react angular hevc avc aac raid cpu gpu "
    "ram ddr pcie usb hdmi lte iso rfc ieee cve cwe error err code status line col row year team group vm pod host "
    "server srv db app api web ui dev prod stage staging qa uat lab chapter section table figure fig slide lecture "
    "week unit lesson class grade floor building block base".split()  # (`base64`)
)
HUMAN_NEAR = 48  # characters between the word and the value, on one line


def human_passwords(text: str) -> list[Span]:
    """`…still opens with letmein398`, "so it's Guoqiang@1991, capital first letter", 服务器密码…是coffee123!"""
    if not _HUMAN_WORD.occurs(text):
        return []
    spans = []
    for line in _LINE.finditer(text):
        words = [m.span() for m in _HUMAN_WORD.pattern.finditer(line.group())]
        if not words:
            continue
        for m in _HUMAN_PASSWORD.finditer(line.group()):
            value = m.group(1)
            letters = re.match(r"[A-Za-z]+", value).group().lower()  # type: ignore[union-attr]
            if letters in _PRODUCT_WORDS or _NAME_VERSION.fullmatch(value):
                continue
            if any(m.start() - HUMAN_NEAR <= b and a <= m.end() + HUMAN_NEAR for a, b in words):
                spans.append(Span(line.start() + m.start(1), line.start() + m.end(1), "password", 265))
    return spans


_LINE = LazyPattern(r"[^\n]+")
# a link that is the key itself: an invite's or a share's code (`testflight.apple.com/join/HPooWzU4`), or a link said
# to let whoever holds it in ("Overleaf edit link (anyone holding it can edit): https://www.overleaf.com/72393…")
_SHARE_PATH = LazyPattern(  # (a link written without its scheme too: `testflight.apple.com/join/y24XWCyk`)
    r"(?:https?://)?(?<![\w.-])[\w-]+(?:\.[\w-]+)+/(?:[^\s?#]*/)?(?:join|invite|invites|share|shared|s|sh)/"
    r"([A-Za-z0-9_-]{6,64})(?![\w-])"
)
_LINK_SAID = LazyPattern(
    r"(?i)\b(?:edit(?:ing)?\s+link|invite\s+link|share\s+link|anyone\s+(?:with|holding|who\s+has)\s+(?:the|this|it)"
    r"|can\s+edit|edit\s+here|read-only\s+link|don'?t\s+(?:post|share)|not\s+public)\b"
    r"|邀请链接|分享链接|编辑链接|可编辑|别外传|不要外传|勿外传|别公开|不要公开"
)
_LINK_TAIL = LazyPattern(r"https?://[^\s/]+/(?:[^\s?#]*/)?([A-Za-z0-9_-]{12,64})(?=[\s)\]>\"'，。]|$)")


def capability_links(text: str) -> list[Span]:
    """The code of an invite or share link, and the last part of a link said to let its holder edit or join."""
    spans = [Span(*m.span(1), "url secret", 265) for m in _SHARE_PATH.finditer(text) if made_code(m.group(1))]
    for line in _LINE.finditer(text):
        if _LINK_SAID.search(line.group()):
            at = line.start()
            found = _LINK_TAIL.finditer(line.group())
            spans += [Span(at + m.start(1), at + m.end(1), "url secret", 265) for m in found if made_code(m.group(1))]
    return spans


_NAME_VERSION = LazyPattern(r"[A-Za-z][\w.-]*?[-_@ ]v?\d+(?:\.\d+)+[\w.+-]*")  # `Python-3.11.4`, `node@20.1.0`
_EMAILISH = LazyPattern(r"\w@[\w-]+\.[A-Za-z]{2,}$")
_PATH_LIKE = LazyPattern(r"[/\\]|%[0-9A-Fa-f]{2}|\.html?\b")  # a path, a link, a URL's encoded name


def _near(words: list[int], at: int) -> bool:
    """Whether a credential word (`words`: their places, in order) is within NEAR characters of `at`."""
    i = bisect.bisect_left(words, at - NEAR)
    return i < len(words) and words[i] <= at + NEAR


def _typed_by_hand(value: str, lowered: bool = False) -> bool:
    """Typed as people make a password: `typed`, or all four kinds of character (`Roshai#5446KYT#`, words and
    digits that `typed` reads as an identifier), not a name with its version, an address or a link. `lowered`:
    the text was lower-cased by its store (a graph's predicate): letters, digits and a symbol inside will do."""
    if typed(value):
        return True
    tests = (str.isalpha, str.isdigit, _symbol) if lowered else (str.isupper, str.islower, str.isdigit, _symbol)
    inside = any(_symbol(c) for c in value[1:-1])  # (lower-cased: its symbol must be inside, as `typed` asks)
    kinds = all(any(test(c) for c in value) for test in tests) and (inside or not lowered)
    if not kinds or _NAME_VERSION.fullmatch(value) or _EMAILISH.search(value) or _PATH_LIKE.search(value):
        return False
    if all(c.isalnum() or c in "-_." for c in value):  # only a slug's or an id's joins (`m-c296-VPN`): a long
        return any(_letters_and_digits(part) for part in re.split(r"[-_.]+", value))  # mixed part makes it typed
    return True


def _letters_and_digits(part: str) -> bool:
    return len(part) >= 6 and any(c.isdigit() for c in part) and any(c.isalpha() for c in part)


def _symbol(c: str) -> bool:
    return not c.isalnum()


# a value said to be elsewhere in the note: "the LUKS passphrase is at the very bottom of this note", "密码写在最后"
_POINTER = LazyPattern(
    r"(?i)\b(?:is|are|'s)\s+(?:at\s+the\s+(?:very\s+)?(?:bottom|end)|(?:written\s+)?below)\b"
    r"|(?:写|放|记)?在(?:这条|本条|笔记|文)?(?:的)?(?:最后|末尾|最下面|最底下|文末)|见(?:文末|下方|最后)"
)
_LAST_LINE_LEAD = " \t→->•*:：=⟶⇒»"


_NEXT_LINE = LazyPattern(r"(?i)(?:在|写在|见)下一?行|(?:on|in)\s+the\s+(?:next|following)\s+line|(?:is|are)\s+below:?$")
_NEXT_VALUE = LazyPattern(r"[^\n]*\n(?:[ \t]*\n)*[ \t]*([^\s]{4,64})[ \t]*(?=\n|$)")


def pointed_value(text: str) -> list[Span]:
    """The value a credential is said to be at: the note's last line ("the passphrase is at the very bottom of this
    note": a short line, its arrow or bullet left out, after the line that points to it), or the next line with
    anything on it ("密码在下一行")."""
    spans = []
    for pointer in _NEXT_LINE.finditer(text):
        if (value := _NEXT_VALUE.match(text, pointer.end())) is not None:
            spans.append(Span(*value.span(1), "password", 264))
    end = len(text.rstrip())
    start = text.rfind("\n", 0, end) + 1
    pointer = _POINTER.search(text)
    start += len(text[start:end]) - len(text[start:end].lstrip(_LAST_LINE_LEAD))
    if pointer is None or pointer.end() > start or not 4 <= end - start <= 64:
        return spans
    return [*spans, Span(start, end, "password", 264)]


# a value on a line of its own, then a line that points up at it: "X\n\n^ that one. … the bootstrap token", "↑ 这是密码"
_POINTED_UP = LazyPattern(
    r"(?m)(?<!\S)([^\s]{8,128})\s*(?:\^|↑)(?=\s)|^[ \t]*([^\s]{8,128})[ \t]*\n\s*上面(?:那|这|的)"
)
_POINTED_UP_READ = 240  # how far after the pointer a credential word names what it points at
_POINTED_UP_NAMES = LazyPattern(
    r"(?i)\b(?:tokens?|secrets?|keys?|api[ _-]?keys?|pass(?:word|phrase|code)s?|credentials?)\b"
    r"|密码|令牌|密钥|秘钥|口令"
)


def values_pointed_up(text: str) -> list[Span]:
    """A made value alone on its line that the next line points back at, where that line names a credential."""
    spans = []
    for m in _POINTED_UP.finditer(text):
        value = m.group(m.lastindex or 1)
        named = _POINTED_UP_NAMES.search(text, m.end(), m.end() + _POINTED_UP_READ) is not None
        if named and (made(value) or typed(value) or is_token(value) or _hex_key(value)):
            spans.append(Span(*m.span(m.lastindex or 1), "password", 264))
    return spans


def values_before_words(text: str) -> list[Span]:
    """A value said first and named after: "went with X as the new password", "把 X 作为新的密码"."""
    spans = []
    for m in _VALUE_FIRST.finditer(text):
        group = next(g for g in (1, 2, 3) if m.group(g))
        if _judge("spaced", text, *m.span(group)):
            spans.append(Span(*m.span(group), "password", 263))
    return spans


def login_arguments(text: str) -> list[Span]:
    """Arguments of a login or connect call typed like a password (a host, a user name or a word is not)."""
    spans = []
    for call in _LOGIN_CALL.finditer(text):
        for arg in _QUOTED_ARG.finditer(call.group(1)):
            value = arg.group(1)
            if (
                _mixed(value)
                and _has_digit(value)
                and not re.fullmatch(r"[\w-]+(?:\.[\w-]+)+(?::\d+)?", value)
                and "/" not in value
            ):
                a = call.start(1) + arg.start(1)
                spans.append(Span(a, a + len(value), "password", 263))
    return spans


_PINNED = LazyPattern(r"[\w.-]+@v?\d[\w.+-]*")  # a package at its version: `pkg:pypi/requests@2.32.3`
# `用友 T+：manager/pkNuHYAWW+8`: an account and its password joined by a slash after a system's name and a colon
_TIGHT_PAIR = LazyPattern(r"[:：][ \t]*[A-Za-z][\w.@+-]{1,39}/([^\s/，。；;,)）]{6,64})(?=[\s，。；;,)）]|$)")


def slash_pairs(text: str) -> list[Span]:
    """The password of an `account / password` pair: said of an account (an e-mail, or a login word before it);
    or typed as passwords are, right after a colon (`T+：manager/pkNuHYAWW+8`: no path's part is typed so)."""
    spans = [
        Span(*m.span(1), "password", 262)
        for m in _TIGHT_PAIR.finditer(text)
        if (typed(m.group(1)) or made(m.group(1)) or (_mixed(m.group(1)) and _has_digit(m.group(1))))
        and not _PINNED.fullmatch(m.group(1))
    ]
    for m in _PAIR.finditer(text):
        account, value = m.group(1), m.group(2).rstrip(".,;:").rstrip("'\"”’」")  # (a quoted path's close)
        before = text[max(0, m.start() - 60) : m.start()]
        if not ("@" in account or _ACCOUNT_WORDS.search(before) or typed(value) or made(value)):
            continue  # (a footnote's `ops / k%M9FAcVVqb16V`: typed as a password is, it needs no word before it)
        if is_value(value, 6) and any(not c.isalpha() for c in value) and any(c.isalpha() for c in value):
            spans.append(Span(m.start(2), m.start(2) + len(value), "password", 262))
    return spans


# a number said of a door, a gate, a safe or a lock: `#487427`, `259988#`, "right 91, left 64, right 88", 左转 35
_ACCESS_ZH = (  # (a door said as one: not 门 in 门诊, 部门, 门户)
    "(?:大|房|家|单元|防盗|院|楼|后|前|侧|车库|柜|进|开)门|门(?:口|锁|禁|铃)|锁|"
    "保险箱|保险柜|保險箱|保險櫃|密码箱|车库|門禁|门禁|支付密码|取件码|验证码|動態碼|动态码|快递柜"
)
_ACCESS = Screened(
    r"(?i)\b(?:door|gate|garage|locker|keypad|lockbox|key\s?box|key\s?safe|alarm|padlock|combo|combination|intercom"
    rf"|buzzer|lock|deadbolt)\b|(?<![\w-])safe\b(?!\s+to\b)|{_ACCESS_ZH}",
    rf"(?i)door|gate|garage|lock|keypad|key\W?box|key\W?safe|alarm|combo|combination|intercom|buzzer|safe|{_ACCESS_ZH}",
)
_SENTENCE = LazyPattern(r"[^\n.!?。！？]+")
_ACCESS_NUMBER = LazyPattern(
    r"(?<![\w.:$¥€£/-])[#*]?\d{4,10}[#*]?(?![\w.:/%-]|\s*(?:digits?|chars?|characters?|位|次|天|days?|years?|元|块|ms|px))"
)
_DIALS = LazyPattern(
    r"(?i)(?:(?:left|right|(?<![A-Za-z])[LR]|cw|ccw|左转?|右转?|顺时针|逆时针)\s*(?:to\s*)?\d{1,3}(?:\s*(?:圈|次|times|x))?"
    r"[,，、;\s–—-]*){2,}"
    r"|(?<![\d-])\d{1,2}-\d{1,2}-\d{1,2}(?![\d-])|(?<![\d.,])\d(?: \d){3,9}(?![\d.,])"
)


def access_codes(text: str) -> list[Span]:
    """Numbers in a sentence about a door, a safe or a lock: codes and combinations."""
    spans: list[Span] = []
    if not _ACCESS.search(text):
        return spans
    for sentence in _SENTENCE.finditer(text):
        if not _ACCESS.search(sentence.group()):
            continue
        at = sentence.start()
        for m in _ACCESS_NUMBER.finditer(sentence.group()):
            if not re.fullmatch(r"(?:19|20)\d\d", m.group()):  # a year
                spans.append(Span(at + m.start(), at + m.end(), "code", 261))
        for m in _DIALS.finditer(sentence.group()):
            value = m.group().rstrip(",，、; \t–—-")
            spans.append(Span(at + m.start(), at + m.start() + len(value), "code", 261))
    return spans


def _wifi_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] != ";" and text[end] != "\n":
        end += 2 if text[end] == "\\" else 1
    return min(end, len(text))


_SEPARATOR_ROW = LazyPattern(r"\|?(?:\s*:?-{2,}:?\s*\|)+\s*(?::?-{2,}:?)?\s*")
_INLINE_SEPARATOR = LazyPattern(r"\|\s*:?-{2,}:?\s*\|")
_ROW_BREAK = LazyPattern(r"(?<=\|) (?=\|)")  # "| a | b | | --- |": a table whose line breaks became spaces


def table_values(text: str) -> list[Span]:
    """Cells of a Markdown table in a column whose header says password, token, key, 密码... The header is the
    line above a separator row (leading text and pipes optional); a table flattened onto one line is read too."""
    if "\\n" in text:  # a table inside a JSON string (a tool's output): `\n` is its line break (two characters)
        text = text.replace("\\n", "\n ")
    if _INLINE_SEPARATOR.search(text):
        text = "\n".join(  # (a space becomes a line break: every offset stays)
            _ROW_BREAK.sub("\n", line) if _INLINE_SEPARATOR.search(line) else line for line in text.split("\n")
        )
    spans: list[Span] = []
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    columns: set[int] = set()
    for i, line in enumerate(lines):
        if "|" not in line:
            columns = set()
            continue
        if _SEPARATOR_ROW.fullmatch(line.strip()):
            header = _cells(lines[i - 1]) if i else []
            columns = {j for j, (_, _, cell) in enumerate(header) if _TABLE_HEAD.search(cell) and len(cell) < 40}
            continue
        for j, (a, b, cell) in enumerate(_cells(line)):
            if j in columns and is_value(cell.strip("`\"' "), 4):
                spans.append(Span(starts[i] + a, starts[i] + b, "password", 260))
    return spans


def _cells(line: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of each cell, split at every `|` (a leading `|` makes an empty first cell)."""
    out = []
    start = 0
    for end in [*(i for i, c in enumerate(line) if c == "|"), len(line.rstrip("\n"))]:
        raw = line[start:end]
        lead = len(raw) - len(raw.lstrip())
        cell = raw.strip()
        out.append((start + lead, start + lead + len(cell), cell) if cell else (start, start, ""))
        start = end + 1
    return out
