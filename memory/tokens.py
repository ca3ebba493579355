"""CJK-aware lexical tokens, shared by every lexical index (L2 hybrid ranking, L4 session search).

Latin text: lower-cased words and numbers, with a light English suffix stemmer and stop words dropped.
CJK text (Han, kana, hangul): each run becomes its character bigrams, and a one-character run
becomes the character itself, so a two-character query such as 跳舞 matches its message.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_CJK = (
    r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    r"\U00020000-\U0002ebef"
)
_TOKEN_RE = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’][a-z]+)?", re.UNICODE)
_CJK_RE = re.compile(rf"[{_CJK}]")

STOP_WORDS = frozenset(
    """a an and are as at be been but by did do does for from had has have he her hers him his how i
    if in into is it its me my of on or our she so than that the their them then there these they this
    to was we were what when where which who whom why will with would you your yours""".split()
)


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A light English stemmer, so that use / uses / used and dance / dancing / danced meet.

    Plurals (-ies, -es after a sibilant, -s), then -ing / -ed (undoubling a final consonant),
    then a final silent -e. No dictionary: robust, and the same on the index and the query side.
    """
    if len(word) <= 2 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("ses", "xes", "zes", "ches", "shes")) and len(word) > 4:
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def is_cjk(text: str) -> bool:
    """True when `text` holds at least one CJK character."""
    return bool(_CJK_RE.search(text))


def tokens(text: str, *, stop_words: bool = True) -> list[str]:
    """Lexical tokens of `text` in order (CJK bigrams, stemmed Latin words)."""
    out: list[str] = []
    for match in _TOKEN_RE.finditer(unicodedata.normalize("NFKC", text).lower()):
        run = match.group(0)
        if _CJK_RE.match(run):
            if len(run) == 1:
                out.append(run)
            else:
                out.extend(run[i : i + 2] for i in range(len(run) - 1))
        elif not (stop_words and run in STOP_WORDS):
            out.append(_stem(run.replace("’", "'").split("'")[0]))
    return out


def fts_text(text: str) -> str:
    """`text` as space-joined tokens, ready to store in an FTS5 table with the unicode61 tokenizer."""
    return " ".join(tokens(text, stop_words=False))


def fts_query(text: str, *, mode: str = "AND") -> str:
    """An FTS5 MATCH expression for `text`: its tokens quoted (so no FTS syntax leaks in) and joined.

    Returns "" when `text` has no tokens.
    """
    toks = list(dict.fromkeys(tokens(text)))
    if not toks:
        toks = list(dict.fromkeys(tokens(text, stop_words=False)))
    return f" {mode} ".join('"' + t.replace('"', '""') + '"' for t in toks)
