"""A tiny canary set in the blind sets' format: the harness's own test data (tests/blind/harness.py).

- KINDS: kind -> function(rng) -> (secret, text carrying it); the secret must not reach the site.
- CHINESE: the kinds phrased in Chinese.
- TEXT_MARKERS: ways to mark one note private inline.
- FRONTMATTER_MARKERS: frontmatter entries that mark a wiki page private.
- PERSONA_PRIVATE_HEADINGS: headings that open a private section of SOUL.md.
- ORDINARY: technical strings that are no secrets and must be published unchanged.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable


def _word(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


KINDS: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "deploy token": lambda r: (s := "dtk_" + _word(r, 28), f"deploy with token {s} on Fridays"),
    "router password zh": lambda r: (s := _word(r, 10) + "#4", f"家里路由器的密码是{s}，别外传"),
    "personal email": lambda r: (
        s := f"{_word(r, 7, string.ascii_lowercase)}.{_word(r, 4, string.ascii_lowercase)}@mailbox.org",
        f"write to {s} after the trip",
    ),
}

CHINESE: frozenset[str] = frozenset({"router password zh"})

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda t: f"[private] {t}",
    lambda t: f"{t} #private",
]

FRONTMATTER_MARKERS: list[dict] = [{"private": True}]

PERSONA_PRIVATE_HEADINGS: list[str] = ["## Private"]

ORDINARY: list[str] = [
    "pip install -e '.[test]'",
    "chromadb>=1.0,<2",
    "git rebase -i HEAD~3",
    "路由器在书房",
]
