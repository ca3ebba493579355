"""Recall in priority order: hot memory (L1) → semantic memory (L2) → session history (L4) → wiki files.

Each layer is ranked by hybrid retrieval: dense (cosine of embedder vectors) fused with lexical (FTS5
bm25 over CJK-aware tokens). Every layer is asked: a confident-looking hit of a higher layer must not hide the
answer of a lower one (`Recaller.recall`). Each hit says why it ranked and whether it is confident.
A store's files layer is kept between processes (`FilesLayer`, memwiki.recall.files_layer); given as `wiki_pages`, it is
read and ranked in memory, to the same hits.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

import numpy as np

from memwiki.common.textio import utf8_size
from memwiki.errors import MemwikiError
from memwiki.layers.semantic.passages import MAX_EMBED_BYTES, PASSAGE_KEY, cut_to_bytes
from memwiki.source import HotFile, Memory, ScoredMemory, SessionHit, WikiPage
from memwiki.text.embedders import Embedder
from memwiki.text.lexical import POSTINGS_BUDGET, LexicalIndex
from memwiki.text.tokens import coverage
from memwiki.text.vectors import TextVectors

log = logging.getLogger(__name__)
LAYERS = ("L1", "L2", "L4", "files")
SESSION_LIMIT = 10  # sessions the session search is asked for (at least k), their best turns ranked
RANKED_CHARS = 2000  # of a session turn or a wiki page: what it is ranked by


class L2Index(Protocol):
    """What recall needs of a semantic-memory index (SemanticMemory, VectorCache).

    Its ids are those of what it searches: memories, and passages of long ones (memwiki.layers.semantic.passages) given
    as a `Memory` with the passage's text and `meta[PASSAGE_KEY]` pointing to the whole memory. On a Chroma server every
    call is a round trip: `nearest` brings its hits' records, so a recall makes a second call only for the hits found by
    words alone (`get_with_vectors`: their records and cosines), and `lexical_search` runs in this process."""

    def nearest(self, vector: np.ndarray, k: int) -> list[ScoredMemory]: ...

    def lexical_search(self, query: str, k: int, budget: int = ...) -> list[tuple[str, float]]: ...

    def get_with_vectors(self, ids: Sequence[str]) -> tuple[list[Memory], np.ndarray]: ...


class OpeningL2:
    """An L2 index opened in a thread of its own, used as the index once open: a one-shot `memwiki recall` spends most
    of its time importing and loading Chroma and loading the embedder, and the two go on side by side. An opening
    that failed raises at first use, and is tried again at the next (a Chroma server down when an agent started may
    be up by its next recall)."""

    def __init__(self, open_index: Callable[[], L2Index]) -> None:
        self._open = open_index
        self._index: L2Index | None = None
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwiki-l2-open")
        self._opening: Future[L2Index] | None = pool.submit(open_index)
        pool.shutdown(wait=False)

    def index(self) -> L2Index:
        if self._index is None:
            opening, self._opening = self._opening, None
            self._index = opening.result() if opening is not None else self._open()
        return self._index

    def settle(self) -> None:
        """Wait for the opening to end, well or not (before the store closes what it opened)."""
        if self._opening is not None:
            wait([self._opening])

    def nearest(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        return self.index().nearest(vector, k)

    def lexical_search(self, query: str, k: int, budget: int = POSTINGS_BUDGET) -> list[tuple[str, float]]:
        return self.index().lexical_search(query, k, budget)

    def get_with_vectors(self, ids: Sequence[str]) -> tuple[list[Memory], np.ndarray]:
        return self.index().get_with_vectors(ids)


@dataclass(frozen=True)
class FilePage:
    """A page of the files layer as a hit shows it: where it comes from and the text it is ranked by (`page_text`)."""

    path: str
    title: str
    tags: tuple[str, ...]
    modified: str
    text: str

    @classmethod
    def of(cls, page: WikiPage, text: str) -> FilePage:
        return cls(page.path, page.title, page.tags, page.modified, text)


class FilesView(Protocol):
    """One state of the files layer, ranked as `Recaller` ranks a layer's texts (`_rank_texts`): ids are positions."""

    vectors: np.ndarray  # one row per page, in order

    def search(self, query: str) -> list[tuple[str, float]]:
        """Every page the query's words match, best first, as a throw-away `LexicalIndex` of the pages' texts ranks
        them (ids: positions as strings)."""
        ...

    def page(self, n: int) -> FilePage: ...


T = TypeVar("T")


class FilesLayer(Protocol):
    """The files layer kept between processes (memwiki.recall.files_layer.FilesIndex)."""

    def read(self, use: Callable[[FilesView], T]) -> T:
        """`use` of the layer's current state (one state for the whole call, whoever writes meanwhile)."""
        ...


@dataclass
class RecallConfig:
    """Ranking and stopping parameters; every stage here earns its place on held-out folds (the figures, and how
    each value was chosen: docs/RANKING.md).

    Ranking: z-score fusion of the dense and the lexical list, each weighted by how far its best candidate stands out
    (`peak_weighting`). Stopping: a hit is a confident answer when its cosine reaches `min_confidence` (unrelated texts
    stay below it), or when it holds `min_coverage` of the query's informative words and its cosine is not under
    `min_cosine_with_words` (words alone, the meaning unrelated, are no answer).
    """

    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    peak_weighting: bool = True  # scale each list's weight by the z-score of its best candidate
    depth: int = 50  # candidates taken from each retriever before fusion
    min_confidence: float = 0.45  # the confidence floor: below this cosine a hit is weak ...
    min_coverage: float = 0.6  # ... unless it holds this share of the query's informative tokens (see above)
    min_cosine_with_words: float = 0.2  # ... and is not unrelated in meaning (a words-only match is not an answer)


@dataclass
class Hit:
    layer: str  # "L1" | "L2" | "L4" | "files"
    id: str
    text: str
    score: float
    provenance: dict[str, Any]
    why: str
    confidence: float = 0.0  # cosine similarity of the hit to the query
    first_by_both: bool = False  # ranked first by meaning and by words in its layer
    confident: bool = False  # as close as an answer, or naming most of the query's words (`Recaller.evidence`)

    def to_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "id": self.id,
            "text": self.text,
            "score": round(self.score, 6),
            "confidence": round(self.confidence, 4),
            "confident": self.confident,
            "why": self.why,
            "provenance": self.provenance,
        }


@dataclass
class _Ranked:
    id: str
    score: float
    cosine: float | None
    lexical: float | None
    dense_rank: int | None
    lexical_rank: int | None

    def why(self) -> str:
        parts = []
        if self.dense_rank is not None:
            parts.append(f"dense {self.cosine:.2f} (#{self.dense_rank + 1})")
        elif self.cosine is not None:
            parts.append(f"dense {self.cosine:.2f}")
        if self.lexical_rank is not None:
            parts.append(f"lexical {self.lexical:.2f} (#{self.lexical_rank + 1})")
        return " + ".join(parts)


def split_turns(query: str) -> list[str]:
    """The non-empty lines of a query; a dialogue gives one line per turn."""
    return [line.strip() for line in query.splitlines() if line.strip()]


def fuse(
    dense: Sequence[tuple[str, float]], lexical: Sequence[tuple[str, float]], config: RecallConfig
) -> list[_Ranked]:
    """Fuse a dense and a lexical ranking (each best first) into one, best first, by z-scores.

    Each list's scores are standardised over its own candidates; a candidate missing from a list gets that
    list's lowest z. With `peak_weighting`, a list's weight is scaled by how far its best candidate stands out
    (the z-score of its top score; the weights then sum to 1): a lexical list where every match shares one
    common word says little and gets little say, one with a clear winner more."""
    lists = [(dense, config.dense_weight), (lexical, config.lexical_weight)]
    values = [{i: s for i, s in ranking} for ranking, _ in lists]
    ranks = [{i: r for r, (i, _) in enumerate(ranking)} for ranking, _ in lists]
    ids = list(dict.fromkeys(i for ranking, _ in lists for i, _ in ranking))
    parts = []
    for scored, (_, weight) in zip(values, lists, strict=True):
        if not scored or weight == 0:
            continue
        v = np.fromiter(scored.values(), dtype=np.float64)
        mu, sd = v.mean(), v.std() or 1.0
        peak = max(float((v.max() - mu) / sd), 0.0)  # how far the retriever's best stands out
        parts.append((scored, weight * peak if config.peak_weighting else weight, mu, sd, (v.min() - mu) / sd))
    total = sum(w for _, w, *_ in parts)
    if total <= 0:  # no retriever has a best that stands out (one candidate each, or all tied)
        parts = [(scored, 1.0, mu, sd, floor) for scored, _, mu, sd, floor in parts]
        total = float(len(parts))
    scores: dict[str, float] = {}
    for scored, weight, mu, sd, floor in parts:
        share = weight / total
        for i in ids:
            scores[i] = scores.get(i, 0.0) + share * float((scored[i] - mu) / sd if i in scored else floor)
    (cos, lex), (d_rank, l_rank) = values, ranks
    ranked = [_Ranked(i, scores.get(i, 0.0), cos.get(i), lex.get(i), d_rank.get(i), l_rank.get(i)) for i in ids]
    ranked.sort(key=lambda r: -r.score)
    return ranked


class Recaller:
    """Recall over the layers of one store (or of external sources behind the same callables)."""

    def __init__(
        self,
        embedder: Embedder,
        hot_files: Callable[[], Sequence[HotFile]] | None = None,
        l2: L2Index | None = None,
        sessions: Callable[[str, int], list[SessionHit]] | None = None,
        wiki_pages: Callable[[], Sequence[WikiPage]] | None = None,
        config: RecallConfig | None = None,
        text_vectors: TextVectors | None = None,
        files: FilesLayer | None = None,
    ) -> None:
        self.embedder = embedder
        self.hot_files = hot_files
        self.l2 = l2
        self.sessions = sessions
        self.wiki_pages = wiki_pages  # the files layer read every recall (`files`, when given, is asked instead)
        self.files = files
        self.config = config or RecallConfig()
        # small layers' texts (hot entries, turns, pages): kept with the source, else in this process
        self.text_vectors = text_vectors or TextVectors(None, embedder)
        self._dense: ThreadPoolExecutor | None = None  # see rank_l2

    # -- query --------------------------------------------------------------------------------------

    def query_vector(self, query: str) -> np.ndarray:
        """The query's vector (a dialogue is embedded whole: weighting its last turns did not help on held-out
        folds, see `RecallConfig`)."""
        return self.embedder.embed([query])[0]

    def recall(self, query: str, k: int = 5, all_layers: bool = False) -> list[Hit]:
        """Up to `k` hits of every layer: the confident ones first, taken in turn from the layers in priority order
        (every layer's best before any layer's second, so a confident-looking hit of a higher layer never hides
        the answer of a lower one), then every layer's best guess, then the other weak ones, closest in meaning
        first (`closest_first`). Every hit says whether it is `confident` (`evidence`). `all_layers`: all of them
        (up to `k` per layer)."""
        if not isinstance(query, str) or not query.strip():
            raise MemwikiError("empty query: recall needs some text to look for")
        if k <= 0:
            return []
        query = cut_query(query)
        qv = self.query_vector(query)
        by_layer = []
        for layer in LAYERS:
            hits = self._layer(layer, query, qv, k)[:k]
            for hit in hits:
                self._mark(query, hit)
            by_layer.append(hits)
        ordered = in_turn([h for h in hits if h.confident] for hits in by_layer)
        weak = [[h for h in hits if not h.confident] for hits in by_layer]
        ordered += [hits[0] for hits in weak if hits]  # every layer's best guess, in priority order
        ordered += closest_first(hits[1:] for hits in weak)
        return ordered if all_layers else ordered[:k]

    def evidence(self, query: str, hit: Hit) -> str | None:
        """Why `hit` is a confident answer to `query`, or None: its cosine reaches `min_confidence` (as close as an
        answer is; unrelated texts stay below it), or it holds `min_coverage` of the query's informative words."""
        if hit.confidence >= self.config.min_confidence:
            return "close in meaning"
        if hit.confidence < self.config.min_cosine_with_words:  # words alone, their meaning unrelated: no answer
            return None
        share = coverage(query, hit.text)
        if share >= self.config.min_coverage:
            return f"covers {share:.0%} of the query's words"
        return None

    def _mark(self, query: str, hit: Hit) -> None:
        """Set `hit.confident`, and say in `why` what a kept hit below the cosine floor rests on."""
        reason = self.evidence(query, hit)
        hit.confident = reason is not None
        if reason is not None and reason != "close in meaning":
            hit.why += f"; {reason}"
        elif reason is None and hit.layer == "L1" and hit.first_by_both:
            # Hot memory is in the agent's context every turn anyway: pointing at the entry that both meaning
            # and words rank first costs little, and a short entry rarely reaches the cosine floor.
            hit.why += "; first by meaning and by words in hot memory (weak)"
        elif reason is None:
            hit.why += "; weak: below the confidence floor"

    def _layer(self, layer: str, query: str, qv: np.ndarray, k: int) -> list[Hit]:
        if layer == "L1" and self.hot_files is not None:
            return self._recall_hot(query, qv, k)
        if layer == "L2" and self.l2 is not None:
            return self.rank_l2(query, k, qv)
        if layer == "L4" and self.sessions is not None:
            return self._recall_sessions(query, qv, k)
        if layer == "files" and self.files is not None:
            return self.files.read(lambda view: self._recall_kept_files(view, query, qv, k))
        if layer == "files" and self.wiki_pages is not None:
            return self._recall_files(query, qv, k)
        return []

    # -- L2 -----------------------------------------------------------------------------------------

    def rank_l2(self, query: str, k: int, qv: np.ndarray | None = None) -> list[Hit]:
        """The hybrid top `k` of semantic memory."""
        assert self.l2 is not None
        if qv is None:
            query = cut_query(query)
            qv = self.query_vector(query)
        depth = max(k, self.config.depth)
        # the dense search (mostly a wait: on a Chroma server, or in Chroma's own threads) runs beside the
        # lexical one (Python and SQLite, in this thread): a recall takes the longer of the two, not their sum
        if self._dense is None:
            self._dense = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwiki-dense")
        searching = self._dense.submit(self.l2.nearest, qv, depth)
        lexical = self.l2.lexical_search(query, depth) if self.config.lexical_weight > 0 else []
        dense = searching.result()
        memories = {h.memory.id: h.memory for h in dense}
        ranked = fuse([(h.memory.id, h.score) for h in dense], lexical, self.config)
        hits: list[Hit] = []
        shown: set[str] = set()  # memories with a hit: a long one gives its best passage only
        for start in range(0, len(ranked), k):  # usually the first k are k memories
            page = ranked[start : start + k]
            by_words = [r for r in page if r.id not in memories]
            if by_words:  # lexical-only hits: their records, and their cosine so every hit has a comparable confidence
                found, vectors = self.l2.get_with_vectors([r.id for r in by_words])
                cosines = dict(zip((m.id for m in found), (vectors @ qv).tolist(), strict=True))
                memories.update((m.id, m) for m in found)
                for r in by_words:
                    r.cosine = cosines.get(r.id)
            for r in page:
                if r.id not in memories:
                    continue  # deleted between the two searches
                hit = _l2_hit(memories[r.id], r)
                if hit.id not in shown:
                    shown.add(hit.id)
                    hits.append(hit)
            if len(hits) >= k:
                break
        return hits[:k]

    # -- small layers (hot memory, session snippets, wiki pages), ranked in memory --------------------

    def _rank_texts(self, query: str, qv: np.ndarray, texts: Sequence[str]) -> list[_Ranked]:
        """Hybrid ranking of a few texts (ids are their positions as strings)."""
        if not texts:
            return []
        cos = self.text_vectors.of(texts) @ qv
        index = LexicalIndex(":memory:")
        try:
            index.upsert_words((str(n), body) for n, body in enumerate(self.text_vectors.words(texts)))
            lexical = index.search(query, len(texts))
        finally:
            index.close()
        return self._rank(cos, lexical)

    def _rank(self, cosines: np.ndarray, lexical: list[tuple[str, float]]) -> list[_Ranked]:
        """Texts' cosines (by position) fused with their lexical ranking (ids: positions as strings)."""
        dense = sorted(((str(n), float(c)) for n, c in enumerate(cosines)), key=lambda x: -x[1])
        return fuse(dense, lexical, self.config)

    def _recall_hot(self, query: str, qv: np.ndarray, k: int) -> list[Hit]:
        entries = [(f, e) for f in self.hot_files() for e in f.entries]
        ranked = self._rank_texts(query, qv, [e.text for _, e in entries])[:k]
        hits = []
        for r in ranked:
            f, e = entries[int(r.id)]
            prov = {"file": f.path, "target": f.target, "index": e.index, "category": e.category}
            why = r.why()
            both = r.dense_rank == 0 and r.lexical_rank == 0
            hits.append(Hit("L1", f"{f.target}:{e.index}", e.text, r.score, prov, why, r.cosine, both))
        return hits

    def _recall_sessions(self, query: str, qv: np.ndarray, k: int) -> list[Hit]:
        """Session turns: the best turns of the sessions the session search finds, ranked by their texts."""
        turns = [
            (h, message_id, text)
            for h in self.sessions(query, max(k, SESSION_LIMIT))
            for message_id, text in zip(h.message_ids, h.texts, strict=False)
        ]
        texts = [turn_text(text) for _, _, text in turns]
        ranked = self._rank_texts(query, qv, texts)[:k]
        hits = []
        for r in ranked:
            h, message_id, _ = turns[int(r.id)]
            prov = {
                "session_id": h.session.id,
                "message_id": message_id,
                "title": h.session.title,
                "started": h.session.started,
                "session_score": h.score,
            }
            hid = f"{h.session.id}#{message_id}"
            hits.append(Hit("L4", hid, texts[int(r.id)], r.score, prov, r.why(), r.cosine or 0.0))
        return hits

    def _recall_files(self, query: str, qv: np.ndarray, k: int) -> list[Hit]:
        pages = list(self.wiki_pages())
        texts = [page_text(p) for p in pages]
        ranked = self._rank_texts(query, qv, texts)[:k]
        return [_file_hit(FilePage.of(pages[int(r.id)], texts[int(r.id)]), r) for r in ranked]

    def _recall_kept_files(self, view: FilesView, query: str, qv: np.ndarray, k: int) -> list[Hit]:
        """`_recall_files` over a kept state of the layer: its vectors and words are kept with it."""
        if not len(view.vectors):
            return []
        ranked = self._rank(view.vectors @ qv, view.search(query))[:k]
        return [_file_hit(view.page(int(r.id)), r) for r in ranked]


def in_turn(lists: Iterable[list[Hit]]) -> list[Hit]:
    """The lists' hits taken in turn: every list's first, then every list's second, ... (lists in priority order)."""
    return [h for turn in itertools.zip_longest(*lists) for h in turn if h is not None]


def closest_first(lists: Iterable[list[Hit]]) -> list[Hit]:
    """The lists' hits merged by cosine: each time the closest of the lists' next hits (each list keeps its order,
    its layer's ranking; a tie goes to the list earlier in priority)."""
    heads = [list(hits) for hits in lists]
    out: list[Hit] = []
    while any(heads):
        best = max((n for n, hits in enumerate(heads) if hits), key=lambda n: (heads[n][0].confidence, -n))
        out.append(heads[best].pop(0))
    return out


def turn_text(text: str, limit: int = RANKED_CHARS) -> str:
    """What a session turn is ranked by: the start of its text (at most what the embedder reads well)."""
    return cut_to_bytes(text[:limit].strip(), MAX_EMBED_BYTES)


def page_text(page: WikiPage, limit: int = RANKED_CHARS) -> str:
    """What a wiki page is ranked by: its title, aliases and the start of its body (Markdown marks dropped; at
    most what the embedder reads well)."""
    body = re.sub(r"[#*_`>\[\]|]+", " ", page.body)
    head = " / ".join((page.title, *page.aliases))
    return cut_to_bytes(f"{head}\n{body}"[:limit].strip(), MAX_EMBED_BYTES)


def _file_hit(page: FilePage, r: _Ranked) -> Hit:
    prov = {"path": page.path, "title": page.title, "tags": list(page.tags), "modified": page.modified}
    return Hit("files", page.path, page.text, r.score, prov, r.why(), r.cosine)


def _l2_hit(m: Memory, r: _Ranked) -> Hit:
    """An L2 hit; a passage of a long memory is the hit of that memory, its text the passage, and its provenance's
    `passage` (id, memory_id, index, count, start, end, chars) and `why` say where it lies in the whole memory."""
    pointer = m.meta.get(PASSAGE_KEY)
    if not isinstance(pointer, dict):
        return Hit("L2", m.id, m.text, r.score, _memory_provenance(m), r.why(), r.cosine or 0.0)
    whole = replace(m, meta={k: v for k, v in m.meta.items() if k != PASSAGE_KEY})
    prov = {**_memory_provenance(whole), "passage": {"id": m.id, **pointer}}
    why = (
        f"{r.why()}; passage {pointer['index'] + 1:,} of {pointer['count']:,} of memory "
        f"{pointer['memory_id']} (characters {pointer['start']:,}–{pointer['end']:,} of {pointer['chars']:,})"
    )
    return Hit("L2", str(pointer["memory_id"]), m.text, r.score, prov, why, r.cosine or 0.0)


def cut_query(query: str, limit: int = MAX_EMBED_BYTES) -> str:
    """The query as recall reads it: at most `limit` UTF-8 bytes (what the embedder reads well,
    memwiki.layers.semantic.passages).
    A dialogue keeps its last turns (they weigh most), other text its head; a cut is logged as a warning."""
    if len(query) * 4 <= limit or utf8_size(query) <= limit:
        return query
    turns = split_turns(query)
    if len(turns) > 1:
        kept: list[str] = []
        size = 0
        for turn in reversed(turns):
            if kept and size + utf8_size(turn) + 1 > limit:
                break
            kept.append(cut_to_bytes(turn, limit))
            size += utf8_size(kept[-1]) + 1
        cut = "\n".join(reversed(kept))
        part = f"its last {len(kept):,} of {len(turns):,} lines"
    else:
        cut = cut_to_bytes(query.strip(), limit)
        part = "its beginning"
    log.warning(
        "query of %s characters cut to %s (%s characters): the embedder reads about %s bytes well",
        f"{len(query):,}",
        part,
        f"{len(cut):,}",
        f"{limit:,}",
    )
    return cut


def _memory_provenance(m: Memory) -> dict[str, Any]:
    prov: dict[str, Any] = {"source": m.source, "category": m.category}
    for name in ("created", "sunk_at", "session_id", "message_id", "wing", "room"):
        value = getattr(m, name)
        if value:
            prov[name] = value
    if m.meta:
        prov["meta"] = m.meta
    return prov
