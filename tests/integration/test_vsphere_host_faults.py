"""One host's failing call stays that host's (issue #36, goal 3), against the storage simulator
(simulators/storagesim) with managers taken away as real vCenters have them (simulators/storagesim/faults.go): four
hosts, esx02 and esx04 without an advanced-option manager (QueryOptions: ManagedObjectNotFound),
esx01 without an iSCSI manager (QueryBoundVnics: the same) though it has a software iSCSI adapter.

A real `serve` process is scraped: every host's LUNs, paths, datastores and VMs are on /metrics,
the target stays up, DSNRO's source is `none` where its manager failed, the per-host error
counter counts each call, and the log has one WARNING per host and call (naming the host, the
call and vCenter's fault), no ERROR and no traceback, however many walks.
"""

from __future__ import annotations

import copy
import json
import re
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from simulators.storagesim.sims import FIXTURE, PASSWORD, USER, StorageSim
from tests.support.servers import Exporter
from tests.support.vsphere_api import connect, named

pytestmark = pytest.mark.integration

NO_OPTIONS = ("esx02.lab.local", "esx04.lab.local")
NO_ISCSI = "esx01.lab.local"  # its vmhba64 is a software iSCSI adapter bound to two vmnics
HOSTS = ("esx01.lab.local", "esx02.lab.local", "esx03.lab.local", "esx04.lab.local")
WITHIN = 60.0  # first walk, first collection, on a shared 2-core machine


def four_hosts(path) -> dict:
    """The project's fixture with a fourth host: a copy of esx03 (its own VMs' names)."""
    fixture = json.loads(FIXTURE.read_text())
    extra = copy.deepcopy(next(h for h in fixture["hosts"] if h["name"] == "esx03.lab.local"))
    extra["name"] = "esx04.lab.local"
    for vm in extra.get("vms", []):
        vm["name"] = vm["name"].rstrip("0123456789") + "04"
        vm.pop("instance_uuid", None)
    fixture["hosts"].append(extra)
    path.write_text(json.dumps(fixture))
    return fixture


def expected(fixture: dict) -> dict:
    """host -> what its fixture says /metrics shows: LUNs, paths (how many), datastores, running VMs."""
    out = {}
    for host in fixture["hosts"]:
        luns = host["luns"]
        out[host["name"]] = {
            "luns": {lun["name"] for lun in luns},
            "paths": sum(len(lun["paths"]) for lun in luns),
            "datastores": {lun["datastore"] for lun in luns if lun.get("datastore")} | {n["name"] for n in host.get("nfs", [])},
            "vms": {vm["name"] for vm in host.get("vms", []) if not vm.get("powered_off")},
        }
    return out


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sim")
    fixture = tmp / "four-hosts.json"
    four_hosts(fixture)
    sim = StorageSim(tmp, "-no-option-manager", ",".join(NO_OPTIONS), "-no-iscsi-manager", NO_ISCSI, fixture=fixture)
    sim.fixture = json.loads(fixture.read_text())
    yield sim
    sim.stop()


def test_the_simulator_answers_a_gone_manager_as_vcenter_does(sim):
    """A call on a manager that is gone answers vmodl.fault.ManagedObjectNotFound with obj, the
    reference asked for; the other hosts' managers answer."""
    from pyVim.connect import Disconnect
    from pyVmomi import vim, vmodl

    si = connect(sim)
    try:
        content = si.RetrieveContent()
        hosts = {name: named(content, vim.HostSystem, name) for name in HOSTS}
        for name in NO_OPTIONS:
            manager = hosts[name].configManager.advancedOption  # still listed, as vCenter lists it
            with pytest.raises(vmodl.fault.ManagedObjectNotFound) as fault:
                manager.QueryOptions("Disk.SchedNumReqOutstanding")
            assert fault.value.obj._moId == manager._moId and fault.value.obj._wsdlName == "OptionManager"
        manager = hosts[NO_ISCSI].configManager.iscsiManager
        with pytest.raises(vmodl.fault.ManagedObjectNotFound) as fault:
            manager.QueryBoundVnics(iScsiHbaName="vmhba64")
        assert fault.value.obj._moId == manager._moId
        for name in ("esx01.lab.local", "esx03.lab.local"):
            (option,) = hosts[name].configManager.advancedOption.QueryOptions("Disk.SchedNumReqOutstanding")
            assert option.value == 32
    finally:
        Disconnect(si)


class Serve:
    """`serve` against the simulator, its log, and its /metrics parsed."""

    def __init__(self, sim, tmp, *args):
        secret = tmp / "password"
        secret.write_text(PASSWORD + "\n")
        secret.chmod(0o600)
        self.log = tmp / "exporter.log"
        base = ["--vsphere", sim.url, "--vsphere.user", USER, "--vsphere.password-file", str(secret)]
        self.exporter = Exporter(*base, "--vsphere.ca-file", str(sim.cert), *args, log_path=self.log)
        self.samples: dict = {}

    def scrape(self) -> dict:
        self.samples = {
            (s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(self.exporter.metrics())
            for s in family.samples
        }
        return self.samples

    def value(self, name: str, **labels) -> float | None:
        return self.samples.get((name, frozenset(labels.items())))

    def labels(self, name: str, **labels) -> list[dict]:
        want = set(labels.items())
        return [dict(pairs) for n, pairs in self.samples if n == name and want <= pairs]

    def until(self, check, what: str, within: float = WITHIN) -> None:
        deadline = time.monotonic() + within
        while True:
            self.scrape()
            if check(self):
                return
            if time.monotonic() > deadline:
                pytest.fail(f"{what}: not in /metrics within {within:.0f}s\n--- log ---\n{self.log.read_text()[-3000:]}")
            time.sleep(0.5)

    def stop(self) -> str:
        self.exporter.stop()
        text = self.log.read_text()
        assert PASSWORD not in text
        return text


def warnings_of(log: str, host: str, call: str) -> list[str]:
    return [line for line in log.splitlines() if "WARNING" in line and f"host {host}: {call} failed" in line]


def every_vm_collected(serve: Serve) -> bool:
    want = expected(serve.fixture)
    return all(
        serve.value("esxi_vm_reads_total", host=host, vm=vm) is not None for host, what in want.items() for vm in what["vms"]
    )


@pytest.fixture(scope="module")
def following(sim, tmp_path_factory):
    """Default settings (updates followed), esxcli off: DSNRO is known from the host option alone."""
    serve = Serve(sim, tmp_path_factory.mktemp("following"), "--no-vsphere.esxcli")
    serve.fixture = sim.fixture
    try:
        serve.until(every_vm_collected, "every VM's samples")
        yield serve
    finally:
        serve.stop()


def test_every_host_is_whole_and_the_target_up(following):
    s = following
    assert [v for (n, _), v in s.samples.items() if n == "esxi_vsphere_up"] == [1.0]
    for host, want in expected(s.fixture).items():
        assert {x["device"] for x in s.labels("esxi_lun_info", host=host)} == want["luns"], host
        assert len(s.labels("esxi_path_info", host=host)) == want["paths"], host
        assert {x["datastore"] for x in s.labels("esxi_datastore_info", host=host)} == want["datastores"], host
        assert {x["vm"] for x in s.labels("esxi_vm_disk_info", host=host)} == want["vms"], host
        assert s.value("esxi_vsphere_samples_total", host=host) >= 1, host
    assert s.value("esxi_vsphere_objects", target="127.0.0.1", kind="host") == 4


def test_dsnro_unknown_where_the_option_manager_failed(following):
    s = following
    for host in HOSTS:
        source = {
            x["source"] for x in s.labels("esxi_host_dsnro_source", host=host) if s.value("esxi_host_dsnro_source", **x) == 1
        }
        assert source == ({"none"} if host in NO_OPTIONS else {"host_option"}), host
        assert (s.value("esxi_host_dsnro", host=host) is None) == (host in NO_OPTIONS), host
    assert s.value("esxi_host_dsnro", host="esx01.lab.local") == 32


def test_iscsi_link_unknown_where_the_iscsi_manager_failed(following):
    s = following
    assert s.labels("esxi_adapter_info", host=NO_ISCSI, adapter="vmhba64")  # the adapter is there
    assert s.value("esxi_adapter_link_speed_bytes_per_second", host=NO_ISCSI, adapter="vmhba64") is None
    assert s.value("esxi_adapter_link_speed_bytes_per_second", host=NO_ISCSI, adapter="vmhba2") > 0  # FC: from its properties


def test_each_failing_call_is_counted_on_its_host(following):
    s = following
    errors = {
        (x["host"], x["call"]): s.value("esxi_vsphere_host_errors_total", **x) for x in s.labels("esxi_vsphere_host_errors_total")
    }
    assert errors == {
        ("esx01.lab.local", "QueryOptions"): 0,
        ("esx01.lab.local", "QueryBoundVnics"): 1,  # one call: the manager failed, its other adapters are not asked
        ("esx02.lab.local", "QueryOptions"): 1,
        ("esx03.lab.local", "QueryOptions"): 0,
        ("esx04.lab.local", "QueryOptions"): 1,
        **{(host, "QueryPerf"): 0 for host in HOSTS},  # every host's samples were read
        **{(host, "WaitForUpdatesEx"): 0 for host in HOSTS},  # and its properties
    }
    assert {host: s.value("esxi_vsphere_host_up", host=host) for host in HOSTS} == {
        "esx01.lab.local": 0,
        "esx02.lab.local": 0,
        "esx03.lab.local": 1,
        "esx04.lab.local": 0,
    }


def test_the_log_names_host_call_and_fault_once(following):
    following.exporter.stop()
    log = following.log.read_text()
    assert "ERROR" not in log and "Traceback" not in log, log[-3000:]
    for host, call, manager in [
        ("esx02.lab.local", "QueryOptions", "OptionManager"),
        ("esx04.lab.local", "QueryOptions", "OptionManager"),
        (NO_ISCSI, "QueryBoundVnics", "IscsiManager"),
    ]:
        lines = warnings_of(log, host, call)
        assert len(lines) == 1, (host, call, lines)
        assert "ManagedObjectNotFound" in lines[0] and re.search(rf"{manager}:\S+", lines[0]), lines[0]
    assert not warnings_of(log, "esx03.lab.local", "QueryOptions")


def test_a_fault_is_logged_once_across_walks(sim, tmp_path):
    """Without updates every walk reads each host's settings again: the counter counts every
    walk's failure, the log says it once. esxcli (on) still knows every host's DSNRO per device."""
    serve = Serve(sim, tmp_path, "--no-vsphere.updates", "--vsphere.discovery-interval", "2s")
    serve.fixture = sim.fixture
    try:
        serve.until(
            lambda s: (
                (s.value("esxi_vsphere_walks_total", target="127.0.0.1", reason="scheduled") or 0) >= 3
                and (s.value("esxi_vsphere_host_errors_total", host="esx02.lab.local", call="QueryOptions") or 0) >= 4
            ),
            "four walks",
        )
        serve.until(every_vm_collected, "every VM's samples")
        assert [v for (n, _), v in serve.samples.items() if n == "esxi_vsphere_up"] == [1.0]
        for host in NO_OPTIONS:
            assert serve.value("esxi_host_dsnro_source", host=host, source="device") == 1, host
    finally:
        log = serve.stop()
    assert "ERROR" not in log and "Traceback" not in log, log[-3000:]
    for host in NO_OPTIONS:
        assert len(warnings_of(log, host, "QueryOptions")) == 1, log[-3000:]
    assert len(warnings_of(log, NO_ISCSI, "QueryBoundVnics")) == 1


def test_a_host_whose_query_perf_faults_counts_it_and_says_it_once(sim, tmp_path, caplog):
    """A host vCenter no longer knows (removed after the last walk, --no-vsphere.updates): the
    QueryPerf call that names it faults whole, its hosts are asked one by one; the fault is that
    host's (call QueryPerf), counted every collection, logged once; the others' samples come."""
    from exporter.store import model as m
    from exporter.vsphere import TargetConfig, VsphereTarget, discovery

    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(secret), ca_file=str(sim.cert))
    target = VsphereTarget(config)
    caplog.set_level("INFO", logger="exporter.vsphere")
    try:
        assert target.discover(), target.error
        gone = discovery.HostTopology(
            ref=discovery.vim.HostSystem("host-gone"), name="gone.lab.local", inventory=m.Inventory("gone")
        )
        target.topology = discovery.Topology(hosts=[*target.topology.hosts, gone])
        for _ in range(3):
            assert target.collect(now=time.time()), target.error
        assert set(target.samples) == set(HOSTS) and target.up == 1
    finally:
        target.client.close()
    assert target.host_faults.errors("gone.lab.local") == {"QueryPerf": 3}
    assert target.errors["collection"] == 3  # failed QueryPerf calls, as they always were counted
    assert {host: target.host_faults.errors(host)["QueryPerf"] for host in HOSTS} == dict.fromkeys(HOSTS, 0)
    said = [r.getMessage() for r in caplog.records if "QueryPerf failed" in r.getMessage()]
    assert len(said) == 1 and "host gone.lab.local" in said[0] and "InvalidArgument" in said[0], said
