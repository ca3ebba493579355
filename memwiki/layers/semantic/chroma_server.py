"""L2 on a Chroma server (`chroma run`, shipped in the chromadb wheel): the client, and its failures as errors.

A store whose `store.json` sets `chroma.url` keeps its collection (and that of its long memories' passages) on
the server, under a name of its own (`chroma.collection`, made unique by `memwiki init`), so stores can share a
server; its lexical side index stays in the store's `l2/` folder. Every call to the server goes through
`ServerClient` / `ServerCollection`, which turn a refused connection, a dropped one or the server's own refusal
into a one-line `ChromaServerError` naming the URL (never a traceback), and a vector of the wrong dimension
into an `EmbedderMismatchError`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from memwiki.errors import EmbedderMismatchError, MemwikiError
from memwiki.store.config import chroma_address
from memwiki.store.damage import unreachable_message


class ChromaServerError(MemwikiError):
    """A store's Chroma server cannot be reached, or refused a call."""


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


@contextlib.contextmanager
def talking_to(url: str) -> Iterator[None]:
    """Translate the failures of a call to the Chroma server at `url` (httpx's and chromadb's own errors)."""
    import httpx
    from chromadb.errors import ChromaError, InvalidArgumentError, NotFoundError

    try:
        yield
    except httpx.TransportError as exc:  # refused, reset, timed out: the server is down or went down
        raise ChromaServerError(unreachable_message(url, _reason(exc))) from None
    except InvalidArgumentError as exc:
        if "dimension" in str(exc):
            raise EmbedderMismatchError(f"the Chroma server at {url}: {_reason(exc)}") from None
        raise ChromaServerError(f"the Chroma server at {url} refused a call: {_reason(exc)}") from None
    except NotFoundError as exc:  # the collection was deleted on the server while we used it
        raise ChromaServerError(f"the Chroma server at {url}: {_reason(exc)}") from None
    except (ChromaError, httpx.HTTPError) as exc:
        raise ChromaServerError(f"the Chroma server at {url} failed a call: {_reason(exc)}") from None


class ServerCollection:
    """A chromadb Collection on a server, its calls' failures translated (`talking_to`)."""

    def __init__(self, url: str, collection: Any) -> None:
        self.url = url
        self._col = collection

    @property
    def name(self) -> str:
        return self._col.name

    @property
    def metadata(self) -> dict[str, Any] | None:
        return self._col.metadata

    @property
    def dimension(self) -> int | None:
        """The dimension of the vectors the collection holds (None while empty)."""
        return getattr(getattr(self._col, "_model", None), "dimension", None)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - chromadb's results
        with talking_to(self.url):
            return getattr(self._col, method)(*args, **kwargs)

    def count(self) -> int:
        return self._call("count")

    def get(self, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        return self._call("get", *args, **kwargs)

    def query(self, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        return self._call("query", *args, **kwargs)

    def upsert(self, *args: Any, **kwargs: Any) -> None:
        self._call("upsert", *args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> None:
        self._call("delete", *args, **kwargs)


class ServerClient:
    """A chromadb HttpClient, its calls' failures translated; collections come back as `ServerCollection`."""

    def __init__(self, url: str, client: Any) -> None:
        self.url = url
        self._client = client

    def get_or_create_collection(self, name: str, **kwargs: Any) -> ServerCollection:
        with talking_to(self.url):
            return ServerCollection(self.url, self._client.get_or_create_collection(name, **kwargs))

    def get_collection(self, name: str) -> ServerCollection | None:
        """The collection called `name`, or None when the server has none."""
        from chromadb.errors import NotFoundError

        with talking_to(self.url):
            try:
                return ServerCollection(self.url, self._client.get_collection(name, embedding_function=None))
            except NotFoundError:
                return None

    def get_max_batch_size(self) -> int:
        with talking_to(self.url):
            return self._client.get_max_batch_size()

    def close(self) -> None:
        self._client.close()


def connect(url: str) -> ServerClient:
    """A client of the Chroma server at `url`; a server that does not answer is a ChromaServerError."""
    import chromadb
    from chromadb.config import Settings

    host, port, ssl = chroma_address(url)
    try:  # HttpClient asks the server for its tenant and database at once
        client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=Settings(anonymized_telemetry=False))
    except Exception as exc:  # chromadb raises ValueError("Could not connect ...") from httpx's error
        raise ChromaServerError(unreachable_message(url, _reason(exc.__cause__ or exc.__context__ or exc))) from None
    return ServerClient(url, client)
