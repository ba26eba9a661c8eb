"""VMs: which VM loads a LUN or a datastore and what latency it sees, from the virtual disks
(vSphere virtualDisk.*, esxtop's Virtual Disk group) and the capacity rules' per-VM outstanding
commands (esxtop worlds or the disks' outstanding I/O); one VM's disks with what backs them."""

from __future__ import annotations

from .. import variables as v
from ..panels import LATENCY_LINE, LATENCY_STEPS, LIMITS, MS, Column, Q, row, table_panel, timeseries_panel
from ..promql import (
    DISK_OUTSTANDING,
    HOST,
    LUN,
    RANGE,
    RATE,
    VM_OUTSTANDING,
    VM_OUTSTANDING_SHARE,
    gauge,
    one_per,
    per_vm_on,
    sel,
    vm_iops,
    vm_latency_seconds,
    vm_rate,
    with_backing,
)
from ..render import new_dashboard
from .overview import LUN_URL

UID = "esxi-vms"
FILE = "vms.json"
VM = 'vm=~"$vm"'
DATASTORE = 'datastore=~"$datastore"'
NAMED = 'vm!=""'  # esxtop's system worlds have no VM
TOP = 10
VM_URL = "/d/esxi-vms/esxi-vms?var-datasource=${datasource}&var-host=${__data.fields.host}&var-vm=${__data.fields.vm}&${__url_time_range}"
SHARE = LIMITS.vm_noisy_neighbour_share
SHARE_STEPS = ((None, "green"), (SHARE, "red"))
LIMIT_STEPS = ((None, "green"), (LIMITS.vm_iops_limit_ratio, "red"))
EMULATED = "lsilogic|lsilogic-sas|buslogic|ahci|ide"


def disk_latency_total(*matchers: str, window: str = RATE) -> str:
    """Seconds of latency per second over a disk's reads and writes (the mean's numerator)."""
    return (
        f"{vm_rate('read_latency_seconds_total', *matchers, window=window)} + "
        f"{vm_rate('write_latency_seconds_total', *matchers, window=window)}"
    )


def latency_on(place: str, *info_matchers: str, window: str = RATE) -> str:
    """Each VM's mean latency per I/O over its disks on each LUN (place device) or datastore."""
    num = per_vm_on(place, disk_latency_total(HOST, VM, window=window), HOST, VM, *info_matchers)
    den = per_vm_on(place, vm_iops(HOST, VM, window=window), HOST, VM, *info_matchers)
    return f"{num} / {den}"


def outstanding_on_datastore(window: str) -> str:
    """Each VM's outstanding I/O over its disks on each datastore: the disks' own (vSphere API, NFS
    included), else the capacity rules' per-VM count on the datastore's LUNs (esxtop worlds)."""
    disks = per_vm_on("datastore", gauge(DISK_OUTSTANDING, HOST, VM, window=window), HOST, VM, DATASTORE)
    lun_datastore = one_per("host, device, datastore", sel("esxi_lun_info", HOST, DATASTORE, 'datastore!=""'))
    worlds = (
        f"sum by (host, datastore, vm) ({lun_datastore} * on (host, device) group_right (datastore) "
        f"sum by (host, device, vm) ({gauge(VM_OUTSTANDING, HOST, VM, NAMED, window=window)}))"
    )
    return f"({disks}) or ({worlds} unless on (host, datastore, vm) ({disks}))"


def build():
    d = new_dashboard(
        UID,
        "ESXi VMs (virtual disks)",
        "Which VM loads a LUN or a datastore, what latency each VM sees, and one VM's disks with what "
        "backs them (datastore, LUN, RDM, controller, provisioning, IOPS limit).",
        [v.datasource(), v.host(), v.lun(), v.datastore(), v.vm()],
    )
    d = d.with_row(row("Top VMs"))
    d = d.with_panel(
        timeseries_panel(
            f"Top {TOP} VMs by latency",
            f"Mean latency per I/O each VM sees over all its disks, reads and writes weighted by their counts. "
            f"Above the {MS} line (the paper's overload, EsxiVmDiskLatencyHigh per disk) the VM's users feel it: "
            "check the LUN's latency and queue, the VM's IOPS limit and its controller below.",
            "s",
            [Q(f"topk({TOP}, {vm_latency_seconds(HOST, VM, obj='vm')})", "{{vm}} ({{host}})")],
            line_at=LATENCY_LINE,
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            f"Top {TOP} VMs by IOPS",
            "Reads plus writes per second each VM issues over all its disks. A VM far above the others on a "
            "shared LUN is the first suspect when the LUN's latency rises.",
            "iops",
            [Q(f"topk({TOP}, {vm_iops(HOST, VM, obj='vm')})", "{{vm}} ({{host}})")],
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            f"Top {TOP} VMs by outstanding I/O",
            "Commands each VM keeps outstanding over all its LUNs (esxtop worlds' ACTV + QUED, or the virtual "
            "disks' outstanding reads + writes). The paper's a is this per LUN; a VM holding most of a "
            "queue-deep LUN's commands starves its neighbours (EsxiVmNoisyNeighbour).",
            "short",
            [Q(f"topk({TOP}, sum by (host, vm) ({sel(VM_OUTSTANDING, HOST, VM, NAMED)}))", "{{vm}} ({{host}})")],
            w=8,
        )
    )

    d = d.with_row(row("Per LUN"))
    d = d.with_panel(
        table_panel(
            "VMs on each LUN",
            "Every VM on each LUN over the time range: its mean outstanding commands and share of the LUN's "
            f"(red above {SHARE:.0%}: one VM owns the queue), and over its disks on the LUN its mean latency "
            "and IOPS (vSphere API: the disks' backing names the LUN). Click a LUN for its detail, a VM for "
            "its disks.",
            ("host", "device", "vm"),
            [
                Column("outstanding", gauge(VM_OUTSTANDING, HOST, LUN, VM, window=RANGE)),
                Column("share of LUN", gauge(VM_OUTSTANDING_SHARE, HOST, LUN, VM, window=RANGE), "percentunit", SHARE_STEPS),
                Column("latency", latency_on("device", LUN, window=RANGE), "s", LATENCY_STEPS),
                Column("IOPS", per_vm_on("device", vm_iops(HOST, VM, window=RANGE), HOST, VM, LUN), "iops"),
            ],
            sort_by="outstanding",
            links={"device": ("LUN detail", LUN_URL), "vm": ("This VM's disks", VM_URL)},
            w=24,
            h=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Outstanding I/O per VM on each LUN",
            "Commands each VM keeps outstanding on each LUN, stacked per LUN: the stack is what the VMs ask "
            "of the LUN's queue (DQLEN). A stack above DQLEN queues in the host; one VM taking most of it "
            "is the one to move or limit.",
            "short",
            [Q(sel(VM_OUTSTANDING, HOST, LUN, VM), "{{vm}} {{host}} {{device}}")],
            stack=True,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Latency per VM on each LUN",
            f"Mean latency per I/O of each VM's disks on each LUN. Every VM high: the LUN (see its DAVG and "
            f"KAVG); one VM high: its own limit, controller or guest queue. The {MS} line is the alerts'.",
            "s",
            [Q(latency_on("device", LUN), "{{vm}} {{host}} {{device}}")],
            line_at=LATENCY_LINE,
        )
    )

    d = d.with_row(row("Per datastore"))
    d = d.with_panel(
        table_panel(
            "VMs on each datastore",
            "Every VM with disks on each datastore over the time range (NFS, vSAN and vVol datastores "
            "included, which have no LUN): mean latency, IOPS and outstanding I/O over its disks there. "
            "Click a VM for its disks.",
            ("host", "datastore", "vm"),
            [
                Column("latency", latency_on("datastore", DATASTORE, window=RANGE), "s", LATENCY_STEPS),
                Column("IOPS", per_vm_on("datastore", vm_iops(HOST, VM, window=RANGE), HOST, VM, DATASTORE), "iops"),
                Column("outstanding", outstanding_on_datastore(window=RANGE)),
            ],
            sort_by="latency",
            links={"vm": ("This VM's disks", VM_URL)},
            w=12,
            h=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "IOPS per VM on each datastore",
            "Reads plus writes per second of each VM's disks on each datastore: who loads a datastore, whatever it is built on.",
            "iops",
            [Q(per_vm_on("datastore", vm_iops(HOST, VM), HOST, VM, DATASTORE), "{{vm}} {{datastore}}")],
            w=12,
        )
    )

    d = d.with_row(row("One VM's disks ($vm)"))
    d = d.with_panel(
        table_panel(
            "Disks of the selected VMs",
            "Each virtual disk (one row per LUN under it) with its datastore, LUN, backing (flat, RDM and its "
            "compatibility mode), controller and provisioning, and over the time range its mean latency, "
            "IOPS, outstanding I/O and IOPS limit (red: IOPS at the limit, EsxiVmDiskIopsLimited). Heavy "
            f"I/O on an emulated controller ({EMULATED.replace('|', ', ')}) is worth a PVSCSI one above "
            f"{LIMITS.vm_emulated_controller_iops:g} IOPS.",
            ("host", "vm", "disk", "datastore", "device", "backing", "compatibility_mode", "controller", "provisioning"),
            [
                Column("latency", with_backing(vm_latency_seconds(HOST, VM, window=RANGE), HOST, VM), "s", LATENCY_STEPS),
                Column("IOPS", with_backing(vm_iops(HOST, VM, window=RANGE), HOST, VM), "iops"),
                Column("outstanding", with_backing(gauge(DISK_OUTSTANDING, HOST, VM, window=RANGE), HOST, VM)),
                Column(
                    "IOPS limit", with_backing(f"max by (host, vm, disk) ({sel('esxi_vm_disk_iops_limit', HOST, VM)})", HOST, VM)
                ),
                Column(
                    "IOPS / limit",
                    with_backing(
                        f"({vm_iops(HOST, VM, window=RANGE)}) / on (host, vm, disk) "
                        f"max by (host, vm, disk) ({sel('esxi_vm_disk_iops_limit', HOST, VM)})",
                        HOST,
                        VM,
                    ),
                    "percentunit",
                    LIMIT_STEPS,
                ),
                Column("shares", with_backing(f"max by (host, vm, disk) ({sel('esxi_vm_disk_shares', HOST, VM)})", HOST, VM)),
            ],
            sort_by="latency",
            links={"device": ("LUN detail", LUN_URL)},
            w=24,
            h=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Read and write latency per disk",
            f"Mean latency per read and per write of each disk of the selected VMs, with the {MS} line. "
            "Writes far slower than reads: the array's write cache; both slow: the LUN or datastore.",
            "s",
            [
                Q(
                    f"{vm_rate('read_latency_seconds_total', HOST, VM)} / {vm_rate('reads_total', HOST, VM)}",
                    "read {{vm}} {{disk}}",
                ),
                Q(
                    f"{vm_rate('write_latency_seconds_total', HOST, VM)} / {vm_rate('writes_total', HOST, VM)}",
                    "write {{vm}} {{disk}}",
                ),
            ],
            line_at=LATENCY_LINE,
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "IOPS per disk against its limit",
            "Reads and writes per second of each disk, and its IOPS limit (dashed) where it has one. A disk "
            "flat at its limit is held back by its own configuration, not by the storage.",
            "iops",
            [
                Q(vm_rate("reads_total", HOST, VM), "read {{vm}} {{disk}}"),
                Q(vm_rate("writes_total", HOST, VM), "write {{vm}} {{disk}}"),
                Q(gauge("esxi_vm_disk_iops_limit", HOST, VM, fn="max"), "limit {{vm}} {{disk}}"),
            ],
            dashed=("^limit .*",),
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "Outstanding reads and writes per disk",
            "I/Os each disk has outstanding (vSphere readOIO and writeOIO): the disk's part of its LUN's "
            "queue. Their sum over a VM's disks on a LUN is the VM's a in the capacity table.",
            "short",
            [
                Q(f"max by (host, vm, disk) ({gauge('esxi_vm_disk_outstanding_reads', HOST, VM)})", "reads {{vm}} {{disk}}"),
                Q(f"max by (host, vm, disk) ({gauge('esxi_vm_disk_outstanding_writes', HOST, VM)})", "writes {{vm}} {{disk}}"),
            ],
            w=8,
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "IOPS per VM and controller type",
            "I/Os per second each VM sends through each type of disk controller. Above the red line "
            f"({LIMITS.vm_emulated_controller_iops:g}) on an emulated one ({EMULATED.replace('|', ', ')}) VMware's "
            "paravirtual PVSCSI controller costs clearly less host CPU per I/O (EsxiVmEmulatedControllerBusy); "
            "pvscsi and nvme are paravirtual already.",
            "iops",
            [Q(sel("host_vm_controller:esxi_vm_disk_iops:rate", HOST, VM), "{{vm}} {{controller}}")],
            line_at=((None, "transparent"), (LIMITS.vm_emulated_controller_iops, "red")),
            w=24,
        )
    )
    return d
