"""Turn the demo's plain-text sources (`demo/`) into a real store, only when the sources changed.

Sources: SOUL.md, MEMORY.md, USER.md (hermes format), hot_adds.jsonl (entries added through the real
add path, so some sink into L2), memories.jsonl (L2 import format), graph.jsonl (add / supersede /
invalidate operations), sessions.jsonl (L4 import format), wiki/*.md (concept pages).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from memwiki.common.jsonl import iter_jsonl
from memwiki.common.textio import atomic_write_text, read_text
from memwiki.errors import InputFormatError, MemwikiError
from memwiki.layers.hot.files import parse_entries
from memwiki.store.layout import HOT_FILES, PERSONA_FILE
from memwiki.store.store import Store

STAMP = ".demo-sources.sha1"


def sources_hash(src: Path) -> str:
    """A hash over every file of the demo sources and of the code that turns them into a store (a change
    to how entries sink, say, must rebuild the demo store too)."""
    digest = hashlib.sha1()
    code = Path(__file__).resolve().parents[1]  # memwiki/
    for root in (src, code):
        for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            if root == code and path.relative_to(code).parts[0] == "site":
                continue  # the wiki's code does not make the store
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build_demo_store(src: Path, dest: Path) -> Path:
    """Build the store at `dest` from `src` unless it was already built from the same sources.

    The store is built in a sibling temp folder and swapped in at the end, so an interrupted build
    never leaves a half-written store at `dest`.
    """
    src, dest = Path(src), Path(dest)
    wanted = sources_hash(src)
    if (dest / STAMP).is_file() and (dest / STAMP).read_text().strip() == wanted:
        return dest
    if dest.exists() and not (dest / STAMP).is_file() and any(dest.iterdir()):
        raise MemwikiError(
            f"{dest}: not a demo store built by memwiki (no {STAMP}); refusing to replace it with the demo. "
            "Point the demo at an empty or new folder."
        )
    tmp = dest.with_name(dest.name + ".building")
    shutil.rmtree(tmp, ignore_errors=True)
    with Store.init(tmp) as store:
        _load(store, src)
    atomic_write_text(tmp / STAMP, wanted + "\n")
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    tmp.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
    return dest


def _load(store: Store, src: Path) -> None:
    if (src / PERSONA_FILE).is_file():  # (the demo's sources are named as a store's files)
        store.set_persona(read_text(src / PERSONA_FILE))
    for target, name in HOT_FILES.items():
        if (src / name).is_file():
            store.hot(target).write_entries(parse_entries(read_text(src / name)))
    if (src / "memories.jsonl").is_file():
        store.semantic.import_jsonl(src / "memories.jsonl")
    if (src / "graph.jsonl").is_file():
        _load_graph(store, src / "graph.jsonl")
    if (src / "sessions.jsonl").is_file():
        store.sessions.import_jsonl(src / "sessions.jsonl")
    if (src / "wiki").is_dir():
        shutil.copytree(src / "wiki", store.wiki_dir, dirs_exist_ok=True)
    if (src / "hot_adds.jsonl").is_file():
        for _, row in iter_jsonl(src / "hot_adds.jsonl"):
            store.remember(row["text"], row.get("target", "memory"), row.get("category"))


def _load_graph(store: Store, path: Path) -> None:
    graph = store.graph
    for line, op in iter_jsonl(path):
        kind = op.get("op", "add")
        try:
            if kind == "add":
                if op.get("subject_type"):
                    graph.add_entity(op["subject"], op["subject_type"])
                if op.get("object_type"):
                    graph.add_entity(op["object"], op["object_type"])
                graph.add_triple(
                    op["subject"],
                    op["predicate"],
                    op["object"],
                    valid_from=op.get("from"),
                    valid_to=op.get("to"),
                    confidence=float(op.get("confidence", 1.0)),
                    source_file=op.get("source"),
                )
            elif kind == "supersede":
                graph.supersede(op["subject"], op["predicate"], op["object"], date=op.get("date"))
            elif kind == "invalidate":
                graph.invalidate(op["subject"], op["predicate"], op["object"], ended=op.get("date"))
            else:
                raise InputFormatError(f"{path}:{line}: unknown op {kind!r} (add, supersede, invalidate)")
        except KeyError as exc:
            raise InputFormatError(f"{path}:{line}: missing key {exc}") from None
