"""vSAN: the cluster (health, objects by state, capacity, resync), its hosts as their VMs see
vSAN (DOM client latency, IOPS, congestion, outstanding I/O, client cache), its disk groups (write
buffer, congestion per layer), its disks (device latency, linked to LUN detail), the vSAN network,
the backend (resync against the VMs' I/O, resync jobs, queue depth per class) and the VMs with the
highest latency. Every value is the vSAN performance service's 5-minute mean of its newest
sample, read as a gauge; lines and colours come from the thresholds file."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as db

from .. import variables as v
from ..panels import LATENCY_LINE, LATENCY_STEPS, LIMITS, MS, Column, Q, row, table_panel, timeseries_panel
from ..promql import RANGE, gauge, sel
from ..render import new_dashboard
from .overview import LUN_URL

UID = "esxi-vsan"
FILE = "vsan.json"
CLUSTER = 'cluster=~"$cluster"'
VSAN_HOST = 'host=~"$vsan_host"'
TOP = 10
CONGESTION = LIMITS.vsan_congestion_per_second
WRITE_BUFFER = LIMITS.vsan_write_buffer_free_min_ratio
SPACE_WARN, SPACE_BAD = LIMITS.vsan_space_used_warning_ratio, LIMITS.vsan_space_used_critical_ratio
CONGESTION_LINE = ((None, "transparent"), (CONGESTION, "red"))
CONGESTION_STEPS = ((None, "green"), (CONGESTION, "red"))
WRITE_BUFFER_LINE = ((None, "red"), (WRITE_BUFFER, "transparent"))
WRITE_BUFFER_STEPS = ((None, "red"), (WRITE_BUFFER, "green"))
SPACE_LINE = ((None, "transparent"), (SPACE_WARN, "orange"), (SPACE_BAD, "red"))
SPACE_STEPS = ((None, "green"), (SPACE_WARN, "orange"), (SPACE_BAD, "red"))
HEALTH_STEPS = ((None, "green"), (1, "yellow"), (2, "red"))  # 0 green, 1 yellow, 2 red
BAD_COUNT_STEPS = ((None, "green"), (1, "red"))
LOSS = LIMITS.vsan_packet_loss_ratio
RETRANSMITS = LIMITS.vsan_tcp_retransmit_ratio
LOSS_LINE = ((None, "transparent"), (LOSS, "red"))
RETRANSMIT_LINE = ((None, "transparent"), (RETRANSMITS, "red"))
SATURATION = LIMITS.link_saturation_ratio
SATURATION_LINE = ((None, "transparent"), (SATURATION, "red"))
PAYLOAD = LIMITS.link_payload_ratio


def cluster_variable() -> db.QueryVariable:
    return v._query("cluster", "vSAN cluster", "label_values(esxi_vsan_cluster_info, cluster)", "vSAN cluster")


def host_variable() -> db.QueryVariable:
    return v._query(
        "vsan_host", "Host", 'label_values(esxi_vsan_host_info{cluster=~"$cluster"}, host)', "Host of the vSAN cluster"
    )


def metric(name: str, *matchers: str) -> str:
    return sel(name, CLUSTER, *matchers)


def series(name: str, *matchers: str) -> str:
    """A vSAN gauge for a time series: its newest value in each rate interval (it steps every sample)."""
    return f"last_over_time({metric(name, *matchers)}[$__rate_interval])"


def health_level() -> str:
    """vSAN's overall health as 0 green, 1 yellow, 2 red (what the colours of a table cell need)."""
    yellow, red = metric("esxi_vsan_cluster_health", 'state="yellow"'), metric("esxi_vsan_cluster_health", 'state="red"')
    return f"max by (cluster) ({yellow}) + 2 * max by (cluster) ({red})"


def objects(state: str) -> str:
    """Objects in one health state, per cluster."""
    matcher = f'state="{state}"'
    return f"max by (cluster) ({metric('esxi_vsan_objects', matcher)})"


def build():
    d = new_dashboard(
        UID,
        "ESXi vSAN",
        "vSAN clusters: health, objects and capacity; latency, congestion and outstanding I/O as each host's VMs "
        "see vSAN; disk groups' write buffer and congestion per layer; disks' device latency; the slowest VMs. "
        "Values are the vSAN performance service's 5-minute samples.",
        [v.datasource(), cluster_variable(), host_variable()],
    )
    d = d.with_row(row("Cluster"))
    d = d.with_panel(
        table_panel(
            "vSAN clusters",
            "Each cluster now: vSAN's overall health (0 green, 1 yellow, 2 red; EsxiVsanHealthRed), inaccessible "
            "objects (EsxiVsanObjectsInaccessible) and objects with reduced availability and no rebuild "
            f"(EsxiVsanObjectsReducedAvailability), raw space used ({SPACE_WARN:.0%} and {SPACE_BAD:.0%} lines), "
            "free bytes, resync backlog and the age of the newest performance sample (no new one for 15 minutes: "
            "the performance service is off, EsxiVsanSamplesStale).",
            ("cluster",),
            [
                Column("health", health_level(), "short", HEALTH_STEPS),
                Column("inaccessible", objects("inaccessible"), "short", BAD_COUNT_STEPS),
                Column(
                    "no rebuild",
                    objects("reduced_availability_with_no_rebuild"),
                    "short",
                    BAD_COUNT_STEPS,
                ),
                Column(
                    "space used",
                    f"max by (cluster) ({sel('cluster:esxi_vsan_space_used:ratio', CLUSTER)})",
                    "percentunit",
                    SPACE_STEPS,
                ),
                Column("free", f"max by (cluster) ({metric('esxi_vsan_free_bytes')})", "bytes"),
                Column("resync", f"max by (cluster) ({metric('esxi_vsan_resync_bytes')})", "bytes"),
                Column("sample age", f"time() - max by (cluster) ({metric('esxi_vsan_sample_timestamp_seconds')})", "s"),
            ],
            w=24,
            h=6,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Objects by health state",
            "vSAN objects (VM disks, homes, swap) per health state, from vSAN's health service. Anything but "
            "healthy for long: inaccessible objects are down; reduced availability with no rebuild is one failure "
            "away from it; the delay-timer state waits 60 minutes before rebuilding.",
            "short",
            [Q(series("esxi_vsan_objects"), "{{cluster}} {{state}}")],
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Raw space used",
            f"Share of the vSAN datastore's raw capacity in use. Above {SPACE_WARN:.0%} the slack for rebuilds is "
            f"going (EsxiVsanSpaceUsedHigh); above {SPACE_BAD:.0%} vSAN cannot rebuild after a host failure.",
            "percentunit",
            [Q(sel("cluster:esxi_vsan_space_used:ratio", CLUSTER), "{{cluster}}")],
            maximum=1,
            line_at=SPACE_LINE,
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Resync backlog",
            "Bytes vSAN still has to resynchronise (rebuilds after a failure, policy changes, rebalancing). A "
            "resync competes with the VMs' I/O until it ends.",
            "bytes",
            [Q(series("esxi_vsan_resync_bytes"), "{{cluster}}")],
            w=8,
        )
    )

    d = d.with_row(row("Hosts (DOM client: I/O as the VMs see it)"))
    d = d.with_panel(
        timeseries_panel(
            "Latency per host",
            f"Mean latency per read and per write of the VMs on each host, as vSAN's DOM client measures it. "
            f"Above the {MS} line (the paper's overload) for two samples: EsxiVsanHostLatencyCritical.",
            "s",
            [
                Q(series("esxi_vsan_host_read_latency_mean_seconds", VSAN_HOST), "read {{host}}"),
                Q(series("esxi_vsan_host_write_latency_mean_seconds", VSAN_HOST), "write {{host}}"),
            ],
            line_at=LATENCY_LINE,
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "IOPS per host",
            "Reads and writes per second the VMs on each host issue to vSAN.",
            "iops",
            [
                Q(series("esxi_vsan_host_reads_per_second", VSAN_HOST), "read {{host}}"),
                Q(series("esxi_vsan_host_writes_per_second", VSAN_HOST), "write {{host}}"),
            ],
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Congestion per host",
            f"Congestion vSAN raises per second on each host (its back-pressure when a layer falls behind); above "
            f"{CONGESTION:g}/s for 15 minutes: EsxiVsanCongestion. The disk groups below say which layer.",
            "short",
            [Q(series("esxi_vsan_host_congestion_per_second", VSAN_HOST), "{{host}}")],
            line_at=CONGESTION_LINE,
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Outstanding I/O per host",
            "I/Os the VMs of each host have outstanding in vSAN: with latency, Little's law (outstanding = IOPS x "
            "latency). The paper's queue question on vSAN: which host asks for more than its disk groups absorb.",
            "short",
            [Q(series("esxi_vsan_host_outstanding_io", VSAN_HOST), "{{host}}")],
            w=12,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Client cache hit ratio",
            "Share of reads served by each host's client cache (memory, before the network and the disk groups).",
            "percentunit",
            [Q(series("esxi_vsan_host_client_cache_hit_ratio", VSAN_HOST), "{{host}}")],
            maximum=1,
            w=12,
        )
    )

    d = d.with_row(row("Disk groups"))
    d = d.with_panel(
        timeseries_panel(
            "Write buffer free",
            f"Free share of each disk group's write buffer (its cache tier). Under {WRITE_BUFFER:.0%} destaging "
            "cannot keep up with the writes and congestion follows (EsxiVsanWriteBufferLow).",
            "percentunit",
            [Q(series("esxi_vsan_disk_group_write_buffer_free_ratio", VSAN_HOST), "{{host}} {{disk_group}}")],
            maximum=1,
            line_at=WRITE_BUFFER_LINE,
            w=12,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Congestion per layer",
            "Congestion per second each disk group layer raises, stacked: ssd and log (the cache device), mem and "
            "slab (the host's memory for vSAN), comp (the component scheduler), iops (an IOPS limit policy).",
            "short",
            [Q(series("esxi_vsan_disk_group_congestion_per_second", VSAN_HOST), "{{host}} {{disk_group}} {{layer}}")],
            stack=True,
            w=12,
        )
    )

    d = d.with_row(row("Disks"))
    d = d.with_panel(
        table_panel(
            "Disks",
            f"Each cache and capacity disk over the time range: mean device latency (DAVG; above {MS}: "
            "EsxiVsanDiskLatencyHigh), guest latency (GAVG), physical-layer read and write latency and IOPS. "
            "Click a device for its LUN detail (the same device label), SMART health included where read.",
            ("cluster", "host", "disk_group", "device"),
            [
                Column(
                    "DAVG",
                    gauge("esxi_vsan_disk_device_latency_mean_seconds", CLUSTER, VSAN_HOST, window=RANGE),
                    "s",
                    LATENCY_STEPS,
                ),
                Column(
                    "GAVG",
                    gauge("esxi_vsan_disk_guest_latency_mean_seconds", CLUSTER, VSAN_HOST, window=RANGE),
                    "s",
                    LATENCY_STEPS,
                ),
                Column(
                    "read",
                    gauge("esxi_vsan_disk_device_read_latency_mean_seconds", CLUSTER, VSAN_HOST, window=RANGE),
                    "s",
                    LATENCY_STEPS,
                ),
                Column(
                    "write",
                    gauge("esxi_vsan_disk_device_write_latency_mean_seconds", CLUSTER, VSAN_HOST, window=RANGE),
                    "s",
                    LATENCY_STEPS,
                ),
                Column(
                    "IOPS",
                    f"{gauge('esxi_vsan_disk_reads_per_second', CLUSTER, VSAN_HOST, window=RANGE)} + "
                    f"{gauge('esxi_vsan_disk_writes_per_second', CLUSTER, VSAN_HOST, window=RANGE)}",
                    "iops",
                ),
            ],
            sort_by="DAVG",
            links={"device": ("LUN detail", LUN_URL)},
            w=24,
            h=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Device latency per disk",
            f"DAVG of each cache and capacity disk, with the {MS} line: one disk far above its peers is failing or "
            "overloaded; all of a controller's disks high is the controller.",
            "s",
            [Q(series("esxi_vsan_disk_device_latency_mean_seconds", VSAN_HOST), "{{host}} {{device}}")],
            line_at=LATENCY_LINE,
            w=24,
        )
    )

    d = d.with_row(row("ESA disks (vSAN layer per tier, device layer)"))
    d = d.with_panel(
        table_panel(
            "ESA disks",
            f"Each vSAN ESA disk over the time range: mean read and write latency at the vSAN layer in the "
            f"performance and capacity tiers (above {MS}: EsxiVsanEsaDiskLatencyHigh), and at the device: DAVG, "
            "KAVG, outstanding commands. Click a device for its LUN detail (the same device label), SMART health included.",
            ("cluster", "host", "device"),
            [
                Column("perf read", gauge("esxi_vsan_disk_tier_read_latency_mean_seconds", CLUSTER, VSAN_HOST, 'tier="performance"', window=RANGE), "s", LATENCY_STEPS),
                Column("perf write", gauge("esxi_vsan_disk_tier_write_latency_mean_seconds", CLUSTER, VSAN_HOST, 'tier="performance"', window=RANGE), "s", LATENCY_STEPS),
                Column("capacity read", gauge("esxi_vsan_disk_tier_read_latency_mean_seconds", CLUSTER, VSAN_HOST, 'tier="capacity"', window=RANGE), "s", LATENCY_STEPS),
                Column("capacity write", gauge("esxi_vsan_disk_tier_write_latency_mean_seconds", CLUSTER, VSAN_HOST, 'tier="capacity"', window=RANGE), "s", LATENCY_STEPS),
                Column("DAVG", gauge("esxi_vsan_disk_device_latency_mean_seconds", CLUSTER, VSAN_HOST, 'disk_group=""', window=RANGE), "s", LATENCY_STEPS),
                Column("KAVG", gauge("esxi_vsan_disk_kernel_latency_mean_seconds", CLUSTER, VSAN_HOST, window=RANGE), "s", LATENCY_STEPS),
                Column("outstanding", gauge("esxi_vsan_disk_outstanding_commands", CLUSTER, VSAN_HOST, window=RANGE), "short"),
            ],
            sort_by="perf write",
            links={"device": ("LUN detail", LUN_URL)},
            w=24,
            h=8,
        )
    )  # fmt: skip
    d = d.with_panel(
        timeseries_panel(
            "ESA disk latency per tier",
            f"Mean read and write latency of each ESA disk at the vSAN layer, per tier, with the {MS} line.",
            "s",
            [
                Q(series("esxi_vsan_disk_tier_read_latency_mean_seconds", VSAN_HOST), "{{host}} {{device}} {{tier}} read"),
                Q(series("esxi_vsan_disk_tier_write_latency_mean_seconds", VSAN_HOST), "{{host}} {{device}} {{tier}} write"),
            ],
            line_at=LATENCY_LINE,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "ESA disk device latency",
            "The device layer of each ESA disk: DAVG (HBA to disk and back) and KAVG (time in the ESXi kernel).",
            "s",
            [
                Q(series("esxi_vsan_disk_device_latency_mean_seconds", VSAN_HOST, 'disk_group=""'), "{{host}} {{device}} DAVG"),
                Q(series("esxi_vsan_disk_kernel_latency_mean_seconds", VSAN_HOST), "{{host}} {{device}} KAVG"),
            ],
            line_at=LATENCY_LINE,
        )
    )

    d = d.with_row(row("vSAN network"))
    d = d.with_panel(
        timeseries_panel(
            "vmnic throughput against link capacity",
            f"Each vSAN vmnic's received and transmitted bytes as a share of its payload capacity ({PAYLOAD} of the "
            f"link speed), per direction; above {SATURATION:.0%}: EsxiVsanNicSaturated.",
            "percentunit",
            [
                Q(
                    f"{series('esxi_vsan_nic_received_bytes_per_second', VSAN_HOST)} / on (cluster, host, vmnic) "
                    f"({series('esxi_vsan_nic_link_speed_bytes_per_second', VSAN_HOST)} * {PAYLOAD})",
                    "{{host}} {{vmnic}} receive",
                ),
                Q(
                    f"{series('esxi_vsan_nic_transmitted_bytes_per_second', VSAN_HOST)} / on (cluster, host, vmnic) "
                    f"({series('esxi_vsan_nic_link_speed_bytes_per_second', VSAN_HOST)} * {PAYLOAD})",
                    "{{host}} {{vmnic}} transmit",
                ),
            ],
            line_at=SATURATION_LINE,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "vmnic throughput",
            "Bytes each vSAN vmnic receives and transmits per second, beside its link speed.",
            "Bps",
            [
                Q(series("esxi_vsan_nic_received_bytes_per_second", VSAN_HOST), "{{host}} {{vmnic}} receive"),
                Q(series("esxi_vsan_nic_transmitted_bytes_per_second", VSAN_HOST), "{{host}} {{vmnic}} transmit"),
                Q(series("esxi_vsan_nic_link_speed_bytes_per_second", VSAN_HOST), "{{host}} {{vmnic}} link"),
            ],
            dashed=("link",),
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Packet loss",
            f"Share of packets lost per vSAN host and vmnic, received and transmitted; above {LOSS:.1%}: EsxiVsanPacketLoss.",
            "percentunit",
            [
                Q(series("esxi_vsan_host_network_received_packet_loss_ratio", VSAN_HOST), "{{host}} receive"),
                Q(series("esxi_vsan_host_network_transmitted_packet_loss_ratio", VSAN_HOST), "{{host}} transmit"),
                Q(series("esxi_vsan_nic_received_packet_loss_ratio", VSAN_HOST), "{{host}} {{vmnic}} receive"),
                Q(series("esxi_vsan_nic_transmitted_packet_loss_ratio", VSAN_HOST), "{{host}} {{vmnic}} transmit"),
            ],
            line_at=LOSS_LINE,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "TCP retransmits",
            "Share of TCP segments each host retransmits on the TCP/IP stack vSAN reports on (vsan-tcpip-stats); "
            f"above {RETRANSMITS:.0%}: EsxiVsanTcpRetransmitsHigh.",
            "percentunit",
            [Q(series("esxi_vsan_host_network_tcp_retransmit_ratio", VSAN_HOST), "{{host}} {{netstack}}")],
            line_at=RETRANSMIT_LINE,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "vmnic errors",
            "CRC and receive errors counted by each vSAN vmnic per second (from its counters since boot): any rise "
            "is EsxiVsanNicErrorsRising. Pause frames: the switch asks the host to wait.",
            "short",
            [
                Q(
                    f"rate({metric('esxi_vsan_nic_received_crc_errors_total', VSAN_HOST)}[$__rate_interval])",
                    "{{host}} {{vmnic}} CRC",
                ),
                Q(
                    f"rate({metric('esxi_vsan_nic_received_errors_total', VSAN_HOST)}[$__rate_interval])",
                    "{{host}} {{vmnic}} receive",
                ),
                Q(f"rate({metric('esxi_vsan_nic_pause_frames_total', VSAN_HOST)}[$__rate_interval])", "{{host}} {{vmnic}} pause"),
            ],
            w=24,
        )
    )

    d = d.with_row(row("Backend: resync against the VMs' I/O"))
    d = d.with_panel(
        timeseries_panel(
            "Resync against VM I/O per host",
            "Bytes the component manager of each host moves for the VMs (reads + writes) and for resync (recovery "
            "writes + resync reads): resync above the VMs' for an hour is EsxiVsanResyncCompetesWithVms.",
            "Bps",
            [
                Q(
                    f"{series('esxi_vsan_host_backend_read_bytes_per_second', VSAN_HOST)} + "
                    f"{series('esxi_vsan_host_backend_written_bytes_per_second', VSAN_HOST)}",
                    "{{host}} VMs",
                ),
                Q(
                    f"{series('esxi_vsan_host_backend_recovery_written_bytes_per_second', VSAN_HOST)} + "
                    f"{series('esxi_vsan_host_backend_resync_read_bytes_per_second', VSAN_HOST)}",
                    "{{host}} resync",
                ),
            ],
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Backend congestion and outstanding I/O",
            "Congestion per second and outstanding I/O at each host's component manager, and of it the resync's: "
            "recovery writes and resync reads in flight.",
            "short",
            [
                Q(series("esxi_vsan_host_backend_congestion_per_second", VSAN_HOST), "{{host}} congestion"),
                Q(series("esxi_vsan_host_backend_outstanding_io", VSAN_HOST), "{{host}} outstanding"),
                Q(series("esxi_vsan_host_backend_outstanding_recovery_writes", VSAN_HOST), "{{host}} resync writes outstanding"),
                Q(series("esxi_vsan_host_backend_outstanding_resync_reads", VSAN_HOST), "{{host}} resync reads outstanding"),
            ],
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Resync jobs",
            "The vSAN object owners' resync jobs by state: the cluster's pending, running and suspended "
            "(cluster-domowner), and each host's, with those blocked (host-domowner). Jobs pending while none run, "
            "or blocked, mean the resync is waiting, not working.",
            "short",
            [
                Q(series("esxi_vsan_resync_jobs"), "{{cluster}} {{state}}"),
                Q(series("esxi_vsan_host_resync_jobs", VSAN_HOST), "{{host}} {{state}}"),
            ],
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Component manager queue depth per class",
            "I/O queued at each host's component manager per class (vmdisk: the VMs' disks; namespace; metadata; "
            "resync) and operation: a resync queue that grows while the vmdisk queue grows too is resync "
            "competing with the VMs.",
            "short",
            [Q(series("esxi_vsan_host_backend_queue_depth", VSAN_HOST), "{{host}} {{class}} {{op}}")],
        )
    )

    d = d.with_row(row("VMs"))
    d = d.with_panel(
        timeseries_panel(
            f"Top {TOP} VMs by latency",
            f"VMs whose vSAN objects see the highest mean read or write latency, with the {MS} line.",
            "s",
            [
                Q(
                    # the higher of the two (names dropped, read and write series match label for label)
                    f"topk({TOP}, ({series('esxi_vsan_vm_read_latency_mean_seconds')} >= "
                    f"{series('esxi_vsan_vm_write_latency_mean_seconds')}) or {series('esxi_vsan_vm_write_latency_mean_seconds')})",
                    "{{vm}} ({{cluster}})",
                )
            ],
            line_at=LATENCY_LINE,
            w=12,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            f"Top {TOP} VMs by IOPS",
            "Reads plus writes per second each VM issues to vSAN.",
            "iops",
            [
                Q(
                    f"topk({TOP}, sum by (cluster, vm) ({series('esxi_vsan_vm_reads_per_second')}) + "
                    f"sum by (cluster, vm) ({series('esxi_vsan_vm_writes_per_second')}))",
                    "{{vm}} ({{cluster}})",
                )
            ],
            w=12,
        )
    )
    return d
