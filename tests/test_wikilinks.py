"""Wikilinks: parsing, code stays code, resolution by title / alias / slug (Chinese too), path tricks,
and the untrusted-text renderer."""

from __future__ import annotations

from memwiki.site.model.concept_index import ConceptIndex, TextSource, slugify
from memwiki.site.model.render import TextRenderer, href, md_esc, page_url
from memwiki.site.model.wikilinks import find_links, parse_link
from memwiki.source import Entity, WikiPage


def _index() -> ConceptIndex:
    index = ConceptIndex()
    index.add_wiki(
        WikiPage(
            "memory-store.md",
            "长期记忆库",
            ("Long-term memory store", "记忆库"),
            (),
            "# 长期记忆库\n\n## 五层 / The five layers\n\ntext\n",
        )
    )
    index.add_wiki(WikiPage("cloud-kb.md", "Cloud Knowledge Base", ("云知识库",), (), "Body"))
    index.add_entity(Entity("embed-01", "embed-01", "server"))
    index.add_entity(Entity("云知识库", "云知识库", "service"))
    return index


def test_parse_forms() -> None:
    assert parse_link("name") == parse_link(" name ")
    link = parse_link("长期记忆库#五层|the layers")
    assert (link.target, link.heading, link.label, link.text) == ("长期记忆库", "五层", "the layers", "the layers")
    assert parse_link("a#b").text == "a › b"


def test_code_stays_code() -> None:
    text = "See [[alpha]] and `[[beta]]` here.\n\n```\n[[gamma]]\n```\n\n    [[delta]]\n"
    assert [f.link.target for f in find_links(text)] == ["alpha"]


def test_sentence_is_the_linking_one() -> None:
    found = find_links("First sentence. The second sentence is long and names [[Juniper]] here. Third.")
    assert found[0].sentence == "The second sentence is long and names [[Juniper]] here."
    found = find_links("第一句。第二句很长很长，它提到了我们的 [[长期记忆库]]，还说了很多别的事情，足够长了。第三句。")
    assert found[0].sentence == "第二句很长很长，它提到了我们的 [[长期记忆库]]，还说了很多别的事情，足够长了。"
    # a short linking sentence comes with the one before it, for context
    found = find_links("链接到不存在的概念怎么办？比如 [[向量量化]]。后面。")
    assert found[0].sentence == "链接到不存在的概念怎么办？比如 [[向量量化]]。"
    assert find_links("It goes to a stub, e.g. [[x]].")[0].sentence == "It goes to a stub, e.g. [[x]]."


def test_resolution_by_title_alias_slug_case_insensitive() -> None:
    index = _index()
    store = index.resolve("长期记忆库")
    assert store is not None and store.src_uri == "concepts/memory-store.md"
    assert index.resolve("long-term MEMORY store") is store
    assert index.resolve("记忆库") is store
    assert index.resolve("memory-store") is store  # slug / file name
    kb = index.resolve("cloud knowledge base")
    assert index.resolve("云知识库") is kb  # the entity joined the wiki page of the same alias
    assert kb.entity is not None and kb.entity.id == "云知识库"
    assert index.resolve("EMBED-01").kind == "entity"
    assert index.resolve("nothing here") is None


def test_wanted_and_path_tricks_stay_inside() -> None:
    index = _index()
    wanted = index.link_target(parse_link("../../etc/passwd"))
    assert wanted.wanted and wanted.src_uri == "concepts/wanted/etc-passwd.md"
    assert ".." not in slugify("../..") and "/" not in slugify("a/../../b")
    renderer = TextRenderer(index)
    out = renderer.html("go [[../../../../etc/passwd]] now", "memory/category/other.md")
    assert 'href="../../concepts/wanted/etc-passwd.html"' in out and "mw-wanted" in out


def test_backlinks_are_collected_with_sentence() -> None:
    index = _index()
    index.scan(
        [
            TextSource(
                "sessions/s1.md",
                "msg-2",
                "Session 1",
                "Intro. The long-term store of the agent is [[记忆库]], in five layers. End.",
            )
        ]
    )
    store = index.resolve("长期记忆库")
    assert [(b.src_uri, b.anchor, b.sentence) for b in store.backlinks] == [
        ("sessions/s1.md", "msg-2", "The long-term store of the agent is [[记忆库]], in five layers.")
    ]


def test_heading_links_use_rendered_anchor() -> None:
    index = _index()
    renderer = TextRenderer(index)
    body = renderer.html(index.resolve("长期记忆库").wiki.body, "concepts/memory-store.md")
    assert '<h2 id="五层-the-five-layers">' in body
    link = renderer.html("[[记忆库#五层 / The five layers|layers]]", "persona.md")
    assert 'href="concepts/memory-store.html#五层-the-five-layers"' in link


def test_hostile_text_is_inert() -> None:
    renderer = TextRenderer(_index())
    text = (
        "<script>alert(1)</script> <img src=x onerror=alert(1)> [click](javascript:alert(1)) "
        "<javascript:alert(1)> ![x](http://evil.example/x.png) [ok](https://example.com)"
    )
    out = renderer.html(text, "index.md") + renderer.inline(text, "index.md")
    assert "<script" not in out and "<img" not in out and "<a" not in out
    assert "&lt;script&gt;" in out and "onerror=alert(1)" in out  # shown, as text
    assert 'href="javascript' not in out and "src=" not in out.replace("&lt;img src=x", "")


def test_md_esc_neutralises_markdown() -> None:
    out = md_esc("[click](javascript:alert(1)) <b>x</b> # *y*")
    assert "[" not in out and "<" not in out and "(" not in out and "*" not in out


def test_urls() -> None:
    assert page_url("concepts/a.md") == "concepts/a.html"
    assert page_url("concepts/a.md", True) == "concepts/a/"
    assert page_url("index.md", True) == ""
    assert href("concepts/a.md", "memory/category/x.md", "mem-1") == "../memory/category/x.html#mem-1"
    assert href("concepts/a.md", "concepts/b.md", directory_urls=True) == "../b/"
    assert href("index.md", "audit.md") == "audit.html"
