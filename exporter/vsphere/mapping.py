"""vSphere real-time counters -> model fields, with every unit converted here and only here.

vSphere units: percent counters are hundredths of a percent, KBps is KiB/s, latencies are ms,
`*Averaged` counters are already per second, `.summation` counters are counts over the sample's
interval (divided by it to become per-second rates), MHz is 10^6 Hz.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.store import model as m
from exporter.store import units

DATASTORES = "datastores"  # host-level datastore.* by datastore name (Sample.datastores)
VDISKS = "vdisks"  # a VM's virtualDisk.* by (vm, instance scsi0:0): Sample.vdisks, asked of the VM, not the host
HOST = "host"  # host-wide values (cpu.usagemhz): Sample.host_values
CPU_HERTZ = m.CPU_USAGE_HERTZ


@dataclass(frozen=True, slots=True)
class Counter:
    family: str  # Sample attribute (luns, adapters, paths, cpus) or DATASTORES / HOST
    field: str  # model field
    scale: float = 1.0  # multiply the raw value by this
    per_interval: bool = False  # a count over the sample interval: divide by it


_RATE = 1.0
_KIB, _MS = units.KIB, units.MILLISECOND


def _io(family: str, group: str, latencies: dict[str, str], extra: dict[str, Counter] | None = None) -> dict[str, Counter]:
    table = {
        f"{group}.commandsAveraged.average": Counter(family, m.COMMANDS, _RATE),
        f"{group}.numberReadAveraged.average": Counter(family, m.READS, _RATE),
        f"{group}.numberWriteAveraged.average": Counter(family, m.WRITES, _RATE),
        f"{group}.read.average": Counter(family, m.READ_BYTES, _KIB),
        f"{group}.write.average": Counter(family, m.WRITTEN_BYTES, _KIB),
    }
    for name, field in latencies.items():
        table[f"{group}.{name}.average"] = Counter(family, field, _MS)
    table.update(extra or {})
    return table


# "group.name.rollup" as the server names it -> where it goes. Keys are resolved by these names
# at start (they differ between vCenter and ESXi); nothing here depends on a counter key.
COUNTERS: dict[str, Counter] = {
    **_io(
        "luns",
        "disk",
        {
            "deviceLatency": m.DAVG,
            "kernelLatency": m.KAVG,
            "queueLatency": m.QAVG,
            "totalLatency": m.GAVG,
            "totalReadLatency": m.GAVG_READ,
            "totalWriteLatency": m.GAVG_WRITE,
        },
        {
            "disk.maxQueueDepth.average": Counter("luns", m.QUEUE_DEPTH),
            "disk.commandsAborted.summation": Counter("luns", m.ABORTS, per_interval=True),
            "disk.busResets.summation": Counter("luns", m.RESETS, per_interval=True),
            "disk.scsiReservationConflicts.summation": Counter("luns", m.CONFLICTS, per_interval=True),
        },
    ),
    **_io(
        "adapters",
        "storageAdapter",
        {"totalReadLatency": m.GAVG_READ, "totalWriteLatency": m.GAVG_WRITE, "queueLatency": m.QAVG},
        {
            "storageAdapter.outstandingIOs.average": Counter("adapters", m.ACTIVE),
            "storageAdapter.queued.average": Counter("adapters", m.QUEUED),
            "storageAdapter.queueDepth.average": Counter("adapters", m.QUEUE_DEPTH),
        },
    ),
    **_io(
        "paths",
        "storagePath",
        {"totalReadLatency": m.GAVG_READ, "totalWriteLatency": m.GAVG_WRITE},
        {
            "storagePath.commandsAborted.summation": Counter("paths", m.ABORTS, per_interval=True),
            "storagePath.busResets.summation": Counter("paths", m.RESETS, per_interval=True),
        },
    ),
    **_io(DATASTORES, "datastore", {"totalReadLatency": m.GAVG_READ, "totalWriteLatency": m.GAVG_WRITE}),
    # virtualDisk.* has no commands counter (COMMANDS is derived below) and no host aggregate.
    **_io(VDISKS, "virtualDisk", {"totalReadLatency": m.GAVG_READ, "totalWriteLatency": m.GAVG_WRITE}),
    "virtualDisk.readOIO.latest": Counter(VDISKS, m.OUTSTANDING_READS),
    "virtualDisk.writeOIO.latest": Counter(VDISKS, m.OUTSTANDING_WRITES),
    # Storage I/O Control, one instance per datastore (units as vSphere's counter catalogue gives
    # them: latencies in microseconds, the active time in hundredths of a percent, the rest numbers;
    # datastoreIops is an average rollup, the others latest).
    "datastore.sizeNormalizedDatastoreLatency.average": Counter(DATASTORES, m.SIOC_NORMALIZED_LATENCY, units.MICROSECOND),
    "datastore.datastoreMaxQueueDepth.latest": Counter(DATASTORES, m.SIOC_QUEUE_DEPTH),
    "datastore.siocActiveTimePercentage.average": Counter(DATASTORES, m.SIOC_ACTIVE, units.VSPHERE_PERCENT),
    "datastore.datastoreVMObservedLatency.latest": Counter(DATASTORES, m.VM_OBSERVED_LATENCY, units.MICROSECOND),
    "datastore.datastoreIops.average": Counter(DATASTORES, m.SIOC_IOPS),
    "datastore.datastoreReadIops.latest": Counter(DATASTORES, m.SIOC_READ_IOPS),
    "datastore.datastoreWriteIops.latest": Counter(DATASTORES, m.SIOC_WRITE_IOPS),
    "datastore.datastoreReadOIO.latest": Counter(DATASTORES, m.SIOC_OUTSTANDING_READS),
    "datastore.datastoreWriteOIO.latest": Counter(DATASTORES, m.SIOC_OUTSTANDING_WRITES),
    "cpu.usage.average": Counter("cpus", m.CPU_UTIL, units.VSPHERE_PERCENT),
    "cpu.usagemhz.average": Counter(HOST, CPU_HERTZ, units.MEGAHERTZ),
}
# datastore.* and virtualDisk.* have no commandsAveraged counter.
del COUNTERS["datastore.commandsAveraged.average"], COUNTERS["virtualDisk.commandsAveraged.average"]


def convert(counter: Counter, raw: float, interval: float) -> float:
    value = raw * counter.scale
    return value / interval if counter.per_interval else value


def instance_key(family: str, instance: str, path_names: dict[str, str], datastore_names: dict[str, str]) -> str | None:
    """The model key of a perf instance, or None for one that is not a per-object series
    (the host aggregate "" of disk/adapter/path counters)."""
    if family == "cpus":
        return instance or "_Total"
    if family == HOST:
        return "" if instance == "" else None
    if not instance:
        return None
    if family == "paths":
        return path_names.get(instance, instance)
    if family == DATASTORES:
        return datastore_names.get(instance, instance)
    return instance


# A VM's totals over its disks: rates and outstanding I/O add up; each direction's latency is
# the mean over its disks weighted by that direction's rate (as esxtop's `Virtual Disk(vm)`).
_SUMMED = (m.READS, m.WRITES, m.READ_BYTES, m.WRITTEN_BYTES, m.COMMANDS, m.OUTSTANDING_READS, m.OUTSTANDING_WRITES)


def finish_vdisk(stats: dict[str, float]) -> None:
    """A virtual disk's commands per second: its reads plus its writes (vSphere has no counter)."""
    if m.READS in stats and m.WRITES in stats:
        stats[m.COMMANDS] = stats[m.READS] + stats[m.WRITES]


def vm_totals(vdisks: dict[tuple[str, str], dict[str, float]]) -> dict[str, dict[str, float]]:
    """vm -> totals over its disks, for the fields every one of its disks has."""
    by_vm: dict[str, list[dict[str, float]]] = {}
    for (vm, _disk), stats in vdisks.items():
        by_vm.setdefault(vm, []).append(stats)
    return {vm: _vm_total(disks) for vm, disks in by_vm.items()}


def _vm_total(disks: list[dict[str, float]]) -> dict[str, float]:
    # The fields every disk has, found once (not once per field and disk); each sum adds its
    # disks in their order, as it always did, so a total is the same to the last bit.
    common = disks[0].keys() if len(disks) == 1 else set(disks[0]).intersection(*disks[1:])
    total = {name: sum([d[name] for d in disks]) for name in _SUMMED if name in common}
    for latency, weight in m.DIRECTIONAL_LATENCY_WEIGHT.items():
        if latency not in common or weight not in common:
            continue
        weights = sum([d[weight] for d in disks])
        if weights > 0:
            total[latency] = sum([d[latency] * d[weight] for d in disks]) / weights
        else:  # no I/O that way: the plain mean (0 on an idle VM)
            total[latency] = sum([d[latency] for d in disks]) / len(disks)
    return total
