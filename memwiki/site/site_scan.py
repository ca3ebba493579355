"""The last check of a public build: every file in `site/` read by the privacy gate's own rules.

The gate redacts records before anything is made from them; this scan is the net under it. A leak through a
path nobody thought of (a builder that reads around the gate, an asset made from raw data, an escape that
hides a secret from the gate's view) is found in the output and reported by file, line and kind, never by
value, so that `mkdocs build --strict` fails.

What is read: every file, as UTF-8 (latin-1 where it is not), HTML entities and JSON `\\uXXXX` escapes decoded,
`.gz` files decompressed; each distinct line once per build (a theme's header and navigation repeat on every
page). Files byte-identical to one of the build's static inputs at the same path, or a tail of it (the theme's
files, the plugin's own assets, the browser model exported from its package), are not read: no memory reaches
them. A file whose size, time and inode are those of a file found clean in the last build is not read again.
"""

from __future__ import annotations

import bisect
import gzip
import hashlib
import html
import json
import logging
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memwiki.site.detectors import Detectors
from memwiki.site.speed import cache_file

log = logging.getLogger("mkdocs.plugins.memwiki")
REPORTED = 20  # findings named one by one in the build's log; the rest are counted
MAX_GZ = 256 << 20  # a .gz file is read up to this many bytes decompressed
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


@dataclass(frozen=True)
class Leak:
    kind: str
    path: str  # relative to the site folder
    line: int

    @property
    def row(self) -> tuple[str, str, int]:
        return self.kind, self.path, self.line


def _decoded(text: str) -> str:
    """`text` with HTML entities and JSON escapes turned back into the characters they stand for."""
    if "\\u" in text:
        text = _UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    if "&" in text:
        text = html.unescape(text)
    return text


def _json_strings(text: str) -> str:
    """A JSON file's keys and strings, one a line, decoded by the JSON parser (a search index escapes every
    non-ASCII character); the text as it is when it does not parse."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            out += [k for k in item if isinstance(k, str)]
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return "\n".join(out)


def _digest(path: Path) -> str:
    h = hashlib.sha1()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def is_static_copy(path: Path, rel: str, folders: Iterable[Path]) -> bool:
    """Whether the site file `path` (at `rel` in the site) is byte-identical to the file at the same relative
    path, or at a tail of it, under one of these folders (the build's inputs that hold no memory)."""
    size = None
    parts = rel.split("/")
    for folder in folders:
        for i in range(len(parts)):
            candidate = folder.joinpath(*parts[i:])
            try:
                if size is None:
                    size = path.stat().st_size
                if candidate.stat().st_size == size and _digest(candidate) == _digest(path):
                    return True
            except OSError:
                continue
    return False


class SiteScan:
    """Scans a built site with `detectors`; `static`: (size, SHA-1) of files not to read; `cache`: where the
    last build's clean files are remembered (None: read everything)."""

    VERSION = "1"

    def __init__(self, detectors: Detectors, static_folders: Iterable[Path], cache: Path | None = None) -> None:
        self.detectors = detectors
        self.static_folders = list(static_folders)
        self.cache = cache
        self.read_files = 0
        self.skipped_static = 0

    def check(self, site_dir: Path) -> list[Leak]:
        """`scan`, with each finding logged as a warning (so `mkdocs build --strict` fails), value never shown."""
        t0 = time.perf_counter()
        leaks = self.scan(site_dir)
        for leak in leaks[:REPORTED]:
            log.warning("memwiki privacy: a %s is in site/%s, line %d (the value is not shown)", *leak.row)
        if len(leaks) > REPORTED:
            log.warning("memwiki privacy: %d more findings in the site", len(leaks) - REPORTED)
        seconds = time.perf_counter() - t0
        log.info(
            "memwiki: site scanned for secrets: %d files read, %d findings in %.1f s",
            self.read_files,
            len(leaks),
            seconds,
        )
        return leaks

    def scan(self, site_dir: Path) -> list[Leak]:
        site_dir = Path(site_dir)
        rules = sorted(r.pattern for r in self.detectors.rules) + [p.pattern for p in self.detectors.extra]
        key = cache_file.version("sitescan", self.VERSION, repr(rules))
        clean_before: set[tuple[str, int, int, int]] = set()
        if self.cache is not None:
            saved = cache_file.load(self.cache, key)
            if isinstance(saved, list):
                clean_before = {tuple(x) for x in saved if isinstance(x, (list, tuple)) and len(x) == 4}
        clean_now: list[tuple[str, int, int, int]] = []
        todo: list[tuple[Path, tuple[str, int, int, int]]] = []
        for root, dirs, names in os.walk(site_dir):
            dirs.sort()
            for name in sorted(names):
                path = Path(root) / name
                try:
                    st = path.stat()
                except OSError:
                    continue
                stamp = (path.relative_to(site_dir).as_posix(), st.st_size, st.st_mtime_ns, st.st_ino)
                if stamp in clean_before:
                    clean_now.append(stamp)
                else:
                    todo.append((path, stamp))
        seen_lines: set[str] = set()
        leaks: list[Leak] = []
        for path, stamp in todo:
            if is_static_copy(path, stamp[0], self.static_folders):
                self.skipped_static += 1
                clean_now.append(stamp)
                continue
            found = self._scan_file(path, stamp[0], seen_lines)
            leaks += found
            if not found:
                clean_now.append(stamp)
        if self.cache is not None:
            cache_file.dump(self.cache, key, clean_now)
        return leaks

    def _scan_file(self, path: Path, rel: str, seen_lines: set[str]) -> list[Leak]:
        try:
            data = path.read_bytes()
            if path.suffix == ".gz":
                with gzip.open(path) as f:
                    data = f.read(MAX_GZ)
        except (OSError, EOFError, gzip.BadGzipFile):
            return []  # (a damaged .gz is read as it is by whoever serves it: nothing readable)
        self.read_files += 1
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        if path.suffix == ".json":
            text = _json_strings(text)
        lines = text.splitlines()
        # each distinct line once per build, in the file's order (a secret may follow its keyword on the next line)
        fresh = [line for line in dict.fromkeys(lines) if line and line not in seen_lines]
        seen_lines.update(fresh)
        if not fresh:
            return []
        decoded = [_decoded(line) for line in fresh]
        joined = "\n".join(decoded)
        spans = self.detectors.find(joined)
        if not spans:
            return []
        starts, at = [], 0  # where each fresh line starts in `joined`, to name the line of a finding
        for line in decoded:
            starts.append(at)
            at += len(line) + 1
        wanted = set(fresh)
        numbers = {line: n for n, line in enumerate(lines, 1) if line in wanted}  # (only for a file with a finding)
        return [Leak(s.kind, rel, numbers[fresh[bisect.bisect_right(starts, s.start) - 1]]) for s in spans]
