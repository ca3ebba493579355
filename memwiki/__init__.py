"""memwiki's memory store: five layers (persona, hot memory, semantic memory, knowledge graph,
session history), recall in priority order, overflow from hot memory into semantic memory."""

from memwiki.errors import MemwikiError

__all__ = ["MemwikiError"]
