"""How people mark a note, a page or a section private, read by meaning rather than by exact spelling.

One normaliser (`normalise`: case folded, full-width forms and CJK brackets made ASCII, spaces inside brackets
dropped) and a few shapes over a list of private words (`private`, `私密`, `隐私`, `confidential`, ...):

- a word in brackets of any kind: `[private]`, `(Private)`, `【私密】`, `「私密」`, `[ private ]`, `<private>`, or
  opening a bracketed remark: `(私密，别发到群里)`, `[confidential - HR]`;
- a hashtag or a mention: `#private`, `#私密`, `@private`; a lock emoji (🔒, 🔐);
- a leading label: `private: …`, `PRIVATE - …`, `Private note - …`, `私密：…`, `私密笔记：…`;
- an HTML comment: `<!-- private -->`;
- a phrase said of the note itself, at its start or end or in brackets: "do not publish", "不要公开", "勿外传";
- a section heading that is only a private word (`## Private`, `## 私密`): its section is private;
- frontmatter or metadata: `private: true / "yes" / 1 / on` (also `draft`, `sensitive`, `私密`),
  `visibility: private` (also `可见性: 私密`), `public: false`, `publish: false`, `share: false`, `公开: false`,
  a tag list holding a private word (`tags: [work, private]`);
- a folder named with a private word (`wiki/private/…`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from memwiki.text.screen import Screened

PRIVATE_WORDS = (
    "private",
    "私密",
    "私人",
    "隐私",
    "隱私",
    "保密",
    "机密",
    "機密",
    "秘密",
    "confidential",
    "personal",
    "top secret",
    "secret",
    "internal only",
    "only me",
    "仅自己",
    "仅自己可见",
    "僅自己可見",
    "不公开",
    "不公開",
    "nopublish",
    "no-publish",
    "nowiki",
    "no-wiki",
)
_PHRASES = (
    "just for me",
    "only for me",
    "for my eyes only",
    "not for the wiki",
    "not for wiki",
    "keep off the wiki",
    "keep it off the wiki",
    "keep this off the wiki",
    "off the wiki",
    "not for the site",
    "not for publication",
    "别发出去",
    "不要发出去",
    "别外发",
    "别公开",
    "do not publish",
    "don't publish",
    "do not share",
    "don't share",
    "not for publication",
    "keep private",
    "keep this private",
    "不要公开",
    "请勿公开",
    "勿公开",
    "不要公開",
    "請勿公開",
    "勿外传",
    "不要外传",
    "别外传",
    "不要分享",
    "别分享",
    "请勿分享",
    "勿分享",
    "keep this between us",
    "between you and me",
    "请勿外传",
    "仅自己可见",
    "僅自己可見",
    "仅限本人",
    "不对外",
    "off the record",
    "off-the-record",
    "only me",
    "别发到群里",
    "不要发到群里",
    "别发群里",
    "别转发",
    "不要转发",
    "勿转发",
    "just between us",
    "just between you and me",
)
# who may read it, said as a restriction: 仅家人可见, 只给自己看, family only, owner-only, only my wife
_AUDIENCE = (
    r"(?:仅|僅|只)(?:限|给|給|有|对|對)?(?:自己|本人|我|我们|我們|家人|家里人|家裡人|自家人|夫妻|两人|兩人|爸妈|老婆|老公)"
    r"(?:可见|可見|可看|看|知道|知晓|使用)"
    r"|(?:family|owner|me|us|household)[ -]only|only (?:my )?(?:family|wife|husband|partner|household)"
)
# what must not happen to this note, said of it: （以上内容不要同步到 wiki）, "the above is not to be published"
_NOT_OUT = (
    r"(?:以上|上面|上述|这条|這條|此条|此條|本条|本條|这段|這段|本段|这篇|這篇|本页|本頁|这些|這些)(?:内容|內容|信息|笔记|筆記|记录|記錄)?"
    r"(?:请|請)?(?:不要|别|別|勿|不许|不准|禁止|不能|不可)\s*(?:同步|发布|發布|公开|公開|外传|外傳|上传|上傳|分享|转发|轉發|发出|發出|放到|放进|放進)"
    r"|(?:this|the above)(?: (?:note|entry|page|section|part))?(?: is)? not (?:to be )?(?:published|synced|shared)"
)
_SAYINGS = "|".join(re.escape(p) for p in _PHRASES) + f"|{_AUDIENCE}|{_NOT_OUT}"  # said of the note itself
_BRACKETS = dict(zip("【〔〖「『〈《（［｛】〕〗」』〉》）］｝", "[[[[[<<([{]]]]]>>)]}", strict=True))
_BRACKET = re.compile(f"[{''.join(_BRACKETS)}]")
_WORDS = "|".join(re.escape(w) for w in sorted(PRIVATE_WORDS, key=len, reverse=True))
_LABELS = "private|私密|私人|隐私|隱私|保密|机密|機密|私事|confidential"  # a leading `secret:` is a key, not a marker
_NOUNS = r"note|notes|entry|memo|page|info|only|stuff|thought|笔记|筆記|备注|備註|信息|资料|内容"
_START = r"^(?:\d{1,3}[.)])?\W{0,6}"  # a line's start, past a list item's number or bullet and bold: "- **Private:**"
_MARKED = Screened(
    rf"<!--\s*(?:{_WORDS}|{_SAYINGS})\s*-->"  # an HTML comment
    # in brackets (`[!PRIVATE]` too), or opening them (`(私密，…)`); not a call's arguments: `HMAC(secret, body)`, but
    # Chinese in brackets right after a word: `weekend plan（不公开）`
    rf"|(?:(?<![A-Za-z0-9_])|(?=.\s*[^\x00-\x7f]))[\[(<{{]\s*!?\s*(?:(?:{_WORDS}|{_SAYINGS})\s*[,，;；/、]?\s*){{1,3}}[\])>}}]"
    rf"|(?<![A-Za-z0-9_])[\[(<{{]\s*(?:{_WORDS})\s*[,，;；:：、-][^\])>}}\n]{{0,40}}[\])>}}]"
    rf"|(?:^|\s)(?://|--)\s*(?:{_WORDS})\W{{0,3}}$"  # a code comment's marker at the end: `… // private`
    rf"|(?:^|(?<=[\s,;]))[#@](?:{_WORDS})(?![A-Za-z0-9_-])"  # a hashtag, a mention: `#private`, `#私密` (its spaces
    # after Chinese dropped: `#私密 体检` reads `#私密体检`)
    rf"|{_START}(?:[\w ]{{1,20}},\s*)?(?:{_LABELS})\s*(?:{_NOUNS})?\s*\**\s*(?:[:\-–—|]|$)"  # a leading label, or alone
    rf"|{_START}(?:{_LABELS})\s*[^\w\s]{{1,4}}(?:\s|$)"  # the word between signs: `⚠️ 保密 ⚠️ …`
    r"|[\U0001f512\U0001f510\U0001f92b]"  # a lock or a hush: 🔒 🔐 🤫
    rf"|(?:^|\s):{{3,}}\s*\{{?\s*\.?(?:{_WORDS})(?![\w-])"  # a fenced block of that class: `::: private`
    # said of the note: at its start (maybe after a word: `私事，勿外传：…`), at its end, or in brackets
    rf"|{_START}(?:[^\W\d_]{{1,8}}[,，、]\s*)?(?:{_SAYINGS})|(?:{_SAYINGS})\W{{0,3}}$"
    rf"|[\[(<{{][^\])>}}\n]{{0,12}}(?:{_SAYINGS})[^\])>}}\n]{{0,16}}[\])>}}]",
    f"{_WORDS}|{_LABELS}|{_SAYINGS}|[\U0001f512\U0001f510\U0001f92b]",  # (what each shape holds: RE2 looks first)
    re.MULTILINE,
    group="markers",  # (it reads texts through `normalise`, which no detector reads)
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_TRUE = frozenset({"true", "yes", "y", "1", "on", "是", "对", "private"})
_FALSE = frozenset({"false", "no", "n", "0", "off", "否", "不", "不是"})
_VISIBILITY_KEYS = frozenset(
    {
        "visibility",
        "access",
        "privacy",
        "audience",
        "scope",
        "sharing",
        "status",
        "可见性",
        "可見性",
        "可见范围",
        "权限",
        "sensitivity",
        "classification",
        "confidentiality",
        "密级",
        "敏感度",
    }
)
_PRIVATE_FLAGS = frozenset(
    {
        "private",
        "secret",
        "confidential",
        "hidden",
        "draft",
        "sensitive",
        "私密",
        "隐私",
        "隱私",
        "敏感",
        "草稿",
        "机密",
    }
)
_PUBLIC_FLAGS = frozenset(
    {
        "public",
        "publish",
        "published",
        "publishable",
        "shareable",
        "share",
        "shared",
        "visible",
        "listed",
        "公开",
        "公開",
    }
    | {"发布", "發布", "分享", "共享", "可分享"}
)
_TAG_KEYS = frozenset({"tags", "tag", "labels", "label", "categories", "category", "keywords", "标签", "標籤", "分类"})
_PRIVATE_VALUES = (
    frozenset(PRIVATE_WORDS)
    | {"hidden", "draft", "internal", "restricted", "owner", "me", "仅本人"}
    | {f"{who} only" for who in ("owner", "me", "family", "household", "self", "author")}  # `access: owner-only`
)


_CJK_SPACED = re.compile(r"(?<=[\u4e00-\u9fff])[ \t\u3000]+(?=[\u4e00-\u9fff:：])")


def normalise(text: str) -> str:
    """`text` case-folded, with full-width forms and CJK brackets as their ASCII forms, and no spaces between
    Chinese characters (`私 密 ：` typed with a space after each character)."""
    if text.isascii():  # (NFKC leaves ASCII as it is, and case-folds it as `lower` does)
        return text.lower()
    text = _CJK_SPACED.sub("", text) if " " in text or "\t" in text or "\u3000" in text else text
    if _BRACKET.search(text):  # (a search and a few replacements: `translate` reads a long text slowly)
        text = _BRACKET.sub(lambda m: _BRACKETS[m.group()], text)
    return unicodedata.normalize("NFKC", text).casefold()


def marked(text: str) -> bool:
    """Whether `text` carries a private marker in any of the shapes above."""
    return bool(text) and marked_form(normalise(text))


def marked_form(normalised: str) -> bool:
    """`marked` for a text already through `normalise`."""
    return _MARKED.search(normalised) is not None


def only_marker(line: str) -> bool:
    """Whether `line` is a private marker and nothing else: it marks what follows it."""
    rest = _MARKED.pattern.sub("", normalise(line)).strip(" \t-–—:：|*_")
    return marked(line) and not rest


_SHORT_TITLE = 12  # characters: a longer Chinese heading is about something else


def private_heading(line: str) -> int:
    """The level of a heading that opens a private section (`## Private`, `### 私密 notes`), else 0."""
    m = _HEADING.match(line.strip())
    if m is None:
        return 0
    title = normalise(m.group(2)).strip(" :：-—[]()<>#*_")
    words = [w.removesuffix("s") for w in title.split()]  # ("## Secrets" as "## Secret")
    # a Chinese title is one run (`不公开的部分`, `个人隐私`): a private word anywhere in a short one
    chinese = len(title) <= _SHORT_TITLE and any(w in title for w in PRIVATE_WORDS if not w.isascii())
    english = any(w in PRIVATE_WORDS for w in words[:2])  # `## Private notes`, `## My secrets`
    return len(m.group(1)) if title and (title in PRIVATE_WORDS or english or chinese or marked(m.group(2))) else 0


def heading_level(line: str) -> int:
    m = _HEADING.match(line.strip())
    return len(m.group(1)) if m else 0


def without_private_sections(text: str) -> tuple[str, int]:
    """`text` without its private sections (a private heading to the next heading of its level or higher, not
    counting `#` lines in a fence: a shell comment does not end a section), and how many lines went. A private
    heading counts even where a fence seems open: a ``` typed mid-line or never closed leaves that guess wrong."""
    out, dropped, level = [], 0, 0
    fence = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        here = 0 if fence else heading_level(line)
        if level and here and here <= level:
            level = 0
        if not level and (opened := private_heading(line)):  # in a fence too: a stray ``` must not hide it
            level, fence = opened, False
        if level:
            dropped += 1
        else:
            out.append(line)
    return "".join(out), dropped


def truthy(value: object) -> bool | None:
    """A flag's value as people write it: True, False, or None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    if isinstance(value, str):
        v = normalise(value).strip()
        return True if v in _TRUE else False if v in _FALSE else None
    return None


def flagged(meta: Mapping[object, object]) -> bool:
    """Whether a mapping (frontmatter, a memory's meta, an entity's properties) says its record is private."""
    for key, value in meta.items():
        k = normalise(str(key)).strip()
        if k in _PRIVATE_FLAGS and truthy(value):
            return True
        if k in _PUBLIC_FLAGS and truthy(value) is False:
            return True
        if k in _VISIBILITY_KEYS and isinstance(value, str) and _words(value) in _PRIVATE_VALUES:
            return True
        if k in _TAG_KEYS and any(normalise(t).strip(" #") in PRIVATE_WORDS for t in _tags(value)):
            return True  # `tags: [work, private]`
    return False


def _words(value: str) -> str:
    """A value's words as a marker list holds them: `only-me`, `Only_Me` as `only me`."""
    return " ".join(re.split(r"[\s_-]+", normalise(value).strip()))


def _tags(value: object) -> list[str]:
    """A tag list as written: a list, or one string of tags separated by commas or spaces."""
    if isinstance(value, str):
        return re.split(r"[,，;\s]+", value)
    if isinstance(value, list | tuple | set):
        return [str(v) for v in value]
    return []


def private_path(path: str) -> bool:
    """A path with a folder named by a private word (`private/`, `私密/`)."""
    return any(normalise(part) in PRIVATE_WORDS for part in path.replace("\\", "/").split("/")[:-1])
