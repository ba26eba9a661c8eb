"""The storage simulator under the churn soak's changes (bench/soak_driver.py, issue 45), driven
with pyVmomi as the driver drives it: what the soak found the simulator doing that vCenter does
not, each reproduced in seconds (simulators/storagesim/placement.go).

- vMotion left the VM in its old host's vm list and out of the new one's: the new host could be
  removed with the VM on it, and the next power-on of the VM panicked the simulator (twice in the
  30-minute soak at seed 45); the old host kept listing the VM after it was destroyed.
- A host added at run time had the stock datastore system: RemoveDatastore was MethodNotFound.
- A host added at run time had the stock method executer: every esxcli storage command was "not
  found", so the soak's added hosts never had esxcli's series, SMART or VAAI (simulators/storagesim/clones.go).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak_driver import _collect
from simulators.storagesim.sims import StorageSim
from tests.support.vsphere_api import connect, named, wait

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("placement") / "sim")
    yield sim
    sim.stop()


@pytest.fixture(scope="module")
def content(sim):
    return connect(sim).RetrieveContent()


def fault_of(task) -> str:
    """The fault's type name a task failed with (vim.fault.InvalidState ...)."""
    with pytest.raises(AssertionError) as failed:
        wait(task)
    return type(failed.value.args[0]).__name__ if failed.value.args else ""


def add_host(content, name: str, template: str = "esx03.lab.local"):
    from pyVmomi import vim

    cluster = named(content, vim.HostSystem, template).parent
    wait(cluster.AddHost_Task(spec=vim.host.ConnectSpec(hostName=name, userName=template, force=True), asConnected=True))
    return named(content, vim.HostSystem, name)


def create_vm(content, host, name: str, datastore: str):
    """A VM with one thin disk on the datastore, as the soak's driver creates them."""
    from pyVmomi import vim

    controller = vim.vm.device.VirtualDeviceSpec(
        operation="add", device=vim.vm.device.ParaVirtualSCSIController(key=-100, busNumber=0, sharedBus="noSharing")
    )
    backing = vim.vm.device.VirtualDisk.FlatVer2BackingInfo(
        fileName=f"[{datastore}] {name}/{name}_0.vmdk", diskMode="persistent", thinProvisioned=True
    )
    disk = vim.vm.device.VirtualDeviceSpec(
        operation="add",
        fileOperation="create",
        device=vim.vm.device.VirtualDisk(key=-1, controllerKey=-100, unitNumber=0, capacityInKB=1 << 20, backing=backing),
    )
    spec = vim.vm.ConfigSpec(
        name=name, guestId="otherGuest", files=vim.vm.FileInfo(vmPathName=f"[{datastore}]"), deviceChange=[controller, disk]
    )
    datacenter = content.rootFolder.childEntity[0]
    wait(datacenter.vmFolder.CreateVM_Task(config=spec, pool=host.parent.resourcePool, host=host))
    return named(content, vim.VirtualMachine, name)


def shared_datastores(content, *hosts) -> list[str]:
    """Names of the datacenter's datastores every one of the hosts mounts."""
    known = {d.name for d in content.rootFolder.childEntity[0].datastore}
    mounted = [{d.name for d in h.datastore} for h in hosts]
    return sorted(known.intersection(*mounted))


def vm_lists(content, kind) -> dict[str, set[str]]:
    """Each object's vm list (moIds), read in one call as a client reads them."""
    return {p["name"]: {v._moId for v in p.get("vm") or []} for _, p in _collect(content, kind, ["name", "vm"])}


def test_a_vm_moved_to_another_host_keeps_that_host_in_inventory_and_the_simulator_alive(sim, content):
    """The soak's crash, step by step as its driver made it: a VM moved to an added host, the host
    put in maintenance mode and removed (govmomi's Destroy_Task saw no VM in its list), then the
    VM powered on: the simulator panicked. Now the new host lists the VM and refuses its removal
    (ResourceInUse) until the VM has gone."""
    from pyVmomi import vim

    home = named(content, vim.HostSystem, "esx03.lab.local")
    new = add_host(content, "place-esx1.lab.local")
    vm = create_vm(content, home, "place-vm1", shared_datastores(content, home, new)[0])
    wait(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=new)))
    wait(new.EnterMaintenanceMode_Task(timeout=0))
    removal = new.Destroy_Task()
    try:
        wait(removal)
    except AssertionError:
        pass
    try:
        wait(vm.PowerOnVM_Task())  # refused: its host is in maintenance mode
    except AssertionError:
        pass
    assert sim.proc.poll() is None, "the simulator died: " + Path(sim.log.name).read_text()[-600:]
    assert type(removal.info.error).__name__ == "vim.fault.ResourceInUse", removal.info.error
    hosts = vm_lists(content, vim.HostSystem)
    assert vm._moId in hosts["place-esx1.lab.local"] and vm._moId not in hosts["esx03.lab.local"], hosts
    assert vm.runtime.host == new
    # as vCenter wants it: the VM away first (the host out of maintenance to let it go)
    wait(new.ExitMaintenanceMode_Task(timeout=0))
    wait(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=home)))
    wait(new.EnterMaintenanceMode_Task(timeout=0))
    wait(new.Destroy_Task())
    wait(vm.PowerOnVM_Task())
    wait(vm.PowerOffVM_Task())
    gone = vm._moId
    wait(vm.Destroy_Task())
    assert sim.proc.poll() is None, "the simulator died"
    listed = vm_lists(content, vim.HostSystem)
    assert all(gone not in vms for vms in listed.values()), listed  # no host names a destroyed VM
    assert "place-esx1.lab.local" not in listed


def test_a_host_a_vm_left_no_longer_names_it_once_it_is_destroyed(sim, content):
    """The soak driver's "ManagedObjectNotFound: The object has already been deleted": the host a
    VM had moved from kept it in its vm list, and reading that VM once destroyed faulted."""
    from pyVmomi import vim

    home, other = named(content, vim.HostSystem, "esx03.lab.local"), named(content, vim.HostSystem, "esx01.lab.local")
    vm = create_vm(content, home, "place-vm5", shared_datastores(content, home, other)[0])
    wait(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=other)))
    wait(vm.Destroy_Task())
    assert [v.name for v in home.vm] == ["batch01"] and "place-vm5" not in [v.name for v in other.vm]


def nfs(host, name: str):
    """An NFS datastore mounted on this host alone (the datacenter's list has only LocalDS_0)."""
    from pyVmomi import vim

    spec = vim.host.NasVolume.Specification(
        remoteHost="192.0.2.50", remotePath=f"/export/{name}", localPath=name, accessMode="readWrite"
    )
    return host.configManager.datastoreSystem.CreateNasDatastore(spec=spec)


def test_storage_vmotion_moves_the_vm_between_the_datastores_vm_lists(sim, content):
    from pyVmomi import vim

    host = named(content, vim.HostSystem, "esx03.lab.local")
    first = shared_datastores(content, host)[0]
    target = nfs(host, "place-nfs-0")
    vm = create_vm(content, host, "place-vm2", first)
    wait(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(datastore=target)))
    assert vm._moId not in vm_lists(content, vim.Datastore)[first]
    assert [v._moId for v in target.vm] == [vm._moId]  # (a datastore mounted at run time is in no view)
    assert [d.name for d in vm.datastore] == ["place-nfs-0"]
    wait(vm.Destroy_Task())
    assert target.vm == [] and all(vm._moId not in vms for vms in vm_lists(content, vim.Datastore).values())
    host.configManager.datastoreSystem.RemoveDatastore(datastore=target)


def test_a_relocation_vcenter_refuses_fails_its_task_with_the_documented_fault(sim, content):
    """RelocateVM_Task's faults (vSphere API reference): InvalidState for a target host in
    maintenance mode or not connected, InvalidDatastore for a datastore the target host does not
    mount, MaintenanceModeFileMove for a Storage vMotion off a host in maintenance mode. The
    simulator took all of them (and a VM on a host that cannot reach its disks crashed it later)."""
    from pyVmomi import vim

    home = named(content, vim.HostSystem, "esx03.lab.local")
    other = add_host(content, "place-esx2.lab.local")
    vm = create_vm(content, home, "place-vm3", shared_datastores(content, home, other)[0])
    own = nfs(other, "place-nfs-1")  # on the added host only
    try:
        assert fault_of(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(datastore=own))) == "vim.fault.InvalidDatastore"
        wait(other.EnterMaintenanceMode_Task(timeout=0))
        assert fault_of(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=other))) == "vim.fault.InvalidState"
        wait(other.ExitMaintenanceMode_Task(timeout=0))
        wait(other.DisconnectHost_Task())
        assert fault_of(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=other))) == "vim.fault.InvalidState"
        wait(other.ReconnectHost_Task())
        wait(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=other)))  # both mount its datastore
        wait(other.EnterMaintenanceMode_Task(timeout=0))
        assert fault_of(vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(datastore=own))) == "vim.fault.MaintenanceModeFileMove"
        assert vm.runtime.host == other and vm._moId in vm_lists(content, vim.HostSystem)["place-esx2.lab.local"]
    finally:
        wait(other.ExitMaintenanceMode_Task(timeout=0))
    wait(vm.Destroy_Task())
    assert sim.proc.poll() is None


def test_a_vmotion_to_a_host_that_cannot_reach_a_disk_of_the_vm_is_refused(sim, content):
    """app01's second disk is on nfs-vm-01, which esx01 does not mount: vCenter refuses the move
    (InvalidDatastore). The simulator took it, and destroying the VM there later panicked it (its
    disk's datastore looked up among its new host's)."""
    from pyVmomi import vim

    vm = named(content, vim.VirtualMachine, "app01")
    move = vm.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=named(content, vim.HostSystem, "esx01.lab.local")))
    assert fault_of(move) == "vim.fault.InvalidDatastore"
    assert "nfs-vm-01" in move.info.error.faultMessage[0].message
    assert vm.runtime.host.name == "esx02.lab.local"


def test_a_host_added_at_run_time_removes_an_nfs_datastore_it_mounted(sim, content):
    """The fixture's hosts had changes.go's datastore system; an added host had the stock one, and
    RemoveDatastore was MethodNotFound (vmodl.fault.MethodNotFound in the soak's driver)."""
    from pyVmomi import vim

    template = named(content, vim.HostSystem, "esx02.lab.local")
    before = sorted(d.name for d in template.datastore)
    host = add_host(content, "place-esx3.lab.local", template="esx02.lab.local")
    datastore = nfs(host, "place-nfs-2")

    def mounts() -> set[str]:
        return {m.volume.name for m in host.config.fileSystemVolume.mountInfo if m.volume is not None}

    assert "place-nfs-2" in mounts() and "place-nfs-2" in {d.name for d in host.datastore}
    host.configManager.datastoreSystem.RemoveDatastore(datastore=datastore)
    assert "place-nfs-2" not in mounts() and "place-nfs-2" not in {d.name for d in host.datastore}
    assert sorted(d.name for d in template.datastore) == before  # the template's own list untouched
    wait(host.EnterMaintenanceMode_Task(timeout=0))
    wait(host.Destroy_Task())


def test_a_host_added_at_run_time_and_disconnected_refuses_calls_as_the_fixtures_hosts_do(sim, content):
    """vCenter answers HostNotConnected for a call that needs a disconnected host
    (simulators/storagesim/hoststate.go); an added host answered as if connected. The host it was copied
    from keeps answering."""
    from pyVmomi import vim, vmodl

    template = named(content, vim.HostSystem, "esx01.lab.local")
    host = add_host(content, "place-esx4.lab.local", template="esx01.lab.local")
    wait(host.DisconnectHost_Task())
    with pytest.raises(vmodl.fault.HostNotConnected):
        nfs(host, "place-nfs-4")
    with pytest.raises(vmodl.fault.HostNotConnected):
        host.configManager.storageSystem.RefreshStorageSystem()
    template.configManager.storageSystem.RefreshStorageSystem()  # the template's own: connected
    wait(host.ReconnectHost_Task())
    host.configManager.datastoreSystem.RemoveDatastore(datastore=nfs(host, "place-nfs-4"))
    wait(host.EnterMaintenanceMode_Task(timeout=0))
    wait(host.Destroy_Task())


def test_a_host_added_at_run_time_answers_esxcli_as_the_host_it_copies(sim, content):
    """The soak adds hosts as copies of a fixture host; a real host added to vCenter answers esxcli
    about its own devices, which a copy's are its template's: devices, paths, VAAI and SMART as the
    template answers them, a copy of that copy too. The stock executer answered "not found"."""
    from pyVmomi import vim

    from exporter.esxcli.inventory import EsxcliError
    from exporter.vsphere import esxcli

    stub = content.propertyCollector._stub

    def answer(host, *words):
        try:
            records, _ = esxcli.run(stub, esxcli.executer(stub, host._moId), list(words))
        except EsxcliError as err:
            return f"refused: {err}"
        return sorted(tuple(sorted(r.items())) for r in records)

    template = named(content, vim.HostSystem, "esx01.lab.local")
    copy = add_host(content, "place-esx5.lab.local", template="esx01.lab.local")
    copy_of_copy = add_host(content, "place-esx6.lab.local", template="place-esx5.lab.local")
    devices = answer(template, "storage", "core", "device", "list")
    assert "naa.600a098038303053453f463045727a61" in {dict(r)["device"] for r in devices}
    for words in (
        ("storage", "core", "device", "list"),
        ("storage", "nmp", "device", "list"),
        ("storage", "core", "adapter", "list"),
        ("storage", "core", "device", "vaai", "status", "get"),
        ("storage", "vmfs", "lockmode", "list"),
        ("storage", "core", "device", "smart", "get", "-d", "naa.600a098038303053453f463045727a61"),
    ):
        expected = answer(template, *words)
        assert expected and "not found" not in str(expected), words
        assert answer(copy, *words) == expected, words
        assert answer(copy_of_copy, *words) == expected, words
