"""Every build in the tests checks its page memos (see memwiki.site.speed.builder_speed): a page a memo would give
back without making it is made anyway, and one that came out different fails the build. Set here, so the
`mkdocs build` processes the tests start check too."""

import os

import pytest

os.environ["MEMWIKI_CHECK_MEMOS"] = "1"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "blind: blind canary sets against the privacy gate (tests/test_blind_canaries.py)"
    )
