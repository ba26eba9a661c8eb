"""A host's storage configuration from its property-collector answer, and the calls around it.

The answer is read with ElementTree (see soap.py: pyVmomi's own parser took most of the time)
into a HostTopology: the host's Inventory, and the name maps the perf mapping needs: a
storagePath instance (the long `fc.WWNN:WWPN-fc.WWNN:WWPN-naa.*` form) -> runtime name
`vmhbaN:C0:T0:L0`, and a host-level datastore instance (VMFS uuid, or its url) -> datastore name. Which
hosts, and when their configuration is read, is the mirror's and the follower's business
(mirror.py, follow.py); a Topology is what collection reads, replaced whole on every change.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from pyVmomi import vim, vmodl

from exporter.store import model as m
from exporter.vsphere import nfs, soap, vms
from exporter.vsphere.hostfaults import HostFaults

# Read in two steps (see mirror.py): what the LUN, adapter and CPU counters need, then paths,
# mounts and the vmkernel network.
LUN_PROPERTIES = [
    "config.storageDevice.hostBusAdapter",
    "config.storageDevice.scsiLun",
    "configManager.advancedOption",
    "configManager.iscsiManager",
    "hardware.cpuInfo.hz",
    "hardware.cpuInfo.numCpuThreads",
]
PATH_PROPERTIES = [
    "config.storageDevice.multipathInfo",
    "config.storageDevice.plugStoreTopology",
    "config.fileSystemVolume.mountInfo",
    *nfs.NETWORK_PROPERTIES,
]
HOST_PROPERTIES = ["name", "runtime.connectionState", *LUN_PROPERTIES, *PATH_PROPERTIES]
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


# Volumes a host mounts that are no datastore (config.fileSystemVolume.mountInfo lists them too):
# the vfat boot banks (HostVfatVolume, type OTHER; named BOOTBANK1/2 from ESXi 7.0, unnamed before)
# and, from 7.0, OSDATA (a HostVmfsVolume of type OTHER named OSDATA-<uuid>; esxcli calls it VMFSOS,
# some builds VMFS-L). A vFlash (VFFS) volume is a read cache, no datastore either.
NOT_DATASTORE_TYPES = frozenset({"other", "vfat", "vmfs-l", "vmfsos", "vffs"})
NOT_DATASTORE_XSI = frozenset({"HostVfatVolume", "HostVffsVolume"})


def is_datastore(volume) -> bool:
    """A mounted volume is a datastore (VMFS, NFS, NFS 4.1, vSAN, vVol, PMEM ...) unless it is one
    of the system volumes above or has no name (no datastore is nameless)."""
    return (
        bool(_text(volume, "name"))
        and _text(volume, "type").lower() not in NOT_DATASTORE_TYPES
        and volume.get(_XSI_TYPE, "").split(":")[-1] not in NOT_DATASTORE_XSI
    )


# The model families whose perf instances a host's topology names: all of them once its whole
# storage configuration is read; before its paths and mounts are in, LUNs, adapters and CPUs.
LUN_FAMILIES = frozenset({"luns", "adapters", "cpus", "host"})
ALL_FAMILIES = LUN_FAMILIES | {"paths", "datastores"}


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
    # family -> perf instance -> its model key (None: not ours); filled by the collection, the
    # only writer, and dropped with the topology when its paths or mounts change.
    routes: dict = field(default_factory=dict)
    families: frozenset = ALL_FAMILIES  # the families whose instances are known (LUN_FAMILIES: paths not read yet)
    managers: tuple[str, str] = ("", "")  # moids of its advanced-option and iSCSI managers
    # (adapter key -> device, ScsiLun key -> canonical name): how its paths name them; kept from
    # luns_of_host until with_paths, None once its paths are read
    keys: tuple[dict[str, str], dict[str, str]] | None = None

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
    return with_paths(luns_of_host(name, ref, props), props)


def luns_of_host(name: str, ref, props: dict[str, ET.Element]) -> HostTopology:
    """What the LUN, adapter and CPU counters need (LUN_PROPERTIES): the host's adapters and LUNs,
    with the keys its paths will name them by (HostTopology.keys), so that its paths and mounts
    can be laid over it later (with_paths) without keeping the answer they came in."""
    inv = m.Inventory(host=name)
    topo = HostTopology(ref=ref, name=name, inventory=inv)
    adapters, lun_names = {}, {}
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
    for lun in _all(props.get("config.storageDevice.scsiLun"), "ScsiLun"):
        canonical = _text(lun, "canonicalName")
        lun_names[_text(lun, "key")] = canonical
        topo.lun_uuids[_text(lun, "uuid")] = canonical
        depth = _text(lun, "queueDepth")
        inv.luns[canonical] = m.LunConfig(
            display_name=_text(lun, "displayName"),
            vendor=_text(lun, "vendor"),
            model=_text(lun, "model"),
            configured_queue_depth=float(depth) if depth else None,
            # Standard-API device state and flags (no esxcli needed): the first operational state
            # is the device's, the rest qualify it.
            operational_state=_text(lun, "operationalState"),
            is_ssd=_flag(lun, "ssd"),
            is_local=_flag(lun, "localDisk"),
            is_vvol_pe=_flag(lun, "protocolEndpoint"),
        )
    topo.keys = (adapters, lun_names)
    return topo


def with_paths(base: HostTopology, props: dict[str, ET.Element]) -> HostTopology:
    """A new topology: base (luns_of_host's) with the host's paths, mounts and NFS vmknics
    (PATH_PROPERTIES) laid over copies of its adapters and LUNs; base is not changed (collection
    may be reading it)."""
    adapters, lun_names = base.keys
    inv = m.Inventory(host=base.name, cpu_core_hertz=base.inventory.cpu_core_hertz)
    topo = HostTopology(
        ref=base.ref,
        name=base.name,
        inventory=inv,
        lun_uuids=base.lun_uuids,
        cpu_threads=base.cpu_threads,
        managers=base.managers,
    )
    extent_datastore: dict[str, str] = {}
    nas = []  # (datastore, nfs | nfs41, server)
    for mount in _all(props.get("config.fileSystemVolume.mountInfo"), "HostFileSystemMountInfo"):
        volume = mount.find(_NS + "volume")
        if volume is None or not is_datastore(volume):
            continue  # a boot bank or OSDATA: its partitions are on the boot device, no datastore of it
        volume_name = _text(volume, "name")
        uuid = _text(volume, "uuid") or _text(mount, "mountInfo/path").rstrip("/").rsplit("/", 1)[-1]
        topo.datastores.append(uuid)
        topo.datastore_names[uuid] = volume_name
        # ESXi names a datastore's perf instance by its uuid; govmomi's simulator by its url (the
        # mount path, or vCenter's ds:///vmfs/volumes/<uuid>/ form of it): each reaches the name.
        mount_path = _text(mount, "mountInfo/path").rstrip("/")
        if mount_path:
            topo.datastore_names.setdefault(mount_path, volume_name)
            topo.datastore_names.setdefault(f"ds://{mount_path}/", volume_name)
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
    for device, adapter in base.inventory.adapters.items():
        inv.adapters[device] = dataclasses.replace(adapter)
    for canonical, lun in base.inventory.luns.items():
        inv.luns[canonical] = dataclasses.replace(lun, datastore=extent_datastore.get(canonical, ""))
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


@dataclass(frozen=True, slots=True)
class Place:
    """Where a host sits: its inventory path (/DC/host/Cluster/esx01), datacenter and cluster."""

    name: str
    path: str
    datacenter: str = ""
    cluster: str = ""  # "" for a standalone host (its own compute resource)


def place(nodes: dict[str, tuple[str, str, str]], moid: str) -> Place:
    """Where any node of the tree sits: a host (/DC/host/Cluster/esx01) or a VM (/DC/vm/Folder/db01).
    nodes: moid -> (type, name, parent moid); the root folder is not one of them (as in Telegraf,
    it is no part of a path)."""
    _, name, parent = nodes[moid]
    names, datacenter, cluster, seen = [name], "", "", {moid}
    while parent in nodes and parent not in seen:  # a parent cycle (a hostile answer) ends the path
        seen.add(parent)
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


def retrieve_hosts(content, moids: list[str]) -> list[tuple[str, dict]]:
    """The whole storage configuration of these hosts (one whose configuration changed is read again)."""
    if not moids:
        return []
    stub = content.propertyCollector._stub
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=vim.HostSystem(moid, stub), skip=False) for moid in moids],
        propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.HostSystem, pathSet=HOST_PROPERTIES)],
    )
    return list(soap.retrieve(content.propertyCollector, spec))


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
    except (vim.fault.InvalidName, vim.fault.NoPermission):
        return None  # not set, or not readable with this role: the configured limit stands
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


def read_settings(topo: HostTopology, stub, faults: HostFaults) -> None:
    """The per-host calls of a topology not published yet: DSNRO (the host option), and the NICs
    behind iSCSI adapters. A fault of one of them (its manager absent, no permission on the host,
    the host not connected, a timeout) is the host's alone (faults): the value stays as it was
    (the last reading, carried over by the mirror; unknown if never read)."""
    options, iscsi = topo.managers
    if options:
        manager = vim.option.OptionManager(options, stub)
        dsnro = faults.call(topo.name, "QueryOptions", lambda: _dsnro(manager), _FAILED)
        if dsnro is not _FAILED:
            topo.inventory.dsnro = dsnro
    if iscsi and any(a.type == "iscsi" for a in topo.inventory.adapters.values()):
        manager = vim.host.IscsiManager(iscsi, stub)
        for name, adapter in topo.inventory.adapters.items():
            if adapter.type != "iscsi":
                continue
            link = faults.call(topo.name, "QueryBoundVnics", lambda name=name: _iscsi_link_bytes(manager, name), _FAILED)
            if link is _FAILED:  # the manager's fault, not this adapter's: the others are not asked
                break
            adapter.link_speed_bytes_per_second = link


_FAILED = object()


def _flag(element, path: str) -> bool | None:
    text = _text(element, path).lower()
    return None if text not in ("true", "false") else text == "true"


def _text_of(element) -> str:
    return "" if element is None or element.text is None else element.text.strip()
