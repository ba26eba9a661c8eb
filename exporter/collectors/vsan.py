"""vSAN clusters (exporter.vsan): the performance service's newest sample per cluster, host (DOM
client), disk group, cache and capacity disk and VM; the cluster's health, object states, space
and resync backlog; and the collector's own health per cluster.

The performance values are the service's 5-minute means, so they are gauges of the last sample
(`esxi_vsan_sample_timestamp_seconds` is that sample's own time: a rule can tell stale data). UUIDs
appear only in the info families; disks carry the same `device` label as the LUN families."""

from __future__ import annotations

from exporter.collectors.textformat import counter, gauge, label_string
from exporter.store import model as m

# model field -> (name stem, help). Shared by the cluster, host, disk group and VM families.
IO = (
    (m.READS, "reads_per_second", "Reads per second"),
    (m.WRITES, "writes_per_second", "Writes per second"),
    (m.READ_BYTES, "read_bytes_per_second", "Bytes read per second"),
    (m.WRITTEN_BYTES, "written_bytes_per_second", "Bytes written per second"),
    (m.GAVG_READ, "read_latency_mean_seconds", "Mean latency per read"),
    (m.GAVG_WRITE, "write_latency_mean_seconds", "Mean latency per write"),
)
DOM_CLIENT = (
    *IO,
    (m.VSAN_OUTSTANDING_IO, "outstanding_io", "Outstanding I/O"),
    (
        m.VSAN_CONGESTION,
        "congestion_per_second",
        "Congestion vSAN raised per second (its count over the sample's interval / the interval)",
    ),
)
HOST = (*DOM_CLIENT, (m.VSAN_CLIENT_CACHE_HIT, "client_cache_hit_ratio", "Share of reads served by the host's client cache"))
DISK_GROUP = (
    *IO,
    (m.VSAN_WRITE_BUFFER_FREE, "write_buffer_free_ratio", "Share of the write buffer (cache tier) that is free"),
    (m.VSAN_READ_CACHE_HIT, "read_cache_hit_ratio", "Share of reads the read cache served"),
    (m.OUTSTANDING_WRITES, "outstanding_writes", "Writes outstanding"),
    (m.VSAN_SCHEDULER_LATENCY, "scheduler_latency_mean_seconds", "Mean latency of I/O delayed in vSAN's scheduler queues"),
    (m.VSAN_SCHEDULER_OPS, "scheduler_operations_per_second", "I/O per second delayed in vSAN's scheduler queues"),
    (m.VSAN_SCHEDULER_DELAYED, "scheduler_delayed_ratio", "Share of I/O that went through vSAN's scheduler queues"),
)
DISK = (
    (m.READS, "reads_per_second", "Physical-layer reads per second"),
    (m.WRITES, "writes_per_second", "Physical-layer writes per second"),
    (m.READ_BYTES, "read_bytes_per_second", "Physical-layer bytes read per second"),
    (m.WRITTEN_BYTES, "written_bytes_per_second", "Physical-layer bytes written per second"),
    (m.VSAN_DEVICE_READ_LATENCY, "device_read_latency_mean_seconds", "Mean physical-layer latency per read"),
    (m.VSAN_DEVICE_WRITE_LATENCY, "device_write_latency_mean_seconds", "Mean physical-layer latency per write"),
    (m.DAVG, "device_latency_mean_seconds", "Mean device latency, HBA to disk and back (DAVG)"),
    (m.GAVG, "guest_latency_mean_seconds", "Mean latency as the layers above see it (GAVG)"),
)
HEALTH_STATES = ("green", "yellow", "red")
# Object states always exported (0 when vSAN lists none), so alerts see 0, not absence.
OBJECT_STATES = (
    "healthy",
    "inaccessible",
    "reduced_availability_with_no_rebuild",
    "reduced_availability_with_no_rebuild_delay_timer",
    "reduced_availability_with_active_rebuild",
    "data_move",
)
WHAT = {
    "cluster": "all vSAN clients of the cluster (DOM client)",
    "host": "the vSAN clients of one host (DOM client): I/O as its VMs see it",
    "disk_group": "one disk group's cache tier (frontend)",
    "disk": "one cache or capacity disk",
    "vm": "one VM's vSAN objects",
}


def _fill(prefix: str, what: str, spec, rows):
    """One gauge per (field, stem) of spec over rows of (labels, stats)."""
    for field, stem, help_text in spec:
        family = gauge(f"{prefix}_{stem}", f"{help_text} ({WHAT[what]}), the vSAN performance service's mean over its sample.")
        for labels, stats in rows:
            value = stats.get(field)
            if value is not None:
                family.add(labels, value)
        yield family


def collect(store):
    clusters = sorted(store.vsan.items())
    yield from _configuration(clusters)
    yield from _performance(clusters)
    yield from _health(clusters)
    yield from _collection(store)


def _configuration(clusters):
    info = gauge(
        "esxi_vsan_cluster_info", "A vSAN cluster: its uuid and architecture (osa: disk groups, esa: storage pool). Always 1."
    )
    hosts = gauge("esxi_vsan_host_info", "A host of a vSAN cluster and its node uuid. Always 1.")
    disks = gauge(
        "esxi_vsan_disk_info",
        "A disk vSAN claimed: its disk group (the group's cache device; empty on ESA), tier and vSAN uuid. Always 1.",
    )
    vms = gauge("esxi_vsan_vm_info", "A VM whose objects live on the vSAN cluster: its host and instance uuid. Always 1.")
    for name, cluster in clusters:
        info.add(label_string(("cluster", "uuid", "architecture"), (name, cluster.uuid, "esa" if cluster.esa else "osa")), 1.0)
        for host, node_uuid in sorted(cluster.hosts.items()):
            hosts.add(label_string(("cluster", "host", "node_uuid"), (name, host, node_uuid)), 1.0)
        for disk in sorted(cluster.disks.values(), key=lambda d: (d.host, d.device)):
            disks.add(
                label_string(
                    ("cluster", "host", "device", "disk_group", "tier", "vsan_uuid"),
                    (name, disk.host, disk.device, disk.disk_group, disk.tier, disk.uuid),
                ),
                1.0,
            )
        for vm, (instance_uuid, host) in sorted(cluster.vms.items()):
            vms.add(label_string(("cluster", "vm", "host", "instance_uuid"), (name, vm, host, instance_uuid)), 1.0)
    return [info, hosts, disks, vms]


def _performance(clusters):
    stamp = gauge(
        "esxi_vsan_sample_timestamp_seconds", "Time of the newest complete vSAN performance sample (the service's own)."
    )
    interval = gauge("esxi_vsan_sample_interval_seconds", "Seconds the vSAN performance service's samples average over.")
    cluster_rows, host_rows, group_rows, disk_rows, vm_rows = [], [], [], [], []
    congestion = gauge(
        "esxi_vsan_disk_group_congestion_per_second",
        "Congestion per second a disk group layer raised (ssd, log, mem, slab, comp, iops): its count over the sample's interval / the interval.",
    )
    for name, cluster in clusters:
        sample = cluster.sample
        if sample is None:
            continue
        stamp.add(label_string(("cluster",), (name,)), sample.timestamp)
        interval.add(label_string(("cluster",), (name,)), sample.interval)
        cluster_rows.append((label_string(("cluster",), (name,)), sample.cluster))
        host_rows += [(label_string(("cluster", "host"), (name, host)), stats) for host, stats in sorted(sample.hosts.items())]
        for (host, group), stats in sorted(sample.disk_groups.items()):
            labels = ("cluster", "host", "disk_group")
            group_rows.append((label_string(labels, (name, host, group)), stats))
            for layer in m.VSAN_CONGESTION_LAYERS:
                value = stats.get(m.vsan_layer_congestion(layer))
                if value is not None:
                    congestion.add(label_string((*labels, "layer"), (name, host, group, layer)), value)
        for (host, device), stats in sorted(sample.disks.items()):
            disk = cluster.disks.get((host, device))
            group = disk.disk_group if disk is not None else ""
            disk_rows.append((label_string(("cluster", "host", "disk_group", "device"), (name, host, group, device)), stats))
        vm_rows += [(label_string(("cluster", "vm"), (name, vm)), stats) for vm, stats in sorted(sample.vms.items())]
    yield stamp
    yield interval
    yield from _fill("esxi_vsan_cluster", "cluster", DOM_CLIENT, cluster_rows)
    yield from _fill("esxi_vsan_host", "host", HOST, host_rows)
    yield from _fill("esxi_vsan_disk_group", "disk_group", DISK_GROUP, group_rows)
    yield congestion
    yield from _fill("esxi_vsan_disk", "disk", DISK, disk_rows)
    yield from _fill("esxi_vsan_vm", "vm", IO, vm_rows)


def _health(clusters):
    health = gauge(
        "esxi_vsan_cluster_health",
        "vSAN's overall health of the cluster: 1 for its state (green, yellow, red, or what vSAN says).",
    )
    health_time = gauge(
        "esxi_vsan_health_timestamp_seconds", "When vSAN's health service computed the summary read (it is read from its cache)."
    )
    objects = gauge(
        "esxi_vsan_objects", "vSAN objects per health state (healthy, inaccessible, reduced availability, data move, ...)."
    )
    capacity = gauge("esxi_vsan_capacity_bytes", "Raw capacity of the vSAN datastore.")
    free = gauge("esxi_vsan_free_bytes", "Free raw capacity of the vSAN datastore.")
    resync_bytes = gauge("esxi_vsan_resync_bytes", "Bytes left to resynchronise (rebuilds, policy changes, rebalancing).")
    resync_objects = gauge("esxi_vsan_resync_objects", "Objects resynchronising.")
    resync_eta = gauge("esxi_vsan_resync_eta_seconds", "vSAN's estimate of the time until the resynchronisation ends.")
    for name, cluster in clusters:
        labels = label_string(("cluster",), (name,))
        if cluster.health:
            states = HEALTH_STATES if cluster.health in HEALTH_STATES else (*HEALTH_STATES, cluster.health)
            for state in states:
                health.add(label_string(("cluster", "state"), (name, state)), float(state == cluster.health))
        if cluster.health_timestamp is not None:
            health_time.add(labels, cluster.health_timestamp)
        if cluster.objects or cluster.health:
            counts = {state: 0 for state in OBJECT_STATES if state not in cluster.objects_refused} | cluster.objects
            for state, count in sorted(counts.items()):
                objects.add(label_string(("cluster", "state"), (name, state)), float(count))
        for family, value in (
            (capacity, cluster.capacity_bytes),
            (free, cluster.free_bytes),
            (resync_bytes, cluster.resync_bytes),
            (resync_objects, cluster.resync_objects),
            (resync_eta, cluster.resync_eta_seconds),
        ):
            if value is not None:
                family.add(labels, value)
    return [health, health_time, objects, capacity, free, resync_bytes, resync_objects, resync_eta]


def _collection(store):
    up = gauge("esxi_vsan_up", "1 if every vSAN call of the cluster's last collection answered.")
    duration = gauge("esxi_vsan_collection_duration_seconds", "Wall time of the cluster's last vSAN collection.")
    errors = counter(
        "esxi_vsan_errors_total",
        "vSAN calls that failed, by call (perf, health, space, resync) and, for perf, the entity type it asked for.",
    )
    dropped = counter(
        "esxi_vsan_dropped_values_total", "vSAN values (performance, health, space, resync) refused or not placed, by reason."
    )
    samples = counter("esxi_vsan_samples_total", "vSAN performance samples taken (each sample time once).")
    for (kind, name), record in sorted(store.health.items()):
        if kind != "vsan":
            continue
        labels = label_string(("cluster",), (name,))
        up.add(labels, float(record.up))
        if "collection" in record.durations:
            duration.add(labels, record.durations["collection"])
        for call, count in sorted(record.errors.items()):
            call, _, kind = call.partition(":")  # "perf:host-domclient": one performance call per entity type
            keys, values = ("cluster", "call"), (name, call)
            if kind:
                keys, values = (*keys, "entity_type"), (*values, kind)
            errors.add(label_string(keys, values), float(count))
        for reason, count in sorted(record.dropped.items()):
            dropped.add(label_string(("cluster", "reason"), (name, reason)), float(count))
        samples.add(labels, float(record.samples.get(name, 0)))
    return [up, duration, errors, dropped, samples]
