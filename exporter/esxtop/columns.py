"""Which esxtop columns the exporter reads, and how each becomes a model field in base units.

Object names are matched exactly (esxtop-format.md quirk 16: `Physical Disk` is a prefix of seven
object types). Everything not listed here is skipped without being converted.
"""

from __future__ import annotations

import re

from exporter.store import model as m
from exporter.store.units import MIB, MILLISECOND, PERCENT

# Values are divided by these (dividing by 1000 rounds exactly where multiplying by 1e-3 does not).
_MS = 1 / MILLISECOND
_PCT = 1 / PERCENT
_PER_MIB = 1 / MIB  # a power of two: exact

# Counters shared by every disk I/O object (adapter, path, device, per-world, partition).
IO_COUNTERS: dict[str, tuple[str, float]] = {
    "Commands/sec": (m.COMMANDS, 1.0),
    "Reads/sec": (m.READS, 1.0),
    "Writes/sec": (m.WRITES, 1.0),
    "MBytes Read/sec": (m.READ_BYTES, _PER_MIB),
    "MBytes Written/sec": (m.WRITTEN_BYTES, _PER_MIB),
    "Reserves/sec": (m.RESERVATIONS, 1.0),
    "Conflicts/sec": (m.CONFLICTS, 1.0),
    "Average Driver MilliSec/Command": (m.DAVG, _MS),
    "Average Kernel MilliSec/Command": (m.KAVG, _MS),
    "Average Guest MilliSec/Command": (m.GAVG, _MS),
    "Average Queue MilliSec/Command": (m.QAVG, _MS),
    "Average Guest MilliSec/Read": (m.GAVG_READ, _MS),
    "Average Guest MilliSec/Write": (m.GAVG_WRITE, _MS),
    "Failed Commands/sec": (m.FAILED, 1.0),
    "Aborts/sec": (m.ABORTS, 1.0),
    "Resets/sec": (m.RESETS, 1.0),
}

QUEUE_COUNTERS: dict[str, tuple[str, float]] = {
    "Device Q Depth": (m.QUEUE_DEPTH, 1.0),
    "Active Commands": (m.ACTIVE, 1.0),
    "Queued Commands": (m.QUEUED, 1.0),
    "% Used": (m.USED, _PCT),
    "Load": (m.LOAD, 1.0),
}

DEVICE_COUNTERS = {**QUEUE_COUNTERS, **IO_COUNTERS}
# VAAI, on `Physical Disk SCSI Device` only (esxtop-format.md §3.3, `-a`). The counts are totals
# since the device was registered, not per interval (docs/esxtop.md#vaai-counts-are-totals).
VAAI_COUNTERS: dict[str, tuple[str, float]] = {
    "ATS": (m.vaai_commands("ats"), 1.0),
    "ATS Failed": (m.vaai_failures("ats"), 1.0),
    "CReads": (m.vaai_commands("clone_read"), 1.0),
    "CWrites": (m.vaai_commands("clone_write"), 1.0),
    "CFailed": (m.vaai_failures("clone"), 1.0),
    "Zeros": (m.vaai_commands("zero"), 1.0),
    "Zeros Failed": (m.vaai_failures("zero"), 1.0),
    "Delete": (m.vaai_commands("unmap"), 1.0),
    "Deletes Failed": (m.vaai_failures("unmap"), 1.0),
    "MBytes CReads/sec": (m.vaai_bytes("clone_read"), _PER_MIB),
    "MBytes CWrites/sec": (m.vaai_bytes("clone_write"), _PER_MIB),
    "MBytes Zeroed/sec": (m.vaai_bytes("zero"), _PER_MIB),
    "MBytes Deletes/sec": (m.vaai_bytes("unmap"), _PER_MIB),
    **{
        f"Average {outcome.title()} Latency ms/{name}": (m.vaai_latency(primitive, outcome), _MS)
        for name, primitive in (("ATS", "ats"), ("Clone", "clone"), ("Zero", "zero"))
        for outcome in m.VAAI_OUTCOMES
    },
}
SCSI_DEVICE_COUNTERS = {**DEVICE_COUNTERS, **VAAI_COUNTERS}
WORLD_COUNTERS = {"Active Commands": (m.ACTIVE, 1.0), "Queued Commands": (m.QUEUED, 1.0)}
CPU_COUNTERS = {"% Util Time": (m.CPU_UTIL, _PCT)}
# The v screen (esxtop-format.md §3.8): latency is per read and per write as the guest sees it at
# its virtual disk (LAT/rd, LAT/wr). `-a` also writes FailedIOs, TotalIOs and Latency, whose
# meaning no document gives: skipped.
VIRTUAL_DISK_COUNTERS = {
    **{name: IO_COUNTERS[name] for name in ("Commands/sec", "Reads/sec", "Writes/sec", "MBytes Read/sec", "MBytes Written/sec")},
    "Average MilliSec/Read": (m.GAVG_READ, _MS),
    "Average MilliSec/Write": (m.GAVG_WRITE, _MS),
}
ADAPTER_QDEPTH = {"Adapter Q Depth": (m.QUEUE_DEPTH, 1.0)}

# Families of the model a column can land in.
LUN, ADAPTER, PATH, WORLD, CPU, DATASTORE = "luns", "adapters", "paths", "worlds", "cpus", "datastores"
VDISK, VM = "vdisks", "vms"  # Virtual Disk(vm:scsi0:0) -> (vm, disk); Virtual Disk(vm) -> the VM's totals

# Instance shapes of the legacy `Physical Disk(...)` object.
_ADAPTER = re.compile(r"^vmhba\d+$")
_ADAPTER_PATH = re.compile(r"^(vmhba\d+):(vmhba\d+:.+)$")  # ESXi 5/6: <adapter>:<path>
_ESX3_WORLD = re.compile(r"^(vmhba\d+(?::\d+){3}):(\d+)$")  # ESX 3.x: vmhbaA:C:T:L:W
_ESX3_LUN = re.compile(r"^vmhba\d+(?::\d+){2,3}$")  # ESX 3.x LUN: vmhbaA:T:L or vmhbaA:C:T:L
_WD = re.compile(r"^WD-(.+)-(\d+)$")  # ESX 3.x per-world: WD-vmhbaA:T:L-W
# A virtual disk is named by its controller instance, as vSphere's virtualDisk counters name it.
_VDISK = re.compile(r"^(.+):((?:scsi|sata|ide|nvme)\d+:\d+)$")


def virtual_disk(instance: str) -> tuple[str, str] | None:
    """'db01:scsi0:1' -> ('db01', 'scsi0:1'); None for a VM's total ('db01'). A VM name may hold
    ':' (quirk 5), so the disk is the last two parts, and only when they name a controller slot."""
    found = _VDISK.match(instance)
    return found.groups() if found else None


def classify(obj: str, instance: str | None, counter: str, has_path_object: bool):
    """Where a column goes: (family, key, field, divisor), or None to skip it.

    key is the device / adapter / path / cpu / VM name, (device, world) for per-world columns and
    (vm, disk) for a virtual disk.
    """
    if instance is None:
        return None
    if obj == "Physical Disk SCSI Device":
        hit = SCSI_DEVICE_COUNTERS.get(counter)
        return (LUN, instance) + hit if hit else None
    if obj == "Physical Disk Adapter":
        hit = IO_COUNTERS.get(counter)
        return (ADAPTER, instance) + hit if hit else None
    if obj == "Physical Disk Path":
        hit = IO_COUNTERS.get(counter)
        return (PATH, instance) + hit if hit else None
    if obj == "Physical Disk Per-Device-Per-World":
        hit = WORLD_COUNTERS.get(counter)
        device, sep, world = instance.rpartition("-")  # the device part may contain '-' or ':'
        return (WORLD, (device, world)) + hit if hit and sep else None
    if obj == "Physical Disk NFS Volume":  # a datastore, named as vSphere names it: one object, one name
        hit = DEVICE_COUNTERS.get(counter)
        return (DATASTORE, instance) + hit if hit else None
    if obj == "Virtual Disk":
        hit = VIRTUAL_DISK_COUNTERS.get(counter)
        if not hit:
            return None
        disk = virtual_disk(instance)
        return (VDISK, disk) + hit if disk else (VM, instance) + hit
    if obj == "Physical Cpu":
        hit = CPU_COUNTERS.get(counter)
        return (CPU, instance) + hit if hit else None
    if obj == "Physical Disk":
        return _classify_legacy(instance, counter, has_path_object)
    return None


def _classify_legacy(instance: str, counter: str, has_path_object: bool):
    if _ADAPTER.match(instance):
        hit = ADAPTER_QDEPTH.get(counter)
        return (ADAPTER, instance) + hit if hit else None
    found = _ADAPTER_PATH.match(instance)
    if found:
        adapter, path = found.groups()
        if counter == "Adapter Q Depth":
            return (ADAPTER, adapter, m.QUEUE_DEPTH, 1.0)
        # ESXi 6 writes these beside `Physical Disk Path` with the same values; use them only
        # where the capture has no `Physical Disk Path` object (older releases).
        hit = None if has_path_object else IO_COUNTERS.get(counter)
        return (PATH, path) + hit if hit else None
    found = _WD.match(instance) or _ESX3_WORLD.match(instance)
    if found:
        hit = WORLD_COUNTERS.get(counter)
        return (WORLD, found.groups()) + hit if hit else None
    if _ESX3_LUN.match(instance):
        hit = DEVICE_COUNTERS.get(counter)
        return (LUN, instance) + hit if hit else None
    return None


# VM name from the capture's own CPU columns: Vcpu(<gid>:<group name>:<world id>:<world name>).
_VCPU = re.compile(r"^(\d+):(.*?):(\d+):(.*)$")
# A VM's group also names its I/O world inside other world names: NetWorld-VM-444768,
# vmast.444768, PVSCSI-444903:0, LSI-444768:0.
_WORLD_REF = re.compile(r"[-.](\d{3,})(?::\d+)?$")


def world_vms(vcpu_instances) -> dict[str, str]:
    """Map world id -> VM name for every world that belongs to a VM group (one with a 'vmx' world)."""
    groups: dict[str, tuple[str, list[tuple[str, str]]]] = {}  # gid -> (group name, [(world id, world name)])
    vm_groups = set()
    for instance in vcpu_instances:
        found = _VCPU.match(instance)
        if not found:
            continue
        gid, name, wid, wname = found.groups()
        groups.setdefault(gid, (name, []))[1].append((wid, wname))
        if wname == "vmx":
            vm_groups.add(gid)
    vms = {}
    for gid, (name, worlds) in groups.items():
        if gid not in vm_groups:
            continue  # only VM groups' world names are searched for the I/O worlds they name
        for wid, wname in worlds:
            vms[wid] = name
            ref = _WORLD_REF.search(wname)
            if ref:
                vms[ref.group(1)] = name
    return vms
