"""Capacity: the paper's Table 2 live. a = average active SCSI commands per VM on the LUN,
d = the host's LUN queue depth, n = what the array sustains per LUN (from the vendor, a variable),
m = d/a VMs per host, n/a VMs over all hosts, against the VMs actually on the LUN."""

from __future__ import annotations

from .. import variables as v
from ..panels import Column, Q, row, table_panel, text_panel, timeseries_panel
from ..promql import HOST, LUN, RANGE, RATE, gauge, sel, vm_outstanding
from ..render import new_dashboard

UID = "esxi-capacity"
FILE = "capacity.json"


def a_per_vm(by: str, window: str) -> str:
    """a: mean outstanding (active + queued) commands per VM on the LUN. Queued counts because it
    is demand the queue could not take yet; ACTV alone stops at DQLEN. Per esxtop world where the
    host's esxtop reports worlds on the LUN, else per VM from its virtual disks (vSphere readOIO +
    writeOIO), as the capacity rules count them."""
    return f"avg by ({by}) ({vm_outstanding(HOST, LUN, window=window)})"


def d_queue_depth(window: str) -> str:
    """d: DQLEN, or the lower depth Storage I/O Control allows the host on the LUN's datastore (as
    the rules' host_device:esxi_lun_queue_depth:effective)."""
    dqlen = f"max by (host, device) ({gauge('esxi_lun_queue_depth', HOST, LUN, fn='last', window=window)})"
    sioc = f"max by (host, device) ({gauge('esxi_lun_sioc_queue_depth', HOST, LUN, fn='last', window=window)})"
    return f"({sioc} < {dqlen} or {dqlen})"


def vms_on_lun(by: str, window: str) -> str:
    """VMs (esxtop worlds, or VMs with virtual disks on the LUN) with a sample during the window."""
    return f"count by ({by}) ({vm_outstanding(HOST, LUN, window=window)})"


TABLE2 = """\
The paper's Table 2 (Scalable Storage Performance, ESX 3.5), computed from live data:

| symbol | meaning | here |
|---|---|---|
| **a** | average active SCSI commands per VM to the shared LUN | mean of each world's ACTV + QUED on the LUN (esxtop), or of each VM's outstanding reads + writes over its virtual disks on the LUN (vSphere API, where the host's esxtop reports no world on it) |
| **d** | LUN queue depth on each host | DQLEN (`esxi_lun_queue_depth`), or where Storage I/O Control cut it the depth it allows (`esxi_lun_sioc_queue_depth`) |
| **n** | maximum outstanding I/Os the array sustains per LUN (ask the vendor) | the variable **n** above |
| **m = d/a** | maximum VMs per host on the shared LUN | |
| **n/a** | maximum VMs on the shared LUN over all hosts | |

VMs beyond **m** on one host make commands queue in its VMkernel (QUED, KAVG); VMs beyond **n/a** over all
hosts overload the array (DAVG). The sum of DQLEN over the hosts sharing a LUN should not exceed **n**."""


def build():
    d = new_dashboard(
        UID,
        "ESXi capacity (VMs per LUN)",
        "How many more VMs fit on each LUN: the paper's Table 2 from live data.",
        [
            v.datasource(),
            v.host(),
            v.lun(),
            v.textbox(
                "n",
                "n (array max outstanding per LUN)",
                "256",
                "Outstanding I/Os the array sustains per LUN, from the storage vendor",
            ),
        ],
    )
    d = d.with_panel(text_panel("How to read this dashboard", TABLE2, h=9))
    d = d.with_row(row("Per host and LUN (over the selected time range)"))
    d = d.with_panel(
        table_panel(
            "m = d/a: VMs per host on each LUN",
            "d, a and m = d/a per host and LUN, against the VMs the host actually runs on the LUN. More VMs "
            "than m (red headroom) means this host's queue for the LUN overflows: raise d or move VMs. "
            "DSNRO and the configured maximum queue depth are the device's settings (esxcli).",
            ("host", "device"),
            [
                Column("d (DQLEN or SIOC's)", d_queue_depth(RANGE)),
                Column("a (per VM)", a_per_vm("host, device", RANGE)),
                Column("m = d/a", f"{d_queue_depth(RANGE)} / {a_per_vm('host, device', RANGE)}"),
                Column("VMs on LUN", vms_on_lun("host, device", RANGE)),
                Column(
                    "headroom (VMs)",
                    f"floor({d_queue_depth(RANGE)} / {a_per_vm('host, device', RANGE)}) - {vms_on_lun('host, device', RANGE)}",
                    "short",
                    ((None, "red"), (0, "yellow"), (1, "green")),
                ),
                # The settings d depends on (esxcli): DSNRO caps d when VMs share the LUN; DQLEN under
                # the configured maximum means adaptive queue depth lowered it.
                Column("DSNRO", f"max by (host, device) ({sel('esxi_lun_dsnro', HOST, LUN)})"),
                Column("max queue depth", f"max by (host, device) ({sel('esxi_lun_configured_queue_depth', HOST, LUN)})"),
            ],
            sort_by="headroom (VMs)",
            w=24,
            h=7,
        )
    )
    d = d.with_row(row("Per LUN over all hosts sharing it"))
    d = d.with_panel(
        table_panel(
            "n/a: VMs on each LUN over all hosts",
            "n/a against the VMs on the LUN over all selected hosts, and the sum of the hosts' queue depths "
            "against n. Negative headroom: the array is asked for more than it sustains and DAVG grows.",
            ("device",),
            [
                Column("hosts", f"count by (device) ({d_queue_depth(RANGE)})"),
                Column("a (per VM)", a_per_vm("device", RANGE)),
                Column("n/a", f"$n / {a_per_vm('device', RANGE)}"),
                Column("VMs on LUN", vms_on_lun("device", RANGE)),
                Column(
                    "headroom (VMs)",
                    f"floor($n / {a_per_vm('device', RANGE)}) - {vms_on_lun('device', RANGE)}",
                    "short",
                    ((None, "red"), (0, "yellow"), (1, "green")),
                ),
                Column("sum of DQLEN", f"sum by (device) ({d_queue_depth(RANGE)})", "short"),
                Column(
                    "n - sum of DQLEN", f"$n - sum by (device) ({d_queue_depth(RANGE)})", "short", ((None, "red"), (0, "green"))
                ),
            ],
            sort_by="headroom (VMs)",
            w=24,
            h=7,
        )
    )
    d = d.with_row(row("Over time"))
    d = d.with_panel(
        timeseries_panel(
            "m = d/a against VMs on the LUN (per host)",
            "When the VM count (solid) rises above m (dashed), this host's queue for the LUN is too small for "
            "its VMs' outstanding I/O.",
            "short",
            [
                Q(f"{d_queue_depth(RATE)} / {a_per_vm('host, device', RATE)}", "m {{host}} {{device}}"),
                Q(vms_on_lun("host, device", RATE), "VMs {{host}} {{device}}"),
            ],
            dashed=("^m .*",),
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "n/a against VMs on the LUN (all hosts)",
            "When the VM count (solid) rises above n/a (dashed), the hosts together ask the array for more "
            "outstanding I/O than it sustains.",
            "short",
            [Q(f"$n / {a_per_vm('device', RATE)}", "n/a {{device}}"), Q(vms_on_lun("device", RATE), "VMs {{device}}")],
            dashed=("^n/a .*",),
        )
    )
    d = d.with_panel(
        timeseries_panel(
            "a: outstanding commands per VM",
            "The mean outstanding commands per VM on each LUN. A rising a shrinks m and n/a: fewer VMs fit.",
            "short",
            [Q(a_per_vm("host, device", RATE), "{{host}} {{device}}")],
            w=24,
        )
    )
    return d
