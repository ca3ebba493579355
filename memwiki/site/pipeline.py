"""One build of the wiki, from the plugin's options to pages: the memory source opened through the privacy gate,
every builder run, the navigation, the audit's build warnings, the final scan of the site. Nothing here is about
speed (see memwiki.site.speed.page_store) or MkDocs' events (see memwiki.site.plugin)."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

from memwiki.common.workers import cores
from memwiki.errors import MemwikiError
from memwiki.readers.locate import hermes_home_path, palace_path
from memwiki.site.browser.pyvis_html import PYVIS_VIS
from memwiki.site.builders import (
    BuildResult,
    audit,
    concepts,
    graph,
    home,
    persona,
    privacy_report,
    search,
    semantic,
    sessions,
    site,
)
from memwiki.site.gate.detect import Detectors, providers
from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules, load_key
from memwiki.site.gate.scan import Apart, SiteScan
from memwiki.site.model.build_context import BuildContext, BuildSettings
from memwiki.site.model.generated import GeneratedAsset, GeneratedPage
from memwiki.site.speed import forked, gc_policy
from memwiki.site.speed.builder_speed import EXPORTS, BuildSpeed
from memwiki.site.speed.layer_cache import CachedSource
from memwiki.site.speed.memo import Reusable, key_of
from memwiki.source import MemorySource

log = logging.getLogger("mkdocs.plugins.memwiki")
ASSETS = Path(__file__).resolve().parent / "assets"
LAYERS = "layers"  # in cache_dir: each layer's records (speed.layer_cache)
SITESCAN = "sitescan.marshal"  # in cache_dir: files the last build's scan found clean (gate.scan)
WATCHED = {"store": None, "hermes_home": hermes_home_path, "palace": palace_path}  # option -> where "auto" is


def option_path(value: str | None, base_dir: Path) -> str | None:
    """A path option relative to mkdocs.yml's folder ("auto" and empty as they are)."""
    if not value or value == "auto":
        return value or None
    return str((base_dir / Path(value).expanduser()).resolve())


def make_source(options: dict[str, Any], base_dir: Path, cache_dir: Path) -> MemorySource:
    """The one place where the plugin's options become a MemorySource (store, hermes home, palace)."""
    from memwiki.store.open_sources import open_sources

    def path(value: str | None) -> str | None:
        return option_path(value, base_dir)

    store = path(options.get("store"))
    if options.get("demo_src"):
        from memwiki.store.demo import build_demo_store

        if store is None:
            raise MemwikiError("memwiki: `demo_src` needs `store` (where to build the demo store)")
        build_demo_store(Path(path(options["demo_src"]) or ""), Path(store))
    return open_sources(store, path(options.get("hermes_home")), path(options.get("palace")), cache_dir, partial=True)


def build_all(ctx: BuildContext) -> BuildResult:
    """Run every builder; the concept builder goes after the others so it sees every backlink."""
    s = site(ctx)
    ctx.speed.shared = key_of(s.names_version, ctx.settings.memo_key())  # in every memo key
    graph.prepare(ctx)  # the graph files may be drawn in a forked process meanwhile
    search.prepare(ctx)  # and the browser's model exported in another
    audit.start(ctx)  # in a rebuild, the near-duplicates found in another
    search.start(ctx)  # and the search made in another
    sessions.prepare(ctx)  # then (no thread may run while the build forks) session digests embed in a thread
    builders = [
        home.build,
        persona.build,
        semantic.build,
        sessions.build,
        graph.build,
        search.build,
        concepts.build,
        audit.build,
        privacy_report.build,
    ]
    # in a rebuild the concept pages are made in a forked process once the mentions are found, while the other
    # pages are made here: sessions first (the near-duplicates, which the memories' cards show, may be found
    # meanwhile); then the search (it may be made meanwhile); the audit's pages last, as they list every
    # builder's notes; the pages and files in the order above
    if ctx.speed.memo_kept("concepts"):  # (a first build makes every page: too many to send back)
        s.mentions(), audit.entity_flags(ctx)  # (what the concept pages list and flag: found here, once)
        forked.start(ctx, "concepts", concepts.build, save=lambda: s.index.texts.save(prune=False))
    made = {build: _run(ctx, build) for build in (home.build, persona.build, sessions.build, graph.build)}
    audit.flags(ctx)  # (the cards show them)
    made[semantic.build] = _run(ctx, semantic.build)
    made[concepts.build] = _run(ctx, lambda ctx: forked.result(ctx, "concepts", concepts.build), "concepts")
    made[search.build] = _run(ctx, search.build)
    made |= {build: _run(ctx, build) for build in (audit.build, privacy_report.build)}  # (they list every note)
    pages = [page for build in builders for page in made[build][0]]
    assets = [asset for build in builders for asset in made[build][1]]
    ctx.speed.save_memos()
    ctx.speed.settle()
    # a build that kept pages without making them did not see every text: it must not drop the unseen ones
    s.index.texts.save(prune=not any(p.kept for p in pages))
    s.scans.save()
    return pages, assets


def _run(ctx: BuildContext, build: Callable[[BuildContext], BuildResult], name: str = "") -> BuildResult:
    """One builder's pages and files (and a line in the log: a large build shows where it is)."""
    t0 = time.perf_counter()
    p, a = build(ctx)
    made = f"{len(p):,} page{'s' * (len(p) != 1)}" + (f", {len(a):,} file{'s' * (len(a) != 1)}" if a else "")
    name = name or build.__module__.rsplit(".", 1)[-1]
    log.info("memwiki: %s: %s in %.1f s", name, made, time.perf_counter() - t0)
    return p, a


@dataclass(frozen=True)
class Outputs:
    """What the final scan needs of a build: where its generated pages and files are in the site, those that hold
    only numbers, and how to hand work to a forked process."""

    generated: frozenset[str] = frozenset()
    numbers: frozenset[str] = frozenset()
    apart: Apart | None = None


@dataclass
class Built:
    """What the builders made in one build."""

    ctx: BuildContext
    pages: list[GeneratedPage]
    assets: list[GeneratedAsset]

    @property
    def kept(self) -> list[str]:
        """Pages that came back from the builders' memos without being made (speed.memo)."""
        return [p.src_uri for p in self.pages if p.kept]

    def outputs(self) -> Outputs:
        numbers = frozenset(a.dest_uri for a in self.assets if a.numbers)
        return Outputs(frozenset(generated_outputs(self)), numbers, self.ctx.speed.apart)

    def let_go(self) -> None:
        """Forget what the build read and made: the layers (the source asked to close what it opened), the parts
        shared by the builders, the pages' Markdown and the files' bytes. The page store has what it writes; the
        scan reads the site. (At 100k memories, about a gigabyte that the page writers and the scan, forked, would
        hold too.)"""
        self.ctx.let_go()
        self.pages, self.assets = [], []


class SiteBuild:
    """The wiki of one memory source, built with the plugin's options (`options`: its config as a dict)."""

    def __init__(self, options: dict[str, Any], base_dir: Path, directory_urls: bool, may_fork: bool) -> None:
        self.options = options
        self.base_dir = base_dir
        self.cache_dir = base_dir / options["cache_dir"]
        self.page_cache = bool(options["page_cache"])
        self.settings = BuildSettings(
            directory_urls=directory_urls,
            today=options.get("today") or "",
            graph_max_nodes=int(options["graph_max_nodes"]),
            audit_errors=tuple(options["audit_errors"]),
        )
        # builders may hand work to a forked process: on Linux, in a plain `mkdocs build`, unless told not to
        self.may_fork = sys.platform.startswith("linux") and may_fork and options["render_workers"] != 1
        self.rules = PrivacyRules()
        self.gate: PrivacyFilter | None = None  # this build's gate: the scan looks for copies of what it redacted
        self.redacted: set[str] = set()  # (what it redacted, once the gate is let go)
        self.times: dict[str, float] = {}

    def run(self, reusable: Reusable | None, holds_asset: Callable[[str], bool] | None = None) -> Built:
        """Read the source through the gate and run every builder; `reusable`, `holds_asset`: the page cache's word
        on which pages' final HTML, and which assets, are at hand (builders may then give those back without
        making them)."""
        t0 = time.perf_counter()
        with gc_policy.paused():  # the source's records, caches and pages stay to the end (see speed.gc_policy)
            ctx = self._context(reusable)
            ctx.speed.holds_asset = holds_asset
            t1 = time.perf_counter()
            gated = "memwiki: memory read through the privacy gate (%s profile) in %.1f s"
            log.info(gated, self.rules.profile, t1 - t0)
            try:
                pages, assets = build_all(ctx)
            except MemwikiError as exc:
                raise PluginError(f"memwiki: {exc}") from None
        self.times["read"], self.times["builders"] = t1 - t0, time.perf_counter() - t1
        if self.gate is not None:
            self.gate.save()
        if isinstance(ctx.source, CachedSource):
            ctx.source.save()
            log.info("memwiki: layers read from the source: %s", ", ".join(ctx.source.reads) or "none")
        return Built(ctx, pages, assets)

    def _context(self, reusable: Reusable | None) -> BuildContext:
        try:
            self.rules = rules = PrivacyRules.from_options(self.options["privacy"], self.options["profile"])
            warming = providers.warm_up() if rules.public else None
            if not rules.public:  # a warning, so that `mkdocs build --strict` (a publishing build) stops here
                log.warning(
                    "memwiki: the private profile built this site: nothing is redacted or withheld; do not publish it"
                )
            kept = self.cache_dir if self.page_cache else None
            opened = make_source(self.options, self.base_dir, self.cache_dir)
            workers = cores() - 1 if self.may_fork else 0  # (this process judges too)
            source = self.gate = PrivacyFilter(opened, rules, self.base_dir, load_key(), kept, workers)
            if kept is not None:
                source = CachedSource(source, kept / LAYERS)
            speed = BuildSpeed(cache_dir=kept, exports=self.cache_dir / EXPORTS, may_fork=self.may_fork)
            speed.reusable = reusable
            ctx = BuildContext(source, self.settings, speed)
            site(ctx)  # reads the layers: a store that cannot be read (a Chroma server down) is one line
            if warming is not None:
                warming.join()  # (before the builders fork)
        except MemwikiError as exc:
            raise PluginError(f"memwiki: {exc}") from None
        finally:
            if self.gate is not None:
                self.gate.stop_workers()  # (the layers are read)
        return ctx

    def report_audit(self, ctx: BuildContext) -> None:
        """The audit's counts in the log; the kinds listed in `audit_errors` as warnings (`--strict` fails)."""
        errors = set(self.settings.audit_errors)
        counts: dict[str, int] = {}
        for f in audit.findings(ctx):
            counts[f.kind] = counts.get(f.kind, 0) + 1
            if f.kind in errors:
                log.warning("memwiki audit (%s): %s", audit.TITLES[f.kind], f.message)
        log.info("memwiki audit: %s", ", ".join(f"{k} {n}" for k, n in counts.items()) or "nothing found")

    def let_go(self) -> None:
        """Forget the gate but what it redacted (the scan looks for copies of it)."""
        if self.gate is not None:
            self.redacted = self.gate.redacted
            self.gate = None

    def scan(self, site_dir: Path, theme_dirs: list[str], outputs: Outputs | None = None) -> None:
        """A public build's last check: the gate's own rules over every file in the site (see gate.scan)."""
        if not self.rules.public:
            return
        outputs = outputs or Outputs()
        exports = self.cache_dir / EXPORTS
        static = [Path(d) for d in theme_dirs] + [ASSETS, PYVIS_VIS, *exports.glob("*/")]
        cache = self.cache_dir / SITESCAN if self.page_cache else None
        detectors = Detectors(contact=self.rules.contact, extra=self.rules.redact, library=False)
        net = Detectors(extra=self.rules.redact, library=False, net=True)
        known = self.gate.redacted if self.gate is not None else self.redacted
        scan = SiteScan(detectors, static, cache, known, outputs.generated, net, outputs.numbers)
        scan.check(site_dir, outputs.apart)

    def watched(self) -> list[str]:
        """The folders `mkdocs serve` watches: the store, hermes home or palace this site publishes."""
        out = []
        for key, locate in WATCHED.items():
            value = option_path(self.options.get(key), self.base_dir)
            if value == "auto":
                value = str(locate()) if locate is not None else None
            if value and Path(value).exists():
                out.append(value)
        return out


def generated_outputs(built: Built) -> set[str]:
    """Where in the site the pages and assets memwiki generated (from gated records) are written."""
    out = {a.dest_uri for a in built.assets}
    for page in built.pages:
        stem = page.src_uri.removesuffix(".md")
        out |= {f"{stem}.html", f"{stem}/index.html"}
    return out
