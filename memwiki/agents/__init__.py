"""What agents and people call: the command line (`cli`), the MCP server, the hermes-agent provider and its
installer, the JSON they answer in, per-layer counts, `memwiki site new`, and the thread that owns an open store."""
