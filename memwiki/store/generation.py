"""A folder's generation: a token every writer replaces after a write, so that other processes know to reload.

Chroma's embedded client loads a collection's vector index into memory once and never reads it from disk again,
and a process that writes from a stale index overwrites what others wrote (rows then fail with "Error finding
id"). So every process that writes L2's folder replaces its generation file after the write is on disk (under
the write lock), and every process compares the file with the token it loaded before it reads or writes:
different, it reloads. Reading the token is one small file read; replacing it is atomic (`os.replace`).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

GENERATION_FILE = ".generation"
WRITE_LOCK = ".writes.lock"  # in the same folder: one process writes at a time (memwiki.layers.semantic.memory)


def read_generation(folder: Path) -> str:
    """The folder's current token ("" before the first write that made one)."""
    try:
        return (Path(folder) / GENERATION_FILE).read_text(encoding="ascii")
    except (FileNotFoundError, UnicodeDecodeError):
        return ""


def bump_generation(folder: Path) -> str:
    """Replace the folder's token with a new one (atomically) and return it."""
    token = f"{os.getpid()}-{secrets.token_hex(8)}"
    path = Path(folder) / GENERATION_FILE
    tmp = path.with_name(f"{GENERATION_FILE}.{os.getpid()}.tmp")
    tmp.write_text(token, encoding="ascii")
    os.replace(tmp, path)
    return token
