"""memwiki as hermes-agent's memory provider, loaded and driven by the real `hermes-agent` package.

`memwiki hermes-install` writes the provider folder into a temporary hermes home; hermes's own loader
(`plugins.memory.load_memory_provider`) and `MemoryManager` run a scripted conversation (tests/hermes/
conversation.py, no model) in a subprocess: hermes's `plugins` package must win over memwiki's, so it runs
with `python -P` outside the repository. The store and a `mkdocs build` over it are checked afterwards.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_cli import run
from test_site import build_site

from memwiki.source import Memory
from memwiki.store.store import Store

pytest.importorskip("agent.memory_provider", reason="hermes-agent is a test dependency: pip install -e '.[test]'")

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "tests" / "hermes" / "conversation.py"


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory, capsys_module: None = None) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("hermes-provider")
    home = root / "hermes_home"
    (home / "memories").mkdir(parents=True)  # hermes's own MEMORY.md / USER.md start empty
    store_dir = root / "store"
    with Store.init(store_dir) as store:
        store.semantic.upsert([Memory("m-blog", "The user's blog is built with Hugo and hosted on Cloudflare Pages.")])
    return root, {"home": home, "store": store_dir}


def test_install_then_a_conversation_fills_every_layer(conversation: tuple[Path, dict], capsys) -> None:  # noqa: ANN001
    root, paths = conversation
    home, store_dir = paths["home"], paths["store"]
    code, out, _ = run(capsys, "--store", str(store_dir), "--hermes-home", str(home), "hermes-install")
    assert code == 0 and "provider: memwiki" in out and (home / "plugins" / "memwiki" / "__init__.py").is_file()
    config = {
        "memory": {
            "memory_enabled": True,
            "user_profile_enabled": True,
            "provider": "memwiki",
            "memory_char_limit": 1000,
            "user_char_limit": 1375,
        },
        "plugins": {"memwiki": {"store": str(store_dir)}},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    out_path = root / "seen.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HERMES_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-P", str(DRIVER), str(out_path)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(out_path.read_text(encoding="utf-8"))

    assert seen["provider"] == "memwiki.agents.hermes_provider"  # what hermes's own loader found in plugins/memwiki
    assert {"memwiki_recall", "memwiki_kg_add", "memwiki_kg_supersede", "memwiki_remember_long"} <= set(seen["tools"])
    assert "memwiki" in seen["system"]
    refused = [r for r in seen["memory_tool"] if not r.get("success")]
    assert len(refused) == 6 and "would exceed the limit" in refused[0]["error"]  # hermes's MEMORY.md filled up
    assert "consolidation failed" in refused[-1]["error"]  # and hermes gave up on the fact
    prefetch = seen["prefetch"]
    assert prefetch[2] == ""  # "ok": nothing worth recalling
    assert "Cloudflare Pages" in prefetch[3] and "memwiki recalled" in prefetch[3]
    assert seen["kg_add"]["id"] and [f["object_name"] for f in seen["kg_query"]["facts"]] == ["Cloudflare Pages"]
    assert "as_of" in seen["kg_bad"]["error"]

    with Store.open(store_dir) as store:
        user = store.hot("user").entries()
        assert any("林晓习惯先看命令再看解释" in e for e in user)  # hermes's write, mirrored
        kept = [*store.hot("memory").entries(), *(m.text for m in store.semantic.all())]
        for n in range(12):  # every lab host, the ones hermes refused too: in hot memory or sunk into L2
            assert any(f"lab host {n:02d} sits in rack {n}" in t for t in kept), n
        assert store.sink_log.records()  # the 70% sink ran
        sessions = {s.id: s for s in store.sessions.sessions()}
        assert {"hermes-s1", "hermes-s2"} <= set(sessions) and sessions["hermes-s1"].ended
        turns = [m.content for m in store.sessions.messages("hermes-s1")]
        assert turns[:2] == ["我习惯先看命令再看解释", "Done (1)."] and len(turns) == 8
        assert [m.content for m in store.sessions.messages("hermes-s2")] == ["新会话里的第一句", "好的。"]

    site = root / "site"
    _, error = build_site(site, root / "cache", store=str(store_dir), demo_src=None)
    assert error is None, error
    pages = {p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in site.rglob("*.html")}
    assert any("林晓习惯先看命令再看解释" in html for html in pages.values())
    assert any("新会话里的第一句" in html for path, html in pages.items() if path.startswith("sessions/"))
    assert any(re.search(r"Cloudflare Pages", html) for path, html in pages.items() if "graph" in path)
