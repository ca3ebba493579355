"""Reuse the final HTML of generated pages that did not change since the last build.

Rendering Markdown and the theme template is most of a build's time. A generated page outside the
navigation depends only on its own Markdown and on the site's layout (mkdocs.yml, the navigation, the
plugin's code, the MkDocs / Material versions); when both fingerprints match the last build, the page is
not given to MkDocs at all: after the build its cached HTML is put into site_dir (hard-linked when that is
safe) and its search-index entries (recorded per page, from on_page_context on) are put back into the
search plugin's index before that plugin writes it.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.pages import Page

from plugins.cachefile import replace_file
from plugins.pages import GeneratedPage
from plugins.render import page_url

MANIFEST = f"manifest.v{marshal.version}.marshal"  # marshal: ~5x faster than JSON for this big dict
ASSETS = "assets"  # builders' asset files, named by the hash of their content
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


def search_index(config: MkDocsConfig) -> Any:  # noqa: ANN401 - material's SearchIndex
    """The search plugin's index (its `entries` list), or None when there is no such plugin."""
    for plugin in config.plugins.values():
        index = getattr(plugin, "search_index", None)
        if index is not None and hasattr(index, "entries"):
            return index
    return None


def output_path(src_uri: str, directory_urls: bool) -> str:
    """The page's HTML file, relative to site_dir."""
    url = page_url(src_uri, directory_urls)
    return url + "index.html" if url.endswith("/") or not url else url


def _write(path: Path, data: str | bytes) -> None:
    replace_file(path, data.encode("utf-8") if isinstance(data, str) else data)


def _html_name(src_uri: str) -> str:
    return hashlib.sha1(src_uri.encode()).hexdigest() + ".html"


def link_file(pair: tuple[str, str]) -> None:
    """Hard-link (dest, source): `source` into `dest`, replacing what `dest` was."""
    dest, source = pair
    try:
        os.link(source, dest)
    except FileExistsError:
        os.unlink(dest)
        os.link(source, dest)


def load_manifest(folder: Path) -> dict[str, dict[str, Any]]:
    """src_uri -> {"fp", "layout", "search"} of the pages cached in `folder` ({} when none or damaged)."""
    try:
        manifest = marshal.loads((folder / MANIFEST).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


class PageCache:
    """The cache folder of one site: the manifest (what each page was made from, its search entries) plus one
    HTML file per cached page."""

    def __init__(self, folder: Path, config: MkDocsConfig) -> None:
        self.folder = folder
        self.config = config
        self.layout = layout_fingerprint(config)
        self.manifest = load_manifest(folder)
        self.seen: set[str] = set()
        self.hits: list[str] = []
        self._marks: dict[str, int] = {}
        self._stored = False
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwiki-pagecache")
        self._pending: list[Future[None]] = []
        self.assets: dict[str, Path] = {}  # dest_uri -> cache file, see put_asset
        self._asset_paths: set[Path] = set()

    def html_path(self, src_uri: str) -> Path:
        """Where the cache keeps this page's HTML."""
        return self.folder / _html_name(src_uri)

    def lookup(self, page: GeneratedPage) -> bool:
        """True when last build's HTML for this page can be reused (nothing it depends on changed)."""
        self.seen.add(page.src_uri)
        entry = self.manifest.get(page.src_uri)
        if not entry or entry.get("fp") != page.fingerprint or entry.get("layout") != self.layout:
            return False
        if not self.html_path(page.src_uri).is_file():
            return False
        self.hits.append(page.src_uri)
        return True

    def put_asset(self, dest_uri: str, content: bytes) -> None:
        """Keep a builder's asset in the cache by content (written once), to be put into the site with the pages."""
        path = self.folder / ASSETS / hashlib.sha1(content).hexdigest()
        if path not in self._asset_paths and not path.is_file():
            self._pending.append(self._writer.submit(_write, path, content))
        self.assets[dest_uri] = path
        self._asset_paths.add(path)

    def begin(self, page: Page) -> None:
        """Remember where this page's search entries start (called in on_page_context, before the search plugin)."""
        index = search_index(self.config)
        self._marks[page.file.src_uri] = len(index.entries) if index is not None else 0

    def store(self, generated: GeneratedPage, page: Page, html: str) -> None:
        """Keep a page MkDocs rendered, with the search entries the search plugin added since `begin`."""
        index = search_index(self.config)
        start = self._marks.pop(page.file.src_uri, None)
        self.put(generated, html, index.entries[start:] if index is not None and start is not None else [])

    def put(self, generated: GeneratedPage, html: str, entries: list[dict[str, Any]]) -> None:
        """Keep a page's final HTML and its search entries for the next build."""
        # file I/O off the build's thread; finish() waits and raises what failed
        self._pending.append(self._writer.submit(_write, self.html_path(generated.src_uri), html))
        self.record(generated, entries)

    def record(self, generated: GeneratedPage, entries: list[dict[str, Any]]) -> None:
        """Note a page whose final HTML was written to `html_path` by someone else (plugins.fastwrite)."""
        self._stored = True
        self.manifest[generated.src_uri] = {"fp": generated.fingerprint, "layout": self.layout, "search": entries}

    def restore(self, site_dir: Path, link: bool) -> None:
        """Put the reused pages and the builders' assets into the site (MkDocs never sees them: no render, no copy).

        `link`: hard-link them from the cache (one metadata write per page) instead of copying. Only safe when
        nothing writes into site_dir in place afterwards (a plain `mkdocs build`, not `--dirty` or `serve`):
        the cache itself never rewrites a file in place (see `_write`)."""
        self.drain()
        folder, site = str(self.folder), str(site_dir)
        pairs = [  # plain strings: pathlib's overhead was most of this for 10k pages
            (f"{site}/{output_path(u, self.config.use_directory_urls)}", f"{folder}/{_html_name(u)}") for u in self.hits
        ]
        pairs += [(f"{site}/{rel}", str(source)) for rel, source in self.assets.items()]
        for parent in {os.path.dirname(dest) for dest, _ in pairs}:
            os.makedirs(parent, exist_ok=True)
        if link:
            try:  # the links are metadata writes: a few threads keep the disk busy
                with ThreadPoolExecutor(max_workers=4, thread_name_prefix="memwiki-link") as pool:
                    list(pool.map(link_file, pairs, chunksize=256))
                return
            except OSError:
                pass  # another file system, or no hard links there: copy instead
        for dest, source in pairs:
            if os.path.lexists(dest):
                os.unlink(dest)  # it may be a link to the cache file: never write through it
            shutil.copyfile(source, dest)

    def drain(self) -> None:
        """Wait for the cache writes of this build; raise the first that failed."""
        self._writer.shutdown(wait=True)
        pending, self._pending = self._pending, []
        for done in pending:
            done.result()

    def finish(self) -> None:
        """Put cached pages' search entries back, drop pages that are gone, save the manifest if it changed."""
        index = search_index(self.config)
        if index is not None:
            for src_uri in self.hits:
                index.entries.extend(self.manifest[src_uri].get("search", []))
        self.drain()
        changed = self._stored
        for src_uri in list(self.manifest):
            if src_uri not in self.seen:
                self.manifest.pop(src_uri)
                self.html_path(src_uri).unlink(missing_ok=True)
                changed = True
        if (self.folder / ASSETS).is_dir():
            for path in (self.folder / ASSETS).iterdir():  # assets no page uses any more
                if path not in self._asset_paths:
                    path.unlink(missing_ok=True)
        if changed or not (self.folder / MANIFEST).is_file():
            _write(self.folder / MANIFEST, marshal.dumps(self.manifest))
