"""The one JSONL reader of memwiki: one JSON object a line, errors that name the file and line."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memwiki.errors import InputFormatError

_BOM = "\ufeff"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


MAX_DEPTH = 64  # objects and lists inside each other: deeper is no memory record, and Python's parser would overflow


def _open(path: Path):
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputFormatError(f"{path}: no such file") from None
    except PermissionError:
        raise InputFormatError(f"{path}: permission denied") from None
    if stat.S_ISDIR(mode):
        raise InputFormatError(f"{path}: is a folder, not a JSONL file")
    if not stat.S_ISREG(mode):  # a FIFO or a device would block the reader, or never end
        raise InputFormatError(f"{path}: not a regular file (a pipe, a socket or a device): save it to a file first")
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
            if _too_deep(line):
                raise InputFormatError(f"{path}:{lineno}: nested more than {MAX_DEPTH} deep")
            try:
                obj = json.loads(line, parse_constant=_reject_constant)
            except (json.JSONDecodeError, ValueError) as exc:
                raise InputFormatError(f"{path}:{lineno}: invalid JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise InputFormatError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            if (field := unpaired_surrogate(obj)) is not None:
                raise InputFormatError(
                    f"{path}:{lineno}: {field or 'a key'} holds a lone surrogate (an escape like \\ud800 that is "
                    "half of a character): not text any layer can store"
                )
            yield lineno, obj


def _too_deep(line: str) -> bool:
    """Whether brackets nest more than MAX_DEPTH deep (counted outside strings, before parsing)."""
    if line.count("{") + line.count("[") <= MAX_DEPTH:
        return False
    depth = 0
    in_string = escaped = False
    for c in line:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif c in "}]":
            depth -= 1
    return False


def unpaired_surrogate(value: object, where: str = "") -> str | None:
    """The field (dotted path, "" for the top) of the first string or key holding a lone surrogate, else None."""
    if isinstance(value, str):
        return None if _encodable(value) else where
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and not _encodable(key):
                return where or "a key"
            if (found := unpaired_surrogate(item, here)) is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if (found := unpaired_surrogate(item, f"{where}[{i}]")) is not None:
                return found
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
