"""What the two scans of the layers' texts found, kept across builds block by block.

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
CHUNK = 100  # blocks' findings a record of the file (cache_file.dump_dict: a 100k store's are 30 MB)


@dataclass(frozen=True)
class TextBlock:
    """Consecutive places of the layers' texts: `places()` makes them; `text(n)` is the text of the n-th alone;
    `key` changes when any of them would scan differently ("" : always scanned)."""

    key: str
    places: Callable[[], Places]
    text: Callable[[int], str]


class ScanMemo:
    """Each block's findings by its key, in `path` (None: this build only), kept for the blocks this build used."""

    def __init__(self, path: Path | None, check: bool = False) -> None:
        self.check = check
        version = cache_file.version("scan-blocks")
        self._store = cache_file.JournaledDict(path, version, chunk=CHUNK) if path is not None else None
        self._old: dict[Any, Any] = self._store.data if self._store is not None else {}
        self._used: set[str] = set()
        self.scanned = 0  # blocks scanned in this build (the others were kept)

    def found(self, block: TextBlock, kind: str, scan: Callable[[Places], Any], names: str = "") -> Any:  # noqa: ANN401
        """What `scan(block.places())` finds (plain data), kept under the block's key, `kind` and `names` (the
        names looked for, when the findings depend on them)."""
        value = self.kept(block, kind, names)
        if value is None:
            value = scan(block.places())
            self.put(block, kind, value, names)
        return value

    def kept(self, block: TextBlock, kind: str, names: str = "") -> Any:  # noqa: ANN401
        """What a scan found in `block`, as a build kept it under the same key, `kind` and `names`; None: scan the
        block, then `put` what was found (always None with `check`: every block is scanned, `put` compares)."""
        if not block.key:
            return None
        self._used.add(block.key)
        kept = self._old.get((block.key, kind))
        if self.check or not (isinstance(kept, tuple) and len(kept) == 2 and kept[0] == names):
            return None
        return kept[1]

    def put(self, block: TextBlock, kind: str, value: Any, names: str = "") -> None:  # noqa: ANN401
        """Keep what a scan found in `block` (with `check`: fail when it differs from what its key kept)."""
        self.scanned += 1
        if not block.key:
            return
        self._used.add(block.key)
        key = (block.key, kind)
        kept = self._old.get(key)
        if self.check and isinstance(kept, tuple) and len(kept) == 2 and kept[0] == names and kept[1] != value:
            raise StaleMemo(f"text block {block.key} ({kind}): its key matched, but its texts scan differently")
        if self._store is not None:
            self._store.set(key, (names, value))

    def save(self) -> None:
        """Keep what this build found anew; forget the blocks it did not use. What was found is then let go when
        most of it was found in this build (once both scans are done: a first 100k build held it to its end, tens
        of megabytes at its high-water mark); a rebuild keeps what it loaded (freeing it took a tenth of a second)."""
        if self._store is None:
            return
        for key in [k for k in self._store.data if not (isinstance(k, tuple) and k[0] in self._used)]:
            self._store.drop(key)
        self._store.save()
        if self.scanned * 2 > len(self._used):
            self._store, self._old = None, {}
