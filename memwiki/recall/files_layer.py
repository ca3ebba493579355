"""The files layer of recall (the wiki's pages with the facts of the entities they name, then the graph's other
entities: `memwiki.recall.entity_pages.recall_pages`), kept between processes so that a recall does not make it again.

Kept, a recall walks the wiki folder with stat, reads what is kept once and ranks, instead of parsing every page,
indexing every text's words and selecting every vector again (`scripts/bench_recall_process.py` measures it). The hits
are the same, in the same order, with the same scores (tests/test_files_index.py).

One SQLite file (`<store>/vectors/files_layer.sqlite3`, beside the text vectors: nothing in it that cannot be made
again) holds the layer as of one state of the wiki folder and the graph:
- `files`: each wiki page as parsed, by its path and its file's stat (size, mtime, ctime, inode): a page whose stat
  is unchanged is not read again. A stat taken less than `RACY_NS` after the file changed is not trusted (a second
  change within the same tick of the file system's clock could leave the stat as it was, as git's index knows):
  that page is read again by the next process. The graph's SQLite file (and its `-wal`) is known by its stat too;
  its entity pages are kept in `meta`.
- `pages` and `texts`: the layer in recall's order, each page's provenance and the text it is ranked by
  (`memwiki.recall.cascade.page_text`, by the text's key).
- the words of the texts in an FTS5 index (`memwiki.text.lexical`), one row per page (a text's key and its occurrence)
  and no other: bm25's figures (rows, lengths, document frequencies) are those of the throw-away index of the same
  texts, and so are its scores; ties are broken by page position, as the throw-away index breaks them by id.
- in `meta`, the pages' vectors as one float32 matrix (read in one go), and the state all this was made for: a
  digest of every page's path and stat, the graph's stat, the embedder, the tokenizer, how much of a page is ranked
  and `FORMAT`. A long-lived process (the MCP server) keeps the last state's matrix and reads it again only when the
  state changed.

`FilesIndex.read` reads a state in one read transaction: one state for the whole ranking, whoever writes meanwhile.
When the kept state is not the one it finds on disk, the process brings the file to it in one write transaction
(BEGIN IMMEDIATE), and ranks in it: only the pages whose stat changed are read again, the graph only when its file
changed, and the words and vectors of texts already kept are reused (those of new texts are made before the write
lock is taken). A file that cannot be read is set aside (`<name>.damaged-<time>`) and made anew; where none can be
kept (a read-only folder, a full disk, a lock held too long) the layer is kept in this process's memory, by the
same code.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memwiki.common.textio import set_aside
from memwiki.errors import InputFormatError
from memwiki.layers.semantic.passages import MAX_EMBED_BYTES
from memwiki.layers.wiki import page_files, read_page
from memwiki.recall.cascade import RANKED_CHARS, FilePage, page_text
from memwiki.recall.entity_pages import with_entities
from memwiki.source import WikiPage
from memwiki.store.layout import FILES_LAYER
from memwiki.text.lexical import LexicalIndex
from memwiki.text.tokens import TOKENIZER_VERSION
from memwiki.text.vectors import TextVectors, text_key

log = logging.getLogger(__name__)
T = TypeVar("T")

FILE_NAME = FILES_LAYER
FORMAT = 1  # bump when the tables change, or what a page's text is made by (wiki.parse_page, entity_pages, page_text)
RACY_NS = 2_000_000_000  # a stat taken this soon after its file changed is not trusted (see the module's docstring)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, stat TEXT NOT NULL, page TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (
    pos INTEGER PRIMARY KEY, lex_id TEXT NOT NULL, key BLOB NOT NULL,
    path TEXT NOT NULL, title TEXT NOT NULL, tags TEXT NOT NULL, modified TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS texts (key BLOB PRIMARY KEY, text TEXT NOT NULL);
"""


@dataclass(frozen=True)
class FilesSources:
    """What the files layer is made of: a folder of Markdown pages, and a knowledge graph (its SQLite file, whose
    stat tells when it changed, and how to read its entity pages: `memwiki.recall.entity_pages.entity_pages`)."""

    wiki: Path | None
    graph: Path | None
    entity_pages: Callable[[], Sequence[WikiPage]]


@dataclass(frozen=True)
class _State:
    """The layer's sources as found now: each page's path, stat and stat key (None: not trusted), the graph's."""

    listing: list[tuple[str, os.stat_result, str | None]]
    graph: str | None
    digest: str  # never equal to a kept one when a stat is not trusted


@dataclass(frozen=True)
class _Made:
    """The layer made for a state (outside the write lock), to be kept."""

    state: _State
    parsed: list[tuple[str, str, str, str]]  # (path, stat key, fields as JSON, body) of the pages read again
    problems: list[str]  # why pages could not be read (each said again by every process that reads this state)
    graph: str | None  # the entity pages as JSON when read again from a trusted graph
    pages: list[WikiPage]
    texts: list[str]


class _Damaged(Exception):
    """What the file holds is not what this code writes."""


@dataclass(frozen=True)
class KeptView:
    """One kept state of the layer (`memwiki.recall.cascade.FilesView`), read in the transaction it was found in."""

    vectors: np.ndarray
    db: sqlite3.Connection
    index: LexicalIndex
    position: dict[str, int]  # lexical id -> page position

    def search(self, query: str) -> list[tuple[str, float]]:
        found = self.index.search(query, len(self.position))
        with _kept_data("the lexical index"):
            ranked = sorted(((self.position[i], s) for i, s in found), key=lambda r: (-r[1], str(r[0])))
        return [(str(n), score) for n, score in ranked]

    def page(self, n: int) -> FilePage:
        row = self.db.execute(
            "SELECT path, title, tags, modified, text FROM pages JOIN texts USING (key) WHERE pos = ?", (n,)
        ).fetchone()
        with _kept_data(f"page {n}"):
            return FilePage(row[0], row[1], tuple(json.loads(row[2])), row[3], row[4])


class FilesIndex:
    """The files layer of `sources`, kept in the SQLite file `path` (None: in this process's memory), with the
    vectors and words of `text_vectors` (`memwiki.recall.cascade.FilesLayer`)."""

    def __init__(self, path: Path | None, sources: FilesSources, text_vectors: TextVectors) -> None:
        self.path = path
        self.sources = sources
        self.text_vectors = text_vectors
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._index: LexicalIndex | None = None
        self._set_aside = False  # a damaged file is set aside once per process; then the layer is kept in memory
        self._read_state: tuple[str, np.ndarray, dict[str, int]] | None = None  # the last state read: its matrix
        self.embedded = 0  # texts whose vectors this object had made (`refresh` says how many a call made)

    def read(self, use: Callable[[KeptView], T]) -> T:
        """`use` of the layer's current state, kept up to date first when the wiki or the graph changed."""
        with self._lock:
            state = self._state()
            while True:
                try:
                    return self._read(state, use)
                except (sqlite3.Error, OSError, UnicodeError, _Damaged) as exc:
                    self._recover(exc)

    def refresh(self) -> int:
        """Bring the layer up to date (after a write to the wiki or the graph): a changed page is read, the vectors
        and words of new texts are made and kept; how many texts were embedded."""
        before = self.embedded
        self.read(lambda view: None)
        return self.embedded - before

    def close(self) -> None:
        """Let go of the file (opened again on the next read)."""
        if self._index is not None:
            self._index.close()
        if self._db is not None:
            self._db.close()
        self._db = self._index = None
        self._read_state = None

    # -- the state on disk ----------------------------------------------------------------------------

    def _state(self) -> _State:
        since = time.time_ns() - RACY_NS  # stats of files changed after this are not trusted
        folder = self.sources.wiki
        listing = [(rel, st, _stat_key(st, since)) for rel, st in page_files(folder)] if folder else []
        graph = _graph_key(self.sources.graph, since)
        made = f"{FORMAT} {RANKED_CHARS} {MAX_EMBED_BYTES} {TOKENIZER_VERSION} {self.text_vectors.embedder.identity()}"
        made += f" {folder} {self.sources.graph}"
        digest = hashlib.sha1(f"{made}\n{graph}\n".encode("utf-8", "surrogateescape"))
        for rel, _, key in listing:
            digest.update(f"{rel}\0{key}\n".encode("utf-8", "surrogateescape"))
        if graph is None or any(key is None for *_, key in listing):
            digest.update(os.urandom(16))  # equal to no kept state: made again by the next process too
        return _State(listing, graph, digest.hexdigest())

    # -- reading and keeping --------------------------------------------------------------------------

    def _read(self, state: _State, use: Callable[[KeptView], T]) -> T:
        db, index = self._connection()
        with _transaction(db, "BEGIN"):
            if _meta(db, "state") == state.digest:
                view = self._view(db, index, state.digest)
                with _kept_data("problems"):
                    problems = [str(problem) for problem in json.loads(_meta(db, "problems"))]
                for problem in problems:
                    warnings.warn(problem, stacklevel=4)  # as reading the pages again would
                return use(view)
        made = self._make(db, state)
        with _transaction(db, "BEGIN IMMEDIATE", commit=True):
            if _meta(db, "state") != state.digest:  # else another process kept it meanwhile
                self._keep(db, index, made)
            return use(self._view(db, index, state.digest))

    def _view(self, db: sqlite3.Connection, index: LexicalIndex, digest: str) -> KeptView:
        """The view of the kept state `digest` (its matrix and positions read once per process: a long-lived one,
        an MCP server, reads them again only when the state changed)."""
        if self._read_state is None or self._read_state[0] != digest:
            ids = [row[0] for row in db.execute("SELECT lex_id FROM pages ORDER BY pos")]
            if index.count() != len(ids):
                raise _Damaged(f"{index.count():,} texts in the lexical index for {len(ids):,} pages")
            self._read_state = (digest, self._vectors(db, len(ids)), {lex_id: n for n, lex_id in enumerate(ids)})
        _, vectors, position = self._read_state
        return KeptView(vectors, db, index, position)

    def _vectors(self, db: sqlite3.Connection, count: int) -> np.ndarray:
        """The kept matrix of `count` pages' vectors, read in one go."""
        if not count:
            return np.zeros((0, self.text_vectors.embedder.dim), np.float32)
        blob = _meta(db, "vectors")
        if not isinstance(blob, bytes) or len(blob) % (4 * count):
            raise _Damaged(f"no vectors for {count:,} pages")
        return np.frombuffer(blob, np.float32).reshape(count, -1)

    def _make(self, db: sqlite3.Connection, state: _State) -> _Made:
        """The layer for `state`: pages whose stat is kept are not read again, nor the graph if its stat is kept;
        the vectors and words of texts not kept are made now, before the write lock is taken."""
        with _transaction(db, "BEGIN"), _kept_data("the kept pages"):
            kept_files = {row[0]: row[1:] for row in db.execute("SELECT path, stat, page, body FROM files")}
            graph = json.loads(_meta(db, "graph") or "{}")
            read_graph = graph.get("key") is None or graph["key"] != state.graph
            kept_entities = [] if read_graph else [_entity_page(*p) for p in graph["pages"]]
            kept_keys = {bytes(key) for (key,) in db.execute("SELECT key FROM pages")}
        wiki, parsed, problems = self._wiki(state, kept_files)
        entities = list(self.sources.entity_pages()) if read_graph else kept_entities
        pages = with_entities(wiki, entities)
        texts = [page_text(p) for p in pages]
        new = {key: t for t in texts if (key := text_key(t)) not in kept_keys}
        self.embedded += len(self.text_vectors.unkept(new))
        new = list(new.values())
        self.text_vectors.of(new)
        self.text_vectors.words(new)
        kept_graph = None
        if read_graph and state.graph is not None:
            fields = [[p.path, p.title, p.aliases, p.tags, p.body, p.modified] for p in entities]
            kept_graph = json.dumps({"key": state.graph, "pages": fields})
        return _Made(state, parsed, problems, kept_graph, pages, texts)

    def _wiki(
        self, state: _State, kept: dict[str, tuple[str, str, str]]
    ) -> tuple[list[WikiPage], list[tuple[str, str, str, str]], list[str]]:
        """The wiki's pages (those whose stat is kept, as they were kept), and the `_Made.parsed` and `problems` of
        those read (a page that cannot be read is skipped with a warning, as `iter_wiki_pages` does)."""
        wiki, parsed, problems = [], [], []
        for rel, st, key in state.listing:
            held = kept.get(rel)
            if key is not None and held is not None and held[0] == key:
                with _kept_data(rel):
                    title, aliases, tags, modified = json.loads(held[1])
                    wiki.append(WikiPage(rel, title, tuple(aliases), tuple(tags), held[2], modified))
                continue
            try:
                page = read_page(self.sources.wiki, rel, st)
            except InputFormatError as exc:
                warnings.warn(str(exc), stacklevel=5)
                problems.append(str(exc))
                continue
            if page is None:
                continue
            wiki.append(page)
            if key is not None:
                fields = json.dumps([page.title, page.aliases, page.tags, page.modified])
                parsed.append((rel, key, fields, page.body))
        return wiki, parsed, problems

    def _keep(self, db: sqlite3.Connection, index: LexicalIndex, made: _Made) -> None:
        """Write `made` (in the caller's write transaction)."""
        listed = {rel for rel, *_ in made.state.listing}
        gone = [(path,) for (path,) in db.execute("SELECT path FROM files").fetchall() if path not in listed]
        db.executemany("DELETE FROM files WHERE path = ?", gone)
        db.executemany("INSERT OR REPLACE INTO files (path, stat, page, body) VALUES (?, ?, ?, ?)", made.parsed)
        if made.graph is not None:
            _set_meta(db, "graph", made.graph)
        keys = [text_key(t) for t in made.texts]
        ids = _lexical_ids(keys)
        old = self._kept_vectors(db)
        self._keep_words(index, ids, made.texts)
        db.execute("DELETE FROM pages")
        db.executemany(
            "INSERT INTO pages (pos, lex_id, key, path, title, tags, modified) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (n, lex_id, key, p.path, p.title, json.dumps(p.tags), p.modified)
                for n, (lex_id, key, p) in enumerate(zip(ids, keys, made.pages, strict=True))
            ],
        )
        db.executemany("INSERT OR IGNORE INTO texts (key, text) VALUES (?, ?)", zip(keys, made.texts, strict=True))
        db.execute("DELETE FROM texts WHERE key NOT IN (SELECT key FROM pages)")
        _set_meta(db, "vectors", self._matrix(keys, made.texts, old).tobytes())
        _set_meta(db, "embedder", self.text_vectors.embedder.identity())
        _set_meta(db, "problems", json.dumps(made.problems))
        _set_meta(db, "state", made.state.digest)

    def _keep_words(self, index: LexicalIndex, ids: list[str], texts: list[str]) -> None:
        """Make the lexical index hold exactly `ids` (one per page), each with its text's words."""
        if not index.current():  # words of another tokenizer
            index.clear()
            index.mark_current()
        held = set(index.ids())
        index.delete(held.difference(ids))
        new = [(i, t) for i, t in zip(ids, texts, strict=True) if i not in held]
        words = self.text_vectors.words([t for _, t in new])
        index.upsert_words(zip([i for i, _ in new], words, strict=True))

    def _kept_vectors(self, db: sqlite3.Connection) -> dict[bytes, np.ndarray]:
        """The kept pages' vectors by text key (none when another embedder made them)."""
        keys = [bytes(key) for (key,) in db.execute("SELECT key FROM pages ORDER BY pos")]
        if not keys or _meta(db, "embedder") != self.text_vectors.embedder.identity():
            return {}
        return dict(zip(keys, self._vectors(db, len(keys)), strict=True))

    def _matrix(self, keys: list[bytes], texts: list[str], old: dict[bytes, np.ndarray]) -> np.ndarray:
        """The pages' vectors in order: kept ones, and the text vectors' of the others."""
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in old}
        rows = dict(old)
        rows.update(zip(missing, self.text_vectors.of(list(missing.values())), strict=True))
        if not keys:
            return np.zeros((0, self.text_vectors.embedder.dim), np.float32)
        return np.stack([rows[k] for k in keys]).astype(np.float32, copy=False)

    # -- the file -------------------------------------------------------------------------------------

    def _connection(self) -> tuple[sqlite3.Connection, LexicalIndex]:
        if self._db is None or self._index is None:
            self._db, self._index = _open(self.path)
        return self._db, self._index

    def _recover(self, exc: BaseException) -> None:
        """After a failure: a damaged file is set aside and made anew (once); otherwise, or when that fails too,
        the layer is kept in memory from now on. A failure in memory is not the file's: it is raised."""
        self.close()
        if self.path is None:
            raise exc
        if _damaged(exc) and not self._set_aside:
            self._set_aside = True
            try:
                aside = set_aside(self.path, ("-wal", "-shm"))
                log.warning("%s: not readable (%s); set aside as %s, made anew", self.path, exc, aside.name)
                return
            except OSError:
                pass
        log.warning("%s: not kept (%s); the files layer is kept in this process's memory", self.path, exc)
        self.path = None


def _open(path: Path | None) -> tuple[sqlite3.Connection, LexicalIndex]:
    """A connection to the file (made when missing; emptied when of another `FORMAT`), and its lexical index."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path or ":memory:", timeout=30.0, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")  # a commit is not synced (a checkpoint is): a cache, kept whole
        db.executescript(_SCHEMA)
        if _meta(db, "format") != FORMAT:
            _empty(db)
        return db, LexicalIndex(path or ":memory:", db)
    except BaseException:
        db.close()
        raise


def _empty(db: sqlite3.Connection) -> None:
    """Drop every table of a new file or one of another format, and make this format's (unless another process
    just did)."""
    with _transaction(db, "BEGIN IMMEDIATE", commit=True):
        if _meta(db, "format") == FORMAT:
            return
        for virtual in (True, False):  # FTS5 tables first: their own tables go with them
            rows = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
            for name, sql in rows:
                if (sql or "").upper().startswith("CREATE VIRTUAL") == virtual and not name.startswith("sqlite_"):
                    db.execute(f'DROP TABLE IF EXISTS "{name}"')
        db.execute("PRAGMA user_version = 0")  # the lexical index's tokenizer version
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        _set_meta(db, "format", FORMAT)


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection, begin: str, commit: bool = False) -> Iterator[None]:
    """A read (`commit` False: ended by ROLLBACK) or write transaction; rolled back on any error."""
    db.execute(begin)
    try:
        yield
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT" if commit else "ROLLBACK")


@contextlib.contextmanager
def _kept_data(what: str) -> Iterator[None]:
    """Reading what the file holds: anything but what this code writes is damage."""
    try:
        yield
    except (ValueError, TypeError, KeyError) as exc:
        raise _Damaged(f"{what}: {exc!r}") from None


def _meta(db: sqlite3.Connection, name: str) -> Any:
    row = db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
    return row[0] if row is not None else None


def _set_meta(db: sqlite3.Connection, name: str, value: Any) -> None:
    db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (name, value))


def _damaged(exc: BaseException) -> bool:
    """Whether a failure says the file is not a readable database of ours (not: busy, read-only, full)."""
    if isinstance(exc, _Damaged):
        return True
    name = getattr(exc, "sqlite_errorname", "")
    return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in str(exc)


def _stat_key(st: os.stat_result, since: int) -> str | None:
    """What a file is known by (size, times, inode); None when it changed after `since` (not trusted)."""
    if max(st.st_mtime_ns, st.st_ctime_ns) >= since:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def _graph_key(path: Path | None, since: int) -> str | None:
    """The stat keys of the graph's SQLite file and its write-ahead log ("" without a graph; None: not trusted). An
    empty log holds nothing (SQLite makes one when the file is opened): it counts as none."""
    if path is None:
        return ""
    keys = []
    for file in (path, Path(f"{path}-wal")):
        try:
            st = file.stat()
        except FileNotFoundError:
            st = None
        keys.append(_stat_key(st, since) if st is not None and (st.st_size or file == path) else "-")
    return None if None in keys else " ".join(str(key) for key in keys)


def _lexical_ids(keys: list[bytes]) -> list[str]:
    """One lexical id per page: its text's key and how many pages before it have the same text."""
    seen: dict[bytes, int] = {}
    ids = []
    for key in keys:
        ids.append(f"{key.hex()}.{seen.get(key, 0)}")
        seen[key] = seen.get(key, 0) + 1
    return ids


def _entity_page(path: str, title: str, aliases: list[str], tags: list[str], body: str, modified: str) -> WikiPage:
    return WikiPage(path, title, tuple(aliases), tuple(tags), body, modified)
