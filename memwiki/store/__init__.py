"""The store: one folder holding the five layers.

Below the layers, what every layer reads of the folder: its settings (`config`, `store.json`), where each layer's
files are (`layout`, the one place a file name is written), the input size limit, how a damaged part is named, and
the generation token that tells other processes to reload. Above the layers and recall: `Store` (`store`), the
operations an agent runs; its read-only `MemorySource` (`reader`); the one door that opens what a person named, a
store or read-only sources (`open_sources`); and the demo store."""


def __getattr__(name: str) -> object:
    """`from memwiki.store import Store` (the Python API the README shows), imported when asked: a layer reading
    the folder's settings (`memwiki.store.config`) does not load the store and every layer with it."""
    if name == "Store":
        from memwiki.store.store import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
