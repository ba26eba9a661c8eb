"""Datastore space and VM snapshots, read from the property collector's answers.

A Datastore's `summary` (capacity, freeSpace, uncommitted, accessible, maintenanceMode, type, url)
and `info.timestamp` (when vCenter last refreshed the figures) come once with the walk and then
as they change; a chosen VM's `snapshot` (the tree), `layoutEx` (its files, with each disk's chain
and each snapshot's files) and `runtime.consolidationNeeded` likewise. Each is parsed here into
a model object; what is absurd (negative, not a number, past 2^63) is refused alone, named in a
problem line, and the rest kept.

The snapshot tree and the disk chains are walked with an explicit stack (no recursion): a chain
1,000 deep is 1,000 steps; a VM with 100,000 layout files is read in one pass over them, keeping
only the keys of the files that count.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

from exporter.store import model as m
from exporter.vsphere import soap

_NS = "{urn:vim25}"
_text = soap.text
_LIMIT = float(2**63)  # vSphere's longs: anything past is no size
_DATASTORE = re.compile(r"\[([^\]]*)\]")
# Volumes that are no datastore (discovery.NOT_DATASTORE_TYPES, as summary.type spells them)
NOT_DATASTORES = frozenset({"other", "vfat", "vmfs-l", "vmfsos", "vffs"})
# layoutEx file types that are a snapshot's own: its state (.vmsn) and memory (.vmem)
SNAPSHOT_FILE_TYPES = frozenset({"snapshotData", "snapshotMemory"})


def number(raw: str, what: str, problems: list[str], *, negative_ok: bool = False) -> float | None:
    """A size as vSphere sends it (xsd:long): None, with a problem line, when absurd."""
    try:
        value = float(raw)
    except ValueError:
        problems.append(f"{what} {raw[:40]!r} is not a number: refused")
        return None
    if not math.isfinite(value) or abs(value) >= _LIMIT or (value < 0 and not negative_ok):
        problems.append(f"{what} {raw[:40]} is out of range: refused")
        return None
    return value


def timestamp(raw: str) -> float | None:
    """An xsd:dateTime as unix seconds; None when unreadable."""
    try:
        return datetime.fromisoformat(raw.strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def datastore_space(moid: str, summary, updated: str, problems: list[str]) -> m.DatastoreSpace | None:
    """A Datastore's space from its summary element (None: not a datastore, or no summary).
    A capacity of 0 (a thin LUN whose pool ran out shows one) or an inaccessible datastore has no
    figures: nothing to divide by, and vCenter's are stale."""
    if summary is None:
        return None
    kind = _text(summary, "type").lower()
    if kind in NOT_DATASTORES:
        return None
    url = _text(summary, "url") or f"moid:{moid}"
    name = _text(summary, "name") or url.rstrip("/").rsplit("/", 1)[-1]
    accessible = _text(summary, "accessible") != "false"
    label = f"datastore {name}"
    capacity = number(_text(summary, "capacity", "0"), f"{label}: capacity", problems)
    free = number(_text(summary, "freeSpace", "0"), f"{label}: freeSpace", problems)
    raw_uncommitted = _text(summary, "uncommitted")
    uncommitted = number(raw_uncommitted, f"{label}: uncommitted", problems, negative_ok=True) if raw_uncommitted else None
    if free is not None and capacity is not None and free > capacity:
        problems.append(f"{label}: freeSpace {free:.0f} is more than its capacity {capacity:.0f}: refused")
        free = None
    shown = accessible and bool(capacity)
    return m.DatastoreSpace(
        name=name,
        url=url,
        type=kind,
        capacity_bytes=capacity if shown else None,
        free_bytes=free if shown else None,
        # a negative uncommitted (reported for some NFS and vVol datastores) counts as none
        uncommitted_bytes=max(uncommitted, 0.0) if shown and uncommitted is not None else None,
        accessible=accessible,
        maintenance_mode=_text(summary, "maintenanceMode"),
        updated=timestamp(updated) if updated else None,
    )


def snapshot_tree(info) -> tuple[int, float | None]:
    """(snapshots, the oldest's createTime) of a VirtualMachineSnapshotInfo, walked with a stack."""
    count, oldest = 0, None
    stack = list(info.iterfind(_NS + "rootSnapshotList")) if info is not None else []
    while stack:
        node = stack.pop()
        count += 1
        created = timestamp(node.findtext(_NS + "createTime") or "")
        if created is not None and (oldest is None or created < oldest):
            oldest = created
        stack.extend(node.iterfind(_NS + "childSnapshotList"))
    return count, oldest


def _delta_keys(layout) -> set[str]:
    """Keys of the delta disks' files: every chain unit after the first (the base disk) of each
    disk, now and as each snapshot left it."""
    keys: set[str] = set()
    disks = list(layout.iterfind(_NS + "disk"))
    for snapshot in layout.iterfind(_NS + "snapshot"):
        disks.extend(snapshot.iterfind(_NS + "disk"))
    for disk in disks:
        for unit in list(disk.iterfind(_NS + "chain"))[1:]:
            keys.update((key.text or "").strip() for key in unit.iterfind(_NS + "fileKey"))
    return keys


def snapshot_files(layout, what: str, problems: list[str]) -> dict[str, float]:
    """Datastore name -> bytes on disk of a VirtualMachineFileLayoutEx's snapshot files and
    delta-disk extents (each file once)."""
    if layout is None:
        return {}
    deltas = _delta_keys(layout)
    found: dict[str, float] = {}
    for file in layout.iterfind(_NS + "file"):
        kind = file.findtext(_NS + "type") or ""
        if kind not in SNAPSHOT_FILE_TYPES and (file.findtext(_NS + "key") or "").strip() not in deltas:
            continue
        name = file.findtext(_NS + "name") or ""
        size = number((file.findtext(_NS + "size") or "0").strip(), f"{what}: file {name[:80]} size", problems)
        if size is None:
            continue
        match = _DATASTORE.match(name)
        datastore = match.group(1) if match else ""
        found[datastore] = found.get(datastore, 0.0) + size
    return found


def vm_snapshots(host: str, vm: str, props: dict, problems: list[str]) -> m.VmSnapshots:
    """A VM's snapshots from its followed properties (path -> <val> element, or None)."""
    count, oldest = snapshot_tree(props.get("snapshot"))
    by_datastore = snapshot_files(props.get("layoutEx"), f"VM {vm}", problems)
    consolidation = props.get("runtime.consolidationNeeded")
    needed = None if consolidation is None else (consolidation.text or "").strip() == "true"
    return m.VmSnapshots(
        host=host,
        vm=vm,
        count=count,
        oldest=oldest,
        bytes=sum(by_datastore.values()),
        by_datastore=tuple(sorted(by_datastore.items())),
        consolidation_needed=needed,
    )
