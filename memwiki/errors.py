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


class DiskFullError(MemwikiError):
    """A write found no space left: nothing is damaged, the command can run again once space is freed."""


class DamagedStoreError(MemwikiError):
    """A part of the store cannot be read (a damaged or half-written file); the message names the part,
    its file and what to do."""


def disk_full_message(where: object) -> str:
    """The one wording for a write that found no space: a full disk is no damage."""
    return f"disk full while writing {where}: nothing is damaged; free some space and run it again"


def describe_os_error(exc: OSError) -> str:
    """One line for a person from an operating-system error: what happened to which file, and what to do."""
    import errno

    where = exc.filename or "a store file"
    if isinstance(exc, IsADirectoryError):
        return f"{where}: a folder where memwiki expects a file: move it aside"
    if isinstance(exc, NotADirectoryError):
        return f"{where}: a file where memwiki expects a folder: move it aside"
    if isinstance(exc, FileNotFoundError):
        return f"{where}: no longer there (was the store moved or deleted?); nothing was written"
    if exc.errno == errno.ENOSPC or exc.errno == errno.EDQUOT:
        return disk_full_message(where)
    if exc.errno == errno.EROFS:
        return f"{where}: the file system is read-only; nothing was written"
    if isinstance(exc, PermissionError):
        return f"{where}: permission denied"
    return f"{where}: {exc.strerror or exc}"
