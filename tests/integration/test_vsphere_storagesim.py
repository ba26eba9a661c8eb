"""End to end against the project's storage simulator (simulators/storagesim): simulator -> exporter ->
Prometheus text (and a real Prometheus through /probe), exact values and labels.

The fixture (simulators/storagesim/fixture.json) has three hosts on two shared VMFS datastores:
esx02 with a LUN whose device latency is 62 ms (above the paper's 50 ms), esx03 with an 8 Gb
HBA running at its link speed, dead paths and reservation conflicts. esx02 and esx03 also mount
NFS datastores over their own vmkernel networks. Expected values below are worked out by hand
from the fixture's raw counters (ms, KiB/s, hundredths of a percent) and network.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from simulators.storagesim.sims import PASSWORD, USER, StorageSim
from tests.support.servers import ROOT, Exporter, Prometheus, exporter_env, free_port

pytestmark = pytest.mark.integration

N1 = "naa.600a098038303053453f463045727a61"  # ds-shared-01, on all three hosts
N2 = "naa.600a098038303053453f463045727a62"  # ds-shared-02, on esx01 and esx02
N3 = "naa.624a9370b9d3a7c25e7a40e200011b3c"  # ds-local-03, esx03 only
N4 = "naa.6589cfc000000a1b2c3d4e5f60718293"  # ds-iscsi-01, esx01 over software iSCSI
N5 = "naa.600a098038303053453f463045727a70"  # no datastore: db01's physical RDM on esx01
SECRET = PASSWORD


@pytest.fixture(scope="module")
def vc(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("vc"))
    yield sim
    sim.stop()


@pytest.fixture(scope="module")
def esx(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("esx"), esx=True)
    yield sim
    sim.stop()


@pytest.fixture(scope="module")
def password_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("secrets") / "vsphere"
    path.write_text(SECRET + "\n")
    return path


def parse(text: str) -> dict:
    """{(sample name, frozenset of label pairs): value}"""
    return {
        (s.name, frozenset(s.labels.items())): s.value for family in text_string_to_metric_families(text) for s in family.samples
    }


def value(samples: dict, name: str, **labels) -> float:
    return samples[(name, frozenset(labels.items()))]


def dump(sim, password_file, *extra) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "dump",
            "--vsphere",
            sim.url,
            "--vsphere.user",
            USER,
            "--vsphere.password-file",
            str(password_file),
            "--vsphere.ca-file",
            str(sim.cert),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
        timeout=60,
    )


@pytest.fixture(scope="module")
def vc_dump(vc, password_file):
    proc = dump(vc, password_file)
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stderr
    return parse(proc.stdout)


def test_lun_latency_above_50ms_exact(vc_dump):
    lun = {"host": "esx02.lab.local", "device": N1}
    assert value(vc_dump, "esxi_lun_device_latency_mean_seconds", **lun) == pytest.approx(0.062)  # DAVG 62 ms
    assert value(vc_dump, "esxi_lun_kernel_latency_mean_seconds", **lun) == pytest.approx(0.003)
    assert value(vc_dump, "esxi_lun_queue_latency_mean_seconds", **lun) == pytest.approx(0.002)
    assert value(vc_dump, "esxi_lun_guest_latency_mean_seconds", **lun) == pytest.approx(0.065)
    # One 20 s sample: 1600 commands/s -> 32,000 commands; latency x commands = 0.062 x 32,000.
    assert value(vc_dump, "esxi_lun_commands_total", **lun) == 32000
    assert value(vc_dump, "esxi_lun_device_latency_seconds_total", **lun) == pytest.approx(1984.0)
    assert value(vc_dump, "esxi_lun_reads_total", **lun) == 20000
    assert value(vc_dump, "esxi_lun_read_bytes_total", **lun) == 25600 * 1024 * 20  # KiB/s -> bytes
    assert value(vc_dump, "esxi_lun_aborts_total", **lun) == 4  # a count over the 20 s sample
    assert value(vc_dump, "esxi_lun_queue_depth", **lun) == 64
    assert value(vc_dump, "esxi_lun_device_latency_mean_seconds", host="esx01.lab.local", device=N1) == pytest.approx(0.004)


def test_saturated_hba_exact(vc_dump):
    hba = {"host": "esx03.lab.local", "adapter": "vmhba2"}
    link = value(vc_dump, "esxi_adapter_link_speed_bytes_per_second", **hba)
    assert link == 1e9  # 8 Gbit/s
    moved = value(vc_dump, "esxi_adapter_read_bytes_total", **hba) + value(vc_dump, "esxi_adapter_written_bytes_total", **hba)
    assert moved == (585938 + 390625) * 1024 * 20
    assert moved / 20 / link == pytest.approx(1.0, abs=1e-6)  # at its link speed
    assert value(vc_dump, "esxi_adapter_active_commands", **hba) == 250
    assert value(vc_dump, "esxi_adapter_queued_commands", **hba) == 12
    assert value(vc_dump, "esxi_adapter_read_latency_mean_seconds", **hba) == pytest.approx(0.009)
    assert value(vc_dump, "esxi_adapter_info", **hba, type="fc", model="Emulex LPe12002 8Gb FC", driver="lpfc") == 1


def test_paths_by_runtime_name_with_their_state(vc_dump):
    # storagePath instances are the long fc.WWNN:WWPN-... names; exported under the runtime name.
    path = {"host": "esx03.lab.local", "adapter": "vmhba2", "path": "vmhba2:C0:T2:L1"}
    assert value(vc_dump, "esxi_path_commands_total", **path) == 5800 * 20
    assert value(vc_dump, "esxi_path_info", **path, device=N3) == 1
    dead = {"host": "esx03.lab.local", "device": N1, "path": "vmhba3:C0:T1:L0", "adapter": "vmhba3"}
    assert {
        s: value(vc_dump, "esxi_path_state", **dead, state=s) for s in ("active", "standby", "disabled", "dead", "unknown")
    } == {"active": 0, "standby": 0, "disabled": 0, "dead": 1, "unknown": 0}
    assert (
        value(
            vc_dump,
            "esxi_path_state",
            host="esx01.lab.local",
            device=N2,
            path="vmhba3:C0:T1:L1",
            adapter="vmhba3",
            state="standby",
        )
        == 1
    )


def test_path_counts_per_lun(vc_dump):
    # (paths, active paths): one dead path on esx03, one standby on esx01, two active elsewhere.
    expected = {
        ("esx03.lab.local", N1): (2, 1),
        ("esx03.lab.local", N3): (2, 1),
        ("esx01.lab.local", N2): (2, 1),
        ("esx01.lab.local", N1): (2, 2),
        ("esx01.lab.local", N4): (2, 2),
        ("esx01.lab.local", N5): (2, 2),
        ("esx02.lab.local", N1): (2, 2),
        ("esx02.lab.local", N2): (2, 2),
    }
    got = {
        (dict(labels)["host"], dict(labels)["device"]): (
            value(vc_dump, "esxi_lun_paths", **dict(labels)),
            value(vc_dump, "esxi_lun_active_paths", **dict(labels)),
        )
        for name, labels in vc_dump
        if name == "esxi_lun_paths"
    }
    assert got == expected


def test_iscsi_adapter_link_is_its_bound_vmnics(vc_dump):
    iscsi = {"host": "esx01.lab.local", "adapter": "vmhba64"}
    assert value(vc_dump, "esxi_adapter_info", **iscsi, type="iscsi", model="iSCSI Software Adapter", driver="iscsi_vmk") == 1
    assert value(vc_dump, "esxi_adapter_link_speed_bytes_per_second", **iscsi) == 2 * 10_000e6 / 8  # vmnic2 + vmnic3
    # iSCSI storagePath instances (iqn...,t,1-naa.*) map to runtime names too.
    assert value(vc_dump, "esxi_path_commands_total", **iscsi, path="vmhba64:C0:T1:L2") == 200 * 20
    assert value(vc_dump, "esxi_path_info", **iscsi, path="vmhba64:C0:T1:L2", device=N4) == 1


def test_nfs_datastore_link_is_the_first_uplink_with_link_of_its_vmknic(vc_dump):
    # esx02: 192.168.50.20 is on vmk1's subnet (192.168.50.12/24); vmk1's port group "NFS" has
    # vmnic2 (10 Gb) active and vmnic3 (25 Gb) standby: one TCP connection, one uplink, 10 Gb.
    vmk1 = {"host": "esx02.lab.local", "adapter": "vmk1"}
    assert value(vc_dump, "esxi_adapter_info", **vmk1, type="nfs", model="vmnic2", driver="ixgben") == 1
    assert value(vc_dump, "esxi_adapter_link_speed_bytes_per_second", **vmk1) == 10_000e6 / 8
    assert (
        value(
            vc_dump,
            "esxi_datastore_info",
            host="esx02.lab.local",
            datastore="nfs-vm-01",
            type="nfs",
            remote_host="192.168.50.20",
            adapter="vmk1",
        )
        == 1
    )
    # 172.16.8.5 is on no vmknic's subnet: the default route, through vmk0, whose port group
    # inherits vSwitch0's order (vmnic0, vmnic1 at 1 Gb).
    assert (
        value(
            vc_dump,
            "esxi_datastore_info",
            host="esx02.lab.local",
            datastore="nfs-iso",
            type="nfs",
            remote_host="172.16.8.5",
            adapter="vmk0",
        )
        == 1
    )
    assert (
        value(vc_dump, "esxi_adapter_info", host="esx02.lab.local", adapter="vmk0", type="nfs", model="vmnic0", driver="ntg3")
        == 1
    )
    assert value(vc_dump, "esxi_adapter_link_speed_bytes_per_second", host="esx02.lab.local", adapter="vmk0") == 1_000e6 / 8
    # esx03: vmk1 is on a distributed switch whose first uplink (vmnic4) has no link: vmnic5, 25 Gb.
    assert (
        value(vc_dump, "esxi_adapter_info", host="esx03.lab.local", adapter="vmk1", type="nfs", model="vmnic5", driver="i40en")
        == 1
    )
    assert value(vc_dump, "esxi_adapter_link_speed_bytes_per_second", host="esx03.lab.local", adapter="vmk1") == 25_000e6 / 8
    assert (
        value(
            vc_dump,
            "esxi_datastore_info",
            host="esx03.lab.local",
            datastore="nfs-vm-01",
            type="nfs",
            remote_host="192.168.50.20",
            adapter="vmk1",
        )
        == 1
    )
    # An NFS 4.1 server given by name is not resolved by the exporter: the default route, vmk0.
    assert (
        value(
            vc_dump,
            "esxi_datastore_info",
            host="esx03.lab.local",
            datastore="nfs41-backup",
            type="nfs41",
            remote_host="filer01.lab.local",
            adapter="vmk0",
        )
        == 1
    )
    assert value(vc_dump, "esxi_adapter_link_speed_bytes_per_second", host="esx03.lab.local", adapter="vmk0") == 1_000e6 / 8
    # VMFS datastores have no NFS server nor vmknic; a host with no NFS mount has no nfs adapter.
    assert (
        value(
            vc_dump,
            "esxi_datastore_info",
            host="esx01.lab.local",
            datastore="ds-iscsi-01",
            type="vmfs",
            remote_host="",
            adapter="",
        )
        == 1
    )
    assert {dict(k[1])["adapter"] for k in vc_dump if k[0] == "esxi_adapter_info" and dict(k[1])["type"] == "nfs"} == {
        "vmk0",
        "vmk1",
    }
    assert not [
        k for k in vc_dump if k[0] == "esxi_adapter_info" and ("host", "esx01.lab.local") in k[1] and ("type", "nfs") in k[1]
    ]


def test_nfs_datastore_throughput_is_collected(vc_dump):
    ds = {"host": "esx02.lab.local", "datastore": "nfs-vm-01"}
    assert value(vc_dump, "esxi_datastore_read_bytes_total", **ds) == 51200 * 1024 * 20
    assert value(vc_dump, "esxi_datastore_written_bytes_total", **ds) == 25600 * 1024 * 20
    assert value(vc_dump, "esxi_datastore_hosts", datastore="nfs-vm-01") == 2  # same NFS volume id on esx02 and esx03


def test_storage_configuration(vc_dump):
    assert (
        value(
            vc_dump,
            "esxi_lun_info",
            host="esx03.lab.local",
            device=N3,
            display_name=f"PURE Fibre Channel Disk ({N3})",
            vendor="PURE",
            model="FlashArray",
            datastore="ds-local-03",
            plugin="NMP",  # the multipath plugin and queue semantics (issue 15)
            kind="scsi",
        )
        == 1
    )
    assert value(vc_dump, "esxi_lun_configured_queue_depth", host="esx01.lab.local", device=N2) == 32
    assert value(vc_dump, "esxi_lun_configured_queue_depth", host="esx03.lab.local", device=N3) == 128
    assert {h: value(vc_dump, "esxi_host_dsnro", host=h) for h in ("esx01.lab.local", "esx02.lab.local", "esx03.lab.local")} == {
        "esx01.lab.local": 32,
        "esx02.lab.local": 64,
        "esx03.lab.local": 32,
    }
    assert {d: value(vc_dump, "esxi_datastore_hosts", datastore=d) for d in ("ds-shared-01", "ds-shared-02", "ds-local-03")} == {
        "ds-shared-01": 3,
        "ds-shared-02": 2,
        "ds-local-03": 1,
    }


def test_reservation_conflicts_cpu_and_datastores(vc_dump):
    assert value(vc_dump, "esxi_lun_reservation_conflicts_total", host="esx03.lab.local", device=N3) == 40
    assert value(vc_dump, "esxi_cpu_utilization_ratio", host="esx03.lab.local", cpu="_Total") == pytest.approx(0.78)
    assert value(vc_dump, "esxi_host_cpu_usage_hertz", host="esx03.lab.local") == pytest.approx(18.72e9)
    assert value(vc_dump, "esxi_host_cpu_core_frequency_hertz", host="esx03.lab.local") == 2.1e9  # hardware.cpuInfo.hz
    ds = {"host": "esx02.lab.local", "datastore": "ds-shared-01"}
    assert value(vc_dump, "esxi_datastore_read_latency_mean_seconds", **ds) == pytest.approx(0.066)
    assert value(vc_dump, "esxi_datastore_reads_total", **ds) == 1000 * 20


def test_self_metrics(vc_dump):
    target = "127.0.0.1"
    assert value(vc_dump, "esxi_vsphere_up", target=target) == 1
    assert {
        k: value(vc_dump, "esxi_vsphere_objects", target=target, kind=k) for k in ("host", "lun", "adapter", "path", "datastore")
    } == {"host": 3, "lun": 8, "adapter": 11, "path": 16, "datastore": 7}  # adapters: 7 HBAs, 4 NFS vmknics
    assert value(vc_dump, "esxi_vsphere_errors_total", target=target, phase="collection") == 0
    assert value(vc_dump, "esxi_vsphere_samples_total", host="esx01.lab.local") == 1
    assert value(vc_dump, "esxi_vsphere_collection_duration_seconds", target=target, phase="collection") > 0


def test_promtool_accepts_the_exposition(vc, password_file, tmp_path):
    proc = dump(vc, password_file)
    result = subprocess.run(["promtool", "check", "metrics"], input=proc.stdout, capture_output=True, text=True)
    # promtool lints names and help; counters and units here follow its rules.
    assert result.returncode == 0, result.stdout + result.stderr


def test_standalone_esxi_works_the_same(esx, password_file):
    proc = dump(esx, password_file)
    assert proc.returncode == 0, proc.stderr
    samples = parse(proc.stdout)
    assert value(samples, "esxi_lun_device_latency_mean_seconds", host="esx01.lab.local", device=N1) == pytest.approx(0.004)
    assert value(samples, "esxi_adapter_link_speed_bytes_per_second", host="esx01.lab.local", adapter="vmhba2") == 2e9
    assert value(samples, "esxi_vsphere_objects", target="127.0.0.1", kind="host") == 1
    assert value(samples, "esxi_datastore_hosts", datastore="ds-shared-01") == 1  # one host sees only itself


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_multi_target_probe_through_prometheus(vc, esx, password_file, tmp_path):
    closed = free_port()  # nothing listens there: the "down" target
    config = tmp_path / "exporter.yml"
    config.write_text(f"""
vsphere:
  user: {USER}
  password_file: {password_file}
  interval: 1s
  targets:
    vc: {{url: "{vc.url}", ca_file: "{vc.cert}"}}
    esx: {{url: "{esx.url}", ca_file: "{esx.cert}"}}
    down: {{url: "https://127.0.0.1:{closed}/sdk", timeout: 2s}}
""")
    exporter = Exporter("--config.file", str(config), log_path=tmp_path / "exporter.log")
    prometheus = None
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not all(
            "esxi_vsphere_samples_total{" in _get(f"{exporter.url}/probe?target={t}")[1] for t in ("vc", "esx")
        ):
            time.sleep(0.2)
        status, vc_text = _get(exporter.url + "/probe?target=vc")
        assert status == 200
        vc_samples = parse(vc_text)
        assert {dict(k[1]).get("host") for k in vc_samples if k[0] == "esxi_lun_commands_total"} == {
            "esx01.lab.local",
            "esx02.lab.local",
            "esx03.lab.local",
        }
        assert value(vc_samples, "esxi_vsphere_up", target="vc") == 1
        assert ("esxi_vsphere_up", frozenset({("target", "esx")})) not in vc_samples  # only this target
        # esxcli's health is named by host, and shown on the probe of the target whose hosts they are (#23)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "esxi_esxcli_up{" not in _get(exporter.url + "/probe?target=vc")[1]:
            time.sleep(0.2)
        vc_esxcli = {dict(k[1])["host"] for k in parse(_get(exporter.url + "/probe?target=vc")[1]) if k[0] == "esxi_esxcli_up"}
        esx_esxcli = {dict(k[1])["host"] for k in parse(_get(exporter.url + "/probe?target=esx")[1]) if k[0] == "esxi_esxcli_up"}
        assert vc_esxcli == {"esx01.lab.local", "esx02.lab.local", "esx03.lab.local"}
        assert esx_esxcli == {"esx01.lab.local"}  # the standalone host, read by its own target too
        status, body = _get(exporter.url + "/probe?target=nope")
        assert status == 400 and body == "unknown or missing target (the exporter's configuration names them)\n"
        everything = parse(exporter.metrics())
        assert value(everything, "esxi_vsphere_up", target="down") == 0
        assert value(everything, "esxi_vsphere_up", target="esx") == 1
        # Collections every second, but each 20 s sample is counted once.
        time.sleep(2.5)
        vc_samples = parse(_get(exporter.url + "/probe?target=vc")[1])
        seen = value(vc_samples, "esxi_vsphere_samples_total", host="esx02.lab.local")
        assert 1 <= seen <= 2
        assert value(vc_samples, "esxi_lun_commands_total", host="esx02.lab.local", device=N1) == seen * 1600 * 20

        prometheus = Prometheus(
            tmp_path / "prom",
            [],
            config_text=f"""
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
scrape_configs:
  - job_name: esxi-vsphere
    metrics_path: /probe
    static_configs:
      - targets: [vc, esx, down]
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__param_target]
        target_label: instance
      - target_label: __address__
        replacement: 127.0.0.1:{exporter.port}
""",
        )
        slow = prometheus.wait_for("esxi_lun_device_latency_mean_seconds > 0.05")
        assert [(r["metric"]["instance"], r["metric"]["host"], r["metric"]["device"], float(r["value"][1])) for r in slow] == [
            ("vc", "esx02.lab.local", N1, 0.062)
        ]
        up = prometheus.wait_for("esxi_vsphere_up", lambda r: len(r) == 3)
        assert {r["metric"]["instance"]: r["value"][1] for r in up} == {"vc": "1", "esx": "1", "down": "0"}
        dead = prometheus.query('esxi_path_state{state="dead"} == 1')
        assert sorted(r["metric"]["path"] for r in dead) == ["vmhba3:C0:T1:L0", "vmhba3:C0:T3:L1"]
        # Each NFS datastore joined to the link speed of the vmknic carrying it.
        links = prometheus.query(
            "esxi_adapter_link_speed_bytes_per_second * on (instance, host, adapter) group_right "
            'esxi_datastore_info{instance="vc", adapter!=""}'
        )
        assert sorted(
            (r["metric"]["host"], r["metric"]["datastore"], r["metric"]["adapter"], float(r["value"][1])) for r in links
        ) == [
            ("esx02.lab.local", "nfs-iso", "vmk0", 1.25e8),
            ("esx02.lab.local", "nfs-vm-01", "vmk1", 1.25e9),
            ("esx03.lab.local", "nfs-vm-01", "vmk1", 3.125e9),
            ("esx03.lab.local", "nfs41-backup", "vmk0", 1.25e8),
        ]
    finally:
        if prometheus:
            prometheus.stop()
        exporter.stop()
    log = (tmp_path / "exporter.log").read_text()
    assert "vsphere target down: discovery failed: cannot log in to 127.0.0.1" in log and "connection refused" in log
    assert SECRET not in log
    assert "Traceback" not in log


def test_password_is_never_in_process_arguments(vc, password_file, tmp_path):
    exporter = Exporter(
        "--vsphere",
        vc.url,
        "--vsphere.user",
        USER,
        "--vsphere.password-file",
        str(password_file),
        "--vsphere.ca-file",
        str(vc.cert),
    )
    try:
        with open(f"/proc/{exporter.proc.pid}/cmdline", "rb") as handle:
            argv = handle.read().decode()
        assert SECRET not in argv.split("\0")
        assert str(password_file) in argv
        assert os.stat(password_file).st_size > 0
    finally:
        exporter.stop()


def test_a_target_that_goes_away_and_comes_back(password_file, tmp_path, caplog):
    from exporter.vsphere import TargetConfig, VsphereTarget

    caplog.set_level("INFO")
    port = free_port()
    sim = StorageSim(tmp_path, "-l", f"127.0.0.1:{port}")
    target = VsphereTarget(
        TargetConfig(name="flaky", url=sim.url, user=USER, password_file=str(password_file), ca_file=str(sim.cert), timeout=5.0)
    )
    try:
        assert target.run_once(), target.error
        sim.stop()
        assert not target.collect()
        # A kept-alive connection finds the server gone; a new one finds the port closed.
        assert target.up == 0 and target.error in ("connection closed by the server", "connection refused")
        assert target.errors["collection"] == 1
        target_error = target.error
        sim = StorageSim(tmp_path, "-l", f"127.0.0.1:{port}")  # a new server: new session, new certificate, same CA path
        target.last_timestamp.clear()
        assert target.collect(), target.error
        assert target.up == 1
        assert f"vsphere target flaky: collection failed: {target_error}" in caplog.text
        assert "vsphere target flaky: reachable again" in caplog.text
    finally:
        sim.stop()
        target.client.close()


def test_one_bad_host_does_not_cost_the_others_their_sample(vc, password_file):
    from exporter.store import model as m
    from exporter.vsphere import TargetConfig, VsphereTarget, discovery

    target = VsphereTarget(TargetConfig(name="vc", url=vc.url, user=USER, password_file=str(password_file), ca_file=str(vc.cert)))
    try:
        assert target.discover(), target.error
        gone = discovery.HostTopology(
            ref=discovery.vim.HostSystem("host-gone"), name="gone.lab.local", inventory=m.Inventory("gone")
        )
        target.topology = discovery.Topology(hosts=target.topology.hosts + [gone])  # removed after the last discovery
        assert target.collect(), target.error  # the server faults the call that names it...
        assert set(target.samples) == {"esx01.lab.local", "esx02.lab.local", "esx03.lab.local"}  # ...the others are asked again
        assert target.errors["collection"] == 1 and target.up == 1
    finally:
        target.client.close()


def test_vcenter_max_query_metrics_is_respected(password_file, tmp_path):
    from exporter.vsphere import TargetConfig, VsphereTarget, perf

    sim = StorageSim(tmp_path, "-max-query-metrics", "20")
    target = VsphereTarget(
        TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(password_file), ca_file=str(sim.cert))
    )
    try:
        assert target.discover(), target.error
        assert target.max_query_metrics == 20  # read from the server, below the configured 256
        calls = perf.chunk(perf.query_specs(target.topology.hosts, target.resolved.host_keys, {}, 0), target.max_query_metrics)
        assert max(sum(len(s.counters) for s in call) for call in calls) <= 20
        assert target.collect(), target.error
        assert len(target.samples) == 3 and target.errors["collection"] == 0
    finally:
        sim.stop()
        target.client.close()


def test_series_expected_per_call_bound_what_the_server_answers(vc, password_file):
    """Calls are also cut by the series their answers will hold, estimated from each host's
    discovered instances; on a real answer that estimate must not be below what comes back."""
    from exporter.vsphere import TargetConfig, VsphereTarget, perf

    target = VsphereTarget(TargetConfig(name="vc", url=vc.url, user=USER, password_file=str(password_file), ca_file=str(vc.cert)))
    try:
        assert target.discover(), target.error
        specs = perf.query_specs(target.topology.hosts, target.resolved.host_keys, {}, 0, target.resolved.families)
        assert all(topo.cpu_threads > 0 for topo in target.topology.hosts)  # hardware.cpuInfo.numCpuThreads
        results, errors = perf.query(target.client, perf.chunk(specs, target.max_query_metrics), 4)
        assert not errors
        for spec, topo in zip(specs, target.topology.hosts):
            answered = len(results[topo.ref._moId])
            assert 0 < answered <= sum(spec.series), topo.name
        # The smallest host's answer as the limit: every call then holds one host, or a piece of one.
        limit = min(sum(s.series) for s in specs)
        calls = perf.chunk(specs, target.max_query_metrics, max_series=limit)
        assert len(calls) >= len(specs) and all(sum(sum(s.series) for s in call) <= limit for call in calls)
        results, errors = perf.query(target.client, calls, 4)
        assert not errors and {topo.ref._moId for topo in target.topology.hosts} == set(results)
    finally:
        target.client.close()


def test_device_state_flags_and_multipathing_from_the_standard_api(vc_dump):
    """ScsiLun.operationalState, HostScsiDisk.ssd/localDisk, and the PSP and SATP of the multipath
    info: read with no esxcli. One LUN of the fixture is degraded, on MRU and flash."""
    degraded, healthy = "naa.600a098038303053453f463045727a62", "naa.600a098038303053453f463045727a61"
    host = "esx01.lab.local"
    assert value(vc_dump, "esxi_lun_operational_state", host=host, device=degraded, state="degraded") == 1
    assert value(vc_dump, "esxi_lun_operational_state", host=host, device=degraded, state="ok") == 0
    assert value(vc_dump, "esxi_lun_operational_state", host=host, device=healthy, state="ok") == 1
    assert value(vc_dump, "esxi_lun_ssd", host=host, device=degraded) == 1
    assert value(vc_dump, "esxi_lun_ssd", host=host, device=healthy) == 0
    assert value(vc_dump, "esxi_lun_local", host=host, device=healthy) == 0
    mru = dict(host=host, device=degraded, plugin="NMP", satp="VMW_SATP_ALUA", psp="VMW_PSP_MRU", psp_limit_type="")
    assert value(vc_dump, "esxi_lun_multipath_info", **mru) == 1
    # the round robin limit type is esxcli's (read through the method executer, on by default)
    rr = dict(host=host, device=healthy, plugin="NMP", satp="VMW_SATP_ALUA", psp="VMW_PSP_RR", psp_limit_type="Default")
    assert value(vc_dump, "esxi_lun_multipath_info", **rr) == 1


def test_esxcli_through_the_hosts_method_executer_per_device_values(vc_dump):
    """No SSH: esxcli storage core/nmp device list through RetrieveManagedMethodExecuter and
    ExecuteSoap on the logged-in session; the simulator answers as a real host does."""
    host, n61, n62 = "esx01.lab.local", "naa.600a098038303053453f463045727a61", "naa.600a098038303053453f463045727a62"
    assert value(vc_dump, "esxi_lun_dsnro", host=host, device=n61) == 32  # DSNRO 32 on DQLEN 64
    assert value(vc_dump, "esxi_lun_configured_queue_depth", host=host, device=n61) == 64
    assert value(vc_dump, "esxi_lun_queue_full_sample_size", host=host, device=n62) == 32
    assert value(vc_dump, "esxi_lun_queue_full_threshold", host=host, device=n62) == 4
    assert value(vc_dump, "esxi_lun_queue_full_sample_size", host=host, device=n61) == 0
    assert value(vc_dump, "esxi_lun_psp_iops_limit", host=host, device=n61) == 1000
    assert value(vc_dump, "esxi_lun_status", host=host, device=n62, status="degraded") == 1
    assert value(vc_dump, "esxi_host_dsnro_source", host=host, source="device") == 1
    assert value(vc_dump, "esxi_esxcli_up", host=host) == 1
    assert (
        value(
            vc_dump,
            "esxi_adapter_driver_queue_depth",
            host=host,
            adapter="vmhba2",
            driver="qlnativefc",
            parameter="ql2xmaxqdepth",
        )
        == 64
    )
    # no HPP namespace on this host is no error; nothing else failed
    assert not [k for k in vc_dump if k[0] == "esxi_esxcli_errors_total"]


def test_esxcli_through_a_standalone_hosts_method_executer(esx, password_file):
    """The same esxcli path against a standalone ESXi host (no vCenter)."""
    proc = dump(esx, password_file)
    assert proc.returncode == 0, proc.stderr
    samples = parse(proc.stdout)
    host, n61 = "esx01.lab.local", "naa.600a098038303053453f463045727a61"
    assert value(samples, "esxi_lun_dsnro", host=host, device=n61) == 32
    assert value(samples, "esxi_esxcli_up", host=host) == 1
    assert SECRET not in proc.stderr


def test_a_host_whose_esxcli_failed_is_read_again_soon_not_at_the_next_hour(vc, password_file, monkeypatch):
    """One failed esxcli answer (a busy hostd) left the host esxi_esxcli_up 0, its per-device
    settings unknown, until the next walk, storage change or esxcli-interval (1 h). Now it is read
    again after exporter.esxcli.retry.FIRST_RETRY (1 s here), twice as long after each further
    failure, with no walk and no change; the hosts that answered are not read again."""
    import threading

    from exporter.esxcli import retry
    from exporter.serving.exposition import Exposition
    from exporter.vsphere import TargetConfig, VsphereTarget
    from exporter.vsphere import esxcli as vsphere_esxcli

    monkeypatch.setattr(retry, "FIRST_RETRY", 1.0)
    host, n61 = "esx01.lab.local", "naa.600a098038303053453f463045727a61"
    real_read, reads = vsphere_esxcli.read, {}  # host -> when each read began

    def read(stub, moid, name):
        reads.setdefault(name, []).append(time.monotonic())
        if name == host and len(reads[name]) <= 3:  # its first three reads fail
            return None, [("RetrieveManagedMethodExecuter", "failed", "hostd is busy")]
        return real_read(stub, moid, name)

    monkeypatch.setattr(vsphere_esxcli, "read", read)
    config = TargetConfig(name="vc", url=vc.url, user=USER, password_file=str(password_file), ca_file=str(vc.cert), interval=5.0)
    assert config.esxcli_interval == 3600.0
    target, stop, threads = VsphereTarget(config), threading.Event(), []
    exposition = Exposition(target.store)
    try:
        threads = target.start(stop)
        deadline, up = time.monotonic() + 60, None
        while time.monotonic() < deadline and up != 1:
            time.sleep(0.2)
            up = parse(exposition.body().decode()).get(("esxi_esxcli_up", frozenset({"host": host}.items())))
        samples = parse(exposition.body().decode())
        assert value(samples, "esxi_esxcli_up", host=host) == 1
        assert value(samples, "esxi_lun_dsnro", host=host, device=n61) == 32
        assert (
            value(samples, "esxi_esxcli_errors_total", host=host, command="RetrieveManagedMethodExecuter", reason="failed") == 3
        )
        gaps = [b - a for a, b in zip(reads[host], reads[host][1:])]
        assert len(gaps) == 3
        for gap, wait in zip(gaps, (1.0, 2.0, 4.0)):
            assert wait - 0.1 <= gap <= wait + 3.0, gaps
        assert all(len(times) == 1 for name, times in reads.items() if name != host), reads
        assert target.walks == {"start": 1}  # no walk brought it back
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        target.client.close()


def test_esxcli_never_holds_back_the_topology_and_a_rediscovery_loses_no_setting(vc, password_file, monkeypatch):
    """On a real vCenter each host's hostd answers esxcli in its own time. The API topology (LUNs,
    paths, states) reaches the store before esxcli answers; a rediscovery whose esxcli fails keeps
    the last answer (esxcli_up 0 says so); a setting esxcli stops reporting goes away."""
    import threading

    from exporter.serving.exposition import Exposition
    from exporter.vsphere import TargetConfig, VsphereTarget
    from exporter.vsphere import esxcli as vsphere_esxcli

    host, n61 = "esx01.lab.local", "naa.600a098038303053453f463045727a61"
    real_read = vsphere_esxcli.read
    gate, mode = threading.Event(), {"now": "slow"}

    def read(stub, moid, name):
        if mode["now"] == "slow":
            assert gate.wait(60), "the test never opened the gate"
            return real_read(stub, moid, name)
        if mode["now"] == "fail":
            return None, [("RetrieveManagedMethodExecuter", "failed", "hostd is busy")]
        found, problems = real_read(stub, moid, name)
        for lun in found.luns.values():
            lun.psp_iops_limit = None  # as after a change from round robin to MRU
        return found, problems

    monkeypatch.setattr(vsphere_esxcli, "read", read)
    target = VsphereTarget(TargetConfig(name="vc", url=vc.url, user=USER, password_file=str(password_file), ca_file=str(vc.cert)))
    exposition = Exposition(target.store)
    scrape = lambda: parse(exposition.body().decode())  # noqa: E731
    try:
        discovering = threading.Thread(target=target.discover)
        discovering.start()
        deadline = time.monotonic() + 60
        while not target.store.inventories and time.monotonic() < deadline:
            time.sleep(0.05)
        early = scrape()
        # the API's view is out while every host's esxcli is still pending
        assert value(early, "esxi_lun_operational_state", host=host, device=n61, state="ok") == 1
        assert not [k for k in early if k[0] in ("esxi_lun_dsnro", "esxi_esxcli_up", "esxi_host_dsnro_source")]
        gate.set()
        discovering.join(60)
        answered = scrape()
        assert value(answered, "esxi_lun_dsnro", host=host, device=n61) == 32
        assert value(answered, "esxi_lun_psp_iops_limit", host=host, device=n61) == 1000
        assert value(answered, "esxi_host_dsnro_source", host=host, source="device") == 1
        assert value(answered, "esxi_vsphere_collection_duration_seconds", target="vc", phase="esxcli") > 0

        mode["now"] = "fail"
        assert target.discover()
        failed = scrape()
        assert value(failed, "esxi_esxcli_up", host=host) == 0
        assert value(failed, "esxi_lun_dsnro", host=host, device=n61) == 32  # the last answer stands
        assert value(failed, "esxi_lun_psp_iops_limit", host=host, device=n61) == 1000
        assert value(failed, "esxi_esxcli_errors_total", host=host, command="RetrieveManagedMethodExecuter", reason="failed") >= 1

        mode["now"] = "mru"
        assert target.discover()
        changed = scrape()
        assert value(changed, "esxi_esxcli_up", host=host) == 1
        assert value(changed, "esxi_lun_dsnro", host=host, device=n61) == 32
        assert not [k for k in changed if k[0] == "esxi_lun_psp_iops_limit"]
    finally:
        gate.set()
        target.client.close()
