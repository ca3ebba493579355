"""Small file primitives shared by every layer: strict UTF-8 reads, atomic writes, a lock file, a folder walk."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO

from memwiki.errors import InputFormatError, StoreLockedError


def read_text(path: Path) -> str:
    """Read a UTF-8 file; invalid UTF-8 is an InputFormatError naming the file and byte offset."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFormatError(f"{path}: invalid UTF-8 at line {line} (byte {exc.start})") from None


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` atomically: a temp file in the same folder, fsync, then rename."""
    atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


def atomic_write(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Have `write` fill a temp file in `path`'s folder, fsync it, then rename it to `path`: a reader sees the old
    file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def set_aside(path: Path, companions: Sequence[str] = ()) -> Path:
    """Rename a damaged file to `<name>.damaged-<local time>`, kept for whoever wants to look, with each of its
    companions `<name><suffix>` beside it (SQLite's `-wal`: one left under the old name would be read with the file
    made anew); the new path. OSError when it cannot be renamed."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    path.rename(aside)
    for suffix in companions:
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").rename(Path(f"{aside}{suffix}"))
    return aside


def _same_file(fh: IO[str], path: Path) -> bool:
    try:
        return os.fstat(fh.fileno()).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def file_lock(lock_path: Path, timeout: float = 10.0) -> Iterator[None]:
    """Hold an exclusive advisory lock on `lock_path` (created if missing), as hermes-agent does.

    Raises StoreLockedError if another process keeps it for longer than `timeout` seconds.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    try:
        fh = open(lock_path, "a+")  # noqa: SIM115 - closed in finally
    except OSError as exc:
        if exc.errno != errno.EROFS:
            raise
        if not lock_path.exists():  # a read-only file system: no process writes there, so none holds the lock
            yield
            return
        fh = open(lock_path)  # noqa: SIM115 - (a lock taken to read a read-only store: flock needs no write access)
    try:
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreLockedError(
                        f"{lock_path}: locked by another process for more than {timeout:g}s"
                    ) from None
                time.sleep(0.05)
                continue
            if _same_file(fh, lock_path):
                break
            # the folder was swapped while we waited (an L2 rebuild): lock the file that is there now
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(lock_path, "a+")  # noqa: SIM115 - closed in finally
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        fh.close()


def walk_files(root: str, prefix: str = "", links: bool = True) -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to `root` with "/", stat) of every file under `root`, in no order (os.scandir: pathlib's
    rglob and a stat per file cost more than the work of a 10k-page rebuild's first second). Folders behind a
    symbolic link are not entered; files behind one are listed (their target's stat), unless `links` is False."""
    with os.scandir(root) as entries:
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                yield from walk_files(entry.path, rel + "/", links)
            elif entry.is_file(follow_symlinks=links):
                try:
                    yield rel, entry.stat()
                except FileNotFoundError:  # removed meanwhile (a journal file SQLite dropped)
                    continue


def utf8_size(text: str) -> int:
    """Bytes of `text` in UTF-8 (a lone surrogate as written)."""
    return len(text.encode("utf-8", "surrogatepass"))
