"""The plugin's cache files: written in one step, read back only when this code, in this version, wrote them.

Caches hold plain data only (marshal: dicts, lists, tuples, strings, numbers, bytes): loading one never runs
code, whoever wrote the folder. Each file carries a version key (`version`: a hash of the plugin's and the
store's code, plus what the caller adds); a file with another key, or that does not load, counts as absent.
No fsync: a cache lost to a power cut is only made again.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

_PACKAGES = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "memory")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of the plugin's and the store's code (what makes every cached value)."""
    digest = hashlib.sha1()
    for root in _PACKAGES:
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root.parent).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def version(*parts: object) -> str:
    """The version key of a cache file: the code, marshal's format and the caller's `parts`."""
    return hashlib.sha1(repr((code_digest(), marshal.version, parts)).encode()).hexdigest()


def replace_file(path: Path | str, data: bytes) -> None:
    """Write `data` to `path` in one step (a temporary file renamed over it); folders are made."""
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def dump(path: Path, key: str, value: Any) -> bool:  # noqa: ANN401 - plain data
    """Save `value` under version `key`; False (nothing written) when it is not plain data."""
    try:
        data = marshal.dumps((key, value))
    except ValueError:
        return False
    replace_file(path, data)
    return True


def load(path: Path, key: str) -> Any:  # noqa: ANN401 - plain data
    """The value saved under version `key`, or None."""
    try:
        saved = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if isinstance(saved, tuple) and len(saved) == 2 and saved[0] == key:
        return saved[1]
    return None
