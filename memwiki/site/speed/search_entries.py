"""mkdocs-material search-index entries for a page, made from its content HTML without an HTML parser.

Material's search plugin parses every page with `html.parser` and segments Chinese with jieba; on a large
generated site that was a third of the build. The pages `memwiki.site.speed.theme_frame` renders are made by this plugin
and Python-Markdown, so their HTML is well formed, and a tag tokenizer gives the same sections: this module
follows Material's `Parser` rules (sections start at headings with an id; p, code, pre, li, ol, ul, sub and
sup are kept as bare tags, other tags dropped; script, style, object and `data-search-exclude` elements
skipped; the permalink of a heading left out of its title; text escaped) and `create_entry_for_section`
(location, title, text, tags, boost; Chinese segmented with jieba, each run once per build).
tests/test_fast_pages.py checks that the entries equal Material's own for every page of the demo.
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backrefs import bre
from mkdocs.structure.toc import AnchorLink, TableOfContents

from memwiki.site.speed import cache_file

_TOKEN = re.compile(r"<!--.*?-->|<(/?)([a-zA-Z][a-zA-Z0-9:-]*)((?:\s[^>]*)?)(/?)>|([^<]+|<)", re.S)
_ATTR = re.compile(r"""([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
_HAN = bre.compile(r"(\p{script: Han}+)", bre.UNICODE)  # Material's own pattern
_RAW_TEXT = re.compile(r"(<(script|style)\b[^>]*>).*?(</\2\s*>)", re.S | re.I)  # their text is never indexed
_SEARCH_ATTRS = re.compile(r'\s?data-search-\w+="[^"]+"')
_HEADINGS = frozenset(f"h{n}" for n in range(1, 7))
_KEEP = frozenset("p code pre li ol ul sub sup".split())
_SKIP = frozenset("object script style".split())
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())


@dataclass(eq=False)
class _Element:
    tag: str
    attrs: dict[str, str]


@dataclass(eq=False)
class _Section:
    el: _Element
    depth: float = 0
    title: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    id: str | None = None


def _attrs(raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _ATTR.finditer(raw):
        value = next((v for v in m.groups()[1:] if v is not None), None)
        out.setdefault(m.group(1).lower(), html.unescape(value) if value is not None else "")
    return out


class _Sections:
    """Material's Parser, driven by a tokenizer instead of html.parser. Material compares elements by tag
    name (its Element.__eq__), so skipping and "inside the heading" are by tag name here too."""

    def __init__(self) -> None:
        self.skip: set[str] = set(_SKIP)  # tag names whose elements are skipped
        self.context: list[_Element] = []
        self.section: _Section | None = None
        self.data: list[_Section] = []

    def _inside(self, tag: str) -> bool:
        return any(el.tag == tag for el in self.context)

    def _skipping(self) -> bool:
        return any(el.tag in self.skip for el in self.context)

    def _target(self) -> list[str]:
        assert self.section is not None
        return self.section.title if self._inside(self.section.el.tag) else self.section.text

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        el = _Element(tag, attrs)
        if tag in _VOID:
            return
        self.context.append(el)
        if tag in _HEADINGS and "id" in attrs:
            depth = len(self.context)
            if tag != "h1" and not self.data:
                self.section = _Section(_Element("hx", {}), depth)
                self.data.append(self.section)
            self.section = _Section(el, depth)
            if self.data:
                self.section.id = attrs["id"]
            self.data.append(self.section)
        if self.section is None:
            self.section = _Section(_Element("hx", {}))
            self.data.append(self.section)
        if "data-search-exclude" in attrs or attrs.get("class") == "linenodiv":
            self.skip.add(tag)
            return
        if not self._skipping() and tag in _KEEP:
            self._target().append(f"<{tag}>")

    def end(self, tag: str) -> None:
        if not self.context or self.context[-1].tag != tag:
            return
        assert self.section is not None
        if self.section.depth > len(self.context):
            for section in reversed(self.data):
                if section.depth <= len(self.context):
                    self.section.depth = float("inf")
                    self.section = section
                    break
        el = self.context.pop()
        if el.tag in self.skip:
            if el.tag not in _SKIP:
                self.skip.discard(el.tag)
            return
        if not self._skipping() and tag in _KEEP:
            data = self._target()
            index = data.index(f"<{tag}>")
            if any(not piece.isspace() for piece in data[index + 1 :]):
                data.append(f"</{tag}>")
            else:
                del data[index:]

    def text(self, raw: str) -> None:
        if self._skipping():
            return
        data = html.unescape(raw)
        if not self._inside("pre"):
            data = " " if data.isspace() else data.replace("\n", " ")
        if self.section is None:
            self.section = _Section(_Element("hx", {}))
            self.data.append(self.section)
        section = self.section
        if self._inside(section.el.tag):
            if not any(el.tag == "a" and el.attrs.get("class") == "headerlink" for el in self.context):
                section.title.append(html.escape(data, quote=False))
        elif data.isspace():
            if not section.text or not section.text[-1].isspace() or self._inside("pre"):
                section.text.append(data)
        else:
            section.text.append(html.escape(data, quote=False))


def sections(content: str) -> list[_Section]:
    """The page's sections as Material's search parser finds them."""
    parser = _Sections()
    for m in _TOKEN.finditer(_RAW_TEXT.sub(r"\1\3", content)):
        closing, tag, attrs, slash, text = m.groups()
        if tag is not None:
            tag = tag.lower()
            if closing:
                parser.end(tag)
            else:
                parser.start(tag, _attrs(attrs or ""))
                if (slash or (attrs and attrs.rstrip().endswith("/"))) and tag not in _VOID:
                    parser.end(tag)  # <x/>: html.parser ends it at once
        elif text is not None:
            parser.text(text)
    return parser.data


def strip_search_attrs(content: str) -> str:
    """The page's HTML without its `data-search-*` attributes (Material's search plugin drops them once indexed)."""
    return _SEARCH_ATTRS.sub("", content)


def _find(toc: list[AnchorLink], anchor: str | None) -> AnchorLink | None:
    return next((item for item in _flat(toc) if item.id == anchor), None)


MAX_RUNS = 500_000  # segmented Chinese runs kept across builds


def _jieba_version() -> str:
    try:
        from importlib.metadata import version

        return version("jieba")
    except Exception:  # noqa: BLE001 - not installed, or no metadata: segmenting is off or unknown
        return "?"


def _flat(toc: list[AnchorLink]) -> list[AnchorLink]:
    return [x for item in toc for x in (item, *_flat(item.children))]


class EntryMaker:
    """Search entries in Material's format; `segment`: split Chinese with jieba (Material does when it is installed).

    `cache`: a file (speed.cache_file) keeping each segmented run across builds, so a rebuild that meets no new
    Chinese text does not load jieba's dictionary (about a second)."""

    def __init__(self, segment: bool, cache: Path | None = None, dictionaries: tuple = ()) -> None:
        self.jieba: Any = None
        if segment:
            try:
                import jieba

                self.jieba = jieba
            except ImportError:
                self.jieba = None
        self.cache = cache
        # what segmenting depends on: this code, jieba's version and its dictionaries (Material's settings)
        self.key = cache_file.version("search-entries", _jieba_version(), dictionaries)
        self._old: dict[str, str] = {}
        self._old_pages: dict[str, list[dict[str, Any]]] = {}
        saved = cache_file.load(cache, self.key) if cache is not None else None
        if isinstance(saved, tuple) and len(saved) == 2 and isinstance(saved[0], dict) and isinstance(saved[1], dict):
            self._old, self._old_pages = saved
        self._runs: dict[str, str] = {}  # the runs this build used
        self._pages: dict[str, list[dict[str, Any]]] = {}  # entries of the pages asked to be remembered
        self._computed: dict[str, str] = {}  # runs segmented by this process
        self._added = False

    def segmented(self) -> dict[str, str]:
        """The runs this process segmented (a worker sends them back to the build, see speed.parallel_pages)."""
        return dict(self._computed)

    def learn(self, runs: dict[str, str]) -> None:
        """Take runs segmented elsewhere (by a worker), to be saved with the others."""
        if runs:
            self._runs.update(runs)
            self._added = True

    def save(self) -> None:
        """Write the runs this build used (and older ones, up to MAX_RUNS) when some were new."""
        if self.cache is None or not (self._added or self._pages.keys() != self._old_pages.keys()):
            return
        keep = dict(self._runs)
        for run, done in self._old.items():
            if len(keep) >= MAX_RUNS:
                break
            keep.setdefault(run, done)
        cache_file.dump(self.cache, self.key, (keep, self._pages))

    def _segment(self, text: str) -> str:
        if self.jieba is None:
            return text

        def run(m: re.Match[str]) -> str:
            value = m.group(0)
            done = self._runs.get(value)
            if done is None:
                done = self._old.get(value)
                if done is None:
                    done = "\u200b" + "\u200b".join(self.jieba.cut(value.encode("utf-8"))) + "\u200b"
                    self._computed[value] = done
                    self._added = True
                self._runs[value] = done
            return done

        return _HAN.sub(run, text).strip("\u200b")

    def entries(
        self, content: str, toc: TableOfContents, url: str, title: str, meta: dict, *, remember: bool = False
    ) -> list[dict[str, Any]]:
        """The page's entries. `remember`: keep them for the next build, by a hash of all they are made from
        (for pages made again on every build, such as section indexes)."""
        if not remember:
            return self._entries(content, toc, url, title, meta)
        anchors = [(item.id, item.url) for item in _flat(list(toc))]
        key = hashlib.sha1(repr((content, anchors, url, title, sorted(meta.items()))).encode()).hexdigest()
        found = self._old_pages.get(key)
        if found is None:
            found = self._entries(content, toc, url, title, meta)
        self._pages[key] = found
        return found

    def _entries(self, content: str, toc: TableOfContents, url: str, title: str, meta: dict) -> list[dict[str, Any]]:
        search = meta.get("search") or {}
        if search.get("exclude"):
            return []
        out = []
        for section in sections(content):
            if "data-search-exclude" in section.el.attrs:
                continue
            item = _find(list(toc), section.id)
            location = url + item.url if item else (f"{url}#{section.id}" if section.id else url)
            title_parts = section.title or [str(meta.get("title", title))]
            entry: dict[str, Any] = {
                "location": location,
                "title": self._segment("".join(title_parts).strip()),
                "text": self._segment("".join(section.text).strip()),
            }
            tags = meta.get("tags")
            if isinstance(tags, list):
                entry["tags"] = [str(t) for t in tags if t and isinstance(t, str | int | float | bool)]
            if "boost" in search:
                entry["boost"] = search["boost"]
            out.append(entry)
        return out
