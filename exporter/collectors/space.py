"""Datastore space, once per datastore (whatever number of hosts mount it), and VM snapshots.

Datastores {datastore, type, url}: url (ds:///vmfs/volumes/<uuid or NFS id>/) is what identifies a
datastore across hosts and sources; where vCenter and a host's esxcli both see one, vCenter's is
shown (store.spaces). A datastore with a capacity of 0 or inaccessible has no space series (nothing
to divide by): its accessible, maintenance and timestamp series stay.

Snapshots {host, vm}: only VMs that have snapshots (or delta disks left by one) have the count,
oldest and bytes series, so no rule on them fires on a VM that has none; consolidation needed is
shown for every followed VM, 0 or 1, so its alert resolves when vSphere clears it.
"""

from __future__ import annotations

from exporter.collectors.textformat import gauge, label_string
from exporter.store.model import DATASTORE_MAINTENANCE_MODES

LABELS = ("datastore", "type", "url")


def provisioned(space) -> float | None:
    """capacity - free + uncommitted (a negative uncommitted counts as 0)."""
    if space.capacity_bytes is None or space.free_bytes is None:
        return None
    return space.capacity_bytes - space.free_bytes + max(space.uncommitted_bytes or 0.0, 0.0)


def collect(store):
    capacity = gauge("esxi_datastore_capacity_bytes", "The datastore's capacity (absent at 0 or inaccessible).")
    free = gauge("esxi_datastore_free_bytes", "Space free on the datastore.")
    uncommitted = gauge(
        "esxi_datastore_uncommitted_bytes", "Space its thin disks and other files may still take, not yet written (vSphere only)."
    )
    prov = gauge("esxi_datastore_provisioned_bytes", "capacity - free + uncommitted: what its files take once all are full.")
    accessible = gauge("esxi_datastore_accessible", "1 if the datastore is accessible, 0 if not.")
    maintenance = gauge(
        "esxi_datastore_maintenance_mode", "The datastore's maintenance mode: 1 for the current one, 0 for the others."
    )
    updated = gauge(
        "esxi_datastore_space_updated_timestamp_seconds", "When vCenter last refreshed the datastore's figures (info.timestamp)."
    )
    snapshot_ds = gauge(
        "esxi_datastore_snapshot_bytes", "Size on disk of the followed VMs' snapshot files and delta disks on the datastore."
    )
    spaces = store.spaces
    by_name: dict[str, str] = {}
    for url, space in sorted(spaces.items(), key=lambda item: (item[1].name, item[0])):
        labels = label_string(LABELS, (space.name, space.type, url))
        by_name.setdefault(space.name, labels)
        for family, value in (
            (capacity, space.capacity_bytes),
            (free, space.free_bytes),
            (uncommitted, space.uncommitted_bytes),
            (prov, provisioned(space)),
            (updated, space.updated),
        ):
            if value is not None:
                family.add(labels, value)
        accessible.add(labels, 1.0 if space.accessible else 0.0)
        mode = space.maintenance_mode
        if mode:
            for name in (*DATASTORE_MAINTENANCE_MODES, *((mode,) if mode not in DATASTORE_MAINTENANCE_MODES else ())):
                maintenance.add(
                    label_string((*LABELS, "mode"), (space.name, space.type, url, name)), 1.0 if name == mode else 0.0
                )

    count = gauge("esxi_vm_snapshots", "Snapshots the VM has (absent when none).")
    oldest = gauge("esxi_vm_snapshot_oldest_timestamp_seconds", "When the VM's oldest snapshot was taken.")
    size = gauge("esxi_vm_snapshot_bytes", "Size on disk of the VM's snapshot files and delta-disk extents (layoutEx).")
    consolidation = gauge("esxi_vm_consolidation_needed", "1 if vSphere says the VM's disks need consolidation.")
    per_datastore: dict[str, float] = {}
    for vm, snap in sorted(store.snapshots.items()):
        labels = label_string(("host", "vm"), (snap.host, vm))
        if snap.count or snap.bytes:
            count.add(labels, float(snap.count))
            size.add(labels, snap.bytes)
            if snap.oldest is not None:
                oldest.add(labels, snap.oldest)
        if snap.consolidation_needed is not None:
            consolidation.add(labels, 1.0 if snap.consolidation_needed else 0.0)
        for datastore, value in snap.by_datastore:
            per_datastore[datastore] = per_datastore.get(datastore, 0.0) + value
    for datastore, value in sorted(per_datastore.items()):
        snapshot_ds.add(by_name.get(datastore) or label_string(LABELS, (datastore, "", "")), value)
    return [capacity, free, uncommitted, prov, accessible, maintenance, updated, snapshot_ds, count, oldest, size, consolidation]
