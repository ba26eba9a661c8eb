"""What is read of the vSAN performance service, per entity type, and how each value becomes a
model field in base units: the one place vSAN's units are converted.

The service's own units, as its peers read them (Telegraf, vsanmetrics, SexiGraf): latencies in
microseconds (its metric descriptions say "time_ms", but the values are µs: 1,200 is 1.2 ms),
throughput in bytes per second, IOPS per second, percentages 0-100, congestion and the per-layer
congestions a count over the sample's interval. Every label is asked for by name (the query's
`labels`), so an answer carries nothing unread; a label the server does not know is not asked
for and one it sends unasked is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.store import model as m
from exporter.store.units import MICROSECOND, PERCENT


@dataclass(frozen=True, slots=True)
class Metric:
    label: str  # the service's metric label (VsanPerfMetricId.label)
    field: str  # model field
    scale: float = 1.0  # multiplies the value into the field's unit
    per_interval: bool = False  # a count over the sample's interval: divided by it (-> per second)

    @property
    def ratio(self) -> bool:
        """A percentage read as a ratio: over 1 it is refused."""
        return self.scale == PERCENT

    def convert(self, value: float, interval: float) -> float:
        # Divided by the unit's reciprocal (1e6, 100), which floats hold exactly: 400 µs is 0.0004 s,
        # not 0.00039999999999999996.
        value = value / (1.0 / self.scale) if self.scale != 1.0 else value
        return value / interval if self.per_interval else value


def _io(read_ops: str, write_ops: str, read_bytes: str, written_bytes: str, read_latency: str, write_latency: str):
    return (
        Metric(read_ops, m.READS),
        Metric(write_ops, m.WRITES),
        Metric(read_bytes, m.READ_BYTES),
        Metric(written_bytes, m.WRITTEN_BYTES),
        Metric(read_latency, m.GAVG_READ, MICROSECOND),
        Metric(write_latency, m.GAVG_WRITE, MICROSECOND),
    )


# DOM client: I/O as the VMs of a host (or the whole cluster) see it.
_DOM_CLIENT = (
    *_io("iopsRead", "iopsWrite", "throughputRead", "throughputWrite", "latencyAvgRead", "latencyAvgWrite"),
    Metric("oio", m.VSAN_OUTSTANDING_IO),
    Metric("congestion", m.VSAN_CONGESTION, per_interval=True),
)
# Cache and capacity disks: the physical layer (DAVG, GAVG as esxtop names them).
_DISK = (
    Metric("iopsDevRead", m.READS),
    Metric("iopsDevWrite", m.WRITES),
    Metric("throughputDevRead", m.READ_BYTES),
    Metric("throughputDevWrite", m.WRITTEN_BYTES),
    Metric("latencyDevRead", m.VSAN_DEVICE_READ_LATENCY, MICROSECOND),
    Metric("latencyDevWrite", m.VSAN_DEVICE_WRITE_LATENCY, MICROSECOND),
    Metric("latencyDevDAvg", m.DAVG, MICROSECOND),
    Metric("latencyDevGAvg", m.GAVG, MICROSECOND),
)

CLUSTER = "cluster-domclient"
HOST = "host-domclient"
DISK_GROUP = "disk-group"
CACHE_DISK = "cache-disk"
CAPACITY_DISK = "capacity-disk"
VM = "virtual-machine"

METRICS: dict[str, tuple[Metric, ...]] = {
    CLUSTER: _DOM_CLIENT,
    HOST: (*_DOM_CLIENT, Metric("clientCacheHitRate", m.VSAN_CLIENT_CACHE_HIT, PERCENT)),
    DISK_GROUP: (
        # The frontend: I/O the disk group's cache tier takes in.
        *_io("iopsRead", "iopsWrite", "throughputRead", "throughputWrite", "latencyAvgRead", "latencyAvgWrite"),
        Metric("wbFreePct", m.VSAN_WRITE_BUFFER_FREE, PERCENT),
        Metric("rcHitRate", m.VSAN_READ_CACHE_HIT, PERCENT),
        Metric("oioWrite", m.OUTSTANDING_WRITES),
        Metric("latencyDelaySched", m.VSAN_SCHEDULER_LATENCY, MICROSECOND),
        Metric("iopsSched", m.VSAN_SCHEDULER_OPS),
        Metric("iopsDelayPctSched", m.VSAN_SCHEDULER_DELAYED, PERCENT),
        *(Metric(f"{layer}Congestion", m.vsan_layer_congestion(layer), per_interval=True) for layer in m.VSAN_CONGESTION_LAYERS),
    ),
    CACHE_DISK: _DISK,
    CAPACITY_DISK: _DISK,
    VM: _io("iopsRead", "iopsWrite", "throughputRead", "throughputWrite", "latencyRead", "latencyWrite"),
}
# vSAN ESA has no disk groups, and no cache or capacity tier.
DISK_GROUP_TYPES = (DISK_GROUP, CACHE_DISK, CAPACITY_DISK)

BY_LABEL: dict[str, dict[str, Metric]] = {kind: {metric.label: metric for metric in metrics} for kind, metrics in METRICS.items()}
