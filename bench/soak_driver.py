"""The soak's driver: changes the storage simulator's inventory at random, from a seed, through
the vSphere API (pyVmomi, a session of its own straight to the simulator), as vCenter allows
them; and disturbs it: restarts it on the same address, ends the exporter's sessions, stalls its
answers (bench/soak_proxy.py). Before and after each change it records the simulator's inventory
(bench/soak_checks.py's Inventory), and it keeps the timeline of the disturbances. A watch looks at
the simulator's process every WATCH_EVERY seconds: a crash is a down time in the timeline and a
failure of the simulator (Driver.crashes); the driver starts it again.

The changes follow vCenter's rules even where the simulator is laxer: a host goes into
maintenance mode or is removed only once its VMs are off it (DRS would move them; a cluster
without DRS refuses), a host is removed only in maintenance mode or disconnected.
"""

from __future__ import annotations

import random
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

from bench.soak_checks import RETURN, Inventory, inventory_keys
from simulators.storagesim.sims import FIXTURE, StorageSim
from tests.support.vsphere_api import connect, wait

DOWN = (5.0, 30.0)  # seconds the simulator stays down on a restart
STALL_BEYOND = (5.0, 15.0)  # seconds a stall lasts beyond the exporter's timeout
SHORT_DOWN, SHORT_STALL_BEYOND = (5.0, 10.0), (3.0, 6.0)  # in a run under 10 minutes (CI's)
TIMEOUT = 30.0  # --vsphere.timeout's default
MAX_ADDED_HOSTS = 3  # hosts the driver adds at most beside the fixture's (3 of fixture.json's: 6 in all)
MAX_SOAK_VMS = 8
# The inventory's size is held steady, as a month of a real vCenter's is: hosts are lost and found
# again, datastores added and removed, around a steady share, not in a random walk. One let the
# connected hosts wander between 1 and all, so a window's CPU showed where the walk had gone
# (series 1,750-3,639 in one hour), not whether the exporter's cost per object grew with time.
STEADY_DISCONNECTED = 0.25  # share of the hosts disconnected, on average
MAX_SOAK_DATASTORES = 6  # NFS datastores the driver adds at most (each change then removes one)
WATCH_EVERY = 0.1  # seconds between two looks at the simulator's process


class Simulator:
    """The storage simulator, restartable on the same address (a new process: a vCenter restart,
    every session, change-stream version and collector gone)."""

    def __init__(self, tmp: Path, *args: str, fixture: Path = FIXTURE):
        self.tmp, self.args, self.starts, self.fixture = tmp, args, 0, fixture
        self.sim = StorageSim(tmp / "run0", *args, fixture=fixture)
        self.url, self.port = self.sim.url, self.sim.port

    @property
    def cert(self) -> Path:
        return self.sim.cert

    def stop(self) -> None:
        sim, self.sim = self.sim, None  # first: the driver's watch takes no planned stop for a crash
        if sim is not None:
            sim.stop()

    def start(self) -> None:
        self.starts += 1
        self.sim = StorageSim(self.tmp / f"run{self.starts}", "-l", f"127.0.0.1:{self.port}", *self.args, fixture=self.fixture)


class Timeline:
    """When the simulator was disturbed: (start, end) of each down or stalled time (end None while
    it lasts), and how many disturbances of every kind, session expiries included. A crash of the
    simulator is a down time too ("crash"); what it said is kept in `crashes`, a failure of the
    simulator that the soak reports apart from the exporter's.

    `settled`: the time up to which the driver's watch knows whether the simulator runs (None: no
    watch); a check waits for it to pass its scrape, lest a crash found just after be judged as the
    exporter's fault."""

    def __init__(self, started: float):
        self.lock = threading.Lock()
        self.spans: list[list] = [[started, started]]  # the start: the first walk is a return
        self.begun: list[tuple[float, str]] = []  # (when, kind) of every disturbance, expiries included
        self.crashes: list[str] = []
        self.settled: float | None = None

    def crash(self, at: float, said: str) -> list:
        """The simulator found dead, last seen running at `at`: a down time from then."""
        with self.lock:
            self.crashes.append(said)
        return self.begin("crash", at)

    def settle(self, at: float) -> None:
        with self.lock:
            self.settled = at if self.settled is None else max(self.settled, at)

    def wait_settled(self, at: float, timeout: float = 3.0) -> None:
        """Until the watch knows the simulator's state at `at` (at most `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.settled is None or self.settled >= at:
                    return
            time.sleep(0.02)

    def begin(self, kind: str, at: float) -> list:
        with self.lock:
            self.begun.append((at, kind))
            span = [at, None]
            if kind != "expire":
                self.spans.append(span)
            return span

    def end(self, span: list, at: float) -> None:
        with self.lock:
            span[1] = at

    def disturbed_between(self, start: float, end: float, after: float = RETURN) -> bool:
        """Whether [start, end] meets a down or stalled time, or the `after` seconds after one."""
        with self.lock:
            return any(s <= end and (e is None or e + after >= start) for s, e in self.spans)

    def begun_between(self, start: float, end: float = float("inf")) -> dict[str, int]:
        """The disturbances begun in [start, end), by kind."""
        with self.lock:
            return dict(Counter(kind for at, kind in self.begun if start <= at < end))

    @property
    def kinds(self) -> dict[str, int]:
        """Every disturbance so far, by kind."""
        return self.begun_between(float("-inf"))

    def disturbances(self) -> int:
        with self.lock:
            return len(self.begun)


def _collect(content, kind, props):
    """(object, {property: value}) of every object of this type, in one RetrievePropertiesEx."""
    from pyVmomi import vmodl

    view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
    try:
        spec = vmodl.query.PropertyCollector.FilterSpec(
            objectSet=[
                vmodl.query.PropertyCollector.ObjectSpec(
                    obj=view,
                    skip=True,
                    selectSet=[vmodl.query.PropertyCollector.TraversalSpec(name="v", path="view", skip=False, type=type(view))],
                )
            ],
            propSet=[vmodl.query.PropertyCollector.PropertySpec(type=kind, pathSet=props)],
        )
        found = []
        result = content.propertyCollector.RetrievePropertiesEx([spec], vmodl.query.PropertyCollector.RetrieveOptions())
        while result:
            found += [(o.obj, {p.name: p.val for p in o.propSet}) for o in result.objects]
            result = content.propertyCollector.ContinueRetrievePropertiesEx(result.token) if result.token else None
        return found
    finally:
        view.DestroyView()


def _is_datastore(volume) -> bool:
    """A mounted volume the exporter takes for a datastore (exporter/vsphere/discovery.py's rule:
    named, and no boot bank, OSDATA or vFlash volume)."""
    from pyVmomi import vim

    from exporter.vsphere.discovery import NOT_DATASTORE_TYPES

    if volume is None or isinstance(volume, (vim.host.VfatVolume, vim.host.VffsVolume)):
        return False
    return bool(volume.name) and (volume.type or "").lower() not in NOT_DATASTORE_TYPES


def _entity(task) -> str:
    """The name of the object a task acted on, for the journal: its name now, else the task's own
    entityName (an object destroyed since), else "" (the simulator gone under the task)."""
    try:
        info = task.info
    except Exception:
        return ""
    try:
        return info.entity.name
    except Exception:  # destroyed, or a moved VM's host changed: the task's record of it
        return info.entityName or ""


class Driver:
    def __init__(
        self,
        sim: Simulator,
        proxy,
        inventory: Inventory,
        seed: int,
        every: float,
        duration: float,
        vsan: bool = False,
        journal: Path | None = None,
    ):
        """vsan: the snapshots also name the vSAN clusters' hosts (the vSAN fixture), and each
        change of a vSAN cluster's host is counted apart (host_add_vsan ...). journal: a file each
        change and disturbance is appended to as it is made (readable while the run goes on)."""
        self.sim, self.proxy, self.inventory, self.vsan = sim, proxy, inventory, vsan
        self.rng = random.Random(seed)
        self.every, self.duration = every, duration
        self.started = time.monotonic()
        self.timeline = Timeline(self.started)
        self.done: dict[str, int] = {}  # action -> times done
        self.refused: dict[str, int] = {}  # action -> times the simulator refused it (a fault, not a soak failure)
        self.errors: list[str] = []  # the driver's own failures: make the run fail
        self.journal = journal  # "<s since start> <action> <done|refused> [object]" a line, for a failure's reading
        self.crash_lock = threading.Lock()
        self.crash_span: list | None = None  # the simulator's crash, until it is started again
        self.action = ""  # the change or disturbance under way
        self.serial = 0
        self.si = None
        self.plan = self._plan()
        self.thread: threading.Thread | None = None

    def _plan(self) -> list[tuple[float, str]]:
        """The disturbances: at least one of each kind, spread over the run but its last 75 s (for
        the exporter's return to be judged), in a seeded order. A run under 10 minutes has them
        back to back early (a restart at 10 s, a stall as soon as it is back, an expiry at 75 s),
        for the checks to judge the exporter's return in its last minute."""
        if self.duration < 600:
            return [(10.0, "restart"), (11.0, "stall"), (75.0, "expire")]
        kinds = ["restart", "expire", "stall"]
        self.rng.shuffle(kinds)
        first, last = 30.0, self.duration - 75.0
        n = max(3, int(self.duration // 240))
        step = (last - first) / (n - 1)
        return [(first + i * step + self.rng.uniform(-0.1, 0.1) * step, kinds[i % 3]) for i in range(n)]

    # --- running -----------------------------------------------------------------------------
    def start(self, stop: threading.Event) -> None:
        self.started = time.monotonic()
        self.timeline.spans[0] = [self.started, self.started]
        self._connect()
        self.max_hosts = len(self._hosts(usable=False)) + MAX_ADDED_HOSTS  # vsan.json has 6 hosts of its own
        self.snapshot()
        self.watch = threading.Thread(target=self._watch, args=(stop,), name="soak-watch", daemon=True)
        self.watch.start()
        self.thread = threading.Thread(target=self._loop, args=(stop,), name="soak-driver", daemon=True)
        self.thread.start()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join(120)
            self.watch.join(5)

    @property
    def crashes(self) -> list[str]:
        """The simulator's crashes: failures of the simulator, not of the exporter or the driver."""
        return list(self.timeline.crashes)

    def _watch(self, stop: threading.Event) -> None:
        """Looks at the simulator's process every WATCH_EVERY: a crash is a down time from the last
        look that found it running (the checks excuse the exporter for it as for a restart), and
        the driver's loop starts it again."""
        seen = time.monotonic()
        while not stop.wait(WATCH_EVERY):
            now = time.monotonic()
            sim = self.sim.sim
            if sim is not None and sim.proc.poll() is not None and sim is self.sim.sim:  # not a planned stop
                with self.crash_lock:
                    if self.crash_span is None:
                        self.crash_span = self.timeline.crash(seen, self._said(sim, seen))
            else:
                seen = now
            self.timeline.settle(now)

    def _said(self, sim, at: float) -> str:
        log = Path(sim.log.name)
        try:
            text = log.read_text(errors="replace")
        except OSError:
            text = ""
        panic = next((line for line in text.splitlines() if line.startswith(("panic:", "fatal error:"))), "no panic logged")
        return f"{at - self.started:.0f}s the simulator died (exit {sim.proc.returncode}: {panic}; its log: {log}); started again"

    def _crashed(self, wait: float = 1.0) -> bool:
        """Whether the simulator crashed (the watch given `wait` seconds to see it)."""
        deadline = time.monotonic() + wait
        while self.crash_span is None and time.monotonic() < deadline:
            time.sleep(WATCH_EVERY / 2)
        return self.crash_span is not None

    def _recover(self) -> None:
        """The simulator started again after its crash, on the same address (as after a restart)."""
        with self.crash_lock:
            span, dead = self.crash_span, self.sim.sim
        if dead is not None:
            dead.stop()
        self.sim.start()
        self.timeline.end(span, time.monotonic())
        with self.crash_lock:
            self.crash_span = None
        self._connect()
        self.snapshot()

    def counts(self) -> dict:
        return {"done": dict(sorted(self.done.items())), "refused": dict(sorted(self.refused.items()))}

    def _loop(self, stop: threading.Event) -> None:
        plan = list(self.plan)
        while not stop.wait(self.every * self.rng.uniform(0.5, 1.5)):
            elapsed = time.monotonic() - self.started
            if elapsed > self.duration:
                return
            try:
                if self.crash_span is not None:
                    self._recover()
                self.snapshot()  # the inventory as it is now, whatever comes next (a disturbance takes a while)
                if plan and elapsed >= plan[0][0]:
                    _, kind = plan.pop(0)
                    self.action = kind
                    getattr(self, kind)(stop)
                else:
                    self.change()
            except Exception as err:  # noqa: BLE001 - a failure of the driver itself fails the run
                self._failed(err, elapsed)
                try:
                    self._connect()
                except Exception:  # noqa: BLE001
                    pass

    def _failed(self, err: Exception, elapsed: float, wait: float = 1.0) -> None:
        """What a change or disturbance that raised is: the simulator's crash (said with it), an
        object gone between two calls (vCenter answers so too when another client removed it:
        counted as refused, `<action>_object_gone`, visible in the events), or the driver's own
        failure (it fails the run)."""
        from pyVmomi import vmodl

        if self._crashed(wait):
            with self.timeline.lock:
                self.timeline.crashes[-1] += f"; the driver's {self.action} failed with it ({type(err).__name__})"
        elif isinstance(err, vmodl.fault.ManagedObjectNotFound):
            self._refused(f"{self.action}_object_gone")
        else:
            said = getattr(err, "msg", None) or str(err)
            self.errors.append(f"{elapsed:.0f}s driver: {type(err).__name__}: {' '.join(said.split())}"[:300])

    def _connect(self) -> None:
        from pyVim.connect import Disconnect

        if self.si is not None:
            try:
                Disconnect(self.si)
            except Exception:  # noqa: BLE001 - a session of a simulator gone
                pass
        self.si = connect(self.sim.sim)
        self.content = self.si.RetrieveContent()

    def snapshot(self) -> None:
        """The simulator's inventory now, as the exporter should see it: the VMs, the hosts and the
        datastores each host mounts (its config.fileSystemVolume, as the exporter reads them)."""
        from pyVmomi import vim

        c = self.content
        props = ["name", "runtime.connectionState", "config.fileSystemVolume.mountInfo"]
        if self.vsan:
            props += ["parent", "runtime.inMaintenanceMode"]
        found = _collect(c, vim.HostSystem, props)
        # a VM's host by the hosts' own names: the simulator can leave a VM on a removed host (its
        # relocation does not keep the hosts' VM lists), whose name it no longer answers
        names = {h._moId: p["name"] for h, p in found}
        vms = [
            (p["name"], str(p.get("runtime.powerState")), names.get(p["runtime.host"]._moId, "") if p.get("runtime.host") else "")
            for _, p in _collect(c, vim.VirtualMachine, ["name", "runtime.powerState", "runtime.host"])
        ]
        hosts = [(p["name"], str(p["runtime.connectionState"])) for _, p in found]
        mounts: dict[str, list] = {}
        for _, p in found:
            for mount in p.get("config.fileSystemVolume.mountInfo") or []:
                if _is_datastore(mount.volume):
                    mounts.setdefault(mount.volume.name, []).append((p["name"], True))
        members = []
        if self.vsan:  # the hosts of a cluster with vSAN on (configurationEx.vsanConfigInfo.enabled)
            clusters = {o._moId for o in self._vsan_clusters()}
            members = [
                p["name"]
                for _, p in found
                if p.get("parent") is not None and p["parent"]._moId in clusters and not p.get("runtime.inMaintenanceMode")
            ]
        self.alive_at = time.monotonic()
        self.inventory.record(self.alive_at, inventory_keys(vms, hosts, list(mounts.items()), members))

    def _vsan_clusters(self) -> list:
        from pyVmomi import vim

        found = _collect(self.content, vim.ClusterComputeResource, ["configurationEx"])
        return [o for o, p in found if getattr(getattr(p.get("configurationEx"), "vsanConfigInfo", None), "enabled", False)]

    def _vsan_note(self, name: str, host, done: bool) -> None:
        """A change made to a host of a vSAN cluster is counted apart too (the soak shows it
        touched them)."""
        if done and self.vsan and host.parent in self._vsan_clusters():
            self._done(f"{name}_vsan")

    # --- disturbances ------------------------------------------------------------------------
    def restart(self, stop: threading.Event) -> None:
        """vCenter restarts: down for a while, then back with the fixture's inventory, every
        session, change-stream version and collector gone."""
        span = self.timeline.begin("restart", time.monotonic())
        self._done("restart")
        self.sim.stop()
        stop.wait(self.rng.uniform(*(DOWN if self.duration >= 600 else SHORT_DOWN)))
        self.sim.start()
        self.timeline.end(span, time.monotonic())
        self._connect()
        self.snapshot()

    def expire(self, stop: threading.Event) -> None:
        """vCenter ends the exporter's sessions (an idle timeout, an administrator): the next call
        is NotAuthenticated. No restart: its collectors and change streams go with the sessions."""
        own = self.content.sessionManager.currentSession.key
        deadline = time.monotonic() + 2 * TIMEOUT  # the exporter may be logging in again after a disturbance
        while True:
            others = [s.key for s in self.content.sessionManager.sessionList if s.key != own]
            if others or time.monotonic() > deadline or stop.wait(1.0):
                break
            self.snapshot()
        span = self.timeline.begin("expire", time.monotonic())
        if others:
            self.content.sessionManager.TerminateSession(sessionId=others)
            self._done("expire")
        else:
            self._refused("expire")
        self.timeline.end(span, time.monotonic())

    def stall(self, stop: threading.Event) -> None:
        """The simulator's answers held longer than the exporter's timeout, then let go; the
        inventory keeps changing meanwhile."""
        span = self.timeline.begin("stall", time.monotonic())
        self._done("stall")
        self.proxy.stall()
        until = time.monotonic() + TIMEOUT + self.rng.uniform(*(STALL_BEYOND if self.duration >= 600 else SHORT_STALL_BEYOND))
        try:
            while not stop.is_set() and time.monotonic() < until:
                stop.wait(self.every)
                self.change()
        finally:
            self.proxy.release()
            self.timeline.end(span, time.monotonic())

    # --- changes -----------------------------------------------------------------------------
    def change(self) -> None:
        actions = {
            self.vm_create: 3, self.vm_destroy: 2, self.vm_power: 3, self.vm_move: 2, self.vm_storage_move: 1,
            self.vm_rename: 1, self.host_add: 1, self.host_connection: 2,
            self.host_maintenance: 1, self.host_remove: 1, self.ds_add: 1, self.ds_remove: 1, self.ds_grow: 1,
        }  # fmt: skip
        action = self.rng.choices(list(actions), weights=list(actions.values()))[0]
        self.action = action.__name__
        self.snapshot()
        action()
        self.snapshot()

    def _done(self, name: str, entity: str = "") -> None:
        self.done[name] = self.done.get(name, 0) + 1
        self._note(name, "done", entity)

    def _refused(self, name: str, entity: str = "") -> None:
        self.refused[name] = self.refused.get(name, 0) + 1
        self._note(name, "refused", entity)

    def _note(self, name: str, outcome: str, entity: str) -> None:
        if self.journal is not None:
            with self.journal.open("a") as out:
                out.write(f"{time.monotonic() - self.started:.1f}s {name} {outcome} {entity}".rstrip() + "\n")

    def _task(self, name: str, task) -> bool:
        """Waits for the task; a fault of the simulator is counted as refused, not as a failure."""
        try:
            wait(task)
        except AssertionError:
            self._refused(name, _entity(task))
            return False
        self._done(name, _entity(task))
        return True

    def _objects(self, kind):
        view = self.content.viewManager.CreateContainerView(self.content.rootFolder, [kind], True)
        try:
            return list(view.view)
        finally:
            view.DestroyView()

    def _hosts(self, usable: bool = True):
        from pyVmomi import vim

        hosts = self._objects(vim.HostSystem)
        if usable:
            hosts = [h for h in hosts if h.runtime.connectionState == "connected" and not h.runtime.inMaintenanceMode]
        return hosts

    def _vms(self):
        from pyVmomi import vim

        return self._objects(vim.VirtualMachine)

    def _datastores(self, host):
        """The datastores the host mounts that its datacenter lists (the simulator panics placing a
        VM's files on one it does not: the NFS datastores mounted on a host alone)."""
        known = set(self.content.rootFolder.childEntity[0].datastore)
        return [d for d in host.datastore if d in known]

    def _movable(self, vm) -> bool:
        """Its disks all flat files on datastores its datacenter lists: the simulator panics
        relocating or destroying a VM with a raw device mapping, or with a disk on a datastore of
        the storage fixture (vCenter moves and destroys both)."""
        from pyVmomi import vim

        known = {d.name for d in self.content.rootFolder.childEntity[0].datastore}
        for device in vm.config.hardware.device:
            if isinstance(device, vim.vm.device.VirtualDisk):
                backing = device.backing
                if not isinstance(backing, vim.vm.device.VirtualDisk.FlatVer2BackingInfo):
                    return False
                if backing.datastore is None or backing.datastore.name not in known:
                    return False
        return True

    def _name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial}"

    def vm_create(self) -> None:
        from pyVmomi import vim

        if sum(vm.name.startswith("soak-") for vm in self._vms()) >= MAX_SOAK_VMS:
            return self.vm_destroy()
        hosts = self._hosts()
        if not hosts:
            return self._refused("vm_create")
        host = self.rng.choice(hosts)
        datastores = self._datastores(host)
        if not datastores:
            return self._refused("vm_create")
        datastore = self.rng.choice(datastores).name
        name = self._name("soak-vm-")
        controller = vim.vm.device.VirtualDeviceSpec(
            operation="add", device=vim.vm.device.ParaVirtualSCSIController(key=-100, busNumber=0, sharedBus="noSharing")
        )
        disks = []
        for unit in range(self.rng.randint(1, 2)):
            backing = vim.vm.device.VirtualDisk.FlatVer2BackingInfo(
                fileName=f"[{datastore}] {name}/{name}_{unit}.vmdk", diskMode="persistent", thinProvisioned=True
            )
            device = vim.vm.device.VirtualDisk(
                key=-1 - unit, controllerKey=-100, unitNumber=unit, capacityInKB=1 << 20, backing=backing
            )
            disks.append(vim.vm.device.VirtualDeviceSpec(operation="add", fileOperation="create", device=device))
        spec = vim.vm.ConfigSpec(
            name=name, guestId="otherGuest", files=vim.vm.FileInfo(vmPathName=f"[{datastore}]"), deviceChange=[controller, *disks]
        )
        datacenter = self.content.rootFolder.childEntity[0]
        if self._task("vm_create", datacenter.vmFolder.CreateVM_Task(config=spec, pool=host.parent.resourcePool, host=host)):
            vm = next((v for v in self._vms() if v.name == name), None)
            if vm is not None and self.rng.random() < 0.8:
                self._task("vm_power_on", vm.PowerOnVM_Task())

    def vm_destroy(self) -> None:
        vms = [v for v in self._vms() if self._movable(v)]  # the simulator panics destroying the others
        if not vms:
            return self._refused("vm_destroy")
        vm = self.rng.choice(vms)
        if vm.runtime.powerState == "poweredOn" and not self._task("vm_power_off", vm.PowerOffVM_Task()):
            return None
        self._task("vm_destroy", vm.Destroy_Task())

    def vm_power(self) -> None:
        vms = [v for v in self._vms() if v.runtime.host in self._hosts()]
        if not vms:
            return self._refused("vm_power")
        vm = self.rng.choice(vms)
        if vm.runtime.powerState == "poweredOn":
            self._task("vm_power_off", vm.PowerOffVM_Task())
        else:
            self._task("vm_power_on", vm.PowerOnVM_Task())

    def vm_move(self) -> None:
        """vMotion: to another usable host of its cluster."""
        from pyVmomi import vim

        hosts = self._hosts()
        vms = [v for v in self._vms() if v.runtime.host in hosts and self._movable(v)]
        if not vms:
            return self._refused("vm_move")
        vm = self.rng.choice(vms)
        others = [h for h in hosts if h != vm.runtime.host and h.parent == vm.runtime.host.parent and self._sees(h, vm)]
        if not others:
            return self._refused("vm_move")
        self._task("vm_move", vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=self.rng.choice(others))))

    def vm_storage_move(self) -> None:
        """Storage vMotion: to another datastore its host mounts."""
        from pyVmomi import vim

        hosts = self._hosts()
        vms = [v for v in self._vms() if v.runtime.host in hosts and self._movable(v)]
        if not vms:
            return self._refused("vm_storage_move")
        vm = self.rng.choice(vms)
        current = {d.name for d in vm.datastore}
        others = [d for d in self._datastores(vm.runtime.host) if d.name not in current]
        if not others:
            return self._refused("vm_storage_move")
        self._task("vm_storage_move", vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(datastore=self.rng.choice(others))))

    def vm_rename(self) -> None:
        vms = self._vms()
        if not vms:
            return self._refused("vm_rename")
        self._task("vm_rename", self.rng.choice(vms).Rename_Task(newName=self._name("soak-renamed-")))

    def host_add(self) -> None:
        """A new host in a cluster, a copy of a fixture host's configuration (the simulator copies
        the host named as the connect spec's user)."""
        from pyVmomi import vim

        hosts = self._hosts(usable=False)
        if len(hosts) >= self.max_hosts:
            return self.host_remove()
        template = self.rng.choice([h for h in hosts if h.name.endswith(".lab.local") and not h.name.startswith("soak")] or hosts)
        name = self._name("soak-esx") + ".lab.local"
        spec = vim.host.ConnectSpec(hostName=name, userName=template.name, force=True)
        self._vsan_note("host_add", template, self._task("host_add", template.parent.AddHost_Task(spec=spec, asConnected=True)))

    def host_connection(self) -> None:
        """A host disconnected or reconnected, toward STEADY_DISCONNECTED of the hosts disconnected:
        each connected host is lost at rate STEADY_DISCONNECTED, each disconnected one found again at
        the rest (an Ehrenfest urn: the share settles there, its spread binomial)."""
        hosts = self._hosts(usable=False)
        up = [h for h in hosts if h.runtime.connectionState == "connected"]
        down = [h for h in hosts if h.runtime.connectionState != "connected"]
        lose, find = STEADY_DISCONNECTED * len(up), (1.0 - STEADY_DISCONNECTED) * len(down)
        if down and self.rng.random() * (lose + find) < find:
            host = self.rng.choice(down)
            self._vsan_note("host_reconnect", host, self._task("host_reconnect", host.ReconnectHost_Task()))
        elif len(up) <= 1:
            self._refused("host_disconnect")
        else:
            host = self.rng.choice(up)
            self._vsan_note("host_disconnect", host, self._task("host_disconnect", host.DisconnectHost_Task()))

    @staticmethod
    def _sees(host, vm) -> bool:
        """The host mounts every datastore of the VM: vCenter refuses a vMotion to one that does
        not (InvalidDatastore; the simulator too, simulators/storagesim/placement.go)."""
        mounted = set(host.datastore)
        return all(d in mounted for d in vm.datastore)

    def _evacuate(self, host) -> bool:
        """Its powered-on VMs moved to another usable host of its cluster (DRS's job), or off."""
        from pyVmomi import vim

        hosts = [h for h in self._hosts() if h != host and h.parent == host.parent]
        for vm in host.vm:
            others = [h for h in hosts if self._sees(h, vm)]
            if (
                others
                and self._movable(vm)
                and self._task("vm_move", vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=self.rng.choice(others))))
            ):
                continue
            if vm.runtime.powerState == "poweredOn" and not self._task("vm_power_off", vm.PowerOffVM_Task()):
                return False
        return True

    def host_maintenance(self) -> None:
        hosts = [h for h in self._hosts(usable=False) if h.runtime.connectionState == "connected"]
        if not hosts:
            return self._refused("host_maintenance")
        host = self.rng.choice(hosts)
        if host.runtime.inMaintenanceMode:
            self._vsan_note(
                "host_maintenance_exit", host, self._task("host_maintenance_exit", host.ExitMaintenanceMode_Task(timeout=0))
            )
        elif len(self._hosts()) > 1 and self._evacuate(host):
            done = self._task("host_maintenance_enter", host.EnterMaintenanceMode_Task(timeout=0))
            self._vsan_note("host_maintenance_enter", host, done)

    def host_remove(self) -> None:
        """A host the soak added, out of maintenance mode or disconnected, its VMs gone first."""
        hosts = [h for h in self._hosts(usable=False) if h.name.startswith("soak-")]
        if not hosts:
            return self._refused("host_remove")
        host = self.rng.choice(hosts)
        if not self._evacuate(host):
            return None
        for vm in host.vm:  # powered off: moved by hand, as vCenter requires before a removal
            if not self._task("vm_destroy", vm.Destroy_Task()):
                return None
        if host.runtime.connectionState == "connected" and not host.runtime.inMaintenanceMode:
            if not self._task("host_maintenance_enter", host.EnterMaintenanceMode_Task(timeout=0)):
                return None
        vsan = self.vsan and host.parent in self._vsan_clusters()
        if self._task("host_remove", host.Destroy_Task()) and vsan:
            self._done("host_remove_vsan")

    def _datastores_full(self) -> bool:
        """MAX_SOAK_DATASTORES of the driver's NFS datastores mounted (one left only on a host
        removed is no longer anyone's: it does not count)."""
        from pyVmomi import vim

        mounted = [d for d in self._objects(vim.Datastore) if d.name.startswith("soak-nfs-") and d.host]
        return len(mounted) >= MAX_SOAK_DATASTORES

    def ds_add(self) -> None:
        from pyVmomi import vim

        if self._datastores_full():
            return self.ds_remove()
        hosts = self._hosts()
        if not hosts:
            return self._refused("ds_add")
        host = self.rng.choice(hosts)
        name = self._name("soak-nfs-")
        spec = vim.host.NasVolume.Specification(
            remoteHost="192.0.2.50", remotePath=f"/export/{name}", localPath=name, accessMode="readWrite"
        )
        try:
            host.configManager.datastoreSystem.CreateNasDatastore(spec=spec)
            self._done("ds_add")
        except vim.fault.VimFault:
            self._refused("ds_add")

    def ds_remove(self) -> None:
        from pyVmomi import vim

        hosts = [h for h in self._hosts() if any(d.name.startswith("soak-nfs-") and not d.vm for d in h.datastore)]
        if not hosts:
            if self._datastores_full():
                return self._refused("ds_remove")  # all in use or on hosts out of reach: nothing to add either
            return self.ds_add()
        host = self.rng.choice(hosts)
        datastore = self.rng.choice([d for d in host.datastore if d.name.startswith("soak-nfs-") and not d.vm])
        try:
            host.configManager.datastoreSystem.RemoveDatastore(datastore=datastore)
            self._done("ds_remove")
        except vim.fault.VimFault:
            self._refused("ds_remove")

    def ds_grow(self) -> None:
        """A datastore grows (an extent added, a LUN grown): the simulator's control, simulators/storagesim/churn.go."""
        from pyVmomi import vim

        datastores = self._objects(vim.Datastore)
        if not datastores:
            return self._refused("ds_grow")
        datastore = self.rng.choice(datastores)
        form = urllib.parse.urlencode({"datastore": datastore.name, "bytes": str(self.rng.randint(1, 64) << 30)}).encode()
        url = self.sim.url.replace("/sdk", "/storagesim/churn/grow")
        import ssl

        context = ssl.create_default_context(cafile=str(self.sim.cert))
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=form), timeout=10, context=context):
                self._done("ds_grow")
        except urllib.error.HTTPError:
            self._refused("ds_grow")
