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
                            embedder, by text (memwiki.text_vectors); and recall's files layer as of the wiki's
                            and the graph's last state (files_layer.sqlite3, memwiki.files_index); nothing in it
                            that cannot be made again

`store.json` is `memwiki.config.STORE_FILE`; the L1 files are `memwiki.hot.FILE_NAMES`.
"""

LAYER_PATHS = {
    "persona": "SOUL.md",
    "sinks": "sinks.jsonl",
    "l2": "l2",
    "graph": "knowledge_graph.sqlite3",
    "sessions": "sessions.sqlite3",
    "wiki": "wiki",
    "vectors": "vectors",
}
