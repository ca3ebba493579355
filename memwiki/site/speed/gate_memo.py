"""The privacy gate's verdicts kept across builds: a text judged by the last build is not judged again.

A rebuild after one memory changed reads that memory's layer again (`memwiki.site.speed.layer_cache`), and each of
the layer's other texts went through every detector class again. Here each text the gate judged is kept by a 16-byte
hash, under a version key of the code, the rules and the redaction key: whether it makes its record private (a
marker, a private word or pattern), and what is shown of it (0: as written; else the text shown and the redactions
made, by kind), hashed with the build's local folders, which the text shown also depends on.

A layer of many records (L2's memories) is also kept record by record: the hash of a record's fields, with what
its gate verdict depends on besides the rules (the local folders, the names and sessions withheld), gives whether it
was shown and what was shown of it, so a rebuild after one memory changed judges that memory alone.

They are kept in a SQLite table (speed.kept_table), read a key at a time: a rebuild asks about the few texts and
records that changed.

Only hashes and what the site may show are kept, never a secret: a secret redacted by a kept verdict is therefore
not among the secrets the site scan looks for copies of (`PrivacyFilter.redacted`), as for a layer kept whole.
"""

from __future__ import annotations

import hashlib
import marshal
from collections import Counter
from pathlib import Path

from memwiki.site.speed import cache_file
from memwiki.site.speed.kept_table import KeptTable

LIMIT = 2_000_000  # texts kept; past it the memo starts again (a store edited for years)
AS_WRITTEN = 0  # the value of a text shown as written
_FORMER = ("gate-memo.marshal", "gate-memo.marshal.journal")  # the memo's files before it was a table


def _key(text: str, what: bytes, salt: bytes = b"") -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16, person=what, salt=salt).digest()


def folders_salt(folders: object) -> bytes:
    """What the text shown depends on besides the rules: the local folders it shortens (`repr`-able)."""
    return hashlib.blake2b(repr(folders).encode("utf-8", "surrogatepass"), digest_size=16).digest()


def record_key(values: tuple, salt: bytes) -> bytes | None:
    """A record's key in the memo: its fields' values (plain data, `marshal`ed) and `salt`; None when a field is
    no plain data (the record is then judged every build)."""
    try:
        blob = marshal.dumps(values)
    except ValueError:
        return None
    return hashlib.blake2b(blob, digest_size=16, person=b"record", salt=salt).digest()


class GateMemo:
    """Verdicts of the gate kept in `path` under the version `key` (see the module's docstring)."""

    def __init__(self, path: Path, key: str) -> None:
        self._table = KeptTable(path, cache_file.version("gate-memo", key))
        self._new: dict[bytes, object] = {}  # (what this build judged: saved by `save`)
        for old in _FORMER:  # (where the verdicts were kept whole before)
            (path.parent / old).unlink(missing_ok=True)

    def _get(self, key: bytes) -> object:
        return self._new[key] if key in self._new else self._table.get(key)

    def shown(self, text: str, salt: bytes) -> tuple[str, Counter[str]] | None:
        """What the gate showed of `text` and the redactions it made, when a build with these folders judged it."""
        kept = self._get(_key(text, b"shown", salt))
        if kept == AS_WRITTEN:
            return text, Counter()
        if isinstance(kept, tuple) and len(kept) == 2 and isinstance(kept[0], str) and isinstance(kept[1], dict):
            return kept[0], Counter(kept[1])
        return None

    def put_shown(self, text: str, salt: bytes, shown: str, made: Counter[str]) -> None:
        self._new[_key(text, b"shown", salt)] = AS_WRITTEN if shown == text and not made else (shown, dict(made))

    def private(self, text: str) -> bool | None:
        """Whether `text` makes its record private, when a build judged it."""
        kept = self._get(_key(text, b"private"))
        return kept if isinstance(kept, bool) else None

    def put_private(self, text: str, verdict: bool) -> None:
        self._new[_key(text, b"private")] = verdict

    def record(self, key: bytes) -> tuple[bool | str, tuple | None, dict[str, int]] | None:
        """What a build made of the record with this key (`record_key`): its verdict (True: shown, else why it was
        withheld), the fields shown (None: as written) and the redactions made, by kind."""
        kept = self._get(key)
        if not (isinstance(kept, tuple) and len(kept) == 3 and isinstance(kept[2], dict)):
            return None
        verdict, shown, made = kept
        if not isinstance(verdict, (bool, str)) or not (shown == AS_WRITTEN or isinstance(shown, tuple)):
            return None  # (not what `put_record` writes: judged again)
        return verdict, None if shown == AS_WRITTEN else shown, made

    def put_record(self, key: bytes, verdict: bool | str, shown: tuple | None, made: Counter[str]) -> None:
        self._new[key] = (verdict, AS_WRITTEN if shown is None else shown, dict(made))

    def save(self) -> None:
        self._table.save(self._new, limit=LIMIT)
        self._new.clear()
        self._table.close()
