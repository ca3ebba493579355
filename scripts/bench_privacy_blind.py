"""The privacy gate against blind canary sets: every kind planted in every field of a memwiki store, a hermes-agent
home and a MemPalace palace, private-marked records and ORDINARY strings beside them, the real MkDocs build, and
what reached site/ (tests/blind/harness.py).

    python scripts/bench_privacy_blind.py                          # tests/blind/round1.py to round12.py
    python scripts/bench_privacy_blind.py --sets example_set       # any module of tests/blind (or a dotted name)
    python scripts/bench_privacy_blind.py --profile private        # the owner's build: everything shown

Prints a table per set (canaries found per class, private records published, ORDINARY strings redacted, the
worst kinds and fields, build and scan time) and writes the full breakdown, each leak with its file and an excerpt,
to `<work>/<set>/<set>-<profile>-report.json` (`--json DIR` copies it there too).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.blind.harness import load_set, measure  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sets",
        default=",".join(f"round{n}" for n in range(1, 12)),
        help="comma-separated set modules (default: %(default)s)",
    )
    parser.add_argument("--profile", default="public", choices=("public", "private"))
    parser.add_argument("--per-field", type=int, default=1, help="canaries of each kind per field")
    parser.add_argument("--work", type=Path, default=ROOT / ".cache" / "privacy-blind", help="where to build")
    parser.add_argument("--json", type=Path, help="also copy each set's JSON breakdown into this folder")
    parser.add_argument("--top", type=int, default=15, help="rows per breakdown in the table")
    args = parser.parse_args(argv)
    failed = 0
    for name in [n.strip() for n in args.sets.split(",") if n.strip()]:
        if "." not in name and not (ROOT / "tests" / "blind" / f"{name}.py").is_file():
            print(f"{name}: skipped, tests/blind/{name}.py does not exist\n")
            continue
        work = args.work / name
        shutil.rmtree(work, ignore_errors=True)
        started = time.perf_counter()
        try:
            report = measure(load_set(name), work, profile=args.profile, per_field=args.per_field)
        except Exception as exc:  # one set failing should not hide the others' figures
            print(f"{name}: failed: {type(exc).__name__}: {exc}\n")
            failed += 1
            continue
        if args.json is not None:
            args.json.mkdir(parents=True, exist_ok=True)
            report.write_json(args.json / f"{name}-{args.profile}-report.json")
        print(report.table(top=args.top))
        print(f"  total {time.perf_counter() - started:.1f} s (planting, two builds, scan)\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
