"""The site scan's net over what memwiki generated: each piece of text read once whatever its markup, tags read
for the values a record may put in them, a page's own markup not taken for text."""

from __future__ import annotations

import json
from pathlib import Path

from memwiki.site.detect import Detectors
from memwiki.site.site_scan import SiteScan, same_text

TOKEN = "Xq7ZpLm2Vb9kR4tW8yN3cF6hJ1dS5"  # made: no provider names it
SENTENCES = [f"The NAS in room {n} keeps its snapshots for {n} days." for n in range(40)]


def _scan(site_dir: Path) -> tuple[SiteScan, list[tuple[str, str, int]]]:
    generated = {p.relative_to(site_dir).as_posix() for p in site_dir.rglob("*") if p.is_file()}
    scan = SiteScan(Detectors(library=False), [], generated=generated, net=Detectors(library=False, net=True))
    return scan, sorted(leak.row for leak in scan.scan(site_dir))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_sentence_is_read_once_whatever_holds_it(tmp_path: Path) -> None:
    """A memory's sentences on its page, quoted by another page with links inside, and in the search data as
    escaped JSON are read once; a token that only one copy holds (a slug in a link, a new sentence) is found."""
    site_dir = tmp_path / "site"
    text = " ".join(SENTENCES)
    _write(site_dir / "memory.html", "".join(f'<p class="mw-text">{s}</p>\n' for s in SENTENCES))
    quoted = " ".join(s.replace("NAS", '<a class="mw-wikilink" href="nas.html">NAS</a>') for s in SENTENCES)
    _write(site_dir / "concepts" / "nas.html", f"<blockquote>{quoted}</blockquote>\n")
    data = {"rows": [["memory.html", text.replace(".", ".\n")]]}
    _write(site_dir / "assets" / "search-data.js", "window.MemwikiSearchData = " + json.dumps(data) + ";\n")
    scan, leaks = _scan(site_dir)
    assert leaks == []
    data_alone, _ = _scan(_data_only(site_dir, tmp_path / "data-only"))
    assert scan.read_lines == data_alone.read_lines + 1  # the pages add only the quote's links

    _write(site_dir / "concepts" / "index.html", f'<ul><li><a href="nas-{TOKEN}.html">NAS</a></li></ul>\n')
    data["rows"].append(["new.html", SENTENCES[0] + " Its key is " + TOKEN])
    _write(site_dir / "assets" / "search-data.js", "window.MemwikiSearchData = " + json.dumps(data) + ";\n")
    _, leaks = _scan(site_dir)
    assert [(path, kind) for kind, path, _ in leaks] == [
        ("assets/search-data.js", "token"),
        ("concepts/index.html", "token"),
    ]


def _data_only(site_dir: Path, to: Path) -> Path:
    _write(to / "assets" / "search-data.js", (site_dir / "assets" / "search-data.js").read_text(encoding="utf-8"))
    return to


def test_a_page_is_read_for_its_text_and_values_not_its_own_markup(tmp_path: Path) -> None:
    """Tag names, classes and drawing paths are the page's own; an attribute's value (a title, an id, `data-*`) and
    a quoted password in one are read as the text is."""
    site_dir = tmp_path / "site"
    own = '<svg viewBox="0 0 24 24"><path d="M3 7h5l2-2h11v14H3Zm2 2v8h14V7h-8.5l-2 2Z"/></svg>'
    _write(site_dir / "page.html", f'<p class="md-typeset__scrollwrap mw-row-Kd8RmT3xQw7ZpLv2Nb5Y">{own} a note</p>\n')
    _, leaks = _scan(site_dir)
    assert leaks == []
    _write(site_dir / "page.html", f'<p data-note="{TOKEN}">a note</p>\n<abbr title="\'8ECa(#!LRGfHp\'">pw</abbr>\n')
    _, leaks = _scan(site_dir)
    assert sorted((line, kind) for kind, _, line in leaks) == [(1, "token"), (2, "password")]


def test_same_text_parts_words_as_written() -> None:
    """Layout is not text: spaces, zero-width spaces and a space before a Chinese mark do not make two pieces
    differ; a space between two words does (`abcd efgh ijkl mnop` is an app password, `abcdefghijklmnop` no)."""
    assert same_text("  concept 3844 ，导入\u200b接口。 ") == same_text("concept 3844，导入接口。")
    assert same_text("abcd efgh ijkl mnop") != same_text("abcdefghijklmnop")


def test_a_rescan_reads_only_new_lines_and_never_trusts_a_line_sharing_a_finding(tmp_path: Path) -> None:
    """With the last scan remembered, a generated file rewritten whole is read for its new lines only; a line
    whose sentence the net found a token in elsewhere is not remembered clean, so it is read when that other
    copy is gone."""
    site_dir, cache = tmp_path / "site", tmp_path / "scan.cache"
    rows = [f"<p>{s}</p>" for s in SENTENCES]
    _write(site_dir / "list.html", "\n".join(rows) + "\n")
    _write(site_dir / "a.html", f"<p>Its key is {TOKEN}. Kept in the vault.</p>\n")
    _write(site_dir / "b.html", f"<p>Moved last week. Its key is {TOKEN}.</p>\n")

    def scan() -> tuple[SiteScan, list[tuple[str, str, int]]]:
        generated = {p.relative_to(site_dir).as_posix() for p in site_dir.rglob("*") if p.is_file()}
        net = Detectors(library=False, net=True)
        scanner = SiteScan(Detectors(library=False), [], cache=cache, generated=generated, net=net)
        return scanner, sorted(leak.row for leak in scanner.scan(site_dir))

    first, leaks = scan()
    assert [(path, kind) for kind, path, _ in leaks] == [("a.html", "token")]  # (b's copy: read once, in a)
    rows.insert(10, "<p>The NAS in the hall keeps nothing.</p>")
    _write(site_dir / "list.html", "\n".join(rows) + "\n")
    (site_dir / "a.html").unlink()
    second, leaks = scan()
    assert [(path, kind) for kind, path, _ in leaks] == [("b.html", "token")]
    assert second.read_lines == 2  # the new row, and b's line


def test_the_search_index_is_read_entry_by_entry_in_any_layout() -> None:
    """MkDocs' index is split into its entries as written (compact, spaced, or with other keys after `docs`), each
    entry exactly the JSON of one document."""
    from memwiki.site.site_scan import _index_entries

    index = {
        "config": {"lang": ["en"]},
        "docs": [{"location": f"p{n}.html", "title": "T", "text": "a"} for n in (1, 2)],
    }
    for text in (json.dumps(index), json.dumps(index, separators=(",", ":")), json.dumps({**index, "after": 1})):
        settings, entries = _index_entries(text)
        assert [json.loads(e) for e in entries] == index["docs"]
        assert settings["config"] == index["config"]
