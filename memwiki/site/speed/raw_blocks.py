"""Keep generated HTML away from Python-Markdown: blocks out before it runs, back in after.

The builders' pages are mostly raw HTML blocks (rendered memory text, tables, lists) between a few
Markdown headings. Python-Markdown would feed every block through its HTML parser only to pass it on
unchanged. `split()` swaps each whole top-level block for a one-word
placeholder paragraph, so Markdown only sees the headings and short text (its table of contents and
heading anchors stay as they were); `join()` puts the blocks back into the rendered HTML.
"""

from __future__ import annotations

import re
import secrets

_BLOCK_TAGS = frozenset(
    "address article aside blockquote details dialog div dl fieldset figure footer form h1 h2 h3 h4 h5 h6 header "
    "hr iframe main nav noscript ol p pre script section style table ul".split()
)
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")
_FIRST_TAG = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)[\s>]")


def new_nonce() -> str:
    """A per-build token, so memory text cannot spell a placeholder."""
    return secrets.token_hex(6)


def _whole_block(chunk: str) -> bool:
    """True when `chunk` is one or more complete block-level HTML elements Python-Markdown would pass on."""
    if not chunk.startswith("<") or not chunk.endswith(">"):
        return False
    match = _FIRST_TAG.match(chunk)
    if match is None or match.group(1).lower() not in _BLOCK_TAGS:
        return False
    tag = match.group(1)
    opens = len(re.findall(rf"<{tag}[\s>]", chunk, re.IGNORECASE))
    return opens == len(re.findall(rf"</{tag}\s*>", chunk, re.IGNORECASE))


def split(markdown: str, nonce: str) -> tuple[str, list[str]]:
    """(Markdown with each whole raw HTML block replaced by a placeholder paragraph, the blocks in order)."""
    blocks: list[str] = []
    out: list[str] = []
    for chunk in _PARAGRAPHS.split(markdown):
        body = chunk.strip("\n")
        if _whole_block(body):
            out.append(f"mwraw{nonce}x{len(blocks)}")
            blocks.append(body)
        else:
            out.append(chunk)
    return "\n\n".join(out), blocks


def join(html: str, nonce: str, blocks: list[str]) -> str:
    """The rendered HTML with each placeholder paragraph replaced by its block."""
    if not blocks:
        return html
    return re.sub(rf"<p>mwraw{nonce}x(\d+)</p>", lambda m: blocks[int(m.group(1))], html)
