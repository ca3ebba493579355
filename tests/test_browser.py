"""The built demo wiki in a real browser (headless Chromium driven by Playwright, no network).

The search page must find, from file:// and from a static web server, what `memwiki recall` finds.
"""

from __future__ import annotations

import functools
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from memwiki.store.store import Store
from tests.test_site import ROOT, demo_build, site  # noqa: F401 - fixtures: the demo site built once

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
QUERIES = [
    "向量是在哪台机器上算的？",
    "Which server runs the embedding model?",
    "回忆的顺序是什么？",  # an English memory, found by the query's English glosses (6th by meaning alone)
]


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        yield b
        b.close()


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def recall_top(query: str) -> str:
    with Store.open(ROOT / ".cache" / "demo-store") as store:
        return next(h.id for h in store.recall(query, k=5, all_layers=True) if h.layer == "L2")


def browser_top(browser: Browser, base: str, query: str) -> tuple[str, list[str]]:
    page = browser.new_page()
    external: list[str] = []
    page.on(
        "request",
        lambda r: (
            external.append(r.url)
            if r.url.startswith(("http://", "https://"))
            and not r.url.startswith(("http://127.0.0.1", "http://localhost"))
            else None
        ),
    )
    page.goto(f"{base}search/index.html?query={query}")
    page.wait_for_function(
        "document.getElementById('memwiki-search-status').textContent.includes('as recall ranks')", timeout=60_000
    )
    first_l2 = page.locator("#memwiki-search-results li[data-layer=L2] a.memwiki-search-title").first
    href = first_l2.get_attribute("href") or ""
    page.close()
    return href, external


@pytest.mark.parametrize("query", QUERIES)
def test_static_search_finds_what_recall_finds(browser: Browser, served: str, site: Path, query: str) -> None:
    expected = recall_top(query)
    for base in (served, site.as_uri() + "/"):
        href, external = browser_top(browser, base, query)
        assert href.endswith(f"#mem-{expected}"), (base, href, expected)
        assert external == [], f"the page asked the internet for {external}"


@pytest.mark.parametrize("width", [390, 1400])
def test_the_graph_at_phone_width_starts_at_a_readable_scale(browser: Browser, served: str, width: int) -> None:
    """At phone width the whole graph fitted would shrink its labels past reading: it starts near its busiest node
    at scale 0.8 instead. A wide frame shows the whole graph, fitted."""
    page = browser.new_page(viewport={"width": width, "height": 800})
    page.goto(f"{served}graph/global.html")
    page.wait_for_function("window.memwikiNetwork !== undefined", timeout=20_000)
    page.wait_for_function("!memwikiNetwork.physics.physicsEnabled", timeout=30_000)  # stabilised, then stopped
    scale = page.evaluate("memwikiNetwork.getScale()")
    fitted = page.evaluate("memwikiNetwork.fit({animation: false}), memwikiNetwork.getScale()")
    page.close()
    if width < 600:
        assert scale >= 0.79 and fitted < 0.79, (scale, fitted)  # (fitted, the demo's graph would be too small)
    else:
        assert abs(scale - fitted) < 1e-3, (scale, fitted)
