"""The privacy filter: what it removes reaches no page, asset or search data (builders run on a real store)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memwiki.site.builders import search
from memwiki.site.gate.detect import REDACTED_PREFIX
from memwiki.site.gate.filter import PrivacyFilter, PrivacyRules
from memwiki.site.model.build_context import BuildContext
from memwiki.site.pipeline import build_all
from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.source import Memory
from memwiki.store.demo import build_demo_store
from memwiki.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
PRIVATE = "[private] Lin Xiao's bank PIN is 4321 and her diary lives at ~/diary"
SECRET = "sk-live0123456789abcdefXYZ"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    demo = build_demo_store(ROOT / "demo", ROOT / ".cache" / "demo-store")
    dest = tmp_path_factory.mktemp("privacy") / "store"
    shutil.copytree(demo, dest)
    with Store.open(dest) as store:
        store.semantic.add(
            [
                Memory(id="p-1", text=PRIVATE, category="other"),
                Memory(id="p-2", text=f"The KB token is {SECRET}, rotate monthly.", category="technical"),
                Memory(id="p-3", text="Wing-level secret plans", category="project", wing="secret-wing", room="x"),
            ]
        )
    return dest


def _everything(ctx: BuildContext) -> str:
    """Every page's Markdown and every text asset the builders make."""
    ctx.speed.exports = ROOT / ".cache" / "memwiki" / "use"  # the browser embedder export, keyed by its content hash
    pages, assets = build_all(ctx)
    text = "\n".join(p.markdown for p in pages)
    return text + "\n".join(
        a.content.decode("utf-8", "replace") for a in assets if a.dest_uri.endswith((".js", ".html", ".json"))
    )


def test_filter_removes_and_redacts_everywhere(store_dir: Path, tmp_path: Path) -> None:
    with Store.open(store_dir) as store:
        rules = PrivacyRules.from_options({"exclude_wings": ["secret-wing"]})
        source = PrivacyFilter(store.reader(), rules)
        ids = {m.id for m in source.memories()}
        assert "p-1" not in ids and "p-3" not in ids and "p-2" in ids
        assert source.memory_count() == len(ids)
        ctx = BuildContext(source, speed=BuildSpeed.at(tmp_path / "cache"))
        out = _everything(ctx)
        assert "bank PIN" not in out and "diary lives" not in out
        assert SECRET not in out and f"{REDACTED_PREFIX}openai key · " in out
        assert "Wing-level secret plans" not in out and "secret-wing" not in out
        assert "Juniper" in out  # the rest is there


def test_unfiltered_source_shows_them(store_dir: Path, tmp_path: Path) -> None:
    """The same build in the private profile shows the texts (so the test above can fail)."""
    with Store.open(store_dir) as store:
        rules = PrivacyRules(profile="private")
        ctx = BuildContext(PrivacyFilter(store.reader(), rules), speed=BuildSpeed.at(tmp_path / "cache"))
        out = _everything(ctx)
        assert "bank PIN" in out and SECRET in out


def test_bad_redact_pattern_is_a_clear_error() -> None:
    from memwiki.errors import MemwikiError

    with pytest.raises(MemwikiError, match="privacy.redact"):
        PrivacyRules.from_options({"redact": ["("]})


def test_local_paths_are_shortened(store_dir: Path) -> None:
    """The published site does not say where on the build machine the store lives: in public a source is named by
    its kind, any account's home is `~`; the private profile shows paths from the site's folder."""
    with Store.open(store_dir) as store:
        source = PrivacyFilter(store.reader(), PrivacyRules(), base_dir=store_dir.parent)
        assert source.info().location == "memwiki store" and source.info().roots == ()
        assert "at" not in source.info().described()
        assert [h.path for h in source.hot_files()] == ["memwiki store/MEMORY.md", "memwiki store/USER.md"]
        assert source.persona().path == "memwiki store/SOUL.md"
        assert source.local("notes in /home/lin/x and C:\\Users\\lin\\y") == "notes in ~/x and ~\\y"
        mine = PrivacyFilter(store.reader(), PrivacyRules(profile="private"), base_dir=store_dir.parent)
        assert mine.info().location == "./store" and mine.info().described() == "the memwiki store at ./store"
        assert mine.persona().path == "./store/SOUL.md" and mine.local("/home/lin/x") == "/home/lin/x"
        home = PrivacyFilter(store.reader(), PrivacyRules())
        assert home.local(str(Path.home() / "x")) == "~/x" and home.local(str(Path.home())) == "~"


def test_a_name_withheld_whole_is_not_listed_as_a_concept(tmp_path: Path) -> None:
    """An entity named only by an internal host keeps a page (its facts link to it) but the concept index does not
    list "[redacted: internal host · …]" among the concepts."""
    with Store.init(tmp_path / "s") as store:
        store.graph.add_triple("Juniper", "reaches", "vault.corp.internal", valid_from="2026-01-01")
        source = PrivacyFilter(store.reader(), PrivacyRules.from_options({}))
        ctx = BuildContext(source, speed=BuildSpeed.at(tmp_path / "cache"))
        ctx.speed.exports = ROOT / ".cache" / "memwiki" / "use"
        pages, _ = build_all(ctx)
        index = next(p for p in pages if p.src_uri == "concepts/index.md").markdown
        assert "Juniper" in index and "redacted" not in index and "vault.corp" not in index
        assert any(p.title.startswith("[redacted: internal host") for p in pages)  # its page is still there
        files = {a.dest_uri: a.content for a in build_all(ctx)[1]}
        data = json.dumps(search.assembled(files.__getitem__), ensure_ascii=False)
        assert "Juniper" in data and '"[redacted: internal host' not in data  # nor is it a search answer
