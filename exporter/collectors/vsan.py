"""vSAN clusters (exporter.vsan): the performance service's newest sample per cluster, host (DOM
client), disk group, cache and capacity disk and VM, the network, the backend and the owners'
resync jobs; the cluster's health, object states, space and resync backlog; and the collector's
own health per cluster.

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
# vSAN ESA disks: the device layer beside DISK, the vSAN layer per tier (label tier).
ESA_DEVICE = (
    (m.VSAN_UNMAPS, "unmaps_per_second", "Physical-layer unmaps per second"),
    (m.VSAN_UNMAP_BYTES, "unmap_bytes_per_second", "Physical-layer bytes unmapped per second"),
    (m.VSAN_UNMAP_LATENCY, "device_unmap_latency_mean_seconds", "Mean physical-layer latency per unmap"),
    (m.KAVG, "kernel_latency_mean_seconds", "Mean time in the ESXi kernel (KAVG)"),
    (m.VSAN_OUTSTANDING_COMMANDS, "outstanding_commands", "Commands outstanding at the device"),
)
ESA_TIER = (
    (m.READS, "reads_per_second", "Reads per second"),
    (m.WRITES, "writes_per_second", "Writes per second"),
    (m.VSAN_UNMAPS, "unmaps_per_second", "Unmaps per second"),
    (m.READ_BYTES, "read_bytes_per_second", "Bytes read per second"),
    (m.WRITTEN_BYTES, "written_bytes_per_second", "Bytes written per second"),
    (m.VSAN_UNMAP_BYTES, "unmap_bytes_per_second", "Bytes unmapped per second"),
    (m.GAVG_READ, "read_latency_mean_seconds", "Mean latency per read"),
    (m.GAVG_WRITE, "write_latency_mean_seconds", "Mean latency per write"),
    (m.VSAN_UNMAP_LATENCY, "unmap_latency_mean_seconds", "Mean latency per unmap"),
)
NETWORK = (
    (m.VSAN_RX_BYTES, "received_bytes_per_second", "Bytes received per second"),
    (m.VSAN_TX_BYTES, "transmitted_bytes_per_second", "Bytes transmitted per second"),
    (m.VSAN_RX_PACKETS, "received_packets_per_second", "Packets received per second"),
    (m.VSAN_TX_PACKETS, "transmitted_packets_per_second", "Packets transmitted per second"),
    (m.VSAN_RX_LOSS, "received_packet_loss_ratio", "Share of received packets lost"),
    (m.VSAN_TX_LOSS, "transmitted_packet_loss_ratio", "Share of transmitted packets lost"),
    (m.VSAN_PORT_RX_DROPS, "port_received_drop_ratio", "Share of received packets the vSwitch port dropped"),
    (m.VSAN_PORT_TX_DROPS, "port_transmitted_drop_ratio", "Share of transmitted packets the vSwitch port dropped"),
)
# vsan-tcpip-stats, under the host network's names with a netstack label.
TCPIP = (
    (m.VSAN_TCP_RETRANSMITS, "tcp_retransmit_ratio", "Share of TCP segments retransmitted, per netstack"),
    (m.VSAN_TCP_RX_ERRORS, "tcp_receive_error_ratio", "Share of TCP segments received in error, per netstack"),
)
NIC = (
    *NETWORK,
    (m.VSAN_RX_CRC_ERRORS, "received_crc_error_ratio", "Share of received frames with a bad CRC"),
    (m.VSAN_RX_ERRORS, "received_error_ratio", "Share of received frames in error"),
    (m.VSAN_TX_ERRORS, "transmitted_error_ratio", "Share of transmitted frames in error"),
    (m.VSAN_PAUSE, "pause_frame_ratio", "802.3x pause frames per frame"),
)
NIC_COUNTERS = (
    (m.VSAN_RX_CRC_ERRORS_TOTAL, "received_crc_errors_total", "Frames received with a bad CRC"),
    (m.VSAN_RX_ERRORS_TOTAL, "received_errors_total", "Frames received in error"),
    (m.VSAN_TX_ERRORS_TOTAL, "transmitted_errors_total", "Frames transmitted in error"),
    (m.VSAN_PAUSE_TOTAL, "pause_frames_total", "802.3x pause frames"),
    (m.VSAN_PFC_TOTAL, "pfc_frames_total", "Priority flow control frames"),
)
BACKEND = (
    *IO,
    (m.VSAN_RECOVERY_WRITES, "recovery_writes_per_second", "Recovery (resync) writes per second"),
    (m.VSAN_RECOVERY_WRITE_BYTES, "recovery_written_bytes_per_second", "Recovery (resync) bytes written per second"),
    (m.VSAN_RECOVERY_WRITE_LATENCY, "recovery_write_latency_mean_seconds", "Mean latency per recovery (resync) write"),
    (m.VSAN_RESYNC_READS, "resync_reads_per_second", "Resync reads per second"),
    (m.VSAN_RESYNC_READ_BYTES, "resync_read_bytes_per_second", "Resync bytes read per second"),
    (m.VSAN_RESYNC_READ_LATENCY, "resync_read_latency_mean_seconds", "Mean latency per resync read"),
    (m.VSAN_OUTSTANDING_IO, "outstanding_io", "Outstanding I/O"),
    (
        m.VSAN_CONGESTION,
        "congestion_per_second",
        "Congestion raised per second (its count over the sample's interval / the interval)",
    ),
)
HOST_BACKEND = (
    *BACKEND,
    (m.VSAN_OUTSTANDING_RECOVERY_WRITES, "outstanding_recovery_writes", "Recovery (resync) writes outstanding"),
    (m.VSAN_OUTSTANDING_RESYNC_READS, "outstanding_resync_reads", "Resync reads outstanding"),
)
OWNER = (*BACKEND, (m.VSAN_RESYNC_PARALLELISM, "resync_parallelism", "Resync jobs running at once, on average"))
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
    "tier": "one vSAN ESA disk, the vSAN layer's view of one tier (performance or capacity)",
    "host_network": "one host's vSAN network (vsan-host-net)",
    "tcpip": "one host's TCP/IP stack that vSAN reports on (vsan-tcpip-stats)",
    "nic": "one physical NIC carrying vSAN traffic (vsan-pnic-net)",
    "vmknic": "one vSAN VMkernel NIC (vsan-vnic-net)",
    "host_backend": "one host's vSAN component manager (host-domcompmgr): I/O its disks take, the VMs' and resync's",
    "cluster_backend": "the cluster's vSAN component managers (cluster-domcompmgr)",
    "cluster_owner": "the cluster's vSAN object owners (cluster-domowner)",
}


def _fill(prefix: str, what: str, spec, rows, kind=gauge):
    """One gauge (or counter) per (field, stem) of spec over rows of (labels, stats)."""
    for field, stem, help_text in spec:
        tail = "a counter since the host booted" if kind is counter else "the vSAN performance service's mean over its sample"
        family = kind(f"{prefix}_{stem}", f"{help_text} ({WHAT[what]}), {tail}.")
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
    mounted = gauge(
        "esxi_vsan_disk_mounted",
        "1 if the vSAN ESA storage pool disk is mounted, 0 if not (QueryVsanManagedDisks' isMounted; only disks it reports).",
    )
    faulted = gauge(
        "esxi_vsan_disk_fault_info",
        "A vSAN ESA storage pool disk for which vSAN reports an error: the fault's type. Always 1.",
    )
    vms = gauge("esxi_vsan_vm_info", "A VM whose objects live on the vSAN cluster: its host and instance uuid. Always 1.")
    speeds = gauge(
        "esxi_vsan_nic_link_speed_bytes_per_second",
        "Link speed of a physical NIC that carries vSAN traffic, in bytes per second (its configured link speed).",
    )
    unnamed = gauge(
        "esxi_vsan_unnamed_disks",
        "vSAN disks in use that the hosts' disk query gave no device or vSAN uuid for (their values cannot be placed).",
    )
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
            where = ("cluster", "host", "device"), (name, disk.host, disk.device)
            if disk.mounted is not None:
                mounted.add(label_string(*where), float(disk.mounted))
            if disk.fault:
                faulted.add(label_string((*where[0], "fault"), (*where[1], disk.fault)), 1.0)
        for vm, (instance_uuid, host) in sorted(cluster.vms.items()):
            vms.add(label_string(("cluster", "vm", "host", "instance_uuid"), (name, vm, host, instance_uuid)), 1.0)
        nics = set(cluster.sample.nics) if cluster.sample is not None else set()  # the vmnics vSAN uses
        for (host, vmnic), speed in sorted(cluster.nic_speeds.items()):
            if (host, vmnic) in nics:
                speeds.add(label_string(("cluster", "host", "vmnic"), (name, host, vmnic)), speed)
        unnamed.add(label_string(("cluster",), (name,)), float(cluster.unnamed_disks))
    return [info, hosts, disks, mounted, faulted, vms, speeds, unnamed]


def _performance(clusters):
    stamp = gauge(
        "esxi_vsan_sample_timestamp_seconds", "Time of the newest complete vSAN performance sample (the service's own)."
    )
    interval = gauge("esxi_vsan_sample_interval_seconds", "Seconds the vSAN performance service's samples average over.")
    cluster_rows, host_rows, group_rows, disk_rows, vm_rows = [], [], [], [], []
    tier_rows, host_net_rows, nic_rows, vmknic_rows, host_backend_rows, backend_rows, owner_rows = [], [], [], [], [], [], []
    tcpip_rows = []
    queue_depth = gauge(
        "esxi_vsan_host_backend_queue_depth",
        "I/O queued at one host's vSAN component manager (host-domcompmgr) per class (vmdisk: the VMs' disks, "
        "namespace, metadata, resync) and operation (read, write), the vSAN performance service's mean over its sample.",
    )
    resync_jobs = gauge(
        "esxi_vsan_resync_jobs",
        "Resync jobs of the cluster's vSAN object owners (cluster-domowner) per state (pending, running, suspended), "
        "the vSAN performance service's mean over its sample.",
    )
    host_resync_jobs = gauge(
        "esxi_vsan_host_resync_jobs",
        "Resync jobs of the vSAN object owners on one host (host-domowner) per state (pending, running, suspended, "
        "blocked), the vSAN performance service's mean over its sample.",
    )
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
            for tier in m.VSAN_ESA_TIERS:
                in_tier = {field: stats.get(m.vsan_tier_field(tier, field)) for field, _, _ in ESA_TIER}
                if any(v is not None for v in in_tier.values()):
                    tier_rows.append((label_string(("cluster", "host", "device", "tier"), (name, host, device, tier)), in_tier))
        vm_rows += [(label_string(("cluster", "vm"), (name, vm)), stats) for vm, stats in sorted(sample.vms.items())]
        host_net_rows += [(label_string(("cluster", "host"), (name, h)), s) for h, s in sorted(sample.host_networks.items())]
        tcpip_rows += [(label_string(("cluster", "host", "netstack"), (name, *k)), s) for k, s in sorted(sample.tcpip.items())]
        nic_rows += [(label_string(("cluster", "host", "vmnic"), (name, *k)), s) for k, s in sorted(sample.nics.items())]
        vmknic_rows += [(label_string(("cluster", "host", "vmknic"), (name, *k)), s) for k, s in sorted(sample.vmknics.items())]
        host_backend_rows += [(label_string(("cluster", "host"), (name, h)), s) for h, s in sorted(sample.host_backends.items())]
        for host, stats in sorted(sample.host_backends.items()):
            for io_class in m.VSAN_QUEUE_CLASSES:
                for op in m.VSAN_QUEUE_OPS:
                    value = stats.get(m.vsan_queue_depth(io_class, op))
                    if value is not None:
                        keys = ("cluster", "host", "class", "op")
                        queue_depth.add(label_string(keys, (name, host, io_class, op)), value)
        for state in m.VSAN_RESYNC_JOB_STATES:
            value = sample.cluster_owner.get(m.vsan_resync_jobs(state))
            if value is not None:
                resync_jobs.add(label_string(("cluster", "state"), (name, state)), value)
            for host, stats in sorted(sample.host_owners.items()):
                value = stats.get(m.vsan_resync_jobs(state))
                if value is not None:
                    host_resync_jobs.add(label_string(("cluster", "host", "state"), (name, host, state)), value)
        if sample.cluster_backend:
            backend_rows.append((label_string(("cluster",), (name,)), sample.cluster_backend))
        if sample.cluster_owner:
            owner_rows.append((label_string(("cluster",), (name,)), sample.cluster_owner))
    yield stamp
    yield interval
    yield from _fill("esxi_vsan_cluster", "cluster", DOM_CLIENT, cluster_rows)
    yield from _fill("esxi_vsan_host", "host", HOST, host_rows)
    yield from _fill("esxi_vsan_disk_group", "disk_group", DISK_GROUP, group_rows)
    yield congestion
    yield from _fill("esxi_vsan_disk", "disk", (*DISK, *ESA_DEVICE), disk_rows)
    yield from _fill("esxi_vsan_disk_tier", "tier", ESA_TIER, tier_rows)
    yield from _fill("esxi_vsan_vm", "vm", IO, vm_rows)
    yield from _fill("esxi_vsan_host_network", "host_network", NETWORK, host_net_rows)
    yield from _fill("esxi_vsan_host_network", "tcpip", TCPIP, tcpip_rows)
    yield from _fill("esxi_vsan_nic", "nic", NIC, nic_rows)
    yield from _fill("esxi_vsan_nic", "nic", NIC_COUNTERS, nic_rows, kind=counter)
    yield from _fill("esxi_vsan_vmknic", "vmknic", NETWORK, vmknic_rows)
    yield from _fill("esxi_vsan_host_backend", "host_backend", HOST_BACKEND, host_backend_rows)
    yield queue_depth
    yield from _fill("esxi_vsan_cluster_backend", "cluster_backend", BACKEND, backend_rows)
    yield from _fill("esxi_vsan_cluster_owner", "cluster_owner", OWNER, owner_rows)
    yield resync_jobs
    yield host_resync_jobs


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
