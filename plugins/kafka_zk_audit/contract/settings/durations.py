"""Durations as the settings write them: '90s', '30m', '24h', '7d', '1h30m' or a plain number of seconds.

``to_timedelta`` reads one (``ValueError`` otherwise; ``DURATION_HELP`` says what is allowed), ``seconds_text``
and ``format_duration`` write one back.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_DURATION_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?\s*[smhdw]\s*)+")
_MAX_SECONDS = timedelta.max.total_seconds() // 2
DURATION_HELP = (
    'write a duration: a number followed by s, m, h, d or w, e.g. "90s", "30m", "24h", "7d", "1h30m", '
    "or a plain number of seconds >= 0"
)


def to_timedelta(value: Any) -> timedelta:
    """'90s', '30m', '24h', '7d', '1h30m' or a plain number of seconds as a timedelta; ValueError otherwise."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise ValueError(value)
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip().lower()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif _DURATION_WHOLE.fullmatch(text):
            seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text))
        else:
            raise ValueError(value)
    else:
        raise ValueError(value)
    if not 0 <= seconds <= _MAX_SECONDS:  # also NaN, and what timedelta cannot hold
        raise ValueError(value)
    return timedelta(seconds=seconds)


def seconds_text(duration: timedelta) -> str:
    """A duration as a plain number of seconds, to the millisecond ("1", "0.25"), as ``parse_duration`` reads it
    back (the form command lines are given)."""
    return f"{duration.total_seconds():.3f}".rstrip("0").rstrip(".")


def format_duration(duration: timedelta) -> str:
    """A short human form, e.g. '1d 2h', '30m', '1m 30s', '0s' (the same form the findings use)."""
    total = int(duration.total_seconds())
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")) if n]
    return " ".join(parts) or "0s"
