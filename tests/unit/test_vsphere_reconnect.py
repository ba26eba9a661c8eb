"""A host vCenter lists but cannot read (disconnected, not responding) keeps its counters, hidden,
and they go on from where they were when it is read again; a host that left vCenter's inventory,
or stayed unreadable longer than SUSPEND_FOR, loses them (#45: the churn soak saw 125 counters of a
host that reconnected between two scrapes start again from 0)."""

from __future__ import annotations

from exporter.collectors import lun as lun_collector
from exporter.collectors.textformat import render
from exporter.store import model as m
from exporter.store.store import Store
from exporter.vsphere import source
from exporter.vsphere.settings import TargetConfig
from exporter.vsphere.source import VsphereTarget

LUN = "naa.600a098038304331"
READS_TOTAL = "esxi_lun_reads_total"


def sample(host: str, at: float) -> m.Sample:
    return m.Sample(host, at, 20.0, luns={LUN: {m.READS: 10.0, m.COMMANDS: 10.0}}, source="vsphere")


def reads(store: Store, host: str) -> float | None:
    """The host's LUN reads counter as /metrics shows it; None when it shows no such series."""
    for line in render(lun_collector.collect(store)).decode().splitlines():
        if line.startswith(READS_TOTAL + "{") and f'host="{host}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def target_with(*hosts: str) -> VsphereTarget:
    target = VsphereTarget(TargetConfig(name="vc", url="https://vc"))
    target.host_status = {host: m.HostStatus("connected", False) for host in hosts}
    return target


def test_a_host_that_reconnects_goes_on_counting_from_where_it_was():
    target = target_with("esx01", "esx02")
    store = target.store
    for at in (20.0, 40.0):
        store.ingest(sample("esx01", at), origin="vc")
    assert reads(store, "esx01") == 400.0  # 10/s over two 20 s intervals
    # vCenter shows it disconnected: it leaves the topology but stays listed
    target.host_status = {**target.host_status, "esx01": m.HostStatus("disconnected", False)}
    target._forget({"esx01"})
    assert reads(store, "esx01") is None  # its data series go, as before
    store.ingest(sample("esx01", 100.0), origin="vc")  # reconnected, read again
    assert reads(store, "esx01") == 600.0  # on from 400, never lower


def test_a_host_removed_from_vcenter_loses_its_counters():
    target = target_with("esx01")
    store = target.store
    store.ingest(sample("esx01", 20.0), origin="vc")
    target.host_status = {}  # removed from the inventory (or left the selection)
    target._forget({"esx01"})
    assert ("vc", "esx01") not in store.host_states
    store.ingest(sample("esx01", 40.0), origin="vc")  # added again: a new series, from 0
    assert reads(store, "esx01") == 200.0


def test_a_suspended_host_is_forgotten_once_removed_or_after_suspend_for(monkeypatch):
    target = target_with("esx01", "esx02")
    store = target.store
    for host in ("esx01", "esx02"):
        store.ingest(sample(host, 20.0), origin="vc")
    target._forget({"esx01", "esx02"})  # both disconnected
    assert set(store.host_states) == {("vc", "esx01"), ("vc", "esx02")}
    target.host_status = {"esx02": target.host_status["esx02"]}  # esx01 removed while disconnected
    target._settle_suspended()
    assert set(store.host_states) == {("vc", "esx02")}
    now = source.time.monotonic()
    monkeypatch.setattr(source.time, "monotonic", lambda: now + source.SUSPEND_FOR + 1)
    target._settle_suspended()  # esx02 unreadable for longer than an hour: memory stays bounded
    assert store.host_states == {} and target.suspended == {}


def test_samples_total_of_a_suspended_host_is_hidden_and_kept():
    target = target_with("esx01")
    target.samples["esx01"] = 7
    target._forget({"esx01"})
    target._publish()
    assert "esx01" not in target.store.health[("vsphere", "vc")].samples
    target.suspended.clear()  # read again (_settle_suspended when it is back in the topology)
    target._publish()
    assert target.store.health[("vsphere", "vc")].samples["esx01"] == 7


def test_a_host_s_call_errors_go_on_from_their_count_when_it_is_read_again():
    """The 100-minute soak at four times the change rate saw esxi_vsphere_host_errors_total of a
    host disconnected and reconnected between two scrapes go from 1 to 0: its call health was
    forgotten when vCenter could not read it. Now it is hidden and kept, like its counters."""
    from exporter.vsphere.hostfaults import KIND

    target = target_with("esx01")
    store, faults = target.store, target.host_faults
    faults.failed("esx01", "RetrievePropertiesEx", "timed out")
    assert store.health[(KIND, "esx01")].errors == {"RetrievePropertiesEx": 1}
    target.host_status = {"esx01": m.HostStatus("disconnected", False)}
    target._forget({"esx01"})
    assert (KIND, "esx01") not in store.health  # no series of a host vCenter cannot read
    faults.answered("esx01", "RetrievePropertiesEx")  # read again: its call answers
    assert store.health[(KIND, "esx01")].errors == {"RetrievePropertiesEx": 1}  # on from 1, not 0
    target.host_status = {}  # removed from vCenter: its call health goes for good
    target._settle_suspended()
    target._forget({"esx01"})
    assert (KIND, "esx01") not in store.health
    faults.answered("esx01", "RetrievePropertiesEx")
    assert store.health[(KIND, "esx01")].errors == {"RetrievePropertiesEx": 0}


class _Ref:
    def __init__(self, moid: str):
        self._moId = moid


def test_a_query_perf_answer_for_a_host_suspended_meanwhile_does_not_bring_its_record_back():
    """The 145-minute soak (seed 53, four times the change rate) saw esxi_vsphere_host_up 1 of
    esx31 for 110 s after vCenter lost it: reconnected at 625.3 s and disconnected at 626.3 s, it
    was suspended while a collection that began with it ran, and that collection's QueryPerf
    answer published its call health again. A collection reports only hosts still shown."""
    from exporter.vsphere import discovery
    from exporter.vsphere.hostfaults import KIND

    target = target_with("esx01", "esx02")
    store = target.store
    began_with = discovery.Topology(
        hosts=[
            discovery.HostTopology(ref=_Ref(f"host-{n}"), name=f"esx0{n}", inventory=m.Inventory(host=f"esx0{n}")) for n in (1, 2)
        ]
    )
    # while the collection's QueryPerf runs, vCenter loses esx01 and a change takes it out
    target.topology = discovery.Topology(hosts=[began_with.hosts[1]])
    target.host_status = {**target.host_status, "esx01": m.HostStatus("disconnected", False)}
    target._forget({"esx01"})
    target._host_queries(began_with, {"host-1": object(), "host-2": object()}, [])
    assert (KIND, "esx01") not in store.health  # no series of a host vCenter cannot read
    assert store.health[(KIND, "esx02")].up == 1
    # and a failure that comes back for it is not shown either
    target._host_queries(began_with, {"host-2": object()}, [("host-1", "HostNotConnected")])
    assert (KIND, "esx01") not in store.health
