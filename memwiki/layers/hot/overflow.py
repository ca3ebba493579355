"""Overflow: non-core hot-memory entries sink into L2 when a hot file passes its threshold.

Order of a sink, all under the hot file's lock, so that a crash at any point loses nothing:

1. a deterministic L2 id per entry (`hot-<target>-<sha1 of the entry>[:16]`);
2. upsert the memories into L2;
3. read them back and compare the text (a mismatch is an error; the hot file is left untouched);
4. append the sink records to `sinks.jsonl` (idempotent by memory id);
5. only then rewrite the hot file atomically without them.

A crash before 5 leaves each entry in the hot file (and perhaps in L2 and the log as well); re-running the
sink finds the same entries, upserts the same ids and skips log records already there: no duplicates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Protocol, runtime_checkable

from memwiki.common.textio import file_lock, read_text
from memwiki.common.times import utc_now
from memwiki.errors import CapacityError, DuplicateEntryError, MemwikiError
from memwiki.layers.hot.categories import category_of, is_core, parse_tag
from memwiki.layers.hot.files import HotMemoryFile, join_entries
from memwiki.source import Memory, SinkRecord
from memwiki.store.layout import LAYER_PATHS

log = logging.getLogger(__name__)

SINK_LOG = LAYER_PATHS["sinks"]


@runtime_checkable
class L2Writer(Protocol):
    """What the sink needs from semantic memory. The writer embeds the text itself."""

    def upsert(self, memories: list[Memory]) -> None: ...

    def get(self, ids: list[str]) -> list[Memory]: ...


def memory_id(target: str, entry: str) -> str:
    """The L2 id an entry of a hot file becomes: the same entry always gets the same id."""
    return f"hot-{target}-{hashlib.sha1(entry.encode('utf-8')).hexdigest()[:16]}"


def plan_sink(entries: Sequence[str], cap: int, threshold: float, keep: Collection[int] = ()) -> list[int]:
    """Indices of the non-core entries to sink, oldest first (file order), until the joined text is at or
    below `threshold * cap`. Entries in `keep` never sink. May stop short when only core entries are left."""
    limit = threshold * cap
    remaining = dict(enumerate(entries))
    plan: list[int] = []
    for i, entry in enumerate(entries):
        if len(join_entries(list(remaining.values()))) <= limit:
            break
        if i in keep or is_core(category_of(entry)[0]):
            continue
        plan.append(i)
        del remaining[i]
    return plan


class SinkLog:
    """Append-only JSON lines, one per sunk entry (`sinks.jsonl` in the store root), idempotent by memory id.

    A torn last line (a crash mid-append) is ignored, and cut off by the next append: the hot file is only
    rewritten after the append succeeded, so that sink is re-run and logged again. Any other line that is not
    a record is skipped with a warning naming the file and line (the entries themselves are in L2).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    def records(self) -> list[SinkRecord]:
        if not self.path.exists():
            return []
        text = read_text(self.path)
        lines = text.split("\n")
        records: list[SinkRecord] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                records.append(SinkRecord(**{k: raw[k] for k in SinkRecord.__dataclass_fields__}))
            except (ValueError, KeyError, TypeError) as exc:
                if number == len(lines):  # last line without a newline: an append cut short by a crash
                    continue
                # the log only says where sunk entries went (they are in L2): a bad line is skipped, not fatal
                log.warning("%s:%d: not a sink record, skipped (%s)", self.path, number, exc)
        return records

    def _mend_tail(self) -> None:
        """Before appending (lock held): end a complete last record with a newline, or cut a torn one."""
        data = self.path.read_bytes() if self.path.exists() else b""
        if not data or data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        try:
            SinkRecord(**{k: json.loads(data[cut:])[k] for k in SinkRecord.__dataclass_fields__})
        except (ValueError, KeyError, TypeError):
            os.truncate(self.path, cut)  # an append cut short by a crash; its sink will be logged again
            return
        with open(self.path, "ab") as fh:
            fh.write(b"\n")

    def append(self, records: Sequence[SinkRecord]) -> list[SinkRecord]:
        """Append the records whose memory id is not logged yet; returns those written."""
        with file_lock(self.lock_path):
            known = {r.memory_id for r in self.records()}
            new = [r for r in records if r.memory_id not in known]
            if not new:
                return []
            self._mend_tail()
            with open(self.path, "a", encoding="utf-8") as fh:
                for record in new:
                    fh.write(json.dumps(asdict(record) | {"to": "L2"}, ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            return new


def _reason(hot: HotMemoryFile, entries: Sequence[str]) -> str:
    chars = len(join_entries(entries))
    pct = int(chars / hot.cap * 100) if hot.cap else 0
    return f"{hot.path.name} at {pct}% ({chars:,}/{hot.cap:,}) > {hot.threshold:.0%}"


def _move(
    hot: HotMemoryFile, l2: L2Writer, log: SinkLog, entries: list[str], plan: list[int], now: str | None
) -> list[SinkRecord]:
    """Steps 1-5 for `plan` over `entries` (the hot file's lock is held); writes the file without them."""
    remaining = [e for i, e in enumerate(entries) if i not in set(plan)]
    if not plan:
        hot.commit(remaining)
        return []
    when = now or utc_now()
    reason = _reason(hot, entries)
    memories: list[Memory] = []
    records: list[SinkRecord] = []
    for i in plan:
        entry = entries[i]
        category = category_of(entry)[0]
        mid = memory_id(hot.target, entry)
        text = parse_tag(entry)[1]
        memories.append(
            Memory(mid, text, category, source="L1", created=when, sunk_at=when, meta={"target": hot.target})
        )
        records.append(SinkRecord(mid, hot.target, entry, category, when, reason))
    l2.upsert(memories)
    found = {m.id: m for m in l2.get([m.id for m in memories])}
    for memory in memories:
        back = found.get(memory.id)
        if back is None or back.text != memory.text:
            what = "missing" if back is None else "different text"
            raise MemwikiError(f"sink aborted: L2 read-back of {memory.id} gave {what}; {hot.path.name} left untouched")
    log.append(records)
    hot.commit(remaining)
    return records


Guard = Callable[
    [Sequence[str]], list[bool]
]  # second opinion: True keeps an entry hot (memwiki.layers.hot.core_by_meaning)


def _vetoed(entries: Sequence[str], plan: list[int], guard: Guard | None) -> set[int]:
    """The planned, untagged entries that the guard says must stay hot."""
    asked = [i for i in plan if not category_of(entries[i])[1]]  # an explicit tag is the writer's word: no veto
    if guard is None or not asked:
        return set()
    return {i for i, keep in zip(asked, guard([entries[i] for i in asked]), strict=True) if keep}


def _plan(entries: Sequence[str], cap: int, threshold: float, keep: set[int], guard: Guard | None) -> list[int]:
    """plan_sink, re-planned without the entries the guard keeps (they may be replaced by later ones)."""
    while True:
        plan = plan_sink(entries, cap, threshold, keep=keep)
        vetoed = _vetoed(entries, plan, guard)
        if not vetoed:
            return plan
        keep = keep | vetoed


def sink(
    hot: HotMemoryFile, l2: L2Writer, log: SinkLog, now: str | None = None, guard: Guard | None = None
) -> list[SinkRecord]:
    """Sink non-core entries of `hot` into L2 until it is at or below its threshold; returns what sank."""
    with hot.locked():
        entries = hot.load_checked()
        plan = _plan(entries, hot.cap, hot.threshold, set(), guard)
        if not plan:
            return []
        return _move(hot, l2, log, entries, plan, now)


def remember(
    hot: HotMemoryFile,
    l2: L2Writer,
    log: SinkLog,
    text: str,
    category: str | None = None,
    now: str | None = None,
    guard: Guard | None = None,
) -> list[SinkRecord]:
    """Add an entry to `hot`, sinking older non-core entries when the file passes its threshold.

    The new entry itself never sinks. If it cannot fit under the cap even after sinking every non-core
    entry, hermes's over-the-limit CapacityError is raised and nothing sinks.
    """
    entry = hot.prepare_entry(text, category)
    with hot.locked():
        entries = hot.load_checked()
        if entry in entries:
            raise DuplicateEntryError("Entry already exists (no duplicate added).")
        candidate = [*entries, entry]

        def fits(plan: list[int]) -> bool:
            return len(join_entries([e for i, e in enumerate(candidate) if i not in set(plan)])) <= hot.cap

        plan = _plan(candidate, hot.cap, hot.threshold, {len(candidate) - 1}, guard)
        if not fits(plan):  # the guard's second opinion is advice: it never makes an add fail
            plan = plan_sink(candidate, hot.cap, hot.threshold, keep={len(candidate) - 1})
        if not fits(plan):
            raise CapacityError(hot.over_limit_message(entries, entry))
        return _move(hot, l2, log, candidate, plan, now)
