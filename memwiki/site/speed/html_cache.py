"""Reuse the final HTML of generated pages that did not change since the last build.

Rendering Markdown and the theme template is the costliest step of a page. A generated page outside the
navigation depends only on its own Markdown and on the site's layout (mkdocs.yml, the navigation, the
plugin's code, the MkDocs / Material versions); when both fingerprints match the last build, the page is
not given to MkDocs at all: after the build its cached HTML is copied into site_dir (unless last build's copy
is still there, see `_place`). Every file in site_dir is a file of its own: a deploy step may edit one in
place, and the next build puts the cached page back.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig

from memwiki.site.model.generated import GeneratedAsset, GeneratedPage
from memwiki.site.model.render import page_url
from memwiki.site.speed import cache_file
from memwiki.site.speed.kept_site import ctime_mark

MANIFEST = "manifest.marshal"  # marshal (memwiki.site.speed.cache_file): ~5x faster than JSON for this big dict
NAV = "nav.marshal"  # the navigation of the last build (as JSON text)
PLACED = "placed.marshal"  # the files the cache put into the site in the last build (see `_place`)
ASSETS = "assets"  # builders' asset files, named by their content (GeneratedAsset.digest)
_CODE = Path(__file__).resolve().parents[1]  # memwiki/site: the plugin's code, CSS, JS and templates


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def _nav_json(nav: Any) -> str:  # noqa: ANN401 - MkDocs' nav setting
    return json.dumps(nav, sort_keys=True, default=str, ensure_ascii=False)


def _with_nav(base: str, nav: Any) -> str:  # noqa: ANN401 - MkDocs' nav setting
    """The layout's fingerprint: changes whenever something other than a page's own Markdown could change its
    HTML (`base`: see `_layout_base`)."""
    return hashlib.sha1(f"{base}\0{_nav_json(nav)}".encode()).hexdigest()


def _layout_base(config: MkDocsConfig) -> str:
    """Everything of the layout but the navigation: mkdocs.yml, URL style, versions, this code, theme overrides."""
    digest = hashlib.sha1()
    if config.config_file_path and Path(config.config_file_path).is_file():
        digest.update(Path(config.config_file_path).read_bytes())
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


def output_path(src_uri: str, directory_urls: bool) -> str:
    """The page's HTML file, relative to site_dir."""
    url = page_url(src_uri, directory_urls)
    return url + "index.html" if url.endswith("/") or not url else url


def _write(path: Path | str, data: str | bytes) -> None:
    cache_file.replace_file(path, data.encode("utf-8") if isinstance(data, str) else data)


def _write_asset(path: str, asset: GeneratedAsset) -> None:
    """An asset's bytes, made here when made on demand (a first 100k build's vector scripts, 100 MB, all made
    before the writer wrote any were held at the build's high-water mark)."""
    _write(path, asset.content)


@lru_cache(maxsize=1 << 16)  # asked twice per page (the builders' memos, then lookup)
def _html_name(src_uri: str) -> str:
    return hashlib.sha1(src_uri.encode()).hexdigest() + ".html"


def _listing(folder: Path) -> dict[str, int]:
    """The names in a folder with their inode numbers (none when it is missing)."""
    try:
        with os.scandir(folder) as entries:
            return {e.name: e.inode() for e in entries}
    except OSError:
        return {}


def _load_nav(path: Path) -> Any:  # noqa: ANN401 - MkDocs' nav setting
    text = cache_file.load(path, cache_file.version(NAV))
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


Record = tuple[int, int, int, int, int]  # a site file as the cache left it: see `_record`


def _record(dest: os.stat_result, source_inode: int) -> Record:
    """What says a site file still holds what the cache put there: its inode, size, mtime and ctime (no
    program can set a ctime back; any write or rename sets it) and the inode of the cache file it is a
    copy of (a cache file is never written in place: see `_write`)."""
    return (dest.st_ino, dest.st_size, dest.st_mtime_ns, dest.st_ctime_ns, source_inode)


def _copy(source: str, dest: str) -> Record:
    """Copy `source` into a new file at `dest` (a file there is unlinked first, never written through); folders
    are made where missing."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(dest)
    try:
        shutil.copyfile(source, dest)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(source, dest)
    return _record(os.lstat(dest), os.lstat(source).st_ino)


def _place(site: str, files: list[tuple[str, str, int]], before: dict[str, Record]) -> dict[str, Record]:
    """Put each (rel, source, inode of source) file into the site, unless it is in place already: its record
    from the last build (`before`, see `PageCache._save_records`) is what it is now (a kept site, see
    memwiki.site.speed.kept_site). Anything else (missing, edited in place, replaced) is copied from the cache
    again. Returns the record of each file."""
    after: dict[str, Record] = {}
    for rel, source, inode in files:
        dest = f"{site}/{rel}"
        try:
            kept = _record(os.lstat(dest), inode) == before.get(rel)
        except FileNotFoundError:
            kept = False
        after[rel] = before[rel] if kept else _copy(source, dest)
    return after


def _manifest_file(folder: Path) -> cache_file.JournaledDict:
    return cache_file.JournaledDict(folder / MANIFEST, cache_file.version("pages"))


class PageCache:
    """The cache folder of one site: the manifest (what each page was made from), one HTML file per cached
    page, and the records of the files the last build put into the site (`PLACED`)."""

    def __init__(self, folder: Path, config: MkDocsConfig) -> None:
        self.folder = folder
        self.config = config
        # Pages are looked up before the plugin has made the navigation from them (see memwiki.site.speed.memo): until
        # `settle_layout`, the layout is the one with the last build's navigation, or with the configured one.
        self._nav = config.nav if config.nav else _load_nav(folder / NAV)
        self._layout_base = _layout_base(config)
        self.layout = _with_nav(self._layout_base, self._nav)
        self._manifest = _manifest_file(folder)  # a few pages change per rebuild: a journal of them is saved
        self.manifest = self._manifest.data
        self.seen: set[str] = set()
        self.hits: list[str] = []
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwiki-pagecache")
        self._pending: list[Future[None]] = []
        self.assets: dict[str, str] = {}  # dest_uri -> cache file, see put_asset
        self._assets_used: set[str] = set()  # their names in the cache's asset folder
        # what the cache folder holds, listed once (a stat per page was a tenth of a 10k rebuild)
        self._html_files = _listing(folder)
        self._restoring: threading.Thread | None = None  # see begin_restore
        self._restore_failure: BaseException | None = None
        self._asset_files = _listing(folder / ASSETS)
        self.placed: set[str] = set()  # the files begin_restore put into the site (f"{site}/{rel}")
        self._site: str | None = None  # the site of begin_restore
        self._records: dict[str, Record] = {}  # rel -> record of the files begin_restore put into the site
        self._written: list[str] = []  # src_uri of the pages written into the site and the cache (see `record`)

    def html_path(self, src_uri: str) -> Path:
        """Where the cache keeps this page's HTML."""
        return self.folder / _html_name(src_uri)

    def settle_layout(self) -> bool:
        """The layout with the navigation now in the config; False when it is not the one assumed until now."""
        layout = _with_nav(self._layout_base, self.config.nav)
        same = layout == self.layout
        self.layout = layout
        return same

    def reusable(self, src_uri: str, fingerprint: str) -> bool:
        """True when last build's HTML of the page with this fingerprint is here, made with this layout."""
        entry = self.manifest.get(src_uri)
        return (
            entry is not None
            and entry.get("fp") == fingerprint
            and entry.get("layout") == self.layout
            and _html_name(src_uri) in self._html_files
        )

    def lookup(self, page: GeneratedPage) -> bool:
        """True when last build's HTML for this page can be reused (nothing it depends on changed)."""
        self.seen.add(page.src_uri)
        if not self.reusable(page.src_uri, page.fingerprint):
            return False
        self.hits.append(page.src_uri)
        return True

    def holds_asset(self, name: str) -> bool:
        """An asset of this name (GeneratedAsset.digest) is in the cache: putting it writes nothing, makes nothing."""
        return name in self._assets_used or name in self._asset_files

    def put_asset(self, asset: GeneratedAsset) -> None:
        """Keep a builder's asset in the cache by content (written once), to be put into the site with the pages."""
        dest_uri, name = asset.dest_uri, asset.digest
        path = f"{self.folder}/{ASSETS}/{name}"  # a string: 5k Path objects were a tenth of a second
        if not self.holds_asset(name):  # (only then are its bytes made: by the writer, one file at a time)
            self._pending.append(self._writer.submit(_write_asset, path, asset))
        self.assets[dest_uri] = path
        self._assets_used.add(name)

    def store(self, generated: GeneratedPage, html: str) -> None:
        """Keep a page's final HTML for the next build."""
        # file I/O off the build's thread; finish() waits and raises what failed
        self._pending.append(self._writer.submit(_write, self.html_path(generated.src_uri), html))
        self._keep(generated)

    def record(self, generated: GeneratedPage) -> None:
        """Note a page whose final HTML was written to `html_path` and into the site by someone else
        (memwiki.site.speed.parallel_pages)."""
        self._keep(generated)
        self._written.append(generated.src_uri)

    def _keep(self, generated: GeneratedPage) -> None:
        self._manifest.set(generated.src_uri, {"fp": generated.fingerprint, "layout": self.layout})

    def begin_restore(self, site_dir: Path) -> None:
        """Start putting the reused pages and the builders' assets into the site, in a thread, while MkDocs
        renders the rest (MkDocs never sees these files: no render, no copy; they do not change any more in
        this build, and MkDocs writes none of their paths). Each is copied, unless last build's copy is still
        in place (see `_place`)."""
        if self._restoring is not None:
            return
        folder, site, du = str(self.folder), str(site_dir), self.config.use_directory_urls
        html, assets = self._html_files, self._asset_files
        files = []  # plain strings, not paths (10k pages)
        for u in self.hits:
            name = _html_name(u)
            files.append((output_path(u, du), f"{folder}/{name}", html[name]))
        for rel, source in self.assets.items():  # (an asset written in this build has no inode listed yet)
            files.append((rel, source, assets.get(os.path.basename(source), -1)))
        self._site = site
        self.placed = {f"{site}/{rel}" for rel, _, _ in files}
        before = self._last_records(site)
        written = list(self._pending)  # the asset files among them

        def run() -> None:
            try:
                for done in written:
                    done.result()
                self._records = _place(site, files, before)
            except BaseException as exc:  # noqa: BLE001 - raised by restore(), on the build's thread
                self._restore_failure = exc

        self._restoring = threading.Thread(target=run, name="memwiki-restore")
        self._restoring.start()

    def restore(self, site_dir: Path) -> None:
        """Wait for `begin_restore` (begun now if it was not); raise what failed."""
        self.begin_restore(site_dir)
        self.drain()

    def _last_records(self, site: str) -> dict[str, Record]:
        """The records the last build saved of the files it put into this site ({} when it built another)."""
        saved = cache_file.load(self.folder / PLACED, cache_file.version(PLACED))
        if isinstance(saved, tuple) and len(saved) == 2 and saved[0] == site and isinstance(saved[1], dict):
            return saved[1]
        return {}

    def _save_records(self) -> None:
        """Save the record of each file the cache put or wrote into the site in this build (see `_place`). The
        kernel stamps ctimes with a coarse clock: first it is let tick past theirs, so that any later write
        gives a file another ctime."""
        if self._site is None:
            return
        site, folder, du = self._site, str(self.folder), self.config.use_directory_urls
        records = dict(self._records)
        for u in self._written:
            rel = output_path(u, du)
            with contextlib.suppress(FileNotFoundError):
                records[rel] = _record(os.lstat(f"{site}/{rel}"), os.lstat(f"{folder}/{_html_name(u)}").st_ino)
        try:
            ticked = ctime_mark(site) is not None
        except OSError:
            ticked = False
        # (a clock that does not tick within half a second: no record, the next build copies every file)
        cache_file.dump(self.folder / PLACED, cache_file.version(PLACED), (site, records if ticked else {}))

    def drain(self) -> None:
        """Wait for the cache writes and the restore of this build; raise the first that failed. (No thread of
        the cache runs afterwards, so the build may fork.)"""
        if self._restoring is not None:
            self._restoring.join()
            failure, self._restore_failure = self._restore_failure, None
            if failure is not None:
                raise failure
        self._writer.shutdown(wait=True)
        pending, self._pending = self._pending, []
        for done in pending:
            done.result()

    def finish(self) -> None:
        """Drop pages that are gone, save the manifest if it changed and the records of the site's files."""
        self.drain()
        for src_uri in [u for u in self.manifest if u not in self.seen]:
            self._manifest.drop(src_uri)
            self.html_path(src_uri).unlink(missing_ok=True)
        for name in self._asset_files.keys() - self._assets_used:  # assets no page uses any more
            (self.folder / ASSETS / name).unlink(missing_ok=True)
        self._manifest.save()
        self._save_records()
        if _nav_json(self.config.nav) != _nav_json(self._nav) or not (self.folder / NAV).is_file():
            cache_file.dump(self.folder / NAV, cache_file.version(NAV), _nav_json(self.config.nav))
