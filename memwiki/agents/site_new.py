"""`memwiki site new DIR`: a folder with a working `mkdocs.yml` and `docs/` for a wiki of one's own memory.

The config is the safe one: the public profile (secrets redacted, private records withheld), pages that work
from `file://` and any static host, nothing loaded from other hosts. Sources are written as given ("auto"
stays "auto": located again at each build), folders under the home folder as `~/...` so the file can move.
Nothing is overwritten, and nothing is written when a source is missing.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from memwiki.errors import MemwikiError, SourceError
from memwiki.readers.locate import AUTO, hermes_home_path, palace_path
from memwiki.store.layout import is_store

CONFIG = """\
# A wiki of an agent's memory, made by `memwiki site new`. Build it with `mkdocs build` (or `properdocs build`),
# preview it with `mkdocs serve`. Every option of the memwiki plugin is in the README ("The wiki").
site_name: {name}
docs_dir: docs  # pages of your own: a Markdown file here is a page beside the ones memwiki makes
site_dir: site
use_directory_urls: false  # pages work from file:// and from any static host

theme:
  name: material
  font: false  # no Google Fonts: a public site loads nothing from other hosts
  features:
    - navigation.prune
    - navigation.indexes
    - navigation.top

plugins:
  - search:
      lang: [en, zh]
  - memwiki:
{sources}
      # profile: public   # the default: secrets redacted, private records withheld (`private` is for you only)
      # audit_errors: [conflicts]   # audit findings that make `mkdocs build --strict` fail

extra:
  generator: false  # no "Made with" link out of the site
"""
GITIGNORE = "site/\n.cache/\n"


def new_site(folder: Path, store: str | None, hermes_home: str | None, palace: str | None) -> list[Path]:
    """Write `folder/mkdocs.yml`, `folder/docs/` and `folder/.gitignore` for these sources; the files written.
    Raises MemwikiError (nothing written) when a file is there already or a source is missing."""
    folder = Path(folder).expanduser()
    sources = _sources(store, hermes_home, palace)
    wanted = {folder / "mkdocs.yml": _config(folder, sources), folder / ".gitignore": GITIGNORE}
    there = [p for p in (*wanted, folder / "docs") if p.exists()]
    if there:
        raise MemwikiError(f"{there[0]} exists already: `site new` writes only what is not there; nothing written")
    made_folder = not folder.exists()
    written: list[Path] = []
    try:
        (folder / "docs").mkdir(parents=True)
        written.append(folder / "docs")
        (folder / "docs" / ".gitkeep").touch()  # (git keeps no empty folder, and MkDocs needs this one)
        for path, text in wanted.items():
            path.write_text(text, encoding="utf-8")
            written.append(path)
    except OSError as exc:  # (none of these was there before: take back whatever was begun, a half-written one too)
        shutil.rmtree(folder if made_folder else folder / "docs", ignore_errors=True)
        for path in wanted:
            with contextlib.suppress(OSError):  # (not there, or its folder never made)
                path.unlink()
        raise MemwikiError(f"{folder}: cannot write there ({exc.strerror or exc}); nothing written") from None
    return written


def _sources(store: str | None, hermes_home: str | None, palace: str | None) -> dict[str, str]:
    """The plugin's source options, each checked to be there now."""
    from memwiki.store.config import resolve_store_path

    if store is None and hermes_home is None and palace is None:  # as the other commands: the default store,
        default = resolve_store_path(None)  # else a hermes home and a palace where they usually are
        if is_store(default):
            store = str(default)
        else:
            hermes_home = AUTO if hermes_home_path().is_dir() else None
            palace = AUTO if palace_path().is_dir() else None
            if hermes_home is None and palace is None:
                raise SourceError(
                    f"no memory to publish: no store at {default}, no hermes home at {hermes_home_path()}, no palace "
                    f"at {palace_path()} (use --store, --hermes-home or --palace); nothing written"
                )
    out = {}
    if store is not None:
        path = Path(store).expanduser().resolve()
        if not is_store(path):
            raise SourceError(f"{path}: not a memwiki store (no store.json; run `memwiki init`); nothing written")
        out["store"] = _portable(path)
    if hermes_home is not None:
        path = hermes_home_path(None if hermes_home == AUTO else hermes_home)
        if not path.is_dir():
            raise SourceError(f"{path}: no hermes home there; nothing written")
        out["hermes_home"] = AUTO if hermes_home == AUTO else _portable(path.resolve())
    if palace is not None:
        path = palace_path(None if palace == AUTO else palace)
        if not path.is_dir():
            raise SourceError(f"{path}: no MemPalace palace there; nothing written")
        out["palace"] = AUTO if palace == AUTO else _portable(path.resolve())
    return out


def _portable(path: Path) -> str:
    """`~/x` for a folder under the home folder (the config may move to another account), else the path."""
    try:
        return "~/" + path.relative_to(Path.home().resolve()).as_posix()
    except ValueError:
        return str(path)


def _config(folder: Path, sources: dict[str, str]) -> str:
    name = folder.resolve().name.replace("-", " ").replace("_", " ").strip() or "memory"
    lines = "\n".join(f"      {key}: {_yaml(value)}" for key, value in sources.items())
    return CONFIG.format(name=_yaml(f"{name} · memory wiki"), sources=lines)


def _yaml(text: str) -> str:
    """A YAML string, quoted as JSON is (a subset of YAML): any name or path reads back as written."""
    import json

    return json.dumps(text, ensure_ascii=False)
