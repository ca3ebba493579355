"""Screenshots of the built site's main pages with headless Chromium, served from a loopback HTTP server.

    python scripts/screenshot.py [--site site] [--out .cache/screenshots] [--width 1280] [--height 1600] [PAGE ...]

PAGE is a path under the site (default: the main pages of the demo wiki). Needs /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

DEFAULT_PAGES = (
    "index.html",
    "persona.html",
    "concepts/index.html",
    "concepts/juniper.html",
    "concepts/cloud-kb.html",
    "concepts/wanted/向量量化.html",
    "memory/index.html",
    "memory/category/other.html",
    "sessions/index.html",
    "sessions/s-1015-kb.html",
    "audit.html",
    "graph/index.html",
    "search/index.html",
)
CHROMIUM = "/usr/bin/chromium"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def serve(folder: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """A static server of `folder` on 127.0.0.1 (random port), running in a daemon thread."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def shoot(url: str, out: Path, width: int, height: int) -> None:
    profile = tempfile.mkdtemp(prefix="memwiki-chromium-")
    try:
        subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--screenshot={out}",
                f"--window-size={width},{height}",
                "--virtual-time-budget=4000",
                url,
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", default=list(DEFAULT_PAGES))
    parser.add_argument("--site", type=Path, default=Path("site"))
    parser.add_argument("--out", type=Path, default=Path(".cache/screenshots"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1600)
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"{args.site}: no built site (run `mkdocs build` first)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    server, base = serve(args.site)
    try:
        for page in args.pages:
            if not (args.site / page).is_file():
                print(f"skip {page}: not in the site", file=sys.stderr)
                continue
            out = args.out / (page.replace("/", "__").removesuffix(".html") + ".png")
            shoot(base + page, out, args.width, args.height)
            print(out)
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
