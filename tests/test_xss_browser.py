"""Hostile content in a real build, opened in headless Chromium: no payload runs, anywhere.

A store with every payload of tests/hostile.py in every field of every layer is built into a site with
MkDocs. The browser opens every page (home, persona and hot memory, L2 category and wing / room pages,
concept, entity and wanted pages, the graph page and every pyvis graph file, sessions, audit, search),
hovers every node and edge of the global graph so that tooltips render, clicks the links made from
payloads, runs the memory search and the theme's search, and checks that `xss()` was never called, that no
link has a javascript: / data: / vbscript: URL and that no element has an on* attribute. A control page of
the same payloads rendered carelessly shows that each of these checks does fire.
"""

from __future__ import annotations

import functools
import html
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext

from tests.hostile import (
    FIELDS,
    TEMPLATES,
    WORD,
    file_name,
    injections,
    iter_html,
    origin,
    payload,
    payloads,
    plant_store,
    unsafe_html,
)
from tests.test_browser import QuietHandler, browser  # noqa: F401 - the browser fixture
from tests.test_site import build_site

CONTROL = "__control__.html"  # served by the test itself: the payloads rendered carelessly
SINK = "__sink__.html"  # served by the test: where clicked links open

# What the page shows that came from content: on* attributes and dangerous URLs, in every frame.
DOM_CHECK = """() => {
  const bad = [];
  const scheme = /^(javascript|data|vbscript):/i;
  for (const el of document.querySelectorAll("*")) {
    for (const a of el.attributes) {
      const name = a.name.toLowerCase();
      if (name.startsWith("on")) bad.push(`<${el.tagName} ${name}>`);
      if (["href", "src", "action", "formaction", "data", "xlink:href", "srcdoc"].includes(name)) {
        const v = a.value.replace(/[\\u0000-\\u0020\\u007f]+/g, "");
        if (name === "srcdoc" || scheme.test(v)) bad.push(`<${el.tagName} ${name}=${a.value.slice(0, 50)}>`);
      }
    }
  }
  return bad;
}"""


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real store with every payload in every field, built into a site (the store's folder name is hostile
    too: the home page shows it)."""
    root = tmp_path_factory.mktemp("hostile")
    store = root / file_name(" ".join(["store", *(payload(99, i) for i in (1, 8, 50))]))
    planted = plant_store(store)
    assert planted.total >= 40 * len(FIELDS) and len(TEMPLATES) >= 40
    _, error = build_site(root / "site", root / "cache", store=str(store), demo_src=None)
    assert error is None, error
    return root / "site"


@pytest.fixture(scope="module")
def served(hostile_site: Path) -> Iterator[str]:
    handler = functools.partial(QuietHandler, directory=str(hostile_site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.handle_error = lambda *_: None  # a page closed while its model file was still loading
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class Watch:
    """A browser context that records every xss() call, dialog and request that leaves the machine."""

    def __init__(self, browser: Browser, base: str) -> None:  # noqa: F811 - the fixture's value
        self.ran: list[tuple[int, str]] = []
        self.external: list[str] = []
        self.opened: list[str] = []  # what clicked links opened
        self.base = base
        self.context: BrowserContext = browser.new_context()
        self.context.expose_binding("xss", lambda source, n: self.ran.append((int(n), source["frame"].url)))
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("dialog", lambda d: (self.ran.append((-1, d.message)), d.dismiss()))
        self.page.on("popup", lambda p: p.close())

    def _route(self, route, request) -> None:  # noqa: ANN001 - Playwright's Route and Request
        url = request.url
        if url.startswith(self.base + CONTROL):
            body = "\n".join(unsafe_html(p) for p in payloads(4))
            page = f'<!doctype html><meta charset=utf-8><body><article class="md-content__inner">{body}</article>'
            route.fulfill(status=200, content_type="text/html", body=page)
        elif request.frame.name == "mw-click-sink" or url.startswith(self.base + SINK):
            self.opened.append(url)  # a clicked link: answered at once (every page is opened by itself anyway)
            route.fulfill(status=200, content_type="text/html", body="<!doctype html><title>sink</title>")
        elif url.startswith((self.base, "data:", "blob:", "about:")):
            route.continue_()
        else:
            self.external.append(url)
            route.abort()

    def open(self, rel: str) -> list[str]:
        """Open a page, let it settle; the on* attributes and dangerous URLs of all its frames."""
        self.page.goto(self.base + rel, wait_until="load")
        self.page.wait_for_timeout(30)
        bad: list[str] = []
        for frame in self.page.frames:
            try:
                bad += [f"{rel}: {b}" for b in frame.evaluate(DOM_CHECK)]
            except Exception:  # noqa: BLE001 - a frame navigated away or is cross-origin (data:)
                bad.append(f"{rel}: frame {frame.url[:60]} not inspectable")
        return bad

    def click_content_links(self, rel: str) -> int:
        """Click every link in the page's content; returns how many. Each opens in a hidden frame (a served
        page, so `xss` is defined there too), so the page stays and the site's pages are not loaded again."""
        self.open(rel)
        return self.page.evaluate(
            """async (sink) => {
          const frame = document.createElement("iframe");
          frame.name = "mw-click-sink"; frame.src = sink; frame.style.display = "none";
          document.body.appendChild(frame);
          await new Promise(ok => frame.addEventListener("load", ok, {once: true}));
          const links = document.querySelectorAll("article.md-content__inner a[href]:not(.headerlink)");
          for (const a of links) {
            a.target = "mw-click-sink";
            const loaded = new Promise(ok => frame.addEventListener("load", ok, {once: true}));
            a.click();  // a javascript: URL loads nothing: given 100 ms to run
            await Promise.race([loaded, new Promise(ok => setTimeout(ok, 100))]);
          }
          return links.length;
        }""",
            self.base + SINK,
        )

    def ran_report(self) -> list[str]:
        return [f"{origin(n)} ran on {where}" if n >= 0 else f"a dialog: {where}" for n, where in self.ran]

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watch(browser: Browser, served: str) -> Iterator[Watch]:  # noqa: F811 - the fixture from test_browser
    w = Watch(browser, served)
    yield w
    w.close()


def test_the_checks_fire_on_a_careless_page(watch: Watch) -> None:
    """Control: the payloads rendered carelessly run, and show as on* attributes and javascript: links."""
    bad = watch.open(CONTROL)
    ran = {n % 100 for n, _ in watch.ran if n >= 0}
    assert len(ran) >= 8, sorted(ran)  # on load
    watch.click_content_links(CONTROL)
    watch.page.wait_for_timeout(300)
    clicked = {n % 100 for n, _ in watch.ran if n >= 0} - ran
    assert len(clicked) >= 5, sorted(clicked)  # javascript: links, clicked
    assert sum("<IMG onerror>" in b or "<SVG onload>" in b for b in bad) >= 3 and any(
        "href=javascript:" in b for b in bad
    )
    assert all(injections(unsafe_html(p)) for p in payloads(4))  # the static scan flags every payload too


def test_no_payload_markup_in_the_built_html(hostile_site: Path) -> None:
    """The fast check: no page holds payload markup (handlers, dangerous URLs, scripts that call xss)."""
    pages = list(iter_html(hostile_site))
    found = {p.relative_to(hostile_site).as_posix(): injections(p.read_text(encoding="utf-8")) for p in pages}
    assert len(pages) > 300
    assert {k: v for k, v in found.items() if v} == {}


def test_payloads_in_memory_text_are_shown_as_text(hostile_site: Path) -> None:
    """Escaped, not dropped: an L2 memory's markup, script and javascript: link read as the text they are
    (these were the demo's hostile memories; the demo now shows a believable agent only)."""
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (hostile_site / "memory" / "category").rglob("*.html"))
    for i in (0, 1, 8):  # <script>…</script>, <img … onerror=…>, [x](javascript:…)
        shown = html.escape(payload(4, i), quote=False)
        assert shown in pages, f"{payload(4, i)!r} is not shown as text on the L2 pages"


def _every_page(site: Path) -> list[str]:
    return [p.relative_to(site).as_posix() for p in iter_html(site)]


def test_no_payload_runs_on_any_page(watch: Watch, hostile_site: Path) -> None:
    pages = _every_page(hostile_site)
    kinds = {p.split("/")[0] if "/" in p else p for p in pages}
    assert {"index.html", "persona.html", "audit.html", "concepts", "memory", "graph", "sessions", "search"} <= kinds
    assert any(p.startswith("memory/wing/") for p in pages) and any(p.startswith("concepts/wanted/") for p in pages)
    assert any(p.startswith("graph/entities/") for p in pages)
    bad: list[str] = []
    for rel in pages:
        bad += watch.open(rel)
    print(f"hostile pages opened: {len(pages)}, payloads run: {len(watch.ran)}")
    assert watch.ran_report() == []
    assert bad == []
    assert watch.external == []


def test_no_payload_runs_when_links_are_clicked(watch: Watch, hostile_site: Path) -> None:
    pages = _every_page(hostile_site)
    picks = ["persona.html", "audit.html", "index.html", "memory/index.html", "sessions/index.html"]
    for folder in ("concepts/wanted/", "concepts/", "memory/category/", "memory/wing/", "sessions/"):
        picks += [p for p in pages if p.startswith(folder) and "index" not in p][:3]
    clicked = sum(watch.click_content_links(rel) for rel in picks)
    watch.page.wait_for_timeout(300)
    print(f"links clicked: {clicked} on {len(picks)} pages, payloads run: {len(watch.ran)}")
    assert clicked > 100 and len(watch.opened) > clicked // 2
    assert watch.ran_report() == []
    assert all(url.startswith(watch.base) for url in watch.opened)


def _hover_graph(watch: Watch, rel: str) -> tuple[int, int, list[str]]:
    """Hover every node and the middle of every edge of a graph file: (nodes, edges, tooltip problems)."""
    page = watch.page
    page.goto(watch.base + rel, wait_until="load")
    page.wait_for_function("window.memwikiNetwork !== undefined", timeout=20_000)
    page.evaluate("() => { memwikiNetwork.stopSimulation(); memwikiNetwork.fit({animation: false}); }")
    spots = page.evaluate(
        """() => {
      const n = memwikiNetwork, pos = n.getPositions(), out = [];
      for (const id of Object.keys(pos)) out.push(n.canvasToDOM(pos[id]));
      const edges = n.body.data.edges.get();
      for (const e of edges) {
        const a = pos[e.from], b = pos[e.to];
        if (a && b && e.from !== e.to) out.push(n.canvasToDOM({x: (a.x + b.x) / 2, y: (a.y + b.y) / 2}));
      }
      return {spots: out, nodes: Object.keys(pos).length, edges: edges.length};
    }"""
    )
    problems: list[str] = []
    shown = 0
    for spot in spots["spots"]:
        page.mouse.move(spot["x"], spot["y"])
        page.wait_for_timeout(220)  # the tooltip delay is 150 ms
        tip = page.evaluate(
            "() => { const t = document.querySelector('.vis-tooltip'); return t && t.style.visibility !== 'hidden'"
            " ? [t.querySelectorAll(':not(br)').length, t.textContent] : null; }"  # innerText makes <br>s
        )
        if tip:
            shown += "xss(" in tip[1]
            if tip[0]:
                problems.append(f"{rel}: a tooltip holds elements: {tip[1][:60]}")
        page.mouse.move(1, 1)
    assert shown >= len(spots["spots"]) // 2, f"{rel}: only {shown} of {len(spots['spots'])} tooltips showed a payload"
    return spots["nodes"], spots["edges"], problems


def test_graph_tooltips_stay_text(watch: Watch, hostile_site: Path) -> None:
    files = ["graph/global.html"] + [p for p in _every_page(hostile_site) if p.startswith("graph/entities/")][:2]
    problems: list[str] = []
    nodes = edges = 0
    for rel in files:
        n, e, p = _hover_graph(watch, rel)
        nodes, edges, problems = nodes + n, edges + e, problems + p
        problems += watch.open(rel)
    print(f"graph nodes hovered: {nodes}, edges: {edges}, payloads run: {len(watch.ran)}")
    assert nodes >= len(TEMPLATES) and edges >= len(TEMPLATES) - 1
    assert problems == [] and watch.ran_report() == []


def test_searches_show_payload_memories_as_text(watch: Watch) -> None:
    watch.open(f"search/index.html?query={WORD}")
    # every layer's hits (up to 5 each, as `memwiki recall --all-layers`), ranked by meaning once the encoder loaded
    watch.page.wait_for_function(
        "document.getElementById('memwiki-search-results').dataset.mode === 'meaning'"
        " && document.querySelectorAll('#memwiki-search-results li').length >= 8",
        timeout=60_000,
    )
    layers = watch.page.eval_on_selector_all("#memwiki-search-results li", "els => els.map(e => e.dataset.layer)")
    assert {"L1", "L2", "L4", "files"} <= set(layers), layers
    titles = watch.page.locator("#memwiki-search-results a.memwiki-search-title")
    assert any("xss(4" in t for t in titles.all_text_contents())
    hrefs = [titles.nth(i).get_attribute("href") or "" for i in range(titles.count())]
    for i in range(min(5, titles.count())):
        watch.page.locator("#memwiki-search-results a.memwiki-search-title").nth(i).click()
        watch.page.wait_for_load_state("load")
        watch.page.go_back()
        watch.page.wait_for_selector("#memwiki-search-results li a")
    bad = watch.open("index.html?q=xss")  # the theme's own search dialog
    watch.page.wait_for_selector(".md-search-result__item", timeout=30_000)
    watch.page.wait_for_timeout(300)
    bad += [f"theme search: {b}" for b in watch.page.evaluate(DOM_CHECK)]
    print(f"search results: {len(hrefs)}, payloads run: {len(watch.ran)}")
    assert all(h and not h.lower().startswith(("javascript:", "data:", "vbscript:")) for h in hrefs)
    assert bad == [] and watch.ran_report() == []
