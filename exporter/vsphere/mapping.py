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
    "cpu.usage.average": Counter("cpus", m.CPU_UTIL, units.VSPHERE_PERCENT),
    "cpu.usagemhz.average": Counter(HOST, CPU_HERTZ, units.MEGAHERTZ),
}
# datastore.* has no commandsAveraged counter.
del COUNTERS["datastore.commandsAveraged.average"]


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
