"""Readers of other memory layouts behind the read-only `MemorySource` interface (never writing to them)."""

from memwiki.readers.combined import CombinedSource
from memwiki.readers.hermes import HermesHome
from memwiki.readers.mempalace import MemPalace
from memwiki.readers.open_sources import open_sources

__all__ = ["CombinedSource", "HermesHome", "MemPalace", "open_sources"]
