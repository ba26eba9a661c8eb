"""`esxcli storage filesystem list` -> the datastores a host mounts, with their space.

A dashed table (Mount Point, Volume Name, UUID, Mounted, Type, Size, Free; Size and Free in bytes).
What makes a datastore is its type: vfat (boot banks, and before 7.0 the nameless locker and
scratch), VMFSOS and VMFS-L (7.0's OSDATA) and VFFS (a vFlash read cache) are none. A VMFS volume
listed without a name is one, named by its uuid. Each is keyed by ds://<mount point>/, the url
vCenter gives the same datastore, so a datastore several hosts (and vCenter) report is one series.
A row whose figure is absurd keeps its other figures; the figure is a problem line.
"""

from __future__ import annotations

import math

from exporter.store import model as m

COMMAND = ["storage", "filesystem", "list"]
NOT_DATASTORES = frozenset({"vfat", "vmfsos", "vmfs-l", "vffs", "other"})
_LIMIT = float(2**63)


def _type(raw: str) -> str:
    """VMFS-5/VMFS-6 -> vmfs; NFS, NFS41, vsan, vvol as vSphere's summary.type spells them, lower case."""
    kind = raw.strip().lower()
    return "vmfs" if kind.startswith("vmfs-") and kind[5:].isdigit() else kind


def _bytes(raw: str, what: str, problems: list[str]) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        problems.append(f"{what} {raw[:40]!r} is not a number: refused")
        return None
    if not math.isfinite(value) or not 0 <= value < _LIMIT:
        problems.append(f"{what} {raw[:40]} is out of range: refused")
        return None
    return value


def spaces(records: list[dict[str, str]], problems: list[str]) -> dict[str, m.DatastoreSpace]:
    """url -> space of the rows that are datastores."""
    found: dict[str, m.DatastoreSpace] = {}
    for record in records:
        mount, uuid = record.get("mountpoint", "").strip(), record.get("uuid", "").strip()
        kind = _type(record.get("type", ""))
        if kind in NOT_DATASTORES or not kind:
            continue
        if not mount:
            problems.append(f"a {kind} volume without a mount point ({uuid or 'no uuid'})")
            continue
        name = record.get("volumename", "").strip() or uuid or mount.rsplit("/", 1)[-1]
        mounted = record.get("mounted", "").strip().lower() != "false"
        capacity = _bytes(record.get("size", ""), f"datastore {name}: Size", problems)
        free = _bytes(record.get("free", ""), f"datastore {name}: Free", problems)
        if capacity is not None and free is not None and free > capacity:
            problems.append(f"datastore {name}: Free {free:.0f} is more than its Size {capacity:.0f}: refused")
            free = None
        shown = mounted and bool(capacity)
        url = f"ds://{mount.rstrip('/')}/"
        found[url] = m.DatastoreSpace(
            name=name,
            url=url,
            type=kind,
            capacity_bytes=capacity if shown else None,
            free_bytes=free if shown else None,
            accessible=mounted,
            source="esxcli",
        )
    return found
