"""A wide esxtop capture whose LUNs, paths and worlds come and go, for memory soaks.

Every `generation` is one esxtop run (a new header): a sliding window of LUN and world ids moves
on by `shift` each run, so `shift` LUNs (with their paths and worlds) leave and as many new ones
arrive. An exporter that never forgets an object grows without bound on this input.
"""

from __future__ import annotations

import os
from pathlib import Path

from simulators import esxtop_csv

WORLD_COUNTERS = ["Active Commands", "Queued Commands"]
PATH_COUNTERS = ["Commands/sec", "Reads/sec", "Writes/sec", "Average Driver MilliSec/Command"]


def lun_name(n: int) -> str:
    return f"naa.6000c29{n:025x}"


def columns(generation: int, luns: int, shift: int, worlds_per_lun: int):
    first = generation * shift
    cols = []
    for n in range(first, first + luns):
        device = lun_name(n)
        cols += esxtop_csv.device_columns(device)
        cols += [("Physical Disk Path", f"vmhba{1 + n % 2}:C0:T{n % 64}:L{n}", c) for c in PATH_COUNTERS]
        for w in range(worlds_per_lun):
            cols += [
                ("Physical Disk Per-Device-Per-World", f"{device}-{100000 + n * worlds_per_lun + w}", c) for c in WORLD_COUNTERS
            ]
    return cols


def run_lines(
    generation: int,
    rows: int,
    start: float,
    interval: float = 5.0,
    luns: int = 100,
    shift: int = 30,
    worlds_per_lun: int = 4,
    host: str = "esx-churn",
):
    """The lines of one esxtop run: its header, then `rows` data rows from `start`."""
    cols = columns(generation, luns, shift, worlds_per_lun)
    yield esxtop_csv.header(host, cols) + "\n"
    for r in range(rows):
        values = [float((r + i) % 50) for i in range(len(cols))]
        yield esxtop_csv.row(start + r * interval, values) + "\n"


def rss_bytes() -> int:
    """Resident set size of this process, from /proc (Linux)."""
    for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")
