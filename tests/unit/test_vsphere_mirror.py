"""The inventory mirror (exporter/vsphere/mirror.py) and the WaitForUpdatesEx answer it reads
(exporter/vsphere/updates.py), without a server: updates in, topology and wants out."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from types import SimpleNamespace

from exporter.store import model as m
from exporter.vsphere import discovery
from exporter.vsphere.mirror import DEVICES, LUNS, PATHS, TREE, VMS, Mirror, gone_objects
from exporter.vsphere.selection import HostSelection
from exporter.vsphere.updates import ObjectUpdate, parse_update_set

NS = 'xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'


def val(inner: str, kind: str = "xsd:string") -> ET.Element:
    return ET.fromstring(f'<val {NS} xsi:type="{kind}">{inner}</val>')


ANSWER = f"""<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>
<WaitForUpdatesExResponse {NS}><returnval><version>7</version>
<filterSet><filter type="PropertyFilter">session[1]f-tree</filter>
 <objectSet><kind>enter</kind><obj type="HostSystem">host-9</obj>
  <changeSet><name>name</name><op>assign</op><val xsi:type="xsd:string">esx09</val></changeSet>
  <changeSet><name>parent</name><op>assign</op><val type="ClusterComputeResource" xsi:type="ManagedObjectReference">domain-c1</val></changeSet>
  <missingSet><path>runtime.connectionState</path><fault><fault xsi:type="NoPermission"/></fault></missingSet>
 </objectSet>
 <objectSet><kind>modify</kind><obj type="VirtualMachine">vm-3</obj>
  <changeSet><name>parentVApp</name><op>remove</op></changeSet></objectSet>
 <objectSet><kind>leave</kind><obj type="HostSystem">host-2</obj></objectSet>
</filterSet>
<filterSet><filter type="PropertyFilter">session[1]f-other</filter>
 <objectSet><kind>enter</kind><obj type="Folder">group-1</obj></objectSet></filterSet>
<truncated>true</truncated></returnval></WaitForUpdatesExResponse></soapenv:Body></soapenv:Envelope>"""


def test_an_update_answer_is_read_with_its_version_roles_and_kinds():
    found = parse_update_set(ET.fromstring(ANSWER), {"session[1]f-tree": TREE})
    assert (found.version, found.truncated) == ("7", True)
    enter, modify, leave, other = found.updates
    assert (enter.role, enter.kind, enter.type, enter.moid) == (TREE, "enter", "HostSystem", "host-9")
    assert enter.changes["name"].text == "esx09" and enter.changes["parent"].text == "domain-c1"
    assert enter.changes["runtime.connectionState"] is None  # the server could not read it: absent
    assert modify.changes == {"parentVApp": None}  # unset
    assert (leave.kind, leave.changes) == ("leave", {})
    assert other.role == ""  # a filter not ours


def test_nothing_changed_within_the_wait_is_none():
    empty = f'<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><WaitForUpdatesExResponse {NS}/></soapenv:Body></soapenv:Envelope>'
    assert parse_update_set(ET.fromstring(empty), {}) is None


# --- a small inventory -------------------------------------------------------------------------
def tree(kind, moid, name, parent, state=None, role=TREE, event="enter"):
    changes = {"name": val(name), "parent": val(parent, "ManagedObjectReference")}
    if state is not None:
        changes["runtime.connectionState" if kind == "HostSystem" else "runtime.powerState"] = val(state)
    return ObjectUpdate(role, event, kind, moid, changes)


def vm(moid, name, host, power="poweredOn", event="enter"):
    changes = {
        "name": val(name),
        "parent": val("group-v1", "ManagedObjectReference"),
        "runtime.host": val(host, "ManagedObjectReference"),
        "runtime.powerState": val(power),
    }
    return ObjectUpdate(VMS, event, "VirtualMachine", moid, changes)


def luns(moid, *names, event="enter"):
    scsi = "".join(
        f'<ScsiLun xsi:type="HostScsiDisk"><key>k-{n}</key><uuid>u-{n}</uuid><canonicalName>{n}</canonicalName>'
        f"<queueDepth>64</queueDepth><operationalState>ok</operationalState></ScsiLun>"
        for n in names
    )
    hba = '<HostHostBusAdapter xsi:type="HostFibreChannelHba"><key>hba-2</key><device>vmhba2</device><speed>16000000000</speed></HostHostBusAdapter>'
    changes = {
        "config.storageDevice.scsiLun": val(scsi, "ArrayOfScsiLun"),
        "config.storageDevice.hostBusAdapter": val(hba, "ArrayOfHostHostBusAdapter"),
        "hardware.cpuInfo.numCpuThreads": val("8"),
    }
    return ObjectUpdate(LUNS, event, "HostSystem", moid, changes)


def paths(moid, datastores: dict[str, str], dead=(), event="enter"):
    """datastores: VMFS name -> its LUN; one path a LUN through vmhba2."""
    mounts = "".join(
        f'<HostFileSystemMountInfo><mountInfo><path>/vmfs/volumes/uuid-{ds}</path></mountInfo><volume xsi:type="HostVmfsVolume">'
        f"<type>VMFS</type><name>{ds}</name><uuid>uuid-{ds}</uuid><extent><diskName>{lun}</diskName></extent></volume></HostFileSystemMountInfo>"
        for ds, lun in datastores.items()
    )
    units = "".join(
        f"<lun><key>u-{lun}</key><id>{lun}</id><lun>k-{lun}</lun>"
        f"<path><name>vmhba2:C0:T0:L{i}</name><state>{'dead' if lun in dead else 'active'}</state><adapter>hba-2</adapter></path></lun>"
        for i, lun in enumerate(datastores.values())
    )
    changes = {
        "config.fileSystemVolume.mountInfo": val(mounts, "ArrayOfHostFileSystemMountInfo"),
        "config.storageDevice.multipathInfo": val(units, "HostMultipathInfo"),
    }
    return ObjectUpdate(PATHS, event, "HostSystem", moid, changes)


def devices(moid, *files):
    disks = "".join(
        f'<VirtualDevice xsi:type="VirtualDisk"><key>{2000 + i}</key><backing xsi:type="VirtualDiskFlatVer2BackingInfo">'
        f"<fileName>{f}</fileName><thinProvisioned>true</thinProvisioned></backing><controllerKey>1000</controllerKey>"
        f"<unitNumber>{i}</unitNumber></VirtualDevice>"
        for i, f in enumerate(files)
    )
    controller = '<VirtualDevice xsi:type="ParaVirtualSCSIController"><key>1000</key><busNumber>0</busNumber></VirtualDevice>'
    return ObjectUpdate(
        DEVICES, "modify", "VirtualMachine", moid, {"config.hardware.device": val(controller + disks, "ArrayOfVirtualDevice")}
    )


TREE_UPDATES = [
    tree("Datacenter", "datacenter-1", "DC0", "group-d1"),
    tree("Folder", "group-h1", "host", "datacenter-1"),
    tree("Folder", "group-v1", "vm", "datacenter-1"),
    tree("ClusterComputeResource", "domain-c1", "Prod", "group-h1"),
    tree("HostSystem", "host-1", "esx01", "domain-c1", "connected"),
    tree("HostSystem", "host-2", "esx02", "domain-c1", "connected"),
]


def walked(selection=None, with_vms=True) -> Mirror:
    """A mirror after the walk: both hosts built whole, and (with_vms) db01 on host-1."""
    mirror = Mirror(None, selection, with_vms=with_vms)
    mirror.apply(TREE_UPDATES)
    chosen = mirror.chosen_hosts()
    mirror.list_hosts(LUNS, chosen)
    mirror.apply([luns(h, "naa.1", "naa.2") for h in chosen])
    mirror.settle()
    mirror.list_hosts(PATHS, chosen)
    mirror.apply([paths(h, {"ds1": "naa.1", "ds2": "naa.2"}) for h in chosen])
    mirror.settle()
    if with_vms:
        mirror.apply([vm("vm-1", "db01", "host-1")])
        _, wants = mirror.settle()
        assert wants.list_vms == ["vm-1"]
        mirror.apply([devices("vm-1", "[ds1] db01/db01.vmdk")])
        mirror.settle()
    mirror.start_following()
    mirror.settle()
    return mirror


def test_hosts_are_built_in_two_steps_luns_first():
    mirror = Mirror(None)
    mirror.apply(TREE_UPDATES)
    assert mirror.chosen_hosts() == ["host-1", "host-2"]
    mirror.list_hosts(LUNS, ["host-1", "host-2"])
    assert mirror.waiting_for(LUNS) == {"host-1", "host-2"}
    mirror.apply([luns("host-1", "naa.1"), luns("host-2", "naa.1")])
    delta, _ = mirror.settle()
    first = delta.changed["host-1"]
    assert first.families == discovery.LUN_FAMILIES and set(first.inventory.luns) == {"naa.1"}
    assert not mirror.waiting_for(LUNS)
    mirror.list_hosts(PATHS, ["host-1", "host-2"])
    mirror.apply([paths("host-1", {"ds1": "naa.1"}), paths("host-2", {"ds1": "naa.1"})])
    delta, wants = mirror.settle()
    whole = delta.changed["host-1"]
    assert whole.families == discovery.ALL_FAMILIES and delta.built == {"host-1", "host-2"}
    assert whole.inventory.luns["naa.1"].datastore == "ds1" and set(whole.inventory.paths) == {"vmhba2:C0:T0:L0"}
    assert (whole.inventory.datacenter, whole.inventory.cluster) == ("DC0", "Prod")
    assert whole.inventory.datastore_hosts == {"ds1": 2}  # both hosts mount it
    assert wants.settings == ["host-1", "host-2"]  # DSNRO and iSCSI links: read before publishing


def test_a_host_built_from_its_luns_keeps_nothing_of_their_answer():
    """The LUN answer's elements go once the host is built from them, not a stage later: kept
    until its paths came, the objects built among them left the interpreter's memory pages
    half empty after the walk (350 of 420 MiB at 2,500 hosts)."""
    import weakref

    mirror = Mirror(None)
    mirror.apply(TREE_UPDATES)
    mirror.list_hosts(LUNS, ["host-1"])
    answer = luns("host-1", "naa.1", "naa.2")
    kept = [weakref.ref(element) for element in answer.changes.values()]
    mirror.apply([answer])
    mirror.settle()
    del answer
    assert mirror.hosts["host-1"].families == discovery.LUN_FAMILIES
    assert "host-1" not in mirror.parts
    assert [ref() for ref in kept] == [None, None, None]


def test_a_host_built_in_two_steps_is_the_host_read_whole_at_once():
    two_steps = walked(with_vms=False).hosts["host-1"]
    mirror = walked(with_vms=False)
    mirror.apply([paths("host-1", {"ds1": "naa.1", "ds2": "naa.2"}, event="modify")])
    assert mirror.settle()[1].reread == ["host-1"]
    mirror.host_read(
        "host-1", {**luns("host-1", "naa.1", "naa.2").changes, **paths("host-1", {"ds1": "naa.1", "ds2": "naa.2"}).changes}
    )
    mirror.settle()
    at_once = mirror.hosts["host-1"]
    assert at_once is not two_steps
    for name in ("name", "inventory", "path_names", "path_devices", "datastore_names", "datastores", "cpu_threads", "extents"):
        assert getattr(at_once, name) == getattr(two_steps, name), name
    assert (at_once.lun_uuids, at_once.families, at_once.managers) == (
        two_steps.lun_uuids,
        two_steps.families,
        two_steps.managers,
    )
    assert list(at_once.inventory.adapters) == list(two_steps.inventory.adapters) == ["vmhba2"]
    assert two_steps.keys is None  # the LUN stage's keys go with it
    assert two_steps.inventory.luns["naa.1"].datastore == "ds1" and two_steps.cpu_threads == 8


def test_the_lun_stage_is_not_changed_when_its_paths_come():
    """Collection may be reading the LUN stage's topology: the host built whole is new objects."""
    mirror = Mirror(None)
    mirror.apply(TREE_UPDATES)
    mirror.list_hosts(LUNS, ["host-1"])
    mirror.apply([luns("host-1", "naa.1")])
    mirror.settle()
    stage = mirror.hosts["host-1"]
    mirror.list_hosts(PATHS, ["host-1"])
    mirror.apply([paths("host-1", {"ds1": "naa.1"})])
    mirror.settle()
    whole = mirror.hosts["host-1"]
    assert whole.families == discovery.ALL_FAMILIES and stage.families == discovery.LUN_FAMILIES
    assert stage.inventory.luns["naa.1"].datastore == "" and not stage.inventory.paths and stage.keys is not None
    assert whole.inventory.luns["naa.1"] is not stage.inventory.luns["naa.1"]
    assert whole.inventory.adapters["vmhba2"] is not stage.inventory.adapters["vmhba2"]


def test_a_lun_change_before_the_paths_came_is_read_again_whole():
    mirror = Mirror(None)
    mirror.apply(TREE_UPDATES)
    mirror.list_hosts(LUNS, ["host-1"])
    mirror.apply([luns("host-1", "naa.1")])
    mirror.settle()
    mirror.apply([ObjectUpdate(LUNS, "modify", "HostSystem", "host-1", {"hardware.cpuInfo.numCpuThreads": val("16")})])
    delta, wants = mirror.settle()
    assert wants.reread == ["host-1"] and not delta.changed  # not rebuilt from one property
    mirror.host_read("host-1", {**luns("host-1", "naa.1").changes, **paths("host-1", {"ds1": "naa.1"}).changes})
    delta, _ = mirror.settle()
    assert delta.changed["host-1"].families == discovery.ALL_FAMILIES


def test_a_host_chosen_by_its_path_and_shard():
    mirror = Mirror(None, HostSelection(include=("/DC0/host/Prod/esx02",)))
    mirror.apply(TREE_UPDATES)
    assert mirror.chosen_hosts() == ["host-2"]


def test_a_disconnected_host_leaves_and_comes_back_read_again():
    mirror = walked()
    mirror.apply([ObjectUpdate(TREE, "modify", "HostSystem", "host-1", {"runtime.connectionState": val("disconnected")})])
    delta, _ = mirror.settle()
    assert delta.removed == ["esx01"] and "host-1" not in mirror.hosts
    assert delta.changes == {"host_removed": 1, "vm_removed": 1}
    assert mirror.topology().counts()["vm"] == 0
    mirror.apply([ObjectUpdate(TREE, "modify", "HostSystem", "host-1", {"runtime.connectionState": val("connected")})])
    _, wants = mirror.settle()
    assert wants.reread == ["host-1"]  # its list views say nothing new of it: read again
    props = {**luns("host-1", "naa.1").changes, **paths("host-1", {"ds1": "naa.1"}).changes}
    mirror.host_read("host-1", props)
    delta, _ = mirror.settle()
    assert "host-1" in delta.changed and delta.changes["host_added"] == 1
    assert [v.name for v in delta.changed["host-1"].vms] == ["db01"]  # its VM with it


def test_every_host_vcenter_lists_has_its_state_whether_or_not_it_is_read():
    """A host not responding leaves the topology (its storage series go) but keeps its status; so
    does one in maintenance mode; one the selection leaves out has none."""
    mirror = walked(selection=HostSelection(exclude=("/DC0/host/Prod/esx03",)))
    mirror.apply(
        [
            tree("HostSystem", "host-3", "esx03", "domain-c1", "notResponding"),
            tree("HostSystem", "host-4", "esx04", "domain-c1", "notResponding"),
        ]
    )
    delta, _ = mirror.settle()
    assert delta.statuses and not delta.changed and "host-4" not in mirror.hosts
    assert mirror.host_status() == {
        "esx01": m.HostStatus("connected"),
        "esx02": m.HostStatus("connected"),
        "esx04": m.HostStatus("notResponding"),
    }
    mirror.apply([ObjectUpdate(TREE, "modify", "HostSystem", "host-1", {"runtime.connectionState": val("notResponding")})])
    delta, _ = mirror.settle()
    assert delta.removed == ["esx01"] and delta.statuses
    assert mirror.host_status()["esx01"] == m.HostStatus("notResponding")
    mirror.apply(
        [ObjectUpdate(TREE, "modify", "HostSystem", "host-2", {"runtime.inMaintenanceMode": val("true", "xsd:boolean")})]
    )
    delta, _ = mirror.settle()
    assert delta.statuses and not delta.removed and "host-2" in mirror.hosts  # still read: it still answers
    assert mirror.host_status()["esx02"] == m.HostStatus("connected", maintenance=True)
    mirror.apply([ObjectUpdate(TREE, "modify", "HostSystem", "host-2", {"name": val("esx02")})])
    delta, _ = mirror.settle()
    assert not delta.statuses  # nothing of its status changed: nothing to publish
    mirror.apply([ObjectUpdate(TREE, "leave", "HostSystem", "host-4", {})])
    delta, _ = mirror.settle()
    assert delta.statuses and "esx04" not in mirror.host_status()  # removed from vCenter: gone


def test_a_changed_host_is_read_again_whole_and_its_removed_objects_are_named():
    mirror = walked()
    mirror.apply([paths("host-1", {"ds1": "naa.1", "ds2": "naa.2"}, dead=("naa.2",), event="modify")])
    _, wants = mirror.settle()
    assert wants.reread == ["host-1"]
    before = mirror.hosts["host-1"].inventory
    mirror.host_read("host-1", {**luns("host-1", "naa.1").changes, **paths("host-1", {"ds1": "naa.1"}).changes})
    delta, wants = mirror.settle()
    after = delta.changed["host-1"].inventory
    assert delta.changes == {"host_storage_changed": 1} and wants.settings == ["host-1"]
    assert gone_objects(before, after) == {"luns": {"naa.2"}, "paths": {"vmhba2:C0:T0:L1"}, "datastores": {"ds2"}}
    assert mirror.hosts["host-2"].inventory.datastore_hosts == {"ds1": 2, "ds2": 1}  # host-1 no longer mounts ds2


def test_a_host_read_again_with_the_same_mounts_keeps_how_many_hosts_mount_them():
    """A path disabled reads its host again; its mounts did not change, and esxi_datastore_hosts
    of a datastore it alone mounts must not go with the read."""
    mirror = walked(with_vms=False)
    mirror.apply([paths("host-1", {"ds1": "naa.1", "ds2": "naa.2"}, dead=("naa.2",), event="modify")])
    mirror.settle()
    mirror.host_read(
        "host-1",
        {
            **luns("host-1", "naa.1", "naa.2").changes,
            **paths("host-1", {"ds1": "naa.1", "ds2": "naa.2"}, dead=("naa.2",)).changes,
        },
    )
    delta, _ = mirror.settle()
    assert delta.changed["host-1"].inventory.paths["vmhba2:C0:T0:L1"].state == "dead"
    assert delta.changed["host-1"].inventory.datastore_hosts == {"ds1": 2, "ds2": 2}


def test_a_cluster_renamed_relabels_its_hosts_without_reading_them():
    mirror = walked(with_vms=False)
    mirror.apply([ObjectUpdate(TREE, "modify", "ClusterComputeResource", "domain-c1", {"name": val("Gold")})])
    delta, wants = mirror.settle()
    assert {t.inventory.cluster for t in delta.changed.values()} == {"Gold"} and not wants
    assert delta.changes == {"host_relabelled": 2}


def test_vms_placed_moved_and_dropped():
    mirror = walked()
    db01 = mirror.hosts["host-1"].vms[0]
    assert db01.disks["scsi0:0"].devices == ("naa.1",)  # ds1's extent on host-1
    # vMotion to host-2: no device list read again, its disks joined to host-2's mounts
    mirror.apply([ObjectUpdate(VMS, "modify", "VirtualMachine", "vm-1", {"runtime.host": val("host-2")})])
    delta, wants = mirror.settle()
    assert not wants and delta.changes == {"vm_moved": 1}
    assert not delta.changed["host-1"].vms and [v.name for v in delta.changed["host-2"].vms] == ["db01"]
    assert gone_objects(mirror.hosts["host-1"].inventory, delta.changed["host-1"].inventory) == {}
    # powered off: its series go; its device list stays followed, so powered on again it is
    # placed at once, with a disk it was given meanwhile, nothing read again
    mirror.apply([ObjectUpdate(VMS, "modify", "VirtualMachine", "vm-1", {"runtime.powerState": val("poweredOff")})])
    delta, wants = mirror.settle()
    assert not wants and delta.changes == {"vm_removed": 1} and not delta.changed["host-2"].vms
    mirror.apply([devices("vm-1", "[ds1] db01/db01.vmdk", "[ds2] db01/db01_1.vmdk")])
    delta, _ = mirror.settle()
    assert not delta
    mirror.apply([ObjectUpdate(VMS, "modify", "VirtualMachine", "vm-1", {"runtime.powerState": val("poweredOn")})])
    delta, wants = mirror.settle()
    assert not wants and delta.changes == {"vm_added": 1}
    assert set(delta.changed["host-2"].vms[0].disks) == {"scsi0:0", "scsi0:1"}


def test_a_vm_given_a_disk_and_one_removed():
    mirror = walked()
    before = mirror.hosts["host-1"].inventory
    mirror.apply([devices("vm-1", "[ds1] db01/db01.vmdk", "[ds2] db01/db01_1.vmdk")])
    delta, _ = mirror.settle()
    assert delta.changes == {"vm_disks_changed": 1}
    assert set(delta.changed["host-1"].inventory.vdisks) == {("db01", "scsi0:0"), ("db01", "scsi0:1")}
    mirror.apply([ObjectUpdate(VMS, "leave", "VirtualMachine", "vm-1", {})])
    delta, wants = mirror.settle()
    assert delta.changes == {"vm_removed": 1} and not wants and "vm-1" not in mirror.specs  # destroyed: forgotten
    assert gone_objects(before, delta.changed["host-1"].inventory) == {"vdisks": {("db01", "scsi0:0")}, "vms": {"db01"}}


def test_a_host_removed_takes_its_vms_and_no_place_is_asked_of_it():
    mirror = walked()
    mirror.apply([ObjectUpdate(TREE, "leave", "HostSystem", "host-1", {})])
    delta, _ = mirror.settle()
    assert delta.removed == ["esx01"] and mirror.topology().counts() == {
        "host": 1,
        "lun": 2,
        "adapter": 1,
        "path": 2,
        "datastore": 2,
        "vm": 0,
        "vdisk": 0,
    }


def test_gone_objects_names_every_family():
    before = m.Inventory("h", luns={"a": m.LunConfig()}, vdisks={("vm1", "scsi0:0"): m.VirtualDiskConfig()})
    assert gone_objects(before, m.Inventory("h")) == {"luns": {"a"}, "vdisks": {("vm1", "scsi0:0")}, "vms": {"vm1"}}


# --- a host whose re-read fails (the 24-hour soak, seed 47: a datastore mounted during a stall) ---
def test_a_host_whose_reread_fails_keeps_its_topology_and_is_read_again_at_the_next_settle(monkeypatch):
    """A change of a host's storage (a datastore mounted) is read with RetrievePropertiesEx; when
    that host's call times out (vCenter stalled), the host keeps its topology and is asked again
    at the next settle, also with no further change to come: the mount is late, never lost."""
    from exporter.vsphere.follow import Follower
    from exporter.vsphere.hostfaults import HostFaults
    from exporter.vsphere.settings import TargetConfig

    mounted = {"ds1": "naa.1", "ds2": "naa.2", "ds3": "naa.2"}
    answers = [TimeoutError("timed out"), TimeoutError("timed out"), None]
    asked = []

    def retrieve(content, moids):
        asked.append(list(moids))
        answer = answers.pop(0)
        if answer is not None:
            raise answer
        return [("host-1", {**luns("host-1", "naa.1", "naa.2").changes, **paths("host-1", mounted).changes})]

    class Client:  # client.call(fn) -> fn(content)
        def call(self, fn, *args):
            return fn(SimpleNamespace(propertyCollector=SimpleNamespace(_stub=None)), *args)

    monkeypatch.setattr(discovery, "retrieve_hosts", retrieve)
    settings_read = []
    monkeypatch.setattr(discovery, "read_settings", lambda topo, _stub, _faults: settings_read.append(topo.name))
    published = []
    follower = Follower(
        Client(), TargetConfig(name="vc", url="https://vc"), lambda delta, mirror: published.append(delta), HostFaults(None, "vc")
    )
    follower.mirror = mirror = walked()
    mirror.apply([paths("host-1", mounted, event="modify")])
    for attempt in (1, 2):
        follower._settle()  # the read times out: host-1 as it was, asked once per settle, not 8 times
        assert asked == [["host-1"]] * attempt
        assert set(mirror.hosts["host-1"].inventory.datastore_hosts) == {"ds1", "ds2"}
        assert mirror.unread
    follower._settle()  # the next settle (the follower makes one when the wait ends with no change)
    assert asked == [["host-1"]] * 3 and not mirror.unread
    assert "ds3" in mirror.hosts["host-1"].inventory.datastore_hosts
    assert published and "host-1" in published[-1].changed
    assert settings_read == ["esx01"]  # its DSNRO and iSCSI bindings read again with it


def test_a_host_that_leaves_while_its_reread_waits_is_not_asked_again():
    mirror = walked()
    mirror.apply([paths("host-1", {"ds1": "naa.1"}, event="modify")])
    _, wants = mirror.settle()
    assert wants.reread == ["host-1"]
    mirror.host_unread("host-1")
    mirror.apply([ObjectUpdate(TREE, "leave", "HostSystem", "host-1", {})])
    mirror.settle()
    assert not mirror.unread and not mirror.retry_unread()


def test_the_follower_retries_a_failed_reread_when_a_wait_ends_with_no_change(monkeypatch):
    import threading
    import time

    from exporter.vsphere.follow import Follower
    from exporter.vsphere.hostfaults import HostFaults
    from exporter.vsphere.settings import TargetConfig

    asked = []
    monkeypatch.setattr(discovery, "retrieve_hosts", lambda content, moids: asked.append(list(moids)) or [])
    monkeypatch.setattr(discovery, "read_settings", lambda topo, _stub, _faults: None)

    class Quiet:  # WaitForUpdatesEx that ends with nothing changed
        def wait(self, max_wait, page=None, timeout=None):
            time.sleep(0.02)

    follower = Follower(None, TargetConfig(name="vc", url="https://vc"), lambda delta, mirror: None, HostFaults(None, "vc"))
    follower.client = SimpleNamespace(
        call=lambda fn, *args: fn(SimpleNamespace(propertyCollector=SimpleNamespace(_stub=None)), *args)
    )
    follower.mirror = mirror = walked()
    follower.follow(Quiet(), time.monotonic() + 0.1, threading.Event())
    assert asked == []  # nothing failed: a quiet wait asks for nothing
    mirror.host_unread("host-1")
    follower.follow(Quiet(), time.monotonic() + 0.1, threading.Event())
    assert asked == [["host-1"]] and not mirror.unread  # asked again once, and answered
