"""Knowledge-graph views: the facts block of an entity's page, its neighbourhood graph, the global graph.

Graph files are offline pyvis networks (see memwiki.site.browser.pyvis_html): edges labelled by predicate, nodes
coloured by entity type, current facts solid, ended facts dashed and grey. Entity names are untrusted: they are escaped
in HTML and only ever drawn as text in the graphs.

Links to entity pages go through `entity_url(entity_id) -> URL relative to the site root` (the site's own,
`Site.entity_url`, unless a caller gives another). URLs ending in "/" are directory URLs; anything else is a
file URL.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memwiki.layers.graph_types import with_types
from memwiki.site.browser.pyvis_html import (
    ENDED_COLOR,
    graph_options,
    network_html,
    new_network,
    safe_relative_url,
    type_colors,
    vis_assets,
)
from memwiki.site.builders import site
from memwiki.site.builders.provenance import source_html
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.concept_index import slugify
from memwiki.site.model.generated import GeneratedAsset, GeneratedPage
from memwiki.site.model.render import esc
from memwiki.site.speed.builder_speed import Pending
from memwiki.source import Entity, Triple

GRAPH_PAGE = "graph/index.md"
GRAPH_PAGE_URL = "graph/"  # served URL of GRAPH_PAGE (same folder with or without directory URLs)
GLOBAL_HTML = "graph/global.html"
ENTITY_HTML_DIR = "graph/entities"
DEFAULT_MAX_NODES = 300  # global graph: entities drawn (top by degree); vis-network stays fluid at this size
DEFAULT_NEIGHBOURS = 40  # neighbourhood graph: neighbours drawn around an entity
MAX_ROWS = 100  # facts listed per table on an entity page

EntityUrl = Callable[[str], str]


# ── URLs ─────────────────────────────────────────────────────────────────────────────────────────────


def default_entity_url(entity_id: str) -> str:
    return f"concepts/{slugify(entity_id)}/"


def relative_url(target: str, page_url: str) -> str:
    """`target` (relative to the site root) as seen from the page served at `page_url`."""
    base = page_url.split("/")[:-1]  # the folder segments of the page ("a/b/" and "a/b/x.html" -> a, b)
    parts = [p for p in target.split("/") if p not in ("", ".")]
    common = 0
    while common < min(len(base), len(parts)) and base[common] == parts[common]:
        common += 1
    rel = "/".join([".."] * (len(base) - common) + parts[common:])
    if target.endswith("/") or not parts:
        return (rel + "/") if rel else "./"
    return rel


def entity_graph_uri(entity_id: str) -> str:
    """Where the neighbourhood graph of an entity is written: its name's slug as concept pages make it (CJK kept:
    `周明-613228246c.html`), and a digest of the id (stable, collision-free)."""
    name = slugify(entity_id.replace("_", " "), fallback="e")[:40].strip("-")
    digest = hashlib.sha1(entity_id.encode("utf-8")).hexdigest()[:10]
    return f"{ENTITY_HTML_DIR}/{name + '-' if name and not name.startswith('c-') else ''}{digest}.html"


def _checked(given: EntityUrl) -> EntityUrl:
    """`given`, checked (only relative site paths) and memoised."""
    cache: dict[str, str] = {}

    def url(entity_id: str) -> str:
        if entity_id not in cache:
            cache[entity_id] = safe_relative_url(given(entity_id) or "")
        return cache[entity_id]

    return url


class _SiteUrls:
    """The site's own entity URLs, checked, once per build."""

    def __init__(self, ctx: BuildContext) -> None:
        self.url = _checked(site(ctx).entity_url)


def _entity_url_of(ctx: BuildContext, entity_url: EntityUrl | None) -> EntityUrl:
    """`entity_url` checked, or the site's own."""
    return _checked(entity_url) if entity_url is not None else ctx.part(_SiteUrls).url


# ── the graph, indexed once per build ───────────────────────────────────────────────────────────────


@dataclass
class GraphIndex:
    """Entities and triples of a source, with each entity's facts and degree."""

    entities: dict[str, Entity]
    triples: list[Triple]
    by_entity: dict[str, list[Triple]] = field(default_factory=dict)
    degree: Counter[str] = field(default_factory=Counter)
    types: Counter[str] = field(default_factory=Counter)  # entities per type
    colors: dict[str, str] = field(default_factory=dict)  # colour per type
    literals: frozenset[str] = frozenset()  # values stored as entities (`1.3`): in fact tables, never drawn

    @classmethod
    def build(
        cls, entities: Sequence[Entity], triples: Sequence[Triple], literals: frozenset[str] = frozenset()
    ) -> GraphIndex:
        index = cls({e.id: e for e in entities}, list(triples), literals=literals)
        by_entity: dict[str, list[Triple]] = defaultdict(list)
        for t in index.triples:
            by_entity[t.subject].append(t)
            if t.object != t.subject:
                by_entity[t.object].append(t)
            for end, name in ((t.subject, t.subject_name), (t.object, t.object_name)):
                if end not in index.entities:  # a triple may name an entity the source does not list
                    index.entities[end] = with_types([Entity(id=end, name=name or end)], [t])[0]
        index.by_entity = dict(by_entity)
        index.degree = Counter({e: len(ts) for e, ts in by_entity.items()})
        index.types = Counter(index.type(e) for e in index.entities if e not in literals)
        index.colors = type_colors([t for t, _ in sorted(index.types.items(), key=lambda x: (-x[1], x[0]))])
        return index

    def name(self, entity_id: str) -> str:
        entity = self.entities.get(entity_id)
        return entity.name if entity and entity.name else entity_id

    def type(self, entity_id: str) -> str:
        entity = self.entities.get(entity_id)
        return entity.type if entity and entity.type else "unknown"


def graph_index(ctx: BuildContext) -> GraphIndex:
    """The graph index of this build, made on first use (entity_section is called once per entity)."""
    return ctx.part(GraphIndex, lambda ctx: GraphIndex.build(site(ctx).entities, site(ctx).triples, site(ctx).literals))


# ── an entity's facts block ──────────────────────────────────────────────────────────────────────────


def _date(value: str) -> str:
    return value[:10] if value else ""


def _link(index: GraphIndex, entity_id: str, here: str, entity_url: EntityUrl, self_id: str) -> str:
    name = esc(index.name(entity_id))
    if entity_id == self_id:
        return f"<strong>{name}</strong>"
    url = entity_url(entity_id)
    if not url:
        return name
    return f'<a class="memwiki-entity" href="{esc(relative_url(url, here))}">{name}</a>'


def _source_link(ctx: BuildContext, here: str) -> Callable[[Triple], str]:
    """A fact's source as HTML on the page served at `here`: linked to the memory card or session turn it
    names (see memwiki.site.builders.provenance), plain text when it names nothing published."""
    s = site(ctx)

    def url(src_uri: str, anchor: str) -> str:
        target = relative_url(s.url(src_uri), here)
        return f"{target}#{anchor}" if anchor else target

    return lambda t: source_html(s, t, url)


def _fact_sort_key(t: Triple) -> tuple[str, str, str]:
    return (t.valid_from or "", t.valid_to or "", t.id)


def entity_section(ctx: BuildContext, entity_id: str, entity_url: EntityUrl | None = None) -> str:
    """Markdown (with raw HTML blocks) for an entity's concept page: facts, timeline, neighbourhood graph.

    The page itself is assumed to be served at `entity_url(entity_id)`.
    """
    entity_url = _entity_url_of(ctx, entity_url)
    index = graph_index(ctx)
    here = entity_url(entity_id) or default_entity_url(entity_id)
    facts = sorted(index.by_entity.get(entity_id, []), key=_fact_sort_key)
    if not facts:
        return "\n".join(["## Knowledge graph", "", _muted("No facts about this entity in the knowledge graph."), ""])
    current = [t for t in facts if t.current]
    ended = [t for t in facts if not t.current]

    def link(eid: str) -> str:
        return _link(index, eid, here, entity_url, entity_id)

    source_of = _source_link(ctx, here)
    out = ["## Knowledge graph", "", *_current_facts(current, link, source_of)]
    if ended:
        out += _ended_facts(ended, current, link, source_of)
    out += _neighbourhood(index, entity_id, facts, here)
    return "\n".join(out)


def _muted(text: str) -> str:
    return f'<p class="memwiki-muted">{text}</p>'


def _current_facts(current: list[Triple], link: Callable[[str], str], source_of: Callable[[Triple], str]) -> list[str]:
    """The table of an entity's current facts."""
    out = [f"### Current facts ({len(current)})", ""]
    if not current:
        return [*out, _muted("None: every known fact about this entity has ended."), ""]
    rows = [
        f"<tr><td>{link(t.subject)}</td><td><em>{esc(t.predicate)}</em></td><td>{link(t.object)}</td>"
        f"<td>{esc(_date(t.valid_from)) or '—'}</td><td>{source_of(t)}</td></tr>"
        for t in current[:MAX_ROWS]
    ]
    out.append(
        '<div class="memwiki-facts"><table><thead><tr><th>Subject</th><th>Predicate</th><th>Object</th>'
        "<th>Since</th><th>Source</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )
    return [*out, _more(len(current)), ""]


def _ended_facts(
    ended: list[Triple], current: list[Triple], link: Callable[[str], str], source_of: Callable[[Triple], str]
) -> list[str]:
    """The timeline of an entity's ended facts, each with the value that replaced it."""
    now = {(t.subject, t.predicate): t for t in current}
    items = []
    for t in ended[:MAX_ROWS]:
        successor = now.get((t.subject, t.predicate))
        replaced = f' <span class="memwiki-muted">(now: {link(successor.object)})</span>' if successor else ""
        items.append(
            f'<li class="memwiki-ended"><time>{esc(_date(t.valid_from)) or "?"}</time> → '
            f"<time>{esc(_date(t.valid_to))}</time>: {link(t.subject)} <em>{esc(t.predicate)}</em> "
            f"{link(t.object)}{replaced} · source {source_of(t)}</li>"
        )
    return [
        f"### Timeline of ended facts ({len(ended)})",
        "",
        '<ol class="memwiki-timeline">' + "".join(items) + "</ol>",
        _more(len(ended)),
        "",
    ]


def _neighbourhood(index: GraphIndex, entity_id: str, facts: list[Triple], here: str) -> list[str]:
    """The frame of the entity's neighbourhood graph, and what it draws."""
    neighbours = {t.subject for t in facts} | {t.object for t in facts}
    neighbours.discard(entity_id)
    src = esc(relative_url(entity_graph_uri(entity_id), here))
    title = esc(f"Neighbourhood of {index.name(entity_id)}")
    drawn = min(len(neighbours), DEFAULT_NEIGHBOURS)
    note = f"{drawn} of {len(neighbours)} neighbours drawn (most connected first). " if drawn < len(neighbours) else ""
    return [
        "### Neighbourhood",
        "",
        f'<div class="memwiki-graph-frame"><iframe src="{src}" title="{title}" loading="lazy" '
        'style="width:100%;height:420px;border:1px solid #ddd;border-radius:4px"></iframe></div>',
        f'<p class="memwiki-muted">{note}Solid edges are current facts, dashed grey ones have ended. '
        "Double-click a node to open its page.</p>",
        "",
    ]


def _more(total: int) -> str:
    if total <= MAX_ROWS:
        return ""
    return f'<p class="memwiki-muted">Showing {MAX_ROWS} of {total}; the global graph page has the rest.</p>'


# ── networks ─────────────────────────────────────────────────────────────────────────────────────────


def _network(
    index: GraphIndex,
    node_ids: Sequence[str],
    triples: Sequence[Triple],
    file_uri: str,
    entity_url: EntityUrl,
    *,
    big: bool,
    center: str = "",
) -> str:
    """Offline HTML of a network over `node_ids` drawing `triples` (both ends must be in `node_ids`)."""
    net = new_network()
    number = {eid: n for n, eid in enumerate(node_ids)}
    for eid in node_ids:
        etype = index.type(eid)
        url = entity_url(eid)
        node = {
            "title": f"{index.name(eid)} ({etype}) · {index.degree.get(eid, 0)} facts",
            "size": 22 if eid == center else min(30, 10 + 2 * index.degree.get(eid, 0) ** 0.5),
            "borderWidth": 3 if eid == center else 1,
        }
        if url:
            node["url"] = relative_url(url, file_uri)
        net.add_node(number[eid], label=_short(index.name(eid)), color=index.colors[etype], **node)
    for t in triples:
        dates = f"{_date(t.valid_from) or '?'} → {_date(t.valid_to) or 'now'}"
        title = f"{index.name(t.subject)} {t.predicate} {index.name(t.object)} · {dates}"
        if t.source:
            title += f" · source: {t.source}"
        style = (
            {"dashes": True, "color": ENDED_COLOR} if not t.current else {"color": index.colors[index.type(t.subject)]}
        )
        net.add_edge(number[t.subject], number[t.object], label=_short(t.predicate, 24), title=title, **style)
    net.options = graph_options(physics=True, big=big)
    root = relative_url("./", file_uri)
    return network_html(net, title=f"Knowledge graph: {index.name(center)}" if center else "Knowledge graph", root=root)


def _short(text: str, limit: int = 32) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def neighbourhood_html(
    index: GraphIndex, entity_id: str, entity_url: EntityUrl, limit: int = DEFAULT_NEIGHBOURS
) -> str:
    """The neighbourhood graph file of one entity: it, its most connected neighbours, the facts between."""
    facts = index.by_entity.get(entity_id, [])
    neighbours = Counter(t.object if t.subject == entity_id else t.subject for t in facts)
    neighbours.pop(entity_id, None)
    for value in index.literals & neighbours.keys():
        del neighbours[value]
    keep = sorted(neighbours, key=lambda e: (-index.degree.get(e, 0), index.name(e)))[:limit]
    nodes = [entity_id, *keep]
    drawn = set(nodes)
    triples = [t for t in facts if t.subject in drawn and t.object in drawn]
    return _network(index, nodes, triples, entity_graph_uri(entity_id), entity_url, big=False, center=entity_id)


@dataclass
class GlobalSelection:
    """What the global graph draws and what it leaves out."""

    nodes: list[str]
    triples: list[Triple]
    left_out_entities: int
    left_out_triples: int
    left_out_by_type: Counter[str]


def select_global(index: GraphIndex, max_nodes: int) -> GlobalSelection:
    """The `max_nodes` most connected entities (ties by name) and the facts among them."""
    drawable = (e for e in index.entities if e not in index.literals)
    ranked = sorted(drawable, key=lambda e: (-index.degree.get(e, 0), index.name(e), e))
    nodes = ranked[:max_nodes]
    drawn = set(nodes)
    triples = [t for t in index.triples if t.subject in drawn and t.object in drawn]
    left = ranked[max_nodes:]
    return GlobalSelection(
        nodes,
        triples,
        len(left),
        len(index.triples) - len(triples),
        Counter(index.type(e) for e in left),
    )


def _global_page(index: GraphIndex, sel: GlobalSelection, entity_url: EntityUrl, max_nodes: int) -> str:
    n_current = sum(1 for t in index.triples if t.current)
    lines = [
        "# Knowledge graph",
        "",
        f"{len(index.entities) - len(index.literals):,} entities"
        + (f" (and {len(index.literals):,} values, shown in their facts)" if index.literals else "")
        + f" and {len(index.triples):,} facts "
        f"({n_current:,} current, {len(index.triples) - n_current:,} ended).",
        "",
    ]
    if sel.left_out_entities:
        by_type = ", ".join(f"{n:,} {esc(t)}" for t, n in sel.left_out_by_type.most_common())
        lines += [
            f'<p class="memwiki-graph-left-out"><strong>Not drawn:</strong> {sel.left_out_entities:,} entities '
            f"({by_type}) and {sel.left_out_triples:,} facts that touch them. The graph shows the "
            f"{len(sel.nodes):,} most connected entities (at most {max_nodes:,}) and the {len(sel.triples):,} "
            "facts between them; every entity's page has its own neighbourhood graph.</p>",
            "",
        ]
    if index.entities:
        lines += [
            '<div class="memwiki-graph-frame"><iframe src="global.html" title="Knowledge graph" '
            'style="width:100%;height:640px;border:1px solid #ddd;border-radius:4px"></iframe></div>',
            "",
        ]
    types = index.types
    if types:
        legend = "".join(
            f'<li><span style="display:inline-block;width:.8em;height:.8em;border-radius:50%;'
            f'background:{index.colors[t]}"></span> {esc(t)} ({n:,})</li>'
            for t, n in sorted(types.items(), key=lambda x: (-x[1], x[0]))
        )
        lines += [
            "## Legend",
            "",
            f'<ul class="memwiki-legend">{legend}</ul>',
            '<p class="memwiki-muted">Edges are labelled by predicate. Solid edges are current facts; dashed grey '
            "edges are facts that have ended. Hover for dates and sources; double-click a node to open its page."
            "</p>",
            "",
        ]
    top = sel.nodes[:50]
    if top:
        items = "".join(
            f"<li>{_link(index, e, GRAPH_PAGE_URL, entity_url, '')} ({_facts(index.degree.get(e, 0))})</li>"
            for e in top
        )
        lines += ["## Most connected entities", "", f'<ol class="memwiki-top-entities">{items}</ol>', ""]
    return "\n".join(lines)


def _facts(n: int) -> str:
    return f"{n:,} fact" if n == 1 else f"{n:,} facts"


_CODE = (Path(__file__), Path(__file__).resolve().parents[1] / "browser" / "pyvis_html.py")


def _graph_key(ctx: BuildContext, index: GraphIndex, entity_url: EntityUrl | None, max_nodes: int) -> str:
    """A digest of everything the graph files depend on: entities, facts, page URLs, options, this code.
    `entity_url`: None for the site's own URLs (which follow from the names' version)."""
    digest = hashlib.sha1(f"{max_nodes}\0{importlib.metadata.version('pyvis')}".encode())
    for path in _CODE:
        digest.update(path.read_bytes())
    s = site(ctx)
    digest.update(s.layer_version("graph", (s.entities, s.triples)).encode())
    if entity_url is None:
        digest.update(f"\1{s.names_version}".encode())
    else:
        for eid in sorted(index.entities):
            digest.update(f"\1{eid}\0{entity_url(eid)}".encode())
    return digest.hexdigest()


FORK_MIN_FILES = 300  # fewer graph files than this are drawn in the build's own process
FILES = "graph.marshal"  # in cache_dir: the graph files of the last build

Files = dict[str, tuple[bytes, str]]  # uri -> (content, its SHA-1)


def _drawn(make: Callable[[], dict[str, str]]) -> Files:
    """`make()`'s files as UTF-8 bytes, each with its SHA-1."""
    files: Files = {}
    for uri, text in make().items():
        data = text.encode("utf-8")
        files[uri] = (data, hashlib.sha1(data).hexdigest())
    return files


@dataclass
class _Drawing:
    """This build's graph files: their key, how they are drawn, the global selection, and (once `prepare` or
    `build` asked) the files, kept from the last build or being drawn."""

    key: str
    make: Callable[[], dict[str, str]]
    selection: GlobalSelection
    files: Pending[Files] | None = None

    def pending(self, ctx: BuildContext, may_fork: bool) -> Pending[Files]:
        if self.files is None:
            found = ctx.speed.load(FILES, self.key)
            if isinstance(found, dict):
                self.files = Pending(lambda: found)
            elif may_fork:
                self.files = ctx.speed.apart(FILES, self.key, lambda: _drawn(self.make))
            else:
                self.files = Pending(lambda: self._draw_and_keep(ctx))
        return self.files

    def _draw_and_keep(self, ctx: BuildContext) -> Files:
        files = _drawn(self.make)
        ctx.speed.keep(FILES, self.key, files)
        return files


def _drawing(ctx: BuildContext, entity_url: EntityUrl | None) -> _Drawing:
    """The graph files of this build for these entity URLs (None: the site's own, worked out once per build)."""
    if entity_url is None:
        return ctx.part(_Drawing, lambda ctx: _new_drawing(ctx, None))
    return _new_drawing(ctx, entity_url)


def _new_drawing(ctx: BuildContext, entity_url: EntityUrl | None) -> _Drawing:
    urls = _entity_url_of(ctx, entity_url)
    index = graph_index(ctx)
    max_nodes = ctx.settings.graph_max_nodes
    sel = select_global(index, max_nodes)

    def make() -> dict[str, str]:
        files = {GLOBAL_HTML: _network(index, sel.nodes, sel.triples, GLOBAL_HTML, urls, big=True)}
        for eid in sorted(index.by_entity.keys() - index.literals):
            files[entity_graph_uri(eid)] = neighbourhood_html(index, eid, urls)
        return files

    return _Drawing(_graph_key(ctx, index, entity_url, max_nodes), make, sel)


def prepare(ctx: BuildContext) -> None:
    """When this build's graph files are many and not kept from the last build, hand their drawing (pyvis, one
    file per entity: a large part of a first build) off while the other builders run."""
    if len(graph_index(ctx).by_entity) >= FORK_MIN_FILES:
        _drawing(ctx, None).pending(ctx, may_fork=True)


def build(ctx: BuildContext, entity_url: EntityUrl | None = None) -> tuple[list[GeneratedPage], list[GeneratedAsset]]:
    """The global graph page and its file, one neighbourhood graph file per entity with facts, vis-network."""
    drawing = _drawing(ctx, entity_url)
    sel = drawing.selection
    files = drawing.pending(ctx, may_fork=False).result()
    entity_url = _entity_url_of(ctx, entity_url)
    index = graph_index(ctx)
    max_nodes = ctx.settings.graph_max_nodes
    assets = list(vis_assets()) + [GeneratedAsset(uri, data, content_key=sha1) for uri, (data, sha1) in files.items()]
    page = GeneratedPage(
        GRAPH_PAGE,
        "Knowledge graph",
        _global_page(index, sel, entity_url, max_nodes),
        section="graph",
        in_nav=True,
        meta={"order": 5, "entities": len(index.entities), "triples": len(index.triples), "drawn": len(sel.nodes)},
    )
    return [page], assets
