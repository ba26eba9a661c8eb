"""Inventory walk: every connected host of a target with its storage configuration, read with one
paged property-collector query (plus one small OptionManager call per host for DSNRO).

The result, a Topology, is cached by the source and replaced as a whole on each refresh.
It also holds the name maps the perf mapping needs: a storagePath instance (the long
`fc.WWNN:WWPN-fc.WWNN:WWPN-naa.*` form) -> runtime name `vmhbaN:C0:T0:L0`, and a host-level
datastore instance (VMFS uuid) -> datastore name.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pyVmomi import vim, vmodl

from exporter import model as m

HOST_PROPERTIES = ["name", "runtime.connectionState", "config.storageDevice",
                   "config.fileSystemVolume.mountInfo", "configManager.advancedOption"]
DSNRO_OPTION = "Disk.SchedNumReqOutstanding"
BITS = 8
# Adapter classes, most specific first (FCoE is a kind of FC).
ADAPTER_TYPES = (
    (vim.host.FibreChannelOverEthernetHba, "fcoe"),
    (vim.host.FibreChannelHba, "fc"),
    (vim.host.InternetScsiHba, "iscsi"),
    (vim.host.SerialAttachedHba, "sas"),
    (vim.host.ParallelScsiHba, "scsi"),
    (vim.host.BlockHba, "block"),
    (vim.host.PcieHba, "pcie"),
    (vim.host.RdmaHba, "rdma"),
    (vim.host.TcpHba, "tcp"),
)


@dataclass(slots=True)
class HostTopology:
    ref: object  # vim.HostSystem
    name: str
    inventory: m.Inventory
    path_names: dict[str, str] = field(default_factory=dict)  # perf instance -> runtime path name
    path_devices: dict[str, str] = field(default_factory=dict)  # runtime path name -> device
    datastore_names: dict[str, str] = field(default_factory=dict)  # perf instance -> datastore name
    datastores: list[str] = field(default_factory=list)  # uuids of the mounted datastores


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
        }


def adapter_type(hba) -> str:
    for cls, name in ADAPTER_TYPES:
        if isinstance(hba, cls):
            return name
    return "other"


def link_speed_bytes(hba) -> float | None:
    """FC HBA speed. The API gives bits per second; values under 1 Mbit/s can only be Gbit/s,
    which some drivers report, so those are scaled."""
    speed = getattr(hba, "speed", None)
    if not isinstance(hba, vim.host.FibreChannelHba) or not speed or speed < 0:
        return None
    bits = speed * 1e9 if speed < 1e6 else speed
    return bits / BITS


def _path_state(path) -> str:
    state = (getattr(path, "state", None) or getattr(path, "pathState", None) or "unknown").lower()
    return state if state in m.PATH_STATES else "unknown"


def storage_of_host(name: str, ref, storage, mounts) -> HostTopology:
    """One host's Inventory and name maps from config.storageDevice and its VMFS mounts."""
    inv = m.Inventory(host=name)
    topo = HostTopology(ref=ref, name=name, inventory=inv)
    extent_datastore: dict[str, str] = {}
    for mount in mounts or ():
        volume = mount.volume
        if volume is None:
            continue
        uuid = getattr(volume, "uuid", None) or mount.mountInfo.path.rstrip("/").rsplit("/", 1)[-1]
        topo.datastores.append(uuid)
        topo.datastore_names[uuid] = volume.name
        for extent in getattr(volume, "extent", None) or ():
            extent_datastore[extent.diskName] = volume.name
    if storage is None:
        return topo
    adapters = {}
    for hba in storage.hostBusAdapter or ():
        adapters[hba.key] = hba.device
        inv.adapters[hba.device] = m.AdapterConfig(type=adapter_type(hba), model=(hba.model or "").strip(),
                                                   driver=hba.driver or "", link_speed_bytes_per_second=link_speed_bytes(hba))
    lun_names = {}
    for lun in storage.scsiLun or ():
        lun_names[lun.key] = lun.canonicalName
        inv.luns[lun.canonicalName] = m.LunConfig(
            display_name=lun.displayName or "", vendor=(lun.vendor or "").strip(), model=(lun.model or "").strip(),
            datastore=extent_datastore.get(lun.canonicalName, ""),
            configured_queue_depth=float(lun.queueDepth) if getattr(lun, "queueDepth", None) else None)
    multipath = storage.multipathInfo
    for unit in (multipath.lun if multipath else None) or ():
        device = lun_names.get(unit.lun, unit.id)
        for path in unit.path or ():
            adapter = adapters.get(path.adapter) or m.path_adapter(path.name)
            inv.paths[path.name] = m.PathConfig(device=device, adapter=adapter, state=_path_state(path))
            topo.path_names[path.name] = path.name
            topo.path_devices[path.name] = device
    topology = storage.plugStoreTopology
    if topology is not None:
        store_adapters = {a.key: adapters.get(a.adapter) for a in topology.adapter or ()}
        for path in topology.path or ():
            adapter = store_adapters.get(path.adapter)
            if adapter:
                runtime = f"{adapter}:C{path.channelNumber or 0}:T{path.targetNumber or 0}:L{path.lunNumber or 0}"
                if runtime in inv.paths:
                    topo.path_names[path.name] = runtime
    return topo


def _retrieve_hosts(content) -> list[dict]:
    pc = content.propertyCollector
    view = content.viewManager.CreateContainerView(content.rootFolder, [vim.HostSystem], True)
    try:
        spec = vmodl.query.PropertyCollector.FilterSpec(
            objectSet=[vmodl.query.PropertyCollector.ObjectSpec(
                obj=view, skip=True,
                selectSet=[vmodl.query.PropertyCollector.TraversalSpec(name="view", path="view", type=vim.view.ContainerView)])],
            propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.HostSystem, pathSet=HOST_PROPERTIES)])
        rows = []
        result = pc.RetrievePropertiesEx([spec], vmodl.query.PropertyCollector.RetrieveOptions(maxObjects=100))
        while result is not None:
            for obj in result.objects:
                props = {p.name: p.val for p in obj.propSet}
                props["ref"] = obj.obj
                rows.append(props)
            result = pc.ContinueRetrievePropertiesEx(result.token) if result.token else None
        return rows
    finally:
        view.DestroyView()


def _dsnro(option_manager) -> float | None:
    try:
        values = option_manager.QueryOptions(DSNRO_OPTION)
    except vim.fault.InvalidName:
        return None  # removed from newer ESXi: the per-device setting replaces it
    for value in values or ():
        if value.key == DSNRO_OPTION:
            return float(value.value)
    return None


def discover(client, max_parallel: int = 4) -> Topology:
    start = time.perf_counter()
    rows = client.call(_retrieve_hosts)
    hosts = []
    for row in rows:
        if row.get("runtime.connectionState") != "connected":
            continue
        hosts.append((storage_of_host(row["name"], row["ref"], row.get("config.storageDevice"),
                                      row.get("config.fileSystemVolume.mountInfo")), row.get("configManager.advancedOption")))
    if hosts:
        with ThreadPoolExecutor(max_workers=max(1, max_parallel)) as pool:
            found = pool.map(lambda pair: client.call(lambda _c: _dsnro(pair[1])) if pair[1] is not None else None, hosts)
            for (topo, _), dsnro in zip(hosts, found):
                topo.inventory.dsnro = dsnro
    # How many hosts of this target mount each datastore (by uuid: local datastores often share
    # a name): above 1 the LUN is shared.
    shares: dict[str, int] = {}
    for topo, _ in hosts:
        for uuid in set(topo.datastores):
            shares[uuid] = shares.get(uuid, 0) + 1
    for topo, _ in hosts:
        topo.inventory.datastore_hosts = {topo.datastore_names[uuid]: shares[uuid] for uuid in set(topo.datastores)}
    topos = sorted((t for t, _ in hosts), key=lambda t: t.name)
    return Topology(hosts=topos, duration=time.perf_counter() - start)
