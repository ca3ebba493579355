"""The MemorySource for the locations the CLI and the plugin are given: a store, a hermes home, a palace."""

from __future__ import annotations

from pathlib import Path

from memwiki.errors import SourceError
from memwiki.readers.locate import AUTO, hermes_home_path, palace_path, text_vectors_dir


def open_sources(
    store: str | None,
    hermes_home: str | None,
    palace: str | None,
    cache_dir: Path | None,
    embedder=None,  # noqa: ANN001 - memwiki.text.embedders.Embedder; default: the store's, else USE
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
    auto = store is None and hermes_home is None and palace is None
    store_reader = None
    if store is not None:
        from memwiki.store.store import Store

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
        from memwiki.text.embedders import USEEmbedder

        embedder = USEEmbedder()
    readers = _Readers(partial)
    home = readers.hermes(home_path) if want_home else None
    pal = readers.palace(palace_dir, config_dir, embedder, cache_dir) if want_palace else None
    if home is None and pal is None and store_reader is None:
        raise SourceError("; ".join(readers.problems) or "no memory source to read")
    from memwiki.readers.combined import CombinedSource
    from memwiki.text.vectors import TextVectors

    kept = TextVectors(text_vectors_dir(cache_dir), embedder)
    return CombinedSource.of(
        hermes=home, palace=pal, store=store_reader, embedder=embedder, notes=readers.problems, text_vectors=kept
    )


class _Readers:
    """The readers of a hermes home and a palace; with `partial`, one that cannot be opened is skipped and said
    (`problems`) instead of stopping everything."""

    def __init__(self, partial: bool) -> None:
        self.partial = partial
        self.problems: list[str] = []

    def hermes(self, home: Path):  # noqa: ANN201 - a HermesHome or None
        from memwiki.readers.hermes import HermesHome

        return self._attempt(lambda: HermesHome(home))

    def palace(self, palace: Path, config_dir: str | None, embedder, cache_dir: Path | None):  # noqa: ANN001, ANN201
        from memwiki.readers.mempalace import MemPalace

        return self._attempt(lambda: MemPalace(palace, config_dir=config_dir, embedder=embedder, cache_dir=cache_dir))

    def _attempt(self, opener):  # noqa: ANN001, ANN202 - a reader's constructor
        try:
            return opener()
        except SourceError as exc:
            if not self.partial:
                raise
            self.problems.append(f"skipped, could not be read: {exc}")
            return None
