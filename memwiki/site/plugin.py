"""The MkDocs plugin `memwiki`: thin hooks around the page builders.

- on_config: resolve the plugin's paths, add the CSS / JS;
- on_files: open the memory source (through the privacy filter), run every builder, add their pages and
  assets as generated files, and build the navigation from the few pages that belong in it (section
  indexes; the rest hang off them). A page whose HTML did not change since the last build is not given
  to MkDocs at all: on_post_build puts the cached HTML (and its search entries) into the site. In a plain
  `mkdocs build` the last build's site is kept through MkDocs' clean and swept after (memwiki.site.speed.kept_site), so
  those pages are mostly in place already;
- with Material (`fast_pages`, on by default) the other generated pages outside the navigation are not
  given to MkDocs either: one probe page per folder is, and on_post_build fills the theme's HTML of that
  probe with each page's own title, TOC and content (memwiki.site.speed.theme_frame). The search entries of every
  generated page are made by memwiki.site.speed.search_entries (Material's rules, Chinese segmentation kept across
  builds). Other plugins' page events do not run for the pages made from a shell;
- a generated page reaches Python-Markdown as a stub: its raw HTML blocks are set aside and put back
  after (memwiki.site.speed.raw_blocks), so Markdown only reads the headings and short text;
- the audit kinds listed in `audit_errors` become build warnings, so `mkdocs build --strict` fails on them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import re
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

from jinja2 import Environment, FileSystemBytecodeCache
from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, CombinedEvent, event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from memwiki.errors import MemwikiError
from memwiki.site.builder_io import BuildContext, GeneratedPage
from memwiki.site.builders import build_all, names_version, site
from memwiki.site.builders.audit import KINDS, TITLES, findings
from memwiki.site.detectors import Detectors
from memwiki.site.privacy import PROFILES, PrivacyFilter, PrivacyRules, load_key
from memwiki.site.pyvis_html import PYVIS_VIS
from memwiki.site.render import esc, page_url
from memwiki.site.site_scan import SiteScan
from memwiki.site.speed import gc_policy
from memwiki.site.speed.html_cache import PageCache, output_path, search_index
from memwiki.site.speed.kept_site import KeptSite
from memwiki.site.speed.layer_cache import CachedSource
from memwiki.site.speed.memo import key_of
from memwiki.site.speed.parallel_pages import WriteJob, write_pages
from memwiki.site.speed.raw_blocks import join, new_nonce, split
from memwiki.site.speed.search_entries import EntryMaker, strip_search_attrs
from memwiki.site.speed.theme_frame import PageShell, fast_path_ok, probe_markdown, probe_name, shell_folder
from memwiki.source import Memory, MemorySource

log = logging.getLogger("mkdocs.plugins.memwiki")
ASSETS = Path(__file__).resolve().parent / "assets"
LAYERS = "layers"  # in cache_dir: each layer's records, see memwiki.site.speed.layer_cache
JINJA = "jinja"  # in cache_dir: the theme's compiled templates
SITESCAN = "sitescan.marshal"  # in cache_dir: files the last build's scan found clean, see memwiki.site.site_scan
SEGMENTS = "segments.json"  # Chinese runs segmented for the search index, see memwiki.site.speed.search_entries
CSS = "assets/memwiki/memwiki.css"
JS = "assets/memwiki/memwiki.js"


class MemwikiConfig(base.Config):
    store = c.Optional(c.Type(str))  # the store folder
    demo_src = c.Optional(c.Type(str))  # build the store from these plain-text demo sources first
    hermes_home = c.Optional(c.Type(str))  # a hermes-agent home ("auto": $HERMES_HOME or ~/.hermes)
    palace = c.Optional(c.Type(str))  # a MemPalace palace ("auto": located as MemPalace does)
    cache_dir = c.Type(str, default=".cache/memwiki")
    audit_errors = c.ListOfItems(c.Choice(KINDS), default=[])
    profile = c.Choice(PROFILES, default="public")  # public: secrets redacted, private records withheld; or private
    privacy = c.Type(dict, default={})
    today = c.Optional(c.Type(str))  # fixes "today" for the expired-facts check (reproducible builds)
    page_cache = c.Type(bool, default=True)
    # Material only: pages outside the nav from one rendered page per folder (memwiki.site.speed.theme_frame), and search
    # entries of generated pages made by memwiki.site.speed.search_entries; off: MkDocs and the theme do every page
    fast_pages = c.Type(bool, default=True)
    render_workers = c.Type(int, default=0)  # processes writing those pages: 0 = one per CPU on large sites
    graph_max_nodes = c.Type(int, default=300)


SEARCH_THEME = Path(__file__).resolve().parent / "assets" / "search" / "theme"  # the header's search box


def _option_path(value: str | None, base_dir: Path) -> str | None:
    """A path option relative to mkdocs.yml's folder ("auto" and empty as they are)."""
    if not value or value == "auto":
        return value or None
    return str((base_dir / Path(value).expanduser()).resolve())


def make_source(options: dict[str, Any], base_dir: Path) -> MemorySource:
    """The one place where the plugin's options become a MemorySource (store, hermes home, palace)."""
    from memwiki.readers.locate import open_sources

    def path(value: str | None) -> str | None:
        return _option_path(value, base_dir)

    store = path(options.get("store"))
    if options.get("demo_src"):
        from memwiki.demo import build_demo_store

        if store is None:
            raise MemwikiError("memwiki: `demo_src` needs `store` (where to build the demo store)")
        build_demo_store(Path(path(options["demo_src"])), Path(store))
    return open_sources(
        store,
        path(options.get("hermes_home")),
        path(options.get("palace")),
        Path(path(options["cache_dir"]) or ""),
        partial=True,
    )


class MemwikiPlugin(BasePlugin[MemwikiConfig]):
    """Publishes a memory store (or a hermes home and / or a MemPalace palace) as a wiki."""

    def __init__(self) -> None:
        self.ctx: BuildContext | None = None
        self.cache: PageCache | None = None
        self.generated: dict[str, GeneratedPage] = {}
        self.blocks: dict[str, list[str]] = {}  # src_uri -> raw HTML blocks taken out of its Markdown
        self.fast: list[GeneratedPage] = []  # pages made from a folder's shell in on_post_build
        self.probes: dict[str, str] = {}  # probe src_uri -> the folder it stands for
        self.shells: dict[str, PageShell] = {}  # folder -> the theme's page for it
        self.entries: EntryMaker | None = None  # search entries of generated pages (instead of the search plugin's)
        self.nonce = new_nonce()
        self.link_pages = False
        self.kept: KeptSite | None = None  # the last build's site, kept through MkDocs' clean
        self.hollow: list[str] = []  # pages the builders did not make again (see memwiki.site.speed.memo)
        self.times: dict[str, float] = {}  # where this build's time went, logged at its end
        self.rules = PrivacyRules()  # this build's privacy rules (the profile and what the gate removes)

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        self._forget_last_build()
        gc_policy.start()  # see memwiki.site.speed.gc_policy
        # generated pages are left out of the navigation on purpose: do not list each one at INFO level
        if config.validation.nav.omitted_files == logging.INFO:
            config.validation.nav.omitted_files = logging.DEBUG
        for name, where in ((CSS, config.extra_css), (JS, config.extra_javascript)):
            if name not in [str(x) for x in where]:
                where.append(name)
        self._one_search_box(config)
        return config

    @staticmethod
    def _one_search_box(config: MkDocsConfig) -> None:
        """With Material, the header's search box is memwiki's (every layer, by meaning): the theme's partial
        without its lunr search goes in front of the theme's own files (after a site's own custom_dir)."""
        dirs = config.theme.dirs
        if config.theme.name != "material" or any(Path(d).resolve() == SEARCH_THEME for d in dirs):
            return
        dirs.insert(1 if config.theme.custom_dir else 0, str(SEARCH_THEME))

    def _base_dir(self, config: MkDocsConfig) -> Path:
        return Path(config.config_file_path).resolve().parent if config.config_file_path else Path.cwd()

    def _cache_dir(self, config: MkDocsConfig) -> Path:
        return self._base_dir(config) / self.config.cache_dir

    def _build(self, config: MkDocsConfig, reuse: bool) -> tuple[BuildContext, list[GeneratedPage], list[Any]]:
        """Read the source, run every builder; `reuse`: builders may give back pages whose HTML is cached."""
        t0 = time.perf_counter()
        with (
            gc_policy.paused()
        ):  # the source's records, caches and pages stay to the end (see memwiki.site.speed.gc_policy)
            self.ctx = ctx = self._context(config, reuse)
            t1 = time.perf_counter()
            try:
                pages, assets = build_all(ctx)
            except MemwikiError as exc:
                raise PluginError(f"memwiki: {exc}") from None
        self.times["read"] = t1 - t0
        self.times["builders"] = time.perf_counter() - t1
        if isinstance(ctx.source, CachedSource):
            ctx.source.save()
            log.info("memwiki: layers read from the source: %s", ", ".join(ctx.source.reads) or "none")
        return ctx, pages, assets

    def _context(self, config: MkDocsConfig, reuse: bool = False) -> BuildContext:
        base_dir = self._base_dir(config)
        options = dict(self.config)
        options["cache_dir"] = str(self._cache_dir(config))
        if reuse and self.cache is not None:
            options["reusable_page"] = self.cache.reusable
        # builders may fork (see memwiki.site.speed.parallel_pages): on Linux, in a plain `mkdocs build`, unless told not to
        options["fork"] = sys.platform.startswith("linux") and self.link_pages and self.config.render_workers != 1
        try:
            self.rules = rules = PrivacyRules.from_options(self.config.privacy, self.config.profile)
            if not rules.public:  # a warning, so that `mkdocs build --strict` (a publishing build) stops here
                log.warning(
                    "memwiki: the private profile built this site: nothing is redacted or withheld; do not publish it"
                )
            cache = Path(options["cache_dir"]) if self.config.page_cache else None
            source: MemorySource = PrivacyFilter(make_source(options, base_dir), rules, base_dir, load_key(), cache)
            if self.config.page_cache:
                source = CachedSource(source, Path(options["cache_dir"]) / LAYERS)
            options["use_directory_urls"] = config.use_directory_urls
            ctx = BuildContext(source, options)
            s = site(ctx)  # reads the layers: a store that cannot be read (a Chroma server down) is one line
        except MemwikiError as exc:
            raise PluginError(f"memwiki: {exc}") from None
        du = config.use_directory_urls

        def entity_url(entity_id: str) -> str:
            concept = s.index.for_entity(entity_id)
            return page_url(concept.src_uri, du) if concept else ""

        def memory_url(memory: Memory) -> str:
            page, anchor = s.memory_home.get(memory.id, ("", ""))
            return f"{page_url(page, du)}#{anchor}" if page else ""

        options["entity_url"] = entity_url
        options["entity_urls_version"] = key_of(names_version(ctx, s), du)  # what entity_url follows from
        options["memory_url"] = memory_url
        return ctx

    @event_priority(1000)  # before other plugins' pre_build, even "first" ones (they may write into site_dir)
    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        self.kept = None
        if self.config.page_cache and self.link_pages:  # a plain build: see memwiki.site.speed.kept_site
            kept = KeptSite(config.site_dir)
            if kept.set_aside():
                self.kept = kept

    @event_priority(1000)  # the first handler after MkDocs' clean
    def _put_back_site(self, files: Files, /, *, config: MkDocsConfig) -> Files:
        if self.kept is not None:
            self.kept.put_back()
        return files

    @event_priority(-50)  # after other plugins have added their files
    def _files(self, files: Files, /, *, config: MkDocsConfig) -> Files:
        self.times = {}
        self.cache = PageCache(self._cache_dir(config) / "pages", config) if self.config.page_cache else None
        ctx, pages, assets = self._build(config, reuse=True)
        nav_given = bool(config.nav)
        if not nav_given:
            config.nav = self._nav(pages, files)
        if self.cache is not None and not self.cache.settle_layout() and any(p.hollow for p in pages):
            # the navigation is not the last build's, so no cached page can be used: make them all
            log.info("memwiki: the navigation changed; every page is made again")
            del ctx, pages, assets
            self.ctx = None
            gc_policy.start()  # the first attempt is garbage now
            ctx, pages, assets = self._build(config, reuse=False)
            if not nav_given:
                config.nav = self._nav(pages, files)
            self.cache.settle_layout()
        self.hollow = [p.src_uri for p in pages if p.hollow]
        self.generated = {}
        self.blocks = {}
        self.fast, self.probes, self.shells = [], {}, {}
        # Material without toc.integrate (that feature moves the TOC into the navigation the shell leaves out)
        features = config.theme.get("features") or []
        fast = self.config.fast_pages and config.theme.name == "material" and "toc.integrate" not in features
        index = search_index(config)
        self.entries = None
        if index is not None and fast:  # with fast_pages off, MkDocs and the theme do all of it
            segments = Path(ctx.options["cache_dir"]) / SEGMENTS if self.config.page_cache else None
            # Material segments Chinese whenever jieba is installed, with the dictionaries it was given
            dictionaries = (index.config.get("jieba_dict"), index.config.get("jieba_dict_user"))
            self.entries = EntryMaker(True, segments, dictionaries)
        for name in ("memwiki.css", "memwiki.js"):
            files.append(File.generated(config, f"assets/memwiki/{name}", content=(ASSETS / name).read_bytes()))
        taken = {f.src_uri for f in files}  # (files.get_file_from_path per page was a tenth of a 10k rebuild)
        for asset in assets:
            if asset.dest_uri in taken:
                continue
            if self.cache is not None:
                self.cache.put_asset(asset)  # into the site with the reused pages
            else:
                files.append(File.generated(config, asset.dest_uri, content=asset.content))
        for page in pages:
            if page.src_uri in taken:
                log.info("memwiki: %s is hand-written in docs_dir; the generated page is skipped", page.src_uri)
                continue
            taken.add(page.src_uri)
            if self.cache is not None and not page.in_nav and self.cache.lookup(page):
                continue  # last build's HTML is put into the site in on_post_build
            if page.hollow:  # a builder's memo promised the cached HTML (memwiki.site.speed.memo)
                raise PluginError(
                    f"memwiki: {page.src_uri} came from a builder's memo but its cached HTML cannot be used; "
                    f"remove {self._cache_dir(config)} and build again"
                )
            if fast and not page.in_nav and fast_path_ok(page.src_uri):
                self.fast.append(page)
                self.probes.setdefault(posixpath.join(shell_folder(page.src_uri), f"{probe_name(self.nonce)}.md"), "")
                continue
            stub, self.blocks[page.src_uri] = split(page.markdown, self.nonce)  # see memwiki.site.speed.raw_blocks
            files.append(File.generated(config, page.src_uri, content=stub))
            self.generated[page.src_uri] = page
        for probe in self.probes:
            self.probes[probe] = posixpath.dirname(probe)
            files.append(File.generated(config, probe, content=probe_markdown(self.nonce)))
        if self.cache is not None:
            self.cache.begin_restore(Path(config.site_dir))  # while MkDocs renders the rest
            log.info(
                "memwiki: %d generated pages, %d reused from the cache (%d not made again)",
                len(pages),
                len(self.cache.hits),
                len(self.hollow),
            )
        self._report_audit(ctx)
        return files

    def _nav(self, pages: list[GeneratedPage], files: Files) -> list[Any]:
        """Only section index pages go into the navigation, in a fixed order; hand-written pages follow."""
        nav_pages = sorted((p for p in pages if p.in_nav), key=lambda p: (p.meta.get("order", 5), p.src_uri))
        nav: list[Any] = [{p.title: p.src_uri} for p in nav_pages]
        generated = {p.src_uri for p in pages}
        for f in files.documentation_pages():
            if f.src_uri not in generated and not f.generated_by:
                nav.append(f.src_uri)
        return nav

    def _report_audit(self, ctx: BuildContext) -> None:
        errors = set(self.config.audit_errors)
        counts: dict[str, int] = {}
        for f in findings(ctx):
            counts[f.kind] = counts.get(f.kind, 0) + 1
            if f.kind in errors:
                log.warning("memwiki audit (%s): %s", TITLES[f.kind], f.message)
        log.info("memwiki audit: %s", ", ".join(f"{k} {n}" for k, n in counts.items()) or "nothing found")

    def on_page_markdown(self, markdown: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        generated = self.generated.get(page.file.src_uri)
        if generated is not None and generated.meta.get("lexical") is False:
            page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}  # Material's search skips it
        return markdown

    def on_page_content(self, html: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        blocks = self.blocks.pop(page.file.src_uri, None)
        return join(html, self.nonce, blocks) if blocks else html

    @event_priority(100)  # before the search plugin adds this page's entries (MkDocs renders pages one by one here)
    def on_page_context(self, context: Any, /, *, page: Page, config: MkDocsConfig, nav: Any) -> Any:  # noqa: ANN401
        generated = self.generated.get(page.file.src_uri)
        if generated is None:
            return context
        if self.cache is not None:
            self.cache.begin(page)
        index = search_index(config)
        if self.entries is not None and index is not None:  # the entries Material's search plugin would make
            if generated.meta.get("lexical") is not False:
                made = self.entries.entries(page.content, page.toc, page.url, page.title, page.meta, remember=True)
                index.entries.extend(made)
            page.content = strip_search_attrs(page.content)
            page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}  # so it does not again
        return context

    def on_post_template(self, output_content: str, /, *, template_name: str, config: MkDocsConfig) -> str:
        """sitemap.xml lists what MkDocs rendered: drop the probes, add the pages it never saw."""
        if template_name != "sitemap.xml" or not config.site_url:
            return output_content
        probe = probe_name(self.nonce)
        kept = re.sub(r"\s*<url>(?:(?!</url>).)*?" + re.escape(probe) + r".*?</url>", "", output_content, flags=re.S)
        du = config.use_directory_urls
        unseen = [p.src_uri for p in self.fast] + (list(self.cache.hits) if self.cache is not None else [])
        rows = "".join(
            f"\n    <url>\n         <loc>{esc(urljoin(config.site_url, quote(page_url(u, du))))}</loc>\n    </url>"
            for u in unseen
        )
        return kept.replace("</urlset>", rows + "\n</urlset>") if rows else kept

    def on_post_page(self, output: str, /, *, page: Page, config: MkDocsConfig) -> str:
        folder = self.probes.get(page.file.src_uri)
        if folder is not None:
            try:
                self.shells[folder] = PageShell.parse(output, self.nonce)
            except MemwikiError as exc:
                raise PluginError(f"memwiki: {exc}") from None
            return output
        generated = self.generated.get(page.file.src_uri)
        if generated is not None and self.cache is not None and not generated.in_nav:
            self.cache.store(generated, page, output)
        return output

    @event_priority(-100)  # MkDocs writes files right after this event
    def on_env(self, env: Environment, /, *, config: MkDocsConfig, files: Files) -> Environment:
        """Keep the theme's compiled templates across builds (compiling them was a tenth of a 10k rebuild).
        Jinja keys each one by its name and the checksum of its source, so an edited template is compiled anew."""
        if self.config.page_cache and env.bytecode_cache is None:
            folder = self._cache_dir(config) / JINJA
            folder.mkdir(parents=True, exist_ok=True)
            env.bytecode_cache = FileSystemBytecodeCache(str(folder))
        return env

    def on_serve(self, server: Any, /, *, config: MkDocsConfig, builder: Any) -> Any:  # noqa: ANN401
        """`mkdocs serve` rebuilds when the memory it publishes changes: an agent writing while the site is served
        shows in it after the next build (the store, hermes home or palace folder is watched)."""
        base_dir = self._base_dir(config)
        env = {"hermes_home": "HERMES_HOME", "palace": "MEMPALACE_PALACE_PATH"}
        for key in ("store", "hermes_home", "palace"):
            value = _option_path(self.config.get(key), base_dir)
            value = os.environ.get(env.get(key, ""), "") if value == "auto" else value
            if value and Path(value).exists():
                server.watch(value, recursive=True)
        return server

    def on_startup(self, *, command: str, dirty: bool) -> None:
        self.link_pages = command == "build" and not dirty  # see PageCache.restore

    def on_shutdown(self) -> None:
        gc_policy.thaw()

    def on_build_error(self, *, error: Exception) -> None:
        if self.cache is not None:
            with contextlib.suppress(Exception):  # MkDocs reports `error`; only stop writing into the site
                self.cache.drain()
        if self.kept is not None:
            with contextlib.suppress(Exception):
                self.kept.restore_on_error()
            self.kept = None

    def _forget_last_build(self) -> None:
        """Let go of what the last build in this process held (mkdocs serve), before the collector runs."""
        self.ctx, self.cache, self.entries = None, None, None
        self.generated, self.blocks, self.fast, self.probes, self.shells = {}, {}, [], {}, {}

    @event_priority(50)  # before the search plugin writes its index
    def _post_build_pages(self, *, config: MkDocsConfig) -> None:
        t0 = time.perf_counter()
        self._write_fast_pages(config)
        if self.entries is not None:
            self.entries.save()
        t1 = time.perf_counter()
        if self.cache is not None:
            self.cache.restore(Path(config.site_dir))
            self.cache.finish()
        self.times[f"{len(self.fast)} pages written"] = t1 - t0
        self.times["cache"] = time.perf_counter() - t1
        log.info("memwiki: seconds spent: %s", ", ".join(f"{k} {v:.1f}" for k, v in self.times.items()))

    @event_priority(-100)  # after the search plugin has written its index
    def _post_build_search(self, *, config: MkDocsConfig) -> None:
        if self.cache is not None:
            self.cache.complete_search_index(Path(config.site_dir))
        if self.kept is not None and self.cache is not None:
            t0 = time.perf_counter()
            removed = self.kept.sweep(self.cache.placed)
            if removed >= 0:  # (-1: not swept, and said why)
                seconds = time.perf_counter() - t0
                log.info("memwiki: kept the last site; %d stale files removed in %.2f s", removed, seconds)
        self.kept = None

    @event_priority(-200)  # last: every plugin has written into the site
    def _post_build_scan(self, *, config: MkDocsConfig) -> None:
        """A public build's last check: the gate's own rules over every file in the site (see memwiki.site.site_scan)."""
        if not self.rules.public:
            return
        exports = (
            self._cache_dir(config) / "use"
        )  # the browser model, one folder per export (memwiki.site.builders.search)
        static = [Path(d) for d in config.theme.dirs] + [ASSETS, PYVIS_VIS, *exports.glob("*/")]
        cache = self._cache_dir(config) / SITESCAN if self.config.page_cache else None
        detectors = Detectors(contact=self.rules.contact, extra=self.rules.redact, library=False)
        SiteScan(detectors, static, cache).check(Path(config.site_dir))

    on_post_build = CombinedEvent(_post_build_pages, _post_build_search, _post_build_scan)
    on_files = CombinedEvent(_put_back_site, _files)

    def _write_fast_pages(self, config: MkDocsConfig) -> None:
        """Write the pages left to on_post_build (see memwiki.site.speed.theme_frame, memwiki.site.speed.parallel_pages), drop the probes."""
        site_dir = Path(config.site_dir)
        du = config.use_directory_urls
        index = search_index(config)
        job = WriteJob(
            pages=self.fast,
            shells=self.shells,
            nonce=self.nonce,
            markdown_extensions=config.markdown_extensions,
            mdx_configs=config.mdx_configs,
            site_dir=str(site_dir),
            directory_urls=du,
            entries=self.entries if index is not None else None,
            cache_path=self.cache.html_path if self.cache is not None else None,
        )
        missing = sorted({shell_folder(p.src_uri) for p in self.fast} - self.shells.keys())
        if missing:
            raise PluginError(
                f"memwiki: the probe page of {missing[0]}/ was not rendered (excluded by exclude_docs or "
                "draft_docs?); set `fast_pages: false` or let it through"
            )
        if self.cache is not None:
            self.cache.drain()  # no writer thread running while workers fork
        workers = self.config.render_workers if self.link_pages else 1  # no forking under `mkdocs serve`
        for page, entries in zip(self.fast, write_pages(job, workers), strict=True):
            if index is not None:
                index.entries.extend(entries)
            if self.cache is not None:
                self.cache.record(page, entries)
        for probe in self.probes:
            (site_dir / output_path(probe, du)).unlink(missing_ok=True)
            if du:
                with contextlib.suppress(OSError):  # its own folder, empty now
                    (site_dir / output_path(probe, du)).parent.rmdir()
