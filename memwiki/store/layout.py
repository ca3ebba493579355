"""Where each layer lives in a store folder (what the store writes and its reader reads)::

    store.json              settings: caps, overflow threshold, embedder (name + dimension), where L2 lives
    SOUL.md                 L0 persona
    MEMORY.md, USER.md      L1 hot memory, hermes-agent format (+ .lock files)
    sinks.jsonl             what sank from L1 into L2, when and why
    l2/                     L2 semantic memory (Chroma) and its lexical side index; with `chroma.url` set the
                            Chroma collection is on that server, and l2/ holds the lexical index only
    knowledge_graph.sqlite3 L3 knowledge graph, MemPalace's schema
    sessions.sqlite3        L4 session history with FTS5
    wiki/                   hand-written Markdown concept pages
    vectors/                vectors of session turns, wiki and entity pages, hot entries: one SQLite file per
                            embedder, by text (memwiki.text.vectors); and recall's files layer as of the wiki's
                            and the graph's last state (files_layer.sqlite3, memwiki.recall.files_layer); nothing in it
                            that cannot be made again

Every name here is the one place that name is written; memwiki's own cache, outside any source, is
`default_cache_dir()`.
"""

from __future__ import annotations

import os
from pathlib import Path

STORE_FILE = "store.json"
PERSONA_FILE = "SOUL.md"
HOT_FILES = {"memory": "MEMORY.md", "user": "USER.md"}  # L1, by target
LAYER_PATHS = {
    "persona": PERSONA_FILE,
    "sinks": "sinks.jsonl",
    "l2": "l2",
    "graph": "knowledge_graph.sqlite3",
    "sessions": "sessions.sqlite3",
    "wiki": "wiki",
    "vectors": "vectors",
}
FILES_LAYER = "files_layer.sqlite3"  # in vectors/: recall's files layer as of its last state


def is_store(folder: Path) -> bool:
    """Whether `folder` holds a memwiki store (its settings file)."""
    return (Path(folder) / STORE_FILE).is_file()


def default_cache_dir() -> Path:
    """memwiki's cache root: $XDG_CACHE_HOME/memwiki, else ~/.cache/memwiki."""
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "memwiki"
