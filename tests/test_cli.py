"""The `memwiki` command line: names, JSON shapes, and one-line errors for bad input."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memwiki.agents.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


@pytest.fixture()
def store_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    root = str(tmp_path / "store")
    assert run(capsys, "--store", root, "init")[0] == 0
    return root


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_commands_refuse_a_folder_that_is_not_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--store", str(tmp_path), "context")
    assert code == 2 and out == ""
    assert err.startswith("memwiki: error: ") and "not a memwiki store" in err and err.count("\n") == 1


def test_remember_context_replace_forget(store_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--store", store_dir, "remember", "用户喜欢先看结论。", "--target", "user")[0] == 0
    assert run(capsys, "--store", store_dir, "remember", "dev box: MacBook M3", "--category", "environment")[0] == 0
    code, out, _ = run(capsys, "--store", store_dir, "context")
    assert code == 0 and "用户喜欢先看结论。" in out and "[environment] dev box: MacBook M3" in out
    assert "/2,200 chars" in out and "/1,375 chars" in out
    assert run(capsys, "--store", store_dir, "replace", "MacBook M3", "dev box: MacBook M4")[0] == 0
    code, _, err = run(capsys, "--store", store_dir, "forget", "no such entry")
    assert code == 2 and "no such entry" in err
    assert run(capsys, "--store", store_dir, "forget", "MacBook M4")[0] == 0
    assert "MacBook" not in run(capsys, "--store", store_dir, "context")[1]


def test_import_recall_json_and_batch(store_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memories = write_jsonl(
        tmp_path / "m.jsonl",
        [
            {"id": "m1", "text": "Ollama 跑在台式机的 RTX 4090 上，端口 11434。", "meta": {"category": "environment"}},
            {"id": "m2", "text": "The user's blog is built with Hugo and hosted on Cloudflare Pages.", "meta": {}},
            {"id": "m3", "text": "每周五晚上用户会写周报，需要汇总本周的 Git 提交。", "meta": {}},
        ],
    )
    assert run(capsys, "--store", store_dir, "import", str(memories), "--layer", "L2")[0] == 0
    code, out, _ = run(capsys, "--store", store_dir, "recall", "向量模型在哪台机器上运行？", "--json", "-k", "2")
    answer = json.loads(out)
    hits = answer["hits"]
    assert code == 0 and hits[0]["id"] == "m1" and hits[0]["layer"] == "L2"
    assert {"layer", "id", "text", "score", "confident"} <= set(hits[0])
    assert answer["query"] == "向量模型在哪台机器上运行？" and answer["confident"] is any(h["confident"] for h in hits)
    batch = write_jsonl(
        tmp_path / "q.jsonl",
        [{"id": "q1", "query": "Where is the blog hosted?"}, {"id": "q2", "query": "周报什么时候写？"}],
    )
    code, out, _ = run(capsys, "--store", store_dir, "recall", "--batch", str(batch), "--json", "--all-layers")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in lines] == ["q1", "q2"]
    assert lines[0]["hits"][0]["id"] == "m2" and lines[1]["hits"][0]["id"] == "m3"


def test_bad_import_names_file_and_line_and_writes_nothing(
    store_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "a", "text": "fine", "meta": {}}\n{"id": "b", "text": "\xff\xfe broken"}\n')
    code, _, err = run(capsys, "--store", store_dir, "import", str(bad), "--layer", "L2")
    assert code == 2 and "bad.jsonl" in err and "UTF-8" in err
    notjson = tmp_path / "notjson.jsonl"
    notjson.write_text('{"id": "a", "text": "fine", "meta": {}}\nthis is not json\n', encoding="utf-8")
    code, _, err = run(capsys, "--store", store_dir, "import", str(notjson), "--layer", "L2")
    assert code == 2 and "notjson.jsonl:2" in err
    assert json.loads(run(capsys, "--store", store_dir, "stats", "--json")[1])["L2"]["memories"] == 0


def test_a_query_nothing_answers_says_so(store_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memories = write_jsonl(
        tmp_path / "m.jsonl",
        [
            {"id": "m1", "text": "Ollama 跑在台式机的 RTX 4090 上，端口 11434。", "meta": {}},
            {"id": "m2", "text": "The user's blog is built with Hugo and hosted on Cloudflare Pages.", "meta": {}},
        ],
    )
    assert run(capsys, "--store", store_dir, "import", str(memories), "--layer", "L2")[0] == 0
    for query in ("xyzzyqqq", "？？？"):
        code, out, _ = run(capsys, "--store", store_dir, "recall", query, "--json", "--all-layers")
        answer = json.loads(out)
        assert code == 0 and answer["confident"] is False, answer
        assert all(not h["confident"] and "weak" in h["why"] for h in answer["hits"])
        code, out, _ = run(capsys, "--store", store_dir, "recall", query)
        assert code == 0 and out.startswith("(no confident match") and "(weak)" in out
    code, out, _ = run(capsys, "--store", store_dir, "recall", "Where is the blog hosted?")
    assert "no confident match" not in out and out.startswith("[L2]") and "(weak)" not in out.splitlines()[0]


def test_empty_query_is_a_clear_error(store_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--store", store_dir, "recall", "   ")
    assert code == 2 and "empty query" in err


def test_kg_supersede_and_timeline(store_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    s = ("--store", store_dir)
    assert run(capsys, *s, "kg", "add", "embed-01", "located_in", "机房A", "--from", "2026-01-01")[0] == 0
    move = ("kg", "supersede", "embed-01", "located_in", "机房A", "机房B", "--from", "2026-02-01")
    code, out, _ = run(capsys, *s, *move)
    assert code == 0 and out.startswith("superseded: embed-01 —located_in→ 机房B is ")
    before = json.loads(run(capsys, *s, "kg", "query", "embed-01", "--as-of", "2026-01-31", "--json")[1])
    on_the_day = json.loads(run(capsys, *s, "kg", "query", "embed-01", "--as-of", "2026-02-01", "--json")[1])
    assert [f["object_name"] for f in before] == ["机房A"] and [f["object_name"] for f in on_the_day] == ["机房B"]
    code, out, _ = run(capsys, *s, "kg", "timeline", "embed-01")
    assert code == 0 and out.splitlines() == [
        "embed-01 —located_in→ 机房A  [2026-01-01 → 2026-02-01]",
        "embed-01 —located_in→ 机房B  [2026-02-01 → now]",
    ]
    code, _, err = run(capsys, *s, "kg", "supersede", "embed-01", "located_in", "机房C", "机房D")
    assert code == 2 and "no current fact (embed-01, located_in, 机房C) to supersede" in err
    assert len(json.loads(run(capsys, *s, "kg", "timeline", "embed-01", "--json")[1])) == 2  # nothing half-done


def test_kg_and_session_search(store_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = ("--store", store_dir)
    assert run(capsys, *s, "kg", "add", "memwiki", "uses", "Chroma", "--from", "2026-01-01")[0] == 0
    assert run(capsys, *s, "kg", "invalidate", "memwiki", "uses", "Chroma", "--to", "2026-06-01")[0] == 0
    assert run(capsys, *s, "kg", "add", "memwiki", "uses", "LanceDB", "--from", "2026-06-01")[0] == 0
    facts = json.loads(run(capsys, *s, "kg", "query", "memwiki", "--as-of", "2026-03-01", "--json")[1])
    assert [f["object_name"] or f["object"] for f in facts] == ["Chroma"]
    facts = json.loads(run(capsys, *s, "kg", "query", "memwiki", "--json")[1])
    assert [f["object_name"] or f["object"] for f in facts] == ["LanceDB"]
    sessions = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {
                "session_id": "s1",
                "role": "user",
                "content": "周末想去学跳舞",
                "time": "2026-11-01T10:00:00Z",
                "title": "周末计划",
            },
            {
                "session_id": "s2",
                "role": "user",
                "content": "Chroma 的 HNSW 索引怎么调参？",
                "time": "2026-11-02T10:00:00Z",
            },
        ],
    )
    assert run(capsys, *s, "import", str(sessions), "--layer", "L4")[0] == 0
    hits = json.loads(run(capsys, *s, "session", "search", "跳舞", "--json")[1])
    assert [h["session"]["id"] for h in hits] == ["s1"] and "跳舞" in hits[0]["snippets"][0]
    hits = json.loads(run(capsys, *s, "session", "search", "HNSW 索引", "--json")[1])
    assert [h["session"]["id"] for h in hits] == ["s2"]


def test_console_script_runs_as_a_process(store_dir: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "memwiki.agents.cli", "--store", store_dir, "stats", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    assert (stats["source"]["kind"], stats["source"]["embedder"], stats["source"]["dim"]) == (
        "store",
        "use-multilingual-v3",
        512,
    )
    assert stats["L1"]["memory"]["cap"] == 2200 and stats["L1"]["user"]["cap"] == 1375


def test_stats_prints_a_summary_with_right_plurals(
    store_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def summary() -> str:
        code, out, _ = run(capsys, "--store", store_dir, "stats")
        assert code == 0 and not out.lstrip().startswith("{")
        return out

    first = write_jsonl(tmp_path / "1.jsonl", [{"id": "m1", "text": "Ollama runs on embed-01.", "meta": {}}])
    assert run(capsys, "--store", store_dir, "import", str(first), "--layer", "L2")[0] == 0
    assert run(capsys, "--store", store_dir, "remember", "dev box: MacBook M3", "--category", "environment")[0] == 0
    assert run(capsys, "--store", store_dir, "kg", "add", "embed-01", "runs", "Ollama")[0] == 0
    out = summary()
    assert "1 memory" in out and "1 entry," in out and "2 entities, 1 fact (1 current, 0 ended)" in out
    assert "0 sessions" in out and "/ 2,200 characters" in out and "/ 1,375 characters" in out
    second = write_jsonl(tmp_path / "2.jsonl", [{"id": "m2", "text": "The blog is built with Hugo.", "meta": {}}])
    assert run(capsys, "--store", store_dir, "import", str(second), "--layer", "L2")[0] == 0
    assert run(capsys, "--store", store_dir, "kg", "invalidate", "embed-01", "runs", "Ollama")[0] == 0
    out = summary()
    assert "2 memories" in out and "1 memory" not in out and "1 fact (0 current, 1 ended)" in out
    stats = json.loads(run(capsys, "--store", store_dir, "stats", "--json")[1])  # the one shape (LayerCounts)
    assert stats["L2"]["memories"] == 2 and stats["L3"]["ended"] == 1 and set(stats) >= {"L0", "L1", "L4", "wiki"}


def test_bad_input_gets_one_line_and_writes_nothing(
    store_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Undecodable arguments, a surrogate on line 2,501 of an import, a folder where MEMORY.md should be, and a
    store.json that says nothing or says nonsense: each a one-line error, and the store as it was."""
    code, _, err = run(capsys, "--store", store_dir, "remember", b"\xff\xfe".decode("utf-8", "surrogateescape"))
    assert code == 2 and "text: not valid UTF-8" in err and "Traceback" not in err
    rows = [{"id": f"m{i}", "text": f"memory number {i}"} for i in range(3000)]
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2500] = '{"id": "m2500", "text": "half \\ud800 a character"}'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "--store", store_dir, "import", str(path), "--layer", "L2")
    assert code == 2 and "in.jsonl:2501: text holds a lone surrogate" in err
    assert json.loads(run(capsys, "--store", store_dir, "stats", "--json")[1])["L2"]["memories"] == 0

    store = Path(store_dir)
    (store / "MEMORY.md").unlink()
    (store / "MEMORY.md").mkdir()
    code, _, err = run(capsys, "--store", store_dir, "remember", "a fact")
    assert code == 2 and "MEMORY.md: a folder where memwiki expects a file" in err and "Traceback" not in err
    (store / "MEMORY.md").rmdir()
    (store / "MEMORY.md").touch()

    kept = (store / "store.json").read_text(encoding="utf-8")
    for bad in ("{}", kept.replace('"memory": 2200', '"memory": -5')):
        (store / "store.json").write_text(bad, encoding="utf-8")
        code, _, err = run(capsys, "--store", store_dir, "stats")
        assert code == 2 and "not a valid store configuration" in err, err
    (store / "store.json").write_text(kept, encoding="utf-8")
    assert run(capsys, "--store", store_dir, "stats")[0] == 0


def test_a_full_disk_is_said_as_such_and_nothing_is_lost(tmp_path: Path) -> None:
    """On a file system with no space left, commands say "disk full" (not "damaged"); once space is freed the same
    import completes. Needs a small tmpfs: mounting one needs root."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.decode().strip() or made.returncode})")
    try:
        store = mount / "store"
        env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PATH": "/usr/bin:/bin"}

        def cli(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "memwiki.agents.cli", "--store", str(store), *argv],
                capture_output=True,
                text=True,
                env=env,
            )

        assert cli("init").returncode == 0
        rows = write_jsonl(
            tmp_path / "rows.jsonl", [{"id": f"r{i}", "text": f"row {i} about the lab"} for i in range(50)]
        )
        with open(mount / "filler", "wb") as fh, contextlib.suppress(OSError):
            while True:
                fh.write(b"x" * 65536)
        for argv in (("import", str(rows), "--layer", "L2"), ("kg", "add", "a", "b", "c"), ("stats",)):
            done = cli(*argv)
            assert done.returncode == 2 and "disk full" in done.stderr and "restore it" not in done.stderr, done.stderr
        (mount / "filler").unlink()
        assert cli("import", str(rows), "--layer", "L2").returncode == 0
        assert "50 memories" in cli("stats").stdout
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_store_on_a_read_only_mount_is_said_as_such_and_not_touched(tmp_path: Path) -> None:
    """A store on a read-only file system: a write says "read-only" and writes nothing; the hot layers still read;
    L2, which Chroma cannot open without writing, is said to be undamaged. Needs a bind mount: root."""
    from tests.fixture_copies import checksums

    store = tmp_path / "store"
    env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PATH": "/usr/bin:/bin"}

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memwiki.agents.cli", "--store", str(store), *argv],
            capture_output=True,
            text=True,
            env=env,
        )

    assert cli("init").returncode == 0 and cli("remember", "[rule] be brief").returncode == 0
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": "r1", "text": "embed-01 runs the embedding server"}])
    assert cli("import", str(rows), "--layer", "L2").returncode == 0
    before = checksums(store)
    made = subprocess.run(["mount", "--bind", str(store), str(store)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot bind-mount here ({made.stderr.decode().strip() or made.returncode})")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(store)], capture_output=True).returncode != 0:
            pytest.skip("cannot remount read-only here")
        for argv in (("remember", "[rule] another"), ("kg", "add", "a", "b", "c")):
            done = cli(*argv)
            assert done.returncode == 2 and "read-only" in done.stderr and "Traceback" not in done.stderr, done.stderr
            assert len(done.stderr.strip().splitlines()) == 1
        done = cli("recall", "embedding server")
        assert done.returncode == 2 and "read-only file system" in done.stderr and "nothing is damaged" in done.stderr
        assert "restore it" not in done.stderr
        assert "be brief" in cli("context").stdout
    finally:
        subprocess.run(["umount", str(store)], check=False)
    assert checksums(store) == before
    assert cli("recall", "embedding server", "--json").returncode == 0
