"""Storage I/O Control: per datastore, its size-normalized latency against its congestion
threshold, the queue depth SIOC allows each host beside the LUN's DQLEN, and how much of the time
SIOC throttles. vSphere only (the hosts' SIOC counters and Datastore.iormConfiguration); the lines
and colours are the alerts' (thresholds.yaml), the series their recording rules."""

from __future__ import annotations

from exporter.configuration import thresholds

from .. import variables as v
from ..panels import Column, Q, row, stat_panel, table_panel, timeseries_panel
from ..promql import HOST, gauge, sel
from ..render import new_dashboard

UID = "esxi-sioc"
FILE = "sioc.json"
DATASTORE = 'datastore=~"$datastore"'
_VALUES = thresholds.load()["values"]
ACTIVE = float(_VALUES["sioc_active_ratio"]["value"])
DEFAULT_THRESHOLD = float(_VALUES["sioc_congestion_threshold_seconds"]["value"])
BAD_COUNT_STEPS = ((None, "green"), (1, "red"))
ACTIVE_STEPS = ((None, "green"), (ACTIVE, "orange"))
ON_STEPS = ((None, "orange"), (1, "green"))  # 1: SIOC on
# The alerts' recording rules (alerts/rules.src.yml, group esxi-storage.sioc).
ACTIVE_RATIO = "datastore:esxi_datastore_sioc_active:ratio"
NORMALIZED = "datastore:esxi_datastore_sioc_normalized_latency_seconds:max"
THRESHOLD = "datastore:esxi_datastore_sioc_threshold_seconds:max"
CUT = "host_datastore:esxi_datastore_sioc_queue_depth:cut"
DQLEN = "host_datastore:esxi_datastore_queue_depth:max"


def per_datastore(expr: str) -> str:
    return f"max by (datastore) ({expr})"


def build():
    d = new_dashboard(
        UID,
        "ESXi Storage I/O Control",
        "Storage I/O Control per datastore (vSphere): the size-normalized latency SIOC judges against the "
        "congestion threshold, the queue depth it allows each host, and how much of the time it throttles.",
        [v.datasource(), v.host(), v.sioc_datastore()],
    )
    d = d.with_row(row("At a glance"))
    for panel in (
        stat_panel(
            "Datastores SIOC throttles",
            f"Datastores where SIOC throttled more than {ACTIVE:.0%} of the time (EsxiDatastoreSiocThrottling "
            "once it lasts): their latency is above the threshold and shares decide who waits.",
            "short",
            Q(f"count({sel(ACTIVE_RATIO, DATASTORE)} > {ACTIVE:g}) or vector(0)", instant=True),
            thresholds=BAD_COUNT_STEPS,
        ),
        stat_panel(
            "Congested with SIOC off",
            "Datastores above their congestion threshold with Storage I/O Control off "
            "(EsxiDatastoreCongestedSiocOff once it lasts): every host keeps its whole queue on the array.",
            "short",
            Q(
                f"count(({sel(NORMALIZED, DATASTORE)} > on (datastore) {THRESHOLD}) and on (datastore) "
                f"({per_datastore(sel('esxi_datastore_sioc_enabled', HOST, DATASTORE))} == 0)) or vector(0)",
                instant=True,
            ),
            thresholds=BAD_COUNT_STEPS,
        ),
        stat_panel(
            "Host queues SIOC cut",
            "Host and datastore pairs where the queue depth SIOC allows is below the LUN's DQLEN: their VMs "
            "queue in the VMkernel while the device queue looks deep enough.",
            "short",
            Q(f"count({sel(CUT, HOST, DATASTORE)}) or vector(0)", instant=True),
        ),
        stat_panel(
            "Datastores without iormConfiguration",
            "Datastores whose server sent no iormConfiguration (a fault, an empty answer, or vSphere 8.0 U3 "
            "and later where it is deprecated): their SIOC settings are unknown, not off.",
            "short",
            Q(f"count({per_datastore(sel('esxi_datastore_sioc_config_reported', HOST))} == 0) or vector(0)", instant=True),
        ),
    ):
        d = d.with_panel(panel)
    d = d.with_row(row("Datastores"))
    d = d.with_panel(
        table_panel(
            "SIOC per datastore",
            "One row per datastore: SIOC on (1) or off (0), statistics collected, its congestion threshold "
            f"(SIOC's default {DEFAULT_THRESHOLD * 1000:g} ms where none is reported), the size-normalized "
            "latency now (the highest any host reports), the share of time SIOC throttles, and the hosts whose "
            "queue it cut.",
            ("datastore",),
            [
                Column("SIOC on", per_datastore(sel("esxi_datastore_sioc_enabled", HOST, DATASTORE)), thresholds=ON_STEPS),
                Column("statistics", per_datastore(sel("esxi_datastore_sioc_stats_enabled", HOST, DATASTORE))),
                Column("threshold", sel(THRESHOLD, DATASTORE), "s"),
                Column("normalized latency", sel(NORMALIZED, DATASTORE), "s"),
                Column("throttling", sel(ACTIVE_RATIO, DATASTORE), "percentunit", ACTIVE_STEPS),
                Column("hosts cut", f"count by (datastore) ({sel(CUT, HOST, DATASTORE)})"),
            ],
            sort_by="normalized latency",
            h=7,
        )
    )
    d = d.with_panel(
        table_panel(
            "Each host's queue on each datastore",
            "The queue depth SIOC allows the host (datastoreMaxQueueDepth) beside the LUN's DQLEN, the "
            "latency its VMs observe, and its IOPS and outstanding I/O as SIOC counts them.",
            ("host", "datastore"),
            [
                Column("SIOC depth", sel("esxi_datastore_sioc_queue_depth", HOST, DATASTORE)),
                Column("DQLEN", sel(DQLEN, HOST, DATASTORE)),
                Column("VM latency", sel("esxi_datastore_vm_observed_latency_seconds", HOST, DATASTORE), "s"),
                Column("IOPS", sel("esxi_datastore_sioc_iops", HOST, DATASTORE)),
                Column(
                    "outstanding",
                    f"{sel('esxi_datastore_sioc_outstanding_reads', HOST, DATASTORE)} + "
                    f"{sel('esxi_datastore_sioc_outstanding_writes', HOST, DATASTORE)}",
                ),
            ],
            sort_by="SIOC depth",
            h=8,
        )
    )
    d = d.with_row(row("Over time"))
    d = d.with_panel(
        timeseries_panel(
            "Normalized latency against the threshold",
            "Each datastore's size-normalized latency (the highest over its hosts) and its congestion threshold "
            "(dashed). Above the line SIOC cuts the hosts' queues by shares, if it is on.",
            "s",
            [
                Q(
                    per_datastore(gauge("esxi_datastore_sioc_normalized_latency_seconds", HOST, DATASTORE, fn="max")),
                    "{{datastore}}",
                ),
                Q(sel(THRESHOLD, DATASTORE), "threshold {{datastore}}"),
            ],
            dashed=("threshold .*",),
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Queue depth SIOC allows each host",
            "datastoreMaxQueueDepth per host and datastore, and the LUN's DQLEN (dashed): below it SIOC has cut "
            "the host's queue, and the queue rules judge the lower of the two.",
            "short",
            [
                Q(gauge("esxi_datastore_sioc_queue_depth", HOST, DATASTORE, fn="min"), "{{host}} {{datastore}}"),
                Q(sel(DQLEN, HOST, DATASTORE), "DQLEN {{host}} {{datastore}}"),
            ],
            dashed=("DQLEN .*",),
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "SIOC active time",
            f"The share of each interval SIOC throttled the datastore, per host; the alert line at {ACTIVE:.0%}.",
            "percentunit",
            [Q(gauge("esxi_datastore_sioc_active_ratio", HOST, DATASTORE, fn="max"), "{{host}} {{datastore}}")],
            line_at=((None, "transparent"), (ACTIVE, "orange")),
            maximum=1,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Latency the VMs observe",
            "datastoreVMObservedLatency per host and datastore: what SIOC's cut costs (or saves) the VMs.",
            "s",
            [Q(gauge("esxi_datastore_vm_observed_latency_seconds", HOST, DATASTORE, fn="max"), "{{host}} {{datastore}}")],
        )
    )
    return d
