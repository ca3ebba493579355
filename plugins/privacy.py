"""The one privacy filter between a memory source and every page builder, the search index and the graph.

`PrivacyFilter` wraps any `MemorySource` and is itself one: what it drops or redacts cannot reach any
output, because builders only ever see the wrapped source.

Options (plugin config `privacy:`):
- `private_markers`: a record whose text holds one of these is dropped (default `[private]`, `#private`,
  `<private>`, `[私密]`);
- `exclude_categories`, `exclude_wings`: L2 memories (and hot entries, by category) dropped;
- `redact`: regular expressions whose matches become `[redacted]` (defaults catch API keys, bearer
  tokens and `password=` values).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from memory.errors import MemwikiError
from memory.snapshot import (
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

REDACTED = "[redacted]"
DEFAULT_MARKERS = ("[private]", "#private", "<private>", "[私密]")
DEFAULT_REDACT = (
    r"\bsk-[A-Za-z0-9_-]{16,}",  # OpenAI-style secret keys
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}",
    r"(?i)(?<=password[=:])\s*\S+",
    r"(?i)(?<=密码[:：=])\s*\S+",
)


@dataclass(frozen=True)
class PrivacyRules:
    """What the filter removes; built from the plugin's `privacy:` option."""

    markers: tuple[str, ...] = DEFAULT_MARKERS
    exclude_categories: frozenset[str] = frozenset()
    exclude_wings: frozenset[str] = frozenset()
    redact: tuple[re.Pattern[str], ...] = field(default_factory=lambda: tuple(re.compile(p) for p in DEFAULT_REDACT))

    @classmethod
    def from_options(cls, options: dict[str, Any] | None) -> PrivacyRules:
        options = options or {}
        try:
            patterns = tuple(re.compile(p) for p in options.get("redact", DEFAULT_REDACT))
        except re.error as exc:
            raise MemwikiError(f"privacy.redact: invalid regular expression ({exc})") from None
        return cls(
            markers=tuple(options.get("private_markers", DEFAULT_MARKERS)),
            exclude_categories=frozenset(options.get("exclude_categories", ())),
            exclude_wings=frozenset(options.get("exclude_wings", ())),
            redact=patterns,
        )

    def fingerprint(self) -> str:
        raw = [
            self.markers,
            sorted(self.exclude_categories),
            sorted(self.exclude_wings),
            [p.pattern for p in self.redact],
        ]
        return hashlib.sha1(json.dumps(raw).encode()).hexdigest()

    def private(self, text: str) -> bool:
        low = text.casefold()
        return any(m.casefold() in low for m in self.markers)

    def clean(self, text: str) -> str:
        for pattern in self.redact:
            text = pattern.sub(REDACTED, text)
        return text


class PrivacyFilter:
    """A `MemorySource` that shows another one minus what the rules remove."""

    def __init__(self, source: MemorySource, rules: PrivacyRules | None = None, base_dir: Path | None = None) -> None:
        self.source = source
        self.rules = rules or PrivacyRules()
        self._hidden_entities: set[str] | None = None
        # Local paths say who built the site and where: shown relative to the site's folder, or from ~.
        prefixes = {str(Path.home()): "~"}
        if base_dir is not None:
            prefixes[str(Path(base_dir).resolve())] = "."
        self._prefixes = sorted(prefixes.items(), key=lambda kv: -len(kv[0]))

    def local(self, text: str) -> str:
        """`text` with the build machine's folders shortened (`/home/lin/site/x` → `./x`, `/home/lin` → `~`)."""
        for prefix, short in self._prefixes:
            text = text.replace(prefix + "/", short + "/").replace(prefix, short)
        return text

    def _keep_memory(self, memory: Memory) -> bool:
        r = self.rules
        return not (r.private(memory.text) or memory.category in r.exclude_categories or memory.wing in r.exclude_wings)

    def _memory(self, memory: Memory) -> Memory:
        return replace(memory, text=self.rules.clean(memory.text))

    def info(self) -> SourceInfo:
        info = self.source.info()
        return replace(info, location=self.local(info.location), notes=tuple(self.local(n) for n in info.notes))

    def persona(self) -> Persona | None:
        persona = self.source.persona()
        return replace(persona, text=self.rules.clean(persona.text), path=self.local(persona.path)) if persona else None

    def hot_files(self) -> Sequence[HotFile]:
        r = self.rules
        out = []
        for hot in self.source.hot_files():
            entries = tuple(
                replace(e, text=r.clean(e.text))
                for e in hot.entries
                if not r.private(e.text) and e.category not in r.exclude_categories
            )
            out.append(replace(hot, entries=entries, path=self.local(hot.path)))
        return out

    def sinks(self) -> Sequence[SinkRecord]:
        r = self.rules
        return [
            replace(s, text=r.clean(s.text))
            for s in self.source.sinks()
            if not r.private(s.text) and s.category not in r.exclude_categories
        ]

    def memories(self) -> Iterator[Memory]:
        for memory in self.source.memories():
            if self._keep_memory(memory):
                yield self._memory(memory)

    def memory_count(self) -> int:
        return sum(1 for _ in self.memories())

    def memory_vectors(self, ids: Sequence[str]) -> np.ndarray | None:
        return self.source.memory_vectors(ids)

    def search_memories(self, vector: np.ndarray, k: int) -> list[ScoredMemory]:
        hits = self.source.search_memories(vector, k * 2 + 10)
        return [replace(h, memory=self._memory(h.memory)) for h in hits if self._keep_memory(h.memory)][:k]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Pass the source's embedder through when it has one (AttributeError otherwise)."""
        return self.source.embed(texts)  # type: ignore[attr-defined]

    def _hidden(self) -> set[str]:
        """Entities whose name is private: they and their facts are dropped."""
        if self._hidden_entities is None:
            self._hidden_entities = {e.id for e in self.source.entities() if self.rules.private(e.name)}
        return self._hidden_entities

    def entities(self) -> Sequence[Entity]:
        hidden = self._hidden()
        return [e for e in self.source.entities() if e.id not in hidden]

    def triples(self) -> Sequence[Triple]:
        hidden, r = self._hidden(), self.rules
        return [
            replace(t, source=r.clean(t.source))
            for t in self.source.triples()
            if t.subject not in hidden and t.object not in hidden and not r.private(t.source)
        ]

    def sessions(self) -> Sequence[Session]:
        r = self.rules
        return [replace(s, title=r.clean(s.title)) for s in self.source.sessions() if not r.private(s.title)]

    def messages(self, session_id: str) -> Sequence[Message]:
        r = self.rules
        return [
            replace(m, content=r.clean(m.content)) for m in self.source.messages(session_id) if not r.private(m.content)
        ]

    def search_sessions(self, query: str, limit: int = 10) -> list[SessionHit]:
        r = self.rules
        return [
            replace(h, snippets=tuple(r.clean(s) for s in h.snippets if not r.private(s)))
            for h in self.source.search_sessions(query, limit)
            if not r.private(h.session.title)
        ]

    def wiki_pages(self) -> Sequence[WikiPage]:
        r = self.rules
        return [
            replace(p, body=r.clean(p.body))
            for p in self.source.wiki_pages()
            if not r.private(p.body) and not r.private(p.title) and not any(r.private(t) for t in p.tags)
        ]

    def fingerprint(self) -> str:
        return hashlib.sha1(f"{self.source.fingerprint()}:{self.rules.fingerprint()}".encode()).hexdigest()

    def layer_fingerprints(self) -> dict[str, str]:
        """The source's per-layer fingerprints with the rules folded in ({} when the source has none)."""
        get = getattr(self.source, "layer_fingerprints", None)
        rules = self.rules.fingerprint()
        return {k: hashlib.sha1(f"{v}:{rules}".encode()).hexdigest() for k, v in (get() if get else {}).items()}
