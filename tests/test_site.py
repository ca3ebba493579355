"""Build the demo wiki once (real store from demo/, real MkDocs + Material, --strict) and check its HTML."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

from memwiki.site.plugin import BuildRecord
from memwiki.site.speed.html_cache import _manifest_file
from memwiki.source import Memory
from memwiki.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
HREF = re.compile(r'<a class="mw-wikilink( mw-wanted)?" href="([^"]+)"')


def build_site(
    site_dir: Path,
    cache_dir: Path,
    *,
    strict: bool = False,
    site_url: str | None = None,
    docs_dir: str | None = None,
    **plugin_options: object,
) -> tuple[Any, Abort | None]:
    """Build mkdocs.yml of the repo into `site_dir`, with the plugin's cache in `cache_dir`.

    Returns what the plugin did in this build (`BuildRecord`) and the Abort of a failed strict build."""
    shared = ROOT / ".cache" / "memwiki" / "use"  # the browser embedder export, keyed by its own content hash
    shared.mkdir(parents=True, exist_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    if not (cache_dir / "use").exists():
        (cache_dir / "use").symlink_to(shared, target_is_directory=True)
    extra = {"site_url": site_url} if site_url else {}
    if docs_dir is not None:
        extra["docs_dir"] = docs_dir
    config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(site_dir), strict=strict, **extra)
    plugin = config.plugins["memwiki"]
    plugin.config.cache_dir = str(cache_dir)
    for key, value in plugin_options.items():
        setattr(plugin.config, key, value)
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)
    except Abort as exc:
        return record_of(plugin), exc
    finally:
        config.plugins.on_shutdown()
    return record_of(plugin), None


def record_of(plugin: Any) -> BuildRecord:  # noqa: ANN401 - the MkDocs plugin
    """What the plugin did in one build (MkDocs keeps one plugin instance per process and the next build overwrites
    its state): its record, or what a build that failed before writing its pages leaves."""
    return plugin.record or BuildRecord(kept=list(plugin.kept))


@pytest.fixture(scope="session")
def demo_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo site built once per session (strict: no warning at all with audit_errors: []); returns its root."""
    root = tmp_path_factory.mktemp("demo-site")
    _, error = build_site(root / "site", root / "cache", strict=True)
    assert error is None, error
    return root


@pytest.fixture(scope="session")
def site(demo_build: Path) -> Path:
    return demo_build / "site"


def read(site: Path, rel: str) -> str:
    return (site / rel).read_text(encoding="utf-8")


def html_files(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def _ids(text: str) -> set[str]:
    return {html.unescape(m) for m in re.findall(r'\bid="([^"]+)"', text)}


def test_every_wikilink_resolves_to_a_page_or_its_stub(site: Path) -> None:
    checked = wanted = 0
    for page in html_files(site):
        text = page.read_text(encoding="utf-8")
        for is_wanted, href in HREF.findall(text):
            target, _, anchor = html.unescape(href).partition("#")
            dest = (page.parent / unquote(target)).resolve() if target else page
            assert dest.is_file(), f"{page.relative_to(site)}: wikilink to missing {href}"
            assert site.resolve() in dest.parents, f"{href} leaves the site"
            if anchor:
                assert anchor in _ids(dest.read_text(encoding="utf-8")), (
                    f"{page.relative_to(site)}: no #{anchor} in {target}"
                )
            if is_wanted:
                assert "/concepts/wanted/" in dest.as_posix()
                wanted += 1
            checked += 1
    assert checked > 50 and wanted > 3


def test_wanted_concept_stub_lists_where_it_is_wanted(site: Path) -> None:
    stub = read(site, "concepts/wanted/记忆衰减.html")
    assert "No page yet" in stub and "Wanted by" in stub
    assert "../../sessions/s-1107-review.html#msg-6" in stub  # the session message that links it
    assert "mw-badge-wanted" in stub
    quantisation = read(site, "concepts/wanted/向量量化.html")
    assert "L2 memory m-006" in quantisation  # and the memory (path tricks in links: tests/test_path_tricks.py)


def test_backlinks_with_the_linking_sentence(site: Path) -> None:
    page = read(site, "concepts/memory-store.html")
    section = page[page.index('id="backlinks"') :]
    assert "Juniper" in section and "sessions/s-1009-site.html#msg-2" in section
    assert "的五层：L0 人格" in section  # the sentence of memory m-001 that links here
    assert "memory/category/technical.html#mem-m-001" in section


def test_heading_links_and_chinese_anchors(site: Path) -> None:
    overflow = read(site, "concepts/overflow.html")
    assert 'href="memory-store.html#五层-the-five-layers"' in overflow
    assert 'id="五层-the-five-layers"' in read(site, "concepts/memory-store.html")
    assert 'id="我是谁-who-i-am"' in read(site, "persona.html")


def test_markup_in_memory_text_is_shown_as_text(site: Path) -> None:
    """The demo's one memory that names a tag (m-010) shows it as text. Hostile payloads in every field are
    tests/test_xss_browser.py's (tests/hostile.py): the showcase holds no attack."""
    technical = read(site, "memory/category/technical.html")
    assert "pyvis adds CDN &lt;script&gt; tags" in technical
    assert not any("CDN <script> tags" in page.read_text(encoding="utf-8") for page in html_files(site))


def test_nothing_loads_from_the_internet(site: Path) -> None:
    loads = re.compile(r"<(?:script|img|iframe|link)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.I)
    for path in site.rglob("*"):
        if path.suffix in (".html", ".css", ".js") and path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not loads.search(text), f"{path.relative_to(site)} loads {loads.search(text).group(0)}"
            if path.suffix != ".js":  # Material's bundle names polyfills it loads only in browsers without them
                assert "fonts.googleapis" not in text and "cdn.jsdelivr" not in text and "unpkg.com" not in text, path
            assert not re.search(r"@import\s+url\(\s*['\"]?https?:", text), path


def test_audit_lists_the_planted_conflict_and_more(site: Path) -> None:
    audit = read(site, "audit.html")
    conflict = audit[audit.index('id="conflicting-current-facts"') : audit.index('id="facts-past-their-valid_to"')]
    assert conflict.count("redacted: internal host · ") >= 2 and "api_endpoint" in conflict  # the gate redacts hosts
    expired = audit[audit.index('id="facts-past-their-valid_to"') :]
    assert "has_temporary_access prod-db" in expired and "on_call_for" in expired
    assert "located_in" not in expired  # superseded, not expired: a current fact replaced it
    assert re.search(r"<code>m-033</code></a> ≈ <a [^>]+><code>m-034</code>", audit)  # the planted near-duplicates
    assert "use-multilingual-v3" in audit and "<strong>512</strong>" in audit


def test_hot_memory_gauges_and_sinks(site: Path) -> None:
    page = read(site, "persona.html")
    assert page.count('class="mw-gauge-line"') == 2  # MEMORY.md and USER.md, not SOUL.md
    assert re.search(r"1,\d{3} / 2,200 chars \(6\d%\)", page)
    sinks = page[page.index('id="sunk-to-l2"') :]
    assert "开发机：Ubuntu 24.04" in sinks and "MEMORY.md at" in sinks
    assert "memory/category/environment.html#mem-hot-memory-" in sinks


def test_semantic_memory_by_category_and_room(site: Path) -> None:
    index = read(site, "memory/index.html")
    assert "category/pitfall.html" in index and "wing/infra/embed-01.html" in index
    room = read(site, "memory/wing/infra/embed-01.html")
    assert "m-018" in room and "s-1020-infra.html" in room
    env = read(site, "memory/category/environment.html")
    assert "sunk from hot memory" in env


def test_sessions_timeline_and_digest(site: Path) -> None:
    timeline = read(site, "sessions/index.html")
    order = [timeline.index(s) for s in ("s-1107-review.html", "s-1103-gpu.html", "s-1002-design.html")]
    assert order == sorted(order)  # newest first
    digest = read(site, "sessions/s-1015-kb.html")
    assert "Key turns" in digest and digest.count('class="mw-turn ') >= 1
    start = digest.index('class="mw-about"')
    opening = digest[start : digest.index("Key turns", start)]
    assert "Asked:" in opening and "Came out:" in opening  # what it was about, first
    roles = re.findall(r'class="mw-turn mw-turn-(\w+)"', digest)
    assert {"user", "assistant"} <= set(roles)  # both sides quoted
    assert '<details class="mw-transcript">' in digest
    assert "on_call_for" in digest  # a fact that cites this session
    code = read(site, "sessions/s-1009-site.html")
    assert "<code>[[embed-01]]</code>" in code  # a wikilink in a code span stays code


def test_the_navigation_marks_the_section_a_page_is_in(site: Path) -> None:
    def marked(page: str) -> list[str]:
        html = read(site, page)
        return re.findall(r'md-nav__item--active">\s*<a href="([^"]+)"', html)

    assert marked("concepts/juniper.html") == ["index.html"]  # concepts/index.html, from concepts/
    assert marked("sessions/s-1020-infra.html") == ["index.html"]
    assert marked("memory/category/environment.html") == ["../index.html"]  # no leftover mark from other pages


def test_no_generated_page_in_nav_but_section_indexes(site: Path) -> None:
    page = read(site, "concepts/juniper.html")
    nav = set(re.findall(r'<a href="([^"#]+)" class="md-nav__link', page))
    assert {"index.html", "../audit.html", "../sessions/index.html", "../persona.html"} <= nav
    assert not {n for n in nav if not n.endswith(("index.html", "audit.html", "persona.html", "about.html"))}
    assert len(nav) < 15


# -- a rebuild after one memory changed, in strict mode with `audit_errors: [conflicts]` ------------------
NEW_TEXT = "Rebuild check: [[embed-01]] now also serves [[Rebuild probe]] for the page-cache test."


@pytest.fixture(scope="session")
def rebuilt(demo_build: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Abort | None]:
    """A copy of the demo store with one memory added, built with the page cache of the session's build."""
    root = tmp_path_factory.mktemp("rebuild")
    store_dir = root / "store"
    shutil.copytree(ROOT / ".cache" / "demo-store", store_dir)
    with Store.open(store_dir) as store:
        store.semantic.add([Memory(id="m-900", text=NEW_TEXT, category="technical", wing="infra", room="embed-01")])
    plugin, error = build_site(
        root / "site",
        demo_build / "cache",
        strict=True,
        store=str(store_dir),
        demo_src=None,
        audit_errors=["conflicts"],
    )
    return root / "site", plugin, error


def test_strict_build_fails_on_configured_audit_error(rebuilt: tuple[Path, Any, Abort | None]) -> None:
    _, _, error = rebuilt
    assert isinstance(error, Abort) and "strict mode" in str(error)


def test_rebuild_renders_only_what_changed(rebuilt: tuple[Path, Any, Abort | None]) -> None:
    site, plugin, _ = rebuilt
    # rendered again, by MkDocs or into a folder's frame (section indexes always are)
    rendered = {u for u, p in plugin.generated.items() if not p.in_nav} | set(plugin.framed)
    reused = set(plugin.hits)
    assert "memory/category/technical.md" in rendered  # the changed memory's page
    assert "concepts/wanted/rebuild-probe.md" in rendered  # the new stub it links to
    assert "concepts/juniper.md" in reused and "sessions/s-1015-kb.md" in reused
    # and their Markdown was not made again: the builders' memos knew their inputs had not changed
    assert {"concepts/juniper.md", "sessions/s-1015-kb.md"} <= set(plugin.kept)
    assert "concepts/embed-01.md" not in plugin.kept
    assert len(rendered) <= 5 and len(reused) > 40, rendered
    assert "Rebuild check: <a" in (site / "memory" / "category" / "technical.html").read_text(encoding="utf-8")
    assert "concepts/embed-01.md" in rendered  # it has a new backlink (made again, not taken from the memo)
    embed = (site / "concepts" / "embed-01.html").read_text(encoding="utf-8")
    assert "#mem-m-900" in embed and "now also serves" in embed
    juniper = (site / "concepts" / "juniper.html").read_text(encoding="utf-8")
    assert 'id="backlinks"' in juniper and "md-nav__link" in juniper  # a reused page is a whole page


def test_rebuild_reads_only_the_layer_that_changed(rebuilt: tuple[Path, Any, Abort | None]) -> None:
    _, plugin, _ = rebuilt
    assert plugin.reads == ["memories"]  # graph, sessions and wiki came from the layer cache


def test_rebuild_after_a_wiki_edit_shows_it(demo_build: Path, tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    shutil.copytree(ROOT / ".cache" / "demo-store", store_dir)
    page = next(p for p in sorted((store_dir / "wiki").rglob("*.md")) if "Chroma" in p.read_text(encoding="utf-8"))
    page.write_text(page.read_text(encoding="utf-8") + "\nEdited by hand: wiki-edit-probe.\n", encoding="utf-8")
    cache = tmp_path / "cache"
    shutil.copytree(demo_build / "cache", cache, symlinks=True)
    plugin, error = build_site(tmp_path / "site", cache, store=str(store_dir), demo_src=None)
    assert error is None, error
    reads = set(plugin.reads)  # (L2 too when another test's build left its own L2 in the cache)
    assert "wiki" in reads and not reads & {"graph", "sessions"}
    pages = [p for p in (tmp_path / "site" / "concepts").rglob("*.html") if "wiki-edit-probe" in p.read_text("utf-8")]
    assert pages


def test_a_new_navigation_makes_every_page_again(
    demo_build: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Pages are looked up before the navigation is made from them; when it then differs from the last build's
    (a hand-written page was added), no cached page fits and every page is made and rendered again."""
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "site_src", docs)
    (docs / "nav-probe.md").write_text("# Nav probe\n\nA hand-written page.\n", encoding="utf-8")
    cache = tmp_path / "cache"
    shutil.copytree(demo_build / "cache", cache, symlinks=True)
    with caplog.at_level("INFO", logger="mkdocs.plugins.memwiki"):
        plugin, error = build_site(tmp_path / "site", cache, docs_dir=str(docs))
    assert error is None, error
    assert "the navigation changed" in caplog.text
    assert not plugin.kept and not plugin.hits
    juniper = (tmp_path / "site" / "concepts" / "juniper.html").read_text(encoding="utf-8")
    assert 'href="../nav-probe.html"' in juniper and 'id="backlinks"' in juniper


def _site_files(root: Path) -> dict[str, bytes]:
    """Every file of a built site but the hidden top-level ones; the search index as its sorted entries."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not rel.parts[0].startswith("."):
            out[rel.as_posix()] = path.read_bytes()
    docs = json.loads(out.pop("search/search_index.json"))["docs"]
    out["search docs"] = "\n".join(sorted(json.dumps(d, sort_keys=True) for d in docs)).encode()
    return out


def test_a_rebuild_into_the_same_site_keeps_it_and_ends_as_a_clean_build(
    demo_build: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A plain rebuild keeps the last site through MkDocs' clean (speed.kept_site): reused pages stay in place,
    and what this build did not write goes. The result is the site a build into an empty folder makes."""
    store_dir, cache, site = tmp_path / "store", tmp_path / "cache", tmp_path / "site"
    shutil.copytree(ROOT / ".cache" / "demo-store", store_dir)
    shutil.copytree(demo_build / "cache", cache, symlinks=True)
    _, error = build_site(site, cache, store=str(store_dir), demo_src=None)
    assert error is None, error
    # what the next build must clean away, keep, or put back
    (site / "stale.html").write_text("from an earlier build", encoding="utf-8")
    (site / "concepts" / "gone").mkdir()
    (site / "concepts" / "gone" / "index.html").write_text("from an earlier build", encoding="utf-8")
    (site / ".well-known").mkdir()
    (site / ".well-known" / "keep.txt").write_text("hidden: MkDocs' clean keeps it", encoding="utf-8")
    juniper = site / "concepts" / "juniper.html"
    juniper.write_text("edited in place", encoding="utf-8")  # (a file of its own: the cache's copy is not touched)
    (site / "sessions" / "s-1015-kb.html").unlink()
    with Store.open(store_dir) as store:
        store.semantic.add([Memory(id="m-901", text=NEW_TEXT, category="technical", wing="infra", room="embed-01")])
    with caplog.at_level("INFO", logger="mkdocs.plugins.memwiki"):  # changed pages: MkDocs writes them in place
        plugin, error = build_site(site, cache, store=str(store_dir), demo_src=None, fast_pages=False)
    assert error is None, error
    assert "kept the last site" in caplog.text and len(plugin.hits) > 40
    assert "concepts/juniper.md" in plugin.hits and "sessions/s-1015-kb.md" in plugin.hits
    assert (site / ".well-known" / "keep.txt").is_file() and not (site / ".memwiki-kept").exists()
    assert not (site / "stale.html").exists() and not (site / "concepts" / "gone").exists()
    assert 'id="backlinks"' in juniper.read_text(encoding="utf-8")  # put back from the cache
    # a page that goes: its site file is kept through the clean, then swept
    assert (site / "concepts" / "cloud-kb.html").is_file()
    (store_dir / "wiki" / "cloud-kb.md").unlink()
    _, error = build_site(site, cache, store=str(store_dir), demo_src=None, fast_pages=False)
    assert error is None, error
    assert not (site / "concepts" / "cloud-kb.html").exists()
    manifest = _manifest_file(cache / "pages").data
    for src_uri in manifest:  # the cache was not written through the site
        cached = (cache / "pages" / (hashlib.sha1(src_uri.encode()).hexdigest() + ".html")).read_bytes()
        assert cached == (site / src_uri.removesuffix(".md")).with_suffix(".html").read_bytes(), src_uri
    _, error = build_site(tmp_path / "clean", cache, store=str(store_dir), demo_src=None, fast_pages=False)
    assert error is None, error
    kept, clean = _site_files(site), _site_files(tmp_path / "clean")
    assert kept.keys() == clean.keys()
    assert [rel for rel in kept if kept[rel] != clean[rel]] == []
    assert b"now also serves" in kept["memory/category/technical.html"]


def test_the_themes_search_index_holds_the_hand_written_pages_only(rebuilt: tuple[Path, Any, Abort | None]) -> None:
    """The site's search is memwiki's: no generated page (rendered by MkDocs, framed or reused from the cache) is
    in the theme's index, which would only be one more public copy of every memory's text; a hand-written page
    of docs_dir still is, once."""
    site, plugin, _ = rebuilt
    assert plugin.hits and plugin.framed and plugin.generated  # pages of all three ways into the site
    docs = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    pages = [d["location"].split("#")[0] for d in docs if "#" not in d["location"]]
    assert pages == ["about.html"]
    assert not any(d["location"].split("#")[0] != "about.html" for d in docs)


def test_rebuild_search_index_is_the_one_mkdocs_alone_writes(
    rebuilt: tuple[Path, Any, Abort | None], tmp_path: Path
) -> None:
    """With reused and framed pages, the search plugin's index is the one MkDocs and Material write with no cache
    and no fast path, entry for entry."""
    site, _, _ = rebuilt
    store_dir = site.parent / "store"
    _, error = build_site(
        tmp_path / "site",
        tmp_path / "cache",
        store=str(store_dir),
        demo_src=None,
        audit_errors=["conflicts"],  # as the rebuild (not strict here: the site is all this test reads)
        page_cache=False,
        fast_pages=False,
    )
    assert error is None, error

    def docs(root: Path) -> list[str]:
        index = json.loads((root / "search" / "search_index.json").read_text(encoding="utf-8"))
        return sorted(json.dumps(d, sort_keys=True, ensure_ascii=False) for d in index["docs"])

    assert docs(site) == docs(tmp_path / "site")
    # and without the page cache nothing derived from the memory was kept: the cache folder holds only the
    # browser model's export (kept whatever page_cache says: it follows from the installed package alone)
    kept = []
    for folder, dirs, files in os.walk(tmp_path / "cache"):  # (the export folder is a link: not followed)
        kept += [os.path.relpath(os.path.join(folder, f), tmp_path / "cache") for f in files]
        kept += [os.path.relpath(os.path.join(folder, d), tmp_path / "cache") for d in dirs if d != "use"]
    assert not kept, kept


class _TextOutsideCode(HTMLParser):
    """The text nodes of a page outside code, scripts and styles (what a reader reads as prose)."""

    SKIP = frozenset({"code", "pre", "script", "style", "textarea", "kbd", "samp"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.depth += tag in self.SKIP

    def handle_endtag(self, tag: str) -> None:
        self.depth -= tag in self.SKIP and self.depth > 0

    def handle_data(self, data: str) -> None:
        if not self.depth:
            self.texts.append(data)


def test_no_page_shows_raw_wikilink_syntax(site: Path) -> None:
    """Quoted memory text (cards, mentions, audit, digests, graph pages) renders `[[links]]` as links or words:
    no text node outside code holds `[[`."""
    raw = []
    for path in sorted(site.rglob("*.html")):
        parser = _TextOutsideCode()
        parser.feed(path.read_text(encoding="utf-8"))
        raw += [f"{path.relative_to(site)}: {t.strip()[:80]!r}" for t in parser.texts if "[[" in t]
    assert raw == [], raw[:10]


def test_a_large_build_lets_go_of_its_records_before_its_forks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build that made many pages lets go of what its builders read and made before the page writers and the
    final scan fork (here every build does): the strict public build still passes its scan, whose list of redacted
    secrets outlives the gate, and the plugin keeps the record of what the build did."""
    from memwiki.site import plugin as plugin_module
    from memwiki.site.pipeline import SiteBuild

    monkeypatch.setattr(plugin_module, "LET_GO_PAGES", 0)
    scanned: list[int] = []
    scan = SiteBuild.scan

    def counted(self: SiteBuild, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401
        scanned.append(len(self.redacted) if self.gate is None else -1)
        scan(self, *args, **kwargs)

    monkeypatch.setattr(SiteBuild, "scan", counted)
    built, error = build_site(tmp_path / "site", tmp_path / "cache", strict=True)
    assert error is None, error
    assert scanned and scanned[0] > 0  # the gate was let go; what it redacted went on to the scan
    assert built.framed and built.generated and "search/index.md" in built.generated
