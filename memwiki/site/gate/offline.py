"""A public site loads nothing from outside itself, whatever the theme's options say.

`keep_offline` turns off, before the build, the theme options that would make every page fetch something from
another host (Google Fonts, highlight.js from a CDN, analytics) and says what it turned off; a page or style the
user added from another host stops the build with the option's name, since it cannot be turned off for them.
`outside_loads` is the final scan's check of the same promise over the built files: anything the build still
made that a browser would fetch from elsewhere (`<script src>`, `<link rel=stylesheet>`, `<img src>`, `@import`,
`url()`). Links a reader may follow (`<a href>`) are not loads.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.exceptions import PluginError

from memwiki.text.screen import Screened

_OUTSIDE = r"""["']?\s*(?:https?:)?//"""  # an absolute or protocol-relative URL
_LOADS = Screened(
    rf"<(?:script|img|iframe|source|audio|video|embed|input)\b[^>]*?\bsrc(?:set)?\s*=\s*{_OUTSIDE}"
    r"|<link\b(?=[^>]*\brel\s*=\s*[\"']?[^\"'>]*(?:stylesheet|preload|prefetch|preconnect|dns-prefetch|icon|manifest))"
    rf"[^>]*?\bhref\s*=\s*{_OUTSIDE}"
    rf"|@import\s+(?:url\(\s*)?{_OUTSIDE}|url\(\s*{_OUTSIDE}",
    rf"(?i)(?:src(?:set)?\s*=|href\s*=|@import|url\()\s*(?:url\(\s*)?{_OUTSIDE}",  # (an inline SVG's xmlns is not)
    re.IGNORECASE,
    group="offline",  # (it reads whole files, the detectors only their new lines)
)
_URL = re.compile(r"^(?:https?:)?//", re.IGNORECASE)


def keep_offline(config: Any) -> list[str]:  # noqa: ANN401 (MkDocs' config)
    """Turn off the theme options that load from other hosts; the changes made, to say in the log. Raises
    `PluginError` for a script or style sheet the user added from another host."""
    changed = []
    theme = config.theme
    if theme.name == "material" and theme.get("font") is not False:
        theme["font"] = False
        changed.append("theme.font: false (no Google Fonts)")
    if theme.get("highlightjs"):  # the mkdocs and readthedocs themes fetch highlight.js from cdnjs
        theme["highlightjs"] = False
        changed.append("theme.highlightjs: false (it comes from a CDN)")
    if (theme.get("analytics") or {}).get("gtag"):
        theme["analytics"] = {"gtag": None}
        changed.append("theme.analytics: off")
    if config.extra.get("analytics"):  # Material's
        config.extra["analytics"] = None
        changed.append("extra.analytics: off")
    if config.extra.get("generator", True) is not False:
        config.extra["generator"] = False
        changed.append("extra.generator: false (no link out in the footer)")
    for option in ("extra_css", "extra_javascript"):
        for item in config[option]:
            url = str(getattr(item, "path", item))
            if _URL.match(url):
                raise PluginError(
                    f"memwiki: {option} loads {url} from another host, and a public site loads nothing from outside "
                    "itself: copy the file into docs_dir, or build with profile: private"
                )
    return changed


def outside_loads(text: str) -> list[int]:
    """Where in `text` (an HTML page or a style sheet) a browser would fetch something from another host."""
    return [m.start() for m in _LOADS.finditer(text)]
