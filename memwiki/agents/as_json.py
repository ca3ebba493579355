"""Records as JSON-able data: what the CLI's `--json` prints and the MCP server returns."""

from __future__ import annotations

import dataclasses
from typing import Any


def jsonable(value: Any) -> Any:  # noqa: ANN401 - any record
    """`value` with its records turned into plain data: `to_json()` where a record has one (a recall Hit),
    dataclasses as dicts, tuples as lists, dict keys as strings."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value
