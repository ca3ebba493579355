"""Hostile content for site tests: XSS payloads planted in every field of a real store, a detector for
payload markup that reached built HTML, and path-trick names.

Every payload calls `xss(N)` when it runs, where N = field number × 100 + payload number, so a browser
test that defines `xss` (see tests/test_xss_browser.py) learns which payload ran and from which field.
`plant_store` writes each payload into each field of a new `memwiki.store.store.Store`: a new field of a record
gets covered by adding one line to `FIELDS` and one to `plant_store`.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from memwiki.source import Memory, SinkRecord
from memwiki.store.config import Caps, StoreConfig
from memwiki.store.store import Store

# `{n}` is the payload's number in its field. Written to run (or to load a dangerous URL) if any layer of
# the site passed it through as markup: raw HTML, Markdown links, wikilinks, entities, broken markup.
TEMPLATES: tuple[str, ...] = (
    "<script>xss({n})</script>",
    "<img src=x onerror=xss({n})>",
    "<svg onload=xss({n})>",
    "<svg><script>xss({n})</script></svg>",
    '<iframe srcdoc="&lt;script&gt;xss({n})&lt;/script&gt;"></iframe>',
    "<body onload=xss({n})>",
    "<details open ontoggle=xss({n})>x</details>",
    '<a href="javascript:xss({n})">x{n}</a>',
    "[x{n}](javascript:xss({n}))",
    "[x{n}](JaVaScRiPt:xss({n}))",
    "[x{n}](data:text/html;base64,PHNjcmlwdD54c3MoMSk8L3NjcmlwdD4=#{n})",
    "[x{n}](vbscript:xss({n}))",
    "![x{n}](javascript:xss({n}))",
    "<javascript:xss({n})>",
    "[x{n}][r{n}]\n\n[r{n}]: javascript:xss({n})",
    "[[javascript:xss({n})]]",
    "[[x{n}|javascript:xss({n})]]",
    '[["><img src=x onerror=xss({n})>]]',
    '[[x{n}#" onmouseover="xss({n})]]',
    '[[#"><script>xss({n})</script>]]',
    '[[a{n}|"><svg onload=xss({n})>]]',
    "[[a{n}|' onmouseover='xss({n})' x=']]",
    "&lt;script&gt;xss({n})&lt;/script&gt;",
    "&#60;img src=x onerror=xss({n})&#62;",
    "&#x3C;svg onload=xss({n})&#x3E;",
    "[x{n}](&#106;avascript:xss({n}))",
    "[x{n}](java&#x09;script:xss({n}))",
    '<a href=" javascript:xss({n})">x{n}</a>',
    "<img src=x onerror=xss({n})",
    "<scr<script>ipt>xss({n})</script>",
    "</textarea></title></style></script><script>xss({n})</script>",
    "<math><mtext><table><mglyph><style><img src=x onerror=xss({n})>",
    '<object data="javascript:xss({n})"></object>',
    '<embed src="javascript:xss({n})">',
    '<form action="javascript:xss({n})"><button id=b{n}>x{n}</button></form>',
    "<input autofocus onfocus=xss({n})>",
    "<video><source onerror=xss({n})></video>",
    '<meta http-equiv="refresh" content="0;url=javascript:xss({n})">',
    '<base href="javascript:xss({n})//">',
    '<a href="data:text/html,<script>xss({n})</script>">x{n}</a>',
    '<div onmouseover="xss({n})">hover {n}</div>',
    '```"><script>xss({n})</script>\ncode\n```',
    "<!--><img src=x onerror=xss({n})>-->",
    "<![CDATA[><img src=x onerror=xss({n})>]]>",
    "\u2028</script><script>xss({n})</script>",
    '<a href="vbscript:xss({n})">x{n}</a>',
    '<iframe src="javascript:xss({n})"></iframe>',
    "[x{n}](<javascript:xss({n})>)",
    '<svg><a xlink:href="javascript:xss({n})"><text>x{n}</text></a></svg>',
    "<a href=javascript&colon;xss({n})>x{n}</a>",
    "*x{n}*{: onclick=xss({n}) }",
    "x{n}\n{: onmouseover=xss({n}) }",
)

# Where payloads are planted: field number -> what it is.
FIELDS: dict[int, str] = {
    1: "persona (SOUL.md)",
    2: "hot entry (MEMORY.md)",
    3: "hot entry (USER.md)",
    4: "L2 text",
    5: "L2 id",
    6: "L2 wing",
    7: "L2 room",
    8: "L2 category",
    9: "L2 session_id (no such session)",
    10: "L2 source",
    11: "L2 message_id",
    12: "entity name",
    13: "entity type",
    14: "predicate",
    15: "triple source",
    16: "session id",
    17: "session title",
    18: "session source",
    19: "message content",
    20: "message tool name",
    22: "wiki file name",
    23: "wiki title",
    24: "wiki alias",
    25: "wiki tag",
    26: "wiki body",
    27: "sink text",
    28: "sink reason",
    29: "sink target",
    30: "sink memory id",
    99: "store folder name (the home page shows it)",
}
WORD = "hostileword"  # in every planted memory text: a search for it returns them


def payload(field_no: int, i: int) -> str:
    """Payload `i` as planted in field `field_no` (it calls xss(field_no * 100 + i))."""
    return TEMPLATES[i].replace("{n}", str(field_no * 100 + i))


def payloads(field_no: int) -> list[str]:
    return [payload(field_no, i) for i in range(len(TEMPLATES))]


def origin(n: int) -> str:
    """Which payload a number reported by xss() is, for messages."""
    field_no, i = divmod(n, 100)
    what = repr(TEMPLATES[i][:40]) if i < len(TEMPLATES) else "unknown"
    return f"payload {i} ({what}) in {FIELDS.get(field_no, f'field {field_no}')}"


def file_name(text: str) -> str:
    """`text` as a file name (no `/` or NUL; at most 200 bytes)."""
    name = text.replace("/", "∕").replace("\0", "").replace("\n", " ")
    while len(name.encode()) > 200:
        name = name[:-1]
    return name


@dataclass
class Planted:
    """A store with every payload in every field."""

    root: Path
    fields: dict[int, int] = field(default_factory=dict)  # field -> payloads planted there

    @property
    def total(self) -> int:
        return sum(self.fields.values())


def plant_store(root: Path) -> Planted:
    """A new store at `root` with every payload in every field of every layer (USE embedder)."""
    n = len(TEMPLATES)
    big = StoreConfig(caps=Caps(persona=60_000, memory=60_000, user=60_000))
    planted = Planted(root)
    with Store.init(root, big) as store:
        store.set_persona("# Persona\n\n" + "\n\n".join(payloads(1)))
        store.hot("memory").write_entries(payloads(2))
        store.hot("user").write_entries(payloads(3))
        for f in (1, 2, 3):
            planted.fields[f] = n

        # sessions: ids, titles, sources, contents, tool names (roles: the store's schema admits only its four)
        for i in range(n):
            sid = payload(16, i)
            store.sessions.add_session(sid, title=payload(17, i), started=f"2026-01-{1 + i % 28:02d}T10:00:00Z")
            store.sessions.add_session(sid, source=payload(18, i))
            store.sessions.add_message(sid, "user", f"{payload(19, i)} {WORD}", time="2026-01-01T10:00:00Z")
            store.sessions.add_message(
                sid, "tool", "a tool answer", time="2026-01-01T10:01:00Z", tool_name=payload(20, i)
            )
            store.sessions.add_message(sid, "assistant", "an answer", time="2026-01-01T10:02:00Z")
        for f in (16, 17, 18, 19, 20):
            planted.fields[f] = n

        memories = [
            Memory(
                id=payload(5, i),
                text=f"{payload(4, i)}\n\n{WORD} {i}",
                category=payload(8, i),
                created=f"2026-02-{1 + i % 28:02d}T10:00:00Z",
                session_id=payload(9, i) if i % 2 else payload(16, i),
                message_id=payload(11, i),
                wing=payload(6, i),
                room=payload(7, i),
                source=payload(10, i),
            )
            for i in range(n)
        ]
        store.semantic.add(memories)
        for f in (4, 5, 6, 7, 8, 9, 10, 11):
            planted.fields[f] = n

        graph = store.graph
        names = payloads(12)
        for i, name in enumerate(names):
            graph.add_entity(name, payload(13, i))
        for i, name in enumerate(names):
            graph.add_triple(
                name, payload(14, i), names[(i + 1) % n], valid_from="2026-01-01", source_file=payload(15, i)
            )
        for f in (12, 13, 14, 15):
            planted.fields[f] = n

        for i in range(n):
            meta = {"title": payload(23, i), "aliases": [payload(24, i)], "tags": [payload(25, i)]}
            text = f"---\n{json.dumps(meta)}\n---\n{payload(26, i)}\n\nSee [[{payload(12, i)}]].\n"
            (store.wiki_dir / f"{file_name(payload(22, i))}.md").write_text(text, encoding="utf-8")
        for f in (22, 23, 24, 25, 26):
            planted.fields[f] = n

        store.sink_log.append(
            [
                SinkRecord(
                    memory_id=payload(5, i) if i % 2 else payload(30, i),
                    target=payload(29, i),
                    text=payload(27, i),
                    category=payload(8, i),
                    sunk_at=f"2026-03-{1 + i % 28:02d}T10:00:00Z",
                    reason=payload(28, i),
                )
                for i in range(n)
            ]
        )
        for f in (27, 28, 29, 30):
            planted.fields[f] = n
    return planted


# ── finding payload markup in HTML ───────────────────────────────────────────────────────────────────

_DANGEROUS_SCHEME = re.compile(r"^(?:javascript|data|vbscript):", re.I)
_TAG = re.compile(r"[a-z][a-z0-9:-]*")
_RAW_HANDLER = re.compile(r"<[a-z][^<>]*?[\s/\"']on[a-z]+\s*=|<script[\s>][^<]*xss\(", re.I)
URL_ATTRS = frozenset({"href", "src", "action", "formaction", "data", "poster", "xlink:href", "background", "srcset"})
_DROPPED = dict.fromkeys(i for i in range(0x21) if i != 0x20) | {0x7F: None}


def dangerous_url(value: str) -> bool:
    """True for a URL a browser would run or load as a document: javascript:, data:, vbscript: (after the
    entity decoding, control characters and spaces a browser ignores)."""
    return bool(_DANGEROUS_SCHEME.match(html.unescape(value).translate(_DROPPED).strip()))


class _Scan(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)  # text keeps its entities: `&lt;img` is no tag
        self.found: list[str] = []
        self._script: str | None = None  # type of the open <script>, if any
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not _TAG.fullmatch(tag):  # `<scr<script>`: markup a filter would turn into a tag
            self.found.append(f"<{tag[:40]}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") or name in URL_ATTRS and dangerous_url(value):
                self.found.append(f"<{tag} {name}={value[:60]!r}>")
            elif name == "srcdoc":
                self.found.append(f"<{tag} srcdoc>")
            elif name == "http-equiv" and value.lower() == "refresh":
                self.found.append(f"<{tag} http-equiv=refresh>")
        if tag in ("base", "object", "embed"):
            self.found.append(f"<{tag}>")
        if tag == "script":
            kinds = dict(attrs)
            self._script = kinds.get("type") or ""
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._text.append(data)
        elif _RAW_HANDLER.search(data):  # a tag the parser reads as text: in <style>, <textarea>, a broken tag
            self.found.append(f"text {_RAW_HANDLER.search(data).group(0)[:60]!r}")

    def handle_comment(self, data: str) -> None:
        self.handle_data(data)

    def unknown_decl(self, data: str) -> None:
        self.handle_data(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            code = "".join(self._text)
            if "xss" in code and self._script != "application/json":
                self.found.append(f"<script>{code[:60]!r}")
            self._script = None


def injections(text: str) -> list[str]:
    """Markup in an HTML text that a payload could have put there: event-handler attributes, dangerous URL
    schemes, srcdoc, refresh, <base>/<object>/<embed>, scripts that call xss."""
    scan = _Scan()
    scan.feed(text)
    if scan.cdata_elem:  # an unclosed <style> or <script>: the parser keeps the rest to itself
        scan.handle_data(scan.rawdata)
    scan.close()
    return scan.found


_LINKS = (
    (
        re.compile(r"\[\[([^\[\]\n|]+)\|?([^\[\]\n]*)\]\]"),
        lambda m: f"<a href=\"{m[2] or m[1]}\" title='{m[2]}'>{m[0]}</a>",
    ),
    (re.compile(r"!?\[([^\]]*)\]\(<?(\S*?)>?\)(?=$|\s)"), lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>'),
    (re.compile(r"^\[[^\]]+\]:\s*(\S+)", re.M), lambda m: f'<a href="{m.group(1)}">ref</a>'),
    (re.compile(r"<([a-z]+:[^>\s]*)>", re.I), lambda m: f'<a href="{m.group(1)}">auto</a>'),
    (re.compile(r"\{:([^}]*)\}"), lambda m: f"<span {m.group(1)}></span>"),  # Python-Markdown's attr_list
)


def unsafe_html(text: str) -> str:
    """What a careless renderer makes of a payload: wikilinks and Markdown links pasted into `<a href>` as
    written, raw HTML kept, entities decoded once more (for checking that `injections` fires)."""
    for pattern, make in _LINKS:
        text = pattern.sub(make, text)
    return html.unescape(text) + "\n<p>after</p>"


# ── path tricks ─────────────────────────────────────────────────────────────────────────────────────

TRICK_NAMES: tuple[str, ...] = (
    "Foo Bar", "foo-bar", "FOO BAR", "foo_bar", "Foo/Bar", "foo.bar", "foo:bar", "foo\\bar", " foo bar ",
    "foo--bar", "foo bar-2", "foo-bar-2", "foo-bar-3",
    "index", "INDEX", "index.md", "page-2", "page-3", "list-1",
    "café", unicodedata.normalize("NFD", "café"), "ｃａｆé", "straße", "strasse", "ﬁle", "file",
    "../../etc/passwd", "../index", "..", ".", "...", "/etc/passwd", "/abs/path", "C:\\Windows\\system32",
    "%2e%2e%2fetc%2fpasswd", "~/.ssh/id_rsa",
    "a" * 500, "a" * 80 + "x", "a" * 80 + "y", "a" * 499 + "z", "长" * 300, "𠀀" * 120,
    "\0", "nul\0byte", "ctrl\x01\x02\x1f", "tab\there", "new\nline", "cr\rreturn", "\x7f", "\ufeffbom",
    "\u202eevil", "zero\u200bwidth",
    "con", "aux", "nul", "com1", "-", "--", "___", "!!!", "???", "🙂", "🙂🙂", "中文", "中 文", "中-文",
    "no-wing", "no-room",
)  # fmt: skip


def trick_names() -> list[str]:
    """The path-trick names (distinct strings)."""
    return list(dict.fromkeys(TRICK_NAMES))


def plant_tricks(root: Path) -> Planted:
    """A new store at `root` with a session per trick name (id; title `trick session #i`), and memories whose
    ids, wings and rooms are trick names (text `trick memory #i`)."""
    names = trick_names()
    planted = Planted(root)
    with Store.init(root) as store:
        for i, name in enumerate(names):
            store.sessions.add_session(name, title=f"trick session #{i}", started=f"2026-04-{1 + i % 28:02d}T10:00:00Z")
            store.sessions.add_message(name, "user", f"trick message #{i} of its session", time="2026-04-01T10:00:00Z")
        memories: list[Memory] = []
        for i, name in enumerate(names):
            memories.append(Memory(id=name, text=f"trick memory #{i} by id", category="project"))
            memories.append(Memory(id=f"w{i}", text=f"trick memory #{len(memories)} in wing", wing=name, room="r"))
            memories.append(Memory(id=f"r{i}", text=f"trick memory #{len(memories)} in room", wing="w", room=name))
        store.semantic.add(memories)
        for i, name in enumerate(names):
            store.graph.add_triple(name, "links_to", f"target {i}")
            (store.wiki_dir / f"{file_name(name) or 'empty'}-{i}.md").write_text(
                f"---\ntitle: {json.dumps(name)}\n---\nSee [[{name.replace(']', '')}]].\n", encoding="utf-8"
            )
    planted.fields = {1: len(names), 2: len(memories)}
    return planted


def iter_html(site: Path) -> Iterator[Path]:
    yield from sorted(site.rglob("*.html"))
