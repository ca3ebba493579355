"""The site's search, run under node over the exported assets, against Python's own ranking, part by part.

A small real store (Chroma + SQLite, USE vectors; hot memory, L2 with a long memory, sessions, a wiki page and
graph facts) is exported by `memwiki.site.builders.search.build`; node then loads exactly the files a browser would
(search data, int8 vectors, use.js + its model, search-core.js), embeds each query with the JS port of the model
and ranks. Each part is compared with the Python code it mirrors: tokens, FTS5 bm25, the session search, fusion
(with every knob of `RecallConfig` changed in turn), the L2 ranking and `memwiki recall --all-layers` itself.
tests/test_site_search_agreement.py does the same over a larger store and the benchmark's questions.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np
import pytest

from memwiki.recall.cascade import RecallConfig, cut_query, fuse
from memwiki.site.builders import search
from memwiki.site.model.build_context import BuildContext
from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.source import Memory
from memwiki.store.config import EmbedderConfig, StoreConfig
from memwiki.store.store import Store
from memwiki.text.embedders import USEEmbedder
from memwiki.text.tokens import coverage, fts_text, tokens

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
    "en-long": "\n\n".join(
        f"Release checklist item {n}: tag the build, publish the wheel to the index, update the changelog "
        f"section {n} and announce the release in the team channel once the smoke tests pass."
        for n in range(1, 30)
    ),
}
HOT = ["Backups of the NAS run every Sunday at 03:00 (备份策略：每周日凌晨三点)", "Never push to main without review"]
SESSIONS = {
    "s-backup": [
        ("user", "我们的备份策略是什么？NAS 的数据多久备份一次？"),
        ("assistant", "NAS 每周日凌晨三点同步到 /mnt/backup，另外每月做一次异地备份。"),
        ("user", "好的，备份失败时要通知我。"),
    ],
    "s-release": [
        ("user", "When do we publish the release?"),
        ("assistant", "After the smoke tests pass we publish the wheel and announce the release."),
        ("user", "And the changelog?"),
        ("assistant", "The changelog is updated before the tag."),
    ],
    "s-cat": [("user", "豆包今天又把杯子打翻了。"), ("assistant", "橘猫都这样，记得把杯子放远一点。")],
}
QUERIES = {
    "嵌入模型在哪块显卡上运行？": "zh-gpu",
    "备份存在哪里，多久同步？": "zh-nas",
    "回复时该用什么语言": "zh-lang",
    "用户的宠物叫什么名字": "zh-cat",
    "How do we publish the wiki?": "en-deploy",
    "Which food must I avoid when proposing meals?": "en-allergy",
    "When is the trip to Germany?": "en-flight",
    "what database stores the vectors": "en-chroma",
}
MORE_QUERIES = ["备份策略", "release changelog", "xyzzyqqq", "？？？", "豆包 杯子"]

# Rankings to fuse, [dense, lexical]: one lexical list with no clear winner (peak weighting gives it little
# say), one dense list with none, one of a single candidate each, then random ones; each fused with every
# knob of the fusion changed in turn.
_rng = np.random.default_rng(5)
VARIANTS = [{}, {"peak_weighting": False}, {"lexical_weight": 0.4}, {"dense_weight": 0.0}, {"lexical_weight": 0.0}]


def _descending(values: np.ndarray) -> list[float]:
    return sorted(values.tolist(), reverse=True)


def _ranking(n: int, scores: np.ndarray) -> list[list]:
    return [[f"d{i}", s] for i, s in zip(_rng.permutation(n), _descending(scores), strict=False)]


FUSE_CASES = [
    [[["a", 0.8], ["b", 0.5], ["c", 0.45], ["d", 0.44], ["e", 0.43]], [["b", 5.0], ["c", 4.9], ["d", 4.8], ["a", 1.0]]],
    [[["a", 0.51], ["b", 0.50], ["c", 0.50]], [["c", 9.0], ["d", 2.0], ["a", 1.5]]],
    [[["a", 0.5]], [["b", 3.0]]],
    [[], [["b", 3.0], ["c", 1.0]]],
] + [[_ranking(20, _rng.uniform(0.1, 0.7, 20)), _ranking(30, _rng.gamma(2, 2, 12))] for _ in range(20)]
FUSE_REQUESTS = [[variant, *case] for case in FUSE_CASES for variant in VARIANTS]

NODE_RANK = r"""
const fs = require("fs"), path = require("path");
globalThis.window = globalThis;  // the files are browser scripts
const site = process.argv[1], req = JSON.parse(fs.readFileSync(0, "utf8"));
for (const f of ["assets/memwiki/search/search-data.js", "assets/memwiki/use/use.js",
                 "assets/memwiki/search/search-core.js"]) {
  (0, eval)(fs.readFileSync(path.join(site, f), "utf8"));  // as <script> files: they assign globals
}
for (const name of globalThis.MemwikiSearch.partNames(globalThis.MemwikiSearchData)) {  // the long lists' parts
  (0, eval)(fs.readFileSync(path.join(site, "assets/memwiki/search/data", name + ".js"), "utf8"));
}
// use.js's public API: load({bytes}) with the whole model binary, which the site ships in slices k = 0, 1, ...
const useDir = path.join(site, "assets/memwiki/use");
const slice = (n) => Number((/\.(\d+)\.bin$/.exec(n) || [0, 0])[1]);
const bins = fs.readdirSync(useDir).filter((n) => /^use-model.*\.bin$/.test(n)).sort((a, b) => slice(a) - slice(b));
const model = Buffer.concat(bins.map((n) => fs.readFileSync(path.join(useDir, n))));
const S = globalThis.MemwikiSearch, data = globalThis.MemwikiSearchData;
for (const [name] of data.slices) {  // the vectors' slices, as scripts (as a page opened from file:// loads them)
  (0, eval)(fs.readFileSync(path.join(site, "assets/memwiki/search/vectors", name.replace(/\.bin$/, ".js")), "utf8"));
}
const engine = new S.Engine(data, S.slicedVectors(data, globalThis.MemwikiSearchSlices));
const unit = (d) => engine.units[d][0];
globalThis.MemwikiUSE.load("", {bytes: model}).then(use => {
  const out = {queries: {}};
  for (const q of req.queries) {
    const v = engine.queryVector(q, (t) => use.embed(t));
    let n = 0; for (const x of v) n += x * x;
    const qn = Float32Array.from(v, (x) => x / Math.sqrt(n));
    out.queries[q] = {
      dense: engine.l2.denseRank(qn, 3).map(([d, s]) => [unit(d), s]),
      l2: engine.l2Hits(q, qn, 3).map(h => [h.id, h.why]),
      l2_words: engine.l2Hits(q, null, 3).map(h => h.id),
      bm25: engine.l2.lexicalRank(q, 50).map(([d, s]) => [unit(d), s]),
      sessions: engine.sessionSearch(q, 10).map(ds => ds.map(d => engine.turns[d][1])),
      recall: engine.recall(q, v, 5).map(h => ({layer: h.layer, id: h.id, why: h.why, confident: h.confident})),
      vector: Array.from(v),
    };
  }
  out.fused = req.fuse.map(([variant, dense, lexical]) => {
    engine.config = Object.assign({}, data.config, variant);
    return engine.fuse(dense, lexical).map(h => h.doc);
  });
  engine.config = data.config;
  out.tokens = req.texts.map(t => [S.tokens(t, engine.stop), S.tokens(t, null), S.tokens(t, null, true)]);
  out.coverage = req.texts.map(t => req.queries.map(q => S.coverage(q, t, engine.stop)));
  out.cut = req.long.map(q => S.cutQuery(q, data.limits.max_embed_bytes));
  out.knobs = S.KNOBS;
  process.stdout.write(JSON.stringify(out));
});
"""


def _write_site(root: Path, assets: list) -> None:
    for asset in assets:
        path = root / asset.dest_uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(asset.content)


def _fill(store: Store) -> None:
    store.semantic.upsert([Memory(id=i, text=t, category="other") for i, t in MEMORIES.items()])
    store.hot("memory").write_entries(HOT)
    for sid, turns in SESSIONS.items():
        store.sessions.add_session(sid, title=f"session {sid}", started="2026-11-01T10:00:00Z")
        for n, (role, text) in enumerate(turns):
            store.sessions.add_message(sid, role, text, time=f"2026-11-01T10:0{n}:00Z")
    (store.wiki_dir / "backups.md").write_text("# Backups\n\nThe NAS is backed up every Sunday; 备份在周日。\n")
    store.graph.add_triple("gpu-box-2", "runs", "embedding service")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory):
    if shutil.which("node") is None:
        pytest.fail("node is needed to run the site search's JS")
    tmp = tmp_path_factory.mktemp("search")
    with Store.init(tmp / "store", embedder=USEEmbedder()) as store:
        _fill(store)
        ctx = BuildContext(store.reader(), speed=BuildSpeed.at(CACHE))
        pages, assets = search.build(ctx)
        _write_site(tmp / "site", assets)
        texts = (
            list(MEMORIES.values())
            + list(QUERIES)
            + ["It's the users' running tests; doesn’t", "Café ＡＢＣ 𠀋𠀌 한국어"]
        )
        queries = list(QUERIES) + MORE_QUERIES
        long = ["长" * 3000, "first line\n" + "第二行很长。" * 800 + "\nlast turn"]
        proc = subprocess.run(
            ["node", "-e", NODE_RANK, str(tmp / "site")],
            input=json.dumps({"queries": queries, "texts": texts, "fuse": FUSE_REQUESTS, "long": long}),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        js = json.loads(proc.stdout)
        qv = store.embedder.embed(queries)
        python = {
            q: {
                "dense": [i for i, _ in store.semantic.search_ids(v, 3)],  # memories and passages
                "l2": [(h.id, h.why) for h in store.recaller.rank_l2(q, 3)],
                "bm25": store.semantic.lexical_search(q, 50),
                "sessions": [list(h.message_ids) for h in store.sessions.search(q, 10)] if tokens(q) else [],
                "recall": [h.to_json() for h in store.recall(q, k=5, all_layers=True)],
            }
            for q, v in zip(queries, qv, strict=True)
        }
        yield {
            "pages": pages,
            "assets": {a.dest_uri: a.content for a in assets},
            "js": js,
            "py": python,
            "texts": texts,
            "queries": queries,
            "long": long,
            "qv": qv,
        }


def test_js_reads_every_knob_of_recall_config(exported) -> None:
    """A knob added to RecallConfig fails here until search-core.js reads it (the page never hard-codes one)."""
    assert set(exported["js"]["knobs"]) == {f.name for f in fields(RecallConfig)}
    data = search.assembled(exported["assets"].__getitem__)
    assert data["config"] == asdict(RecallConfig())


def test_js_query_vector_is_pythons(exported) -> None:
    for q, v in zip(exported["queries"], exported["qv"], strict=True):
        got = np.asarray(exported["js"]["queries"][q]["vector"], dtype=np.float32)
        assert float(got @ v) > 0.999, q  # the browser's encoder is the store's


def test_js_dense_top_result_matches_python_over_the_same_vectors(exported) -> None:
    js, py = exported["js"]["queries"], exported["py"]
    for query in QUERIES:
        assert js[query]["dense"][0][0] == py[query]["dense"][0], query
    same_top3 = sum(js[q]["dense"][i][0] == py[q]["dense"][i] for q in QUERIES for i in range(3))
    assert same_top3 >= 0.9 * 3 * len(QUERIES)


def test_js_l2_is_rank_l2(exported) -> None:
    js, py = exported["js"]["queries"], exported["py"]
    for query in QUERIES:
        assert js[query]["l2"][0] == list(py[query]["l2"][0]), query  # the same memory, the same `why`
    hits = sum(js[q]["l2"][0][0] == gold for q, gold in QUERIES.items())
    assert hits >= len(QUERIES) - 1  # and it is the right memory
    release = js["release changelog"]["l2"][0]
    assert release[0] == "en-long" and "passage " in release[1] and "of memory en-long" in release[1]


def test_js_fusion_is_recalls_fusion_with_every_knob(exported) -> None:
    for (variant, dense, lexical), js in zip(FUSE_REQUESTS, exported["js"]["fused"], strict=True):
        config = RecallConfig(**variant)
        want = [r.id for r in fuse([tuple(x) for x in dense], [tuple(x) for x in lexical], config)]
        assert js == want, variant
    # the knobs change the order, so the test above sees them
    orders = {json.dumps(js) for js in exported["js"]["fused"][: len(VARIANTS)]}
    assert len(orders) >= 3


def test_js_lexical_scores_are_fts5_bm25(exported) -> None:
    js, py = exported["js"]["queries"], exported["py"]
    for query in exported["queries"]:
        got = dict(js[query]["bm25"])
        want = dict(py[query]["bm25"])
        assert set(got) == set(want), query
        for key, score in want.items():
            assert got[key] == pytest.approx(score, rel=1e-9), (query, key)
    assert any(k.startswith("en-long#p") for k, _ in js["release changelog"]["bm25"])  # passages are indexed


def test_js_session_search_is_the_stores(exported) -> None:
    js, py = exported["js"]["queries"], exported["py"]
    for query in exported["queries"]:
        assert js[query]["sessions"] == py[query]["sessions"], query
    assert py["备份策略"]["sessions"] and py["release changelog"]["sessions"]


def test_js_recall_all_layers_is_recalls(exported) -> None:
    js, py = exported["js"]["queries"], exported["py"]
    same = total = 0
    for query in exported["queries"]:
        want = [(h["layer"], h["id"], h["confident"]) for h in py[query]["recall"]]
        got = [(h["layer"], h["id"], h["confident"]) for h in js[query]["recall"]]
        total += max(len(want), len(got))
        same += sum(a == b for a, b in zip(want, got, strict=False))
    assert same >= 0.95 * total
    layers = {h["layer"] for q in exported["queries"] for h in js[q]["recall"]}
    assert layers == {"L1", "L2", "L4", "files"}
    backup = js["备份策略"]["recall"]
    assert any(h["layer"] == "L1" and h["confident"] for h in backup)  # the hot entry about it
    assert any(h["layer"] == "L4" and h["id"].startswith("s-backup#") for h in backup)  # the session turn
    assert any(h["layer"] == "files" and h["id"] == "backups.md" for h in backup)
    for q in ("xyzzyqqq", "？？？"):
        assert not any(h["confident"] for h in js[q]["recall"]), q
        assert not any(h["confident"] for h in py[q]["recall"]), q


def test_js_tokens_and_coverage_mirror_memory_tokens(exported) -> None:
    for text, (query, plain, index) in zip(exported["texts"], exported["js"]["tokens"], strict=True):
        assert query == tokens(text), text
        assert plain == tokens(text, stop_words=False), text
        assert " ".join(index) == fts_text(text), text
    for text, shares in zip(exported["texts"], exported["js"]["coverage"], strict=True):
        assert shares == pytest.approx([coverage(q, text) for q in exported["queries"]]), text


def test_js_cuts_a_long_query_as_recall_does(exported) -> None:
    for query, got in zip(exported["long"], exported["js"]["cut"], strict=True):
        assert got == cut_query(query)


def test_exported_files(exported) -> None:
    assets = exported["assets"]
    assert assets[search.DATA_JS].startswith(b"window.MemwikiSearchData = ")
    data = search.assembled(assets.__getitem__)
    parts = [uri for uri in assets if uri.startswith(f"{search.PART_DIR}/")]
    assert parts and all(assets[uri].startswith(b"window.MemwikiSearchParts = ") for uri in parts)
    data_js = "".join(assets[uri].decode("utf-8") for uri in [search.DATA_JS, *parts])
    assert data["dense"] is True and data["embedder"] == "use-multilingual-v3" and data["dim"] == 512
    assert [m[0] for m in data["L2"]["memories"]] == sorted(MEMORIES)  # oldest first (none dated: by id)
    # a long memory ships as its passages (no copy of the whole text), each text once
    long = MEMORIES["en-long"]
    passages = [u for u in data["L2"]["units"] if u[0].startswith("en-long#p")]
    assert len(passages) >= 2 and "".join(u[2] for u in passages) == long and long not in data_js
    # int8: 512 bytes per row, not 2 KB of float32, in slices named by their content (fetched over http(s))
    rows = sum(data["rows"].values())
    slices = data["slices"]
    assert sum(n for _, n in slices) == rows
    bins = [assets[f"{search.SLICE_DIR}/{name}"] for name, _ in slices]
    assert [len(b) for b in bins] == [512 * n for _, n in slices]
    for (name, _), rows_of in zip(slices, bins, strict=True):  # each slice's script (file://) holds its rows
        js = assets[f"{search.SLICE_DIR}/{name.removesuffix('.bin')}.js"].decode("ascii")
        head = f'(window.MemwikiSearchSlices = window.MemwikiSearchSlices || {{}})["{name}"] = "'
        assert js.startswith(head) and js.endswith('";\n') and base64.b64decode(js[len(head) : -3]) == rows_of
    # hostile text is data, never markup: no raw `<` in the data file, and the page's JS only sets text
    assert "<" not in data_js and any(u[2] == HOSTILE for u in data["L2"]["units"])
    for name in ("search-ui.js", "search-core.js"):
        js = assets[f"assets/memwiki/search/{name}"].decode()
        assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "document.write" not in js
    page = exported["pages"][0]
    assert page.src_uri == "search/index.md"
    assert 'id="memwiki-search-q"' in page.markdown and 'id="memwiki-search-results"' in page.markdown
    for src in re.findall(r'(?:src|href)="([^"]+)"', page.markdown):
        path, _, version = src.partition("?")
        assert path.startswith("../") and path[3:] in assets, src  # every script/stylesheet is shipped
        if path[3:] == search.DATA_JS:  # named by its hash: a browser that kept an earlier build's fetches it again
            assert version == f"v={hashlib.sha1(assets[search.DATA_JS]).hexdigest()[:12]}", src
    assert any(u.startswith(f"{search.USE_DIR}/use.js") for u in assets)  # the browser encoder ships with it


class CountingUSE(USEEmbedder):
    """The real embedded model, counting the texts it is asked to embed."""

    texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        CountingUSE.texts += len(texts)
        return super().embed(texts)


def test_vectors_are_made_once_for_every_later_build_and_process(tmp_path: Path) -> None:
    """The store keeps the vectors of hot entries, passages, turns and pages: a store opened again (as another
    process opens it) and a fresh build cache embed nothing, and give the same vectors."""
    with Store.init(tmp_path / "store", embedder=USEEmbedder()) as store:
        _fill(store)
        first = search.search_data(BuildContext(store.reader(), speed=BuildSpeed.at(tmp_path / "c1")))[1]
    CountingUSE.texts = 0
    with Store.open(tmp_path / "store", embedder=CountingUSE()) as store:
        second = search.search_data(BuildContext(store.reader(), speed=BuildSpeed.at(tmp_path / "c2")))[1]
        store.recall("备份", k=3, all_layers=True)
        assert CountingUSE.texts == 1  # the query
    assert first is not None and second is not None and np.array_equal(first, second)


def test_rows_of_texts_that_did_not_change_are_kept_by_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build keeps the rows of the texts it embedded (turns, pages, hot entries, passages) by group: a rebuild
    after a memory was written asks the source for none of them and ships the same rows; a changed turn has its
    group's rows made again (and only its group's)."""
    asked: list[int] = []

    def build(reader: object) -> tuple[dict, np.ndarray]:
        data, vectors = search.search_data(BuildContext(reader, speed=BuildSpeed.at(tmp_path / "c")))
        assert vectors is not None
        return data, vectors

    def layer(data: dict, vectors: np.ndarray, name: str) -> np.ndarray:
        counts = [data["rows"][k] for k in ("L1", "L2", "L4", "files")]
        start = sum(counts[: ("L1", "L2", "L4", "files").index(name)])
        return vectors[start : start + data["rows"][name]]

    with Store.init(tmp_path / "store", embedder=USEEmbedder()) as store:
        _fill(store)
        reader = store.reader()
        embed = reader.embed
        monkeypatch.setattr(reader, "embed", lambda texts: asked.append(len(texts)) or embed(texts))
        first = build(reader)
        store.semantic.upsert([Memory(id="m-new", text="a memory written since", category="technical")])
        again = build(reader)
        store.sessions.add_message(store.sessions.sessions()[0].id, "user", "一条新的消息")
        changed = build(reader)
    assert asked[0] > 0 and asked[1:] == [changed[0]["rows"]["L4"]]  # nothing for the memory; the turns again
    assert again[0]["rows"]["L2"] == first[0]["rows"]["L2"] + 1
    for name in ("L1", "L4", "files"):
        assert np.array_equal(layer(*again, name), layer(*first, name))
    assert np.array_equal(layer(*changed, "files"), layer(*first, "files"))
    assert changed[0]["rows"]["L4"] == first[0]["rows"]["L4"] + 1


def test_ten_new_memories_change_only_the_last_vector_slice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The browser keeps each slice of the vectors while its name (its content's hash) stays: ten memories an agent
    adds come after the older ones in their layer, so the slices before them keep their names."""
    monkeypatch.setattr(search, "SLICE_ROWS", 8)
    old = [
        Memory(id=f"m{i:03d}", text=f"note {i}: 备份 {i} 号盘", created=f"2026-01-{1 + i % 28:02d}") for i in range(40)
    ]
    new = [Memory(id=f"n{i:02d}", text=f"new note {i}", created="2026-12-01") for i in range(10)]

    def slices(store: Store) -> list[str]:
        data, vectors = search.search_data(BuildContext(store.reader(), speed=BuildSpeed.at(tmp_path / "c")))
        assets = search.vector_slices(vectors, data)
        bins = [a.content for a in assets if a.dest_uri.endswith(".bin")]
        assert b"".join(bins) == vectors.tobytes()  # the slices are the rows, in order
        return [name for name, _ in data["slices"]]

    with Store.init(tmp_path / "store", embedder=USEEmbedder()) as store:
        store.semantic.upsert(old)
        before = slices(store)
        store.semantic.upsert(new)
        after = slices(store)
    unchanged = len(old) // 8  # no hot entries: L2's rows come first
    assert after[:unchanged] == before[:unchanged] and len(before) == 5 and len(after) == 7


def test_one_memory_edited_rewrites_only_the_data_part_holding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data's long lists ship in parts named by their rows: editing one memory renames the one part of L2's
    units that holds it, and the page assembles the same data as one list would give."""
    monkeypatch.setattr(search, "PART_ROWS", 8)
    old = [Memory(id=f"m{i:03d}", text=f"note {i}: 备份 {i} 号盘", created=f"2026-01-{1 + i:02d}") for i in range(28)]

    def parts(store: Store) -> tuple[dict[str, list[str]], dict]:
        ctx = BuildContext(store.reader(), speed=BuildSpeed.at(tmp_path / "c"))
        data, _ = search.search_data(ctx)
        whole = json.loads(json.dumps(data))
        files = {a.dest_uri: a.content for a in search.data_parts(ctx, data)}
        files[search.DATA_JS] = f"window.MemwikiSearchData = {json.dumps(data)};\n".encode()
        assert search.assembled(files.__getitem__) == whole
        return {k: [name for name, _ in v] for k, v in data["parts"].items()}, files

    made: list[str] = []  # the part scripts written out (the others came from the build cache)
    script = search._part_script
    monkeypatch.setattr(search, "_part_script", lambda name, rows: made.append(name) or script(name, rows))
    with Store.init(tmp_path / "store", embedder=USEEmbedder()) as store:
        store.semantic.upsert(old)
        before, _ = parts(store)
        first = len(made)
        again, _ = parts(store)
        assert len(made) == first  # every part's script from the build cache
        store.semantic.upsert([Memory(id="m017", text="note 17: 备份改到 2 号盘", created=old[17].created)])
        after, files = parts(store)
        assert made[first:] == [after["L2.units"][2]]
    assert again == before and len(before["L2.units"]) == 4
    rows = [[f"m{i}", i, "备份", "备份", 0] for i in range(3)] + [["m0", 0, "备份", "备份", 0]]
    assert search._rows_name(rows) == search._rows_name(json.loads(json.dumps(rows)))  # by value, not by object
    changed = [(k, n) for k, names in before.items() for n, name in enumerate(names) if after[k][n] != name]
    assert changed == [("L2.units", 17 // 8)]  # oldest first: m017 is the 18th row
    assert "备份改到".encode() in files[f"{search.PART_DIR}/{after['L2.units'][2]}.js"]


def test_lexical_only_when_the_browser_cannot_embed(tmp_path: Path) -> None:
    """A store made with Ollama: queries cannot be embedded in a browser, so the page says so."""
    config = StoreConfig(embedder=EmbedderConfig(name="ollama", model="qwen3-embedding:0.6b", dim=8))
    with Store.init(tmp_path / "store", config=config) as store:
        store.semantic.upsert(
            [Memory(id="a", text="备份目录挂载在 /mnt/backup"), Memory(id="b", text="peanut allergy")],
            vectors=np.eye(2, 8, dtype=np.float32),  # vectors as an Ollama server would have made them
        )
        pages, assets = search.build(BuildContext(store.reader(), speed=BuildSpeed.at(tmp_path / "c")))
    uris = {a.dest_uri for a in assets}
    assert not any(u.startswith(search.SLICE_DIR) for u in uris) and not any("use-model" in u for u in uris)
    md = pages[0].markdown
    assert "Lexical search only" in md and "ollama:qwen3-embedding:0.6b" in md and "cannot run in a browser" in md
    assert "use.js" not in md


def test_search_data_holds_no_planted_secret(tmp_path: Path) -> None:
    """Everything the search ships comes through the privacy gate: secrets planted in every field of every layer
    (tests/canaries.py) are in none of its files, though the layers they sit in are (the control: the private
    profile ships them)."""
    from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
    from tests.canaries import found_in, plant

    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "use").symlink_to(CACHE / "use", target_is_directory=True)
    with Store.init(tmp_path / "store", embedder=USEEmbedder()) as store:
        canaries = plant(store)
        for profile in ("public", "private"):
            gate = PrivacyFilter(store.reader(), PrivacyRules.from_options({}, profile))
            _, assets = search.build(BuildContext(gate, speed=BuildSpeed.at(tmp_path / "cache")))
            _write_site(tmp_path / profile, [a for a in assets if "/search/" in a.dest_uri])
    data = search.assembled(lambda rel: (tmp_path / "public" / rel).read_bytes())
    assert all(data["rows"][layer] > 0 for layer in ("L1", "L2", "L4", "files"))
    assert found_in(tmp_path / "public", canaries) == []
    assert len(found_in(tmp_path / "private", canaries)) >= len(canaries) // 2


def test_search_data_is_written_a_row_a_line_and_reads_as_the_same_json() -> None:
    """The search data is one JS object; its lists of rows are written a row a line (a rebuild's site scan then
    reads the rows that changed), and it parses to exactly what one line of JSON holds, `</script>` escaped."""
    from memwiki.site.browser.pyvis_html import script_json

    data = {
        "L1": [["memory:0", "a </script> b", 0], ["memory:1", "两行\n文字", 1]],
        "L2": {"memories": [["m1", "u", "c", ""], ["m2", "v", "c", ""]], "units": []},
        "config": {"k": 60},
        "stop_words": ["a", "the"],
    }
    text = script_json(data, row_depth=3)
    assert json.loads(text) == json.loads(script_json(data)) == data
    rows = ['["memory:0","a \\u003c\\u002fscript\\u003e b",0],', '["memory:1","两行\\n文字",1]']
    assert text.splitlines()[1:3] == rows
    assert '["m1","u","c",""],' in text.splitlines() and "</" not in text
