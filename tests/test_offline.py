"""A public site loads nothing from another host: the theme options that would are turned off (and said), a
script the user added from elsewhere stops the build by name, and the final scan finds whatever still would."""

from __future__ import annotations

from pathlib import Path

import pytest
from mkdocs.config import load_config
from mkdocs.exceptions import PluginError

from memwiki.site.gate.detect import Detectors
from memwiki.site.gate.offline import keep_offline, outside_loads
from memwiki.site.gate.scan import SiteScan


def _config(tmp_path: Path, theme: dict, **extra: object) -> object:
    (tmp_path / "docs").mkdir(exist_ok=True)
    path = tmp_path / "mkdocs.yml"
    path.write_text("site_name: t\n", encoding="utf-8")
    return load_config(str(path), theme=theme, **extra)


def test_theme_options_that_load_from_elsewhere_are_turned_off(tmp_path: Path) -> None:
    material = _config(tmp_path, {"name": "material", "font": {"text": "Roboto"}})
    changed = keep_offline(material)
    assert material.theme["font"] is False and material.extra["generator"] is False
    assert any("theme.font" in c for c in changed)
    mkdocs = _config(tmp_path, {"name": "mkdocs", "highlightjs": True, "analytics": {"gtag": "G-X"}})
    changed = keep_offline(mkdocs)
    assert mkdocs.theme["highlightjs"] is False and not mkdocs.theme["analytics"]["gtag"]
    assert len(changed) == 3
    assert keep_offline(mkdocs) == []  # (nothing left to turn off)


@pytest.mark.parametrize("option", ["extra_javascript", "extra_css"])
def test_a_file_from_another_host_stops_the_build_by_name(tmp_path: Path, option: str) -> None:
    config = _config(tmp_path, {"name": "mkdocs"}, **{option: ["local.js", "https://cdn.example.com/x.js"]})
    with pytest.raises(PluginError, match=f"{option} loads https://cdn.example.com/x.js"):
        keep_offline(config)
    keep_offline(_config(tmp_path, {"name": "mkdocs"}, **{option: ["js/local.js"]}))  # its own files are fine


def test_what_a_browser_would_fetch_from_elsewhere() -> None:
    loads = [
        '<script src="https://cdn.example.com/a.js"></script>',
        "<link rel='stylesheet' href='//fonts.googleapis.com/css?family=Roboto'>",
        '<link href="https://fonts.gstatic.com" rel="preconnect">',
        '<img alt="x" src="http://tracker.example.net/p.gif">',
        "@import url('https://fonts.googleapis.com/css2?family=Inter');",
        "body { background: url(https://example.com/bg.png) }",
    ]
    for text in loads:
        assert outside_loads(text), text
    links = [
        '<a href="https://www.mkdocs.org/">MkDocs</a>',  # a link a reader may follow is no load
        '<link rel="canonical" href="https://example.com/page/">',
        '<script src="assets/memwiki/memwiki.js"></script>',
        "url(../fonts/x.woff2)",
    ]
    for text in links:
        assert not outside_loads(text), text


def test_the_final_scan_names_a_page_that_loads_from_elsewhere(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<p>hello</p>\n<script src="https://cdn.example.com/a.js"></script>\n')
    (site / "ok.html").write_text('<a href="https://example.com/">a link</a>\n')
    leaks = SiteScan(Detectors(library=False), []).scan(site)
    assert [(leak.kind, leak.path, leak.line) for leak in leaks] == [("load from another host", "index.html", 2)]
