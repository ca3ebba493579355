"""Sessions (L4): one digest page per session and a timeline index, newest first, like a blog.

A digest opens with what the session was about and what came out of it (`memwiki.site.model.digest`: its question,
outcome and decisions in its own words; the memories and facts written during it; the concepts it names), then
its key turns, chosen extractively among what either side said (tool output is not quoted): messages closest to
the session's centroid, kept diverse by maximal marginal relevance, both sides quoted. Vectors come from the
source's own embedder (`source.embed`, the one its memories were made with); a source without a usable embedder
falls back to TF-IDF over CJK-aware tokens, and the audit page says so. Choices are kept across builds by a hash
of the texts.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter

import numpy as np

from memwiki.errors import MemwikiError
from memwiki.site.builders import SESSIONS, BuildResult, Site, frontmatter, log, message_anchor, safe_title, site
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.digest import About, Turn, about, both_sides, spoken
from memwiki.site.model.generated import GeneratedPage
from memwiki.site.model.render import block, esc, md_esc
from memwiki.site.model.wikilinks import as_words, find_links
from memwiki.site.speed.builder_speed import Pending
from memwiki.site.speed.memo import StaleMemo, key_of, values_of
from memwiki.source import Memory, Message, Session, Triple
from memwiki.text.tokens import tokens

PER_INDEX_PAGE = 100
MIN_CHARS = 12


def mmr(vectors: np.ndarray, k: int, lam: float = 0.7, weights: np.ndarray | None = None) -> list[int]:
    """Indices of `k` rows close to the centroid yet unlike each other, in chronological order."""
    n = len(vectors)
    if n == 0 or k <= 0:
        return []
    centroid = vectors.mean(axis=0)
    norm = np.linalg.norm(centroid)
    relevance = vectors @ (centroid / norm) if norm else np.zeros(n)
    if weights is not None:
        relevance = relevance * weights
    chosen: list[int] = []
    redundancy = np.full(n, -np.inf)
    for _ in range(min(k, n)):
        score = lam * relevance - (1 - lam) * np.where(np.isinf(redundancy), 0.0, redundancy)
        score[chosen] = -np.inf
        best = int(np.argmax(score))
        chosen.append(best)
        redundancy = np.maximum(redundancy, vectors @ vectors[best])
    return sorted(chosen)


def tfidf_vectors(texts: list[str]) -> np.ndarray:
    """Unit TF-IDF vectors over CJK-aware tokens (the lexical fallback)."""
    docs = [Counter(tokens(t)) for t in texts]
    df = Counter(term for d in docs for term in d)
    vocab = {term: i for i, term in enumerate(df)}
    out = np.zeros((len(texts), max(1, len(vocab))), dtype=np.float32)
    for row, doc in enumerate(docs):
        for term, tf in doc.items():
            out[row, vocab[term]] = (1 + math.log(tf)) * math.log((1 + len(docs)) / (1 + df[term]))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1
    return out / norms


DIGESTS = "digests.marshal"  # in cache_dir: each conversation's key turns, by a hash of its texts
WRITTEN_SHOWN = 5  # memories written in a session that its digest links to
TIMELINE = "timeline.marshal"  # in cache_dir: the sessions' index pages (see _timeline)
SESSION_KEYS = "session-keys.marshal"  # in cache_dir: a digest of each session (see _session_keys)
EVERY_SESSION = "every session"  # in DIGESTS: (method, sessions layer version) of a build that found all kept


class Digester:
    """Chooses the key turns of sessions, with the source's embedder when it has one.

    Embedding every session's messages is the one slow step of a first build; `prefetch` hands it to a thread
    (speed.builder_speed: the embedder spends its time in NumPy, which lets other Python run) while the rest of
    the site is read and built, and `key_turns` takes the vectors from there. Choices are kept across builds."""

    def __init__(self, ctx: BuildContext) -> None:
        s = site(ctx)
        self.speed = ctx.speed
        self.embedder = s.info.embedder
        self.method = f"embeddings ({s.info.embedder})"
        self._embed = ctx.source.embed
        saved = self.speed.load(DIGESTS, "")
        self.cache: dict[str, list[int]] = saved if isinstance(saved, dict) else {}
        self.dirty = False
        self._prefetched: Pending[dict[str, np.ndarray]] | None = None
        self._todo: set[str] = set()  # the conversations `prefetch` found not kept
        self.mark_when_made: tuple[str, str] | None = None  # EVERY_SESSION's value once `_todo` is kept (`save`)

    def _key(self, texts: list[str]) -> tuple[str, int]:
        k = min(len(texts), max(2, min(4, round(len(texts) / 3))))
        return hashlib.sha1(json.dumps([self.method, k, texts], ensure_ascii=False).encode()).hexdigest(), k

    def prefetch(self, conversations: list[list[Message]]) -> bool:
        """Start embedding, beside the build, the messages of these sessions whose key turns are not cached. False:
        every one is cached."""
        if self._prefetched is not None:
            return True
        todo = {}
        for messages in conversations:
            texts = [m.content for m in messages]
            key = self._key(texts)[0] if texts else ""
            if texts and key not in self.cache:
                todo[key] = texts

        def embed_all() -> dict[str, np.ndarray]:
            vectors: dict[str, np.ndarray] = {}
            for key, texts in todo.items():
                raw = self._embed(texts)
                if raw is None:
                    break
                vectors[key] = np.asarray(raw, dtype=np.float32)
            return vectors

        if todo:
            self._todo = set(todo)
            self._prefetched = self.speed.beside("digests", embed_all)
        return bool(todo)

    def _vectors(self, key: str) -> np.ndarray | None:
        """The prefetched vectors of one conversation (None: not prefetched, or prefetching failed)."""
        if self._prefetched is None:
            return None
        try:
            return self._prefetched.result().pop(key, None)
        except (MemwikiError, AttributeError, OSError) as exc:
            self._prefetched = None
            self._fall_back(exc)
            return None

    def key_turns(self, messages: list[Message]) -> list[int]:
        texts = [m.content for m in messages]
        if not texts:
            return []
        key, k = self._key(texts)
        if key in self.cache:
            return self.cache[key]
        weights = np.array([1.0 if len(t.strip()) >= MIN_CHARS else 0.3 for t in texts])
        vectors = self._vectors(key)
        if vectors is None and self._embed is not None:
            try:
                raw = self._embed(texts)
                vectors = None if raw is None else np.asarray(raw, dtype=np.float32)
            except (MemwikiError, AttributeError, OSError) as exc:
                self._fall_back(exc)
        if vectors is None:
            vectors = tfidf_vectors(texts)
        chosen = mmr(vectors, k, weights=weights)
        self.cache[key] = chosen
        self.dirty = True
        return chosen

    def save(self) -> None:
        mark = self.mark_when_made
        if mark is not None and mark[0] == self.method and self._todo <= self.cache.keys():
            self.cache[EVERY_SESSION], self.dirty = mark, True  # (a first build made them all)
        if self.dirty:
            self.speed.keep(DIGESTS, "", self.cache)

    def _fall_back(self, exc: BaseException) -> None:
        log.warning("memwiki: session digests fall back to TF-IDF: %s", exc)
        self._embed, self.method = None, f"TF-IDF (embedder failed: {exc})"


def prepare(ctx: BuildContext) -> None:
    """Start embedding the sessions whose key turns are not kept from the last build (see Digester). A build that
    found every session's key turns kept marks them so, with the sessions layer's version: the next builds of the
    same sessions look for none (a hash of every session's texts was a twentieth of a 100k rebuild)."""
    s = site(ctx)
    digester = ctx.part(Digester)
    done = (digester.method, s.sessions_version)
    if digester.cache.get(EVERY_SESSION) == done:
        return
    if not digester.prefetch([_spoken(s.messages.get(x.id, [])) for x in s.sessions]):
        digester.cache[EVERY_SESSION], digester.dirty = done, True
    else:  # (marked once this build has made them: a first build's next build looks for none either)
        digester.mark_when_made = done


def _spoken(messages: list[Message]) -> list[Message]:
    return [messages[i] for i in spoken(messages)]


def _key_turns(digester: Digester, messages: list[Message]) -> list[int]:
    """The key turns (0-based) among what either side said, both sides quoted."""
    candidates = spoken(messages)
    chosen = [candidates[j] for j in digester.key_turns([messages[i] for i in candidates])]
    return both_sides(chosen, messages, candidates)


def _when(value: str) -> str:
    return value[:16].replace("T", " ") if value else "—"


_ID_RUN = re.compile(r"[\w-]+")


class _Citations:
    """The facts whose source cites a session, and the memories written in it, indexed once per build."""

    def __init__(self, s: Site) -> None:
        self.s = s
        self.memories: dict[str, list[Memory]] = {}
        for m in s.memories:
            if m.session_id:
                self.memories.setdefault(m.session_id, []).append(m)
        simple = {sid for sid in s.session_by_id if _ID_RUN.fullmatch(sid)}
        self.facts: dict[str, list[Triple]] = {}
        for t in s.triples:  # `session-1` must not match `session-10`: whole runs of word characters and dashes
            for run in dict.fromkeys(_ID_RUN.findall(t.source or "")):
                if run in simple:
                    self.facts.setdefault(run, []).append(t)
        for sid in s.session_by_id.keys() - simple:
            cites = re.compile(rf"(?<![\w-]){re.escape(sid)}(?![\w-])")
            self.facts[sid] = [t for t in s.triples if cites.search(t.source or "")]


def _touched(s: Site, citations: _Citations, session: Session, messages: list[Message], uri: str) -> tuple[str, str]:
    """HTML lists of the concepts linked or named in a session, and the facts that cite it."""
    seen: dict[str, str] = {}
    for message in messages:
        for found in find_links(message.content, s.index.texts):
            concept = s.index.link_target(found.link)
            if concept is not None and concept.src_uri not in seen:
                url = s.href(uri, concept.src_uri)
                cls = "mw-wikilink mw-wanted" if concept.wanted else "mw-wikilink"
                # a wanted concept's title is whichever spelling the scan met first: the link's own is stable
                label = found.link.target if concept.wanted else concept.title
                seen[concept.src_uri] = f'<a class="{cls}" href="{esc(url)}">{esc(label)}</a>'
    named = s.mentions()  # the pages and entities the turns name without a link
    for concept in (c for n in range(1, len(messages) + 1) for c in named.named_in(uri, message_anchor(n))):
        url = s.href(uri, concept.src_uri)
        seen.setdefault(concept.src_uri, f'<a class="mw-wikilink" href="{esc(url)}">{esc(concept.title)}</a>')
    concepts = " · ".join(seen.values())
    facts = []
    for t in citations.facts.get(session.id, []) if session.id else []:
        state = "current" if t.current else f"ended {esc(t.valid_to)}"
        facts.append(
            f"<li>{esc(t.subject_name or t.subject)} <em>{esc(t.predicate)}</em> {esc(t.object_name or t.object)} "
            f"<span class='mw-muted'>({state})</span></li>"
        )
    return concepts, "".join(facts)


def _digest_page(s: Site, digester: Digester, citations: _Citations, session: Session) -> GeneratedPage:
    uri = s.session_uri(session.id)
    messages = s.messages.get(session.id, [])
    title = session.title or session.id
    roles = Counter(m.role for m in messages)
    counts = ", ".join(f"{n} {esc(r)}" for r, n in roles.most_common())
    md = frontmatter(title, session=session.id) + f"# {md_esc(title)}\n\n"
    meta = f"{esc(_when(session.started))} – {esc(_when(session.ended or (messages[-1].time if messages else '')))}"
    meta += f" · {len(messages)} messages ({counts})" if messages else " · no messages"
    if session.source:
        meta += f" · source {esc(session.source)}"
    back = s.href(uri, SESSIONS)
    md += f'<p class="mw-muted">{meta} · <a href="{esc(back)}">all sessions</a></p>\n'
    md += block(_about_html(s, about(messages), citations, session, uri), cls="mw-about")
    md += "\n## Key turns\n"
    turns = _key_turns(digester, messages)
    if turns:
        items = "".join(
            f'<blockquote class="mw-turn mw-turn-{esc(messages[i].role)}"><p class="mw-role">{esc(messages[i].role)} · '
            f'<a href="#{message_anchor(i + 1)}">#{i + 1}</a></p>'
            f"{s.renderer.html(messages[i].content, uri)}</blockquote>"
            for i in turns
        )
        md += block(items, cls="mw-digest")
    else:
        md += "\nNothing to summarise.\n"
    concepts, facts = _touched(s, citations, session, messages, uri)
    md += "\n## Concepts and facts\n"
    md += block(
        f"<p>{concepts or 'This session names no concept page.'}</p>" + (f"<ul>{facts}</ul>" if facts else ""),
        cls="mw-touched",
    )
    md += "\n## Transcript\n"
    rows = "".join(
        f'<div class="mw-msg mw-msg-{esc(m.role)}" id="{message_anchor(n)}"><p class="mw-role">{esc(m.role)}'
        f'{" · " + esc(m.tool_name) if m.tool_name else ""} <span class="mw-muted">{esc(_when(m.time))}</span></p>'
        f"{s.renderer.html(m.content, uri)}</div>"
        for n, m in enumerate(messages, 1)
    )
    md += block(f"<summary>Transcript ({len(messages)} messages)</summary>{rows}", cls="mw-transcript", tag="details")
    return GeneratedPage(uri, safe_title(title), md, section="sessions", meta={"date": session.started})


def _about_html(s: Site, summary: About, citations: _Citations, session: Session, uri: str) -> str:
    """The digest's opening: the question, the outcome, the decisions, and what was written during the session."""

    def quoted(label: str, turn: Turn) -> str:
        link = f'<a class="mw-muted" href="#{message_anchor(turn.n)}">#{turn.n}</a>'
        return f"<p><strong>{label}</strong> {s.renderer.inline(turn.text, uri)} {link}</p>"

    parts = []
    if summary.asked is not None:
        parts.append(quoted("Asked:", summary.asked))
    if summary.outcome is not None:
        parts.append(quoted("Came out:", summary.outcome))
    if summary.decisions:
        items = "".join(
            f'<li>{s.renderer.inline(t.text, uri)} <a class="mw-muted" href="#{message_anchor(t.n)}">#{t.n}</a></li>'
            for t in summary.decisions
        )
        parts.append(f"<p><strong>Decided or found:</strong></p><ul>{items}</ul>")
    written = citations.memories.get(session.id, []) if session.id else []
    facts = citations.facts.get(session.id, []) if session.id else []
    if written or facts:
        homes = [(m, s.memory_home.get(m.id)) for m in written[:WRITTEN_SHOWN]]
        links = [
            f'<a href="{esc(s.href(uri, home[0], home[1]))}">{esc(_short(m.text))}</a>' for m, home in homes if home
        ]
        more = f" and {len(written) - len(links)} more" if len(written) > len(links) else ""
        said = f"{len(written)} {'memory' if len(written) == 1 else 'memories'}" if written else ""
        fact_word = f"{len(facts)} {'fact' if len(facts) == 1 else 'facts'}" if facts else ""
        head = " and ".join(x for x in (said, fact_word) if x)
        listed = f": {' · '.join(links)}{more}" if links else ""
        parts.append(f"<p><strong>Written during it:</strong> {head}{listed}</p>")
    return "".join(parts) or "<p>Nothing was said in words in this session.</p>"


def _short(text: str, limit: int = 60) -> str:
    one = " ".join(as_words(text).split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _index_uri(n: int) -> str:
    return SESSIONS if n == 1 else f"sessions/page-{n}.md"


def _session_keys(ctx: BuildContext, s: Site) -> dict[str, str]:
    """Session id -> a digest of the session and its turns: kept across builds by the sessions layer's version
    (forty thousand turns were hashed again in each rebuild after a memory changed)."""
    version = s.sessions_version
    kept = ctx.speed.load(SESSION_KEYS, version)
    if isinstance(kept, dict) and kept.keys() == s.session_by_id.keys() and not ctx.speed.check_memos:
        return kept
    made = {x.id: key_of(values_of(x), [values_of(m) for m in s.messages.get(x.id, [])]) for x in s.sessions}
    if kept is not None and kept != made and ctx.speed.check_memos:
        raise StaleMemo("the sessions' keys: their version matched, but the sessions changed")
    ctx.speed.keep(SESSION_KEYS, version, made)
    return made


def _timeline(ctx: BuildContext, s: Site, digester: Digester) -> list[GeneratedPage]:
    """The sessions' index, newest first, PER_INDEX_PAGE a page: kept across builds by the sessions layer's version
    (a line of each session is taken from its turns: two thousand sessions' turns were read again in every
    rebuild, though no session changed)."""
    key = key_of(ctx.speed.shared, s.sessions_version, digester.method)
    kept = ctx.speed.load(TIMELINE, key)
    pages = _timeline_pages(s, digester) if kept is None or ctx.speed.check_memos else []
    if isinstance(kept, list) and all(isinstance(page, tuple) and len(page) == 4 for page in kept):
        found = [GeneratedPage(uri, head, md, "sessions", in_nav, {"order": 4}) for uri, head, md, in_nav in kept]
        if pages and [p.fingerprint for p in pages] != [p.fingerprint for p in found]:  # (check_memos)
            raise StaleMemo("the sessions' index: its key matched, but its pages changed: the key misses an input")
        return found
    pages = pages or _timeline_pages(s, digester)
    ctx.speed.keep(TIMELINE, key, [(p.src_uri, p.title, p.markdown, p.in_nav) for p in pages])
    return pages


def _timeline_pages(s: Site, digester: Digester) -> list[GeneratedPage]:
    sessions = s.sessions  # newest first
    pages = max(1, -(-len(sessions) // PER_INDEX_PAGE))
    out = []
    for n in range(1, pages + 1):
        uri = _index_uri(n)
        head = "Sessions" if n == 1 else f"Sessions ({n}/{pages})"
        md = (
            frontmatter(head)
            + f"# {head}\n\n{len(sessions):,} sessions, newest first. Digests: {esc(digester.method)}.\n"
        )
        month = ""
        for session in sessions[(n - 1) * PER_INDEX_PAGE : n * PER_INDEX_PAGE]:
            if session.started[:7] != month:
                month = session.started[:7]
                md += f"\n## {esc(month or 'undated')}\n"
            messages = s.messages.get(session.id, [])
            url = s.href(uri, s.session_uri(session.id))
            line = about(messages, decisions=False).line()
            teaser = s.renderer.inline(line, uri) if line else ""
            md += block(
                f'<p class="mw-post-date">{esc(_when(session.started))} · {len(messages)} messages</p>'
                f'<h3><a href="{esc(url)}">{esc(session.title or session.id)}</a></h3><p>{teaser}</p>',
                cls="mw-post",
            )
        if pages > 1:
            links = [
                f"<strong>{i}</strong>" if i == n else f'<a href="{esc(s.href(uri, _index_uri(i)))}">{i}</a>'
                for i in range(1, pages + 1)
            ]
            md += block(" ".join(links), cls="mw-pager", tag="nav")
        out.append(GeneratedPage(uri, head, md, section="sessions", in_nav=n == 1, meta={"order": 4}))
    return out


def build(ctx: BuildContext) -> BuildResult:
    s = site(ctx)
    digester = ctx.part(Digester)
    citations = _Citations(s)
    written_tokens = s.memory_tokens()
    said = _session_keys(ctx, s)

    def shown(session: Session) -> tuple:
        """What a digest page shows: the session and its turns, the memories written in it (the first few, where
        their cards are) and the facts that cite it (the graph layer's version, in the memo's shared part)."""
        written = citations.memories.get(session.id, []) if session.id else []
        cards = [(written_tokens[m.id], s.memory_home.get(m.id)) for m in written[:WRITTEN_SHOWN]]
        return said[session.id], len(written), cards

    memo = ctx.speed.memo("sessions", s.layer_version("graph", s.triples), digester.method)
    pages = [
        memo.page(
            s.session_uri(session.id),
            shown(session),
            lambda session=session: _digest_page(s, digester, citations, session),
        )
        for session in s.sessions
    ]
    pages = _timeline(ctx, s, digester) + pages
    digester.save()
    ctx.notes.append(f"Session digests chosen with {digester.method}.")
    return pages, []
