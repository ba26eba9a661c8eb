"""The inventory as vCenter's property collector tells it, kept current from its updates, and the
topology collection reads, built from it.

It holds the tree (folders, datacenters, clusters, hosts: names, parents, connection state and
maintenance mode), every
VM's name, parent, host and power state, each chosen host's storage configuration (built into a
HostTopology) and each chosen VM's disks. It does no I/O: what it needs read it asks for
(`Wants`: hosts and VMs to add to the list views, hosts whose storage changed to read again), the
follower (follow.py) reads it and hands the answers back. Everything it publishes is a new
object: a HostTopology or Inventory collection or the store may hold is never changed.

Hosts are built in two steps, as their two property sets come in (the walk asks for the second
once the first is published): LUNS (adapters, LUNs, CPUs: enough to collect the LUN, adapter and
CPU counters) and PATHS (multipathing, the plug-store topology, mounts and the vmkernel network:
paths, datastores, the LUNs' plugin and datastore). A host's configuration series are published
with the second, so no info series is first published with a label it then changes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pyVmomi import vim

from exporter.store import model as m
from exporter.vsphere import discovery, space, vms
from exporter.vsphere.selection import HostSelection
from exporter.vsphere.updates import ObjectUpdate

TREE, LUNS, PATHS, VMS, DEVICES = "tree", "luns", "paths", "vms", "devices"  # filter roles
DATASTORES, SNAPSHOTS = "datastores", "snapshots"  # every Datastore's space; the chosen VMs' snapshots
DATASTORE_PROPERTIES = ["summary", "info.timestamp"]
SNAPSHOT_PROPERTIES = ["snapshot", "layoutEx", "runtime.consolidationNeeded"]

TREE_TYPES = [vim.Folder, vim.Datacenter, vim.ComputeResource, vim.ClusterComputeResource, vim.HostSystem]
TREE_PROPERTIES = {
    vim.ManagedEntity: ["name", "parent"],
    vim.HostSystem: ["runtime.connectionState", "runtime.inMaintenanceMode"],
}
LUN_PROPERTIES, PATH_PROPERTIES = discovery.LUN_PROPERTIES, discovery.PATH_PROPERTIES
LUN_FAMILIES, ALL_FAMILIES = discovery.LUN_FAMILIES, discovery.ALL_FAMILIES

# Entity field each tree property sets (a vApp's parent folder is its parent, as in discovery).
_FIELDS = {
    "name": "name",
    "parent": "parent",
    "parentFolder": "parent",
    "parentVApp": "vapp",
    "runtime.host": "host",
    "runtime.powerState": "state",
    "runtime.connectionState": "state",
    "runtime.inMaintenanceMode": "maintenance",
}


@dataclass(slots=True)
class Entity:
    """One object of the tree or one VM, as its last updates left it."""

    type: str
    name: str = ""
    parent: str = ""  # parent, or a vApp's parentFolder
    vapp: str = ""  # parentVApp
    host: str = ""  # a VM's runtime.host
    state: str = ""  # a VM's runtime.powerState, a host's runtime.connectionState
    maintenance: str = ""  # a host's runtime.inMaintenanceMode: "true" | "false" | "" (not reported)


@dataclass(slots=True)
class Wants:
    """What the mirror needs read."""

    list_luns: list[str] = field(default_factory=list)  # hosts to add to the LUNS list view
    list_paths: list[str] = field(default_factory=list)  # hosts to add to the PATHS list view
    reread: list[str] = field(default_factory=list)  # built hosts whose storage changed
    settings: list[str] = field(default_factory=list)  # hosts just built: DSNRO and iSCSI links to read
    list_vms: list[str] = field(default_factory=list)  # VMs whose device list is wanted

    def __bool__(self) -> bool:
        return any((self.list_luns, self.list_paths, self.reread, self.settings, self.list_vms))


@dataclass(slots=True)
class Delta:
    """What changed for collection and the store since the last settle."""

    changed: dict[str, discovery.HostTopology] = field(default_factory=dict)  # host moid -> its new topology
    removed: list[str] = field(default_factory=list)  # names of hosts gone from the topology
    changes: dict[str, int] = field(default_factory=dict)  # kind -> count (esxi_vsphere_inventory_changes_total)
    built: set[str] = field(default_factory=set)  # hosts whose storage was read whole (added or changed)
    statuses: bool = False  # a shown host's connection state or maintenance mode changed (Mirror.host_status)
    space: bool = False  # a datastore's space changed, came or went (Mirror.space_by_url)
    snapshots: bool = False  # a chosen VM's snapshots changed, or it came or went (Mirror.snapshot_records)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (object, line): values refused
    fine: list[str] = field(default_factory=list)  # objects whose values were all read this time

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed or self.statuses or self.space or self.snapshots)

    def count(self, kind: str, n: int = 1) -> None:
        self.changes[kind] = self.changes.get(kind, 0) + n


class Mirror:
    """Not thread-safe: the follower applies and settles under its own lock."""

    def __init__(self, stub, selection: HostSelection | None = None, vm_selection: HostSelection | None = None, with_vms=False):
        self.stub = stub
        self.selection = selection or HostSelection()
        self.vm_selection = vm_selection or HostSelection()
        self.with_vms = with_vms
        self.entities: dict[str, Entity] = {}
        self.nodes: dict[str, tuple[str, str, str]] = {}  # moid -> (type, name, parent): discovery._place's view
        self.hosts: dict[str, discovery.HostTopology] = {}  # chosen hosts with a topology, by moid
        self.parts: dict[str, dict[str, dict]] = {}  # host moid -> role -> its properties, until built whole
        self.listed: dict[str, set[str]] = {LUNS: set(), PATHS: set()}  # hosts in each list view
        self.following = False  # the walk is over: a change to a built host's storage is read again
        self.vms: dict[str, vms.VmTopology] = {}  # placed VMs by moid
        self.specs: dict[str, dict[str, vms.DiskSpec]] = {}  # device lists of the listed VMs
        self.listed_vms: set[str] = set()
        self.mounts: dict[str, set[str]] = {}  # datastore uuid -> hosts mounting it
        self._dirty_hosts: set[str] = set()  # hosts to look at again (tree, connection, storage)
        self._dirty_vms: set[str] = set()
        self._places_dirty = False
        self._reread: set[str] = set()
        self._reread_later: set[str] = set()  # hosts whose re-read failed (a fault of their own): next settle
        self._awaiting: set[str] = set()  # hosts added to the list views whose properties have not all come
        self._settings: set[str] = set()
        self._placed: dict[str, str] = {}  # VM moid -> host moid it was last published on
        # every host the selection keeps, whatever its connection state: moid -> (name, status)
        self._statuses: dict[str, tuple[str, m.HostStatus]] = {}
        # datastores: moid -> (summary element, info.timestamp text) as last sent, and the space read from them
        self._datastores: dict[str, tuple[object, str]] = {}
        self.spaces: dict[str, m.DatastoreSpace] = {}
        self._space_dirty = False
        # chosen VMs' snapshots: moid -> (tree (count, oldest), files by datastore, consolidation needed)
        self._snapshot_parts: dict[str, tuple] = {}
        self.snapshots: dict[str, m.VmSnapshots] = {}  # placed VMs' snapshots, by moid
        self._dirty_snapshots: set[str] = set()
        self._problems: list[tuple[str, str]] = []
        self._fine: list[str] = []

    # --- updates in ------------------------------------------------------------------------
    def apply(self, updates: list[ObjectUpdate]) -> None:
        for update in updates:
            if update.role in (TREE, VMS):
                self._tree(update)
            elif update.role in (LUNS, PATHS):
                self._storage(update)
            elif update.role == DEVICES:
                self._devices(update)
            elif update.role == DATASTORES:
                self._datastore(update)
            elif update.role == SNAPSHOTS:
                self._snapshot(update)

    def _datastore(self, update: ObjectUpdate) -> None:
        moid = update.moid
        self._space_dirty = True
        if update.kind == "leave":
            self._datastores.pop(moid, None)
            self.spaces.pop(moid, None)
            return
        summary, updated = self._datastores.get(moid, (None, ""))
        if "summary" in update.changes:
            summary = update.changes["summary"]
        if "info.timestamp" in update.changes:
            updated = _text(update.changes["info.timestamp"])
        self._datastores[moid] = (summary, updated)
        problems: list[str] = []
        found = space.datastore_space(moid, summary, updated, problems)
        self._problems += [(f"datastore {moid}", line) for line in problems]
        if not problems:
            self._fine.append(f"datastore {moid}")
        if found is None:
            self.spaces.pop(moid, None)
        else:
            self.spaces[moid] = found

    def _snapshot(self, update: ObjectUpdate) -> None:
        moid = update.moid
        if update.kind == "leave" or moid not in self.listed_vms:
            return
        tree, files, needed = self._snapshot_parts.get(moid, ((0, None), (), None))
        changes = update.changes
        name = self.entities[moid].name if moid in self.entities else moid
        problems: list[str] = []
        if "snapshot" in changes:
            tree = space.snapshot_tree(changes["snapshot"])
        if "layoutEx" in changes:
            files = tuple(sorted(space.snapshot_files(changes["layoutEx"], f"VM {name}", problems).items()))
        if "runtime.consolidationNeeded" in changes:
            value = changes["runtime.consolidationNeeded"]
            needed = None if value is None else _text(value) == "true"
        self._problems += [(f"VM {moid}", line) for line in problems]
        if not problems and "layoutEx" in changes:
            self._fine.append(f"VM {moid}")
        self._snapshot_parts[moid] = (tree, files, needed)
        self._dirty_snapshots.add(moid)

    def _tree(self, update: ObjectUpdate) -> None:
        moid = update.moid
        if update.kind == "leave":
            gone = self.entities.pop(moid, None)
            self.nodes.pop(moid, None)
            if gone is not None:
                self._touch(gone.type, moid)
            return
        entity = self.entities.get(moid)
        if entity is None:
            entity = self.entities[moid] = Entity(update.type)
        for name, value in update.changes.items():
            attribute = _FIELDS.get(name)
            if attribute is not None:
                setattr(entity, attribute, _text(value))
        self.nodes[moid] = (entity.type, entity.name, entity.parent or entity.vapp)
        self._touch(entity.type, moid)

    def _touch(self, kind: str, moid: str) -> None:
        if kind == "HostSystem":
            self._dirty_hosts.add(moid)
            self._places_dirty = True  # a host's own move or rename changes its place
        elif kind == "VirtualMachine":
            self._dirty_vms.add(moid)
        else:  # a folder, datacenter, cluster or vApp: the places under it
            self._places_dirty = True

    def _storage(self, update: ObjectUpdate) -> None:
        moid = update.moid
        if update.kind == "leave" or moid not in self.listed[update.role]:
            return  # a host gone leaves the tree too; one no longer chosen is not followed
        topo = self.hosts.get(moid)
        if topo is not None and (topo.families == ALL_FAMILIES or update.role == LUNS):
            # changed once built from: the properties it was built from are not kept, all are read again
            self._reread.add(moid)
            return
        self.parts.setdefault(moid, {}).setdefault(update.role, {}).update(update.changes)
        self._dirty_hosts.add(moid)

    def _devices(self, update: ObjectUpdate) -> None:
        moid = update.moid
        if update.kind == "leave" or moid not in self.listed_vms:
            return
        if "config.hardware.device" in update.changes:
            self.specs[moid] = vms.device_specs(update.changes["config.hardware.device"])
            self._dirty_vms.add(moid)

    def host_read(self, moid: str, props: dict | None) -> None:
        """A host's whole storage configuration, read again (None: the server no longer knows it)."""
        self._reread.discard(moid)
        self._awaiting.discard(moid)
        if props is not None:
            self.parts[moid] = {LUNS: props, PATHS: props}
        self._dirty_hosts.add(moid)

    def host_unread(self, moid: str) -> None:
        """A host's re-read failed with a fault of its own (timed out, hostd busy): it keeps its
        topology and is read again at the next settle (retry_unread), not in this one's rounds;
        until then a change it had (a datastore mounted) is not lost, only late."""
        self._reread.discard(moid)
        self._reread_later.add(moid)

    def retry_unread(self) -> bool:
        """The hosts whose re-read failed are wanted again; True if there were any."""
        if not self._reread_later:
            return False
        self._reread |= self._reread_later
        self._reread_later.clear()
        return True

    @property
    def unread(self) -> bool:
        """Some host's re-read failed and waits for the next settle."""
        return bool(self._reread_later)

    def start_following(self) -> None:
        """The walk is over: from now on a host chosen is added to both list views at once, and one
        chosen again (reconnected) is read again; hosts that came during the walk are looked at."""
        self.following = True
        self._dirty_hosts |= {moid for moid, e in self.entities.items() if e.type == "HostSystem"}

    # --- what is wanted ----------------------------------------------------------------------
    def chosen_hosts(self) -> list[str]:
        """Every connected host the selection keeps."""
        places = self._host_places()
        return sorted(moid for moid, place in places.items() if self._host_wanted(moid, place))

    def _host_places(self) -> dict[str, discovery.Place]:
        return {moid: discovery.place(self.nodes, moid) for moid, e in self.entities.items() if e.type == "HostSystem"}

    def _host_wanted(self, moid: str, place: discovery.Place) -> bool:
        entity = self.entities.get(moid)
        return (
            entity is not None
            and entity.type == "HostSystem"
            and entity.state == "connected"
            and self.selection.keeps(place.path, place.name)
        )

    def waiting_for(self, role: str) -> set[str]:
        """Listed hosts whose properties of this role have not come in yet."""
        if role == DEVICES:
            return {moid for moid in self.listed_vms if moid not in self.specs}
        return {moid for moid in self.listed[role] if role not in self.parts.get(moid, {}) and not self._has(moid, role)}

    def _has(self, moid: str, role: str) -> bool:
        topo = self.hosts.get(moid)
        return topo is not None and (role == LUNS or topo.families == ALL_FAMILIES)

    def list_hosts(self, role: str, moids) -> list[str]:
        """Mark hosts as added to a list view; returns those not there yet."""
        new = [moid for moid in moids if moid not in self.listed[role]]
        self.listed[role].update(new)
        return new

    def list_vms(self, moids) -> list[str]:
        new = [moid for moid in moids if moid not in self.listed_vms]
        self.listed_vms.update(new)
        return new

    def wanted_vms(self) -> list[str]:
        """The VMs to collect now, whose device lists are needed."""
        return sorted(moid for moid in self.entities if self._vm_host(moid) is not None)

    def _vm_host(self, moid: str) -> str | None:
        """The host a VM is to be collected on, or None: powered on, on a host whose topology is
        whole (its mounts resolve the VM's disks), kept by the VM selection."""
        entity = self.entities.get(moid)
        if entity is None or entity.type != "VirtualMachine" or entity.state != "poweredOn":
            return None
        topo = self.hosts.get(entity.host)
        if topo is None or topo.families != ALL_FAMILIES:
            return None
        if not self.vm_selection.everything and not self.vm_selection.keeps(discovery.place(self.nodes, moid).path, entity.name):
            return None
        return entity.host

    # --- settle: one consistent state after a batch -------------------------------------------
    def settle(self) -> tuple[Delta, Wants]:
        """Look again at everything the updates touched: hosts chosen or dropped, built from their
        properties, relabelled; VMs placed, moved or dropped. Returns what changed and what to read."""
        delta, wants = Delta(), Wants()
        places = self._host_places() if self._places_dirty else None
        hosts = set(self._dirty_hosts)
        if places is not None:
            hosts |= set(places)
        self._dirty_hosts.clear()
        self._places_dirty = False
        mounts_before = {moid: set(topo.datastores) for moid, topo in self.hosts.items()}
        for moid in sorted(hosts):
            if places is not None and moid in places:
                place = places[moid]
            else:  # a host that left the tree has no place
                place = discovery.place(self.nodes, moid) if moid in self.nodes else None
            self._settle_host(moid, place, delta, wants)
        self._share_datastores(mounts_before, delta)
        if self.with_vms:
            self._settle_vms(delta, wants, hosts)
            self._settle_snapshots(delta)
        if self._space_dirty:
            self._space_dirty, delta.space = False, True
        delta.problems, self._problems = self._problems, []
        delta.fine, self._fine = self._fine, []
        wants.reread = sorted(self._reread)
        wants.settings = sorted(self._settings)
        self._settings.clear()
        return delta, wants

    def _settle_host(self, moid: str, place: discovery.Place | None, delta: Delta, wants: Wants) -> None:
        self._settle_status(moid, place, delta)
        topo = self.hosts.get(moid)
        if place is None or not self._host_wanted(moid, place):
            if topo is not None:
                del self.hosts[moid]
                delta.removed.append(topo.name)
                delta.count("host_removed")
            self.parts.pop(moid, None)
            self._reread.discard(moid)
            self._reread_later.discard(moid)
            self._awaiting.discard(moid)
            return
        parts = self.parts.get(moid, {})
        if self.following and topo is None and not (LUNS in parts and PATHS in parts):
            # chosen after the walk: both property sets at once; or chosen again (reconnected): its
            # list views report nothing new, so it is read again
            new_luns, new_paths = self.list_hosts(LUNS, [moid]), self.list_hosts(PATHS, [moid])
            wants.list_luns += new_luns
            wants.list_paths += new_paths
            if new_luns or new_paths:
                self._awaiting.add(moid)
            elif moid not in self._awaiting:
                self._reread.add(moid)
        name = self.entities[moid].name
        lun_stage = topo is not None and topo.families != ALL_FAMILIES
        if (LUNS in parts or lun_stage) and PATHS in parts:
            if LUNS in parts:
                built = self._build(moid, name, place, {**parts[LUNS], **parts[PATHS]}, ALL_FAMILIES)
            else:  # its paths and mounts laid over what its LUN properties built
                built = self._build(moid, name, place, parts[PATHS], ALL_FAMILIES, base=topo)
            del self.parts[moid]
            self._awaiting.discard(moid)
            delta.built.add(moid)
            self._settings.add(moid)
            delta.count("host_added" if topo is None else "host_storage_changed")
        elif LUNS in parts and (topo is None or lun_stage):
            built = self._build(moid, name, place, parts.pop(LUNS), LUN_FAMILIES)
            # The answer's elements go now, not when its paths come (a stage later, 2,500 hosts on):
            # the objects built from them among elements kept that long left most of the
            # interpreter's memory pages half empty after the walk (350 of 420 MiB at 2,500 hosts).
            if not parts:
                del self.parts[moid]
        elif topo is not None and (
            topo.name != name or (topo.inventory.datacenter, topo.inventory.cluster) != (place.datacenter, place.cluster)
        ):
            built = _relabelled(topo, name, place)
            delta.count("host_relabelled")
        else:
            return
        if topo is not None and topo.name != built.name:
            delta.removed.append(topo.name)
        self.hosts[moid] = delta.changed[moid] = built

    def _settle_status(self, moid: str, place: discovery.Place | None, delta: Delta) -> None:
        """A host's connection state and maintenance mode, for every host the selection keeps: one
        vCenter cannot reach is shown as such (its storage series go, as for a host that left)."""
        entity = self.entities.get(moid)
        status = None
        if (
            entity is not None
            and entity.type == "HostSystem"
            and place is not None
            and self.selection.keeps(place.path, place.name)
        ):
            maintenance = {"true": True, "false": False}.get(entity.maintenance.lower())
            status = (entity.name, m.HostStatus(connection_state=entity.state or "unknown", maintenance=maintenance))
        if self._statuses.get(moid) != status:
            if status is None:
                del self._statuses[moid]
            else:
                self._statuses[moid] = status
            delta.statuses = True

    def host_status(self) -> dict[str, m.HostStatus]:
        """host name -> its state, for every host vCenter lists that the selection keeps."""
        return dict(sorted(self._statuses.values(), key=lambda item: item[0]))

    def _build(self, moid, name, place, props, families, base=None) -> discovery.HostTopology:
        """A host's topology from its properties; with base (its LUN stage), from its paths' alone."""
        if base is not None:
            topo = discovery.with_paths(base, props)  # the CPU and managers are base's
        else:
            whole = families == ALL_FAMILIES
            topo = (discovery.storage_of_host if whole else discovery.luns_of_host)(name, vim.HostSystem(moid, self.stub), props)
            core_hz = _text(props.get("hardware.cpuInfo.hz"))
            topo.inventory.cpu_core_hertz = float(core_hz) if core_hz else None  # for CPU cost per I/O
            threads = _text(props.get("hardware.cpuInfo.numCpuThreads"))
            topo.cpu_threads = int(threads) if threads.isdigit() else 0
            topo.managers = (_text(props.get("configManager.advancedOption")), _text(props.get("configManager.iscsiManager")))
        topo.families = families
        topo.name = topo.inventory.host = name
        topo.inventory.datacenter, topo.inventory.cluster = place.datacenter, place.cluster
        old = self.hosts.get(moid)
        if old is not None:  # settings read before stay until read again; VMs stay until placed again
            topo.inventory.dsnro = old.inventory.dsnro
            for adapter_name, adapter in topo.inventory.adapters.items():
                if adapter.type == "iscsi" and adapter_name in old.inventory.adapters:
                    adapter.link_speed_bytes_per_second = old.inventory.adapters[adapter_name].link_speed_bytes_per_second
            if families == ALL_FAMILIES:
                topo.vms = old.vms
                topo.inventory.vdisks = old.inventory.vdisks
                for vm in old.vms:
                    self._dirty_vms.add(vm.ref._moId)  # its disks resolved again against the new mounts
        return topo

    def _share_datastores(self, before: dict[str, set[str]], delta: Delta) -> None:
        """How many of this target's hosts mount each datastore (by uuid: local datastores often
        share a name); a host whose counts changed is published again, and a host built in this
        settle gets them even when no mount changed (read again after a path changed)."""
        after = {moid: set(topo.datastores) for moid, topo in self.hosts.items()}
        if after == before:
            hosts = [(moid, self.hosts[moid]) for moid in delta.changed if moid in self.hosts]
        else:
            self.mounts = {}
            for moid, uuids in after.items():
                for uuid in uuids:
                    self.mounts.setdefault(uuid, set()).add(moid)
            hosts = list(self.hosts.items())
        for moid, topo in hosts:
            shares = {topo.datastore_names[uuid]: len(self.mounts[uuid]) for uuid in after[moid]}
            if shares != topo.inventory.datastore_hosts:
                if moid in delta.changed:  # built in this settle: not published yet, its own
                    topo.inventory.datastore_hosts = shares
                else:
                    topo = dataclasses.replace(topo, inventory=dataclasses.replace(topo.inventory, datastore_hosts=shares))
                    self.hosts[moid] = delta.changed[moid] = topo

    def _settle_vms(self, delta: Delta, wants: Wants, hosts: set[str]) -> None:
        touched = set(self._dirty_vms)
        self._dirty_vms.clear()
        # VMs on a host that came, went or changed; and every VM when places may have changed
        if hosts:
            touched |= {moid for moid, e in self.entities.items() if e.type == "VirtualMachine" and e.host in hosts}
            touched |= {moid for moid, host in self._placed.items() if host in hosts}
        if not touched:
            return
        by_host: dict[str, dict[str, vms.VmTopology | None]] = {}  # host -> VM moid -> its placement (None: gone)
        self._dirty_snapshots |= touched
        for moid in sorted(touched):
            target = self._vm_host(moid)
            before = self._placed.get(moid)
            if target is None:
                # Its device list stays followed (until the next walk): powered on again or back
                # on one of these hosts, it is placed at once, without reading it again.
                if moid not in self.entities:  # destroyed: gone from the list view with it
                    self.listed_vms.discard(moid)
                    self.specs.pop(moid, None)
                if before is not None:
                    by_host.setdefault(before, {})[moid] = None
                    del self._placed[moid]
                    self.vms.pop(moid, None)
                    delta.count("vm_removed")
                continue
            if moid not in self.specs:
                wants.list_vms += self.list_vms([moid])
                continue
            entity = self.entities[moid]
            topo = self.hosts[target]
            storage = _host_storage(topo)
            placed = vms.VmTopology(
                ref=vim.VirtualMachine(moid, self.stub),
                name=entity.name,
                path=discovery.place(self.nodes, moid).path,
                host=target,
                disks=vms.resolve(self.specs[moid], storage),
            )
            old = self.vms.get(moid)
            if old is not None and (old.name, old.path, old.host, old.disks) == (
                placed.name,
                placed.path,
                placed.host,
                placed.disks,
            ):
                continue
            if old is not None:
                same = (old.name, old.host, old.disks) == (placed.name, placed.host, placed.disks)
                placed.routes = old.routes if same else {}  # its keys name the VM
            self.vms[moid] = placed
            self._placed[moid] = target
            by_host.setdefault(target, {})[moid] = placed
            if before is not None and before != target:
                by_host.setdefault(before, {})[moid] = None
                delta.count("vm_moved")
            elif before is None:
                delta.count("vm_added")
            elif old is not None and old.disks != placed.disks:
                delta.count("vm_disks_changed")
        for host, placements in by_host.items():
            topo = delta.changed.get(host) or self.hosts.get(host)
            if topo is None:
                continue  # the host itself is gone: its VMs with it
            kept = [vm for vm in topo.vms if vm.ref._moId not in placements]
            kept += [vm for vm in placements.values() if vm is not None]
            kept.sort(key=lambda vm: vm.name)
            vdisks = {(vm.name, disk): config for vm in kept for disk, config in vm.disks.items()}
            topo = dataclasses.replace(topo, vms=kept, inventory=dataclasses.replace(topo.inventory, vdisks=vdisks))
            self.hosts[host] = delta.changed[host] = topo

    def _settle_snapshots(self, delta: Delta) -> None:
        """The snapshots of the VMs placed now, for those whose snapshots or placement changed."""
        if not self._dirty_snapshots:
            return
        for moid in self._dirty_snapshots:
            placed = self.vms.get(moid)
            if moid not in self.listed_vms:
                self._snapshot_parts.pop(moid, None)
            parts = self._snapshot_parts.get(moid)
            if placed is None or parts is None:
                delta.snapshots |= self.snapshots.pop(moid, None) is not None
                continue
            (count, oldest), files, needed = parts
            host = self.hosts[placed.host].name if placed.host in self.hosts else ""
            found = m.VmSnapshots(host, placed.name, count, oldest, sum(b for _, b in files), files, needed)
            if self.snapshots.get(moid) != found:
                self.snapshots[moid] = found
                delta.snapshots = True
        self._dirty_snapshots.clear()

    def requeue(self, problems: list[tuple[str, str]], fine: list[str]) -> None:
        """Problems (and objects read fine) a settle found that nobody was told of: handed out with the next."""
        self._problems[:0] = problems
        self._fine[:0] = fine

    def space_by_url(self) -> dict[str, m.DatastoreSpace]:
        """Every datastore's space, by url (one per datastore, whatever number of hosts mount it)."""
        return {s.url: s for s in sorted(self.spaces.values(), key=lambda s: s.name)}

    def snapshot_records(self) -> dict[str, m.VmSnapshots]:
        """The placed VMs' snapshots, by VM name."""
        return {s.vm: s for s in sorted(self.snapshots.values(), key=lambda s: s.vm)}

    # --- the topology --------------------------------------------------------------------------
    def topology(self, duration: float = 0.0) -> discovery.Topology:
        return discovery.Topology(hosts=sorted(self.hosts.values(), key=lambda t: t.name), duration=duration)


def gone_objects(before: m.Inventory, after: m.Inventory) -> dict[str, set]:
    """Store family -> keys of the objects a host's configuration had and no longer has."""
    gone = {
        family: set(getattr(before, family)) - set(getattr(after, family))
        for family in ("luns", "adapters", "paths", "datastores", "vdisks")
    }
    vms_after = {vm for vm, _ in after.vdisks}
    gone["vms"] = {vm for vm, _ in before.vdisks} - vms_after
    return {family: keys for family, keys in gone.items() if keys}


def _relabelled(topo: discovery.HostTopology, name: str, place: discovery.Place) -> discovery.HostTopology:
    """A host renamed or moved to another cluster or datacenter: same storage, new labels."""
    inventory = dataclasses.replace(topo.inventory, host=name, datacenter=place.datacenter, cluster=place.cluster)
    return dataclasses.replace(topo, name=name, inventory=inventory)


def _host_storage(topo: discovery.HostTopology) -> vms.HostStorage:
    return vms.HostStorage(
        datastore_types={ds: config.type for ds, config in topo.inventory.datastores.items()},
        extents={ds: tuple(luns) for ds, luns in topo.extents.items()},
        lun_uuids=topo.lun_uuids,
    )


def _text(element) -> str:
    if element is None:
        return ""
    if isinstance(element, str):
        return element
    return "" if element.text is None else element.text.strip()
