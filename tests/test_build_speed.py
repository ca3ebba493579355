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
from memwiki.site.speed.vector_rows import VectorRows


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
    """The layer cache keeps L2's vectors by (embedder, id, embedded text) as rows of one file: a build after one
    memory changed asks the store for that memory's vector alone, appends one row, and gives exactly the
    store's vectors; a memory that is gone leaves the file's list."""
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
    [data] = (tmp_path / "layers").glob("vectors-*.f32")
    assert data.stat().st_size == 21 * first.shape[1] * 4  # (one row appended, not the file written again)
    kept = VectorRows(tmp_path / "layers", "vectors", cache_file.version("layer", "vectors"))
    assert len(kept.rows) == 19 and "m-4" not in {k.rsplit(chr(0))[-1] for k in kept.rows}


def _rows_saved(folder: Path, count: int, width: int, saved: int) -> tuple[list[str], np.ndarray]:
    """`count` random vectors of `width` and their keys; the first `saved` of them kept in `folder` ("v") and saved."""
    vectors = np.random.default_rng(count).standard_normal((count, width)).astype(np.float32)
    keys = [f"k{n}" for n in range(count)]
    rows = VectorRows(folder, "v", "1")
    rows.add(keys[:saved], vectors[:saved])
    rows.save()
    return keys, vectors


def test_vector_rows_read_what_was_added_and_survive_a_crash_between_writes(tmp_path: Path) -> None:
    """Rows come back as added, in the order asked; a list whose file is short is no list; rows written past the
    list by a build that did not save are written over; dead rows past a quarter get a new file."""
    keys, vectors = _rows_saved(tmp_path, 40, 8, saved=30)
    crashed = VectorRows(tmp_path, "v", "1")
    crashed.add(["lost"], np.ones((1, 8), dtype=np.float32))  # (appended, never saved)
    again = VectorRows(tmp_path, "v", "1")
    assert "lost" not in again and np.array_equal(again.read(keys[29::-3]), vectors[29::-3])
    again.add(keys[30:], vectors[30:])
    again.keep_only(keys[12:])
    again.save()
    [data] = tmp_path.glob("v-*.f32")
    assert data.stat().st_size == 28 * 8 * 4  # (12 dead of 40: written anew with the 28 live rows)
    assert np.array_equal(VectorRows(tmp_path, "v", "1").read(keys[12:]), vectors[12:])
    assert len(VectorRows(tmp_path, "v", "2").rows) == 0  # (another version: nothing)
    data.write_bytes(data.read_bytes()[:100])
    assert len(VectorRows(tmp_path, "v", "1").rows) == 0  # (a file shorter than its list: nothing)


def _gated_layer(store_dir: Path, folder: Path) -> tuple[list, dict, list[str], int]:
    """L2 as a public build's layer cache in `folder` gives it: the memories, what was withheld, the layers read
    from the source, and how many records the source's changes held."""
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from memwiki.site.speed.layer_cache import CachedSource
    from memwiki.store.store import Store

    with Store.open(store_dir) as store:
        reader = store.reader()
        read = reader.memory_changes
        rows: list[int] = []

        def changes(*args: object):  # noqa: ANN202 - Changes | None
            got = read(*args)
            rows.append(len(got.rows) if got is not None else 0)
            return got

        reader.memory_changes = changes  # type: ignore[method-assign]
        source = CachedSource(PrivacyFilter(reader, PrivacyRules(), key=b"k" * 32), folder)
        memories = list(source.memories())
        return memories, source.withheld().get("memories", {}), source.reads, sum(rows)


def test_a_rebuild_reads_the_memories_that_changed_and_shows_what_a_full_read_shows(tmp_path: Path) -> None:
    """L2 kept record by record: a rebuild reads from Chroma's file the memories written since the last build
    (changed, added, deleted while another was added, withheld, one with a secret), and the layer it gives is the
    one a build with no cache reads: the same memories, in the same order, with the same withheld counts."""
    from memwiki.source import Memory
    from memwiki.store.store import Store

    store = tmp_path / "store"
    with Store.init(store) as opened:
        opened.semantic.add([Memory(id=f"m-{n}", text=f"Backup step {n}: copy the disk.") for n in range(40)])
    first, withheld, reads, rows = _gated_layer(store, tmp_path / "kept")
    assert len(first) == 40 and reads == ["memories"] and rows == 40 and withheld == {}
    assert _gated_layer(store, tmp_path / "kept")[2:] == ([], 0)  # nothing written: nothing read
    with Store.open(store) as opened:
        opened.semantic.upsert([Memory(id="m-2", text="Backup step 2: copy the photos to the cloud.", category="fact")])
        opened.semantic.delete(["m-4", "m-9"])
        opened.semantic.add(
            [
                Memory(id="m-new", text="Backup step 41: the key is AKIAJ7Q2X9ZL4M8KP3TR."),
                Memory(id="m-secret", text="[private] the lawyer is Zhang."),
            ]
        )
    changed, withheld, reads, rows = _gated_layer(store, tmp_path / "kept")
    assert reads == ["memories"] and rows == 3  # m-2, m-new, m-secret: not the 38 others
    full, full_withheld, _, full_rows = _gated_layer(store, tmp_path / "no-cache")
    assert full_rows == 40 and changed == full and withheld == full_withheld
    assert [m.id for m in changed][-2:] == ["m-39", "m-new"] and "m-4" not in {m.id for m in changed}
    assert "AKIA" not in changed[-1].text and sum(withheld.values()) >= 2  # (a secret redacted, a memory withheld)


def test_a_collection_made_again_is_read_whole(tmp_path: Path) -> None:
    """A collection deleted and made again (a repair, another store put in its place) numbers its writes from 1
    again: once they pass the number the last build read up to, the few written after it are not all that changed,
    though as many memories are there. The kept records then sum to another total than Chroma's, and the layer is
    read whole: a memory made private in the new collection is withheld, as a build with no cache withholds it."""
    import chromadb

    from memwiki.source import Memory
    from memwiki.store.store import Store

    store = tmp_path / "store"
    with Store.init(store) as opened:
        opened.semantic.add([Memory(id=f"m-{n}", text=f"Lantern {n} sits on shelf {n}.") for n in range(6)])
        opened.semantic.upsert([Memory(id=f"m-{n}", text=f"Lantern {n} sits on shelf {n + 1}.") for n in range(6)])
        collection = opened.config.chroma.collection
    kept, _, _, _ = _gated_layer(store, tmp_path / "kept")
    assert len(kept) == 6
    chromadb.PersistentClient(str(store / "l2")).delete_collection(collection)
    with Store.open(store) as opened:
        again = [Memory(id=f"m-{n}", text=f"Lantern {n} sits on shelf {n}.") for n in range(6)]
        again[3] = Memory(id="m-3", text="[private] lantern 3 is the lawyer's.")
        opened.semantic.add(again)
        for n in range(8):  # (writes numbered past the last build's: as many memories as it kept)
            opened.semantic.upsert([Memory(id="m-0", text=f"Lantern 0 sits on shelf {n}.")])
    rebuilt, withheld, _, _ = _gated_layer(store, tmp_path / "kept")
    full, full_withheld, _, _ = _gated_layer(store, tmp_path / "no-cache")
    assert rebuilt == full and withheld == full_withheld and "m-3" not in {m.id for m in rebuilt}


def test_vector_rows_never_name_zeros_when_another_build_wrote_the_file_anew(tmp_path: Path) -> None:
    """Two builds on one cache folder: one writes the rows anew (a new file, the old one removed) while the other
    still holds the old file's list. The other's next rows start a file of their own, not the old file made again
    with zeros where its rows were; and whichever list is saved last names only rows that are there."""
    keys, vectors = _rows_saved(tmp_path, 20, 4, saved=16)
    slow, fast = VectorRows(tmp_path, "v", "1"), VectorRows(tmp_path, "v", "1")
    fast.keep_only(keys[:8])  # (half let go: written anew)
    fast.save()
    slow.add(keys[16:], vectors[16:])
    with pytest.raises(KeyError):
        slow.read(keys[:1])  # (its list went with the old file: asked again, not read as zeros)
    assert np.array_equal(slow.read(keys[16:]), vectors[16:])
    slow.save()
    last = VectorRows(tmp_path, "v", "1")
    assert sorted(last.rows) == sorted(keys[16:]) and np.array_equal(last.read(keys[16:]), vectors[16:])


def test_the_search_reads_the_vectors_of_changed_memories_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search keeps L2's int8 rows by (id, indexed text): after one memory changed and one was deleted, a build
    asks the source for that memory's vector alone, and ships the rows a build without caches ships."""
    from memwiki.site.builders import search
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from memwiki.site.model.build_context import BuildContext
    from memwiki.source import Memory
    from memwiki.store.store import Store

    with Store.init(tmp_path / "store") as store:
        store.semantic.add([Memory(id=f"m-{n}", text=f"Backup step {n}: copy the disk to the NAS.") for n in range(12)])

    def build(cache: Path | None) -> tuple[np.ndarray, list[str]]:
        asked: list[str] = []
        with Store.open(tmp_path / "store") as store:
            gate = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32)
            read = gate.memory_vectors
            monkeypatch.setattr(gate, "memory_vectors", lambda ids: asked.extend(ids) or read(ids))
            ctx = BuildContext(gate, speed=BuildSpeed.at(cache) if cache else BuildSpeed())
            _, vectors = search.search_data(ctx)
            assert vectors is not None
            return vectors, asked

    first, asked = build(tmp_path / "cache")
    assert sorted(asked) == sorted(f"m-{n}" for n in range(12))
    again, asked = build(tmp_path / "cache")
    assert asked == [] and np.array_equal(again, first)
    with Store.open(tmp_path / "store") as store:
        store.semantic.upsert([Memory(id="m-2", text="Backup step 2: copy the photos to the cloud.")])
        store.semantic.delete(["m-4"])
    changed, asked = build(tmp_path / "cache")
    fresh, _ = build(None)
    assert asked == ["m-2"] and np.array_equal(changed, fresh) and not np.array_equal(changed[:11], first[:11])
    kept = tmp_path / "cache" / search.MEMORY_ROWS_FILE
    kept.write_bytes(kept.read_bytes()[:-7])  # a file cut short: read again, never rows shifted by 7 bytes
    again, asked = build(tmp_path / "cache")
    assert len(asked) == 11 and np.array_equal(again, fresh)


def test_the_search_makes_again_only_the_rows_of_the_block_of_memories_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """L2's search rows are kept by block of memories (the scans' blocks, oldest first): after one memory changed
    a build makes its block's rows alone and gives the data a build without caches gives; rows kept under a key
    that no longer says what they hold are caught by the memo check."""
    from memwiki.site.builders import TEXT_BLOCK, search
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from memwiki.site.model.build_context import BuildContext
    from memwiki.source import Memory
    from memwiki.store.store import Store

    def note(n: int, text: str) -> Memory:
        return Memory(id=f"m-{n}", text=text, created=f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}")

    with Store.init(tmp_path / "store") as store:
        store.semantic.add([note(n, f"Backup step {n}: copy the disk to the NAS.") for n in range(2 * TEXT_BLOCK + 5)])
    made: list[int] = []
    block = search._Layers._memory_block  # noqa: SLF001 - what makes a block's rows: counted
    monkeypatch.setattr(search._Layers, "_memory_block", staticmethod(lambda *a: made.append(a[3]) or block(*a)))  # noqa: SLF001

    def build(cache: Path | None, check: bool = False) -> dict:
        made.clear()
        with Store.open(tmp_path / "store") as store:
            speed = BuildSpeed.at(cache) if cache else BuildSpeed()
            speed.check_memos = check
            ctx = BuildContext(PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32), speed=speed)
            return search.search_data(ctx)[0]

    first = build(tmp_path / "cache")
    assert made == [0, TEXT_BLOCK, 2 * TEXT_BLOCK]
    assert build(tmp_path / "cache") == first and made == []
    with Store.open(tmp_path / "store") as store:
        store.semantic.upsert([note(TEXT_BLOCK + 3, "Backup step: copy the photos to the cloud.")])
    changed = build(tmp_path / "cache")
    assert made == [TEXT_BLOCK] and changed == build(None) and changed != first
    with Store.open(tmp_path / "store") as store:  # (long: cut into passages, the unit rows after it move)
        store.semantic.upsert([note(TEXT_BLOCK + 3, "Backup step: copy the photos to the cloud. " * 200)])
    changed = build(tmp_path / "cache")
    assert made == [TEXT_BLOCK, 2 * TEXT_BLOCK] and changed == build(None)
    path = tmp_path / "cache" / search.BLOCKS_FILE
    kept = cache_file.JournaledDict(path, cache_file.version("search-memory-blocks", search.FORMAT_VERSION, False))
    key, (at, rows) = next((k, v) for k, v in kept.data.items() if v[0] == (0, 0))
    rows[1][0][2] = "a text the memory no longer holds"
    kept.set(key, (at, rows))
    kept.save()
    assert build(tmp_path / "cache")["L2"]["units"][0][2] == "a text the memory no longer holds"  # (trusted)
    with pytest.raises(StaleMemo):
        build(tmp_path / "cache", check=True)


def test_memory_anchors_kept_across_builds_are_the_ones_claimed_anew(tmp_path: Path) -> None:
    """Card anchors are kept by the list of ids; ids whose slugs collide get the same `-2` wherever they come
    from, and a new id claims them all anew in claim order."""
    from memwiki.site.builders import _memory_anchors

    speed = BuildSpeed.at(tmp_path / "cache")
    ids = ["Foo Bar", "foo-bar", "café", "cafe\u0301", "m-1"]
    first = _memory_anchors(speed, ids)
    assert first == _memory_anchors(BuildSpeed(), ids) and len(set(first.values())) == len(ids)
    assert _memory_anchors(speed, ids) == first and (tmp_path / "cache" / "memory-anchors.marshal").is_file()
    more = ["foo bar", *ids]
    assert _memory_anchors(speed, more) == _memory_anchors(BuildSpeed(), more) != first


def test_a_rebuild_scans_again_only_the_block_of_texts_that_changed(tmp_path: Path) -> None:
    """What the scans for links and names found is kept by block of texts (speed.scan_memo): after one memory was
    edited, a rebuild scans its block again (and the hot memory's, never kept) and finds every backlink and
    mention a build without caches finds; a block kept under a key that misses an input is caught by `check`."""
    from memwiki.site.builders import TEXT_BLOCK, site
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from memwiki.site.model.build_context import BuildContext
    from memwiki.site.speed.scan_memo import BlockMemo
    from memwiki.source import Memory
    from memwiki.store.store import Store

    count = 3 * TEXT_BLOCK
    with Store.init(tmp_path / "store") as store:
        store.graph.add_triple("NAS", "backs up", "laptop")
        store.semantic.add([Memory(id=f"m-{n}", text=f"Note {n}: [[NAS]] copies the laptop.") for n in range(count)])

    def build(cache: Path | None) -> tuple[dict, dict, int]:
        with Store.open(tmp_path / "store") as store:
            speed = BuildSpeed(cache_dir=cache, check_memos=False)
            gate = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32)  # (a key of its own: another's)
            s = site(BuildContext(gate, speed=speed))
            mentions = s.mentions()
            s.scans.save()
            concepts = {c.title: c for c in s.index.concepts}
            links = {t: sorted(c.backlinks) for t, c in concepts.items() if c.backlinks}
            names = {t: sorted(mentions.of(c)) for t, c in concepts.items() if mentions.of(c)}
            return links, names, s.scans.made

    first = build(tmp_path / "cache")
    assert first[2] >= 2 * (count // TEXT_BLOCK)  # every block, for links and for names
    assert build(tmp_path / "cache") == (*first[:2], 2)  # the hot memory's block (never kept), links and names
    with Store.open(tmp_path / "store") as store:
        store.semantic.upsert([Memory(id="m-70", text="Note 70: the laptop is copied by [[NAS]] and the laptop.")])
    links, names, scanned = build(tmp_path / "cache")
    assert (links, names) == build(None)[:2] and len(links["NAS"]) == count
    assert scanned <= 2 * 2  # one block of memories, and the hot memory's (empty here), for links and for names
    memo = BlockMemo(tmp_path / "memo.marshal", "v", check=True)
    memo.put("k", "links", [("a", "", "a", [])])
    memo.save()
    with pytest.raises(StaleMemo):
        BlockMemo(tmp_path / "memo.marshal", "v", check=True).put("k", "links", [])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forking a build is done on Linux only")
def test_a_search_made_in_a_forked_process_is_the_one_made_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a rebuild the search and the near-duplicates are made in forked processes cut off from the source
    (search.start, audit.start), after the vectors of memories new since the last build were asked for: they give
    what is made here (the search ships its page and the assets the page cache does not hold); a search that needs
    what is not kept (the vectors of texts nobody embedded yet) gives up and is made here, the same again."""
    from memwiki.site.builders import audit, search, site
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from memwiki.site.model.build_context import BuildContext
    from memwiki.site.speed.layer_cache import CachedSource
    from memwiki.source import Memory
    from memwiki.store.store import Store

    texts = [f"Backup step {n}: copy the disk to the NAS." for n in range(30)] + [
        "Backup step 1: copy the disk to the NAS!"
    ]
    with Store.init(tmp_path / "store") as store:
        store.semantic.add([Memory(id=f"m-{n}", text=t) for n, t in enumerate(texts)])
    held: set[str] = set()  # the assets the page cache holds (as PageCache.holds_asset says)

    def build(cache: Path | None, fork: bool) -> tuple[str, dict[str, str], list, int]:
        made = []
        with Store.open(tmp_path / "store") as store:
            source = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32)
            if cache is not None:
                source = CachedSource(source, cache / "layers")
            speed = BuildSpeed(cache_dir=cache, exports=tmp_path / "use", may_fork=fork, holds_asset=held.__contains__)
            ctx = BuildContext(source, speed=speed)
            s = site(ctx)
            audit.start(ctx)
            search.start(ctx)
            for module, name in ((search, "_made"), (audit, "_vector_clusters")):  # (after the forks: here only)
                here = getattr(module, name)
                monkeypatch.setattr(module, name, lambda *a, here=here: made.append(1) or here(*a))
            (page,), assets = search.build(ctx)
            clusters = audit.near_duplicates(ctx, s.memories)[0]
            monkeypatch.undo()
            speed.settle()
            if isinstance(source, CachedSource):
                source.save()
            held.update(a.digest for a in assets)
            return page.markdown, {a.dest_uri: a.digest for a in assets}, clusters, len(made)

    cache = tmp_path / "cache"
    assert build(cache, fork=True)[3] == 2  # a first build: both made here
    page, assets, clusters, made = build(cache, fork=True)
    assert made == 0 and (page, assets, clusters) == build(None, fork=False)[:3]  # made in the forks, as here
    assert clusters  # (the notes are alike)
    with Store.open(tmp_path / "store") as store:  # (a new memory, and a long one: its passages are not embedded)
        store.semantic.upsert([Memory(id="m-3", text="Backup step 3: copy the photos to the cloud.")])
        store.semantic.upsert([Memory(id="m-long", text="A very long note about the NAS. " * 400)])
    page, assets, clusters, made = build(cache, fork=True)
    assert made == 1 and (page, assets, clusters) == build(None, fork=False)[:3]  # the search made here


def test_a_digest_page_is_made_again_when_a_memory_written_in_its_session_changes(tmp_path: Path) -> None:
    """A session's digest shows the memories written in it: its memo key holds them (a page kept while one of
    them changed would be a stale page, which the memos' check fails on)."""
    from memwiki.site.builders import sessions
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from memwiki.site.model.build_context import BuildContext
    from memwiki.source import Memory
    from memwiki.store.store import Store

    with Store.init(tmp_path / "store") as store:
        store.sessions.add_session("s-1", title="backups", started="2026-11-01T10:00:00Z")
        store.sessions.add_message("s-1", "user", "Where do the backups go?", time="2026-11-01T10:00:00Z")
        store.sessions.add_message("s-1", "assistant", "To the NAS, every Sunday.", time="2026-11-01T10:01:00Z")
        store.semantic.add([Memory(id="m-1", text="Backups go to the NAS.", session_id="s-1")])

    def build() -> dict[str, tuple[bool, str]]:
        with Store.open(tmp_path / "store") as store:
            speed = BuildSpeed(cache_dir=tmp_path / "cache", reusable=lambda *_: True, check_memos=True)
            ctx = BuildContext(PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32), speed=speed)
            pages, _ = sessions.build(ctx)
            speed.save_memos()
            return {p.src_uri: (p.kept, p.markdown) for p in pages}

    first = build()
    digest = next(uri for uri in first if uri.startswith("sessions/") and "s-1" in uri)
    assert build()[digest][0]  # kept: nothing it shows changed
    with Store.open(tmp_path / "store") as store:
        store.semantic.upsert([Memory(id="m-1", text="Backups go to the cloud now.", session_id="s-1")])
    kept, markdown = build()[digest]
    assert not kept and "cloud" in markdown


def test_a_first_build_marks_every_session_done_so_the_next_looks_for_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first build makes every session's key turns and marks them all kept (sessions.EVERY_SESSION, with the
    sessions layer's version): the next build of the same sessions does not read every session's turns to look for
    new ones; a new turn does."""
    from memwiki.site.builders import sessions
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from memwiki.site.model.build_context import BuildContext
    from memwiki.store.store import Store

    with Store.init(tmp_path / "store") as store:
        for n in range(3):
            store.sessions.add_session(f"s-{n}", title=f"backups {n}", started=f"2026-11-0{n + 1}T10:00:00Z")
            store.sessions.add_message(f"s-{n}", "user", f"Where do the backups of box {n} go?")
            store.sessions.add_message(f"s-{n}", "assistant", "To the NAS, every Sunday.")
    looked: list[int] = []
    prefetch = sessions.Digester.prefetch
    monkeypatch.setattr(sessions.Digester, "prefetch", lambda self, c: looked.append(len(c)) or prefetch(self, c))

    def build() -> list[int]:
        looked.clear()
        with Store.open(tmp_path / "store") as store:
            speed = BuildSpeed(cache_dir=tmp_path / "cache", reusable=lambda *_: True, check_memos=True)
            ctx = BuildContext(PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32), speed=speed)
            sessions.prepare(ctx)
            sessions.build(ctx)
            speed.save_memos()
            speed.settle()
        return list(looked)

    assert build() == [3] and build() == []
    with Store.open(tmp_path / "store") as store:
        store.sessions.add_message("s-1", "user", "And the photos?")
    assert build() == [3] and build() == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forking a build is done on Linux only")
def test_concept_pages_made_in_a_fork_are_those_made_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a rebuild the concept pages are made in a forked process (speed.forked): the pages it sends back, kept
    or made again, are those a build without caches makes, and the page memo it saved serves the next build."""
    from memwiki.site.builders import audit, concepts, site
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from memwiki.site.model.build_context import BuildContext
    from memwiki.site.speed import forked
    from memwiki.site.speed.layer_cache import CachedSource
    from memwiki.source import Memory
    from memwiki.store.store import Store

    with Store.init(tmp_path / "store") as store:
        store.graph.add_triple("NAS", "backs up", "laptop")
        store.graph.add_triple("NAS", "stands in", "the attic")  # (a conflict: the NAS page carries its flag)
        store.graph.add_triple("NAS", "stands in", "the office")
        store.semantic.add([Memory(id=f"m-{n}", text=f"Note {n}: the [[NAS]] copies the laptop.") for n in range(12)])

    def build(cache: Path | None) -> tuple[dict[str, str], int]:
        made = []
        with Store.open(tmp_path / "store") as store:
            source = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32)
            if cache is not None:
                source = CachedSource(source, cache / "layers")
            speed = BuildSpeed(cache_dir=cache, may_fork=True, reusable=lambda *_: True, check_memos=False)
            ctx = BuildContext(source, speed=speed)
            s = site(ctx)
            s.mentions(), audit.entity_flags(ctx)  # (as the build forks them: before the rest of the audit)
            forked.start(ctx, "concepts", lambda c: concepts.build(c), save=s.index.texts.save)
            here = concepts.build
            monkeypatch.setattr(concepts, "build", lambda c: made.append(1) or here(c))  # (after the fork)
            pages, _ = forked.result(ctx, "concepts", lambda c: concepts.build(c))
            monkeypatch.undo()
            speed.save_memos()
            speed.settle()
            s.index.texts.save(prune=False)
            if isinstance(source, CachedSource):
                source.save()
            return {p.src_uri: p.fingerprint for p in pages}, len(made)

    cache = tmp_path / "cache"
    build(cache)
    with Store.open(tmp_path / "store") as store:
        store.semantic.upsert([Memory(id="m-3", text="Note 3: the [[NAS]] also copies the phone.")])
    pages, made = build(cache)
    assert made == 0 and pages == build(None)[0] and len(pages) > 2
