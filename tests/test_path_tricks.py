"""Path tricks in a real build: names with `..`, absolute paths, control characters, NUL, 500 characters,
reserved names and names that collide after slugging. Every output stays inside site/, every session gets a
page of its own, every memory is on its wing / room page, and the same store always gives the same URLs."""

from __future__ import annotations

import html
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from memwiki.source import Memory
from memwiki.store.store import Store
from tests.hostile import plant_tricks, trick_names
from tests.test_site import build_site

SESSION_MESSAGE = re.compile(r"trick message #(\d+) of its session")
MEMORY_TEXT = re.compile(r"trick memory #(\d+) in (?:wing|room)")
CARD_ID = re.compile(r'<article class="mw-memory" id="([^"]+)"')
# Links from L2 memory text to concepts with no page: each gets a wanted stub, named from the link
LINK_TRICKS = (
    "../../etc/shadow",
    "/var/log/auth.log",
    "..\\..\\windows\\win.ini",
    "%2e%2e%2f%2e%2e%2fetc%2fhosts",
    "../..",
)


@pytest.fixture(scope="module")
def tricks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """The trick store built into a site once: (root, site, generated pages by src_uri)."""
    root = tmp_path_factory.mktemp("tricks")
    plant_tricks(root / "store")
    with Store.open(root / "store") as store:
        store.semantic.add(
            [
                Memory(id=f"link-trick-{i}", text=f"link trick #{i}: see [[{name}]]")
                for i, name in enumerate(LINK_TRICKS)
            ]
        )
    before = {p.name for p in root.iterdir()}
    built, error = build_site(root / "site", root / "cache", store=str(root / "store"), demo_src=None)
    assert error is None, error
    assert {p.name for p in root.iterdir()} - before == {"site", "cache"}  # nothing written beside them
    return root, root / "site", built.generated


def _pages(site: Path, folder: str) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in sorted((site / folder).rglob("*.html"))
    }


def test_enough_trick_names() -> None:
    assert len(trick_names()) >= 60


def test_every_output_stays_inside_site(tricks: tuple[Path, Path, dict]) -> None:
    root, site, generated = tricks
    inside = site.resolve()
    for path in site.rglob("*"):
        assert inside in path.resolve().parents, path
        assert not path.is_symlink(), path
        assert len(path.name.encode()) <= 255
    for uri in generated:
        assert not uri.startswith(("/", "\\")) and ".." not in uri.split("/"), uri
        assert not re.search(r"[\x00-\x1f\x7f\\:]", uri), repr(uri)


def test_every_session_has_its_own_page(tricks: tuple[Path, Path, dict]) -> None:
    _, site, _ = tricks
    names = trick_names()
    pages = _pages(site, "sessions")
    index = pages.pop("sessions/index.html")
    assert f"{len(names):,} sessions, newest first" in index  # the id `index` did not take the index's place
    found: Counter[int] = Counter()
    for uri, text in pages.items():
        own = {int(n) for n in SESSION_MESSAGE.findall(text)}
        assert len(own) <= 1, f"{uri} shows the messages of sessions {sorted(own)}"
        found.update(own)
    missing = [names[i] for i in range(len(names)) if found[i] != 1]
    print(f"trick sessions: {len(names)}, without a page of their own: {len(missing)}")
    assert missing == [], missing
    hrefs = re.findall(r'<h3><a href="([^"]+)">trick session #\d+</a></h3>', index)
    assert len(hrefs) == len(set(hrefs)) == len(names)
    assert all((site / "sessions" / html.unescape(h)).is_file() for h in hrefs)


def test_every_memory_is_on_its_wing_and_room_page(tricks: tuple[Path, Path, dict]) -> None:
    root, site, _ = tricks
    with Store.open(root / "store") as store:
        memories = list(store.semantic.all())
    grouped = [m for m in memories if m.wing or m.room]
    pages = _pages(site, "memory/wing")
    seen: Counter[str] = Counter()
    for uri, text in pages.items():
        shown = MEMORY_TEXT.findall(text)
        groups = {(m.wing, m.room) for m in grouped if MEMORY_TEXT.search(m.text).group(1) in shown}
        assert len(groups) <= 1, f"{uri} mixes the memories of {len(groups)} wing / room pairs"
        seen.update(shown)
    missing = [m.id for m in grouped if seen[MEMORY_TEXT.search(m.text).group(1)] != 1]
    print(f"trick memories in wings / rooms: {len(grouped)}, missing from their page: {len(missing)}")
    assert missing == [], missing
    # each memory's card has an anchor of its own, on every page it is listed on
    anchors = Counter(a for text in _pages(site, "memory/category").values() for a in CARD_ID.findall(text))
    assert len(anchors) == len(memories) and max(anchors.values()) == 1, anchors.most_common(3)


def test_wanted_stubs_of_trick_links_stay_inside_and_list_their_memory(tricks: tuple[Path, Path, dict]) -> None:
    _, site, _ = tricks
    wanted_by: dict[int, list[str]] = {}
    for page in sorted((site / "concepts" / "wanted").glob("*.html")):  # (every output inside site/: see above)
        for i in range(len(LINK_TRICKS)):
            if f"L2 memory link-trick-{i}<" in page.read_text(encoding="utf-8"):
                wanted_by.setdefault(i, []).append(page.name)
    assert {i: len(uris) for i, uris in wanted_by.items()} == dict.fromkeys(range(len(LINK_TRICKS)), 1), wanted_by
    assert len({uris[0] for uris in wanted_by.values()}) == len(LINK_TRICKS)  # one stub each, none shared


def test_the_same_store_gives_the_same_urls(tricks: tuple[Path, Path, dict], tmp_path: Path) -> None:
    root, site, generated = tricks
    store = tmp_path / "store"
    shutil.copytree(root / "store", store)
    again, error = build_site(tmp_path / "site", tmp_path / "cache", store=str(store), demo_src=None)
    assert error is None, error
    assert sorted(again.generated) == sorted(generated)
    for uri in ("sessions/index.md", "memory/index.md"):
        assert (tmp_path / "site" / uri.replace(".md", ".html")).read_bytes() == (
            site / uri.replace(".md", ".html")
        ).read_bytes()
