"""An `esxtop -b -a` (all counters) capture of one adapter with four paths, written as esxtop
writes it: every per-path group (`Physical Disk(<adapter>:<path>)` with its `Adapter Q Depth`
repeat, `Physical Disk Path(<path>)`), devices, per-world and partition blocks and virtual disks
with every counter of the real `-a` capture (docs: esxtop-format.md §3, RS-big), in RS-big's
column order: `Physical Disk(vmhba0)` (AQLEN only) before `Physical Disk Adapter(vmhba0)`.

The `Adapter Q Depth` of each per-path instance repeats the adapter's own (the same value, once
per path), which is normal esxtop output; `conflict_at` makes one path disagree in one row.
"""

from __future__ import annotations

import random
from pathlib import Path

from exporter.simulator.esxtop_writer import ADAPTER_COUNTERS, DEVICE_COUNTERS, VIRTUAL_DISK_COUNTERS, WORLD_COUNTERS
from simulators.esxtop_csv import header, row

HOST = "esx-all.lab.local"
ADAPTER = "vmhba0"
ADAPTER_QDEPTH = 31
DEVICES = ("naa.600508b1001c87660c0bd32f228a36a8", "naa.600508b1001c87660c0bd32f228a36a9")
# One adapter, four paths: two target ports per LUN.
PATHS = {device: [f"{ADAPTER}:C0:T{t}:L{n + 1}" for t in (0, 1)] for n, device in enumerate(DEVICES)}
VMS = {"db01": "444768", "web01": "444903"}  # VM -> its vmx world id

# The `-a` counter sets in esxtop's order (esxtop-format.md §3), as the simulator writes them.
ADAPTER_ALL = ADAPTER_COUNTERS  # §3.1: Physical Disk Adapter, Physical Disk Path, per-path Physical Disk (31)
DEVICE_ALL = DEVICE_COUNTERS  # §3.3: 52
WORLD_ALL = WORLD_COUNTERS  # §3.5: 34
# §3.6: the 5 throughput counters and the 12 latencies (per command, read, write): 17
PARTITION_ALL = ADAPTER_COUNTERS[:5] + [c for c in ADAPTER_COUNTERS if "MilliSec" in c]
VDISK_ALL = ["FailedIOs", "TotalIOs", "Latency"] + VIRTUAL_DISK_COUNTERS  # §3.8


def columns() -> list[tuple[str, str | None, str]]:
    cols: list[tuple[str, str | None, str]] = [("Physical Cpu", "_Total", "% Util Time")]
    for vm, world in VMS.items():
        group = 1302698 + int(world) % 1000
        cols += [
            ("Vcpu", f"{group}:{vm}:{world}:vmx", "% Used"),
            ("Vcpu", f"{group}:{vm}:{int(world) + 1}:vmx-vcpu-0:{vm}", "% Used"),
        ]
    cols.append(("Physical Disk", ADAPTER, "Adapter Q Depth"))
    cols += [("Physical Disk Adapter", ADAPTER, c) for c in ADAPTER_ALL]
    for device in DEVICES:
        for path in PATHS[device]:
            cols += [("Physical Disk", f"{ADAPTER}:{path}", c) for c in ["Adapter Q Depth"] + ADAPTER_ALL]
    for device in DEVICES:
        cols += [("Physical Disk SCSI Device", device, c) for c in DEVICE_ALL]
        cols += [("Physical Disk Path", path, c) for path in PATHS[device] for c in ADAPTER_ALL]
        cols += [("Physical Disk Per-Device-Per-World", f"{device}-{world}", c) for world in VMS.values() for c in WORLD_ALL]
        cols += [("Physical Disk Partition", f"{device}-{n}", c) for n in (1, 3) for c in PARTITION_ALL]
    for vm in VMS:
        cols += [("Virtual Disk", vm, c) for c in VDISK_ALL]
        cols += [("Virtual Disk", f"{vm}:scsi0:0", c) for c in VDISK_ALL]
    return cols


def _value(obj: str, counter: str, rng: random.Random, first: bool) -> float | int:
    if counter == "Adapter Q Depth":
        return ADAPTER_QDEPTH
    if counter == "Device Q Depth":
        return 32
    if counter in ("World Q Depth", "Shares"):
        return 0 if counter == "World Q Depth" else 1000
    if first:  # esxtop's first sample: disk rates and latencies are all 0.00
        return 0.0
    if counter in ("Active Commands", "Queued Commands"):
        return rng.randint(0, 8) if counter == "Active Commands" else rng.randint(0, 2)
    if "MilliSec" in counter or "Latency" in counter:
        return round(rng.uniform(0.2, 4.0), 2)
    if counter.startswith("Failed") or counter in ("Aborts/sec", "Resets/sec", "FailedIOs"):
        return 0.0
    return round(rng.uniform(0.0, 200.0), 2)


def write(path: Path, rows: int = 12, seed: int = 1, interval: float = 5.0, conflict_at: int | None = None) -> Path:
    """The capture: a header and `rows` samples. conflict_at: in that row, the last path's
    `Adapter Q Depth` reads one more than the adapter's (a real conflict)."""
    rng = random.Random(seed)
    cols = columns()
    conflicting = max(i for i, (obj, _, counter) in enumerate(cols) if obj == "Physical Disk" and counter == "Adapter Q Depth")
    lines = [header(HOST, cols, trailing_comma=False)]  # RS-big has no trailing comma
    for n in range(rows):
        values = [_value(obj, counter, rng, n == 0) for obj, _, counter in cols]
        if n == conflict_at:
            values[conflicting] = ADAPTER_QDEPTH + 1
        # Queue and count columns are plain integers, rates and latencies 2 decimals (§5).
        cells = [str(v) if isinstance(v, int) else v for v in values]
        lines.append(row(1_700_000_000 + n * interval, cells, trailing_comma=False))
    path.write_text("\n".join(lines) + "\n")
    return path


def conflicting_column() -> int:
    """1-based column number of the Adapter Q Depth that `conflict_at` changes (the timestamp is 1)."""
    cols = columns()
    return 2 + max(i for i, (obj, _, counter) in enumerate(cols) if obj == "Physical Disk" and counter == "Adapter Q Depth")
