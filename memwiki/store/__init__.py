"""The store: one folder holding the five layers.

Below the layers, what every layer reads of the folder: its settings (`config`, `store.json`), where each layer's
files are (`layout`, the one place a file name is written), the input size limit, how a damaged part is named, and
the generation token that tells other processes to reload. Above the layers and recall: `Store` (`store`), the
operations an agent runs; its read-only `MemorySource` (`reader`); the one door that opens what a person named, a
store or read-only sources (`open_sources`); and the demo store."""
