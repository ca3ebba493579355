"""Every build in the tests checks its page memos (see memwiki.site.speed.builder_speed): a page a memo would give
back without making it is made anyway, and one that came out different fails the build. Set here, so the
`mkdocs build` processes the tests start check too."""

import os

os.environ["MEMWIKI_CHECK_MEMOS"] = "1"
