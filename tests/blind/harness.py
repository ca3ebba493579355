"""Measure a privacy gate against a blind canary set: plant it everywhere, build the real site, find what got out.

A set module (tests/blind/round1.py, ...) defines `KINDS`, `CHINESE`, `TEXT_MARKERS`, `FRONTMATTER_MARKERS`,
`PERSONA_PRIVATE_HEADINGS` and `ORDINARY` (see tests/blind/example_set.py). `measure(set_module, work_dir)`:

1. plants every kind in every field of a memwiki store (`tests.canaries.FIELDS`), a hermes-agent home
   (`HERMES_FIELDS`) and a MemPalace palace (`PALACE_FIELDS`), each written by its own project's code;
2. plants private records, each carrying a random word of its own: every text marker on an L2 memory, a hot
   memory entry, a session title, a message, a wiki body, an entity name and a persona line (of every source
   that has that layer); every frontmatter marker on a wiki page; a page under wiki/private/; every private
   persona heading with a section under it, in the store's SOUL.md and the hermes home's;
3. plants every ORDINARY string in an L2 memory and a hot memory entry;
4. builds the site with the real MkDocs build (`profile` public unless told) twice, over records that do not
   overlap: the store alone, then the hermes home with the palace (given those, the plugin reads only the
   store's wiki pages and sink log: its other layers would go unread);
5. reads every file of site/ (but the browser embedder's model export, which no record can reach) and
   reports each canary once, in its worst class: `verbatim` (as is, HTML-, JSON- or URL-escaped),
   `lower-cased`, `slugged`, `fragment` (a 12-character window of a secret of 16 or more, case-insensitive,
   found nowhere else in what was planted); private records whose word was published; ORDINARY strings not
   published unchanged (HTML- or JSON-escaped counts as unchanged). Each finding keeps the first file it was
   found in and 160 characters around it; `Report.write_json()` writes them by kind and field.

Attribution: secrets shorter than 8 bytes (door codes, SMS codes) and short all-digit ones count only as a token of
their own (no letter or digit beside them), the shortest only within 300 bytes of their canary's tag (`c12`, `h3`,
`p7`: the word planted beside each), so a random number elsewhere is not taken for them. A copy that another
planted text holds too (a slug inside another password, a host name in another kind's words) or a fragment of
plain words counts only beside the canary's tag; the same secret drawn for two canaries counts for the one whose tag
is beside it (else the first); a fragment another secret shares is structure (a fixed prefix), not evidence.
"""

from __future__ import annotations

import bisect
import functools
import html
import importlib
import itertools
import json
import os
import random
import re
import string
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote, quote_plus

import numpy as np

from memwiki.source import Memory
from memwiki.store.config import Caps, StoreConfig
from memwiki.store.store import Store
from tests.canaries import (
    FIELDS,
    HERMES_FIELDS,
    PALACE_FIELDS,
    Canary,
    hermes_canaries,
    palace_canaries,
    plant,
    set_persona,
)
from tests.homes import (
    Drawer,
    Fact,
    HermesContent,
    HermesMessage,
    HermesSession,
    PalaceContent,
    PalaceEntity,
)

SET_NAMES = ("KINDS", "CHINESE", "TEXT_MARKERS", "FRONTMATTER_MARKERS", "PERSONA_PRIVATE_HEADINGS", "ORDINARY")
CLASSES = ("verbatim", "lower-cased", "slugged", "fragment")  # worst first
FRAGMENT, FRAGMENT_FROM = 12, 16  # window length; shortest secret cut into windows
EXCERPT = 160
NEAR_TAG = 300  # bytes: how close to its tag a hit that needs the tag must be
SHORT = 8  # bytes: shorter needles only count as a token of their own near their tag
SKIPPED = re.compile(r"(^|/)assets/memwiki/use/use-model-[^/]*$")  # the embedder's weights: no record reaches them
TEXT_LAYERS = (
    "store.memory",
    "store.hot",
    "store.session.title",
    "store.message",
    "store.wiki.body",
    "store.entity",
    "store.persona",
    "hermes.hot",
    "hermes.session.title",
    "hermes.message",
    "hermes.persona",
    "palace.drawer",
    "palace.entity",
)


@dataclass(frozen=True)
class PrivateRecord:
    """A record marked private: `marker` says how, `layer` where; `word` is in it and nowhere else."""

    marker: str
    layer: str
    word: str


@dataclass
class Report:
    """What one measurement found. Counts are of canaries (each once, in its worst class) and of records."""

    name: str
    profile: str
    kinds: int
    chinese_kinds: int
    fields: int
    planted: list[Canary]
    chinese: frozenset[str]
    leaks: list[dict[str, Any]]  # one per canary found: kind, field, class, secret, tag, chinese, file, excerpt
    private: list[PrivateRecord]
    private_published: list[dict[str, Any]]  # marker, layer, word, file, excerpt
    ordinary: list[str]
    ordinary_redacted: list[dict[str, Any]]  # text, and where its memory was published instead (file, excerpt)
    forced: list[str]  # what hermes refused and was written anyway
    build_seconds: dict[str, float]  # per build: "store", "sources"
    scan_seconds: float
    site_dirs: list[Path]
    json_path: Path | None = None

    @property
    def found(self) -> dict[str, int]:
        counts = Counter(leak["class"] for leak in self.leaks)
        return {c: counts.get(c, 0) for c in CLASSES}

    @property
    def chinese_planted(self) -> int:
        return sum(c.kind in self.chinese for c in self.planted)

    @property
    def ordinary_redacted_share(self) -> float:
        return len(self.ordinary_redacted) / len(self.ordinary) if self.ordinary else 0.0

    def breakdown(self, key: str) -> dict[str, dict[str, int]]:
        """Per kind or field (`key`): planted, leaked, and leaked per class; worst first."""
        rows: dict[str, dict[str, int]] = defaultdict(lambda: {"planted": 0, "leaked": 0, **dict.fromkeys(CLASSES, 0)})
        for canary in self.planted:
            rows[getattr(canary, key)]["planted"] += 1
        for leak in self.leaks:
            rows[leak[key]]["leaked"] += 1
            rows[leak[key]][leak["class"]] += 1
        return dict(sorted(rows.items(), key=lambda kv: (-kv[1]["leaked"], kv[0])))

    def private_breakdown(self, key: str) -> dict[str, dict[str, int]]:
        """Per marker or layer (`key`): private records planted and published."""
        rows: dict[str, dict[str, int]] = defaultdict(lambda: {"planted": 0, "published": 0})
        for record in self.private:
            rows[getattr(record, key)]["planted"] += 1
        for found in self.private_published:
            rows[found[key]]["published"] += 1
        return dict(sorted(rows.items(), key=lambda kv: (-kv[1]["published"], kv[0])))

    def summary(self) -> dict[str, Any]:
        return {
            "set": self.name,
            "profile": self.profile,
            "kinds": self.kinds,
            "chinese_kinds": self.chinese_kinds,
            "fields": self.fields,
            "planted": len(self.planted),
            "found": self.found,
            "leaked": len(self.leaks),
            "chinese_planted": self.chinese_planted,
            "chinese_leaked": sum(leak["chinese"] for leak in self.leaks),
            "private_planted": len(self.private),
            "private_published": len(self.private_published),
            "ordinary": len(self.ordinary),
            "ordinary_redacted": len(self.ordinary_redacted),
            "build_seconds": {k: round(v, 1) for k, v in self.build_seconds.items()},
            "scan_seconds": round(self.scan_seconds, 1),
            "site_dirs": [str(p) for p in self.site_dirs],
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "by_kind": self.breakdown("kind"),
            "by_field": self.breakdown("field"),
            "leaks": sorted(self.leaks, key=lambda leak: (CLASSES.index(leak["class"]), leak["kind"], leak["field"])),
            "private": {
                "by_marker": self.private_breakdown("marker"),
                "by_layer": self.private_breakdown("layer"),
                "published": self.private_published,
            },
            "ordinary_redacted": self.ordinary_redacted,
            "forced": self.forced,
        }

    def write_json(self, path: Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_json(), ensure_ascii=False, indent=1), encoding="utf-8")
        self.json_path = path
        return path

    def table(self, top: int = 15) -> str:
        """The report as text: totals, then the worst kinds, fields, markers and layers."""
        n, found = len(self.planted), self.found
        leaked, share = len(self.leaks), len(self.leaks) / max(len(self.planted), 1)
        lines = [
            f"blind set {self.name} ({self.profile} profile): build "
            + " + ".join(f"{v:.1f} s ({k})" for k, v in self.build_seconds.items())
            + f", scan {self.scan_seconds:.1f} s",
            f"  kinds {self.kinds} (Chinese {self.chinese_kinds}), fields {self.fields}, canaries planted {n}",
            "  found in site/: " + ", ".join(f"{c} {found[c]}" for c in CLASSES) + f"  -> {leaked} ({share:.1%})",
            f"  Chinese kinds: {sum(leak['chinese'] for leak in self.leaks)} of {self.chinese_planted} found",
            f"  private records: {len(self.private_published)} of {len(self.private)} published",
            f"  ORDINARY not published unchanged: {len(self.ordinary_redacted)} of {len(self.ordinary)} "
            f"({self.ordinary_redacted_share:.1%})",
        ]
        if self.forced:
            lines.append(f"  written although hermes refused them: {len(self.forced)}")
        for title, rows in (("kind", self.breakdown("kind")), ("field", self.breakdown("field"))):
            worst = [(k, r) for k, r in rows.items() if r["leaked"]][:top]
            if worst:
                lines.append(f"  leaks by {title} (planted, found: " + " / ".join(CLASSES) + "):")
                lines += [
                    f"    {k[:44]:<44} {r['planted']:>4} {r['leaked']:>4}: " + " / ".join(str(r[c]) for c in CLASSES)
                    for k, r in worst
                ]
        for title, rows in (("marker", self.private_breakdown("marker")), ("layer", self.private_breakdown("layer"))):
            worst = [(k, r) for k, r in rows.items() if r["published"]][:top]
            if worst:
                lines.append(f"  private records published by {title} (published of planted):")
                lines += [f"    {k[:60]!r:<62} {r['published']} of {r['planted']}" for k, r in worst]
        if self.ordinary_redacted:
            lines.append("  ORDINARY not published unchanged:")
            lines += [f"    {o['text'][:80]!r}" for o in self.ordinary_redacted[:top]]
        if self.json_path:
            lines.append(f"  breakdown: {self.json_path}")
        return "\n".join(lines)


def load_set(name: str) -> ModuleType:
    """A set module by name (`round1` is tests.blind.round1) or dotted path; checks it defines every name."""
    module = importlib.import_module(name if "." in name else f"tests.blind.{name}")
    if missing := [n for n in SET_NAMES if not hasattr(module, n)]:
        raise AttributeError(f"{module.__name__} lacks {missing}")
    return module


def measure(set_module: ModuleType, work_dir: str | Path, *, profile: str = "public", per_field: int = 1) -> Report:
    """Plant `set_module` into a store, a hermes home and a palace under `work_dir`, build the sites with
    `profile`, and report what reached them (the JSON breakdown goes to `work_dir/<set>-<profile>-report.json`).

    Two builds of disjoint records: the store alone (given a hermes home and a palace, the plugin reads persona,
    hot memory and sessions from the home and L2 and the graph from the palace, and of the store only its wiki
    pages and sink log), then the hermes home with the palace."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    name = set_module.__name__.rsplit(".", 1)[-1]
    kinds = dict(set_module.KINDS)
    rng = random.Random(f"blind-{name}")
    with Store.init(work / "store", StoreConfig(caps=_caps(set_module, per_field))) as store:
        store_planted = plant(store, per_field, seed=11, kinds=kinds)
        hermes, hermes_planted = hermes_canaries(kinds, per_field, seed=12)
        palace, palace_planted = palace_canaries(kinds, per_field, seed=13)
        private = _plant_private(store, hermes, palace, set_module, rng)
        ordinary = [str(s) for s in set_module.ORDINARY]
        _plant_ordinary(store, ordinary)
    home = hermes.make(work / "hermes")
    made_palace = palace.make(work / "mempalace")
    sources = {"hermes_home": str(home.path), "palace": str(made_palace.path)}
    builds = (
        ("store", {"store": str(work / "store")}, store_planted, ordinary),
        ("sources", sources, hermes_planted + palace_planted, []),
    )
    leaks, published, redacted, seconds, sites = [], [], [], {}, []
    scanning = 0.0
    for build, given, planted, strings in builds:
        site = work / f"site-{build}-{profile}"
        started = time.perf_counter()
        config_dir = str(work / "mempalace" / "mempalace_config")
        with _environment(MEMWIKI_PROFILE=None, MEMPALACE_CONFIG_DIR=config_dir):
            from tests.test_site import build_site

            options: dict[str, Any] = {"store": None, "demo_src": None, "profile": profile, **given}
            _, error = build_site(site, work / f"cache-{build}-{profile}", **options)
        if error is not None:
            raise RuntimeError(f"the {build} build of {name} failed: {error}")
        seconds[build] = time.perf_counter() - started
        sites.append(site)
        started = time.perf_counter()
        text = SiteText(site)
        leaks += [{**leak, "site": build} for leak in _canary_leaks(text, planted, set_module, ordinary)]
        records = [r for r in private if (r.layer.split(".")[0] == "store") == (build == "store")]
        published += _private_published(text, records)
        redacted += _ordinary_redacted(text, strings)
        scanning += time.perf_counter() - started
    chinese = frozenset(set_module.CHINESE)
    report = Report(
        name=name,
        profile=profile,
        kinds=len(kinds),
        chinese_kinds=len(chinese & set(kinds)),
        fields=len(FIELDS) + len(HERMES_FIELDS) + len(PALACE_FIELDS),
        planted=store_planted + hermes_planted + palace_planted,
        chinese=chinese,
        leaks=[{**leak, "chinese": leak["kind"] in chinese} for leak in leaks],
        private=private,
        private_published=published,
        ordinary=ordinary,
        ordinary_redacted=redacted,
        forced=home.forced + made_palace.forced,
        build_seconds=seconds,
        scan_seconds=scanning,
        site_dirs=sites,
    )
    report.write_json(work / f"{name}-{profile}-report.json")
    return report


def _caps(set_module: ModuleType, per_field: int) -> Caps:
    """Caps that hold everything planted in the store's persona and hot memory even if all of it were core, so
    no write is refused; past 70% the non-core entries still sink (the sink log is a field too)."""
    rng = random.Random(0)
    longest = [max(len(make(rng)[1]) for _ in range(3)) + 24 for make in set_module.KINDS.values()]
    marked = sum(
        len(marker("pv0123456789 is the code name of the weekend plan")) + 8 for marker in set_module.TEXT_MARKERS
    )
    ordinary = sum(len(str(s)) + 24 for s in set_module.ORDINARY)
    default = Caps()
    return Caps(
        persona=1_000_000,  # a line per kind and field, and the private sections
        memory=max(default.memory, int(1.2 * (2 * per_field * sum(longest) + marked + ordinary))),
        user=max(default.user, int(1.2 * per_field * sum(longest))),
    )


@contextmanager
def _environment(**values: str | None) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# ── private records ──────────────────────────────────────────────────────────────────────────────────


def _word(rng: random.Random) -> str:
    return "pv" + "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


def _label(marker: Callable[[str], str]) -> str:
    return marker("…")


def _plant_private(
    store: Store, hermes: HermesContent, palace: PalaceContent, set_module: ModuleType, rng: random.Random
) -> list[PrivateRecord]:
    """Private-marked records of every kind of marker in every layer that takes it (see the module docstring)."""
    records: list[PrivateRecord] = []
    memories: list[Memory] = []
    persona: list[str] = []
    soul: list[str] = []

    def record(marker: str, layer: str) -> str:
        records.append(PrivateRecord(marker, layer, word := _word(rng)))
        return word

    for i, marker in enumerate(set_module.TEXT_MARKERS):
        label = _label(marker)
        for layer in TEXT_LAYERS:
            w = record(label, layer)
            marked = marker(f"{w} is the code name of the weekend plan")
            tag = f"pr{i}-{TEXT_LAYERS.index(layer)}"
            if layer == "store.memory":
                memories.append(Memory(id=f"private-{tag}", text=marked, category="other"))
            elif layer == "store.hot":
                store.remember(marked, "memory")
            elif layer == "store.session.title":
                store.sessions.add_session(f"s-{tag}", title=marked, source="cli")
                store.sessions.add_message(f"s-{tag}", "user", f"Turn {tag}: nothing to hide.")
            elif layer == "store.message":
                store.sessions.add_session(f"s-{tag}", title=f"Talk {tag}", source="cli")
                store.sessions.add_message(f"s-{tag}", "user", marked)
            elif layer == "store.wiki.body":
                _wiki(store, f"private-{tag}.md", {"title": f"Plans {tag}"}, f"Plans of the week.\n\n{marked}\n")
            elif layer == "store.entity":
                store.graph.add_entity(marker(f"{w} project"), "project")
                store.graph.add_triple(marker(f"{w} project"), "relates to", f"Plan {tag}")
            elif layer == "store.persona":
                persona.append(f"- {marked}")
            elif layer == "hermes.hot":
                hermes.memory_entries.append(marked)
            elif layer == "hermes.session.title":
                hermes.sessions.append(HermesSession(f"h-{tag}", title=marked, messages=[HermesMessage("user", "hi")]))
            elif layer == "hermes.message":
                hermes.sessions.append(
                    HermesSession(f"h-{tag}", title=f"Talk {tag}", messages=[HermesMessage("user", marked)])
                )
            elif layer == "hermes.persona":
                soul.append(f"- {marked}")
            elif layer == "palace.drawer":
                palace.drawers.append(Drawer(marked, wing="plans", room="weekend"))
            elif layer == "palace.entity":
                palace.entities.append(PalaceEntity(marker(f"{w} project"), "project"))
                palace.facts.append(Fact(marker(f"{w} project"), "relates to", f"Plan {tag}"))
    store.semantic.add(memories)
    for i, front in enumerate(set_module.FRONTMATTER_MARKERS):
        w = record(json.dumps(front, ensure_ascii=False, default=str), "store.wiki.frontmatter")
        _wiki(store, f"fm-private-{i}.md", {"title": f"Notes {w}", **front}, f"The {w} notes, kept to myself.\n")
    w = record("wiki/private/ folder", "store.wiki.folder")
    _wiki(store, f"private/notes-{w}.md", {"title": f"Notes {w}"}, f"The {w} notes, in the private folder.\n")
    for i, heading in enumerate(set_module.PERSONA_PRIVATE_HEADINGS):
        level = len(heading) - len(heading.lstrip("#")) or 2
        for layer, lines in (("store.persona.heading", persona), ("hermes.persona.heading", soul)):
            w = record(heading, layer)
            lines.append(
                f"\n{heading}\n\n- {w} lives at the blue house\n- ask {w} before the trip\n\n"
                f"{'#' * level} Public notes {i}\n\n- I like short answers.\n"
            )
    current = store.persona().text
    set_persona(store, current.rstrip("\n") + "\n\n" + "\n".join(persona) + "\n")
    hermes.soul = (hermes.soul or "").rstrip("\n") + "\n\n" + "\n".join(soul) + "\n"
    return records


def _wiki(store: Store, rel: str, front: dict[str, Any], body: str) -> None:
    path = store.wiki_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in front.items())
    path.write_text(f"---\n{head}\n---\n\n{body}", encoding="utf-8")


def _plant_ordinary(store: Store, ordinary: list[str]) -> None:
    store.semantic.add([Memory(id=f"ordinary-{i}", text=f"{_ordinary_tag(i)}m: {s}") for i, s in enumerate(ordinary)])
    for i, s in enumerate(ordinary):
        store.remember(f"[env] {_ordinary_tag(i)}h {s}", "memory")


def _ordinary_tag(i: int) -> str:
    return f"ordinary{i:03d}"


# ── finding needles in the site ──────────────────────────────────────────────────────────────────────


class SiteText:
    """Every file of a built site as one text in three spellings, each searched for many needles in one pass:
    `raw` as written, `decoded` with HTML entities and JSON / JavaScript escapes (`\\u0040`, `\\/`, `\\n`)
    undone, and `lower` (decoded, lower-cased)."""

    def __init__(self, site_dir: Path) -> None:
        self.paths: list[str] = []
        parts: dict[str, list[bytes]] = {"raw": [], "decoded": [], "lower": []}
        for path in sorted(Path(site_dir).rglob("*")):
            rel = path.relative_to(site_dir).as_posix()
            if path.is_file() and not SKIPPED.search(rel):
                text = path.read_bytes().decode("utf-8", "replace")
                decoded = decode_escapes(text)
                self.paths.append(rel)
                parts["raw"].append(text.encode("utf-8", "replace"))
                parts["decoded"].append(decoded.encode("utf-8", "replace"))
                parts["lower"].append(decoded.lower().encode("utf-8", "replace"))
        self.hays = {name: _joined(texts) for name, texts in parts.items()}

    def hay(self, name: str) -> bytes:
        return self.hays[name][0]

    def where(self, position: int, name: str, length: int) -> tuple[str, str]:
        """(file, excerpt of EXCERPT characters around the hit) for a position in text `name`."""
        hay, starts = self.hays[name]
        i = bisect.bisect_right(starts, position) - 1
        end = starts[i + 1] - 1 if i + 1 < len(starts) else len(hay)
        if name == "lower" and len(hay) == len(self.hay("decoded")):  # same offsets: show the original case
            hay = self.hay("decoded")
        pad = EXCERPT * 4  # bytes: enough characters on either side, whatever their width
        before = hay[max(starts[i], position - pad) : position].decode("utf-8", "ignore")
        hit = hay[position : position + length].decode("utf-8", "ignore")
        after = hay[position + length : min(end, position + length + pad)].decode("utf-8", "ignore")
        room = max(0, EXCERPT - len(hit))
        left = min(len(before), max(room // 2, room - len(after)))
        return self.paths[i], before[len(before) - left :] + hit + after[: room - left]

    def find(self, needles: Iterable[bytes], name: str) -> dict[bytes, int]:
        """The first position of each needle found in text `name`."""
        return first_positions(self.hay(name), set(needles))


_JS_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|\\([/\"'\\])|\\([nrt])")
_CONTROL = {"n": "\n", "r": "\r", "t": "\t"}


def decode_escapes(text: str) -> str:
    """`text` with JSON / JavaScript escapes and HTML entities undone (twice: either may hold the other)."""

    def char(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2)
        return chr(int(code, 16)) if code else m.group(3) or _CONTROL[m.group(4)]

    for _ in range(2):
        text = html.unescape(_JS_ESCAPE.sub(char, text)) if ("\\" in text or "&" in text) else text
    return text


def _joined(parts: list[bytes]) -> tuple[bytes, list[int]]:
    starts, at = [], 0
    for part in parts:
        starts.append(at)
        at += len(part) + 1
    return b"\0".join(parts), starts


def first_positions(hay: bytes, needles: set[bytes]) -> dict[bytes, int]:
    """The first position of each needle in `hay`. A needle of 8 bytes or more is looked for through the rarest
    of three of its 8-byte windows, one of 4 to 7 bytes through a 4-byte window (every window of `hay` passes a
    hashed table, then a sorted search), a shorter one with `bytes.find`."""
    found: dict[bytes, int] = {}
    for needle in needles:
        if len(needle) < 4 and (at := hay.find(needle)) >= 0:
            found[needle] = at
    for width in (8, 4):
        group = [n for n in needles if len(n) >= width and (width == 8 or len(n) < 8)]
        if group and len(hay) >= width:
            found.update(_first_by_window(hay, group, width))
    return found


def _first_by_window(hay: bytes, needles: list[bytes], width: int) -> dict[bytes, int]:
    def offsets(n: bytes) -> list[int]:
        return sorted({0, (len(n) - width) // 2, len(n) - width})

    counts = Counter(n[o : o + width] for n in needles for o in offsets(n))
    by_key: dict[int, list[tuple[bytes, int]]] = defaultdict(list)
    for n in needles:
        o = min(offsets(n), key=lambda o, n=n: counts[n[o : o + width]])
        by_key[int.from_bytes(n[o : o + width], "little")].append((n, o))
    dtype = np.dtype("<u8" if width == 8 else "<u4")
    keys = np.array(sorted(by_key), dtype=dtype)
    table = np.zeros(1 << 24, dtype=bool)
    table[_bucket(keys)] = True
    count = len(hay) - width + 1
    view = np.ndarray((count,), dtype=dtype, buffer=hay, strides=(1,))  # every window, unaligned
    found: dict[bytes, int] = {}
    for lo in range(0, count, 1 << 23):
        part = view[lo : lo + (1 << 23)]
        candidates = np.nonzero(table[_bucket(part)])[0]
        values = part[candidates]
        index = np.searchsorted(keys, values)
        index[index == len(keys)] = 0
        for at in candidates[keys[index] == values]:
            position = lo + int(at)
            for n, offset in by_key[int(part[at])]:
                start = position - offset
                if n not in found and start >= 0 and hay[start : start + len(n)] == n:
                    found[n] = start
    return found


def _bucket(values: np.ndarray) -> np.ndarray:
    """A 24-bit hash of each window (Fibonacci hashing)."""
    mixed = values.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return (mixed >> np.uint64(40)).astype(np.intp)


# ── classifying canaries ─────────────────────────────────────────────────────────────────────────────


def _bases(secret: str) -> set[str]:
    """The secret, with its whitespace folded, and each long line of a multi-line secret."""
    bases = {secret, " ".join(secret.split())}
    if "\n" in secret:
        bases |= {line.strip() for line in secret.splitlines() if len(line.strip()) >= FRAGMENT_FROM}
    return {b for b in bases if b.strip()}


def verbatim_forms(secret: str) -> set[str]:
    """The secret as an output may give it unchanged: as is, HTML-, JSON- or URL-escaped (the site's text with
    escapes undone is searched for `_bases` too, which covers any other mix of escapes)."""
    return {f for base in _bases(secret) for f in _escapes(base)}


def _escapes(s: str) -> set[str]:
    escaped = html.escape(s)
    as_json = json.dumps(s)[1:-1]
    forms = {
        s,
        escaped,
        html.escape(s, quote=False),
        escaped.replace("&#x27;", "&#39;"),
        as_json,
        json.dumps(s, ensure_ascii=False)[1:-1],
        as_json.replace("/", "\\/"),
        html.escape(as_json),
        quote(s),
        quote(s, safe=""),
        quote_plus(s),
    }
    return {f for f in forms if f.strip()}


def slug_forms(secret: str) -> set[str]:
    """The secret as a slug, an id or a file name may give it (memwiki's slugify, separators as - or _)."""
    from memwiki.site.model.concept_index import slugify

    low = secret.lower()
    forms = {slugify(secret), low.replace(" ", "_"), low.replace(" ", "-")}
    for sep in "-_":
        forms |= {re.sub(r"[\W_]+", sep, low).strip(sep), re.sub(r"\s+", sep, low)}
    return {f for f in forms if len(f) >= 8}


def _fragments(secret: str) -> dict[str, bool]:
    """The secret's 12-character windows (lower-cased), each with whether it looks random (a digit, or upper
    and lower case together); a window of plain words is evidence only beside the canary's tag."""
    if len(secret) < FRAGMENT_FROM:
        return {}
    out: dict[str, bool] = {}
    for i in range(len(secret) - FRAGMENT + 1):
        window = secret[i : i + FRAGMENT]
        if "\n" not in window and window.strip() == window:
            randomish = any(c.isdigit() for c in window) or (window.lower() != window and window.upper() != window)
            out[window.lower()] = out.get(window.lower(), False) or randomish
    return out


@dataclass
class _Needles:
    """What one canary is looked for as: needles per class, and those that count only beside its tag."""

    by_class: dict[str, set[bytes]]
    needs_tag: set[bytes]


def _needles(planted: list[Canary], public: str) -> dict[Canary, _Needles]:
    """Every canary's needles. One that another planted text holds too (a carrier's words, another secret or its
    slug, an ORDINARY string) or a fragment of plain words counts only beside the canary's own tag; a fragment
    another secret or a carrier holds is no evidence at all (a shared prefix is structure, not the secret); the
    same needle of several canaries is settled in `_first`."""
    blocks = [f"{public}\n{public.lower()}"]
    forms: dict[Canary, tuple[set[str], set[str], dict[str, bool]]] = {}
    for canary in planted:
        bases = {b.lower() for b in _bases(canary.secret)}
        slugs = slug_forms(canary.secret) - bases
        forms[canary] = (bases, slugs, _fragments(canary.secret))
        blocks.append("\n".join(sorted(_bases(canary.secret) | bases | slugs)))
    corpus = "\0".join(blocks).encode()
    starts = list(itertools.accumulate([0] + [len(b.encode()) + 1 for b in blocks]))
    looked_for = {n.encode() for c, (bases, slugs, _) in forms.items() for n in bases | slugs | _bases(c.secret)}
    first = first_positions(corpus, looked_for)
    windows: dict[str, set[int]] = defaultdict(set)  # fragment -> the canaries whose secret holds it
    for i, (_, _, fragments) in enumerate(forms.values()):
        for window in fragments:
            windows[window].add(i)
    public_windows = {public.lower()[i : i + FRAGMENT] for i in range(len(public) - FRAGMENT + 1)}
    out: dict[Canary, _Needles] = {}
    for i, (canary, (bases, slugs, fragments)) in enumerate(forms.items()):
        own = (starts[i + 1], starts[i + 2] - 1)

        def elsewhere(needle: bytes, own: tuple[int, int] = own) -> bool:
            at = first.get(needle, -1)
            if own[0] <= at < own[1]:
                at = corpus.find(needle, own[1])
            return at >= 0

        originals = _bases(canary.secret)
        needs_tag = {f.encode() for b in originals if elsewhere(b.encode()) for f in _escapes(b)}
        needs_tag |= {f.encode() for f in bases | slugs if elsewhere(f.encode())}
        fragments = {w: randomish for w, randomish in fragments.items() if len(windows[w]) == 1}
        fragments = {w: randomish for w, randomish in fragments.items() if w not in public_windows}
        needs_tag |= {w.encode() for w, randomish in fragments.items() if not randomish}
        out[canary] = _Needles(
            {
                "verbatim": {f.encode() for f in verbatim_forms(canary.secret)},
                "decoded": {b.encode() for b in originals},
                "lower-cased": {b.encode() for b in bases},
                "slugged": {f.encode() for f in slugs},
                "fragment": {w.encode() for w in fragments},
            },
            needs_tag,
        )
    return out


def _canary_leaks(
    text: SiteText, planted: list[Canary], set_module: ModuleType, ordinary: list[str]
) -> list[dict[str, Any]]:
    """Each canary found, in its worst class, with the first file and an excerpt."""
    public = " \n ".join(ordinary + [_carrier(make) for make in set_module.KINDS.values()])
    needles = _needles(planted, public)
    owners: dict[tuple[str, bytes], list[Canary]] = defaultdict(list)
    for canary, found in needles.items():
        keys = {("raw", n) for n in found.by_class["verbatim"]} | {("decoded", n) for n in found.by_class["decoded"]}
        keys |= {("lower", n) for c in CLASSES[1:] for n in found.by_class[c]}
        for key in keys:
            owners[key].append(canary)
    hits = {
        "raw": text.find((n for f in needles.values() for n in f.by_class["verbatim"]), "raw"),
        "decoded": text.find((n for f in needles.values() for n in f.by_class["decoded"]), "decoded"),
        "lower": text.find((n for f in needles.values() for c in CLASSES[1:] for n in f.by_class[c]), "lower"),
    }
    leaks = []
    for canary in planted:
        mine = needles[canary]
        for klass in CLASSES:
            texts = (("raw", "verbatim"), ("decoded", "decoded")) if klass == "verbatim" else (("lower", klass),)
            exact = klass in ("verbatim", "lower-cased")  # a shared needle near no tag: one secret drawn twice
            found = [
                (position, name)
                for name, kind in texts
                if (
                    position := _first(
                        text, name, canary, mine.by_class[kind], mine.needs_tag, hits[name], owners, exact
                    )
                )
            ]
            if found:
                (at, length), name = min(found)
                where, excerpt = text.where(at, name, length)
                leaks.append(
                    {
                        "kind": canary.kind,
                        "field": canary.field,
                        "class": klass,
                        "secret": canary.secret,
                        "tag": canary.tag,
                        "file": where,
                        "excerpt": excerpt,
                    }
                )
                break
    return leaks


def _carrier(make: Callable[[random.Random], tuple[str, str]]) -> str:
    """A kind's text without its secret (a few draws), i.e. the words around any secret of that kind."""
    rng = random.Random(7)
    out = []
    for _ in range(3):
        secret, text = make(rng)
        out.append(text.replace(secret, "\n"))
    return "\n".join(out)


def _first(
    text: SiteText,
    name: str,
    canary: Canary,
    needles: set[bytes],
    needs_tag: set[bytes],
    hits: dict[bytes, int],
    owners: dict[tuple[str, bytes], list[Canary]],
    exact: bool,
) -> tuple[int, int] | None:
    """The earliest hit in text `name` of `needles` that counts for `canary`, as (position, length).

    A short or all-digit needle counts only as a token of its own, the shortest only near the canary's tag. The
    same needle of several canaries counts for the owner whose tag is near the hit, else (`exact`: the same
    secret drawn twice, not two secrets with one slug) for the first owner; any other needle of `needs_tag` only
    near the canary's tag."""
    hay = text.hay(name)
    best: tuple[int, int] | None = None
    for needle in needles:
        if needle not in hits:
            continue
        short, size = len(needle) < SHORT, len(needle)
        token = short or (needle.isdigit() and size < 12)
        sharing = owners[(name, needle)]
        for at in _occurrences(hay, needle, hits[needle]):
            if token and (hay[at - 1 : at].isalnum() or hay[at + size : at + size + 1].isalnum()):
                continue
            if short and canary.tag and not _near(hay, at, size, canary.tag):
                continue
            if len(sharing) > 1:
                claims = [c for c in sharing if c.tag and _near(hay, at, size, c.tag)]
                if canary not in claims and (claims or not exact or sharing[0] is not canary):
                    continue
            elif needle in needs_tag and canary.tag and not _near(hay, at, size, canary.tag):
                continue
            if best is None or at < best[0]:
                best = (at, size)
            break
    return best


def _occurrences(hay: bytes, needle: bytes, first: int, limit: int = 1000) -> Iterator[int]:
    at, seen = first, 0
    while at >= 0 and seen < limit:
        yield at
        at, seen = hay.find(needle, at + 1), seen + 1


@functools.lru_cache(maxsize=65536)
def _tag_word(tag: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<!\w)" + re.escape(tag.encode()) + rb"(?!\w)")


def _near(hay: bytes, at: int, size: int, tag: str) -> bool:
    """Whether `tag` stands as a word within NEAR_TAG bytes of the hit at `at`."""
    return _tag_word(tag).search(hay, max(0, at - NEAR_TAG), at + size + NEAR_TAG) is not None


def _private_published(text: SiteText, records: list[PrivateRecord]) -> list[dict[str, Any]]:
    hits = text.find((r.word.encode() for r in records), "lower")
    out = []
    for r in records:
        if (at := hits.get(r.word.encode())) is not None:
            where, excerpt = text.where(at, "lower", len(r.word))
            out.append({"marker": r.marker, "layer": r.layer, "word": r.word, "file": where, "excerpt": excerpt})
    return out


def _ordinary_redacted(text: SiteText, ordinary: list[str]) -> list[dict[str, Any]]:
    """ORDINARY strings found nowhere in the site as they are (HTML- or JSON-escaped counts), each with where
    its L2 memory was published instead."""
    forms = {
        s: {
            f.encode()
            for f in (
                s,
                html.escape(s),
                html.escape(s, quote=False),
                html.escape(s).replace("&#x27;", "&#39;"),
                json.dumps(s)[1:-1],
                json.dumps(s, ensure_ascii=False)[1:-1],
            )
        }
        for s in ordinary
    }
    hits = text.find((f for fs in forms.values() for f in fs), "raw")
    decoded = text.find((s.encode() for s in ordinary), "decoded")
    tags = text.find((f"{_ordinary_tag(i)}m".encode() for i in range(len(ordinary))), "decoded")
    out = []
    for i, s in enumerate(ordinary):
        if s.encode() in decoded or any(f in hits for f in forms[s]):
            continue
        entry: dict[str, Any] = {"text": s, "file": None, "excerpt": None}
        if (at := tags.get(f"{_ordinary_tag(i)}m".encode())) is not None:
            entry["file"], entry["excerpt"] = text.where(at, "decoded", len(s) + 16)
        out.append(entry)
    return out
