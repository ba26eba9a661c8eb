"""How many VMs a LUN can take before commands queue: the paper's Table 2.

With n the most commands the array works on for one LUN at once, d the host's device queue
depth (DQLEN) and a the commands each VM keeps outstanding on average (per-world Active + Queued
Commands, averaged over the steady state), a host fills its queue at m = d / a VMs and the LUN
saturates at n / a VMs over all hosts sharing it. Whole VMs only: both are rounded down.

A capture's Virtual Disk group gives a second a per VM: reads/s x LAT/rd + writes/s x LAT/wr
summed over its disks on the LUN (Little's law). The worlds' a decides where the capture has it
(the paper's measure, and the one the recording rules prefer); a LUN no world shows load on gets
its plan from the virtual disks. A disk is placed on its LUN by the inventory snapshot beside the
capture, or else by the one LUN its VM's worlds do I/O to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from exporter.analysis import stats as st
from exporter.analysis.capture import Capture
from exporter.store import model as m


@dataclass(frozen=True)
class Plan:
    n: float  # array: max outstanding commands per LUN
    a: float  # average outstanding commands per VM
    d: float  # host device queue depth
    max_vms_per_host: int  # m = d / a
    max_vms_per_lun: int  # n / a


def plan(n: float, a: float, d: float) -> Plan:
    if a <= 0 or n <= 0 or d <= 0:
        raise ValueError("n, a and d must all be above zero")
    # a tiny epsilon keeps 32 / (32/3*3) from rounding to 2.999... below the whole number
    return Plan(n, a, d, math.floor(d / a + 1e-9), math.floor(n / a + 1e-9))


@dataclass
class LunLoad:
    device: str
    dqlen: float
    vms: dict[str, float]  # VM (or world) on the LUN -> its mean outstanding commands (worlds' ACTV + QUED)
    plan: Plan | None  # None when no VM did I/O to the LUN
    disk_vms: dict[str, float] = field(default_factory=dict)  # VM -> the same, from its virtual disks
    source: str = "worlds"  # where the plan's a comes from: worlds | virtual disks

    @property
    def a(self) -> float:
        return float(np.mean(list(self.vms.values()))) if self.vms else 0.0

    @property
    def host_headroom(self) -> int | None:
        return None if self.plan is None else self.plan.max_vms_per_host - len(self.vms)

    @property
    def lun_headroom(self) -> int | None:
        return None if self.plan is None else self.plan.max_vms_per_lun - len(self.vms)


def from_capture(
    capture: Capture, n: float, queue_depth: float | None = None, inventories: dict[str, m.Inventory] | None = None
) -> list[LunLoad]:
    """Per LUN: the VMs doing I/O to it, their average outstanding commands a, and the plan.
    inventories: the snapshot beside the capture (host -> Inventory), which places virtual disks."""
    per_device: dict[str, dict[str, float]] = {}
    for device, world in capture.objects("worlds"):
        s = st.series(capture, "worlds", (device, world), st.OUTSTANDING)
        if s is None or not len(s.values) or not (s.values > 0).any():
            continue  # a world that never had a command outstanding is not a VM using the LUN
        name = capture.world_vms.get(world, f"world {world}")
        vms = per_device.setdefault(device, {})
        vms[name] = vms.get(name, 0.0) + float(s.values.mean())  # a VM's worlds add up
    inventory = (inventories or {}).get(capture.host)
    by_disks = disk_outstanding(capture, per_device, inventory.vdisks if inventory else {})
    out = []
    for device in capture.objects("luns"):
        dq = st.series(capture, "luns", device, st.DQLEN)
        d = queue_depth if queue_depth is not None else (st.config_value(dq) if dq is not None else float("nan"))
        vms, disk_vms = per_device.get(device, {}), by_disks.get(device, {})
        load = LunLoad(device, d, vms, None, disk_vms)
        if not vms and disk_vms:
            load.vms, load.source = disk_vms, "virtual disks"
        if load.vms and load.a > 0 and d == d:
            load.plan = plan(n, load.a, d)
        out.append(load)
    return out


def disk_outstanding(
    capture: Capture, world_load: dict[str, dict[str, float]], backing: dict[tuple[str, str], m.VirtualDiskConfig]
) -> dict[str, dict[str, float]]:
    """device -> VM -> mean outstanding I/Os over its virtual disks on that device (Little's law).
    A disk whose LUN is unknown (no snapshot, and its VM's worlds use several LUNs or none) is left out."""
    vm_devices: dict[str, set[str]] = {}
    for device, vms in world_load.items():
        for vm in vms:
            vm_devices.setdefault(vm, set()).add(device)
    out: dict[str, dict[str, float]] = {}
    rows = capture.measured
    for vm, disk in capture.objects("vdisks"):
        config = backing.get((vm, disk))
        devices = set(config.devices) if config is not None else vm_devices.get(vm, set())
        values = st.little_outstanding(capture, "vdisks", (vm, disk))
        if len(devices) != 1 or values is None or not rows.any() or not (values[rows] > 0).any():
            continue
        (device,) = devices
        vms = out.setdefault(device, {})
        vms[vm] = vms.get(vm, 0.0) + float(values[rows].mean())  # a VM's disks on one LUN add up
    return out
