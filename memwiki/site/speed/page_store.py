"""How the builders' pages get into the site fast: the plugin's one door to every speed measure of a build.

Per build, `PageStore` decides for each generated page one of three ways into the site:

- reused: its final HTML is the last build's (speed.html_cache): MkDocs never sees it; after the build the
  cached file is copied into the site (or found there already: a plain `mkdocs build` keeps the last site
  through MkDocs' clean, speed.kept_site);
- framed (Material, `fast_pages`): a page outside the navigation is not given to MkDocs either. One probe page
  per folder is; its rendered HTML is cut into a frame (speed.theme_frame) that each page of the folder fills
  with its own title, TOC and content, written by worker processes (speed.parallel_pages);
- rendered by MkDocs and the theme: pages in the navigation, and everything when `fast_pages` is off. Their
  raw HTML blocks are set aside while Python-Markdown reads the rest (speed.raw_blocks).

No generated page goes into Material's search index (`search.exclude`; the search plugin of the `mkdocs` and
`readthedocs` themes indexes every page): the site's search is memwiki's (every layer, the pages included,
builders.search), the theme's is never started, and its index would only be one more public copy of every
memory's text for the final scan to read.

It also keeps the theme's compiled templates across builds, lists the pages MkDocs never saw in sitemap.xml,
and ends with the site a clean build would leave.
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

from jinja2 import Environment, FileSystemBytecodeCache
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from memwiki.errors import MemwikiError
from memwiki.site.model.generated import GeneratedAsset, GeneratedPage
from memwiki.site.model.render import page_url
from memwiki.site.speed.html_cache import PageCache, output_path
from memwiki.site.speed.kept_site import KeptSite
from memwiki.site.speed.parallel_pages import WriteJob, write_pages
from memwiki.site.speed.raw_blocks import join, new_nonce, split
from memwiki.site.speed.theme_frame import ThemeFrame, frame_folder, framed_ok, probe_markdown, probe_name

log = logging.getLogger("mkdocs.plugins.memwiki")
PAGES = "pages"  # in cache_dir: the page cache (speed.html_cache)
JINJA = "jinja"  # in cache_dir: the theme's compiled templates


@dataclass(frozen=True)
class SitemapPage:
    """A page MkDocs never saw, in the shape sitemap.xml's template reads (`file.page.canonical_url`...)."""

    canonical_url: str
    abs_url: str = ""
    is_link: bool = False
    update_date: str = ""

    @property
    def page(self) -> SitemapPage:  # the template reads `file.page`
        return self


class PageStore:
    """The site's pages of one build (see the module's text). `cache_dir`: None when `page_cache` is off;
    `keep_site`: a build that cleans its site first (`mkdocs build` or `serve`, not `--dirty`), so the last site
    may be kept through the clean; `may_fork`: a plain `mkdocs build`, where workers may fork."""

    def __init__(
        self, cache_dir: Path | None, fast_pages: bool, render_workers: int, keep_site: bool, may_fork: bool
    ) -> None:
        self.cache_dir = cache_dir
        self.fast_pages = fast_pages
        self.render_workers = render_workers
        self.keep_site = keep_site
        self.may_fork = may_fork
        self.nonce = new_nonce()
        self.cache: PageCache | None = None
        self.kept: KeptSite | None = None  # the last build's site, kept through MkDocs' clean
        self.rendered_pages: dict[str, GeneratedPage] = {}  # src_uri -> the generated pages MkDocs renders
        self.blocks: dict[str, list[str]] = {}  # src_uri -> raw HTML blocks taken out of its Markdown
        self.framed: list[GeneratedPage] = []  # pages filled into their folder's frame after the build
        self.probes: dict[str, str] = {}  # probe src_uri -> the folder it stands for
        self.frames: dict[str, ThemeFrame] = {}  # folder -> the theme's page for it
        self.times: dict[str, float] = {}  # where this build's time went, logged at its end

    # ── before the builders ──

    def set_aside_site(self, site_dir: str) -> None:
        """Keep the last build's site through MkDocs' clean (with the page cache on)."""
        if self.cache_dir is not None and self.keep_site:
            kept = KeptSite(site_dir)
            if kept.set_aside():
                self.kept = kept

    def put_back_site(self) -> None:
        if self.kept is not None:
            self.kept.put_back()

    def open_cache(self, config: MkDocsConfig) -> None:
        self.cache = PageCache(self.cache_dir / PAGES, config) if self.cache_dir is not None else None

    def reusable(self, src_uri: str, fingerprint: str) -> bool:
        """The page cache's word: this page's final HTML, with this fingerprint, is at hand."""
        return self.cache is not None and self.cache.reusable(src_uri, fingerprint)

    def holds_asset(self, name: str) -> bool:
        """The page cache's word: an asset of this name (GeneratedAsset.digest) is at hand, its bytes not needed."""
        return self.cache is not None and self.cache.holds_asset(name)

    def layout_holds(self) -> bool:
        """The navigation now in the config is the one pages were looked up with until now (see PageCache)."""
        return self.cache is None or self.cache.settle_layout()

    # ── the pages into MkDocs' files ──

    def add(
        self, files: Files, pages: list[GeneratedPage], assets: list[GeneratedAsset], config: MkDocsConfig
    ) -> Files:
        """Give MkDocs the pages it renders (and one probe per framed folder); note the rest."""
        features = config.theme.get("features") or []
        # Material without toc.integrate (that feature moves the TOC into the navigation the frame leaves out)
        framing = self.fast_pages and config.theme.name == "material" and "toc.integrate" not in features
        taken = {f.src_uri for f in files}  # (files.get_file_from_path per page was a tenth of a 10k rebuild)
        for asset in assets:
            if asset.dest_uri not in taken:
                self._add_asset(files, asset, config)
        for page in pages:
            if page.src_uri in taken:
                log.info("memwiki: %s is hand-written in docs_dir; the generated page is skipped", page.src_uri)
                continue
            taken.add(page.src_uri)
            self._add_page(files, page, config, framing)
        for probe in self.probes:
            self.probes[probe] = posixpath.dirname(probe)
            files.append(File.generated(config, probe, content=probe_markdown(self.nonce)))
        if self.cache is not None:
            self.cache.begin_restore(Path(config.site_dir))  # while MkDocs renders the rest
            log.info(
                "memwiki: %d generated pages, %d reused from the cache (%d not made again)",
                len(pages),
                len(self.cache.hits),
                sum(1 for p in pages if p.kept),
            )
        return files

    def _add_asset(self, files: Files, asset: GeneratedAsset, config: MkDocsConfig) -> None:
        if self.cache is not None:
            self.cache.put_asset(asset)  # into the site with the reused pages
        else:
            files.append(File.generated(config, asset.dest_uri, content=asset.content))

    def _add_page(self, files: Files, page: GeneratedPage, config: MkDocsConfig, framing: bool) -> None:
        """One generated page's fate: reused from the cache, filled into its folder's theme frame, or rendered by
        MkDocs (its HTML blocks kept out of Python-Markdown)."""
        if self.cache is not None and not page.in_nav and self.cache.lookup(page):
            return  # the last build's HTML goes into the site after the build
        if page.kept:  # a builder's memo promised the cached HTML (speed.memo)
            raise PluginError(
                f"memwiki: {page.src_uri} came from a builder's memo but its cached HTML cannot be used; "
                f"remove {self.cache_dir} and build again"
            )
        if framing and not page.in_nav and framed_ok(page.src_uri):
            self.framed.append(page)
            self.probes.setdefault(posixpath.join(frame_folder(page.src_uri), f"{probe_name(self.nonce)}.md"), "")
            return
        stub, self.blocks[page.src_uri] = split(page.markdown, self.nonce)
        files.append(File.generated(config, page.src_uri, content=stub))
        self.rendered_pages[page.src_uri] = page

    # ── while MkDocs renders ──

    def page_markdown(self, page: Page) -> None:
        """A generated page is kept out of the theme's search index (see the module's text)."""
        if page.file.src_uri in self.rendered_pages:
            page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}

    def page_content(self, html: str, page: Page) -> str:
        blocks = self.blocks.pop(page.file.src_uri, None)
        return join(html, self.nonce, blocks) if blocks else html

    def page_done(self, page: Page, output: str) -> None:
        """A page MkDocs has rendered: a probe becomes its folder's frame; a generated page is cached."""
        folder = self.probes.get(page.file.src_uri)
        if folder is not None:
            try:
                self.frames[folder] = ThemeFrame.parse(output, self.nonce)
            except MemwikiError as exc:
                raise PluginError(f"memwiki: {exc}") from None
            return
        generated = self.rendered_pages.get(page.file.src_uri)
        if generated is not None and self.cache is not None and not generated.in_nav:
            self.cache.store(generated, output)

    def sitemap(self, context: dict[str, Any], config: MkDocsConfig) -> dict[str, Any]:
        """sitemap.xml's pages: what MkDocs rendered but the probes, and the pages it never saw."""
        if not config.site_url:  # no page has a URL to list
            return context
        probe = probe_name(self.nonce)
        listed = [f for f in context.get("pages") or [] if probe not in f.src_uri]
        du = config.use_directory_urls
        unseen = [p.src_uri for p in self.framed] + (list(self.cache.hits) if self.cache is not None else [])
        listed += [SitemapPage(urljoin(config.site_url, quote(page_url(u, du)))) for u in unseen]
        context["pages"] = listed
        return context

    def environment(self, env: Environment) -> Environment:
        """Keep the theme's compiled templates across builds (compiling them was a tenth of a 10k rebuild). Jinja
        keys each one by its name and the checksum of its source, so an edited template is compiled anew."""
        if self.cache_dir is not None and env.bytecode_cache is None:
            folder = self.cache_dir / JINJA
            folder.mkdir(parents=True, exist_ok=True)
            env.bytecode_cache = FileSystemBytecodeCache(str(folder))
        return env

    # ── after MkDocs ──

    def write_rest(self, config: MkDocsConfig) -> None:
        """Write the framed pages, drop the probes, put the reused pages in place."""
        t0 = time.perf_counter()
        self._write_framed(config)
        t1 = time.perf_counter()
        if self.cache is not None:
            self.cache.restore(Path(config.site_dir))
            self.cache.finish()
        self.times["pages written"] = t1 - t0
        self.times["cache"] = time.perf_counter() - t1
        log.info(
            "memwiki: generated pages written: %d filled into their folder's frame, %d rendered through MkDocs, "
            "%d reused from the last build",
            len(self.framed),
            len(self.rendered_pages),
            len(self.cache.hits) if self.cache is not None else 0,
        )

    def complete(self) -> None:
        """After MkDocs: what the last site held and this build did not write swept away."""
        if self.cache is not None and self.kept is not None:
            t0 = time.perf_counter()
            removed = self.kept.sweep(self.cache.placed)
            if removed >= 0:  # (-1: not swept, and said why)
                seconds = time.perf_counter() - t0
                log.info("memwiki: kept the last site; %d stale files removed in %.2f s", removed, seconds)
            self.kept = None

    def abandon(self) -> None:
        """A failed build: stop writing into the site; leave the last site as it was."""
        if self.cache is not None:
            with contextlib.suppress(Exception):  # MkDocs reports the error; only stop writing
                self.cache.drain()
        if self.kept is not None:
            with contextlib.suppress(Exception):
                self.kept.restore_on_error()
            self.kept = None

    def _write_framed(self, config: MkDocsConfig) -> None:
        site_dir = Path(config.site_dir)
        du = config.use_directory_urls
        missing = sorted({frame_folder(p.src_uri) for p in self.framed} - self.frames.keys())
        if missing:
            raise PluginError(
                f"memwiki: the probe page of {missing[0]}/ was not rendered (excluded by exclude_docs or "
                "draft_docs?); set `fast_pages: false` or let it through"
            )
        job = WriteJob(
            pages=self.framed,
            frames=self.frames,
            nonce=self.nonce,
            markdown_extensions=config.markdown_extensions,
            mdx_configs=config.mdx_configs,
            site_dir=str(site_dir),
            directory_urls=du,
            cache_path=self.cache.html_path if self.cache is not None else None,
        )
        if self.cache is not None:
            self.cache.drain()  # no writer thread running while workers fork
        workers = self.render_workers if self.may_fork else 1  # no forking under `mkdocs serve`
        write_pages(job, workers)
        if self.cache is not None:
            for page in self.framed:
                self.cache.record(page)
        for probe in self.probes:
            (site_dir / output_path(probe, du)).unlink(missing_ok=True)
            if du:
                with contextlib.suppress(OSError):  # its own folder, empty now
                    (site_dir / output_path(probe, du)).parent.rmdir()
