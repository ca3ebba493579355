"""Primitives every part uses, none of them about memory: strict text files and atomic writes, times, JSONL,
SQLite, worker processes."""
