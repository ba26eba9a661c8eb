"""A VM's counters never go down while the exporter runs (issue 45: in the churn soak,
esxi_vm_*_total of one VM went from 9,600 to 2,400 between two scrapes). On the storage
simulator, each change made through the API behind the exporter's back and applied by a walk
(the same _apply the update stream drives), between two collections with no scrape between:

- a VM powered off and on again, moved (vMotion) away and back, renamed and renamed back: its
  series leave the host at once (as before), and come back going on from their totals, not from 0;
- a change applied while a collection's QueryPerf answer is on its way (the soak's case: a VM
  powered off after the query, before its sample is ingested): that sample no longer brings the
  VM's series back from 0, where they outlived the VM until the store's stale_after (300 s);
- a VM gone longer than source.RETIRED_FOR is forgotten (memory stays bounded): back later, its
  series start again from 0.

The simulator answers the same values at every 20 s step; stepping each host's newest sample time
back by one step makes a collection ingest one more sample, as a collection 20 s later would.
The fixture's VMs: db01 and web01 on esx01, app01 on esx02, batch01 on esx03. The last test runs
a target as `serve` does, its update stream applying the change in its own thread.
"""

from __future__ import annotations

import threading
import time

import pytest
from pyVmomi import vim

from exporter.collectors import COLLECTORS
from exporter.serving.exposition import Exposition
from exporter.vsphere import TargetConfig, VsphereTarget, perf, source
from simulators.storagesim.sims import PASSWORD, USER, StorageSim
from tests.support.promtext import samples
from tests.support.vsphere_api import named, session, wait

pytestmark = pytest.mark.integration
STEP = 20.0  # the real-time interval


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("sim"))
    yield sim
    sim.stop()


@pytest.fixture(scope="module")
def api(sim):
    with session(sim) as content:
        yield content


@pytest.fixture(scope="module")
def vc(sim, tmp_path_factory):
    password = tmp_path_factory.mktemp("secret") / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(password), ca_file=str(sim.cert), esxcli=False)
    target = VsphereTarget(config)
    assert target.run_once(), target.error
    yield target
    target.client.close()


def collect(vc: VsphereTarget, steps: int = 1) -> None:
    """A collection that ingests `steps` more samples of every host."""
    for host in list(vc.last_timestamp):
        vc.last_timestamp[host] -= steps * STEP
    assert vc.collect(), vc.error


def vm_counters(vc: VsphereTarget, vm: str) -> dict:
    """(name, labels) -> value of every esxi_vm_*_total series of this VM (its own and its disks')."""
    enabled = [name for name, (_, default) in COLLECTORS.items() if default]
    text = Exposition(vc.store, enabled=enabled).body().decode()
    return {
        (name, tuple(sorted(labels.items()))): value
        for name, labels, value in samples(text)
        if name.startswith("esxi_vm_") and name.endswith("_total") and labels.get("vm") == vm
    }


def on_host(counters: dict, host: str) -> dict:
    return {key: value for key, value in counters.items() if ("host", host) in key[1]}


def assert_went_on(before: dict, after: dict, what: str) -> None:
    """The same series, each higher than before (one more sample each: none started again from 0)."""
    assert before and after.keys() == before.keys(), f"{what}: {sorted(before)} -> {sorted(after)}"
    lower = {key: (before[key], after[key]) for key in before if after[key] <= before[key]}
    example = next(((key, pair) for key, pair in lower.items() if key[0] == "esxi_vm_reads_total"), None)
    assert not lower, f"{what}: {len(lower)} of {len(before)} counters started again, e.g. {example}"


def vm(api, name: str):
    return named(api, vim.VirtualMachine, name)


def test_a_vm_powered_off_and_on_between_two_scrapes_goes_on_from_its_totals(vc, api):
    collect(vc, steps=4)
    before = vm_counters(vc, "web01")
    wait(vm(api, "web01").PowerOffVM_Task())
    assert vc.discover(), vc.error
    assert vm_counters(vc, "web01") == {}  # its series leave at once, as before
    wait(vm(api, "web01").PowerOnVM_Task())
    assert vc.discover(), vc.error
    collect(vc)
    assert_went_on(before, vm_counters(vc, "web01"), "web01 powered off and on")


def test_a_vm_moved_away_and_back_goes_on_from_its_totals_on_its_host(vc, api):
    """vMotion changes the host label: the series leave the host it left (on the other host they
    are their own); back on its first host, that host's series go on from their totals. (Not
    judged here: its series on esx03, which the simulator does not let a collection without the
    update stream read: RelocateVM leaves the VM in its old host's `vm` list, so the state check
    before the query does not find it; test_vsphere_follow judges them, following the changes.)"""
    collect(vc, steps=3)
    before = vm_counters(vc, "app01")
    assert set(before) == set(on_host(before, "esx02.lab.local"))
    app01 = vm(api, "app01")
    wait(app01.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=named(api, vim.HostSystem, "esx03.lab.local"))))
    assert vc.discover(), vc.error
    collect(vc)
    assert on_host(vm_counters(vc, "app01"), "esx02.lab.local") == {}
    wait(app01.RelocateVM_Task(spec=vim.vm.RelocateSpec(host=named(api, vim.HostSystem, "esx02.lab.local"))))
    assert vc.discover(), vc.error
    collect(vc)
    assert_went_on(before, vm_counters(vc, "app01"), "app01 moved to esx03 and back")


def test_a_vm_renamed_and_renamed_back_goes_on_from_its_totals(vc, api):
    collect(vc, steps=2)
    before = vm_counters(vc, "web01")
    wait(vm(api, "web01").Rename_Task(newName="web01-renamed"))
    assert vc.discover(), vc.error
    collect(vc)
    assert vm_counters(vc, "web01") == {} and vm_counters(vc, "web01-renamed")  # a new name: new series
    wait(vm(api, "web01-renamed").Rename_Task(newName="web01"))
    assert vc.discover(), vc.error
    collect(vc)
    assert_went_on(before, vm_counters(vc, "web01"), "web01 renamed and renamed back")


def test_a_sample_read_before_a_power_off_and_ingested_after_it_brings_nothing_back(vc, api, monkeypatch):
    """The soak's case: the collection's QueryPerf answer holds web01's sample; web01 is powered
    off (its series dropped) before that answer is ingested. The sample does not bring web01's
    series back (before: from 0, 9,600 -> 2,400 in the soak, and kept until stale_after); powered
    on again, they go on from their totals."""
    collect(vc, steps=3)
    before = vm_counters(vc, "web01")
    query = perf.query

    def answered_then_powered_off(*args, **kwargs):
        answer = query(*args, **kwargs)
        wait(vm(api, "web01").PowerOffVM_Task())
        assert vc.discover(), vc.error  # applied while the answer is on its way
        return answer

    monkeypatch.setattr(perf, "query", answered_then_powered_off)
    collect(vc)
    monkeypatch.undo()
    back = {key: value for key, value in vm_counters(vc, "web01").items() if key[0] == "esxi_vm_reads_total"}
    assert back == {}, (
        f"a powered-off VM's series came back from a sample read before: {back}, before {before.get(next(iter(back)))}"
    )
    assert vm_counters(vc, "db01")  # the host's other VM was ingested
    wait(vm(api, "web01").PowerOnVM_Task())
    assert vc.discover(), vc.error
    collect(vc)
    assert_went_on(before, vm_counters(vc, "web01"), "web01 powered off while its sample was on its way, then on")


def test_a_vm_gone_longer_than_the_bound_is_forgotten(vc, api, monkeypatch):
    """Memory stays bounded: a VM's kept counters go once its host has a sample more than
    RETIRED_FOR after the VM's last (here a microsecond: the simulator's next 20 s step, waited
    for); back after that, its series start again from 0."""
    monkeypatch.setattr(source, "RETIRED_FOR", 1e-6)
    collect(vc, steps=3)
    before = vm_counters(vc, "web01")
    state = vc.store.host_states[("vc", "esx01.lab.local")]
    wait(vm(api, "web01").PowerOffVM_Task())
    assert vc.discover(), vc.error
    assert "web01" in state.retired["vms"] and ("web01", "scsi0:0") in state.retired["vdisks"]
    collect(vc)  # the same newest sample again: not past the bound yet
    assert "web01" in state.retired["vms"]
    newest = vc.last_timestamp["esx01.lab.local"]
    time.sleep(max(0.0, newest + STEP + 0.5 - time.time()))  # the simulator's next sample
    assert vc.collect(), vc.error
    assert vc.last_timestamp["esx01.lab.local"] > newest
    assert "web01" not in state.retired.get("vms", {}) and not any(key[0] == "web01" for key in state.retired.get("vdisks", {}))
    wait(vm(api, "web01").PowerOnVM_Task())
    assert vc.discover(), vc.error
    collect(vc)
    again = vm_counters(vc, "web01")
    assert again.keys() == before.keys()
    assert all(again[key] < before[key] for key in before if before[key]), (before, again)  # one sample: from 0


def test_the_same_while_following_the_changes_as_serve_does(sim, api, tmp_path, monkeypatch):
    """The soak's own path: a running target (a collection every second here), its update stream
    applying db01's power-off in the discovery thread while the collection thread holds a
    QueryPerf answer with a sample of db01."""
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    config = TargetConfig(
        name="run", url=sim.url, user=USER, password_file=str(password), ca_file=str(sim.cert), esxcli=False, interval=1.0
    )
    target, stop = VsphereTarget(config), threading.Event()
    query, armed, applied = perf.query, threading.Event(), threading.Event()

    def db01():
        return next((vm for topo in target.topology.hosts for vm in topo.vms if vm.name == "db01"), None)

    def answered_then_powered_off(*args, **kwargs):
        answer = query(*args, **kwargs)
        placed = db01()
        series = answer[0].get(placed.ref._moId) if armed.is_set() and placed is not None else None
        if series is not None and series.stamps:  # an answer with a sample of db01
            armed.clear()
            wait(vm(api, "db01").PowerOffVM_Task())
            until(lambda: db01() is None, "the update stream applies the power-off", 10.0)
            applied.set()
        return answer

    def reads() -> float:
        return sum(v for key, v in vm_counters(target, "db01").items() if key[0] == "esxi_vm_reads_total")

    def rewind() -> None:
        for host in list(target.last_timestamp):
            target.last_timestamp[host] -= STEP  # the next collection reads a sample again

    monkeypatch.setattr(perf, "query", answered_then_powered_off)
    threads = target.start(stop)
    try:
        until(lambda: target.follower is not None and db01() is not None, "the walk", 30.0)
        rewind()  # the first collection ran before the VMs were placed: one with db01's sample now
        until(reads, "a sample of db01", 10.0)
        first = reads()
        rewind()
        until(lambda: reads() > first, "more samples of db01", 10.0)
        before = vm_counters(target, "db01")
        armed.set()
        while not applied.wait(1.5):  # till a collection's answer holds a sample of db01
            rewind()
        time.sleep(1.0)  # that collection ingests its answer
        back = {key: value for key, value in vm_counters(target, "db01").items() if key[0] == "esxi_vm_reads_total"}
        assert back == {}, (
            f"db01's series came back from a sample read before its power-off: {back}, before {before.get(next(iter(back)))}"
        )
        wait(vm(api, "db01").PowerOnVM_Task())
        until(lambda: db01() is not None, "db01 placed again", 10.0)
        rewind()
        until(lambda: reads(), "db01's samples again", 10.0)
        assert_went_on(before, vm_counters(target, "db01"), "db01 powered off while its sample was on its way, then on")
    finally:
        stop.set()
        for thread in threads:
            thread.join(10.0)


def until(check, what: str, within: float) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {within:.0f}s"
        time.sleep(0.05)
