"""What every page builder is given: the source through the privacy gate, the build's settings, and the door
to everything that makes a build fast (speed.builder_speed). Builders depend on this module, the records of
`memwiki.source` and small helpers of this package, never on MkDocs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.source import MemorySource

T = TypeVar("T")


@runtime_checkable
class GatedSource(MemorySource, Protocol):
    """A source seen through the privacy gate (memwiki.site.gate.filter): the only kind a builder is given."""

    @property
    def profile(self) -> str:
        """The profile, "public" or "private" (see memwiki.site.gate.filter)."""
        ...

    def withheld(self) -> dict[str, dict[str, int]]:
        """What the gate withheld, per layer and kind: counts, never values."""
        ...


@dataclass(frozen=True)
class BuildSettings:
    """What the site's configuration says about its pages: the same for every page of a build (every memo key
    includes `memo_key()`, see BuildSpeed)."""

    directory_urls: bool = False
    today: str = ""  # the day that counts as today for expired facts ("YYYY-MM-DD"; "" = the real date)
    graph_max_nodes: int = 300
    audit_errors: tuple[str, ...] = ()  # audit kinds that are build warnings

    def day(self) -> str:
        return self.today or datetime.now(UTC).strftime("%Y-%m-%d")

    def memo_key(self) -> tuple[object, ...]:
        """What memoised pages depend on: every setting (a new one included by itself) but `audit_errors`, which
        only the audit page shows (made every build), so that making a finding a build error does not remake
        the whole site; `today` as the day it stands for."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "audit_errors"}
        return tuple(sorted({**values, "today": self.day()}.items()))


@dataclass
class BuildContext:
    """One build, as the builders see it. A source that has not been through the gate is put through it with
    the default (public) rules here, so no builder ever reads around it."""

    source: GatedSource
    settings: BuildSettings = field(default_factory=BuildSettings)
    speed: BuildSpeed = field(default_factory=BuildSpeed)
    notes: list[str] = field(default_factory=list)  # things a person should see on the audit page
    _parts: dict[type, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.source, GatedSource):
            from memwiki.site.gate.filter import PrivacyFilter

            self.source = PrivacyFilter(self.source)

    def let_go(self) -> None:
        """The build is over: its parts are dropped and its source closed."""
        self._parts.clear()
        self.source.close()

    def part(self, kind: type[T], make: Callable[[BuildContext], T] | None = None) -> T:
        """The build's one `kind` (the site's records, the graph index, the audit's findings, ...): made on first
        use by `make(self)` (default `kind(self)`), then shared by every builder."""
        found = self._parts.get(kind)
        if found is None:
            found = self._parts[kind] = (make or kind)(self)
        return found
