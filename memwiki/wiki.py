"""The store's own Markdown pages (`wiki/`): frontmatter (title, aliases, tags) and body."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import yaml

from memwiki.errors import InputFormatError
from memwiki.markers import flagged
from memwiki.source import WikiPage
from memwiki.textio import read_text
from memwiki.times import mtime_iso

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C parser when libyaml is there
_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?)^---[ \t]*$\n?", re.DOTALL | re.MULTILINE)


def _as_tuple(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if v is not None)
    return (str(value),)


def parse_page(text: str, rel_path: str) -> WikiPage:
    """Split frontmatter from body; the title falls back to the first `# heading`, then the file name."""
    meta: dict = {}
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    body = text
    match = _FRONTMATTER.match(text)
    if match:
        try:
            loaded = yaml.load(match.group(1), Loader=_LOADER)  # noqa: S506 - a safe loader
        except yaml.YAMLError as exc:
            raise InputFormatError(f"{rel_path}: invalid frontmatter ({exc})") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise InputFormatError(f"{rel_path}: frontmatter must be a mapping")
        meta = loaded or {}
        body = text[match.end() :].lstrip("\n")
    title = str(meta.get("title") or "").strip()
    if not title:
        for line in body.splitlines():
            if line.startswith("# "):
                title = line[2:].strip()
                break
    title = title or Path(rel_path).stem
    return WikiPage(
        path=rel_path,
        title=title,
        aliases=_as_tuple(meta.get("aliases")),
        # frontmatter that says private (`private: yes`, `visibility: private`...) is the tag `private`: the
        # site's privacy gate withholds the page
        tags=_as_tuple(meta.get("tags")) + (("private",) if flagged(meta) else ()),
        body=body,
    )


def iter_wiki_pages(folder: Path) -> Iterator[WikiPage]:
    """Every `*.md` under `folder`, in path order. A page that cannot be read is skipped with a warning
    naming it, so one bad page does not hide the others."""
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*.md")):
        if path.is_symlink() or not path.is_file():
            continue
        rel = path.relative_to(folder).as_posix()
        try:
            page = parse_page(read_text(path), rel)
        except InputFormatError as exc:
            warnings.warn(str(exc), stacklevel=2)
            continue
        yield WikiPage(
            path=page.path,
            title=page.title,
            aliases=page.aliases,
            tags=page.tags,
            body=page.body,
            modified=mtime_iso(path),
        )
