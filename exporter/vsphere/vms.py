"""The powered-on VMs of the selected hosts and what backs each of their virtual disks.

Discovery: the walk (follow.py, mirror.py) also names every VM with its parent, host and power
state, so VMs are chosen (running, on a selected host, kept by --vsphere.vm-include/-exclude)
before any device list is read; then only the chosen VMs' `config.hardware.device` is read (and
followed). Each disk is named as its perf instance (`scsi0:1` = controller type and bus number :
unit number) and joined to its datastore (from its file name), the LUNs under a VMFS datastore (its
extents, as the host mounts it) or an RDM's LUN (lunUuid -> the host's ScsiLun), its controller,
provisioning and storage I/O allocation; the device list is parsed once (device_specs) and joined
to a host's mounts (resolve) again when the VM moves.

Collection without --vsphere.updates: before each QueryPerf a small query reads each selected
host's VMs' host and power state, so a VM powered off, moved or removed since the walk is left out
(and counted) instead of being asked for, or having its samples put under the wrong host.
"""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from pyVmomi import vim, vmodl

from exporter.store import model as m
from exporter.vsphere import soap

VM_PROPERTIES = ["config.hardware.device"]
_NS = "{urn:vim25}"
_XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
# Controller data type -> (controller label, perf instance prefix).
CONTROLLERS = {
    "ParaVirtualSCSIController": ("pvscsi", "scsi"),
    "VirtualLsiLogicController": ("lsilogic", "scsi"),
    "VirtualLsiLogicSASController": ("lsilogic-sas", "scsi"),
    "VirtualBusLogicController": ("buslogic", "scsi"),
    "VirtualAHCIController": ("ahci", "sata"),
    "VirtualSATAController": ("ahci", "sata"),
    "VirtualNVMEController": ("nvme", "nvme"),
    "VirtualIDEController": ("ide", "ide"),
}
_FLAT = ("VirtualDiskFlatVer2BackingInfo", "VirtualDiskFlatVer1BackingInfo")
_SPARSE = ("VirtualDiskSparseVer2BackingInfo", "VirtualDiskSparseVer1BackingInfo", "VirtualDiskSeSparseBackingInfo")
_RDM = "VirtualDiskRawDiskMappingVer1BackingInfo"
_DATASTORE = re.compile(r"\[([^\]]*)\]")
_text, _all = soap.text, soap.children


@dataclass(slots=True)
class VmTopology:
    ref: object  # vim.VirtualMachine
    name: str
    path: str  # inventory path, /DC/vm/folder/name
    host: str  # moid of the host it ran on at discovery
    disks: dict[str, m.VirtualDiskConfig] = field(default_factory=dict)  # perf instance -> backing
    # perf instance -> its (vm, disk) key (None: not a disk); filled by the collection, as HostTopology.routes.
    routes: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HostStorage:
    """What a host's mounts say about the datastores its VMs' disks sit on."""

    datastore_types: dict[str, str]  # datastore name -> vmfs | nfs | nfs41 | vsan | vvol ...
    extents: dict[str, tuple[str, ...]]  # VMFS datastore name -> its LUNs' canonical names
    lun_uuids: dict[str, str]  # ScsiLun.uuid -> canonical name (an RDM names its LUN by uuid)


def _kind(element) -> str:
    return element.get(_XSI_TYPE, "").split(":")[-1] if element is not None else ""


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class DiskSpec:
    """One disk as its VM's device list says, before a host's mounts say what its datastore is
    (config: datastore_type and devices left empty): a VM that moves to another host is resolved
    again against that host's mounts, without reading its device list again."""

    config: m.VirtualDiskConfig
    lun_uuid: str = ""  # an RDM's LUN, by ScsiLun.uuid
    device_name: str = ""  # an RDM's LUN, by the last part of its device path


def disks_of(devices: ET.Element | None, storage: HostStorage) -> dict[str, m.VirtualDiskConfig]:
    """A VM's `config.hardware.device` answer -> perf instance -> backing of each virtual disk."""
    return resolve(device_specs(devices), storage)


def device_specs(devices: ET.Element | None) -> dict[str, DiskSpec]:
    """A VM's `config.hardware.device` answer -> perf instance -> what its device list says of each disk."""
    controllers = {}  # key -> (label, instance prefix, bus)
    disks = []
    for device in _all(devices, "VirtualDevice"):
        kind = _kind(device)
        if kind == "VirtualDisk":
            disks.append(device)
        elif kind in CONTROLLERS:
            controllers[_text(device, "key")] = (*CONTROLLERS[kind], _text(device, "busNumber", "0"))
    found = {}
    for disk in disks:
        controller = controllers.get(_text(disk, "controllerKey"))
        unit = _text(disk, "unitNumber")
        if controller is None or not unit:
            continue  # a disk on a controller this list does not describe has no instance name
        label, prefix, bus = controller
        found[f"{prefix}{bus}:{unit}"] = _spec(disk, label)
    return found


def resolve(specs: dict[str, DiskSpec], storage: HostStorage) -> dict[str, m.VirtualDiskConfig]:
    """Each disk's backing on this host: its datastore's kind, and the LUNs under it (a VMFS
    datastore's extents as the host mounts it, or an RDM's LUN among the host's)."""
    found = {}
    for instance, spec in specs.items():
        config = spec.config
        datastore_type = storage.datastore_types.get(config.datastore, "")
        if config.backing == "rdm":
            lun = storage.lun_uuids.get(spec.lun_uuid)
            if lun is None and spec.device_name in storage.lun_uuids.values():  # the device path names it too
                lun = spec.device_name
            devices = (lun,) if lun else ()
        else:
            devices = storage.extents.get(config.datastore, ()) if datastore_type == "vmfs" else ()
        found[instance] = dataclasses.replace(config, datastore_type=datastore_type, devices=devices)
    return found


def _spec(disk: ET.Element, controller: str) -> DiskSpec:
    backing = disk.find(_NS + "backing")
    kind = _kind(backing)
    match = _DATASTORE.match(_text(backing, "fileName"))
    config = m.VirtualDiskConfig(datastore=match.group(1) if match else "", controller=controller)
    lun_uuid = device_name = ""
    if kind == _RDM:
        config.backing = "rdm"
        config.compatibility_mode = _text(backing, "compatibilityMode").removesuffix("Mode")
        lun_uuid = _text(backing, "lunUuid")
        device_name = _text(backing, "deviceName").rsplit("/", 1)[-1]  # /vmfs/devices/disks/naa....
    elif kind in _FLAT:
        config.backing = "flat"
        if _text(backing, "thinProvisioned") == "true":
            config.provisioning = "thin"
        else:
            config.provisioning = "thick_eager" if _text(backing, "eagerlyScrub") == "true" else "thick_lazy"
    elif kind in _SPARSE:
        config.backing, config.provisioning = "sparse", "thin"
    else:
        config.backing = "other"
    allocation = disk.find(_NS + "storageIOAllocation")
    if allocation is not None:
        limit = _number(_text(allocation, "limit"))
        config.iops_limit = limit if limit is not None and limit >= 0 else None  # -1: unlimited
        config.shares = _number(_text(allocation, "shares/shares"))
    return DiskSpec(config, lun_uuid, device_name)


# --- discovery ------------------------------------------------------------------------------
TREE_TYPES = (vim.VirtualMachine, vim.VirtualApp)
TREE_PROPERTIES = {
    vim.VirtualMachine: ["name", "parent", "parentVApp", "runtime.host", "runtime.powerState"],
    vim.VirtualApp: ["name", "parentFolder", "parentVApp"],  # its parent is a resource pool, not in the path
}


# --- collection -----------------------------------------------------------------------------
def states(content, host_moids: list[str]) -> dict[str, tuple[str, str]]:
    """vm moid -> (host moid, power state) of every VM on these hosts now (host -> vm traversal)."""
    if not host_moids:
        return {}
    stub = content.propertyCollector._stub
    pc = vmodl.query.PropertyCollector
    to_vms = pc.TraversalSpec(name="vms", path="vm", type=vim.HostSystem, skip=False)
    spec = pc.FilterSpec(
        objectSet=[pc.ObjectSpec(obj=vim.HostSystem(moid, stub), skip=True, selectSet=[to_vms]) for moid in host_moids],
        propSet=[pc.PropertySpec(type=vim.VirtualMachine, pathSet=["runtime.host", "runtime.powerState"])],
    )
    return {
        moid: (_text_of(props.get("runtime.host")), _text_of(props.get("runtime.powerState")))
        for moid, props in soap.retrieve(content.propertyCollector, spec, page=1000)
    }


def gone_reason(vm: VmTopology, now: dict[str, tuple[str, str]]) -> str | None:
    """Why a discovered VM cannot be asked for now (None: it can): removed (or moved to a host
    this exporter does not select), powered off, or moved to another selected host."""
    state = now.get(vm.ref._moId)
    if state is None:
        return "vm_gone"
    host, power = state
    if power != "poweredOn":
        return "vm_powered_off"
    if host != vm.host:
        return "vm_moved"
    return None


def _text_of(element) -> str:
    return "" if element is None or element.text is None else element.text.strip()
