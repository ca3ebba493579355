"""A builder run in a forked process while the others run in the build's own (BuildSpeed.apart): what it made comes
back as plain data.

A rebuild's builders are Python loops over the records, on one core; a builder that reads only what the build holds
(the records, the concept index, the audit's findings) can be made beside them. The forked process is cut off from
the source (speed.layer_cache: its connections and threads belong to the build's process): a builder that needs
more gives up, and is run in the build's process after all. What it keeps across builds (its page memos, the texts
it rendered) it saves itself; pages come back with their fingerprints, assets by name when the page cache holds
them (a 100k store's search ships 200 MB of files, a rebuild a few of them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from memwiki.errors import MemwikiError
from memwiki.site.model.build_context import BuildContext
from memwiki.site.model.generated import GeneratedAsset, GeneratedPage
from memwiki.site.speed.builder_speed import Pending
from memwiki.site.speed.layer_cache import CachedSource, SourceCutOff

Result = tuple[list[GeneratedPage], list[GeneratedAsset]]
Plain = tuple[Any, ...]  # a Result as plain data (`as_data`)
T = TypeVar("T")


def as_data(result: Result, holds_asset: Callable[[str], bool] | None, notes: list[str]) -> Plain:
    """A builder's pages and assets as plain data: an asset the page cache holds goes by its name alone."""
    pages, assets = result
    holds = holds_asset or (lambda _: False)
    page_rows = [(p.src_uri, p.title, p.markdown, p.section, p.in_nav, p.meta, p.fingerprint, p.kept) for p in pages]
    asset_rows = [(a.dest_uri, None if holds(a.digest) else a.content, a.numbers, a.digest) for a in assets]
    return page_rows, asset_rows, notes


def from_data(ctx: BuildContext, plain: Plain) -> Result:
    """What `as_data` made plain, back (its notes added to the build's)."""
    page_rows, asset_rows, notes = plain
    ctx.notes.extend(notes)
    pages = [
        GeneratedPage(uri, title, markdown, section, in_nav, meta, fingerprint=fingerprint, kept=kept)
        for uri, title, markdown, section, in_nav, meta, fingerprint, kept in page_rows
    ]
    assets = [
        GeneratedAsset(dest, content if content is not None else functools.partial(_held, dest), numbers, name)
        for dest, content, numbers, name in asset_rows
    ]
    return pages, assets


def _held(dest_uri: str) -> bytes:
    raise MemwikiError(f"{dest_uri}: made by a forked process as the page cache held it, which then lost it")


def apart(ctx: BuildContext, name: str, work: Callable[[], T], in_child: Callable[[], None] | None = None) -> None:
    """Start `work()` in a forked process cut off from the source (`in_child()` run there first), its value to be
    `taken` by `name`; nothing is started when the build may not fork, or when this source cannot be cut off, its
    layers not being kept. Where the host cannot fork, `work()` is done when its value is taken."""
    source = ctx.source
    if not (isinstance(source, CachedSource) and ctx.speed.may_fork):
        return

    def cut_off() -> None:
        if in_child is not None:
            in_child()
        source.cut_off()

    def guarded() -> tuple[bool, T | None]:
        try:
            return True, work()
        except SourceCutOff:  # (it needed more of the source than is kept)
            return False, None

    ctx.part(_Handed).pending[name] = ctx.speed.apart(name, "", guarded, keep=False, in_child=cut_off)


def taken(ctx: BuildContext, name: str) -> tuple[bool, Any]:
    """What `apart` started under `name` gave (taken once): (True, its value), or (False, None) when nothing was
    started or the work needed the source (it is then done in the build's process)."""
    pending = ctx.part(_Handed).pending.pop(name, None)
    return pending.result() if pending is not None else (False, None)


class _Handed:
    """The work this build handed to forked processes, by name (ctx.part)."""

    def __init__(self, ctx: BuildContext) -> None:
        self.pending: dict[str, Pending[tuple[bool, Any]]] = {}


def start(
    ctx: BuildContext, name: str, build: Callable[[BuildContext], Result], save: Callable[[], None] | None = None
) -> None:
    """`build(ctx)` in a forked process (`apart`), its pages and assets then taken by `result`. The process saves
    the page memos it made, and calls `save()` for what else it keeps (what it derived from texts)."""
    memos, forked = ctx.speed.memo_count(), []

    def work() -> Plain:
        notes = len(ctx.notes)
        made = build(ctx)
        if not forked:  # (the build could not fork: the builder ran here, where the build saves, its notes added)
            return as_data(made, ctx.speed.holds_asset, [])
        ctx.speed.save_memos(since=memos)
        if save is not None:
            save()
        return as_data(made, ctx.speed.holds_asset, ctx.notes[notes:])

    apart(ctx, name, work, in_child=lambda: forked.append(True))


def result(ctx: BuildContext, name: str, build: Callable[[BuildContext], Result]) -> Result:
    """What `start` made in a forked process under `name`, or `build(ctx)` made here (nothing was forked, or what
    was needed the source)."""
    made, plain = taken(ctx, name)
    return from_data(ctx, plain) if made else build(ctx)
