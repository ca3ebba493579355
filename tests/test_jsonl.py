"""memwiki.common.jsonl: the one JSONL reader (line numbers, blank lines, every kind of bad line)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memwiki.common.jsonl import count_lines, iter_jsonl
from memwiki.errors import InputFormatError


def _write(tmp_path: Path, data: bytes, name: str = "in.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_objects_with_line_numbers_and_blank_lines_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"a": 1}\n\n   \n{"b": "跳舞"}\r\n{"c": [1, 2]}'.encode())
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (4, {"b": "跳舞"}), (5, {"c": [1, 2]})]


def test_utf8_bom_on_first_line_is_tolerated(tmp_path: Path) -> None:
    path = _write(tmp_path, b'\xef\xbb\xbf{"a": 1}\n')
    assert list(iter_jsonl(path)) == [(1, {"a": 1})]


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}\n{"b": "\xff\xfe"}\n')
    with pytest.raises(InputFormatError, match=rf"{path.name}:2: invalid UTF-8"):
        list(iter_jsonl(path))


def test_invalid_json_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}\n{"b": }\n')
    with pytest.raises(InputFormatError, match=rf"{path.name}:2: invalid JSON"):
        list(iter_jsonl(path))


@pytest.mark.parametrize(
    ("line", "kind"), [(b"[1, 2]", "list"), (b'"text"', "str"), (b"42", "int"), (b"null", "NoneType")]
)
def test_a_line_that_is_not_an_object(tmp_path: Path, line: bytes, kind: str) -> None:
    path = _write(tmp_path, b'{"a": 1}\n' + line + b"\n")
    with pytest.raises(InputFormatError, match=rf":2: expected a JSON object, got {kind}"):
        list(iter_jsonl(path))


def test_nan_is_not_json(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": NaN}\n')
    with pytest.raises(InputFormatError, match=r":1: invalid JSON \(NaN is not valid JSON\)"):
        list(iter_jsonl(path))


def test_a_markdown_file_is_not_jsonl(tmp_path: Path) -> None:
    path = _write(tmp_path, "# Notes\n\n- 跳舞\n".encode(), "notes.md")
    with pytest.raises(InputFormatError, match=r"notes.md:1: invalid JSON"):
        list(iter_jsonl(path))


def test_errors_come_before_later_lines_are_read(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}\nnot json\n{"b": 2}\n')
    seen = []
    with pytest.raises(InputFormatError):
        for lineno, _obj in iter_jsonl(path):
            seen.append(lineno)
    assert seen == [1]


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError, match="no such file"):
        list(iter_jsonl(tmp_path / "missing.jsonl"))
    with pytest.raises(InputFormatError, match="is a folder"):
        list(iter_jsonl(tmp_path))


def test_count_lines(tmp_path: Path) -> None:
    assert count_lines(_write(tmp_path, b"", "empty")) == 0
    assert count_lines(_write(tmp_path, b"{}\n{}\n", "two")) == 2
    assert count_lines(_write(tmp_path, b"{}\n{}", "two-no-newline")) == 2
    assert count_lines(_write(tmp_path, b"{}\n\n\n", "blank")) == 3


def test_a_lone_surrogate_names_the_line_and_field(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"id": "a", "text": "ok"}\n{"id": "b", "meta": {"k": "x \\ud800 y"}}\n')
    with pytest.raises(InputFormatError, match=rf"{path.name}:2: meta.k holds a lone surrogate"):
        list(iter_jsonl(path))


def test_nesting_past_the_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    path = _write(tmp_path, f'{{"id": "a", "meta": {{"x": {deep}}}}}\n'.encode())
    with pytest.raises(InputFormatError, match=rf"{path.name}:1: nested more than 64 deep"):
        list(iter_jsonl(path))
    shallow = _write(tmp_path, ('{"a": "' + "[" * 70 + '"}\n').encode(), "s.jsonl")
    assert list(iter_jsonl(shallow))[0][1]["a"].startswith("[[[")  # brackets inside a string are text


def test_a_pipe_or_a_folder_is_an_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputFormatError, match="not a regular file"):
        list(iter_jsonl(fifo))
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(InputFormatError, match="is a folder"):
        list(iter_jsonl(tmp_path / "dir.jsonl"))
