"""`memwiki`: the command line of the store. Errors print one line on stderr and exit with status 2."""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memwiki.agents.as_json import jsonable
from memwiki.common.jsonl import iter_jsonl
from memwiki.errors import DamagedStoreError, InputFormatError, MemwikiError
from memwiki.store.config import resolve_store_path
from memwiki.store.layout import HOT_FILES, PERSONA_FILE, is_store
from memwiki.store.limits import check_line_sizes


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _source_options(p: argparse.ArgumentParser, default: object = None) -> None:
    """Where the memory is: before the command, or after it (`memwiki mcp --store DIR`, as MCP configs write it)."""
    p.add_argument("--store", default=default, help="store folder (default: $MEMWIKI_STORE or ./memory-store)")
    p.add_argument("--hermes-home", default=default, help="read a hermes-agent home in place (default $HERMES_HOME)")
    p.add_argument("--palace", default=default, help="read a MemPalace palace in place ($MEMPALACE_PALACE_PATH)")
    p.add_argument("--config", default=default, help="YAML file with store / hermes_home / palace ($MEMWIKI_CONFIG)")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"memwiki {version('memwiki')}"
    except PackageNotFoundError:
        return "memwiki (not installed)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memwiki", description="Keep, recall and publish an AI agent's memory.")
    p.add_argument("--version", action="version", version=_version())
    _source_options(p)
    common = argparse.ArgumentParser(add_help=False)
    _source_options(common, argparse.SUPPRESS)  # (given after the command, it wins; not given, it leaves p's)
    sub = _Commands(p.add_subparsers(dest="command", required=True, metavar="COMMAND"), common)
    _init_command(sub)
    sub.add_parser("context", help="print the per-turn context block (persona + hot memory)")
    _hot_commands(sub)
    _recall_command(sub)
    r = sub.add_parser("import", help="import JSON lines into L2 (memories) or L4 (session messages)")
    r.add_argument("file")
    r.add_argument("--layer", choices=("L2", "L4"), required=True)
    _kg_commands(sub.subcommands("kg", "knowledge graph (L3)", "kg_command"))
    s = sub.subcommands("session", "session history (L4)", "session_command")
    r = s.add_parser("search", help="full-text search, Chinese included")
    r.add_argument("query")
    r.add_argument("--limit", type=_positive, default=10)
    r.add_argument("--json", action="store_true")
    r = sub.add_parser("stats", help="what each layer holds")
    r.add_argument("--json", action="store_true")
    site = sub.subcommands("site", "the wiki", "site_command")
    r = site.add_parser("new", help="write DIR/mkdocs.yml and DIR/docs/ for a wiki of this memory (never overwrites)")
    r.add_argument("dir")
    sub.add_parser("mcp", help="serve the store (or read-only sources) to MCP clients over stdio")
    sub.add_parser("hermes-install", help="make the store hermes-agent's memory provider (in --hermes-home)")
    return p


def _init_command(sub: _Commands) -> None:
    r = sub.add_parser("init", help="create a store")
    r.add_argument(
        "--embedder",
        help="use (the default: offline, 512-d), ollama or ollama:MODEL; default $MEMWIKI_EMBEDDER; "
        "fixed for the store's life",
    )
    r.add_argument("--ollama-model", default="", help="with --embedder ollama; default qwen3-embedding:0.6b")
    r.add_argument("--ollama-host", default="", help="default $OLLAMA_HOST or http://127.0.0.1:11434")
    r.add_argument(
        "--chroma-url",
        help="keep L2 on this Chroma server (http://HOST:PORT of `chroma run`) in a collection of the store's own, "
        "not in the store folder; default $MEMWIKI_CHROMA_URL; kept in store.json (chroma.url)",
    )


def _hot_commands(sub: _Commands) -> None:
    r = sub.add_parser("remember", help="add a hot-memory entry")
    r.add_argument("text")
    r.add_argument("--target", choices=("memory", "user"), default="memory")
    r.add_argument("--category", help="preference, pitfall, rule, authorisation, network, environment, ...")
    r = sub.add_parser("replace", help="replace the hot-memory entry that OLD names")
    r.add_argument("old")
    r.add_argument("new")
    r.add_argument("--target", choices=("memory", "user"), default="memory")
    r = sub.add_parser("forget", help="remove the hot-memory entry that OLD names")
    r.add_argument("old")
    r.add_argument("--target", choices=("memory", "user"), default="memory")
    sub.add_parser("sink", help="sink non-core hot entries into L2 while a hot file is over its threshold")


def _recall_command(sub: _Commands) -> None:
    r = sub.add_parser("recall", help="recall in priority order: hot memory, L2, sessions, wiki files")
    r.add_argument("query", nargs="?")
    r.add_argument("--batch", metavar="FILE", help='JSON lines {"id": ..., "query": ...}')
    r.add_argument("-k", type=_positive, default=5, help="hits to return (default 5)")
    r.add_argument("--all-layers", action="store_true", help="do not stop at the first confident layer")
    r.add_argument("--json", action="store_true")


def _kg_commands(kg: _Commands) -> None:
    r = _fact_arguments(kg.add_parser("add", help="add a fact"), "object")
    r.add_argument("--from", dest="valid_from", help="valid from (YYYY-MM-DD)")
    r = kg.add_parser("query", help="facts about an entity")
    r.add_argument("entity")
    r.add_argument("--as-of", help="only facts valid on this date")
    r.add_argument("--history", action="store_true", help="include ended facts")
    r.add_argument("--json", action="store_true")
    r = _fact_arguments(kg.add_parser("invalidate", help="end a fact"), "object")
    r.add_argument("--to", dest="valid_to", help="ended on (YYYY-MM-DD, default today)")
    r = _fact_arguments(
        kg.add_parser("supersede", help="end (S, P, OLD) and add (S, P, NEW) from the same date, in one step"),
        "old",
        "new",
    )
    r.add_argument("--from", dest="valid_from", help="the change's date (YYYY-MM-DD, default today)")
    r = kg.add_parser("timeline", help="every fact about an entity, current and ended, in time order")
    r.add_argument("entity")
    r.add_argument("--json", action="store_true")


def _fact_arguments(r: argparse.ArgumentParser, *objects: str) -> argparse.ArgumentParser:
    """A fact's positional arguments: subject, predicate, then its object(s)."""
    for name in ("subject", "predicate", *objects):
        r.add_argument(name)
    return r


class _Commands:
    """Subcommands that each accept the source options too."""

    def __init__(self, subparsers: Any, common: argparse.ArgumentParser) -> None:  # noqa: ANN401 (argparse's)
        self._subparsers, self._common = subparsers, common

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:  # noqa: ANN401
        return self._subparsers.add_parser(name, parents=[self._common], **kwargs)

    def subcommands(self, name: str, help: str, dest: str) -> _Commands:  # noqa: A002 - argparse's word
        """A command with subcommands of its own (`memwiki kg add`)."""
        return _Commands(self.add_parser(name, help=help).add_subparsers(dest=dest, required=True), self._common)


def _site_new(args: argparse.Namespace) -> int:
    import shlex

    from memwiki.agents.site_new import new_site

    folder = Path(args.dir)
    written = new_site(folder, args.store, args.hermes_home, args.palace)
    print("wrote " + ", ".join(str(p) + ("/" if p.is_dir() else "") for p in written))
    where = shlex.quote(str(folder))
    print("next:")
    print(f"  cd {where} && mkdocs serve    # read it at http://127.0.0.1:8000 while the memory changes")
    print(f"  cd {where} && mkdocs build    # the site in {folder / 'site'}, ready for any static host")
    return 0


def _print_json(value: Any) -> None:
    print(json.dumps(jsonable(value), ensure_ascii=False))


def _print_hits(hits: Sequence[Any]) -> None:
    if not hits:
        print("(nothing recalled)")
    elif not any(hit.confident for hit in hits):
        print("(no confident match: every hit below is weak)")
    for hit in hits:
        text = " ".join(hit.text.split())
        weak = "" if hit.confident else "  (weak)"
        print(f"[{hit.layer}] {hit.score:.3f}  {hit.id}{weak}\n    {text[:300]}\n    why: {hit.why}")


def _recall_json(query_id: Any, query: str, hits: Sequence[Any]) -> dict[str, Any]:
    """One query's answer: its hits, and whether any of them is confident."""
    head = {"id": query_id} if query_id is not None else {}
    return {**head, "query": query, "confident": any(h.confident for h in hits), "hits": list(hits)}


def _uses_sources(args: argparse.Namespace) -> bool:
    """External sources are read when named, or, with no store anywhere, when their variables are set."""
    import os

    if args.hermes_home or args.palace:
        return True
    no_store = not (args.store or os.environ.get("MEMWIKI_STORE") or is_store(resolve_store_path()))
    if no_store and args.command != "init":
        args.hermes_home = "auto" if os.environ.get("HERMES_HOME") else None
        args.palace = "auto" if os.environ.get("MEMPALACE_PALACE_PATH") else None
    return bool(args.hermes_home or args.palace)


def _open_store(args: argparse.Namespace):  # noqa: ANN202
    from memwiki.store.store import Store

    return Store.open(resolve_store_path(args.store))


@contextlib.contextmanager
def _naming_damage(root: Path) -> Iterator[None]:
    """A SQLite or Chroma failure in the middle of a command becomes the one-line error naming the damaged part
    (SQLite's quick_check over the store's files says which), never a traceback."""
    try:
        yield
    except Exception as exc:
        if not (isinstance(exc, sqlite3.DatabaseError) or type(exc).__module__.startswith("chromadb")):
            raise
        from memwiki.store.damage import find_damage

        found = find_damage(root)
        if found:
            raise found[0] from None
        reason = " ".join(str(exc).split())
        raise DamagedStoreError(f"{root}: a layer of the store failed to read ({reason}); it may be damaged") from None


def _warnings_to_stderr() -> None:
    """Show the store's logged warnings (a query cut to what the embedder reads) as `memwiki: warning: ...`."""
    import logging

    class Stderr(logging.Handler):
        """Writes to whatever sys.stderr is when a warning comes (as logging's last-resort handler does)."""

        memwiki_cli = True

        def emit(self, record: logging.LogRecord) -> None:
            print(self.format(record), file=sys.stderr)

    logger = logging.getLogger("memwiki")
    if not any(getattr(h, "memwiki_cli", False) for h in logger.handlers):
        handler = Stderr(logging.WARNING)
        handler.setFormatter(logging.Formatter("memwiki: warning: %(message)s"))
        logger.addHandler(handler)


def _recall(args: argparse.Namespace, recall) -> None:  # noqa: ANN001
    _warnings_to_stderr()
    if args.batch and args.query:
        raise MemwikiError("recall takes a QUERY or --batch FILE, not both")
    if not args.batch:
        if args.query is None:
            raise MemwikiError("recall needs a QUERY (or --batch FILE)")
        hits = recall(args.query, k=args.k, all_layers=args.all_layers)
        _print_json(_recall_json(None, args.query, hits)) if args.json else _print_hits(hits)
        return
    path = Path(args.batch)
    rows = []
    for line, row in iter_jsonl(path):
        if not isinstance(row.get("query"), str) or not row["query"].strip():
            raise InputFormatError(f'{path}:{line}: needs a non-empty string "query"')
        rows.append(row)
    for row in rows:
        hits = recall(row["query"], k=args.k, all_layers=args.all_layers)
        if args.json:
            _print_json(_recall_json(row.get("id"), row["query"], hits))
        else:
            print(f"# {row.get('id')}: {row['query']}")
            _print_hits(hits)


def _apply_config_file(args: argparse.Namespace) -> None:
    """Fill --store / --hermes-home / --palace from a YAML config file; flags given on the line win."""
    import os

    import yaml

    from memwiki.common.textio import read_text

    path = args.config or os.environ.get("MEMWIKI_CONFIG")
    if not path:
        return
    try:
        config = yaml.safe_load(read_text(Path(path))) or {}
    except FileNotFoundError:
        raise MemwikiError(f"{path}: config file not found") from None
    except yaml.YAMLError as exc:
        raise InputFormatError(f"{path}: invalid YAML ({exc})") from None
    if not isinstance(config, dict) or set(config) - {"store", "hermes_home", "palace"}:
        raise InputFormatError(f"{path}: expected a mapping with keys store, hermes_home, palace")
    for key in ("store", "hermes_home", "palace"):
        if getattr(args, key) is None and config.get(key) is not None:
            setattr(args, key, str(config[key]))


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _refuse_undecodable(args)
    _apply_config_file(args)
    own = {"init": _init, "mcp": _mcp, "site": _site_new, "hermes-install": _hermes_install}
    if args.command in own:
        return own[args.command](args)
    if args.command in READS and (args.command != "kg" or args.kg_command in ("query", "timeline")):
        return _read(args)
    if _uses_sources(args):
        raise MemwikiError(f"`{args.command}` writes; external sources are read-only (use --store)")
    with _open_store(args) as store, _naming_damage(store.root):
        _write(args, store)
    return 0


def _init(args: argparse.Namespace) -> int:
    """`memwiki init`: a store made, or an existing one checked against the settings asked for."""
    import os

    from memwiki.store.config import CHROMA_URL_ENV, EMBEDDER_ENV, ChromaConfig, StoreConfig
    from memwiki.store.store import Store
    from memwiki.text.embedders import embedder_label, parse_embedder

    # flags, else the environment; an existing store keeps its own settings, and asking for others is an error
    spec = args.embedder or os.environ.get(EMBEDDER_ENV, "")
    url = args.chroma_url if args.chroma_url is not None else os.environ.get(CHROMA_URL_ENV, "")
    embedder = parse_embedder(spec or "use", args.ollama_model, args.ollama_host)
    try:
        chroma = ChromaConfig(url=url)
    except ValueError as exc:
        raise MemwikiError(f"--chroma-url / ${CHROMA_URL_ENV}: {exc}") from None
    root = resolve_store_path(args.store)
    new = not is_store(root)
    with Store.init(root, StoreConfig(embedder=embedder, chroma=chroma)) as store:
        kept = store.config
        soul = store.root / PERSONA_FILE
        if new and soul.stat().st_size == 0:  # a template to fill in, its guidance in a comment
            from memwiki.layers.persona import TEMPLATE

            soul.write_text(TEMPLATE, encoding="utf-8")
        if store.repaired:
            print(f"recreated missing parts, empty: {', '.join(store.repaired)}", file=sys.stderr)
        label = embedder_label(kept.embedder.name, kept.embedder.model)
        asked = (embedder.name, embedder.model)
        if (spec or args.ollama_model) and asked != (kept.embedder.name, kept.embedder.model):
            raise MemwikiError(f"{store.root}: already a store made with {label}")
        if url and chroma.url != kept.chroma.url:
            where = f"on the Chroma server at {kept.chroma.url}" if kept.chroma.url else "in its own folder"
            raise MemwikiError(f"{store.root}: already a store whose L2 is {where} (chroma.url in store.json)")
        where = f"{store.root / 'l2'}"
        if kept.chroma.url:
            where = f"collection {kept.chroma.collection} on the Chroma server at {kept.chroma.url}"
        print(f"store ready at {store.root} (embedder {label}/{kept.embedder.dim}; L2 in {where})")
    return 0


def _hermes_install(args: argparse.Namespace) -> int:
    from memwiki.agents.hermes_install import install
    from memwiki.readers.locate import hermes_home_path

    print(install(hermes_home_path(args.hermes_home), resolve_store_path(args.store)))
    return 0


READS = ("context", "recall", "session", "stats", "kg")  # (kg: its query and timeline)


def _read(args: argparse.Namespace) -> int:
    """A command that only reads, the same over the store and over read-only sources (`Opened`)."""
    from memwiki.agents.tools import Opened

    if _uses_sources(args):
        _answer(args, Opened.sources(args.store, args.hermes_home, args.palace))
        return 0
    with _open_store(args) as store, _naming_damage(store.root):  # (L2 opened beside the query's embedding)
        _answer(args, Opened(store.reader(), store.recaller_for_one_query, store))
    return 0


def _answer(args: argparse.Namespace, opened: Any) -> None:  # noqa: ANN401 - an Opened
    cmd = args.command
    if cmd == "context":
        text = opened.context()
        if not text.strip() and opened.store is not None:
            print(
                f"(nothing to inject yet: write who the agent is in {opened.store.root / PERSONA_FILE}, "
                'and add hot memory with `memwiki remember "..."`)',
                file=sys.stderr,
            )
        print(text)
    elif cmd == "recall":
        _recall(args, opened.recaller.recall)
    elif cmd == "session":
        _session_search(args, opened.source.search_sessions)
    elif cmd == "kg":
        _print_facts(args, _read_facts(args, opened.graph()))
    elif cmd == "stats":
        _stats(args, opened)


def _stats(args: argparse.Namespace, opened: Any) -> None:  # noqa: ANN401 - an Opened
    from memwiki.agents.tools import memwiki_stats

    stats = memwiki_stats(opened)
    _print_json(stats) if args.json else print(stats_summary(stats))


def _write(args: argparse.Namespace, store: Any) -> None:  # noqa: ANN401 - a Store
    """A command that writes to the store."""
    cmd = args.command
    if cmd == "remember":
        for rec in store.remember(args.text, args.target, args.category):
            print(f"sank into L2: {rec.memory_id} ({rec.category}): {rec.text[:80]}", file=sys.stderr)
        print(f"remembered in {args.target}")
    elif cmd == "replace":
        store.replace(args.old, args.new, args.target)
        print(f"replaced in {args.target}")
    elif cmd == "forget":
        store.forget(args.old, args.target)
        print(f"removed from {args.target}")
    elif cmd == "sink":
        records = store.sink()
        for rec in records:
            print(f"{rec.target} -> L2 {rec.memory_id} ({rec.category}): {rec.reason}")
        print(f"{len(records)} entries sank")
    elif cmd == "import":
        _import(args, store)
    elif cmd == "kg":
        _kg_write(args, store.graph)
        store.keep_page_vectors()


def _import(args: argparse.Namespace, store: Any) -> None:  # noqa: ANN401 - a Store
    path = Path(args.file)
    limit = store.config.limits.max_input_bytes  # a line over it: an error, nothing of the file written
    if args.layer == "L2":
        n = store.semantic.import_jsonl(path, progress=sys.stderr.isatty(), max_input_bytes=limit)
        print(f"imported {n} memories into L2")
        return
    check_line_sizes(path, limit)
    sessions, messages = store.sessions.import_jsonl(path, progress=sys.stderr.isatty())
    print(f"imported {messages} messages in {sessions} sessions into L4")
    print(f"embedded {store.keep_vectors():,} new texts for recall and the site")


def plural(n: int, one: str, many: str = "") -> str:
    """`1 memory`, `2 memories`, `1,024 facts`."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _chars(used: int, cap: int) -> str:
    share = f" ({used / cap:.0%})" if cap else ""
    return f"{used:,} / {cap:,} characters{share}"


def stats_summary(stats: dict[str, Any]) -> str:
    """`memwiki stats` for a person: one line per layer (the `--json` dict of a store or of external sources)."""
    source = stats["source"]
    head = f"{source['kind']} at {source['location']} · embedder {source['embedder']} ({source['dim']} dimensions)"
    rows: list[tuple[str, str]] = []
    if "L0" in stats:
        rows.append(("L0 persona", f"{PERSONA_FILE}: " + _chars(stats["L0"]["chars"], stats["L0"]["cap"])))
    hot = stats.get("L1") or {}
    files = [
        f"{HOT_FILES.get(target, target)}: {plural(f['entries'], 'entry', 'entries')}, {_chars(f['chars'], f['cap'])}"
        for target, f in hot.items()
    ]
    rows += [("L1 hot memory" if i == 0 else "", line) for i, line in enumerate(files or ["no hot files"])]
    l2 = stats["L2"]
    sunk = f" ({plural(l2['sunk'], 'entry', 'entries')} sunk from hot memory)"
    rows.append(("L2 semantic memory", plural(l2["memories"], "memory", "memories") + sunk))
    l3 = stats["L3"]
    facts = plural(l3["triples"], "fact")
    facts += f" ({l3['current']:,} current, {l3['ended']:,} ended)"
    rows.append(("L3 knowledge graph", f"{plural(l3['entities'], 'entity', 'entities')}, {facts}"))
    l4 = stats["L4"]
    sessions = plural(l4["sessions"], "session")
    sessions += f", {plural(l4['messages'], 'message')}"
    if l4.get("first"):
        sessions += f" ({l4['first'][:10]} to {l4['last'][:10]})"
    rows.append(("L4 session history", sessions))
    rows.append(("wiki", plural(stats["wiki"]["pages"], "page")))
    width = max(len(label) for label, _ in rows)
    return "\n".join([head, *(f"  {label:<{width}}  {text}" for label, text in rows)])


def _kg_write(args: argparse.Namespace, graph) -> None:  # noqa: ANN001 - a KnowledgeGraph
    if args.kg_command == "add":
        triple_id = graph.add_triple(args.subject, args.predicate, args.object, valid_from=args.valid_from)
        print(f"added {triple_id}")
    elif args.kg_command == "invalidate":
        n = graph.invalidate(args.subject, args.predicate, args.object, ended=args.valid_to)
        print(f"ended {plural(n, 'fact')}")
    elif args.kg_command == "supersede":
        triple_id = graph.supersede(args.subject, args.predicate, args.new, date=args.valid_from, old_object=args.old)
        print(f"superseded: {args.subject} —{args.predicate}→ {args.new} is {triple_id}")


def _read_facts(args: argparse.Namespace, graph) -> Sequence[Any]:  # noqa: ANN001 - a KnowledgeGraph or the like
    if args.kg_command == "timeline":
        return graph.timeline(args.entity)
    return graph.query_entity(args.entity, as_of=args.as_of, include_ended=args.history)


def _print_facts(args: argparse.Namespace, triples: Sequence[Any]) -> None:
    if args.json:
        _print_json(triples)
        return
    if not triples:
        print("(no facts)")
    for t in triples:
        span = f"{t.valid_from or '?'} → {t.valid_to or 'now'}"
        print(f"{t.subject_name or t.subject} —{t.predicate}→ {t.object_name or t.object}  [{span}]")


def _session_search(args: argparse.Namespace, search) -> None:  # noqa: ANN001
    hits = search(args.query, args.limit)
    if args.json:
        _print_json(hits)
        return
    if not hits:
        print("(no session matched)")
    for hit in hits:
        print(f"{hit.session.started}  {hit.session.id}  {hit.session.title}")
        for snip in hit.snippets:
            print(f"    {snip}")


def _mcp(args: argparse.Namespace) -> int:
    """`memwiki mcp`: the store, or read-only sources, served over stdio until the client closes it."""
    from memwiki.agents.mcp_server import serve
    from memwiki.agents.tools import open_named

    _uses_sources(args)  # (with no store anywhere, the hermes home and palace the environment names)
    serve(lambda: open_named(args.store, args.hermes_home, args.palace))
    return 0


def _refuse_undecodable(args: argparse.Namespace) -> None:
    """An argument that is not valid UTF-8 (`memwiki remember $'\\xff\\xfe'`) reaches Python as lone surrogates,
    which no layer can store: refuse it before anything is opened."""
    from memwiki.common.jsonl import unpaired_surrogate

    for name, value in vars(args).items():
        if isinstance(value, str | list) and unpaired_surrogate(value) is not None:
            flag = name.replace("_", "-")
            raise MemwikiError(f"{flag}: not valid UTF-8 text (check the terminal's encoding); nothing was written")


def main(argv: Sequence[str] | None = None) -> None:
    try:
        code = run(argv)
    except MemwikiError as exc:
        print(f"memwiki: error: {exc}", file=sys.stderr)
        code = 2
    except BrokenPipeError:  # the reader went away (`memwiki ... | head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 141
    except OSError as exc:  # a folder where a file should be, a full disk, a read-only mount: one line, no traceback
        from memwiki.errors import describe_os_error

        print(f"memwiki: error: {describe_os_error(exc)}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    main()
