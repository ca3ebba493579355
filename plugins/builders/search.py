"""The site's memory search: the store's own L2 vectors, ranked in the browser as `memwiki recall` ranks L2.

Exported: every (privacy-filtered) L2 memory's id, title, URL and text, its vector from the source
(`memory_vectors`, the embedder recall uses) quantised to int8, the recall fusion settings and stop words.
The search page embeds the query in the browser with the same model (USE multilingual v3 ported to JS,
`plugins/assets/use/`), ranks by cosine, ranks lexically with FTS5's bm25 over the tokens of
`memory/tokens.py` (mirrored in JS), ranks the query's English glosses the same way (the part of the
Chinese-English glossary, `memory.crosslingual`, whose English these memories hold), and fuses the three
the way `memory.recall.fuse` does. With another embedder (e.g. Ollama) the browser cannot embed a query:
the page says so and ranks lexically only.

Everything loads through <script> files that assign globals (no fetch), so it works from file://.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from memory.crosslingual import BRIDGE_POSTINGS, MAX_WORD, browser_table
from memory.embedders import USE_NAME
from memory.lexical import POSTINGS_BUDGET
from memory.recall import RecallConfig
from memory.snapshot import Memory
from memory.tokens import STOP_CHARS, STOP_WORDS, tokens
from plugins.builders import site
from plugins.concepts import slugify
from plugins.graphviz import script_json
from plugins.pages import BuildContext, GeneratedAsset, GeneratedPage
from plugins.render import esc
from plugins.use_assets import USE_DIR, use_assets

SEARCH_PAGE = "search/index.md"
SEARCH_ROOT = "../"  # from the page (served at search/ or search/index.html) to the site root
ASSET_DIR = "assets/memwiki/search"
DATA_JS = f"{ASSET_DIR}/search-data.js"
VECTORS_JS = f"{ASSET_DIR}/search-vectors.js"
_HERE = Path(__file__).resolve().parent.parent / "assets"
STATIC = ("search-core.js", "search-ui.js", "search.css")  # files of plugins/assets/search/
TITLE_CHARS = 80
VECTOR_BATCH = 1000
FORMAT_VERSION = 2  # 2: bridge table, postings budgets, peak weighting

MemoryUrl = Callable[[Memory], str]


def default_memory_url(memory: Memory) -> str:
    return f"memories/#mem-{slugify(memory.id)}"


def quantise(vectors: np.ndarray) -> np.ndarray:
    """int8 rows scaled so that each row's largest component is ±127 (cosine needs no scale back)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    return np.clip(np.rint(vectors / peak * 127.0), -127, 127).astype(np.int8)


def _title(memory: Memory) -> str:
    first = " ".join(memory.text.split())
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1] + "…"


def _vectors(ctx: BuildContext, ids: Sequence[str]) -> np.ndarray | None:
    parts = []
    for start in range(0, len(ids), VECTOR_BATCH):
        got = ctx.source.memory_vectors(ids[start : start + VECTOR_BATCH])
        if got is None:
            return None
        parts.append(np.asarray(got, dtype=np.float32))
    return np.concatenate(parts) if parts else np.zeros((0, ctx.source.info().dim), dtype=np.float32)


def _vocabulary(texts: Iterable[str]) -> set[str]:
    """The words of `texts` that a gloss can match: their non-CJK lexical tokens, as the page indexes them."""
    out: set[str] = set()
    for text in texts:
        out.update(tokens(text, stop_words=False, cjk=False))
    return out


def search_data(ctx: BuildContext, memory_url: MemoryUrl | None = None) -> tuple[dict[str, Any], np.ndarray | None]:
    """What the page's JS needs (JSON-able) and the quantised vectors (None: lexical only, `why` says)."""
    memory_url = memory_url or ctx.options.get("memory_url") or default_memory_url
    info = ctx.source.info()
    memories = list(site(ctx).memories)
    why = ""
    vectors = None
    if info.embedder != USE_NAME:
        why = f"the store's embedder ({info.embedder}) cannot run in a browser"
    elif not memories:
        why = "there are no semantic memories yet"
    else:
        vectors = _vectors(ctx, [m.id for m in memories])
        if vectors is None:
            why = "the memory source holds no vectors usable with its embedder"
    config = RecallConfig()
    data = {
        "version": FORMAT_VERSION,
        "embedder": info.embedder,
        "dim": int(vectors.shape[1]) if vectors is not None else info.dim,
        "dense": vectors is not None,
        "why_lexical": why,
        "fusion": {
            k: v
            for k, v in asdict(config).items()
            if k in ("fusion", "rrf_k", "dense_weight", "lexical_weight", "peak_weighting", "bridge", "depth")
        },
        "postings_budget": POSTINGS_BUDGET,
        "bridge": {
            "table": browser_table(_vocabulary(m.text for m in memories)) if config.bridge else {},
            "postings": BRIDGE_POSTINGS,
            "max_word": MAX_WORD,
        },
        "stop_words": sorted(STOP_WORDS),
        "stop_chars": sorted(STOP_CHARS),
        "fields": ["id", "title", "url", "text", "category", "where"],
        "docs": [
            [m.id, _title(m), memory_url(m), m.text, m.category, " / ".join(x for x in (m.wing, m.room) if x)]
            for m in memories
        ],
    }
    return data, (quantise(vectors) if vectors is not None else None)


def _page(data: dict[str, Any]) -> str:
    n = len(data["docs"])
    if data["dense"]:
        how = (
            f"Your query is embedded in the browser with the store's own model ({esc(data['embedder'])}, "
            f"{data['dim']} dimensions) and compared with the same vectors that <code>memwiki recall</code> uses, "
            "then fused with a lexical match (Chinese by character pairs, and a Chinese query's English glosses "
            "for English memories) exactly as recall fuses them. "
            "The model (about 40 MB) loads on your first search; until then results are lexical."
        )
    else:
        how = (
            f"<strong>Lexical search only:</strong> {esc(data['why_lexical'])}, so queries are matched by words "
            "(Chinese by character pairs), not by meaning. <code>memwiki recall</code> finds more."
        )
    use_attr = f' data-use="{SEARCH_ROOT}{USE_DIR}/"' if data["dense"] else ""
    scripts = [f"{SEARCH_ROOT}{DATA_JS}"]
    if data["dense"]:
        scripts += [f"{SEARCH_ROOT}{VECTORS_JS}", f"{SEARCH_ROOT}{USE_DIR}/use.js"]
    scripts += [f"{SEARCH_ROOT}{ASSET_DIR}/search-core.js", f"{SEARCH_ROOT}{ASSET_DIR}/search-ui.js"]
    lines = [
        "# Search memory",
        "",
        f'<link rel="stylesheet" href="{SEARCH_ROOT}{ASSET_DIR}/search.css">',
        "",
        f'<div id="memwiki-search" class="memwiki-search" data-root="{SEARCH_ROOT}"{use_attr}>'
        '<form class="memwiki-search-form" role="search"><input type="search" id="memwiki-search-q" '
        'placeholder="Search the agent\'s memory · 搜索记忆" autocomplete="off" aria-label="Search memory">'
        "</form>"
        '<p id="memwiki-search-status" class="memwiki-search-status" aria-live="polite"></p>'
        '<ol id="memwiki-search-results" class="memwiki-search-results"></ol></div>',
        "",
        f'<p class="memwiki-muted">{n:,} semantic memories (L2). {how}</p>',
        "",
        "<noscript>Memory search needs JavaScript.</noscript>",
        "",
    ]
    lines += [f'<script src="{src}"></script>' for src in scripts]
    return "\n".join(lines) + "\n"


def build(ctx: BuildContext, memory_url: MemoryUrl | None = None) -> tuple[list[GeneratedPage], list[GeneratedAsset]]:
    """The search page, its data and vectors, the search scripts and (for USE stores) the browser embedder."""
    data, vectors = search_data(ctx, memory_url)
    assets = [GeneratedAsset(DATA_JS, f"window.MemwikiSearchData = {script_json(data)};\n".encode())]
    if vectors is not None:
        b64 = base64.b64encode(vectors.tobytes()).decode("ascii")
        assets.append(GeneratedAsset(VECTORS_JS, f'window.MemwikiSearchVectors = "{b64}";\n'.encode()))
    assets += [GeneratedAsset(f"{ASSET_DIR}/{name}", (_HERE / "search" / name).read_bytes()) for name in STATIC]
    if vectors is not None:
        use = use_assets(ctx)
        if not use:
            data["dense"] = False
            data["why_lexical"] = "the browser embedder is not installed"
            assets[0] = GeneratedAsset(DATA_JS, f"window.MemwikiSearchData = {script_json(data)};\n".encode())
            assets = [a for a in assets if a.dest_uri != VECTORS_JS]
        assets += use
    page = GeneratedPage(
        SEARCH_PAGE,
        "Search memory",
        _page(data),
        section="search",
        in_nav=True,
        meta={"order": 6, "memories": len(data["docs"]), "dense": data["dense"]},
    )
    return [page], assets
