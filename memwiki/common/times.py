"""Dates and times: the store writes ISO-8601 UTC (`2026-11-30T04:19:58Z`) and dates as `YYYY-MM-DD`."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from memwiki.errors import MemwikiError


def _parse_iso(value: str, what: str) -> datetime | date:
    if not isinstance(value, str) or not value.strip():
        raise MemwikiError(f"{what}: expected an ISO-8601 date or time, got {value!r}")
    text = value.strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        return datetime.fromisoformat(text)
    except ValueError:
        raise MemwikiError(
            f"{what}: {value!r} is not a valid ISO-8601 date or time (expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)"
        ) from None


def parse_date(value: str | date, what: str = "date") -> str:
    """`YYYY-MM-DD` of a date or ISO-8601 timestamp (the calendar date as written); MemwikiError if invalid."""
    if isinstance(value, date):
        return value.isoformat()[:10]
    parsed = _parse_iso(value, what)
    return (parsed.date() if isinstance(parsed, datetime) else parsed).isoformat()


def parse_time(value: str | datetime, what: str = "time") -> str:
    """`YYYY-MM-DDTHH:MM:SSZ` (UTC) of an ISO-8601 date or timestamp; no zone means UTC. MemwikiError if invalid."""
    parsed = value if isinstance(value, datetime | date) else _parse_iso(value, what)
    if not isinstance(parsed, datetime):
        parsed = datetime(parsed.year, parsed.month, parsed.day)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_now() -> str:
    """The current time as `YYYY-MM-DDTHH:MM:SSZ`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stored_time(value: Any) -> str:
    """A time as stored by SQLite or an upstream tool, as ISO-8601 UTC when it parses, else as it is."""
    if value is None or value == "":
        return ""
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        return parse_time(str(value))
    except MemwikiError:
        return str(value)


def stored_date(value: Any) -> str:
    if value is None or value == "":
        return ""
    try:
        return parse_date(str(value))
    except MemwikiError:
        return str(value)


def mtime_iso(path: Path) -> str:
    """A file's modification time as ISO-8601 UTC, or "" if it does not exist."""
    try:
        return stored_time(path.stat().st_mtime)
    except FileNotFoundError:
        return ""
