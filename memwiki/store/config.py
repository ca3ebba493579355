"""A store's settings, kept in `store.json` at the root of the store folder."""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from memwiki.common.textio import atomic_write_text, read_text
from memwiki.errors import InputFormatError, NotAStoreError
from memwiki.store.layout import STORE_FILE

FORMAT_VERSION = 1
DEFAULT_STORE = "memory-store"
# Read by `memwiki init` when its flags are not given (then kept in store.json; later commands read only that):
CHROMA_URL_ENV = "MEMWIKI_CHROMA_URL"  # put L2 on this Chroma server
EMBEDDER_ENV = "MEMWIKI_EMBEDDER"  # `use`, `ollama` or `ollama:MODEL`
EMBEDDED_COLLECTION = "memories"  # the collection of a store whose L2 is in its own folder
CHROMA_DEFAULT_PORT = 8000  # `chroma run`'s
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,498}[A-Za-z0-9]$")  # Chroma's rule, room for "-passages"


@dataclass
class EmbedderConfig:
    """Which embedder made the store's vectors. `dim` is fixed when the store is created."""

    name: str = "use-multilingual-v3"  # or "ollama"
    dim: int = 512
    model: str = ""  # ollama model name, e.g. qwen3-embedding:0.6b
    host: str = ""  # ollama host; empty means OLLAMA_HOST or the client's default


def chroma_address(url: str) -> tuple[str, int, bool]:
    """(host, port, ssl) of a Chroma server URL `http[s]://HOST[:PORT]`; anything else is a ValueError saying
    what is expected."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1 or parts.path not in ("", "/"):
        raise ValueError(f"{url!r} is not a Chroma server address (expected http://HOST:PORT)")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"{url!r}: a Chroma server address is http://HOST:PORT, nothing more")
    return parts.hostname, port or CHROMA_DEFAULT_PORT, parts.scheme == "https"


def new_collection_name(root: Path) -> str:
    """A collection name no other store on a shared server has: `memwiki-<folder name>-<8 random hex digits>`."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(root).resolve().name).strip("._-")[:40]
    return f"memwiki-{slug + '-' if slug else ''}{secrets.token_hex(4)}"


@dataclass
class ChromaConfig:
    """Where L2's Chroma collection lives: the store's own `l2/` folder (`url` empty, the embedded default) or
    a Chroma server (`chroma run`), whose collection is this store's alone: two stores can share a server."""

    url: str = ""  # http://HOST:PORT of a Chroma server; empty: chromadb.PersistentClient in l2/
    collection: str = EMBEDDED_COLLECTION

    def __post_init__(self) -> None:
        if self.url:
            chroma_address(self.url)
            self.url = self.url.strip().rstrip("/")
        if not _COLLECTION_NAME.match(self.collection):
            raise ValueError(f"chroma.collection {self.collection!r}: 3 to 500 characters of A-Z a-z 0-9 . _ -")


@dataclass
class Caps:
    """Character caps of the capped files, counted over the joined text as hermes-agent does."""

    persona: int = 3000
    memory: int = 2200
    user: int = 1375

    def __post_init__(self) -> None:
        for name in ("persona", "memory", "user"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 100_000_000:
                raise TypeError(
                    f"caps.{name} must be a whole number of characters from 100 to 100,000,000, not {value!r}"
                )


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
    chroma: ChromaConfig = field(default_factory=ChromaConfig)  # absent from store.json before scale-out: embedded
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
            if not isinstance(raw, dict) or "version" not in raw or "embedder" not in raw:
                raise ValueError('an object with at least "version" and "embedder" (memwiki init writes them)')
            threshold = float(raw.get("overflow_threshold", 0.70))
            if not 0.05 <= threshold <= 1.0:
                raise ValueError(f"overflow_threshold must be between 0.05 and 1, not {threshold!r}")
            return cls(
                version=int(raw.get("version", FORMAT_VERSION)),
                embedder=EmbedderConfig(**raw.get("embedder", {})),
                chroma=ChromaConfig(**raw.get("chroma", {})),
                caps=Caps(**raw.get("caps", {})),
                limits=Limits(**raw.get("limits", {})),
                overflow_threshold=threshold,
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
