"""Storage I/O Control end to end: the storage simulator (simulators/storagesim/sioc.go, the fixture's
"sioc" section) -> dump --vsphere -> exact values in the exposition.

ds-shared-01 (esx01, esx02, esx03): SIOC on, manual, 30 ms, its counters under the VMFS uuid (as
ESXi names them); ds-shared-02 (esx01, esx02): SIOC off, automatic at 80 % of peak, 25 ms, its
counters under the datastore url (as govmomi's simulator names them); nfs-vm-01: no
iormConfiguration at all (as from vSphere 8.0 U3); ds-iscsi-01 and the others: none either.
Raw values: latencies in microseconds, the active time in hundredths of a percent.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyVim.connect import SmartConnect
from pyVmomi import vim, vmodl

from simulators.storagesim.sims import FIXTURE, PASSWORD, USER, StorageSim
from tests.support.servers import ROOT, Exporter, exporter_env
from tests.support.vsphere_api import dump as vsphere_dump

pytestmark = pytest.mark.integration

N1 = "naa.600a098038303053453f463045727a61"  # ds-shared-01's LUN, on all three hosts
N2 = "naa.600a098038303053453f463045727a62"  # ds-shared-02's LUN, on esx01 and esx02


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("vc"))
    password = tmp_path_factory.mktemp("secrets") / "vsphere"
    password.write_text(PASSWORD + "\n")
    sim.args = ["--vsphere", sim.url, "--vsphere.user", USER, "--vsphere.password-file", str(password)]
    sim.args += ["--vsphere.ca-file", str(sim.cert)]
    yield sim
    sim.stop()


def parse(text: str) -> dict:
    return {
        (s.name, frozenset(s.labels.items())): s.value for family in text_string_to_metric_families(text) for s in family.samples
    }


@pytest.fixture(scope="module")
def samples(sim):
    proc = subprocess.run(
        [sys.executable, "-m", "exporter", "dump", *sim.args],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return parse(proc.stdout)


SIOC_FAMILIES = (
    "esxi_datastore_sioc_normalized_latency_seconds",
    "esxi_datastore_sioc_queue_depth",
    "esxi_datastore_sioc_active_ratio",
    "esxi_datastore_vm_observed_latency_seconds",
    "esxi_datastore_sioc_iops",
    "esxi_datastore_sioc_read_iops",
    "esxi_datastore_sioc_write_iops",
    "esxi_datastore_sioc_outstanding_reads",
    "esxi_datastore_sioc_outstanding_writes",
    "esxi_datastore_sioc_config_reported",
    "esxi_datastore_sioc_enabled",
    "esxi_datastore_sioc_stats_enabled",
    "esxi_datastore_sioc_threshold_mode",
    "esxi_datastore_sioc_threshold_seconds",
    "esxi_datastore_sioc_peak_throughput_ratio",
    "esxi_lun_sioc_queue_depth",
)


def test_serve_shows_what_dump_shows(sim, samples, tmp_path):
    """serve (its discovery, its collection loop and its iormConfiguration reading) exports every
    SIOC series dump does, with the same values."""
    exporter = Exporter(*sim.args, log_path=tmp_path / "exporter.log")
    try:
        deadline, served = time.monotonic() + 60, {}
        while time.monotonic() < deadline:
            served = parse(exporter.metrics())
            if ("esxi_lun_sioc_queue_depth", frozenset({"host": "esx02.lab.local", "device": N1}.items())) in served and any(
                name == "esxi_datastore_sioc_enabled" for name, _ in served
            ):
                break
            time.sleep(0.5)
    finally:
        exporter.stop()
    for family in SIOC_FAMILIES:
        dumped = series(samples, family)
        assert dumped, family
        assert series(served, family) == dumped, family


def series(samples: dict, name: str) -> dict[frozenset, float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def one(samples: dict, name: str, **labels) -> float:
    return samples[(name, frozenset(labels.items()))]


def test_sioc_counters_by_uuid_exact(samples):
    ds = {"host": "esx01.lab.local", "datastore": "ds-shared-01"}
    assert one(samples, "esxi_datastore_sioc_normalized_latency_seconds", **ds) == pytest.approx(0.042)  # 42,000 us
    assert one(samples, "esxi_datastore_sioc_queue_depth", **ds) == 24
    assert one(samples, "esxi_datastore_sioc_active_ratio", **ds) == pytest.approx(0.755)  # 7,550 hundredths of a percent
    assert one(samples, "esxi_datastore_vm_observed_latency_seconds", **ds) == pytest.approx(0.0455)
    assert one(samples, "esxi_datastore_sioc_iops", **ds) == 1800
    assert one(samples, "esxi_datastore_sioc_read_iops", **ds) == 1100
    assert one(samples, "esxi_datastore_sioc_write_iops", **ds) == 700
    assert one(samples, "esxi_datastore_sioc_outstanding_reads", **ds) == 14
    assert one(samples, "esxi_datastore_sioc_outstanding_writes", **ds) == 6
    # The datastore's I/O counters, served under the same uuid, are still there beside them.
    assert ("esxi_datastore_reads_total", frozenset(ds.items())) in samples
    depths = series(samples, "esxi_datastore_sioc_queue_depth")
    assert depths[frozenset({"host": "esx02.lab.local", "datastore": "ds-shared-01"}.items())] == 16
    assert depths[frozenset({"host": "esx03.lab.local", "datastore": "ds-shared-01"}.items())] == 64


def test_sioc_counters_by_url_exact(samples):
    ds = {"host": "esx01.lab.local", "datastore": "ds-shared-02"}
    assert one(samples, "esxi_datastore_sioc_normalized_latency_seconds", **ds) == pytest.approx(0.038)
    assert one(samples, "esxi_datastore_sioc_queue_depth", **ds) == 32
    assert one(samples, "esxi_datastore_sioc_active_ratio", **ds) == 0.0  # a real 0 from the server stays
    assert one(samples, "esxi_datastore_vm_observed_latency_seconds", **ds) == pytest.approx(0.04025)
    assert one(samples, "esxi_datastore_sioc_iops", **ds) == 950


def test_absent_where_the_server_has_none(samples):
    """No SIOC counter for a datastore the server sends none for: absent, never 0."""
    keys = {dict(labels)["datastore"] for labels in series(samples, "esxi_datastore_sioc_normalized_latency_seconds")}
    assert keys == {"ds-shared-01", "ds-shared-02"}
    esx03 = frozenset({"host": "esx03.lab.local", "datastore": "ds-shared-01"}.items())
    assert esx03 in series(samples, "esxi_datastore_sioc_active_ratio")
    assert esx03 not in series(samples, "esxi_datastore_vm_observed_latency_seconds")  # not in the fixture for esx03
    assert esx03 not in series(samples, "esxi_datastore_sioc_iops")
    host2 = frozenset({"host": "esx02.lab.local", "datastore": "ds-shared-02"}.items())
    assert host2 not in series(samples, "esxi_datastore_sioc_queue_depth")


def test_iorm_configuration_exact(samples):
    on = {"host": "esx02.lab.local", "datastore": "ds-shared-01"}
    assert one(samples, "esxi_datastore_sioc_config_reported", **on) == 1
    assert one(samples, "esxi_datastore_sioc_enabled", **on) == 1
    assert one(samples, "esxi_datastore_sioc_stats_enabled", **on) == 1
    assert one(samples, "esxi_datastore_sioc_threshold_mode", **on, mode="manual") == 1
    assert one(samples, "esxi_datastore_sioc_threshold_mode", **on, mode="automatic") == 0
    assert one(samples, "esxi_datastore_sioc_threshold_seconds", **on) == pytest.approx(0.030)
    assert one(samples, "esxi_datastore_sioc_peak_throughput_ratio", **on) == pytest.approx(0.90)
    off = {"host": "esx01.lab.local", "datastore": "ds-shared-02"}
    assert one(samples, "esxi_datastore_sioc_enabled", **off) == 0
    assert one(samples, "esxi_datastore_sioc_threshold_mode", **off, mode="automatic") == 1
    assert one(samples, "esxi_datastore_sioc_threshold_seconds", **off) == pytest.approx(0.025)
    assert one(samples, "esxi_datastore_sioc_peak_throughput_ratio", **off) == pytest.approx(0.80)
    # Every host mounting a datastore shows its configuration.
    hosts = {dict(k)["host"] for k in series(samples, "esxi_datastore_sioc_enabled") if dict(k)["datastore"] == "ds-shared-01"}
    assert hosts == {"esx01.lab.local", "esx02.lab.local", "esx03.lab.local"}


def test_iorm_absent_is_not_reported(samples):
    """nfs-vm-01 has no iormConfiguration: reported 0, and no other SIOC configuration series."""
    for host in ("esx02.lab.local", "esx03.lab.local"):
        nfs = {"host": host, "datastore": "nfs-vm-01"}
        assert one(samples, "esxi_datastore_sioc_config_reported", **nfs) == 0
        for name in (
            "esxi_datastore_sioc_enabled",
            "esxi_datastore_sioc_stats_enabled",
            "esxi_datastore_sioc_threshold_seconds",
            "esxi_datastore_sioc_peak_throughput_ratio",
        ):
            assert frozenset(nfs.items()) not in series(samples, name), name
    assert one(samples, "esxi_datastore_sioc_config_reported", host="esx01.lab.local", datastore="ds-iscsi-01") == 0


def test_lun_shows_sioc_depth_beside_dqlen(samples):
    """The LUN under ds-shared-01 shows the depth SIOC allows each host beside its DQLEN of 64."""
    for host, depth in (("esx01.lab.local", 24), ("esx02.lab.local", 16), ("esx03.lab.local", 64)):
        assert one(samples, "esxi_lun_sioc_queue_depth", host=host, device=N1) == depth
        assert one(samples, "esxi_lun_queue_depth", host=host, device=N1) == 64
    assert one(samples, "esxi_lun_sioc_queue_depth", host="esx01.lab.local", device=N2) == 32
    assert ("esxi_lun_sioc_queue_depth", frozenset({"host": "esx02.lab.local", "device": N2}.items())) not in samples


def _dump_refusing(tmp_path, refuse: str) -> subprocess.CompletedProcess:
    """dump against a simulator whose property collector refuses iormConfiguration (simulators/storagesim/sioc.go)."""
    fixture = json.loads(FIXTURE.read_text())
    fixture["sioc"]["refuse"] = refuse
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(fixture))
    sim = StorageSim(tmp_path, fixture=path)
    password = tmp_path / "vsphere"
    password.write_text(PASSWORD + "\n")
    try:
        return vsphere_dump(sim, password, timeout=60)
    finally:
        sim.stop()


@pytest.mark.parametrize("refuse, errors", [("InvalidProperty", 0), ("NoPermission", 1)])
def test_a_refused_iorm_configuration_is_not_reported(tmp_path, refuse, errors):
    """A server without the property (InvalidProperty: asked again without it) or one that faults
    the call (NoPermission: counted, logged once): every datastore reads not reported, no setting
    is guessed, and the SIOC counters are exported as before."""
    proc = _dump_refusing(tmp_path, refuse)
    assert proc.returncode == 0, proc.stderr
    found = parse(proc.stdout)
    reported = series(found, "esxi_datastore_sioc_config_reported")
    assert reported and set(reported.values()) == {0.0}
    assert frozenset({"host": "esx01.lab.local", "datastore": "ds-shared-01"}.items()) in reported
    for name in ("esxi_datastore_sioc_enabled", "esxi_datastore_sioc_threshold_seconds", "esxi_datastore_sioc_threshold_mode"):
        assert not series(found, name), name
    assert one(found, "esxi_datastore_sioc_queue_depth", host="esx01.lab.local", datastore="ds-shared-01") == 24
    iorm_errors = [
        v for (n, labels), v in found.items() if n == "esxi_vsphere_errors_total" and dict(labels).get("phase") == "iorm"
    ]
    assert sum(iorm_errors) == errors
    lines = [line for line in proc.stderr.splitlines() if "iormConfiguration" in line]
    assert len(lines) == errors, proc.stderr
    if errors:
        assert "iormConfiguration not read: permission denied (System.Read)" in lines[0]


def _configure(content, datastore, **spec):
    """ConfigureDatastoreIORM_Task, waited for: (state, error)."""
    task = content.storageResourceManager.ConfigureDatastoreIORM_Task(
        datastore, vim.StorageResourceManager.IORMConfigSpec(**spec)
    )
    deadline = time.monotonic() + 10
    while task.info.state not in ("success", "error") and time.monotonic() < deadline:
        time.sleep(0.1)
    return task.info.state, task.info.error


def test_configure_datastore_iorm_is_as_strict_as_vcenter_and_dump_sees_the_change(tmp_path):
    sim = StorageSim(tmp_path / "sim")
    password = tmp_path / "vsphere"
    password.write_text(PASSWORD + "\n")
    try:
        host, port = sim.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        si = SmartConnect(host=host, port=int(port), user=USER, pwd=PASSWORD, disableSslCertValidation=True)
        content = si.RetrieveContent()
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.HostSystem], True)
        stores = {ds.name: ds for h in view.view for ds in h.datastore}
        for spec, field in (
            ({"congestionThreshold": 120}, "spec.congestionThreshold"),
            ({"congestionThreshold": 4}, "spec.congestionThreshold"),
            ({"percentOfPeakThroughput": 40}, "spec.percentOfPeakThroughput"),
            ({"congestionThresholdMode": "sometimes"}, "spec.congestionThresholdMode"),
        ):
            state, error = _configure(content, stores["ds-shared-02"], **spec)
            assert state == "error" and isinstance(error, vmodl.fault.InvalidArgument) and error.invalidProperty == field, spec
        assert _configure(content, stores["ds-shared-02"], enabled=True, congestionThreshold=40) == ("success", None)
        assert _configure(content, stores["nfs-vm-01"], enabled=True) == ("success", None)  # had none: vCenter's defaults
        proc = vsphere_dump(sim, password, timeout=60)
    finally:
        sim.stop()
    assert proc.returncode == 0, proc.stderr
    found = parse(proc.stdout)
    changed = {"host": "esx02.lab.local", "datastore": "ds-shared-02"}
    assert one(found, "esxi_datastore_sioc_enabled", **changed) == 1
    assert one(found, "esxi_datastore_sioc_threshold_seconds", **changed) == pytest.approx(0.040)
    assert one(found, "esxi_datastore_sioc_threshold_mode", **changed, mode="automatic") == 1  # kept: not in the spec
    assert one(found, "esxi_datastore_sioc_peak_throughput_ratio", **changed) == pytest.approx(0.80)
    nfs = {"host": "esx03.lab.local", "datastore": "nfs-vm-01"}
    assert one(found, "esxi_datastore_sioc_config_reported", **nfs) == 1
    assert one(found, "esxi_datastore_sioc_threshold_seconds", **nfs) == pytest.approx(0.030)
    assert one(found, "esxi_datastore_sioc_threshold_mode", **nfs, mode="manual") == 1
