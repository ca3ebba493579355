"""Benchmark: the site's search in headless Chromium over a throttled link, beside a baseline site.

A store of --memories L2 memories (plus concepts, entities and sessions, made with scripts/bench_build.py's
text helpers through the real store API) is built with `mkdocs build` twice: with this checkout's code, and
with the code of --baseline-rev (default: the commit before the encoder's payload was reworked, which
shipped the model as one 38 MB base64 script behind a 404 for use-model.bin). Each site is served by a
loopback HTTP server that answers like a static host (gzip for compressible types, `Cache-Control:
max-age=600`, ETag), and Chromium (Playwright, the system chromium) opens its search page through CDP's
`Network.emulateNetworkConditions` at --mbit Mbit/s with --rtt ms of latency, in a fresh browser context
each run (first visit), then once more in the same context (second visit: HTTP cache and Cache API).

The page is driven only as a person would: the query is typed into `#memwiki-search-q` and results are
awaited in `#memwiki-search-results`. Instrumentation (an init script) records when the results list
changes and when `MemwikiUSE.embed` runs, so:

* first result: the first change of the results list after the page's load event, the first query typed
  at that moment (lexical: the model is not loaded yet); the load event itself is timed from navigation
  start (the page's own data comes over the same throttled link; the model's files may start before it);
* first meaning-ranked result: the first change of the list after `embed(query)` returned (or the promise
  of `embedAsync(query)` resolved);
* per query: for each further query, from its input event to the change of the list after its embed;
* bytes: CDP's encodedDataLength summed over the page's requests (what came over the wire), the model's
  part apart, counted once the whole model is in (`MemwikiUSE.ready`); failed requests (status >= 400 or
  network errors) are counted and listed;
* memory: the peak PSS of Chromium's processes (sampled every 0.1 s) and the page's JS heap at the end.

Figures that depend on the search page's own code (search-ui.js / search-core.js: debounce, ranking,
rendering): first result, per query. The model's figures (bytes, first meaning-ranked result less the
UI's part) depend on use.js and the exported model.

    python scripts/bench_search.py [--memories 10000] [--runs 3] [--mbit 50] [--baseline-rev REV|none]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memwiki.common.textio import atomic_write_text  # noqa: E402
from memwiki.source import CATEGORIES, Memory  # noqa: E402
from memwiki.store.store import Store  # noqa: E402
from scripts.bench_build import (  # noqa: E402
    PREDICATES,
    TYPES,
    _descendants,
    _paragraph,
    _pss_mb,
    _sentence,
    write_memwiki_project,
)

GEN_VERSION = 1
WORK = ROOT / ".cache" / "bench_search"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DEFAULT_BASELINE = "a6b71c6"  # the last commit with the 38 MB base64 model script
QUERIES = [
    "向量模型跑在哪台服务器上？",
    "backup of the wiki pages",
    "记忆检索的缓存配置",
    "which agent tool deploys the session store",
    "部署 embedding model 的项目",
    "用户偏好的规则",
    "graph entity timeline update",
    "本地数据库同步日志",
]
COMPRESSIBLE = {".html", ".js", ".css", ".json", ".svg", ".xml", ".txt", ".map", ".bin"}
TYPES_BY_EXT = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".woff2": "font/woff2",
    ".bin": "application/octet-stream",
}


# ── the store and the sites ─────────────────────────────────────────────────────────────────────────────


def generate_store(n_memories: int, dest: Path) -> Path:
    """`n_memories` L2 memories, n/5 concepts (half wiki pages, half graph entities) and n/100 sessions."""
    stamp = dest / "bench.json"
    if stamp.is_file() and json.loads(stamp.read_text()).get("version") == GEN_VERSION:
        return dest / "store"
    shutil.rmtree(dest, ignore_errors=True)
    rng = random.Random(n_memories)
    n_concepts = n_memories // 5
    wiki = [f"Concept {i}" for i in range(n_concepts // 2)]
    entities = [f"Entity {i}" for i in range(n_concepts - len(wiki))]
    t0 = time.perf_counter()
    with Store.init(dest / "store") as store:
        for i, title in enumerate(wiki):
            body = f"# {title}\n\n" + "\n\n".join(_paragraph(rng, [f"[[{rng.choice(wiki)}]]"]) for _ in range(2))
            atomic_write_text(store.wiki_dir / f"concept-{i}.md", f"---\ntitle: {title}\n---\n{body}\n")
        for name in entities:
            store.graph.add_entity(name, rng.choice(TYPES))
        for name in entities:
            store.graph.add_triple(name, rng.choice(PREDICATES), rng.choice(entities), valid_from="2025-06-01")
        memories = [
            Memory(
                id=f"bm-{i}",
                text=_paragraph(rng, [f"[[{rng.choice(wiki)}]]"]),
                category=rng.choice(CATEGORIES),
                created=f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T10:00:00Z",
                wing=rng.choice(("infra", "memwiki", "personal")),
            )
            for i in range(n_memories)
        ]
        for start in range(0, len(memories), 256):
            store.semantic.upsert(memories[start : start + 256])
        lines = []
        for s in range(n_memories // 100):
            for m in range(8):
                row = {
                    "session_id": f"session-{s}",
                    "role": "user" if m % 2 == 0 else "assistant",
                    "content": _sentence(rng, []),
                    "time": f"2026-{1 + s % 11:02d}-{1 + s % 28:02d}T{8 + m:02d}:00:00Z",
                }
                lines.append(json.dumps(row, ensure_ascii=False))
        sessions = dest / "sessions.jsonl"
        sessions.write_text("\n".join(lines) + "\n", encoding="utf-8")
        store.sessions.import_jsonl(sessions)
    stamp.write_text(json.dumps({"version": GEN_VERSION, "n": n_memories, "seconds": time.perf_counter() - t0}))
    return dest / "store"


CODE_PATHS = ("memwiki", "plugins", "memory", "pyproject.toml")  # the package (its older names) and its entry point
# MkDocs finds plugins by the installed entry point, which names this checkout's module: a baseline is built by a
# launcher that points the `memwiki` entry at the baseline's own module (its pyproject's) and checks it is the
# baseline's file that loads
LAUNCHER = """
import sys
from importlib.metadata import EntryPoint
import mkdocs.plugins
src, value = sys.argv.pop(1), sys.argv.pop(1)
module = __import__(value.split(":")[0], fromlist=["_"])
if not module.__file__.startswith(src):
    sys.exit(f"the baseline's plugin {value} loads from {module.__file__}, not from {src}")
installed = mkdocs.plugins.get_plugins
mkdocs.plugins.get_plugins = lambda: {**installed(), "memwiki": EntryPoint("memwiki", value, "mkdocs.plugins")}
from mkdocs.__main__ import cli
cli()
"""


def source_tree(rev: str | None) -> Path:
    """This checkout (None), or the code of `rev` unpacked from git (no worktree)."""
    if rev is None:
        return ROOT
    sha = git("rev-parse", rev).strip()
    dest = WORK / f"src-{sha[:12]}"
    if not (dest / ".complete").is_file():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        present = [p for p in git("ls-tree", "--name-only", sha).split() if p in CODE_PATHS]
        archive = subprocess.run(["git", "archive", "--format=tar", sha, *present], cwd=ROOT, capture_output=True)
        tar = dest / "src.tar"
        tar.write_bytes(archive.stdout)
        with tarfile.open(tar) as t:
            t.extractall(dest, filter="data")
        tar.unlink()
        (dest / ".complete").write_text(rev)
    return dest


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def plugin_entry(src: Path) -> str:
    """The `memwiki` MkDocs entry point the code in `src` declares (`memwiki.site.plugin:MemwikiPlugin`)."""
    import tomllib

    project = tomllib.loads((src / "pyproject.toml").read_text(encoding="utf-8"))
    return project["project"]["entry-points"]["mkdocs.plugins"]["memwiki"]


def _code_key(src: Path) -> str:
    h = hashlib.sha256()
    for top in CODE_PATHS:
        path = src / top
        for f in sorted(path.rglob("*")) if path.is_dir() else [path] if path.is_file() else []:
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(f.relative_to(src).as_posix().encode() + f.read_bytes())
    return h.hexdigest()[:16]


def build_site(store: Path, name: str, src: Path) -> Path:
    """The store's site built by the code in `src` (kept while that code and the store are unchanged)."""
    dest = WORK / name
    key = _code_key(src) + ":" + (store.parent / "bench.json").read_text()
    site = dest / "site"
    if (dest / "built.key").is_file() and (dest / "built.key").read_text() == key and site.is_dir():
        return site
    if src != ROOT:  # its own export of the model: the shared one is kept by this checkout's code
        (dest / "cache" / "use").mkdir(parents=True, exist_ok=True)
    config = write_memwiki_project(dest, store)
    env = dict(os.environ, PYTHONPATH=str(src) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            LAUNCHER,
            str(src),
            plugin_entry(src),
            "build",
            "-q",
            "-f",
            str(config),
            "-d",
            str(site),
        ],
        cwd=dest,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"mkdocs build of {name} failed:\n{proc.stderr[-3000:]}")
    print(f"built {name} ({src}) in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    (dest / "built.key").write_text(key)
    return site


# ── a static host on the loopback ───────────────────────────────────────────────────────────────────────


class StaticHost(ThreadingHTTPServer):
    """Serves `site` as a static host does: gzip for compressible types, max-age=600 and ETags."""

    daemon_threads = True

    def __init__(self, site: Path) -> None:
        self.site = site.resolve()
        self.gz: dict[Path, bytes] = {}
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def gzipped(self, path: Path, data: bytes) -> bytes:
        with self.lock:
            if path not in self.gz:
                self.gz[path] = gzip.compress(data, compresslevel=6, mtime=0)
            return self.gz[path]


class _Handler(BaseHTTPRequestHandler):
    server: StaticHost

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        rel = self.path.split("?", 1)[0].split("#", 1)[0].lstrip("/")
        path = (self.server.site / rel).resolve()
        if path.is_dir():
            path = path / "index.html"
        if self.server.site not in path.parents or not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        etag = '"' + hashlib.sha1(data).hexdigest()[:16] + '"'
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return
        body, encoded = data, False
        if path.suffix in COMPRESSIBLE and "gzip" in (self.headers.get("Accept-Encoding") or ""):
            body, encoded = self.server.gzipped(path, data), True
        self.send_response(200)
        self.send_header("Content-Type", TYPES_BY_EXT.get(path.suffix, "application/octet-stream"))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=600")
        self.send_header("ETag", etag)
        if encoded:
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)


@contextlib.contextmanager
def serving(site: Path):  # noqa: ANN201 - a context manager of the host
    host = StaticHost(site)
    for path in (site / "assets" / "memwiki" / "use").glob("use-model*"):  # compressed ahead, as a CDN keeps it
        host.gzipped(path.resolve(), path.read_bytes())
    threading.Thread(target=host.serve_forever, daemon=True).start()
    try:
        yield host
    finally:
        host.shutdown()
        host.server_close()


# ── the browser ─────────────────────────────────────────────────────────────────────────────────────────

INSTRUMENT = r"""
(() => {
  const b = window.__bench = { changes: [], embeds: [], inputs: [], ready: null };
  let use;
  Object.defineProperty(window, "MemwikiUSE", { configurable: true, get() { return use; }, set(v) {
    use = v;
    if (!v || typeof v.embed !== "function") return;
    const embed = v.embed, load = v.load;
    v.embed = function (text) {
      const t = performance.now(), out = embed.apply(this, arguments);
      b.embeds.push([String(text), t, performance.now()]);
      return out;
    };
    if (typeof v.embedAsync === "function") {
      const embedAsync = v.embedAsync;
      v.embedAsync = function (text) {
        const t = performance.now(), p = embedAsync.apply(this, arguments);
        Promise.resolve(p).then(() => { b.embeds.push([String(text), t, performance.now()]); }, () => {});
        return p;
      };
    }
    v.load = function () {
      const p = load.apply(this, arguments);
      Promise.resolve(p).then(() => { if (b.ready === null) b.ready = performance.now(); }, () => {});
      return p;
    };
  } });
  let last = "";
  const look = () => {
    const list = document.getElementById("memwiki-search-results");
    const sig = list ? list.children.length + ":" + list.textContent : "";
    if (sig !== last) { last = sig; b.changes.push([performance.now(), list ? list.children.length : 0]); }
  };
  document.addEventListener("input", (e) => {
    if (e.target && e.target.id === "memwiki-search-q") b.inputs.push([performance.now(), e.target.value]);
  }, true);
  document.addEventListener("DOMContentLoaded", () => {
    look();
    new MutationObserver(look).observe(document.body, { childList: true, subtree: true, characterData: true });
  });
})();
"""


@dataclass
class Visit:
    first_result_s: float | None = None
    first_meaning_s: float | None = None
    load_event_s: float | None = None  # the page's load event, from navigation start
    per_query_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)
    bytes_total: int = 0
    bytes_model: int = 0
    failed: list[str] = field(default_factory=list)
    peak_mb: float = 0.0
    js_heap_mb: float = 0.0
    model_from: str = ""
    model_asked_s: float | None = None  # when the page asked for the model's first file, after load
    model_fetch_s: float | None = None  # from that request to the end of the model's last file
    cpu_s: float = 0.0  # CPU time of Chromium's processes during the visit


def _chromium_pss() -> float:
    pids = [p for p in _descendants(os.getpid()) if "chrom" in _comm(p)]
    return _pss_mb(pids)


def _chromium_cpu() -> float:
    """User + system CPU seconds of Chromium's live processes."""
    total = 0
    for pid in _descendants(os.getpid()):
        if "chrom" in _comm(pid):
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text()
    except OSError:
        return ""


def _wait(page, expr: str, timeout_s: float) -> object:  # noqa: ANN001 - playwright's Page
    return page.wait_for_function(expr, timeout=timeout_s * 1000).json_value()


AFTER_EMBED = """([q, since]) => {
  const b = window.__bench, e = b.embeds.find(x => x[0] === q && x[2] >= since);
  if (!e) return null;
  const c = b.changes.find(x => x[0] >= e[2] && x[1] > 0);
  if (c) return [c[0], e[2] - e[1]];
  return performance.now() - e[2] > 3000 ? [e[2], e[2] - e[1]] : null;  // ranking unchanged: no new render
}"""


def visit(context, url: str, queries: list[str], throttle: dict | None, timeout_s: float) -> Visit:  # noqa: ANN001
    """One visit of the search page: first result, first meaning-ranked result, then the other queries."""
    out = Visit()
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    if throttle:
        cdp.send("Network.emulateNetworkConditions", throttle)
    sizes: dict[str, int] = {}
    urls: dict[str, str] = {}

    def on_response(e: dict) -> None:
        urls[e["requestId"]] = e["response"]["url"]
        if e["response"]["status"] >= 400:
            out.failed.append(f"{e['response']['status']} {e['response']['url']}")

    cdp.on("Network.responseReceived", on_response)
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], int(e["encodedDataLength"])))
    cdp.on("Network.loadingFailed", lambda e: out.failed.append(f"{e.get('errorText')} {urls.get(e['requestId'], '')}"))
    peak, stop = [0.0], threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            peak[0] = max(peak[0], _chromium_pss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu0 = _chromium_cpu()
    try:
        page.goto(url, wait_until="load", timeout=timeout_s * 1000)
        loaded = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
        out.load_event_s = loaded / 1000
        q0 = queries[0]
        page.fill("#memwiki-search-q", q0)
        first = _wait(
            page,
            "() => { const b = window.__bench, i = b.inputs[0];"
            " const c = i && b.changes.find(x => x[0] >= i[0] && x[1] > 0); return c ? c[0] : null; }",
            timeout_s,
        )
        out.first_result_s = (float(first) - loaded) / 1000
        with contextlib.suppress(Exception):
            meaning = page.wait_for_function(AFTER_EMBED, arg=[q0, 0], timeout=timeout_s * 1000).json_value()
            out.first_meaning_s = (meaning[0] - loaded) / 1000
            out.embed_ms.append(meaning[1])
        if out.first_meaning_s is not None:
            for q in queries[1:]:
                since = page.evaluate("performance.now()")
                page.fill("#memwiki-search-q", q)
                done = page.wait_for_function(AFTER_EMBED, arg=[q, since], timeout=timeout_s * 1000).json_value()
                typed = page.evaluate(f"window.__bench.inputs.filter(x => x[0] >= {since})[0][0]")
                out.per_query_ms.append(done[0] - typed)
                out.embed_ms.append(done[1])
        with contextlib.suppress(Exception):  # the bytes of the whole model, even if the queries were done first
            page.wait_for_function("!window.MemwikiUSE || window.MemwikiUSE.ready", timeout=timeout_s * 1000)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]} if _enable(cdp) else {}
        out.js_heap_mb = metrics.get("JSHeapUsedSize", 0) / 1e6
        with contextlib.suppress(Exception):
            out.model_from = page.evaluate(
                "window.MemwikiUSE && window.MemwikiUSE.info ? window.MemwikiUSE.info.from || '' : ''"
            )
        timing = page.evaluate(
            "performance.getEntriesByType('resource').filter(e => e.name.includes('use-model'))"
            ".map(e => [e.startTime, e.responseEnd])"
        )
        if timing:
            out.model_asked_s = (min(t[0] for t in timing) - loaded) / 1000
            out.model_fetch_s = (max(t[1] for t in timing) - min(t[0] for t in timing)) / 1000
        page.wait_for_timeout(300)  # the last loadingFinished events
    finally:
        stop.set()
        sampler.join()
        out.peak_mb = peak[0]
        out.cpu_s = _chromium_cpu() - cpu0
        page.close()
    out.bytes_total = sum(sizes.values())
    out.bytes_model = sum(n for rid, n in sizes.items() if "use-model" in urls.get(rid, ""))
    return out


EMBED_ASYNC = """async (q) => {
  const t0 = performance.now(), nav = performance.getEntriesByType('navigation')[0];
  if (!window.MemwikiUSE || !window.MemwikiUSE.embedAsync) return null;
  await window.MemwikiUSE.embedAsync(q);
  return [performance.now() - nav.loadEventEnd, performance.now() - t0];
}"""


def visit_model_only(context, url: str, query: str, throttle: dict, timeout_s: float) -> float | None:  # noqa: ANN001
    """Seconds from the load event to `MemwikiUSE.embedAsync(query)`'s vector, asked for at once (no UI)."""
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", throttle)
    try:
        page.goto(url, wait_until="load", timeout=timeout_s * 1000)
        got = page.evaluate(EMBED_ASYNC, query)
        return None if got is None else got[0] / 1000
    finally:
        page.close()


def _enable(cdp) -> bool:  # noqa: ANN001
    cdp.send("Performance.enable")
    return True


def measure_site(browser, base: str, runs: int, mbit: float, rtt_ms: float, timeout_s: float) -> dict:  # noqa: ANN001
    """`runs` first visits (fresh contexts) and one second visit, throttled; medians of the first visits."""
    throttle = {
        "offline": False,
        "latency": rtt_ms,
        "downloadThroughput": mbit * 1e6 / 8,
        "uploadThroughput": mbit * 1e6 / 8,
    }
    url = base + "search/index.html"
    firsts, second = [], None
    for r in range(runs):
        context = browser.new_context()
        context.add_init_script(INSTRUMENT)
        firsts.append(visit(context, url, QUERIES, throttle, timeout_s))
        if r == runs - 1:
            second = visit(context, url, QUERIES[:2], throttle, timeout_s)
        context.close()
    model_only = []
    for _ in range(runs):
        context = browser.new_context()
        model_only.append(visit_model_only(context, url, QUERIES[0], throttle, timeout_s))
        context.close()
    return {"first": firsts, "second": second, "model_only": model_only}


def _med(xs: list[float | None]) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summary(m: dict) -> dict[str, float | None]:
    f: list[Visit] = m["first"]
    s: Visit = m["second"]
    return {
        "payload MB (wire, first visit)": _med([v.bytes_total / 1e6 for v in f]),
        "  of which the model MB": _med([v.bytes_model / 1e6 for v in f]),
        "failed requests": _med([float(len(v.failed)) for v in f]),
        "page load event s (from navigation)": _med([v.load_event_s for v in f]),
        "first result s (after load)": _med([v.first_result_s for v in f]),
        "first meaning-ranked s (after load)": _med([v.first_meaning_s for v in f]),
        "  model asked for at s": _med([v.model_asked_s for v in f]),
        "  model download s": _med([v.model_fetch_s for v in f]),
        "Chromium CPU s (visit)": _med([v.cpu_s for v in f]),
        "per query ms (median)": _med([_med(v.per_query_ms) for v in f]),
        "  embed ms (median)": _med([_med(v.embed_ms) for v in f]),
        "peak Chromium PSS MB": _med([v.peak_mb for v in f]),
        "JS heap MB (end)": _med([v.js_heap_mb for v in f]),
        "embedAsync(q) at load: vector s": _med(m["model_only"]),
        "2nd visit: wire MB": s.bytes_total / 1e6 if s else None,
        "2nd visit: model wire MB": s.bytes_model / 1e6 if s else None,
        "2nd visit: first meaning-ranked s (after load)": s.first_meaning_s if s else None,
    }


def model_sizes(site: Path) -> dict[str, int]:
    """Bytes a browser downloads for the model over http (each file as a host compresses it: raw, gzip -9,
    brotli 11), and the model's files on disk."""
    folder = site / "assets" / "memwiki" / "use"
    manifest = re.search(r"var MODEL = (\{.*?\});", (folder / "use.js").read_text(encoding="utf-8"))
    if manifest:  # the files use.js fetches (a kept site may still hold an older model's)
        names = [name for name, _, _ in json.loads(manifest.group(1))["http"]]
        over_http = [folder / name for name in names]
        on_disk = over_http + [folder / name for name, _, _ in json.loads(manifest.group(1))["file"]]
    else:  # before the slices: one base64 script, after a 404 for use-model.bin
        over_http = on_disk = [folder / "use-model.js"]
    files = [p.read_bytes() for p in over_http]
    sizes = {"raw": sum(map(len, files)), "gzip -9": sum(len(gzip.compress(f, 9, mtime=0)) for f in files)}
    with contextlib.suppress(ImportError):
        import brotli

        sizes["brotli 11"] = sum(len(brotli.compress(f, quality=11)) for f in files)
    sizes["disk, the model's files"] = sum(p.stat().st_size for p in on_disk)
    return sizes


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:,.3f}" if abs(x) < 10 else f"{x:,.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3, help="first visits per site (median reported)")
    ap.add_argument("--mbit", type=float, default=50.0)
    ap.add_argument("--rtt", type=float, default=20.0, help="added latency per request, ms")
    ap.add_argument("--baseline-rev", default=DEFAULT_BASELINE, help="git revision of the baseline, or 'none'")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for one result")
    ap.add_argument("--json", type=Path, help="also write the raw figures here")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    store = generate_store(args.memories, WORK / f"store-{args.memories}")
    sites = {"this checkout": build_site(store, f"site-{args.memories}", source_tree(None))}
    if args.baseline_rev != "none":
        rev = args.baseline_rev
        sites[f"baseline {rev}"] = build_site(store, f"site-{args.memories}-{rev}", source_tree(rev))
    results: dict[str, dict] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        for name, site in sites.items():
            with serving(site) as host:
                results[name] = measure_site(browser, host.url, args.runs, args.mbit, args.rtt, args.timeout)
            print(f"measured {name}", file=sys.stderr)
        browser.close()

    names = list(sites)
    rows = {name: summary(results[name]) for name in names}
    print(f"search page, {args.memories:,} memories, {args.mbit:g} Mbit/s, {args.rtt:g} ms RTT, {args.runs} runs")
    print(f"{'':36s}" + "".join(f"{n:>22s}" for n in names) + ("     ratio" if len(names) > 1 else ""))
    for key in rows[names[0]]:
        vals = [rows[n][key] for n in names]
        ratio = f"{vals[0] / vals[1]:9.2f}x" if len(vals) > 1 and vals[0] and vals[1] else ""
        print(f"{key:36s}" + "".join(f"{_fmt(v):>22s}" for v in vals) + ratio)
    for name in names:
        sizes = model_sizes(sites[name])
        print(f"model bytes over http, {name}: " + ", ".join(f"{k} {v:,}" for k, v in sizes.items()))
        for v in results[name]["first"][:1]:
            if v.failed:
                print(f"  failed requests ({name}): {v.failed}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    n: {k: [vars(v) for v in r["first"]] + [vars(r["second"])] for k in ["visits"]}
                    for n, r in results.items()
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
