"""pyvis networks as offline HTML files: no CDN, no external reference, untrusted labels kept inert.

pyvis builds the network (nodes, edges, vis-network options). We do not use pyvis's HTML template: it
always writes CDN <script>/<link> tags (bootstrap even with `cdn_resources="in_line"`) and, when a node
title contains "href", shows titles through `innerHTML`, which would let a memory inject HTML. Instead the
network data goes into a small page of our own that loads vis-network's JS/CSS, copied from the pyvis
package itself, as site assets by relative path. vis-network draws labels on a canvas and sets string
tooltips with `innerText`, so labels stay text.
"""

from __future__ import annotations

import functools
import html
import importlib.util
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from memwiki.site.model.generated import GeneratedAsset

if TYPE_CHECKING:
    from pyvis.network import Network

VIS_DIR = "assets/memwiki/vis"
VIS_JS = f"{VIS_DIR}/vis-network.min.js"
VIS_CSS = f"{VIS_DIR}/vis-network.css"
GRAPH_JS = f"{VIS_DIR}/memwiki-graph.js"
PYVIS_VIS = Path(importlib.util.find_spec("pyvis").origin).parent / "lib" / "vis-9.1.2"

# Colours for entity types, most frequent type first; types past the palette share OTHER_COLOR.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939", "#843c39",
)  # fmt: skip
OTHER_COLOR = "#9e9e9e"
ENDED_COLOR = "#b0b0b0"

# An external reference: a scheme URL, a protocol-relative URL, or a src/href/url()/@import that is not
# a relative path. Used to check every graph file we write.
_EXTERNAL_RE = re.compile(
    r"""(?ix)
    (?:https?|ftp|wss?):// | (?<![:\w])//[a-z0-9.-]+\.[a-z]{2,}
    | \b(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)(?!\#)
    | url\(\s*["']?\s*(?!data:)(?:[a-z][a-z0-9+.-]*:|//)
    | @import
    """
)


def type_colors(types_by_frequency: Sequence[str]) -> dict[str, str]:
    """A distinct colour per entity type (given most frequent first); the rarest share one grey."""
    return {t: PALETTE[i] if i < len(PALETTE) else OTHER_COLOR for i, t in enumerate(types_by_frequency)}


def external_refs(text: str) -> list[str]:
    """External references found in an HTML/JS/CSS text (empty for an offline file)."""
    return [m.group(0) for m in _EXTERNAL_RE.finditer(text)]


def safe_relative_url(url: str) -> str:
    """`url` if it is a relative path inside the site, else "" (no scheme, host, or absolute path)."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith(("/", "\\")) or any(c in url for c in "\"'<>`\\\n\r"):
        return ""
    return url


def new_network(*, directed: bool = True) -> Network:
    """A pyvis network with our defaults (arrows shown, our own rendering)."""
    from pyvis.network import Network  # imported on first use: it pulls in IPython (~1 s)

    return Network(height="100%", width="100%", directed=directed, cdn_resources="remote")


def graph_options(*, physics: bool, big: bool = False) -> dict[str, Any]:
    """vis-network options: labelled edges, dots, barnes-hut physics that stops once stable. Labels are drawn on
    a halo of the page's white (a node's name stays readable where an edge crosses it, an edge's label where it
    crosses another) and nodes keep apart (`avoidOverlap`), so that labels do not pile up at the default zoom."""
    halo = {"strokeWidth": 4, "strokeColor": "#ffffff"}
    return {
        "nodes": {"shape": "dot", "size": 14, "font": {"size": 14, "face": "sans-serif", **halo}},
        "edges": {
            "arrows": {"to": {"enabled": True, "scaleFactor": 0.5}},
            "font": {"size": 11, "align": "middle", "face": "sans-serif", "color": "#555555", **halo},
            "smooth": {"enabled": not big, "type": "dynamic"},
        },
        "physics": {
            "enabled": physics,
            "solver": "barnesHut",
            "barnesHut": {
                "gravitationalConstant": -6000 if big else -4000,
                "springLength": 140 if big else 190,
                "avoidOverlap": 0.6,
            },
            "stabilization": {"enabled": True, "iterations": 300 if big else 150, "fit": True},
        },
        "interaction": {"hover": True, "tooltipDelay": 150, "hideEdgesOnDrag": big},
    }


# Characters that never occur in JSON outside strings, escaped so that no text in a label can close the
# <script> element or look like a reference (`</script>`, `src=`, `https://`, `url(`, `@import`).
_JSON_ESCAPES = tuple((c, f"\\u{ord(c):04x}") for c in "<>&/=(@\u2028\u2029")


def script_json(value: Any, row_depth: int = 0) -> str:
    """JSON that is safe inside a <script> element and holds nothing that reads as a URL reference; a list of rows
    nested `row_depth` levels deep or less (each dict a level, the list one) is written one row a line: a rebuild's
    scan then reads the rows that changed, not one line of 10 MB."""
    text = _json(value, row_depth)
    for raw, escaped in _JSON_ESCAPES:  # str.replace is many times faster than str.translate here
        if raw in text:
            text = text.replace(raw, escaped)
    return text


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # (made once: json.dumps with
# options makes an encoder each call, most of the time of writing 100k rows one by one)


def _json(value: Any, row_depth: int) -> str:  # noqa: ANN401
    if row_depth > 0 and isinstance(value, dict):
        items = (f"{_COMPACT(str(k))}:{_json(v, row_depth - 1)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if row_depth > 0 and isinstance(value, list) and value and all(isinstance(x, list | dict) for x in value):
        return "[\n" + ",\n".join(map(_COMPACT, value)) + "\n]"
    return _COMPACT(value)


def inert_html_text(text: str) -> str:
    """HTML-escaped text in which nothing reads as a reference either (`=`, `/`, `:`, `(`, `@` as entities)."""
    text = html.escape(text)
    for c in "=/:(@":
        text = text.replace(c, f"&#{ord(c)};")
    return text


def network_html(net: Network, *, title: str, root: str) -> str:
    """A standalone offline HTML page drawing `net`; `root` is the relative path to the site root.

    Nodes may carry a `url` (relative to this file); clicking such a node opens it in the top window.
    """
    nodes, edges, _heading, _h, _w, options = net.get_network_data()
    data = {"nodes": nodes, "edges": edges, "options": json.loads(options)}
    page = _TEMPLATE.format(
        title=inert_html_text(title),
        vis_css=html.escape(root + VIS_CSS),
        vis_js=html.escape(root + VIS_JS),
        graph_js=html.escape(root + GRAPH_JS),
        data=script_json(data),
    )
    return page  # the template is fixed and every inserted text is escaped: tests check with external_refs


@functools.cache
def vis_assets() -> tuple[GeneratedAsset, ...]:
    """vis-network's JS and CSS from the pyvis package, and our small loader script."""
    js = (PYVIS_VIS / "vis-network.min.js").read_bytes()
    css = (PYVIS_VIS / "vis-network.css").read_bytes()
    return (
        GeneratedAsset(VIS_JS, js),
        GeneratedAsset(VIS_CSS, css),
        GeneratedAsset(GRAPH_JS, _LOADER_JS.encode("utf-8")),
    )


_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{title}</title>
<link rel="stylesheet" href="{vis_css}">
<style>html,body{{margin:0;height:100%;font-family:sans-serif}}#graph{{position:absolute;inset:0}}
#nojs{{padding:1em;color:#666}}</style>
</head><body>
<div id="graph"><p id="nojs">Loading the graph (needs JavaScript).</p></div>
<script id="graph-data" type="application/json">{data}</script>
<script src="{vis_js}"></script>
<script src="{graph_js}"></script>
</body></html>
"""

_LOADER_JS = """/* memwiki: draw the network whose data sits in #graph-data (vis-network, offline). */
(function () {
  "use strict";
  var el = document.getElementById("graph");
  if (typeof vis === "undefined") { el.textContent = "vis-network did not load."; return; }
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  el.textContent = "";
  var nodes = new vis.DataSet(data.nodes), edges = new vis.DataSet(data.edges);
  var network = new vis.Network(el, {nodes: nodes, edges: edges}, data.options);
  window.memwikiNetwork = network;  // for the console and the browser tests (hovering nodes and edges)
  network.once("stabilizationIterationsDone", function () {
    network.setOptions({physics: {enabled: false}});
    // a phone-width frame: fitting every node would shrink the labels past reading; start near the busiest
    // node at a readable scale instead (drag to pan, pinch to zoom)
    if (el.clientWidth < 600 && network.getScale() < 0.8) {
      var busiest = null, most = -1;
      nodes.forEach(function (n) {
        var d = network.getConnectedEdges(n.id).length;
        if (d > most) { most = d; busiest = n.id; }
      });
      if (busiest !== null) network.moveTo({position: network.getPositions([busiest])[busiest], scale: 0.8});
    }
  });
  network.on("doubleClick", function (params) {
    if (!params.nodes.length) return;
    var node = nodes.get(params.nodes[0]);
    var url = node && typeof node.url === "string" ? node.url : "";
    if (url && !/^[a-z][a-z0-9+.-]*:/i.test(url) && "/\\\\".indexOf(url.charAt(0)) < 0) {
      var a = document.createElement("a");
      a.href = url; a.target = "_top"; a.rel = "noopener";
      document.body.appendChild(a); a.click();
    }
  });
})();
"""
