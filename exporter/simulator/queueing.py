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
5. Storage I/O Control, on a LUN whose datastore has it on. SIOC is PARDA (Gulati, Ahmad and
   Waldspurger, "PARDA: Proportional Allocation of Resources for Distributed Storage Access",
   FAST 2009): each host sets its own device queue depth (window) from the datastore's latency,
   so that the latency stays near the congestion threshold L, and the windows settle in
   proportion to the shares of each host's VMs on the datastore. Its fixed point in this model:
   while the array would answer above L, the hosts together keep W = n x L / S commands active
   (the outstanding count at which the array answers in L: service time S, n absorbed), split by
   their VMs' shares, none given more than it asks or than its DQLEN, none cut below
   SIOC_MIN_DEPTH; the rest of each host's demand waits in its own queue (QUED, KAVG). The depth
   SIOC allows is what esxtop shows as DQLEN. Below L SIOC leaves every queue alone.

All values are in base units (seconds, bytes, per second); the esxtop writer converts to ms/MiB.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

SIOC_MIN_DEPTH = 4  # the smallest device queue depth the model lets SIOC leave a host (PARDA bounds its window below)
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
    queue_depth: float = 0.0  # DQLEN in force where Storage I/O Control cut it (LUN only); 0: the configured one

    @property
    def commands(self) -> float:
        return self.reads + self.writes + self.other

    @property
    def gavg(self) -> float:
        return self.davg + self.kavg

    def scaled(self, share: float) -> Flow:
        """The part of this flow carried by one of several paths (or worlds): rates scale, latency stays."""
        return Flow(
            self.reads * share,
            self.writes * share,
            self.other * share,
            self.read_bytes * share,
            self.written_bytes * share,
            self.reservations * share,
            self.conflicts * share,
            self.davg,
            self.kavg,
            self.qavg,
            self.active * share,
            self.queued * share,
        )


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
    shares: float = 1000.0  # its disk shares (storageIOAllocation; normal = 1000): how SIOC splits the datastore


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
    sioc_threshold: float | None = None  # seconds: SIOC's congestion threshold where it is on, None off


@dataclass(slots=True)
class Reservations:
    host: str
    lun: str
    rate: float  # reservations per second
    hold: float  # seconds each
    self_cost: float


@dataclass(slots=True)
class VaaiLoad:
    """VAAI commands one host sends to one LUN (spec.VaaiOps in base units)."""

    host: str
    lun: str
    per_second: dict[str, float]  # primitive (ats, clone, zero, unmap) -> commands per second
    failure_ratio: dict[str, float]  # primitive -> 0..1 of them failing
    block: dict[str, int]  # primitive -> bytes per command (clone, zero, unmap)


@dataclass(slots=True)
class VaaiFlow:
    """One host's VAAI commands on one LUN over one interval. Each command is charged the LUN's
    device time of the interval (the array's time per command): the model adds them no load."""

    done: dict[str, float] = field(default_factory=dict)  # primitive -> commands per second that succeeded
    failed: dict[str, float] = field(default_factory=dict)  # primitive -> commands per second that failed
    bytes: dict[str, float] = field(default_factory=dict)  # primitive -> bytes per second the successful ones moved
    latency: float = 0.0  # seconds per command, success and failure alike


@dataclass(slots=True)
class HostResult:
    vaai: dict[str, VaaiFlow] = field(default_factory=dict)  # device -> this host's VAAI commands
    luns: dict[str, Flow] = field(default_factory=dict)
    worlds: dict[tuple[str, str], Flow] = field(default_factory=dict)
    paths: dict[str, Flow] = field(default_factory=dict)
    adapters: dict[str, Flow] = field(default_factory=dict)
    cpu_util: list[float] = field(default_factory=list)  # per PCPU, 0..1


# Each reservation is a RESERVE and a RELEASE plus metadata reads and writes of one block.
_METADATA_IO_PER_RESERVATION = 2
_METADATA_BLOCK = 4096


@dataclass(slots=True)
class _Queue:
    """What one host lets onto one device, fixed for a given state: the deterministic half."""

    host: HostLoad
    lun: HostLunLoad
    active: float  # ACTV
    queued: float  # QUED
    block: float  # mean bytes per command
    shares: list[float]  # each VM's share of the host's commands to the device
    lost: float  # share of time reservations take the LUN from this host
    foreign_rate: float  # reservations per second by other hosts
    own_rate: float  # reservations per second by this host
    demand: float = 0.0  # outstanding commands the host's VMs keep on the device
    limit: float = 0.0  # what the VMkernel lets onto the device: DQLEN, or min(DSNRO, DQLEN)
    weight: float = 0.0  # shares of the host's VMs with I/O on the device
    sioc_depth: float = 0.0  # the device queue depth SIOC allows the host (0: SIOC not acting)


class Model:
    """The model for one state (phase, running VMs). Everything that does not depend on the
    per-interval jitter is worked out once here; `sample()` finishes it for one interval."""

    def __init__(
        self, hosts: list[HostLoad], array: dict[str, ArrayLun], reservations: list[Reservations], vaai: list[VaaiLoad] = ()
    ):
        self.hosts = hosts
        self.vaai = list(vaai)
        self.array = list(array.items())
        self.queues: dict[str, list[_Queue]] = {}
        outstanding: dict[str, float] = {}
        for h in hosts:
            qs = self.queues[h.name] = []
            for hl in h.luns:
                # 1. host queue: DQLEN, or min(DSNRO, DQLEN) when more than one world competes
                demand = sum(vm.oio for vm in hl.vms)
                competing = sum(1 for vm in hl.vms if vm.oio > 0)
                limit = hl.queue_depth if competing <= 1 else min(h.dsnro, hl.queue_depth)
                active = min(demand, limit)
                outstanding[hl.device] = outstanding.get(hl.device, 0.0) + active
                block = sum(vm.oio * vm.block_size for vm in hl.vms) / demand if demand else 0.0
                # 3. reservations
                lost = foreign = own = 0.0
                for r in reservations:
                    if r.lun != hl.device:
                        continue
                    if r.host == h.name:
                        lost += r.rate * r.hold * r.self_cost
                        own += r.rate
                    else:
                        lost += r.rate * r.hold
                        foreign += r.rate
                qs.append(
                    _Queue(
                        h,
                        hl,
                        active,
                        max(0, demand - limit),
                        block,
                        [vm.oio / demand if demand else 0.0 for vm in hl.vms],
                        lost,
                        foreign,
                        own,
                        demand,
                        limit,
                        sum(vm.shares for vm in hl.vms if vm.oio > 0),
                    )
                )
        # 5. Storage I/O Control: the hosts' windows on a congested LUN, before the array sees them
        for dev, lun in self.array:
            if lun.sioc_threshold is not None:
                on_lun = [q for qs in self.queues.values() for q in qs if q.lun.device == dev]
                outstanding[dev] = _sioc(on_lun, lun, outstanding.get(dev, 0.0))
        # 2. array: all hosts' active commands against what the disks absorb
        self.array_load = {dev: max(1.0, outstanding.get(dev, 0.0) / lun.absorbs) for dev, lun in self.array}

    def sample(self, rng: random.Random) -> dict[str, HostResult]:
        gauss, exp = rng.gauss, math.exp
        device_time = {dev: lun.service_time * self.array_load[dev] * exp(gauss(0.0, JITTER)) for dev, lun in self.array}
        out = {h.name: self._host(h, self.queues[h.name], device_time, rng) for h in self.hosts}
        for v in self.vaai:  # several entries for one host and LUN add up
            add_vaai(out[v.host].vaai.setdefault(v.lun, VaaiFlow(latency=device_time[v.lun])), v)
        return out

    @staticmethod
    def _host(h: HostLoad, queues: list[_Queue], device_time: dict[str, float], rng: random.Random) -> HostResult:
        res = HostResult()
        # 4a. unconstrained throughput per device, then the load it puts on each link
        first = []
        link_bytes = dict.fromkeys(h.links, 0.0)
        for q in queues:
            hl = q.lun
            wire = 0.0
            for _, adapter in hl.active_paths:
                cap = h.links[adapter].capacity
                if cap:
                    wire = max(wire, q.block / cap)
            davg = device_time[hl.device] / (1.0 - q.lost) + wire
            x = q.active / davg if q.active else 0.0
            per_path = x * q.block / len(hl.active_paths)
            for _, adapter in hl.active_paths:
                link_bytes[adapter] += per_path
            first.append((q, davg, x))
        slowdown = {ad: max(1.0, link_bytes[ad] / link.capacity) if link.capacity else 1.0 for ad, link in h.links.items()}

        # 4b. final per device, world, path
        path_flows: dict[str, list[Flow]] = {}
        for q, davg, x in first:
            hl = q.lun
            s = max(slowdown[ad] for _, ad in hl.active_paths)
            davg *= s
            x /= s
            qavg = q.queued / x if x else 0.0
            kavg = KERNEL_OVERHEAD * math.exp(rng.gauss(0.0, JITTER)) + qavg if x else 0.0
            conflicts = q.foreign_rate * q.active
            flows: list[Flow] = []
            for vm, share in zip(hl.vms, q.shares):
                if not share:
                    f = Flow()
                else:
                    xv, rr = x * share, vm.read_ratio
                    f = Flow(
                        reads=xv * rr,
                        writes=xv * (1.0 - rr),
                        read_bytes=xv * rr * vm.block_size,
                        written_bytes=xv * (1.0 - rr) * vm.block_size,
                        conflicts=conflicts * share,
                        davg=davg,
                        kavg=kavg,
                        qavg=qavg,
                        active=q.active * share,
                        queued=q.queued * share,
                    )
                res.worlds[hl.device, vm.world] = f
                flows.append(f)
            if hl.admin_world is not None:
                r = q.own_rate
                meta = r * _METADATA_IO_PER_RESERVATION
                f = Flow(
                    reads=meta,
                    writes=meta,
                    other=2 * r,
                    read_bytes=meta * _METADATA_BLOCK,
                    written_bytes=meta * _METADATA_BLOCK,
                    reservations=r,
                    davg=device_time[hl.device] if r else 0.0,
                    kavg=KERNEL_OVERHEAD if r else 0.0,
                )
                res.worlds[hl.device, hl.admin_world] = f
                flows.append(f)
            lun = merge(flows)
            lun.queue_depth = q.sioc_depth
            res.luns[hl.device] = lun
            paths = hl.active_paths
            part = lun if len(paths) == 1 else lun.scaled(1.0 / len(paths))
            for path, _ in paths:
                path_flows.setdefault(path, []).append(part)
        for path, flows in path_flows.items():
            res.paths[path] = flows[0] if len(flows) == 1 else merge(flows)
        by_adapter: dict[str, list[Flow]] = {ad: [] for ad in h.links}
        for path, f in res.paths.items():
            by_adapter[path.split(":", 1)[0]].append(f)
        cpu_busy = h.base_cpu_util * h.cpus
        for ad, flows in by_adapter.items():
            f = res.adapters[ad] = flows[0] if len(flows) == 1 else merge(flows)
            cpu_busy += f.commands * h.links[ad].cpu_per_command
        res.cpu_util = _spread(min(1.0, cpu_busy / h.cpus), h.cpus, rng)
        return res


def add_vaai(flow: VaaiFlow, v: VaaiLoad) -> None:
    """v's commands into flow: per primitive, those that succeed, those that fail, and the bytes
    the successful ones move."""
    for primitive, rate in v.per_second.items():
        failed = rate * v.failure_ratio.get(primitive, 0.0)
        flow.done[primitive] = flow.done.get(primitive, 0.0) + rate - failed
        flow.failed[primitive] = flow.failed.get(primitive, 0.0) + failed
        if primitive in v.block:
            flow.bytes[primitive] = flow.bytes.get(primitive, 0.0) + (rate - failed) * v.block[primitive]


def _sioc(queues: list[_Queue], lun: ArrayLun, outstanding: float) -> float:
    """Cut the hosts' queues on one LUN as SIOC settles them (step 5); returns the LUN's new total
    outstanding at the array. Below the threshold nothing changes."""
    if lun.service_time * max(1.0, outstanding / lun.absorbs) <= lun.sioc_threshold:
        return outstanding
    window = lun.absorbs * lun.sioc_threshold / lun.service_time  # the total the array serves in L
    asking = [q for q in queues if q.demand > 0]
    # Water-filling by shares: a host that needs less than its share keeps what it needs, and the
    # rest is split again among the others by their shares.
    given: dict[int, float] = {}
    left, open_ = window, list(asking)
    while open_:
        weights = sum(q.weight for q in open_)
        capped = [q for q in open_ if min(q.demand, q.limit) <= left * q.weight / weights]
        if not capped:
            for q in open_:
                given[id(q)] = left * q.weight / weights
            break
        for q in capped:
            given[id(q)] = min(q.demand, q.limit)
            left -= given[id(q)]
            open_.remove(q)
    total = 0.0
    for q in queues:
        configured = float(q.lun.queue_depth)
        if id(q) in given and given[id(q)] < min(q.demand, q.limit):  # cut below what it asks
            q.sioc_depth = min(configured, max(SIOC_MIN_DEPTH, round(given[id(q)])))
        else:  # SIOC allows it its whole queue: it asks for less than its share
            q.sioc_depth = configured
        q.active = min(q.demand, q.limit, q.sioc_depth)
        q.queued = q.demand - q.active
        total += q.active
    return total


def _spread(mean: float, cpus: int, rng: random.Random) -> list[float]:
    """Per-PCPU utilisation around `mean`; the noise only redistributes, the total stays exact."""
    raw = [math.exp(rng.gauss(0.0, 0.1)) for _ in range(cpus)]
    scale = mean * cpus / sum(raw)
    return [min(1.0, u * scale) for u in raw]
