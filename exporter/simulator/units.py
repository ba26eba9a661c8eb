"""Parse the human units scenario files are written in ("5.8ms", "64KiB", "200MB/s", "3m")."""

from __future__ import annotations

import re

from exporter.store.units import parse_rate

_NUMBER_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")

_DURATION = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "m": 60.0, "min": 60.0, "h": 3600.0}
_SIZE = {"": 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "KB": 1000, "MB": 1000**2}


def _parse(value: object, table: dict[str, float], what: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a {what}, got {value!r}")
    if isinstance(value, (int, float)):
        if "" not in table:
            raise ValueError(f"expected a {what} with a unit ({', '.join(table)}), got {value!r}")
        return float(value) * table[""]
    m = _NUMBER_UNIT.match(str(value))
    if not m or m.group(2) not in table:
        units = ", ".join(u for u in table if u)
        raise ValueError(f"expected a {what} such as 5{next(iter(u for u in table if u))} (units: {units}), got {value!r}")
    return float(m.group(1)) * table[m.group(2)]


def duration(value: object) -> float:
    """Seconds from 5, "5s", "250ms", "3m", "1h"."""
    return _parse(value, _DURATION, "duration")


def size(value: object) -> int:
    """Bytes from 4096, "4KiB", "64KiB", "1MiB"."""
    return int(_parse(value, _SIZE, "size"))


def rate(value: object) -> float:
    """Bytes per second from "200MB/s" (decimal, as link speeds are quoted) or "2Gb/s" (bits)."""
    if isinstance(value, (bool, int, float)):
        raise ValueError(f"expected a data rate with a unit such as 200MB/s or 2Gb/s, got {value!r}")
    return parse_rate(value)
