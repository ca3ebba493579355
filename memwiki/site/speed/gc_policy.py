"""Python's cyclic garbage collector during a build.

A build holds a large, long-lived heap (every layer's records, the text and page caches, the pages): each full
collection walks all of it again, and they took about a quarter of a 10k-page rebuild. The plugin `freeze`s
what it has loaded at a few points (those objects are then left out of later collections; reference
counting still frees them) and `thaw`s at the end, so a process that goes on (tests) collects as before.
`start` begins a build: after an earlier build in the same process (`mkdocs serve`), it first lets the
collector see that build's objects and collects them, so nothing a build left behind stays frozen. At
interpreter exit everything is frozen first: the final collection would only walk a heap that is about to
be freed anyway.

While the plugin reads the source and runs its builders (`paused`) the collector does not run at all: that
phase makes almost no cyclic garbage, and the collections it triggered while the heap grew from nothing took
0.6 s of a 1.6 s read. What it made is frozen when it ends. For the rest of a build (MkDocs renders the pages, the
site scan reads them) the young generation is collected every `BUILD_THRESHOLDS[0]` allocations instead of every
700: those phases allocate millions of short-lived objects that reference counting frees, and the young
collections they triggered found almost nothing to free. `thaw` puts the thresholds back.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
from collections.abc import Iterator
from contextlib import contextmanager

_state = {"frozen": False, "exit_hook": False}
BUILD_THRESHOLDS = (200_000, 50, 1000)
_before: list[tuple[int, int, int]] = []  # the thresholds to put back


def start() -> None:
    """A build begins: collect what an earlier build in this process left, then freeze what is here (modules,
    MkDocs' and the theme's objects)."""
    if _state["frozen"]:
        gc.unfreeze()
        gc.collect()
    if not _before:
        _before.append(gc.get_threshold())
        gc.set_threshold(*BUILD_THRESHOLDS)
    freeze()


def freeze() -> None:
    """Leave every object allocated so far out of later collections (until `thaw` or the next `start`)."""
    gc.freeze()
    _state["frozen"] = True
    if not _state["exit_hook"]:
        _state["exit_hook"] = True
        atexit.register(gc.freeze)


def thaw() -> None:
    """Let the collector see every object again, at its usual thresholds."""
    gc.unfreeze()
    _state["frozen"] = False
    if _before:
        gc.set_threshold(*_before.pop())


def release() -> None:
    """After a large part of the heap was let go: give the freed memory back to the system (glibc keeps freed
    pages of its heap for later use: a forked page writer or scan would count them as its own). The frozen heap
    is not collected: reference counting freed what was let go but cycles (kept to the next build's `start`), and
    a full collection of a 100k build's heap took 1.6 s."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


@contextmanager
def paused() -> Iterator[None]:
    """No collection inside; what was allocated is frozen at the end, and the collector runs as before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        freeze()
        if enabled:
            gc.enable()
