"""The build's fast paths give the same output as the slow ones: raw blocks kept from Python-Markdown,
string-only relative links, and memory text rendered once and reused across builds."""

from __future__ import annotations

import itertools
import logging
import posixpath
import sqlite3
from pathlib import Path

import markdown
import pytest

from memwiki.site.model.concept_index import ConceptIndex, TextSource
from memwiki.site.model.render import TextRenderer, block, href, page_url
from memwiki.site.speed.kept_table import KeptTable
from memwiki.site.speed.raw_blocks import join, split
from memwiki.site.speed.text_cache import TextCache
from memwiki.source import WikiPage
from memwiki.text.vectors import text_key


def _md(text: str) -> str:
    return markdown.markdown(text, extensions=["toc", "tables", "md_in_html", "attr_list"])


def test_raw_blocks_skip_markdown_and_come_back_unchanged() -> None:
    page = (
        "# Title\n\nSome *text*.\n"
        + block("<ul><li>one</li><li>*two*</li></ul>", cls="mw-list")
        + "\n## Section\n"
        + block("<table><tr><td>a</td></tr></table>", cls="mw-t", tag="div")
        + '<p class="mw-muted">12 memories · <a href="x.html">all</a></p>\n'
    )
    stub, blocks = split(page, "n0nce")
    assert len(blocks) == 2 and "<ul>" not in stub and "<table>" not in stub and "# Title" in stub
    assert join(_md(stub), "n0nce", blocks).replace("\n", "") == _md(page).replace("\n", "")


def test_blocks_markdown_would_read_differently_stay_markdown() -> None:
    assert split("<div>\nopen only\n\nstill</div>\n", "n")[1] == []
    assert split('<a href="x.html">inline</a> text\n', "n")[1] == []  # not a block-level tag
    assert split("<div>one</div>\ntext after it\n", "n")[1] == []  # ends in Markdown text


def test_placeholders_need_this_builds_nonce() -> None:
    stub, blocks = split("<div>x</div>\n", "abc")
    assert join("<p>mwrawzzzx0</p>", "abc", blocks) == "<p>mwrawzzzx0</p>"  # memory text cannot spell one
    assert join(_md(stub), "abc", blocks).strip() == "<div>x</div>"


def test_href_matches_relpath() -> None:
    srcs = ["index.md", "audit.md", "concepts/a.md", "concepts/wanted/b.md", "memory/wing/w/r-2.md", "x/index.md"]
    for (a, b), du in itertools.product(itertools.product(srcs, srcs + ["assets/memwiki/use/use.js"]), (False, True)):
        here = page_url(a, du)
        there = page_url(b, du) if b.endswith(".md") else b
        base = posixpath.dirname(here) if not here.endswith("/") else here.rstrip("/")
        want = posixpath.relpath(there or ".", base or ".")
        if there.endswith("/") and not want.endswith("/"):
            want += "/"
        assert href(a, b, directory_urls=du) == want, (a, b, du)
    assert href("concepts/a.md", "concepts/b.md", "h-1") == "b.html#h-1"


def _index(texts: TextCache) -> ConceptIndex:
    index = ConceptIndex(texts)
    index.add_wiki(WikiPage(path="alpha.md", title="Alpha", aliases=("阿尔法",), tags=(), body="# Alpha\n\n## Use\n"))
    return index


def test_text_cache_reuses_rendered_text_across_builds(tmp_path: Path) -> None:
    text = "# Alpha\n\nSee [[阿尔法#use|the use]] and [[Nowhere]]; `[[code]]` stays.\n\n## Notes\n"
    path = tmp_path / "texts.sqlite3"
    first = TextCache(path)
    renderer = TextRenderer(_index(first))
    out1 = [renderer.html(text, p) for p in ("concepts/x.md", "memory/wing/a/b.md")]
    out1.append(renderer.html(text, "concepts/x.md", skip_title="alpha"))
    out1.append(renderer.inline("A [[alpha]] sentence.", "index.md"))
    first.save()
    assert first.misses > 0 and path.is_file()
    second = TextCache(path)
    renderer2 = TextRenderer(_index(second))
    out2 = [renderer2.html(text, p) for p in ("concepts/x.md", "memory/wing/a/b.md")]
    out2.append(renderer2.html(text, "concepts/x.md", skip_title="alpha"))
    out2.append(renderer2.inline("A [[alpha]] sentence.", "index.md"))
    assert second.misses == 0 and out1 == out2  # nothing parsed again, same HTML
    assert 'href="alpha.html#use"' in out2[0] and 'href="../../../concepts/alpha.html#use"' in out2[1]
    assert "mw-wanted" in out2[0] and "<code>[[code]]</code>" in out2[0]
    assert '<h1 id="alpha">' in out2[0] and "<h1" not in out2[2]  # the repeated title left out
    fresh = TextRenderer(_index(TextCache()))  # no cache at all: the same HTML
    assert fresh.html(text, "concepts/x.md") == out2[0]


def test_text_cache_from_other_code_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "texts.sqlite3"
    key = text_key("x")
    other = KeptTable(path, "old")  # saved by other code
    other.save({key: {"kind": 0}})
    other.close()
    cache = TextCache(path)
    assert cache.derived("x", "kind", lambda: 1) == 1 and cache.misses == 1
    same = KeptTable(path, cache.version)  # saved by the same code: reused
    same.save({key: {"kind": 0}})
    same.close()
    assert TextCache(path).derived("x", "kind", lambda: 1) == 0
    (tmp_path / "texts.marshal").write_bytes(b"the dict of an earlier format")
    TextCache(path)
    assert not (tmp_path / "texts.marshal").exists()  # (left behind by older code: removed)


def test_texts_are_read_one_at_a_time_and_a_damaged_store_is_made_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What is derived from each text (links, names, HTML) is kept in SQLite and read a text at a time (a rebuild
    asks about the few texts it scans or renders again): a second build derives nothing again, a damaged file is
    set aside with a warning and the same HTML made again, and a build that saw every text drops what was derived
    from texts gone."""
    path = tmp_path / "texts.sqlite3"
    texts = [f"Note {n}: see [[Alpha]] and **bold** text." for n in range(6)]

    def build(shown: list[str]) -> tuple[TextCache, list[str]]:
        cache = TextCache(path)
        renderer = TextRenderer(_index(cache))
        out = [renderer.html(t, "memory/category/a.md") for t in shown]
        cache.save()
        return cache, out

    first, html = build(texts)
    assert first.misses > 0 and path.is_file()
    again, same = build(texts)
    assert again.misses == 0 and same == html
    path.write_bytes(b"not a database" * 100)
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.memwiki"):
        damaged, made = build(texts)
    assert made == html and damaged.misses == first.misses and "made again" in caplog.text  # (all, as at first)
    assert build(texts)[0].misses == 0  # (the new file holds them)
    build(texts[:1])  # a build that saw one text of six: what was derived from the others is dropped
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM texts").fetchone()[0] == 2  # (its text, and the wiki page's)
    assert build(texts[1:2])[0].misses == 1


def test_a_link_reads_the_same_whatever_else_is_wanted() -> None:
    """What concept pages' memo keys rely on (ConceptIndex.digest with `built_from`): besides the wiki pages
    and entities, a link's HTML depends only on its own text, not on which other names are wanted."""
    text = "See [[Nowhere]], [[nowhere]], [[No Where#Part]] and [[阿尔法]]."
    rendered = []
    for others in (["[[Elsewhere]] then [[Nowhere Else]]"], ["[[nowhere-else]]", "[[Nowhere]]", "[[???]]"], []):
        index = _index(TextCache())
        index.scan(TextSource("memory/x.md", f"m-{n}", "x", t) for n, t in enumerate(others))
        rendered.append(TextRenderer(index).html(text, "concepts/y.md"))
    assert rendered[0] == rendered[1] == rendered[2]
    assert rendered[0].count("mw-wanted") == 3 and 'href="wanted/nowhere.html"' in rendered[0]


def test_concepts_named_like_the_concept_list_pages_get_their_own_paths() -> None:
    index = ConceptIndex(TextCache())
    pages = [
        index.add_wiki(WikiPage(path=f"{n}.md", title=n, aliases=(), tags=(), body="x")) for n in ("index", "list-2")
    ]
    assert [c.src_uri for c in pages] == ["concepts/index-2.md", "concepts/list-2-2.md"]
    assert index.resolve("index") is pages[0]  # still reachable by its name
