"""Where a credential's value ends, and whether it is a value at all.

A value is read to its natural end: a quoted value to its closing quote (an escaped `\\"` included), a bare one
to white space, a closing quote or CJK punctuation. `!`, `;`, `,`, `#` and brackets inside a password are part of
it; only a sentence's `.,;:` right before a space or the end, and a bracket closing what the value never opened,
are left out.
"""

from __future__ import annotations

import re

from memwiki.text.screen import LazyPattern

QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "「": "」", "『": "』", "«": "»"}
_STOP = frozenset("\"'`“”‘’「」『』«»，。；、！？：（）【】《》\u3000")
_TRAILING = ".,;:"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
_ESCAPED_QUOTE = LazyPattern(r"\\+[\"']")
MAX_VALUE = 400  # a value longer than this is cut there (the rest is redacted with it)

# words that describe a credential rather than being one ("secret: optional", "password is required")
NOT_VALUES = frozenset(
    """optional required none null nil true false yes no empty unset set hidden redacted masked placeholder
    example sample dummy test xxx tbd todo n/a na unknown same wrong correct incorrect invalid valid expired
    missing changed needed strong weak short long blank default see below above here there it this that same
    enabled disabled on off ok fine stored saved reset rotated unchanged secret password token key the a an
    your my our their his her its in at for from with via by of to and or not never always also only
    string str int integer bool boolean number any object bytes char
    kept written printed noted listed shared managed synced located taped stuck files compat
    plain plaintext hashed encrypted argon2 argon2id argon2i bcrypt scrypt pbkdf2 sha1 sha256 sha512 md5""".split()
)
_PLACEHOLDER = LazyPattern(
    r"^(?:\$\{.*|\$\(.*|\{\{.*|<[A-Za-z_ -]*>?|%\(?\w*\)?s|\*{3,}|x{3,}|X{3,}|\.{3,}|…+|•+|"
    # a variable (`$HOME`, `$db_pass`), not a password that starts with `$` (`$itIyV8hPSq2M`: digits and both cases)
    r"\$(?!(?-i:(?=[A-Za-z]*[0-9])(?=[A-Z0-9]*[a-z])(?=[a-z0-9]*[A-Z])))[A-Z_][A-Z0-9_]*|"
    r"\[[^\]]*\]|your[-_ ]?\w*|changeme|change[-_]me|redacted.*"
    r"|[\w.-]{0,12}?(?:x{6,}|\*{6,}|0{8,})"  # a format with its value blanked: `sk-xxxxxxxx`, `AKIA********`
    r"|[\w/+=.-]*EXAMPLE(?:KEY)?"  # a provider's documented sample: `AKIAIOSFODNN7EXAMPLE`
    r"|(?-i:[A-Z]+(?:_[A-Z]+)+)"  # a variable's name in its place: `AUTH_CODE`, `SPRING_DATASOURCE_PASSWORD`
    r"|(?-i:[A-Z0-9_]*(?:SECRET|TOKEN|KEY|CODE|PASSWORD|VALUE)[A-Z0-9_]*)(?:&\S*)?"  # a blank named so: `BASE32SECRET`
    r"|//\S*"  # a link's rest after its scheme's colon (`otpauth://…`): no value follows a scheme
    r"|(?-i:[a-z]+(?:_[a-z]+)*_(?:secret|password|token|key)(?:_[a-z]+)+)"  # a setting's name: `client_secret_basic`
    r"|[^<>\s]*<[A-Za-z_ -]+>.*|\{[A-Za-z_]\w*\}.*"  # a template's named blank inside: `<user>:<password>@<host>`
    # code that fetches the value at run time: `os.environ['X']`, `getpass.getpass()`, `process.env.X`
    r"|(?:os\.(?:environ|getenv)|getpass|process\.env|system\.getenv|deno\.env|import\.meta\.env|env\(|env\[|input\()"
    r".*"
    r"|密码|口令|密钥|用户名|账号|帐号|你的密码|您的密码|新密码|旧密码)$",
    re.IGNORECASE,
)


# numbers and keys that documentation prints as examples (the IBAN registry's and Wikipedia's, card networks' test
# cards): a reader needs them as they are, and they name nobody
_DOCUMENTED = frozenset(
    """DE89370400440532013000 GB82WEST12345698765432 GB29NWBK60161331926819 FR1420041010050500013M02606
    NL91ABNA0417164300 CH9300762011623852957 4242424242424242 4111111111111111 5555555555554444 378282246310005
    4000056655665556 5105105105105100 6011111111111117 0000000218250097""".split()  # (ORCID's Josiah Carberry)
)


def documented_example(value: str) -> bool:
    """A documentation example, however it is grouped (`DE89 3704 0044 0532 0130 00`, `4242 4242 4242 4242`)."""
    return re.sub(r"[\s-]", "", value).upper() in _DOCUMENTED


def value_span(text: str, start: int, phrase: bool = False) -> tuple[int, int]:
    """The value that starts at `start`: (start, end) without its quotes; `phrase`: an unquoted value runs to the
    end of its clause, spaces included (a passphrase, a seed phrase)."""
    n = len(text)
    if start >= n:
        return start, start
    escaped = _ESCAPED_QUOTE.match(text, start)  # `\"X\"`, `\\\"X\\\"`: a quote escaped once or more
    if escaped is not None:
        quote = escaped.group()
        end = text.find(quote, escaped.end(), escaped.end() + MAX_VALUE)
        return escaped.end(), end if end > 0 else _bare_end(text, escaped.end())
    if text.startswith(("**", "__"), start):  # Markdown bold: `pass **juniper11=rocket**`
        end = text.find(text[start : start + 2], start + 2, start + 2 + MAX_VALUE)
        if end > start + 2:
            return start + 2, end
    closer = QUOTES.get(text[start])
    if closer is not None:
        end = start + 1
        while end < n and end - start < MAX_VALUE and text[end] != closer and text[end] != "\n":
            end += 2 if text[end] == "\\" and closer == '"' else 1
        return start + 1, min(end, n)
    if phrase:
        return start, _phrase_end(text, start)
    return start, _bare_end(text, start)


def _bare_end(text: str, start: int) -> int:
    n = len(text)
    end = start
    limit = min(n, start + MAX_VALUE)
    while end < limit:
        c = text[end]
        if text.startswith("\\\n", end):  # a shell line continuation: the value goes on
            end += 2
            continue
        if c.isspace() or c in _STOP or _cjk(c) or text.startswith('\\"', end) or text.startswith("\\n", end):
            break
        end += 1
    value = text[start:end]
    while value and (value[-1] in _TRAILING or _unopened(value)):
        value = value[:-1]
    return start + len(value)


def _cjk(c: str) -> bool:
    """A CJK character or full-width form: a typed password is ASCII, so a value ends where Chinese resumes."""
    return "\u2e80" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff" or "\uff00" <= c <= "\uffef"


def _unopened(value: str) -> bool:
    opener = _CLOSERS.get(value[-1])
    return opener is not None and value.count(opener) < value.count(value[-1])


def _phrase_end(text: str, start: int) -> int:
    end = start
    limit = min(len(text), start + MAX_VALUE)
    while (
        end < limit
        and text[end] not in "\n。；，,;"
        and not (text[end] == "." and text[end + 1 : end + 2] in ("", " "))
    ):
        end += 1
    while end > start and text[end - 1] in " \t" + _TRAILING:
        end -= 1
    return end


def made_code(value: str) -> bool:
    """Letters with digits, or letters of both cases: a made code, not a word or a slug (`pricing`, `token`)."""
    letters = [c for c in value if c.isalpha()]
    mixed = any(c.isupper() for c in letters) and any(c.islower() for c in letters)
    return bool(letters) and (mixed or any(c.isdigit() for c in value))


def is_value(value: str, min_len: int = 4) -> bool:
    """A plausible credential: long enough, not a describing word, not a placeholder."""
    v = value.strip()
    if len(v) < min_len or v.casefold() in NOT_VALUES or _PLACEHOLDER.match(v):
        return False
    return not v.startswith("[redacted")


def is_token(value: str, min_len: int = 8) -> bool:
    """A value after a weak word (`key`, `token`, `code`): it must look made, not written (a digit, or mixed case,
    or a symbol inside), so `key: enter` and `token: expired` stay."""
    if not is_value(value, min_len):
        return False
    digits = any(c.isdigit() for c in value)
    letters = any(c.isalpha() for c in value)
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return (digits and letters and len(value) >= 10) or (mixed and len(value) >= 16)
