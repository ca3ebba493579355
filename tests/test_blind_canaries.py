"""Blind canary sets (tests/blind/round1.py to round12.py: written without seeing the gate) against the privacy
gate, through tests/blind/harness.py: every kind in every field of a store, a hermes-agent home and a MemPalace
palace, private-marked records in every layer, ORDINARY strings beside them, the real MkDocs build (public
profile). No secret may reach site/ in any class (verbatim, lower-cased, slugged, 12-character fragment), no
private record may be published, and at most 5% of the ORDINARY strings may be redacted. The example set built
with the private profile shows that each of these checks can fail.

One measurement (two builds) per set, shared by its tests; select them with `-k blind` or `-m blind`. A failure
names the JSON breakdown (each leak by kind and field, with its file and an excerpt).
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.blind.harness import TEXT_LAYERS, Report, SiteText, _canary_leaks, first_positions, load_set, measure
from tests.canaries import FIELDS, HERMES_FIELDS, PALACE_FIELDS, Canary

pytestmark = pytest.mark.blind

BLIND = Path(__file__).resolve().parent / "blind"
SETS = tuple(f"round{n}" for n in range(1, 13))
ORDINARY_REDACTED_AT_MOST = 0.05


@pytest.fixture(scope="module", params=SETS)
def blind_report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Report:
    name = request.param
    if not os.environ.get("MEMWIKI_BLIND_ROUNDS"):
        pytest.skip(
            "the full blind rounds take about 25 minutes and the gate still lets some through (issue 20 open): "
            "MEMWIKI_BLIND_ROUNDS=1 pytest -k blind, or python scripts/bench_privacy_blind.py"
        )
    if not (BLIND / f"{name}.py").is_file():
        pytest.skip(f"tests/blind/{name}.py does not exist: the blind set {name} has not been written yet")
    return measure(load_set(name), tmp_path_factory.mktemp(f"blind-{name}"))


def _shown(report: Report, rows: list[dict], keys: tuple[str, ...], limit: int = 25) -> str:
    lines = [report.table(top=10), f"first {min(limit, len(rows))} of {len(rows)}:"]
    lines += ["  " + " | ".join(str(row.get(k)) for k in keys) for row in rows[:limit]]
    return "\n".join(lines)


def test_blind_no_secret_reaches_the_site(blind_report: Report) -> None:
    leaks = sorted(blind_report.leaks, key=lambda leak: (leak["class"] != "verbatim", leak["kind"], leak["field"]))
    assert not leaks, _shown(blind_report, leaks, ("class", "kind", "field", "file", "excerpt"))


def test_blind_no_private_record_is_published(blind_report: Report) -> None:
    published = blind_report.private_published
    assert not published, _shown(blind_report, published, ("layer", "marker", "file", "excerpt"))


def test_blind_ordinary_strings_are_published_unchanged(blind_report: Report) -> None:
    redacted = blind_report.ordinary_redacted
    assert blind_report.ordinary_redacted_share <= ORDINARY_REDACTED_AT_MOST, _shown(
        blind_report, redacted, ("text", "file", "excerpt")
    )


def test_blind_harness_sees_what_the_private_profile_publishes(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The example set built with the private profile: its canaries, private records and ORDINARY strings are on
    the site, so the three checks above can fail; and the harness planted every kind in every field."""
    example = load_set("example_set")
    report = measure(example, tmp_path_factory.mktemp("blind-example"), profile="private")
    fields = FIELDS + HERMES_FIELDS + PALACE_FIELDS
    assert report.fields == len(fields) and len(report.planted) == len(example.KINDS) * len(fields)
    assert {(c.kind, c.field) for c in report.planted} == {(k, f) for k in example.KINDS for f in fields}
    assert len(report.leaks) >= 0.75 * len(report.planted), report.table()  # (some fields are on no page)
    assert {leak["kind"] for leak in report.leaks} == set(example.KINDS)
    assert {leak["class"] for leak in report.leaks} >= {"verbatim", "lower-cased"}  # (a graph predicate)
    assert len(report.private) == len(example.TEXT_MARKERS) * len(TEXT_LAYERS) + len(
        example.FRONTMATTER_MARKERS
    ) + 1 + 2 * len(example.PERSONA_PRIVATE_HEADINGS)
    assert {r["layer"] for r in report.private_published} == {r.layer for r in report.private}, report.table()
    assert not report.ordinary_redacted
    assert report.json_path is not None and report.json_path.is_file()


def test_blind_harness_classes_on_a_hand_made_site(tmp_path: Path) -> None:
    """Each canary once, in its worst class, through any escaping; short codes only as tokens near their tag; a
    copy two canaries share counts for the one whose tag is beside it; a slug found inside another secret, or a
    fragment of plain words, only beside the canary's tag."""
    site = tmp_path / "site"
    (site / "assets").mkdir(parents=True)
    (site / "a.html").write_text(
        "<p>mail alice.w&#64;mailbox.org and abcdefghijklmnop c4, door 683061 (c9)</p>\n"
        '<a href="tok-en-value-42-zz.html">x</a> e3r4t5y6u7i8 0.1122334 c10 ' + "x" * 400 + " 112233\n",
        encoding="utf-8",
    )
    (site / "assets" / "data.js").write_text(
        'var d = ["bob\\u0040mailbox.org", "AbCdEfGhIjKlMnOp", "rocket%)castle1994"]; // the lazy dog jumps over',
        encoding="utf-8",
    )
    canaries = [
        Canary("email", "f", "alice.w@mailbox.org", "c1"),  # HTML entity
        Canary("email", "g", "bob@mailbox.org", "c2"),  # JavaScript escape
        Canary("key", "f", "AbCdEfGhIjKlMnOp", "c3"),  # verbatim in data.js beats lower-cased in a.html
        Canary("key", "g", "ABCDEFGHIJKLMNOP", "c4"),  # shares its lower-cased copy: the one beside its tag
        Canary("key", "h", "abcdefghijklmnoP", "c12"),  # shares it too, and its tag is nowhere
        Canary("token", "f", "Tok En+Value 42 Zz", "c5"),
        Canary("token", "g", "Q1w2E3r4T5y6U7i8O9p0", "c6"),
        Canary("code", "f", "683061", "c9"),
        Canary("code", "g", "112233", "c10"),  # inside a number, and as a token far from its tag
        Canary("code", "h", "never-there-at-all", "c11"),
        Canary("password", "f", "castle,1994@", "c20"),  # its slug is inside the next one: not evidence
        Canary("password", "g", "rocket%)castle1994", "c21"),
        Canary("seed", "f", "quick brown fox the lazy dog jumps over", "c22"),  # plain words far from its tag
    ]
    kinds = SimpleNamespace(KINDS={"k": lambda r: ("s", "a s")})
    found = {(leak["kind"], leak["field"]): leak for leak in _canary_leaks(SiteText(site), canaries, kinds, [])}
    classes = {key: leak["class"] for key, leak in found.items()}
    assert classes == {
        ("email", "f"): "verbatim",
        ("email", "g"): "verbatim",
        ("key", "f"): "verbatim",
        ("key", "g"): "lower-cased",
        ("token", "f"): "slugged",
        ("token", "g"): "fragment",
        ("code", "f"): "verbatim",
        ("password", "g"): "verbatim",
    }
    assert found[("key", "f")]["file"] == "assets/data.js" and "683061" in found[("code", "f")]["excerpt"]


def test_blind_first_positions_agree_with_find() -> None:
    rng = random.Random(5)
    hay = bytes(rng.choice(b"abcdef \xe4\xb8\xad") for _ in range(50_000))
    needles = {hay[i : i + rng.randint(2, 40)] for i in (rng.randrange(len(hay) - 40) for _ in range(500))}
    needles |= {b"zzzzzzzzzzzz", b"abcabcabcabcz"}
    assert first_positions(hay, needles) == {n: hay.find(n) for n in needles if n in hay}
