"""The site's one search: every layer `memwiki recall --all-layers` covers, ranked in the browser as it ranks.

Exported (all through the privacy gate, `ctx.source`): hot-memory entries (L1); L2 memories, a long one by its passages
(memwiki.layers.semantic.passages) as the store indexes it; every session turn (L4), for the session search that
recall's L4 starts from; the files layer as recall reads it (wiki pages, then one page per graph entity,
`memwiki.recall.entity_pages.recall_pages`). Each text is shipped once, as recall ranks it (a turn and a page cut as
recall cuts them), with the URL of where the site shows it. Vectors: the store's own for L2 memories (`memory_vectors`),
the source's kept vectors of every other text (`embed`: memwiki.text.vectors, the ones recall reads); all quantised to
int8. The whole `RecallConfig` is exported: the page reads every ranking knob from it (search-core.js mirrors
`memwiki.recall.cascade`).

Everything loads through <script> files that assign globals (no fetch), so it works from file://; memwiki.js
makes the theme's header search box open this search on every page.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import marshal
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memwiki.layers.semantic.memory import index_text
from memwiki.layers.semantic.passages import MAX_EMBED_BYTES, is_long, passage_id, split
from memwiki.layers.sessions import SNIPPETS_PER_SESSION
from memwiki.recall.cascade import LAYERS, SESSION_LIMIT, RecallConfig, page_text, turn_text
from memwiki.recall.entity_pages import ENTITY_PREFIX, recall_pages
from memwiki.site.browser.pyvis_html import script_json
from memwiki.site.browser.use_assets import USE_DIR, exporting, use_assets
from memwiki.site.browser.use_assets import prepare as prepare_model
from memwiki.site.builders import PERSONA, TEXT_BLOCK, BuildResult, Site, hot_anchor, message_anchor, site
from memwiki.site.gate.detect import WITHHELD_NAME
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.generated import GeneratedAsset, GeneratedPage
from memwiki.site.model.render import esc
from memwiki.site.speed import cache_file, forked
from memwiki.site.speed.layer_cache import CachedSource
from memwiki.site.speed.memo import key_of
from memwiki.site.speed.scan_memo import BlockMemo
from memwiki.source import Memory
from memwiki.store.layout import HOT_FILES
from memwiki.text.embedders import USE_NAME
from memwiki.text.lexical import POSTINGS_BUDGET
from memwiki.text.tokens import STOP_CHARS, STOP_WORDS, fts_text
from memwiki.text.vectors import text_key

SEARCH_PAGE = "search/index.md"
SEARCH_ROOT = "../"  # from the page (served at search/ or search/index.html) to the site root
ASSET_DIR = "assets/memwiki/search"
DATA_JS = f"{ASSET_DIR}/search-data.js"
SLICE_DIR = f"{ASSET_DIR}/vectors"  # the rows in slices named by their content, kept by the browser: `<name>.bin`
# fetched over http(s), the same rows as a script `<name>.js` for pages opened from file:// (no fetch there)
SLICES_GLOBAL = "MemwikiSearchSlices"  # each slice script sets window.MemwikiSearchSlices[its .bin name] to its rows
SLICE_ROWS = 1024  # rows per slice (512 KB at 512-d): a change refetches the slices holding its rows
PART_DIR = f"{ASSET_DIR}/data"  # the data's long row lists in parts named by their rows (`data_parts`)
PART_ROWS = 2000  # rows per part
LONG_LISTS = (("L2", "memories"), ("L2", "units"), ("L4", "turns"), ("files",))  # the lists cut into parts
PARTS_GLOBAL = "MemwikiSearchParts"  # each part script sets window.MemwikiSearchParts[its name] to its rows
PARTS_FILE = "search-parts.marshal"  # in cache_dir: each part's script by its name (not written again)
_HERE = Path(__file__).resolve().parent.parent / "assets"
STATIC = ("search-core.js", "search-ui.js", "search.css")  # files of memwiki/site/assets/search/
VECTOR_BATCH = 1000
ROWS_FILE = "search-rows.marshal"  # in cache_dir: the int8 rows of the texts the search embeds, by group (_group_rows)
MEMORY_ROWS_FILE = "search-memory-rows.bin"  # in cache_dir: the L2 memories' own int8 rows (_memory_rows)
ROW_KEY = 12  # bytes of a memory row's key (memwiki.readers.vector_cache.memory_digest)
FORMAT_VERSION = 3  # 3: every layer, the whole RecallConfig

KEPT_LISTS = {"turns": ("L4", "turns"), "files": ("files",)}  # lists kept whole by what they show (`_list_version`)

MemoryUrl = Callable[[Memory], str]
Group = tuple[list[str] | None, int, str]  # texts the search embeds (None: a kept list's), how many, the list's version


@dataclass(frozen=True)
class KeptList:
    """A long list the last build cut into parts from the same version of what it shows: its parts are listed as
    they were, its rows are not made again (a rebuild after one memory changed made, hashed and matched the fifty
    thousand rows of turns and pages again)."""

    count: int
    parts: list[list[Any]]  # [[name, rows], ...] (see `data_parts`)

    def __len__(self) -> int:
        return self.count


class _Parts:
    """The part scripts kept across builds by name (`PARTS_FILE`), with the version and the parts of each list kept
    whole (`KEPT_LISTS`); one per build (ctx.part), shared by `search_data` and `data_parts`."""

    def __init__(self, ctx: BuildContext) -> None:
        path = ctx.speed.cache_path(PARTS_FILE)
        version = cache_file.version("search-parts", FORMAT_VERSION)
        self.memo = cache_file.JournaledDict(path, version) if path is not None else None
        self.versions: dict[tuple[str, ...], str] = {}  # list -> the version of what its rows show, in this build
        # list -> each row's identity (what the row is made from, in a few bytes): its parts are named by them
        self.identities: dict[tuple[str, ...], list[Any]] = {}

    def kept(self, where: tuple[str, ...], version: str) -> KeptList | None:
        """The list at `where` as the last build cut it, when it showed this `version` and every part is kept."""
        self.versions[where] = version
        found = self.memo.data.get(("list", *where)) if self.memo is not None else None
        if not (isinstance(found, tuple) and len(found) == 3 and found[0] == version):
            return None
        _, count, parts = found
        scripts = self.memo.data  # (`found` came from it)
        return KeptList(count, parts) if all(isinstance(scripts.get(name), bytes) for name, _ in parts) else None


_Block = tuple[list, list, list, list, list, list]  # see _Layers._memory_block
BLOCKS_FILE = "search-memory-blocks.marshal"  # in cache_dir: L2's rows by block of memories (`_MemoryBlocks`)
BLOCKS_CHUNK = 20  # blocks a record of that file (a thousand memories' rows: the file is written whole at first)


class _MemoryBlocks(BlockMemo):
    """L2's rows made from each block of memories (`_Layers._memory_block`), kept across builds by the block's key
    with where its rows start (ctx.part): a rebuild after one memory changed makes the rows of its block, not of a
    hundred thousand memories."""

    def __init__(self, ctx: BuildContext) -> None:
        version = cache_file.version("search-memory-blocks", FORMAT_VERSION, site(ctx).directory_urls)
        super().__init__(ctx.speed.cache_path(BLOCKS_FILE), version, ctx.speed.check_memos, chunk=BLOCKS_CHUNK)


def _list_version(s: Site, name: str) -> str:
    """What the list `name` of `KEPT_LISTS` shows: the turns, the sessions layer and how URLs are written (the
    sessions' pages are claimed by their ids); the files, the wiki and graph layers and how names resolve."""
    if name == "turns":
        return key_of("turns", s.sessions_version, s.directory_urls)
    return key_of("files", s.names_version, s.layer_version("graph", (s.entities, s.triples)))


def quantise(vectors: np.ndarray) -> np.ndarray:
    """int8 rows scaled so that each row's largest component is ±127 (cosine needs no scale back)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    return np.clip(np.rint(vectors / peak * 127.0), -127, 127).astype(np.int8)


def _memory_vectors(ctx: BuildContext, ids: Sequence[str], dim: int) -> np.ndarray | None:
    parts = []
    for start in range(0, len(ids), VECTOR_BATCH):
        got = ctx.source.memory_vectors(ids[start : start + VECTOR_BATCH])
        if got is None:
            return None
        parts.append(quantise(np.asarray(got)))
    return np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.int8)


def _message_order(message_id: str) -> tuple[int, int, str]:
    """Session search breaks ties by message rowid: numeric ids in numeric order."""
    return (0, int(message_id), "") if message_id.isdigit() else (1, 0, message_id)


class _Layers:
    """The four layers' records as the page ships them (rows of plain values, see each method), in the order
    recall reads them, with the texts each row's vector is made from."""

    def __init__(self, ctx: BuildContext, s: Site, memory_url: MemoryUrl | None, dim: int | None) -> None:
        """`memory_url`: where a memory's card is (None: the site's own); `dim`: the vectors' (None: the search
        ships none)."""
        parts = ctx.part(_Parts)
        self.kept_rows = _kept_group_rows(ctx, dim) if dim is not None else {}
        self.keys: dict[str, str] = {}  # list of KEPT_LISTS -> its version (the key of its vectors in ROWS_FILE)
        self.kept: dict[str, KeptList] = {}  # those whose parts and vectors are the last build's
        for name, where in KEPT_LISTS.items():
            self.keys[name] = _list_version(s, name)
            found = parts.kept(where, self.keys[name])
            if found is not None and (
                dim is None or _kept_group(self.kept_rows, name, found.count, dim, version=self.keys[name])
            ):
                self.kept[name] = found
        self.l1 = self._hot(s)
        self.memories: list[list[Any]] = []  # [id, url, category, "wing / room"]
        self.units: list[list[Any]] = []  # see _memories
        self.short: list[tuple[int, str]] = []  # (unit row, memory id): vectors from memory_vectors
        self._short_keys: list[bytes] = []  # of what each of those vectors was embedded from (`memory_digest`)
        self.embedded: list[tuple[int, str]] = []  # (unit row, passage text): vectors from embed
        self._memories(ctx, s, memory_url)
        parts.identities.update(self.identities)
        self.sessions = [[x.id, x.title, s.url(s.session_uri(x.id)), x.started] for x in s.sessions]
        self.turns: list[list[Any]] | KeptList = self.kept.get("turns") or self._turns(s)
        self.files: list[list[Any]] | KeptList = self.kept.get("files") or self._files(ctx, s)

    def _hot(self, s: Site) -> list[list[Any]]:
        """L1: [id, url, text, category, file] per hot entry."""
        persona = s.url(PERSONA)
        rows = []
        for f in s.hot:
            name = HOT_FILES.get(f.target, f.target)
            for e in f.entries:
                url = f"{persona}#{hot_anchor(f.target, e.index)}"
                rows.append([f"{f.target}:{e.index}", url, e.text, e.category, name])
        return rows

    def _memories(self, ctx: BuildContext, s: Site, memory_url: MemoryUrl | None) -> None:
        """L2 as the store indexes it: units [id, memory row, text, indexed text (0: the text), passage (0, or
        [index, count, start, end, chars])]; a long memory is a blank row (its lexical row holds no text, and it
        has no vector of its own in the search) followed by its passages. Oldest first: a new memory's rows come
        last, so the vector slices before them stay the same (`vector_slices`). Made a block of memories at a time
        (the scans' blocks, `Site.memory_block_keys`), kept by its key when the URLs are the site's own."""
        memories, units = s.oldest_first(), []
        blocks = ctx.part(_MemoryBlocks) if memory_url is None else None
        keys = s.memory_block_keys() if blocks is not None else []
        for b, start in enumerate(range(0, len(memories), TEXT_BLOCK)):
            at = (start, len(self.units))
            chunk = memories[start : start + TEXT_BLOCK]
            make = functools.partial(self._memory_block, s, memory_url or s.memory_url, chunk, *at)
            made = blocks.found(keys[b], "rows", make, at) if blocks is not None else make()
            rows, unit_rows, short, short_keys, embedded, identities = made
            self.memories += rows
            self.units += unit_rows
            self.short += short
            self._short_keys += short_keys
            self.embedded += embedded
            units += identities
        if blocks is not None:
            blocks.save()
        self.identities = {("L2", "units"): units}  # (the memory rows are short: named by what they hold)

    @staticmethod
    def _memory_block(s: Site, memory_url: MemoryUrl, memories: list[Memory], start: int, unit: int) -> _Block:
        """The rows of these memories, the first of them the `start`-th memory and its first unit the `unit`-th
        (see `_memories`), with each unit row's identity: its memory's token, row, passage (or -1)."""
        embedded_from, tokens = s.embedded_from(), s.memory_tokens()
        rows, units, short, short_keys, embedded, identities = [], [], [], [], [], []
        for n, m in enumerate(memories, start):
            token = tokens[m.id]
            room = f"{m.wing} / {m.room}" if m.wing and m.room else m.wing or m.room
            rows.append([m.id, memory_url(m), m.category, room])
            if not is_long(m.text):
                lex = index_text(m)
                short.append((unit + len(units), m.id))
                short_keys.append(bytes.fromhex(embedded_from[m.id]))
                units.append([m.id, n, m.text, 0 if lex == m.text else lex, 0])
                identities.append((token, n, -1))
                continue
            units.append([m.id, n, "", 0, 0])
            identities.append((token, n, -1))
            spans = split(m.text)
            for span in spans:
                text = m.text[span.start : span.end]
                embedded.append((unit + len(units), text))
                where = [span.index, len(spans), span.start, span.end, len(m.text)]
                units.append([passage_id(m.id, span.index), n, text, 0, where])
                identities.append((token, n, span.index))
        return rows, units, short, short_keys, embedded, identities

    @staticmethod
    def _turns(s: Site) -> list[list[Any]]:
        """L4: [session row, message id, anchor in its digest, text as recall ranks it, its indexed length in
        tokens when the text is cut (0: its own)] per turn, in rowid order (the session search's tie-break)."""
        turns = []
        for i, x in enumerate(s.sessions):
            for n, msg in enumerate(s.messages.get(x.id, ()), 1):
                text = turn_text(msg.content)
                full = len(fts_text(msg.content).split()) if len(msg.content) > len(text) else 0
                turns.append((_message_order(msg.id), [i, msg.id, message_anchor(n), text, full]))
        turns.sort(key=lambda t: t[0])
        return [t for _, t in turns]

    def _files(self, ctx: BuildContext, s: Site) -> list[list[Any]]:
        """files: [path, title, url, text as recall ranks it, "wiki" | "entity"]: the wiki pages (with the facts
        of the entities they name), then the other entities' pages (memwiki.recall.entity_pages.recall_pages)."""
        wiki_uri = {c.wiki.path: c.src_uri for c in s.index.concepts if c.wiki is not None}
        rows = []
        for page in recall_pages(ctx.source):
            entity = page.path.startswith(ENTITY_PREFIX)
            concept = s.index.for_entity(page.path[len(ENTITY_PREFIX) :]) if entity else None
            if entity and (concept is None or WITHHELD_NAME.fullmatch(page.title)):
                continue  # a value stored as an entity (no page), or a name the gate withheld: no answer to show
            uri = concept.src_uri if concept is not None else wiki_uri.get(page.path, "")
            url = s.url(uri) if uri else ""
            rows.append([page.path, page.title, url, page_text(page), "entity" if entity else "wiki"])
        return rows

    def vectors(self, ctx: BuildContext, dim: int) -> np.ndarray | None:
        """int8 rows: L1 entries, L2 units (zero for a long memory's own row), L4 turns, files. The L2 memories'
        vectors are the store's; every other text's comes from the source's kept vectors (`source.embed`: made
        once, where the text was written, or by whichever process read it first), in one call."""
        hot, passages = [d[2] for d in self.l1], [t for _, t in self.embedded]
        groups: dict[str, Group] = {"hot": (hot, len(hot), ""), "passages": (passages, len(passages), "")}
        for name, listed in {"turns": self.turns, "files": self.files}.items():  # (their text is the row's 4th)
            texts = None if isinstance(listed, KeptList) else [row[3] for row in listed]
            groups[name] = (texts, len(listed), self.keys[name])
        own = _memory_rows(ctx, [i for _, i in self.short], self._short_keys, dim)
        rows = _group_rows(ctx, groups, dim, self.kept_rows) if own is not None else None
        if own is None or rows is None:
            return None
        l2 = np.zeros((len(self.units), dim), dtype=np.int8)
        l2[[r for r, _ in self.short]] = own
        l2[[r for r, _ in self.embedded]] = rows["passages"]
        return np.concatenate([rows["hot"], l2, rows["turns"], rows["files"]])


def _kept_group_rows(ctx: BuildContext, dim: int) -> dict[str, Any]:
    """The int8 rows of each group of texts as the last build kept them (`ROWS_FILE`): group -> (key, bytes)."""
    path = ctx.speed.cache_path(ROWS_FILE)
    kept = cache_file.load(path, _group_rows_version(ctx, dim)) if path is not None else None
    return kept if isinstance(kept, dict) else {}


def _group_rows_version(ctx: BuildContext, dim: int) -> str:
    return cache_file.version("search-rows", ctx.source.info().embedder, dim)


def _kept_group(kept: dict[str, Any], name: str, count: int, dim: int, *, key: bytes = b"", version: str = "") -> Any:  # noqa: ANN401
    """A group's kept entry (the key of its texts, its rows, the version of the list it is of) when it holds
    `count` rows made from texts of this `key`, or of a list of this `version`."""
    hit = kept.get(name)
    if not (isinstance(hit, tuple) and len(hit) == 3 and isinstance(hit[1], bytes) and len(hit[1]) == count * dim):
        return None
    return hit if (key and hit[0] == key) or (version and hit[2] == version) else None


def _group_rows(
    ctx: BuildContext, groups: dict[str, Group], dim: int, kept: dict[str, Any]
) -> dict[str, np.ndarray] | None:
    """Each group's int8 rows: kept from the last build when its texts are the same (a memory written leaves the
    turns' and pages' ten thousand rows as they were), or, for a list kept whole (see _Layers, given without its
    texts), when its version is; else from the source's kept vectors (`source.embed`, one call for the groups that
    changed). None: the source cannot embed."""
    rows: dict[str, np.ndarray] = {}
    keys: dict[str, bytes] = {}
    for name, (texts, count, version) in groups.items():
        if texts is None:
            hit = _kept_group(kept, name, count, dim, version=version)
            if hit is None:
                raise ValueError(f"search: the {name} group has neither kept rows nor texts")  # (see _Layers)
        else:
            keys[name] = _texts_key(texts)
            hit = _kept_group(kept, name, count, dim, key=keys[name])
        if hit is not None:
            keys[name] = hit[0]
            rows[name] = np.frombuffer(hit[1], dtype=np.int8).reshape(count, dim)
    todo = [name for name in groups if name not in rows]
    texts = [t for name in todo for t in groups[name][0] or ()]
    got = ctx.source.embed(texts) if texts else np.zeros((0, dim), dtype=np.float32)
    if got is None:
        return None
    made = quantise(np.asarray(got)) if texts else np.zeros((0, dim), dtype=np.int8)
    ends = np.cumsum([groups[name][1] for name in todo])
    rows.update(zip(todo, np.split(made, ends[:-1]) if todo else [], strict=True))
    path = ctx.speed.cache_path(ROWS_FILE)
    versions = {name: hit[2] for name, hit in kept.items() if isinstance(hit, tuple) and len(hit) == 3}
    if path is not None and (todo or any(versions.get(name) != version for name, (*_, version) in groups.items())):
        keep = {name: (keys[name], rows[name].tobytes(), version) for name, (_, _, version) in groups.items()}
        cache_file.dump(path, _group_rows_version(ctx, dim), keep)
    return rows


def _memory_rows(ctx: BuildContext, ids: list[str], keys: list[bytes], dim: int) -> np.ndarray | None:
    """The int8 rows of these L2 memories' own vectors (`memory_vectors`), kept from the last build by what each
    was embedded from (`keys`, ROW_KEY bytes each): only new or changed memories are read from the source and
    quantised (reading and quantising all hundred thousand was a twentieth of a rebuild). None: the source has no
    vectors for them."""
    path = ctx.speed.cache_path(MEMORY_ROWS_FILE)
    version = _memory_rows_version(ctx.source.info().embedder, dim)
    old, blob = _kept_rows(path, version, dim) if path is not None else (np.zeros((0, dim), dtype=np.int8), b"")
    at = {blob[i : i + ROW_KEY]: n for n, i in enumerate(range(0, len(blob), ROW_KEY))}
    where = np.array([at.get(k, -1) for k in keys], dtype=np.int64)
    rows = old[np.maximum(where, 0)] if len(old) else np.zeros((len(ids), dim), dtype=np.int8)
    del old  # (the file's bytes)
    missing = np.flatnonzero(where < 0)
    if len(missing):
        got = _memory_vectors(ctx, [ids[n] for n in missing], dim)
        if got is None:
            return None
        rows[missing] = got
    if path is not None and (len(missing) or len(at) != len(ids)):
        head = f"{version}\n{len(keys)} {dim}\n".encode()
        cache_file.replace_file(path, [head, b"".join(keys), memoryview(rows).cast("B")])  # (no copy of the rows)
    return rows


def _kept_rows(path: Path, version: str, dim: int) -> tuple[np.ndarray, bytes]:
    """The rows and their keys as `_memory_rows` wrote them (a line of the version, a line of the row count and
    width, the keys, the rows), the rows read in place; none when the file is missing, damaged or another version's."""
    none = np.zeros((0, dim), dtype=np.int8), b""
    try:
        data = path.read_bytes()
        first = data.index(b"\n")
        second = data.index(b"\n", first + 1)
        count, width = (int(x) for x in data[first + 1 : second].split())
    except (OSError, ValueError):
        return none
    body = second + 1
    if data[:first] != version.encode() or width != dim or len(data) - body != count * (ROW_KEY + dim):
        return none
    rows = np.frombuffer(data, dtype=np.int8, count=count * dim, offset=body + count * ROW_KEY).reshape(count, dim)
    return rows, data[body : body + count * ROW_KEY]


def _texts_key(texts: list[str]) -> bytes:
    digest = hashlib.blake2b(str(len(texts)).encode(), digest_size=16)
    for text in texts:
        digest.update(text_key(text))
    return digest.digest()


def search_data(ctx: BuildContext, memory_url: MemoryUrl | None = None) -> tuple[dict[str, Any], np.ndarray | None]:
    """What the page's JS needs (JSON-able) and the int8 vectors (None: lexical only, `why_lexical` says)."""
    s = site(ctx)
    info = ctx.source.info()
    layers = _Layers(ctx, s, memory_url, info.dim if info.embedder == USE_NAME else None)
    why = ""
    vectors = None
    if info.embedder != USE_NAME:
        why = f"the store's embedder ({info.embedder}) cannot run in a browser"
    else:
        vectors = layers.vectors(ctx, info.dim)
        if vectors is None:
            why = "the memory source holds no vectors usable with its embedder"
    counts = [len(layers.l1), len(layers.units), len(layers.turns), len(layers.files)]
    data = {
        "version": FORMAT_VERSION,
        "embedder": info.embedder,
        "dim": info.dim,
        "dense": vectors is not None,
        "why_lexical": why,
        "config": asdict(RecallConfig()),  # every knob of recall's ranking, read by search-core.js
        "layers_order": list(LAYERS),
        "limits": {
            "max_embed_bytes": MAX_EMBED_BYTES,
            "session_limit": SESSION_LIMIT,
            "turns_per_session": SNIPPETS_PER_SESSION,
        },
        "postings_budget": POSTINGS_BUDGET,
        "stop_words": sorted(STOP_WORDS),
        "stop_chars": sorted(STOP_CHARS),
        "rows": dict(zip(LAYERS, counts, strict=True)),  # vector rows per layer, in this order
        "L1": layers.l1,  # [id, url, text, category, file]
        "L2": {"memories": layers.memories, "units": layers.units},  # [id, url, category, where]; see _Layers
        "L4": {"sessions": layers.sessions, "turns": layers.turns},  # [id, title, url, started]; see _Layers
        "files": layers.files,  # [path, title, url, text, kind]
    }
    return data, vectors


def _page(data: dict[str, Any], memories: int, version: str) -> str:
    """The search page; `version`: a hash of the data script, in its URL, so that a browser that kept the data of
    an earlier build (which names parts since removed) fetches it again (the header box: memwiki.js)."""
    rows = data["rows"]
    counts = (
        f"{rows['L1']:,} hot-memory entries, {memories:,} memories, "
        f"{rows['L4']:,} session turns and {rows['files']:,} wiki and entity pages"
    )
    if data["dense"]:
        how = (
            f"Your query is embedded in the browser with the store's own model ({esc(data['embedder'])}, "
            f"{data['dim']} dimensions), compared with the same vectors <code>memwiki recall</code> uses and "
            "fused with a lexical match exactly as <code>memwiki recall --all-layers</code> ranks. Results by "
            "words show at once; the meaning-based ranking replaces them once the model has loaded."
        )
    else:
        how = (
            f"<strong>Lexical search only:</strong> {esc(data['why_lexical'])}, so queries are matched by words "
            "(Chinese by character pairs), not by meaning. <code>memwiki recall</code> finds more."
        )
    # the vectors (most of the bytes) are loaded by search-ui.js after the page: the first results need none
    use_attr = f' data-use="{SEARCH_ROOT}{USE_DIR}/" data-vectors="{SEARCH_ROOT}{SLICE_DIR}/"' if data["dense"] else ""
    scripts = [f"{SEARCH_ROOT}{DATA_JS}?v={version}"]
    scripts += [f"{SEARCH_ROOT}{PART_DIR}/{name}.js" for parts in data["parts"].values() for name, _ in parts]
    if data["dense"]:
        scripts.append(f"{SEARCH_ROOT}{USE_DIR}/use.js")
    scripts += [f"{SEARCH_ROOT}{ASSET_DIR}/search-core.js", f"{SEARCH_ROOT}{ASSET_DIR}/search-ui.js"]
    lines = [
        "# Search memory",
        "",
        f'<link rel="stylesheet" href="{SEARCH_ROOT}{ASSET_DIR}/search.css">',
        "",
        f'<div id="memwiki-search" class="memwiki-search" data-root="{SEARCH_ROOT}"{use_attr}>'
        '<form class="memwiki-search-form" role="search"><input type="search" id="memwiki-search-q" '
        'placeholder="Search every layer of memory · 搜索记忆" autocomplete="off" aria-label="Search memory" '
        'aria-controls="memwiki-search-results">'
        "</form>"
        '<p id="memwiki-search-status" class="memwiki-search-status" aria-live="polite"></p>'
        '<ol id="memwiki-search-results" class="memwiki-search-results" role="listbox"></ol></div>',
        "",
        f'<p class="memwiki-muted">Searches {counts}, by meaning and by words.</p>',
        "",
        f'<details class="memwiki-muted"><summary>How this search ranks</summary><p>{how} It covers what '
        "<code>memwiki recall --all-layers</code> covers; hover over a result to see why it ranks where it does.</p>"
        "</details>",
        "",
        "<noscript>Memory search needs JavaScript.</noscript>",
        "",
    ]
    lines += [f'<script src="{src}"></script>' for src in scripts]
    return "\n".join(lines) + "\n"


def vector_slices(vectors: np.ndarray, data: dict[str, Any]) -> list[GeneratedAsset]:
    """The rows in slices of `SLICE_ROWS`, each named by its content's hash (listed in `data["slices"]`): a
    browser keeps a slice while its name is the same, so a second visit fetches none, and a change of a few
    memories (appended to their layer: its rows are oldest first) fetches only the slices that changed. Each
    slice is also a script (`slice_script`), made only when the site does not hold it yet: a rebuild writes the
    scripts of the slices that changed, not every row again."""
    assets, names = [], []
    for start in range(0, len(vectors), SLICE_ROWS):
        part = np.ascontiguousarray(vectors[start : start + SLICE_ROWS]).tobytes()
        name = f"{hashlib.sha256(part).hexdigest()[:20]}.bin"
        names.append([name, min(SLICE_ROWS, len(vectors) - start)])
        assets.append(GeneratedAsset(f"{SLICE_DIR}/{name}", part, numbers=True, content_key=f"slice-{name}"))
        key = cache_file.version("search-slice-js", name)  # (with the code, as the script's wrapper is)
        script = functools.partial(slice_script, name, part)
        js = f"{SLICE_DIR}/{name.removesuffix('.bin')}.js"
        assets.append(GeneratedAsset(js, script, numbers=True, content_key=f"slice-js-{key}"))
    data["slices"] = names
    return assets


def slice_script(name: str, rows: bytes) -> bytes:
    """A slice's rows as a script (base64), set in window.MemwikiSearchSlices under the slice's name."""
    head = f'(window.{SLICES_GLOBAL} = window.{SLICES_GLOBAL} || {{}})[{json.dumps(name)}] = "'.encode()
    return head + base64.b64encode(rows) + b'";\n'


def data_parts(ctx: BuildContext, data: dict[str, Any]) -> list[GeneratedAsset]:
    """The data's long row lists cut into parts of `PART_ROWS` rows, each a script named by a hash of its rows and
    listed in `data["parts"]` (list -> [[name, rows], ...] in order; the list itself left empty): a rebuild after one
    memory changed writes, and the site scan reads, the part holding its row rather than every row, and a browser
    keeps the other parts while their names stay. Parts are cut every `PART_ROWS` rows: a new memory's rows come
    last (its layer is oldest first), so the parts before it stay as they were; a row inserted or deleted inside a
    list (a wiki page, a memory dated before others, a deleted memory) moves the rows after it, whose parts are
    written anew. A list kept whole (`KeptList`) is listed as the last build cut it."""
    parts = ctx.part(_Parts)
    memo = parts.memo
    kept = memo.data if memo is not None else {}
    assets, live = [], set()
    data["parts"] = {}
    for where in LONG_LISTS:
        holder, last = _holder(data, where)
        rows, holder[last] = holder[last], []
        names = rows.parts if isinstance(rows, KeptList) else _cut(rows, kept, memo, parts.identities.get(where))
        for name, _ in names:
            live.add(name)
            key = cache_file.version("search-part", name)  # (with the code: a new script format, a new name)
            assets.append(GeneratedAsset(f"{PART_DIR}/{name}.js", kept[name], content_key=f"part-{key}"))
        data["parts"][".".join(where)] = names
        if memo is not None and where in parts.versions:
            memo.set(("list", *where), (parts.versions[where], len(rows), names))
    if memo is not None:
        lists = {("list", *where) for where in parts.versions}
        for name in [n for n in memo.data if n not in live and n not in lists]:
            memo.drop(name)
        memo.save()
    return assets


def _cut(
    rows: list[Any], kept: dict[Any, Any], memo: cache_file.JournaledDict | None, identities: list[Any] | None
) -> list[list[Any]]:
    """A list's parts, [[name, rows], ...], their scripts made when `kept` has none of that name (and kept); named
    by the rows' `identities` when given (hashing what a hundred thousand memory rows are made from, not them)."""
    names = []
    for start in range(0, len(rows), PART_ROWS):
        chunk = rows[start : start + PART_ROWS]
        name = _rows_name(chunk) if identities is None else _identity_name(identities[start : start + PART_ROWS])
        if not isinstance(kept.get(name), bytes):
            script = _part_script(name, chunk)
            if memo is not None:
                memo.set(name, script)
            else:
                kept[name] = script
        names.append([name, len(chunk)])
    return names


def _holder(data: dict[str, Any], where: tuple[str, ...]) -> tuple[dict[str, Any], str]:
    """The dict that holds the list at `where` in the data (("L2", "units"): data["L2"]), and the list's key."""
    *outer, last = where
    for key in outer:
        data = data[key]
    return data, last


def _rows_name(rows: list[Any]) -> str:
    """A part's name: a hash of its rows (the same rows, the same name, in any build and process). Marshal's format
    2 writes equal values alike (later formats mark objects met twice, which depends on the process's references),
    four times faster than JSON."""
    return hashlib.blake2b(marshal.dumps(rows, 2), digest_size=10).hexdigest()


def _identity_name(identities: list[Any]) -> str:
    """A part's name from its rows' identities, with the code that makes rows from them: the same identities, the
    same rows, in any build and process (as `_rows_name`: a name the browser keeps a part by)."""
    made_by = cache_file.version("search-part-rows", FORMAT_VERSION).encode()
    return hashlib.blake2b(made_by + marshal.dumps(identities, 2), digest_size=10).hexdigest()


def _part_script(name: str, rows: list[Any]) -> bytes:
    """A part's script: its rows one a line (as the data's, `script_json`), set in window.MemwikiSearchParts."""
    head = f"window.{PARTS_GLOBAL} = window.{PARTS_GLOBAL} || {{}};\n"
    return f'{head}window.{PARTS_GLOBAL}["{name}"] = {script_json(rows, row_depth=1)};\n'.encode()


def assembled(read: Callable[[str], bytes]) -> dict[str, Any]:
    """The search data as the page assembles it, its parts put back (`read`: a site file's bytes by its path in the
    site); what tests and benchmarks read instead of `DATA_JS` alone."""
    data = json.loads(read(DATA_JS).decode("utf-8").removeprefix("window.MemwikiSearchData = ").rstrip()[:-1])
    for list_name, parts in data.pop("parts", {}).items():
        rows = []
        for name, _count in parts:
            script = read(f"{PART_DIR}/{name}.js").decode("utf-8")
            rows += json.loads(script.split(" = ", 2)[-1].rstrip()[:-1])
        holder, last = _holder(data, tuple(list_name.split(".")))
        holder[last] = rows
    return data


def prepare(ctx: BuildContext) -> None:
    """A store the browser can embed for: its model exported (a first build) while the other builders run."""
    if ctx.source.info().embedder == USE_NAME:
        prepare_model(ctx)


def start(ctx: BuildContext) -> None:
    """Make the search in a forked process while the other builders run (speed.forked; `build` then takes what
    it made): in a rebuild (the last build's search was made by this code) whose page cache says which assets it
    holds, from a source whose layers are kept (speed.layer_cache). The vectors the process needs are asked of the
    source first; one that needs more than is kept (a text not embedded yet) gives up: the search is then made
    here. (At 100k memories, the search was a third of a rebuild's builders, with a core idle.)"""
    if not (isinstance(ctx.source, CachedSource) and ctx.speed.holds_asset and _made_by_this_code(ctx)):
        return
    if exporting(ctx):  # (the model's export, another forked process, is this process's to wait for)
        return
    ctx.source.fetch_new_vectors()
    forked.start(ctx, "search", lambda ctx: _made(ctx, None))


def _made_by_this_code(ctx: BuildContext) -> bool:
    """Whether the last build's search was made by this code from this embedder (the kept L2 rows say so in their
    first line): what it kept is then this build's to reuse."""
    info, path = ctx.source.info(), ctx.speed.cache_path(MEMORY_ROWS_FILE)
    if path is None or info.embedder != USE_NAME:
        return False
    try:
        with open(path, "rb") as f:
            first = f.readline().rstrip(b"\n")
    except OSError:
        return False
    return first == _memory_rows_version(info.embedder, info.dim).encode()


def _memory_rows_version(embedder: str, dim: int) -> str:
    """The version `_memory_rows` writes its file under (the first line of MEMORY_ROWS_FILE)."""
    return cache_file.version("search-memory-rows", embedder, dim)


def build(ctx: BuildContext, memory_url: MemoryUrl | None = None) -> BuildResult:
    """The search page, its data and vectors, the search scripts and (for USE stores) the browser embedder: as a
    forked process made them (`start`), or made now."""
    if memory_url is not None:
        return _made(ctx, memory_url)
    return forked.result(ctx, "search", lambda ctx: _made(ctx, None))


def _made(ctx: BuildContext, memory_url: MemoryUrl | None) -> BuildResult:
    """The search, made here (see `build`)."""
    data, vectors = search_data(ctx, memory_url)
    use = use_assets(ctx) if vectors is not None else []
    if vectors is not None and not use:
        data["dense"], data["why_lexical"], vectors = False, "the browser embedder is not installed", None
    assets = []
    if vectors is not None:
        assets += vector_slices(vectors, data)
    memories = len(data["L2"]["memories"])
    assets += data_parts(ctx, data)
    script = f"window.MemwikiSearchData = {script_json(data, row_depth=3)};\n".encode()  # (a row a line)
    assets = [GeneratedAsset(DATA_JS, script), *assets]
    assets += [GeneratedAsset(f"{ASSET_DIR}/{name}", (_HERE / "search" / name).read_bytes()) for name in STATIC]
    assets += use
    page = GeneratedPage(
        SEARCH_PAGE,
        "Search memory",
        _page(data, memories, hashlib.sha1(script).hexdigest()[:12]),
        section="search",
        in_nav=True,
        meta={"order": 6, "memories": memories, "dense": data["dense"]},
    )
    return [page], assets
