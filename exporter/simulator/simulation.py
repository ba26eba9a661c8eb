"""A running scenario: simulated time, phases, one esxtop stream per host, inventories.

Time is simulated: `step()` advances it by `interval` without sleeping, so a 10-minute capture
takes milliseconds, and everything random comes from one seeded generator, so a run is
reproducible from (scenario, seed, interval, start).
"""

from __future__ import annotations

import random

from ..store.model import AdapterConfig, DatastoreConfig, Inventory, LunConfig, PathConfig, SiocConfig, VirtualDiskConfig
from . import queueing, smart_writer
from .esxtop_writer import CpuGroup, DeviceLayout, EsxtopWriter, HostLayout, VmDisks
from .spec import HostSpec, Phase, Scenario, VmSpec

# World and group ids in the range real ESXi hosts use for VMs and hostd.
_VM_GROUP_BASE, _VM_WORLD_BASE, _WORLD_STRIDE = 1_302_698, 444_767, 135
_HOSTD_GROUP, _HOSTD_WORLD = 5481, 66694
_VM_CPU_PCT = 12.0
_HOSTD_CPU_PCT = 1.5
# The world a SCSI controller's emulation runs in, named after the VM's I/O world as real hosts
# name it (PVSCSI-444903:0, LSI-444768:0); other controllers get no world of their own here.
_CONTROLLER_WORLD = {"pvscsi": "PVSCSI", "lsilogic": "LSI", "lsilogic-sas": "LSI"}


class Simulation:
    """Steps a scenario. The n-th `step()` (from 0) is the sample at start + n * interval; the
    first is esxtop's first sample, whose rates and latencies are all zero."""

    def __init__(self, scenario: Scenario, seed: int = 0, interval: float = 5.0, start: float = 1_700_000_000.0):
        if interval <= 0:
            raise ValueError("interval must be above zero")
        self.scenario = scenario
        self.interval = float(interval)
        self.start = float(start)
        self._rng = random.Random(seed)
        self._steps = 0
        self._specs = {h.name: h for h in scenario.hosts}
        self._io_world: dict[tuple[str, str], str] = {}  # (host, vm) -> world id of its I/O
        self._admin_luns = {(op.host, op.lun) for ph in scenario.phases for op in ph.vmfs_ops}
        self._writers = {h.name: EsxtopWriter(self._layout(h)) for h in scenario.hosts}
        self._cache: dict[tuple, queueing.Model] = {}
        self._vaai_totals: dict[str, dict[str, dict[str, float]]] = {}  # host -> device -> esxtop count -> total
        self._esxtop_restarted = False

    @property
    def hosts(self) -> list[str]:
        return [h.name for h in self.scenario.hosts]

    def header(self, host: str) -> str:
        """The esxtop header line of `host`'s stream, without newline."""
        return self._writers[host].header

    def host_cpu(self, host: str) -> tuple[int, float]:
        """(physical CPUs, MHz each) of `host`, for CPU cost per I/O (esxtop carries no clock rate)."""
        spec = self._specs[host]
        return spec.cpus, spec.cpu_mhz

    def step(self) -> dict[str, str]:
        """The next sample: one esxtop data line (without newline) per host."""
        n = self._steps
        self._steps += 1
        timestamp = self.start + n * self.interval
        if n == 0:
            return {h: w.data(timestamp, None) for h, w in self._writers.items()}
        # the state in the middle of the interval the sample covers
        results = self._model(n * self.interval - self.interval / 2).sample(self._rng)
        for host, result in results.items():
            self._count_vaai(host, result)  # the host counts whether esxtop runs or not
        if self._esxtop_restarted:
            self._esxtop_restarted = False
            return {h: w.data(timestamp, None) for h, w in self._writers.items()}
        return {h: w.data(timestamp, results[h], self._vaai_totals.get(h, {})) for h, w in self._writers.items()}

    def restart_esxtop(self) -> None:
        """esxtop starts again on every host (a new stream: its header, then a first sample of
        zeros); simulated time, the hosts' state and their VAAI totals go on."""
        self._esxtop_restarted = True

    def _count_vaai(self, host: str, result: queueing.HostResult) -> None:
        """Each device's VAAI totals since the host booted (the scenario's start), as esxtop prints them."""
        for device, flow in result.vaai.items():
            totals = self._vaai_totals.setdefault(host, {}).setdefault(device, {})
            for field, rate in (*_vaai_fields(flow.done, ""), *_vaai_fields(flow.failed, "_failed")):
                totals[field] = totals.get(field, 0.0) + rate * self.interval

    def phase_changed(self) -> bool:
        """Whether the newest step entered another phase than the step before it."""
        if self._steps < 2 or not self.scenario.phases:
            return False
        now = self._phase((self._steps - 1) * self.interval)[0]
        return now != self._phase((self._steps - 2) * self.interval)[0]

    def inventories(self) -> list[Inventory]:
        """Each host's storage configuration, as the vSphere API would report it."""
        mounts: dict[str, set[str]] = {}
        for h in self.scenario.hosts:
            for hl in h.luns:
                ds = self.scenario.luns[hl.device].datastore
                if ds:
                    mounts.setdefault(ds, set()).add(h.name)
        out = []
        for h in self.scenario.hosts:
            inv = Inventory(host=h.name, dsnro=float(h.dsnro), cpu_core_hertz=h.cpu_mhz * 1e6, cluster=h.cluster)
            for a in h.adapters:
                inv.adapters[a.name] = AdapterConfig(
                    type=a.type, model=a.model, driver=a.driver, link_speed_bytes_per_second=a.link_speed
                )
            for hl in h.luns:
                lun = self.scenario.luns[hl.device]
                inv.luns[hl.device] = LunConfig(
                    display_name=lun.display_name,
                    vendor=lun.vendor,
                    model=lun.model,
                    datastore=lun.datastore,
                    configured_queue_depth=float(hl.queue_depth),
                    dsnro=float(min(h.dsnro, hl.queue_depth)),
                )
                disk = next((d for d in h.disks if d.device == hl.device), None)
                if disk is not None:  # a local disk with SMART (exporter.smart reads only local devices)
                    inv.luns[hl.device].is_local = True
                    inv.luns[hl.device].is_ssd = disk.kind in ("ata_ssd", "nvme")
                config = dict(hl.config)
                reported = dict(config.pop("path_states", ()))
                vaai = dict(config.pop("vaai_status", ()))
                for field, value in config.items():  # what the host reports beyond the simulated I/O
                    setattr(inv.luns[hl.device], field, value)
                if vaai:  # esxcli's VAAI status, and the lock mode VMFS picks for the datastore on it
                    inv.luns[hl.device].vaai_status = vaai
                    if lun.datastore:
                        inv.vmfs_lock_modes[lun.datastore] = "ats_only" if vaai.get("ats") == "supported" else "ats_scsi"
                for path, state in hl.paths:
                    inv.paths[path] = PathConfig(device=hl.device, adapter=path.split(":", 1)[0], state=reported.get(path, state))
                if lun.datastore:
                    inv.datastore_hosts[lun.datastore] = len(mounts[lun.datastore])
                    inv.datastores[lun.datastore] = DatastoreConfig(type="vmfs", sioc=self._sioc_config(lun.sioc))
            settings = dict(h.vmfs)
            inv.vmfs_hardware_locking = settings.get("hardware_locking")
            inv.vmfs_ats_heartbeat = settings.get("ats_heartbeat")
            for vm in h.vms:
                for disk in vm.disk_names:
                    inv.vdisks[vm.name, disk] = self._vdisk_config(vm)
            out.append(inv)
        return out

    def _sioc_config(self, sioc) -> SiocConfig | None:
        """The datastore's iormConfiguration as vCenter would report it now (the phase may turn
        SIOC on or off); None for a scenario that gives none."""
        if sioc is None:
            return None
        _, phase = self._phase(max(0, self._steps - 1) * self.interval)
        enabled = sioc.enabled
        for dev, over in phase.luns.items() if phase else ():
            if self.scenario.luns[dev].sioc is sioc and "sioc_enabled" in over:
                enabled = over["sioc_enabled"]
        return SiocConfig(
            reported=True,
            enabled=enabled,
            stats_enabled=True,
            mode="manual",
            threshold_seconds=sioc.threshold,
            peak_throughput_ratio=0.9,
        )

    def disk_answers(self, host: str) -> dict[str, tuple[str, str | None, str, str | None]]:
        """What `host`'s esxcli answers about its local disks at the newest step's time: device ->
        (page: ata | nvme, its SMART page or None for a device without SMART, its NVMe
        controller or "", that controller's log or None)."""
        t = max(0, self._steps - 1) * self.interval
        out = {}
        for disk in self._specs[host].disks:
            page = "nvme" if disk.kind == "nvme" else "ata"
            text = None if disk.kind == "no_smart" else smart_writer.smart_page(disk, t)
            log = smart_writer.nvme_log(disk, t) if disk.kind == "nvme" else None
            out[disk.device] = (page, text, disk.adapter, log)
        return out

    def _vdisk_config(self, vm: VmSpec) -> VirtualDiskConfig:
        """A disk in a file on the VMFS datastore of the VM's LUN, or, where the LUN holds no
        datastore, the LUN itself mapped raw (a physical-mode RDM)."""
        datastore = self.scenario.luns[vm.lun].datastore
        return VirtualDiskConfig(
            datastore=datastore,
            datastore_type="vmfs" if datastore else "",
            devices=(vm.lun,),
            backing="flat" if datastore else "rdm",
            compatibility_mode="" if datastore else "physical",
            controller=vm.controller,
            provisioning=vm.provisioning if datastore else "",
            shares=float(vm.shares),
        )

    # --- internals ---------------------------------------------------------------------------
    def _layout(self, h: HostSpec) -> HostLayout:
        groups = []
        for k, vm in enumerate(h.vms):
            gid, wid = _VM_GROUP_BASE + 1000 * k, _VM_WORLD_BASE + _WORLD_STRIDE * k
            io = wid + 1  # the world that issues the VM's disk I/O
            self._io_world[h.name, vm.name] = str(io)
            worlds = (
                (wid, "vmx"),
                (wid + 2, f"NetWorld-VM-{io}"),
                (wid + 3, f"vmast.{io}"),
                (wid + 4, f"vmx-vcpu-0:{vm.name}"),
            )
            if vm.controller in _CONTROLLER_WORLD:
                worlds += ((wid + 5, f"{_CONTROLLER_WORLD[vm.controller]}-{io}:0"),)
            groups.append(CpuGroup(gid, vm.name, worlds, _VM_CPU_PCT, busy_world=3))
        if any(host == h.name for host, _ in self._admin_luns):
            groups.insert(0, CpuGroup(_HOSTD_GROUP, f"hostd.{_HOSTD_WORLD}", ((_HOSTD_WORLD, "hostd-worker"),), _HOSTD_CPU_PCT))
        devices = []
        for hl in h.luns:
            worlds = [self._io_world[h.name, vm.name] for vm in h.vms if vm.lun == hl.device]
            if (h.name, hl.device) in self._admin_luns:
                worlds.append(str(_HOSTD_WORLD))
            devices.append(
                DeviceLayout(
                    hl.device, hl.queue_depth, min(h.dsnro, hl.queue_depth), tuple(p for p, _ in hl.paths), tuple(worlds)
                )
            )
        vms = tuple(VmDisks(vm.name, vm.lun, self._io_world[h.name, vm.name], vm.disk_names) for vm in h.vms)
        return HostLayout(h.name, h.cpus, tuple(groups), tuple((a.name, a.queue_depth) for a in h.adapters), tuple(devices), vms)

    def _phase(self, t: float) -> tuple[int, Phase | None]:
        phases = self.scenario.phases
        if not phases:
            return -1, None
        total = sum(p.duration for p in phases)
        if self.scenario.repeat:
            t %= total
        for i, p in enumerate(phases):
            if t < p.duration:
                return i, p
            t -= p.duration
        return len(phases) - 1, phases[-1]

    def _model(self, t: float) -> queueing.Model:
        index, phase = self._phase(t)
        running = frozenset(
            (h.name, vm.name) for h in self.scenario.hosts for vm in h.vms if vm.start <= t and (vm.stop is None or t < vm.stop)
        )
        key = (index, running)
        if key not in self._cache:
            self._cache[key] = self._build(phase, running)
        return self._cache[key]

    def _build(self, phase: Phase | None, running: frozenset):
        vm_over = phase.vms if phase else {}
        lun_over = phase.luns if phase else {}
        ops = phase.vmfs_ops if phase else ()
        loads = []
        for h in self.scenario.hosts:
            links = {
                a.name: queueing.Link(a.link_speed * a.link_efficiency if a.link_speed else None, a.cpu_per_command)
                for a in h.adapters
            }
            luns = []
            for hl in h.luns:
                vms = [
                    self._vm_load(h, vm, vm_over.get(vm.name, {}), (h.name, vm.name) in running)
                    for vm in h.vms
                    if vm.lun == hl.device
                ]
                active = [(p, p.split(":", 1)[0]) for p, state in hl.paths if state == "active"]
                admin = str(_HOSTD_WORLD) if (h.name, hl.device) in self._admin_luns else None
                luns.append(queueing.HostLunLoad(hl.device, hl.queue_depth, active, vms, admin))
            loads.append(queueing.HostLoad(h.name, h.dsnro, h.cpus, h.base_cpu_util, links, luns))
        array = {}
        for dev, lun in self.scenario.luns.items():
            over = lun_over.get(dev, {})
            sioc_on = lun.sioc is not None and over.get("sioc_enabled", lun.sioc.enabled)
            array[dev] = queueing.ArrayLun(
                over.get("service_time", lun.service_time),
                over.get("absorbs", lun.absorbs),
                lun.sioc.threshold if sioc_on else None,
            )
        reservations = [queueing.Reservations(op.host, op.lun, op.reservations_per_second, op.hold, op.self_cost) for op in ops]
        vaai = [
            queueing.VaaiLoad(op.host, op.lun, dict(op.per_second), dict(op.failure_ratio), dict(op.block))
            for op in self.scenario.vaai_ops + (phase.vaai_ops if phase else ())
        ]
        return queueing.Model(loads, array, reservations, vaai)

    def _vm_load(self, h: HostSpec, vm: VmSpec, over: dict, running: bool) -> queueing.VmLoad:
        return queueing.VmLoad(
            self._io_world[h.name, vm.name],
            over.get("oio", vm.oio) if running else 0,
            over.get("block_size", vm.block_size),
            over.get("read_ratio", vm.read_ratio),
            float(vm.shares),
        )


def _vaai_fields(rates: dict[str, float], suffix: str):
    """(esxtop count, rate) pairs: a clone within one LUN is read from it and written to it."""
    for primitive, rate in rates.items():
        if primitive == "clone" and not suffix:
            yield from (("clone_read", rate), ("clone_write", rate))
        else:
            yield primitive + suffix, rate
