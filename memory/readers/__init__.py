"""Readers of other memory layouts behind the read-only `MemorySource` interface (never writing to them)."""

from memory.readers.combined import CombinedSource
from memory.readers.hermes import HermesHome
from memory.readers.locate import open_sources
from memory.readers.mempalace import MemPalace

__all__ = ["CombinedSource", "HermesHome", "MemPalace", "open_sources"]
