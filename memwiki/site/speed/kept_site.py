"""Keep the last build's site in place through a plain `mkdocs build`, and end with what a clean build leaves.

MkDocs empties site_dir before every build (`clean_directory`), and the page cache then put 10k unchanged pages
back (a folder and a file each): 20k inodes deleted and made again (on a disk mounted with `discard` each delete
is a trim). Instead:

1. `set_aside` (first of all on_pre_build handlers): the time is marked on the site's own file-system clock
   (`fresh_after`), then the site's top-level folders move into a hidden folder inside it, which MkDocs' clean
   leaves alone (it skips hidden names). Top-level files are few and are left to the clean.
2. `put_back` (first of all on_files handlers): the folders move back; a folder some plugin has written since
   wins over the kept one.
3. The build writes as usual; the page cache copies only the reused pages that are not in place already
   (memwiki.site.speed.html_cache: a page is in place when its file is as the cache left it).
4. `sweep` (after every other on_post_build handler): each file the build did not write and that is not a reused
   page in place is deleted, and folders left empty are removed; hidden and symlinked top-level entries are
   kept, as MkDocs' clean keeps them.

A file is "written by this build" when its status-change time (ctime, which no program can set back) is after
the mark: any write, copy or rename sets it. A wall clock stepping back during the build would make fresh
files look old: the sweep compares how far the ctime clock moved with the monotonic clock and does not sweep
when the two disagree. Anything going wrong while setting aside makes the build a clean one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
import uuid
from pathlib import Path

log = logging.getLogger("mkdocs.plugins.memwiki")

KEPT = ".memwiki-kept"
_TICK = ".memwiki-tick"
_TICK_WAIT = 0.5  # seconds for the file system's clock to move on (coarser clocks, e.g. FAT's 2 s: no keeping)
_CLOCK_SLACK_NS = 1_000_000_000  # how far behind the monotonic clock the ctime clock may fall before a step back


class KeptSite:
    """The site folder of one build, kept across it (see the module's text)."""

    def __init__(self, site_dir: Path | str) -> None:
        self.site = str(site_dir)
        self.kept = os.path.join(self.site, KEPT)
        self.aside: list[str] = []  # the folders in the hidden folder, until put_back
        self.returned: dict[str, int] = {}  # name -> inode of the folders put back (their ctime is the move's)
        self.fresh_after: int | None = None  # ctime (ns) at the mark; None: nothing to sweep
        self._marked_at = 0  # time.monotonic_ns() at the mark

    def set_aside(self) -> bool:
        """Mark the time, move the site's top-level folders into the hidden folder; False (and nothing moved)
        when there is nothing to keep or it cannot be done here."""
        if os.name != "posix" or not os.path.isdir(self.site):  # (Windows' st_ctime is the creation time)
            return False
        try:
            if os.path.lexists(self.kept):  # an earlier build was killed between set_aside and put_back
                _remove(self.kept)
            names = [n for n in os.listdir(self.site) if not n.startswith(".") and _is_folder(self._in_site(n))]
            if not names:
                return False
            os.mkdir(self.kept)
            mark = ctime_mark(self.kept)
        except OSError as exc:
            log.info("memwiki: the last site is not kept (%s)", exc)
            _remove_quietly(self.kept)
            return False
        if mark is None:
            _remove_quietly(self.kept)
            return False
        try:
            for name in names:
                os.rename(self._in_site(name), os.path.join(self.kept, name))
                self.aside.append(name)
        except OSError as exc:  # e.g. a mount point, or a folder overlayfs cannot rename: a clean build
            log.info("memwiki: the last site is not kept (%s)", exc)
            self.put_back()
            return False
        self.fresh_after, self._marked_at = mark, time.monotonic_ns()
        return True

    def put_back(self) -> None:
        """Move the folders back; where a plugin has made one of the same name since, its folder wins."""
        for name in self.aside:
            source, target = os.path.join(self.kept, name), self._in_site(name)
            try:
                if os.path.lexists(target):
                    _remove(source)
                else:
                    os.rename(source, target)
                    self.returned[name] = os.lstat(target).st_ino
            except OSError as exc:  # what cannot come back is made again (reused pages are copied anew)
                log.info("memwiki: %s of the last site is not kept (%s)", name, exc)
        self.aside = []
        _remove_quietly(self.kept)

    def restore_on_error(self) -> None:
        """A build that failed: leave the last site as it was (when it was still aside), sweep nothing."""
        self.put_back()
        self.fresh_after = None

    def sweep(self, keep: set[str]) -> int:
        """Delete what this build did not write, but the files in `keep` (paths as `f"{site}/{rel}"`); remove
        folders left empty. Returns how many files went (-1: not swept, the clock cannot be trusted)."""
        if self.fresh_after is None:
            return 0
        mark, self.fresh_after = self.fresh_after, None
        returned, self.returned = self.returned, {}
        try:
            now = _stamp(self.site)
        except OSError as exc:
            log.warning("memwiki: files of the last site may be left over (no time stamp in site_dir: %s)", exc)
            return -1
        if now - mark < time.monotonic_ns() - self._marked_at - _CLOCK_SLACK_NS:
            log.warning("memwiki: the clock went back during the build; files of the last site may be left over")
            return -1
        sweep = _Sweep(mark, returned, keep)
        sweep.walk(self.site, True)
        return sweep.removed

    def _in_site(self, name: str) -> str:
        return os.path.join(self.site, name)


def _is_folder(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _remove(path: str) -> None:
    if _is_folder(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        _remove(path)


def _new_file(folder: str) -> str:
    """A new empty hidden file in `folder` (never an existing one: no symlink is followed)."""
    path = os.path.join(folder, f"{_TICK}-{uuid.uuid4().hex}")
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return path


def _stamp(folder: str) -> int:
    """The ctime (ns) a file made now in `folder` gets (the file is removed again)."""
    path = _new_file(folder)
    try:
        return os.lstat(path).st_ctime_ns
    finally:
        os.unlink(path)


def ctime_mark(folder: str) -> int | None:
    """A ctime (ns) on `folder`'s file system such that everything changed before has a ctime at most it and
    everything changed after has a later one (the kernel stamps ctimes with a coarse clock); None when that
    clock does not move on within `_TICK_WAIT`. (The page cache's records of site files wait for it too, see
    memwiki.site.speed.html_cache.)"""
    tick = _new_file(folder)
    try:
        mark = os.lstat(tick).st_ctime_ns
        deadline = time.monotonic() + _TICK_WAIT
        while time.monotonic() < deadline:
            os.utime(tick)
            if os.lstat(tick).st_ctime_ns > mark:
                return mark
            time.sleep(0.001)
        return None
    finally:
        os.unlink(tick)


class _Sweep:
    """One sweep of a site folder: what this build did not write (changed before `mark`) goes, but `keep`; a
    folder left empty goes when it held only stale files or this build did not touch it (`returned`: the top
    folders put back from aside, by inode). As MkDocs' clean, an entry that cannot be removed is left (and said)."""

    def __init__(self, mark: int, returned: dict[str, int], keep: set[str]) -> None:
        self.mark, self.returned, self.keep = mark, returned, keep
        self.removed = 0

    def walk(self, folder: str, top: bool) -> tuple[bool, bool]:
        """Sweep `folder`: (whether it is empty now, whether the sweep removed anything from it)."""
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError as exc:
            log.info("memwiki: %s not swept (%s)", folder, exc)
            return False, False
        empty, emptied = True, False
        for entry in listed:
            try:
                left, gone = self._entry(entry, top)
            except FileNotFoundError:
                continue  # gone meanwhile
            except OSError as exc:
                log.info("memwiki: %s not swept (%s)", entry.path, exc)
                left, gone = False, False
            empty, emptied = empty and left, emptied or gone
        return empty, emptied

    def _entry(self, entry: os.DirEntry[str], top: bool) -> tuple[bool, bool]:
        """(whether `entry` is gone or was nothing, whether the sweep removed it)."""
        if top and (entry.name.startswith(".") or entry.is_symlink()):
            return False, False  # MkDocs' clean leaves these
        if entry.is_dir(follow_symlinks=False):
            left, swept = self.walk(entry.path, False)
            st = entry.stat(follow_symlinks=False)
            untouched = st.st_ctime_ns <= self.mark or (top and self.returned.get(entry.name) == st.st_ino)
            if left and (swept or untouched):
                os.rmdir(entry.path)
                return True, True
            return False, False
        if entry.path in self.keep or entry.stat(follow_symlinks=False).st_ctime_ns > self.mark:
            return False, False
        os.unlink(entry.path)
        self.removed += 1
        return True, True
