"""The demo wiki on every theme MkDocs ships and under ProperDocs, MkDocs' maintained fork: each build passes
`--strict`, loads nothing from another host, and its one search box is memwiki's (headless Chromium types into
it with the mouse's click first, and memwiki's results answer)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.test_browser import browser  # noqa: F401 - fixture: headless Chromium
from tests.test_site import ROOT, demo_build, site  # noqa: F401 - fixtures: the demo (and its store) built once

QUERY = "备份策略"
ANSWER = "备份保留策略"  # the demo's memory about its backup policy
COMBINATIONS = [
    ("mkdocs", "mkdocs"),
    ("mkdocs", "readthedocs"),
    ("properdocs", "material"),
    ("properdocs", "mkdocs"),
    ("properdocs", "readthedocs"),
]


def _config(folder: Path, theme: str) -> Path:
    """The demo's wiki with another theme, and theme options that would load from other hosts (the public
    profile must turn them off): Google Fonts on Material, highlight.js from a CDN on the others."""
    options = "font: {text: Roboto}" if theme == "material" else "highlightjs: true"
    path = folder / "mkdocs.yml"
    path.write_text(
        f"site_name: memwiki demo ({theme})\n"
        f"docs_dir: {ROOT / 'site_src'}\n"
        f"site_dir: {folder / 'site'}\n"
        "use_directory_urls: false\n"
        f"theme: {{name: {theme}, {options}}}\n"
        "plugins:\n"
        "  - search\n"
        "  - memwiki:\n"
        f"      store: {ROOT / '.cache' / 'demo-store'}\n"
        f"      demo_src: {ROOT / 'demo'}\n"
        f"      cache_dir: {folder / 'cache'}\n",
        encoding="utf-8",
    )
    (folder / "cache").mkdir(exist_ok=True)
    shared = ROOT / ".cache" / "memwiki" / "use"  # the browser embedder's export, made once for every build
    if shared.exists() and not (folder / "cache" / "use").exists():
        (folder / "cache" / "use").symlink_to(shared, target_is_directory=True)
    return path


@pytest.fixture(scope="module", params=COMBINATIONS, ids=lambda c: f"{c[0]}-{c[1]}")
def themed(
    request: pytest.FixtureRequest, site: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    command, theme = request.param
    folder = tmp_path_factory.mktemp(f"{command}-{theme}")
    config = _config(folder, theme)
    program = [sys.executable, "-m", "mkdocs"] if command == "mkdocs" else [shutil.which("properdocs") or "properdocs"]
    done = subprocess.run(
        [*program, "build", "--strict", "-f", str(config)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "loads nothing from outside itself" in done.stderr  # the plugin says what it turned off
    yield folder / "site", theme


def _search(page: Page, theme: str) -> None:
    """Search as a reader does, with the mouse: open the theme's box, click into it, type, (Enter where the box
    sends its words to a page)."""
    if theme == "material":
        page.click(".md-search__input")  # (in the header on a wide screen)
    elif theme == "mkdocs":
        page.click("a[data-bs-target$='_search_modal']")  # (#mkdocs_search_modal; ProperDocs: #properdocs_…)
        page.click("#mkdocs-search-query, #properdocs-search-query")
    else:
        page.click("#rtd-search-form input")
    page.keyboard.type(QUERY)
    if theme == "readthedocs":
        page.keyboard.press("Enter")


def _seen(page: Page, selector: str) -> bool:
    """Whether a reader sees the first element `selector` names: not transparent, and on top at its own centre."""
    return page.evaluate(
        """(selector) => {
            const el = document.querySelector(selector);
            if (!el || !el.checkVisibility({opacityProperty: true, visibilityProperty: true})) return false;
            const box = el.getBoundingClientRect();
            if (box.width < 1 || box.height < 1) return false;
            const top = document.elementFromPoint(box.left + box.width / 2, box.top + Math.min(box.height / 2, 10));
            return !!top && (el === top || el.contains(top));
        }""",
        selector,
    )


def test_the_theme_box_runs_memwikis_search(themed: tuple[Path, str], browser: Browser) -> None:  # noqa: F811
    built, theme = themed
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((built / "index.html").as_uri())
    _search(page, theme)
    results = page.locator(".memwiki-search-results li").first
    results.wait_for(timeout=60_000)
    assert ANSWER in page.locator(".memwiki-search-results").inner_text()
    assert _seen(page, ".memwiki-search-results li"), "the results are in the page but a reader cannot see them"
    page.close()
    outside = [u for u in requests if not u.startswith(("file://", "data:", "blob:"))]
    assert outside == []
    html = (built / "index.html").read_text(encoding="utf-8")
    assert "search/main.js" not in html or theme == "material"  # (the theme's lunr search is not started)
    assert "fonts.googleapis" not in html and "cdnjs" not in html
