"""The static site's memory search, run under node over the exported assets, against Python's own ranking.

A small real store (Chroma + SQLite, USE vectors) is exported by `plugins.builders.search.build`; node then
loads exactly the files a browser would (search data, int8 vectors, use.js + its model, search-core.js),
embeds each query with the JS port of the model and ranks. The top result must be the one Python's dense
ranking over the store's own vectors finds, and the hybrid top result must be `memwiki recall`'s L2 one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from memory.config import EmbedderConfig, StoreConfig
from memory.crosslingual import BRIDGE_POSTINGS, english_glosses
from memory.embedders import USEEmbedder
from memory.recall import RecallConfig, fuse
from memory.snapshot import Memory
from memory.store import Store
from memory.tokens import fts_text, tokens
from plugins.builders import search
from plugins.pages import BuildContext

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "memwiki"  # the plugin's default cache: the exported model is reused across runs
HOSTILE = '<img src=x onerror=alert(1)> <script>alert("x")</script> [x](javascript:alert(1))'

MEMORIES = {
    "zh-gpu": "嵌入服务跑在 gpu-box-2 上，显卡是 RTX 4090，每秒大约能处理两百条文本。",
    "zh-nas": "家里的 NAS 是群晖 DS920+，备份目录挂载在 /mnt/backup，每周日凌晨三点同步一次。",
    "zh-lang": "用户希望我用中文回答问题，但 git 提交说明一律写英文。",
    "zh-tea": "用户不喝咖啡，下午习惯喝一杯乌龙茶。",
    "zh-vpn": "公司 VPN 用 WireGuard，配置文件在 ~/.config/wg/work.conf，断线后要重新执行 wg-quick up。",
    "zh-cat": "用户养了一只橘猫，名字叫豆包，今年三岁。",
    "en-deploy": "The wiki is deployed to a static host by copying the site folder; no server-side code runs.",
    "en-python": "The project targets Python 3.11 and runs its tests with pytest; ruff keeps the style.",
    "en-flight": "The user flies to Berlin on the 14th for a conference and returns on the 18th.",
    "en-allergy": "The user is allergic to peanuts; never suggest recipes that contain them.",
    "en-chroma": "Semantic memory lives in a Chroma collection with cosine distance and 512-dimensional vectors.",
    "en-hostile": HOSTILE,
}
QUERIES = {
    "嵌入模型在哪块显卡上运行？": "zh-gpu",
    "备份存在哪里，多久同步？": "zh-nas",
    "回复时该用什么语言": "zh-lang",
    "用户的宠物叫什么名字": "zh-cat",
    "推荐菜谱时要避开哪种食物？": "en-allergy",  # a Chinese question about an English memory
    "How do we publish the wiki?": "en-deploy",
    "Which food must I avoid when proposing meals?": "en-allergy",
    "When is the trip to Germany?": "en-flight",
    "what database stores the vectors": "en-chroma",
}

# Rankings to fuse, [dense, lexical, bridge]: one lexical list with no clear winner (peak weighting gives it
# little say), one dense list with none, one of a single candidate each, then random ones; each fused by
# every fusion method.
_rng = np.random.default_rng(5)
FUSIONS = ("z", "rrf", "score")


def _descending(values: np.ndarray) -> list[float]:
    return sorted(values.tolist(), reverse=True)


def _ranking(n: int, scores: np.ndarray) -> list[list]:
    return [[f"d{i}", s] for i, s in zip(_rng.permutation(n), _descending(scores), strict=False)]


FUSE_CASES = [
    [
        [["a", 0.8], ["b", 0.5], ["c", 0.45], ["d", 0.44], ["e", 0.43]],
        [["b", 5.0], ["c", 4.9], ["d", 4.8], ["a", 1.0]],
        [["e", 2.0], ["b", 1.0]],
    ],
    [[["a", 0.51], ["b", 0.50], ["c", 0.50]], [["c", 9.0], ["d", 2.0], ["a", 1.5]], []],
    [[["a", 0.5]], [["b", 3.0]], [["c", 1.0]]],
] + [
    [
        _ranking(20, _rng.uniform(0.1, 0.7, 20)),
        _ranking(30, _rng.gamma(2, 2, 12)),
        _ranking(30, _rng.gamma(2, 1, 6)) if n % 3 else [],
    ]
    for n in range(20)
]
FUSE_REQUESTS = [[fusion, *case] for case in FUSE_CASES for fusion in FUSIONS]

NODE_RANK = r"""
const fs = require("fs"), path = require("path");
globalThis.window = globalThis;  // the files are browser scripts
const site = process.argv[1], req = JSON.parse(fs.readFileSync(0, "utf8"));
for (const f of ["assets/memwiki/search/search-data.js", "assets/memwiki/search/search-vectors.js",
                 "assets/memwiki/use/use-model.js", "assets/memwiki/use/use.js",
                 "assets/memwiki/search/search-core.js"]) {
  (0, eval)(fs.readFileSync(path.join(site, f), "utf8"));  // as <script> files: they assign globals
}
const data = globalThis.MemwikiSearchData;
const index = new globalThis.MemwikiSearch.Index(data, globalThis.MemwikiSearchVectors);
globalThis.MemwikiUSE.load("", {}).then(use => {  // the weights use-model.js put in a global
  const out = {};
  for (const q of req.queries) {
    const v = use.embed(q);
    out[q] = {
      dense: index.denseRank(v, 3).map(([d, s]) => [data.docs[d][0], s]),
      hybrid: index.search(q, v, 3).map(h => data.docs[h.doc][0]),
      lexical: index.search(q, null, 3).map(h => data.docs[h.doc][0]),
      bm25: index.lexicalRank(q, 50).map(([d, s]) => [data.docs[d][0], s]),
      bridge: index.bridgeRank(q, 50).map(([d, s]) => [data.docs[d][0], s]),
    };
  }
  out.__fused = req.fuse.map(([fusion, dense, lexical, bridge]) => {
    index.fusion = Object.assign({}, data.fusion, {fusion: fusion});
    return index.fuse(dense, lexical, bridge).map(h => h.doc);
  });
  index.fusion = data.fusion;
  const tok = globalThis.MemwikiSearch.tokens;
  out.__tokens = req.texts.map(t => [tok(t, index.stop), tok(t, null), tok(t, null, true)]);
  process.stdout.write(JSON.stringify(out));
});
"""


def _write_site(root: Path, assets: list) -> None:
    for asset in assets:
        path = root / asset.dest_uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(asset.content)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory):
    if shutil.which("node") is None:
        pytest.fail("node is needed to run the site search's JS")
    tmp = tmp_path_factory.mktemp("search")
    with Store.init(tmp / "store", embedder=USEEmbedder()) as store:
        store.semantic.upsert([Memory(id=i, text=t, category="other") for i, t in MEMORIES.items()])
        ctx = BuildContext(store.reader(), options={"cache_dir": str(CACHE)})
        pages, assets = search.build(ctx)
        _write_site(tmp / "site", assets)
        texts = (
            list(MEMORIES.values())
            + list(QUERIES)
            + ["It's the users' running tests; doesn’t", "Café ＡＢＣ 𠀋𠀌 한국어"]
        )
        proc = subprocess.run(
            ["node", "-e", NODE_RANK, str(tmp / "site")],
            input=json.dumps({"queries": list(QUERIES), "texts": texts, "fuse": FUSE_REQUESTS}),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        js = json.loads(proc.stdout)
        ids = list(MEMORIES)
        vectors = store.semantic.vectors(ids)
        qv = store.embedder.embed(list(QUERIES))
        python = {
            q: {
                "dense": [ids[i] for i in np.argsort(-(vectors @ v))[:3]],
                "recall": [h.id for h in store.recaller.rank_l2(q, 3)],
                "bm25": store.semantic.lexical_search(q, 50),
                "bridge": store.semantic.lexical_search(" ".join(english_glosses(q)), 50, BRIDGE_POSTINGS),
            }
            for q, v in zip(QUERIES, qv, strict=True)
        }
        yield {
            "pages": pages,
            "assets": {a.dest_uri: a.content for a in assets},
            "js": js,
            "py": python,
            "texts": texts,
        }


def test_js_dense_top_result_matches_python_over_the_same_vectors(exported) -> None:
    js, py = exported["js"], exported["py"]
    for query in QUERIES:
        assert js[query]["dense"][0][0] == py[query]["dense"][0], query
    # the model port and the int8 vectors agree with Python's float ranking closely, not just at the top
    same_top3 = sum(js[q]["dense"][i][0] == py[q]["dense"][i] for q in QUERIES for i in range(3))
    assert same_top3 >= 0.9 * 3 * len(QUERIES)


def test_js_hybrid_top_result_is_what_recall_finds(exported) -> None:
    js, py = exported["js"], exported["py"]
    for query in QUERIES:
        assert js[query]["hybrid"][0] == py[query]["recall"][0], query
    hits = sum(js[q]["hybrid"][0] == gold for q, gold in QUERIES.items())
    assert hits >= len(QUERIES) - 1  # and it is the right memory


def test_js_fusion_is_recalls_fusion(exported) -> None:
    for (fusion, dense, lexical, bridge), js in zip(FUSE_REQUESTS, exported["js"]["__fused"], strict=True):
        lists = [[tuple(x) for x in ranking] for ranking in (dense, lexical, bridge)]
        want = [r.id for r in fuse(lists[0], lists[1], RecallConfig(fusion=fusion), lists[2])]
        assert js == want, fusion


def test_js_lexical_scores_are_fts5_bm25(exported) -> None:
    js, py = exported["js"], exported["py"]
    for query in QUERIES:
        got = dict(js[query]["bm25"])
        want = dict(py[query]["bm25"])
        assert set(got) == set(want), query
        for key, score in want.items():
            assert got[key] == pytest.approx(score, rel=1e-9), (query, key)


def test_js_bridge_is_recalls_bridge(exported) -> None:
    js, py = exported["js"], exported["py"]
    for query in QUERIES:
        assert [d for d, _ in js[query]["bridge"]] == [d for d, _ in py[query]["bridge"]], query
        for (_, got), (_, want) in zip(js[query]["bridge"], py[query]["bridge"], strict=True):
            assert got == pytest.approx(want, rel=1e-9), query
    assert py["推荐菜谱时要避开哪种食物？"]["bridge"][0][0] == "en-allergy"  # found by its English
    assert not js["How do we publish the wiki?"]["bridge"]  # no Chinese, no glosses


def test_js_tokens_mirror_memory_tokens(exported) -> None:
    for text, (query, plain, index) in zip(exported["texts"], exported["js"]["__tokens"], strict=True):
        assert query == tokens(text), text
        assert plain == tokens(text, stop_words=False), text
        assert " ".join(index) == fts_text(text), text


def test_exported_files(exported) -> None:
    assets = exported["assets"]
    data_js = assets[search.DATA_JS].decode("utf-8")
    assert data_js.startswith("window.MemwikiSearchData = ")
    data = json.loads(data_js[len("window.MemwikiSearchData = ") : -2])
    assert data["dense"] is True and data["embedder"] == "use-multilingual-v3" and data["dim"] == 512
    assert [d[0] for d in data["docs"]] == list(MEMORIES)
    # int8: 512 bytes per memory (base64), not 2 KB of float32
    vec_js = assets[search.VECTORS_JS].decode("ascii")
    assert len(vec_js) < 1.4 * 512 * len(MEMORIES) + 100
    # hostile text is data, never markup: no raw `<` in the data file, and the page's JS only sets text
    assert "<" not in data_js and HOSTILE in [d[3] for d in data["docs"]]
    ui = assets["assets/memwiki/search/search-ui.js"].decode()
    assert "innerHTML" not in ui and "insertAdjacentHTML" not in ui and "document.write" not in ui
    page = exported["pages"][0]
    assert page.src_uri == "search/index.md"
    for src in re.findall(r'(?:src|href)="([^"]+)"', page.markdown):
        assert src.startswith("../") and src[3:] in assets, src  # every script/stylesheet is shipped
    names = {Path(u).name for u in assets}
    assert "use-model.js" in names and "use.js" in names and "use-model.bin" not in names  # the model ships once


def test_lexical_only_when_the_browser_cannot_embed(tmp_path: Path) -> None:
    """A store made with Ollama: queries cannot be embedded in a browser, so the page says so."""
    config = StoreConfig(embedder=EmbedderConfig(name="ollama", model="qwen3-embedding:0.6b", dim=8))
    with Store.init(tmp_path / "store", config=config) as store:
        store.semantic.upsert(
            [Memory(id="a", text="备份目录挂载在 /mnt/backup"), Memory(id="b", text="peanut allergy")],
            vectors=np.eye(2, 8, dtype=np.float32),  # vectors as an Ollama server would have made them
        )
        pages, assets = search.build(BuildContext(store.reader(), options={"cache_dir": str(tmp_path / "c")}))
    uris = {a.dest_uri for a in assets}
    assert search.VECTORS_JS not in uris and not any("use-model" in u for u in uris)
    md = pages[0].markdown
    assert "Lexical search only" in md and "ollama:qwen3-embedding:0.6b" in md and "cannot run in a browser" in md
    assert "use.js" not in md
