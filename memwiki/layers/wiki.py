"""The store's own Markdown pages (`wiki/`): frontmatter (title, aliases, tags) and body."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import yaml

from memwiki.common.textio import read_text, walk_files
from memwiki.common.times import stored_time
from memwiki.errors import InputFormatError
from memwiki.source import WikiPage
from memwiki.text.markers import flagged

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


def page_files(folder: Path) -> list[tuple[str, os.stat_result]]:
    """(path relative to `folder` with "/", stat) of every `*.md` page under it, in path order (folder by folder,
    as pathlib orders paths); symbolic links are left out. What `iter_wiki_pages` reads."""
    if not folder.is_dir():
        return []
    files = [(rel, st) for rel, st in walk_files(str(folder), links=False) if rel.endswith(".md")]
    return sorted(files, key=lambda file: file[0].split("/"))


def read_page(folder: Path, rel: str, stat: os.stat_result) -> WikiPage | None:
    """The page at `rel` under `folder` (`stat`: its file's, listed by `page_files`); None when it was removed
    meanwhile. InputFormatError when it is not UTF-8 or its frontmatter is broken."""
    try:
        page = parse_page(read_text(folder / rel), rel)
    except FileNotFoundError:
        return None
    return replace(page, modified=stored_time(stat.st_mtime))


def iter_wiki_pages(folder: Path) -> Iterator[WikiPage]:
    """Every `*.md` under `folder`, in path order (`page_files`). A page that cannot be read is skipped with a
    warning naming it, so one bad page does not hide the others."""
    for rel, stat in page_files(folder):
        try:
            page = read_page(folder, rel, stat)
        except InputFormatError as exc:
            warnings.warn(str(exc), stacklevel=2)
            continue
        if page is not None:
            yield page
