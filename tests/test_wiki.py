"""The store's own Markdown pages: frontmatter as editors really write it (CRLF, BOM, empty), bad pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwiki.errors import InputFormatError
from memwiki.layers.wiki import iter_wiki_pages, page_files, parse_page


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: 张三\naliases: [老张]\ntags: [人物]\n---\n正文",
        "---\r\ntitle: 张三\r\naliases: [老张]\r\ntags: [人物]\r\n---\r\n正文",
        "\ufeff---\ntitle: 张三\naliases: 老张\ntags: 人物\n---\n\n正文",
    ],
)
def test_frontmatter_survives_line_endings_and_bom(text: str) -> None:
    page = parse_page(text, "people/zhang.md")
    assert (page.title, page.aliases, page.tags, page.body) == ("张三", ("老张",), ("人物",), "正文")


def test_title_falls_back_to_heading_then_file_name() -> None:
    assert parse_page("---\n---\n# 向量库\ntext", "v.md").title == "向量库"
    assert parse_page("no heading", "dir/chroma-notes.md").title == "chroma-notes"


def test_bad_pages_are_named_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("---\ntitle: Good\n---\nok", encoding="utf-8")
    (tmp_path / "bad.md").write_text("---\ntitle: [unclosed\n---\nbody", encoding="utf-8")
    (tmp_path / "list.md").write_text("---\n- a\n- b\n---\nbody", encoding="utf-8")
    (tmp_path / "binary.md").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InputFormatError, match="bad.md: invalid frontmatter"):
        parse_page((tmp_path / "bad.md").read_text(encoding="utf-8"), "bad.md")
    with pytest.warns(UserWarning) as caught:
        pages = list(iter_wiki_pages(tmp_path))
    assert [p.title for p in pages] == ["Good"]
    assert sorted(str(w.message).split(":")[0].rsplit("/", 1)[-1] for w in caught) == ["bad.md", "binary.md", "list.md"]


def test_page_files_lists_the_pages_in_path_order_without_links(tmp_path: Path) -> None:
    for rel in ("a/b.md", "a-b.md", "a-b/c.md", ".hidden/z.md", ".md", "Z.md", "notes.MD", "real.txt", "d.md/x.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("# page\n", encoding="utf-8")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.txt")
    (tmp_path / "linked").symlink_to(tmp_path / "a", target_is_directory=True)
    listed = [rel for rel, _ in page_files(tmp_path)]
    # what pathlib's rglob gives, ordered as pathlib orders paths (folder by folder: a/b.md before a-b.md)
    assert listed == [".hidden/z.md", ".md", "Z.md", "a/b.md", "a-b/c.md", "a-b.md"]
    assert [p.path for p in iter_wiki_pages(tmp_path)] == listed
