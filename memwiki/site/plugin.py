"""The MkDocs plugin `memwiki`: its options, and thin hooks over two objects.

- `SiteBuild` (memwiki.site.pipeline): one build's content. The memory source opened through the privacy
  gate, every page builder run, the navigation, the audit's warnings (`audit_errors`: `mkdocs build --strict`
  fails on them), and a public build's final scan of the whole site.
- `PageStore` (memwiki.site.speed.page_store): how those pages get into the site fast. Reused from the last
  build, filled into a frame of the theme's HTML, or rendered by MkDocs.

MkDocs' own `search` plugin has the same shape over its `SearchIndex`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment
from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import BasePlugin, CombinedEvent, event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from memwiki.site.builders import site as site_records
from memwiki.site.builders.audit import KINDS
from memwiki.site.gate.filter import PROFILES
from memwiki.site.gate.offline import keep_offline
from memwiki.site.model.generated import GeneratedPage
from memwiki.site.pipeline import ASSETS, Built, Outputs, SiteBuild
from memwiki.site.speed import gc_policy
from memwiki.site.speed.layer_cache import CachedSource
from memwiki.site.speed.page_store import PageStore

log = logging.getLogger("mkdocs.plugins.memwiki")
CSS = "assets/memwiki/memwiki.css"
JS = "assets/memwiki/memwiki.js"
SEARCH_THEME = ASSETS / "search" / "theme"  # the header's search box: memwiki's (every layer, by meaning)


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
    page_cache = c.Type(bool, default=True)  # off: nothing derived from the memory is kept across builds
    # Material only: pages outside the nav filled into a frame of the theme's HTML (speed.theme_frame); off: MkDocs
    # and the theme render every page
    fast_pages = c.Type(bool, default=True)
    render_workers = c.Type(int, default=0)  # processes writing those pages: 0 = one per CPU on large sites
    graph_max_nodes = c.Type(int, default=300)


LET_GO_PAGES = 2000  # pages made in a build past which its records are let go before the forks (not in a rebuild:
# freeing a 100k store's records one by one took longer than the few pages it writes)


class MemwikiPlugin(BasePlugin[MemwikiConfig]):
    """Publishes a memory store (or a hermes home and / or a MemPalace palace) as a wiki."""

    def __init__(self) -> None:
        self.keep_site = False  # a build that cleans its site first (build or serve, not --dirty): the last site stays
        self.may_fork = False  # a plain `mkdocs build`: workers may fork (not beside `mkdocs serve`'s server threads)
        self.site: SiteBuild | None = None
        self.pages: PageStore | None = None
        self.built: Built | None = None  # what the builders made (let go before a large build's forks)
        self.outputs: Outputs | None = None  # what the scan needs of the build
        self.record: BuildRecord | None = None  # what the build did, for tests and benchmarks
        self._marked: Page | None = None  # the section's navigation page marked active for the page being rendered

    def on_startup(self, *, command: str, dirty: bool) -> None:
        self.keep_site = command in ("build", "serve") and not dirty
        self.may_fork = command == "build" and not dirty

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        self.site, self.pages, self.built = None, None, None  # let go of the last build (mkdocs serve)
        self.outputs, self.record = None, None
        gc_policy.start()  # see speed.gc_policy
        _configure(config)
        _quiet_jieba()
        if self.config.profile == "public":
            for change in keep_offline(config):
                log.info("memwiki: a public site loads nothing from outside itself: %s", change)
        base_dir = Path(config.config_file_path).resolve().parent if config.config_file_path else Path.cwd()
        self.site = SiteBuild(dict(self.config), base_dir, config.use_directory_urls, self.may_fork)
        return config

    @event_priority(1000)  # before other plugins' pre_build, even "first" ones (they may write into site_dir)
    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        assert self.site is not None
        cache_dir = self.site.cache_dir if self.site.page_cache else None
        self.pages = PageStore(
            cache_dir, self.config.fast_pages, self.config.render_workers, self.keep_site, self.may_fork
        )
        self.pages.set_aside_site(config.site_dir)

    @event_priority(1000)  # the first handler after MkDocs' clean
    def _put_back_site(self, files: Files, /, *, config: MkDocsConfig) -> Files:
        self._pages.put_back_site()
        return files

    @event_priority(-50)  # after other plugins have added their files
    def _files(self, files: Files, /, *, config: MkDocsConfig) -> Files:
        self.built = self._build(files, config)
        for name in ("memwiki.css", "memwiki.js"):
            files.append(File.generated(config, f"assets/memwiki/{name}", content=(ASSETS / name).read_bytes()))
        files = self._pages.add(files, self.built.pages, self.built.assets, config)
        self._site.report_audit(self.built.ctx)
        return files

    on_files = CombinedEvent(_put_back_site, _files)

    def on_page_markdown(self, markdown: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        self._pages.page_markdown(page)
        return markdown

    def on_page_content(self, html: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        return self._pages.page_content(html, page)

    @event_priority(100)  # before other plugins read the navigation (MkDocs renders pages one by one here)
    def on_page_context(self, context: Any, /, *, page: Page, config: MkDocsConfig, nav: Any) -> Any:  # noqa: ANN401
        self._marked = section_page(page, nav)
        if self._marked is not None:
            self._marked.active = True  # (and its parents: MkDocs marks the section the reader is in)
        return context

    def on_post_page(self, output: str, /, *, page: Page, config: MkDocsConfig) -> str:
        if self._marked is not None:
            self._marked.active = False  # the navigation is shared by every page
            self._marked = None
        self._pages.page_done(page, output)
        return output

    def on_template_context(self, context: Any, /, *, template_name: str, config: MkDocsConfig) -> Any:  # noqa: ANN401
        return self._pages.sitemap(context, config) if template_name == "sitemap.xml" else context

    @event_priority(-100)  # MkDocs writes files right after this event
    def on_env(self, env: Environment, /, *, config: MkDocsConfig, files: Files) -> Environment:
        return self._pages.environment(env)

    @event_priority(50)  # before other plugins read the site
    def _write_rest(self, *, config: MkDocsConfig) -> None:
        if self.built is not None:
            self.record = BuildRecord.of(self.built, self._pages)
            self.outputs = self.built.outputs() if self._site.rules.public else None  # (a private build: no scan)
            if len(self.built.pages) - len(self.built.kept) >= LET_GO_PAGES:
                # what the builders read and made is let go before the page writers and the scan fork
                self.built.let_go()
                self.built = None
                self._site.let_go()
                gc_policy.release()
        self._pages.write_rest(config)
        log.info("memwiki: seconds spent: %s", ", ".join(f"{k} {v:.1f}" for k, v in self._times().items()))

    @event_priority(-100)  # after other plugins have written into the site
    def _complete(self, *, config: MkDocsConfig) -> None:
        self._pages.complete()

    @event_priority(-200)  # last: every plugin has written into the site
    def _scan(self, *, config: MkDocsConfig) -> None:
        self._site.scan(Path(config.site_dir), list(config.theme.dirs), self.outputs)

    on_post_build = CombinedEvent(_write_rest, _complete, _scan)

    def on_serve(self, server: Any, /, *, config: MkDocsConfig, builder: Any) -> Any:  # noqa: ANN401
        """`mkdocs serve` rebuilds when the memory it publishes changes (an agent writing while it is served)."""
        for folder in self._site.watched():
            server.watch(folder, recursive=True)
        return server

    def on_build_error(self, *, error: Exception) -> None:
        if self.pages is not None:
            self.pages.abandon()

    def on_shutdown(self) -> None:
        gc_policy.thaw()

    # ── what the hooks share ──

    @property
    def _site(self) -> SiteBuild:
        assert self.site is not None, "on_config runs first"
        return self.site

    @property
    def _pages(self) -> PageStore:
        assert self.pages is not None, "on_pre_build runs first"
        return self.pages

    def _build(self, files: Files, config: MkDocsConfig) -> Built:
        """Run the builders, letting them give back pages whose HTML is cached; when the navigation made from the
        pages is not the one those pages were cached with, run them again without."""
        self._pages.open_cache(config)
        built = self._site.run(self._pages.reusable, self._pages.holds_asset)
        nav_given = bool(config.nav)
        if not nav_given:
            config.nav = nav(built.pages, files)
        if not self._pages.layout_holds() and built.kept:
            log.info("memwiki: the navigation changed; every page is made again")
            del built
            gc_policy.start()  # the first attempt is garbage now
            built = self._site.run(None)
            if not nav_given:
                config.nav = nav(built.pages, files)
            self._pages.layout_holds()
        return built

    def _times(self) -> dict[str, float]:
        return {**self._site.times, **self._pages.times}

    # read by tests and benchmarks
    @property
    def kept(self) -> list[str]:
        """Pages the builders did not make again in this build (speed.memo)."""
        if self.built is not None:
            return self.built.kept
        return self.record.kept if self.record is not None else []


@dataclass(frozen=True)
class BuildRecord:
    """What one build did, kept on the plugin when its records are let go (tests and benchmarks read it)."""

    kept: list[str]  # pages the builders did not make again (speed.memo)
    reads: list[str] = field(default_factory=list)  # layers read from the source (the others: the layer cache)
    text_misses: int = 0  # memory texts parsed or rendered again
    generated: dict[str, GeneratedPage] = field(default_factory=dict)  # src_uri -> generated pages MkDocs rendered
    framed: list[str] = field(default_factory=list)  # pages filled into their folder's frame of the theme's HTML
    hits: list[str] = field(default_factory=list)  # pages whose cached HTML was reused

    @classmethod
    def of(cls, built: Built, pages: PageStore) -> BuildRecord:
        source = built.ctx.source
        return cls(
            kept=built.kept,
            reads=list(source.reads) if isinstance(source, CachedSource) else [],
            text_misses=site_records(built.ctx).index.texts.misses,
            generated=dict(pages.rendered_pages),
            framed=[p.src_uri for p in pages.framed],
            hits=list(pages.cache.hits) if pages.cache is not None else [],
        )


def section_page(page: Page, nav: Any) -> Page | None:  # noqa: ANN401 - MkDocs's Navigation
    """The navigation's page for the section of a page that is not in the navigation itself (a concept, a
    session, a category page): `sessions/s-1.md` -> `sessions/index.md`. None for a page the navigation holds."""
    if nav is None or page in nav.pages or "/" not in page.file.src_uri:
        return None
    folder = page.file.src_uri.split("/", 1)[0]
    wanted = (f"{folder}/index.md", f"{folder}.md")
    return next((p for p in nav.pages if p.file.src_uri in wanted), None)


def nav(pages: list[GeneratedPage], files: Files) -> list[Any]:
    """Only section index pages go into the navigation, in a fixed order; hand-written pages follow."""
    nav_pages = sorted((p for p in pages if p.in_nav), key=lambda p: (p.meta.get("order", 5), p.src_uri))
    out: list[Any] = [{p.title: p.src_uri} for p in nav_pages]
    generated = {p.src_uri for p in pages}
    out += [f.src_uri for f in files.documentation_pages() if f.src_uri not in generated and not f.generated_by]
    return out


def _quiet_jieba() -> None:
    """jieba (Material's search and ours segment Chinese with it) logs its dictionary loading at each build."""
    try:
        import jieba
    except ImportError:
        return
    jieba.setLogLevel(logging.WARNING)


def _configure(config: MkDocsConfig) -> None:
    """The plugin's CSS and JS; with Material, memwiki's search box in the header (the theme's partial without
    its lunr search, in front of the theme's own files, after a site's own custom_dir); with other themes, their
    box runs memwiki's search (memwiki.js)."""
    # generated pages are left out of the navigation on purpose: do not list each one at INFO level
    if config.validation.nav.omitted_files == logging.INFO:
        config.validation.nav.omitted_files = logging.DEBUG
    for name, where in ((CSS, config.extra_css), (JS, config.extra_javascript)):
        if name not in [str(x) for x in where]:
            where.append(name)
    dirs = config.theme.dirs
    if config.theme.name == "material" and not any(Path(d).resolve() == SEARCH_THEME for d in dirs):
        dirs.insert(1 if config.theme.custom_dir else 0, str(SEARCH_THEME))
    elif config.theme.name != "material":  # their box runs memwiki's search (memwiki.js): not their lunr script too
        config.extra_javascript[:] = [x for x in config.extra_javascript if str(x) != "search/main.js"]
