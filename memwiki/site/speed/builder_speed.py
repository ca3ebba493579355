"""What a page builder is given to be fast: the one door between the builders and everything kept across builds
or run beside them.

- `cache_path(name)`, `load(name, key)`, `keep(name, key, value)`: a file of the plugin's cache folder, in the
  one cache format (speed.cache_file); when caches are off (`page_cache: false`, or no cache folder) nothing
  derived from the memory is kept, by anyone.
- `memo(name)`: a builder's memo of its pages (speed.memo). Every key it makes includes the build's settings and
  how names resolve (`shared`), so a builder names only what one page shows.
- `apart(name, work)` / `beside(work)`: work handed off while the other builders run. `apart` is pure Python
  (pyvis drawing): a forked process when the build may fork, its result sent back as a cache file; else it runs
  when its result is first asked for. `beside` spends its time in NumPy (embedding), which lets other Python
  run: a thread. A process is never forked while a thread of this runs (a fork copies a thread's locks, not the
  thread), and `settle()` ends both before the build forks again (speed.parallel_pages).

Builders never fork, start threads or name cache files themselves.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from memwiki.site.speed import cache_file
from memwiki.site.speed.memo import PageMemo, Reusable, key_of

log = logging.getLogger("mkdocs.plugins.memwiki")
EXPORTS = "use"  # in cache_dir: the browser model, one folder per export (memwiki.site.browser.use_assets)
T = TypeVar("T")


class Pending(Generic[T]):
    """The result of work handed off: `result()` waits for it (or does the work, when it was not handed off)."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work: Callable[[], T] | None = work
        self._value: T | None = None
        self._failure: BaseException | None = None

    def _run(self) -> None:
        work, self._work = self._work, None
        if work is None:
            return
        try:
            self._value = work()
        except BaseException as exc:  # noqa: BLE001 - raised by result(), on the build's thread
            self._failure = exc

    def wait(self) -> None:
        self._run()

    def result(self) -> T:
        """The work's value; raises what the work raised."""
        self.wait()
        if self._failure is not None:
            raise self._failure
        return self._value  # type: ignore[return-value]


class _Thread(Pending[T]):
    def __init__(self, work: Callable[[], T], name: str) -> None:
        super().__init__(work)
        self._thread = threading.Thread(target=self._run, name=f"memwiki-{name}", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        self._thread.join()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


class _Process(Pending[T]):
    """Work done in a forked process whose result (plain data) comes back as a cache file at `path` under `key`."""

    def __init__(
        self,
        fallback: Callable[[], T],
        work: Callable[[], T],
        name: str,
        path: Path,
        key: str,
        temporary: bool,
        in_child: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(fallback)  # done here when the process fails
        self._path, self._key, self._temporary = path, key, temporary

        def child() -> None:
            if in_child is not None:
                in_child()
            cache_file.dump(path, key, work())

        self._process = multiprocessing.get_context("fork").Process(target=child, name=f"memwiki-{name}", daemon=True)
        self._process.start()

    @property
    def exitcode(self) -> int | None:
        return self._process.exitcode

    def wait(self) -> None:
        if self._work is None:
            return
        self._process.join()
        found = cache_file.load(self._path, self._key) if self._process.exitcode == 0 else None
        if self._temporary:
            self._path.unlink(missing_ok=True)
        if found is None:
            log.warning(
                "memwiki: the forked %s failed (exit %s); done here", self._process.name, self._process.exitcode
            )
            self._run()
        else:
            self._work, self._value = None, found


@dataclass
class BuildSpeed:
    """See the module's text. The default keeps nothing and hands nothing off: every builder's plain path."""

    cache_dir: Path | None = None  # None: caches off
    # exports that follow from installed packages alone, kept whatever page_cache says (the browser model, see
    # memwiki.site.browser.use_assets); None: made for each build
    exports: Path | None = None
    may_fork: bool = False  # the host says forking is safe here (a plain `mkdocs build` on Linux)
    reusable: Reusable | None = None  # (src_uri, fingerprint) -> that page's final HTML is at hand (page cache)
    holds_asset: Callable[[str], bool] | None = None  # (GeneratedAsset.digest) -> that asset is at hand (page cache)
    # make every memoised page anyway and fail when it differs from the one its key promised (tests: a key that
    # misses an input is a stale page, found here instead of on a reader's screen)
    check_memos: bool = field(default_factory=lambda: os.environ.get("MEMWIKI_CHECK_MEMOS") == "1")
    shared: str = ""  # what every memo key includes: the build's settings and how names resolve (set by the host)
    _memos: list[PageMemo] = field(default_factory=list)
    _threads: list[_Thread[Any]] = field(default_factory=list)
    _processes: list[_Process[Any]] = field(default_factory=list)

    @classmethod
    def at(cls, folder: Path | str, **options: Any) -> BuildSpeed:  # noqa: ANN401
        """Caches and exports in one folder, laid out as the plugin lays out its cache_dir."""
        return cls(cache_dir=Path(folder), exports=Path(folder) / EXPORTS, **options)

    def cache_path(self, name: str) -> Path | None:
        return self.cache_dir / name if self.cache_dir is not None else None

    def memo(self, name: str, *shared: object) -> PageMemo:
        """The memo of one builder's pages (`name`: the builder's), saved by `save_memos`. Its keys include the
        build's `shared` part and this builder's (`shared`: what all its pages show, e.g. a layer's version)."""
        path = self.cache_path(f"memo/{name}.marshal")
        memo = PageMemo(path, self.reusable, key_of(self.shared, *shared), self.check_memos)
        self._memos.append(memo)
        return memo

    def memo_kept(self, name: str) -> bool:
        """Whether an earlier build of this code kept a memo of this name (a rebuild, for that builder)."""
        path = self.cache_path(f"memo/{name}.marshal")
        return path is not None and PageMemo.saved_at(path)

    def memo_count(self) -> int:
        """How many memos were made in this build so far (a forked builder saves those it made: `save_memos`)."""
        return len(self._memos)

    def save_memos(self, since: int = 0) -> None:
        """Save the memos made in this build (`since`: those made after the first `since` of them)."""
        for memo in self._memos[since:]:
            memo.save()
        self._memos = self._memos[:since]

    @property
    def forked(self) -> list[_Process[Any]]:
        """The processes handed work in this build (until `settle`)."""
        return list(self._processes)

    def load(self, name: str, key: str) -> Any:  # noqa: ANN401 - plain data
        """What `keep` kept as cache file `name` under `key`, or None (caches off, another key, damaged)."""
        path = self.cache_path(name)
        return cache_file.load(path, cache_file.version(name, key)) if path is not None else None

    def keep(self, name: str, key: str, value: Any) -> None:  # noqa: ANN401 - plain data
        """Keep `value` as cache file `name` under `key` (nothing when caches are off)."""
        path = self.cache_path(name)
        if path is not None:
            cache_file.dump(path, cache_file.version(name, key), value)

    def apart(
        self,
        name: str,
        key: str,
        work: Callable[[], T],
        *,
        keep: bool = True,
        in_child: Callable[[], None] | None = None,
    ) -> Pending[T]:
        """`work()`, kept as cache file `name` under `key` (see `load`; `keep=False`: not kept). In a forked process
        when the host allows it and no thread of this runs, the result coming back through that file (a temporary
        one when caches are off or it is not kept), `in_child()` run there first; otherwise done when its result
        is first asked for."""

        def kept() -> T:
            value = work()
            if keep:
                self.keep(name, key, value)
            return value

        if not (self.may_fork and sys.platform.startswith("linux")) or any(t.running for t in self._threads):
            return Pending(kept)
        path = self.cache_path(name) if keep else None
        temporary = path is None
        if path is None:
            handle, temp = tempfile.mkstemp(prefix="memwiki-", suffix=".marshal")
            os.close(handle)
            path = Path(temp)
        done = _Process(kept, work, name.split(".")[0], path, cache_file.version(name, key), temporary, in_child)
        self._processes.append(done)
        return done

    def beside(self, name: str, work: Callable[[], T]) -> Pending[T]:
        """`work()` in a thread (work that leaves the interpreter free, e.g. NumPy)."""
        done = _Thread(work, name)
        self._threads.append(done)
        return done

    def settle(self) -> None:
        """Wait for everything handed off (before the build forks again)."""
        for done in [*self._threads, *self._processes]:
            done.wait()
        self._threads, self._processes = [], []
