"""Work shared between this process and worker processes: how many cores there are, and a loop that hands
chunks to a pool while this process does chunks too.

A spawned worker starts in a second or so (an interpreter and its imports); a caller that only waited for it
would lose that second and a core. `share_out` gives the pool chunks from the front of the list and does
chunks from the back itself until the two meet, so the work ends about when the slowest chunk does.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, TypeVar

C = TypeVar("C")
R = TypeVar("R")


def cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def spawned_pool(workers: int, initializer: Callable[..., None] | None = None, *initargs: Any) -> ProcessPoolExecutor:  # noqa: ANN401
    """A pool of `workers` spawned processes (spawn, not fork: a fork of a build copies Chroma's and the build's
    threads' locks, and a Go library's runtime without its threads; both have hung a forked child)."""
    context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(workers, mp_context=context, initializer=initializer, initargs=initargs)


def share_out(
    chunks: Sequence[C],
    here: Callable[[C], R],
    pool: ProcessPoolExecutor | None,
    there: Callable[[C], R],
    in_flight: int,
) -> list[R]:
    """`[here(c) for c in chunks]`, with the pool doing some of them as `there(c)` (a module-level function that
    gives the same result in a worker): at most `in_flight` chunks are in the pool at a time (two per worker keep
    each busy), and this process takes chunks from the back meanwhile."""
    if pool is None or len(chunks) < 2:
        return [here(c) for c in chunks]
    results: dict[int, R] = {}
    pending: dict[Future[R], int] = {}
    head, tail = 0, len(chunks)
    while head < tail or pending:
        while head < tail and len(pending) < in_flight:
            pending[pool.submit(there, chunks[head])] = head
            head += 1
        for future in [f for f in pending if f.done()]:
            results[pending.pop(future)] = future.result()
        if head < tail:
            tail -= 1
            results[tail] = here(chunks[tail])
        elif pending:
            wait(pending, return_when=FIRST_COMPLETED)
    return [results[i] for i in range(len(chunks))]
