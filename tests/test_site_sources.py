"""The wiki over a real hermes-agent home and a real MemPalace palace only (no memwiki store), read in place."""

from __future__ import annotations

import html
import re
import sqlite3
from pathlib import Path

import pytest

from tests.fixture_copies import checksums, copy_fixtures
from tests.test_site import build_site


def text_of(page: Path) -> str:
    """The visible text of a built page (tags dropped, entities decoded, whitespace folded)."""
    body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page.read_text(encoding="utf-8"), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("fixture-site")
    fixtures = copy_fixtures(root)
    before = checksums(fixtures)
    _, error = build_site(
        root / "site",
        root / "cache",
        store=None,
        demo_src=None,
        hermes_home=str(fixtures / "hermes_home"),
        palace=str(fixtures / "mempalace_palace"),
    )
    assert error is None, error
    return root / "site", fixtures, before


def test_build_leaves_every_byte_of_the_sources(fixture_site: tuple[Path, Path, dict[str, str]]) -> None:
    _, fixtures, before = fixture_site
    assert checksums(fixtures) == before


def test_persona_and_hot_memory_with_hermes_limits(fixture_site: tuple[Path, Path, dict[str, str]]) -> None:
    site, _, _ = fixture_site
    page = text_of(site / "persona.html")
    assert "小赫" in page
    assert "2,133 / 2,200" in page and "1,274 / 1,375" in page
    assert "OPNsense" in page and "林晓" in page


def test_sessions_with_digests(fixture_site: tuple[Path, Path, dict[str, str]]) -> None:
    site, fixtures, _ = fixture_site
    index = text_of(site / "sessions" / "index.html")
    db = sqlite3.connect(f"file:{fixtures / 'hermes_home' / 'state.db'}?mode=ro&immutable=1", uri=True)
    titles = [t for (t,) in db.execute("SELECT title FROM sessions")]
    db.close()
    assert titles and all(t in index for t in titles)
    digests = [p for p in (site / "sessions").glob("*.html") if p.name != "index.html"]
    assert len(digests) == len(titles)
    assert any("restic" in text_of(p) for p in digests)


def test_drawers_by_wing_and_room(fixture_site: tuple[Path, Path, dict[str, str]]) -> None:
    site, _, _ = fixture_site
    pages = " ".join(text_of(p) for p in (site / "memory").rglob("*.html"))
    for wing in ("tidepool", "people"):
        assert wing in pages
    assert "QARTOD" in pages


def test_graph_shows_the_superseded_fact(fixture_site: tuple[Path, Path, dict[str, str]]) -> None:
    site, fixtures, _ = fixture_site
    db = sqlite3.connect(
        f"file:{fixtures / 'mempalace_palace' / 'knowledge_graph.sqlite3'}?mode=ro&immutable=1", uri=True
    )
    ended = db.execute("SELECT predicate, object, valid_to FROM triples WHERE valid_to IS NOT NULL").fetchall()
    db.close()
    assert len(ended) == 2
    concept_text = " ".join(text_of(p) for p in (site / "concepts").rglob("*.html"))
    for _predicate, _obj, valid_to in ended:
        assert valid_to[:10] in concept_text
    audit = text_of(site / "audit.html")
    assert "minilm" in audit and "use-multilingual-v3" in audit, "the audit says the palace was re-embedded"


def test_a_missing_palace_is_named_and_the_rest_is_built(
    fixture_site: tuple[Path, Path, dict[str, str]], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, fixtures, _ = fixture_site
    _, error = build_site(
        tmp_path / "site",
        tmp_path / "cache",
        store=None,
        demo_src=None,
        hermes_home=str(fixtures / "hermes_home"),
        palace=str(tmp_path / "no-palace"),
    )
    assert error is None, error
    assert "小赫" in text_of(tmp_path / "site" / "persona.html"), "what can be read is built"
    audit = text_of(tmp_path / "site" / "audit.html")
    assert "no-palace" in audit and "skipped" in audit


def test_nothing_readable_is_a_clear_error(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _, error = build_site(
        tmp_path / "site", tmp_path / "cache", store=None, demo_src=None, palace=str(tmp_path / "no-palace")
    )
    assert error is not None
    assert any("no-palace" in r.getMessage() and "no MemPalace palace" in r.getMessage() for r in caplog.records)


def test_drawers_and_mined_chunks_are_quoted_in_their_cards(fixture_site: tuple[Path, Path, dict[str, str]]) -> None:
    site, _, _ = fixture_site
    cards = [
        card
        for page in (site / "memory").rglob("*.html")
        for card in re.findall(r'<article class="mw-memory".*?</article>', page.read_text(encoding="utf-8"), re.S)
    ]
    ids = {re.search(r'id="([^"]+)"', c).group(1) for c in cards}  # each on its category and its room page
    assert len(ids) == 16 and all('<blockquote class="mw-quote">' in c for c in cards)
    assert not any(re.search(r"<h[1-6]", c) for c in cards), "a drawer's headings are not the page's"
    doc = next(c for c in cards if "architecture.md</code> · chunk 0" in c)
    assert (
        '<p class="mw-h mw-h1"><strong>Architecture</strong></p>' in doc and "architecture.md</code> · chunk 0" in doc
    )
    code = next(c for c in cards if "def is_duplicate" in c)
    assert '<pre class="mw-verbatim"><code>' in code and "def __init__(self, dsn: str):" in code  # code stays code


def test_palace_provenance_and_mentions(fixture_site: tuple[Path, Path, dict[str, str]]) -> None:
    site, _, _ = fixture_site
    frames = (site / "concepts" / "frames.html").read_text(encoding="utf-8")
    href = re.search(
        r'<a class="mw-provenance mw-provenance-memory" href="\.\./([^"#]+)#([^"]+)"><code>drawer_', frames
    )
    assert href and f'id="{href.group(2)}"' in (site / href.group(1)).read_text(encoding="utf-8")  # the drawer's card
    audit = (site / "audit.html").read_text(encoding="utf-8")
    orphans = audit[audit.index('id="orphan-concepts"') : audit.index('id="near-duplicate-memories"')]
    assert "NB-009" in orphans  # named by no drawer, entry or turn
    assert "宁波海洋实验室" not in orphans and "象山港" not in orphans  # named by half of their glossed names
    lab = next((site / "concepts").glob("宁波海洋实验室*.html")).read_text(encoding="utf-8")
    assert "1 place names it" in lab and "by the <mark>Ningbo marine lab</mark>." in lab
