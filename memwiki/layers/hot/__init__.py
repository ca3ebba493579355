"""L1 hot memory: the two files in hermes-agent's format (`files`), the categories of their entries, and what sinks
into L2 past the threshold (`overflow`, with `core_by_meaning`'s second opinion by meaning)."""
