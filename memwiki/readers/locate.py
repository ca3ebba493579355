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

KG_FILE = "knowledge_graph.sqlite3"
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


def default_cache_dir() -> Path:
    """memwiki's cache root: $XDG_CACHE_HOME/memwiki, else ~/.cache/memwiki."""
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "memwiki"


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


def open_sources(
    store: str | None,
    hermes_home: str | None,
    palace: str | None,
    cache_dir: Path | None,
    embedder=None,  # noqa: ANN001 - memwiki.embedders.Embedder; default: the store's, else USE
    config_dir: str | None = None,
    partial: bool = False,
):  # noqa: ANN201 - returns a memwiki.source.MemorySource
    """The MemorySource for these locations, as the CLI and the plugin configure them.

    - only `store`: the store itself;
    - `hermes_home` and / or `palace` (a path, or "auto" to locate it through the environment variables
      and defaults above): a CombinedSource, hermes for L0 / L1 / L4 and the palace for L2 / L3, the store
      (when given) for whatever they do not provide;
    - nothing at all: hermes home and palace located through the defaults; SourceError if neither exists.
    Missing folders named explicitly are a SourceError naming them; with `partial`, a hermes home or palace
    that cannot be opened is skipped with a note in `info().notes` (a wiki build shows what can be read).
    """
    from memwiki.readers.combined import CombinedSource
    from memwiki.readers.hermes import HermesHome
    from memwiki.readers.mempalace import MemPalace

    auto = store is None and hermes_home is None and palace is None
    store_reader = None
    if store is not None:
        from memwiki.store import Store

        opened = Store.open(store)
        store_reader = opened.reader()
        embedder = embedder or opened.embedder
    if store_reader is not None and hermes_home is None and palace is None:
        return store_reader

    home_path = hermes_home_path(None if hermes_home in (None, AUTO) else hermes_home)
    palace_dir = palace_path(None if palace in (None, AUTO) else palace, config_dir)
    want_home = hermes_home is not None or (auto and home_path.is_dir())
    want_palace = palace is not None or (auto and palace_dir.is_dir())
    if auto and not (want_home or want_palace):
        raise SourceError(
            f"no memory to read: no store given, no hermes home at {home_path} and no palace at {palace_dir} "
            "(use --store, --hermes-home or --palace)"
        )
    if embedder is None:
        from memwiki.embedders import USEEmbedder

        embedder = USEEmbedder()
    problems: list[str] = []

    def attempt(opener):  # noqa: ANN001, ANN202 - a reader's constructor
        try:
            return opener()
        except SourceError as exc:
            if not partial:
                raise
            problems.append(f"skipped, could not be read: {exc}")
            return None

    home = attempt(lambda: HermesHome(home_path)) if want_home else None
    pal = (
        attempt(lambda: MemPalace(palace_dir, config_dir=config_dir, embedder=embedder, cache_dir=cache_dir))
        if want_palace
        else None
    )
    if home is None and pal is None and store_reader is None:
        raise SourceError("; ".join(problems) or "no memory source to read")
    return CombinedSource.of(hermes=home, palace=pal, store=store_reader, embedder=embedder, notes=problems)
