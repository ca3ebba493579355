"""The site's one search in headless Chromium: the real MkDocs page, the browser's own encoder, the header box.

- Agreement: the store of tests/test_site_search_agreement.py (every layer filled) built into a site with
  MkDocs; every query typed into the search page's box (`#memwiki-search-q`) once the encoder has loaded; the
  hits of `#memwiki-search-results` (layer and id of each) against `memwiki recall --all-layers --json` top 5.
- Demo questions: the demo site (strict, public) answers tests/demo_questions.jsonl: each question's expected
  item is the first hit of its layer (format: tests/test_demo_questions.py's docstring).
- The header box of every page is this search: "/" opens it, arrows move, Enter opens the hit, Esc closes;
  a query nothing answers says so ("No sure answer", "Nothing in memory matches"); from file:// too; nothing asked of
  the internet.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixture_copies import bench_file
from playwright.sync_api import Browser, Page

from tests.test_browser import QuietHandler, browser  # noqa: F401 - the browser fixture
from tests.test_site import ROOT, build_site, demo_build, site  # noqa: F401 - the demo site, built once
from tests.test_site_search_agreement import (
    DEMO_QUESTIONS,
    NOTHING,
    agreement,
    cli_recall,
    flat_agreement,
    full_store,
    queries,
)

LIST = "#memwiki-search-results"
# Types a query into the page's box and waits for the list to show it, ranked by meaning (the encoder loaded).
ASK = """async ([q, mode]) => {
  const input = document.getElementById("memwiki-search-q"), list = document.getElementById("memwiki-search-results");
  input.value = q;
  input.dispatchEvent(new Event("input"));
  const t0 = performance.now();
  while (!(list.dataset.query === q.trim() && list.dataset.mode === mode)) {
    if (performance.now() - t0 > 30000) throw new Error("no answer for " + q);
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    status: document.getElementById("memwiki-search-status").textContent,
    hits: Array.from(list.children).map((li) => ({layer: li.dataset.layer, id: li.dataset.id,
      confident: !li.classList.contains("memwiki-search-weak"),
      href: (li.querySelector("a.memwiki-search-title") || {}).href || "",
      text: li.dataset.text})),
  };
}"""


def serve(folder: Path) -> Iterator[str]:
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder)))
    server.handle_error = lambda *_: None  # a page closed while its model file was still loading
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class Watched:
    """A page that records requests leaving the machine and script errors."""

    def __init__(self, browser: Browser) -> None:  # noqa: F811 - the fixture's value
        self.external: list[str] = []
        self.errors: list[str] = []
        self.page: Page = browser.new_page(viewport={"width": 1200, "height": 900})
        self.page.on("request", self._request)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _request(self, request) -> None:  # noqa: ANN001 - Playwright's Request
        if request.url.startswith(("http://", "https://")) and not request.url.startswith("http://127.0.0.1"):
            self.external.append(request.url)

    def search_page(self, base: str) -> Page:
        self.page.goto(base + "search/index.html")
        self.page.wait_for_function("window.MemwikiUSE && window.MemwikiUSE.ready", timeout=120_000)
        return self.page

    def ask(self, q: str, mode: str = "meaning") -> dict:
        return self.page.evaluate(ASK, [q, mode])


@pytest.fixture(scope="module")
def full_site(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("search-browser")
    bench = bench_file("zh_recall_dev.jsonl")  # (skips, naming the file, where the benchmark data is not beside)
    store_dir = full_store(root, bench)
    # the private profile, as the node agreement test: the public one redacts the demo's addresses and hosts
    _, error = build_site(root / "site", root / "cache", store=str(store_dir), demo_src=None, profile="private")
    assert error is None, error
    qs = queries(bench)
    return {"site": root / "site", "store": store_dir, "queries": qs, "cli": cli_recall(store_dir, qs)}


@pytest.fixture(scope="module")
def full_served(full_site: dict) -> Iterator[str]:
    yield from serve(full_site["site"])


@pytest.fixture(scope="module")
def demo_served(site: Path) -> Iterator[str]:  # noqa: F811 - the fixture
    yield from serve(site)


def test_chromium_top5_equals_recall_all_layers(browser: Browser, full_site: dict, full_served: str) -> None:  # noqa: F811
    watched = Watched(browser)
    watched.search_page(full_served)
    site_hits = [watched.ask(q)["hits"] for q in full_site["queries"]]
    python = [answer["hits"] for answer in full_site["cli"]]
    same, total, diffs = agreement(python, site_hits)
    flat = flat_agreement(python, site_hits)
    print(
        f"Chromium agreement: {same}/{total} = {same / total:.3f} per layer, {flat:.3f} over the whole answer, "
        f"over {len(site_hits)} queries; {diffs[:20]}"
    )
    assert same / total >= 0.95 and flat >= 0.9, diffs[:30]
    answers = zip(full_site["cli"], site_hits, strict=True)
    verdicts = [a["confident"] == any(h["confident"] for h in s) for a, s in answers]
    assert sum(verdicts) >= 0.95 * len(verdicts)
    assert watched.external == [] and watched.errors == []


def test_no_confident_match_is_said(browser: Browser, full_served: str) -> None:  # noqa: F811
    watched = Watched(browser)
    watched.search_page(full_served)
    for q in NOTHING:
        answer = watched.ask(q)
        assert "No sure answer" in answer["status"] or "Nothing in memory matches" in answer["status"], answer["status"]
        assert not any(h["confident"] for h in answer["hits"])
    answer = watched.ask("备份策略")
    assert "No sure answer" not in answer["status"] and any(h["confident"] for h in answer["hits"])


WIKILINK = re.compile(r"\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|([^\]]+))?\]\]")


def _expected_first(question: dict, hits: list[dict]) -> bool:
    first = next((h for h in hits if h["layer"] == question["layer"]), None)
    if first is None:
        return False
    expect = WIKILINK.sub(lambda m: m.group(2) or m.group(1), question["expect"])  # (as the results show it)
    if question["layer"] == "L1":
        return first["id"] == expect or expect in first["text"].replace("…", "")
    if question["layer"] == "L2":
        return first["id"] == expect or expect in first["text"]
    if question["layer"] == "L4":
        return first["id"].split("#")[0] == expect
    return first["id"] == expect


def _questions() -> list[dict]:
    if not DEMO_QUESTIONS.is_file():
        return []
    return [json.loads(line) for line in DEMO_QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def demo_answers(browser: Browser, demo_served: str, demo_build: Path) -> dict:  # noqa: F811
    """Every demo question asked on the demo site's search page, and through `memwiki recall` on its store."""
    questions = _questions()
    watched = Watched(browser)
    watched.search_page(demo_served)
    site_hits = {q["id"]: watched.ask(q["query"])["hits"] for q in questions}
    store = ROOT / ".cache" / "demo-store"  # mkdocs.yml's store, which the demo build made from demo/
    cli = dict(zip([q["id"] for q in questions], cli_recall(store, [q["query"] for q in questions]), strict=True))
    return {"site": site_hits, "cli": {k: v["hits"] for k, v in cli.items()}, "errors": watched.errors}


def test_demo_site_answers_the_demo_questions(demo_answers: dict) -> None:
    """The expected item is the first hit of its layer on the site for as many questions as the CLI's own test
    asks of `memwiki recall` (tests/test_demo_questions.py's floor); the misses are listed."""
    from tests.test_demo_questions import FIRST_IN_LAYER

    questions = _questions()
    missed = [
        (q["id"], q["query"], q["expect"], [h["id"] for h in demo_answers["site"][q["id"]] if h["layer"] == q["layer"]])
        for q in questions
        if not _expected_first(q, demo_answers["site"][q["id"]])
    ]
    print(f"demo questions first in their layer on the site: {len(questions) - len(missed)}/{len(questions)}")
    assert len(questions) >= 30 and (len(questions) - len(missed)) / len(questions) >= FIRST_IN_LAYER, missed


def test_demo_site_answers_as_recall_does(demo_answers: dict) -> None:
    """On every demo question the site's first hit of the question's layer is the CLI's (the public build
    redacts a few names, which can only move hits that hold them)."""
    questions = _questions()
    same = 0
    differ = []
    for q in questions:
        mine = [h["id"] for h in demo_answers["site"][q["id"]] if h["layer"] == q["layer"]][:1]
        theirs = [h["id"] for h in demo_answers["cli"][q["id"]] if h["layer"] == q["layer"]][:1]
        same += mine == theirs
        if mine != theirs:
            differ.append((q["id"], mine, theirs))
    site_ok = sum(_expected_first(q, demo_answers["site"][q["id"]]) for q in questions)
    cli_ok = sum(_expected_first(q, demo_answers["cli"][q["id"]]) for q in questions)
    print(f"demo questions first in their layer: site {site_ok}/{len(questions)}, recall {cli_ok}/{len(questions)}")
    assert len(questions) >= 30 and same >= 0.9 * len(questions), differ
    assert site_ok >= cli_ok - 1 and demo_answers["errors"] == []


def test_header_box_is_this_search(browser: Browser, demo_served: str) -> None:  # noqa: F811
    watched = Watched(browser)
    page = watched.page
    page.goto(demo_served + "persona.html")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.classList.contains('md-search__input')")
    assert page.evaluate("document.getElementById('__search').checked")
    page.keyboard.type("备份策略")
    page.wait_for_function(
        "(() => { const l = document.querySelector('.md-search-result__list'); return l.dataset.mode === 'meaning'"
        " && l.children.length > 2; })()",
        timeout=120_000,
    )
    items = "document.querySelectorAll('.md-search-result__list > li')"
    layers = page.evaluate(f"Array.from({items}).map(li => li.dataset.layer)")
    assert {"L1", "L2", "L4", "files"} <= set(layers)  # every layer's hits (confident first, as recall orders them)
    marks = page.evaluate("Array.from(document.querySelectorAll('.md-search-result__list mark'), m => m.textContent)")
    assert marks and set(marks) <= {"备份", "份策", "策略"}, marks  # the query's words are marked, nothing else
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    second = page.evaluate("document.querySelector('.md-search-result__list > li.memwiki-search-active a').href")
    assert page.evaluate(f"{items}[1].classList.contains('memwiki-search-active')")
    page.keyboard.press("Escape")
    assert not page.evaluate("document.getElementById('__search').checked")
    page.keyboard.press("s")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_load_state("load")
    assert page.url == second
    # the theme's own search never started: no lunr index, no worker
    assert not any("search_index.json" in u or "workers/search" in u for u in watched.external)
    assert watched.external == [] and watched.errors == []


def test_search_works_from_file_urls(browser: Browser, site: Path) -> None:  # noqa: F811
    watched = Watched(browser)
    page = watched.page
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    watched.search_page(site.as_uri() + "/")
    answer = watched.ask("向量模型跑在哪台机器上？")
    assert any(h["layer"] == "L2" for h in answer["hits"]) and "as recall ranks" in answer["status"]
    assert all(u.startswith(("file://", "data:", "blob:")) for u in requested), requested[:5]
    assert any(re.search(r"/search/vectors/[0-9a-f]{20}\.js$", u) for u in requested)  # the slices' scripts
    page.goto(site.as_uri() + "/index.html?q=备份策略")  # the header box, opened by ?q= as the theme's was
    page.wait_for_function("document.querySelector('.md-search-result__list').children.length > 0", timeout=60_000)
    assert watched.errors == []


def test_lexical_results_come_first(browser: Browser, demo_served: str) -> None:  # noqa: F811
    """The words-only ranking shows before the encoder has loaded, with the loading state visible."""
    watched = Watched(browser)
    page = watched.page
    page.goto(demo_served + "search/index.html?query=备份策略")
    page.wait_for_function(f"document.querySelector('{LIST}').dataset.mode === 'words'", timeout=30_000)
    status = page.locator("#memwiki-search-status").text_content() or ""
    if page.evaluate("!(window.MemwikiUSE && window.MemwikiUSE.ready)"):
        assert "meaning" in status, status  # says the meaning-based ranking is on its way
    assert page.locator(f"{LIST} > li").count() > 0
    page.wait_for_function(f"document.querySelector('{LIST}').dataset.mode === 'meaning'", timeout=120_000)
    assert "as recall ranks" in (page.locator("#memwiki-search-status").text_content() or "")


def test_header_search_works_by_touch_on_a_phone(browser: Browser, demo_served: str) -> None:  # noqa: F811
    """On a phone-sized touch screen: tap the header's search icon, tap the box, type, tap the first result."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(demo_served + "index.html")
    page.locator("label.md-header__button[for='__search']").tap()
    assert page.evaluate("document.getElementById('__search').checked")
    page.locator("input.md-search__input").tap()
    page.keyboard.type("备份策略")
    page.wait_for_function("document.querySelectorAll('.md-search-result__list > li').length > 0", timeout=60_000)
    first = page.locator(".md-search-result__list > li a").first
    target = (first.get_attribute("href") or "").split("#", 1)[0].removeprefix("./")
    first.tap()
    page.wait_for_url(f"**/{target}*", timeout=30_000)
    assert errors == []
    context.close()


def test_second_visit_fetches_no_vector_bytes(browser: Browser, demo_served: str) -> None:  # noqa: F811
    """Over http(s) the vectors come in slices named by their content, kept by the browser: a second visit asks
    the network for none of them (nor for their scripts, which file:// pages read)."""
    context = browser.new_context()
    asked: list[str] = []
    context.on("request", lambda r: asked.append(r.url))
    ranked = f"document.querySelector('{LIST}').dataset.mode === 'meaning'"
    for visit in (1, 2):
        asked.clear()
        page = context.new_page()
        page.goto(demo_served + "search/index.html?query=备份策略")
        page.wait_for_function(ranked, timeout=120_000)
        slices = [u for u in asked if "/assets/memwiki/search/vectors/" in u]
        assert not any(u.endswith(".js") for u in slices), slices
        if visit == 1:
            assert slices and all(re.search(r"/vectors/[0-9a-f]{20}\.bin$", u) for u in slices), asked
        else:
            assert slices == [], slices
        page.close()
    context.close()


class CachingHandler(QuietHandler):
    """A static host that lets browsers keep what it serves for an hour (GitHub Pages: ten minutes), but for the
    data's parts: as if the browser had let go of those since (a browser's cache drops what it likes)."""

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store" if "/search/data/" in self.path else "max-age=3600")
        super().end_headers()


def test_header_search_loads_after_a_rebuild_while_the_browser_kept_the_old_data(
    browser: Browser,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A rebuild after a memory changed renames the data part holding its row and removes the old one. A browser
    that kept the last build's search-data.js (for the host's cache lifetime) but not its parts reads in it the name
    of a part that is gone: the header box fetches the data again past the cache, and searches the new build's rows.
    (A browser that kept both shows the last build's rows until the host's lifetime ends, as for any page.)"""
    from http.server import ThreadingHTTPServer

    from memwiki.source import Memory
    from memwiki.store.store import Store

    store = tmp_path / "store"
    with Store.init(store) as opened:
        opened.semantic.add([Memory(f"m{n}", f"lantern {n} sits on shelf {n} of the archive room") for n in range(30)])
    site_dir, cache = tmp_path / "site", tmp_path / "cache"
    _, error = build_site(site_dir, cache, store=str(store), demo_src=None, profile="private")
    assert error is None, error
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(CachingHandler, directory=str(site_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = f"http://127.0.0.1:{server.server_address[1]}/"
    context = browser.new_context()
    asked: list[str] = []
    context.on("request", lambda r: asked.append(r.url))
    listed = "document.querySelectorAll('.md-search-result__list > li').length > 0"

    def header_search(query: str) -> str:
        page = context.new_page()
        page.goto(root + "persona.html")
        page.keyboard.press("/")
        page.keyboard.type(query)
        page.wait_for_function(listed, timeout=60_000)
        text = page.locator(".md-search-result__list").inner_text()
        page.close()
        return text

    try:
        assert "shelf 7" in header_search("lantern 7")
        parts_before = {u for u in asked if "/search/data/" in u}
        with Store.open(store) as opened:
            opened.semantic.upsert([Memory("m7", "lantern 7 moved to the cellar by the boiler")])
        _, error = build_site(site_dir, cache, store=str(store), demo_src=None, profile="private")
        assert error is None, error
        gone = [u for u in parts_before if not (site_dir / u.removeprefix(root)).exists()]
        assert gone, "the rebuild renamed the part holding the changed memory"
        asked.clear()
        assert "cellar" in header_search("lantern 7 cellar")
        assert any("search-data.js?fresh=" in u for u in asked), asked  # (the kept copy named a part that is gone)
    finally:
        context.close()
        server.shutdown()
