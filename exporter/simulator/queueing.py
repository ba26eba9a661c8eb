"""The queueing model: from who keeps how many I/Os outstanding where, to what esxtop would show.

A mean-value (fluid) model of closed loops: every VM keeps `oio` commands outstanding, so its
throughput is what the slowest stage lets through and its latency follows by Little's law
(latency = outstanding / throughput). Stages, host side first:

1. Host LUN queue. The VMkernel lets at most DQLEN commands onto the device, or
   min(DSNRO, DQLEN) when more than one world competes for it; the rest wait (QUED).
2. Array. A LUN whose disks absorb n commands serves up to n at its base service time; beyond n
   every command waits its turn, so device latency grows as outstanding / n.
3. SCSI reservations. While another host holds a reservation this host's commands are refused
   with a conflict and retried, so the LUN is lost to it for rate x hold of the time; a host's
   own reservations cost its VMs only the metadata updates made under them.
4. Links. Each command also crosses an HBA link; if an adapter's active paths ask for more
   bytes/s than the link's payload rate, every command through it is slowed by the excess.

All values are in base units (seconds, bytes, per second); the esxtop writer converts to ms/MiB.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

KERNEL_OVERHEAD = 15e-6  # seconds per command spent in the VMkernel storage stack when nothing queues
JITTER = 0.03  # relative standard deviation of array service time and kernel overhead per interval


@dataclass(slots=True)
class Flow:
    """I/O of one object (LUN, world, path, adapter) over one interval."""

    reads: float = 0.0  # per second
    writes: float = 0.0
    other: float = 0.0  # non read/write SCSI commands (RESERVE, RELEASE, ...)
    read_bytes: float = 0.0  # per second
    written_bytes: float = 0.0
    reservations: float = 0.0
    conflicts: float = 0.0
    davg: float = 0.0  # seconds per command
    kavg: float = 0.0
    qavg: float = 0.0
    active: float = 0.0  # ACTV (LUN and world only)
    queued: float = 0.0  # QUED

    @property
    def commands(self) -> float:
        return self.reads + self.writes + self.other

    @property
    def gavg(self) -> float:
        return self.davg + self.kavg

    def scaled(self, share: float) -> "Flow":
        """The part of this flow carried by one of several paths (or worlds): rates scale, latency stays."""
        return Flow(self.reads * share, self.writes * share, self.other * share,
                    self.read_bytes * share, self.written_bytes * share,
                    self.reservations * share, self.conflicts * share,
                    self.davg, self.kavg, self.qavg, self.active * share, self.queued * share)


def merge(flows: list[Flow]) -> Flow:
    """Sum of rates; latencies weighted by commands (as esxtop aggregates adapters)."""
    out = Flow()
    weighted = [0.0, 0.0, 0.0]
    for f in flows:
        out.reads += f.reads
        out.writes += f.writes
        out.other += f.other
        out.read_bytes += f.read_bytes
        out.written_bytes += f.written_bytes
        out.reservations += f.reservations
        out.conflicts += f.conflicts
        out.active += f.active
        out.queued += f.queued
        c = f.commands
        weighted[0] += f.davg * c
        weighted[1] += f.kavg * c
        weighted[2] += f.qavg * c
    c = out.commands
    if c > 0:
        out.davg, out.kavg, out.qavg = (w / c for w in weighted)
    return out


# --- inputs -------------------------------------------------------------------------------------
@dataclass(slots=True)
class VmLoad:
    world: str  # world id of the VM's I/O (Per-Device-Per-World instance suffix)
    oio: int
    block_size: int
    read_ratio: float


@dataclass(slots=True)
class HostLunLoad:
    device: str
    queue_depth: int
    active_paths: list[tuple[str, str]]  # (runtime name, adapter)
    vms: list[VmLoad]
    admin_world: str | None = None  # world that issues this host's VMFS reservations on the LUN


@dataclass(slots=True)
class Link:
    capacity: float | None  # payload bytes/s; None = never the bottleneck
    cpu_per_command: float  # CPU seconds per command


@dataclass(slots=True)
class HostLoad:
    name: str
    dsnro: int
    cpus: int
    base_cpu_util: float
    links: dict[str, Link]  # adapter -> link
    luns: list[HostLunLoad]


@dataclass(slots=True)
class ArrayLun:
    service_time: float
    absorbs: int


@dataclass(slots=True)
class Reservations:
    host: str
    lun: str
    rate: float  # reservations per second
    hold: float  # seconds each
    self_cost: float


@dataclass(slots=True)
class HostResult:
    luns: dict[str, Flow] = field(default_factory=dict)
    worlds: dict[tuple[str, str], Flow] = field(default_factory=dict)
    paths: dict[str, Flow] = field(default_factory=dict)
    adapters: dict[str, Flow] = field(default_factory=dict)
    cpu_util: list[float] = field(default_factory=list)  # per PCPU, 0..1


# Each reservation is a RESERVE and a RELEASE plus metadata reads and writes of one block.
_METADATA_IO_PER_RESERVATION = 2
_METADATA_BLOCK = 4096


def solve(hosts: list[HostLoad], array: dict[str, ArrayLun], reservations: list[Reservations],
          rng: random.Random) -> dict[str, HostResult]:
    # 1. host queues: what each host lets onto each device
    actv: dict[tuple[str, str], float] = {}
    queued: dict[tuple[str, str], float] = {}
    for h in hosts:
        for hl in h.luns:
            demand = sum(vm.oio for vm in hl.vms)
            competing = sum(1 for vm in hl.vms if vm.oio > 0)
            limit = hl.queue_depth if competing <= 1 else min(h.dsnro, hl.queue_depth)
            actv[h.name, hl.device] = min(demand, limit)
            queued[h.name, hl.device] = max(0, demand - limit)

    # 2. array: outstanding from all hosts against what the disks absorb
    device_time: dict[str, float] = {}
    outstanding: dict[str, float] = {}
    for key, a in actv.items():
        outstanding[key[1]] = outstanding.get(key[1], 0.0) + a
    for dev, lun in array.items():
        load = max(1.0, outstanding.get(dev, 0.0) / lun.absorbs)
        device_time[dev] = lun.service_time * load * math.exp(rng.gauss(0.0, JITTER))

    # 3. reservations: share of time each host loses the LUN
    lost: dict[tuple[str, str], float] = {}
    foreign_rate: dict[tuple[str, str], float] = {}
    own_rate: dict[tuple[str, str], float] = {}
    for h in hosts:
        for hl in h.luns:
            for r in reservations:
                if r.lun != hl.device:
                    continue
                key = (h.name, hl.device)
                if r.host == h.name:
                    lost[key] = lost.get(key, 0.0) + r.rate * r.hold * r.self_cost
                    own_rate[key] = own_rate.get(key, 0.0) + r.rate
                else:
                    lost[key] = lost.get(key, 0.0) + r.rate * r.hold
                    foreign_rate[key] = foreign_rate.get(key, 0.0) + r.rate

    results: dict[str, HostResult] = {}
    for h in hosts:
        res = HostResult()
        results[h.name] = res
        # 4a. unconstrained throughput per device, then the load it puts on each link
        first: list[tuple[HostLunLoad, float, float, float, float]] = []
        link_bytes: dict[str, float] = {}
        for hl in h.luns:
            key = (h.name, hl.device)
            a = actv[key]
            demand = a + queued[key]
            block = (sum(vm.oio * vm.block_size for vm in hl.vms) / demand) if demand else 0.0
            read_ratio = (sum(vm.oio * vm.read_ratio for vm in hl.vms) / demand) if demand else 0.0
            wire = 0.0
            for _, adapter in hl.active_paths:
                cap = h.links[adapter].capacity
                if cap:
                    wire = max(wire, block / cap)
            davg = device_time[hl.device] / (1.0 - lost.get(key, 0.0)) + wire
            x = a / davg if a else 0.0
            share = 1.0 / len(hl.active_paths)
            for _, adapter in hl.active_paths:
                link_bytes[adapter] = link_bytes.get(adapter, 0.0) + x * block * share
            first.append((hl, davg, x, block, read_ratio))
        slowdown = {ad: max(1.0, link_bytes.get(ad, 0.0) / link.capacity) if link.capacity else 1.0
                    for ad, link in h.links.items()}

        # 4b. final per device, world, path
        path_flows: dict[str, list[Flow]] = {}
        for hl, davg, x, block, read_ratio in first:
            key = (h.name, hl.device)
            s = max(slowdown[ad] for _, ad in hl.active_paths)
            davg *= s
            x /= s
            q = queued[key]
            qavg = q / x if x else 0.0
            kavg = KERNEL_OVERHEAD * math.exp(rng.gauss(0.0, JITTER)) + qavg if x else 0.0
            vm_total = sum(vm.oio for vm in hl.vms)
            flows: list[Flow] = []
            for vm in hl.vms:
                share = vm.oio / vm_total if vm_total else 0.0
                xv = x * share
                f = Flow(reads=xv * vm.read_ratio, writes=xv * (1.0 - vm.read_ratio),
                         read_bytes=xv * vm.read_ratio * vm.block_size,
                         written_bytes=xv * (1.0 - vm.read_ratio) * vm.block_size,
                         conflicts=foreign_rate.get(key, 0.0) * actv[key] * share,
                         davg=davg if xv else 0.0, kavg=kavg if xv else 0.0,
                         qavg=qavg if xv else 0.0,
                         active=actv[key] * share, queued=q * share)
                res.worlds[hl.device, vm.world] = f
                flows.append(f)
            if hl.admin_world is not None:
                r = own_rate.get(key, 0.0)
                meta = r * _METADATA_IO_PER_RESERVATION
                f = Flow(reads=meta, writes=meta, other=2 * r, read_bytes=meta * _METADATA_BLOCK,
                         written_bytes=meta * _METADATA_BLOCK, reservations=r,
                         davg=device_time[hl.device] if r else 0.0,
                         kavg=KERNEL_OVERHEAD if r else 0.0)
                res.worlds[hl.device, hl.admin_world] = f
                flows.append(f)
            lun = merge(flows)
            res.luns[hl.device] = lun
            share = 1.0 / len(hl.active_paths)
            for path, _ in hl.active_paths:
                path_flows.setdefault(path, []).append(lun.scaled(share))
        for path, flows in path_flows.items():
            res.paths[path] = merge(flows)
        by_adapter: dict[str, list[Flow]] = {ad: [] for ad in h.links}
        for path, f in res.paths.items():
            by_adapter[path.split(":", 1)[0]].append(f)
        cpu_busy = h.base_cpu_util * h.cpus
        for ad, flows in by_adapter.items():
            res.adapters[ad] = merge(flows)
            cpu_busy += res.adapters[ad].commands * h.links[ad].cpu_per_command
        mean = min(1.0, cpu_busy / h.cpus)
        res.cpu_util = [min(1.0, max(0.0, mean * math.exp(rng.gauss(0.0, 0.1))))
                        for _ in range(h.cpus)]
        # keep the host total exact: per-CPU noise only redistributes the load
        total = sum(res.cpu_util)
        if total > 0:
            res.cpu_util = [min(1.0, u * mean * h.cpus / total) for u in res.cpu_util]
    return results
