"""`memwiki` over a real hermes-agent home and a real MemPalace palace, read in place, never written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memwiki.agents.cli import main
from tests.fixture_copies import checksums, copy_fixtures


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_fixtures(tmp_path_factory.mktemp("fx"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def test_recall_and_reads_over_sources_leave_every_byte(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    before = checksums(fixtures)
    src = ("--hermes-home", str(fixtures / "hermes_home"), "--palace", str(fixtures / "mempalace_palace"))

    code, out, _ = run(capsys, *src, "context")
    assert code == 0 and "小赫" in out and "/2,200 chars" in out and "/1,375 chars" in out

    def layers_of(query: str) -> dict[str, list[str]]:
        code, out, _ = run(capsys, *src, "recall", query, "--all-layers", "--json", "-k", "5")
        assert code == 0
        found: dict[str, list[str]] = {}
        for hit in json.loads(out)["hits"]:
            found.setdefault(hit["layer"], []).append(hit["text"])
        return found

    found = layers_of("restic 备份的保留策略改成了什么？")
    assert any("7d/4w/12m" in t for t in found.get("L4", [])), found
    found = layers_of("Who owns data quality and the QARTOD flag rules?")
    assert any("QARTOD" in t for t in found.get("L2", [])), found

    code, out, _ = run(capsys, *src, "session", "search", "保留策略", "--json")
    assert code == 0 and "restic" in json.loads(out)[0]["session"]["title"]
    code, out, _ = run(capsys, *src, "stats", "--json")
    stats = json.loads(out)
    assert stats["L2"]["memories"] == 16 and stats["L3"] == {"entities": 14, "triples": 10, "current": 8, "ended": 2}
    code, out, _ = run(capsys, *src, "stats")
    assert code == 0 and "16 memories" in out and "14 entities, 10 facts (8 current, 2 ended)" in out
    code, _, err = run(capsys, *src, "remember", "x")
    assert code == 2 and "read-only" in err
    assert checksums(fixtures) == before
    assert any((tmp_path / "cache" / "memwiki" / "palaces").iterdir()), "the palace's vectors live in our cache"


def test_sources_from_a_config_file(fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "memwiki.yml"
    config.write_text(f"hermes_home: {fixtures / 'hermes_home'}\n", encoding="utf-8")
    code, out, _ = run(capsys, "--config", str(config), "session", "search", "NXDOMAIN", "--json")
    assert code == 0 and json.loads(out)[0]["session"]["title"] == "Unbound host override NXDOMAIN"
    config.write_text("palace: [not, a, path]\nbogus: 1\n", encoding="utf-8")
    code, _, err = run(capsys, "--config", str(config), "stats")
    assert code == 2 and "memwiki.yml" in err and "expected a mapping" in err


def test_environment_variables_name_the_sources_when_there_is_no_store(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMWIKI_STORE", raising=False)
    monkeypatch.delenv("MEMPALACE_PALACE_PATH", raising=False)
    monkeypatch.setenv("HERMES_HOME", str(fixtures / "hermes_home"))
    code, out, _ = run(capsys, "context")
    assert code == 0 and "小赫" in out
    monkeypatch.delenv("HERMES_HOME")
    code, _, err = run(capsys, "context")
    assert code == 2 and "not a memwiki store" in err


def test_kg_timeline_over_a_palace_shows_the_ended_fact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fixtures = copy_fixtures(tmp_path)
    before = checksums(fixtures)
    code, out, _ = run(capsys, "--palace", str(fixtures / "mempalace_palace"), "kg", "timeline", "tidepool", "--json")
    facts = json.loads(out)
    assert code == 0 and [f["valid_from"] for f in facts] == sorted(f["valid_from"] for f in facts)
    assert any(f["object"] == "timescaledb_2.13" and f["valid_to"] == "2025-07-01" for f in facts)  # ended, kept
    assert checksums(fixtures) == before
