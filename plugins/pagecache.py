"""Reuse the final HTML of generated pages that did not change since the last build.

Rendering Markdown and the theme template is most of a build's time. A generated page outside the
navigation depends only on its own Markdown and on the site's layout (mkdocs.yml, the navigation, the
plugin's code, the MkDocs / Material versions); when both fingerprints match the last build, the cached
HTML is added as a plain file instead of a page, and its search-index entries are put back into the
search plugin's index before that plugin writes it.
"""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File
from mkdocs.structure.pages import Page

from memory.textio import atomic_write_text
from plugins.pages import GeneratedPage
from plugins.render import page_url

MANIFEST = "manifest.json"
_CODE = Path(__file__).resolve().parent


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def layout_fingerprint(config: MkDocsConfig) -> str:
    """Changes whenever something other than a page's own Markdown could change its HTML."""
    digest = hashlib.sha1()
    if config.config_file_path and Path(config.config_file_path).is_file():
        digest.update(Path(config.config_file_path).read_bytes())
    digest.update(json.dumps(config.nav, sort_keys=True, default=str, ensure_ascii=False).encode())
    digest.update(f"{config.use_directory_urls}:{_version('mkdocs')}:{_version('mkdocs-material')}".encode())
    for path in sorted(_CODE.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".css", ".js", ".html"):
            digest.update(path.relative_to(_CODE).as_posix().encode() + path.read_bytes())
    overrides = Path(config.theme.custom_dir) if config.theme.custom_dir else None
    if overrides and overrides.is_dir():
        for path in sorted(overrides.rglob("*")):
            if path.is_file():
                digest.update(path.read_bytes())
    return digest.hexdigest()


def _search_index(config: MkDocsConfig) -> Any:  # noqa: ANN401 - material's SearchIndex
    for plugin in config.plugins.values():
        index = getattr(plugin, "search_index", None)
        if index is not None and hasattr(index, "entries"):
            return index
    return None


def _dest(src_uri: str, directory_urls: bool) -> str:
    url = page_url(src_uri, directory_urls)
    return url + "index.html" if url.endswith("/") or not url else url


class PageCache:
    """The cache folder of one site: `manifest.json` plus one HTML file per cached page."""

    def __init__(self, folder: Path, config: MkDocsConfig) -> None:
        self.folder = folder
        self.config = config
        self.layout = layout_fingerprint(config)
        self.manifest: dict[str, dict[str, Any]] = {}
        path = folder / MANIFEST
        if path.is_file():
            try:
                self.manifest = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.manifest = {}
        self.seen: set[str] = set()
        self.hits: list[str] = []
        self._marks: dict[str, int] = {}

    def _html_path(self, src_uri: str) -> Path:
        return self.folder / (hashlib.sha1(src_uri.encode()).hexdigest() + ".html")

    def lookup(self, page: GeneratedPage) -> File | None:
        """A file holding last build's HTML for this page when nothing it depends on changed."""
        self.seen.add(page.src_uri)
        entry = self.manifest.get(page.src_uri)
        html_path = self._html_path(page.src_uri)
        if not entry or entry.get("fp") != page.fingerprint or entry.get("layout") != self.layout:
            return None
        if not html_path.is_file():
            return None
        self.hits.append(page.src_uri)
        dest = _dest(page.src_uri, self.config.use_directory_urls)
        return File.generated(self.config, dest, content=html_path.read_bytes())

    def begin(self, page: Page) -> None:
        """Remember where this page's search entries start (called in on_page_context, before the search plugin)."""
        index = _search_index(self.config)
        self._marks[page.file.src_uri] = len(index.entries) if index is not None else 0

    def store(self, generated: GeneratedPage, page: Page, html: str) -> None:
        index = _search_index(self.config)
        start = self._marks.pop(page.file.src_uri, None)
        entries = index.entries[start:] if index is not None and start is not None else []
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self._html_path(generated.src_uri), html)
        self.manifest[generated.src_uri] = {"fp": generated.fingerprint, "layout": self.layout, "search": entries}

    def finish(self) -> None:
        """Put cached pages' search entries back, drop pages that are gone, save the manifest."""
        index = _search_index(self.config)
        if index is not None:
            for src_uri in self.hits:
                index.entries.extend(self.manifest[src_uri].get("search", []))
        for src_uri in list(self.manifest):
            if src_uri not in self.seen:
                self.manifest.pop(src_uri)
                self._html_path(src_uri).unlink(missing_ok=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.folder / MANIFEST, json.dumps(self.manifest, ensure_ascii=False))
