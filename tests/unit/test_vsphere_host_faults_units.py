"""One host's failing call, without a server (issue #36, goal 3): which failures are a host's
own, how vCenter's fault is told, the per-host calls of read_settings against a stub that answers
each manager with a chosen pyVmomi fault, the follower's split of a re-read several hosts share,
esxcli's failures logged once, and the host's health record and exposition.
The simulator's own faults: tests/integration/test_vsphere_host_faults.py."""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest
from pyVmomi import vim, vmodl

from exporter.collectors import vsphere as vsphere_collector
from exporter.collectors.textformat import render
from exporter.store import model as m
from exporter.store.store import Store
from exporter.vsphere import discovery, perf, soap
from exporter.vsphere.client import VsphereError
from exporter.vsphere.follow import Follower
from exporter.vsphere.hostfaults import HostFaults, fault_text, is_host_fault
from exporter.vsphere.mirror import DEVICES, LUNS, Entity, Mirror
from exporter.vsphere.settings import TargetConfig
from exporter.vsphere.source import VsphereTarget
from exporter.vsphere.updates import ObjectUpdate, parse_update_set

GONE = vmodl.fault.ManagedObjectNotFound(
    msg="The object 'vim.option.OptionManager:EsxHostAdvSettings-3' has already been deleted or has not been completely created",
    obj=vim.option.OptionManager("EsxHostAdvSettings-3"),
)


@pytest.mark.parametrize(
    "err",
    [
        GONE,
        vim.fault.NoPermission(msg="Permission to perform this operation was denied.", privilegeId="Host.Config.AdvancedConfig"),
        vmodl.fault.HostNotConnected(msg="Unable to communicate with the remote host, since it is disconnected."),
        vmodl.fault.HostNotReachable(msg="Unable to contact the host."),
        vmodl.fault.InvalidArgument(msg="A specified parameter was not correct: iScsiHbaName", invalidProperty="iScsiHbaName"),
        vmodl.fault.NotSupported(msg="The operation is not supported on the object."),
        vim.fault.HostConfigFault(msg="An error occurred during host configuration."),
        TimeoutError("timed out"),
    ],
)
def test_a_fault_of_one_call_is_the_hosts(err):
    assert is_host_fault(err)


@pytest.mark.parametrize(
    "err", [vim.fault.NotAuthenticated(), ConnectionRefusedError(), ConnectionResetError(), ValueError("a bug"), KeyError("x")]
)
def test_the_session_the_server_and_bugs_are_not(err):
    assert not is_host_fault(err)


def test_fault_text_names_the_fault_and_its_object():
    assert fault_text(GONE) == f"ManagedObjectNotFound: {GONE.msg}"
    bare = vmodl.fault.ManagedObjectNotFound(obj=vim.host.IscsiManager("iscsiManager-host-24"))
    assert fault_text(bare) == "ManagedObjectNotFound: object iscsiManager-host-24"
    denied = vim.fault.NoPermission(msg="Permission denied.", privilegeId="Host.Config.Storage")
    assert fault_text(denied) == "NoPermission: Permission denied. (privilege Host.Config.Storage)"
    assert fault_text(TimeoutError("timed out")) == "timed out"


class Stub:
    """Answers each managed object's calls from a table: moid -> a fault to raise, or a value."""

    def __init__(self, answers: dict):
        self.answers = answers
        self.calls: list[tuple[str, str]] = []

    def InvokeMethod(self, mo, info, args):  # noqa: N802 - pyVmomi's stub interface
        self.calls.append((mo._moId, info.wsdlName))
        answer = self.answers[mo._moId]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def _host(name: str, iscsi_adapters: int = 0) -> discovery.HostTopology:
    inventory = m.Inventory(host=name)
    inventory.adapters["vmhba2"] = m.AdapterConfig(type="fc", link_speed_bytes_per_second=1e9)
    for i in range(iscsi_adapters):
        inventory.adapters[f"vmhba6{i}"] = m.AdapterConfig(type="iscsi")
    return discovery.HostTopology(ref=None, name=name, inventory=inventory, managers=(f"opt-{name}", f"iscsi-{name}"))


def _dsnro(value):
    return [vim.option.OptionValue(key=discovery.DSNRO_OPTION, value=value)]


def _bound(speed_mb: int):
    nic = vim.host.PhysicalNic(device="vmnic4", linkSpeed=vim.host.PhysicalNic.LinkSpeedDuplex(speedMb=speed_mb, duplex=True))
    return [vim.host.IscsiManager.IscsiPortInfo(pnicDevice="vmnic4", pnic=nic)]


def test_read_settings_keeps_each_fault_on_its_host(caplog):
    store = Store()
    faults = HostFaults(store, "vc")
    stub = Stub(
        {
            "opt-esx01": _dsnro(32),
            "iscsi-esx01": _bound(10000),
            "opt-esx02": GONE,
            "iscsi-esx02": vmodl.fault.ManagedObjectNotFound(msg="gone", obj=vim.host.IscsiManager("iscsi-esx02")),
            "opt-esx03": TimeoutError("timed out"),
            "opt-esx04": vmodl.fault.HostNotConnected(msg="disconnected"),
        }
    )
    hosts = [_host("esx01", 2), _host("esx02", 2), _host("esx03"), _host("esx04")]
    with caplog.at_level(logging.INFO, logger="exporter.vsphere.hostfaults"):
        for topo in hosts:
            discovery.read_settings(topo, stub, faults)
    esx01, esx02, esx03, esx04 = hosts
    assert esx01.inventory.dsnro == 32
    assert [a.link_speed_bytes_per_second for a in esx01.inventory.adapters.values()] == [1e9, 1.25e9, 1.25e9]
    assert esx02.inventory.dsnro is None
    assert [a.link_speed_bytes_per_second for a in esx02.inventory.adapters.values()] == [1e9, None, None]
    assert ("iscsi-esx02", "QueryBoundVnics") in stub.calls
    assert stub.calls.count(("iscsi-esx02", "QueryBoundVnics")) == 1  # the manager failed: not asked again
    assert esx03.inventory.dsnro is None and esx04.inventory.dsnro is None
    health = {name: record for (kind, name), record in store.health.items() if kind == "vsphere_host"}
    assert {name: (r.up, r.errors) for name, r in health.items()} == {
        "esx01": (1, {"QueryOptions": 0, "QueryBoundVnics": 0}),
        "esx02": (0, {"QueryOptions": 1, "QueryBoundVnics": 1}),
        "esx03": (0, {"QueryOptions": 1}),
        "esx04": (0, {"QueryOptions": 1}),
    }
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"vsphere target vc: host esx02: QueryOptions failed: ManagedObjectNotFound: {GONE.msg} (the rest of the target goes on)",
        "vsphere target vc: host esx02: QueryBoundVnics failed: ManagedObjectNotFound: gone (object iscsi-esx02) (the rest of the target goes on)",
        "vsphere target vc: host esx03: QueryOptions failed: timed out (the rest of the target goes on)",
        "vsphere target vc: host esx04: QueryOptions failed: HostNotConnected: disconnected (the rest of the target goes on)",
    ]


def test_the_session_expiring_is_raised_for_the_client_to_log_in_again():
    stub = Stub({"opt-esx01": vim.fault.NotAuthenticated()})
    with pytest.raises(vim.fault.NotAuthenticated):
        discovery.read_settings(_host("esx01"), stub, HostFaults(None, "vc"))


def test_a_fault_is_logged_once_counted_every_time_and_its_end_said(caplog):
    store = Store()
    faults = HostFaults(store, "vc")
    stub = Stub({"opt-esx02": GONE})
    with caplog.at_level(logging.INFO, logger="exporter.vsphere.hostfaults"):
        for _ in range(5):  # five walks
            topo = _host("esx02")
            discovery.read_settings(topo, stub, faults)
        stub.answers["opt-esx02"] = vim.fault.NoPermission(msg="denied", privilegeId="System.Read")
        discovery.read_settings(_host("esx02"), stub, faults)
        discovery.read_settings(_host("esx02"), stub, faults)
        stub.answers["opt-esx02"] = _dsnro(64)
        topo = _host("esx02")
        discovery.read_settings(topo, stub, faults)
        discovery.read_settings(_host("esx02"), stub, faults)
    assert topo.inventory.dsnro == 64
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        (
            "WARNING",
            f"vsphere target vc: host esx02: QueryOptions failed: ManagedObjectNotFound: {GONE.msg} (the rest of the target goes on)",
        ),
        (
            "WARNING",
            "vsphere target vc: host esx02: QueryOptions failed: NoPermission: denied (privilege System.Read) (the rest of the target goes on)",
        ),
        ("INFO", "vsphere target vc: host esx02: QueryOptions answers again"),
    ]
    record = store.health[("vsphere_host", "esx02")]
    assert (record.up, record.errors) == (1, {"QueryOptions": 7})
    text = render(vsphere_collector.collect(store)).decode()
    assert 'esxi_vsphere_host_up{host="esx02"} 1' in text
    assert 'esxi_vsphere_host_errors_total{host="esx02",call="QueryOptions"} 7' in text
    faults.forget({"esx02"})
    assert ("vsphere_host", "esx02") not in store.health


def test_a_fault_keeps_the_last_reading():
    """Read again after a change, a host whose option manager faults keeps the DSNRO it had (the
    mirror carries it over to the new topology); the fault is counted."""
    faults = HostFaults(None, "vc")
    topo = _host("esx01", 1)
    topo.inventory.dsnro = 32
    topo.inventory.adapters["vmhba60"].link_speed_bytes_per_second = 2.5e9
    discovery.read_settings(topo, Stub({"opt-esx01": GONE, "iscsi-esx01": TimeoutError()}), faults)
    assert topo.inventory.dsnro == 32
    assert topo.inventory.adapters["vmhba60"].link_speed_bytes_per_second == 2.5e9
    assert faults.errors("esx01") == {"QueryOptions": 1, "QueryBoundVnics": 1}


class Client:
    """client.call(fn) -> fn(content), counting the calls."""

    def __init__(self):
        self.calls = 0

    def call(self, fn, *args):
        self.calls += 1
        return fn(None, *args)


def test_a_reread_several_hosts_share_is_split_when_one_faults(monkeypatch):
    """RetrievePropertiesEx faults whole when one of its hosts faults (gone since, no permission):
    the hosts are asked one by one, the one that faults counts it and keeps its topology."""
    asked = []

    def retrieve(content, moids):
        asked.append(list(moids))
        if "host-2" in moids:
            raise vmodl.fault.ManagedObjectNotFound(msg="gone", obj=vim.HostSystem("host-2"))
        return [(moid, {"name": moid}) for moid in moids]

    monkeypatch.setattr(discovery, "retrieve_hosts", retrieve)
    store = Store()
    follower = Follower(Client(), TargetConfig(name="vc", url="https://vc"), lambda delta, mirror: None, HostFaults(store, "vc"))
    follower.mirror = Mirror(None)
    for moid, name in (("host-1", "esx01"), ("host-2", "esx02"), ("host-3", "esx03")):
        follower.mirror.entities[moid] = Entity("HostSystem", name=name)
    found, failed = follower._read_hosts(["host-1", "host-2", "host-3"])
    assert asked == [["host-1", "host-2", "host-3"], ["host-1"], ["host-2"], ["host-3"]]
    assert sorted(found) == ["host-1", "host-3"] and failed == {"host-2"}  # host-2 is read again later
    health = {name: (r.up, r.errors) for (kind, name), r in store.health.items() if kind == "vsphere_host"}
    assert health == {
        "esx01": (1, {"RetrievePropertiesEx": 0}),
        "esx02": (0, {"RetrievePropertiesEx": 1}),
        "esx03": (1, {"RetrievePropertiesEx": 0}),
    }
    asked.clear()
    assert follower._read_hosts(["host-1", "host-3"]) == ({"host-1": {"name": "host-1"}, "host-3": {"name": "host-3"}}, set())
    assert asked == [["host-1", "host-3"]]


def test_a_reread_fails_whole_when_the_server_does(monkeypatch):
    def retrieve(content, moids):
        raise ConnectionResetError("reset")

    monkeypatch.setattr(discovery, "retrieve_hosts", retrieve)
    follower = Follower(Client(), TargetConfig(name="vc", url="https://vc"), lambda delta, mirror: None, HostFaults(None, "vc"))
    follower.mirror = Mirror(None)
    with pytest.raises(ConnectionResetError):
        follower._read_hosts(["host-1", "host-2"])
    with pytest.raises(ConnectionResetError):
        follower._read_hosts(["host-1"])


def test_esxcli_failing_on_a_host_is_counted_every_time_and_logged_once(caplog):
    """Through the shared FaultLog (exporter.esxcli.health): a cause per command and reason, logged
    when it starts or its message changes, its end once, when a refresh that failed nowhere lacks it."""
    target = VsphereTarget(TargetConfig(name="vc", url="https://vc"))
    gone = [("RetrieveManagedMethodExecuter", "failed", "The object 'vim.HostSystem:host-9' has already been deleted")]
    busy = [("storage nmp device list", "failed", "hostd busy")]
    with caplog.at_level(logging.INFO, logger="exporter.vsphere.source"):
        for _ in range(4):
            assert target._esxcli_problems("esx09", gone)
        target._esxcli_problems("esx09", busy)  # the executer answered; a command failed
        target._esxcli_problems("esx09", busy)
        target._esxcli_problems("esx09", [("storage nmp device list", "failed", "hostd gone")])  # another message
        assert not target._esxcli_problems("esx09", [])
        assert not target._esxcli_problems("esx09", [])
        for _ in range(2):
            target._esxcli_problems("esx10", [("storage core device list", "bad_line", "line 3: no colon")] * 2)
    where = "vsphere target vc: esxcli on"
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            f"{where} esx09: RetrieveManagedMethodExecuter failed: The object 'vim.HostSystem:host-9' has already been deleted",
        ),
        ("WARNING", f"{where} esx09: storage nmp device list failed: hostd busy"),
        ("WARNING", f"{where} esx09: storage nmp device list failed: hostd gone"),
        ("INFO", f"{where} esx09: RetrieveManagedMethodExecuter answers again"),
        ("INFO", f"{where} esx09: storage nmp device list answers again"),
        ("WARNING", f"{where} esx10: storage core device list: line 3: no colon (and 1 more)"),
    ]
    health = target.store.health
    assert (health[("esxcli", "esx09")].up, health[("esxcli", "esx09")].errors) == (
        1,
        {"RetrieveManagedMethodExecuter/failed": 4, "storage nmp device list/failed": 3},
    )
    assert health[("esxcli", "esx10")].errors == {"storage core device list/bad_line": 4}
    target._forget({"esx09"})
    assert ("esxcli", "esx09") not in target.store.health
    target._esxcli_problems("esx09", busy)  # a host that came back is counted afresh, its fault new
    assert target.store.health[("esxcli", "esx09")].errors == {"storage nmp device list/failed": 1}
    assert caplog.records[-1].getMessage() == f"{where} esx09: storage nmp device list failed: hostd busy"


def test_a_host_call_health_record_is_on_its_targets_probe():
    store = Store()
    HostFaults(store, "vc-a").failed("esx01", "QueryOptions", "ManagedObjectNotFound: gone")
    assert ("vsphere_host", "esx01") in store.view("vc-a").health
    assert ("vsphere_host", "esx01") not in store.view("vc-b").health


class PerfClient:
    """client.call for QueryPerf (soap.query_perf_csv replaced by query): a call that names a
    refusing entity faults whole, as vCenter's does."""

    def __init__(self, refusing: dict):
        self.refusing = refusing  # moid -> VsphereError
        self.asked: list[list[str]] = []

    def call(self, fn):
        return fn(SimpleNamespace(perfManager=None))

    def query(self, perf_manager, specs, interval):
        moids = [spec.entity._moId for spec in specs]
        self.asked.append(moids)
        for moid in moids:
            if moid in self.refusing:
                raise self.refusing[moid]
        return [soap.EntityCSV(moid, "20,2026-11-27T10:00:00Z", []) for moid in moids]


def test_a_host_whose_query_perf_faults_is_that_hosts_failure(monkeypatch):
    refusing = {
        "host-2": VsphereError("Unable to communicate with the remote host, since it is disconnected.", True, "HostNotConnected"),
        "vm-9": VsphereError("The object has already been deleted", True, "ManagedObjectNotFound"),
    }
    client = PerfClient(refusing)
    monkeypatch.setattr(soap, "query_perf_csv", client.query)
    specs = [perf.QuerySpec(vim.HostSystem(moid), (1,)) for moid in ("host-1", "host-2", "host-3")]
    specs.append(perf.QuerySpec(vim.VirtualMachine("vm-9"), (1,)))
    gone, failures = [], []
    results, errors = perf.query(client, [specs], 1, gone, failures)
    assert client.asked == [["host-1", "host-2", "host-3", "vm-9"], ["host-1"], ["host-2"], ["host-3"], ["vm-9"]]
    assert sorted(results) == ["host-1", "host-3"] and errors == [] and gone == ["vm-9"]
    assert failures == [("host-2", "HostNotConnected: Unable to communicate with the remote host, since it is disconnected.")]
    client = PerfClient({"host-2": VsphereError("timed out")})  # no answer: the call's failure, not the host's
    monkeypatch.setattr(soap, "query_perf_csv", client.query)
    results, errors = perf.query(client, [specs[:2]], 1, [], failures := [])
    assert (results, errors, failures) == ({}, ["timed out"], [])


MISSING = """<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soapenv:Body>
<WaitForUpdatesExResponse xmlns="urn:vim25"><returnval><version>1</version><filterSet><filter type="PropertyFilter">f-1</filter>
<objectSet><kind>enter</kind><obj type="HostSystem">host-1</obj>
<changeSet><name>hardware.cpuInfo.hz</name><op>assign</op><val xsi:type="xsd:long">2100000000</val></changeSet>
<missingSet><path>config.storageDevice.scsiLun</path><fault><fault xsi:type="NoPermission"><object type="HostSystem">host-1</object>
<privilegeId>System.Read</privilegeId></fault><localizedMessage>Permission to perform this operation was denied.</localizedMessage></fault></missingSet>
</objectSet></filterSet></returnval></WaitForUpdatesExResponse></soapenv:Body></soapenv:Envelope>"""


def test_a_property_the_server_could_not_read_is_its_hosts_fault(caplog):
    """missingSet in the update stream (a permission missing on one host, a property that
    faulted): the property reads as absent, the fault is the host's (call WaitForUpdatesEx) until
    the property comes, and a later walk that reads it whole ends it too."""
    (update,) = parse_update_set(ET.fromstring(MISSING), {"f-1": LUNS}).updates
    assert update.changes["config.storageDevice.scsiLun"] is None
    assert update.faults == {"config.storageDevice.scsiLun": "NoPermission: Permission to perform this operation was denied."}
    store = Store()
    faults = HostFaults(store, "vc")

    def follower():
        f = Follower(Client(), TargetConfig(name="vc", url="https://vc"), lambda delta, mirror: None, faults)
        f.mirror = Mirror(None)
        f.mirror.entities["host-1"] = Entity("HostSystem", name="esx01")
        return f

    walk = follower()
    with caplog.at_level(logging.INFO, logger="exporter.vsphere.hostfaults"):
        walk._unreadable([update])
        walk._unreadable([ObjectUpdate(LUNS, "modify", "HostSystem", "host-1", {"hardware.cpuInfo.hz": None})])
        assert store.health[("vsphere_host", "esx01")].up == 0  # another property came: still missing
        walk._unreadable([ObjectUpdate(LUNS, "modify", "HostSystem", "host-1", {"config.storageDevice.scsiLun": None})])
        assert store.health[("vsphere_host", "esx01")].up == 1
        walk._unreadable([update])  # missing again
        follower()._unreadable([ObjectUpdate(LUNS, "enter", "HostSystem", "host-1", {"config.storageDevice.scsiLun": None})])
    record = store.health[("vsphere_host", "esx01")]
    assert (record.up, record.errors) == (1, {"WaitForUpdatesEx": 2})
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "vsphere target vc: host esx01: WaitForUpdatesEx failed: config.storageDevice.scsiLun: "
            "NoPermission: Permission to perform this operation was denied. (the rest of the target goes on)",
        ),
        ("INFO", "vsphere target vc: host esx01: WaitForUpdatesEx answers again"),
        (
            "WARNING",
            "vsphere target vc: host esx01: WaitForUpdatesEx failed: config.storageDevice.scsiLun: "
            "NoPermission: Permission to perform this operation was denied. (the rest of the target goes on)",
        ),
        ("INFO", "vsphere target vc: host esx01: WaitForUpdatesEx answers again"),
    ]


def test_a_vms_unreadable_device_list_is_its_hosts_fault():
    store = Store()
    f = Follower(Client(), TargetConfig(name="vc", url="https://vc"), lambda delta, mirror: None, HostFaults(store, "vc"))
    f.mirror = Mirror(None)
    f.mirror.entities["host-1"] = Entity("HostSystem", name="esx01")
    f.mirror.entities["vm-1"] = Entity("VirtualMachine", name="db01", host="host-1")
    f.mirror.entities["vm-2"] = Entity("VirtualMachine", name="web01", host="host-1")
    path = "config.hardware.device"
    f._unreadable([ObjectUpdate(DEVICES, "enter", "VirtualMachine", "vm-1", {path: None}, {path: "NoPermission: denied"})])
    f._unreadable([ObjectUpdate(DEVICES, "enter", "VirtualMachine", "vm-2", {path: None})])  # another VM's: not the fault's end
    assert store.health[("vsphere_host", "esx01")].up == 0
    f._unreadable([ObjectUpdate(DEVICES, "leave", "VirtualMachine", "vm-1", {})])  # the VM went: so did its fault
    assert store.health[("vsphere_host", "esx01")].up == 1
    assert store.health[("vsphere_host", "esx01")].errors == {"WaitForUpdatesEx": 1}


def test_a_silent_server_is_not_a_hosts_fault():
    """One host's call timing out is its own; every call timing out in a row is the server's
    silence: raised (the walk fails as before) instead of waiting out each host's timeout."""
    from exporter.vsphere.hostfaults import TIMEOUTS_IN_A_ROW

    faults = HostFaults(None, "vc")
    stub = Stub({f"opt-esx{i:02}": TimeoutError("timed out") for i in range(20)} | {"opt-ok": _dsnro(32)})
    for i in range(TIMEOUTS_IN_A_ROW):
        discovery.read_settings(_host(f"esx{i:02}"), stub, faults)
    discovery.read_settings(_host("ok"), stub, faults)  # an answer: the server is there
    for i in range(TIMEOUTS_IN_A_ROW):
        discovery.read_settings(_host(f"esx{i:02}"), stub, faults)
    with pytest.raises(TimeoutError):
        discovery.read_settings(_host("esx19"), stub, faults)
    assert sum(n for (_, call), n in faults.faults.snapshot().items() if call == "QueryOptions") == 2 * TIMEOUTS_IN_A_ROW


def test_the_targets_own_failure_is_counted_every_time_and_logged_once(caplog):
    """The target's outage (VsphereTarget._failed/_ok) through the shared FaultLog: every failure
    counted by phase, one line per message, 'reachable again' once."""
    target = VsphereTarget(TargetConfig(name="vc", url="https://vc"))
    with caplog.at_level(logging.INFO, logger="exporter.vsphere.source"):
        target._ok()  # never failed: nothing to say
        for _ in range(3):
            target._failed("discovery", "cannot log in: connection refused")
        target._failed("collection", "cannot log in: connection refused")  # the same cause, another phase
        target._failed("collection", "NotAuthenticated")
        assert (target.up, target.error) == (0, "NotAuthenticated")
        target._ok()
        target._ok()
        assert (target.up, target.error) == (1, "")
        target._failed("collection", "NotAuthenticated")  # failing again after it answered: new
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("ERROR", "vsphere target vc: discovery failed: cannot log in: connection refused"),
        ("ERROR", "vsphere target vc: collection failed: NotAuthenticated"),
        ("INFO", "vsphere target vc: reachable again"),
        ("ERROR", "vsphere target vc: collection failed: NotAuthenticated"),
    ]
    assert target.errors == {"discovery": 3, "collection": 3}
