"""Keep the last build's site in place through a plain `mkdocs build`, and end with what a clean build leaves.

MkDocs empties site_dir before every build (`clean_directory`), and the page cache then put 10k unchanged pages
back (a folder and a hard link each). Deleting and making 20k inodes was most of a 10k rebuild, and its
noisiest part (on a disk mounted with `discard` each delete is a trim). Instead:

1. `set_aside` (on_pre_build): the site's top-level entries move into a hidden folder inside it, which MkDocs'
   clean leaves alone (it skips hidden names).
2. `put_back` (on_files, before anything is written): they move back, and the time is marked (`fresh_after`,
   on the site's own file-system clock).
3. The build writes as usual; the page cache links only the reused pages that are not in place already.
4. `sweep` (on_post_build): every file the build did not write (status change not after the mark) and that is
   not a reused page in place is deleted, and folders left empty are removed; hidden top-level entries are
   kept, as MkDocs' clean keeps them.

A file is "written by this build" when its status-change time (ctime, which no program can set back) is after
the mark: any write, copy, link or rename sets it. Files that were hard links into the cache and are to be
written again in place are unlinked first (`unlink_shared`), so the cache never changes through the site.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

KEPT = ".memwiki-kept"
_TICK = ".tick"
_TICK_WAIT = 2.0  # seconds to wait for the file system's clock to move on (FAT counts in 2 s steps)


class KeptSite:
    """The site folder of one build, kept across it (see the module's text)."""

    def __init__(self, site_dir: Path | str) -> None:
        self.site = str(site_dir)
        self.kept = os.path.join(self.site, KEPT)
        self.aside = False
        self.fresh_after: int | None = None  # ctime (ns) at the mark; set by put_back

    def set_aside(self) -> bool:
        """Move the site's top-level entries into the hidden folder; False when there is no site to keep."""
        if not os.path.isdir(self.site):
            return False
        if os.path.lexists(self.kept):  # an earlier build was killed between set_aside and put_back
            shutil.rmtree(self.kept, ignore_errors=True)
        names = [n for n in os.listdir(self.site) if not n.startswith(".")]
        if not names:
            return False
        os.mkdir(self.kept)
        for name in names:
            os.rename(os.path.join(self.site, name), os.path.join(self.kept, name))
        self.aside = True
        return True

    def put_back(self) -> bool:
        """Move the entries back (what MkDocs or a plugin put there since wins) and mark the time.

        False when the file system's clock did not move on within `_TICK_WAIT`: then the old entries are
        deleted, as MkDocs' clean would have, and the build goes on as a clean one."""
        if not self.aside:
            return False
        self.aside = False
        for name in os.listdir(self.kept):
            source, target = os.path.join(self.kept, name), os.path.join(self.site, name)
            if os.path.lexists(target):
                _remove(source)
            else:
                os.rename(source, target)
        self.fresh_after = _mark(self.kept)
        shutil.rmtree(self.kept, ignore_errors=True)
        if self.fresh_after is None:
            for name in os.listdir(self.site):
                if not name.startswith("."):
                    _remove(os.path.join(self.site, name))
            return False
        return True

    def restore_on_error(self) -> None:
        """A build that failed before `put_back`: leave the last site as it was."""
        if self.aside:
            self.put_back()
        self.fresh_after = None  # and nothing is swept

    def unlink_shared(self, paths: Iterable[str]) -> None:
        """Unlink each of these files that has other hard links (a cache file): they are about to be written in
        place (MkDocs opens an existing file and writes into it)."""
        for path in paths:
            try:
                if os.lstat(path).st_nlink > 1:
                    os.unlink(path)
            except FileNotFoundError:
                pass

    def sweep(self, keep: set[str]) -> int:
        """Delete what this build did not write, but the files in `keep` (paths as `f"{site}/{rel}"`); remove
        folders left empty. Returns how many files went."""
        if self.fresh_after is None:
            return 0
        fresh_after = self.fresh_after
        removed = 0

        def walk(folder: str, top: bool) -> tuple[bool, bool]:
            """Sweep `folder`: (whether it is empty now, whether the sweep removed anything from it)."""
            nonlocal removed
            empty, emptied = True, False
            with os.scandir(folder) as entries:
                listed = list(entries)
            for entry in listed:
                if top and entry.name.startswith("."):
                    empty = False
                elif entry.is_dir(follow_symlinks=False):
                    left, swept = walk(entry.path, False)
                    # an empty folder goes when it held only stale files, or when this build did not touch it
                    if left and (swept or entry.stat(follow_symlinks=False).st_ctime_ns <= fresh_after):
                        os.rmdir(entry.path)
                        emptied = True
                    else:
                        empty = False
                elif entry.path in keep or entry.stat(follow_symlinks=False).st_ctime_ns > fresh_after:
                    empty = False
                else:
                    os.unlink(entry.path)
                    removed += 1
                    emptied = True
            return empty, emptied

        walk(self.site, True)
        self.fresh_after = None
        return removed


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _mark(folder: str) -> int | None:
    """A ctime (ns) on `folder`'s file system such that everything changed before has a ctime at most it and
    everything changed after has a later one (the kernel stamps ctimes with a coarse clock); None when that
    clock does not move on within `_TICK_WAIT`."""
    tick = os.path.join(folder, _TICK)
    with open(tick, "wb"):
        pass
    mark = os.lstat(tick).st_ctime_ns
    deadline = time.monotonic() + _TICK_WAIT
    while time.monotonic() < deadline:
        os.utime(tick)
        if os.lstat(tick).st_ctime_ns > mark:
            return mark
        time.sleep(0.001)
    return None
