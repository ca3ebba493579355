"""A second opinion before an entry sinks: does it read like a core entry, by meaning?

The rule classifier (`memwiki.layers.hot.categories`) knows words; it misses core entries phrased without them
(用户是素食者, "Address her as Dr. Chen"). Sinking a core entry is the costly error, so before the
overflow moves an entry the rules call non-core, its nearest labelled examples (shipped in
`memwiki/data/category_examples.jsonl`, Chinese and English) are asked: if most of its K nearest are
core, it stays hot. Only runs when something is about to sink, when the embedder is loaded anyway.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from memwiki.layers.hot.categories import is_core
from memwiki.text.embedders import Embedder

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "category_examples.jsonl"
K = 5  # neighbours asked; a majority of core neighbours keeps the entry hot


class CoreGuard:
    """Nearest-neighbour vote over labelled examples, with the store's embedder."""

    def __init__(self, embedder: Embedder, examples: Path = EXAMPLES) -> None:
        self.embedder = embedder
        self.examples = examples

    @cached_property
    def _labelled(self) -> tuple[np.ndarray, np.ndarray]:
        rows = [json.loads(line) for line in self.examples.read_text(encoding="utf-8").splitlines() if line.strip()]
        vectors = self.embedder.embed([r["text"] for r in rows])
        return vectors, np.array([is_core(r["category"]) for r in rows])

    def looks_core(self, texts: Sequence[str]) -> list[bool]:
        """For each text: do most of its K nearest labelled examples hold a core category?"""
        if not texts:
            return []
        vectors, core = self._labelled
        sims = self.embedder.embed(list(texts)) @ vectors.T
        nearest = np.argsort(-sims, axis=1)[:, :K]
        return [bool(core[row].mean() > 0.5) for row in nearest]
