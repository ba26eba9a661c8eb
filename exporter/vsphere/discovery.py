"""Inventory walk: every connected host of a target with its storage configuration, read with one
paged property-collector query (plus one small OptionManager call per host for DSNRO).

The answer is read with ElementTree (see soap.py: pyVmomi's own parser took most of the time).
The result, a Topology, is cached by the source and replaced as a whole on each refresh.
It also holds the name maps the perf mapping needs: a storagePath instance (the long
`fc.WWNN:WWPN-fc.WWNN:WWPN-naa.*` form) -> runtime name `vmhbaN:C0:T0:L0`, and a host-level
datastore instance (VMFS uuid) -> datastore name.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pyVmomi import vim, vmodl

from exporter.store import model as m
from exporter.vsphere import nfs, soap, vms
from exporter.vsphere.selection import HostSelection

HOST_PROPERTIES = [
    "name",
    "runtime.connectionState",
    "config.storageDevice.hostBusAdapter",
    "config.storageDevice.scsiLun",
    "config.storageDevice.multipathInfo",
    "config.storageDevice.plugStoreTopology",
    "config.fileSystemVolume.mountInfo",
    "configManager.advancedOption",
    "configManager.iscsiManager",
    "hardware.cpuInfo.hz",
    "hardware.cpuInfo.numCpuThreads",
    *nfs.NETWORK_PROPERTIES,
]
DSNRO_OPTION = "Disk.SchedNumReqOutstanding"
BITS = 8
_NS = "{urn:vim25}"
_XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
ADAPTER_TYPES = {
    "HostFibreChannelOverEthernetHba": "fcoe",
    "HostFibreChannelHba": "fc",
    "HostInternetScsiHba": "iscsi",
    "HostSerialAttachedHba": "sas",
    "HostParallelScsiHba": "scsi",
    "HostBlockHba": "block",
    "HostPcieHba": "pcie",
    "HostRdmaHba": "rdma",
    "HostTcpHba": "tcp",
}


@dataclass(slots=True)
class HostTopology:
    ref: object  # vim.HostSystem
    name: str
    inventory: m.Inventory
    path_names: dict[str, str] = field(default_factory=dict)  # perf instance -> runtime path name
    path_devices: dict[str, str] = field(default_factory=dict)  # runtime path name -> device
    datastore_names: dict[str, str] = field(default_factory=dict)  # perf instance -> datastore name
    datastores: list[str] = field(default_factory=list)  # uuids of the mounted datastores
    cpu_threads: int = 0  # logical CPUs: the instances of cpu.* counters
    extents: dict[str, list[str]] = field(default_factory=dict)  # VMFS datastore name -> its LUNs
    lun_uuids: dict[str, str] = field(default_factory=dict)  # ScsiLun.uuid -> canonical name
    vms: list[vms.VmTopology] = field(default_factory=list)  # its powered-on, selected VMs
    # (counter key, instance) -> where its values go; filled by the collection, the only writer,
    # and dropped with the topology when discovery replaces it.
    routes: dict = field(default_factory=dict)

    def instances(self) -> dict[str, int]:
        """Series one counter of each family returns for the host: its instances and the host
        aggregate (a family not listed: the aggregate alone). The NFS vmknics are no storageAdapter."""
        inv = self.inventory
        return {
            "luns": len(inv.luns) + 1,
            "paths": len(inv.paths) + 1,
            "datastores": len(self.datastores) + 1,
            "cpus": self.cpu_threads + 1,
            "adapters": sum(a.type != "nfs" for a in inv.adapters.values()) + 1,
        }


@dataclass(slots=True)
class Topology:
    hosts: list[HostTopology]
    duration: float = 0.0

    def counts(self) -> dict[str, int]:
        return {
            "host": len(self.hosts),
            "lun": sum(len(h.inventory.luns) for h in self.hosts),
            "adapter": sum(len(h.inventory.adapters) for h in self.hosts),
            "path": sum(len(h.inventory.paths) for h in self.hosts),
            "datastore": len({d for h in self.hosts for d in h.datastores}),
            "vm": sum(len(h.vms) for h in self.hosts),
            "vdisk": sum(len(vm.disks) for h in self.hosts for vm in h.vms),
        }


_text, _all = soap.text, soap.children


def link_speed_bytes(adapter_type: str, speed_text: str) -> float | None:
    """FC HBA speed. The API gives bits per second; values under 1 Mbit/s can only be Gbit/s,
    which some drivers report, so those are scaled."""
    if adapter_type not in ("fc", "fcoe") or not speed_text:
        return None
    speed = float(speed_text)
    if speed <= 0:
        return None
    return (speed * 1e9 if speed < 1e6 else speed) / BITS


def mbit_bytes(speed_mb: float) -> float:
    """A NIC's link speed (Mbit/s, as PhysicalNic.linkSpeed gives it) in bytes per second."""
    return speed_mb * 1e6 / BITS


def _nas_datastores(inv: m.Inventory, nas: list[tuple[str, str, str]], props: dict[str, ET.Element]) -> None:
    """Each NFS datastore's vmknic, added as an adapter of type nfs with its uplink's speed."""
    network = nfs.HostNetwork(props)
    for name, kind, server in nas:
        vmknic = network.vmknic_for(server)
        inv.datastores[name] = m.DatastoreConfig(type=kind, remote_host=server, adapter=vmknic)
        if vmknic and vmknic not in inv.adapters:
            uplink = network.uplink(vmknic) or nfs.Uplink(device="", driver="", speed_mb=0)
            inv.adapters[vmknic] = m.AdapterConfig(  # model: the vmnic carrying it, driver: that vmnic's
                type="nfs",
                model=uplink.device,
                driver=uplink.driver,
                link_speed_bytes_per_second=mbit_bytes(uplink.speed_mb) if uplink.speed_mb > 0 else None,
            )


def _path_state(path) -> str:
    state = (_text(path, "state") or _text(path, "pathState") or "unknown").lower()
    return state if state in m.PATH_STATES else "unknown"


def storage_of_host(name: str, ref, props: dict[str, ET.Element]) -> HostTopology:
    """One host's Inventory and name maps from its storageDevice parts, its mounts and (for NFS
    datastores) its network configuration."""
    inv = m.Inventory(host=name)
    topo = HostTopology(ref=ref, name=name, inventory=inv)
    extent_datastore: dict[str, str] = {}
    nas = []  # (datastore, nfs | nfs41, server)
    for mount in _all(props.get("config.fileSystemVolume.mountInfo"), "HostFileSystemMountInfo"):
        volume = mount.find(_NS + "volume")
        if volume is None:
            continue
        volume_name = _text(volume, "name")
        uuid = _text(volume, "uuid") or _text(mount, "mountInfo/path").rstrip("/").rsplit("/", 1)[-1]
        topo.datastores.append(uuid)
        topo.datastore_names[uuid] = volume_name
        kind = _text(volume, "type").lower()
        inv.datastores[volume_name] = m.DatastoreConfig(type=kind)
        if volume.get(_XSI_TYPE, "").split(":")[-1] == "HostNasVolume":
            # NFS 4.1 may list several server addresses: the first is the one the session opens on.
            nas.append((volume_name, kind, _text(volume, "remoteHost") or _text(volume, "remoteHostNames")))
        for extent in _all(volume, "extent"):
            extent_datastore[_text(extent, "diskName")] = volume_name
            topo.extents.setdefault(volume_name, []).append(_text(extent, "diskName"))
    if nas:
        _nas_datastores(inv, nas, props)
    adapters = {}
    for hba in _all(props.get("config.storageDevice.hostBusAdapter"), "HostHostBusAdapter"):
        kind = ADAPTER_TYPES.get(hba.get(_XSI_TYPE, "").split(":")[-1], "other")
        device = _text(hba, "device")
        adapters[_text(hba, "key")] = device
        inv.adapters[device] = m.AdapterConfig(
            type=kind,
            model=_text(hba, "model"),
            driver=_text(hba, "driver"),
            link_speed_bytes_per_second=link_speed_bytes(kind, _text(hba, "speed")),
        )
    lun_names = {}
    for lun in _all(props.get("config.storageDevice.scsiLun"), "ScsiLun"):
        canonical = _text(lun, "canonicalName")
        lun_names[_text(lun, "key")] = canonical
        topo.lun_uuids[_text(lun, "uuid")] = canonical
        depth = _text(lun, "queueDepth")
        inv.luns[canonical] = m.LunConfig(
            display_name=_text(lun, "displayName"),
            vendor=_text(lun, "vendor"),
            model=_text(lun, "model"),
            datastore=extent_datastore.get(canonical, ""),
            configured_queue_depth=float(depth) if depth else None,
            # Standard-API device state and flags (no esxcli needed): the first operational state
            # is the device's, the rest qualify it.
            operational_state=_text(lun, "operationalState"),
            is_ssd=_flag(lun, "ssd"),
            is_local=_flag(lun, "localDisk"),
            is_vvol_pe=_flag(lun, "protocolEndpoint"),
        )
    multipath = props.get("config.storageDevice.multipathInfo")
    for unit in _all(multipath, "lun"):
        device = lun_names.get(_text(unit, "lun"), _text(unit, "id"))
        config = inv.luns.get(device)
        if config is not None:
            policy = unit.find(_NS + "policy")
            hpp = policy is not None and "Hpp" in policy.get(_XSI_TYPE, "")
            config.plugin = "HPP" if hpp else "NMP"
            config.psp = _text(unit, "policy/policy") or _text(unit, "policy/pathSelectionScheme")
            config.satp = _text(unit, "storageArrayTypePolicy/policy")
        for path in _all(unit, "path"):
            path_name = _text(path, "name")
            adapter = adapters.get(_text(path, "adapter")) or m.path_adapter(path_name)
            inv.paths[path_name] = m.PathConfig(device=device, adapter=adapter, state=_path_state(path))
            topo.path_names[path_name] = path_name
            topo.path_devices[path_name] = device
    topology = props.get("config.storageDevice.plugStoreTopology")
    store_adapters = {_text(a, "key"): adapters.get(_text(a, "adapter")) for a in _all(topology, "adapter")}
    for path in _all(topology, "path"):
        adapter = store_adapters.get(_text(path, "adapter"))
        if adapter:
            runtime = f"{adapter}:C{_text(path, 'channelNumber', '0')}:T{_text(path, 'targetNumber', '0')}:L{_text(path, 'lunNumber', '0')}"
            if runtime in inv.paths:
                topo.path_names[_text(path, "name")] = runtime
    return topo


# The inventory tree above the hosts: enough to name each host's path, datacenter and cluster.
_TREE_TYPES = (vim.Folder, vim.Datacenter, vim.ComputeResource, vim.ClusterComputeResource, vim.HostSystem)


@dataclass(frozen=True, slots=True)
class Place:
    """Where a host sits: its inventory path (/DC/host/Cluster/esx01), datacenter and cluster."""

    name: str
    path: str
    datacenter: str = ""
    cluster: str = ""  # "" for a standalone host (its own compute resource)


def _tree(content, with_vms: bool = False) -> list[tuple[str, str, dict]]:
    """(type, moid, {name, parent}) of every folder, datacenter, compute resource and host, and
    with_vms every VM (with its host and power state) and vApp."""
    types = _TREE_TYPES + (vms.TREE_TYPES if with_vms else ())
    view = content.viewManager.CreateContainerView(content.rootFolder, list(types), True)
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[
            vmodl.query.PropertyCollector.ObjectSpec(
                obj=view,
                skip=True,
                selectSet=[vmodl.query.PropertyCollector.TraversalSpec(name="view", path="view", type=vim.view.ContainerView)],
            )
        ],
        propSet=[
            vmodl.query.PropertyCollector.PropertySpec(type=t, pathSet=vms.TREE_PROPERTIES.get(t, ["name", "parent"]))
            for t in types
        ],
    )
    try:
        return list(soap.retrieve_typed(content.propertyCollector, spec))
    finally:
        view.DestroyView()


def _nodes(tree: list[tuple[str, str, dict]]) -> dict[str, tuple[str, str, str]]:
    """moid -> (type, name, parent moid). A VM in a vApp has no parent but its vApp, a vApp its folder."""
    nodes = {}
    for kind, moid, props in tree:
        parent = next(
            (_text_of(props.get(p)) for p in ("parent", "parentFolder", "parentVApp") if _text_of(props.get(p))),
            "",
        )
        nodes[moid] = (kind, _text_of(props.get("name")), parent)
    return nodes


def host_places(tree: list[tuple[str, str, dict]]) -> dict[str, Place]:
    """moid of each host -> its Place. The root folder is not part of a path (as in Telegraf)."""
    nodes = _nodes(tree)
    return {moid: _place(nodes, moid) for moid, (kind, _, _) in nodes.items() if kind == "HostSystem"}


def _place(nodes: dict[str, tuple[str, str, str]], moid: str) -> Place:
    """Where any node of the tree sits: a host (/DC/host/Cluster/esx01) or a VM (/DC/vm/Folder/db01)."""
    _, name, parent = nodes[moid]
    names, datacenter, cluster = [name], "", ""
    while parent in nodes:
        parent_kind, parent_name, grandparent = nodes[parent]
        if grandparent not in nodes and parent_kind == "Folder":
            break  # the root folder ("Datacenters")
        names.append(parent_name)
        if parent_kind == "Datacenter" and not datacenter:
            datacenter = parent_name
        if parent_kind == "ClusterComputeResource" and not cluster:
            cluster = parent_name
        parent = grandparent
    return Place(name=name, path="/" + "/".join(reversed(names)), datacenter=datacenter, cluster=cluster)


def _retrieve_hosts(content, moids: list[str]) -> list[tuple[str, dict]]:
    """The storage configuration of these hosts only (a filtered or sharded exporter reads no other)."""
    if not moids:
        return []
    stub = content.propertyCollector._stub
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=vim.HostSystem(moid, stub), skip=False) for moid in moids],
        propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.HostSystem, pathSet=HOST_PROPERTIES)],
    )
    return list(soap.retrieve(content.propertyCollector, spec))


# Below this many hosts a second request costs more than it saves.
_HOSTS_PER_REQUEST_MIN = 16


def _retrieve_in_parallel(client, moids: list[str], max_parallel: int) -> list[tuple[str, dict]]:
    """The chosen hosts' configuration in up to max_parallel requests at once: the server builds
    each host's storage answer in its own time (most of discovery's wall time), and a vCenter,
    like the simulator, answers concurrent property retrievals on several cores. The hosts are
    read by reference, so the inventory is walked once, by the tree."""
    pieces = max(1, min(max_parallel, len(moids) // _HOSTS_PER_REQUEST_MIN))
    if pieces == 1:
        return client.call(lambda content: _retrieve_hosts(content, moids))
    chunks = [moids[i::pieces] for i in range(pieces)]
    with ThreadPoolExecutor(max_workers=pieces) as pool:
        parts = list(pool.map(lambda chunk: client.call(lambda content: _retrieve_hosts(content, chunk)), chunks))
    return [row for part in parts for row in part]


def perf_counters(content) -> list[tuple[int, str]]:
    """(key, group.name.rollup) of every counter the server has."""
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=content.perfManager)],
        propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.PerformanceManager, pathSet=["perfCounter"])],
    )
    counters = []
    for _, props in soap.retrieve(content.propertyCollector, spec):
        for info in _all(props.get("perfCounter"), "PerfCounterInfo"):
            counters.append(
                (
                    int(_text(info, "key")),
                    f"{_text(info, 'groupInfo/key')}.{_text(info, 'nameInfo/key')}.{_text(info, 'rollupType')}",
                )
            )
    return counters


def server_query_limit(content) -> int | None:
    """vCenter's config.vpxd.stats.maxQueryMetrics, if set (ESXi has no such limit)."""
    if content.setting is None:
        return None
    try:
        values = content.setting.QueryOptions("config.vpxd.stats.maxQueryMetrics")
    except vim.fault.InvalidName:
        return None
    for value in values or ():
        try:
            return int(value.value)
        except (TypeError, ValueError):
            return None
    return None


def _dsnro(option_manager) -> float | None:
    try:
        values = option_manager.QueryOptions(DSNRO_OPTION)
    except vim.fault.InvalidName:
        return None  # removed from newer ESXi: the per-device setting replaces it
    for value in values or ():
        if value.key == DSNRO_OPTION:
            return float(value.value)
    return None


def _iscsi_link_bytes(iscsi_manager, adapter: str) -> float | None:
    """A software or dependent iSCSI adapter's link: the sum of the vmnics bound to it."""
    try:
        ports = iscsi_manager.QueryBoundVnics(iScsiHbaName=adapter)
    except (vim.fault.NotFound, vim.fault.IscsiFault, vmodl.fault.NotSupported):
        return None
    speeds = {
        p.pnicDevice or p.pnic.device: p.pnic.linkSpeed.speedMb
        for p in ports or ()
        if p.pnic is not None and p.pnic.linkSpeed is not None
    }
    return mbit_bytes(sum(speeds.values())) if speeds else None


def _host_settings(topo: HostTopology, options, iscsi) -> None:
    """The per-host calls: DSNRO, and the NICs behind iSCSI adapters."""
    if options is not None:
        topo.inventory.dsnro = _dsnro(options)
    if iscsi is not None:
        for name, adapter in topo.inventory.adapters.items():
            if adapter.type == "iscsi":
                adapter.link_speed_bytes_per_second = _iscsi_link_bytes(iscsi, name)


def discover(
    client,
    max_parallel: int = 4,
    selection: HostSelection | None = None,
    with_vms: bool = False,
    vm_selection: HostSelection | None = None,
) -> Topology:
    """Every connected host the selection keeps (inventory paths, shard), with its storage; and
    with_vms their powered-on VMs that vm_selection keeps, with their virtual disks."""
    start = time.perf_counter()
    selection = selection or HostSelection()
    tree = client.call(lambda content: _tree(content, with_vms))
    places = host_places(tree)
    chosen = sorted(moid for moid, place in places.items() if selection.keeps(place.path, place.name))
    rows = _retrieve_in_parallel(client, chosen, max_parallel)
    stub = client.content().propertyCollector._stub
    hosts = []
    for moid, props in rows:
        if _text_of(props.get("runtime.connectionState")) != "connected":
            continue
        topo = storage_of_host(_text_of(props.get("name")), vim.HostSystem(moid, stub), props)
        place = places.get(moid)
        if place is not None:
            topo.inventory.datacenter, topo.inventory.cluster = place.datacenter, place.cluster
        core_hz = _text_of(props.get("hardware.cpuInfo.hz"))
        topo.inventory.cpu_core_hertz = float(core_hz) if core_hz else None  # for CPU cost per I/O
        threads = _text_of(props.get("hardware.cpuInfo.numCpuThreads"))
        topo.cpu_threads = int(threads) if threads.isdigit() else 0
        options = _text_of(props.get("configManager.advancedOption"))
        iscsi = _text_of(props.get("configManager.iscsiManager"))
        has_iscsi = any(a.type == "iscsi" for a in topo.inventory.adapters.values())
        hosts.append(
            (
                topo,
                vim.option.OptionManager(options, stub) if options else None,
                vim.host.IscsiManager(iscsi, stub) if iscsi and has_iscsi else None,
            )
        )
    if hosts:
        # Two small calls a host, each mostly a round trip: more of them at once than the big queries.
        with ThreadPoolExecutor(max_workers=max(1, 4 * max_parallel)) as pool:
            list(pool.map(lambda host: client.call(lambda _c: _host_settings(*host)), hosts))
    # How many hosts of this target mount each datastore (by uuid: local datastores often share
    # a name): above 1 the LUN is shared.
    shares: dict[str, int] = {}
    for topo, *_ in hosts:
        for uuid in set(topo.datastores):
            shares[uuid] = shares.get(uuid, 0) + 1
    for topo, *_ in hosts:
        topo.inventory.datastore_hosts = {topo.datastore_names[uuid]: shares[uuid] for uuid in set(topo.datastores)}
    topos = sorted((t for t, *_ in hosts), key=lambda t: t.name)
    if with_vms:
        _add_vms(client, tree, topos, vm_selection or HostSelection())
    return Topology(hosts=topos, duration=time.perf_counter() - start)


def _add_vms(client, tree, topos: list[HostTopology], selection: HostSelection) -> None:
    """Each host's powered-on VMs that the selection keeps, with the backing of their disks."""
    by_moid = {topo.ref._moId: topo for topo in topos}
    nodes = _nodes(tree)
    chosen = vms.choose(tree, set(by_moid), selection, lambda moid: _place(nodes, moid).path)
    host_of = {moid: host for moid, _, _, host in chosen}
    storage: dict[str, vms.HostStorage] = {}

    def storage_of(moid: str) -> vms.HostStorage:
        host = host_of[moid]
        known = storage.get(host)
        if known is None:
            topo = by_moid[host]
            known = storage[host] = vms.HostStorage(
                datastore_types={ds: config.type for ds, config in topo.inventory.datastores.items()},
                extents={ds: tuple(luns) for ds, luns in topo.extents.items()},
                lun_uuids=topo.lun_uuids,
            )
        return known

    disks = client.call(lambda content: vms.retrieve(content, list(host_of), storage_of))
    stub = client.content().propertyCollector._stub
    for moid, name, path, host in chosen:
        if moid not in disks:
            continue  # removed since the walk
        topo = by_moid[host]
        vm = vms.VmTopology(ref=vim.VirtualMachine(moid, stub), name=name, path=path, host=host, disks=disks[moid])
        topo.vms.append(vm)
        for disk, config in vm.disks.items():
            topo.inventory.vdisks[(name, disk)] = config


def _flag(element, path: str) -> bool | None:
    text = _text(element, path).lower()
    return None if text not in ("true", "false") else text == "true"


def _text_of(element) -> str:
    return "" if element is None or element.text is None else element.text.strip()
