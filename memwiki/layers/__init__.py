"""The layers, one module or folder each: L0 persona, L1 hot memory (`hot/`), L2 semantic memory (`semantic/`), L3
knowledge graph (`graph`, with the entity types a graph does not record), L4 session history (`sessions`), and the
wiki's own pages (`wiki`); `turn_block` is the persona and hot memory as injected into every turn."""
