"""vSAN's units and answers, pinned: every conversion of exporter/vsan/metrics.py, the CSV answer
(blank cells, bad cells, unknown labels, misaligned series), the newest complete sample, object
health state names, and the collector's families (promtool-clean)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from exporter.collectors import vsan as vsan_collector
from exporter.collectors.textformat import render
from exporter.store import model as m
from exporter.store.store import Store
from exporter.vsan import health, perf, perfcsv
from exporter.vsan import metrics as vm

T0 = perfcsv.parse_time("2026-11-25 15:20:00")
T1, T2 = T0 + 300, T0 + 600


def _row(ref, times, **series):
    info = ",".join(perfcsv.format_time(t) for t in times)
    dropped: dict[str, int] = {}
    return perfcsv.parse_entity(ref, info, [(label, text, 300) for label, text in series.items()], dropped), dropped


def _convert(kind: str, label: str, value: float, interval: float = 300.0) -> tuple[str, float]:
    metric = vm.BY_LABEL[kind][label]
    return metric.field, metric.convert(value, interval)


CONVERSIONS = [
    # DOM client (cluster and host): IOPS per second, bytes per second, latency µs -> s.
    (vm.HOST, "iopsRead", 1500, m.READS, 1500.0),
    (vm.HOST, "iopsWrite", 700, m.WRITES, 700.0),
    (vm.HOST, "throughputRead", 52428800, m.READ_BYTES, 52428800.0),
    (vm.HOST, "throughputWrite", 1048576, m.WRITTEN_BYTES, 1048576.0),
    (vm.HOST, "latencyAvgRead", 1200, m.GAVG_READ, 0.0012),
    (vm.HOST, "latencyAvgWrite", 65000, m.GAVG_WRITE, 0.065),
    (vm.HOST, "oio", 12, m.VSAN_OUTSTANDING_IO, 12.0),
    (vm.HOST, "congestion", 60, m.VSAN_CONGESTION, 0.2),  # 60 over a 300 s sample: 0.2 per second
    (vm.HOST, "clientCacheHitRate", 85, m.VSAN_CLIENT_CACHE_HIT, 0.85),
    (vm.CLUSTER, "latencyAvgRead", 800, m.GAVG_READ, 0.0008),
    (vm.CLUSTER, "congestion", 30, m.VSAN_CONGESTION, 0.1),
    (vm.CLUSTER, "iopsRead", 900, m.READS, 900.0),
    (vm.CLUSTER, "iopsWrite", 400, m.WRITES, 400.0),
    (vm.CLUSTER, "throughputRead", 2048, m.READ_BYTES, 2048.0),
    (vm.CLUSTER, "throughputWrite", 4096, m.WRITTEN_BYTES, 4096.0),
    (vm.CLUSTER, "latencyAvgWrite", 2500, m.GAVG_WRITE, 0.0025),
    (vm.CLUSTER, "oio", 40, m.VSAN_OUTSTANDING_IO, 40.0),
    # Disk group: percentages 0-100 -> ratios, per-layer congestion per second, scheduler latency.
    (vm.DISK_GROUP, "wbFreePct", 15, m.VSAN_WRITE_BUFFER_FREE, 0.15),
    (vm.DISK_GROUP, "rcHitRate", 97, m.VSAN_READ_CACHE_HIT, 0.97),
    (vm.DISK_GROUP, "ssdCongestion", 150, m.vsan_layer_congestion("ssd"), 0.5),
    (vm.DISK_GROUP, "logCongestion", 3, m.vsan_layer_congestion("log"), 0.01),
    (vm.DISK_GROUP, "memCongestion", 0, m.vsan_layer_congestion("mem"), 0.0),
    (vm.DISK_GROUP, "slabCongestion", 6, m.vsan_layer_congestion("slab"), 0.02),
    (vm.DISK_GROUP, "compCongestion", 9, m.vsan_layer_congestion("comp"), 0.03),
    (vm.DISK_GROUP, "iopsCongestion", 12, m.vsan_layer_congestion("iops"), 0.04),
    (vm.DISK_GROUP, "latencyDelaySched", 2500, m.VSAN_SCHEDULER_LATENCY, 0.0025),
    (vm.DISK_GROUP, "iopsSched", 420, m.VSAN_SCHEDULER_OPS, 420.0),
    (vm.DISK_GROUP, "iopsDelayPctSched", 40, m.VSAN_SCHEDULER_DELAYED, 0.4),
    (vm.DISK_GROUP, "oioWrite", 5, m.OUTSTANDING_WRITES, 5.0),
    (vm.DISK_GROUP, "latencyAvgWrite", 3000, m.GAVG_WRITE, 0.003),
    (vm.DISK_GROUP, "latencyAvgRead", 700, m.GAVG_READ, 0.0007),
    (vm.DISK_GROUP, "iopsRead", 800, m.READS, 800.0),
    (vm.DISK_GROUP, "iopsWrite", 600, m.WRITES, 600.0),
    (vm.DISK_GROUP, "throughputRead", 1000, m.READ_BYTES, 1000.0),
    (vm.DISK_GROUP, "throughputWrite", 3000, m.WRITTEN_BYTES, 3000.0),
    # Cache and capacity disks: the physical layer.
    (vm.CACHE_DISK, "latencyDevRead", 400, m.VSAN_DEVICE_READ_LATENCY, 0.0004),
    (vm.CACHE_DISK, "latencyDevWrite", 900, m.VSAN_DEVICE_WRITE_LATENCY, 0.0009),
    (vm.CAPACITY_DISK, "latencyDevDAvg", 55000, m.DAVG, 0.055),
    (vm.CAPACITY_DISK, "latencyDevGAvg", 56000, m.GAVG, 0.056),
    (vm.CAPACITY_DISK, "throughputDevWrite", 4096, m.WRITTEN_BYTES, 4096.0),
    (vm.CAPACITY_DISK, "throughputDevRead", 1024, m.READ_BYTES, 1024.0),
    (vm.CAPACITY_DISK, "iopsDevRead", 50, m.READS, 50.0),
    (vm.CAPACITY_DISK, "iopsDevWrite", 70, m.WRITES, 70.0),
    (vm.CAPACITY_DISK, "latencyDevRead", 6000, m.VSAN_DEVICE_READ_LATENCY, 0.006),
    (vm.CAPACITY_DISK, "latencyDevWrite", 8000, m.VSAN_DEVICE_WRITE_LATENCY, 0.008),
    (vm.CACHE_DISK, "iopsDevRead", 500, m.READS, 500.0),
    (vm.CACHE_DISK, "iopsDevWrite", 900, m.WRITES, 900.0),
    (vm.CACHE_DISK, "throughputDevRead", 10, m.READ_BYTES, 10.0),
    (vm.CACHE_DISK, "throughputDevWrite", 20, m.WRITTEN_BYTES, 20.0),
    (vm.CACHE_DISK, "latencyDevDAvg", 300, m.DAVG, 0.0003),
    (vm.CACHE_DISK, "latencyDevGAvg", 350, m.GAVG, 0.00035),
    # VMs.
    (vm.VM, "latencyRead", 2000, m.GAVG_READ, 0.002),
    (vm.VM, "latencyWrite", 70000, m.GAVG_WRITE, 0.07),
    (vm.VM, "iopsRead", 300, m.READS, 300.0),
    (vm.VM, "throughputWrite", 8192, m.WRITTEN_BYTES, 8192.0),
    (vm.VM, "iopsWrite", 100, m.WRITES, 100.0),
    (vm.VM, "throughputRead", 4096, m.READ_BYTES, 4096.0),
    # vSAN ESA disks: the vSAN layer per tier (µs -> s), the device layer.
    (vm.ESA_DISK_LAYER, "iopsReadPerf", 900, m.vsan_tier_field("performance", m.READS), 900.0),
    (vm.ESA_DISK_LAYER, "iopsWritePerf", 600, m.vsan_tier_field("performance", m.WRITES), 600.0),
    (vm.ESA_DISK_LAYER, "iopsUnmapPerf", 20, m.vsan_tier_field("performance", m.VSAN_UNMAPS), 20.0),
    (vm.ESA_DISK_LAYER, "tputReadPerf", 36864000, m.vsan_tier_field("performance", m.READ_BYTES), 36864000.0),
    (vm.ESA_DISK_LAYER, "tputWritePerf", 24576000, m.vsan_tier_field("performance", m.WRITTEN_BYTES), 24576000.0),
    (vm.ESA_DISK_LAYER, "tputUnmapPerf", 81920, m.vsan_tier_field("performance", m.VSAN_UNMAP_BYTES), 81920.0),
    (vm.ESA_DISK_LAYER, "avgLatReadPerf", 250, m.vsan_tier_field("performance", m.GAVG_READ), 0.00025),
    (vm.ESA_DISK_LAYER, "avgLatWritePerf", 52000, m.vsan_tier_field("performance", m.GAVG_WRITE), 0.052),
    (vm.ESA_DISK_LAYER, "avgLatUnmapPerf", 300, m.vsan_tier_field("performance", m.VSAN_UNMAP_LATENCY), 0.0003),
    (vm.ESA_DISK_LAYER, "iopsReadCapacity", 900, m.vsan_tier_field("capacity", m.READS), 900.0),
    (vm.ESA_DISK_LAYER, "iopsWriteCapacity", 600, m.vsan_tier_field("capacity", m.WRITES), 600.0),
    (vm.ESA_DISK_LAYER, "iopsUnmapCapacity", 20, m.vsan_tier_field("capacity", m.VSAN_UNMAPS), 20.0),
    (vm.ESA_DISK_LAYER, "tputReadCapacity", 36864000, m.vsan_tier_field("capacity", m.READ_BYTES), 36864000.0),
    (vm.ESA_DISK_LAYER, "tputWriteCapacity", 24576000, m.vsan_tier_field("capacity", m.WRITTEN_BYTES), 24576000.0),
    (vm.ESA_DISK_LAYER, "tputUnmapCapacity", 81920, m.vsan_tier_field("capacity", m.VSAN_UNMAP_BYTES), 81920.0),
    (vm.ESA_DISK_LAYER, "avgLatReadCapacity", 250, m.vsan_tier_field("capacity", m.GAVG_READ), 0.00025),
    (vm.ESA_DISK_LAYER, "avgLatWriteCapacity", 52000, m.vsan_tier_field("capacity", m.GAVG_WRITE), 0.052),
    (vm.ESA_DISK_LAYER, "avgLatUnmapCapacity", 300, m.vsan_tier_field("capacity", m.VSAN_UNMAP_LATENCY), 0.0003),
    (vm.ESA_DISK_DEVICE, "iopsDevRead", 900, m.READS, 900.0),
    (vm.ESA_DISK_DEVICE, "iopsDevWrite", 600, m.WRITES, 600.0),
    (vm.ESA_DISK_DEVICE, "iopsDevUnmap", 20, m.VSAN_UNMAPS, 20.0),
    (vm.ESA_DISK_DEVICE, "throughputDevRead", 10, m.READ_BYTES, 10.0),
    (vm.ESA_DISK_DEVICE, "throughputDevWrite", 20, m.WRITTEN_BYTES, 20.0),
    (vm.ESA_DISK_DEVICE, "throughputDevUnmap", 30, m.VSAN_UNMAP_BYTES, 30.0),
    (vm.ESA_DISK_DEVICE, "latencyDevRead", 180, m.VSAN_DEVICE_READ_LATENCY, 0.00018),
    (vm.ESA_DISK_DEVICE, "latencyDevWrite", 240, m.VSAN_DEVICE_WRITE_LATENCY, 0.00024),
    (vm.ESA_DISK_DEVICE, "latencyDevUnmap", 200, m.VSAN_UNMAP_LATENCY, 0.0002),
    (vm.ESA_DISK_DEVICE, "latencyDevDAvg", 170, m.DAVG, 0.00017),
    (vm.ESA_DISK_DEVICE, "latencyDevKAvg", 20, m.KAVG, 0.00002),
    (vm.ESA_DISK_DEVICE, "latencyDevGAvg", 190, m.GAVG, 0.00019),
    (vm.ESA_DISK_DEVICE, "outstandingCmdCount", 4, m.VSAN_OUTSTANDING_COMMANDS, 4.0),
    # The vSAN network: loss, drop and error rates per mille (-> ratio), Raw counters as they are.
    (vm.HOST_NETWORK, "rxThroughput", 52428800, m.VSAN_RX_BYTES, 52428800.0),
    (vm.HOST_NETWORK, "txThroughput", 41943040, m.VSAN_TX_BYTES, 41943040.0),
    (vm.HOST_NETWORK, "rxPackets", 9000, m.VSAN_RX_PACKETS, 9000.0),
    (vm.HOST_NETWORK, "txPackets", 8000, m.VSAN_TX_PACKETS, 8000.0),
    (vm.HOST_NETWORK, "rxPacketsLossRate", 12, m.VSAN_RX_LOSS, 0.012),
    (vm.HOST_NETWORK, "txPacketsLossRate", 3, m.VSAN_TX_LOSS, 0.003),
    (vm.HOST_NETWORK, "portRxDrops", 5, m.VSAN_PORT_RX_DROPS, 0.005),
    (vm.HOST_NETWORK, "portTxDrops", 1, m.VSAN_PORT_TX_DROPS, 0.001),
    (vm.NIC, "rxThroughput", 52428800, m.VSAN_RX_BYTES, 52428800.0),
    (vm.NIC, "txThroughput", 41943040, m.VSAN_TX_BYTES, 41943040.0),
    (vm.NIC, "rxPackets", 9000, m.VSAN_RX_PACKETS, 9000.0),
    (vm.NIC, "txPackets", 8000, m.VSAN_TX_PACKETS, 8000.0),
    (vm.NIC, "rxPacketsLossRate", 12, m.VSAN_RX_LOSS, 0.012),
    (vm.NIC, "txPacketsLossRate", 3, m.VSAN_TX_LOSS, 0.003),
    (vm.NIC, "portRxDrops", 5, m.VSAN_PORT_RX_DROPS, 0.005),
    (vm.NIC, "portTxDrops", 1, m.VSAN_PORT_TX_DROPS, 0.001),
    (vm.VMKNIC, "rxThroughput", 52428800, m.VSAN_RX_BYTES, 52428800.0),
    (vm.VMKNIC, "txThroughput", 41943040, m.VSAN_TX_BYTES, 41943040.0),
    (vm.VMKNIC, "rxPackets", 9000, m.VSAN_RX_PACKETS, 9000.0),
    (vm.VMKNIC, "txPackets", 8000, m.VSAN_TX_PACKETS, 8000.0),
    (vm.VMKNIC, "rxPacketsLossRate", 12, m.VSAN_RX_LOSS, 0.012),
    (vm.VMKNIC, "txPacketsLossRate", 3, m.VSAN_TX_LOSS, 0.003),
    (vm.VMKNIC, "portRxDrops", 5, m.VSAN_PORT_RX_DROPS, 0.005),
    (vm.VMKNIC, "portTxDrops", 1, m.VSAN_PORT_TX_DROPS, 0.001),
    # TCP from vsan-tcpip-stats (vsan-host-net lists these two but returns nothing for them): per
    # mille, inferred from the type's other tcp*Rate labels (measured per mille), never seen non-zero.
    (vm.TCPIP, "tcpTxRexmitRate", 2, m.VSAN_TCP_RETRANSMITS, 0.002),
    (vm.TCPIP, "tcpRxErrRate", 1, m.VSAN_TCP_RX_ERRORS, 0.001),
    (vm.NIC, "rxCrcErr", 2, m.VSAN_RX_CRC_ERRORS, 0.002),
    (vm.NIC, "rxErr", 4, m.VSAN_RX_ERRORS, 0.004),
    (vm.NIC, "txErr", 1, m.VSAN_TX_ERRORS, 0.001),
    (vm.NIC, "pauseCount", 7, m.VSAN_PAUSE, 0.007),
    (vm.NIC, "rxCrcErrRaw", 3, m.VSAN_RX_CRC_ERRORS_TOTAL, 3.0),
    (vm.NIC, "rxErrRaw", 5, m.VSAN_RX_ERRORS_TOTAL, 5.0),
    (vm.NIC, "txErrRaw", 0, m.VSAN_TX_ERRORS_TOTAL, 0.0),
    (vm.NIC, "pauseCountRaw", 224, m.VSAN_PAUSE_TOTAL, 224.0),
    (vm.NIC, "pfcCountRaw", 9, m.VSAN_PFC_TOTAL, 9.0),
    # The backend: the VMs' I/O beside recovery writes and resync reads.
    (vm.HOST_BACKEND, "iopsRead", 1400, m.READS, 1400.0),
    (vm.HOST_BACKEND, "iopsWrite", 900, m.WRITES, 900.0),
    (vm.HOST_BACKEND, "throughputRead", 57344000, m.READ_BYTES, 57344000.0),
    (vm.HOST_BACKEND, "throughputWrite", 36864000, m.WRITTEN_BYTES, 36864000.0),
    (vm.HOST_BACKEND, "latencyAvgRead", 600, m.GAVG_READ, 0.0006),
    (vm.HOST_BACKEND, "latencyAvgWrite", 900, m.GAVG_WRITE, 0.0009),
    (vm.HOST_BACKEND, "iopsRecWrite", 40, m.VSAN_RECOVERY_WRITES, 40.0),
    (vm.HOST_BACKEND, "throughputRecWrite", 2621440, m.VSAN_RECOVERY_WRITE_BYTES, 2621440.0),
    (vm.HOST_BACKEND, "latencyAvgRecWrite", 1500, m.VSAN_RECOVERY_WRITE_LATENCY, 0.0015),
    (vm.HOST_BACKEND, "iopsResyncRead", 35, m.VSAN_RESYNC_READS, 35.0),
    (vm.HOST_BACKEND, "tputResyncRead", 2293760, m.VSAN_RESYNC_READ_BYTES, 2293760.0),
    (vm.HOST_BACKEND, "latAvgResyncRead", 1200, m.VSAN_RESYNC_READ_LATENCY, 0.0012),
    (vm.HOST_BACKEND, "oio", 6, m.VSAN_OUTSTANDING_IO, 6.0),
    (vm.HOST_BACKEND, "congestion", 30, m.VSAN_CONGESTION, 0.1),
    # A host's component manager: outstanding resync I/O and queue depth per class and operation, counts.
    (vm.HOST_BACKEND, "oioRecoveryWrite", 3, m.VSAN_OUTSTANDING_RECOVERY_WRITES, 3.0),
    (vm.HOST_BACKEND, "oioResyncRead", 2, m.VSAN_OUTSTANDING_RESYNC_READS, 2.0),
    (vm.HOST_BACKEND, "vmdiskQueueDepthRead", 7, m.vsan_queue_depth("vmdisk", "read"), 7.0),
    (vm.HOST_BACKEND, "vmdiskQueueDepthWrite", 9, m.vsan_queue_depth("vmdisk", "write"), 9.0),
    (vm.HOST_BACKEND, "namespaceQueueDepthRead", 1, m.vsan_queue_depth("namespace", "read"), 1.0),
    (vm.HOST_BACKEND, "namespaceQueueDepthWrite", 0, m.vsan_queue_depth("namespace", "write"), 0.0),
    (vm.HOST_BACKEND, "metadataQueueDepthRead", 2, m.vsan_queue_depth("metadata", "read"), 2.0),
    (vm.HOST_BACKEND, "metadataQueueDepthWrite", 3, m.vsan_queue_depth("metadata", "write"), 3.0),
    (vm.HOST_BACKEND, "resyncQueueDepthRead", 4, m.vsan_queue_depth("resync", "read"), 4.0),
    (vm.HOST_BACKEND, "resyncQueueDepthWrite", 5, m.vsan_queue_depth("resync", "write"), 5.0),
    (vm.CLUSTER_BACKEND, "iopsRead", 1400, m.READS, 1400.0),
    (vm.CLUSTER_BACKEND, "iopsWrite", 900, m.WRITES, 900.0),
    (vm.CLUSTER_BACKEND, "throughputRead", 57344000, m.READ_BYTES, 57344000.0),
    (vm.CLUSTER_BACKEND, "throughputWrite", 36864000, m.WRITTEN_BYTES, 36864000.0),
    (vm.CLUSTER_BACKEND, "latencyAvgRead", 600, m.GAVG_READ, 0.0006),
    (vm.CLUSTER_BACKEND, "latencyAvgWrite", 900, m.GAVG_WRITE, 0.0009),
    (vm.CLUSTER_BACKEND, "iopsRecWrite", 40, m.VSAN_RECOVERY_WRITES, 40.0),
    (vm.CLUSTER_BACKEND, "throughputRecWrite", 2621440, m.VSAN_RECOVERY_WRITE_BYTES, 2621440.0),
    (vm.CLUSTER_BACKEND, "latencyAvgRecWrite", 1500, m.VSAN_RECOVERY_WRITE_LATENCY, 0.0015),
    (vm.CLUSTER_BACKEND, "iopsResyncRead", 35, m.VSAN_RESYNC_READS, 35.0),
    (vm.CLUSTER_BACKEND, "tputResyncRead", 2293760, m.VSAN_RESYNC_READ_BYTES, 2293760.0),
    (vm.CLUSTER_BACKEND, "latAvgResyncRead", 1200, m.VSAN_RESYNC_READ_LATENCY, 0.0012),
    (vm.CLUSTER_BACKEND, "oio", 6, m.VSAN_OUTSTANDING_IO, 6.0),
    (vm.CLUSTER_BACKEND, "congestion", 30, m.VSAN_CONGESTION, 0.1),
    (vm.CLUSTER_OWNER, "iopsRead", 1400, m.READS, 1400.0),
    (vm.CLUSTER_OWNER, "iopsWrite", 900, m.WRITES, 900.0),
    (vm.CLUSTER_OWNER, "throughputRead", 57344000, m.READ_BYTES, 57344000.0),
    (vm.CLUSTER_OWNER, "throughputWrite", 36864000, m.WRITTEN_BYTES, 36864000.0),
    (vm.CLUSTER_OWNER, "latencyAvgRead", 600, m.GAVG_READ, 0.0006),
    (vm.CLUSTER_OWNER, "latencyAvgWrite", 900, m.GAVG_WRITE, 0.0009),
    (vm.CLUSTER_OWNER, "iopsRecWrite", 40, m.VSAN_RECOVERY_WRITES, 40.0),
    (vm.CLUSTER_OWNER, "throughputRecWrite", 2621440, m.VSAN_RECOVERY_WRITE_BYTES, 2621440.0),
    (vm.CLUSTER_OWNER, "latencyAvgRecWrite", 1500, m.VSAN_RECOVERY_WRITE_LATENCY, 0.0015),
    (vm.CLUSTER_OWNER, "iopsResyncRead", 35, m.VSAN_RESYNC_READS, 35.0),
    (vm.CLUSTER_OWNER, "tputResyncRead", 2293760, m.VSAN_RESYNC_READ_BYTES, 2293760.0),
    (vm.CLUSTER_OWNER, "latAvgResyncRead", 1200, m.VSAN_RESYNC_READ_LATENCY, 0.0012),
    (vm.CLUSTER_OWNER, "oio", 6, m.VSAN_OUTSTANDING_IO, 6.0),
    (vm.CLUSTER_OWNER, "congestion", 30, m.VSAN_CONGESTION, 0.1),
    (vm.CLUSTER_OWNER, "avgResyncParallelism", 2, m.VSAN_RESYNC_PARALLELISM, 2.0),
    # The owners' resync jobs per state: counts (cluster: no blocked; host: all four).
    (vm.CLUSTER_OWNER, "numPendingResyncJobs", 12, m.vsan_resync_jobs("pending"), 12.0),
    (vm.CLUSTER_OWNER, "numRunningResyncJobs", 8, m.vsan_resync_jobs("running"), 8.0),
    (vm.CLUSTER_OWNER, "numSuspendedResyncJobs", 1, m.vsan_resync_jobs("suspended"), 1.0),
    (vm.HOST_OWNER, "numPendingResyncJobs", 3, m.vsan_resync_jobs("pending"), 3.0),
    (vm.HOST_OWNER, "numRunningResyncJobs", 2, m.vsan_resync_jobs("running"), 2.0),
    (vm.HOST_OWNER, "numSuspendedResyncJobs", 0, m.vsan_resync_jobs("suspended"), 0.0),
    (vm.HOST_OWNER, "numBlockedResyncJobs", 1, m.vsan_resync_jobs("blocked"), 1.0),
]


@pytest.mark.parametrize(("kind", "label", "raw", "field", "expected"), CONVERSIONS)
def test_every_conversion(kind, label, raw, field, expected):
    got_field, value = _convert(kind, label, raw)
    assert got_field == field
    assert value == pytest.approx(expected, rel=1e-12)


def test_every_label_is_pinned_above():
    """A label added to the table without a pinned conversion fails here."""
    pinned = {(kind, label) for kind, label, *_ in CONVERSIONS}
    table = {(kind, metric.label) for kind, metrics in vm.METRICS.items() for metric in metrics}
    assert sorted(table - pinned) == []


def test_a_per_mille_ratio_over_one_is_refused():
    """Per mille, like percent, is a share: 1000 is all of it, more is refused and counted."""
    dropped: dict[str, int] = {}
    row, _ = _row("vsan-tcpip-stats:n1|defaultTcpipStack", [T1], tcpTxRexmitRate="1001", tcpRxErrRate="1000")
    sample = perfcsv.sample_at([row], T1, perfcsv.Names(hosts={"n1": "esx1"}), dropped)
    assert sample.tcpip == {("esx1", "defaultTcpipStack"): {m.VSAN_TCP_RX_ERRORS: 1.0}}
    assert dropped == {"out_of_range": 1}


def test_blank_cell_is_no_value_never_zero():
    row, dropped = _row("host-domclient:n1", [T0, T1, T2], latencyAvgRead="1200,,3000", iopsRead="5,6,7")
    assert row.series["latencyAvgRead"] == [1200.0, None, 3000.0]
    assert dropped == {}
    sample = perfcsv.sample_at([row], T1, perfcsv.Names(hosts={"n1": "esx1"}), dropped)
    assert m.GAVG_READ not in sample.hosts["esx1"]  # absent, not 0
    assert sample.hosts["esx1"][m.READS] == 6.0


def test_bad_cells_are_counted_not_kept():
    row, dropped = _row("host-domclient:n1", [T0, T1, T2], latencyAvgRead="abc,-5,nan", iopsRead="1,2")
    assert row.series["latencyAvgRead"] == [None, None, None]
    assert "iopsRead" not in row.series  # two values for three times: cannot be aligned
    assert dropped == {"bad_value": 2, "negative": 1, "length_mismatch": 1}


def test_labels_not_ours_are_ignored_and_bad_entities_counted():
    row, dropped = _row("host-domclient:n1", [T0], latencyAvgRead="1", someFutureLabel="9")
    assert set(row.series) == {"latencyAvgRead"}
    assert dropped == {}
    dropped = {}
    assert perfcsv.parse_entity("no-colon", "", [], dropped) is None
    assert dropped == {"bad_entity": 1}
    bad_time = {}
    row = perfcsv.parse_entity("cluster-domclient:c", "2026-11-25 15:20:00,yesterday", [("oio", "1,2", 300)], bad_time)
    assert row.times == [T0, None] and bad_time == {"bad_timestamp": 1}


def test_newest_complete_sample_waits_for_every_entity():
    cluster, _ = _row("cluster-domclient:c", [T0, T1, T2], oio="1,2,3")
    host_a, _ = _row("host-domclient:a", [T0, T1, T2], oio="1,2,3")
    host_b, _ = _row("host-domclient:b", [T0, T1], oio="1,2")  # its newest sample is not written yet
    idle_vm, _ = _row("virtual-machine:v", [], iopsRead="")  # nothing in the window: blocks no one
    rows = [cluster, host_a, host_b, idle_vm]
    assert perfcsv.newest_complete(rows, after=T0 - 1, now=T2 + 10) == T1
    assert perfcsv.newest_complete(rows, after=T1, now=T2 + 10) is None  # T1 taken: never twice
    host_b_later, _ = _row("host-domclient:b", [T0, T1, T2], oio="1,2,3")
    assert perfcsv.newest_complete([cluster, host_a, host_b_later], after=T1, now=T2 + 10) == T2
    assert perfcsv.newest_complete([cluster, host_a, host_b_later], after=T1, now=T2 - 1) is None  # not after now


def test_sample_maps_uuids_and_counts_unknown_ones():
    rows = [
        _row("cluster-domclient:c", [T0], congestion="30")[0],
        _row("host-domclient:n1", [T0], latencyAvgWrite="65000")[0],
        _row("host-domclient:stranger", [T0], latencyAvgWrite="1")[0],
        _row("disk-group:cache-u", [T0], wbFreePct="15", ssdCongestion="150")[0],
        _row("cache-disk:cache-u", [T0], latencyDevRead="400")[0],
        _row("capacity-disk:cap-u", [T0], latencyDevDAvg="55000")[0],
        _row("virtual-machine:vm-u", [T0], latencyWrite="70000")[0],
    ]
    names = perfcsv.Names(
        hosts={"n1": "esx1"},
        disk_groups={"cache-u": ("esx1", "naa.cache")},
        disks={"cache-u": ("esx1", "naa.cache"), "cap-u": ("esx1", "naa.cap")},
        vms={"vm-u": "db01"},
    )
    dropped: dict[str, int] = {}
    sample = perfcsv.sample_at(rows, T0, names, dropped)
    assert sample.timestamp == T0 and sample.interval == 300
    assert sample.cluster == {m.VSAN_CONGESTION: 0.1}
    assert sample.hosts == {"esx1": {m.GAVG_WRITE: 0.065}}
    assert sample.disk_groups[("esx1", "naa.cache")] == {m.VSAN_WRITE_BUFFER_FREE: 0.15, m.vsan_layer_congestion("ssd"): 0.5}
    assert sample.disks[("esx1", "naa.cache")] == {m.VSAN_DEVICE_READ_LATENCY: 0.0004}
    assert sample.disks[("esx1", "naa.cap")] == {m.DAVG: 0.055}
    assert sample.vms == {"db01": {m.GAVG_WRITE: 0.07}}
    assert dropped == {"unknown_entity": 1}


def test_esa_asks_for_no_disk_groups_osa_for_no_storage_pool_and_labels_follow_the_server():
    esa = set(perf.entity_types(esa=True))
    assert not esa & {vm.DISK_GROUP, vm.CACHE_DISK, vm.CAPACITY_DISK}
    assert esa >= {vm.CLUSTER, vm.HOST, vm.VM, vm.ESA_DISK_LAYER, vm.ESA_DISK_DEVICE, vm.NIC, vm.HOST_BACKEND}
    assert set(perf.entity_types(esa=False)) == set(vm.METRICS) - {vm.ESA_DISK_LAYER, vm.ESA_DISK_DEVICE}
    ours = [metric.label for metric in vm.METRICS[vm.HOST]]
    # every label of ours listed: asked for by name
    assert perf.labels_for(vm.HOST, {vm.HOST: {*ours, "notOurs"}}) == ours
    # the list understates (some of ours unlisted): no label list, every label the type has
    supported = {vm.HOST: {"iopsRead", "latencyAvgRead", "notOurs"}}
    assert perf.labels_for(vm.HOST, supported) is None
    assert perf.labels_for(vm.VM, supported) == [metric.label for metric in vm.METRICS[vm.VM]]  # not listed: all of ours
    ((spec,),) = perf.calls(vm.HOST, perf.WILDCARD, [], perf.labels_for(vm.HOST, supported), T0, T1)
    assert (spec.entityRefId, list(spec.labels or [])) == ("host-domclient:*", [])
    ((spec,),) = perf.calls(vm.VM, perf.WILDCARD, [], perf.labels_for(vm.VM, supported), T0, T1)
    assert list(spec.labels) == [metric.label for metric in vm.METRICS[vm.VM]]
    assert spec.startTime.timestamp() == T0 and spec.endTime.timestamp() == T1


UUIDS = [f"52000000-0000-0000-0000-{n:012d}" for n in range(1001)]


@pytest.mark.parametrize("count", [0, 1, 99, 100, 101, 399, 400, 401, 1001])
def test_every_call_of_every_form_is_one_the_reference_allows(count):
    """A wildcard alone; multi-entity specs alone, 400 uuids at most; plain specs 100 a call at
    most; one entity type a call; every uuid asked once; times always set."""
    uuids, labels = UUIDS[:count], ["iopsRead"]
    wildcard = perf.calls(vm.VM, perf.WILDCARD, uuids, labels, T0, T1)
    assert [[s.entityRefId for s in call] for call in wildcard] == [["virtual-machine:*"]]
    multi = perf.calls(vm.VM, perf.MULTI, uuids, labels, T0, T1)
    assert [len(call) for call in multi] == [1] * -(-count // 400)
    plain = perf.calls(vm.VM, perf.PLAIN, uuids, labels, T0, T1)
    assert [len(call) for call in plain] == [min(100, count - i) for i in range(0, count, 100)]
    for calls, asked in (
        (multi, [u for call in multi for u in call[0].entityRefId.split(":", 1)[1].split(",")]),
        (plain, [s.entityRefId.split(":", 1)[1] for call in plain for s in call]),
    ):
        assert asked == uuids
        for call in calls:
            assert perf.refusal(call) is None
            assert {s.entityRefId.split(":")[0] for s in call} == {vm.VM}
            assert all(s.startTime.timestamp() == T0 and s.endTime.timestamp() == T1 for s in call)
    assert perf.refusal(wildcard[0]) is None


def test_the_rules_refuse_what_the_reference_refuses():
    def spec(ref, start=T0, end=T1):
        return perf.calls(vm.VM, perf.PLAIN, [ref], [], start, end)[0][0] if ref else None

    ok = [spec(u) for u in UUIDS[:2]]
    assert perf.refusal(ok) is None
    assert "with 1 other" in perf.refusal([spec("*"), ok[0]])
    assert "multi-entity spec with 1 other" in perf.refusal([spec(",".join(UUIDS[:2])), ok[0]])
    assert "with 1 other" in perf.refusal([spec("*"), spec("*")])
    assert "401 uuids" in perf.refusal([spec(",".join(UUIDS[:401]))])
    assert "101 specs" in perf.refusal([spec(u) for u in UUIDS[:101]])
    assert perf.refusal([spec(u) for u in UUIDS[:100]]) is None
    no_start = spec(UUIDS[0])
    no_start.startTime = None
    assert "startTime and endTime" in perf.refusal([no_start])
    no_end = spec(UUIDS[0])
    no_end.endTime = None
    assert "startTime and endTime" in perf.refusal([no_end])
    assert perf.refusal([]) == "no query spec"


def test_a_refused_wildcard_is_asked_by_uuid_multi_entity_where_the_server_takes_it():
    assert perf.next_form(perf.WILDCARD, multi_entity=True) == perf.MULTI
    assert perf.next_form(perf.WILDCARD, multi_entity=False) == perf.PLAIN
    assert perf.next_form(perf.MULTI, multi_entity=True) == perf.PLAIN
    assert perf.next_form(perf.PLAIN, multi_entity=True) is None
    with pytest.raises(ValueError, match="not a query form"):
        perf.calls(vm.VM, "all-in-one", [], [], T0, T1)


def test_uuids_by_entity_type_come_from_the_discovery():
    from exporter.vsan.discovery import ClusterTopology

    topo = ClusterTopology(
        moid="domain-c1",
        name="vsan-a",
        uuid="52aa",
        hosts={"esx1": "n1", "esx2": "n2", "esx3": ""},
        disks={
            ("esx1", "naa.c1"): m.VsanDisk("esx1", "naa.c1", "naa.c1", "cache", "c1"),
            ("esx1", "naa.d1"): m.VsanDisk("esx1", "naa.d1", "naa.c1", "capacity", "d1"),
            ("esx2", "naa.d2"): m.VsanDisk("esx2", "naa.d2", "naa.c2", "capacity", "d2"),
            ("esx2", "naa.c2"): m.VsanDisk("esx2", "naa.c2", "naa.c2", "cache", "c2"),
            ("esx3", "eui.e1"): m.VsanDisk("esx3", "eui.e1", "", "storage_pool", "e1"),
        },
        vms={"db01": ("vm-b", "esx1"), "web01": ("vm-a", "esx2")},
    )
    assert {kind: topo.uuids(kind) for kind in vm.METRICS} == {
        vm.CLUSTER: ["52aa"],
        vm.HOST: ["n1", "n2"],  # a host without a node uuid is not asked for
        vm.DISK_GROUP: ["c1", "c2"],  # a disk group is named by its cache disk
        vm.CACHE_DISK: ["c1", "c2"],
        vm.CAPACITY_DISK: ["d1", "d2"],
        vm.VM: ["vm-a", "vm-b"],
        vm.ESA_DISK_LAYER: ["e1"],  # an ESA disk by its own uuid (the disk query's)
        vm.ESA_DISK_DEVICE: ["e1"],
        vm.HOST_NETWORK: ["n1", "n2"],
        vm.HOST_BACKEND: ["n1", "n2"],
        vm.HOST_OWNER: ["n1", "n2"],
        vm.CLUSTER_BACKEND: ["52aa"],
        vm.CLUSTER_OWNER: ["52aa"],
        vm.NIC: [],  # "<node>|vmnicN": which vmnics carry vSAN only the wildcard answer tells
        vm.VMKNIC: [],
        vm.TCPIP: [],  # "<node>|<netstack>": likewise
    }
    assert topo.uuids("vscsi") == []


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("healthy", "healthy"),
        ("inaccessible", "inaccessible"),
        ("reducedavailabilitywithnorebuild", "reduced_availability_with_no_rebuild"),
        ("reducedavailabilitywithnorebuilddelaytimer", "reduced_availability_with_no_rebuild_delay_timer"),
        ("reducedavailabilitywithactiverebuild", "reduced_availability_with_active_rebuild"),
        ("reducedavailabilitywithpausedrebuild", "reduced_availability_with_paused_rebuild"),
        ("datamove", "data_move"),
        ("nonavailabilityrelatedreconfig", "non_availability_related_reconfig"),
        ("nonavailabilityrelatedincompliance", "non_availability_related_incompliance"),
        ("remoteAccessible", "remote_accessible"),
        ("someNewState2", "some_new_state2"),
    ],
)
def test_object_health_state_names(raw, name):
    assert health.state_name(raw) == name


def _store_with_cluster() -> Store:
    store = Store()
    sample = m.VsanSample(
        timestamp=T0,
        interval=300.0,
        cluster={m.GAVG_READ: 0.0008},
        hosts={"esx1": {m.GAVG_WRITE: 0.065, m.VSAN_CLIENT_CACHE_HIT: 0.85, m.VSAN_CONGESTION: 0.2}},
        disk_groups={("esx1", "naa.cache"): {m.VSAN_WRITE_BUFFER_FREE: 0.15, m.vsan_layer_congestion("ssd"): 0.5}},
        disks={("esx1", "naa.cap"): {m.DAVG: 0.055}},
        vms={"db01": {m.GAVG_WRITE: 0.07}},
        host_networks={"esx1": {m.VSAN_RX_LOSS: 0.012}},
        tcpip={("esx1", "defaultTcpipStack"): {m.VSAN_TCP_RETRANSMITS: 0.002}},
        host_backends={
            "esx1": {
                m.VSAN_OUTSTANDING_IO: 6.0,
                m.VSAN_OUTSTANDING_RESYNC_READS: 2.0,
                m.vsan_queue_depth("resync", "write"): 5.0,
                m.vsan_queue_depth("vmdisk", "read"): 7.0,
            }
        },
        cluster_owner={m.vsan_resync_jobs("pending"): 12.0, m.vsan_resync_jobs("running"): 8.0},
        host_owners={"esx1": {m.vsan_resync_jobs("running"): 2.0, m.vsan_resync_jobs("blocked"): 1.0}},
    )
    store.set_vsan(
        m.VsanCluster(
            name="vsan-a",
            uuid="52aa",
            hosts={"esx1": "n1"},
            disks={
                ("esx1", "naa.cache"): m.VsanDisk("esx1", "naa.cache", "naa.cache", "cache", "cache-u"),
                ("esx1", "naa.cap"): m.VsanDisk("esx1", "naa.cap", "naa.cache", "capacity", "cap-u"),
            },
            vms={"db01": ("vm-u", "esx1")},
            sample=sample,
            health="red",
            objects={"healthy": 10, "inaccessible": 2},
            capacity_bytes=1e12,
            free_bytes=1.5e11,
            resync_bytes=0.0,
            resync_objects=0.0,
        ),
        origin="vc",
    )
    store.set_health(
        m.SourceHealth(
            kind="vsan",
            name="vsan-a",
            origin="vc",
            up=1,
            durations={"collection": 0.2},
            samples={"vsan-a": 1},
            errors={"perf:virtual-machine": 2, "space": 1},  # one performance call per entity type
        )
    )
    return store


def test_collector_families():
    text = render(vsan_collector.collect(_store_with_cluster())).decode()
    expected = [
        'esxi_vsan_cluster_info{cluster="vsan-a",uuid="52aa",architecture="osa"} 1.0',
        'esxi_vsan_host_info{cluster="vsan-a",host="esx1",node_uuid="n1"} 1.0',
        'esxi_vsan_disk_info{cluster="vsan-a",host="esx1",device="naa.cap",disk_group="naa.cache",tier="capacity",vsan_uuid="cap-u"} 1.0',
        'esxi_vsan_vm_info{cluster="vsan-a",vm="db01",host="esx1",instance_uuid="vm-u"} 1.0',
        f'esxi_vsan_sample_timestamp_seconds{{cluster="vsan-a"}} {T0!r}',
        'esxi_vsan_cluster_read_latency_mean_seconds{cluster="vsan-a"} 0.0008',
        'esxi_vsan_host_write_latency_mean_seconds{cluster="vsan-a",host="esx1"} 0.065',
        'esxi_vsan_host_client_cache_hit_ratio{cluster="vsan-a",host="esx1"} 0.85',
        'esxi_vsan_host_congestion_per_second{cluster="vsan-a",host="esx1"} 0.2',
        'esxi_vsan_disk_group_write_buffer_free_ratio{cluster="vsan-a",host="esx1",disk_group="naa.cache"} 0.15',
        'esxi_vsan_disk_group_congestion_per_second{cluster="vsan-a",host="esx1",disk_group="naa.cache",layer="ssd"} 0.5',
        'esxi_vsan_disk_device_latency_mean_seconds{cluster="vsan-a",host="esx1",disk_group="naa.cache",device="naa.cap"} 0.055',
        'esxi_vsan_vm_write_latency_mean_seconds{cluster="vsan-a",vm="db01"} 0.07',
        'esxi_vsan_host_network_received_packet_loss_ratio{cluster="vsan-a",host="esx1"} 0.012',
        'esxi_vsan_host_network_tcp_retransmit_ratio{cluster="vsan-a",host="esx1",netstack="defaultTcpipStack"} 0.002',
        'esxi_vsan_host_backend_outstanding_io{cluster="vsan-a",host="esx1"} 6.0',
        'esxi_vsan_host_backend_outstanding_resync_reads{cluster="vsan-a",host="esx1"} 2.0',
        'esxi_vsan_host_backend_queue_depth{cluster="vsan-a",host="esx1",class="resync",op="write"} 5.0',
        'esxi_vsan_host_backend_queue_depth{cluster="vsan-a",host="esx1",class="vmdisk",op="read"} 7.0',
        'esxi_vsan_resync_jobs{cluster="vsan-a",state="pending"} 12.0',
        'esxi_vsan_resync_jobs{cluster="vsan-a",state="running"} 8.0',
        'esxi_vsan_host_resync_jobs{cluster="vsan-a",host="esx1",state="running"} 2.0',
        'esxi_vsan_host_resync_jobs{cluster="vsan-a",host="esx1",state="blocked"} 1.0',
        'esxi_vsan_cluster_health{cluster="vsan-a",state="red"} 1.0',
        'esxi_vsan_cluster_health{cluster="vsan-a",state="green"} 0.0',
        'esxi_vsan_objects{cluster="vsan-a",state="inaccessible"} 2.0',
        'esxi_vsan_objects{cluster="vsan-a",state="reduced_availability_with_no_rebuild"} 0.0',
        'esxi_vsan_capacity_bytes{cluster="vsan-a"} 1000000000000.0',
        'esxi_vsan_free_bytes{cluster="vsan-a"} 150000000000.0',
        'esxi_vsan_resync_bytes{cluster="vsan-a"} 0.0',
        'esxi_vsan_up{cluster="vsan-a"} 1.0',
        'esxi_vsan_samples_total{cluster="vsan-a"} 1.0',
        'esxi_vsan_errors_total{cluster="vsan-a",call="perf",entity_type="virtual-machine"} 2.0',
        'esxi_vsan_errors_total{cluster="vsan-a",call="space"} 1.0',
    ]
    lines = set(text.splitlines())
    assert [line for line in expected if line not in lines] == []
    # A state or class the service did not send is absent, not 0.
    assert [line for line in lines if 'state="suspended"' in line or 'class="namespace"' in line] == []
    # UUIDs only in the info families.
    assert [line for line in lines if ("n1" in line or "cap-u" in line or "vm-u" in line) and "_info{" not in line] == []


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_collector_output_is_promtool_clean(tmp_path):
    text = render(vsan_collector.collect(_store_with_cluster()))
    result = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True)
    assert result.returncode == 0, result.stderr.decode() + result.stdout.decode()


def test_a_view_shows_its_own_clusters_and_dropping_removes_series():
    store = _store_with_cluster()
    assert set(store.view("vc").vsan) == {"vsan-a"}
    assert store.view("other").vsan == {}
    store.drop_vsan({"vsan-a"}, origin="vc")
    assert render(vsan_collector.collect(store)) == b""


def test_the_vsan_api_version_is_the_newest_both_sides_know():
    """vsanServiceVersions.xml lists the server's vSAN API versions; pyVmomi's ids are no order of
    their own ("6.8.7", "vSAN 7.0U1", "8.0.0.4"), their lineage is."""
    from exporter.vsan.service import choose_version, known_versions

    def offering(*versions):
        prior = "".join(f"<version>{v}</version>" for v in versions[1:])
        return (
            f"<namespaces version='1.0'><namespace><name>urn:vsan</name><version>{versions[0]}</version>"
            f"<priorVersions>{prior}</priorVersions></namespace></namespaces>"
        ).encode()

    assert choose_version(offering("6.5", "6.7", "6.6")) == "vsan.version.version7"  # 6.7
    assert choose_version(offering("8.0.0.4", "8.0.0.3", "vSAN 7.0U1")) == "vsan.version.version23"
    assert choose_version(offering("99.0", "8.0.0.3")) == "vsan.version.version22"  # newer than pyVmomi: its newest shared
    newest = known_versions()[0]
    assert choose_version(None) == newest  # no file (vsanapiutils does the same)
    assert choose_version(b"<!DOCTYPE a [<!ENTITY b 'c'>]><a>&b;</a>") == newest  # never parsed
    assert choose_version(b"not xml") == newest


def test_multi_entity_specs_only_where_the_server_says_its_vsan_is_8_0u2_or_later():
    from exporter.vsan.service import takes_multi_entity

    def offering(*versions):
        prior = "".join(f"<version>{v}</version>" for v in versions[1:])
        return f"<namespaces><namespace><version>{versions[0]}</version><priorVersions>{prior}</priorVersions></namespace></namespaces>".encode()

    assert takes_multi_entity(offering("8.0.0.4", "8.0.0.3", "8.0.0.2"))
    assert takes_multi_entity(offering("8.0.0.3", "8.0.0.2"))
    assert takes_multi_entity(offering("9.1.1.0", "9.0.0.0", "8.0.0.3"))
    assert not takes_multi_entity(offering("8.0.0.2", "8.0.0.1", "7.4"))  # vSAN 8.0U1
    assert not takes_multi_entity(offering("vSAN 7.0U3", "6.7"))
    assert not takes_multi_entity(offering("99.0"))  # nothing pyVmomi knows: not assumed
    assert not takes_multi_entity(None)  # no file: not assumed
    assert not takes_multi_entity(b"not xml")


def test_esa_disks_nics_vmknics_and_backend_land_under_their_names():
    """ESA disks by their vSAN uuid (the disk query's join), NICs by "<node>|vmnicN" and vmknics by
    "<node>|<netstack>|vmkN"; an id that names no host or is not of its type's shape is counted."""
    names = perfcsv.Names(hosts={"n1": "esx1"}, disks={"e1": ("esx1", "eui.1")})
    rows, dropped = [], {}
    for ref, series in (
        ("vsan-esa-disk-layer:e1", {"avgLatWritePerf": "52000"}),
        ("vsan-esa-disk-scsifw:e1", {"latencyDevKAvg": "20"}),
        ("vsan-esa-disk-scsifw:e2", {"latencyDevKAvg": "20"}),  # a disk the join did not name
        ("vsan-pnic-net:n1|vmnic2", {"rxPacketsLossRate": "12"}),
        ("vsan-pnic-net:n1", {"rxPacketsLossRate": "12"}),  # no vmnic: not a pnic's id
        ("vsan-vnic-net:n1|defaultTcpipStack|vmk1", {"rxThroughput": "100"}),
        ("vsan-host-net:n1", {"rxThroughput": "200", "tcpTxRexmitRate": "2"}),  # TCP here is not ours: ignored
        ("vsan-host-net:n9", {"rxThroughput": "200"}),  # a host the configuration does not name
        ("vsan-tcpip-stats:n1|defaultTcpipStack", {"tcpTxRexmitRate": "2"}),
        ("vsan-tcpip-stats:n1|vmotion", {"tcpRxErrRate": "1"}),  # a second netstack: its own series
        ("vsan-tcpip-stats:n1", {"tcpTxRexmitRate": "2"}),  # no netstack: not a tcpip-stats id
        ("host-domcompmgr:n1", {"iopsRecWrite": "40", "resyncQueueDepthWrite": "5"}),
        ("host-domowner:n1", {"numBlockedResyncJobs": "1"}),
        ("host-domowner:n9", {"numBlockedResyncJobs": "1"}),  # a host the configuration does not name
        ("cluster-domcompmgr:52aa", {"iopsResyncRead": "35"}),
        ("cluster-domowner:52aa", {"avgResyncParallelism": "2", "numRunningResyncJobs": "8"}),
    ):
        row, _ = _row(ref, [T1], **series)
        rows.append(row)
    sample = perfcsv.sample_at(rows, T1, names, dropped)
    assert sample.disks[("esx1", "eui.1")] == {m.vsan_tier_field("performance", m.GAVG_WRITE): 0.052, m.KAVG: 0.00002}
    assert sample.nics == {("esx1", "vmnic2"): {m.VSAN_RX_LOSS: 0.012}}
    assert sample.vmknics == {("esx1", "vmk1"): {m.VSAN_RX_BYTES: 100.0}}
    assert sample.host_networks == {"esx1": {m.VSAN_RX_BYTES: 200.0}}
    assert sample.tcpip == {
        ("esx1", "defaultTcpipStack"): {m.VSAN_TCP_RETRANSMITS: 0.002},
        ("esx1", "vmotion"): {m.VSAN_TCP_RX_ERRORS: 0.001},
    }
    assert sample.host_backends == {"esx1": {m.VSAN_RECOVERY_WRITES: 40.0, m.vsan_queue_depth("resync", "write"): 5.0}}
    assert sample.host_owners == {"esx1": {m.vsan_resync_jobs("blocked"): 1.0}}
    assert sample.cluster_backend == {m.VSAN_RESYNC_READS: 35.0}
    assert sample.cluster_owner == {m.VSAN_RESYNC_PARALLELISM: 2.0, m.vsan_resync_jobs("running"): 8.0}
    assert dropped == {"unknown_entity": 5}
    # a log line names what the discovery calls the entity
    assert perfcsv.describe("vsan-tcpip-stats:n1|vmotion", names) == "host esx1 vmotion (vsan-tcpip-stats)"
    assert perfcsv.describe("host-domowner:n1", names) == "host esx1 (host-domowner)"
    assert perfcsv.describe("host-domowner:n9", names) == "host-domowner:n9 (not named by the discovery)"
