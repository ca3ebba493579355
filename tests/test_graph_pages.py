"""Knowledge-graph views over real graphs: a store built through the store API and a real MemPalace palace."""

from __future__ import annotations

import hashlib
import json
import marshal
import posixpath
import re
import subprocess
from pathlib import Path

import pytest
from fixture_copies import copy_fixtures

from memwiki.readers.mempalace import MemPalace
from memwiki.site.browser.pyvis_html import external_refs
from memwiki.site.builders import graph, site
from memwiki.site.gate.filter import PrivacyFilter
from memwiki.site.model.build_context import BuildContext, BuildSettings
from memwiki.site.model.generated import GeneratedAsset
from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.store.store import Store

HOSTILE = "<img src=x onerror=alert(1)>"
ATTR_RE = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']*)["']""", re.I)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    with Store.init(tmp_path_factory.mktemp("graph") / "store") as st:
        g = st.graph
        g.add_entity("Memwiki Agent", "agent")
        g.add_entity("长期记忆库", "service")
        g.add_entity(HOSTILE, "tool")
        g.add_entity("javascript:alert(1)", "tool")
        g.add_triple("<img src=javascript:alert(1)>", "src=//evil.example/x", "url(https://evil.example)")
        g.add_triple("Memwiki Agent", "stores_memories_in", "长期记忆库", valid_from="2025-01-10", source_file="s-001")
        g.add_triple("Memwiki Agent", "runs_on", "old laptop", valid_from="2024-03-01", source_file="MEMORY.md")
        g.supersede("Memwiki Agent", "runs_on", "GPU box", date="2025-02-01")
        g.add_triple(HOSTILE, "attacks", "Memwiki Agent", source_file="https://evil.example/x.js")
        g.add_triple("javascript:alert(1)", "links_to", "长期记忆库")
        g.add_triple("长期记忆库", "used_until", "Memwiki Agent", valid_from="2024-01-01", valid_to="2024-06-30")
        yield st


@pytest.fixture(scope="module")
def built(store: Store) -> tuple[BuildContext, list, dict[str, bytes]]:
    ctx = BuildContext(store.reader())
    pages, assets = graph.build(ctx)
    return ctx, pages, {a.dest_uri: a.content for a in assets}


def _graph_data(html: str) -> dict:
    m = re.search(r'<script id="graph-data" type="application/json">(.*?)</script>', html, re.S)
    assert m, "graph page holds no data"
    return json.loads(m.group(1))


def _resolve(page_url: str, rel: str) -> str:
    base = page_url if page_url.endswith("/") else posixpath.dirname(page_url) + "/"
    return posixpath.normpath(posixpath.join(base, rel))


def test_entity_section_lists_current_and_ended_facts_with_dates_and_sources(built) -> None:
    ctx, _, assets = built
    md = graph.entity_section(ctx, "memwiki_agent")
    current, _, rest = md.partition("### Timeline of ended facts")
    assert "### Current facts (3)" in current
    assert "GPU box" in current and "长期记忆库" in current and "<code>s-001</code>" in current
    assert "old laptop" not in current  # superseded: only in the timeline
    assert "<time>2024-03-01</time> → <time>2025-02-01</time>" in rest
    assert "(now: " in rest and "GPU box" in rest.split("(now: ")[1]  # the fact that replaced it
    assert "<time>2024-01-01</time> → <time>2024-06-30</time>" in rest  # invalidated, not superseded
    # the neighbourhood iframe points at a file that build() produced
    src = re.search(r'<iframe src="([^"]+)"', md).group(1)
    here = site(ctx).entity_url("memwiki_agent")  # the page is served where the site shows the entity
    assert here == "concepts/memwiki-agent.html"
    assert _resolve(here, src) == graph.entity_graph_uri("memwiki_agent")
    assert graph.entity_graph_uri("memwiki_agent") in assets


def test_entity_links_use_the_given_url_scheme(built) -> None:
    ctx, _, _ = built

    def url(eid: str) -> str:
        return f"kg/{eid.replace(' ', '_')}.html"

    md = graph.entity_section(ctx, "memwiki_agent", entity_url=url)
    hrefs = re.findall(r'class="memwiki-entity" href="([^"]+)"', md)
    assert hrefs and all(not h.startswith(("kg/", "/", "../")) for h in hrefs)  # relative to kg/memwiki_agent.html
    # a fact's source links to where the site shows it (here SOUL.md-style files: the persona page, from kg/)
    assert 'class="mw-provenance mw-provenance-persona" href="../persona.html"' in md
    assert 'href="gpu_box.html"' in md
    src = re.search(r'<iframe src="([^"]+)"', md).group(1)
    assert _resolve("kg/memwiki_agent.html", src) == graph.entity_graph_uri("memwiki_agent")


def test_untrusted_names_are_inert(built) -> None:
    ctx, pages, assets = built
    for eid in ("<img_src=x_onerror=alert(1)>", "memwiki_agent"):
        md = graph.entity_section(ctx, eid)
        assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
        assert 'href="javascript' not in md.lower()
    assert "<img" not in pages[0].markdown
    for uri, content in assets.items():
        if uri.endswith(".html"):
            text = content.decode("utf-8")
            assert "<img" not in text and not re.search(r"<[^>]*onerror", text), uri
    # the label survives as text in the graph data
    labels = {n["label"] for n in _graph_data(assets[graph.GLOBAL_HTML].decode())["nodes"]}
    assert HOSTILE in labels


def test_no_graph_file_references_anything_outside_the_site(built) -> None:
    _, pages, assets = built
    html_files = {u: c.decode("utf-8") for u, c in assets.items() if u.endswith(".html")}
    assert graph.GLOBAL_HTML in html_files and len(html_files) >= 6
    for uri, text in html_files.items():
        assert not external_refs(text), (uri, external_refs(text))
        assert "http://" not in text and "https://" not in text and "cdn" not in text.lower(), uri
        for ref in ATTR_RE.findall(text):  # every src/href is a relative path to a file we ship
            assert _resolve(uri, ref) in assets, (uri, ref)
        assert text.encode("utf-8") == assets[uri]  # written as UTF-8
    loader = assets["assets/memwiki/vis/memwiki-graph.js"].decode()
    assert not external_refs(loader)
    # vis-network itself (from the pyvis package) loads nothing: its only URLs are the SVG namespace and
    # the licence/homepage lines of its header comment
    vis = assets["assets/memwiki/vis/vis-network.min.js"].decode()
    urls = set(re.findall(r"https?://[^\s\"')]+", vis))
    assert urls <= {
        "http://www.w3.org/2000/svg",
        "http://almende.com",
        "http://opensource.org/licenses/MIT",
        "http://www.apache.org/licenses/LICENSE-2.0",
        "https://github.com/uuidjs/uuid#getrandomvalues-not-supported",
        "https://github.com/visjs",
        "https://github.com/zloirock/core-js",
        "https://github.com/zloirock/core-js/blob/v3.21.1/LICENSE",
        "https://visjs.github.io/vis-network/",
    }, urls
    assert not re.search(r"\b(?:fetch|importScripts)\s*\(|XMLHttpRequest", vis)
    assert "url(" not in assets["assets/memwiki/vis/vis-network.css"].decode().replace('url("data:', "")
    page_refs = ATTR_RE.findall(pages[0].markdown)
    assert all(not re.match(r"[a-z]+:|/", r) for r in page_refs)


def test_edges_labelled_coloured_and_ended_facts_dashed(built) -> None:
    ctx, _, assets = built
    data = _graph_data(assets[graph.GLOBAL_HTML].decode())
    nodes = {n["id"]: n for n in data["nodes"]}
    by_label = {n["label"]: n for n in data["nodes"]}
    assert by_label["Memwiki Agent"]["color"] != by_label["长期记忆库"]["color"]  # agent vs service
    edges = {(nodes[e["from"]]["label"], e["label"], nodes[e["to"]]["label"]): e for e in data["edges"]}
    old = edges[("Memwiki Agent", "runs_on", "old laptop")]
    new = edges[("Memwiki Agent", "runs_on", "GPU box")]
    assert old["dashes"] is True and old["color"] == "#b0b0b0" and "2025-02-01" in old["title"]
    assert "dashes" not in new and "now" in new["title"]
    assert all(e.get("arrows") == "to" for e in data["edges"])
    # clicking a node leads to its entity page (relative to graph/global.html)
    assert _resolve(graph.GLOBAL_HTML, by_label["GPU box"]["url"]) == site(ctx).entity_url("gpu_box")


def test_global_graph_caps_what_it_draws_and_says_what_it_left_out(tmp_path: Path) -> None:
    with Store.init(tmp_path / "big") as st:
        for i in range(60):  # a hub with 60 spokes, spokes chained in pairs
            st.graph.add_triple("hub", "knows", f"spoke {i:02d}")
            if i % 2:
                st.graph.add_triple(f"spoke {i:02d}", "near", f"spoke {i - 1:02d}")
        ctx = BuildContext(st.reader(), BuildSettings(graph_max_nodes=20))
        pages, assets = graph.build(ctx)
    data = _graph_data(next(a for a in assets if a.dest_uri == graph.GLOBAL_HTML).content.decode())
    assert len(data["nodes"]) == 20 and data["nodes"][0]["label"] == "hub"
    drawn = {n["id"] for n in data["nodes"]}
    assert all(e["from"] in drawn and e["to"] in drawn for e in data["edges"])
    md = pages[0].markdown
    assert "61 entities and 90 facts" in md
    assert "Not drawn:</strong> 41 entities" in md and "(at most 20)" in md
    hub = next(a for a in assets if a.dest_uri == graph.entity_graph_uri("hub"))
    assert len(_graph_data(hub.content.decode())["nodes"]) == graph.DEFAULT_NEIGHBOURS + 1
    assert "40 of 60 neighbours drawn" in graph.entity_section(ctx, "hub")


def test_real_mempalace_graph(tmp_path: Path) -> None:
    fx = copy_fixtures(tmp_path)
    with MemPalace(fx / "mempalace_palace", config_dir=fx / "mempalace_config", cache_dir=tmp_path / "c") as palace:
        ctx = BuildContext(palace)
        pages, assets = graph.build(ctx)
        triples = palace.triples()
        ended = [t for t in triples if not t.current]
        assert len(triples) == 10 and len(ended) == 2
        for t in ended:
            md = graph.entity_section(ctx, t.subject)
            assert f"<time>{t.valid_to[:10]}</time>" in md
    assert "12 entities (and 2 values, shown in their facts) and 10 facts (8 current, 2 ended)" in pages[0].markdown
    uris = {a.dest_uri for a in assets}
    assert {graph.entity_graph_uri(t.subject) for t in triples} <= uris


def test_graph_page_draws_in_headless_chromium(built, tmp_path: Path) -> None:
    """The global graph opened from file:// draws its canvas with no network access."""
    _, _, assets = built
    _write(tmp_path / "site", [GeneratedAsset(u, c) for u, c in assets.items()])
    shot = tmp_path / "graph.png"
    url = (tmp_path / "site" / graph.GLOBAL_HTML).as_uri()
    proc = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--proxy-server=127.0.0.1:9",
            "--virtual-time-budget=4000",
            "--window-size=700,500",
            f"--screenshot={shot}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert "<canvas" in proc.stdout, proc.stderr[-2000:]  # vis-network ran and drew
    assert "vis-network did not load" not in proc.stdout


def _write(root: Path, assets: list[GeneratedAsset]) -> None:
    for a in assets:
        path = root / a.dest_uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(a.content)


def gated(st: Store) -> PrivacyFilter:
    """The store through the gate with one key across builds (the plugin's is the user's, kept on disk): a new key
    would pseudonymise differently, so nothing could be reused."""
    return PrivacyFilter(st.reader(), key=b"k" * 32)


def test_graph_files_are_cached_until_the_graph_changes(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "graph.marshal"

    def saved_key() -> str:
        return marshal.loads(cache.read_bytes())[0]

    with Store.init(tmp_path / "s") as st:
        st.graph.add_triple("Agent", "uses", "Chroma")
        assets = graph.build(BuildContext(gated(st), speed=BuildSpeed.at(tmp_path / "cache")))[1]
        first = {a.dest_uri: a.content for a in assets}
        assert all(a.digest == hashlib.sha1(a.content).hexdigest() for a in assets)  # content-addressed in the cache
        key = saved_key()
        again = {
            a.dest_uri: a.content
            for a in graph.build(BuildContext(gated(st), speed=BuildSpeed.at(tmp_path / "cache")))[1]
        }
        assert again == first and saved_key() == key
        st.graph.add_triple("Agent", "runs_on", "GPU box")  # the graph changed: nothing stale may be served
        third = {
            a.dest_uri: a.content
            for a in graph.build(BuildContext(gated(st), speed=BuildSpeed.at(tmp_path / "cache")))[1]
        }
    assert graph.entity_graph_uri("gpu_box") in third and graph.entity_graph_uri("gpu_box") not in first
    assert "runs_on" in third[graph.entity_graph_uri("agent")].decode()
    assert saved_key() != key


def test_graph_files_drawn_in_a_forked_process_are_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first build with many entities draws the graph files in a forked process (graph.prepare, through
    BuildSpeed.apart) while the other builders run; `build` then takes what that process drew."""
    monkeypatch.setattr(graph, "FORK_MIN_FILES", 1)  # the demo-sized graph counts as many here
    with Store.init(tmp_path / "s") as st:
        st.graph.add_triple("Agent", "uses", "Chroma")
        st.graph.add_triple("Agent", "runs_on", "GPU box")
        here = BuildContext(st.reader(), speed=BuildSpeed.at(tmp_path / "c1"))
        graph.prepare(here)  # the host did not allow forking: nothing started
        assert not here.speed.forked
        expected = {a.dest_uri: a.content for a in graph.build(here)[1]}
        forked = BuildContext(st.reader(), speed=BuildSpeed.at(tmp_path / "c2", may_fork=True))
        graph.prepare(forked)
        (drawing,) = forked.speed.forked
        got = {a.dest_uri: a.content for a in graph.build(forked)[1]}
    assert drawing.exitcode == 0 and (tmp_path / "c2" / "graph.marshal").is_file()
    assert got == expected and graph.entity_graph_uri("agent") in got
