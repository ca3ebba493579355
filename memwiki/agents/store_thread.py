"""One thread that owns a store: it opens it and runs every call on it, one at a time.

A store's SQLite connections belong to the thread that opened them, and an agent host calls from several threads
(the MCP SDK's event loop; hermes-agent's agent, prefetch and sync threads). Every call goes through this thread,
so the connections stay on theirs and two calls never meet inside the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class StoreThread:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwiki-store")

    def call(self, work: Callable[[], T]) -> T:
        """`work()` on the store's thread; waits for it (its exception is raised here)."""
        return self._pool.submit(work).result()

    async def acall(self, work: Callable[[], T]) -> T:
        """`work()` on the store's thread, awaited from an event loop."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
