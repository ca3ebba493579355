"""A store's settings, kept in `store.json` at the root of the store folder."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memory.errors import InputFormatError, NotAStoreError
from memory.textio import atomic_write_text, read_text

STORE_FILE = "store.json"
FORMAT_VERSION = 1
DEFAULT_STORE = "memory-store"


@dataclass
class EmbedderConfig:
    """Which embedder made the store's vectors. `dim` is fixed when the store is created."""

    name: str = "use-multilingual-v3"  # or "ollama"
    dim: int = 512
    model: str = ""  # ollama model name, e.g. qwen3-embedding:0.6b
    host: str = ""  # ollama host; empty means OLLAMA_HOST or the client's default


@dataclass
class Caps:
    """Character caps of the capped files, counted over the joined text as hermes-agent does."""

    persona: int = 3000
    memory: int = 2200
    user: int = 1375


# A hard limit per input (one import line, one memory or message): an agent logging a whole file into one memory
# must get an error, not a machine out of memory. 8 MB is past anything a conversation writes; a 5 MB memory
# imports in 0.44 GB peak, 84 s CPU (scripts/bench_huge.py; it took 15.8 GB before passages).
DEFAULT_MAX_INPUT_BYTES = 8_000_000


@dataclass
class Limits:
    """Hard size limits on what the store takes in (UTF-8 bytes)."""

    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES

    def __post_init__(self) -> None:
        value = self.max_input_bytes
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TypeError(f"limits.max_input_bytes must be a positive whole number of bytes, not {value!r}")


@dataclass
class StoreConfig:
    """Everything `store.json` holds."""

    version: int = FORMAT_VERSION
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    caps: Caps = field(default_factory=Caps)
    limits: Limits = field(default_factory=Limits)
    overflow_threshold: float = 0.70
    created_at: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str) -> StoreConfig:
        try:
            raw = json.loads(text)
            return cls(
                version=int(raw.get("version", FORMAT_VERSION)),
                embedder=EmbedderConfig(**raw.get("embedder", {})),
                caps=Caps(**raw.get("caps", {})),
                limits=Limits(**raw.get("limits", {})),
                overflow_threshold=float(raw.get("overflow_threshold", 0.70)),
                created_at=str(raw.get("created_at", "")),
            )
        except (ValueError, TypeError, AttributeError) as exc:
            raise InputFormatError(f"{where}: not a valid store configuration ({exc})") from None


def resolve_store_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The store folder: the explicit one, else $MEMWIKI_STORE, else ./memory-store."""
    return Path(explicit or os.environ.get("MEMWIKI_STORE") or DEFAULT_STORE)


def load_config(root: Path) -> StoreConfig:
    """Read `store.json`; a folder without it is not a store."""
    path = root / STORE_FILE
    if not path.is_file():
        raise NotAStoreError(f"{root}: not a memwiki store (no {STORE_FILE}; run `memwiki init`)")
    config = StoreConfig.from_json(read_text(path), str(path))
    if config.version > FORMAT_VERSION:
        raise NotAStoreError(f"{path}: store format {config.version} is newer than this memwiki ({FORMAT_VERSION})")
    return config


def save_config(root: Path, config: StoreConfig) -> None:
    atomic_write_text(root / STORE_FILE, config.to_json())
