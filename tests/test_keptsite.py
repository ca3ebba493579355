"""The last build's site kept through MkDocs' clean (memwiki.site.speed.kept_site), on real folders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from mkdocs.utils import clean_directory

from memwiki.site.speed.kept_site import KEPT, KeptSite


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _old_site(root: Path) -> Path:
    site = root / "site"
    for rel in ("index.html", "a/index.html", "a/b/old.html", "gone/x.html", "empty-later/y.html"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(f"old {rel}")
    (site / "old-empty").mkdir()
    (site / ".hidden").mkdir()
    (site / ".hidden" / "h.txt").write_text("hidden")
    return site


@pytest.mark.parametrize("clean", [True, False], ids=["mkdocs-clean", "clean-made-a-no-op"])
def test_a_kept_site_ends_with_what_this_build_wrote_and_the_kept_pages(tmp_path: Path, clean: bool) -> None:
    """`clean-made-a-no-op`: as with Material's projects plugin, which writes nested sites in its pre_build
    (after set_aside) and replaces MkDocs' clean with a function that does nothing."""
    site = _old_site(tmp_path)
    kept = KeptSite(site)
    assert kept.set_aside()
    (site / "project").mkdir()  # another plugin's pre_build output
    (site / "project" / "p.html").write_text("written by another plugin")
    if clean:
        clean_directory(str(site))  # what MkDocs does right after on_pre_build (it leaves hidden names)
        assert sorted(os.listdir(site)) == [".hidden", KEPT]
    kept.put_back()
    assert not (site / KEPT).exists() and (site / "a" / "b" / "old.html").is_file()
    (site / "index.html").write_text("new index")  # written as MkDocs does
    (site / "a" / "b" / "old.html").write_text("rewritten in place")
    (site / "new" / "deep").mkdir(parents=True)
    (site / "new" / "deep" / "n.html").write_text("new page")
    (site / "fresh-empty").mkdir()  # made by this build: stays, as after a clean build
    removed = kept.sweep({f"{site}/a/index.html"})  # a reused page, in place
    assert removed == 2  # gone/x.html, empty-later/y.html
    expected = {
        ".hidden/h.txt": "hidden",
        "a/b/old.html": "rewritten in place",
        "a/index.html": "old a/index.html",
        "index.html": "new index",
        "new/deep/n.html": "new page",
    }
    if not clean:
        expected["project/p.html"] = "written by another plugin"
    assert _tree(site) == expected
    folders = {p.name for p in site.iterdir() if p.is_dir()}
    assert folders == {".hidden", "a", "fresh-empty", "new"} | (set() if clean else {"project"})


def test_a_file_copied_with_its_old_times_is_fresh_by_its_ctime(tmp_path: Path) -> None:
    """Another plugin copying a file keeping its times (shutil.copy2) wrote it in this build: its ctime says so."""
    site = tmp_path / "site"
    (site / "assets").mkdir(parents=True)
    (site / "assets" / "stale.png").write_text("from the last build")
    (tmp_path / "logo.png").write_text("an old file, copied with its times")
    kept = KeptSite(site)
    assert kept.set_aside()
    clean_directory(str(site))
    kept.put_back()
    shutil.copy2(tmp_path / "logo.png", site / "assets" / "logo.png")
    assert (site / "assets" / "logo.png").stat().st_mtime_ns == (tmp_path / "logo.png").stat().st_mtime_ns
    assert kept.sweep(set()) == 1
    assert _tree(site) == {"assets/logo.png": "an old file, copied with its times"}


def test_a_build_killed_while_the_site_was_aside_leaves_nothing_behind(tmp_path: Path) -> None:
    site = _old_site(tmp_path)
    assert KeptSite(site).set_aside()  # and the process dies here
    clean_directory(str(site))
    (site / "index.html").write_text("written by the killed build")
    kept = KeptSite(site)
    assert not kept.set_aside()  # the next build: the leftover folder is dropped; nothing else to keep
    assert _tree(site) == {".hidden/h.txt": "hidden", "index.html": "written by the killed build"}
    (site / KEPT).write_text("not a folder")  # whatever is in the way is dropped
    (site / "a").mkdir()
    assert kept.set_aside()
    kept.put_back()
    assert (site / "a").is_dir() and not (site / KEPT).exists()


def test_a_build_failing_before_put_back_leaves_the_last_site(tmp_path: Path) -> None:
    site = _old_site(tmp_path)
    before = _tree(site)
    kept = KeptSite(site)
    assert kept.set_aside()
    kept.restore_on_error()
    assert _tree(site) == before and not (site / KEPT).exists()
    assert kept.sweep(set()) == 0  # no mark: nothing is swept


def test_hidden_and_symlinked_top_level_entries_stay_as_after_mkdocs_clean(tmp_path: Path) -> None:
    site = _old_site(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (site / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    kept = KeptSite(site)
    assert kept.set_aside()
    clean_directory(str(site))  # (its rmtree of a symlink fails, and it ignores that)
    kept.put_back()
    kept.sweep(set())
    assert sorted(os.listdir(site)) == [".hidden", "linked"]


def test_no_site_yet_is_nothing_to_keep(tmp_path: Path) -> None:
    assert not KeptSite(tmp_path / "missing").set_aside()
    (tmp_path / "only-files" / ".git").mkdir(parents=True)
    (tmp_path / "only-files" / "index.html").write_text("left to MkDocs' clean")
    assert not KeptSite(tmp_path / "only-files").set_aside()
