"""What the two scans of the layers' texts found, kept across builds block by block (`BlockMemo`; the search keeps
L2's rows by the same blocks of memories, memwiki.site.builders.search).

The scan for links (memwiki.site.model.concept_index) and the scan for names (memwiki.site.model.mentions) read every
text of the layers: 140k at 100k memories, a second and a half of a rebuild after one memory changed, though all but
one text were as before. The texts come in blocks (`TextBlock`: runs of consecutive places, e.g. fifty memories,
oldest first), each with a key that changes when any of its places would scan differently: their texts, and
where and under which title they are shown. A block whose key is kept gives back what was found in it (links as
rows, names as spans): only what was found is gone through again, in the same order, and nothing is made of the
texts that hold none. A block without a key (the persona and hot memory: a few texts) is always scanned.

What a scan did with what it found (which concept a link or name reaches, the wanted concepts it made) is done
again in every build: it depends on every other block, and it is the same work whether a block was kept or not.
With `check` (tests: $MEMWIKI_CHECK_MEMOS) every block is scanned anyway and one that differs from what its key
kept fails the build."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memwiki.site.model.concept_index import TextSource
from memwiki.site.speed import cache_file
from memwiki.site.speed.memo import StaleMemo

Places = list[tuple[str, TextSource]]  # (layer, where a text is shown and the text)
CHUNK = 100  # blocks a record of the file (cache_file.dump_dict: a 100k store's findings are 30 MB)


@dataclass(frozen=True)
class TextBlock:
    """Consecutive places of the layers' texts: `places()` makes them; `text(n)` is the text of the n-th alone;
    `key` changes when any of them would scan differently ("" : always scanned)."""

    key: str
    places: Callable[[], Places]
    text: Callable[[int], str]


class BlockMemo:
    """What a build made of each block (findings, rows: plain data), kept across builds in `path` (None: this build
    only) by the block's key, the `kind` made and a `tag` it was made under (the names looked for, where a block's
    rows start), for the blocks this build used. A block without a key is always made."""

    def __init__(self, path: Path | None, version: str, check: bool = False, chunk: int = CHUNK) -> None:
        self.check = check
        self._store = cache_file.JournaledDict(path, version, chunk=chunk) if path is not None else None
        self._old: dict[Any, Any] = self._store.data if self._store is not None else {}
        self._used: set[str] = set()
        self.made = 0  # blocks made in this build (the others were kept)

    def found(self, key: str, kind: str, make: Callable[[], Any], tag: object = "") -> Any:  # noqa: ANN401
        """What `make()` makes of the block of `key`, as kept (see `kept`), else made now and kept."""
        value = self.kept(key, kind, tag)
        if value is None:
            value = make()
            self.put(key, kind, value, tag)
        return value

    def kept(self, key: str, kind: str, tag: object = "") -> Any:  # noqa: ANN401
        """What a build made of the block of `key` as `kind` under the same `tag`; None: make it, then `put` it
        (always None with `check`: every block is made, `put` compares)."""
        if not key:
            return None
        self._used.add(key)
        kept = self._old.get((key, kind))
        if self.check or not (isinstance(kept, tuple) and len(kept) == 2 and kept[0] == tag):
            return None
        return kept[1]

    def put(self, key: str, kind: str, value: Any, tag: object = "") -> None:  # noqa: ANN401
        """Keep what was made of the block of `key` (with `check`: fail when it differs from what its key kept)."""
        self.made += 1
        if not key:
            return
        self._used.add(key)
        kept = self._old.get((key, kind))
        if self.check and isinstance(kept, tuple) and len(kept) == 2 and kept[0] == tag and kept[1] != value:
            raise StaleMemo(f"block {key} ({kind}): its key matched, but what is made of it differs")
        if self._store is not None:
            self._store.set((key, kind), (tag, value))

    def save(self) -> None:
        """Keep what this build made anew; forget the blocks it did not use. What was made is then let go when most
        of it was made in this build (a first 100k build held the scans' findings to its end, tens of megabytes at
        its high-water mark); a rebuild keeps what it loaded (freeing it took a tenth of a second)."""
        if self._store is None:
            return
        for key in [k for k in self._store.data if not (isinstance(k, tuple) and k[0] in self._used)]:
            self._store.drop(key)
        self._store.save()
        if self.made * 2 > len(self._used):
            self._store, self._old = None, {}
