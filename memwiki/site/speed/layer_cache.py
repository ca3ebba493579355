"""A MemorySource that keeps each layer's records across site builds, read again only when the layer changed.

A rebuild after one memory changed used to read all of a large store again: every wiki file parsed, every
fact and message read and passed through the privacy filter. The source tells what each layer's state is
(`layer_fingerprints()`: e.g. sizes and modification times of the layer's files, with the privacy rules
folded in by the filter); a layer whose fingerprint is the one saved with its records is loaded from the
cache folder (one file per layer) instead of from the source. L2 vectors are kept by the embedder and a hash of
what was embedded (speed.vector_rows), so a changed L2 layer only asks the source for the vectors of changed memories.

Files hold plain data (memwiki.site.speed.cache_file: records as tuples of their fields) under a version key that also
covers the code, so a damaged, foreign or older file is ignored and the layer read again. A layer the source
has no fingerprint for is read in full every time.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memwiki.errors import MemwikiError
from memwiki.readers.vector_cache import memory_digest
from memwiki.site.model.build_context import GatedSource
from memwiki.site.speed import cache_file
from memwiki.site.speed.memo import memory_token, values_of
from memwiki.site.speed.vector_rows import VectorRows
from memwiki.source import (
    Changes,
    Entity,
    HotFile,
    Memory,
    Message,
    Persona,
    ScoredMemory,
    Session,
    SessionHit,
    SinkRecord,
    SourceInfo,
    Triple,
    WikiPage,
)

# how each layer's value is made plain and back: records become tuples of their fields
_PLAIN: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {}


def _rows(cls: type) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    return (lambda records: [values_of(r) for r in records], lambda rows: [cls(*row) for row in rows])


def _register() -> None:
    memories, wiki = _rows(Memory), _rows(WikiPage)
    entities, triples = _rows(Entity), _rows(Triple)
    sessions, messages = _rows(Session), _rows(Message)
    _PLAIN["memories"] = memories
    _PLAIN["wiki"] = wiki
    _PLAIN["graph"] = (
        lambda v: (entities[0](v[0]), triples[0](v[1])),
        lambda v: (entities[1](v[0]), triples[1](v[1])),
    )
    _PLAIN["sessions"] = (
        lambda v: (sessions[0](v[0]), {k: messages[0](m) for k, m in v[1].items()}),
        lambda v: (sessions[1](v[0]), {k: messages[1](m) for k, m in v[1].items()}),
    )


SAVE_AFTER = 10_000  # vectors asked of the source in one call past which the vectors file is written at once
VECTORS = "vectors"  # the vectors file is not tied to one state of the source: its keys say what they are of
# (rows appended: a rebuild after one memory changed writes one vector, not the 200 MB of a 100k store's)


ROWS = "memory-rows"  # the memories layer record by record, id -> (row, seq, shown fields or () when withheld,
# counts, memory_digest and memory_token of what is shown), and where the source's next changes start (`_HEAD`): a
# rebuild reads the memories an agent wrote, not all, and hashes only theirs
_HEAD = ("next",)  # (seq, count) of the source's last Changes


_register()


class SourceCutOff(MemwikiError):
    """A forked process asked the source for something the cache does not hold (see CachedSource.cut_off)."""


class _CutOff:
    """A source that answers only `info()` (as it was before the cut) and raises SourceCutOff for the rest."""

    def __init__(self, info: SourceInfo) -> None:
        self._info = info

    def info(self) -> SourceInfo:
        return self._info

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        raise SourceCutOff(f"the source was asked for {name} in a process cut off from it")


class CachedSource:
    """`source` with its layers' records kept in `folder` (see the module's docstring); everything else passes on."""

    def __init__(self, source: GatedSource, folder: Path) -> None:
        self.source = source
        self.folder = folder
        self.fingerprints: dict[str, str] = dict(source.layer_fingerprints())
        self._loaded: dict[str, Any] = {}
        self.reads: list[str] = []  # layers read from the source in this build (the others came from the cache)
        self._vectors: VectorRows | None = None  # by vector key
        self._digests: dict[str, str] | None = None  # memory id -> memory_digest (see `memory_digests`)
        self._tokens: dict[str, str] | None = None  # memory id -> memory_token (see `memory_tokens`)
        self._fetched = False  # the vectors of every memory are kept (see `fetch_new_vectors`)
        self._withheld: dict[str, dict[str, int]] = {}  # layer -> what the privacy gate withheld from it, by kind

    def cut_off(self) -> None:
        """Answer from what is kept alone from now on (in a forked process: the source's connections, its database
        handles and threads belong to the process that opened them); asking for more raises SourceCutOff."""
        self.source = _CutOff(self.source.info())  # type: ignore[assignment]

    # ── what passes on to the source ──

    @property
    def profile(self) -> str:
        return self.source.profile

    def info(self) -> SourceInfo:
        return self.source.info()

    def persona(self) -> Persona | None:
        return self.source.persona()

    def hot_files(self) -> Sequence[HotFile]:
        return self.source.hot_files()

    def sinks(self) -> Sequence[SinkRecord]:
        return self.source.sinks()

    def search_memories(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        return self.source.search_memories(vector, k)

    def embed(self, texts: list[str]) -> np.ndarray | None:
        return self.source.embed(texts)

    def l2_index(self) -> Any:  # noqa: ANN401 - memwiki.recall.cascade.L2Index or None
        return self.source.l2_index()

    def search_sessions(self, query: str, limit: int = 10) -> list[SessionHit]:
        return self.source.search_sessions(query, limit)

    def fingerprint(self) -> str:
        return self.source.fingerprint()

    def close(self) -> None:
        self.source.close()

    def layer_fingerprints(self) -> dict[str, str]:
        return dict(self.fingerprints)

    # ── one file per layer ──

    def _path(self, layer: str) -> Path:
        return self.folder / f"{layer}.marshal"

    def _layer(self, layer: str, read: Callable[[], Any]) -> Any:  # noqa: ANN401
        if layer in self._loaded:
            return self._loaded[layer]
        fp = self.fingerprints.get(layer)
        value = self._load(layer, fp) if fp else None
        withheld = (
            cache_file.load(self._path(f"{layer}.withheld"), cache_file.version("withheld", layer, fp)) if fp else None
        )
        if value is None or not isinstance(withheld, dict):
            value = read()
            self.reads.append(layer)
            withheld = self.source.withheld().get(layer, {})
            if fp:
                self._save(layer, fp, value)
                cache_file.dump(self._path(f"{layer}.withheld"), cache_file.version("withheld", layer, fp), withheld)
        self._withheld[layer] = withheld
        self._loaded[layer] = value
        return value

    def withheld(self) -> dict[str, dict[str, int]]:
        """What the privacy gate withheld, per layer: the source's count for layers read in this build, the
        count saved with a layer's records for layers kept from the last build."""
        out = {k: v for k, v in self.source.withheld().items() if k not in self._withheld}
        out.update({k: v for k, v in self._withheld.items() if v})
        return out

    def _load(self, layer: str, fp: str) -> Any:  # noqa: ANN401
        plain = cache_file.load(self._path(layer), cache_file.version("layer", layer, fp))
        if plain is None:
            return None
        try:
            return _PLAIN[layer][1](plain)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError):
            return None  # not what this code writes: read the layer again

    def _save(self, layer: str, fp: str, value: Any) -> None:  # noqa: ANN401
        cache_file.dump(self._path(layer), cache_file.version("layer", layer, fp), _PLAIN[layer][0](value))

    # ── the layers ──

    def memories(self) -> Iterator[Memory]:
        return iter(self._memory_layer())

    def memory_count(self) -> int:
        return len(self._memory_layer())

    def _memory_layer(self) -> list[Memory]:
        """L2 as kept record by record and brought up to date with what changed, when the source can say what
        changed (`memory_changes`); else as a layer (read whole when its fingerprint changed)."""
        if "memories" not in self._loaded:
            found = self._changed_memories()
            if found is None:
                return self._layer("memories", lambda: list(self.source.memories()))
            self._loaded["memories"] = found
        return self._loaded["memories"]

    def _changed_memories(self) -> list[Memory] | None:
        """The memories of `ROWS` with the source's changes since applied; all of them read when the file is
        missing, damaged, kept under another gate (`record_basis`), or of another database (`Changes.total`).
        None: the source cannot say what changed."""
        changes_since = getattr(self.source, "memory_changes", None)
        basis = getattr(self.source, "record_basis", None)
        if changes_since is None or basis is None or "memories" not in self.fingerprints:
            return None
        kept = cache_file.JournaledDict(self._path(ROWS), cache_file.version("layer", ROWS, basis()))
        head = kept.data.get(_HEAD)
        if isinstance(head, tuple) and len(head) == 2 and self._apply(kept, changes_since(*head, set(kept.data))):
            return self._memories_of(kept.data)
        kept.replace_all({})
        return self._memories_of(kept.data) if self._apply(kept, changes_since(0, 0, set())) else None

    def _apply(self, kept: cache_file.JournaledDict, changes: Changes | None) -> bool:
        """Apply `changes` to the records kept and save them; False (nothing saved) when there are none, or when the
        records then are not the source's (their sequence numbers sum to another total)."""
        if changes is None:
            return False
        if changes.ids is not None:
            for gone in set(kept.data) - set(changes.ids) - {_HEAD}:
                kept.drop(gone)
        for row, seq, memory_id, shown, counts in changes.rows:
            if shown is None:
                kept.set(memory_id, (row, seq, (), counts, "", ""))
            else:
                fields = values_of(shown)
                kept.set(memory_id, (row, seq, fields, counts, memory_digest(shown), memory_token(fields)))
        records = [v for k, v in kept.data.items() if k != _HEAD]
        try:
            if len(records) != changes.count or sum(v[1] for v in records) != changes.total:
                return False
        except (TypeError, IndexError):  # (not what this code writes)
            return False
        if changes.rows or changes.ids is not None or kept.data.get(_HEAD) != (changes.seq, changes.count):
            self.reads.append("memories")
            kept.set(_HEAD, (changes.seq, changes.count))
            kept.save()
        return True

    def _memories_of(self, kept: dict) -> list[Memory]:
        """The shown memories of `ROWS`' records in the source's row order; what was withheld, counted."""
        rows = sorted((v for k, v in kept.items() if k != _HEAD), key=lambda v: v[0])
        withheld: Counter[str] = Counter()
        for row in rows:
            if row[3]:
                withheld.update(row[3])
        self._withheld["memories"] = dict(withheld)
        shown = [row for row in rows if row[2]]
        self._digests = {fields[0]: digest for _, _, fields, _, digest, _ in shown}
        self._tokens = {fields[0]: token for _, _, fields, _, _, token in shown}
        return [Memory(*fields) for _, _, fields, *_ in shown]

    def memory_digests(self) -> dict[str, str]:
        """Memory id -> `memory_digest` (what its vector is made from) of every memory shown: kept with each record
        when the source says what changed, so a rebuild hashes only the memories that did (the vectors' keys, the
        audit's clusters and the search's rows are keyed by it)."""
        if self._digests is None:
            self._digests = {m.id: memory_digest(m) for m in self._memory_layer()}
        return self._digests

    def memory_tokens(self) -> dict[str, str]:
        """Memory id -> `memory_token` of every memory shown, kept with each record as `memory_digests` is (what
        the listings' page memos are keyed by)."""
        if self._tokens is None:
            self._tokens = {m.id: memory_token(values_of(m)) for m in self._memory_layer()}
        return self._tokens

    def _vector_keys(self, ids: Sequence[str]) -> list[str]:
        digests = self.memory_digests()
        return [f"{self._embedder}\0{digests[i]}" for i in ids]

    @functools.cached_property
    def _embedder(self) -> str:
        info = self.source.info()
        return f"{info.embedder}:{info.dim}"

    def _graph(self) -> tuple[list[Entity], list[Triple]]:
        def read() -> tuple[list[Entity], list[Triple]]:
            triples = list(self.source.triples())  # first: a fact's entities are written before it
            return list(self.source.entities()), triples

        return self._layer("graph", read)

    def entities(self) -> Sequence[Entity]:
        return self._graph()[0]

    def triples(self) -> Sequence[Triple]:
        return self._graph()[1]

    def _sessions(self) -> tuple[list[Session], dict[str, list[Message]]]:
        def read() -> tuple[list[Session], dict[str, list[Message]]]:
            sessions = list(self.source.sessions())
            return sessions, {s.id: list(self.source.messages(s.id)) for s in sessions}

        return self._layer("sessions", read)

    def sessions(self) -> Sequence[Session]:
        return self._sessions()[0]

    def messages(self, session_id: str) -> Sequence[Message]:
        found = self._sessions()[1].get(session_id)
        return found if found is not None else list(self.source.messages(session_id))

    def wiki_pages(self) -> Sequence[WikiPage]:
        return self._layer("wiki", lambda: list(self.source.wiki_pages()))

    def memory_vectors(self, ids: Sequence[str]) -> np.ndarray | None:
        """The source's vectors, kept by (embedder, id, embedded text): only new or changed memories are asked for."""
        digests = self.memory_digests() if "memories" in self.fingerprints else {}
        if not ids or not digests or any(i not in digests for i in ids):
            return self.source.memory_vectors(ids)
        keys = self._vector_keys(ids)
        for _ in range(2):  # (once more from the file as it is, when another build changed it under this one)
            kept = self._kept_vectors(ids, keys)
            if kept is None:
                return None
            try:
                return kept.read(keys)  # (a new array: callers normalise in place)
            except (KeyError, OSError):
                self._vectors = None
        return self.source.memory_vectors(ids)

    def fetch_new_vectors(self) -> None:
        """Ask the source now for the vectors of the memories it was not asked about yet (new or changed since the
        vectors were kept), so that a process cut off from it later (`cut_off`) finds every memory's kept."""
        digests = self.memory_digests() if "memories" in self.fingerprints else {}
        if digests and not self._fetched:
            ids = list(digests)
            self._kept_vectors(ids, self._vector_keys(ids))
            self._fetched = True

    def _kept_vectors(self, ids: Sequence[str], keys: list[str]) -> VectorRows | None:
        """The kept vectors, with those of `ids` (`keys`) not kept yet asked of the source (None: it has none)."""
        if self._vectors is None:
            self._vectors = VectorRows(self.folder, VECTORS, cache_file.version("layer", VECTORS))
        kept = self._vectors
        missing = list({k: i for i, k in zip(ids, keys, strict=True) if k not in kept}.items())
        if missing:
            got = self.source.memory_vectors([i for _, i in missing])
            if got is None:
                return None
            kept.add([k for k, _ in missing], np.asarray(got, dtype=np.float32))
            if len(missing) >= SAVE_AFTER:  # (a first build: written now, while it holds less than at its end)
                kept.save()
        return kept

    def save(self) -> None:
        """Keep the vectors asked for in this build (those of memories that are gone are dropped)."""
        if self._vectors is not None:
            self._vectors.keep_only(self._vector_keys(list(self.memory_digests())))
            self._vectors.save()
            for old in self.folder.glob(f"{VECTORS}.marshal*"):  # the dict of bytes they were kept in before
                old.unlink(missing_ok=True)
