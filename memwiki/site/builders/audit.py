"""Audit page: conflicting current facts, facts past their valid_to, wanted and orphan concepts,
clusters of near-duplicate L2 memories, hot memory over its threshold, the embedder and its dimension.

`findings(ctx)` is the data (the plugin turns the kinds that the config marks as errors into build
warnings, so `mkdocs build --strict` fails on them); `build(ctx)` is the page.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cached_property

import numpy as np

from memwiki.site.builders import AUDIT, PERSONA, BuildResult, Site, frontmatter, paged_uri, pager, site
from memwiki.site.builders.privacy_report import profile_line, withheld_table
from memwiki.site.builders.provenance import origin, source_html
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.generated import GeneratedPage
from memwiki.site.model.render import block, esc, md_esc
from memwiki.site.model.wikilinks import as_words
from memwiki.site.speed import forked
from memwiki.site.speed.layer_cache import CachedSource
from memwiki.source import Memory, Triple
from memwiki.text.tokens import tokens

KINDS = ("conflicts", "expired", "wanted", "orphans", "duplicates", "hot_over_threshold", "persona_over_cap", "source")
DUPLICATE_COSINE = 0.95
DUPLICATE_JACCARD = 0.9
BLOCK = 1024  # rows of the similarity matrix computed at once ...
PAIR_CELLS = 1 << 22  # ... and at most this many similarities (16 MB of float32), whatever the store's size
CLUSTERS_VERSION = 5  # of what DUPLICATES keeps (5: clusters, and each memory's digest and norm)
DUPLICATES = "duplicates.marshal"  # in cache_dir: the last build's pairs, with what each memory was embedded from
FORKED = "duplicates"  # the near-duplicates handed to a forked process (speed.forked)
# What one audit page lists: at most LISTED findings of a kind; the next ones go on that kind's follow-on pages
# (audit/<kind>-2.md, ...), at most PAGES pages in all; the rest are counted, not listed. A cluster shows its
# first MEMBERS_SHOWN memories. 745 copies of one memory were 132,360 pairs, a 20.9 MB audit page and a
# 254-325 s build; they are now one cluster.
LISTED = 100
PAGES = 10
MEMBERS_SHOWN = 10


@dataclass(frozen=True)
class Cluster:
    """Near-duplicate L2 memories: each is ≥ the threshold from another of them (a chain joins them all)."""

    ids: tuple[str, ...]  # in the store's order
    score: float  # the similarity of the cluster's closest pair


@dataclass(frozen=True)
class Finding:
    """One problem: its kind (one of KINDS), a one-line message (plain text) and the page it concerns."""

    kind: str
    message: str
    uri: str = ""
    anchor: str = ""


def conflicts(triples: list[Triple]) -> list[list[Triple]]:
    """Groups of current facts with the same subject and predicate but different objects."""
    groups: dict[tuple[str, str], list[Triple]] = {}
    for t in triples:
        if t.current:
            groups.setdefault((t.subject, t.predicate), []).append(t)
    return [g for g in groups.values() if len({t.object for t in g}) > 1]


def expired(triples: list[Triple], today: str) -> list[Triple]:
    """Ended facts whose valid_to has passed and that nothing current replaced (same subject, predicate)."""
    current = {(t.subject, t.predicate) for t in triples if t.current}
    return [t for t in triples if t.valid_to and t.valid_to[:10] < today and (t.subject, t.predicate) not in current]


def _lexical_pairs(memories: list[Memory]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Pairs of memories (by position) whose token sets have a Jaccard index ≥ DUPLICATE_JACCARD, one batch
    per memory (a small store's check when it has no vectors)."""
    sets = [set(tokens(m.text)) for m in memories]
    for i in range(len(memories)):
        found = []
        for j in range(i + 1, len(memories)):
            a, b = sets[i], sets[j]
            if a and b:
                score = len(a & b) / len(a | b)
                if score >= DUPLICATE_JACCARD:
                    found.append((j, score))
        if found:
            yield np.full(len(found), i), np.array([j for j, _ in found]), np.array([x for _, x in found])


def _cosine_pairs(v: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Pairs (i < j) of rows of `v` (normalised) whose cosine is ≥ DUPLICATE_COSINE, a block of rows at a time: a
    block's similarities (at most PAIR_CELLS of them) are all that is held, never every pair."""
    step = max(1, min(BLOCK, PAIR_CELLS // max(1, len(v))))
    for start in range(0, len(v), step):
        sims = v[start : start + step] @ v.T
        rows, cols = np.nonzero(sims >= DUPLICATE_COSINE)
        upper = cols > rows + start
        rows, cols = rows[upper], cols[upper]
        yield rows + start, cols, sims[rows, cols]


def _clusters(n: int, pairs: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> list[tuple[list[int], float]]:
    """Connected components (of two or more) of the graph of `pairs` over n nodes, each with its closest pair's
    score: union-find over a batch of pairs at a time, vectorised (roots hook onto the smaller root, pointers
    jump until every node points at its root), so 277k pairs of 745 copies cost a few numpy calls."""
    parent = np.arange(n)
    best = np.full(n, -np.inf)
    for a, b, score in pairs:
        np.maximum.at(best, a, score)
        np.maximum.at(best, b, score)
        while a.size:
            ra, rb = parent[a], parent[b]
            apart = ra != rb
            if not apart.any():
                break
            a, b, ra, rb = a[apart], b[apart], ra[apart], rb[apart]
            parent[np.maximum(ra, rb)] = np.minimum(ra, rb)  # of several writes to one root, one wins: loop again
            while not np.array_equal(parent, jumped := parent[parent]):
                parent = jumped
    groups: dict[int, list[int]] = {}
    for node, root in enumerate(parent.tolist()):
        groups.setdefault(root, []).append(node)
    out = [(members, float(best[members].max())) for members in groups.values() if len(members) > 1]
    out.sort(key=lambda c: (-len(c[0]), c[0][0]))  # biggest first, then in the store's order
    return out


def near_duplicates(ctx: BuildContext, memories: list[Memory]) -> tuple[list[Cluster], str]:
    """Clusters of L2 memories whose vectors are nearly the same (cosine ≥ 0.95 joins two memories' clusters),
    biggest first; kept across builds with what each memory was embedded from (`_vector_clusters`).

    Falls back to token Jaccard ≥ 0.9 (small stores only) when the source has no vectors.
    """
    if len(memories) < 2:
        return [], "nothing to compare"
    ids = [m.id for m in memories]
    made, found = forked.taken(ctx, FORKED) if memories is site(ctx).memories else (False, None)
    if not made:
        found = _vector_clusters(ctx, memories)
    if found is not None:
        method = f"cosine ≥ {DUPLICATE_COSINE} on the store's vectors"
    elif len(memories) <= 2000:
        method = f"token Jaccard ≥ {DUPLICATE_JACCARD} (the source has no usable vectors)"
        found = _clusters(len(ids), _lexical_pairs(memories))
    else:
        method = "not checked (no usable vectors, too many memories for a lexical check)"
        found = []
    method += "; memories joined by a chain of such pairs form one cluster"
    return [Cluster(tuple(ids[n] for n in members), score) for members, score in found], method


def start(ctx: BuildContext) -> None:
    """Find the near-duplicates in a forked process while other builders run (speed.forked; `near_duplicates` then
    takes what it found): in a rebuild (the last build's clusters are kept). The vectors the process needs are asked
    of the source first; one that needs more gives up, and the clusters are found here."""
    source, kept = ctx.source, ctx.speed.cache_path(DUPLICATES)
    memories = site(ctx).memories
    if not (isinstance(source, CachedSource) and kept is not None and kept.is_file() and len(memories) > 1):
        return
    source.fetch_new_vectors()
    forked.apart(ctx, FORKED, lambda: _vector_clusters(ctx, memories))


def _vector_clusters(ctx: BuildContext, memories: list[Memory]) -> list[tuple[list[int], float]] | None:
    """The clusters by cosine, as `_clusters` gives them. The last build's clusters are kept with a digest of what
    each memory was embedded from and its vector's norm; when a few memories changed, only they are compared with
    all (no other vector is normalised again), and only the clusters they were in are made again from their other
    members (a 100k store's rebuild compared every pair again: a minute). None: the source has no vectors."""
    ids = [m.id for m in memories]
    embedded_from = site(ctx).embedded_from()
    digests = [embedded_from[i][:12] for i in ids]
    key = f"{CLUSTERS_VERSION}:{ctx.source.info().embedder}"
    kept = ctx.speed.load(DUPLICATES, key)
    old: dict[str, tuple[str, float]] = {}  # memory id -> (digest, norm of its vector)
    clusters: list[tuple[list[str], float]] = []
    if isinstance(kept, tuple) and len(kept) == 2 and isinstance(kept[0], dict) and isinstance(kept[1], list):
        old, clusters = kept
    row = {i: n for n, i in enumerate(ids)}
    changed = [n for n, (i, d) in enumerate(zip(ids, digests, strict=True)) if (old.get(i) or ("",))[0] != d]
    if old and not changed and len(old) == len(ids):
        return _clusters(len(ids), [_chains(clusters, row)])
    vectors = ctx.source.memory_vectors(ids)
    if vectors is None or len(vectors) != len(ids):
        return None
    v = np.asarray(vectors, dtype=np.float32)
    if not old or len(changed) * 4 > len(ids):  # (most of them: every pair again, a block at a time)
        norms = np.sqrt(np.einsum("ij,ij->i", v, v))
        v /= np.maximum(norms, 1e-12)[:, None]  # (in place: no 200 MB square at 100k)
        found = _clusters(len(ids), _cosine_pairs(v))
    else:
        norms = np.array([(old.get(i) or ("", 0.0))[1] for i in ids], dtype=np.float32)
        norms[changed] = np.sqrt(np.einsum("ij,ij->i", v[changed], v[changed]))
        found = _clusters(len(ids), _pairs_after_change(v, norms, clusters, row, set(changed)))
    keep = [([ids[n] for n in members], score) for members, score in found]
    kept_by_id = dict(zip(ids, zip(digests, norms.tolist(), strict=True), strict=True))
    ctx.speed.keep(DUPLICATES, key, (kept_by_id, keep))
    return found


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]  # rows a, rows b, their cosine


def _chains(clusters: list[tuple[list[str], float]], row: dict[str, int]) -> Pairs:
    """A kept cluster as pairs that join it again (each member with the first, at the cluster's score)."""
    a, b, c = [], [], []
    for members, score in clusters:
        rows = [row[i] for i in members if i in row]
        a += rows[:1] * (len(rows) - 1)
        b += rows[1:]
        c += [score] * (len(rows) - 1)
    return np.array(a, dtype=np.int64), np.array(b, dtype=np.int64), np.array(c, dtype=np.float64)


def _pairs_after_change(
    v: np.ndarray, norms: np.ndarray, clusters: list[tuple[list[str], float]], row: dict[str, int], changed: set[int]
) -> Iterator[Pairs]:
    """The pairs that make the clusters after `changed` rows changed: the kept clusters none of them was in (as
    chains), each other kept cluster's remaining members compared among themselves, and the changed rows with all.
    `v`: the vectors as they are, `norms`: their lengths."""
    safe = np.maximum(norms, 1e-12)
    untouched = [c for c in clusters if all(i in row and row[i] not in changed for i in c[0])]
    yield _chains(untouched, row)
    for members, _ in clusters:
        rest = [row[i] for i in members if i in row and row[i] not in changed]
        if 1 < len(rest) < len(members):  # (a member changed or gone: the rest may no longer hold together)
            sub = v[rest] / safe[rest, None]
            for a, b, c in _cosine_pairs(sub):
                yield np.array(rest)[a], np.array(rest)[b], c
    new = np.array(sorted(changed), dtype=np.int64)
    sims = (v @ (v[new] / safe[new, None]).T).T / safe[None, :]
    sims[np.arange(len(new)), new] = -1.0  # (no memory with itself)
    rows, cols = np.nonzero(sims >= DUPLICATE_COSINE)
    yield new[rows], cols, sims[rows, cols].astype(np.float64)


def cluster_message(cluster: Cluster) -> str:
    """One line for a cluster: its first MEMBERS_SHOWN ids, how many more, its closest pair's similarity."""
    shown = " ≈ ".join(cluster.ids[:MEMBERS_SHOWN])
    if len(cluster.ids) == 2:
        return f"{shown} ({cluster.score:.3f})"
    more = len(cluster.ids) - MEMBERS_SHOWN
    tail = f" ≈ … {more:,} more not shown" if more > 0 else ""
    return f"{shown}{tail} ({len(cluster.ids):,} memories, closest pair {cluster.score:.3f})"


class Audit:
    """What the audit finds in this build, found once: the audit page, the flags on cards and pages, and the
    plugin's build warnings all read it."""

    def __init__(self, ctx: BuildContext) -> None:
        self.site = s = site(ctx)
        self._conflicts = ctx.part(_Conflicts)
        self.conflicts = self._conflicts.groups  # groups of conflicting current facts
        s.mentions()  # (the orphans need them: found first, while the near-duplicates may be found apart, `start`)
        self.clusters, self.duplicate_method = near_duplicates(ctx, s.memories)
        self.findings = self._find()

    def _find(self) -> list[Finding]:
        """Every problem found, in page order."""
        s = self.site
        out: list[Finding] = []
        names = s.entity_names

        def fact(t: Triple) -> str:
            subject = names.get(t.subject, t.subject_name or t.subject)
            return f"{subject} {t.predicate} {names.get(t.object, t.object_name or t.object)}"

        for group in self.conflicts:
            c = s.index.for_entity(group[0].subject)
            objects = " | ".join(names.get(t.object, t.object) for t in group)
            subject = names.get(group[0].subject, group[0].subject)
            out.append(Finding("conflicts", f"{subject} {group[0].predicate} → {objects}", c.src_uri if c else ""))
        for t in expired(s.triples, s.today):
            c = s.index.for_entity(t.subject)
            out.append(
                Finding("expired", f"{fact(t)} (valid {t.valid_from or '?'} → {t.valid_to})", c.src_uri if c else "")
            )
        for c in s.index.wanted:
            out.append(Finding("wanted", f"{c.title} (wanted by {len(c.backlinks)})", c.src_uri))
        for c in s.orphans():
            out.append(Finding("orphans", c.title, c.src_uri))
        for cluster in self.clusters:
            page, anchor = s.memory_home.get(cluster.ids[0], ("", ""))
            out.append(Finding("duplicates", cluster_message(cluster), page, anchor))
        for hot in s.hot:
            if hot.usage > hot.threshold:
                out.append(
                    Finding(
                        "hot_over_threshold",
                        f"{hot.target}: {hot.chars:,}/{hot.cap:,} chars ({hot.usage:.0%} > {hot.threshold:.0%})",
                        PERSONA,
                    )
                )
        if s.persona and s.persona.truncated:
            out.append(
                Finding("persona_over_cap", f"SOUL.md has {s.persona.chars:,} chars, cap {s.persona.cap:,}", PERSONA)
            )
        for note in s.info.notes:
            out.append(Finding("source", note))
        return out

    @cached_property
    def flags(self) -> Flags:
        """The near-duplicate and conflict findings, keyed by the memories and entities they concern (a conflict
        also flags the memories its facts came from)."""
        s = self.site
        out = Flags()
        clusters = self.clusters
        for i, cluster in enumerate(clusters):
            uri, anchor = _where("duplicates", i, len(clusters), duplicate_anchor(s, cluster))
            more = len(cluster.ids) - 4  # others than the three named (a looping agent's cluster has thousands)
            for memory_id in cluster.ids:
                named = [m for m in cluster.ids[:4] if m != memory_id][:3]
                title = f"near-duplicate of {', '.join(named)}" + (f" and {more:,} more" if more > 0 else "")
                out.memories.setdefault(memory_id, []).append(Flag("duplicates", "near-duplicate", title, uri, anchor))
        out.entities = dict(self._conflicts.entities)
        for memory_id, found in self._conflicts.memories.items():
            listed = out.memories.setdefault(memory_id, [])
            listed += [flag for flag in found if flag not in listed]
        return out


class _Conflicts:
    """The groups of conflicting current facts, and the flags they put on entities and on the memories the facts
    came from (ctx.part: the concept pages show them, made apart before the rest of the audit is found)."""

    def __init__(self, ctx: BuildContext) -> None:
        s = site(ctx)
        self.groups = groups = conflicts(s.triples)
        self.entities: dict[str, list[Flag]] = {}
        self.memories: dict[str, list[Flag]] = {}
        for i, group in enumerate(groups):
            uri, anchor = _where("conflicts", i, len(groups), conflict_anchor(group))
            subject = s.entity_names.get(group[0].subject, group[0].subject)
            objects = " | ".join(s.entity_names.get(t.object, t.object) for t in group)
            flag = Flag("conflicts", "conflicting facts", f"{subject} {group[0].predicate} → {objects}", uri, anchor)
            self.entities.setdefault(group[0].subject, []).append(flag)
            for t in group:
                found = origin(s, t)
                if found is not None and found.kind == "memory" and flag not in self.memories.get(found.ref, []):
                    self.memories.setdefault(found.ref, []).append(flag)


def findings(ctx: BuildContext) -> list[Finding]:
    """Every problem the audit finds, in page order."""
    return ctx.part(Audit).findings


def entity_flags(ctx: BuildContext) -> dict[str, list[Flag]]:
    """The audit's flags of entities (conflicting facts), known before the near-duplicates and orphans are."""
    return ctx.part(_Conflicts).entities


def flags(ctx: BuildContext) -> Flags:
    """The audit's flags of memories and entities (see Audit.flags)."""
    return ctx.part(Audit).flags


TITLES = {
    "conflicts": "Conflicting current facts",
    "expired": "Facts past their valid_to",
    "wanted": "Wanted concepts",
    "orphans": "Orphan concepts",
    "duplicates": "Near-duplicate memories",
    "hot_over_threshold": "Hot memory over threshold",
    "persona_over_cap": "Persona over its cap",
    "source": "Source notes",
}


SIDE_SHOWN = 3  # texts shown side by side for a finding (a cluster's first members; a conflict's facts)
SIDE_CHARS = 600  # of each text (its card has the whole)


def conflict_anchor(group: list[Triple]) -> str:
    """The id of a conflict on the audit page (stable: from its subject and predicate)."""
    key = f"{group[0].subject}\0{group[0].predicate}".encode()
    return "conflict-" + hashlib.sha1(key).hexdigest()[:10]


def duplicate_anchor(s: Site, cluster: Cluster) -> str:
    """The id of a near-duplicate cluster on the audit page (from its first memory's card anchor)."""
    return "dup-" + s.memory_anchor(cluster.ids[0]).removeprefix("mem-")


_TOKEN = re.compile(r"\s+|[0-9A-Za-z_]+|.", re.S)  # words, spaces, and any other character alone (CJK)


def _cut(text: str) -> str:
    return text[:SIDE_CHARS] + ("…" if len(text) > SIDE_CHARS else "")


def _side_text(text: str, against: str | None = None) -> str:
    """An untrusted text for a side-by-side column: escaped, cut to SIDE_CHARS, line breaks kept (CSS); with
    `against`, what it does not share with that text is marked."""
    text = _cut(as_words(text))  # (a diff marks words: its `[[links]]` are shown as the words they read)
    if against is None or against == text:
        return f'<span class="mw-side-text">{esc(text)}</span>'
    mine, theirs = _TOKEN.findall(text), _TOKEN.findall(_cut(as_words(against)))
    out = []
    for op, i1, i2, _, _ in SequenceMatcher(None, mine, theirs, autojunk=False).get_opcodes():
        part = esc("".join(mine[i1:i2]))
        out.append(f"<mark>{part}</mark>" if op != "equal" and part.strip() else part)
    return f'<span class="mw-side-text">{"".join(out)}</span>'


def _side(columns: list[tuple[str, str]], marked: bool = False) -> str:
    """Columns of (head HTML, text) side by side; `marked`: each text's differences from its neighbour's."""
    cells = []
    for n, (head, text) in enumerate(columns):
        against = columns[1 if n == 0 else 0][1] if marked and len(columns) > 1 else None
        cells.append(
            f'<section class="mw-side-item"><header class="mw-side-head">{head}</header>'
            f"{_side_text(text, against)}</section>"
        )
    return f'<div class="mw-side">{"".join(cells)}</div>'


def _conflict_table(s: Site, groups: list[list[Triple]], page: str) -> str:
    """Each conflict: its subject and predicate, then its facts side by side, each with the text it came from."""

    def url(src_uri: str, anchor: str) -> str:
        return s.href(page, src_uri, anchor)

    items = []
    for group in groups:
        c = s.index.for_entity(group[0].subject)
        subj = esc(s.entity_names.get(group[0].subject, group[0].subject))
        if c is not None:
            subj = f'<a href="{esc(s.href(page, c.src_uri))}">{subj}</a>'
        columns = []
        for t in group[: SIDE_SHOWN * 2]:
            found = origin(s, t)
            head = (
                f"<strong>{esc(s.entity_names.get(t.object, t.object))}</strong> · since {esc(t.valid_from or '?')}"
                f" · source {source_html(s, t, url)}"
            )
            columns.append((head, found.text if found is not None else ""))
        more = f'<p class="mw-muted">{len(group) - len(columns):,} more facts.</p>' if len(group) > len(columns) else ""
        items.append(
            f'<li class="mw-finding" id="{conflict_anchor(group)}"><p>{subj} <em>{esc(group[0].predicate)}</em>: '
            f"{len(group)} current values</p>{_side(columns)}{more}</li>"
        )
    return block(f"<ul>{''.join(items)}</ul>", cls="mw-audit mw-audit-conflicts")


def _cluster_item(s: Site, cluster: Cluster, page: str) -> str:
    """A cluster as a list item: its first MEMBERS_SHOWN memories, each linked to its card, and the count; the
    first SIDE_SHOWN texts side by side."""
    links = []
    memories = s.memory_by_id()
    for memory_id in cluster.ids[:MEMBERS_SHOWN]:
        home, anchor = s.memory_home.get(memory_id, ("", ""))
        label = f"<code>{esc(memory_id)}</code>"
        links.append(f'<a href="{esc(s.href(page, home, anchor))}">{label}</a>' if home else label)
    more = len(cluster.ids) - MEMBERS_SHOWN
    tail = f" ≈ … <em>{more:,} more not shown</em>" if more > 0 else ""
    count = f"{len(cluster.ids):,} memories, closest pair" if len(cluster.ids) > 2 else "cosine"
    columns = [
        (f'<span class="mw-side-id">{esc(m)}</span>', memories[m].text)
        for m in cluster.ids[:SIDE_SHOWN]
        if m in memories
    ]
    return (
        f'<li class="mw-finding" id="{duplicate_anchor(s, cluster)}">{" ≈ ".join(links)}{tail} '
        f"<span class='mw-muted'>({count} {cluster.score:.3f})</span>{_side(columns, marked=True)}</li>"
    )


@dataclass(frozen=True)
class Flag:
    """A finding as the page it concerns shows it: a short label, a longer title, where the finding is listed."""

    kind: str  # "duplicates" | "conflicts"
    label: str
    title: str  # plain text
    uri: str
    anchor: str


@dataclass
class Flags:
    """The findings each memory card and entity page carries a flag for."""

    memories: dict[str, list[Flag]] = field(default_factory=dict)
    entities: dict[str, list[Flag]] = field(default_factory=dict)


def _where(kind: str, i: int, total: int, anchor: str) -> tuple[str, str]:
    """The page (and anchor) that lists item i of a kind's `total` (see _kind_pages); past the last follow-on
    page, the audit page itself."""
    if total <= LISTED or i < LISTED:
        return AUDIT, anchor
    n = i // LISTED + 1
    return (paged_uri(f"audit/{kind}", n), anchor) if n <= PAGES else (AUDIT, "")


def flag_html(s: Site, found: list[Flag], page: str) -> str:
    """The flags of a card or page: each a link to its finding on the audit page."""
    return " ".join(
        f'<a class="mw-flag mw-flag-{f.kind}" href="{esc(s.href(page, f.uri, f.anchor))}" '
        f'title="{esc(f.title)}">⚑ {esc(f.label)}</a>'
        for f in found
    )


def _listing(ctx: BuildContext, kind: str, items: list, page: str) -> str:
    """The HTML of some of one kind's items (findings; conflict groups; clusters) as seen from `page`."""
    s = site(ctx)
    if kind == "conflicts":
        return _conflict_table(s, items, page)
    if kind == "duplicates":
        return block(
            f"<ul>{''.join(_cluster_item(s, c, page) for c in items)}</ul>", cls="mw-audit mw-audit-duplicates"
        )
    lis = []
    for f in items:
        text = esc(f.message)
        if f.uri:
            cls = ' class="mw-wikilink mw-wanted"' if kind == "wanted" else ""
            text = f'<a{cls} href="{esc(s.href(page, f.uri, f.anchor))}">{text}</a>'
        lis.append(f"<li>{text}</li>")
    return block(f"<ul>{''.join(lis)}</ul>", cls=f"mw-audit mw-audit-{kind}")


def _items(ctx: BuildContext, kind: str, found: list[Finding]) -> list:
    """What the page lists for a kind, in the findings' order: conflict groups, clusters, or the findings."""
    if kind == "conflicts":
        return ctx.part(Audit).conflicts
    if kind == "duplicates":
        return ctx.part(Audit).clusters
    return found


def _left_out(total: int, listed: int) -> str:
    """The line that says how many items were not listed."""
    return f'<p class="mw-muted mw-left-out">{total - listed:,} more not listed.</p>\n' if total > listed else ""


def _kind_pages(ctx: BuildContext, kind: str, items: list) -> tuple[str, list[GeneratedPage]]:
    """The audit page's part for a kind with more than LISTED items (the first LISTED, a link to the rest, how
    many are left out), and its follow-on pages `audit/<kind>.md`, `audit/<kind>-2.md`, ... (LISTED each, PAGES
    at most)."""
    s = site(ctx)
    base = f"audit/{kind}"
    pages = min(PAGES, -(-len(items) // LISTED))
    listed = min(len(items), pages * LISTED)
    out = []
    for n in range(1, pages + 1):
        uri = paged_uri(base, n)
        chunk = items[(n - 1) * LISTED : n * LISTED]
        title = f"Audit: {TITLES[kind]} ({n}/{pages})"
        first = (n - 1) * LISTED + 1
        md = frontmatter(title) + f"# {md_esc(title)}\n\n"
        back = f'<a href="{esc(s.href(uri, AUDIT))}">the audit</a>'
        md += f'<p class="mw-muted">{first:,}–{first + len(chunk) - 1:,} of {len(items):,} · {back}</p>\n'
        md += pager(s, base, n, pages, uri) + _listing(ctx, kind, chunk, uri) + pager(s, base, n, pages, uri)
        if n == pages:
            md += _left_out(len(items), listed)
        out.append(GeneratedPage(uri, title, md))
    link = f'<a href="{esc(s.href(AUDIT, paged_uri(base, 1)))}">the first {listed:,} on {pages} pages</a>'
    unlisted = f" ({len(items) - listed:,} more not listed)" if len(items) > listed else ""
    part = f'<p class="mw-muted">The first {LISTED:,} of {len(items):,} · {link}{unlisted}.</p>\n'
    return part + _listing(ctx, kind, items[:LISTED], AUDIT), out


def build(ctx: BuildContext) -> BuildResult:
    s = site(ctx)
    found = findings(ctx)
    errors = set(ctx.settings.audit_errors)
    by_kind: dict[str, list[Finding]] = {}
    for f in found:
        by_kind.setdefault(f.kind, []).append(f)
    md = frontmatter("Audit") + "# Audit\n\n"
    summary = "".join(
        f"<tr><td>{esc(TITLES[k])}</td><td>{len(by_kind.get(k, [])):,}</td>"
        f"<td>{'<strong>error</strong>' if k in errors else 'report'}</td></tr>"
        for k in KINDS
    )
    info = s.info
    md += block(
        f"<p>Source: {esc(info.described())} · embedder <code>{esc(info.embedder)}</code>"
        f" · dimension <strong>{info.dim}</strong></p>"
        "<table><thead><tr><th>check</th><th>found</th><th>in strict builds</th></tr></thead>"
        f"<tbody>{summary}</tbody></table>",
        cls="mw-audit-summary",
    )
    pages: list[GeneratedPage] = []
    for kind in KINDS:
        items = _items(ctx, kind, by_kind.get(kind, []))
        md += f"\n## {TITLES[kind]}\n"
        if kind == "duplicates":
            md += f"\nMethod: {esc(ctx.part(Audit).duplicate_method)}.\n"
        if not items:
            md += "\nNone.\n"
        elif len(items) <= LISTED:
            md += _listing(ctx, kind, items, AUDIT)
        else:
            part, more = _kind_pages(ctx, kind, items)
            md += part
            pages += more
    md += "\n## Withheld from this site\n\n" + profile_line(ctx.source.profile) + "\n\n"
    md += withheld_table(ctx) or "Nothing was withheld.\n"
    notes = [n for n in ctx.notes if n]
    if notes:
        md += "\n## Build notes\n" + block(
            "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes[:LISTED]) + "</ul>", cls="mw-audit"
        )
        md += _left_out(len(notes), LISTED)
    return [GeneratedPage(AUDIT, "Audit", md, in_nav=True, meta={"order": 9}), *pages], []
