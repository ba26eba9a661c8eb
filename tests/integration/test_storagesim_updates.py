"""The storage simulator's property collector answers a wait as vCenter does: with what changed
and nothing else (simulators/storagesim/testdata/simulator/wait_updates.go). The exporter's follow tests
and bench/vsphere_traffic.py's bytes per change stand on this, so it is checked on its own,
through pyVmomi's WaitForUpdatesEx, with no exporter code.

The fixture's VMs: db01 and web01 on esx01, app01 and old01 (powered off) on esx02, batch01 on
esx03.
"""

from __future__ import annotations

import time

import pytest

from simulators.storagesim.sims import StorageSim
from tests.support.vsphere_api import connect, named, wait

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    from pyVim.connect import Disconnect

    sim = StorageSim(tmp_path_factory.mktemp("sim"))
    si = connect(sim)
    yield si.RetrieveContent()
    Disconnect(si)
    sim.stop()


class Watch:
    """A private collector with one filter over a view, and the version it has read up to."""

    def __init__(self, content, view, kind, paths):
        from pyVmomi import vmodl

        pc = vmodl.query.PropertyCollector
        self.collector = content.propertyCollector.CreatePropertyCollector()
        spec = pc.FilterSpec(
            objectSet=[pc.ObjectSpec(obj=view, skip=True, selectSet=[pc.TraversalSpec(name="v", path="view", type=type(view))])],
            propSet=[pc.PropertySpec(type=kind, pathSet=paths)],
        )
        self.collector.CreateFilter(spec, partialUpdates=False)
        self.version = ""

    def changes(self, quiet: float = 1.0, within: float = 20.0) -> list:
        """(kind, name or moid, {path: value}) of every object update until a wait of `quiet`
        seconds brings nothing."""
        from pyVmomi import vmodl

        found, deadline = [], time.monotonic() + within
        while time.monotonic() < deadline:
            options = vmodl.query.PropertyCollector.WaitOptions(maxWaitSeconds=int(quiet))
            answer = self.collector.WaitForUpdatesEx(version=self.version, options=options)
            if answer is None:
                return found
            self.version = answer.version
            for filter_set in answer.filterSet:
                for update in filter_set.objectSet:
                    values = {change.name: change.val for change in update.changeSet}
                    found.append((update.kind, values.get("name", update.obj._moId), values))
        raise AssertionError(f"updates still coming after {within} s: {found[-5:]}")


def test_a_power_off_is_one_modify_of_one_property(api):
    from pyVmomi import vim

    view = api.viewManager.CreateContainerView(api.rootFolder, [vim.VirtualMachine], True)
    watch = Watch(api, view, vim.VirtualMachine, ["name", "runtime.powerState"])
    first = watch.changes()
    assert sorted((kind, name) for kind, name, _ in first) == [
        ("enter", n) for n in ("app01", "batch01", "db01", "old01", "web01")
    ]

    batch01 = named(api, vim.VirtualMachine, "batch01")
    wait(batch01.PowerOffVM_Task())
    assert watch.changes() == [("modify", batch01._moId, {"runtime.powerState": "poweredOff"})]
    wait(batch01.PowerOnVM_Task())
    assert watch.changes() == [("modify", batch01._moId, {"runtime.powerState": "poweredOn"})]


def test_a_vm_created_enters_alone_and_leaves_alone(api):
    from pyVmomi import vim

    view = api.viewManager.CreateContainerView(api.rootFolder, [vim.VirtualMachine], True)
    watch = Watch(api, view, vim.VirtualMachine, ["name"])
    assert len(watch.changes()) == 5

    datacenter = api.rootFolder.childEntity[0]
    host = next(h for h in datacenter.hostFolder.childEntity[0].host)
    spec = vim.vm.ConfigSpec(name="enter01", guestId="otherGuest", files=vim.vm.FileInfo(vmPathName="[LocalDS_0]"))
    wait(datacenter.vmFolder.CreateVM_Task(config=spec, pool=host.parent.resourcePool, host=host))
    assert watch.changes() == [("enter", "enter01", {"name": "enter01"})]  # not the other five again

    enter01 = named(api, vim.VirtualMachine, "enter01")
    wait(enter01.Destroy_Task())
    assert watch.changes() == [("leave", enter01._moId, {})]


def test_a_list_view_sends_what_was_added_or_removed(api):
    from pyVmomi import vim

    hosts = api.viewManager.CreateContainerView(api.rootFolder, [vim.HostSystem], True).view
    assert len(hosts) == 3
    listed = api.viewManager.CreateListView(obj=[])
    watch = Watch(api, listed, vim.HostSystem, ["name"])
    assert watch.changes() == []

    listed.ModifyListView(add=hosts[:2])
    assert sorted(name for _, name, _ in watch.changes()) == sorted(h.name for h in hosts[:2])
    listed.ModifyListView(add=hosts[2:])
    assert watch.changes() == [("enter", hosts[2].name, {"name": hosts[2].name})]
    listed.ModifyListView(remove=hosts[:1])
    assert watch.changes() == [("leave", hosts[0]._moId, {})]
