"""`mkdocs serve` over a store follows the agent: a memory written while the site is served shows in it.

A real `mkdocs serve` (a subprocess, on a free loopback port) over a small store; `memwiki remember` writes a hot
entry; the served persona page holds it within a minute, and an idle store is not rebuilt over and over.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from test_cli import run

from memwiki.store.store import Store

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_config(tmp: Path, store: Path) -> Path:
    """The repo's mkdocs.yml pointed at `store` (no demo), its site and cache under `tmp`."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    text = text.replace("store: .cache/demo-store", f"store: {store}").replace("      demo_src: demo\n", "")
    text = text.replace("cache_dir: .cache/memwiki", f"cache_dir: {tmp / 'cache'}")
    text = text.replace("docs_dir: site_src", f"docs_dir: {ROOT / 'site_src'}")
    text = text.replace("site_dir: site", f"site_dir: {tmp / 'site'}")
    (tmp / "cache").mkdir()
    shared = ROOT / ".cache" / "memwiki" / "use"  # the browser embedder's export, shared by the tests
    shared.mkdir(parents=True, exist_ok=True)
    (tmp / "cache" / "use").symlink_to(shared, target_is_directory=True)
    path = tmp / "mkdocs.yml"
    path.write_text(text, encoding="utf-8")
    return path


def get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode("utf-8")
    except OSError:
        return ""


def test_a_memory_written_while_serving_shows(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    store = tmp_path / "store"
    with Store.init(store) as s:
        s.remember("[preference] 林晓喜欢先看命令再看解释。", "user")
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mkdocs",
                "serve",
                "-f",
                str(served_config(tmp_path, store)),
                "-a",
                f"127.0.0.1:{port}",
            ],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 300
        while "Serving on" not in log.read_text() and time.monotonic() < deadline:
            assert server.poll() is None, log.read_text()[-3000:]
            time.sleep(0.5)
        page = f"http://127.0.0.1:{port}/persona.html"
        assert "林晓喜欢先看命令再看解释" in get(page)
        time.sleep(5)
        builds = len(re.findall("Documentation built", log.read_text()))
        assert builds == 1, log.read_text()[-3000:]  # an idle store is not rebuilt (reading it changes nothing)
        assert run(capsys, "--store", str(store), "remember", "[project] the okapi scanner moved to room 43")[0] == 0
        written = time.monotonic()
        while "okapi scanner" not in get(page):
            assert time.monotonic() - written < 60, log.read_text()[-3000:]
            time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(timeout=30)
