"""Helpers for tests over the hermes home and MemPalace palace of `fixture_homes` (made at test time by the
upstream code): work on private copies, checksum every file, write-protect."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_homes import pristine

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"  # the recall benchmark's data, never in the repo


def copy_fixtures(dest: Path) -> Path:
    """A writable copy of the fixtures under `dest`: `<dest>/fixtures/` holding `hermes_home/`,
    `mempalace_palace/` and `mempalace_config/` (see `fixture_homes`, built once per session); returns
    `<dest>/fixtures`."""
    root = Path(dest) / "fixtures"
    shutil.copytree(pristine(), root)
    make_writable(root)
    return root


def bench_file(name: str) -> Path:
    """`name` in the recall benchmark's data folder beside the checkout (`../shared/bench`); a test that needs it
    is skipped, saying so, where that data is not."""
    path = BENCH / name
    if not path.is_file():
        pytest.skip(f"needs {path} (benchmark data, not in the repository)")
    return path


def checksums(root: Path) -> dict[str, str]:
    """sha256 of every file under `root` by relative path (a new file, e.g. a stray `-wal`, shows up too)."""
    out = {}
    for path in sorted(Path(root).rglob("*")):
        if path.is_file():
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def make_readonly(root: Path) -> None:
    """chmod -R a-w."""
    for path in [Path(root), *Path(root).rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def make_writable(root: Path) -> None:
    for path in [Path(root), *Path(root).rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


_LEAVE_WAL = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("PRAGMA wal_autocheckpoint = 0")
for statement in sys.argv[2:]:
    conn.execute(statement)
os._exit(0)  # no close, no checkpoint: the rows stay in the -wal file, as after a crash or a live writer
"""


def leave_rows_in_wal(db: Path, *statements: str) -> None:
    """Run `statements` on `db` in a child process that dies without checkpointing (rows only in `-wal`)."""
    subprocess.run([sys.executable, "-c", _LEAVE_WAL, str(db), *statements], check=True)
    assert Path(f"{db}-wal").stat().st_size > 0


_HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
for statement in sys.argv[2:]:
    conn.execute(statement)
print("holding", flush=True)
sys.stdin.read()
"""


class Holder:
    """A child process holding a SQLite write transaction open on `db` (a running agent mid-write)."""

    def __init__(self, db: Path, *statements: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(db), *statements],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ},
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "holding"

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
