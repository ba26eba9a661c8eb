"""Adapters and links: throughput against link capacity, per-path share, latency per adapter,
path states."""

from __future__ import annotations

from .. import variables as v
from ..panels import LATENCY_LINE, LINK_LINE, Column, Q, row, table_panel, timeseries_panel
from ..promql import ADAPTER, HOST, LATENCIES, gauge, link_use, mean_latency, one_per, path_to_device, rate, sel
from ..render import new_dashboard

UID = "esxi-adapters"
FILE = "adapters-and-links.json"
WHO = "{{host}} {{adapter}}"
LINK_SPEED = sel("esxi_adapter_link_speed_bytes_per_second", HOST, ADAPTER)


def with_identity(expr: str) -> str:
    """One value per adapter, labelled with the adapter's type, model and driver from esxi_adapter_info."""
    identity = one_per("host, adapter, type, model, driver", sel("esxi_adapter_info", HOST, ADAPTER))
    return f"{one_per('host, adapter', expr)} * on (host, adapter) group_left (type, model, driver) {identity}"


def build():
    d = new_dashboard(
        UID,
        "ESXi adapters and links",
        "Which link is full: adapter throughput against link speed, how I/O spreads over "
        "paths, latency per adapter and path states.",
        [v.datasource(), v.host(), v.adapter()],
    )
    d = d.with_row(row("Link capacity"))
    d = d.with_panel(
        timeseries_panel(
            "Link use",
            "Bytes per second in each direction (links are full duplex) as a share of the link's payload "
            "capacity (link speed x the thresholds file's payload ratio); the red line is where the "
            "link-saturation alert fires. Near it the link "
            "is the bottleneck: throughput flattens while latency climbs (the paper's Figure 5). Add a "
            "second link and spread the paths. A vmkN adapter is the vmkernel NIC of NFS datastores "
            "(vSphere source): its share is their bytes over its uplink's speed.",
            "percentunit",
            [Q(link_use(HOST, ADAPTER), f"{WHO} {{{{direction}}}}")],
            line_at=LINK_LINE,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Throughput against link speed",
            "Bytes per second read and written per adapter, with the link speed dashed. Read plus written "
            "reaching the dashed line means the link is full.",
            "Bps",
            [
                Q(rate("esxi_adapter_read_bytes_total", HOST, ADAPTER), f"read {WHO}"),
                Q(rate("esxi_adapter_written_bytes_total", HOST, ADAPTER), f"written {WHO}"),
                Q(gauge("esxi_adapter_link_speed_bytes_per_second", HOST, ADAPTER, fn="max"), f"link speed {WHO}"),
            ],
            dashed=("^link speed .*",),
        )
    )
    d = d.with_row(row("Paths"))
    path_cmds = path_to_device(rate("esxi_path_commands_total", HOST, ADAPTER), HOST)
    d = d.with_panel(
        timeseries_panel(
            "Share of each LUN's commands per path",
            "Each path's share of its LUN's commands. Round-robin over N active paths gives about 1/N each; "
            "one path at 100% while others on healthy links carry nothing means a fixed or MRU path policy "
            "is funnelling the LUN through one link.",
            "percentunit",
            [
                Q(
                    f"{path_cmds} / on (host, device) group_left () "
                    f"sum by (host, device) ({path_to_device(rate('esxi_path_commands_total', HOST), HOST)})",
                    "{{device}} via {{path}}",
                )
            ],
            maximum=1,
        )
    )
    d = d.with_panel(
        table_panel(
            "Path states",
            "Every path through the selected adapters and its state now. Dead paths mean lost redundancy; "
            "a path stuck in standby on an active/active array wastes a link.",
            ("host", "adapter", "path", "device", "state"),
            [Column("up", f"{sel('esxi_path_state', HOST, ADAPTER)} == 1")],
            w=12,
            h=8,
        )
    )
    d = d.with_row(row("Latency and load per adapter"))
    d = d.with_panel(
        timeseries_panel(
            "Latency per adapter",
            "Command-weighted mean DAVG, KAVG, QAVG and GAVG over all LUNs behind each adapter. One adapter "
            "with much higher DAVG than the others points at its link, switch port or array port.",
            "s",
            [Q(mean_latency("adapter", stem, HOST, ADAPTER), f"{name} {WHO}") for stem, name in LATENCIES.items()],
            line_at=LATENCY_LINE,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "IOPS per adapter",
            "Commands per second per adapter, read and write. Compare adapters: an idle HBA next to a busy "
            "one means paths are not spread.",
            "iops",
            [
                Q(rate("esxi_adapter_reads_total", HOST, ADAPTER), f"read {WHO}"),
                Q(rate("esxi_adapter_writes_total", HOST, ADAPTER), f"write {WHO}"),
            ],
        )
    )
    d = d.with_panel(
        table_panel(
            "Adapters",
            "Identity, link speed and queue depth (AQLEN) of each adapter. A small AQLEN caps the sum of "
            "the LUN queues behind it.",
            ("host", "adapter", "type", "model", "driver"),
            [
                Column("link speed", with_identity(LINK_SPEED), "Bps"),
                Column("AQLEN", with_identity(sel("esxi_adapter_queue_depth", HOST, ADAPTER))),
            ],
            h=6,
        )
    )
    return d
