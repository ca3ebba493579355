"""The Ollama embedder through the official `ollama` client.

No Ollama server can be installed on these machines, so the client talks to a small loopback HTTP
server (below) that speaks Ollama's `/api/embed` protocol. Its vectors are a deterministic hashed
bag of our lexical tokens: good enough to check the whole client path (request shape, response
parsing, normalisation, dimension checks, errors) and a store made with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from memwiki.errors import EmbedderMismatchError, MemwikiError
from memwiki.recall.sources import recaller_for
from memwiki.source import Memory
from memwiki.store.config import EmbedderConfig, StoreConfig
from memwiki.store.open_sources import open_sources
from memwiki.store.store import Store
from memwiki.text.embedders import OllamaEmbedder, USEEmbedder
from memwiki.text.tokens import tokens
from tests.fixture_copies import copy_fixtures

DIM = 64


def fake_vector(text: str) -> list[float]:
    v = np.zeros(DIM)
    for tok in tokens(text) or [text]:
        v[int(hashlib.md5(tok.encode()).hexdigest(), 16) % DIM] += 1.0
    return (v * 3.0).tolist()  # not normalised: the client side must normalise


class OllamaProtocol(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        OllamaProtocol.requests.append({"path": self.path, **body})
        if self.path != "/api/embed":
            self.send_error(404)
            return
        if body.get("model") != "qwen3-embedding:0.6b":
            payload, status = {"error": f'model "{body.get("model")}" not found, try pulling it first'}, 404
        else:
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            payload, status = {"model": body["model"], "embeddings": [fake_vector(t) for t in inputs]}, 200
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def ollama_server(handler: type[OllamaProtocol] = OllamaProtocol) -> Iterator[str]:
    """A loopback server speaking Ollama's `/api/embed` (model qwen3-embedding:0.6b, DIM dimensions): its URL.
    Other tests import this (tests/test_chroma_server.py), with a `handler` of their own to act on requests."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    OllamaProtocol.requests.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def ollama_host() -> Iterator[str]:
    with ollama_server() as host:
        yield host


def test_client_embeds_through_api_embed(ollama_host: str) -> None:
    emb = OllamaEmbedder("qwen3-embedding:0.6b", ollama_host)
    vectors = emb.embed(["向量数据库", "vector database"])
    assert vectors.shape == (2, DIM) and emb.dim == DIM
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    request = OllamaProtocol.requests[-1]
    assert (request["path"], request["model"]) == ("/api/embed", "qwen3-embedding:0.6b")
    assert request["input"] == ["向量数据库", "vector database"]


def test_unknown_model_and_dead_server_are_clear_errors(ollama_host: str) -> None:
    with pytest.raises(MemwikiError, match="not found"):
        OllamaEmbedder("no-such-model", ollama_host).embed(["x"])
    with pytest.raises(MemwikiError, match="Ollama at http://127.0.0.1:9"):
        OllamaEmbedder("qwen3-embedding:0.6b", "http://127.0.0.1:9").embed(["x"])


def test_store_made_with_ollama_records_it_and_refuses_use(ollama_host: str, tmp_path: Path) -> None:
    config = StoreConfig(embedder=EmbedderConfig("ollama", 0, "qwen3-embedding:0.6b", ollama_host))
    with Store.init(tmp_path / "s", config) as store:
        assert store.config.embedder.dim == DIM
        store.semantic.upsert([Memory("a", "Chroma 是向量数据库"), Memory("b", "The blog runs on Hugo")])
        hits = store.recall("Hugo blog", k=1, all_layers=True)
        assert hits and hits[0].id == "b"
    with Store.open(tmp_path / "s") as store:
        assert store.embedder.name == "ollama" and store.config.embedder.dim == DIM
    with pytest.raises(EmbedderMismatchError, match="ollama"):
        Store.open(tmp_path / "s", embedder=USEEmbedder())


def test_recall_over_a_palace_uses_the_store_s_ollama_embedder(ollama_host: str, tmp_path: Path) -> None:
    Store.init(tmp_path / "s", StoreConfig(embedder=EmbedderConfig("ollama", 0, "qwen3-embedding:0.6b", ollama_host)))
    fixtures = copy_fixtures(tmp_path)
    source = open_sources(str(tmp_path / "s"), None, str(fixtures / "mempalace_palace"), tmp_path / "cache")
    assert source.info().embedder == "ollama:qwen3-embedding:0.6b"
    hits = recaller_for(source).recall("QARTOD flag rules data quality", k=3, all_layers=True)
    assert any(h.layer == "L2" and "QARTOD" in h.text for h in hits)
    assert OllamaProtocol.requests, "the palace's texts and the query went through the Ollama client"


def test_session_digests_embed_with_the_store_s_ollama_and_fall_back_when_it_is_down(
    ollama_host: str, tmp_path: Path
) -> None:
    from memwiki.site.builders import site
    from memwiki.site.builders.sessions import Digester, prepare
    from memwiki.site.model.build_context import BuildContext

    config = StoreConfig(embedder=EmbedderConfig("ollama", 0, "qwen3-embedding:0.6b", ollama_host))
    lines = [
        json.dumps(
            {
                "session_id": "s1",
                "role": ("user", "assistant")[i % 2],
                "time": f"2026-01-01T10:0{i}:00Z",
                "content": f"第 {i} 句：向量数据库 Chroma 的第 {i} 个配置项要改成 {i * 7}",
            }
        )
        for i in range(6)
    ]
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Store.init(tmp_path / "s", config) as store:
        store.sessions.import_jsonl(tmp_path / "s.jsonl")
        ctx = BuildContext(store.reader())
        s = site(ctx)
        prepare(ctx)  # starts embedding the sessions' messages in a thread
        digests = ctx.part(Digester)
        turns = digests.key_turns(s.messages["s1"])
        assert len(turns) == 2 and digests.method.startswith("embeddings")
        texts = [m.content for m in s.messages["s1"]]
        assert any(r["input"] == texts for r in OllamaProtocol.requests)  # the thread asked the server
    # the server down: the turns embedded once are read from the store's vectors; new ones fall back to TF-IDF
    dead = OllamaEmbedder("qwen3-embedding:0.6b", "http://127.0.0.1:9", dim=DIM)
    with Store.open(tmp_path / "s", embedder=dead) as store:
        ctx = BuildContext(store.reader())
        s = site(ctx)
        digests = ctx.part(Digester)
        assert len(digests.key_turns(s.messages["s1"])) == 2 and digests.method.startswith("embeddings")
    with Store.open(tmp_path / "s", embedder=dead) as store:
        for i in range(4):
            store.sessions.add_message("s2", ("user", "assistant")[i % 2], f"新的一句 {i}：备份目录换到 /mnt/b{i}")
        ctx = BuildContext(store.reader())
        s = site(ctx)
        digests = ctx.part(Digester)
        assert len(digests.key_turns(s.messages["s2"])) == 2
        assert digests.method.startswith("TF-IDF (embedder failed")
