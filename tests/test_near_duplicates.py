"""Near-duplicate memories on the audit page (issue 11): an agent that logs the same thing in a loop gives one
cluster, shown once with a capped list of members; every audit list is capped and paginated, and says how many
it left out. Real store (Chroma, USE embedder, SQLite), real page builders."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from memwiki.site.builders import audit
from memwiki.site.model.build_context import BuildContext
from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.source import Memory
from memwiki.store.store import Store

LOOPED = 750


def looped(i: int, rng: random.Random) -> Memory:
    text = (
        f"Checked the deploy queue again at 2026-03-{1 + i % 28:02d} {i % 24:02d}:{(7 * i) % 60:02d}: "
        f"{rng.randint(2, 4)} jobs still waiting on the build runner, nothing new to report."
    )
    return Memory(f"loop-{i:04d}", text, category="project")


DISTINCT = [
    Memory("tea", "Alice drinks green tea every morning before work."),
    Memory("blog", "The user's blog is built with Hugo and hosted on Cloudflare Pages."),
    Memory("nas-1", "The NAS backup runs every Sunday at 03:00 and keeps eight weeks."),
    Memory("nas-2", "The NAS backup runs every Sunday at 03:00 and keeps eight weeks!"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    rng = random.Random(5)
    root = tmp_path_factory.mktemp("neardup") / "s"
    with Store.init(root) as st:
        st.semantic.upsert([looped(i, rng) for i in range(LOOPED)] + DISTINCT)
    return Store.open(root)


def test_union_find_gives_the_connected_components() -> None:
    rng = np.random.default_rng(1)
    n = 400
    a, b = rng.integers(0, n, 300), rng.integers(0, n, 300)
    keep = a < b
    a, b = a[keep], b[keep]
    score = rng.random(a.size)
    batches = [(a[i : i + 37], b[i : i + 37], score[i : i + 37]) for i in range(0, a.size, 37)]
    got = audit._clusters(n, iter(batches))
    neighbours: dict[int, set[int]] = {}
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        neighbours.setdefault(x, set()).add(y)
        neighbours.setdefault(y, set()).add(x)
    seen: set[int] = set()
    want = []
    for start in sorted(neighbours):
        if start in seen:
            continue
        todo, part = [start], set()
        while todo:
            node = todo.pop()
            if node not in part:
                part.add(node)
                todo += neighbours[node] - part
        seen |= part
        best = max(s for x, y, s in zip(a, b, score, strict=True) if x in part)
        want.append((sorted(part), float(best)))
    assert sorted(got) == sorted(want)
    assert [len(m) for m, _ in got] == sorted((len(m) for m, _ in got), reverse=True)  # biggest first


def test_a_looping_agent_is_one_cluster_shown_once_on_a_small_page(store: Store, tmp_path: Path) -> None:
    ctx = BuildContext(store.reader(), speed=BuildSpeed.at(tmp_path / "cache"))
    pages, _ = audit.build(ctx)
    clusters = ctx.part(audit.Audit).clusters
    assert [len(c.ids) for c in clusters] == [LOOPED, 2]
    assert clusters[1].ids == ("nas-1", "nas-2") and clusters[1].score >= audit.DUPLICATE_COSINE
    assert set(clusters[0].ids) == {f"loop-{i:04d}" for i in range(LOOPED)}
    duplicates = [f for f in audit.findings(ctx) if f.kind == "duplicates"]
    assert len(duplicates) == 2  # one finding per cluster (it was one per pair: ~190k of them)
    assert f"≈ … {LOOPED - audit.MEMBERS_SHOWN:,} more not shown ({LOOPED:,} memories" in duplicates[0].message
    assert duplicates[1].message.startswith("nas-1 ≈ nas-2 (")

    page = pages[0].markdown
    assert pages[0].src_uri == "audit.md" and len(pages) == 1  # two clusters: nothing to paginate
    assert len(page.encode()) < 50_000  # was 20.9 MB for 745 such memories
    section = page[page.index("## Near-duplicate memories") : page.index("## Hot memory over threshold")]
    assert section.count('<li class="mw-finding"') == 2  # each cluster once, its first texts side by side
    assert (
        section.count("<code>loop-") == audit.MEMBERS_SHOWN
        and f"{LOOPED - audit.MEMBERS_SHOWN:,} more not shown" in section
    )
    assert "memory/category/project" in section  # members link to their cards
    (flag,) = audit.flags(ctx).memories["loop-0500"]  # every member's card is flagged, named by a few others
    assert flag.uri == "audit.md" and f'id="{flag.anchor}"' in section and f"and {LOOPED - 4:,} more" in flag.title

    again = BuildContext(store.reader(), speed=BuildSpeed.at(tmp_path / "cache"))
    assert audit.near_duplicates(again, list(store.reader().memories()))[0] == clusters  # from the cache
    assert (tmp_path / "cache" / audit.DUPLICATES).stat().st_size < 50_000


def test_every_audit_list_is_capped_and_paginated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit, "LISTED", 20)
    monkeypatch.setattr(audit, "PAGES", 3)
    with Store.init(tmp_path / "s") as st:
        for i in range(70):
            (st.wiki_dir / f"page-{i}.md").write_text(f"# Page {i}\n\nSee [[Missing topic {i}]].\n", encoding="utf-8")
        pages, _ = audit.build(BuildContext(st.reader(), speed=BuildSpeed.at(tmp_path / "cache")))
    by_uri = {p.src_uri: p.markdown for p in pages}
    follow_on = [f"audit/{kind}{suffix}.md" for kind in ("orphans", "wanted") for suffix in ("", "-2", "-3")]
    assert sorted(by_uri) == sorted(["audit.md", *follow_on])  # 70 pages nothing links to: 70 orphans too
    main = by_uri["audit.md"]
    wanted = main[main.index("## Wanted concepts") : main.index("## Orphan concepts")]
    assert wanted.count("<li>") == 20
    assert "The first 20 of 70" in wanted and "the first 60 on 3 pages" in wanted and "(10 more not listed)" in wanted
    assert [by_uri[f"audit/wanted{s}.md"].count("<li>") for s in ("", "-2", "-3")] == [20, 20, 20]
    assert "41–60 of 70" in by_uri["audit/wanted-3.md"] and "10 more not listed." in by_uri["audit/wanted-3.md"]
    assert "wanted-2.html" in by_uri["audit/wanted.md"]  # the pager
    assert "Missing topic" in by_uri["audit/wanted-2.md"]


def test_a_changed_memory_is_compared_with_all_and_the_clusters_are_those_of_a_fresh_build(tmp_path: Path) -> None:
    """The clusters are kept with what each memory was embedded from: after a memory joins a cluster, another
    leaves one (its text rewritten) and one is deleted, a build with the kept clusters finds exactly what a build
    with no cache finds, comparing only the changed memories with all (not every pair)."""
    rng = random.Random(9)
    with Store.init(tmp_path / "s") as st:
        st.semantic.upsert([looped(i, rng) for i in range(40)] + DISTINCT)
        reader = st.reader()
        kept = BuildSpeed.at(tmp_path / "kept")
        audit.near_duplicates(BuildContext(reader, speed=kept), list(reader.memories()))
        st.semantic.upsert([Memory("nas-3", DISTINCT[2].text + " ", category="other")])  # joins nas-1 ≈ nas-2
        st.semantic.upsert([Memory("loop-0003", "The garden hose leaks at the tap by the shed.", "other")])
        st.semantic.delete(["nas-2"])
        memories = list(reader.memories())
        compared: list[int] = []
        pairs = audit._cosine_pairs
        audit._cosine_pairs = lambda v: compared.append(len(v)) or pairs(v)  # type: ignore[assignment]
        try:
            incremental = audit.near_duplicates(BuildContext(reader, speed=BuildSpeed.at(tmp_path / "kept")), memories)
        finally:
            audit._cosine_pairs = pairs  # type: ignore[assignment]
        fresh = audit.near_duplicates(BuildContext(reader, speed=BuildSpeed.at(tmp_path / "fresh")), memories)
    assert incremental == fresh
    assert [len(c.ids) for c in fresh[0]] == [39, 2] and {"nas-1", "nas-3"} == set(fresh[0][1].ids)
    assert compared == [39]  # the loop's cluster, which lost a member, among itself; nothing compared all with all
