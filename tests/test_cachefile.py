"""Cache files: the journaled dict behind the text cache and the page-cache manifest."""

from __future__ import annotations

import shutil
from pathlib import Path

from memwiki.site.speed.cache_file import JournaledDict


def test_a_few_changes_go_to_the_journal_and_come_back(tmp_path: Path) -> None:
    path = tmp_path / "big.marshal"
    first = JournaledDict(path, "v1")
    for i in range(100):
        first.set(f"k{i}", {"n": i})
    first.save()
    main_bytes = path.read_bytes()
    again = JournaledDict(path, "v1")
    assert again.data == {f"k{i}": {"n": i} for i in range(100)}
    again.set("k1", {"n": -1})
    again.drop("k2")
    again.set("new", {"n": 100})
    again.save()
    assert path.read_bytes() == main_bytes  # only the journal was written
    assert again.journal_path.is_file()
    third = JournaledDict(path, "v1")
    assert third.data["k1"] == {"n": -1} and "k2" not in third.data and third.data["new"] == {"n": 100}
    assert len(third.data) == 100
    assert JournaledDict(path, "v2").data == {}  # another version of the code: nothing


def test_a_long_journal_is_folded_into_the_main_file(tmp_path: Path) -> None:
    path = tmp_path / "big.marshal"
    d = JournaledDict(path, "v")
    for i in range(20):
        d.set(i, str(i))
    d.save()
    for round_ in range(2):  # 3 changes a save: the journal passes a quarter of 20 entries on the 2nd
        d = JournaledDict(path, "v")
        for i in range(3):
            d.set(round_ * 3 + i, f"r{round_}")
        d.save()
        assert d.journal_path.is_file() == (round_ == 0)  # journaled, then folded into the main file
    assert JournaledDict(path, "v").data == {**{i: str(i) for i in range(20)}, **{i: f"r{i // 3}" for i in range(6)}}


def test_a_journal_of_another_generation_is_ignored(tmp_path: Path) -> None:
    """A journal left by a crash between the whole write and the journal's removal, or from before the main
    file was lost, must not be applied over a newer main file."""
    path = tmp_path / "big.marshal"
    d = JournaledDict(path, "v")
    d.set("a", 1)
    d.set("b", 1)
    d.set("c", 1)
    d.set("e", 1)
    d.set("f", 1)
    d.save()
    d = JournaledDict(path, "v")
    d.set("a", 2)  # journaled
    d.save()
    stale = tmp_path / "stale.journal"
    shutil.copy(d.journal_path, stale)
    d.replace_all({"a": 3})  # a whole write: new generation, journal removed
    d.save()
    shutil.copy(stale, d.journal_path)  # as if its removal had not happened
    assert JournaledDict(path, "v").data == {"a": 3}


def test_a_large_dict_is_written_in_records_and_read_back_whole(tmp_path: Path) -> None:
    """The whole dict goes to the file a CHUNK of entries at a time (each a marshal record) and comes back as it
    was; a file cut short, or of another version, is no file."""
    from memwiki.site.speed import cache_file

    path = tmp_path / "big.marshal"
    big = JournaledDict(path, "v1")
    for n in range(3 * cache_file.CHUNK + 7):
        big.set(f"k{n}", {"html": f"<p>{n}</p>", "links": [n]})
    big.save()
    assert JournaledDict(path, "v1").data == big.data
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    assert JournaledDict(path, "v1").data == {}
    path.write_bytes(whole)
    assert JournaledDict(path, "v2").data == {}
