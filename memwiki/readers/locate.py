"""Where hermes-agent and MemPalace keep their data: defaults, environment variables, config files.

Explicit arguments win, then the projects' own environment variables, then their defaults:
- hermes home: `HERMES_HOME`, else `~/.hermes`;
- MemPalace config folder: `MEMPALACE_CONFIG_DIR`, else `~/.mempalace`;
- palace: `MEMPALACE_PALACE_PATH`, else `palace_path` in the config folder's `config.json`, else
  `<config folder>/palace`;
- knowledge graph: `knowledge_graph.sqlite3` beside the palace, in its parent folder, or in the config folder.

memwiki's own caches for these sources (re-embedded texts) live in `$XDG_CACHE_HOME/memwiki` (default
`~/.cache/memwiki`), never inside a source.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from memwiki.errors import SourceError
from memwiki.store.layout import LAYER_PATHS, default_cache_dir

KG_FILE = LAYER_PATHS["graph"]  # (a palace names its graph as a store does)
AUTO = "auto"  # pass as hermes_home / palace to open_sources: locate it through env vars and defaults


def hermes_home_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The hermes home: the explicit one, else $HERMES_HOME, else ~/.hermes."""
    return Path(explicit or os.environ.get("HERMES_HOME") or "~/.hermes").expanduser()


def mempalace_config_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """MemPalace's config folder: the explicit one, else $MEMPALACE_CONFIG_DIR, else ~/.mempalace."""
    return Path(explicit or os.environ.get("MEMPALACE_CONFIG_DIR") or "~/.mempalace").expanduser()


def palace_path(
    explicit: str | os.PathLike[str] | None = None, config_dir: str | os.PathLike[str] | None = None
) -> Path:
    """The palace: explicit, else $MEMPALACE_PALACE_PATH, else config.json's palace_path, else <config>/palace."""
    if explicit:
        return Path(explicit).expanduser()
    if env := os.environ.get("MEMPALACE_PALACE_PATH"):
        return Path(env).expanduser()
    folder = mempalace_config_dir(config_dir)
    config = folder / "config.json"
    if config.is_file():
        try:
            value = json.loads(config.read_text(encoding="utf-8")).get("palace_path")
        except (ValueError, OSError, AttributeError, UnicodeDecodeError):
            value = None
        if isinstance(value, str) and value.strip() and Path(value).expanduser().is_dir():
            return Path(value).expanduser()
    return folder / "palace"


def find_knowledge_graph(palace: Path, config_dir: Path | None = None) -> Path | None:
    """The palace's knowledge graph: beside it, in its parent folder, or in the config folder; None if absent."""
    places = [palace / KG_FILE, palace.parent / KG_FILE]
    if config_dir is not None:
        places.append(Path(config_dir) / KG_FILE)
    return next((p for p in places if p.is_file()), None)


def text_vectors_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where memwiki keeps the vectors of read-only sources' texts (turns, pages): `<cache>/text-vectors`."""
    return (Path(cache_dir).expanduser() if cache_dir else default_cache_dir()) / "text-vectors"


def palace_cache_dir(palace: Path, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where memwiki keeps its own vectors for a palace: `<cache>/palaces/<hash of the palace path>`.

    Refuses a cache folder inside the palace (a reader never writes into its source).
    """
    root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    resolved = Path(palace).expanduser().resolve()
    folder = root.resolve() / "palaces" / hashlib.sha1(str(resolved).encode()).hexdigest()[:16]
    if folder == resolved or resolved in folder.parents:
        raise SourceError(f"{folder}: memwiki's cache must not live inside the palace {resolved}")
    return folder
