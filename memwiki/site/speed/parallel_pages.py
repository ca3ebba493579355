"""Writing the pages made from folder frames (memwiki.site.speed.theme_frame), on every CPU of the machine.

Converting a page's Markdown and filling its frame is independent from page to page. `write_pages` splits
the pages into slices for worker processes forked from the build (they inherit the pages, frames and
converter settings, so nothing big is pickled), or does them in this process when there are few pages or one
CPU. Each page's HTML is written into the site, and into the page cache when there is one (two files: the
site's may be edited in place later).

Forking is done on Linux only, after the page cache's writer thread has finished; the workers run only
this module's Python (Markdown, file writes). Threads of libraries the build used (e.g. a Chroma
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

from memwiki.common.workers import cores
from memwiki.site.model.generated import GeneratedPage
from memwiki.site.speed.cache_file import replace_file
from memwiki.site.speed.html_cache import output_path
from memwiki.site.speed.theme_frame import FastPages, ThemeFrame, frame_folder

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
    cache_path: Any = None  # src_uri -> where the page cache keeps its HTML (None: no page cache)


_JOB: WriteJob | None = None  # the job of this process (set before the workers fork)


def _place(job: WriteJob, page: GeneratedPage, html: str) -> None:
    """Write a page's HTML into the cache (when there is one), then into the site."""
    data = html.encode("utf-8")
    if job.cache_path is not None:
        replace_file(job.cache_path(page.src_uri), data)
    replace_file(f"{job.site_dir}/{output_path(page.src_uri, job.directory_urls)}", data)


def _write_slice(bounds: tuple[int, int]) -> None:
    """Write pages [start, stop) of the job."""
    job = _JOB
    assert job is not None
    start, stop = bounds
    converter = FastPages(job.markdown_extensions, job.mdx_configs, job.nonce)
    for page in job.pages[start:stop]:
        done = converter.convert(page.markdown)
        stem = posixpath.splitext(posixpath.basename(page.src_uri))[0]
        frame = job.frames[frame_folder(page.src_uri)]
        _place(job, page, frame.fill(title=page.title, content=done.content, toc=done.toc, name=quote(stem)))


def write_pages(job: WriteJob, workers: int = 0) -> None:
    """Write every page of `job`. `workers`: 0 = as many as there are CPUs (when the pages are many), 1 = in this
    process."""
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
            for bounds in slices:
                _write_slice(bounds)
        else:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                list(pool.map(_write_slice, slices))  # (raises what a worker raised)
    finally:
        _JOB = None
