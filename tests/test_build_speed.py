"""The builders' door to speed (memwiki.site.speed.builder_speed): memos that catch a key missing an input,
work handed to a forked process or a thread giving what the plain path gives, and caches that are all off
together."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from memwiki.site.model.generated import GeneratedPage
from memwiki.site.speed import cache_file
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


def test_kept_vectors_are_asked_of_the_source_only_for_memories_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layer cache keeps L2's vectors by (embedder, id, embedded text) in a journaled file: a build after one
    memory changed asks the store for that memory's vector alone, writes only a journal, and gives exactly the
    store's vectors; a memory that is gone leaves the file."""
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from memwiki.site.speed.layer_cache import CachedSource
    from memwiki.source import Memory
    from memwiki.store.store import Store

    with Store.init(tmp_path / "store") as store:
        store.semantic.add([Memory(id=f"m-{n}", text=f"Backup step {n}: copy the disk to the NAS.") for n in range(20)])
    asked: list[str] = []

    def build() -> tuple[np.ndarray, np.ndarray]:
        with Store.open(tmp_path / "store") as store:
            gate = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32)
            read = gate.memory_vectors
            monkeypatch.setattr(gate, "memory_vectors", lambda ids: asked.extend(ids) or read(ids))
            source = CachedSource(gate, tmp_path / "layers")
            ids = sorted(m.id for m in source.memories())
            got = source.memory_vectors(ids)
            source.save()
            return got, store.semantic.vectors(ids)

    first, expected = build()
    assert sorted(asked) == sorted(f"m-{n}" for n in range(20)) and np.allclose(first, expected, atol=1e-6)
    asked.clear()
    again, _ = build()
    assert asked == [] and np.array_equal(again, first)
    with Store.open(tmp_path / "store") as store:
        store.semantic.upsert([Memory(id="m-2", text="Backup step 2: copy the photos to the cloud.")])
        store.semantic.delete(["m-4"])
    asked.clear()
    changed, expected = build()
    assert asked == ["m-2"] and np.allclose(changed, expected, atol=1e-6)
    assert (tmp_path / "layers" / "vectors.marshal.journal").is_file()  # (one vector written, not the file)
    kept = CachedSource(PrivacyFilter(None, PrivacyRules()), tmp_path / "layers")  # type: ignore[arg-type]
    assert len(cache_file.JournaledDict(kept._path("vectors"), cache_file.version("layer", "vectors")).data) == 19
