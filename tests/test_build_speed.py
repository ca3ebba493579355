"""The builders' door to speed (memwiki.site.speed.builder_speed): memos that catch a key missing an input,
work handed to a forked process or a thread giving what the plain path gives, and caches that are all off
together."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memwiki.site.generated import GeneratedPage
from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.site.speed.memo import PageMemo, StaleMemo


def _page(text: str) -> GeneratedPage:
    return GeneratedPage("concepts/x.md", "X", f"# X\n\n{text}\n")


def _memo(path: Path, check: bool) -> PageMemo:
    return PageMemo(path, reusable=lambda uri, fp: True, shared="settings", check=check)


def test_a_key_missing_an_input_is_a_stale_page_and_the_check_finds_it(tmp_path: Path) -> None:
    path = tmp_path / "memo.marshal"
    first = _memo(path, check=False)
    assert not first.page("concepts/x.md", ("inputs",), lambda: _page("old text")).kept
    first.save()
    # the page now shows another text, but its builder's key did not name the text: the memo cannot know
    unchecked = _memo(path, check=False).page("concepts/x.md", ("inputs",), lambda: _page("new text"))
    assert unchecked.kept and unchecked.fingerprint == _page("old text").fingerprint  # stale, silently
    with pytest.raises(StaleMemo, match="concepts/x.md"):
        _memo(path, check=True).page("concepts/x.md", ("inputs",), lambda: _page("new text"))
    # a page that did not change passes the check and still comes back kept
    assert _memo(path, check=True).page("concepts/x.md", ("inputs",), lambda: _page("old text")).kept


def test_every_key_holds_the_shared_part(tmp_path: Path) -> None:
    path = tmp_path / "memo.marshal"
    memo = PageMemo(path, reusable=lambda uri, fp: True, shared="directory_urls=False")
    memo.page("concepts/x.md", ("inputs",), lambda: _page("text"))
    memo.save()
    other = PageMemo(path, reusable=lambda uri, fp: True, shared="directory_urls=True")
    assert not other.page("concepts/x.md", ("inputs",), lambda: _page("text")).kept


def _squares() -> dict[str, int]:
    return {str(n): n * n for n in range(1000)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forking a build is done on Linux only")
def test_work_apart_in_a_fork_gives_what_the_plain_path_gives(tmp_path: Path) -> None:
    forked = BuildSpeed.at(tmp_path / "a", may_fork=True)
    done = forked.apart("squares.marshal", "k", _squares)
    assert len(forked.forked) == 1
    assert done.result() == _squares()
    assert forked.load("squares.marshal", "k") == _squares()  # kept for the next build
    plain = BuildSpeed.at(tmp_path / "b")
    assert plain.apart("squares.marshal", "k", _squares).result() == _squares() and not plain.forked
    assert plain.load("squares.marshal", "k") == _squares()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forking a build is done on Linux only")
def test_no_fork_while_a_thread_of_the_build_runs(tmp_path: Path) -> None:
    import threading

    release = threading.Event()
    speed = BuildSpeed.at(tmp_path, may_fork=True)
    beside = speed.beside("wait", lambda: release.wait(10))
    done = speed.apart("squares.marshal", "k", _squares)
    assert not speed.forked  # done here instead, when asked
    assert done.result() == _squares()
    release.set()
    assert beside.result() is True
    speed.settle()


def test_a_failure_beside_the_build_is_raised_where_the_result_is_asked_for(tmp_path: Path) -> None:
    def boom() -> None:
        raise OSError("disk gone")

    done = BuildSpeed().beside("boom", boom)
    with pytest.raises(OSError, match="disk gone"):
        done.result()
