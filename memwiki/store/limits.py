"""The hard size limit on inputs (`store.json` `limits.max_input_bytes`): checked before anything is parsed,
embedded or written, so that an oversized input costs a quick error, not the machine's memory."""

from __future__ import annotations

from pathlib import Path

from memwiki.common.jsonl import _open
from memwiki.common.textio import utf8_size
from memwiki.errors import InputTooLargeError

_CHUNK = 1 << 20


def megabytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _advice(limit: int) -> str:
    return f"the limit is {megabytes(limit)} ({limit:,} bytes, store.json limits.max_input_bytes)"


def check_line_sizes(path: Path, limit: int) -> None:
    """Refuse a JSONL file with a line of more than `limit` bytes (InputTooLargeError naming the first such line
    and how many there are). Reads the file in 1 MB chunks: no line is ever held whole."""
    path = Path(path)
    over: list[tuple[int, int]] = []  # (line number, bytes) of oversized lines
    line_no, length = 1, 0
    with _open(path) as fh:
        while chunk := fh.read(_CHUNK):
            pos = 0
            while (nl := chunk.find(b"\n", pos)) != -1:
                length += nl - pos
                if length > limit:
                    over.append((line_no, length))
                line_no, length, pos = line_no + 1, 0, nl + 1
            length += len(chunk) - pos
    if length > limit:
        over.append((line_no, length))
    if over:
        first, size = over[0]
        others = f" ({len(over) - 1:,} more line(s) over it)" if len(over) > 1 else ""
        raise InputTooLargeError(
            f"{path}:{first}: this line is {megabytes(size)}, over the hard limit per input{others}; "
            f"nothing was imported: split or shorten it, or raise the limit ({_advice(limit)})"
        )


def check_text_size(text: str, limit: int, what: str) -> None:
    """Refuse one text of more than `limit` UTF-8 bytes (`what` names it: "memory 'm-1'")."""
    if len(text) * 4 > limit and (size := utf8_size(text)) > limit:
        raise InputTooLargeError(
            f"{what} is {megabytes(size)}, over the hard limit per input; nothing was written ({_advice(limit)})"
        )
