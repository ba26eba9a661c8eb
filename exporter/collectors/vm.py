"""Virtual disks and VMs: which VM loads a LUN and what latency it sees (vSphere virtualDisk.*),
and what backs each disk (datastore, LUN, RDM mode, controller, provisioning, IOPS limit).

Per disk {host, vm, disk} and per VM {host, vm} in two families of their own, so no sum over
disks counts a VM twice. The backing is one info family joined by (host, vm, disk)."""

from __future__ import annotations

from exporter.collectors.io import labels_of
from exporter.collectors.textformat import counter, gauge, label_string
from exporter.store import model as m

# model field -> (name stem, help). Rates are integrated into counters by the store.
RATES = (
    (m.READS, "reads", "Reads issued by the guest."),
    (m.WRITES, "writes", "Writes issued by the guest."),
    (m.READ_BYTES, "read_bytes", "Bytes read by the guest."),
    (m.WRITTEN_BYTES, "written_bytes", "Bytes written by the guest."),
    (m.COMMANDS, "commands", "Commands issued by the guest."),
)
# latency field -> (stem, weight): the counter is the sum over reads (writes) of their latency.
LATENCIES = (
    (m.GAVG_READ, "read_latency_seconds", "reads"),
    (m.GAVG_WRITE, "write_latency_seconds", "writes"),
)
OUTSTANDING = (
    (m.OUTSTANDING_READS, "outstanding_reads", "Reads outstanding now (virtualDisk.readOIO)."),
    (m.OUTSTANDING_WRITES, "outstanding_writes", "Writes outstanding now (virtualDisk.writeOIO)."),
)
INFO_LABELS = (
    "host",
    "vm",
    "disk",
    "datastore",
    "datastore_type",
    "device",
    "backing",
    "compatibility_mode",
    "controller",
    "provisioning",
)


def _families(prefix: str, what: str, rows):
    def fill(family, source, field):
        for labels, obj in rows:
            value = getattr(obj, source).get(field)
            if value is not None:
                family.add(labels, value)
        return family

    for field, stem, help_text in RATES:
        yield fill(counter(f"{prefix}_{stem}_total", f"{help_text} ({what})"), "counters", field)
    for field, stem, weight in LATENCIES:
        mean = stem.removesuffix("_seconds") + "_mean_seconds"
        yield fill(
            counter(
                f"{prefix}_{stem}_total",
                f"Sum over {weight} of their latency as the guest sees it ({what}); divide its rate by the rate of {prefix}_{weight}_total.",
            ),
            "counters",
            field + "_total",
        )
        yield fill(gauge(f"{prefix}_{mean}", f"Mean latency per {weight[:-1]} over the last interval ({what})."), "gauges", field)
    for field, stem, help_text in OUTSTANDING:
        yield fill(gauge(f"{prefix}_{stem}", f"{help_text} ({what})"), "gauges", field)


def collect(store):
    disks = [
        (labels_of(obj, ("host", "vm", "disk"), (host.host, vm, disk)), obj)
        for host in store.hosts.values()
        for (vm, disk), obj in host.objects["vdisks"].items()
    ]
    vms = [
        (labels_of(obj, ("host", "vm"), (host.host, vm)), obj)
        for host in store.hosts.values()
        for vm, obj in host.objects["vms"].items()
    ]
    yield from _families("esxi_vm_disk", "one virtual disk", disks)
    yield from _families("esxi_vm", "a VM's disks together", vms)

    info = gauge("esxi_vm_disk_info", "What backs a virtual disk: one series per LUN under it (device). Always 1.")
    limit = gauge("esxi_vm_disk_iops_limit", "The disk's own IOPS limit (storageIOAllocation); absent when unlimited.")
    shares = gauge("esxi_vm_disk_shares", "The disk's I/O shares (storageIOAllocation).")
    for inventory in store.inventories.values():
        for (vm, disk), cfg in sorted(inventory.vdisks.items()):
            key = (inventory.host, vm, disk)
            for device in cfg.devices or ("",):
                values = (
                    *key,
                    cfg.datastore,
                    cfg.datastore_type,
                    device,
                    cfg.backing,
                    cfg.compatibility_mode,
                    cfg.controller,
                    cfg.provisioning,
                )
                info.add(label_string(INFO_LABELS, values), 1.0)
            labels = label_string(("host", "vm", "disk"), key)
            if cfg.iops_limit is not None:
                limit.add(labels, cfg.iops_limit)
            if cfg.shares is not None:
                shares.add(labels, cfg.shares)
    yield from (info, limit, shares)
