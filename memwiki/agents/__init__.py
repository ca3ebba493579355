"""What agents and people call: the command line (`cli`), the MCP server (`mcp_server`) and the hermes-agent
provider with its installer, all over the same tools (`tools`: plain functions over what is open, a store or read-only
sources); the JSON they answer in, `memwiki site new`, and the thread that owns an open store."""
