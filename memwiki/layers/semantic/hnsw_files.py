"""Check a local Chroma folder's vector index files before Chroma loads them.

Chroma 1.5.9 loads an HNSW segment's files without checking them: a zeroed `link_lists.bin` or an overwritten
`data_level0.bin` ends the process with a segmentation fault, and a damaged `length.bin`, a truncated
`data_level0.bin` or a deleted segment folder leave rows silently unreachable by their own vector. What is
checked here is what hnswlib's own save format promises (`header.bin`: version, capacity, element count,
element size and offsets; one element of `data_level0.bin` per row, up to its capacity, with its neighbour count
and label; one norm per row in `length.bin`, the same; one size-prefixed link list per row in `link_lists.bin`),
and that every vector segment that SQLite says was saved still has its folder. A finding is a one-line reason:
memwiki.layers.semantic.recovery rebuilds.
"""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

import numpy as np

from memwiki.common.sqlitedb import connect_readonly
from memwiki.errors import MemwikiError

_HEADER = struct.Struct("<i6QiI3QdQ")  # version, offsetLevel0, max_elements, cur_element_count,
# size_data_per_element, label_offset, offsetData, maxlevel, enterpoint_node, maxM, maxM0, M, mult, ef_construction
_SAMPLE = 256  # elements whose neighbour count and label are read (first, last and spread between)


def segment_damage(folder: Path) -> str | None:
    """Why a saved vector segment of the Chroma folder `folder` would not load right, or None."""
    db = Path(folder) / "chroma.sqlite3"
    if not db.is_file():
        return None
    try:
        with connect_readonly(db) as conn:
            saved = conn.execute(
                "SELECT s.id FROM segments s JOIN max_seq_id m ON m.segment_id = s.id "
                "WHERE s.scope = 'VECTOR' AND m.seq_id > 0"
            ).fetchall()
    except (sqlite3.Error, MemwikiError):
        return None  # Chroma's own open says what is wrong with the database
    for (segment_id,) in saved:
        if (problem := _files_damage(Path(folder) / segment_id)) is not None:
            return f"vector segment {segment_id}: {problem}"
    return None


def _files_damage(segment: Path) -> str | None:
    if not segment.is_dir():
        return "its folder is missing"
    files = {name: segment / name for name in ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin")}
    if not files["header.bin"].is_file():
        return None  # saved before its first index write (the rows are in Chroma's log)
    missing = [name for name, path in files.items() if not path.is_file()]
    if missing:
        return f"{', '.join(missing)} missing"
    raw = files["header.bin"].read_bytes()
    if len(raw) < _HEADER.size:
        return "header.bin is cut short"
    (version, _, capacity, count, element, label_at, data_at, levels, entry, max_m, max_m0, m, _, _) = (
        _HEADER.unpack_from(raw)
    )
    if (
        version != 1
        or not 0 <= count <= capacity
        or max_m0 != 2 * m
        or data_at != max_m0 * 4 + 4
        or label_at <= data_at
        or element != label_at + 8
        or not 0 <= levels < 64
        or (count and entry >= count)
    ):
        return "header.bin does not describe an index"
    size = files["data_level0.bin"].stat().st_size  # (saved to its capacity, or to its rows)
    if size % element or not count * element <= size <= max(capacity, count) * element:
        return f"data_level0.bin holds {size} bytes, not {count} rows of {element}"
    size = files["length.bin"].stat().st_size
    if size % 4 or not 4 * count <= size <= 4 * max(capacity, count):
        return f"length.bin holds {size} bytes, not {count} norms"
    norms = np.fromfile(files["length.bin"], dtype="<f4", count=count)
    if count and not (np.isfinite(norms).all() and (norms > 0).all() and (norms < 1e6).all()):
        return "length.bin holds norms no vector has"
    if (problem := _level0_damage(files["data_level0.bin"], count, element, label_at, max_m0)) is not None:
        return problem
    return _links_damage(files["link_lists.bin"], count, max_m * 4 + 4, levels)


def _level0_damage(path: Path, count: int, element: int, label_at: int, max_m0: int) -> str | None:
    """A sample of rows: each neighbour count within the index's limit, each label unique and not all zero."""
    if not count:
        return None
    rows = sorted({0, count - 1, *np.linspace(0, count - 1, min(count, _SAMPLE), dtype=np.int64).tolist()})
    data = np.memmap(path, dtype=np.uint8, mode="r", shape=(count, element))
    # (hnswlib keeps a row's neighbour count in the low two bytes of its header and its deleted mark in the third)
    neighbours = data[rows, :2].copy().view("<u2").ravel()
    labels = data[rows, label_at : label_at + 8].copy().view("<u8").ravel()
    if (neighbours > max_m0).any():
        return "data_level0.bin holds rows with more neighbours than the index allows"
    if len(rows) > 1 and (len(set(labels.tolist())) < len(rows) or (neighbours == 0).all()):
        return "data_level0.bin holds rows with the same label or no neighbours"
    return None


def _links_damage(path: Path, count: int, per_level: int, levels: int) -> str | None:
    """`link_lists.bin`: per row a 4-byte size (a whole number of levels) and that many bytes, to the file's end."""
    raw = path.read_bytes()
    at = 0
    for _ in range(count):
        if at + 4 > len(raw):
            return "link_lists.bin is cut short"
        (size,) = struct.unpack_from("<I", raw, at)
        if size % per_level or size // per_level > levels:
            return "link_lists.bin holds a link list no row has"
        at += 4 + size
    return None if at == len(raw) else "link_lists.bin does not end where its rows do"
