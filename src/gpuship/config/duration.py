"""Durations written as people write them in config and flags: `90s`, `30m`, `24h`, `7d`.

A bare number is minutes (what `--if-older-than 30` means to the person typing it).
"""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "": 60, "h": 3600, "d": 86400}
# A week of months is not a freshness anyone means; a limit keeps timedelta in range.
MAX_DURATION = timedelta(days=3650)


def parse_duration(text: str) -> timedelta:
    """`30m` -> 30 minutes; ValueError naming the accepted forms when `text` is none of them."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration: write e.g. 90s, 30m, 24h or 7d")
    value = timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    if value > MAX_DURATION:
        raise ValueError(f"{text!r} is longer than {MAX_DURATION.days} days")
    return value


def format_duration(value: timedelta) -> str:
    """A short human form: `45s`, `12m`, `3.5h`, `2.0d`."""
    seconds = value.total_seconds()
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"
