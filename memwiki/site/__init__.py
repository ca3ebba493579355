"""memwiki MkDocs plugin: publishes a memory store as a static wiki."""
