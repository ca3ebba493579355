"""The privacy gate on a real store: every string field of every record (present and future) is redacted,
private records vanish with everything that names them, and a redacted memory's vector is that of its
redacted text."""

from __future__ import annotations

import logging
from dataclasses import dataclass, make_dataclass
from pathlib import Path

import numpy as np
import pytest

from memwiki.recall.sources import recaller_for
from memwiki.site.gate.detect import Detectors
from memwiki.site.gate.filter import MEMO_FILE, PrivacyFilter, PrivacyRules, scrub, strings
from memwiki.site.model.build_context import BuildContext
from memwiki.site.pipeline import build_all
from memwiki.site.speed.builder_speed import BuildSpeed
from memwiki.source import Memory, Triple
from memwiki.store.store import Store

KEY = "sk-proj-Zx81kQ2mW9pLr4Tt7Yv3Bn6Hc5Jd0Fs1"
MAIL = "lin.xiao@mailbox.org"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate") / "store"
    with Store.init(root) as store:
        store.set_persona("I help Lin.\n[private] Lin's therapist is Dr. Wang.\nI answer in Chinese.\n")
        store.semantic.add(
            [
                Memory(id="m-key", text=f"The KB token is {KEY}; rotate it monthly.", category="technical"),
                Memory(id="m-plain", text="Chroma keeps the vectors on embed-01.", category="technical"),
                Memory(id="m-private", text="[private] the divorce lawyer is Zhang.", category="other"),
                Memory(id="m-flag", text="Salary review notes.", meta={"private": True}),
                Memory(id="m-room", text="Diary entry one.", wing="life", room="private"),
            ]
        )
        store.graph.add_triple("Lin Xiao", "sees", "Dr Wang", source_file="[private] health notes")
        store.graph.add_triple("Lin Xiao", "works on", "memwiki")
        store.sessions.add_session("s-1", title=f"Mail to {MAIL}")
        store.sessions.add_message("s-1", "user", "please remember my mail")
        store.wiki_dir.mkdir(parents=True, exist_ok=True)
        (store.wiki_dir / "secret-plans.md").write_text("---\ntitle: Secret Plans\nprivate: true\n---\n\nX.\n")
        (store.wiki_dir / "memwiki.md").write_text("# memwiki\n\nSee [[Secret Plans|the plans]] and [[Dr Wang]].\n")
    return root


def test_a_new_string_field_is_redacted_without_touching_the_filter() -> None:
    """`scrub` walks records: a record type with a field the filter has never heard of is covered."""
    Future = make_dataclass("Future", [("id", str), ("notes", tuple), ("extra", dict)], frozen=True)
    record = Future(id="f-1", notes=(f"mail {MAIL}",), extra={"owner": MAIL, MAIL: 1})
    gate = PrivacyFilter(None, PrivacyRules())  # type: ignore[arg-type]
    shown = scrub(record, gate.clean)
    assert type(shown) is Future and shown.id == "f-1"
    assert MAIL not in " ".join(strings(shown))
    assert "[redacted: email · " in shown.notes[0]
    assert gate.rules.private(Future(id="x", notes=("[private] x",), extra={}))

    @dataclass(frozen=True)
    class Later(Triple):
        comment: str = ""

    assert (
        "[redacted: email"
        in scrub(Later(id="t", subject="a", predicate="p", object="b", comment=MAIL), gate.clean).comment
    )


def test_labels_are_deterministic_and_keep_two_secrets_apart() -> None:
    gate = PrivacyFilter(None, PrivacyRules(), key=b"k" * 32)  # type: ignore[arg-type]
    again = PrivacyFilter(None, PrivacyRules(), key=b"k" * 32)  # type: ignore[arg-type]
    one, two = gate.clean(f"a {MAIL}"), gate.clean("a bob@mailbox.org")
    assert one == again.clean(f"a {MAIL}") and one != two
    assert one.startswith("a [redacted: email · ")


def test_private_records_and_what_names_them_are_withheld(store_dir: Path, tmp_path: Path) -> None:
    with Store.open(store_dir) as store:
        gate = PrivacyFilter(store.reader(), PrivacyRules())
        assert {m.id for m in gate.memories()} == {"m-key", "m-plain"}
        assert "therapist" not in gate.persona().text and "I answer in Chinese." in gate.persona().text
        names = {e.name for e in gate.entities()}
        assert "Dr Wang" not in names and {"Lin Xiao", "memwiki"} <= names  # named only by a private fact
        assert all(t.object_name != "Dr Wang" for t in gate.triples())
        assert [p.title for p in gate.wiki_pages()] == ["memwiki"]
        body = gate.wiki_pages()[0].body
        assert "[[" not in body and "the plans" in body and "Dr Wang" in body  # links to withheld pages: text
        gate.sessions()
        withheld = gate.withheld()
        assert withheld["memories"]["private record"] == 3 and withheld["persona"]["private record"] == 1
        assert withheld["memories"]["openai key"] == 1 and withheld["sessions"]["email"] == 1
        pages, assets = build_all(BuildContext(gate, speed=BuildSpeed.at(tmp_path / "cache")))
        out = "\n".join(p.markdown for p in pages) + "".join(
            a.content.decode("utf-8", "replace") for a in assets if a.dest_uri.endswith((".js", ".json", ".html"))
        )
        for gone in ("Dr Wang</", "dr-wang", "Secret Plans", "divorce", "Salary review", "Diary entry", KEY, MAIL):
            assert gone not in out, gone
        assert "Chroma keeps the vectors" in out


def test_the_private_profile_shows_everything(store_dir: Path) -> None:
    with Store.open(store_dir) as store:
        gate = PrivacyFilter(store.reader(), PrivacyRules(profile="private"))
        assert len(list(gate.memories())) == 5 and KEY in " ".join(m.text for m in gate.memories())
        assert "therapist" in gate.persona().text and len(gate.wiki_pages()) == 2


def test_a_redacted_memorys_vector_is_that_of_its_redacted_text(store_dir: Path) -> None:
    with Store.open(store_dir) as store:
        raw = store.reader()
        gate = PrivacyFilter(raw, PrivacyRules())
        shown = {m.id: m for m in gate.memories()}
        got = gate.memory_vectors(["m-key", "m-plain"])
        original = raw.memory_vectors(["m-key", "m-plain"])
        expected = store.embedder.embed([shown["m-key"].text])[0]
        assert float(np.dot(got[0], expected)) > 0.999
        assert float(np.dot(got[0], original[0])) < 0.99  # not the fingerprint of the secret
        assert np.allclose(got[1], original[1])  # an unredacted memory keeps the store's vector


def test_profile_from_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWIKI_PROFILE", "private")
    assert PrivacyRules.from_options({}, "public").profile == "private"
    monkeypatch.setenv("MEMWIKI_PROFILE", "open")
    from memwiki.errors import MemwikiError

    with pytest.raises(MemwikiError, match="profile"):
        PrivacyRules.from_options({}, "public")


def test_review_findings_stay_fixed(tmp_path: Path) -> None:
    """A sink of a withheld memory, links to withheld names in other spellings, `private: false`, direct rules,
    path boundaries and sets: each once leaked or misbehaved."""
    from dataclasses import replace as copy

    with Store.init(tmp_path / "store") as store:
        for n in range(40):
            store.remember(f"[env] build box {n}: Debian 12 with a 1 TB disk and the usual tools.", "memory")
        sunk = store.sink_log.records()
        assert sunk, "nothing sank"
        memory = store.semantic.get([sunk[0].memory_id])[0]
        store.semantic.upsert([copy(memory, meta={**memory.meta, "private": True})])
        store.graph.add_triple("Lin", "sees", "Dr Wang", source_file="[private] health")
        store.wiki_dir.mkdir(parents=True, exist_ok=True)
        (store.wiki_dir / "plans.md").write_text("---\ntitle: Secret Plans\nprivate: true\n---\n\nX.\n")
        (store.wiki_dir / "home.md").write_text(
            "# Home\n\nSee [[secret_plans]], [[ＳＥＣＲＥＴ Plans]] and [[Dr  Wang]].\n"
        )
        store.semantic.add([Memory(id="m-open", text="Open notes.", meta={"private": False})])
        gate = PrivacyFilter(store.reader(), PrivacyRules())
        assert sunk[0].memory_id not in {s.memory_id for s in gate.sinks()}
        assert "m-open" in {m.id for m in gate.memories()}
        body = next(p.body for p in gate.wiki_pages() if p.title == "Home")
        assert "[[" not in body, body
        pages, _ = build_all(BuildContext(gate, speed=BuildSpeed.at(tmp_path / "cache")))
        out = "\n".join(p.markdown for p in pages)
        assert "wanted/dr-wang" not in out and "wanted/secret-plans" not in out
        assert memory.text not in out
    import re

    rules = PrivacyRules(contact=False, redact=(re.compile("ZZTOP"),))
    assert PrivacyFilter(None, rules).clean("ZZTOP a@b.com").startswith("[redacted: custom")  # type: ignore[arg-type]
    assert "a@b.com" in PrivacyFilter(None, rules).clean("ZZTOP a@b.com")  # type: ignore[arg-type]
    gate = PrivacyFilter(None, PrivacyRules(), base_dir=Path("/home/lin"))  # type: ignore[arg-type]
    # (a prefix ends at a path's boundary: /home/lin is no prefix of /home/linda, an account's home shown as ~)
    assert gate.local("/home/linda/notes and /home/lin/site") == "~/notes and ./site"
    Tagged = make_dataclass("Tagged", [("tags", frozenset)], frozen=True)
    assert MAIL not in " ".join(strings(scrub(Tagged(frozenset({f"to {MAIL}"})), gate.clean)))
    from memwiki.errors import MemwikiError

    with pytest.raises(MemwikiError, match="privacy.profile"):
        PrivacyRules.from_options({"profile": "private"}, "public")


def test_session_search_through_the_gate_keeps_no_withheld_turn(tmp_path: Path) -> None:
    """A turn withheld by its marker is not in a search hit: not its snippet, text or id (recall reads all three)."""
    with Store.init(tmp_path / "s") as store:
        store.sessions.add_session("s1", title="lab chat")
        shown = store.sessions.add_message("s1", "user", "The lab printer on floor 3 jams every morning.")
        hidden = store.sessions.add_message("s1", "user", "[private] The lab printer's admin PIN is under the tray.")
        raw = store.reader().search_sessions("lab printer", 5)
        assert {hidden, shown} <= set(raw[0].message_ids)  # the control: both turns match
        hits = PrivacyFilter(store.reader(), PrivacyRules()).search_sessions("lab printer", 5)
        assert [h.message_ids for h in hits] == [(shown,)]
        assert not any("admin PIN" in t for h in hits for t in (*h.texts, *h.snippets))
        gate = PrivacyFilter(store.reader(), PrivacyRules())
        recalled = [h for h in recaller_for(gate).recall("lab printer", k=5, all_layers=True) if h.layer == "L4"]
        assert recalled and all("admin PIN" not in h.text and not h.id.endswith(f"#{hidden}") for h in recalled)


def test_a_marker_alone_on_a_persona_line_hides_the_paragraph_under_it(tmp_path: Path) -> None:
    with Store.init(tmp_path / "store") as store:
        store.set_persona(
            "I help Lin.\n\n<!-- private -->\nThe weekend plan is code-named pveuduyipfpd.\n\nI answer briefly.\n"
        )
        gate = PrivacyFilter(store.reader(), PrivacyRules())
        text = gate.persona().text
    assert "pveuduyipfpd" not in text and "I help Lin." in text and "I answer briefly." in text


def test_strings_judged_in_worker_processes_are_gated_as_in_one(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large layer's strings are judged in spawned workers beside the build's process (gate_workers): every
    layer comes out as the gate alone makes it, with the same counts and the same secrets known to the scan."""
    from memwiki.site.gate import workers as gate_workers

    def gated(workers: int) -> tuple[list[object], dict[str, dict[str, int]], set[str], bool]:
        with Store.open(store_dir) as store:
            gate = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32, workers=workers)
            shown: list[object] = [gate.persona(), list(gate.memories()), list(gate.entities())]
            shown += [list(gate.triples()), list(gate.wiki_pages())]
            shown += [list(gate.messages(s.id)) for s in gate.sessions()]
            started = gate._judges._pool is not None  # noqa: SLF001 - that the workers really judged
            gate.stop_workers()
            return shown, gate.withheld(), gate.redacted, started

    monkeypatch.setattr(gate_workers, "PARALLEL_MIN", 0)  # (this store is small: share every layer out)
    alone, beside = gated(0), gated(1)
    assert not alone[3] and beside[3]
    assert beside[:3] == alone[:3]
    assert KEY in beside[2] and MAIL in beside[2]


def test_work_is_shared_between_this_process_and_a_pool_in_order() -> None:
    """memwiki.common.workers.share_out: the results in the chunks' order, some made here and some in the pool."""
    import time

    from memwiki.common.workers import share_out, spawned_pool

    here: list[str] = []

    def slow_upper(chunk: str) -> str:
        here.append(chunk)
        time.sleep(0.25)
        return chunk.upper()

    chunks = [f"chunk {i}" for i in range(24)]
    with spawned_pool(1, int) as pool:  # (int: an initializer that does nothing)
        done = share_out(chunks, slow_upper, pool, str.upper, in_flight=2)
    assert done == [c.upper() for c in chunks]
    assert 0 < len(here) < len(chunks)


def test_ids_made_from_gated_fields_are_made_again_not_gated_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entity's id made from its name, and a fact's id made from its ends and predicate, are not read by the
    detectors on their own: a fact the gate did not change keeps its id; one whose object it redacted gets an
    id of its own (`t_` and a keyed tag), and no id, end or name shown holds the secret."""
    with Store.init(tmp_path / "store") as store:
        store.graph.add_triple("Lin Xiao", "works on", "memwiki")
        store.graph.add_triple("deploy bot", "uses token", KEY)
    read: list[str] = []
    find = Detectors.find
    monkeypatch.setattr(Detectors, "find", lambda self, text: read.append(text) or find(self, text))
    with Store.open(tmp_path / "store") as store:
        raw = {t.object: t for t in store.reader().triples()}
        gate = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32)
        shown = {t.predicate: t for t in gate.triples()}
        names = {e.id: e.name for e in gate.entities()}
    assert shown["works_on"].id == raw["memwiki"].id == "t_lin_xiao_works_on_memwiki_" + raw["memwiki"].id[-12:]
    secret = shown["uses_token"]
    assert secret.id.startswith("t_") and len(secret.id) == 14 and secret.id != raw[KEY.lower()].id
    assert KEY.lower() not in repr(list(shown.values())).lower() and KEY.lower() not in repr(names).lower()
    assert names[secret.object].startswith("[redacted")
    assert "Lin Xiao" in read and not {t.id for t in raw.values()} & set(read) and "lin_xiao" not in read


def test_workers_judge_a_layer_only_when_they_take_off_more_than_they_cost() -> None:
    """With one worker beside the build's process, a 10k store's wiki (5,000 pages of 1,300 characters) is
    judged here (the worker would take half of it, less than its start costs); with three, it is shared."""
    from memwiki.site.gate.workers import Judges

    wiki = ["x" * 1_300] * 5_000
    assert not Judges(PrivacyRules(), 1).wanted(wiki)
    assert Judges(PrivacyRules(), 3).wanted(wiki)
    assert not Judges(PrivacyRules(), 0).wanted(wiki * 100)


def test_the_texts_of_a_withheld_record_are_not_sent_to_the_judges_again(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large layer's strings are sent to the judging workers once: the next build finds every verdict kept, those
    of the records it withheld (and so never showed) included."""
    from memwiki.site.gate import workers as gate_workers

    sent: list[str] = []

    def judged_here(self: gate_workers.Judges, pairs: list[tuple[str, str]]) -> list[object]:
        sent.extend(raw for raw, _ in pairs)
        return gate_workers.judge(self.rules, list(pairs))

    monkeypatch.setattr(gate_workers, "PARALLEL_MIN", 0)
    monkeypatch.setattr(gate_workers.Judges, "judge", judged_here)

    def build() -> list[object]:
        sent.clear()
        with Store.open(store_dir) as store:
            gate = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32, cache_dir=tmp_path / "cache", workers=1)
            shown = list(gate.memories())
            gate.save()
            return shown

    first = build()
    assert "[private] the divorce lawyer is Zhang." in sent and len(sent) > 5
    assert build() == first and sent == []


def test_a_text_judged_by_one_build_is_shown_by_the_next_without_being_judged_again(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate's verdicts are kept in the cache folder (memwiki.site.speed.gate_memo): a second build shows the
    same records and counts the same redactions without the detectors reading them again; the kept file holds no
    secret; other rules or another redaction key judge everything again."""
    read: list[str] = []
    find, marked = Detectors.find, PrivacyRules._marked  # noqa: SLF001 - what judges a text: counted
    monkeypatch.setattr(Detectors, "find", lambda self, text: read.append(text) or find(self, text))
    monkeypatch.setattr(PrivacyRules, "_marked", lambda self, text: read.append(text) or marked(self, text))

    def build(rules: PrivacyRules, key: bytes = b"k" * 32) -> tuple[list[object], dict[str, dict[str, int]], int]:
        read.clear()
        with Store.open(store_dir) as store:
            gate = PrivacyFilter(store.reader(), rules, key=key, cache_dir=tmp_path / "cache")
            shown: list[object] = [gate.persona(), list(gate.memories()), list(gate.triples()), list(gate.entities())]
            shown += [list(gate.wiki_pages())] + [list(gate.messages(s.id)) for s in gate.sessions()]
            gate.save()
            return shown, gate.withheld(), len(read)

    first, counted, judged = build(PrivacyRules())
    again, recounted, rejudged = build(PrivacyRules())
    assert again == first and recounted == counted and judged > 10 and rejudged == 0
    assert "[redacted: openai key" in repr(first) and KEY not in repr(first)
    kept = b"".join(p.read_bytes() for p in (tmp_path / "cache").glob("gate-memo*"))
    assert kept and KEY.encode() not in kept and MAIL.encode() not in kept
    assert build(PrivacyRules(contact=False))[2] > 0
    assert build(PrivacyRules(), key=b"j" * 32)[2] > 0


def test_a_verdicts_file_sqlite_cannot_read_is_made_again_and_the_former_dict_removed(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The verdicts are a SQLite table (memwiki.site.speed.kept_table): a damaged one is a cache lost (a warning,
    everything judged again, then kept), not a failed build; the dict they were kept in before is removed."""
    read: list[str] = []
    find = Detectors.find
    monkeypatch.setattr(Detectors, "find", lambda self, text: read.append(text) or find(self, text))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "gate-memo.marshal").write_bytes(b"the dict of an earlier format")
    (cache / MEMO_FILE).write_bytes(b"not a database " * 500)

    def build() -> list[object]:
        read.clear()
        with Store.open(store_dir) as store:
            gate = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32, cache_dir=cache)
            shown = [gate.persona(), list(gate.memories())]
            gate.save()
            return shown

    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.memwiki"):
        first = build()
    assert read and "made again" in caplog.text and not (cache / "gate-memo.marshal").exists()
    assert build() == first and read == []


def test_a_rebuild_judges_only_the_memories_that_changed_and_what_they_depend_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """L2's verdicts are kept record by record (memwiki.site.speed.gate_memo.record_key): a build after one memory
    changed judges that memory alone, and shows and counts exactly what a build without the memo does; a session
    withheld since reaches every memory kept from the last build (its link to the session goes), and a redacted
    memory kept from the last build still gets the vector of its redacted text."""
    judged: list[str] = []
    verdict = PrivacyFilter._verdict  # noqa: SLF001 - what judges a record: counted
    monkeypatch.setattr(PrivacyFilter, "_verdict", lambda self, r, *a: judged.append(r.id) or verdict(self, r, *a))
    with Store.init(tmp_path / "store") as store:
        store.sessions.add_session("s-talk", title="Planning the NAS")
        store.sessions.add_message("s-talk", "user", "let us plan the NAS")
        plan = [
            Memory(id=f"m-{n}", text=f"NAS plan step {n}: buy disk model {n}.", session_id="s-talk") for n in range(6)
        ]
        kept_back = Memory(id="m-private", text="[private] the lawyer's number.")  # (withheld: kept as such)
        store.semantic.add([*plan, kept_back, Memory(id="m-key", text=f"The KB token is {KEY}; rotate it monthly.")])

    def build(cache: Path | None) -> tuple[list[Memory], dict[str, dict[str, int]], np.ndarray]:
        judged.clear()
        with Store.open(tmp_path / "store") as store:
            gate = PrivacyFilter(store.reader(), PrivacyRules(), key=b"k" * 32, cache_dir=cache)
            shown = sorted(gate.memories(), key=lambda m: m.id)
            vectors = gate.memory_vectors(["m-key"])
            gate.save()
            return shown, gate.withheld(), vectors

    cache = tmp_path / "cache"
    first = build(cache)
    assert len(judged) == 8 and "[redacted: openai key" in first[0][-1].text and first[1]["memories"]["private record"]
    again = build(cache)
    assert judged == [] and again[:2] == first[:2] and float(np.dot(again[2][0], first[2][0])) > 0.999
    with Store.open(tmp_path / "store") as store:
        store.semantic.upsert([Memory(id="m-3", text="NAS plan step 3: buy two disks.", session_id="s-talk")])
    changed = build(cache)
    assert judged == ["m-3"] and changed[:2] == build(None)[:2] and changed[0][3].text.endswith("two disks.")
    with Store.open(tmp_path / "store") as store:
        store.sessions.add_session("s-talk", title="[private] Planning the NAS")
    withheld = build(cache)
    assert len(judged) == 8 and withheld[:2] == build(None)[:2] and {m.session_id for m in withheld[0]} == {""}
