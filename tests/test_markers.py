"""Private markers as people type them (memwiki/text/markers.py): each shape is read as private, and ordinary text that
only mentions a private word is not."""

from __future__ import annotations

import pytest

from memwiki.text.markers import flagged, marked, private_heading, private_path, without_private_sections

MARKED = [
    "[private] the garden gate",
    "the garden gate（不要分享）",
    "the garden gate ——别外传",
    "the garden gate (keep this between us)",
    "- **Private:** the garden gate",
    "1. **Private** - the garden gate",
    "【私密】花园的门",
    "the code name of the weekend plan（不公开）",  # Chinese in brackets right after a word
    "weekend project（私密） relates to the plan",
    "(Private) the garden gate",
    "[ private ] the garden gate",
    "<private> the garden gate",
    "the garden gate #private",
    "the garden gate #私密",
    "the garden gate @private",
    "PRIVATE: the garden gate",
    "私密：花园的门",
    "Private note - the garden gate",
    "私密笔记：花园的门",
    "<!-- private --> the garden gate",
    "🔒 the garden gate",
    "the garden gate 🔐",
    "the garden gate (do not publish)",
    "不要公开：花园的门",
    "花园的门（仅自己可见）",
    "NOT FOR WIKI: the garden gate",
    "the garden gate #nopublish",
    "the garden gate (internal only, keep off the wiki)",
    "the garden gate // private",
    # round 8 (blind): a bracketed remark that opens with a private word, sayings at the end, spaced characters
    "the garden gate\n\n(私密，别发到群里)",
    "the garden gate (off the record)",
    "the garden gate 🙈 only me",
    "私 密 ： the garden gate",
    "the garden gate [confidential - HR only]",
    # round 9 (blind): the word between signs, after a lead-in, a callout, a private heading in one Chinese run
    "⚠️ 保密 ⚠️ the garden gate",
    "Note to self, private: the garden gate",
    "> [!PRIVATE]\n> the garden gate",
    # round 10 (blind): who may read it, what must not happen to it, a label and a saying
    "[仅家人可见] the garden gate",
    "只给自己看：the garden gate",
    "family only: the garden gate",
    "the garden gate\n\n（以上内容不要同步到 wiki）",
    "私事，勿外传：the garden gate",
    "the garden gate. The above is not to be published.",
    "::: private the garden gate :::",  # a fenced block of that class, its lines made one
    "#私密 体检报告在抽屉里",  # a hashtag before Chinese (the normaliser drops spaces between Chinese)
]
NOT_MARKED = [
    "HMAC-SHA256(secret, body) 的结果放在签名头里",  # a call's arguments, not a bracketed marker
    "sign it with hmac(private_key, body) first",
    "sign(private_key) returns bytes",
    "private data pipeline is slow",
    "Private equity notes from the talk",
    "the secret of good soup is salt",
    "a #privacy policy draft",
    "we publish on Fridays",
    "私有云的部署笔记",
    "write to bob@private.com",
    "see the private repo for details",
    "(see the private repo for details)",
    "x = 1 // privately owned",
    "(personally I prefer tabs)",
    "the record shows 3 runs",
    "this is not for the faint of heart",
    "the above steps are not for beginners",
    "密码至少 12 位，不要告诉任何人",
    "::: note\nthe garden gate\n:::",
]


@pytest.mark.parametrize("text", MARKED)
def test_a_marker_makes_a_note_private(text: str) -> None:
    assert marked(text)


@pytest.mark.parametrize("text", NOT_MARKED)
def test_a_private_word_in_a_sentence_is_no_marker(text: str) -> None:
    assert not marked(text)


@pytest.mark.parametrize(
    "meta",
    [
        {"private": True},
        {"private": "yes"},
        {"private": 1},
        {"visibility": "private"},
        {"public": False},
        {"publish": "no"},
        {"draft": True},
        {"sensitive": "true"},
        {"公开": False},
        {"可见性": "私密"},
        {"私密": "是"},
        {"sensitivity": "confidential"},
        {"share": False},
        {"tags": ["work", "private"]},
        {"tags": "家庭, 私密"},
        {"audience": "only-me"},
        {"access": "owner-only"},
    ],
)
def test_frontmatter_flags_are_read_by_meaning(meta: dict) -> None:
    assert flagged(meta)


@pytest.mark.parametrize("meta", [{"private": False}, {"public": True}, {"status": "done"}, {"draft": "no"}, {}])
def test_public_or_silent_frontmatter_is_not_private(meta: dict) -> None:
    assert not flagged(meta)


def test_a_private_section_ends_at_the_next_heading_of_its_level() -> None:
    text = "# Me\nkind\n## Private\nsecret line\n### more\nalso secret\n## Style\nshort answers\n"
    kept, dropped = without_private_sections(text)
    assert kept == "# Me\nkind\n## Style\nshort answers\n" and dropped == 4
    assert private_heading("## 私密") == 2 and private_heading("### Private notes") == 3
    assert private_heading("## Privacy policy") == 0


def test_a_stray_fence_does_not_hide_a_private_heading() -> None:
    """A ``` typed mid-line, then one alone, makes every later line look fenced: the heading still counts."""
    text = "- Note: ```yaml\nkey: 1\n```\n\n## Private\nthe garden gate\n## Public\nshort answers\n"
    kept, _ = without_private_sections(text)
    assert "garden gate" not in kept and "short answers" in kept


def test_a_folder_named_private_marks_its_pages() -> None:
    assert private_path("wiki/private/plan.md") and private_path("wiki/私密/计划.md")
    assert not private_path("wiki/private.md") and not private_path("wiki/privacy/plan.md")


def test_a_marker_alone_on_its_line_marks_the_paragraph_under_it() -> None:
    from memwiki.text.markers import only_marker

    assert only_marker("<!-- private -->") and only_marker("[private]") and only_marker("🔒")
    assert not only_marker("[private] the garden gate") and not only_marker("the garden gate")


@pytest.mark.parametrize(
    "heading",
    [
        "## Secrets",
        "### Private notes",
        "## 私密",
        "## Confidential",
        "### 不公开的部分",
        "### Just between us",
        "## 个人隐私",
        "## 家里的私密事",
        "## My secrets",
    ],
)
def test_a_heading_that_says_private_opens_a_private_section(heading: str) -> None:
    assert private_heading(heading)


@pytest.mark.parametrize(
    "heading", ["## 项目进度", "## Notes on secrecy", "## 关于如何保护用户数据与隐私的一些长期做法"]
)
def test_a_heading_about_something_else_opens_no_private_section(heading: str) -> None:
    assert not private_heading(heading)
