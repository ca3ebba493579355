"""Python's cyclic garbage collector during a build.

A build holds a large, long-lived heap (every layer's records, the text and page caches, the pages): each full
collection walks all of it again, and they took about a quarter of a 10k-page rebuild. The plugin `freeze`s
what it has loaded at a few points (those objects are then left out of later collections; reference
counting still frees them) and `thaw`s at the end of the build, so a process that goes on (tests, `mkdocs
serve`) collects as before. At interpreter exit everything is frozen first: the final collection would only
walk a heap that is about to be freed anyway.
"""

from __future__ import annotations

import atexit
import gc

_frozen = False


def freeze() -> None:
    """Leave every object allocated so far out of later collections (until `thaw`)."""
    global _frozen
    gc.freeze()
    if not _frozen:
        _frozen = True
        atexit.register(gc.freeze)  # registered once per process


def thaw() -> None:
    """Let the collector see every object again."""
    gc.unfreeze()
