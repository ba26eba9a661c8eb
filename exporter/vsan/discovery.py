"""Which clusters of a target run vSAN, and what the performance service's uuids stand for.

Three property-collector reads, answers parsed with ElementTree (exporter.vsphere.soap):
1. the inventory tree with each cluster's `configurationEx` (vSAN on: `vsanConfigInfo.enabled`;
   its uuid and ESA flag), which also places every host (its cluster and inventory path);
2. the hosts of the chosen vSAN clusters: `config.vsanHostConfig` (node uuid; the disk groups of
   `storageInfo.diskMapping`, each disk's canonical name and `vsanDiskInfo.vsanUuid`), `vm`, their
   physical NICs' link speeds (`config.network.pnic`) and `configManager.vsanSystem`;
3. those VMs' name and `config.instanceUuid` (the id of the `virtual-machine` entity).
vSAN ESA has no disk mapping: each ESA host's storage pool disks are named by the vSAN endpoint's
`QueryVsanManagedDisks(host, QueryVsanDisksSpec(vsanDiskType="storagePool"))`: each
`storagePools[].storagePoolDisks[]` entry's `vsanUuid` (else its `disk.vsanDiskInfo.vsanUuid`)
beside `disk.canonicalName`, what Broadcom's ESA storage pool sample reads. For a host where that
call fails, or names no pool disk, the host's `QueryDisksForVsan()` does: its disks in state
`inUse` with their vSAN uuid. A failure is kept by call and host (ClusterTopology.join_faults) for
the source to count; the host's disks then stay unnamed.
These uuids are also what a performance query by uuid asks for (ClusterTopology.uuids).
A target without a vSAN cluster costs only the first read, and no vSAN call.

Which clusters: each is kept whole by one exporter. With --vsphere.shard K/N a cluster belongs
to the shard of its *name* (its hosts may sit in other shards); with host include/exclude
patterns, a cluster is kept when any of its hosts is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pyVmomi import vim, vmodl

from exporter.configuration.sharding import shard_of
from exporter.store import model as m
from exporter.vsan import metrics as vm
from exporter.vsan.perfcsv import Names
from exporter.vsphere import soap
from exporter.vsphere.client import VsphereError
from exporter.vsphere.discovery import mbit_bytes, place
from exporter.vsphere.selection import HostSelection

_TREE_TYPES = (vim.Folder, vim.Datacenter, vim.ComputeResource, vim.ClusterComputeResource, vim.HostSystem)
HOST_PROPERTIES = [
    "name",
    "runtime.connectionState",
    "config.vsanHostConfig",
    "vm",
    "configManager.vsanSystem",
    "config.network.pnic",
]
VM_PROPERTIES = ["name", "config.instanceUuid", "runtime.host"]
_text, _all = soap.text, soap.children
STORAGE_POOL = "storage_pool"  # the tier of a vSAN ESA disk (model.VsanDisk.tier)
# The disk queries that name ESA disks, as esxi_vsan_errors_total's `call` names their failures.
MANAGED_DISKS = "managed_disks"  # VsanVcDiskManagementSystem.QueryVsanManagedDisks (vSAN endpoint)
DISKS_FOR_VSAN = "disks_for_vsan"  # HostVsanSystem.QueryDisksForVsan (vSphere API), the fallback


@dataclass(slots=True)
class ClusterTopology:
    moid: str
    name: str
    uuid: str = ""
    esa: bool = False
    hosts: dict[str, str] = field(default_factory=dict)  # host name -> node uuid
    host_moids: list[str] = field(default_factory=list)
    disks: dict[tuple[str, str], m.VsanDisk] = field(default_factory=dict)  # (host, device) -> disk
    vms: dict[str, tuple[str, str]] = field(default_factory=dict)  # VM name -> (instance uuid, host)
    names: Names = field(default_factory=Names)
    nic_speeds: dict[tuple[str, str], float] = field(default_factory=dict)  # (host, vmnic) -> bytes/s
    unnamed_disks: int = 0  # disks in use by vSAN that the disk query gave no device or uuid for
    join_faults: dict[tuple[str, str], str] = field(default_factory=dict)  # (call, host) -> why the disk query failed

    def uuids(self, kind: str) -> list[str]:
        """The uuids the performance service names this cluster's entities of a type by (what a
        query by uuid asks for), sorted: the cluster's, its hosts' node uuids, its cache disks' (a
        disk group is named by its cache disk), its capacity disks', its VMs' instance uuids."""
        if kind == vm.CLUSTER:
            found = [self.uuid]
        elif kind == vm.HOST:
            found = list(self.hosts.values())
        elif kind in (vm.DISK_GROUP, vm.CACHE_DISK):
            found = [d.uuid for d in self.disks.values() if d.tier == "cache"]
        elif kind == vm.CAPACITY_DISK:
            found = [d.uuid for d in self.disks.values() if d.tier == "capacity"]
        elif kind == vm.VM:
            found = [uuid for uuid, _host in self.vms.values()]
        elif kind in vm.ESA_TYPES:
            found = [d.uuid for d in self.disks.values() if d.tier == STORAGE_POOL]
        elif kind in (vm.CLUSTER_BACKEND, vm.CLUSTER_OWNER):
            found = [self.uuid]
        elif kind in (vm.HOST_NETWORK, vm.HOST_BACKEND, vm.HOST_OWNER):
            found = list(self.hosts.values())
        elif kind in (vm.NIC, vm.VMKNIC):
            found = []  # named by NIC, which only the wildcard answer tells
        else:
            found = []
        return sorted({uuid for uuid in found if uuid})


def discover(client, selection: HostSelection | None = None, service=None) -> list[ClusterTopology]:
    """The target's vSAN clusters this exporter takes, with their connected hosts, disks and VMs;
    a cluster none of whose hosts is connected comes with none (nothing of it can be read, but a
    host of it that comes back is one to discover). service: the target's vSAN endpoint
    (exporter.vsan.service.VsanService), asked for ESA disks."""
    tree = client.call(_tree)
    clusters = choose(tree, selection or HostSelection())
    if not clusters:
        return []
    hosts = client.call(
        lambda content: _retrieve(content, vim.HostSystem, [h for c in clusters for h in c.host_moids], HOST_PROPERTIES)
    )
    by_host = {moid: cluster for cluster in clusters for moid in cluster.host_moids}
    host_names: dict[str, str] = {}  # moid -> name
    vm_cluster: dict[str, ClusterTopology] = {}  # VM moid -> its host's cluster
    for moid, props in hosts:
        cluster = by_host.get(moid)
        if cluster is None or _value(props.get("runtime.connectionState")) != "connected":
            continue
        host_names[moid] = name = _value(props.get("name"))
        _add_host(cluster, name, props.get("config.vsanHostConfig"))
        _add_nics(cluster, name, props.get("config.network.pnic"))
        if cluster.esa and name in cluster.hosts:
            if not _name_pool_disks(client, service, cluster, moid, name, _value(props.get("configManager.vsanSystem"))):
                service = None  # no answer from the vSAN endpoint: one call timeout a discovery, not one a host
        for ref in _all(props.get("vm"), "ManagedObjectReference"):
            vm_cluster[_value(ref)] = cluster
    if vm_cluster:
        found = client.call(lambda content: _retrieve(content, vim.VirtualMachine, list(vm_cluster), VM_PROPERTIES))
        for moid, props in found:
            cluster, uuid = vm_cluster.get(moid), _value(props.get("config.instanceUuid"))
            if cluster is None or not uuid:
                continue
            name = _value(props.get("name"))
            cluster.vms[name] = (uuid, host_names.get(_value(props.get("runtime.host")), ""))
            cluster.names.vms[uuid] = name
    return clusters


def _tree(content) -> list[tuple[str, str, dict]]:
    view = content.viewManager.CreateContainerView(content.rootFolder, list(_TREE_TYPES), True)
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[
            vmodl.query.PropertyCollector.ObjectSpec(
                obj=view,
                skip=True,
                selectSet=[vmodl.query.PropertyCollector.TraversalSpec(name="view", path="view", type=vim.view.ContainerView)],
            )
        ],
        propSet=[
            vmodl.query.PropertyCollector.PropertySpec(
                type=t, pathSet=["name", "parent", "configurationEx"] if t is vim.ClusterComputeResource else ["name", "parent"]
            )
            for t in _TREE_TYPES
        ],
    )
    try:
        return list(soap.retrieve_typed(content.propertyCollector, spec))
    finally:
        view.DestroyView()


def choose(tree: list[tuple[str, str, dict]], selection: HostSelection) -> list[ClusterTopology]:
    """The vSAN clusters of the tree this exporter takes (see the module's docstring)."""
    nodes = {moid: (kind, _value(props.get("name")), _value(props.get("parent"))) for kind, moid, props in tree}
    places = {moid: place(nodes, moid) for moid, (kind, _, _) in nodes.items() if kind == "HostSystem"}
    paths_only = dataclasses.replace(selection, shard=None)
    clusters: dict[str, ClusterTopology] = {}
    for kind, moid, props in tree:
        if kind != "ClusterComputeResource":
            continue
        config = props.get("configurationEx")
        if _text(config, "vsanConfigInfo/enabled").lower() != "true":
            continue
        name = _value(props.get("name"))
        if selection.shard is not None and shard_of(name, selection.shard[1]) != selection.shard[0]:
            continue
        clusters[moid] = ClusterTopology(
            moid=moid,
            name=name,
            uuid=_text(config, "vsanConfigInfo/defaultConfig/uuid"),
            esa=_text(config, "vsanConfigInfo/vsanEsaEnabled").lower() == "true",
        )
    for kind, moid, props in tree:
        if kind != "HostSystem":
            continue
        cluster = clusters.get(_value(props.get("parent")))
        where = places.get(moid)
        if cluster is not None and where is not None and (paths_only.everything or paths_only.keeps(where.path, where.name)):
            cluster.host_moids.append(moid)
    return sorted((c for c in clusters.values() if c.host_moids), key=lambda c: c.name)


def _add_host(cluster: ClusterTopology, host: str, config) -> None:
    """A host's node uuid and disk groups (config.vsanHostConfig) into its cluster."""
    if config is None or _text(config, "enabled").lower() != "true":
        return
    node_uuid = _text(config, "clusterInfo/nodeUuid")
    cluster.hosts[host] = node_uuid
    cluster.names.hosts[node_uuid] = host
    cluster.esa = cluster.esa or _text(config, "vsanEsaEnabled").lower() == "true"
    for mapping in _all(config, "storageInfo/diskMapping"):
        caches = _all(mapping, "ssd")
        cache = caches[0] if caches else None
        group = _text(cache, "canonicalName")
        for disk, tier in [(cache, "cache"), *((d, "capacity") for d in _all(mapping, "nonSsd"))]:
            device, uuid = _text(disk, "canonicalName"), _text(disk, "vsanDiskInfo/vsanUuid")
            if not device:
                continue
            cluster.disks[(host, device)] = m.VsanDisk(host=host, device=device, disk_group=group, tier=tier, uuid=uuid)
            if uuid:
                cluster.names.disks[uuid] = (host, device)
                if tier == "cache":
                    cluster.names.disk_groups[uuid] = (host, device)


def _add_nics(cluster: ClusterTopology, host: str, pnics) -> None:
    """Each physical NIC's link speed (linkSpeed.speedMb; absent when the link is down)."""
    for pnic in _all(pnics, "PhysicalNic"):
        device, speed = _text(pnic, "device"), _text(pnic, "linkSpeed/speedMb")
        if device and speed and float(speed) > 0:
            cluster.nic_speeds[(host, device)] = mbit_bytes(float(speed))


def _name_pool_disks(client, service, cluster: ClusterTopology, moid: str, host: str, system: str) -> bool:
    """One ESA host's storage pool disks: QueryVsanManagedDisks first, QueryDisksForVsan where it
    fails or names none (a host with no pool disk asks both). False if the vSAN endpoint gave no
    answer at all (down, hanging: not a fault), which the rest of the discovery need not wait for."""
    answered = True
    if service is not None:
        try:
            info = service.managed_disks(moid, "storagePool")
        except VsphereError as err:
            cluster.join_faults[(MANAGED_DISKS, host)] = str(err)
            answered = err.server_fault
        else:
            if _add_managed_disks(cluster, host, info):
                return True
    if not system:
        return answered
    try:
        results = client.call(lambda content: _query_disks(content, system))
    except VsphereError as err:
        cluster.join_faults[(DISKS_FOR_VSAN, host)] = str(err)
        return answered
    _add_pool_disks(cluster, host, results)
    return answered


def _add_managed_disks(cluster: ClusterTopology, host: str, info) -> bool:
    """The storage pool disks of QueryVsanManagedDisks' answer (vim.vsan.host.VsanManagedDisksInfo),
    by vSAN uuid: the entry's own `vsanUuid`, else its disk's `vsanDiskInfo.vsanUuid`. A disk that
    is unmounted or carries an error is named all the same (its entities still report), with its
    state kept. A disk without a name or uuid is counted (unnamed_disks). True if it listed any."""
    entries = [d for pool in getattr(info, "storagePools", None) or [] for d in pool.storagePoolDisks or []]
    for entry in entries:
        disk = entry.disk
        device = (disk.canonicalName if disk is not None else "") or ""
        uuid = entry.vsanUuid or (disk.vsanDiskInfo.vsanUuid if disk is not None and disk.vsanDiskInfo else "") or ""
        if not device or not uuid:
            cluster.unnamed_disks += 1
            continue
        fault = getattr(entry.error, "_wsdlName", "") if entry.error is not None else ""
        cluster.disks[(host, device)] = m.VsanDisk(
            host=host, device=device, disk_group="", tier=STORAGE_POOL, uuid=uuid, mounted=entry.isMounted, fault=fault
        )
        cluster.names.disks[uuid] = (host, device)
    return bool(entries)


def _query_disks(content, system_moid: str) -> list[tuple[str, str, str]]:
    """HostVsanSystem.QueryDisksForVsan(): (canonical name, state, vSAN uuid) of each disk."""
    system = vim.host.VsanSystem(system_moid, content.propertyCollector._stub)
    return [(r.disk.canonicalName if r.disk else "", r.state or "", r.vsanUuid or "") for r in system.QueryDisksForVsan() or []]


def _add_pool_disks(cluster: ClusterTopology, host: str, results: list[tuple[str, str, str]]) -> None:
    """vSAN ESA's disks (the storage pool) from the host's disk query: those in use, by vSAN uuid.
    The join is by uuid, never by the order of an answer; a disk in use without a name or a uuid
    is counted (unnamed_disks), and its entities, if any, count as unknown when a sample comes."""
    for device, state, uuid in results:
        if state != "inUse":
            continue
        if not device or not uuid:
            cluster.unnamed_disks += 1
            continue
        cluster.disks[(host, device)] = m.VsanDisk(host=host, device=device, disk_group="", tier=STORAGE_POOL, uuid=uuid)
        cluster.names.disks[uuid] = (host, device)


def _retrieve(content, kind, moids: list[str], properties: list[str]) -> list[tuple[str, dict]]:
    if not moids:
        return []
    stub = content.propertyCollector._stub
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=kind(moid, stub), skip=False) for moid in moids],
        propSet=[vmodl.query.PropertyCollector.PropertySpec(type=kind, pathSet=properties)],
    )
    return list(soap.retrieve(content.propertyCollector, spec))


def _value(element) -> str:
    return "" if element is None or element.text is None else element.text.strip()
