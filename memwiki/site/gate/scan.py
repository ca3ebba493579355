"""The last check of a public build: every file in `site/` read again, by another route than the gate's.

The gate redacts records before anything is made from them; this scan is the net under it. A leak through a
path nobody thought of (a builder that reads around the gate, an asset made from raw data, an escape that
hides a secret from the gate's view, a slug or a lower-cased id made from a secret) is found in the output and
reported by file, line and kind, never by value, so that `mkdocs build --strict` fails. It is not the gate run
twice: besides the detectors' classes it looks for every secret the gate redacted in this build, in the forms
an output derives from text (as written, lower-cased, slugged, with `_` or `-` for spaces).

Pages and style sheets are also read for what a browser would fetch from another host (`memwiki.site.gate.offline`):
a public site loads nothing from outside itself.

Files that hold only numbers (a JSON array of numbers, or one base64 literal: the search's vectors; the binary
slices of the same vectors, which the build names) are not read: a vector's bytes are no secret, and base64 is
what a token looks like. memwiki's own labels (`[redacted: kind · tag]`, JSON-escaped or not) are never taken
for a secret.

What is read: every file, as UTF-8 (latin-1 where it is not), HTML entities and JSON `\\uXXXX` escapes decoded
(a script that begins by setting a global to JSON, the search's data, with every string decoded where it stands),
`.gz` files decompressed; each distinct line once per build (a theme's header and navigation repeat on every
page). Files byte-identical to one of the build's static inputs at the same path, or a tail of it (the theme's
files, the plugin's own assets, the browser model exported from its package), are not read: no memory reaches
them. A file whose size, time and inode are those of a file found clean in the last build is not read again.
A line the same detectors found clean in the last build is not read by them again (a rebuild rewrites MkDocs'
search index and a few lists whole for one changed memory); the secrets this build redacted are looked for in
every line.
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
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

from memwiki.common.textio import walk_files
from memwiki.site.gate.detect import Detectors, Span
from memwiki.site.gate.offline import outside_loads
from memwiki.site.speed import cache_file

log = logging.getLogger("mkdocs.plugins.memwiki")
REPORTED = 20  # findings named one by one in the build's log; the rest are counted
MAX_GZ = 256 << 20  # a .gz file is read up to this many bytes decompressed
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_ESCAPED_QUOTE = re.compile(r'\\+(["/\'])')
_NUMBERS_ONLY = re.compile(r"[\s\d.,:;\[\]{}eE+-]*")
_BASE64_LITERAL = re.compile(r'"[A-Za-z0-9+/]{256,}={0,2}"')


_KNOWN_OPTIONS = re2.Options()
_KNOWN_OPTIONS.max_mem = 1 << 30  # thousands of secrets in one alternation: RE2's DFA needs room
_KNOWN_OPTIONS.log_errors = False


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
    if "\\" in text:
        text = _ESCAPED_QUOTE.sub(r"\1", text)
    return text


_LABEL = re.compile(r"(?i)\[?redacted[\s_:-]+[^\]\[·\n]{1,40}?[\s_]*(?:·|-+)[\s_]*[0-9a-f]{6}\]?")


def _without_labels(text: str) -> str:
    """memwiki's own labels (`[redacted: telegram token · 3f2a9c]`, slugged or `_`-joined) as `[xxx…]` of the same
    length: a label's kind is no credential word, its tag no value, and what follows it no value either."""
    if "edacted" not in text:
        return text
    return _LABEL.sub(lambda m: "[" + "x" * max(len(m.group()) - 2, 0) + "]"[: len(m.group()) - 1], text)


def numbers_only(text: str) -> bool:
    """A file of numbers: a JSON array of numbers, or a single base64 literal (binary data such as vectors)."""
    if _NUMBERS_ONLY.fullmatch(text):
        return True
    literal = _BASE64_LITERAL.search(text)  # (one 512-d vector is 684 characters of it: a tiny store's whole file)
    return literal is not None and len(text) - (literal.end() - literal.start()) < 512


def derived_forms(secret: str) -> set[str]:
    """The forms an output may make of a secret: as written, lower-cased, slugged, words joined by `_` or `-`."""
    from memwiki.site.model.concept_index import slugify

    low = secret.casefold()
    forms = {secret, low, slugify(secret), re.sub(r"\s+", "_", low), re.sub(r"\s+", "-", low)}
    return {f for f in forms if len(f) >= 8}


SEARCH_INDEX = "search/search_index.json"  # MkDocs' search index (with Material, of hand-written pages only)


def _search_index_parts(text: str, generated: Collection[str]) -> tuple[str, str]:
    """MkDocs' search index split in two: the strings of memwiki's generated pages (the search plugins of the
    `mkdocs` and `readthedocs` themes index every page), and all the others."""
    try:
        index = json.loads(text)
        docs = index["docs"]
    except (ValueError, KeyError, TypeError):
        return "", _json_strings(text)
    mine, theirs = [], []
    for doc in docs if isinstance(docs, list) else []:
        location = str(doc.get("location", "")) if isinstance(doc, dict) else ""
        page = location.split("#", 1)[0]
        ours = page in generated or (page.endswith("/") and f"{page}index.html" in generated)
        (mine if ours else theirs).append(doc)
    theirs.append({k: v for k, v in index.items() if k != "docs"} if isinstance(index, dict) else {})
    return _strings(mine), _strings(theirs)


_SCRIPT_DATA = re.compile(r"\s*window\.[A-Za-z_$][\w$]*\s*=\s*")
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _script_line(line: str) -> str:
    """A line of a script that begins by setting a global to JSON (the site search's data, a row a line) with each
    string as the browser reads it, between its quotes, where it stands: escapes decoded (a string's `\\n` a line break:
    no second reading of the text in the view of JSON written as text, memwiki.site.gate.detect.detectors._views). Then
    read as every line is (`_decoded`: entities and `\\uXXXX` too, as a page showing the string would)."""
    return _decoded(_JSON_STRING.sub(_decoded_string, line)) if "\\" in line else line


def _decoded_string(m: re.Match[str]) -> str:
    """A JSON string literal as its value in quotes; as it is when it is no valid literal."""
    try:
        return f'"{json.loads(m.group())}"'
    except ValueError:
        return m.group()


def _json_strings(text: str) -> str:
    """A JSON file's keys and strings, one a line, decoded by the JSON parser (MkDocs' search index escapes every
    non-ASCII character); the text as it is when it does not parse."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return _strings(value)


def _strings(value: object) -> str:
    """The keys and strings of a parsed JSON value, one a line."""
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


_LINE_KEY = 12  # bytes of a line's hash kept for the next build


def _line_key(tag: bytes, line: str) -> bytes:
    """A line's key in the clean-lines memory: the detectors that read it (`tag`) and its text."""
    return hashlib.blake2b(tag + line.encode("utf-8", "surrogatepass"), digest_size=_LINE_KEY).digest()


def _digest(path: Path) -> str:
    h = hashlib.sha1()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _file_names(folders: Iterable[Path]) -> set[str]:
    """The names of the files under these folders: a site file named otherwise is no copy of one."""
    return {name for folder in folders for _, _, names in os.walk(folder) for name in names}


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


PARALLEL_FILES = 2000  # a site with fewer files to read is scanned in this process alone
Apart = Callable[[str, str, Callable[[], Any]], Any]  # BuildSpeed.apart: work in a forked process, a Pending back


@dataclass
class _Part:
    """What scanning some of a site's files gave: findings, clean files and lines, and what was read."""

    leaks: list[Leak]
    clean: list[tuple[str, int, int, int]]
    clean_lines: set[bytes]
    counts: list[int]  # files and lines read; static copies and number files skipped

    def as_data(self) -> tuple:
        """As plain data (what comes back from a forked process through a cache file)."""
        return [leak.row for leak in self.leaks], self.clean, b"".join(self.clean_lines), self.counts

    @classmethod
    def from_data(cls, data: tuple) -> _Part:
        leaks, clean, lines, counts = data
        keys = {lines[i : i + _LINE_KEY] for i in range(0, len(lines), _LINE_KEY)}
        return cls([Leak(*row) for row in leaks], [tuple(c) for c in clean], keys, list(counts))


class SiteScan:
    """Scans a built site with `detectors`; `static`: (size, SHA-1) of files not to read; `cache`: where the
    last build's clean files are remembered (None: read everything)."""

    # 3: lines found clean are remembered too; 5: no memo of the search index's entries; 6: search data decoded
    VERSION = "6"

    def __init__(
        self,
        detectors: Detectors,
        static_folders: Iterable[Path],
        cache: Path | None = None,
        known: Iterable[str] = (),
        generated: Collection[str] = (),
        net: Detectors | None = None,
        numbers: Collection[str] = (),
    ) -> None:
        self.detectors = detectors
        # files memwiki wrote from gated records get the independent net only (token shapes, key blocks, provider
        # keys, copies of what the gate redacted): the gate's own classes ran on their text already
        self.generated = frozenset(generated)
        self.net = net
        self.numbers = frozenset(numbers)  # generated files of numbers only (binary vectors): not read
        self.static_folders = list(static_folders)
        self.cache = cache
        self.read_files = 0
        self.read_lines = 0  # lines the detectors ran on (neither seen in this build nor found clean in the last)
        self.skipped_static = 0
        self.skipped_numbers = 0
        forms = sorted({f.lower() for secret in known for f in derived_forms(secret)})
        self._known = re2.compile("|".join(re.escape(f) for f in forms), _KNOWN_OPTIONS) if forms else None
        # lines found clean by the same detectors in the last build (a 10k site's rebuild rewrites the search data
        # and a few lists for one changed memory: their other lines need no second read)
        self._clean_before: set[bytes] = set()
        self._clean_now: set[bytes] = set()

    def check(self, site_dir: Path, apart: Apart | None = None) -> list[Leak]:
        """`scan`, with each finding logged as a warning (so `mkdocs build --strict` fails), value never shown."""
        t0 = time.perf_counter()
        leaks = self.scan(site_dir, apart)
        for leak in leaks[:REPORTED]:
            log.warning("memwiki privacy: a %s is in site/%s, line %d (the value is not shown)", *leak.row)
        if len(leaks) > REPORTED:
            log.warning("memwiki privacy: %d more findings in the site", len(leaks) - REPORTED)
        seconds = time.perf_counter() - t0
        log.info(
            "memwiki: site scanned for secrets: %d files read (%d new lines), %d findings in %.1f s",
            self.read_files,
            self.read_lines,
            len(leaks),
            seconds,
        )
        return leaks

    def scan(self, site_dir: Path, apart: Apart | None = None) -> list[Leak]:
        """The findings in `site_dir`; `apart`: hands work to a forked process (BuildSpeed.apart), which then reads
        every other file of a large site."""
        site_dir = Path(site_dir)
        net = self.net.describe() if self.net is not None else []
        key = cache_file.version("sitescan", self.VERSION, repr((self.detectors.describe(), net)))
        clean_before: set[tuple[str, int, int, int]] = set()
        if self.cache is not None:
            saved = cache_file.load(self.cache, key)
            if isinstance(saved, tuple) and len(saved) == 2 and isinstance(saved[0], list):
                clean_before = {tuple(x) for x in saved[0] if isinstance(x, (list, tuple)) and len(x) == 4}
                lines = saved[1] if isinstance(saved[1], bytes) else b""
                self._clean_before = {lines[i : i + _LINE_KEY] for i in range(0, len(lines), _LINE_KEY)}
        clean_now: list[tuple[str, int, int, int]] = []
        todo: list[tuple[Path, tuple[str, int, int, int]]] = []
        for rel, st in sorted(walk_files(str(site_dir))):
            stamp = (rel, st.st_size, st.st_mtime_ns, st.st_ino)
            if stamp in clean_before:
                clean_now.append(stamp)
            else:
                todo.append((site_dir / rel, stamp))
        static_names = _file_names(self.static_folders) if todo else set()
        if apart is not None and len(todo) >= PARALLEL_FILES:  # every other file read in a forked process
            other = apart("sitescan-part", key, lambda: self._part(todo[1::2], static_names).as_data())
            leaks, clean = self._scan_files(todo[0::2], static_names)
            part = _Part.from_data(other.result())
            self._take(part)
            leaks, clean = leaks + part.leaks, clean + part.clean
        else:
            leaks, clean = self._scan_files(todo, static_names)
        clean_now += clean
        if self.cache is not None:
            cache_file.dump(self.cache, key, (clean_now, b"".join(sorted(self._clean_now))))
        return leaks

    def _scan_files(
        self, todo: list[tuple[Path, tuple[str, int, int, int]]], static_names: set[str]
    ) -> tuple[list[Leak], list[tuple[str, int, int, int]]]:
        """Scan these files (counted on this scan): what was found, and which files were clean."""
        leaks: list[Leak] = []
        clean: list[tuple[str, int, int, int]] = []
        seen_lines: set[str] = set()
        for path, stamp in todo:
            if stamp[0] in self.numbers:
                self.skipped_numbers += 1
                continue
            if path.name in static_names and is_static_copy(path, stamp[0], self.static_folders):
                self.skipped_static += 1
                clean.append(stamp)
                continue
            found = self._scan_file(path, stamp[0], seen_lines)
            leaks += found
            if not found:
                clean.append(stamp)
        return leaks, clean

    def _part(self, todo: list[tuple[Path, tuple[str, int, int, int]]], static_names: set[str]) -> _Part:
        """`_scan_files` in a forked process: its findings and what it read, to send back (`_take`)."""
        read = self._counts()
        clean_lines = set(self._clean_now)
        leaks, clean = self._scan_files(todo, static_names)
        counts = [b - a for a, b in zip(read, self._counts(), strict=True)]
        return _Part(leaks, clean, self._clean_now - clean_lines, counts)

    def _counts(self) -> tuple[int, int, int, int]:
        return self.read_files, self.read_lines, self.skipped_static, self.skipped_numbers

    def _take(self, part: _Part) -> None:
        """Count what a forked `part` read and remember the lines it found clean."""
        self.read_files += part.counts[0]
        self.read_lines += part.counts[1]
        self.skipped_static += part.counts[2]
        self.skipped_numbers += part.counts[3]
        self._clean_now |= part.clean_lines

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
        outside = [
            Leak("load from another host", rel, text.count("\n", 0, at) + 1)
            for at in (outside_loads(text) if path.suffix in (".html", ".htm", ".css", ".svg") else ())
        ]
        if numbers_only(text):
            self.skipped_numbers += 1
            return outside
        detectors = self.net if self.net is not None and rel in self.generated else self.detectors
        if path.suffix == ".json":
            if self.net is not None and rel.endswith(SEARCH_INDEX):
                mine, theirs = _search_index_parts(text, self.generated)
                return [
                    *self._scan_text(mine, rel, seen_lines, self.net),
                    *self._scan_text(theirs, rel, seen_lines, self.detectors),
                ]
            text = _json_strings(text)
        elif path.suffix == ".js" and _SCRIPT_DATA.match(text):
            return outside + self._scan_text(text, rel, seen_lines, detectors, _script_line)
        return outside + self._scan_text(text, rel, seen_lines, detectors)

    def _scan_text(
        self, text: str, rel: str, seen_lines: set[str], detectors: Detectors, decode: Callable[[str], str] = _decoded
    ) -> list[Leak]:
        """What `detectors` find in `text`'s lines not read before, each read as `decode` gives it."""
        lines = text.splitlines()
        # each distinct line once per build, in the file's order (a secret may follow its keyword on the next line)
        fresh = [line for line in dict.fromkeys(lines) if line and line not in seen_lines]
        seen_lines.update(fresh)
        tag = b"n" if detectors is self.net else b"f"
        keys = {line: _line_key(tag, line) for line in fresh}
        # the detectors read the lines they did not find clean last build; the secrets this build redacted are
        # looked for in every line (one RE2 pass: a line clean last build may hold a secret redacted only now)
        todo = [line for line in fresh if keys[line] not in self._clean_before]
        self._clean_now.update(keys[line] for line in fresh if keys[line] in self._clean_before)
        self.read_lines += len(todo)
        read = {line: _without_labels(decode(line)) for line in (fresh if self._known is not None else todo)}
        leaks = self._find(todo, lines, rel, detectors, read)
        if self._known is not None:
            leaks += self._find(fresh, lines, rel, None, read)
        found = {lines[leak.line - 1] for leak in leaks}
        self._clean_now.update(key for line, key in keys.items() if line not in found)
        return leaks

    def _find(
        self, fresh: list[str], lines: list[str], rel: str, detectors: Detectors | None, read: dict[str, str]
    ) -> list[Leak]:
        """What `detectors` (None: the secrets this build redacted) find in `fresh`, by the line of `lines`; `read`:
        each line as the detectors read it (decoded once for both passes)."""
        if not fresh:
            return []
        decoded = [read[line] for line in fresh]
        joined = "\n".join(decoded)
        if detectors is not None:
            spans = detectors.find(joined)
        else:
            assert self._known is not None
            spans = [Span(*m.span(), "redacted secret", 0) for m in self._known.finditer(joined.lower())]
        if not spans:
            return []
        starts, at = [], 0  # where each fresh line starts in `joined`, to name the line of a finding
        for line in decoded:
            starts.append(at)
            at += len(line) + 1
        wanted = set(fresh)
        numbers = {line: n for n, line in enumerate(lines, 1) if line in wanted}  # (only for a file with a finding)
        line_of = [numbers[fresh[max(0, min(bisect.bisect_right(starts, s.start) - 1, len(fresh) - 1))]] for s in spans]
        return [Leak(s.kind, rel, n) for s, n in zip(spans, line_of, strict=True)]
