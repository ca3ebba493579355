"""Benchmark: `mkdocs build` of a generated memory store through the memwiki plugin, beside a plain build.

For each size N (concepts), a store is generated through the real store API (`memwiki.store.store.Store`): N/2
wiki concept pages (Markdown with frontmatter and [[wikilinks]], a few to concepts that have no page),
N/2 graph entities with ~1.5 facts each (some ended, some superseded), N/10 L2 memories (embedded with
the store's USE embedder) and N/100 sessions of 8 messages. It is built with `mkdocs build` and Material
(navigation.prune), cold (none of the plugin's caches; the last run's site and caches are renamed away, see
`set_aside`) `--runs` times, then rebuilt after one memory changed (warm page
cache), `--runs` times. The baseline is a plain `mkdocs build` of N ordinary Markdown pages with the same
theme, features and search plugin, in the same script.

Reported per build: pages, median wall time, pages/s, total site size, bytes per page (mean HTML page),
peak RSS of the build process (its high-water mark from wait4, which is that of a forked child when higher: a
fork's RSS counts the pages it shares with the build) and the peak PSS summed over the build and
its worker processes (sampled every 0.25 s: `tree_MB`), and the CPU time of the build with its workers
(`cpu_s`: the work done, whatever else the shared machine was doing). Targets at 10k: >= 150 pages/s, <= 40 KB
per page, <= 1.5 GB peak, rebuild after one memory changed <= 5 s.

    python scripts/bench_build.py --sizes 1000,10000 --runs 3
    python scripts/bench_build.py --sizes 10000 --runs 1 --profile   # where the time goes (cProfile)
    python scripts/bench_build.py --shape memories --sizes 100000 --runs 1 --no-baseline  # 100k memories
    python scripts/bench_build.py --code /tmp/before   # the code before (git worktree add /tmp/before REV)

`--shape memories` counts L2 memories instead (n/50 sessions of 20 turns, n/5 facts, n/100 wiki pages: an agent's
long use). Generated stores are kept in `.cache/bench_build/<N>/` (`memories-<N>/`) and reused by later runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memwiki.common.textio import atomic_write_text  # noqa: E402
from memwiki.source import CATEGORIES, Memory  # noqa: E402
from memwiki.store.store import Store  # noqa: E402

GEN_VERSION = 4  # 4: one session writer for both shapes (turns a minute apart); 3: Chinese drawn as words
WORK = ROOT / ".cache" / "bench_build"
TYPES = ("person", "project", "tool", "service", "concept", "place")
PREDICATES = ("uses", "depends_on", "runs_on", "owned_by", "part_of", "talks_to", "stored_in")
# Chinese words, drawn like the English ones (random characters were no text: every run went through
# jieba's slow path for unknown words, which real memory text rarely does)
ZH = (
    "记忆 检索 向量 服务器 部署 备份 网络 配置 项目 会话 用户 偏好 规则 授权 嵌入 模型 知识 图谱 实体 事实 "
    "时间 长期 本地 数据库 页面 搜索 更新 删除 同步 导入 代理 工具 文件 目录 接口 缓存 索引 日志 测试 发布"
).split()
WORDS = (
    "memory recall vector server deploy backup network config project session user preference rule "
    "embedding model graph entity fact timeline cache index search page build wiki agent store layer"
).split()

MKDOCS_THEME = {
    "name": "material",
    "font": False,
    "features": ["navigation.prune", "navigation.indexes"],
}


def _sentence(rng: random.Random, links: list[str]) -> str:
    words = rng.choices(WORDS, k=rng.randint(8, 16))
    zh = "".join(rng.choices(ZH, k=rng.randint(3, 7)))
    for link in links:
        words.insert(rng.randrange(len(words) + 1), link)
    return " ".join(words).capitalize() + f"，{zh}。"


def _paragraph(rng: random.Random, links: list[str]) -> str:
    per = [links[i::3] for i in range(3)]
    return " ".join(_sentence(rng, chunk) for chunk in per)


# ── generation ───────────────────────────────────────────────────────────────────────────────────────


def _session_lines(rng: random.Random, sessions: int, turns: int, names: list[str]) -> list[str]:
    """`sessions` sessions of `turns` turns as `memwiki import` reads them (JSON lines), each turn linking a name."""
    lines = []
    for s in range(sessions):
        for m in range(turns):
            row = {
                "session_id": f"session-{s}",
                "role": "user" if m % 2 == 0 else "assistant",
                "content": _paragraph(rng, [f"[[{rng.choice(names)}]]"]),
                "time": f"2026-{1 + s % 11:02d}-{1 + s % 28:02d}T{8 + m % 12:02d}:{m:02d}:00Z",
            }
            if m == 0:
                row["title"] = f"Session {s}: {rng.choice(WORDS)} {rng.choice(WORDS)}"
            lines.append(json.dumps(row, ensure_ascii=False))
    return lines


def _finish(store: Store, dest: Path, session_lines: list[str], n: int, t0: float) -> Path:
    """Import the sessions (as `memwiki import` reads them: a JSONL file) and stamp the generated store."""
    sessions = dest / "sessions.jsonl"
    sessions.write_text("\n".join(session_lines) + "\n", encoding="utf-8")
    store.sessions.import_jsonl(sessions)
    stats = {"version": GEN_VERSION, "n": n, "seconds": time.perf_counter() - t0, "stats": store.stats()}
    (dest / "bench.json").write_text(json.dumps(stats, ensure_ascii=False, indent=1))
    return dest / "store"


def generate_store(n: int, dest: Path) -> Path:
    """A store of `n` concepts (half wiki pages, half graph entities) with memories, facts and sessions."""
    stamp = dest / "bench.json"
    if stamp.is_file() and json.loads(stamp.read_text()).get("version") == GEN_VERSION:
        return dest / "store"
    shutil.rmtree(dest, ignore_errors=True)
    rng = random.Random(n)
    n_wiki, n_ent = n // 2, n - n // 2
    wiki_titles = [f"Concept {i}" for i in range(n_wiki)]
    entity_names = [f"Entity {i}" for i in range(n_ent)]
    t0 = time.perf_counter()
    with Store.init(dest / "store") as store:
        for i, title in enumerate(wiki_titles):  # wiki pages with wikilinks (1 in 25 to a wanted concept)

            def link() -> str:
                r = rng.random()
                if r < 0.04:
                    return f"[[Missing {rng.randrange(max(1, n // 50))}]]"
                pool = wiki_titles if r < 0.6 else entity_names
                return f"[[{rng.choice(pool)}]]"

            body = f"# {title}\n\n" + "\n\n".join(_paragraph(rng, [link() for _ in range(2)]) for _ in range(3))
            body += "\n\n## Notes\n\n- " + "\n- ".join(_sentence(rng, []) for _ in range(3)) + "\n"
            front = f"---\ntitle: {title}\naliases: [概念{i}]\ntags: [{rng.choice(TYPES)}]\n---\n"
            atomic_write_text(store.wiki_dir / f"concept-{i}.md", front + body)
        for name in entity_names:
            store.graph.add_entity(name, rng.choice(TYPES))
        for i, name in enumerate(entity_names):  # ~1.5 facts per entity; 1 in 10 ended, 1 in 20 superseded
            for _ in range(1 + (i % 2)):
                other = entity_names[rng.randrange(n_ent)]
                pred = rng.choice(PREDICATES)
                day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                if rng.random() < 0.1:
                    store.graph.add_triple(
                        name,
                        pred,
                        other,
                        valid_from="2024-01-01",
                        valid_to=day,
                        source_file=f"session-{rng.randrange(max(1, n // 100))}",
                    )
                else:
                    store.graph.add_triple(name, pred, other, valid_from=day, source_file=f"concept-{i}.md")
            if i % 20 == 0:
                store.graph.supersede(name, "runs_on", entity_names[rng.randrange(n_ent)], date="2026-01-15")
        memories = [
            Memory(
                id=f"bm-{i}",
                text=_paragraph(rng, [f"[[{rng.choice(wiki_titles)}]]"]),
                category=rng.choice(CATEGORIES),
                created=f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T10:00:00Z",
                wing=rng.choice(("infra", "memwiki", "personal")),
                room=rng.choice(("a", "b", "c", "d")),
            )
            for i in range(n // 10)
        ]
        for start in range(0, len(memories), 256):
            store.semantic.upsert(memories[start : start + 256])
        return _finish(store, dest, _session_lines(rng, n // 100, 8, wiki_titles + entity_names), n, t0)


def generate_memory_store(n: int, dest: Path) -> Path:
    """A store shaped as an agent's long use makes it (issue 24's 100k store): `n` L2 memories, n/50 sessions of 20
    turns, n/5 facts between n/10 entities, n/100 wiki pages; memories link to wiki pages as the agent writes them."""
    stamp = dest / "bench.json"
    if stamp.is_file() and json.loads(stamp.read_text()).get("version") == GEN_VERSION:
        return dest / "store"
    shutil.rmtree(dest, ignore_errors=True)
    rng = random.Random(n + 1)
    titles = [f"Concept {i}" for i in range(max(1, n // 100))]
    names = [f"Entity {i}" for i in range(max(2, n // 10))]
    t0 = time.perf_counter()
    with Store.init(dest / "store") as store:
        for i, title in enumerate(titles):
            body = f"# {title}\n\n" + "\n\n".join(_paragraph(rng, [f"[[{rng.choice(titles)}]]"]) for _ in range(3))
            atomic_write_text(store.wiki_dir / f"concept-{i}.md", f"---\ntitle: {title}\n---\n" + body + "\n")
        for name in names:
            store.graph.add_entity(name, rng.choice(TYPES))
        for _ in range(n // 5):
            day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            store.graph.add_triple(rng.choice(names), rng.choice(PREDICATES), rng.choice(names), valid_from=day)
        for start in range(0, n, 1000):
            store.semantic.upsert(
                [
                    Memory(
                        id=f"bm-{i}",
                        text=_paragraph(rng, [f"[[{rng.choice(titles)}]]"]),
                        category=rng.choice(CATEGORIES),
                        created=f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T10:00:00Z",
                        wing=rng.choice(("infra", "memwiki", "personal")),
                        room=rng.choice(("a", "b", "c", "d")),
                    )
                    for i in range(start, min(n, start + 1000))
                ]
            )
        return _finish(store, dest, _session_lines(rng, max(1, n // 50), 20, titles + names), n, t0)


def make_vectors(store_path: Path) -> tuple[int, float]:
    """What an import through memwiki does after writing (`memwiki import`, `Store.keep_vectors`): the vectors of
    turns and pages made where they are written, not by the build; (texts embedded, seconds). The wiki pages
    are written by hand here (as a person does), so this is also what the first reader of such a store pays."""
    t0 = time.perf_counter()
    with Store.open(store_path) as store:
        made = store.keep_vectors() if hasattr(store, "keep_vectors") else 0
    return made, time.perf_counter() - t0


def write_memwiki_project(dest: Path, store: Path, page_cache: bool = True, privacy: str = "public") -> Path:
    docs = dest / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "index.md").unlink(missing_ok=True)  # the plugin generates the home page
    cache = dest / "cache"
    cache.mkdir(exist_ok=True)
    shared_use = ROOT / ".cache" / "memwiki" / "use"  # the exported browser model: made once per install
    shared_use.mkdir(parents=True, exist_ok=True)
    if not (cache / "use").exists():
        (cache / "use").symlink_to(shared_use, target_is_directory=True)
    cfg = {
        "site_name": "bench memwiki",
        "docs_dir": "docs",
        "use_directory_urls": False,
        "theme": MKDOCS_THEME,
        "plugins": ["search", {"memwiki": {"store": str(store), "cache_dir": str(cache), "page_cache": page_cache}}],
    }
    if privacy != "public":  # (the private profile: no gate, no final scan)
        cfg["plugins"][1]["memwiki"]["profile"] = privacy  # type: ignore[index]
    return _write_config(dest, cfg)


def write_plain_project(n: int, dest: Path) -> Path:
    """N ordinary Markdown pages of about the same text, linked to each other, every page in the nav."""
    docs = dest / "docs"
    stamp = dest / "bench.json"
    if not (stamp.is_file() and json.loads(stamp.read_text()).get("version") == GEN_VERSION):
        shutil.rmtree(dest, ignore_errors=True)
        rng = random.Random(-n)
        for i in range(n):
            links = [f"[page {j}](../s{j // 500}/p{j}.md)" for j in rng.sample(range(n), 4)]
            body = f"# Page {i}\n\n" + "\n\n".join(_paragraph(rng, links[k::2]) for k in range(3))
            body += "\n\n## Notes\n\n- " + "\n- ".join(_sentence(rng, []) for _ in range(3)) + "\n"
            path = docs / f"s{i // 500}" / f"p{i}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        (docs / "index.md").write_text("# Plain site\n", encoding="utf-8")
        stamp.write_text(json.dumps({"version": GEN_VERSION, "n": n}))
    cfg = {
        "site_name": "bench plain",
        "docs_dir": "docs",
        "use_directory_urls": False,
        "theme": MKDOCS_THEME,
        "plugins": ["search"],
    }
    return _write_config(dest, cfg)


def _write_config(dest: Path, cfg: dict) -> Path:
    path = dest / "mkdocs.yml"
    path.write_text(json.dumps(cfg, indent=1), encoding="utf-8")  # JSON is YAML
    return path


# ── measuring ────────────────────────────────────────────────────────────────────────────────────────


@dataclass
class Build:
    seconds: float
    peak_mb: float  # wait4's ru_maxrss: the build process's high-water mark, or a forked child's when higher
    log: str
    tree_mb: float = 0.0  # the largest sum of PSS over the process and its children seen while it ran
    cpu_s: float = 0.0  # user + system CPU time of the build and its (waited-for) workers


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in task.read_text().split()]
    return found


def _pss_mb(pids: list[int]) -> float:
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except (OSError, ValueError):
            pass
    return total / 1024


def _sample_tree(pid: int, peak: list[float], stop: threading.Event) -> None:
    """Peak memory of a build with worker processes: PSS shares copy-on-write pages out fairly (RSS would
    count them once per worker)."""
    while not stop.wait(0.25):
        peak[0] = max(peak[0], _pss_mb(_descendants(pid)))


BUILD_FLAGS: list[str] = []  # `--strict`: every build must pass MkDocs' strict mode (the privacy scan included)


def run_build(config: Path, site: Path, profile: Path | None = None, code: Path = ROOT) -> Build:
    """One `mkdocs build` in a child process: wall time and the child's peak RSS (wait4's ru_maxrss). `code`: the
    checkout whose memwiki the build imports (first on PYTHONPATH: the installed entry point finds it there)."""
    cmd = [sys.executable]
    if profile is not None:
        cmd += ["-m", "cProfile", "-o", str(profile)]
    cmd += ["-m", "mkdocs", "build", "-f", str(config), "-d", str(site), *BUILD_FLAGS]
    env = dict(os.environ, PYTHONPATH=str(code) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    log = config.parent / "build.log"
    with log.open("w") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=config.parent, stdout=out, stderr=subprocess.STDOUT, env=env)
        peak, stop = [0.0], threading.Event()
        sampler = threading.Thread(target=_sample_tree, args=(proc.pid, peak, stop), daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        stop.set()
        sampler.join()
    text = log.read_text(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"mkdocs build failed ({config}):\n{text[-3000:]}")
    return Build(seconds, usage.ru_maxrss / 1024, text, peak[0], usage.ru_utime + usage.ru_stime)


def site_stats(site: Path) -> dict[str, float]:
    """Pages (HTML files MkDocs rendered; the graph's iframe files are counted apart), sizes."""
    total = pages = page_bytes = graph_files = 0
    for path in site.rglob("*"):
        if not path.is_file():
            continue
        size = path.stat().st_size
        total += size
        rel = path.relative_to(site).as_posix()
        if rel.endswith(".html") and rel != "404.html":
            if rel.startswith("graph/entities/") or rel == "graph/global.html":
                graph_files += 1
            else:
                pages += 1
                page_bytes += size
    return {
        "pages": pages,
        "site_mb": total / 2**20,
        "page_kb": page_bytes / max(pages, 1) / 1024,
        "site_kb_per_page": total / max(pages, 1) / 1024,
        "graph_files": graph_files,
    }


def set_aside(path: Path, trash: Path) -> None:
    """Move `path` out of the way, into `trash` (emptied at the end of the benchmark, not now).

    Deleting some 25k files just before a cold build made ext4 slow to create the build's own files: for about
    30 s after a delete, its inode allocator skips the freed inodes one by one (`recently_deleted`), which
    added 7-10 s of kernel time to every cold build here. A first build on a fresh checkout never meets that,
    so the old site and caches are renamed away and deleted only after the last measurement."""
    if path.exists() or path.is_symlink():
        trash.mkdir(parents=True, exist_ok=True)
        path.rename(trash / f"{path.name}-{time.monotonic_ns()}")


def clear_caches(cache: Path, trash: Path) -> None:
    """Everything the plugin keeps between builds (pages, texts, layers, memos...), but the browser model export
    (made once per install, shared by every project): set aside into `trash`."""
    for child in cache.iterdir() if cache.is_dir() else []:
        if child.name != "use":
            set_aside(child, trash)


def change_one_memory(store_path: Path, run: int) -> None:
    """Edit a memory the public site shows (one of the `personal` wing is withheld: editing it would change no
    output), with words no earlier build has seen (the site scan remembers lines it found clean)."""
    with Store.open(store_path) as store:
        memory = next(m for m in store.semantic.get([f"bm-{i}" for i in range(20)]) if m.wing != "personal")
        text = re.sub(r" \(edit [\d ]+\)$", "", memory.text) + f" (edit {run} {time.time_ns()})"
        store.semantic.upsert([Memory(**{**memory.__dict__, "text": text})])


def _row(label: str, n_pages: int, builds: list[Build], stats: dict[str, float]) -> dict[str, object]:
    secs = statistics.median(b.seconds for b in builds)
    return {
        "build": label,
        "pages": n_pages,
        "median_s": round(secs, 2),
        "pages_per_s": round(n_pages / secs, 1),
        "site_MB": round(stats["site_mb"], 1),
        "KB_per_page": round(stats["page_kb"], 1),
        "site_KB_per_page": round(stats["site_kb_per_page"], 1),
        "peak_MB": round(max(b.peak_mb for b in builds)),
        "tree_MB": round(max(b.tree_mb for b in builds)),
        "cpu_s": round(statistics.median(b.cpu_s for b in builds), 1),
        "runs": [round(b.seconds, 2) for b in builds],
    }


def bench_size(
    n: int,
    runs: int,
    profile: bool,
    page_cache: bool = True,
    baseline: bool = True,
    shape: str = "concepts",
    code: Path = ROOT,
) -> list[dict[str, object]]:
    base = WORK / (str(n) if shape == "concepts" else f"{shape}-{n}")
    t0 = time.perf_counter()
    store = (generate_store if shape == "concepts" else generate_memory_store)(n, base / "gen")
    print(f"[{n}] store ready ({time.perf_counter() - t0:.0f}s): {store}", file=sys.stderr)
    made, seconds = make_vectors(store)
    print(f"[{n}] vectors of turns and pages made where written: {made:,} texts in {seconds:.1f}s", file=sys.stderr)
    project = write_memwiki_project(base / "memwiki", store, page_cache)
    site = base / "memwiki" / "site"
    trash = base / "trash"  # see set_aside
    shutil.rmtree(trash, ignore_errors=True)
    try:
        return _measure(n, runs, profile, baseline, base, store, project, site, trash, code)
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def _measure(
    n: int,
    runs: int,
    profile: bool,
    baseline: bool,
    base: Path,
    store: Path,
    project: Path,
    site: Path,
    trash: Path,
    code: Path,
) -> list[dict[str, object]]:
    rows = []
    cold = []
    for r in range(runs):
        set_aside(site, trash)
        clear_caches(base / "memwiki" / "cache", trash)
        cold.append(run_build(project, site, code=code))
        b = cold[-1]
        line = f"[{n}] memwiki cold build {r + 1}: {b.seconds:.1f}s ({b.cpu_s:.0f}s CPU), {b.peak_mb:.0f} MB"
        print(line, file=sys.stderr)
    stats = site_stats(site)
    rows.append(_row("memwiki (cold)", int(stats["pages"]), cold, stats))
    rows[-1]["graph_files"] = int(stats["graph_files"])
    warm = []
    for r in range(runs):
        change_one_memory(store, r)
        warm.append(run_build(project, site, code=code))
        reused = re.search(r"(\d+) generated pages, (\d+) reused", warm[-1].log)
        print(
            f"[{n}] rebuild after one memory changed {r + 1}: {warm[-1].seconds:.1f}s"
            f"{f' ({reused.group(2)}/{reused.group(1)} pages reused)' if reused else ''}",
            file=sys.stderr,
        )
    rows.append(_row("memwiki rebuild, 1 memory changed", int(stats["pages"]), warm, site_stats(site)))
    if baseline:
        plain = write_plain_project(n, base / "plain")
        plain_site = base / "plain" / "site"
        plain_builds = []
        for r in range(runs):
            set_aside(plain_site, trash)
            plain_builds.append(run_build(plain, plain_site))
            print(f"[{n}] plain build {r + 1}: {plain_builds[-1].seconds:.1f}s", file=sys.stderr)
        pstats = site_stats(plain_site)
        rows.append(_row("plain mkdocs + material (baseline)", int(pstats["pages"]), plain_builds, pstats))
    if profile:
        out = base / "build.prof"
        set_aside(site, trash)
        clear_caches(base / "memwiki" / "cache", trash)
        run_build(project, site, profile=out, code=code)
        print_profile(out)
    return rows


def print_profile(path: Path, limit: int = 30) -> None:
    import pstats

    stats = pstats.Stats(str(path), stream=sys.stderr)
    print(f"\n== cProfile of one cold build ({path}), by cumulative time ==", file=sys.stderr)
    stats.sort_stats("cumulative").print_stats(limit)
    print("== by own time ==", file=sys.stderr)
    stats.sort_stats("tottime").print_stats(limit)


def _load() -> str:
    """The machine's load average and the time of a fixed Python loop (the machine is shared: its speed
    changes with what else runs; figures are only comparable at a similar probe time)."""
    t0, x = time.perf_counter(), 0
    for i in range(5_000_000):
        x += i
    probe = time.perf_counter() - t0
    return "/".join(f"{x:.2f}" for x in os.getloadavg()) + f", speed probe {probe:.2f}s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated concept counts")
    parser.add_argument(
        "--shape",
        default="concepts",
        choices=("concepts", "memories"),
        help="what a size counts: concepts (wiki pages and entities) or L2 memories (generate_memory_store)",
    )
    parser.add_argument("--runs", type=int, default=3, help="builds per measurement (the median is reported)")
    parser.add_argument("--profile", action="store_true", help="also profile one cold build of each size")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--no-page-cache", action="store_true", help="build with the plugin's page_cache off")
    parser.add_argument("--no-baseline", action="store_true", help="skip the plain mkdocs build")
    parser.add_argument("--generate-only", action="store_true", help="only generate the stores")
    parser.add_argument("--strict", action="store_true", help="build with `mkdocs build --strict` (a failure stops)")
    parser.add_argument(
        "--code", type=Path, default=ROOT, help="the checkout whose memwiki builds (a worktree of the code before)"
    )
    args = parser.parse_args(argv)
    results: dict[str, list[dict[str, object]]] = {}
    loads: dict[str, str] = {}
    for n in [int(x) for x in args.sizes.split(",") if x.strip()]:
        if args.generate_only:
            made = generate_store(n, WORK / str(n) / "gen") if args.shape == "concepts" else None
            print(made or generate_memory_store(n, WORK / f"{args.shape}-{n}" / "gen"))
            continue
        before = _load()
        if args.strict:
            BUILD_FLAGS[:] = ["--strict"]
        results[str(n)] = bench_size(
            n, max(1, args.runs), args.profile, not args.no_page_cache, not args.no_baseline, args.shape, args.code
        )
        loads[str(n)] = f"{before} before, {_load()} after"
    cols = ("build", "pages", "median_s", "pages_per_s", "KB_per_page", "site_MB", "site_KB_per_page", "peak_MB")
    cols += ("tree_MB", "cpu_s")
    print(f"{'size':>6}  " + "  ".join(f"{c:>14}" if c != "build" else f"{c:<36}" for c in cols))
    for n, rows in results.items():
        for row in rows:
            print(f"{n:>6}  " + "  ".join(f"{row[c]!s:>14}" if c != "build" else f"{row[c]!s:<36}" for c in cols))
    for n, load in loads.items():
        print(f"{n:>6}  load average (1, 5, 15 min) and speed probe: {load}; {os.cpu_count()} CPUs; code {args.code}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "load_average": loads}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
