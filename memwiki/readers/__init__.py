"""Readers of other memory layouts behind the read-only `MemorySource` interface (never writing to them): a
hermes-agent home, a MemPalace palace, Chroma's file read directly, several sources combined into one, and memwiki's
own vectors for a source whose vectors it cannot use (`vector_cache`). Where those layouts live is `locate`."""

from memwiki.readers.combined import CombinedSource
from memwiki.readers.hermes import HermesHome
from memwiki.readers.mempalace import MemPalace

__all__ = ["CombinedSource", "HermesHome", "MemPalace"]
