"""A store whose L2 lives on a Chroma server: a real `chroma run` on loopback (it ships in the chromadb wheel) and
the Ollama client against the loopback protocol server of tests/test_ollama.py.

Set once by `memwiki init --chroma-url ... --embedder ollama:MODEL` (or the environment), kept in store.json, and
followed by every command, `mkdocs build` and the MCP server. Two stores share one server, each in a collection
of its own. A server that is down, or goes down in the middle of an import, is a one-line error naming it, and
loses nothing; a collection holding another embedder's vectors is refused.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from mcp import ClientSession
from test_huge_input import NEEDLE, long_text
from test_mcp import call, session_with
from test_ollama import DIM, OllamaProtocol, ollama_server
from test_semantic import use  # noqa: F401 - the real USE embedder, a session fixture
from test_site import build_site

from memwiki.agents.cli import main
from memwiki.errors import EmbedderMismatchError, MemwikiError
from memwiki.layers.semantic.memory import SemanticMemory
from memwiki.layers.semantic.passages import PASSAGE_KEY
from memwiki.recall.cascade import Recaller
from memwiki.source import Memory
from memwiki.store.config import ChromaConfig, EmbedderConfig, StoreConfig
from memwiki.store.store import Store
from memwiki.text.embedders import USEEmbedder

CHROMA = Path(sys.executable).with_name("chroma")  # the wheel's own `chroma` command
MODEL = "qwen3-embedding:0.6b"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ChromaServer:
    """`chroma run` over a data folder on a loopback port; stopped by its PID, started again on the same port."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ChromaServer:
        log = self.data.with_name(self.data.name + ".log")
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [str(CHROMA), "run", "--path", str(self.data), "--host", "127.0.0.1", "--port", str(self.port)],
                env=os.environ | {"RUST_LOG": "warn", "ANONYMIZED_TELEMETRY": "False"},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with opener.open(f"{self.url}/api/v2/heartbeat", timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"chroma run did not answer on {self.url} within 90 s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def client(self) -> Any:  # noqa: ANN401 - a chromadb client, to look at the server behind memwiki's back
        return chromadb.HttpClient(host="127.0.0.1", port=self.port, settings=Settings(anonymized_telemetry=False))


class CountingRelay:
    """A loopback TCP relay in front of the Chroma server that counts the HTTP requests crossing it: what a call
    costs in round trips, seen on the wire (the client and the server are the real ones)."""

    REQUEST_LINE = re.compile(rb"(?:^|\r\n)(?:GET|POST|PUT|PATCH|DELETE) /api/")

    def __init__(self, port: int) -> None:
        self.port = port
        self.requests = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                near, _ = self._listener.accept()
            except OSError:  # closed
                return
            far = socket.create_connection(("127.0.0.1", self.port))
            threading.Thread(target=self._pump, args=(near, far, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(far, near, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, requests: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                if requests:
                    self.requests += len(self.REQUEST_LINE.findall(data))
                sink.sendall(data)
        except OSError:
            pass
        finally:
            source.close()
            sink.close()

    def close(self) -> None:
        self._listener.close()


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path_factory.mktemp("chroma") / "data").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def ollama() -> Iterator[str]:
    with ollama_server() as host:
        yield host


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 2 and err.startswith("memwiki: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and all(w in err for w in words), err


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def server_store(root: Path, chroma: ChromaServer, ollama: str) -> Path:
    with Store.init(
        root, StoreConfig(embedder=EmbedderConfig("ollama", 0, MODEL, ollama), chroma=ChromaConfig(chroma.url))
    ):
        pass
    return root


MEMORIES = [
    {"id": "m-blog", "text": "The user's blog is built with Hugo and hosted on Cloudflare Pages.", "meta": {}},
    {"id": "m-nas", "text": "家里的 NAS 每晚两点用 restic 备份到 Backblaze B2。", "meta": {"category": "environment"}},
    {
        "id": "m-gpu",
        "text": "Ollama runs on gpu-box-2 with an RTX 4090, port 11434.",
        "meta": {"category": "technical"},
    },
]


def test_init_on_the_server_with_ollama_then_every_command_and_the_build_follow_it(
    chroma: ChromaServer, ollama: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "store"
    code, out, err = cli(
        capsys, "--store", str(root), "init", "--chroma-url", chroma.url, "--embedder", f"ollama:{MODEL}",
        "--ollama-host", ollama,
    )  # fmt: skip
    assert code == 0, err
    config = json.loads((root / "store.json").read_text(encoding="utf-8"))
    collection = config["chroma"]["collection"]
    assert config["chroma"]["url"] == chroma.url and collection.startswith("memwiki-store-"), config
    assert config["embedder"] == {"name": "ollama", "dim": DIM, "model": MODEL, "host": ollama}
    assert collection in out and chroma.url in out
    on_server = chroma.client().get_collection(collection)
    assert on_server.metadata["embedder"] == "ollama" and on_server.metadata["model"] == MODEL

    # remember past 70% of MEMORY.md's cap: the non-core entries sink into the server's collection
    for i in range(12):
        text = f"[network] lab host node-{i:02d} sits at 10.0.{i}.7 behind switch sw-{i}, ssh on port 22{i:02d}; " * 2
        code, _, err = cli(capsys, "--store", str(root), "remember", text.strip())
        assert code == 0, err
    sunk = [json.loads(line) for line in (root / "sinks.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sunk and all(r["memory_id"].startswith("hot-memory-") for r in sunk)
    got = on_server.get(ids=[r["memory_id"] for r in sunk], include=["documents"])
    assert sorted(got["ids"]) == sorted(r["memory_id"] for r in sunk) and all("lab host" in d for d in got["documents"])

    code, out, err = cli(
        capsys, "--store", str(root), "import", str(write_jsonl(tmp_path / "m.jsonl", MEMORIES)), "--layer", "L2"
    )
    assert code == 0 and "imported 3 memories" in out, err
    assert on_server.count() == len(sunk) + 3

    code, out, err = cli(capsys, "--store", str(root), "recall", "Hugo blog Cloudflare Pages", "--json", "--all-layers")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert hits[0]["id"] == "m-blog" and hits[0]["layer"] == "L2"
    assert any(
        r["path"] == "/api/embed" and r["input"] == ["Hugo blog Cloudflare Pages"] for r in OllamaProtocol.requests
    )

    code, out, err = cli(capsys, "--store", str(root), "stats", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["L2"] == {"memories": len(sunk) + 3, "sunk": len(sunk)}

    site = tmp_path / "site"
    _, error = build_site(site, tmp_path / "cache", store=str(root), demo_src=None)
    assert error is None, error
    pages = "\n".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))
    assert "restic 备份到 Backblaze B2" in pages and "gpu-box-2" in pages and "lab host node-00" in pages
    assert not (root / "l2" / "chroma.sqlite3").exists()  # nothing of Chroma's in the folder: all on the server


def test_two_stores_share_a_server_in_collections_of_their_own_set_by_the_environment(
    chroma: ChromaServer,
    ollama: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMWIKI_CHROMA_URL", chroma.url)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    code, _, err = cli(capsys, "--store", str(ours), "init")  # the embedded default embedder, on the server
    assert code == 0, err
    args = ("init", "--embedder", "ollama", "--ollama-model", MODEL, "--ollama-host", ollama)  # the flags of before
    code, _, err = cli(capsys, "--store", str(theirs), *args)
    assert code == 0, err
    a, b = (Store.open(root) for root in (ours, theirs))
    assert a.config.chroma.url == b.config.chroma.url == chroma.url
    assert a.config.chroma.collection != b.config.chroma.collection
    assert (a.config.embedder.name, b.config.embedder.name) == ("use-multilingual-v3", "ollama")
    code, _, err = cli(
        capsys, "--store", str(ours), "import", str(write_jsonl(tmp_path / "m.jsonl", MEMORIES)), "--layer", "L2"
    )
    assert code == 0, err
    b.semantic.upsert([Memory("theirs-1", "Their store keeps its own memories.")])
    assert (a.semantic.count(), b.semantic.count()) == (3, 1)
    assert not a.semantic.get(["theirs-1"]) and not b.semantic.get(["m-blog"])
    a.close()
    b.close()

    # the site's search runs on the store's own vectors, read from the server
    site = tmp_path / "site"
    _, error = build_site(site, tmp_path / "cache", store=str(ours), demo_src=None)
    assert error is None, error
    data = (site / "assets" / "memwiki" / "search" / "search-data.js").read_text(encoding="utf-8")
    assert '"dense": true' in data or '"dense":true' in data
    assert list((site / "assets" / "memwiki" / "search" / "vectors").glob("*.js"))  # (as file:// pages read them)
    assert "Hugo" in "\n".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))

    # asking an existing store for another place or embedder is an error; it keeps its own
    code, _, err = cli(capsys, "--store", str(ours), "init", "--chroma-url", "http://127.0.0.1:9")
    one_line_error(code, err, "already a store", chroma.url)
    monkeypatch.delenv("MEMWIKI_CHROMA_URL")
    code, _, err = cli(capsys, "--store", str(ours), "init", "--embedder", f"ollama:{MODEL}")
    one_line_error(code, err, "already a store made with use-multilingual-v3")


def test_the_mcp_server_serves_a_store_on_the_server(chroma: ChromaServer, ollama: str, tmp_path: Path) -> None:
    root = server_store(tmp_path / "store", chroma, ollama)
    with Store.open(root) as store:
        store.semantic.upsert([Memory("m-blog", MEMORIES[0]["text"])])
        collection = store.config.chroma.collection

    async def body(s: ClientSession) -> dict[str, Any]:
        return {
            "recall": await call(s, "memwiki_recall", query="Hugo blog Cloudflare Pages", k=2),
            "long": await call(
                s, "memwiki_remember_long", text="Backups run nightly at 02:00 to /srv/backup.", id="bk"
            ),
            "stats": await call(s, "memwiki_stats"),
        }

    out = session_with(["--store", str(root), "mcp"], body)
    assert not out["recall"][0] and out["recall"][1]["hits"][0]["id"] == "m-blog", out["recall"]
    assert not out["long"][0] and out["long"][1]["id"] == "bk", out["long"]
    assert not out["stats"][0] and out["stats"][1]["L2"]["memories"] == 2
    got = chroma.client().get_collection(collection).get(ids=["bk"], include=["documents"])
    assert got["documents"] == ["Backups run nightly at 02:00 to /srv/backup."]


class StopsChroma(OllamaProtocol):
    """The loopback Ollama server, stopping the Chroma server when the import's embedding reaches request `at`."""

    chroma: ChromaServer | None = None
    at = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        if len(OllamaProtocol.requests) + 1 == self.at and self.chroma is not None:
            self.chroma.stop()
        super().do_POST()


def test_a_server_that_goes_down_mid_import_is_a_one_line_error_and_loses_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    chroma = ChromaServer(tmp_path / "data").start()
    StopsChroma.chroma, StopsChroma.at = chroma, 12  # init probes once; the import asks 256 texts at a time
    rows = [
        {"id": f"m{n}", "text": f"note {n}: server rack r{n % 97} holds disk d{n}", "meta": {}} for n in range(8192)
    ]
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    before = path.read_bytes()
    try:
        with ollama_server(StopsChroma) as ollama:
            root = server_store(tmp_path / "store", chroma, ollama)
            code, _, err = cli(capsys, "--store", str(root), "import", str(path), "--layer", "L2")
            one_line_error(code, err, f"the Chroma server at {chroma.url} is not reachable")
            assert chroma.proc is not None and chroma.proc.poll() is not None, "the server was stopped mid-import"

            # while it is down: every command, the MCP server and the build say so, in one line
            for argv in (
                ("recall", "rack r5"),
                ("stats",),
                ("remember", "[network] x"),
                ("import", str(path), "--layer", "L2"),
            ):
                one_line_error(*cli(capsys, "--store", str(root), *argv)[::2], chroma.url)

            mcp = subprocess.run(  # it opens the store before it speaks: it stops, saying why
                [sys.executable, "-m", "memwiki.agents.cli", "--store", str(root), "mcp"],
                input="",
                capture_output=True,
                text=True,
                timeout=120,
            )
            one_line_error(mcp.returncode, mcp.stderr, f"the Chroma server at {chroma.url} is not reachable")
            # the build stops with MkDocs' one-line plugin error (logged, then Abort), not a traceback
            _, error = build_site(tmp_path / "site", tmp_path / "cache", store=str(root), demo_src=None)
            assert (
                error is not None and f"memwiki: L2 semantic memory: the Chroma server at {chroma.url}" in caplog.text
            )
            assert "Traceback" not in caplog.text

            # back up: what was written is whole (the lexical index agrees), and importing again completes it
            chroma.start()
            with Store.open(root) as store:
                written = store.semantic.count()
                assert 1024 <= written < len(rows) and store.semantic.lexical.count() == written
            assert path.read_bytes() == before
            code, out, err = cli(capsys, "--store", str(root), "import", str(path), "--layer", "L2")
            assert code == 0 and f"imported {len(rows)} memories" in out, err
            with Store.open(root) as store:
                assert store.semantic.count() == store.semantic.lexical.count() == len(rows)
                assert store.semantic.get(["m8191"])[0].text == rows[-1]["text"]
    finally:
        StopsChroma.chroma = None
        chroma.stop()


def test_a_collection_of_another_embedder_or_missing_is_refused(
    chroma: ChromaServer, ollama: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = server_store(tmp_path / "ours", chroma, ollama)
    with Store.open(ours) as store:
        store.semantic.upsert([Memory("m1", "kept safe")])
        collection = store.config.chroma.collection
    use_store = tmp_path / "use"
    with Store.init(use_store, StoreConfig(chroma=ChromaConfig(chroma.url))):
        pass

    def point(root: Path, name: str) -> None:
        config = json.loads((root / "store.json").read_text(encoding="utf-8"))
        config["chroma"]["collection"] = name
        (root / "store.json").write_text(json.dumps(config), encoding="utf-8")

    point(use_store, collection)  # a USE store pointed at an Ollama store's collection
    with Store.open(use_store) as store, pytest.raises(EmbedderMismatchError, match="ollama"):
        store.semantic.count()

    plain = chroma.client()
    foreign = plain.create_collection("not-memwiki", embedding_function=None)
    foreign.add(ids=["x"], embeddings=[[0.5] * DIM], documents=["someone else's"])
    point(use_store, "not-memwiki")
    with Store.open(use_store) as store, pytest.raises(EmbedderMismatchError, match="not made by memwiki"):
        store.semantic.count()
    meta = {"embedder": "use-multilingual-v3", "model": "", "dim": 0}
    plain.create_collection("wrong-dim", embedding_function=None, metadata=meta).add(
        ids=["x"], embeddings=[[0.5] * DIM], documents=["64-d, not 512-d"]
    )
    point(use_store, "wrong-dim")
    with Store.open(use_store) as store, pytest.raises(EmbedderMismatchError, match=f"{DIM}-d"):
        store.semantic.count()
    assert plain.get_collection(collection).count() == 1 and foreign.count() == 1  # nothing was touched

    # a collection the server lost is refused, not made again empty; `init` makes it again and says so
    plain.delete_collection(collection)
    one_line_error(*cli(capsys, "--store", str(ours), "stats")[::2], f"has no collection {collection!r}")
    assert collection not in [c.name for c in plain.list_collections()]
    code, _, err = cli(capsys, "--store", str(ours), "init")
    assert code == 0 and f"recreated missing parts, empty: L2 collection {collection}" in err
    assert plain.get_collection(collection).count() == 0


@pytest.mark.parametrize(
    "url", ["localhost:8000", "ftp://127.0.0.1:8000", "http://", "http://127.0.0.1:99999", "http://127.0.0.1:8000/x"]
)
def test_a_bad_url_is_refused_before_anything_is_made(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one_line_error(*cli(capsys, "--store", str(tmp_path / "s"), "init", "--chroma-url", url)[::2], repr(url))
    assert not (tmp_path / "s").exists()


def test_init_names_a_dead_server_or_one_that_is_not_chroma(
    ollama: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    for url in (dead, ollama):  # nothing listening; an HTTP server that is not Chroma
        one_line_error(*cli(capsys, "--store", str(tmp_path / "s"), "init", "--chroma-url", url)[::2], url)
        assert not (tmp_path / "s" / "store.json").exists()
    for spec, words in (("bogus", "unknown embedder"), (f"ollama:{MODEL}", "name two models")):
        code, _, err = cli(
            capsys, "--store", str(tmp_path / "t"), "init", "--embedder", spec, "--ollama-model", "other"
        )
        one_line_error(code, err, words)


def test_old_store_json_keeps_l2_in_the_folder_and_a_bad_one_is_named() -> None:
    old = {"version": 1, "embedder": {"name": "use-multilingual-v3", "dim": 512}, "caps": {}, "limits": {}}
    config = StoreConfig.from_json(json.dumps(old), "store.json")
    assert (config.chroma.url, config.chroma.collection) == ("", "memories")
    with pytest.raises(MemwikiError, match="not a valid store configuration.*not a Chroma server address"):
        StoreConfig.from_json(json.dumps(old | {"chroma": {"url": "tcp://x"}}), "store.json")
    with pytest.raises(MemwikiError, match="chroma.collection"):
        StoreConfig.from_json(json.dumps(old | {"chroma": {"url": "http://h:1", "collection": "a b"}}), "store.json")


def test_a_recall_on_the_server_is_one_round_trip_and_sees_another_writers_long_memory(
    chroma: ChromaServer, use: USEEmbedder, tmp_path: Path
) -> None:
    """The dense search brings its hits' records, and whether the store holds long memories is asked again only
    after a write (by anyone: the lexical index's commit marks it), so a recall whose hits all come from the dense
    search is one request to the server, however many recalls run."""
    relay = CountingRelay(chroma.port)
    l2 = SemanticMemory(tmp_path / "l2", use, url=relay.url, collection="round-trips")
    other = None
    try:
        l2.upsert([Memory(id=m["id"], text=m["text"]) for m in MEMORIES])
        assert l2.get(["long-1#p0"]) == []  # no long memory yet
        recaller = Recaller(use, l2=l2)
        question = "Which static site generator does the user's blog use?"
        for _ in range(3):
            relay.requests = 0
            assert recaller.recall(question, k=2)[0].id == "m-blog"
            assert relay.requests == 1
        # another writer of the same store (its own client; the same lexical index) adds a long memory
        other = SemanticMemory(tmp_path / "l2", use, url=chroma.url, collection="round-trips", create=False)
        other.upsert([Memory(id="long-1", text=long_text())])
        assert l2.get(["long-1#p0"])[0].meta[PASSAGE_KEY]["memory_id"] == "long-1"
        hit = next(h for h in recaller.recall("Where is the spare key to the server room?", k=3) if h.id == "long-1")
        assert NEEDLE in hit.text and hit.provenance["passage"]["memory_id"] == "long-1"
        relay.requests = 0
        assert recaller.recall(question, k=2)[0].id == "m-blog"
        assert relay.requests == 3  # now the passages are searched too, and the fields of their memories read
    finally:
        l2.close()
        if other is not None:
            other.close()
        relay.close()
