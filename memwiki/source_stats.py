"""What each layer of a read-only source holds (`memwiki stats` and the MCP server over a hermes home or a palace)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from memwiki.source import MemorySource


def source_stats(source: MemorySource) -> dict[str, Any]:
    """Counts per layer of `source`, with its kind, location and embedder."""
    return {
        "source": asdict(source.info()),
        "L1": {f.target: {"entries": len(f.entries), "chars": f.chars, "cap": f.cap} for f in source.hot_files()},
        "L2": {"memories": source.memory_count()},
        "L3": {"entities": len(source.entities()), "triples": len(source.triples())},
        "L4": {"sessions": len(source.sessions())},
    }
