"""A new user's first hour: the README's commands run top to bottom on a fresh store, `memwiki site new` makes a
wiki that builds as written, and the CLI takes its options where people put them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memwiki.agents.cli import _parser
from memwiki.layers.persona import TEMPLATE
from tests.fixture_copies import copy_fixtures

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MEMWIKI = shutil.which("memwiki") or "memwiki"


def _block(after: str, language: str) -> str:
    """The first ```language block after the line `after` in the README."""
    start = README.index(after)
    match = re.compile(rf"```{language}\n(.*?)```", re.S).search(README, start)
    assert match is not None, f"no {language} block after {after!r}"
    return match.group(1)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home folder with a hermes home and a palace where the README says they are (made by the upstream
    code at test time, `fixture_homes`)."""
    fixtures = copy_fixtures(tmp_path / "made")
    home = tmp_path / "home"
    (home / ".mempalace").mkdir(parents=True)
    shutil.copytree(fixtures / "hermes_home", home / ".hermes")
    shutil.copytree(fixtures / "mempalace_palace", home / ".mempalace" / "palace")
    shutil.copytree(fixtures / "mempalace_config", home / ".mempalace_config")
    return home


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMWIKI_", "HERMES_", "MEMPALACE_"))}
    return env | {"HOME": str(home), "MEMPALACE_CONFIG_DIR": str(home / ".mempalace_config")}


def test_readme_command_line_runs_top_to_bottom(tmp_path: Path, home: Path) -> None:
    """Every line of the README's command-line block, in order, in a fresh folder (with the files its `--batch`
    and `import` lines read)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "queries.jsonl").write_text(json.dumps({"id": "q1", "query": "dev box"}) + "\n", encoding="utf-8")
    (work / "memories.jsonl").write_text(
        json.dumps({"id": "m1", "text": "嵌入服务跑在 embed-01 上", "meta": {"category": "environment"}}) + "\n",
        encoding="utf-8",
    )
    turn = {"session_id": "s1", "role": "user", "content": "我们周五去跳舞", "time": "2026-11-01T10:00:00Z"}
    (work / "sessions.jsonl").write_text(json.dumps(turn, ensure_ascii=False) + "\n", encoding="utf-8")
    script = "set -euo pipefail\n" + _block("## Command line", "bash")
    done = subprocess.run(
        ["bash", "-c", script], cwd=work, env=_env(home), capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "机房B" in done.stdout and "memwiki " in done.stdout  # (the supersede's fact; the version)
    assert (work / "mywiki" / "mkdocs.yml").is_file()


def test_readme_wiki_config_builds_as_written(tmp_path: Path, home: Path) -> None:
    site = tmp_path / "wiki"
    (site / "docs").mkdir(parents=True)
    (site / "mkdocs.yml").write_text(_block("## The wiki", "yaml"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=site,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    built = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in (site / "site").rglob("*.html"))
    assert "the hermes home" in built and str(home) not in built and "fonts.googleapis" not in built


def test_site_new_writes_a_wiki_that_builds(tmp_path: Path) -> None:
    """`site new` on a store of one memory: `mkdocs build --strict` passes (a tiny store's vectors file is no
    token), and the next commands are printed."""
    store = tmp_path / "store"
    subprocess.run([MEMWIKI, "init", "--store", str(store)], check=True, capture_output=True)
    subprocess.run([MEMWIKI, "remember", "[rule] answer briefly", "--store", str(store)], check=True)
    done = subprocess.run(
        [MEMWIKI, "site", "new", "w", "--store", str(store)], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "mkdocs serve" in done.stdout and "mkdocs build" in done.stdout
    config = (tmp_path / "w" / "mkdocs.yml").read_text(encoding="utf-8")
    assert "use_directory_urls: false" in config and f'store: "{store}"' in config
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path / "w", capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert "answer briefly" in (tmp_path / "w" / "site" / "persona.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store", "{tmp}/nope"], "not a memwiki store"),
        (["--hermes-home", "{tmp}/nope"], "no hermes home there"),
        (["--palace", "{tmp}/nope"], "no MemPalace palace there"),
    ],
)
def test_site_new_with_a_missing_source_writes_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    args = [a.format(tmp=tmp_path) for a in args]
    done = subprocess.run([MEMWIKI, "site", "new", str(tmp_path / "w"), *args], capture_output=True, text=True)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "w").exists()


def test_site_new_never_overwrites_and_an_unwritable_place_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    subprocess.run([MEMWIKI, "init", "--store", str(store)], check=True, capture_output=True)
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "mkdocs.yml").write_text("mine\n", encoding="utf-8")
    done = subprocess.run([MEMWIKI, "site", "new", "w", "--store", str(store)], cwd=tmp_path, capture_output=True)
    assert done.returncode == 2 and b"exists already" in done.stderr
    assert (tmp_path / "w" / "mkdocs.yml").read_text() == "mine\n" and sorted(os.listdir(tmp_path / "w")) == [
        "mkdocs.yml"
    ]
    (tmp_path / "file").write_text("x")
    done = subprocess.run([MEMWIKI, "site", "new", "file/w", "--store", str(store)], cwd=tmp_path, capture_output=True)
    assert done.returncode == 2 and b"cannot write there" in done.stderr and b"Traceback" not in done.stderr
    assert (tmp_path / "file").read_text() == "x"


def test_source_options_before_or_after_the_command() -> None:
    parse = _parser().parse_args
    assert parse(["mcp", "--store", "s"]).store == "s"
    assert parse(["--store", "s", "mcp"]).store == "s"
    assert parse(["--store", "a", "recall", "q", "--store", "b"]).store == "b"  # (after the command wins)
    assert parse(["kg", "add", "x", "uses", "y", "--hermes-home", "h", "--palace", "p"]).palace == "p"
    assert parse(["recall", "q"]).store is None


def test_version_and_a_fresh_store(tmp_path: Path) -> None:
    done = subprocess.run([MEMWIKI, "--version"], capture_output=True, text=True, check=True)
    assert re.fullmatch(r"memwiki \d+\.\d+\.\d+\S*\n", done.stdout)
    store = tmp_path / "store"
    subprocess.run([MEMWIKI, "init", "--store", str(store)], check=True, capture_output=True)
    assert (store / "SOUL.md").read_text(encoding="utf-8") == TEMPLATE
    done = subprocess.run([MEMWIKI, "context", "--store", str(store)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "" and "SOUL.md" in done.stderr and "memwiki remember" in done.stderr
    (store / "SOUL.md").write_text(TEMPLATE + "You are terse.\n", encoding="utf-8")
    done = subprocess.run([MEMWIKI, "context", "--store", str(store)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "You are terse." and done.stderr == ""
    subprocess.run([MEMWIKI, "init", "--store", str(store)], check=True, capture_output=True)  # (init again)
    assert (store / "SOUL.md").read_text(encoding="utf-8").endswith("You are terse.\n")
