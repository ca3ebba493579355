"""L1 hot memory: MEMORY.md (agent notes) and USER.md (user profile) in hermes-agent's format.

Entries are joined by a line holding only `§` (`"\\n§\\n"`), with no trailing newline; the cap counts the
joined text. Actions are add / replace / remove, where replace and remove name an entry by a short unique
substring (`old_text`), with hermes's errors and wording.

Writes are atomic (temp file + rename) under `<file>.lock`. Before any write the file on disk is checked:
one that no longer round-trips (invalid UTF-8, NUL bytes, CR line endings, a stray `§` line, whitespace
around an entry, an entry over the cap on its own) is copied to `<file>.bak.<UTC time>` and the write is
refused with HandEditedError naming the backup. Two differences are repaired silently because the repair
is lossless: whitespace around the whole file (e.g. a trailing newline an editor added) and exact
duplicate entries (hermes drops them too).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from memwiki.common.textio import atomic_write_text, file_lock, read_text
from memwiki.common.times import mtime_iso
from memwiki.errors import (
    CapacityError,
    DuplicateEntryError,
    EntryMatchError,
    HandEditedError,
    InputFormatError,
    MemwikiError,
)
from memwiki.layers.hot.categories import canonical, category_of, parse_tag
from memwiki.source import CATEGORIES, DELIMITER, HotEntry, HotFile
from memwiki.store.layout import HOT_FILES

PREVIEW_WIDTH = 80
OVERSIZED = "longer than the cap"


def parse_entries(text: str) -> list[str]:
    """Split a hot file's text into entries as hermes does: on `"\\n§\\n"`, stripped, empty ones dropped."""
    if not text.strip():
        return []
    return [e.strip() for e in text.split(DELIMITER) if e.strip()]


def usage_text(chars: int, cap: int) -> str:
    """hermes's usage string, e.g. `96% — 2,133/2,200 chars`."""
    pct = min(100, int(chars / cap * 100)) if cap > 0 else 0
    return f"{pct}% — {chars:,}/{cap:,} chars"


def join_entries(entries: Sequence[str]) -> str:
    """The file text for these entries: joined by `"\\n§\\n"`, no trailing newline."""
    return DELIMITER.join(entries)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _stray_separator(entry: str) -> bool:
    return any(line.strip() == "§" for line in entry.split("\n"))


def drift_reason(path: Path, raw: bytes, cap: int) -> str | None:
    """Why the bytes of a hot file would not round-trip through parse → join, or None if they would
    (up to the lossless repairs: whitespace around the whole file, exact duplicate entries)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        try:
            read_text(path)
        except InputFormatError as exc:
            return str(exc).removeprefix(f"{path}: ")
        return "invalid UTF-8"
    for char, what in (("\x00", "a NUL byte"), ("\r", "a carriage return (CRLF line endings?)")):
        if char in text:
            return f"{what} at line {_line_of(text, text.index(char))}"
    entries = parse_entries(text)
    body = text.strip()
    canonical_text = join_entries(entries)
    if canonical_text != body:
        diff = next((i for i, (a, b) in enumerate(zip(body, canonical_text, strict=False)) if a != b), None)
        offset = len(text) - len(text.lstrip()) + (diff if diff is not None else min(len(body), len(canonical_text)))
        line = _line_of(text, offset)
        return f"entries not separated by a line holding only '§' (stray separator or blank entry) near line {line}"
    for i, entry in enumerate(entries, 1):
        if _stray_separator(entry):
            return f"entry {i} holds a stray '§' line"
        if len(entry) > cap:
            return f"entry {i} is {len(entry):,} chars, {OVERSIZED} of {cap:,} on its own (was the cap lowered?)"
    return None


def _dedupe(entries: list[str]) -> list[str]:
    return list(dict.fromkeys(entries))


def _previews(entries: Sequence[str]) -> list[str]:
    return [e[:PREVIEW_WIDTH] + ("..." if len(e) > PREVIEW_WIDTH else "") for e in entries]


class HotMemoryFile:
    """One hot file (MEMORY.md or USER.md) with hermes's actions, atomic locked writes and drift detection.

    `add`, `replace`, `remove` and `write_entries` take the lock themselves. Callers that need several steps
    under one lock (overflow) use `locked()`, then `load_checked()` and `commit()`.
    """

    def __init__(self, path: Path, target: str, cap: int, threshold: float = 0.70) -> None:
        if target not in HOT_FILES:
            raise MemwikiError(f"invalid target {target!r}: use 'memory' or 'user'")
        self.path = Path(path)
        self.target = target
        self.cap = cap
        self.threshold = threshold
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    # -- reading -------------------------------------------------------------------------------------

    def entries(self) -> list[str]:
        """The entries on disk, parsed leniently (as hermes reads); invalid UTF-8 is an InputFormatError."""
        if not self.path.exists():
            return []
        return _dedupe(parse_entries(read_text(self.path)))

    def view(self) -> HotFile:
        """A read-only snapshot of the file with each entry's category."""
        entries = tuple(HotEntry(i, text, *category_of(text)) for i, text in enumerate(self.entries()))
        return HotFile(self.target, entries, self.cap, self.threshold, str(self.path), mtime_iso(self.path))

    def chars(self, entries: Sequence[str]) -> int:
        return len(join_entries(entries))

    # -- locked primitives ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold `<file>.lock` (not re-entrant: do not nest with the actions below)."""
        with file_lock(self.lock_path):
            yield

    def load_checked(self) -> list[str]:
        """Entries for a read-modify-write (hold `locked()`): a file that would not round-trip is backed up
        and refused with HandEditedError."""
        if not self.path.exists():
            return []
        raw = self.path.read_bytes()
        reason = drift_reason(self.path, raw, self.cap)
        if reason:
            backup = self._backup(raw)
            if OVERSIZED in reason:
                raise HandEditedError(
                    f"Refusing to write {self.path}: {reason}. A snapshot was saved to {backup}. "
                    f"Shorten or remove that entry (or raise the cap in store.json), then retry."
                )
            raise HandEditedError(
                f"Refusing to write {self.path}: {reason}. The file on disk would not round-trip through the "
                f"memory tool (a manual edit, a shell append or another tool?). A snapshot was saved to {backup}. "
                f"Rewrite the file as a clean '§'-separated list of entries, or move the extra content out, "
                f"then retry."
            )
        return _dedupe(parse_entries(raw.decode("utf-8")))

    def commit(self, entries: Sequence[str]) -> None:
        """Write these entries atomically (hold `locked()`). Each must be a valid entry; the total is not
        checked here (removing entries from an over-full file must stay possible)."""
        for entry in entries:
            self._check_entry(entry)
        if len(set(entries)) != len(entries):
            raise DuplicateEntryError(f"{self.path}: the same entry twice; nothing written")
        atomic_write_text(self.path, join_entries(entries))

    def _backup(self, raw: bytes) -> Path:
        for existing in sorted(self.path.parent.glob(self.path.name + ".bak.*")):
            if existing.read_bytes() == raw:
                return existing
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        backup = self.path.with_name(f"{self.path.name}.bak.{stamp}")
        with open(backup, "xb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        return backup

    # -- entry rules ---------------------------------------------------------------------------------

    def _check_entry(self, entry: str) -> None:
        if not entry or entry != entry.strip():
            raise MemwikiError(f"{self.path}: an entry is empty or has surrounding whitespace")
        if "\x00" in entry:
            raise MemwikiError(f"{self.path}: an entry holds a NUL byte")
        if _stray_separator(entry):
            raise MemwikiError(f"{self.path}: an entry may not hold a line with only '§' (the entry separator)")
        if len(entry) > self.cap:
            raise CapacityError(
                f"{self.path}: entry is {len(entry):,} chars, over the {self.cap:,}-char limit of the whole file "
                f"on its own. Shorten it or store it in semantic memory instead."
            )

    def prepare_entry(self, text: str, category: str | None = None, what: str = "Content") -> str:
        """Normalise an incoming entry: CRLF → LF, stripped; with `category`, a `[category] ` tag prefix.

        Empty text (or text that is only a tag) and unknown categories are errors; so is an entry that is
        over the cap on its own (CapacityError).
        """
        text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
        tag, body = parse_tag(text)
        if not body:
            extra = " (it is only a tag)" if tag else ""
            raise MemwikiError(f"{what} cannot be empty{extra}.")
        if category is not None:
            cat = canonical(category)
            if cat is None:
                raise MemwikiError(f"unknown category {category!r}: use one of {', '.join(CATEGORIES)}")
            text = f"[{cat}] {body}"
        self._check_entry(text)
        return text

    def _match(self, entries: Sequence[str], old_text: str, action: str) -> int:
        old_text = old_text.strip()
        if not old_text:
            raise EntryMatchError("old_text cannot be empty.")
        matches = [i for i, e in enumerate(entries) if old_text in e]
        if not matches:
            raise EntryMatchError(
                f"No entry matched '{old_text}' in {self.path.name}. Check the current entries and retry with "
                f"the exact text of the entry you want to {action}."
            )
        distinct = _dedupe([entries[i] for i in matches])
        if len(distinct) > 1:
            shown = "; ".join(repr(p) for p in _previews(distinct))
            raise EntryMatchError(f"Multiple entries matched '{old_text}'. Be more specific. Matches: {shown}")
        return matches[0]

    def over_limit_message(self, entries: Sequence[str], entry: str) -> str:
        """hermes's error for an add that would pass the cap."""
        current = self.chars(entries)
        return (
            f"{self.path.name}: Memory at {current:,}/{self.cap:,} chars. Adding this entry ({len(entry):,} chars) "
            f"would exceed the limit. Consolidate now: use 'replace' to merge overlapping entries into shorter "
            f"ones or 'remove' stale or less important entries, then retry this add."
        )

    # -- hermes actions ------------------------------------------------------------------------------

    def add(self, text: str, category: str | None = None) -> str:
        """Append an entry (hermes `add`); returns the stored entry text."""
        entry = self.prepare_entry(text, category)
        with self.locked():
            entries = self.load_checked()
            if entry in entries:
                raise DuplicateEntryError("Entry already exists (no duplicate added).")
            if self.chars([*entries, entry]) > self.cap:
                raise CapacityError(self.over_limit_message(entries, entry))
            self.commit([*entries, entry])
        return entry

    def replace(self, old_text: str, new_text: str) -> str:
        """Replace the one entry containing `old_text` (hermes `replace`); returns the new entry text.

        If the old entry had an explicit tag and the new text has none, the tag is kept.
        """
        new_entry = self.prepare_entry(new_text, what="new_content")
        with self.locked():
            entries = self.load_checked()
            idx = self._match(entries, old_text, "replace")
            old_tag, _ = parse_tag(entries[idx])
            if old_tag and parse_tag(new_entry)[0] is None:
                new_entry = self.prepare_entry(new_entry, old_tag, what="new_content")
            if new_entry in entries and entries.index(new_entry) != idx:
                raise DuplicateEntryError("Entry already exists (no duplicate added).")
            updated = [*entries[:idx], new_entry, *entries[idx + 1 :]]
            total = self.chars(updated)
            if total > self.cap:
                raise CapacityError(
                    f"{self.path.name}: Replacement would put memory at {total:,}/{self.cap:,} chars. Shorten the "
                    f"new content, or 'remove' other stale or less important entries to make room, then retry."
                )
            self.commit(updated)
        return new_entry

    def remove(self, old_text: str) -> str:
        """Remove the one entry containing `old_text` (hermes `remove`); returns the removed entry."""
        with self.locked():
            entries = self.load_checked()
            idx = self._match(entries, old_text, "remove")
            removed = entries[idx]
            self.commit([*entries[:idx], *entries[idx + 1 :]])
        return removed

    def write_entries(self, entries: Sequence[str]) -> None:
        """Replace the whole file with these entries (stripped, checked, capped, atomic, locked)."""
        entries = [e.strip() for e in entries]
        total = self.chars(entries)
        if total > self.cap:
            raise CapacityError(f"{self.path}: {total:,} chars over the {self.cap:,}-char limit; nothing written")
        with self.locked():
            self.load_checked()
            self.commit(entries)
