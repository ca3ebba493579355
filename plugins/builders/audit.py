"""Audit page: conflicting current facts, facts past their valid_to, wanted and orphan concepts,
near-duplicate L2 memories, hot memory over its threshold, the embedder and its dimension.

`findings(ctx)` is the data (the plugin turns the kinds that the config marks as errors into build
warnings, so `mkdocs build --strict` fails on them); `build(ctx)` is the page.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory.snapshot import Memory, Triple
from memory.textio import atomic_write_text
from memory.tokens import tokens
from plugins.builders import AUDIT, PERSONA, BuildResult, Site, frontmatter, site
from plugins.pages import BuildContext, GeneratedPage
from plugins.render import block, esc, href

KINDS = ("conflicts", "expired", "wanted", "orphans", "duplicates", "hot_over_threshold", "persona_over_cap", "source")
DUPLICATE_COSINE = 0.95
DUPLICATE_JACCARD = 0.9
BLOCK = 1024


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


def _lexical_pairs(memories: list[Memory]) -> list[tuple[str, str, float]]:
    sets = [set(tokens(m.text)) for m in memories]
    pairs = []
    for i in range(len(memories)):
        for j in range(i + 1, len(memories)):
            a, b = sets[i], sets[j]
            if a and b:
                score = len(a & b) / len(a | b)
                if score >= DUPLICATE_JACCARD:
                    pairs.append((memories[i].id, memories[j].id, score))
    return pairs


def near_duplicates(ctx: BuildContext, memories: list[Memory]) -> tuple[list[tuple[str, str, float]], str]:
    """Pairs of L2 memories whose vectors are nearly the same (cosine ≥ 0.95), blockwise; cached by content.

    Falls back to token Jaccard ≥ 0.9 (small stores only) when the source has no vectors.
    """
    if len(memories) < 2:
        return [], "nothing to compare"
    digest = hashlib.sha1("\0".join(f"{m.id}\1{m.text}" for m in memories).encode()).hexdigest()
    cache_dir = ctx.options.get("cache_dir")
    path = Path(cache_dir) / "duplicates.json" if cache_dir else None
    if path and path.is_file():
        try:
            cached = json.loads(path.read_text(encoding="utf-8"))
            if cached.get("key") == digest:
                return [tuple(p) for p in cached["pairs"]], cached["method"]
        except (OSError, ValueError, KeyError):
            pass
    ids = [m.id for m in memories]
    vectors = ctx.source.memory_vectors(ids)
    pairs: list[tuple[str, str, float]] = []
    if vectors is not None and len(vectors) == len(ids):
        method = f"cosine ≥ {DUPLICATE_COSINE} on the store's vectors"
        v = np.asarray(vectors, dtype=np.float32)
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        for start in range(0, len(v), BLOCK):
            sims = v[start : start + BLOCK] @ v.T
            rows, cols = np.nonzero(sims >= DUPLICATE_COSINE)
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                if start + r < c:
                    pairs.append((ids[start + r], ids[c], float(sims[r, c])))
    elif len(memories) <= 2000:
        method = f"token Jaccard ≥ {DUPLICATE_JACCARD} (the source has no usable vectors)"
        pairs = _lexical_pairs(memories)
    else:
        method = "not checked (no usable vectors, too many memories for a lexical check)"
    if path:
        atomic_write_text(path, json.dumps({"key": digest, "method": method, "pairs": pairs}, ensure_ascii=False))
    return pairs, method


def findings(ctx: BuildContext) -> list[Finding]:
    """Every problem the audit finds, in page order."""
    cached = ctx.__dict__.get("_memwiki_findings")
    if cached is not None:
        return cached
    s = site(ctx)
    out: list[Finding] = []
    names = s.entity_names

    def fact(t: Triple) -> str:
        subject = names.get(t.subject, t.subject_name or t.subject)
        return f"{subject} {t.predicate} {names.get(t.object, t.object_name or t.object)}"

    for group in _conflicts(ctx):
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
    for c in s.index.orphans:
        out.append(Finding("orphans", c.title, c.src_uri))
    pairs, method = near_duplicates(ctx, s.memories)
    ctx.__dict__["_memwiki_dup_method"] = method
    for a, b, score in pairs:
        out.append(
            Finding(
                "duplicates",
                f"{a} ≈ {b} ({score:.3f})",
                s.memory_home.get(a, ("", ""))[0],
                s.memory_home.get(a, ("", ""))[1],
            )
        )
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
    ctx.__dict__["_memwiki_findings"] = out
    return out


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


def _conflicts(ctx: BuildContext) -> list[list[Triple]]:
    """`conflicts` of this build's facts (found once: the findings and the audit page both list them)."""
    cached = ctx.__dict__.get("_memwiki_conflicts")
    if cached is None:
        cached = ctx.__dict__["_memwiki_conflicts"] = conflicts(site(ctx).triples)
    return cached


def _conflict_table(s: Site, groups: list[list[Triple]]) -> str:
    rows = []
    for group in groups:
        for t in group:
            c = s.index.for_entity(t.subject)
            subj = esc(s.entity_names.get(t.subject, t.subject))
            if c is not None:
                subj = f'<a href="{esc(href(AUDIT, c.src_uri, directory_urls=s.directory_urls))}">{subj}</a>'
            rows.append(
                f"<tr><td>{subj}</td><td>{esc(t.predicate)}</td><td>{esc(s.entity_names.get(t.object, t.object))}</td>"
                f"<td>{esc(t.valid_from or '?')}</td><td>{esc(t.source)}</td></tr>"
            )
    return block(
        "<table><thead><tr><th>subject</th><th>predicate</th><th>object</th><th>since</th><th>source</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>",
        cls="mw-audit-table",
    )


def build(ctx: BuildContext) -> BuildResult:
    s = site(ctx)
    found = findings(ctx)
    errors = set(ctx.options.get("audit_errors", ()))
    by_kind: dict[str, list[Finding]] = {}
    for f in found:
        by_kind.setdefault(f.kind, []).append(f)
    md = frontmatter("Audit") + "# Audit\n\n"
    summary = "".join(
        f"<tr><td>{esc(TITLES[k])}</td><td>{len(by_kind.get(k, []))}</td>"
        f"<td>{'<strong>error</strong>' if k in errors else 'report'}</td></tr>"
        for k in KINDS
    )
    info = s.info
    md += block(
        f"<p>Source: {esc(info.kind)} at <code>{esc(info.location)}</code> · embedder <code>{esc(info.embedder)}</code>"
        f" · dimension <strong>{info.dim}</strong></p>"
        "<table><thead><tr><th>check</th><th>found</th><th>in strict builds</th></tr></thead>"
        f"<tbody>{summary}</tbody></table>",
        cls="mw-audit-summary",
    )
    for kind in KINDS:
        items = by_kind.get(kind, [])
        md += f"\n## {TITLES[kind]}\n"
        if kind == "duplicates":
            md += f"\nMethod: {esc(ctx.__dict__.get('_memwiki_dup_method', ''))}.\n"
        if not items:
            md += "\nNone.\n"
            continue
        if kind == "conflicts":
            md += _conflict_table(s, _conflicts(ctx))
            continue
        lis = []
        for f in items:
            text = esc(f.message)
            if f.uri:
                cls = ' class="mw-wikilink mw-wanted"' if kind == "wanted" else ""
                text = f'<a{cls} href="{esc(href(AUDIT, f.uri, f.anchor, s.directory_urls))}">{text}</a>'
            lis.append(f"<li>{text}</li>")
        md += block(f"<ul>{''.join(lis)}</ul>", cls=f"mw-audit mw-audit-{kind}")
    notes = [n for n in ctx.notes if n]
    if notes:
        md += "\n## Build notes\n" + block(
            "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>", cls="mw-audit"
        )
    return [GeneratedPage(AUDIT, "Audit", md, in_nav=True, meta={"order": 9})], []
