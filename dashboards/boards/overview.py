"""Storage overview: hosts x LUNs at a glance, top-N tables linking to the detail dashboards."""

from __future__ import annotations

from .. import variables as v
from ..panels import (
    KERNEL_LATENCY_STEPS,
    LATENCY_LINE,
    LATENCY_STEPS,
    LINK_LINE,
    LINK_PCT,
    LINK_STEPS,
    MS,
    Column,
    Q,
    row,
    stat_panel,
    storage_events_annotation,
    table_panel,
    timeseries_panel,
)
from ..promql import HOST, RANGE, bytes_per_second, gauge, link_use, mean_latency, rate, sel
from ..render import new_dashboard

UID = "esxi-storage-overview"
FILE = "storage-overview.json"

LUN_URL = (
    "/d/esxi-lun-detail/esxi-lun-detail?var-datasource=${datasource}&var-host=${__data.fields.host}"
    "&var-lun=${__data.fields.device}&${__url_time_range}"
)
ADAPTER_URL = (
    "/d/esxi-adapters/esxi-adapters-and-links?var-datasource=${datasource}&var-host=${__data.fields.host}"
    "&var-adapter=${__data.fields.adapter}&${__url_time_range}"
)
LINK_USE = link_use(HOST)


# A host's current connection state, one series per host (one target's view if two list it).
HOST_STATE = f"max by (host, state) (esxi_host_connection_state{{{HOST}}} == 1)"


def _hosts(d):
    """Every host vCenter lists, whether or not it answers: a host not responding has no LUN
    series, so the boards above lose it without a word; here it shows."""
    d = d.with_row(row("Hosts as vCenter lists them"))
    d = d.with_panel(
        stat_panel(
            "Hosts not connected",
            "Hosts vCenter lists as notResponding or disconnected. Their storage is not collected and "
            "their storage alerts are blind; a host not responding for 5 minutes outside maintenance "
            "mode pages (EsxiHostNotResponding).",
            "short",
            Q(f'count(max by (host) (esxi_host_connection_state{{state!="connected",{HOST}}}) == 1) or vector(0)', instant=True),
            thresholds=((None, "green"), (1, "red")),
            w=6,
            h=6,
        )
    )
    d = d.with_panel(
        stat_panel(
            "Hosts in maintenance mode",
            "Hosts vCenter lists in maintenance mode: expected to go away for a reboot or a patch, so "
            "they do not page when they stop responding.",
            "short",
            Q(f"count(max by (host) (esxi_host_maintenance_mode{{{HOST}}}) == 1) or vector(0)", instant=True),
            thresholds=((None, "green"), (1, "blue")),
            w=6,
            h=6,
        )
    )
    return d.with_panel(
        table_panel(
            "Host states",
            "Each host's connection state (connected, notResponding, disconnected), whether it is in "
            "maintenance mode, and how many LUNs are read from it: none for a host vCenter cannot read.",
            ("host", "state"),
            [
                Column(
                    "maintenance",
                    f"max by (host, state) (esxi_host_maintenance_mode{{{HOST}}} * on (host) group_left (state) {HOST_STATE})",
                    "short",
                    ((None, "transparent"), (1, "blue")),
                ),
                Column(
                    "LUNs read",
                    f"count by (host) (esxi_lun_info{{{HOST}}}) * on (host) group_left (state) {HOST_STATE}",
                    "short",
                ),
            ],
            sort_by="maintenance",
            w=12,
            h=6,
        )
    )


def build():
    d = new_dashboard(
        UID,
        "ESXi storage overview",
        "Every host and LUN at a glance: latency, queues, conflicts, links and firing alerts.",
        [v.datasource(), v.host()],
    )
    d = d.annotation(storage_events_annotation(HOST))
    d = d.with_row(row("At a glance (worst over the selected hosts)"))
    for panel in (
        stat_panel(
            "Worst guest latency (GAVG)",
            f"Highest command-weighted mean guest latency of any LUN. Above {MS} the paper calls the "
            "LUN overloaded: look at DAVG vs KAVG on the LUN detail dashboard.",
            "s",
            Q(f"max({mean_latency('lun', 'guest', HOST)})"),
            thresholds=LATENCY_STEPS,
        ),
        stat_panel(
            "Worst device latency (DAVG)",
            "Highest mean time in the device (HBA to array and back). High DAVG with low KAVG: the array "
            "or the fabric is slow, not this host.",
            "s",
            Q(f"max({mean_latency('lun', 'device', HOST)})"),
            thresholds=LATENCY_STEPS,
        ),
        stat_panel(
            "Worst kernel latency (KAVG)",
            "Highest mean time in the VMkernel. Above 2 ms commands are queuing in the host: the device queue (DQLEN) is full.",
            "s",
            Q(f"max({mean_latency('lun', 'kernel', HOST)})"),
            thresholds=((None, "green"), (0.001, "yellow"), (0.002, "red")),
        ),
        stat_panel(
            "Highest queue use (ACTV/DQLEN)",
            "Largest share of a LUN's device queue in use. At 100% new commands wait in the VMkernel (QUED) and latency grows.",
            "percentunit",
            Q(f"max({gauge('esxi_lun_used_ratio', HOST)})"),
            thresholds=((None, "green"), (0.8, "yellow"), (1.0, "red")),
        ),
        stat_panel(
            "Commands queued (QUED)",
            "Commands waiting in the VMkernel for a device queue slot, summed over LUNs. Anything "
            "above zero for long means the queue depth is too small for the load.",
            "short",
            Q(f"sum({gauge('esxi_lun_queued_commands', HOST)})"),
            thresholds=((None, "green"), (1, "yellow"), (8, "red")),
        ),
        stat_panel(
            "Reservation conflicts",
            "SCSI reservation conflicts per second: another host held the LUN. Any sustained value "
            "costs throughput; look for VMFS metadata operations (snapshots, VM creation).",
            "reqps",
            Q(f"sum({rate('esxi_lun_reservation_conflicts_total', HOST)})"),
            thresholds=((None, "green"), (0.1, "yellow"), (1, "red")),
        ),
        stat_panel(
            "Busiest link",
            "Busiest direction of any adapter as a share of its link's payload capacity; red where the "
            "link-saturation alert fires. Near 100% the link is the "
            "bottleneck: latency climbs while throughput stays flat. Add a path on another HBA.",
            "percentunit",
            Q(f"max({LINK_USE})"),
            thresholds=LINK_STEPS,
        ),
        stat_panel(
            "Firing alerts",
            "Alerts firing now for the selected hosts (Prometheus ALERTS). Zero is good; the table below lists them.",
            "short",
            Q('count(ALERTS{alertstate="firing",host=~"$host"}) or vector(0)', instant=True),
            thresholds=((None, "green"), (1, "red")),
        ),
    ):
        d = d.with_panel(panel.span(3))
    d = _hosts(d)
    d = d.with_row(row("Top LUNs over the selected time range"))
    d = d.with_panel(
        table_panel(
            "LUNs by guest latency (worst first)",
            "Every LUN, worst mean guest latency over the time range first, with where the latency comes from. "
            "GAVG = DAVG + KAVG: a high DAVG points at the array, a high KAVG or QUED at the host's queue. "
            "Click a device for its detail dashboard.",
            ("host", "device"),
            [
                Column("GAVG", mean_latency("lun", "guest", HOST, window=RANGE), "s", LATENCY_STEPS),
                Column("DAVG", mean_latency("lun", "device", HOST, window=RANGE), "s", LATENCY_STEPS),
                Column("KAVG", mean_latency("lun", "kernel", HOST, window=RANGE), "s", KERNEL_LATENCY_STEPS),
                Column("IOPS", rate("esxi_lun_commands_total", HOST, window=RANGE), "iops"),
                Column(
                    "peak ACTV/DQLEN",
                    f"max_over_time({sel('esxi_lun_used_ratio', HOST)}[{RANGE}])",
                    "percentunit",
                    ((None, "green"), (1.0, "red")),
                ),
                Column(
                    "peak QUED",
                    f"max_over_time({sel('esxi_lun_queued_commands', HOST)}[{RANGE}])",
                    "short",
                    ((None, "green"), (1, "red")),
                ),
                Column(
                    "conflicts/s",
                    rate("esxi_lun_reservation_conflicts_total", HOST, window=RANGE),
                    "reqps",
                    ((None, "green"), (0.1, "red")),
                ),
            ],
            sort_by="GAVG",
            links={"device": ("LUN detail", LUN_URL)},
            w=16,
            h=9,
        )
    )
    d = d.with_panel(
        table_panel(
            "Adapters by link use",
            f"Mean use of each adapter's busiest direction over the time range (share of its payload capacity). Above {LINK_PCT} the "
            "link limits throughput. Click an adapter for the adapters dashboard.",
            ("host", "adapter"),
            [
                Column("link use", link_use(HOST, window=RANGE), "percentunit", LINK_STEPS),
                Column("throughput", bytes_per_second("adapter", HOST, window=RANGE), "Bps"),
            ],
            sort_by="link use",
            links={"adapter": ("Adapters and links", ADAPTER_URL)},
            w=8,
            h=9,
        )
    )
    d = d.with_row(row("Hosts x LUNs over time"))
    for panel in (
        timeseries_panel(
            "Guest latency (GAVG) per LUN",
            f"Mean latency the guests see per LUN, with the paper's {MS} line. Above it, "
            "applications suffer; compare DAVG and KAVG on the LUN detail dashboard.",
            "s",
            [Q(mean_latency("lun", "guest", HOST), "{{host}} {{device}}")],
            line_at=LATENCY_LINE,
        ),
        timeseries_panel(
            "Queue use (ACTV/DQLEN) per LUN",
            "Share of each LUN's device queue in use. At 100% the queue is full and further "
            "commands queue in the VMkernel (QUED).",
            "percentunit",
            [Q(gauge("esxi_lun_used_ratio", HOST), "{{host}} {{device}}")],
            line_at=((None, "transparent"), (1.0, "red")),
        ),
        timeseries_panel(
            "Queued commands (QUED) per LUN",
            "Commands waiting in the VMkernel. Sustained QUED > 0 means the LUN queue depth is "
            "too small for the outstanding I/O (or the array is slow to drain it).",
            "short",
            [Q(gauge("esxi_lun_queued_commands", HOST), "{{host}} {{device}}")],
        ),
        timeseries_panel(
            "Reservation conflicts per LUN",
            "SCSI reservation conflicts per second. Non-zero: another host's VMFS metadata "
            "operations are locking the LUN and this host's commands retry.",
            "reqps",
            [Q(rate("esxi_lun_reservation_conflicts_total", HOST), "{{host}} {{device}}")],
        ),
        timeseries_panel(
            "Link use per adapter",
            "Each direction's throughput as a share of the link's payload capacity, with the alert's line. "
            "A flat line near 100% means the link caps throughput.",
            "percentunit",
            [Q(LINK_USE, "{{host}} {{adapter}} {{direction}}")],
            line_at=LINK_LINE,
        ),
        timeseries_panel(
            "IOPS per host",
            "SCSI commands per second per host over all its LUNs. A drop while latency rises "
            "points at a saturated device or link.",
            "iops",
            [Q(f"sum by (host) ({rate('esxi_lun_commands_total', HOST)})", "{{host}}")],
        ),
    ):
        d = d.with_panel(panel)
    d = d.with_row(row("Firing alerts"))
    d = d.with_panel(
        table_panel(
            "Alerts firing now",
            "Prometheus alerts firing now for the selected hosts, with their labels. Empty is good.",
            ("alertname", "severity", "host", "device", "adapter"),
            [Column("firing", 'ALERTS{alertstate="firing",host=~"$host"}', "short")],
            h=6,
        )
    )
    return d
