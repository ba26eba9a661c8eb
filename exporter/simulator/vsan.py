"""A simulated vSAN cluster (scenario files with `kind: vsan`): what its performance service would
answer, written in the service's own form (entity rows of CSV values in vSAN's units) and read by
the real vSAN reader (exporter.vsan.perfcsv), as the esxtop simulator writes esxtop for the esxtop
reader.

The model, per disk group and step: VMs' writes land in the cache tier's write buffer and are
destaged to the capacity disks at most at their rate. During the scenario's incident one host's
VMs write a burst faster than its disk groups destage, so the buffer fills; under 30% free vSAN
raises congestion (its back-pressure) in proportion to how full it is, and the host's write
latency grows with the congestion, past 50 ms near a full buffer. After the burst the buffer
drains and congestion and latency fall back. Reads stay fast: they are served by the read cache.

The incident `kind: lossy-nic` is the network's instead: one host's first vSAN vmnic drops
packets (receive loss, CRC errors counted, TCP retransmits on every host), and the write latency
of every host rises, since each write waits for its replica on that host; the disks stay fast
and no congestion is raised. `architecture: esa` gives the cluster vSAN ESA's storage pool disks
(per disk, the vSAN layer per tier and the device layer) in place of disk groups. Every cluster
has the vSAN network (per host, vmnic and vmknic; TCP per host and netstack) and the backend
(component manager and owner), with a small rebalancing resync on every host: its owner runs
resync jobs and the component manager's resync queue is not empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import yaml

from exporter.store import model as m
from exporter.vsan import health, perfcsv
from exporter.vsan import metrics as vm

from .spec import ScenarioError
from .units import duration

KIB = 1024
SAMPLE_SECONDS = perfcsv.DEFAULT_INTERVAL  # the performance service's sample interval
CONGESTION_STARTS_FREE = 0.30  # vSAN starts throttling writes when the buffer has less free
CONGESTION_MAX_PER_SECOND = 2.0  # at a full buffer
BASE_WRITE_LATENCY_US = 2000.0
BASE_READ_LATENCY_US = 1200.0
WRITE_LATENCY_PER_CONGESTION_US = 40000.0  # per unit of congestion per second: 2/s -> +80 ms
LOSSY_NIC_LOSS_PER_MILLE = 15.0  # the lossy vmnic's receive loss during the incident (1.5%)
WRITE_LATENCY_PER_LOSS_PER_MILLE_US = 4000.0  # a replica write waits out retransmits: 15 per mille -> +60 ms
INCIDENTS = ("write-burst", "lossy-nic")
NETSTACK = "defaultTcpipStack"  # the vSAN vmknic's TCP/IP stack
RESYNC_JOBS_RUNNING = 2.0  # per host: the rebalancing resync's jobs
RESYNC_JOBS_PENDING = 3.0
ARCHITECTURES = ("osa", "esa")


@dataclass(frozen=True)
class Incident:
    host: int  # 1-based index of the host whose VMs write the burst (lossy-nic: whose vmnic drops packets)
    after: float  # seconds of healthy running before it
    burst: float  # seconds the burst lasts
    calm: float  # seconds after it before the cycle starts again
    kind: str = "write-burst"  # or lossy-nic


@dataclass(frozen=True)
class VsanScenario:
    name: str
    description: str
    cluster: str
    hosts: int
    disk_groups: int  # per host
    capacity_disks: int  # per disk group
    vms: int  # per host
    vm_reads: float  # per VM, per second
    vm_writes: float
    block: float  # bytes per I/O
    burst_factor: float  # the incident host's VMs write this many times more
    buffer_bytes: float  # write buffer per disk group
    destage_bytes: float  # per disk group and second, at most
    capacity_bytes: float  # raw, per capacity disk
    used_ratio: float
    incident: Incident
    esa: bool = False  # vSAN ESA: storage pool disks, no disk groups
    vmnics: int = 2  # vSAN vmnics per host
    link_bytes: float = 25e9 / 8  # each vmnic's link speed, bytes per second

    @property
    def cycle(self) -> float:
        return self.incident.after + self.incident.burst + self.incident.calm


_KEYS = {
    "kind", "description", "cluster", "hosts", "disk_groups", "capacity_disks", "vms", "workload", "incident", "capacity",
    "architecture", "network",
}  # fmt: skip


def parse(text: str, name: str, file: str) -> VsanScenario:
    """A `kind: vsan` scenario; ScenarioError naming the file and key for anything wrong."""
    doc = yaml.safe_load(text) or {}
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise ScenarioError(f"{file}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")

    def get(section: dict, key: str, where: str, convert, default):
        value = section.get(key, default)
        try:
            return convert(value)
        except (TypeError, ValueError) as err:
            raise ScenarioError(f"{file}: {where}{key}: {err}") from None

    workload, incident, capacity = doc.get("workload") or {}, doc.get("incident") or {}, doc.get("capacity") or {}
    network = doc.get("network") or {}
    architecture = str(doc.get("architecture", "osa"))
    if architecture not in ARCHITECTURES:
        raise ScenarioError(f"{file}: architecture: {architecture!r} is not one of {', '.join(ARCHITECTURES)}")
    kind = str(incident.get("kind", "write-burst"))
    if kind not in INCIDENTS:
        raise ScenarioError(f"{file}: incident.kind: {kind!r} is not one of {', '.join(INCIDENTS)}")
    hosts = get(doc, "hosts", "", _positive_int, 4)
    scenario = VsanScenario(
        name=name,
        description=str(doc.get("description", "")),
        cluster=str(doc.get("cluster", "vsan-sim")),
        hosts=hosts,
        disk_groups=get(doc, "disk_groups", "", _positive_int, 2),
        capacity_disks=get(doc, "capacity_disks", "", _positive_int, 3),
        vms=get(doc, "vms", "", _positive_int, 5),
        vm_reads=get(workload, "reads", "workload.", _positive, 200),
        vm_writes=get(workload, "writes", "workload.", _positive, 100),
        block=get(workload, "block_kib", "workload.", _positive, 32) * KIB,
        burst_factor=get(workload, "burst_factor", "workload.", _positive, 8),
        buffer_bytes=get(capacity, "write_buffer_gib", "capacity.", _positive, 4) * KIB**3,
        destage_bytes=get(capacity, "destage_mib_per_second", "capacity.", _positive, 48) * KIB**2,
        capacity_bytes=get(capacity, "disk_tib", "capacity.", _positive, 1.92) * KIB**4,
        used_ratio=get(capacity, "used_ratio", "capacity.", _ratio, 0.6),
        incident=Incident(
            host=get(incident, "host", "incident.", _positive_int, 2),
            after=get(incident, "after", "incident.", duration, "60s"),
            burst=get(incident, "burst", "incident.", duration, "240s"),
            calm=get(incident, "calm", "incident.", duration, "300s"),
            kind=kind,
        ),
        esa=architecture == "esa",
        vmnics=get(network, "vmnics", "network.", _positive_int, 2),
        link_bytes=get(network, "link_gbps", "network.", _positive, 25) * 1e9 / 8,
    )
    if scenario.incident.host > hosts:
        raise ScenarioError(f"{file}: incident.host: {scenario.incident.host} is not one of the {hosts} hosts")
    return scenario


def _positive_int(value) -> int:
    number = int(value)
    if number < 1 or number != value:
        raise ValueError(f"must be a whole number of 1 or more, not {value!r}")
    return number


def _positive(value) -> float:
    number = float(value)
    if not number > 0 or math.isinf(number):
        raise ValueError(f"must be a number above 0, not {value!r}")
    return number


def _ratio(value) -> float:
    number = float(value)
    if not 0 <= number < 1:
        raise ValueError(f"must be at least 0 and under 1, not {value!r}")
    return number


@dataclass
class _Group:
    host: str
    cache: str  # device
    capacity: list[str]
    used: float = 0.2  # write buffer used, 0..1


@dataclass
class VsanSimulation:
    """The cluster in simulated time: step(dt) advances it and returns the service's answer."""

    scenario: VsanScenario
    start: float
    now: float = 0.0  # simulated seconds since start
    groups: list[_Group] = field(default_factory=list)
    errors: dict[tuple[str, str], float] = field(default_factory=dict)  # (host, vmnic) -> CRC errors since boot

    def __post_init__(self):
        s = self.scenario
        for h in range(1, s.hosts + 1):
            for g in range(1, s.disk_groups + 1):
                cache = f"naa.5000c50{h:02d}{g:02d}00000"
                capacity = [f"naa.5000c50{h:02d}{g:02d}{d:05d}" for d in range(1, s.capacity_disks + 1)]
                self.groups.append(_Group(host=self.host(h), cache=cache, capacity=capacity))

    # --- the cluster's configuration --------------------------------------------------------
    def host(self, index: int) -> str:
        return f"esx-vsan{index:02d}.lab.local"

    @property
    def hosts(self) -> list[str]:
        return [self.host(h) for h in range(1, self.scenario.hosts + 1)]

    def vms(self, host: str) -> list[str]:
        index = self.hosts.index(host) + 1
        return [f"vsan-vm{index:02d}{v:02d}" for v in range(1, self.scenario.vms + 1)]

    def vmnics(self) -> list[str]:
        return [f"vmnic{n + 2}" for n in range(self.scenario.vmnics)]

    def names(self) -> perfcsv.Names:
        names = perfcsv.Names()
        for host in self.hosts:
            names.hosts[_uuid("node", host)] = host
            for vm_name in self.vms(host):
                names.vms[_uuid("vm", vm_name)] = vm_name
        for group in self.groups:
            if not self.scenario.esa:
                names.disk_groups[_uuid("disk", group.cache)] = (group.host, group.cache)
            for device in [group.cache, *group.capacity]:
                names.disks[_uuid("disk", device)] = (group.host, device)
        return names

    def cluster(self) -> m.VsanCluster:
        s = self.scenario
        record = m.VsanCluster(name=s.cluster, uuid=_uuid("cluster", s.cluster), esa=s.esa)
        record.hosts = {host: _uuid("node", host) for host in self.hosts}
        for group in self.groups:
            for device, tier in [(group.cache, "cache"), *((d, "capacity") for d in group.capacity)]:
                if s.esa:  # every disk in the storage pool, no disk group
                    group_name, tier = "", "storage_pool"
                else:
                    group_name = group.cache
                record.disks[(group.host, device)] = m.VsanDisk(group.host, device, group_name, tier, _uuid("disk", device))
        record.nic_speeds = {(host, nic): s.link_bytes for host in self.hosts for nic in self.vmnics()}
        record.vms = {vm_name: (_uuid("vm", vm_name), host) for host in self.hosts for vm_name in self.vms(host)}
        return record

    def inventories(self) -> list[m.Inventory]:
        """Each host's local disks as LUNs (the `device` the vSAN disks share with the LUN families)."""
        out = []
        for host in self.hosts:
            inventory = m.Inventory(host=host, cluster=self.scenario.cluster)
            for group in (g for g in self.groups if g.host == host):
                for device, ssd in [(group.cache, True), *((d, True) for d in group.capacity)]:
                    inventory.luns[device] = m.LunConfig(
                        display_name=f"Local NVMe Disk ({device})", vendor="NVMe", model="vSAN sim", is_ssd=ssd, is_local=True
                    )
            out.append(inventory)
        return out

    # --- the performance service --------------------------------------------------------------
    def _burst(self, host: str) -> bool:
        s, t = self.scenario, self.now % self.scenario.cycle
        return host == self.host(s.incident.host) and s.incident.after <= t < s.incident.after + s.incident.burst

    def _loss(self, host: str, nic: str) -> float:
        """A vmnic's receive loss, per mille, as the service gives it."""
        s = self.scenario
        lossy = s.incident.kind == "lossy-nic" and self._burst(host) and nic == self.vmnics()[0]
        return LOSSY_NIC_LOSS_PER_MILLE if lossy else 0.0

    def step(self, dt: float) -> list[tuple[str, str, list[tuple[str, str, float]]]]:
        """Advance dt seconds; the performance service's answer for the sample that ends now:
        (entityRefId, sampleInfo, [(label, CSV values, collect interval)])."""
        s = self.scenario
        self.now += dt
        stamp = math.floor(self.start + self.now)
        info = perfcsv.format_time(stamp)
        rows = []
        host_stats: dict[str, dict[str, float]] = {}
        # lossy-nic: every host's writes wait for their replica on the host whose vmnic drops packets
        loss = max(self._loss(h, n) for h in self.hosts for n in self.vmnics())
        for host in self.hosts:
            factor = s.burst_factor if s.incident.kind == "write-burst" and self._burst(host) else 1.0
            writes = s.vm_writes * s.vms * factor
            reads = s.vm_reads * s.vms
            groups = [g for g in self.groups if g.host == host]
            congestions = []
            for group in groups:
                written = writes * s.block / len(groups)
                # Destaging runs harder the fuller the buffer (vSAN's elevator), never above the capacity tier's rate.
                destaged = s.destage_bytes * min(1.0, 0.2 + group.used)
                group.used = min(0.995, max(0.05, group.used + (written - destaged) * dt / s.buffer_bytes))
                free = 1.0 - group.used
                congestion = CONGESTION_MAX_PER_SECOND * max(0.0, (CONGESTION_STARTS_FREE - free) / CONGESTION_STARTS_FREE)
                congestions.append(congestion)
                read = reads * s.block / len(groups)
                if s.esa:
                    rows += self._esa_rows(group, info, dt, written, destaged, read, congestion)
                else:
                    rows += self._group_rows(group, info, dt, written, destaged, read, congestion)
            congestion = max(congestions)
            write_latency = BASE_WRITE_LATENCY_US + WRITE_LATENCY_PER_CONGESTION_US * congestion
            write_latency += WRITE_LATENCY_PER_LOSS_PER_MILLE_US * loss
            stats = {
                "iopsRead": reads,
                "iopsWrite": writes,
                "throughputRead": reads * s.block,
                "throughputWrite": writes * s.block,
                "latencyAvgRead": BASE_READ_LATENCY_US,
                "latencyAvgWrite": write_latency,
                "congestion": congestion * SAMPLE_SECONDS,  # the service's count over its sample
                "clientCacheHitRate": 12.0,
            }
            stats["oio"] = reads * BASE_READ_LATENCY_US / 1e6 + writes * write_latency / 1e6  # Little's law
            host_stats[host] = stats
            rows.append((f"{vm.HOST}:{_uuid('node', host)}", info, _series(stats, dt)))
            rows += self._network_rows(host, info, dt, stats, loss)
            rows += self._backend_rows(host, info, dt, stats)
            for vm_name in self.vms(host):
                per_vm = {
                    "iopsRead": reads / s.vms,
                    "iopsWrite": writes / s.vms,
                    "throughputRead": reads * s.block / s.vms,
                    "throughputWrite": writes * s.block / s.vms,
                    "latencyRead": BASE_READ_LATENCY_US,
                    "latencyWrite": write_latency,
                }
                rows.append((f"{vm.VM}:{_uuid('vm', vm_name)}", info, _series(per_vm, dt)))
        cluster = _cluster_stats(host_stats)
        rows.append((f"{vm.CLUSTER}:{_uuid('cluster', s.cluster)}", info, _series(cluster, dt)))
        backend = {**cluster, "iopsRecWrite": 0.0, "throughputRecWrite": 0.0, "iopsResyncRead": 0.0, "tputResyncRead": 0.0}
        rows.append((f"{vm.CLUSTER_BACKEND}:{_uuid('cluster', s.cluster)}", info, _series(backend, dt)))
        owner = {**backend, "avgResyncParallelism": RESYNC_JOBS_RUNNING * s.hosts, **_resync_jobs(s.hosts)}
        rows.append((f"{vm.CLUSTER_OWNER}:{_uuid('cluster', s.cluster)}", info, _series(owner, dt)))
        return rows

    def _network_rows(self, host: str, info: str, dt: float, stats: dict[str, float], loss: float):
        """The host's vSAN network: its VMs' reads come in and writes go out once more as replicas,
        spread over its vmnics; the lossy vmnic loses packets and counts CRC errors."""
        node = _uuid("node", host)
        rx, tx = stats["throughputRead"] + stats["throughputWrite"], stats["throughputWrite"] + stats["throughputRead"] / 2
        packets = 8 * KIB
        own = max(self._loss(host, nic) for nic in self.vmnics())
        common = {"rxThroughput": rx, "txThroughput": tx, "rxPackets": rx / packets, "txPackets": tx / packets,
                  "txPacketsLossRate": 0.0, "portRxDrops": 0.0, "portTxDrops": 0.0}  # fmt: skip
        rows = [
            (f"{vm.HOST_NETWORK}:{node}", info, _series({**common, "rxPacketsLossRate": own / len(self.vmnics())}, dt)),
            # per mille: 2 (0.2%) when healthy, every host retransmitting to the lossy one during the incident
            (f"{vm.TCPIP}:{node}|{NETSTACK}", info, _series({"tcpTxRexmitRate": 2.0 + 2.0 * loss, "tcpRxErrRate": 0.0}, dt)),
            (f"{vm.VMKNIC}:{node}|{NETSTACK}|vmk1", info, _series({**common, "rxPacketsLossRate": own / len(self.vmnics())}, dt)),
        ]  # fmt: skip
        for nic in self.vmnics():
            nic_loss = self._loss(host, nic)
            self.errors[(host, nic)] = self.errors.get((host, nic), 0.0) + (nic_loss * rx / packets / 1000 / 10) * dt
            share = 1 / len(self.vmnics())
            rows.append((f"{vm.NIC}:{node}|{nic}", info, _series({
                "rxThroughput": rx * share, "txThroughput": tx * share, "rxPackets": rx * share / packets,
                "txPackets": tx * share / packets, "rxPacketsLossRate": nic_loss, "txPacketsLossRate": 0.0,
                "portRxDrops": 0.0, "portTxDrops": 0.0, "rxCrcErr": nic_loss / 10, "rxErr": nic_loss / 10, "txErr": 0.0,
                "pauseCount": 0.0, "rxCrcErrRaw": self.errors[(host, nic)], "rxErrRaw": self.errors[(host, nic)],
                "txErrRaw": 0.0, "pauseCountRaw": 0.0, "pfcCountRaw": 0.0}, dt)))  # fmt: skip
        return rows

    def _backend_rows(self, host: str, info: str, dt: float, stats: dict[str, float]):
        """The host's component manager: the VMs' I/O it takes, and a small rebalancing resync."""
        backend = {key: stats[key] for key in ("iopsRead", "iopsWrite", "throughputRead", "throughputWrite",
                   "latencyAvgRead", "latencyAvgWrite", "oio")}  # fmt: skip
        backend |= {"iopsRecWrite": 4.0, "throughputRecWrite": 4 * 256 * KIB, "latencyAvgRecWrite": 1500.0,
                    "iopsResyncRead": 4.0, "tputResyncRead": 4 * 256 * KIB, "latAvgResyncRead": 900.0, "congestion": 0.0}  # fmt: skip
        # Little's law per class: the resync's I/O in flight, the VMs' queued by their latency
        resync_writes, resync_reads = 4.0 * 1500.0 / 1e6, 4.0 * 900.0 / 1e6
        backend |= {"oioRecoveryWrite": resync_writes, "oioResyncRead": resync_reads,
                    "vmdiskQueueDepthRead": stats["iopsRead"] * stats["latencyAvgRead"] / 1e6,
                    "vmdiskQueueDepthWrite": stats["iopsWrite"] * stats["latencyAvgWrite"] / 1e6,
                    "namespaceQueueDepthRead": 0.0, "namespaceQueueDepthWrite": 0.0,
                    "metadataQueueDepthRead": 0.0, "metadataQueueDepthWrite": 0.1,
                    "resyncQueueDepthRead": 1.0 + resync_reads, "resyncQueueDepthWrite": 1.0 + resync_writes}  # fmt: skip
        node = _uuid("node", host)
        return [
            (f"{vm.HOST_BACKEND}:{node}", info, _series(backend, dt)),
            (f"{vm.HOST_OWNER}:{node}", info, _series({**_resync_jobs(1), "numBlockedResyncJobs": 0.0}, dt)),
        ]

    def _group_rows(self, group: _Group, info: str, dt: float, written: float, destaged: float, read: float, congestion: float):
        s = self.scenario
        free = 1.0 - group.used
        writes, reads = written / s.block, read / s.block
        stats = {
            "iopsRead": reads,
            "iopsWrite": writes,
            "throughputRead": read,
            "throughputWrite": written,
            "latencyAvgRead": 400.0,
            "latencyAvgWrite": 600.0 + WRITE_LATENCY_PER_CONGESTION_US * congestion,
            "wbFreePct": 100.0 * free,
            "rcHitRate": 95.0,
            "oioWrite": writes * 0.0006,
            "latencyDelaySched": 300.0 + 20000.0 * congestion,
            "iopsSched": writes * min(1.0, congestion),
            "iopsDelayPctSched": 100.0 * min(1.0, congestion / CONGESTION_MAX_PER_SECOND),
            "ssdCongestion": congestion * SAMPLE_SECONDS,
            "logCongestion": 0.1 * congestion * SAMPLE_SECONDS,
            "memCongestion": 0.0,
            "slabCongestion": 0.0,
            "compCongestion": 0.0,
            "iopsCongestion": 0.0,
        }
        rows = [(f"{vm.DISK_GROUP}:{_uuid('disk', group.cache)}", info, _series(stats, dt))]
        cache = {
            "iopsDevRead": reads * 0.95,
            "iopsDevWrite": writes + destaged / s.block,
            "throughputDevRead": read * 0.95,
            "throughputDevWrite": written + destaged,
            "latencyDevRead": 150.0,
            "latencyDevWrite": 300.0,
            "latencyDevDAvg": 250.0,
            "latencyDevGAvg": 260.0,
        }
        rows.append((f"{vm.CACHE_DISK}:{_uuid('disk', group.cache)}", info, _series(cache, dt)))
        for device in group.capacity:
            share = destaged / len(group.capacity)
            busy = min(1.0, destaged / s.destage_bytes)  # the capacity disks queue as destaging nears their rate
            capacity = {
                "iopsDevRead": reads * 0.05 / len(group.capacity),
                "iopsDevWrite": share / (256 * KIB),
                "throughputDevRead": read * 0.05 / len(group.capacity),
                "throughputDevWrite": share,
                "latencyDevRead": 2000.0,
                "latencyDevWrite": 3000.0 + 12000.0 * busy,
                "latencyDevDAvg": 2500.0 + 10000.0 * busy,
                "latencyDevGAvg": 2600.0 + 10000.0 * busy,
            }
            rows.append((f"{vm.CAPACITY_DISK}:{_uuid('disk', device)}", info, _series(capacity, dt)))
        return rows

    def _esa_rows(self, group: _Group, info: str, dt: float, written: float, destaged: float, read: float, congestion: float):
        """vSAN ESA's storage pool disks: writes land in the performance tier (its log) and are
        moved to the capacity tier at most at its rate; the device layer beneath both."""
        s = self.scenario
        devices = [group.cache, *group.capacity]
        rows = []
        for device in devices:
            w, r, moved = written / len(devices), read / len(devices), destaged / len(devices)
            busy = min(1.0, destaged / s.destage_bytes)
            layer = {
                "iopsReadPerf": r / s.block * 0.3, "iopsWritePerf": w / s.block, "iopsUnmapPerf": 0.0,
                "tputReadPerf": r * 0.3, "tputWritePerf": w, "tputUnmapPerf": 0.0,
                "avgLatReadPerf": 300.0, "avgLatWritePerf": 500.0 + WRITE_LATENCY_PER_CONGESTION_US * congestion,
                "avgLatUnmapPerf": 0.0,
                "iopsReadCapacity": r / s.block * 0.7, "iopsWriteCapacity": moved / (256 * KIB), "iopsUnmapCapacity": 0.0,
                "tputReadCapacity": r * 0.7, "tputWriteCapacity": moved, "tputUnmapCapacity": 0.0,
                "avgLatReadCapacity": 600.0, "avgLatWriteCapacity": 900.0 + 8000.0 * busy, "avgLatUnmapCapacity": 0.0,
            }  # fmt: skip
            device_layer = {
                "iopsDevRead": r / s.block, "iopsDevWrite": (w + moved) / s.block, "iopsDevUnmap": 0.0,
                "throughputDevRead": r, "throughputDevWrite": w + moved, "throughputDevUnmap": 0.0,
                "latencyDevRead": 150.0, "latencyDevWrite": 250.0 + 2000.0 * busy, "latencyDevUnmap": 0.0,
                "latencyDevDAvg": 200.0 + 1500.0 * busy, "latencyDevKAvg": 15.0, "latencyDevGAvg": 215.0 + 1500.0 * busy,
                "outstandingCmdCount": 2.0 + 30.0 * busy,
            }  # fmt: skip
            uuid = _uuid("disk", device)
            rows.append((f"{vm.ESA_DISK_LAYER}:{uuid}", info, _series(layer, dt)))
            rows.append((f"{vm.ESA_DISK_DEVICE}:{uuid}", info, _series(device_layer, dt)))
        return rows

    def summary(self, record: m.VsanCluster) -> None:
        """The health, space and resync answers (vSAN's objects, as the health module reads them)."""
        s = self.scenario
        objects = s.hosts * s.vms * 3  # home, disk, swap per VM
        health.apply_summary(
            record,
            _Obj(
                overallHealth="green",
                timestamp=None,
                objectHealth=_Obj(objectHealthDetail=[_Obj(health="healthy", numObjects=objects)]),
            ),
        )
        raw = s.hosts * s.disk_groups * s.capacity_disks * s.capacity_bytes
        health.apply_space(record, _Obj(totalCapacityB=raw, freeCapacityB=raw * (1 - s.used_ratio)))
        health.apply_resync(record, _Obj(totalBytesToSync=0, totalObjectsToSync=0, totalRecoveryETA=0))


class _Obj:
    """A stand-in for the pyVmomi answer objects health.apply_* read (attributes only)."""

    def __init__(self, **values):
        self.__dict__.update(values)


def _cluster_stats(hosts: dict[str, dict[str, float]]) -> dict[str, float]:
    total = {
        key: sum(stats[key] for stats in hosts.values())
        for key in ("iopsRead", "iopsWrite", "throughputRead", "throughputWrite", "oio", "congestion")
    }
    for latency, weight in (("latencyAvgRead", "iopsRead"), ("latencyAvgWrite", "iopsWrite")):
        total[latency] = sum(s[latency] * s[weight] for s in hosts.values()) / max(total[weight], 1e-9)
    return total


def _resync_jobs(hosts: int) -> dict[str, float]:
    """The rebalancing resync's jobs on this many hosts' owners."""
    return {
        "numPendingResyncJobs": RESYNC_JOBS_PENDING * hosts,
        "numRunningResyncJobs": RESYNC_JOBS_RUNNING * hosts,
        "numSuspendedResyncJobs": 0.0,
    }


def _series(stats: dict[str, float], dt: float) -> list[tuple[str, str, float]]:
    # Each step stands for one of the service's samples, whatever its pace: its counts are over
    # the service's interval, which the reader requires to be 1 s to a day.
    return [(label, f"{value:.3f}", SAMPLE_SECONDS) for label, value in stats.items()]


def _uuid(kind: str, name: str) -> str:
    """A stable uuid-looking id for a simulated object."""
    import hashlib

    digest = hashlib.sha256(f"{kind}:{name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
