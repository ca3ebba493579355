"""The one JSONL reader of memwiki: one JSON object a line, errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memwiki.errors import InputFormatError

_BOM = "\ufeff"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _open(path: Path):
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputFormatError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFormatError(f"{path}: is a folder, not a JSONL file") from None
    except PermissionError:
        raise InputFormatError(f"{path}: permission denied") from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a JSONL file.

    Invalid UTF-8, invalid JSON, or a line that is not a JSON object raises InputFormatError naming
    the file and line. A UTF-8 byte-order mark on the first line is tolerated.
    """
    path = Path(path)
    with _open(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputFormatError(f"{path}:{lineno}: invalid UTF-8 (byte {exc.start} of the line)") from None
            if lineno == 1 and line.startswith(_BOM):
                line = line[1:]
            if not line.strip():
                continue
            try:
                obj = json.loads(line, parse_constant=_reject_constant)
            except (json.JSONDecodeError, ValueError) as exc:
                raise InputFormatError(f"{path}:{lineno}: invalid JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise InputFormatError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def count_lines(path: Path) -> int:
    """Number of lines in a file (a last line without a newline counts), for progress bars."""
    path = Path(path)
    count = 0
    last = b"\n"
    with _open(path) as fh:
        while chunk := fh.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")
