"""CJK-aware lexical tokens, shared by every lexical index (L2 hybrid ranking, L4 session search).

Other text (Latin, Greek, Cyrillic …): lower-cased words and numbers, combining marks removed (café →
cafe), with a light English suffix stemmer and stop words dropped.
CJK text (Han, kana, hangul): each run becomes its character bigrams, and a one-character run
becomes the character itself, so a two-character query such as 跳舞 matches its message.
On the query side (`stop_words=True`) a CJK bigram holding a function character (STOP_CHARS: 的, 了, 吗,
什么, 哪, 我 …) is dropped, as English stop words are: in a question they are scaffolding, not content.
The index side (`fts_text`) also holds each CJK character alone, so a one-character query (猫) matches.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Bump whenever `fts_text` would index a text differently: lexical indexes and session history built by
# another version re-index themselves when opened (they keep it in SQLite's `user_version`).
TOKENIZER_VERSION = 4  # 4: combining marks removed before stemming (café, cafe → caf)

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

# Chinese function characters: particles, pronouns, question words, the copula, the common measure word.
# Bigrams holding one ("是什", "什么", "的宠", "在哪") say nothing about a question's topic. Measured on the
# recall benchmark's dev sets (scripts/bench_recall.py; the data is kept outside the repository): zh_recall
# hit@5 0.978 -> 1.000, MADial recall@5 +0.01, LoCoMo unchanged. Characters that also start content words often
# (地 in 地址, 得 in 获得) are left out.
STOP_CHARS = frozenset("的了吗呢吧啊呀嘛么什哪怎是这那我你他她它们个在有")


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


def tokens(text: str, *, stop_words: bool = True, unigrams: bool = False, cjk: bool = True) -> list[str]:
    """Lexical tokens of `text` in order (CJK bigrams, stemmed Latin words).

    `stop_words`: drop English stop words and CJK tokens holding a STOP_CHARS character (query side).
    `unigrams`: also give every character of a CJK run of two or more (index side, see `fts_text`).
    `cjk`: give CJK tokens at all (False: only the other words, the same as they come with it).
    """
    out: list[str] = []
    for match in _TOKEN_RE.finditer(unicodedata.normalize("NFKC", text).lower()):
        run = match.group(0)
        if _CJK_RE.match(run):
            if not cjk:
                continue
            grams = [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
            if unigrams and len(run) > 1:
                grams += list(run)
            if stop_words:
                grams = [g for g in grams if not STOP_CHARS.intersection(g)]
            out.extend(grams)
        elif not (stop_words and run in STOP_WORDS):
            out.append(_latin(run.replace("’", "'").split("'")[0]))
    return out


@functools.lru_cache(maxsize=65536)
def _latin(word: str) -> str:
    """A word's token: its combining marks (U+0300-U+036F, in any script) removed, then stemmed, so that café
    and cafe, naïve and naive meet; the site's JS does the same."""
    if not word.isascii():
        bare = "".join(c for c in unicodedata.normalize("NFD", word) if not "\u0300" <= c <= "\u036f")
        word = unicodedata.normalize("NFC", bare)
    return _stem(word)


def fts_text(text: str) -> str:
    """`text` as space-joined tokens, ready to store in an FTS5 table with the unicode61 tokenizer.

    CJK runs give their bigrams and their single characters: a multi-character query asks for bigrams
    only (see `tokens`), a one-character query (猫) for the character, and both find their text.
    """
    return " ".join(tokens(text, stop_words=False, unigrams=True))


def coverage(query: str, text: str) -> float:
    """Share of the query's informative tokens (stop words and stop characters left out) found in `text`.

    0.0 when the query has no tokens. Used to keep a hit that matches the query lexically even when its
    cosine is low (see `memwiki.recall.cascade.RecallConfig.min_coverage`).
    """
    wanted = set(tokens(query)) or set(tokens(query, stop_words=False))
    if not wanted:
        return 0.0
    have = set(tokens(text, stop_words=False, unigrams=True))
    return len(wanted & have) / len(wanted)


def fts_query(text: str, *, mode: str = "AND") -> str:
    """An FTS5 MATCH expression for `text`: its tokens quoted (so no FTS syntax leaks in) and joined.

    Returns "" when `text` has no tokens.
    """
    toks = list(dict.fromkeys(tokens(text)))
    if not toks:
        toks = list(dict.fromkeys(tokens(text, stop_words=False)))
    return f" {mode} ".join('"' + t.replace('"', '""') + '"' for t in toks)
