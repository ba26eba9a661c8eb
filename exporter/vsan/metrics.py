"""What is read of the vSAN performance service, per entity type, and how each value becomes a
model field in base units: the one place vSAN's units are converted.

The service's own units, as its peers read them (Telegraf, vsanmetrics, SexiGraf): latencies in
microseconds (its metric descriptions say "time_ms", but the values are µs: 1,200 is 1.2 ms),
throughput in bytes per second, IOPS per second, percentages 0-100, the network's loss, drop, error
and TCP rates per mille, congestion and the per-layer congestions a count over the sample's
interval; resync jobs, queue depths and outstanding I/O plain counts. Every label is asked for by
name (the query's `labels`), so an answer carries nothing unread; a label the server does not know
is not asked for and one it sends unasked is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.store import model as m
from exporter.store.units import MICROSECOND, PERCENT

PER_MILLE = 1e-3  # the service's "permille" (VsanPerfStatsUnitType)


@dataclass(frozen=True, slots=True)
class Metric:
    label: str  # the service's metric label (VsanPerfMetricId.label)
    field: str  # model field
    scale: float = 1.0  # multiplies the value into the field's unit
    per_interval: bool = False  # a count over the sample's interval: divided by it (-> per second)

    @property
    def ratio(self) -> bool:
        """A percentage or per mille read as a ratio: over 1 it is refused."""
        return self.scale in (PERCENT, PER_MILLE)

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

# vSAN ESA, per storage pool disk: the vSAN layer per tier (labels "<stem><Op><Tier>": iopsReadPerf,
# tputWriteCapacity, avgLatUnmapPerf, ...) and the device (SCSI framework) layer.
_TIER_LABELS = {"performance": "Perf", "capacity": "Capacity"}
_ESA_LAYER = tuple(
    Metric(f"{stem}{op}{_TIER_LABELS[tier]}", m.vsan_tier_field(tier, field), scale)
    for tier in m.VSAN_ESA_TIERS
    for op, fields in (
        ("Read", (m.READS, m.READ_BYTES, m.GAVG_READ)),
        ("Write", (m.WRITES, m.WRITTEN_BYTES, m.GAVG_WRITE)),
        ("Unmap", (m.VSAN_UNMAPS, m.VSAN_UNMAP_BYTES, m.VSAN_UNMAP_LATENCY)),
    )
    for stem, field, scale in zip(("iops", "tput", "avgLat"), fields, (1.0, 1.0, MICROSECOND), strict=True)
)
_ESA_DEVICE = (
    *_DISK,
    Metric("iopsDevUnmap", m.VSAN_UNMAPS),
    Metric("throughputDevUnmap", m.VSAN_UNMAP_BYTES),
    Metric("latencyDevUnmap", m.VSAN_UNMAP_LATENCY, MICROSECOND),
    Metric("latencyDevKAvg", m.KAVG, MICROSECOND),
    Metric("outstandingCmdCount", m.VSAN_OUTSTANDING_COMMANDS),
)
# The vSAN network. The loss, drop and error rates are per mille: the service's own unit for them
# (VsanPerfStatsUnitType "permille"), though their descriptions say "percentage". docs/vsan.md#units
# says where each comes from; tests/unit/test_vsan_units.py pins them.
_NETWORK = (
    Metric("rxThroughput", m.VSAN_RX_BYTES),
    Metric("txThroughput", m.VSAN_TX_BYTES),
    Metric("rxPackets", m.VSAN_RX_PACKETS),
    Metric("txPackets", m.VSAN_TX_PACKETS),
    Metric("rxPacketsLossRate", m.VSAN_RX_LOSS, PER_MILLE),
    Metric("txPacketsLossRate", m.VSAN_TX_LOSS, PER_MILLE),
    Metric("portRxDrops", m.VSAN_PORT_RX_DROPS, PER_MILLE),
    Metric("portTxDrops", m.VSAN_PORT_TX_DROPS, PER_MILLE),
)
# TCP per host and netstack: vsan-host-net lists tcpTxRexmitRate and tcpRxErrRate among its labels
# but returns no data for them on a live vSAN 9; vsan-tcpip-stats serves them. Per mille by analogy
# (every other tcp*Rate of that type is per mille, measured), not by a measurement of these two.
_TCPIP = (
    Metric("tcpTxRexmitRate", m.VSAN_TCP_RETRANSMITS, PER_MILLE),
    Metric("tcpRxErrRate", m.VSAN_TCP_RX_ERRORS, PER_MILLE),
)
_NIC = (
    *_NETWORK,
    Metric("rxCrcErr", m.VSAN_RX_CRC_ERRORS, PER_MILLE),
    Metric("rxErr", m.VSAN_RX_ERRORS, PER_MILLE),
    Metric("txErr", m.VSAN_TX_ERRORS, PER_MILLE),
    Metric("pauseCount", m.VSAN_PAUSE, PER_MILLE),
    Metric("rxCrcErrRaw", m.VSAN_RX_CRC_ERRORS_TOTAL),
    Metric("rxErrRaw", m.VSAN_RX_ERRORS_TOTAL),
    Metric("txErrRaw", m.VSAN_TX_ERRORS_TOTAL),
    Metric("pauseCountRaw", m.VSAN_PAUSE_TOTAL),
    Metric("pfcCountRaw", m.VSAN_PFC_TOTAL),
)
# The backend: the VMs' I/O as the component manager (or owner) sees it, beside resync.
_BACKEND = (
    *_io("iopsRead", "iopsWrite", "throughputRead", "throughputWrite", "latencyAvgRead", "latencyAvgWrite"),
    Metric("iopsRecWrite", m.VSAN_RECOVERY_WRITES),
    Metric("throughputRecWrite", m.VSAN_RECOVERY_WRITE_BYTES),
    Metric("latencyAvgRecWrite", m.VSAN_RECOVERY_WRITE_LATENCY, MICROSECOND),
    Metric("iopsResyncRead", m.VSAN_RESYNC_READS),
    Metric("tputResyncRead", m.VSAN_RESYNC_READ_BYTES),
    Metric("latAvgResyncRead", m.VSAN_RESYNC_READ_LATENCY, MICROSECOND),
    Metric("oio", m.VSAN_OUTSTANDING_IO),
    Metric("congestion", m.VSAN_CONGESTION, per_interval=True),
)
# A host's component manager also splits its outstanding I/O and queue depth by class (counts, no unit).
_HOST_BACKEND = (
    *_BACKEND,
    Metric("oioRecoveryWrite", m.VSAN_OUTSTANDING_RECOVERY_WRITES),
    Metric("oioResyncRead", m.VSAN_OUTSTANDING_RESYNC_READS),
    *(
        Metric(f"{io_class}QueueDepth{op.capitalize()}", m.vsan_queue_depth(io_class, op))
        for io_class in m.VSAN_QUEUE_CLASSES
        for op in m.VSAN_QUEUE_OPS
    ),
)
# The owners' resync jobs per state, counts (numPendingResyncJobs, ...); blocked only per host.
_CLUSTER_RESYNC_JOBS = tuple(
    Metric(f"num{state.capitalize()}ResyncJobs", m.vsan_resync_jobs(state)) for state in m.VSAN_RESYNC_JOB_STATES[:3]
)
_HOST_RESYNC_JOBS = tuple(
    Metric(f"num{state.capitalize()}ResyncJobs", m.vsan_resync_jobs(state)) for state in m.VSAN_RESYNC_JOB_STATES
)

CLUSTER = "cluster-domclient"
HOST = "host-domclient"
DISK_GROUP = "disk-group"
CACHE_DISK = "cache-disk"
CAPACITY_DISK = "capacity-disk"
VM = "virtual-machine"
ESA_DISK_LAYER = "vsan-esa-disk-layer"
ESA_DISK_DEVICE = "vsan-esa-disk-scsifw"
HOST_NETWORK = "vsan-host-net"
TCPIP = "vsan-tcpip-stats"  # "<node uuid>|<netstack>"
NIC = "vsan-pnic-net"  # "<node uuid>|vmnicN"
VMKNIC = "vsan-vnic-net"  # "<node uuid>|<netstack>|vmkN"
HOST_BACKEND = "host-domcompmgr"
CLUSTER_BACKEND = "cluster-domcompmgr"
CLUSTER_OWNER = "cluster-domowner"
HOST_OWNER = "host-domowner"

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
    ESA_DISK_LAYER: _ESA_LAYER,
    ESA_DISK_DEVICE: _ESA_DEVICE,
    HOST_NETWORK: _NETWORK,
    TCPIP: _TCPIP,
    NIC: _NIC,
    VMKNIC: _NETWORK,
    HOST_BACKEND: _HOST_BACKEND,
    CLUSTER_BACKEND: _BACKEND,
    CLUSTER_OWNER: (*_BACKEND, Metric("avgResyncParallelism", m.VSAN_RESYNC_PARALLELISM), *_CLUSTER_RESYNC_JOBS),
    HOST_OWNER: _HOST_RESYNC_JOBS,
}
# vSAN ESA has no disk groups, and no cache or capacity tier; vSAN OSA has no storage pool.
DISK_GROUP_TYPES = (DISK_GROUP, CACHE_DISK, CAPACITY_DISK)
ESA_TYPES = (ESA_DISK_LAYER, ESA_DISK_DEVICE)

BY_LABEL: dict[str, dict[str, Metric]] = {kind: {metric.label: metric for metric in metrics} for kind, metrics in METRICS.items()}
