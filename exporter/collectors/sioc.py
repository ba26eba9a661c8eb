"""Storage I/O Control: what SIOC measures and allows per host and datastore (vSphere's SIOC
counters), each datastore's SIOC configuration (Datastore.iormConfiguration), and SIOC's cut seen
at the queue of each LUN under a VMFS datastore."""

from exporter.collectors.datastore import rows as datastore_rows
from exporter.collectors.io import gauge_families
from exporter.collectors.textformat import gauge, label_string
from exporter.store import model as m

GAUGES = (
    (
        m.SIOC_NORMALIZED_LATENCY,
        "sioc_normalized_latency_seconds",
        "Size-normalized device latency of the datastore, the figure SIOC compares with its congestion threshold (vSphere sizeNormalizedDatastoreLatency).",
    ),
    (
        m.SIOC_QUEUE_DEPTH,
        "sioc_queue_depth",
        "Device queue depth SIOC allows this host on the datastore (vSphere datastoreMaxQueueDepth).",
    ),
    (
        m.SIOC_ACTIVE,
        "sioc_active_ratio",
        "Share of the interval SIOC was throttling the datastore (vSphere siocActiveTimePercentage).",
    ),
    (
        m.VM_OBSERVED_LATENCY,
        "vm_observed_latency_seconds",
        "Latency this host's VMs observe on the datastore, as SIOC measures it (vSphere datastoreVMObservedLatency).",
    ),
    (m.SIOC_IOPS, "sioc_iops", "I/O operations per second on the datastore as SIOC aggregates them (vSphere datastoreIops)."),
    (m.SIOC_READ_IOPS, "sioc_read_iops", "Reads per second on the datastore as SIOC counts them (vSphere datastoreReadIops)."),
    (
        m.SIOC_WRITE_IOPS,
        "sioc_write_iops",
        "Writes per second on the datastore as SIOC counts them (vSphere datastoreWriteIops).",
    ),
    (
        m.SIOC_OUTSTANDING_READS,
        "sioc_outstanding_reads",
        "Reads outstanding on the datastore from this host (vSphere datastoreReadOIO).",
    ),
    (
        m.SIOC_OUTSTANDING_WRITES,
        "sioc_outstanding_writes",
        "Writes outstanding on the datastore from this host (vSphere datastoreWriteOIO).",
    ),
)


def _config_families(store):
    names = ("host", "datastore")
    reported = gauge(
        "esxi_datastore_sioc_config_reported",
        "1 if the server reported the datastore's iormConfiguration, 0 if it sent none (a fault, an empty answer, or a "
        "server past vSphere 8.0 U3 where it is deprecated): the SIOC configuration series are then absent.",
    )
    enabled = gauge(
        "esxi_datastore_sioc_enabled", "1 if Storage I/O Control is on for the datastore (iormConfiguration.enabled)."
    )
    stats = gauge(
        "esxi_datastore_sioc_stats_enabled",
        "1 if SIOC statistics are collected on the datastore (iormConfiguration.statsCollectionEnabled); the SIOC counters carry values only then.",
    )
    mode = gauge(
        "esxi_datastore_sioc_threshold_mode",
        "How the datastore's congestion threshold is set: 1 for its mode (automatic: the latency at the percent of peak "
        "throughput; manual: the threshold set), 0 for the other.",
    )
    threshold = gauge(
        "esxi_datastore_sioc_threshold_seconds",
        "Congestion threshold: the size-normalized latency above which SIOC throttles the datastore (iormConfiguration.congestionThreshold).",
    )
    peak = gauge(
        "esxi_datastore_sioc_peak_throughput_ratio",
        "In automatic mode, the share of the datastore's peak throughput whose latency becomes the threshold "
        "(iormConfiguration.percentOfPeakThroughput / 100).",
    )
    for host, inv in sorted(store.inventories.items()):
        for datastore, ds in sorted(inv.datastores.items()):
            config = ds.sioc
            if config is None:
                continue  # never asked (esxtop, a source without it)
            labels = label_string(names, (host, datastore))
            reported.add(labels, 1.0 if config.reported else 0.0)
            if config.enabled is not None:
                enabled.add(labels, float(config.enabled))
            if config.stats_enabled is not None:
                stats.add(labels, float(config.stats_enabled))
            if config.mode:
                for each in sorted({*m.SIOC_MODES, config.mode}):
                    mode.add(label_string((*names, "mode"), (host, datastore, each)), 1.0 if each == config.mode else 0.0)
            if config.threshold_seconds is not None:
                threshold.add(labels, config.threshold_seconds)
            if config.peak_throughput_ratio is not None:
                peak.add(labels, config.peak_throughput_ratio)
    return [reported, enabled, stats, mode, threshold, peak]


def _lun_family(store):
    """Each LUN under a VMFS datastore, with the queue depth SIOC allows its host on that datastore."""
    family = gauge(
        "esxi_lun_sioc_queue_depth",
        "Device queue depth SIOC allows this host on the LUN's VMFS datastore (datastoreMaxQueueDepth), beside the "
        "configured DQLEN (esxi_lun_queue_depth): the effective depth is the lower of the two.",
    )
    for host, state in sorted(store.hosts.items()):
        inv = store.inventories.get(host)
        if inv is None:
            continue
        datastores = state.objects["datastores"]
        for device, lun in sorted(inv.luns.items()):
            obj = datastores.get(lun.datastore) if lun.datastore else None
            depth = obj.gauges.get(m.SIOC_QUEUE_DEPTH) if obj is not None else None
            if depth is not None:
                family.add(label_string(("host", "device"), (host, device)), depth)
    return family


def collect(store):
    yield from gauge_families("esxi_datastore", datastore_rows(store), GAUGES)
    yield from _config_families(store)
    yield _lun_family(store)
