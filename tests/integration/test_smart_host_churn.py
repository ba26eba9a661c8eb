"""A host's disk health leaves with the host (issue 37), on the storage simulator answering SMART
through the method executer (`-smart`, tests/support/smart_sim.py): with the SMART interval at an
hour, a host disconnected (it leaves the inventory), reconnected, then destroyed in vCenter takes
every esxi_disk_* series of its own with it at the next discovery, not at the next SMART round;
back, it counts afresh. The families left behind, if any, are listed in the failure."""

from __future__ import annotations

import json
import threading

import pytest
from pyVmomi import vim

from exporter.collectors import COLLECTORS
from exporter.serving.exposition import Exposition
from exporter.smart.vsphere import SmartOverVsphere
from exporter.vsphere import TargetConfig, VsphereTarget
from exporter.vsphere.discovery import Topology
from simulators.esxi_ssh.esxcli import HDD
from simulators.storagesim.sims import FIXTURE, PASSWORD, USER, StorageSim
from tests.support import smart_sim
from tests.support.promtext import samples, value
from tests.support.vsphere_api import wait  # pyVim's WaitForTask trips over a running task's name from the simulator

pytestmark = pytest.mark.integration
HEALTHY, FAILING = "esx01.lab.local", "esx02.lab.local"


def exposition(target: VsphereTarget) -> str:
    enabled = [name for name, (_, default) in COLLECTORS.items() if default]
    return Exposition(target.store, enabled=enabled).body().decode()


def disk_families(text: str, host: str) -> list[str]:
    return sorted({name for name, labels, _ in samples(text) if name.startswith("esxi_disk_") and labels.get("host") == host})


def test_a_host_that_leaves_takes_its_disk_health_at_once_and_comes_back_counting_afresh(tmp_path):
    fixture, answers = smart_sim.write(json.loads(FIXTURE.read_text()), tmp_path / "sim")
    sim = StorageSim(tmp_path / "vcsim", "-smart", str(answers), fixture=fixture)
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    vc = VsphereTarget(TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(password), ca_file=str(sim.cert)))
    smart = SmartOverVsphere(vc, vc.store, threading.Event(), interval=3600.0)
    try:
        assert vc.run_once(), vc.error
        smart.round()
        # a refusal counted for the host, so esxi_disk_smart_errors_total is among its series too
        smart.rounds.health.report(HEALTHY, [("storage core device smart get", "out_of_range", "x")])
        text = exposition(vc)
        present = disk_families(text, HEALTHY)
        assert {
            "esxi_disk_smart_up",
            "esxi_disk_smart_errors_total",
            "esxi_disk_smart_value",
            "esxi_disk_nvme_percentage_used_ratio",
            "esxi_disk_temperature_celsius",
        } <= set(present), present
        failing_before = disk_families(text, FAILING)
        assert failing_before

        content = vc.client.content()
        ref = next(t.ref for t in vc.topology.hosts if t.name == HEALTHY)
        host = vim.HostSystem(ref._moId, content.propertyCollector._stub)
        wait(host.DisconnectHost_Task())
        assert vc.discover(), vc.error
        vc.collect()
        text = exposition(vc)
        assert disk_families(text, HEALTHY) == [], f"left after the host left: {disk_families(text, HEALTHY)}"
        assert disk_families(text, FAILING) == failing_before  # the other host keeps its own
        assert ("smart", HEALTHY) not in vc.store.health and HEALTHY not in smart.rounds.last

        wait(host.ReconnectHost_Task())
        assert vc.discover(), vc.error
        assert vc.collect(), vc.error
        smart.round()
        text = exposition(vc)
        assert set(disk_families(text, HEALTHY)) == set(present) - {"esxi_disk_smart_errors_total"}  # back, counting afresh
        assert value(text, "esxi_disk_smart_raw", host=HEALTHY, device=HDD, parameter="power_on_hours", page="ata") == 8811

        # vCenter destroys no host that still holds VMs (ResourceInUse): they are unregistered
        # first (govmomi's simulator panics destroying a VM with a raw disk mapping)
        for vm in host.vm:
            if vm.runtime.powerState == vim.VirtualMachinePowerState.poweredOn:
                wait(vm.PowerOffVM_Task())
            vm.UnregisterVM()
        wait(host.Destroy_Task())
        assert vc.discover(), vc.error
        vc.collect()
        text = exposition(vc)
        assert disk_families(text, HEALTHY) == [], f"left after the host was destroyed: {disk_families(text, HEALTHY)}"
        assert HEALTHY not in {labels.get("host") for _, labels, _ in samples(text)}
    finally:
        vc.client.close()
        sim.stop()


def _leaves_during_the_round(vc: VsphereTarget, gone: str, failed) -> object:
    """A client.call that, at the round's first call, has the target lose `gone` as a change
    from vCenter does (the topology swapped without it, then the host forgotten), and from then
    on answers every call with failed(): what a call on a host no longer there gets."""
    original, calls = vc.client.call, []

    def call(fn):
        calls.append(fn)
        if len(calls) == 1:
            with vc.publishing:
                vc.topology = Topology([t for t in vc.topology.hosts if t.name != gone])
                vc.host_status.pop(gone, None)
                vc._forget({gone})
            return original(fn)
        return failed()

    return call


def _smart_call_failed():
    from exporter.vsphere.client import VsphereError

    raise VsphereError("managed object not found: HostSystem", server_fault=True, fault="ManagedObjectNotFound")


def _esxcli_failed():  # esxcli.read's answer when no command could run
    return None, [("storage core device list", "failed", "managed object not found: HostSystem")]


def test_a_host_that_leaves_while_a_round_waits_its_turn_gets_no_series_again(tmp_path, monkeypatch):
    """The soak's fault (seed 48, 1,245 s): a host removed while a SMART round, and the esxcli
    refresh, had it queued behind others: the call on it failed (the host was gone) and its failure
    was published, esxi_disk_smart_up 0 and esxi_disk_smart_errors_total of a host no longer in the
    inventory, for good. One query at a time, so the last host's turn comes after it left."""
    fixture, answers = smart_sim.write(json.loads(FIXTURE.read_text()), tmp_path / "sim")
    sim = StorageSim(tmp_path / "vcsim", "-smart", str(answers), fixture=fixture)
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    config = TargetConfig(
        name="vc", url=sim.url, user=USER, password_file=str(password), ca_file=str(sim.cert), max_parallel_queries=1
    )
    vc = VsphereTarget(config)
    smart = SmartOverVsphere(vc, vc.store, threading.Event(), interval=3600.0)
    try:
        assert vc.run_once(), vc.error
        last = vc.topology.hosts[-1].name
        monkeypatch.setattr(vc.client, "call", _leaves_during_the_round(vc, last, _smart_call_failed))
        smart.round()
        text = exposition(vc)
        assert disk_families(text, last) == [], f"the host left, its SMART series came back: {disk_families(text, last)}"
        assert ("smart", last) not in vc.store.health
        assert disk_families(text, vc.topology.hosts[0].name)  # the first host's round was kept

        monkeypatch.undo()
        assert vc.discover(), vc.error
        last = vc.topology.hosts[-1].name
        monkeypatch.setattr(vc.client, "call", _leaves_during_the_round(vc, last, _esxcli_failed))
        vc._read_esxcli(list(vc.topology.hosts))
        text = exposition(vc)
        assert ("esxcli", last) not in vc.store.health
        assert not [s for s in samples(text) if s[0].startswith("esxi_esxcli_") and s[1].get("host") == last]
    finally:
        monkeypatch.undo()
        vc.client.close()
        sim.stop()
