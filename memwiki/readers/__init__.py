"""Readers of other memory layouts behind the read-only `MemorySource` interface (never writing to them)."""

from memwiki.readers.combined import CombinedSource
from memwiki.readers.hermes import HermesHome
from memwiki.readers.locate import open_sources
from memwiki.readers.mempalace import MemPalace

__all__ = ["CombinedSource", "HermesHome", "MemPalace", "open_sources"]
