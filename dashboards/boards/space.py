"""Datastore space and VM snapshots: per datastore (once, however many hosts mount it) used,
provisioned, snapshots and days to full at the shown range's rate; per VM its snapshots' count, age
and size on disk, and whether it needs consolidation. Lines and colours come from the thresholds
file (vCenter's 75% and 85%, the overcommit factor, 72 hours)."""

from __future__ import annotations

from .. import variables as v
from ..panels import LIMITS, Column, Q, row, table_panel, timeseries_panel
from ..promql import RANGE
from ..render import new_dashboard

UID = "esxi-space"
FILE = "space-and-snapshots.json"
WARN, BAD = LIMITS.datastore_space_used_warning_ratio, LIMITS.datastore_space_used_critical_ratio
OVERCOMMIT = LIMITS.datastore_overcommit_ratio
OLD = LIMITS.snapshot_max_age_seconds
USED_STEPS = ((None, "green"), (WARN, "orange"), (BAD, "red"))
USED_LINE = ((None, "transparent"), (WARN, "orange"), (BAD, "red"))
PROVISIONED_STEPS = ((None, "green"), (OVERCOMMIT, "orange"))
AGE_STEPS = ((None, "green"), (OLD, "red"))
KEYS = ("datastore", "type", "url")
BY = "max by (datastore, type, url)"
USED = f"{BY} (datastore:esxi_datastore_space_used:ratio)"
PROVISIONED = f"{BY} (datastore:esxi_datastore_provisioned:ratio)"
# Days until full at the rate free space went over the shown range; only where it goes down.
DAYS_TO_FULL = f"{BY} (esxi_datastore_free_bytes / (-deriv(esxi_datastore_free_bytes[{RANGE}]) > 0)) / 86400"
SNAPSHOTS = f"{BY} (esxi_datastore_snapshot_bytes)"
VM = "max by (host, vm)"


def build():
    d = new_dashboard(
        UID,
        "ESXi datastore space and snapshots",
        "Is a datastore running out of space, and which snapshots fill it: used and provisioned space per "
        "datastore (vCenter's figures, once per datastore), snapshot bytes, days to full at the shown range's rate, "
        "and each VM's snapshots.",
        [v.datasource()],
    )
    d = d.with_row(row("Datastores"))
    d = d.with_panel(
        table_panel(
            "Datastores",
            f"Each datastore now: space used ({WARN:.0%} and {BAD:.0%} lines, vCenter's alarm; "
            f"EsxiDatastoreSpaceUsedHigh/Critical), provisioned over capacity (over {OVERCOMMIT:.0%}: "
            "EsxiDatastoreOvercommitted), free, the followed VMs' snapshot bytes on it, and days to full at the rate "
            "free space went over the shown range (absent when it does not go down). A datastore with a capacity "
            "of 0 or inaccessible has no ratio: see accessible.",
            KEYS,
            [
                Column("used", USED, "percentunit", USED_STEPS),
                Column("provisioned", PROVISIONED, "percentunit", PROVISIONED_STEPS),
                Column("free", f"{BY} (esxi_datastore_free_bytes)", "bytes"),
                Column("snapshots", SNAPSHOTS, "bytes"),
                Column("days to full", DAYS_TO_FULL, "d"),
                Column("accessible", f"{BY} (esxi_datastore_accessible)", "short", ((None, "red"), (1, "green"))),
            ],
            h=10,
            sort_by="used",
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Space used",
            "Used over capacity per datastore (1 - free / capacity, capacity above 0).",
            "percentunit",
            [Q(USED, "{{datastore}}")],
            maximum=1,
            line_at=USED_LINE,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Snapshot bytes per datastore",
            "Size on disk of the followed VMs' snapshot files and delta disks on each datastore: a line that "
            "climbs is a snapshot's delta disk growing (EsxiDatastoreFillingUp names the datastore).",
            "bytes",
            [Q(f"{BY} (last_over_time(esxi_datastore_snapshot_bytes[$__rate_interval]))", "{{datastore}}")],
        )
    )
    d = d.with_row(row("VM snapshots"))
    d = d.with_panel(
        table_panel(
            "VM snapshots",
            f"Each VM with snapshots: how many, the oldest's age (over {OLD / 3600:.0f} hours: EsxiVmSnapshotOld), "
            "their size on disk, and whether vSphere says its disks need consolidation "
            "(EsxiVmConsolidationNeeded; shown for every followed VM).",
            ("host", "vm"),
            [
                Column("snapshots", f"{VM} (esxi_vm_snapshots)", "short"),
                Column("oldest", f"time() - {VM} (esxi_vm_snapshot_oldest_timestamp_seconds)", "s", AGE_STEPS),
                Column("size", f"{VM} (esxi_vm_snapshot_bytes)", "bytes"),
                Column("consolidation", f"{VM} (esxi_vm_consolidation_needed)", "short", ((None, "green"), (1, "red"))),
            ],
            h=10,
            sort_by="size",
        )
    )
    return d
