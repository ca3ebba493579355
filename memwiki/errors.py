"""The errors memwiki raises. Each carries a message meant for a person: what is wrong and where."""


class MemwikiError(Exception):
    """Base class: anything memwiki refuses, with a one-line reason."""


class NotAStoreError(MemwikiError):
    """The folder is not a memwiki store (no store.json)."""


class StoreLockedError(MemwikiError):
    """Another process holds the store's write lock."""


class EmbedderMismatchError(MemwikiError):
    """The store was made with another embedder or dimension."""


class CapacityError(MemwikiError):
    """An entry does not fit in a capped file (persona or hot memory)."""


class EntryMatchError(MemwikiError):
    """`old_text` matched no entry, or several different ones."""


class DuplicateEntryError(MemwikiError):
    """The exact entry is already there."""


class HandEditedError(MemwikiError):
    """A hot file was edited by hand so that it no longer round-trips; it was backed up, not overwritten."""


class InputFormatError(MemwikiError):
    """An input file is malformed; the message names the file and line."""


class SourceError(MemwikiError):
    """An external source (hermes home, MemPalace palace) cannot be read."""


class InputTooLargeError(InputFormatError):
    """One input (an import line, a memory, a message) is over the store's hard size limit."""


class DamagedStoreError(MemwikiError):
    """A part of the store cannot be read (a damaged or half-written file); the message names the part,
    its file and what to do."""
