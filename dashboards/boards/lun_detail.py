"""LUN detail: queue (ACTV, QUED vs DQLEN, DSNRO), latency split, throughput, reservations,
VAAI (ATS and its failures, unmap), which VMs drive the queue (linking to the VMs dashboard), and the LUN's paths and adapters."""

from __future__ import annotations

from .. import variables as v
from ..panels import LATENCY_LINE, LIMITS, MS, Column, Q, row, storage_events_annotation, table_panel, timeseries_panel
from ..promql import (
    HOST,
    LATENCIES,
    LUN,
    RANGE,
    VM_OUTSTANDING,
    VM_OUTSTANDING_SHARE,
    gauge,
    mean_latency,
    path_to_device,
    rate,
    sel,
)
from ..render import new_dashboard

UID = "esxi-lun-detail"
FILE = "lun-detail.json"
STATE_OK = sel("esxi_lun_operational_state", HOST, LUN, 'state="ok"')
MULTIPATH = sel("esxi_lun_multipath_info", HOST, LUN)
LINE_50MS = LATENCY_LINE  # the alerts' critical latency
WHO = "{{host}} {{device}}"
# The VMs dashboard for one VM on this LUN (dashboards/boards/vms.py).
VMS_URL = (
    "/d/esxi-vms/esxi-vms?var-datasource=${datasource}&var-host=${__data.fields.host}"
    "&var-lun=${__data.fields.device}&var-vm=${__data.fields.vm}&${__url_time_range}"
)


def build():
    d = new_dashboard(
        UID,
        "ESXi LUN detail",
        "One LUN (or a few): is it queuing, is the latency from the array (DAVG) or the host "
        "(KAVG), which VMs drive the queue, and which paths carry it.",
        [v.datasource(), v.host(), v.lun()],
    )
    d = d.annotation(storage_events_annotation(HOST, LUN))
    d = d.with_row(row("Queue"))
    d = d.with_panel(
        timeseries_panel(
            "ACTV and QUED against DQLEN and DSNRO",
            "Active commands (ACTV) are capped by the device queue depth (DQLEN, dashed); when several VMs "
            "share the LUN, by DSNRO too, and on a congested datastore by the depth Storage I/O Control allows "
            "the host (SIOC, vSphere). ACTV at the lowest of them with QUED above zero means the queue is full and "
            "commands wait in the VMkernel: raise DQLEN (and DSNRO with it) or spread the VMs; where SIOC cut it, "
            "the datastore is congested (the Storage I/O Control board).",
            "short",
            [
                Q(gauge("esxi_lun_active_commands", HOST, LUN), f"ACTV {WHO}"),
                Q(gauge("esxi_lun_queued_commands", HOST, LUN), f"QUED {WHO}"),
                Q(gauge("esxi_lun_queue_depth", HOST, LUN, fn="max"), f"DQLEN {WHO}"),
                Q(gauge("esxi_lun_dsnro", HOST, LUN, fn="max"), f"DSNRO {WHO}"),
                Q(gauge("esxi_lun_sioc_queue_depth", HOST, LUN, fn="min"), f"SIOC {WHO}"),
            ],
            dashed=("^DQLEN .*", "^DSNRO .*", "^SIOC .*"),
            w=16,
            h=9,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Load (ACTV + QUED) / DQLEN",
            "Outstanding commands relative to the queue depth. Above 1 (red line) commands are queuing in the host.",
            "percentunit",
            [Q(gauge("esxi_lun_load", HOST, LUN), WHO)],
            line_at=((None, "transparent"), (1.0, "red")),
            w=8,
            h=9,
        )
    )
    d = d.with_row(row("Latency (command-weighted mean over each interval)"))
    d = d.with_panel(
        timeseries_panel(
            "DAVG, KAVG, QAVG and GAVG",
            "GAVG (what the guest sees) = DAVG (device: HBA, fabric, array) + KAVG (VMkernel, includes QAVG, "
            f"the time queued). Above the {MS} line: high DAVG means the array or fabric is slow; high "
            "KAVG/QAVG means the host queue is full.",
            "s",
            [Q(mean_latency("lun", stem, HOST, LUN), f"{name} {WHO}") for stem, name in LATENCIES.items()],
            line_at=LINE_50MS,
            w=16,
            h=9,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Read and write latency (GAVG)",
            "Guest latency per read and per write. Writes far slower than reads: the array's write cache is "
            "saturated; reads slow: too few spindles for the random read load.",
            "s",
            [
                Q(mean_latency("lun", "read", HOST, LUN), f"read {WHO}"),
                Q(mean_latency("lun", "write", HOST, LUN), f"write {WHO}"),
            ],
            line_at=LINE_50MS,
            w=8,
            h=9,
        )
    )
    d = d.with_row(row("Throughput"))
    d = d.with_panel(
        timeseries_panel(
            "IOPS, read and write",
            "Commands per second. Flat IOPS while latency climbs: the LUN (or its link) is saturated.",
            "iops",
            [
                Q(rate("esxi_lun_reads_total", HOST, LUN), f"read {WHO}"),
                Q(rate("esxi_lun_writes_total", HOST, LUN), f"write {WHO}"),
            ],
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Throughput, read and write",
            "Bytes per second. Compare with the link speed on the adapters dashboard: a 2 Gb/s FC link carries "
            "about 180-200 MB/s.",
            "Bps",
            [
                Q(rate("esxi_lun_read_bytes_total", HOST, LUN), f"read {WHO}"),
                Q(rate("esxi_lun_written_bytes_total", HOST, LUN), f"written {WHO}"),
            ],
        )
    )
    d = d.with_row(row("Reservations and errors"))
    d = d.with_panel(
        timeseries_panel(
            "Reservations and conflicts",
            "SCSI reservations this host took, and conflicts (another host held the LUN). Conflicts above "
            "zero cost throughput and latency on every host sharing the LUN: move VMFS metadata work "
            "(snapshots, VM creation, growing thin disks) off busy hours.",
            "reqps",
            [
                Q(rate("esxi_lun_reservations_total", HOST, LUN), f"reservations {WHO}"),
                Q(rate("esxi_lun_reservation_conflicts_total", HOST, LUN), f"conflicts {WHO}"),
            ],
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Aborts, resets and failed commands",
            "Any value above zero is bad: aborts and resets mean commands timed out at the array or fabric; "
            "failed commands reached the guest as errors.",
            "reqps",
            [
                Q(rate("esxi_lun_aborts_total", HOST, LUN), f"aborts {WHO}"),
                Q(rate("esxi_lun_resets_total", HOST, LUN), f"resets {WHO}"),
                Q(rate("esxi_lun_failed_commands_total", HOST, LUN), f"failed {WHO}"),
            ],
        )
    )
    d = d.with_row(row("VAAI: ATS locking and unmap"))
    d = d.with_panel(
        timeseries_panel(
            "ATS commands and failures",
            "ATS (atomic test and set) commands per second that succeed and that fail (esxtop -a, VAAISTATS). "
            "On VMFS5 and later ATS takes the place of SCSI reservations for VMFS locks and heartbeats, so "
            "failed ATS are today's reservation conflicts: a failure rate held for 10 minutes raises "
            "EsxiLunAtsFailures, and a heartbeat miscompare makes the host lose access to the volume.",
            "reqps",
            [
                Q(sel("host_device:esxi_lun_vaai_ats_commands:rate", HOST, LUN), f"ATS {WHO}"),
                Q(sel("host_device:esxi_lun_vaai_ats_failures:rate", HOST, LUN), f"ATS failed {WHO}"),
            ],
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Unmap commands",
            "UNMAP commands per second (esxtop DELETE): VMFS6 reclaims the blocks of deleted and moved VMs "
            "in the background; a burst is extra work for the array while it lasts.",
            "reqps",
            [Q(sel("host_device:esxi_lun_vaai_unmap_commands:rate", HOST, LUN), f"unmaps {WHO}")],
            w=6,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Unmapped bytes",
            "Bytes per second the UNMAP commands free on the array (esxtop MBDEL/s).",
            "Bps",
            [Q(sel("host_device:esxi_lun_vaai_unmap_bytes:rate", HOST, LUN), f"freed {WHO}")],
            w=6,
        )
    )
    d = d.with_row(row("Who drives the queue"))
    d = d.with_panel(
        timeseries_panel(
            "Outstanding commands per VM",
            "Active plus queued commands each VM keeps on the LUN, stacked: the total is the LUN's ACTV + "
            "QUED. From esxtop's worlds where this host's esxtop reports them, else from the VMs' virtual "
            "disks (vSphere outstanding reads + writes), as the capacity rules count them; vm empty is "
            "the host's own worlds. One VM dominating the stack is the one to move or throttle.",
            "short",
            [Q(sel(VM_OUTSTANDING, HOST, LUN), "{{vm}} {{host}} {{device}}")],
            stack=True,
            w=16,
            h=9,
        )
    )
    d = d.with_panel(
        table_panel(
            "VMs on the LUN",
            "Mean outstanding (active + queued) commands per VM over the time range and its share of the "
            "LUN's (red: one VM owns the queue, the noisy-neighbour line); the paper's a is their mean "
            "(see the capacity dashboard). Queued is esxtop's (worlds). Click a VM for the VMs dashboard.",
            ("host", "device", "vm"),
            [
                Column("outstanding", gauge(VM_OUTSTANDING, HOST, LUN, window=RANGE)),
                Column(
                    "share",
                    gauge(VM_OUTSTANDING_SHARE, HOST, LUN, window=RANGE),
                    "percentunit",
                    ((None, "green"), (LIMITS.vm_noisy_neighbour_share, "red")),
                ),
                Column(
                    "queued",
                    f"sum by (host, device, vm) ({gauge('esxi_lun_world_queued_commands', HOST, LUN, window=RANGE)})",
                ),
            ],
            sort_by="outstanding",
            links={"vm": ("VMs on this LUN", VMS_URL)},
            w=8,
            h=9,
        )
    )
    d = d.with_panel(
        table_panel(
            "Device configuration",
            "What the host's esxcli and vSphere API report for the device, next to the live queue: configured "
            "maximum queue depth against DQLEN now (lower: adaptive queue depth or SIOC at work), the depth SIOC "
            "allows the host (vSphere), DSNRO (should equal "
            "DQLEN when VMs share the LUN), adaptive queue depth's sample size (0: off) and threshold, and the "
            "round robin IOPS limit.",
            ("host", "device"),
            [
                Column("DQLEN now", sel("esxi_lun_queue_depth", HOST, LUN)),
                Column("max queue depth", sel("esxi_lun_configured_queue_depth", HOST, LUN)),
                Column("SIOC allows", sel("esxi_lun_sioc_queue_depth", HOST, LUN)),
                Column("DSNRO", sel("esxi_lun_dsnro", HOST, LUN)),
                Column("qfull sample size", sel("esxi_lun_queue_full_sample_size", HOST, LUN)),
                Column("qfull threshold", sel("esxi_lun_queue_full_threshold", HOST, LUN)),
                Column("RR IOPS limit", sel("esxi_lun_psp_iops_limit", HOST, LUN)),
            ],
            w=16,
            h=6,
        )
    )
    d = d.with_panel(
        table_panel(
            "Multipathing and state",
            "Multipath plugin (NMP, or HPP for NVMe, whose queue may bypass the kernel: QUED and KAVG near 0 by "
            "design), array type, path selection policy and its limit type, and the device's state.",
            ("host", "device", "plugin", "satp", "psp", "psp_limit_type"),
            [Column("ok", STATE_OK + " * on (host, device) group_left (plugin, satp, psp, psp_limit_type) " + MULTIPATH)],
            w=8,
            h=6,
        )
    )
    d = d.with_row(row("Paths and adapters"))
    d = d.with_panel(
        timeseries_panel(
            "IOPS per path",
            "Commands per second on each path to the LUN. With round-robin all active paths should carry "
            "similar shares; one path carrying everything while others idle is a multipathing setting.",
            "iops",
            [Q(path_to_device(rate("esxi_path_commands_total", HOST), HOST, LUN), "{{path}} ({{adapter}})")],
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Device latency (DAVG) per path",
            "Mean device latency on each path. One path much slower than the others points at that HBA, its "
            "cable or switch port, or the array port it leads to.",
            "s",
            [Q(path_to_device(mean_latency("path", "device", HOST), HOST, LUN), "{{path}} ({{adapter}})")],
            line_at=LINE_50MS,
            w=8,
        )
    )
    d = d.with_panel(
        table_panel(
            "Path states",
            "Each path of the LUN, its adapter and its state now. A dead path means lost redundancy; "
            "standby paths carry nothing by design.",
            ("host", "device", "path", "adapter", "state"),
            [Column("up", f"{sel('esxi_path_state', HOST, LUN)} == 1")],
            w=8,
            h=8,
        )
    )
    return d
