"""Recall over any `MemorySource`: a store, or a hermes home and a MemPalace palace read in place."""

from __future__ import annotations

from memwiki.errors import EmbedderMismatchError
from memwiki.recall.cascade import Recaller
from memwiki.recall.entity_pages import recall_pages
from memwiki.source import MemorySource
from memwiki.text.embedders import Embedder, USEEmbedder, label_of


def recaller_for(source: MemorySource, embedder: Embedder | None = None) -> Recaller:
    """The same priority-ordered recall as a store's, over whatever layers `source` has.

    The query is embedded with the embedder that made the source's L2 vectors (for a palace: memwiki's
    cache of its texts, never the palace's own vectors), so two embedders' vectors never meet.
    """
    own = getattr(source, "recaller", None)  # a store's reader: the store's own recall
    if callable(own):
        return own()
    embedder = embedder or getattr(source, "embedder", None) or USEEmbedder()
    l2 = source.l2_index()
    info = source.info()
    if l2 is not None and info.embedder != label_of(embedder):
        raise EmbedderMismatchError(
            f"{info.location}: its L2 vectors come from {info.embedder}/{info.dim}, not {embedder.identity()}"
        )
    return Recaller(
        embedder,
        hot_files=source.hot_files,
        l2=l2,
        sessions=source.search_sessions,
        wiki_pages=lambda: recall_pages(source),
        text_vectors=getattr(source, "text_vectors", None),
    )
