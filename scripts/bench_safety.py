"""Publish-safety figures: canaries planted in every field of every layer and found in a default build's site,
and what the privacy gate redacts in the demo and the fixtures (the false-positive check).

    python scripts/bench_safety.py                 # canaries (a real MkDocs build) + false positives
    python scripts/bench_safety.py --per-field 2   # more canaries
    python scripts/bench_safety.py --no-build      # false positives only
    python scripts/bench_safety.py --all           # also: XSS payloads in Chromium, kills, the 5 MB memory

With --all it runs, and prints the closing lines of, `pytest tests/test_xss_browser.py` (payloads planted, run
in headless Chromium), `scripts/bench_kill.py --kills 50` (kills survived, lost, duplicated) and
`scripts/bench_huge.py import` (peak memory of a 5 MB memory's import).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memwiki.site.gate.detect import Detectors  # noqa: E402
from memwiki.site.gate.filter import strings  # noqa: E402
from memwiki.store.demo import build_demo_store  # noqa: E402
from memwiki.store.open_sources import open_sources  # noqa: E402
from memwiki.store.store import Store  # noqa: E402


def canaries(per_field: int, work: Path) -> None:
    from tests.canaries import found_in, plant
    from tests.test_site import build_site

    with Store.init(work / "store") as store:
        planted = plant(store, per_field)
    kinds, fields = Counter(c.kind for c in planted), Counter(c.field for c in planted)
    print(f"canaries planted: {len(planted)} ({len(kinds)} kinds, {len(fields)} fields, Chinese and English)")
    times = []
    for profile in ("public", "private"):
        t0 = time.perf_counter()
        _, error = build_site(
            work / profile, work / f"cache-{profile}", store=str(work / "store"), demo_src=None, profile=profile
        )
        times.append(time.perf_counter() - t0)
        found = found_in(work / profile, planted)
        print(
            f"\n{profile} build ({times[-1]:.1f} s{', FAILED: ' + str(error) if error else ''}): "
            f"{len(found)} of {len(planted)} canaries in site/"
        )
        by_kind, by_field = Counter(c.kind for c, _ in found), Counter(c.field for c, _ in found)
        print("  per kind:  " + ", ".join(f"{k} {by_kind[k]}/{n}" for k, n in kinds.items()))
        print("  per field: " + ", ".join(f"{f} {by_field[f]}/{n}" for f, n in fields.items()))
    print(f"\npublic build beside the private one (the gate and the final scan): {times[0] / times[1]:.2f}x the time")


def false_positives() -> None:
    """Every span the detectors would redact in the demo and the fixtures, by kind, with its context."""
    detectors = Detectors()
    sources = {"demo": lambda: Store.open(build_demo_store(ROOT / "demo", ROOT / ".cache" / "demo-store")).reader()}
    from tests.fixture_homes import pristine  # the tests' hermes home and palace, made by the upstream code

    fixtures = pristine()
    cache = Path(tempfile.mkdtemp(prefix="memwiki-fp-"))
    sources["fixture hermes home"] = lambda: open_sources(None, str(fixtures / "hermes_home"), None, cache)
    sources["fixture MemPalace palace"] = lambda: open_sources(
        None, None, str(fixtures / "mempalace_palace"), cache, config_dir=str(fixtures / "mempalace_config")
    )
    for name, open_source in sources.items():
        source = open_source()
        records = [
            source.persona(),
            *source.hot_files(),
            *source.sinks(),
            *source.memories(),
            *source.entities(),
            *source.triples(),
            *source.sessions(),
            *source.wiki_pages(),
        ]
        for session in source.sessions():
            records += list(source.messages(session.id))
        seen: dict[str, dict[str, str]] = defaultdict(dict)
        texts = 0
        for record in records:
            for text in strings(record):
                texts += 1
                for span in detectors.find(text):
                    value = text[span.start : span.end]
                    context = text[max(0, span.start - 40) : span.end + 20].replace("\n", " ")
                    seen[span.kind].setdefault(value, context)
        total = sum(len(v) for v in seen.values())
        print(f"\n{name}: {total} distinct values redacted in {texts} strings")
        for kind, values in sorted(seen.items()):
            print(f"  {kind} ({len(values)}):")
            for value, context in list(values.items())[:8]:
                print(f"    {value[:40]!r:44} … {context[:100]}")


def others(kills: int) -> None:
    """The other safety figures, each from the script or test that measures it."""
    runs = {
        "XSS payloads in headless Chromium": [sys.executable, "-m", "pytest", "-q", "-s", "tests/test_xss_browser.py"],
        f"SIGKILL, {kills} per kind on one store": [sys.executable, "scripts/bench_kill.py", "--kills", str(kills)],
        "a 5 MB memory": [sys.executable, "scripts/bench_huge.py", "import", "--runs", "1"],
    }
    for title, command in runs.items():
        print(f"\n{title}: {' '.join(command[1:])}")
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        print("\n".join("  " + line for line in lines[-12:]) or f"  (no output; exit {done.returncode})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-field", type=int, default=1, help="canaries of each kind per field")
    parser.add_argument("--no-build", action="store_true", help="only the false-positive check")
    parser.add_argument("--all", action="store_true", help="also the XSS, kill and huge-input figures")
    parser.add_argument("--kills", type=int, default=50, help="with --all: kills per kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memwiki-safety-") as work:
        if not args.no_build:
            canaries(args.per_field, Path(work))
        false_positives()
    if args.all:
        others(args.kills)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak memory: {peak:.0f} MB")


if __name__ == "__main__":
    main()
