"""Entity types a graph does not record, read from the predicates that name the entity; and the values a graph
stores as entities.

MemPalace writes every entity with type `unknown` unless its writer says otherwise, so a palace's graph shows one
colour and no kinds. Where the graph has no type, the facts say it: whoever `works_at` something is a person and
that something an organisation; what something is `located_in` is a place; what something `uses` is a tool. A type
the graph records always wins; an entity no rule reaches stays `unknown`.

A palace also makes an entity of every object, `1.3` and `2026-03-01` included. Such a value (a number, a
version, a date, a yes or no, or whatever a `status` or a `version` fact gives) that only ever stands as an object,
with no type of its own, is a literal: shown as the value of its subject's fact, not as a page or a node.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

from memwiki.source import Entity, Triple

UNKNOWN = "unknown"
VALUE_PREDICATES = frozenset(
    "status state stage phase mode version has_version count priority level score rating size port value".split()
)
_LITERAL = re.compile(
    r"(?i)[<>~≈]?\s?[-+]?v?\d[\d.,:/_-]*(?:\s?(?:%|[a-z]{1,3}))?|true|false|yes|no|none|null|n/a"
    r"|是|否|有|无"
)
# predicate (lower-case, `_`-joined, as the graph stores it) -> (type of its subject, type of its object)
ROLES: dict[str, tuple[str, str]] = {
    "works_at": ("person", "organisation"),
    "works_for": ("person", "organisation"),
    "employed_by": ("person", "organisation"),
    "studies_at": ("person", "organisation"),
    "member_of": ("person", "organisation"),
    "reports_to": ("person", "person"),
    "manages": ("person", ""),
    "managed_by": ("", "person"),
    "maintains": ("person", "project"),
    "maintained_by": ("project", "person"),
    "reviews": ("person", ""),
    "reviewed_by": ("", "person"),
    "knows": ("person", "person"),
    "married_to": ("person", "person"),
    "friend_of": ("person", "person"),
    "lives_in": ("person", "place"),
    "born_in": ("person", "place"),
    "located_in": ("", "place"),
    "based_in": ("", "place"),
    "deployed_in": ("", "place"),
    "uses": ("", "tool"),
    "depends_on": ("", "tool"),
    "runs": ("", "tool"),
    "runs_on": ("", "machine"),
    "hosted_on": ("", "machine"),
    "deployed_on": ("", "machine"),
    "written_in": ("", "language"),
    "prefers": ("person", ""),
    "likes": ("person", ""),
}


def inferred_types(triples: Iterable[Triple]) -> dict[str, str]:
    """Entity id -> the type most of its facts give it (ties: the first in `ROLES` order)."""
    votes: dict[str, Counter[str]] = {}
    for t in triples:
        subject_type, object_type = ROLES.get(t.predicate, ("", ""))
        for end, kind in ((t.subject, subject_type), (t.object, object_type)):
            if kind:
                votes.setdefault(end, Counter())[kind] += 1
    return {e: c.most_common(1)[0][0] for e, c in votes.items()}


def with_types(entities: Sequence[Entity], triples: Iterable[Triple]) -> list[Entity]:
    """`entities`, each without a recorded type given the one its facts imply (a recorded type is kept)."""
    guessed = inferred_types(triples)
    return [
        replace(e, type=guessed[e.id]) if (not e.type or e.type == UNKNOWN) and e.id in guessed else e for e in entities
    ]


def literal_ids(entities: Sequence[Entity], triples: Iterable[Triple]) -> frozenset[str]:
    """The ids of the values stored as entities: untyped, never the subject of a fact, and literal-shaped or only
    ever the object of a predicate that gives a value (`nb-009 status active`)."""
    triples = list(triples)
    subjects = {t.subject for t in triples}
    known = {e.id: e for e in entities}

    def untyped(entity_id: str) -> bool:
        e = known.get(entity_id)
        return e is None or not e.type or e.type == UNKNOWN

    def literal_shaped(entity_id: str) -> bool:
        e = known.get(entity_id)
        return bool(_LITERAL.fullmatch((e.name if e is not None and e.name else entity_id).strip()))

    valued: dict[str, bool] = {}  # object -> whether every fact that names it gives a value (`status`, `version`)
    for t in triples:
        valued[t.object] = valued.get(t.object, True) and t.predicate in VALUE_PREDICATES
    return frozenset(o for o in valued.keys() - subjects if untyped(o) and (valued[o] or literal_shaped(o)))
