"""Writing the pages made from folder frames (memwiki.site.speed.theme_frame), on every CPU of the machine.

Converting a page's Markdown, filling its frame and making its search entries (Chinese segmented with jieba)
is independent from page to page and was most of a large cold build. `write_pages` splits the pages into
slices for worker processes forked from the build (they inherit the pages, frames and converter settings, so
nothing big is pickled), or does them in this process when there are few pages or one CPU. Each page's HTML
is written into the site, and into the page cache when there is one (two files: the site's may be edited in
place later). Workers send back each page's search entries and the Chinese runs they segmented.

Forking is done on Linux only, after the page cache's writer thread has finished; the workers run only
this module's Python (Markdown, jieba, file writes). Threads of libraries the build used (e.g. a Chroma
client's runtime) are not copied into a forked child, and nothing a worker calls waits on their locks.
"""

from __future__ import annotations

import multiprocessing
import posixpath
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from memwiki.site.generated import GeneratedPage
from memwiki.site.render import page_url
from memwiki.site.speed.cache_file import replace_file
from memwiki.site.speed.html_cache import output_path
from memwiki.site.speed.search_entries import EntryMaker, strip_search_attrs
from memwiki.site.speed.theme_frame import FastPages, ThemeFrame, frame_folder
from memwiki.workers import cores

MIN_PAGES_PER_WORKER = 300  # below this, forking costs more than it saves
SLICE = 200


@dataclass
class WriteJob:
    """Everything a worker needs (inherited through fork, never pickled)."""

    pages: list[GeneratedPage]
    frames: dict[str, ThemeFrame]
    nonce: str
    markdown_extensions: list[Any]
    mdx_configs: dict[str, Any]
    site_dir: str
    directory_urls: bool
    entries: EntryMaker | None  # None: no search index to add to
    cache_path: Any = None  # src_uri -> where the page cache keeps its HTML (None: no page cache)


_JOB: WriteJob | None = None  # the job of this process (set before the workers fork)


def _place(job: WriteJob, page: GeneratedPage, html: str) -> None:
    """Write a page's HTML into the cache (when there is one), then into the site."""
    data = html.encode("utf-8")
    if job.cache_path is not None:
        replace_file(job.cache_path(page.src_uri), data)
    replace_file(f"{job.site_dir}/{output_path(page.src_uri, job.directory_urls)}", data)


def _write_slice(bounds: tuple[int, int]) -> tuple[list[list[dict[str, Any]]], dict[str, str]]:
    """Pages [start, stop) of the job: their search entries, and the Chinese runs segmented here."""
    job = _JOB
    assert job is not None
    start, stop = bounds
    converter = FastPages(job.markdown_extensions, job.mdx_configs, job.nonce)
    out: list[list[dict[str, Any]]] = []
    for page in job.pages[start:stop]:
        done = converter.convert(page.markdown)
        content, entries = done.content, []
        if job.entries is not None:  # what Material's search plugin does
            if page.meta.get("lexical") is not False:
                url = quote(page_url(page.src_uri, job.directory_urls))
                entries = job.entries.entries(content, done.toc, url, page.title, done.meta)
            content = strip_search_attrs(content)
        stem = posixpath.splitext(posixpath.basename(page.src_uri))[0]
        frame = job.frames[frame_folder(page.src_uri)]
        _place(job, page, frame.fill(title=page.title, content=content, toc=done.toc, name=quote(stem)))
        out.append(entries)
    return out, (job.entries.segmented() if job.entries is not None else {})


def write_pages(job: WriteJob, workers: int = 0) -> list[list[dict[str, Any]]]:
    """Write every page of `job`; returns each page's search entries, in order. `workers`: 0 = as many as
    there are CPUs (when the pages are many), 1 = in this process."""
    global _JOB
    n = len(job.pages)
    if workers <= 0:
        workers = min(cores(), max(1, n // MIN_PAGES_PER_WORKER))
    if not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods():
        workers = 1  # forking a build is only safe (and possible) on Linux; elsewhere, in this process
    slices = [(i, min(i + SLICE, n)) for i in range(0, n, SLICE)]
    _JOB = job
    try:
        if workers <= 1 or n == 0:
            results = [_write_slice(b) for b in slices]
        else:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                results = list(pool.map(_write_slice, slices))
    finally:
        _JOB = None
    entries: list[list[dict[str, Any]]] = []
    for slice_entries, runs in results:
        entries += slice_entries
        if job.entries is not None:
            job.entries.learn(runs)
    return entries
