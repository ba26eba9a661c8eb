"""Hosts vCenter lists but cannot read, and volumes that are no datastores (issue 36), on the
storage simulator (simulators/storagesim/hoststate.go):

- a host vCenter lists as notResponding from the start keeps its config properties (stale) and
  answers every manager and esxcli call with vmodl.fault.HostNotReachable; the exporter shows it
  in esxi_host_connection_state and nothing else of it; a host in maintenance mode is shown so;
- `serve` follows a host that stops responding (its storage series go as for a host that left,
  its state stays) and comes back (its series return), and maintenance mode entered and left
  through the API, each within one collection interval;
- the vfat boot banks and OSDATA every real ESXi 7/8 host mounts, and the nameless vfat volumes of
  6.7, are in the hosts' mount lists and in no datastore family.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import pytest
from pyVmomi import vim, vmodl

from exporter.esxcli.inventory import EsxcliError
from exporter.vsphere import discovery, esxcli, soap
from simulators.storagesim.sims import FIXTURE, PASSWORD, USER, StorageSim
from tests.support.promtext import samples, value
from tests.support.servers import Exporter
from tests.support.vsphere_api import connect, named, wait
from tests.support.vsphere_api import dump as vsphere_dump

pytestmark = pytest.mark.integration
ESX01, ESX02, ESX03 = "esx01.lab.local", "esx02.lab.local", "esx03.lab.local"
INTERVAL, SLACK = 20.0, 15.0  # serve's default collection interval; a collection slowed by the parallel suite on a 2-core machine
STATE_FAMILIES = {"esxi_host_connection_state", "esxi_host_maintenance_mode"}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """The project's fixture with esx03 not responding from the start and esx02 in maintenance
    mode (its boot volumes as they are: 7.0 on esx01 and esx02, 6.7 on esx03)."""
    tmp = tmp_path_factory.mktemp("hoststate")
    fixture = json.loads(FIXTURE.read_text())
    hosts = {host["name"]: host for host in fixture["hosts"]}
    hosts[ESX03]["connection_state"] = "notResponding"
    hosts[ESX02]["maintenance"] = True
    path = tmp / "fixture.json"
    path.write_text(json.dumps(fixture))
    sim = StorageSim(tmp / "sim", fixture=path)
    yield sim
    sim.stop()


@pytest.fixture(scope="module")
def password(tmp_path_factory):
    path = tmp_path_factory.mktemp("secret") / "password"
    path.write_text(PASSWORD + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def content(sim):
    from pyVim.connect import Disconnect

    si = connect(sim)
    yield si.RetrieveContent()
    Disconnect(si)


def set_state(sim, host: str, state: str) -> None:
    """The simulator's control: vCenter's view of a host changes (no vSphere API does this)."""
    body = urllib.parse.urlencode({"host": host, "state": state}).encode()
    request = urllib.request.Request(sim.url.replace("/sdk", "/storagesim/hoststate"), data=body, method="POST")
    context = ssl.create_default_context(cafile=str(sim.cert))
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        assert response.status == 204


def dump(sim, password) -> str:
    proc = vsphere_dump(sim, password)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def families_of(text: str, host: str) -> set[str]:
    return {name for name, labels, _ in samples(text) if labels.get("host") == host}


# --- the simulator answers as vCenter does --------------------------------------------------------
def test_a_host_not_responding_is_listed_with_stale_properties_and_its_calls_fail(content):
    host = named(content, vim.HostSystem, ESX03)
    assert host.runtime.connectionState == "notResponding"
    # vCenter still has its last configuration: the fixture's LUNs and datastores
    luns = {lun.canonicalName for lun in host.config.storageDevice.scsiLun}
    assert {"naa.600a098038303053453f463045727a61", "naa.624a9370b9d3a7c25e7a40e200011b3c"} <= luns
    with pytest.raises(vmodl.fault.HostNotReachable):
        host.configManager.advancedOption.QueryOptions("Disk.SchedNumReqOutstanding")
    with pytest.raises(vmodl.fault.HostNotReachable):
        host.configManager.storageSystem.RefreshStorageSystem()
    with pytest.raises(vmodl.fault.HostNotReachable):
        host.EnterMaintenanceMode_Task(timeout=0)
    # a connected host's managers answer
    other = named(content, vim.HostSystem, ESX01)
    assert other.configManager.advancedOption.QueryOptions("Disk.SchedNumReqOutstanding")[0].value == 32
    assert other.runtime.connectionState == "connected"
    assert named(content, vim.HostSystem, ESX02).runtime.inMaintenanceMode is True


def test_the_method_executer_of_a_host_not_responding_fails_too(content):
    """esxcli (the exporter's vSphere path): vCenter hands out the executer, whose ExecuteSoap
    answers HostNotReachable; a connected host's answers the same call."""
    stub = content.propertyCollector._stub
    words = ["storage", "core", "device", "list"]
    down = esxcli.executer(stub, named(content, vim.HostSystem, ESX03)._moId)
    status, answer = soap.post(stub, soap.envelope(execute_soap(down, words)))
    assert status == 500 and 'xsi:type="HostNotReachable"' in b"".join(answer).decode()
    with pytest.raises(EsxcliError):
        esxcli.run(stub, down, words)
    records, _ = esxcli.run(stub, esxcli.executer(stub, named(content, vim.HostSystem, ESX01)._moId), words)
    assert "naa.600a098038303053453f463045727a61" in {record["device"] for record in records}


def execute_soap(executer: str, words: list[str]) -> str:
    return (
        f'<ExecuteSoap xmlns="urn:vim25"><_this type="ManagedMethodExecuter">{executer}</_this>'
        f"<moid>ha-cli-handler-{'-'.join(words[:-1])}</moid><version>urn:vim25/5.0</version>"
        f"<method>vim.EsxCLI.{'.'.join(words)}</method></ExecuteSoap>"
    )


def test_a_host_disconnected_through_the_api_answers_host_not_connected(content):
    """DisconnectHost_Task (vCenter answers it itself, whatever the host's state): its managers
    answer vmodl.fault.HostNotConnected until ReconnectHost_Task."""
    host = named(content, vim.HostSystem, ESX02)
    wait(host.DisconnectHost_Task())
    try:
        assert host.runtime.connectionState == "disconnected"
        with pytest.raises(vmodl.fault.HostNotConnected):
            host.configManager.advancedOption.QueryOptions("Disk.SchedNumReqOutstanding")
    finally:
        wait(host.ReconnectHost_Task())
    assert host.configManager.advancedOption.QueryOptions("Disk.SchedNumReqOutstanding")[0].value == 64


def test_the_control_refuses_what_is_no_connection_state(sim):
    with pytest.raises(urllib.error.HTTPError) as refused:
        set_state(sim, ESX01, "maintenance")
    assert refused.value.code == 400
    with pytest.raises(urllib.error.HTTPError) as unknown:
        set_state(sim, "esx99.lab.local", "connected")
    assert unknown.value.code == 404


def test_boot_volumes_are_in_the_mount_list_as_a_real_host_has_them(content):
    mounts = named(content, vim.HostSystem, ESX01).config.fileSystemVolume.mountInfo
    system = [(type(m.volume).__name__, m.volume.type, m.volume.name) for m in mounts if m.volume.type == "OTHER"]
    assert sorted(system) == sorted(
        [
            ("vim.host.VmfsVolume", "OTHER", system[0][2]),
            ("vim.host.VfatVolume", "OTHER", "BOOTBANK1"),
            ("vim.host.VfatVolume", "OTHER", "BOOTBANK2"),
        ]
    )
    assert system[0][2].startswith("OSDATA-")
    old = named(content, vim.HostSystem, ESX03).config.fileSystemVolume.mountInfo
    assert [m.volume.name for m in old if isinstance(m.volume, vim.host.VfatVolume)] == ["", "", "", ""]


# --- the exporter ------------------------------------------------------------------------------
def test_dump_shows_every_host_with_its_state_and_only_datastores(sim, password):
    text = dump(sim, password)
    state = {(labels["host"], labels["state"]): v for name, labels, v in samples(text) if name == "esxi_host_connection_state"}
    assert state == {
        (host, s): float(s == ("notResponding" if host == ESX03 else "connected"))
        for host in (ESX01, ESX02, ESX03)
        for s in ("connected", "disconnected", "notResponding")
    }
    assert {h: value(text, "esxi_host_maintenance_mode", host=h) for h in (ESX01, ESX02, ESX03)} == {
        ESX01: 0,
        ESX02: 1,
        ESX03: 0,
    }
    assert families_of(text, ESX03) == STATE_FAMILIES  # nothing read of it: no stale storage series
    assert "esxi_lun_commands_total" in families_of(text, ESX02)  # in maintenance mode, still read
    # only datastores are datastores: no boot bank, OSDATA or nameless volume in any datastore family
    datastores = [labels for name, labels, _ in samples(text) if name.startswith("esxi_datastore_") and "datastore" in labels]
    assert datastores and all(labels["datastore"] for labels in datastores)
    info = {(labels["host"], labels["datastore"]) for name, labels, _ in samples(text) if name == "esxi_datastore_info"}
    assert info == {
        (ESX01, "ds-shared-01"),
        (ESX01, "ds-shared-02"),
        (ESX01, "ds-iscsi-01"),
        (ESX02, "ds-shared-01"),
        (ESX02, "ds-shared-02"),
        (ESX02, "nfs-vm-01"),
        (ESX02, "nfs-iso"),
    }
    assert "BOOTBANK" not in text and "OSDATA" not in text


def test_serve_follows_a_host_that_stops_responding_and_comes_back(sim, password, content, tmp_path):
    """Behind the exporter's back: esx01 stops responding (its storage series go, its state says
    so), comes back (its series return); esx02 leaves maintenance mode and esx01 enters it."""
    log = tmp_path / "exporter.log"
    args = ["--vsphere", sim.url, "--vsphere.user", USER, "--vsphere.password-file", str(password)]
    exporter = Exporter(*args, "--vsphere.ca-file", str(sim.cert), log_path=log)
    try:
        until(exporter, lambda t: value(t, "esxi_lun_commands_total", host=ESX01, device=N1) is not None, "first collection")
        set_state(sim, ESX01, "notResponding")
        text = until(
            exporter,
            lambda t: (
                value(t, "esxi_host_connection_state", host=ESX01, state="notResponding") == 1
                and families_of(t, ESX01) == STATE_FAMILIES
            ),
            "esx01 not responding, its storage series gone",
        )
        assert value(text, "esxi_host_connection_state", host=ESX01, state="connected") == 0
        # the target's own /probe shows its hosts' states (the target is named after its address)
        with urllib.request.urlopen(exporter.url + "/probe?target=127.0.0.1", timeout=10) as response:
            probe = response.read().decode()
        assert value(probe, "esxi_host_connection_state", host=ESX03, state="notResponding") == 1
        assert value(probe, "esxi_host_connection_state", host=ESX01, state="notResponding") == 1
        assert "esxi_lun_commands_total" in families_of(text, ESX02)  # the other hosts stay whole
        set_state(sim, ESX01, "connected")
        until(
            exporter,
            lambda t: (
                value(t, "esxi_host_connection_state", host=ESX01, state="connected") == 1
                and value(t, "esxi_lun_info", host=ESX01, device=N1) == 1
                and value(t, "esxi_lun_commands_total", host=ESX01, device=N1) is not None
            ),
            "esx01 back with its series",
        )
        wait(named(content, vim.HostSystem, ESX02).ExitMaintenanceMode_Task(timeout=0))
        wait(named(content, vim.HostSystem, ESX01).EnterMaintenanceMode_Task(timeout=0))
        until(
            exporter,
            lambda t: (
                value(t, "esxi_host_maintenance_mode", host=ESX02) == 0
                and value(t, "esxi_host_maintenance_mode", host=ESX01) == 1
            ),
            "maintenance mode left and entered",
        )
    finally:
        exporter.stop()
        set_state(sim, ESX01, "connected")
    text = log.read_text()
    assert "Traceback" not in text and PASSWORD not in text


N1 = "naa.600a098038303053453f463045727a61"  # ds-shared-01, on every host


def until(exporter, check, what: str, within: float = INTERVAL + SLACK) -> str:
    start = time.monotonic()
    while True:
        text = exporter.metrics()
        if check(text):
            return text
        if time.monotonic() - start > within:
            pytest.fail(f"{what}: not in /metrics within {within:.0f}s")
        time.sleep(0.25)


# --- which volumes are datastores, as real hosts report them ---------------------------------------
NS = 'xmlns="urn:vim25" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'


@pytest.mark.parametrize(
    ("xsi", "kind", "name", "kept"),
    [
        ("HostVmfsVolume", "VMFS", "ds-01", True),
        ("HostNasVolume", "NFS", "nfs-01", True),
        ("HostNasVolume", "NFS41", "nfs41-01", True),
        ("HostVsanVolume", "vsan", "vsanDatastore", True),
        ("HostVvolVolume", "VVOL", "vvol-01", True),
        ("HostPMemVolume", "PMEM", "PMemDS-01", True),
        ("HostVfatVolume", "OTHER", "BOOTBANK1", False),  # ESXi 7/8 boot bank
        ("HostVfatVolume", "OTHER", "", False),  # ESXi 6.x boot bank, locker, scratch
        ("HostVmfsVolume", "OTHER", "OSDATA-6935c9aa-fa46047b-2596-005056b36949", False),  # ESXi 7/8 (API)
        ("HostVmfsVolume", "VMFS-L", "OSDATA-6935c9aa", False),
        ("HostVmfsVolume", "VMFSOS", "LOCKER-688129d7", False),  # esxcli's name for it
        ("HostVffsVolume", "VFFS", "vffs-01", False),  # a vFlash read cache
        ("HostVmfsVolume", "VMFS", "", False),  # nameless: no datastore
    ],
)
def test_which_volumes_are_datastores(xsi, kind, name, kept):
    volume = ET.fromstring(f'<volume {NS} xsi:type="{xsi}"><type>{kind}</type><name>{name}</name></volume>')
    assert discovery.is_datastore(volume) is kept
