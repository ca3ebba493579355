"""The last build's site kept through MkDocs' clean (plugins.keptsite), on real folders."""

from __future__ import annotations

import os
from pathlib import Path

from mkdocs.utils import clean_directory

from plugins.keptsite import KEPT, KeptSite


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


def test_a_kept_site_ends_with_what_this_build_wrote_and_the_kept_pages(tmp_path: Path) -> None:
    site = _old_site(tmp_path)
    kept = KeptSite(site)
    assert kept.set_aside()
    clean_directory(str(site))  # what MkDocs does right after on_pre_build
    assert sorted(os.listdir(site)) == [".hidden", KEPT]
    assert kept.put_back()
    assert not (site / KEPT).exists() and (site / "a" / "b" / "old.html").is_file()
    (site / "index.html").write_text("new index")  # written in place, as MkDocs does
    (site / "new" / "deep").mkdir(parents=True)
    (site / "new" / "deep" / "n.html").write_text("new page")
    (site / "fresh-empty").mkdir()  # made by this build: stays, as after a clean build
    removed = kept.sweep({f"{site}/a/index.html"})  # a reused page, in place
    assert removed == 3  # a/b/old.html, gone/x.html, empty-later/y.html
    assert _tree(site) == {
        ".hidden/h.txt": "hidden",
        "a/index.html": "old a/index.html",
        "index.html": "new index",
        "new/deep/n.html": "new page",
    }
    assert sorted(p.name for p in site.iterdir() if p.is_dir()) == [".hidden", "a", "fresh-empty", "new"]


def test_a_build_killed_while_the_site_was_aside_leaves_nothing_behind(tmp_path: Path) -> None:
    site = _old_site(tmp_path)
    assert KeptSite(site).set_aside()  # and the process dies here
    (site / "index.html").write_text("written by the killed build")
    kept = KeptSite(site)
    assert kept.set_aside()  # the next build: the leftover folder is dropped
    assert not (site / KEPT / KEPT).exists()
    assert kept.put_back()
    assert _tree(site) == {".hidden/h.txt": "hidden", "index.html": "written by the killed build"}


def test_a_build_failing_before_put_back_leaves_the_last_site(tmp_path: Path) -> None:
    site = _old_site(tmp_path)
    before = _tree(site)
    kept = KeptSite(site)
    assert kept.set_aside()
    kept.restore_on_error()
    assert _tree(site) == before and not (site / KEPT).exists()
    assert kept.sweep(set()) == 0  # no mark: nothing is swept


def test_no_site_yet_is_nothing_to_keep(tmp_path: Path) -> None:
    assert not KeptSite(tmp_path / "missing").set_aside()
    (tmp_path / "only-hidden" / ".git").mkdir(parents=True)
    assert not KeptSite(tmp_path / "only-hidden").set_aside()


def test_files_linked_elsewhere_are_unlinked_before_they_are_written_in_place(tmp_path: Path) -> None:
    cached, linked, single = tmp_path / "cache.html", tmp_path / "linked.html", tmp_path / "single.html"
    cached.write_text("cached")
    os.link(cached, linked)
    single.write_text("single")
    KeptSite(tmp_path).unlink_shared([str(linked), str(single), str(tmp_path / "missing.html")])
    assert not linked.exists() and cached.read_text() == "cached" and single.read_text() == "single"
