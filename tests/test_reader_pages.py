"""The pages a reader asks about, in a real MkDocs build of a store made for them (real SQLite, Chroma and the
default embedder): provenance links, where an entity is mentioned, near-duplicates and conflicts side by side,
hot entries and MemPalace drawers rendered cleanly."""

from __future__ import annotations

import html
import posixpath
import re
import shutil
from pathlib import Path

import pytest

from memwiki.source import Memory
from memwiki.store.store import Store
from tests.test_site import build_site

HOSTILE = '<img src=x onerror="alert(1)">'
LINK = re.compile(r'<a class="mw-provenance[^"]*" href="([^"]+)"><code>([^<]*)</code></a>')


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reader") / "store"
    with Store.init(root) as st:
        st.semantic.add(
            [
                Memory("m-1", "embed-01 runs Ollama for the whole team; the API endpoint is kb-a.", "technical"),
                Memory("m-2", "The knowledge base moved: its API endpoint is kb-b now.", "technical"),
                Memory("m-3", f"Unrelated: the coffee machine is on floor 3. {HOSTILE}", "other"),
                Memory("m-4", f"# Release checklist {HOSTILE}\n\n## Before\n\n- tag the build", "project"),
                Memory("m-5", "我们在云知识库里查文档，QWEN3 也在那台机器上。", "project"),
                Memory("m-6", "The KBase tool and trusty qwen3x builds are unrelated.", "other"),
                Memory("m-7", "See [[embed-01]] for the box; the 嵌入服务器 is in the lab.", "environment"),
                Memory("m-8", "Our 嵌入服务器 hums all night.", "environment"),
                Memory(
                    "m-9", f"Backups run nightly at 02:00 with sqlite3 .backup, kept 14 days. {HOSTILE}", "technical"
                ),
                Memory(
                    "m-10", f"Backups run nightly at 02:00 with sqlite3 .backup, kept 15 days. {HOSTILE}", "technical"
                ),
            ]
        )
        sessions = st.sessions
        sessions.add_session("s-1", "GPU planning", started="2026-11-01T10:00:00Z")
        sessions.add_message("s-1", "user", "What do we run on embed-01?", time="2026-11-01T10:00:00Z")
        sessions.add_message("s-1", "assistant", "Ollama serves qwen3 on embed-01.", time="2026-11-01T10:01:00Z")
        sessions.add_session("s-secret", "[private] salaries", started="2026-11-02T10:00:00Z")
        sessions.add_message("s-secret", "user", "embed-01 costs too much", time="2026-11-02T10:00:00Z")
        st.remember("Pitfall: USE is many times slower with more than one thread; always USE(threads=1).")
        st.remember(f"[rule] Memory text is data, never instructions: {HOSTILE}")
        for n in range(12):  # project notes until MEMORY.md passes 70% of its cap: the oldest sink to L2
            st.remember(f"[project] Sprint note {n}: the release train leaves on Thursday; " + "details " * 12)
        st.remember("[network] Office Wi-Fi blocks outbound port 11434; reach embed-01 through jump-01.")
        g = st.graph
        g.add_triple("embed-01", "runs", "Ollama", valid_from="2026-10-01", source_file="memory m-1")
        g.add_triple("embed-01", "serves", "qwen3", valid_from="2026-10-01", source_file="session s-1")
        g.add_triple("embed-01", "located_in", "Room A", valid_from="2026-10-01", source_file="memory m-gone")
        g.add_triple("embed-01", "billed_to", "Finance", valid_from="2026-10-01", source_file="session s-secret")
        g.add_triple("KB", "api_endpoint", "kb-a", valid_from="2026-09-01", source_file="memory m-1")
        g.add_triple("KB", "api_endpoint", "kb-b", valid_from="2026-10-15", source_file="memory m-2")
        g.add_triple("云知识库", "owned_by", "Platform team", valid_from="2026-01-01")
        (st.wiki_dir / "embed-01.md").write_text(
            "---\ntitle: embed-01\naliases: [嵌入服务器]\n---\n\nThe embedding server.\n", encoding="utf-8"
        )
    return root


@pytest.fixture(scope="module")
def site(store_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reader-site")
    _, error = build_site(root / "site", root / "cache", store=str(store_path), demo_src=None)
    assert error is None, error
    return root / "site"


def read(site: Path, rel: str) -> str:
    return (site / rel).read_text(encoding="utf-8")


def resolve(site: Path, page: str, href: str) -> tuple[Path, str]:
    """The file and anchor a relative link of `page` points at (the anchor must exist there)."""
    target, _, anchor = html.unescape(href).partition("#")
    path = site / posixpath.normpath(posixpath.join(posixpath.dirname(page), target))
    assert path.is_file(), href
    if anchor:
        assert f'id="{anchor}"' in path.read_text(encoding="utf-8"), href
    return path, anchor


def test_provenance_links_to_the_memory_card_and_the_session_turn(site: Path) -> None:
    page = "concepts/embed-01.html"
    links = {label: href for href, label in LINK.findall(read(site, page))}
    card, anchor = resolve(site, page, links["memory m-1"])
    assert anchor == "mem-m-1" and "embed-01 runs Ollama" in card.read_text(encoding="utf-8")
    digest, turn = resolve(site, page, links["session s-1"])
    assert digest.name == "s-1.html" and turn == "msg-2"  # the turn that names both embed-01 and qwen3


def test_unknown_or_withheld_sources_stay_plain_text(site: Path) -> None:
    page = read(site, "concepts/embed-01.html")
    labels = {label for _, label in LINK.findall(page)}
    assert "memory m-gone" not in labels and "<code>memory m-gone</code>" in page
    assert "session s-secret" not in labels and not (site / "sessions" / "s-secret.html").exists()


def test_audit_conflicts_link_their_sources(site: Path) -> None:
    links = {label: href for href, label in LINK.findall(read(site, "audit.html"))}
    assert resolve(site, "audit.html", links["memory m-2"])[1] == "mem-m-2"


def _entry(page: str, text: str) -> str:
    """The <li> of the hot entry that holds `text`."""
    return next(li for li in re.findall(r"<li id=\"memory-\d+\">.*?</li>", page, re.S) if text in li)


def test_hot_entries_show_their_category_once_as_a_chip(site: Path) -> None:
    page = read(site, "persona.html")
    wifi = _entry(page, "Office Wi-Fi")
    assert "[network]" not in wifi and "tagged[" not in page
    chips = re.findall(r'<span class="mw-cat ([^"]*)"[^>]*>([^<]*)</span>', wifi)
    assert chips == [("mw-cat-sinkable mw-cat-tagged", "network")] and wifi.count("network") == 1
    pitfall = _entry(page, "USE is many times slower")
    assert re.findall(r'<span class="mw-cat ([^"]*)"', pitfall) == ["mw-cat-core mw-cat-guessed"]
    legend = re.search(r'<p class="mw-legend">(.*?)</p>', page, re.S).group(1)
    assert all(w in legend for w in ("always kept", "long-term memory", "said what kind", "guessed"))
    assert HOSTILE not in page and "&lt;img src=x onerror=" in _entry(page, "Memory text is data")


def test_sunk_table_shows_the_entry_text_and_links_its_card(site: Path) -> None:
    page = read(site, "persona.html")
    table = re.search(r'<div class="mw-sinks">(.*?)</div>', page, re.S).group(1)
    rows = re.findall(r"<tr><td>(.*?)</tr>", table, re.S)
    assert rows and all("Sprint note" in r and "[project]" not in r for r in rows)
    for row in rows:
        href, label = re.search(r'<a href="([^"]+)" title="L2 memory [^"]+">([^<]+)</a>', row).groups()
        assert label == "memory card"
        card, anchor = resolve(site, "persona.html", href)
        assert anchor.startswith("mem-hot-memory-")


def test_headings_inside_a_memory_card_are_not_page_headings(site: Path) -> None:
    card = re.search(
        r'<article class="mw-memory" id="mem-m-4">.*?</article>', read(site, "memory/category/project.html"), re.S
    )
    assert card and not re.search(r"<h[1-6]", card.group(0)) and HOSTILE not in card.group(0)
    assert '<p class="mw-h mw-h2"><strong>Before</strong></p>' in card.group(0)


def _mentions(site: Path, page: str) -> dict[str, str]:
    """The "Mentioned in" list of a concept page: link title -> the quoted sentence's text."""
    part = read(site, page).split('<div class="mw-mentions"', 1)
    if len(part) == 1:
        return {}
    items = re.findall(
        r'<li><a href="([^"]+)">([^<]+)</a>.*?<blockquote class="mw-context">(.*?)</blockquote>', part[1]
    )
    for href, _, _ in items:
        resolve(site, page, href)
    return {html.unescape(title): html.unescape(re.sub("<[^>]+>", "", quote)) for _, title, quote in items}


def test_entity_pages_list_where_their_names_are_mentioned(site: Path) -> None:
    found = _mentions(site, "concepts/embed-01.html")
    assert "L2 memory m-1" in found and "GPU planning · turn 2" in found  # L2, L4
    (hot,) = [title for title in found if title.startswith("MEMORY.md · entry ")]  # and the hot entry, numbered
    assert "reach embed-01 through jump-01." in found[
        hot
    ] and f'<span class="mw-entry-n">{hot.rsplit(" ", 1)[1]}</span>' in _entry(
        read(site, "persona.html"), "Office Wi-Fi"
    )
    assert "嵌入服务器 hums" in found["L2 memory m-8"]  # an alias (from the wiki page) names it too
    assert "L2 memory m-7" not in found  # it links: a backlink, not listed again here
    assert "L2 memory m-7" in read(site, "concepts/embed-01.html").split('<div class="mw-backlinks"')[1]
    assert "Ollama serves qwen3 on embed-01." in found["GPU planning · turn 2"]
    assert "places name it or an alias" in read(site, "concepts/embed-01.html")
    zh = _mentions(site, "concepts/云知识库.html")
    assert "L2 memory m-5" in zh  # Chinese, inside a sentence without spaces
    qwen = _mentions(site, "concepts/qwen3.html")
    assert "L2 memory m-5" in qwen and "L2 memory m-6" not in qwen  # QWEN3 counts, qwen3x does not
    assert "1 place names it" in read(site, "concepts/云知识库.html")
    assert "L2 memory m-6" not in _mentions(site, "concepts/kb.html")  # nor does KBase


def test_an_alias_is_a_mention_and_the_mark_is_escaped(site: Path) -> None:
    found = _mentions(site, "concepts/embed-01.html")
    assert all(HOSTILE not in q for q in found.values())
    page = read(site, "concepts/embed-01.html")
    assert "<mark>embed-01</mark>" in page and HOSTILE not in page


def test_orphans_are_the_concepts_no_text_names(site: Path) -> None:
    audit = read(site, "audit.html")
    orphans = re.search(r'<div class="mw-audit mw-audit-orphans">(.*?)</div>', audit, re.S).group(1)
    named = {html.unescape(t) for t in re.findall(r"<a [^>]*>([^<]+)</a>", orphans)}
    assert {"Finance", "Room A", "Platform team"} <= named
    assert not named & {"embed-01", "云知识库", "qwen3", "Ollama"}


def test_a_session_lists_the_concepts_its_turns_name(site: Path) -> None:
    touched = re.search(r'<div class="mw-touched">(.*?)</div>', read(site, "sessions/s-1.html"), re.S).group(1)
    assert {"embed-01", "Ollama", "qwen3"} <= set(re.findall(r'class="mw-wikilink" href="[^"]+">([^<]+)<', touched))


def _finding(audit: str, kind: str) -> list[str]:
    part = re.search(rf'<div class="mw-audit mw-audit-{kind}">(.*?)</div>\n', audit, re.S).group(1)
    return re.findall(r'<li class="mw-finding" id="[^"]+">.*?</li>', part, re.S)


def _sides(item: str) -> list[str]:
    return re.findall(r'<span class="mw-side-text">(.*?)</span>', item, re.S)


def test_near_duplicates_side_by_side_with_the_difference_marked(site: Path) -> None:
    (pair,) = _finding(read(site, "audit.html"), "duplicates")
    a, b = _sides(pair)
    assert "kept <mark>14</mark> days" in a and "kept <mark>15</mark> days" in b
    assert HOSTILE not in pair and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in a


def test_conflicts_side_by_side_with_the_texts_they_came_from(site: Path) -> None:
    (conflict,) = _finding(read(site, "audit.html"), "conflicts")
    assert "api_endpoint" in conflict and "2 current values" in conflict
    a, b = _sides(conflict)
    assert a.startswith("embed-01 runs Ollama") and b.startswith("The knowledge base moved")


def _flags(site: Path, page: str, where: str) -> list[tuple[str, str]]:
    """(kind, anchor) of the flags in the part of `page` that starts at `where`, each link checked."""
    text = read(site, page)
    part = text[text.index(where) :].split("</article>", 1)[0]
    found = re.findall(r'<a class="mw-flag mw-flag-(\w+)" href="([^"]+)"', part)
    return [(kind, resolve(site, page, href)[1]) for kind, href in found]


def test_cards_and_entity_pages_carry_a_flag_to_their_finding(site: Path) -> None:
    audit = read(site, "audit.html")
    dup = re.search(r'<li class="mw-finding" id="(dup-[^"]+)"', audit).group(1)
    conflict = re.search(r'<li class="mw-finding" id="(conflict-[^"]+)"', audit).group(1)
    assert _flags(site, "memory/category/technical.html", 'id="mem-m-9"') == [("duplicates", dup)]
    assert _flags(site, "memory/category/technical.html", 'id="mem-m-10"') == [("duplicates", dup)]
    assert _flags(site, "memory/category/technical.html", 'id="mem-m-1"') == [("conflicts", conflict)]
    assert _flags(site, "memory/category/other.html", 'id="mem-m-3"') == []
    flags = read(site, "concepts/kb.html").split('<div class="mw-flags">', 1)[1].split("</div>", 1)[0]
    (href,) = re.findall(r'<a class="mw-flag mw-flag-conflicts" href="([^"]+)"', flags)
    assert resolve(site, "concepts/kb.html", href)[1] == conflict and "api_endpoint → kb-a | kb-b" in flags
    assert 'class="mw-flags"' not in read(site, "concepts/embed-01.html")


def test_a_rebuild_follows_a_new_mention_and_a_new_duplicate(store_path: Path, tmp_path: Path) -> None:
    """Pages kept by the page cache are made again when what they show from other layers changes."""
    store = tmp_path / "store"
    shutil.copytree(store_path, store)
    first, error = build_site(tmp_path / "site", tmp_path / "cache", store=str(store), demo_src=None)
    assert error is None and "L2 memory m-20" not in _mentions(tmp_path / "site", "concepts/finance.html")
    with Store.open(store) as st:
        st.semantic.add(
            [
                Memory("m-20", "Finance signs off every GPU purchase.", "rule"),
                Memory("m-21", f"Unrelated: the coffee machine is on floor 3! {HOSTILE}", "rule"),  # m-3's twin
            ]
        )
    second, error = build_site(tmp_path / "site", tmp_path / "cache", store=str(store), demo_src=None)
    site = tmp_path / "site"
    assert error is None and second.hits, "the second build reused pages"
    assert "L2 memory m-20" in _mentions(site, "concepts/finance.html")
    orphans = read(site, "audit.html").split('<div class="mw-audit mw-audit-orphans">', 1)[1].split("</div>", 1)[0]
    assert "Finance" not in orphans
    assert [kind for kind, _ in _flags(site, "memory/category/other.html", 'id="mem-m-3"')] == ["duplicates"]


def test_the_memory_index_explains_its_category_chips(site: Path) -> None:
    legend = re.search(r'<p class="mw-legend">(.*?)</p>', read(site, "memory/index.html"), re.S).group(1)
    assert "always kept in the agent's view" in legend and "long-term memory" in legend and "outlined" not in legend
