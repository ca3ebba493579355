"""Many processes, one embedded store, at once: a short run of scripts/bench_processes.py (an MCP server driven by
the SDK's client writing and recalling, two CLI writers, an import and a build), then a fresh process checks every
acknowledged row: stored, its vector readable, found by its own vector. Nothing may be missing or unreadable, and
no command, build or server call may fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_server_writers_an_import_and_a_build_at_once_lose_nothing(tmp_path: Path) -> None:
    figures = tmp_path / "figures.json"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench_processes.py"),
            "--seconds",
            "30",
            "--rows",
            "300",
            "--work",
            str(tmp_path / "work"),
            "--json",
            str(figures),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    got = json.loads(figures.read_text(encoding="utf-8"))
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    assert got["acknowledged"] >= 300 + got["server_writes"] // 2  # the import, the CLI batches, the server's writes
    assert got["commands"] >= 3 and got["builds"] >= 1 and got["server_writes"] >= 20
    bad = ("missing", "unreadable_vectors", "not_found_by_own_vector", "failed_commands", "failed_builds")
    assert {k: got[k] for k in (*bad, "server_errors", "recall_misses")} == dict.fromkeys(
        (*bad, "server_errors", "recall_misses"), 0
    ), got["examples"]
