"""The fast page path (speed.theme_frame) against MkDocs' own rendering.

The demo wiki is built twice with real MkDocs + Material, the page cache off: once with `fast_pages: false`
(every generated page rendered by MkDocs) and once with `fast_pages: true`. Every page must come out the same
(up to the whitespace Jinja leaves between tags), and so must the search index. Chinese is in the demo; hostile
text (tests/hostile.py's payloads as L2 memories and session turns, of the kinds the demo used to hold) is
added to a copy of the demo store, so both paths see both.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from mkdocs.structure.toc import get_toc

from memwiki.site.speed.theme_frame import ThemeFrame, probe_name
from memwiki.source import Memory
from memwiki.store.demo import build_demo_store
from memwiki.store.store import Store
from tests.hostile import payload
from tests.test_site import ROOT, build_site

_BETWEEN_TAGS = re.compile(r">\s+<")
_SPACES = re.compile(r"\s+")


def _normal(page: str) -> str:
    """HTML with the whitespace between tags dropped and other runs of whitespace made one space."""
    return _SPACES.sub(" ", _BETWEEN_TAGS.sub("><", page)).strip()


# The hostile text the demo used to hold (its "hostile" room), now planted by this test: payloads of
# tests/hostile.py of the same kinds (a script, an onerror image, a javascript: link, a path trick in a wikilink).
HOSTILE_MEMORIES = (
    *(f"A user pasted this into chat: {payload(4, i)} - it must show as text on the wiki." for i in (0, 1, 8)),
    "Path trick in a wikilink: [[../../etc/passwd]] must stay inside the site.",
)
HOSTILE_TURNS = (f"Someone pasted {payload(19, 0)} into a chat.", f"Links such as {payload(19, 8)} stay inert text.")


@pytest.fixture(scope="module")
def hostile_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo store with hostile text added as L2 memories and session turns."""
    store_dir = tmp_path_factory.mktemp("fast-pages-store") / "store"
    shutil.copytree(build_demo_store(ROOT / "demo", ROOT / ".cache" / "demo-store"), store_dir)
    with Store.open(store_dir) as store:
        store.semantic.add(
            [
                Memory(id=f"h-{i:02d}", text=text, category="other", wing="memwiki", room="hostile")
                for i, text in enumerate(HOSTILE_MEMORIES)
            ]
        )
        store.sessions.add_session("s-hostile", title="Pasted payloads", started="2026-10-13T08:00:00Z")
        for i, text in enumerate(HOSTILE_TURNS):
            store.sessions.add_message("s-hostile", "user", text, time=f"2026-10-13T08:{i:02d}:00Z")
    return store_dir


@pytest.fixture(scope="module", params=["in-process", "two-workers"])
def both(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, hostile_demo: Path
) -> tuple[Path, Path, object]:
    """The demo (with hostile text) built by MkDocs alone, and with fast pages: in the build's process without a
    page cache, or by two forked workers writing into the page cache and into the site."""
    root = tmp_path_factory.mktemp("fast-pages")
    store = {"store": str(hostile_demo), "demo_src": None}
    _, error = build_site(root / "slow", root / "cache-slow", page_cache=False, fast_pages=False, **store)
    assert error is None, error
    workers = {"in-process": dict(page_cache=False, render_workers=1), "two-workers": dict(render_workers=2)}
    plugin, error = build_site(root / "fast", root / "cache-fast", fast_pages=True, **workers[request.param], **store)
    assert error is None, error
    return root / "slow", root / "fast", plugin


def test_fast_pages_are_the_pages_mkdocs_renders(both: tuple[Path, Path, object]) -> None:
    slow, fast, plugin = both
    assert len(plugin.framed) > 20, "the demo's generated pages should take the fast path"  # type: ignore[attr-defined]
    slow_pages = {p.relative_to(slow).as_posix() for p in slow.rglob("*.html")}
    fast_pages = {p.relative_to(fast).as_posix() for p in fast.rglob("*.html")}
    assert slow_pages == fast_pages  # no page missing, no probe page left behind
    other = "".join(p.read_text(encoding="utf-8") for p in (fast / "memory" / "category").glob("other*.html"))
    assert "&lt;script&gt;xss(400)&lt;/script&gt;" in other  # the hostile text is there, as text
    passwd = (fast / "concepts" / "wanted" / "etc-passwd.html").read_text(encoding="utf-8")
    assert "L2 memory h-03<" in passwd  # the path trick's stub, inside the site, lists its memory
    assert not any(probe_name("") in name for name in fast_pages)
    differing = [
        rel
        for rel in sorted(slow_pages)
        if _normal((slow / rel).read_text(encoding="utf-8")) != _normal((fast / rel).read_text(encoding="utf-8"))
    ]
    assert not differing, f"{len(differing)} pages differ, e.g. {differing[:3]}"


def test_both_paths_write_the_same_search_index(both: tuple[Path, Path, object]) -> None:
    slow, fast, _ = both

    def docs(site: Path) -> list[str]:
        index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
        return sorted(json.dumps(d, sort_keys=True, ensure_ascii=False) for d in index["docs"])

    assert docs(slow) == docs(fast)


def test_shell_refuses_a_page_layout_it_does_not_know() -> None:
    from memwiki.errors import MemwikiError

    with pytest.raises(MemwikiError, match="fast_pages: false"):
        ThemeFrame.parse("<html><body><p>no markers</p></body></html>", "abc")


def test_sitemap_lists_every_page_and_no_probe(tmp_path: Path) -> None:
    """With site_url set, MkDocs writes a sitemap of what it rendered; the pages it never saw are added."""
    _, error = build_site(tmp_path / "site", tmp_path / "cache", site_url="https://example.org/wiki/", render_workers=1)
    assert error is None, error
    sitemap = (tmp_path / "site" / "sitemap.xml").read_text(encoding="utf-8")
    assert probe_name("") not in sitemap
    locs = set(re.findall(r"<loc>([^<]+)</loc>", sitemap))
    pages = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*.html")}
    pages = {p for p in pages if p != "404.html" and not p.startswith(("graph/entities/", "graph/global", "assets/"))}
    assert {f"https://example.org/wiki/{quote(p)}" for p in pages} <= locs
    assert len(locs) == len(pages)
    canonical = (tmp_path / "site" / "concepts" / "juniper.html").read_text(encoding="utf-8")
    assert '<link rel="canonical" href="https://example.org/wiki/concepts/juniper.html">' in canonical


def test_a_title_with_quotes_stays_text_in_every_place_the_theme_prints_it() -> None:
    frame = ThemeFrame.parse(
        '<html><head><title>mwtitleN - site</title></head><body><a href="#mwtitleN" class="md-skip">跳转</a>'
        '<a href="x?t=mwtitleN">f</a><nav class="md-nav md-nav--secondary" aria-label="t">'
        '<label class="md-nav__title" for="__toc">TOC</label><ul></ul></nav>'
        '<article><h1 id="mwtitleN">mwtitleN</h1><h2 id="h">mwheadN</h2><p>mwbodyN</p></article></body></html>',
        "N",
    )
    toc = get_toc([{"level": 1, "id": "t", "name": "t", "children": []}])
    page = frame.fill(title='x" onmouseover="alert(1)', content="<p>c</p>", toc=toc, name="p")
    assert 'onmouseover="' not in page and "x&quot; onmouseover=&quot;alert(1)" in page
    assert '<a href="#t" class="md-skip">\n跳转\n</a>' in page  # the theme's own words for the skip link
