"""Secrets of 24 kinds planted in 29 fields of every layer of a real store: a default (public) build of the
real MkDocs site publishes none of them, in any spelling; the private profile publishes them (so the check
can fail); the privacy report counts what was withheld, and a strict build fails on a leak the gate did not see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memwiki.site.gate import scan as site_scan
from memwiki.site.gate.detect import Detectors
from memwiki.site.gate.detect.detectors import _views
from memwiki.site.gate.scan import SiteScan
from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.store.store import Store
from tests.canaries import FIELDS, KINDS, found_in, plant
from tests.test_site import build_site


@pytest.fixture(scope="module")
def canary_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("canaries")
    with Store.init(root / "store") as store:
        planted = plant(store)
    return root, planted


@pytest.fixture(scope="module")
def public_site(canary_store: tuple[Path, list]) -> Path:
    root, _ = canary_store
    # strict: the final scan finds nothing either (no label, cut label or slugged label taken for a secret)
    _, error = build_site(root / "public", root / "cache-public", strict=True, store=str(root / "store"), demo_src=None)
    assert error is None, error
    return root / "public"


def test_enough_canaries_of_enough_kinds_in_enough_fields(canary_store: tuple[Path, list]) -> None:
    _, planted = canary_store
    assert len(planted) >= 400
    assert len({c.kind for c in planted}) >= 18 and len(KINDS) >= 18
    assert len({c.field for c in planted}) == len(FIELDS) >= 25


def test_public_build_publishes_no_canary(public_site: Path, canary_store: tuple[Path, list]) -> None:
    _, planted = canary_store
    leaks = found_in(public_site, planted)
    assert not leaks, [(c.kind, c.field, where) for c, where in leaks[:20]]


def test_private_profile_publishes_them(canary_store: tuple[Path, list]) -> None:
    """The same store built with the private profile shows the canaries: the check above can fail."""
    root, planted = canary_store
    _, error = build_site(
        root / "private", root / "cache-private", store=str(root / "store"), demo_src=None, profile="private"
    )
    assert error is None, error
    shown = found_in(root / "private", planted)
    assert len(shown) >= len(planted) * 0.75, len(shown)  # (some fields, e.g. message ids, are on no page)
    assert {c.kind for c, _ in shown} == set(KINDS)
    home = (root / "private" / "privacy.html").read_text(encoding="utf-8")
    assert "private</strong> profile" in home


def test_privacy_report_counts_without_values(public_site: Path, canary_store: tuple[Path, list]) -> None:
    _, planted = canary_store
    report = (public_site / "privacy.html").read_text(encoding="utf-8")
    assert "public</strong> profile" in report
    for kind in ("openai key", "password", "email", "phone", "private ip"):
        assert f"<th>{kind}</th>" in report
    audit = (public_site / "audit.html").read_text(encoding="utf-8")
    assert "Withheld from this site" in audit and "<th>openai key</th>" in audit
    assert not found_in(public_site, planted)


def test_site_scan_finds_a_leak_the_gate_never_saw(public_site: Path, tmp_path: Path) -> None:
    """A secret written into the site behind the gate's back is found by the final scan, by file and line."""
    page = public_site / "index.html"
    leaked = tmp_path / "site"
    leaked.mkdir()
    (leaked / "index.html").write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    (leaked / "extra.js").write_text('var x = "mail \\u0061lice@mailbox.org";\n', encoding="utf-8")
    (leaked / "page.html").write_text("<p>root&#64;db.corp.internal and 密码是hunter2xyz</p>", encoding="utf-8")
    leaks = SiteScan(Detectors(library=False), []).scan(leaked)
    kinds = {(leak.path, leak.kind) for leak in leaks}
    assert ("extra.js", "email") in kinds
    assert ("page.html", "password") in kinds and ("page.html", "email") in kinds
    assert not [leak for leak in leaks if leak.path == "index.html"]


def test_site_scan_rereads_only_what_changed_and_skips_vector_slices(tmp_path: Path) -> None:
    """A second scan with a cache reads a rewritten file's new lines only, and still finds a secret among them;
    a file the build names as numbers only (the search's binary vector slices) is never read."""
    site_dir, cache = tmp_path / "site", tmp_path / "scan.cache"
    site_dir.mkdir()
    rows = [f"<p>note {n}: the NAS keeps snapshots for {n} days</p>" for n in range(200)]
    (site_dir / "list.html").write_text("\n".join(rows), encoding="utf-8")
    slice_name = "assets/memwiki/search/vectors/0123.bin"
    (site_dir / slice_name).parent.mkdir(parents=True)
    (site_dir / slice_name).write_bytes(b"password=hunter2xyz9 " + bytes(range(256)))  # bytes that read as a secret

    def scan() -> tuple[SiteScan, list]:
        scanner = SiteScan(Detectors(library=False), [], cache=cache, numbers={slice_name})
        return scanner, scanner.scan(site_dir)

    first, leaks = scan()
    assert leaks == [] and first.skipped_numbers == 1
    assert first.read_lines == len(rows)
    rows.insert(100, "<p>new: 密码是hunter2xyz</p>")
    (site_dir / "list.html").write_text("\n".join(rows), encoding="utf-8")
    second, leaks = scan()
    assert [(leak.path, leak.kind, leak.line) for leak in leaks] == [("list.html", "password", 101)]
    assert second.read_lines == 1  # the new line only
    assert SiteScan(Detectors(library=False), []).scan(site_dir)  # without `numbers` the slice is read


def test_the_search_index_lines_found_clean_are_not_read_again(tmp_path: Path) -> None:
    """MkDocs' search index is rewritten whole by a rebuild: its strings the last scan found clean are not read
    again, a new entry's are and its secret is found; a secret this build redacted is looked for in every line."""
    site_dir, cache = tmp_path / "site", tmp_path / "scan.cache"
    index = site_dir / "search" / "search_index.json"
    index.parent.mkdir(parents=True)
    docs = [
        {"location": f"page-{n}.html", "title": f"Page {n}", "text": f"the NAS keeps {n} snapshots"} for n in range(50)
    ]

    def scan(known: tuple[str, ...] = ()) -> tuple[SiteScan, list]:
        index.write_text(json.dumps({"config": {}, "docs": docs}), encoding="utf-8")
        scanner = SiteScan(Detectors(library=False), [], cache=cache, known=known)
        return scanner, scanner.scan(site_dir)

    first, leaks = scan()
    assert leaks == [] and first.read_lines > 150
    docs.append({"location": "new.html", "title": "New", "text": "密码是hunter2xyz"})
    second, leaks = scan()
    assert [leak.kind for leak in leaks] == ["password"] and second.read_lines == 3  # the new entry's strings
    docs.pop()
    docs[7]["text"] += " (kept by lin.xiao.secret@mailbox.org)"  # a secret redacted in this build, seen elsewhere
    third, leaks = scan(known=("the NAS keeps 3 snapshots",))
    assert sorted(leak.kind for leak in leaks) == ["email", "redacted secret"]


def test_the_search_data_is_read_once_with_its_strings_as_the_browser_reads_them(tmp_path: Path) -> None:
    """The site search's data (`window.X = JSON`, a row a line) is read with each string's escapes decoded where it
    stands: a key block written with `\\n` escapes is found as the key it is, a file name and the keys around it are
    no token wrapped over lines, and the text needs no second reading in a view of JSON written as text."""
    site_dir = tmp_path / "site"
    data = site_dir / "assets" / "memwiki" / "search" / "search-data.js"
    data.parent.mkdir(parents=True)
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----"
    rows = [["mem-1", f"note {n}: the NAS keeps snapshots for {n} days\nand prunes them weekly"] for n in range(37)]
    rows += [["mem-2", 'a "quoted" word'], ["mem-3", "a literal \\n in C"], ["mem-4", "路径 C:\\data\\新建"]]
    value = {"slices": [["5022d23d864fb3a9b246.bin", 1024]], "entity": rows}
    written = json.dumps(value, ensure_ascii=False).replace("], [", "],\n[")  # (a row a line)
    data.write_text(f"window.MemwikiSearchData = {written};\n", encoding="utf-8")
    scanner = SiteScan(Detectors(library=False), [], generated={str(data.relative_to(site_dir))})
    scanner.net = Detectors(library=False, net=True)
    assert scanner.scan(site_dir) == []
    assert scanner.read_lines == len(data.read_text(encoding="utf-8").splitlines()) == 40  # (each row once)
    read = [site_scan._script_line(line) for line in data.read_text(encoding="utf-8").splitlines()]
    assert "\n" in read[1] and _views("\n".join(read[:37])) == []  # (a literal `\\n`, in row 38, is read as JSON too)
    assert read[37:39] == ['["mem-2", "a "quoted" word"],', '["mem-3", "a literal \\n in C"],']
    rows[7][1] = f"the deploy key: {key}"
    written = json.dumps(value, ensure_ascii=False).replace("], [", "],\n[")
    data.write_text(f"window.MemwikiSearchData = {written};\n", encoding="utf-8")
    assert [leak.kind for leak in scanner.scan(site_dir)] == ["private key"]


def test_strict_build_fails_on_a_secret_in_a_hand_written_page(tmp_path: Path) -> None:
    """A secret in a page the gate never sees (docs_dir) fails `mkdocs build --strict`, naming file and kind."""
    from tests.test_site import ROOT

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "about.md").write_text((ROOT / "site_src" / "about.md").read_text(encoding="utf-8"), encoding="utf-8")
    (docs / "notes.md").write_text("# Notes\n\nThe staging password is Wq8-zLx3-pT9!\n", encoding="utf-8")
    _, error = build_site(tmp_path / "site", tmp_path / "cache", strict=True, docs_dir=str(docs))
    assert error is not None and "strict" in str(error)
    (docs / "notes.md").write_text("# Notes\n\nNothing secret here.\n", encoding="utf-8")
    _, error = build_site(tmp_path / "site", tmp_path / "cache", strict=True, docs_dir=str(docs))
    assert error is None, error


def test_no_output_name_is_made_from_a_secret(public_site: Path, canary_store: tuple[Path, list]) -> None:
    """File names and URLs are derived from gated text only: no canary, in any spelling or as a 12-character
    fragment of a long secret, is in the path of any file of the public site."""
    from tests.canaries import spellings

    _, planted = canary_store
    paths = "\n".join(p.relative_to(public_site).as_posix().lower() for p in public_site.rglob("*"))
    named = []
    for canary in planted:
        forms = {f.lower() for f in spellings(canary.secret)}
        secret = canary.secret.lower()
        if len(secret) >= 16:
            forms |= {secret[i : i + 12] for i in range(len(secret) - 11) if secret[i : i + 12].strip()}
        if any(f in paths for f in forms):
            named.append((canary.kind, canary.field))
    assert not named, named[:20]


def test_a_redacted_quoted_password_passes_a_strict_build(tmp_path: Path) -> None:
    """The final scan does not take the gate's own label for a secret, in a page or JSON-escaped in the
    search data: a store holding a quoted password builds under `--strict`, and the password is not in it."""
    secret = "Xk29!vQz;pL,7w"
    with Store.init(tmp_path / "store") as store:
        store.remember(f'[env] db: MYSQL_ROOT_PASSWORD: "{secret}" on the staging box', "memory")
        store.sessions.add_session("s-1", title="db setup", source="cli")
        store.sessions.add_message("s-1", "tool", f'{{"env": {{"MYSQL_ROOT_PASSWORD": "{secret}"}}}}', tool_name="x")
    _, error = build_site(
        tmp_path / "site", tmp_path / "cache", strict=True, store=str(tmp_path / "store"), demo_src=None
    )
    assert error is None, error
    text = "".join(p.read_text("utf-8", "replace") for p in (tmp_path / "site").rglob("*") if p.is_file())
    assert secret not in text and "[redacted: password" in text


def test_a_large_site_is_scanned_in_two_processes_and_finds_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every other file read in a forked process (BuildSpeed.apart): the same findings, files and lines as one
    process, and the clean lines of both remembered for the next build."""
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    for n in range(60):
        secret = f"<p>key ghp_{n:02d}Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7C</p>" if n % 7 == 0 else ""
        (site_dir / f"p{n:02d}.html").write_text(f"<p>note {n}</p>\n<p>shared line</p>\n{secret}", encoding="utf-8")
    monkeypatch.setattr(site_scan, "PARALLEL_FILES", 10)
    one = SiteScan(Detectors(library=False), [])
    alone = one.scan(site_dir)
    speed = BuildSpeed(may_fork=True)
    two = SiteScan(Detectors(library=False), [], cache=tmp_path / "scan.cache")
    both = two.scan(site_dir, speed.apart)
    assert [p.exitcode for p in speed.forked] == [0]  # the other half was read in a forked process
    assert sorted(leak.row for leak in both) == sorted(leak.row for leak in alone) and len(alone) == 9
    assert two.read_files == one.read_files == 60
    assert two._clean_now >= {site_scan._line_key(b"f", "<p>note 1</p>"), site_scan._line_key(b"f", "<p>note 2</p>")}
