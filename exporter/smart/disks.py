"""One disk's readings -> its DiskHealth: the SMART page and (NVMe) its controller's log, each with
how reading it went, the reliable temperatures, and the last good reading kept where a read failed.

Imports only the model and exporter.smart.parse, so the simulator builds its disks the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exporter.smart import parse
from exporter.store import model as m


@dataclass(frozen=True)
class Reading:
    """How one esxcli read of a disk went: status (model.DISK_READ_STATES), the parsed answer when
    ok, and the one-line reason otherwise."""

    status: str
    value: Any = None
    message: str = ""


def disk_health(
    page: str,
    smart: Reading,
    now: float,
    *,
    adapter: str = "",
    nvme: Reading | None = None,
    previous: m.DiskHealth | None = None,
) -> m.DiskHealth:
    """A device's health from this round's readings. A page or log that failed or was refused
    keeps the previous good one with its read time (so its age shows); one the device does not
    have (unsupported) has none."""
    disk = m.DiskHealth(page=page, adapter=adapter, smart_status=smart.status, smart_problem=_problem(smart))
    disk.smart, disk.smart_read_at = _kept(
        smart, now, previous.smart if previous else None, previous.smart_read_at if previous else None
    )
    if nvme is not None:
        disk.nvme_status, disk.nvme_problem = nvme.status, _problem(nvme)
        disk.nvme, disk.nvme_read_at = _kept(
            nvme, now, previous.nvme if previous else None, previous.nvme_read_at if previous else None
        )
    disk.temperatures_celsius = parse.temperatures(page, disk.smart, disk.nvme)
    return disk


def _problem(reading: Reading) -> str:
    return reading.message if reading.status in ("failed", "unreadable") else ""


def _kept(reading: Reading, now: float, last, last_at: float | None):
    if reading.status == "ok":
        return reading.value, now
    if reading.status in ("failed", "unreadable") and last is not None:
        return last, last_at
    return None, None
