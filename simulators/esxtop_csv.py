"""Small synthetic esxtop captures, written exactly as esxtop writes them (quoted cells, trailing comma)."""

from __future__ import annotations

import time

HEADER_FIRST = "(PDH-CSV 4.0) (UTC)(0)"


def header(host: str, columns: list[tuple[str, str | None, str]], trailing_comma: bool = True) -> str:
    cells = [HEADER_FIRST] + [
        f"\\\\{host}\\{obj}" + (f"({inst})" if inst is not None else "") + f"\\{counter}" for obj, inst, counter in columns
    ]
    return ",".join(f'"{c}"' for c in cells) + ("," if trailing_comma else "")


def stamp(ts: float) -> str:
    return time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime(ts))


def row(ts: float, values: list, trailing_comma: bool = True) -> str:
    cells = [stamp(ts)] + [v if isinstance(v, str) else f"{v:.2f}" for v in values]
    return ",".join(f'"{c}"' for c in cells) + ("," if trailing_comma else "")


DEVICE_COUNTERS = [
    "Device Q Depth",
    "Active Commands",
    "Queued Commands",
    "% Used",
    "Load",
    "Commands/sec",
    "Reads/sec",
    "Writes/sec",
    "MBytes Read/sec",
    "MBytes Written/sec",
    "Average Driver MilliSec/Command",
    "Average Kernel MilliSec/Command",
    "Average Guest MilliSec/Command",
    "Average Queue MilliSec/Command",
]
IO_COUNTERS = DEVICE_COUNTERS[DEVICE_COUNTERS.index("Commands/sec") :]  # a path's and an adapter's counters too


def device_columns(device: str, counters=DEVICE_COUNTERS):
    return [("Physical Disk SCSI Device", device, c) for c in counters]
