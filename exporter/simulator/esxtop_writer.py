"""Write the model's results as `esxtop -b -a` batch CSV (see docs/esxtop-format.md §1-§5).

Every cell quoted, a trailing comma on every line, header cells `\\\\host\\Object(instance)\\Counter`,
rates and latencies with two decimals, queue counts as integers, latencies in ms and throughput in
MBytes (MiB) per second: this module is the one place the simulator converts to esxtop's units.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from .queueing import Flow, HostResult, VaaiFlow

FIRST_CELL = "(PDH-CSV 4.0) (UTC)(0)"
TIME_FORMAT = "%m/%d/%Y %H:%M:%S"
MIB = 1024.0 * 1024.0

_LATENCY = [f"Average {kind} MilliSec/{per}" for per in ("Command",) for kind in ("Driver", "Kernel", "Guest", "Queue")]
_LATENCY_RW = [f"Average {kind} MilliSec/{per}" for per in ("Read", "Write") for kind in ("Driver", "Kernel", "Guest", "Queue")]
_THROUGHPUT = ["Commands/sec", "Reads/sec", "Writes/sec", "MBytes Read/sec", "MBytes Written/sec"]
_RESERVE = ["Reserves/sec", "Conflicts/sec"]
_FAILED = [
    "Failed Commands/sec",
    "Failed Reads/sec",
    "Failed Writes/sec",
    "Failed Bytes Read/sec",
    "Failed Bytes Written/sec",
    "Failed Reserves/sec",
    "Aborts/sec",
    "Resets/sec",
]
_PAE_SPLIT = ["PAE Commands/sec", "PAE Copies/sec", "Split Commands/sec", "Split Copies/sec"]
_QUEUE = ["Device Q Depth", "World Q Depth", "Active Commands", "Queued Commands", "% Used", "Load"]
_VAAI = [
    "CReads",
    "CWrites",
    "CFailed",
    "MBytes CReads/sec",
    "MBytes CWrites/sec",
    "ATS",
    "ATS Failed",
    "Zeros",
    "Zeros Failed",
    "MBytes Zeroed/sec",
    "Delete",
    "Deletes Failed",
    "MBytes Deletes/sec",
    "Average Success Latency ms/Clone",
    "Average Failure Latency ms/Clone",
    "Average Success Latency ms/ATS",
    "Average Failure Latency ms/ATS",
    "Average Success Latency ms/Zero",
    "Average Failure Latency ms/Zero",
]
_VAAI_INTEGER = {"CReads", "CWrites", "CFailed", "ATS", "ATS Failed", "Zeros", "Zeros Failed", "Delete", "Deletes Failed"}

# The -a counter sets, in the order esxtop writes them (esxtop-format.md §3).
ADAPTER_COUNTERS = _THROUGHPUT + _RESERVE + _LATENCY + _LATENCY_RW + _FAILED + _PAE_SPLIT  # 31
PATH_COUNTERS = ADAPTER_COUNTERS  # 31
DEVICE_COUNTERS = _QUEUE + _THROUGHPUT + _RESERVE + _LATENCY + _LATENCY_RW + _FAILED + _VAAI  # 52
WORLD_COUNTERS = ["Shares"] + _QUEUE + _THROUGHPUT + _RESERVE + _LATENCY + _LATENCY_RW + _FAILED  # 34
# The Virtual Disk counters of a default capture (esxtop-format.md §3.8). `-a` also writes
# FailedIOs, TotalIOs and Latency first; no document says what they measure, so they are not made up.
VIRTUAL_DISK_COUNTERS = [
    "Commands/sec",
    "Reads/sec",
    "Writes/sec",
    "MBytes Read/sec",
    "MBytes Written/sec",
    "Average MilliSec/Read",
    "Average MilliSec/Write",
]
GROUP_CPU_COUNTERS = [
    "Members",
    "% Used",
    "% Run",
    "% System",
    "% Wait",
    "% Ready",
    "% Idle",
    "% Overlap",
    "% CoStop",
    "% Max Limited",
    "% Swap Wait",
]
VCPU_COUNTERS = [
    "% Used",
    "% Run",
    "% System",
    "% Wait",
    "% VmWait",
    "% Ready",
    "% Idle",
    "% Overlap",
    "% CoStop",
    "% Max Limited",
    "% Swap Wait",
]

# The simulator never fails, aborts or resets a command, nor uses PAE/split: constant zeros; VAAI
# columns are zeros too on a device no scenario sent a VAAI command to.
_ZEROS_FAILED = ",".join(['"0.00"'] * len(_FAILED))
_ZEROS_PAE = ",".join(['"0.00"'] * len(_PAE_SPLIT))
_ZEROS_VAAI = ",".join('"0"' if c in _VAAI_INTEGER else '"0.00"' for c in _VAAI)


@dataclass(frozen=True, slots=True)
class CpuGroup:
    """A Group Cpu and its worlds: a VM (vmx, NetWorld-VM-<id>, vcpu, PVSCSI...) or hostd."""

    gid: int
    name: str
    worlds: tuple[tuple[int, str], ...]  # (world id, world name)
    used_pct: float  # constant CPU use shown for the group's busiest world
    busy_world: int = 0  # index in worlds of that world (the vcpu)


@dataclass(frozen=True, slots=True)
class DeviceLayout:
    device: str
    queue_depth: int
    world_queue_depth: int  # per-world limit when worlds compete: min(DSNRO, DQLEN)
    paths: tuple[str, ...]
    worlds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class VmDisks:
    """A VM's virtual disks: all on one LUN, carrying its I/O world's flow in equal shares."""

    vm: str
    device: str
    world: str  # the world id its I/O is accounted to on `device`
    disks: tuple[str, ...]  # controller slots: scsi0:0 ...


@dataclass(frozen=True, slots=True)
class HostLayout:
    """The fixed column set of one host's capture (esxtop writes its header once)."""

    host: str
    cpus: int
    groups: tuple[CpuGroup, ...]
    adapters: tuple[tuple[str, int], ...]  # (vmhbaN, AQLEN)
    devices: tuple[DeviceLayout, ...]
    vms: tuple[VmDisks, ...] = ()


class EsxtopWriter:
    """Header and data lines of one host's capture."""

    def __init__(self, layout: HostLayout):
        self.layout = layout
        self.header = _header(layout)
        # Group Cpu / Vcpu cells are constant: they let readers map world ids to VM names
        self._groups = ",".join(_group_cells(g) for g in layout.groups)

    def data(self, timestamp: float, result: HostResult | None, vaai_totals: dict | None = None) -> str:
        """One data line; `result` None gives esxtop's first sample: rates, latencies and VAAI
        counts all zero. vaai_totals: device -> esxtop VAAI count -> the host's total so far."""
        layout = self.layout
        # a device with one path, its path and its adapter often carry the same numbers:
        # format each distinct set once (formatting is most of a step's cost)
        formatted: dict[tuple, str] = {}

        def _io(f: Flow) -> str:
            values = _io_values(f)
            text = formatted.get(values)
            if text is None:
                text = formatted[values] = _IO_FORMAT % values
            return text

        parts = ['"' + time.strftime(TIME_FORMAT, time.gmtime(timestamp)) + '"']
        n = layout.cpus
        util = result.cpu_util if result else [0.0] * n
        pct = [u * 100.0 for u in util]
        pct.append(sum(pct) / n)
        # "% Processor Time" leaves out hyperthread/halt accounting; a little under util
        parts.append(",".join('"%.2f"' % (p * 0.92) for p in pct))
        parts.append(",".join('"%.2f"' % p for p in pct))
        if self._groups:
            parts.append(self._groups)
        for adapter, aqlen in layout.adapters:
            f = result.adapters.get(adapter, _IDLE) if result else _IDLE
            parts.append('"%d",%s,%s,%s' % (aqlen, _io(f), _ZEROS_FAILED, _ZEROS_PAE))
        for d in layout.devices:
            f = result.luns.get(d.device, _IDLE) if result else _IDLE
            totals = vaai_totals.get(d.device) if result and vaai_totals else None
            vaai = _vaai(totals, result.vaai.get(d.device)) if totals else _ZEROS_VAAI
            depth = round(f.queue_depth) or d.queue_depth  # where Storage I/O Control cut it, its depth is DQLEN
            parts.append("%s,%s,%s,%s" % (_queue(depth, 0, f), _io(f), _ZEROS_FAILED, vaai))
            for path in d.paths:
                pf = result.paths.get(path, _IDLE) if result else _IDLE
                parts.append("%s,%s,%s" % (_io(pf), _ZEROS_FAILED, _ZEROS_PAE))
            for world in d.worlds:
                wf = result.worlds.get((d.device, world), _IDLE) if result else _IDLE
                parts.append('"1000",%s,%s,%s' % (_queue(depth, min(d.world_queue_depth, depth), wf), _io(wf), _ZEROS_FAILED))
        for vm in layout.vms:
            wf = result.worlds.get((vm.device, vm.world), _IDLE) if result else _IDLE
            parts.append(_VDISK_FORMAT % _vdisk_values(wf, 1.0))
            each = _VDISK_FORMAT % _vdisk_values(wf, 1.0 / len(vm.disks))
            parts.extend([each] * len(vm.disks))
        return ",".join(parts) + ","


def _header(layout: HostLayout) -> str:
    p = f"\\\\{layout.host}\\"
    cells = [FIRST_CELL]
    cpu_ids = [str(i) for i in range(layout.cpus)] + ["_Total"]
    for counter in ("% Processor Time", "% Util Time"):
        cells += [f"{p}Physical Cpu({c})\\{counter}" for c in cpu_ids]
    for g in layout.groups:
        cells += [f"{p}Group Cpu({g.gid}:{g.name})\\{c}" for c in GROUP_CPU_COUNTERS]
        for wid, wname in g.worlds:
            cells += [f"{p}Vcpu({g.gid}:{g.name}:{wid}:{wname})\\{c}" for c in VCPU_COUNTERS]
    for adapter, _ in layout.adapters:
        cells.append(f"{p}Physical Disk({adapter})\\Adapter Q Depth")
        cells += [f"{p}Physical Disk Adapter({adapter})\\{c}" for c in ADAPTER_COUNTERS]
    for d in layout.devices:
        cells += [f"{p}Physical Disk SCSI Device({d.device})\\{c}" for c in DEVICE_COUNTERS]
        for path in d.paths:
            cells += [f"{p}Physical Disk Path({path})\\{c}" for c in PATH_COUNTERS]
        for world in d.worlds:
            cells += [f"{p}Physical Disk Per-Device-Per-World({d.device}-{world})\\{c}" for c in WORLD_COUNTERS]
    for vm in layout.vms:  # each VM's total, then its disks (as esxtop orders them)
        for instance in (vm.vm, *(f"{vm.vm}:{disk}" for disk in vm.disks)):
            cells += [f"{p}Virtual Disk({instance})\\{c}" for c in VIRTUAL_DISK_COUNTERS]
    return '"' + '","'.join(cells) + '",'


def _vaai(totals: dict[str, float], flow: VaaiFlow | None) -> str:
    """The VAAI cells in _VAAI's order: counts as the host's totals since boot (integers: esxtop's
    counts are totals, not per interval, docs/esxtop.md), MBytes/sec and latencies (ms) of the
    interval for the primitives sent in it."""
    flow = flow or _NO_VAAI

    def count(name: str) -> str:
        return '"%d"' % math.floor(totals.get(name, 0.0) + 1e-9)

    def mib(primitive: str) -> str:
        return '"%.2f"' % (flow.bytes.get(primitive, 0.0) / MIB)

    def latency(primitive: str, failed: bool) -> str:
        sent = (flow.failed if failed else flow.done).get(primitive, 0.0)
        return '"%.2f"' % (flow.latency * 1e3 if sent else 0.0)

    cells = [count("clone_read"), count("clone_write"), count("clone_failed"), mib("clone"), mib("clone")]
    cells += [count("ats"), count("ats_failed"), count("zero"), count("zero_failed"), mib("zero")]
    cells += [count("unmap"), count("unmap_failed"), mib("unmap")]
    cells += [latency(p, failed) for p in ("clone", "ats", "zero") for failed in (False, True)]
    return ",".join(cells)


_NO_VAAI = VaaiFlow()
_IO_FORMAT = ",".join(['"%.2f"'] * (len(_THROUGHPUT) + len(_RESERVE) + len(_LATENCY) + len(_LATENCY_RW)))
_NO_LATENCY = (0.0, 0.0, 0.0, 0.0)


def _io_values(f: Flow) -> tuple:
    """Throughput, reservation and latency cells shared by every disk object (ms, MiB/s)."""
    d, k, q = f.davg * 1e3, f.kavg * 1e3, f.qavg * 1e3
    lat = (d, k, d + k, q)
    # the model gives reads and writes of one object the same latencies
    return (
        f.commands,
        f.reads,
        f.writes,
        f.read_bytes / MIB,
        f.written_bytes / MIB,
        f.reservations,
        f.conflicts,
        *lat,
        *(lat if f.reads else _NO_LATENCY),
        *(lat if f.writes else _NO_LATENCY),
    )


_IDLE = Flow()
_VDISK_FORMAT = ",".join(['"%.2f"'] * len(VIRTUAL_DISK_COUNTERS))


def _vdisk_values(f: Flow, share: float) -> tuple:
    """A VM's I/O as its virtual disks see it (ms, MiB/s): `share` of its world's reads and writes,
    each at the world's guest latency (the guest waits for the device and the VMkernel queue)."""
    gavg = (f.davg + f.kavg) * 1e3
    reads, writes = f.reads * share, f.writes * share
    return (
        reads + writes,
        reads,
        writes,
        f.read_bytes * share / MIB,
        f.written_bytes * share / MIB,
        gavg if reads else 0.0,
        gavg if writes else 0.0,
    )


def _queue(depth: int, wqlen: int, f: Flow) -> str:
    return '"%d","%d","%d","%d","%.2f","%.2f"' % (
        depth,
        wqlen,
        round(f.active),
        round(f.queued),
        100.0 * f.active / depth,
        (f.active + f.queued) / depth,
    )


def _group_cells(g: CpuGroup) -> str:
    members = len(g.worlds)
    u = g.used_pct
    cells = ['"%d"' % members] + ['"%.2f"' % v for v in (u, u, 0.0, 100.0 * members - u, 0.5, 0.0, 0.1, 0.0, 0.0, 0.0)]
    for i, _ in enumerate(g.worlds):
        w = u if i == g.busy_world else 0.0
        cells += ['"%.2f"' % v for v in (w, w, 0.0, 100.0 - w, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0)]
    return ",".join(cells)
