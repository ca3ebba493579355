"""Every file in site/ is a file of its own (memwiki.site.speed.html_cache): never a hard link into the page cache.

Real MkDocs builds of the demo (tests/test_site.py's helpers), into a kept site: a deploy step may edit a
built page in place, the cache stays as it was and the next build puts the page back; a rebuild with nothing
changed copies nothing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from memwiki.site.speed.html_cache import _manifest_file
from memwiki.source import Memory
from memwiki.store.store import Store
from tests.test_site import NEW_TEXT, ROOT, build_site, demo_build  # noqa: F401 - demo_build: the fixture

WORKERS = {"render_workers": 2}  # changed pages written by two forked workers (memwiki.site.speed.parallel_pages)


def _files(root: Path) -> dict[str, os.stat_result]:
    """rel -> lstat of every file under `root` (symlinked folders not followed)."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = os.lstat(path)
    return out


def _cached_pages(cache: Path) -> dict[str, bytes]:
    """The page cache's HTML files and builders' assets."""
    pages = cache / "pages"
    kept = [rel for rel in _files(pages) if rel.endswith(".html") or rel.startswith("assets/")]
    return {rel: (pages / rel).read_bytes() for rel in kept}


def _built(tmp_path: Path, demo_build: Path) -> tuple[Path, Path, Path, list[str]]:  # noqa: F811 - the fixture
    """A copy of the demo store with one memory added, built into a new site with a copy of the demo's page
    cache: most pages are reused (copied from the cache), the changed ones written by the workers (returned)."""
    store_dir, cache, site = tmp_path / "store", tmp_path / "cache", tmp_path / "site"
    shutil.copytree(ROOT / ".cache" / "demo-store", store_dir)
    shutil.copytree(demo_build / "cache", cache, symlinks=True)
    with Store.open(store_dir) as store:
        store.semantic.add([Memory(id="m-902", text=NEW_TEXT, category="technical", wing="infra", room="embed-01")])
    plugin, error = build_site(site, cache, store=str(store_dir), demo_src=None, **WORKERS)
    assert error is None, error
    written = _written(cache, plugin)
    assert len(plugin.hits) > 40 and written, "both kinds of page: reused, and written by the workers"
    return store_dir, cache, site, written


def _written(cache: Path, plugin) -> list[str]:  # noqa: ANN001 - memwiki.site.plugin.BuildRecord
    """The cached pages the workers wrote in this build: neither reused nor rendered by MkDocs."""
    return sorted(set(_manifest_file(cache / "pages").data) - set(plugin.hits) - set(plugin.generated))


def _rebuild(store_dir: Path, cache: Path, site: Path):  # noqa: ANN202 - memwiki.site.plugin.BuildRecord
    plugin, error = build_site(site, cache, store=str(store_dir), demo_src=None, **WORKERS)
    assert error is None, error
    return plugin


def _page(src_uri: str) -> str:
    return src_uri.removesuffix(".md") + ".html"


def test_no_site_file_is_a_hard_link_into_the_cache(demo_build: Path, tmp_path: Path) -> None:  # noqa: F811
    store_dir, cache, site, _ = _built(tmp_path, demo_build)
    with Store.open(store_dir) as store:  # a plain rebuild: the site kept, changed pages written again
        store.semantic.add([Memory(id="m-903", text="Another rebuild check.", category="technical")])
    plugin = _rebuild(store_dir, cache, site)
    assert plugin.hits and _written(cache, plugin)
    site_files = _files(site)
    assert site_files and [rel for rel, st in site_files.items() if st.st_nlink > 1] == []
    cache_inodes = {(st.st_dev, st.st_ino) for st in _files(cache).values()}
    assert [rel for rel, st in site_files.items() if (st.st_dev, st.st_ino) in cache_inodes] == []


def test_a_page_edited_in_place_leaves_the_cache_and_the_next_build_puts_it_back(
    demo_build: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    """A deploy step (a minifier, a search-index post-processor) writes into built pages: a reused page, and one
    the workers wrote. One edit keeps the size and sets the mtime back: only the ctime tells."""
    store_dir, cache, site, by_workers = _built(tmp_path, demo_build)
    reused, written = "concepts/juniper.html", next(_page(u) for u in by_workers if "/" in u)  # (in a kept folder)
    cached = _cached_pages(cache)
    assert len(cached) > 40
    before = {rel: os.lstat(site / rel) for rel in (reused, written)}
    for rel in (reused, written):
        with open(site / rel, "r+b") as f:  # in place: the same inode
            f.write(b"<!-- minified -->")
    old = before[written]
    os.utime(site / written, ns=(old.st_atime_ns, old.st_mtime_ns))
    new = os.lstat(site / written)
    assert (new.st_ino, new.st_size, new.st_mtime_ns) == (old.st_ino, old.st_size, old.st_mtime_ns)
    assert _cached_pages(cache) == cached  # the cache did not change through the site
    plugin = _rebuild(store_dir, cache, site)
    assert {reused, written} <= {_page(u) for u in plugin.hits}
    assert _cached_pages(cache) == cached
    clean = tmp_path / "clean"
    _, error = build_site(clean, cache, store=str(store_dir), demo_src=None, **WORKERS)
    assert error is None, error
    for rel in (reused, written):
        assert (site / rel).read_bytes() == (clean / rel).read_bytes(), rel
        assert not (site / rel).read_bytes().startswith(b"<!-- minified -->")


def test_a_rebuild_with_nothing_changed_copies_nothing(demo_build: Path, tmp_path: Path) -> None:  # noqa: F811
    store_dir, cache, site, _ = _built(tmp_path, demo_build)
    before = _files(site)
    plugin = _rebuild(store_dir, cache, site)
    assert not _written(cache, plugin) and len(plugin.hits) > 40  # every page outside the navigation reused
    after = _files(site)
    # (top-level files are left to MkDocs' clean: see memwiki.site.speed.kept_site)
    reused = [rel for rel in map(_page, plugin.hits) if "/" in rel]
    assert len(reused) > 40 and set(reused) <= before.keys()

    def same(st: os.stat_result) -> tuple[int, int, int]:
        return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)

    assert [rel for rel in reused if same(after[rel]) != same(before[rel])] == []
