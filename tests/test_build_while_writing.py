"""A build while the agent writes: one process writes memories, hot entries (some sink), facts and session
messages in a loop while `mkdocs build --strict` runs three times on the same store. No build fails, and each
shows a consistent snapshot: every memory's session link leads to a session page, every fact's entities have
pages, the hot files parse."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from urllib.parse import unquote

from memwiki.store.demo import build_demo_store

ROOT = Path(__file__).resolve().parent.parent

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from memwiki.source import Memory
    from memwiki.store.store import Store
    store_dir, stop = Path(sys.argv[1]), Path(sys.argv[2])
    with Store.open(store_dir) as store:
        i = 0
        while not stop.exists() and i < 400:
            sid = f"live-session-{i}"
            store.sessions.add_session(sid, title=f"Live talk {i}")
            store.sessions.add_message(sid, "user", f"Turn {i}: the backup of box {i} ran at night.")
            store.semantic.add([Memory(id=f"live-{i}", text=f"Box {i} backs up nightly to the NAS.",
                                       category="project", session_id=sid)])
            store.graph.add_triple(f"Live box {i}", "backs up to", "NAS")
            store.remember(f"[env] live box {i}: Debian 12 with 16 GB of memory and a small SSD.", "memory")
            print(i, flush=True)
            i += 1
    """
)


def _config(tmp: Path, store: Path) -> Path:
    config = tmp / "mkdocs.yml"
    config.write_text(
        textwrap.dedent(
            f"""
            site_name: live
            docs_dir: {ROOT / "site_src"}
            site_dir: {tmp / "site"}
            use_directory_urls: false
            theme: {{name: material, font: false}}
            plugins:
              - search
              - memwiki:
                  store: {store}
                  cache_dir: {tmp / "cache"}
                  audit_errors: []
            """
        ),
        encoding="utf-8",
    )
    return config


def _dangling(site: Path, folder: str, target: str) -> list[str]:
    """Links from pages under `folder` to pages under `target` whose file is not in the site."""
    missing = []
    for page in (site / folder).rglob("*.html"):
        for href in re.findall(r'href="([^"#]+\.html)', page.read_text(encoding="utf-8")):
            path = (page.parent / unquote(href)).resolve()
            if f"/{target}/" in path.as_posix() and not path.is_file():
                missing.append(f"{page.relative_to(site)} -> {href}")
    return missing


def test_three_builds_while_the_agent_writes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(build_demo_store(ROOT / "demo", ROOT / ".cache" / "demo-store"), store)
    config = _config(tmp_path, store)
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store), str(stop)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None
        writer.stdout.readline()  # it has written once
        for n in range(3):
            done = subprocess.run(
                [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(config)],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"build {n + 1}: {done.stderr[-2000:]}"
            site = tmp_path / "site"
            assert not _dangling(site, "memory", "sessions"), f"build {n + 1}"
            assert not _dangling(site, "concepts", "concepts"), f"build {n + 1}"
            assert "MEMORY.md" in (site / "persona.html").read_text(encoding="utf-8")
            time.sleep(0.5)
    finally:
        stop.touch()
        writer.wait(timeout=120)
    written = int(writer.stdout.read().split()[-1]) if writer.stdout else 0
    assert writer.returncode == 0 and written >= 3  # the writer kept writing through the builds
