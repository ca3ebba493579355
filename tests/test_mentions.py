"""memwiki.site.model.mentions: where a concept is named in text (whole Latin words, any case, Chinese inside
sentences)."""

from __future__ import annotations

import random
import string
import time

from memwiki.site.model.concept_index import ConceptIndex, TextSource
from memwiki.site.model.mentions import MentionIndex
from memwiki.source import Entity, WikiPage


def _index(*names: str) -> ConceptIndex:
    index = ConceptIndex()
    for name in names:
        index.add_entity(Entity(id=name.lower(), name=name))
    return index


def _named(index: ConceptIndex, *texts: str) -> list[list[str]]:
    """For each text, the names of the concepts it names (in order)."""
    mentions = MentionIndex(index.concepts)
    mentions.scan(("L2", TextSource("memory/x.md", f"mem-{n}", f"m{n}", t)) for n, t in enumerate(texts))
    return [[c.title for c in mentions.named_in("memory/x.md", f"mem-{n}")] for n in range(len(texts))]


def test_latin_names_match_whole_words_in_any_case() -> None:
    index = _index("rust", "embed-01", "Cloud Knowledge Base", "KB")
    found = _named(
        index,
        "we use RUST here",
        "trust me",
        "学rust服务",
        "embed-01.",
        "embed-01x",
        "the cloud  knowledge\nbase moved",
        "KBase",
    )
    assert found == [["rust"], [], ["rust"], ["embed-01"], [], ["Cloud Knowledge Base"], []]


def test_chinese_names_inside_sentences_longest_first() -> None:
    index = _index("云知识库", "知识库", "机房A")
    assert _named(index, "去云知识库里查", "知识库很大", "在机房a里") == [["云知识库"], ["知识库"], ["机房A"]]


def test_a_name_that_glosses_itself_is_named_by_either_half() -> None:
    index = _index("宁波海洋实验室 (Ningbo marine lab)", "象山港（Xiangshan Bay）", "f(x)")
    found = _named(
        index, "他在宁波海洋实验室工作", "the Ningbo Marine Lab team", "象山港外侧", "xiangshan bay", "f and x"
    )
    assert [len(f) for f in found] == [1, 1, 1, 1, 0]


def test_aliases_of_a_wiki_page_and_one_mention_per_place() -> None:
    index = ConceptIndex()
    index.add_wiki(WikiPage("embed-01.md", "embed-01", ("嵌入服务器", "embedding server"), (), "body"))
    index.add_entity(Entity(id="embed-01", name="embed-01"))
    mentions = MentionIndex(index.concepts)
    text = "The embedding server (embed-01) and the 嵌入服务器 again."
    mentions.scan([("hot", TextSource("persona.md", "memory-0", "MEMORY.md", text))])
    (concept,) = [c for c in index.concepts if c.title == "embed-01"]
    (found,) = mentions.of(concept)
    assert (found.layer, found.name) == ("hot", "embedding server")
    before, after = found.context()
    assert before == "The " and after.startswith(" (embed-01) and the 嵌入服务器 again.")


def test_mentions_are_made_when_asked_for_and_those_at_linked_places_left_out() -> None:
    """The index keeps what the scan found and makes a `Mention` when asked (a concept page lists fifty of
    thousands): the same places, in scan order, with or without the places that link the concept; a later scan
    is seen by `named_in` too."""
    index = _index("rust", "go", "zig")
    (rust, go, zig) = (next(c for c in index.concepts if c.title == n) for n in ("rust", "go", "zig"))
    mentions = MentionIndex(index.concepts)
    mentions.scan(
        [
            ("L2", TextSource("a.md", "m-1", "one", "Go and rust, rust again")),
            ("hot", TextSource("b.md", "h", "two", "more `x` rust")),
        ]
    )
    found = mentions.of(rust)
    assert [(m.src_uri, m.layer, m.name, m.title) for m in found] == [
        ("a.md", "L2", "rust", "one"),
        ("b.md", "hot", "rust", "two"),
    ]
    assert found[1:] == [found[1]] and found[-1].context() == ("more `x` ", "")
    assert [m.src_uri for m in mentions.of(rust, besides={("a.md", "m-1")})] == ["b.md"]
    assert mentions.named(go) and not mentions.named(zig) and not mentions.of(zig)
    assert [c.title for c in mentions.named_in("a.md", "m-1")] == ["go", "rust"]
    mentions.scan([("L4", TextSource("s.md", "msg-1", "three", "zig"))])
    assert [c.title for c in mentions.named_in("s.md", "msg-1")] == ["zig"] and mentions.named(zig)


def test_ten_thousand_memories_and_five_thousand_names_in_one_pass() -> None:
    rng = random.Random(3)
    names = sorted({"".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 10))) for _ in range(5000)})
    index = _index(*names)
    words = "memory recall vector server deploy backup 记忆 检索 向量 服务器 部署 备份".split()
    texts = [" ".join(rng.choices(words, k=50)) + f" {rng.choice(names).upper()}。" for _ in range(10_000)]
    start = time.perf_counter()
    found = _named(index, *texts)
    took = time.perf_counter() - start
    assert all(len(f) == 1 for f in found)
    assert took < 10, f"{took:.1f} s: names × texts, not one pass?"  # about 1 s here; a loop per name takes minutes


def test_names_found_in_a_text_are_kept_for_the_next_build_with_the_names_looked_for(tmp_path) -> None:
    from memwiki.site.speed.text_cache import TextCache

    texts = ["we use RUST here", "trust me", "去云知识库里查", "`rust` in code, rust outside"]
    places = [("L2", TextSource("memory/x.md", f"mem-{n}", f"m{n}", t)) for n, t in enumerate(texts)]

    def build(*names: str) -> tuple[list[list[tuple[str, int, int]]], int]:
        kept = TextCache(tmp_path / "texts.sqlite3")
        mentions = MentionIndex(_index(*names).concepts)
        mentions.scan(places, kept)
        kept.save()
        named = [
            [(c.title, *_where(mentions, c, n)) for c in mentions.named_in("memory/x.md", f"mem-{n}")]
            for n in range(len(texts))
        ]
        return named, kept.misses

    def _where(mentions: MentionIndex, concept, n: int) -> tuple[int, int]:
        (m,) = [m for m in mentions.of(concept) if m.anchor == f"mem-{n}"]
        return m.start, m.end

    first, made = build("rust", "云知识库")
    again, remade = build("rust", "云知识库")
    assert made == len(texts) and remade == 0  # the second build found every text's names kept
    assert again == first == [[("rust", 7, 11)], [], [("云知识库", 1, 5)], [("rust", 16, 20)]]
    other, redone = build("rust", "知识库")  # other names: every text is read again
    assert redone == len(texts) and other[2] == [("知识库", 2, 5)]


def test_a_few_texts_are_searched_as_every_name_searches_them() -> None:
    """A rebuild's few changed texts are searched with only the names they may hold (`_find_few`): the spans
    must be those of the pattern of every name, whatever the case folding, spaces or word ends."""
    names = [
        "rust",
        "Cloud Knowledge Base",
        "KB",
        "云知识库",
        "知识库",
        "embed-01",
        "Straße",
        "okay",
        "stash",
        "ΣΟΦΙΑ",
        "Ǆemal",
        "ﬆudio",
        "naïve café",
        "a1",
    ]
    rng = random.Random(7)
    names += [
        "".join(rng.choice(string.ascii_letters + "知识库服务") for _ in range(rng.randint(2, 9))) for _ in range(300)
    ]
    mentions = MentionIndex(_index(*names).concepts)
    texts = [
        "we use RUST here, trust me; CLOUD   KNOWLEDGE\nBASE and kb-2 and KBs",
        "去云知识库里查知识库, then embed-01/EMBED-01x",
        "STRASSE or straße or STRAẞE; o\u212aay and staſh and ſtash",  # a Kelvin sign, a long s
        "σοφια and ΣΟΦΙΑ and σοφιας; ǅemal ǆemal; ﬅudio STUDIO",
        "NAÏVE\tCAFÉ, naive cafe, a1 a12 xa1 1a1",
        "",
        *("".join(rng.choice(string.ascii_letters + " 知识库服务\n") for _ in range(400)) for _ in range(20)),
    ]
    assert [mentions._find_few(t) for t in texts] == mentions._find([*texts, *[""] * 50])[: len(texts)]
    assert mentions._find_few(texts[0]) == [(7, 11), (28, 50), (55, 57)]
