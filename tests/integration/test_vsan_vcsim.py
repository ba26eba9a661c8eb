"""The vSAN source against the project's vSphere storage simulator (simulators/storagesim/, fixture
simulators/storagesim/vsan.json: an OSA cluster with disk groups, an ESA cluster without, a host without
vSAN), over the real wire protocol: exact values from the simulator's fixture to the exposition,
blank cells absent (never zero), ESA without disk groups and without an error, no vSAN call for a
target without vSAN, one cluster's faults hiding nothing else; and every vSAN alert through a real
Prometheus with the project's rules, firing where the fixture's values say and nowhere else."""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exporter.configuration import thresholds
from exporter.store import model as m
from exporter.vsan import metrics as vm
from exporter.vsan import perf as vperf
from simulators.storagesim.sims import FIXTURE, HERE, PASSWORD, USER, StorageSim
from tests.support.promtext import samples, value
from tests.support.rules import rule_file
from tests.support.servers import ROOT, Exporter, Prometheus, exporter_env, stop_all

pytestmark = pytest.mark.integration

VSAN_FIXTURE = HERE / "vsan.json"
LIMITS = thresholds.read()


def fixture() -> dict:
    return json.loads(VSAN_FIXTURE.read_text())


def _password(tmp: Path) -> Path:
    path = tmp / "password"
    path.write_text(PASSWORD + "\n")
    path.chmod(0o600)
    return path


def _vsphere_args(sim: StorageSim, password: Path) -> list[str]:
    return [
        "--vsphere",
        sim.url,
        "--vsphere.user",
        USER,
        "--vsphere.password-file",
        str(password),
        "--vsphere.ca-file",
        str(sim.cert),
    ]


def dump(sim: StorageSim, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "exporter", "dump", *_vsphere_args(sim, _password(tmp)), *extra],
        capture_output=True, text=True, timeout=180, env=exporter_env(), cwd=ROOT,
    )  # fmt: skip


def newest(cell):
    """A fixture value as the newest complete sample shows it: a list cycles by sample index, so
    only values equal in every position are pinned here."""
    if isinstance(cell, list):
        return cell[0] if all(c == cell[0] for c in cell) else "varies"
    return cell


@pytest.fixture(scope="module")
def dumped(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vsan-dump")
    sim = StorageSim(tmp / "sim", fixture=VSAN_FIXTURE)
    try:
        result = dump(sim, tmp)
    finally:
        sim.stop()
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def test_every_fixture_value_reaches_the_exposition_in_base_units(dumped):
    """From each entity of the fixture, every label we read: converted once (µs -> s, % -> ratio,
    congestion / interval), under the host, disk group, device and VM names the inventory gives."""
    doc = fixture()
    interval = float(doc["vsan"].get("sample_seconds", 300))
    hosts = {h["name"]: h for h in doc["hosts"]}
    families = {
        vm.CLUSTER: ("esxi_vsan_cluster", lambda c, _: {"cluster": c}),
        vm.HOST: ("esxi_vsan_host", lambda c, name: {"cluster": c, "host": name}),
        vm.DISK_GROUP: ("esxi_vsan_disk_group", lambda c, dev: {"cluster": c, "disk_group": dev}),
        vm.CACHE_DISK: ("esxi_vsan_disk", lambda c, dev: {"cluster": c, "device": dev}),
        vm.CAPACITY_DISK: ("esxi_vsan_disk", lambda c, dev: {"cluster": c, "device": dev}),
        vm.VM: ("esxi_vsan_vm", lambda c, name: {"cluster": c, "vm": name}),
        vm.ESA_DISK_LAYER: ("esxi_vsan_disk_tier", lambda c, dev: {"cluster": c, "device": dev}),
        vm.ESA_DISK_DEVICE: ("esxi_vsan_disk", lambda c, dev: {"cluster": c, "device": dev, "disk_group": ""}),
        vm.HOST_NETWORK: ("esxi_vsan_host_network", lambda c, name: {"cluster": c, "host": name}),
        vm.NIC: ("esxi_vsan_nic", lambda c, key: dict(zip(("cluster", "host", "vmnic"), (c, *key.split("|")), strict=True))),
        vm.VMKNIC: (
            "esxi_vsan_vmknic",
            lambda c, key: dict(zip(("cluster", "host", "vmknic"), (c, *key.split("|")), strict=True)),
        ),
        vm.TCPIP: (
            "esxi_vsan_host_network",
            lambda c, key: dict(zip(("cluster", "host", "netstack"), (c, *key.split("|")), strict=True)),
        ),
        vm.HOST_BACKEND: ("esxi_vsan_host_backend", lambda c, name: {"cluster": c, "host": name}),
        vm.CLUSTER_BACKEND: ("esxi_vsan_cluster_backend", lambda c, _: {"cluster": c}),
        vm.CLUSTER_OWNER: ("esxi_vsan_cluster_owner", lambda c, _: {"cluster": c}),
        vm.HOST_OWNER: ("esxi_vsan_host", lambda c, name: {"cluster": c, "host": name}),
    }
    # Fields exported as one family with a label per state, class and operation.
    by_label = {m.vsan_resync_jobs(state): ("resync_jobs", {"state": state}) for state in m.VSAN_RESYNC_JOB_STATES}
    by_label |= {
        m.vsan_queue_depth(io_class, op): ("queue_depth", {"class": io_class, "op": op})
        for io_class in m.VSAN_QUEUE_CLASSES
        for op in m.VSAN_QUEUE_OPS
    }
    cluster_wide = (vm.CLUSTER, vm.CLUSTER_BACKEND, vm.CLUSTER_OWNER)
    tiers = {"Perf": "performance", "Capacity": "capacity"}
    stems = _stems()
    checked = blank = 0
    for cluster in doc["vsan"]["clusters"]:
        for kind, entities in cluster["perf"].items():
            prefix, labels_of = families[kind]
            items = [("", entities)] if kind in cluster_wide else entities.items()
            for name, cells in items:
                for label, cell in cells.items():
                    metric = vm.BY_LABEL[kind].get(label)
                    if metric is None:
                        continue  # a label the exporter does not read (clientCacheHits)
                    cell = newest(cell)
                    if cell == "varies":
                        continue
                    labels = labels_of(cluster["name"], name)
                    field = metric.field
                    if kind == vm.ESA_DISK_LAYER:  # one series per tier
                        tier = next(t for suffix, t in tiers.items() if label.endswith(suffix))
                        labels["tier"], field = tier, field.removeprefix(f"{tier}_tier_")
                    if field in by_label:  # esxi_vsan_resync_jobs (cluster), esxi_vsan_host_resync_jobs, ..._queue_depth
                        stem, more = by_label[field]
                        labels |= more
                        series = "esxi_vsan_resync_jobs" if kind == vm.CLUSTER_OWNER else f"{prefix}_{stem}"
                    else:
                        series = f"{prefix}_{stems[(prefix, field)]}"
                    if kind == vm.DISK_GROUP and label.endswith("Congestion"):
                        labels["layer"] = label.removesuffix("Congestion")  # one series per layer
                    got = value(dumped, series, **labels)
                    if cell is None:
                        assert got is None, (series, name)  # a blank cell: no series, never 0
                        blank += 1
                    else:
                        assert got == pytest.approx(metric.convert(float(cell), interval), rel=1e-9), (series, name, label)
                        checked += 1
    assert checked > 500 and blank >= 2
    # disks keep the LUN families' device label, and the host they sit in
    for name, host in hosts.items():
        for group in (host.get("vsan") or {}).get("disk_groups", []):
            cache = group["cache"]
            assert value(dumped, "esxi_vsan_disk_info", host=name, device=cache, disk_group=cache, tier="cache") == 1.0
            assert value(dumped, "esxi_lun_info", host=name, device=cache) == 1.0
        for disk in (host.get("vsan") or {}).get("storage_pool", []):  # ESA: joined by the disk query's uuid
            device = disk if isinstance(disk, str) else disk["device"]
            assert value(dumped, "esxi_vsan_disk_info", host=name, device=device, disk_group="", tier="storage_pool") == 1.0
            assert value(dumped, "esxi_lun_info", host=name, device=device) == 1.0
        for vmnic in (host.get("vsan") or {}).get("vmnics", []):  # the fixture's link speed, Mbit/s -> bytes/s
            speed = next(p["speed_mb"] for p in host["network"]["pnics"] if p["device"] == vmnic)
            assert value(dumped, "esxi_vsan_nic_link_speed_bytes_per_second", host=name, vmnic=vmnic) == speed * 1e6 / 8


def _stems() -> dict[tuple[str, str], str]:
    from exporter.collectors import vsan

    out = {}
    for prefix, spec in (
        ("esxi_vsan_cluster", vsan.DOM_CLIENT),
        ("esxi_vsan_host", vsan.HOST),
        ("esxi_vsan_disk_group", vsan.DISK_GROUP),
        ("esxi_vsan_disk", (*vsan.DISK, *vsan.ESA_DEVICE)),
        ("esxi_vsan_vm", vsan.IO),
        ("esxi_vsan_disk_tier", vsan.ESA_TIER),
        ("esxi_vsan_host_network", (*vsan.NETWORK, *vsan.TCPIP)),
        ("esxi_vsan_nic", (*vsan.NIC, *vsan.NIC_COUNTERS)),
        ("esxi_vsan_vmknic", vsan.NETWORK),
        ("esxi_vsan_host_backend", vsan.HOST_BACKEND),
        ("esxi_vsan_cluster_backend", vsan.BACKEND),
        ("esxi_vsan_cluster_owner", vsan.OWNER),
    ):
        out.update({(prefix, field): stem for field, stem, _ in spec})
    for layer in ("ssd", "log", "mem", "slab", "comp", "iops"):
        out[("esxi_vsan_disk_group", f"{layer}_congestion_per_second")] = "congestion_per_second"
    return out


def test_health_space_resync_and_esa_without_disk_groups(dumped):
    doc = {c["name"]: c for c in fixture()["vsan"]["clusters"]}
    osa = doc["vsan-osa"]
    assert value(dumped, "esxi_vsan_cluster_health", cluster="vsan-osa", state=osa["health"]) == 1.0
    assert value(dumped, "esxi_vsan_objects", cluster="vsan-osa", state="inaccessible") == osa["objects"]["inaccessible"]
    assert (
        value(dumped, "esxi_vsan_objects", cluster="vsan-osa", state="reduced_availability_with_no_rebuild")
        == osa["objects"]["reducedavailabilitywithnorebuild"]
    )
    assert value(dumped, "esxi_vsan_capacity_bytes", cluster="vsan-osa") == osa["space"]["total_bytes"]
    assert value(dumped, "esxi_vsan_free_bytes", cluster="vsan-osa") == osa["space"]["free_bytes"]
    assert value(dumped, "esxi_vsan_resync_bytes", cluster="vsan-osa") == osa["resync"]["bytes"]
    assert value(dumped, "esxi_vsan_resync_objects", cluster="vsan-osa") == osa["resync"]["objects"]
    assert value(dumped, "esxi_vsan_resync_eta_seconds", cluster="vsan-osa") == osa["resync"]["eta_seconds"]
    assert value(dumped, "esxi_vsan_cluster_info", cluster="vsan-esa", architecture="esa") == 1.0
    found = samples(dumped)
    esa_series = {n for n, labels, _ in found if labels.get("cluster") == "vsan-esa"}
    assert not any(n.startswith("esxi_vsan_disk_group_") for n in esa_series)  # ESA: no disk groups
    assert {n for n, labels, _ in found if labels.get("cluster") == "vsan-esa" and labels.get("disk_group", "") != ""} == set()
    assert {
        "esxi_vsan_host_write_latency_mean_seconds",
        "esxi_vsan_vm_read_latency_mean_seconds",
        "esxi_vsan_disk_tier_write_latency_mean_seconds",  # its storage pool disks, per tier
        "esxi_vsan_disk_kernel_latency_mean_seconds",
        "esxi_vsan_nic_received_packet_loss_ratio",
        "esxi_vsan_host_backend_resync_read_bytes_per_second",
    } <= esa_series
    for cluster in ("vsan-osa", "vsan-esa"):
        assert value(dumped, "esxi_vsan_up", cluster=cluster) == 1.0
        assert value(dumped, "esxi_vsan_samples_total", cluster=cluster) == 1.0
        assert value(dumped, "esxi_vsan_errors_total", cluster=cluster) is None
    # The uuids only in the info families.
    uuids = {c["uuid"] for c in doc.values()}
    assert [(n, labels) for n, labels, _ in found if not n.endswith("_info") and set(labels.values()) & uuids] == []
    # The non-vSAN host's cluster shows no vSAN series at all.
    assert not any(labels.get("host") == "esx41.lab.local" for n, labels, _ in found if n.startswith("esxi_vsan_"))


def test_a_target_without_vsan_makes_no_vsan_call(tmp_path):
    """The storage simulator logs every vSAN call it serves ("vsan: METHOD ..."). With the stock
    fixture (no vSAN cluster) the exporter reads the inventory and makes none; with vsan.json, the
    same run makes them (so the check can fail)."""
    calls = {}
    for name, path in (("plain", FIXTURE), ("vsan", VSAN_FIXTURE)):
        sim = StorageSim(tmp_path / name, fixture=path)
        try:
            result = dump(sim, tmp_path)
        finally:
            sim.stop()
        assert result.returncode == 0, result.stderr
        calls[name] = [line for line in (tmp_path / name / "storagesim.log").read_text().splitlines() if "vsan: " in line]
    assert calls["plain"] == []
    # Every VsanPerfQueryPerf the reference allows: one wildcard spec alone, one entity type a call,
    # each type of each cluster once (OSA: no storage pool disks, ESA: no disk groups); none refused.
    assert [line for line in calls["vsan"] if "refused" in line] == []
    asked = sorted(
        line.split("vsan: VsanPerfQueryPerf specs ", 1)[1] for line in calls["vsan"] if "VsanPerfQueryPerf specs" in line
    )
    assert asked == sorted(f"1 spec: {kind}:*" for esa in (False, True) for kind in vperf.entity_types(esa))
    assert len(asked) == 14 + 13
    methods = {line.split("vsan: ", 1)[1].split()[0] for line in calls["vsan"]}
    assert {
        "VsanPerfQueryPerf",
        "VsanQueryVcClusterHealthSummary",
        "VsanQuerySpaceUsage",
        "QuerySyncingVsanObjectsSummary",
        "QueryVsanManagedDisks",
    } <= methods
    # ESA disks: one QueryVsanManagedDisks per ESA host, filtered to its storage pool, which names
    # them all: no QueryDisksForVsan, and no disk query for an OSA host
    managed = [line.split("vsan: ", 1)[1].split(":")[0] for line in calls["vsan"] if "QueryVsanManagedDisks" in line]
    assert sorted(managed) == [f"QueryVsanManagedDisks host esx3{n}.lab.local (storagePool)" for n in (1, 2)]
    assert "QueryDisksForVsan" not in methods


# Production windows shortened for a live run (as tests/integration/test_alerts_integration.py does): samples
# every 2 s instead of 300, read every second, every `for:` 5 s.
VSAN_FAST = {
    "for_vsan_performance": "5s",
    "for_vsan_congestion": "5s",
    "for_vsan_health": "5s",
    "for_vsan_stale": "5s",
    "vsan_sample_max_age_seconds": 10,
    "for_vsan_network": "5s",
    "for_vsan_resync": "5s",
    "for_link_saturation": "5s",
    "vsan_nic_error_window": "10s",
}


def alert_fixture(path: Path) -> Path:
    """vsan.json with 2 s samples, vsan-esa's performance service off (no sample ever: stale) and
    its datastore 95% full (both space alerts); vsan-osa as it is."""
    doc = copy.deepcopy(fixture())
    doc["vsan"]["sample_seconds"] = 2
    esa = next(c for c in doc["vsan"]["clusters"] if c["name"] == "vsan-esa")
    esa.setdefault("faults", {})["perf"] = "NotFound"
    esa["space"]["free_bytes"] = esa["space"]["total_bytes"] // 20
    # vsan-osa's network and backend past their lines: esx22's vmnic loses 1.2% (12 per mille) and
    # counts CRC errors, its TCP retransmits 2%; esx23's vmnic receives 1.1 GB/s of 1.25 (10 Gb/s);
    # esx21's resync moves more than its VMs.
    osa = next(c for c in doc["vsan"]["clusters"] if c["name"] == "vsan-osa")
    osa["perf"][vm.NIC]["esx22.lab.local|vmnic1"] |= {"rxPacketsLossRate": 12, "rxCrcErrRaw": [3, 5, 7, 9]}
    osa["perf"][vm.TCPIP]["esx22.lab.local|defaultTcpipStack"]["tcpTxRexmitRate"] = 20  # per mille
    osa["perf"][vm.NIC]["esx23.lab.local|vmnic1"]["rxThroughput"] = 1100000000
    osa["perf"][vm.HOST_BACKEND]["esx21.lab.local"] |= {"throughputRead": 2000000, "throughputWrite": 1000000}
    path.write_text(json.dumps(doc))
    return path


def expected_alerts(doc: dict) -> set[tuple]:
    """Where the fixture's values cross the thresholds file's lines: (alertname, cluster, host,
    disk_group or device, direction or layer)."""
    out = set()
    interval = float(doc["vsan"].get("sample_seconds", 300))  # a congestion count is over the sample's interval
    for c in doc["vsan"]["clusters"]:
        name, perf = c["name"], c["perf"]
        if "perf" not in (c.get("faults") or {}):
            for host, cells in perf.get(vm.HOST, {}).items():
                for direction, latency, ops in (
                    ("read", "latencyAvgRead", "iopsRead"),
                    ("write", "latencyAvgWrite", "iopsWrite"),
                ):
                    values = cells.get(latency)
                    values = values if isinstance(values, list) else [values]
                    if (
                        all(v is not None and v / 1e6 > LIMITS.latency_critical_seconds for v in values)
                        and cells.get(ops, 0) >= 10
                    ):
                        out.add(("EsxiVsanHostLatencyCritical", name, host, "", direction))
                if (cells.get("congestion") or 0) / interval > LIMITS.vsan_congestion_per_second:
                    out.add(("EsxiVsanCongestion", name, host, "", ""))
            groups = {g["cache"]: h["name"] for h in doc["hosts"] for g in (h.get("vsan") or {}).get("disk_groups", [])}
            disks = {
                (d if isinstance(d, str) else d["device"]): h["name"]
                for h in doc["hosts"]
                for g in (h.get("vsan") or {}).get("disk_groups", [])
                for d in [g["cache"], *g["capacity"]]
            }
            for group, cells in perf.get(vm.DISK_GROUP, {}).items():
                for layer in ("ssd", "log", "mem", "slab", "comp", "iops"):
                    if (cells.get(f"{layer}Congestion") or 0) / interval > LIMITS.vsan_congestion_per_second:
                        out.add(("EsxiVsanCongestion", name, groups[group], group, layer))
                if cells.get("wbFreePct") is not None and cells["wbFreePct"] / 100 < LIMITS.vsan_write_buffer_free_min_ratio:
                    out.add(("EsxiVsanWriteBufferLow", name, groups[group], group, ""))
            hosts = {h["name"]: h for h in doc["hosts"]}
            for host, cells in perf.get(vm.HOST_NETWORK, {}).items():
                for direction, label in (("receive", "rxPacketsLossRate"), ("transmit", "txPacketsLossRate")):
                    if (cells.get(label) or 0) / 1000 > LIMITS.vsan_packet_loss_ratio:
                        out.add(("EsxiVsanPacketLoss", name, host, "", direction))
            for key, cells in perf.get(vm.TCPIP, {}).items():
                values = cells.get("tcpTxRexmitRate")
                values = values if isinstance(values, list) else [values]
                if all((v or 0) / 1000 > LIMITS.vsan_tcp_retransmit_ratio for v in values):
                    out.add(("EsxiVsanTcpRetransmitsHigh", name, key.split("|")[0], "", ""))
            for key, cells in perf.get(vm.NIC, {}).items():
                host, vmnic = key.split("|")
                for direction, label in (("receive", "rxPacketsLossRate"), ("transmit", "txPacketsLossRate")):
                    if (cells.get(label) or 0) / 1000 > LIMITS.vsan_packet_loss_ratio:
                        out.add(("EsxiVsanPacketLoss", name, host, vmnic, direction))
                speed = next(p["speed_mb"] for p in hosts[host]["network"]["pnics"] if p["device"] == vmnic) * 1e6 / 8
                for direction, label in (("receive", "rxThroughput"), ("transmit", "txThroughput")):
                    if (cells.get(label) or 0) / (speed * LIMITS.link_payload_ratio) > LIMITS.link_saturation_ratio:
                        out.add(("EsxiVsanNicSaturated", name, host, vmnic, direction))
                if isinstance(cells.get("rxCrcErrRaw"), list):  # a counter that moves
                    out.add(("EsxiVsanNicErrorsRising", name, host, vmnic, ""))
            for host, cells in perf.get(vm.HOST_BACKEND, {}).items():
                resync = cells.get("throughputRecWrite", 0) + cells.get("tputResyncRead", 0)
                vms = cells.get("throughputRead", 0) + cells.get("throughputWrite", 0)
                if resync > LIMITS.vsan_resync_over_vm_ratio * vms and resync >= LIMITS.vsan_resync_min_bytes_per_second:
                    out.add(("EsxiVsanResyncCompetesWithVms", name, host, "", ""))
            for kind in (vm.CACHE_DISK, vm.CAPACITY_DISK):
                for device, cells in perf.get(kind, {}).items():
                    iops = (cells.get("iopsDevRead") or 0) + (cells.get("iopsDevWrite") or 0)
                    if (cells.get("latencyDevDAvg") or 0) / 1e6 > LIMITS.latency_critical_seconds and iops >= 10:
                        out.add(("EsxiVsanDiskLatencyHigh", name, disks[device], device, ""))
        else:
            out.add(("EsxiVsanSamplesStale", name, "", "", ""))
        if c["objects"].get("inaccessible"):
            out.add(("EsxiVsanObjectsInaccessible", name, "", "", ""))
        if c["objects"].get("reducedavailabilitywithnorebuild"):
            out.add(("EsxiVsanObjectsReducedAvailability", name, "", "", ""))
        used = 1 - c["space"]["free_bytes"] / c["space"]["total_bytes"]
        if used > LIMITS.vsan_space_used_warning_ratio:
            out.add(("EsxiVsanSpaceUsedHigh", name, "", "", ""))
        if used > LIMITS.vsan_space_used_critical_ratio:
            out.add(("EsxiVsanSpaceUsedCritical", name, "", "", ""))
        if c["health"] == "red":
            out.add(("EsxiVsanHealthRed", name, "", "", ""))
    return out


def test_every_vsan_alert_fires_where_the_values_say_and_nowhere_else(tmp_path):
    doc = json.loads(alert_fixture(tmp_path / "vsan-alerts.json").read_text())
    expected = expected_alerts(doc)
    # every vSAN alert of the rule file is driven by this fixture, but the ESA disks': vsan-esa's
    # performance service is off here (its samples go stale); the next test drives that one
    assert {a for a, *_ in expected} == {
        name for name in _alert_names() if name.startswith("EsxiVsan") and name != "EsxiVsanEsaDiskLatencyHigh"
    }
    with _alerting(tmp_path, tmp_path / "vsan-alerts.json") as prometheus:

        def firing() -> set[tuple]:
            found = set()
            for s in prometheus.query('ALERTS{alertstate="firing",alertname=~"EsxiVsan.*"}'):
                labels = s["metric"]
                where = labels.get("disk_group") if labels.get("alertname") != "EsxiVsanDiskLatencyHigh" else labels.get("device")
                where = labels.get("vmnic") or where
                what = labels.get("direction") or labels.get("layer") or ""
                found.add((labels["alertname"], labels["cluster"], labels.get("host", ""), where or "", what))
            return found

        fired = _settled(firing, expected, within=90)
        others = prometheus.query('ALERTS{alertstate="firing",alertname=~"EsxiCollectorFailing|EsxiVsphereTargetDown"}')
        up = {s["metric"]["cluster"]: float(s["value"][1]) for s in prometheus.query("esxi_vsan_up")}
        errors = {
            (s["metric"]["cluster"], s["metric"]["call"]): float(s["value"][1])
            for s in prometheus.query("esxi_vsan_errors_total")
        }
        osa_samples = prometheus.query('esxi_vsan_samples_total{cluster="vsan-osa"}')
    assert fired == expected
    assert others == []
    # the ESA cluster's performance service is off: its perf calls fail, nothing else does
    assert up == {"vsan-osa": 1.0, "vsan-esa": 0.0}
    assert set(errors) == {("vsan-esa", "perf")} and errors[("vsan-esa", "perf")] >= 2
    assert float(osa_samples[0]["value"][1]) >= 5  # a new sample every 2 s, each taken once


def test_an_esa_disk_over_the_latency_line_fires_its_alert_and_no_other_vsan_alert(tmp_path):
    """One ESA disk's performance tier writes at 62 ms (the vSAN layer's 5-minute mean; 600 writes a
    second): EsxiVsanEsaDiskLatencyHigh fires for that disk, tier and direction, through the
    simulator, the exporter and a real Prometheus, and no other vSAN alert fires on the ESA cluster."""
    doc = copy.deepcopy(fixture())
    doc["vsan"]["sample_seconds"] = 2
    esa = next(c for c in doc["vsan"]["clusters"] if c["name"] == "vsan-esa")
    slow = next(iter(esa["perf"][vm.ESA_DISK_LAYER]))
    esa["perf"][vm.ESA_DISK_LAYER][slow] |= {"avgLatWritePerf": 62000, "iopsWritePerf": 600}
    host = next(
        h["name"]
        for h in doc["hosts"]
        if slow in [d if isinstance(d, str) else d["device"] for d in (h.get("vsan") or {}).get("storage_pool", [])]
    )
    (tmp_path / "esa-slow.json").write_text(json.dumps(doc))
    expected = {("EsxiVsanEsaDiskLatencyHigh", host, slow, "performance", "write")}
    with _alerting(tmp_path, tmp_path / "esa-slow.json") as prometheus:

        def firing() -> set[tuple]:
            return {
                (
                    s["metric"]["alertname"],
                    s["metric"].get("host", ""),
                    s["metric"].get("device", ""),
                    s["metric"].get("tier", ""),
                    s["metric"].get("direction", ""),
                )
                for s in prometheus.query('ALERTS{alertstate="firing",alertname=~"EsxiVsan.*",cluster="vsan-esa"}')
            }

        fired = _settled(firing, expected, within=60)
        pending = prometheus.query('ALERTS{alertstate="pending",alertname="EsxiVsanEsaDiskLatencyHigh"}')
    assert fired == expected
    assert pending == []


@contextlib.contextmanager
def _alerting(tmp_path: Path, fixture_path: Path):
    """The storage simulator on `fixture_path`, serve on it (1 s rounds) and a real Prometheus with
    the rule file at VSAN_FAST's windows; yields the Prometheus, and stops all three."""
    sim = StorageSim(tmp_path / "sim", fixture=fixture_path)
    exporter = prometheus = None
    try:
        exporter = Exporter(
            *_vsphere_args(sim, _password(tmp_path)), "--vsphere.interval=1s", "--vsphere.vsan-interval=1s",
            log_path=tmp_path / "exporter.log",
        )  # fmt: skip
        rules = rule_file(tmp_path / "esxi-storage.rules.yml", VSAN_FAST)
        prometheus = Prometheus(tmp_path / "prometheus", [f"127.0.0.1:{exporter.port}"], rule_files=[rules])
        yield prometheus
    finally:
        stop_all(prometheus, exporter, sim)


def _settled(firing, expected: set, within: float) -> set:
    """What `firing()` gives once it equals `expected` (or `within` seconds passed), and 5 s
    later, so that an alert firing late is seen too."""
    deadline = time.monotonic() + within
    while firing() != expected and time.monotonic() < deadline:
        time.sleep(1)
    time.sleep(5)
    return firing()


def _alert_names() -> set[str]:
    import yaml

    groups = yaml.safe_load((ROOT / "alerts" / "esxi-storage.rules.yml").read_text())["groups"]
    return {rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule}


def test_one_clusters_faults_hide_nothing_else(tmp_path):
    """vsan-osa's health, space and resync calls fault, vsan-esa's performance service is off: every
    other call of both clusters is read, and so is every host's LUN data; each failure is counted
    against its cluster and call, once, in one log line each, without a traceback."""
    doc = fixture()
    clusters = {c["name"]: c for c in doc["vsan"]["clusters"]}
    clusters["vsan-osa"]["faults"] = {"health": "VsanFault", "space": "NotSupported", "resync": "Timedout"}
    clusters["vsan-esa"]["faults"] = {"perf": "NotFound"}
    path = tmp_path / "faulty.json"
    path.write_text(json.dumps(doc))
    sim = StorageSim(tmp_path / "sim", fixture=path)
    try:
        result = dump(sim, tmp_path)
    finally:
        sim.stop()
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    text = result.stdout
    # vsan-osa: performance read, health, space and resync absent (not zero), each call counted
    assert value(text, "esxi_vsan_host_write_latency_mean_seconds", cluster="vsan-osa", host="esx22.lab.local") is not None
    for family in ("esxi_vsan_cluster_health", "esxi_vsan_objects", "esxi_vsan_capacity_bytes", "esxi_vsan_resync_bytes"):
        assert not [labels for n, labels, _ in samples(text) if n == family and labels["cluster"] == "vsan-osa"], family
    assert {
        call: value(text, "esxi_vsan_errors_total", cluster="vsan-osa", call=call) for call in ("health", "space", "resync")
    } == {
        "health": 1.0,
        "space": 1.0,
        "resync": 1.0,
    }
    # vsan-esa: no performance (one call per entity type, each failed once), the rest read
    assert value(text, "esxi_vsan_sample_timestamp_seconds", cluster="vsan-esa") is None
    assert {
        labels["entity_type"]: v
        for n, labels, v in samples(text)
        if n == "esxi_vsan_errors_total" and labels["cluster"] == "vsan-esa"
    } == {kind: 1.0 for kind in vperf.entity_types(esa=True)}
    assert value(text, "esxi_vsan_cluster_health", cluster="vsan-esa", state="green") == 1.0
    assert value(text, "esxi_vsan_capacity_bytes", cluster="vsan-esa") is not None
    assert {value(text, "esxi_vsan_up", cluster=c) for c in ("vsan-osa", "vsan-esa")} == {0.0}
    # the hosts' LUN collection is untouched
    lun_hosts = {labels["host"] for n, labels, _ in samples(text) if n == "esxi_lun_queue_depth"}
    assert {h["name"] for h in doc["hosts"]} <= lun_hosts
    # one line per cluster and failure: vsan-esa's three performance calls failing alike are one
    warnings = [line for line in result.stderr.splitlines() if "vSAN" in line and "failed" in line]
    assert len(warnings) == 4 and all("vsan-osa" in w or "vsan-esa" in w for w in warnings)
    (esa,) = [w for w in warnings if "vsan-esa" in w]
    calls = ", ".join(f"perf:{kind}" for kind in vperf.entity_types(esa=True))
    assert f"{calls} of cluster vsan-esa failed: NotFound" in esa


ESA_DISKS = {
    ("esx31.lab.local", "eui.0025384003110000"),
    ("esx31.lab.local", "eui.0025384003120000"),
    ("esx32.lab.local", "eui.0025384003210000"),
    ("esx32.lab.local", "eui.0025384003220000"),
}


def _esa_disks(text: str) -> dict[tuple[str, str], str]:
    """(host, device) -> vSAN uuid of vsan-esa's disks in esxi_vsan_disk_info."""
    return {
        (labels["host"], labels["device"]): labels["vsan_uuid"]
        for n, labels, _ in samples(text)
        if n == "esxi_vsan_disk_info" and labels["cluster"] == "vsan-esa"
    }


@pytest.mark.parametrize(
    ("case", "faults", "hides", "named_by"),
    [
        # the feared real behaviour: QueryDisksForVsan does not list pool disks in use
        ("disk query hides the pool", {}, True, {"esx31.lab.local": "managed", "esx32.lab.local": "managed"}),
        # QueryVsanManagedDisks faults for both hosts (a server without it, a host it cannot reach)
        (
            "managed disks fault",
            {"esx31.lab.local": "NotSupported", "esx32.lab.local": "VsanFault"},
            False,
            {"esx31.lab.local": "fallback", "esx32.lab.local": "fallback"},
        ),
        # both at once for esx31: nothing names its disks; esx32's are named
        ("neither names esx31", {"esx31.lab.local": "NotSupported"}, True, {"esx32.lab.local": "managed"}),
    ],
)
def test_esa_disks_are_named_by_either_disk_query(tmp_path, case, faults, hides, named_by):
    """Every ESA disk is named (its vSAN uuid beside its device) by QueryVsanManagedDisks or, for a
    host where it faults, by QueryDisksForVsan; each fault counted (call managed_disks) and logged
    once per host; the disk no query names has its values counted as unknown_entity, never placed."""
    doc = fixture()
    esa = next(c for c in doc["vsan"]["clusters"] if c["name"] == "vsan-esa")
    esa["managed_disks_faults"], esa["disk_query_hides_pool"] = faults, hides
    path = tmp_path / "esa.json"
    path.write_text(json.dumps(doc))
    sim = StorageSim(tmp_path / "sim", fixture=path)
    try:
        result = dump(sim, tmp_path)
    finally:
        sim.stop()
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    text = result.stdout
    expected = {disk for disk in ESA_DISKS if disk[0] in named_by}
    disks = _esa_disks(text)
    assert set(disks) == expected and all(disks.values()), case
    for host, device in expected:  # each named disk's values placed under its device
        assert value(text, "esxi_vsan_disk_kernel_latency_mean_seconds", cluster="vsan-esa", host=host, device=device) is not None
    errors = {
        labels["call"]: v for n, labels, v in samples(text) if n == "esxi_vsan_errors_total" and labels["cluster"] == "vsan-esa"
    }
    assert errors == ({"managed_disks": float(len(faults))} if faults else {})
    lines = [line for line in result.stderr.splitlines() if "QueryVsanManagedDisks failed" in line]
    assert sorted(line.split(" for host ")[1].split(":")[0] for line in lines) == sorted(faults)
    assert all(f": {fault}" in line for line in lines for host, fault in faults.items() if host in line)
    unplaced = sum(1 for h, _ in ESA_DISKS if h not in named_by) * 2  # two ESA entity types a disk
    dropped = value(text, "esxi_vsan_dropped_values_total", cluster="vsan-esa", reason="unknown_entity")
    assert (dropped or 0.0) == unplaced
    assert value(text, "esxi_vsan_unnamed_disks", cluster="vsan-esa") == 0.0  # no disk listed without its uuid


def test_an_unmounted_or_faulted_pool_disk_is_still_named(tmp_path):
    """QueryVsanManagedDisks reports esx32's second disk unmounted and with an error: the disk is
    named as every other (its entities still report), and shown by esxi_vsan_disk_mounted 0 and
    esxi_vsan_disk_fault_info; the other disks are mounted (1) with no fault series."""
    doc = fixture()
    esx32 = next(h for h in doc["hosts"] if h["name"] == "esx32.lab.local")
    esx32["vsan"]["storage_pool"][1] = {"device": esx32["vsan"]["storage_pool"][1], "unmounted": True, "fault": "VsanFault"}
    path = tmp_path / "esa.json"
    path.write_text(json.dumps(doc))
    sim = StorageSim(tmp_path / "sim", fixture=path)
    try:
        result = dump(sim, tmp_path)
    finally:
        sim.stop()
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert set(_esa_disks(text)) == ESA_DISKS
    mounted = {
        (labels["host"], labels["device"]): v
        for n, labels, v in samples(text)
        if n == "esxi_vsan_disk_mounted" and labels["cluster"] == "vsan-esa"
    }
    bad = ("esx32.lab.local", "eui.0025384003220000")
    assert mounted == {disk: 0.0 if disk == bad else 1.0 for disk in ESA_DISKS}
    faults = [
        (labels["host"], labels["device"], labels["fault"], v)
        for n, labels, v in samples(text)
        if n == "esxi_vsan_disk_fault_info"
    ]
    assert faults == [(*bad, "VsanFault", 1.0)]
    assert value(text, "esxi_vsan_disk_kernel_latency_mean_seconds", cluster="vsan-esa", host=bad[0], device=bad[1]) is not None


def test_a_uuid_the_last_discovery_did_not_name_is_named_by_the_next_round(tmp_path):
    """A VM created after discovery: the performance service reports its uuid, which nothing names
    yet; it is counted (unknown_entity), and the round discovers again at once, so the next
    round exports the VM."""
    from exporter.vsan.source import VsanSource
    from exporter.vsphere import TargetConfig, VsphereTarget

    sim = StorageSim(tmp_path / "sim", fixture=VSAN_FIXTURE)
    try:
        config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(_password(tmp_path)), ca_file=str(sim.cert))
        target = VsphereTarget(config)
        source = VsanSource(target, target.store)
        assert source.discover()
        osa = next(c for c in source.clusters if c.name == "vsan-osa")
        uuid, _host = osa.vms.pop("db22")  # as if db22 were created after the discovery
        del osa.names.vms[uuid]
        source.collect()
        assert "db22" not in target.store.vsan["vsan-osa"].sample.vms
        assert target.store.health[("vsan", "vsan-osa")].dropped == {"unknown_entity": 1}
        source.unnamed = False
        source.taken.clear()  # the same sample again, as a new one would come
        source.run_round()  # collects (meets the uuid again), then discovers at once
        assert not source.unnamed
        assert "db22" in next(c for c in source.clusters if c.name == "vsan-osa").vms
        source.taken.clear()
        source.collect()
        assert "db22" in target.store.vsan["vsan-osa"].sample.vms
    finally:
        target.client.close()
        sim.stop()


@pytest.mark.parametrize(
    ("api_version", "form", "vm_call"),
    [
        ("8.0.0.4", "multi", "1 spec: virtual-machine:<6 uuids>"),  # vSAN 8.0U3: multi-entity specs
        ("8.0.0.2", "plain", "6 specs: virtual-machine x6"),  # vSAN 8.0U1: plain specs, 100 a call
    ],
)
def test_a_failing_type_loses_only_itself_and_a_refused_wildcard_is_asked_by_uuid(tmp_path, caplog, api_version, form, vm_call):
    """vsan-osa: its VMs and capacity disks refuse the wildcard, its disk groups answer NotSupported;
    vsan-esa's performance service answers NotSupported (the host asked is not the stats master).
    Over three rounds: the refusing types are asked by uuid (multi-entity specs or plain ones, as
    the server's vSAN version allows) from the first round on and their wildcard is not asked
    again; every other type of vsan-osa is read; each failing call is counted by cluster and
    entity type every round and logged once; the simulator refuses nothing else the exporter sends."""
    import logging

    from exporter.vsan.source import VsanSource
    from exporter.vsphere import TargetConfig, VsphereTarget

    doc = fixture()
    doc["vsan"]["api_version"] = api_version
    clusters = {c["name"]: c for c in doc["vsan"]["clusters"]}
    clusters["vsan-osa"]["wildcard_refused"] = [vm.VM, vm.CAPACITY_DISK]
    clusters["vsan-osa"]["perf_faults"] = {vm.DISK_GROUP: "NotSupported"}
    clusters["vsan-esa"]["faults"] = {"perf": "NotSupported"}
    path = tmp_path / "strict.json"
    path.write_text(json.dumps(doc))
    sim = StorageSim(tmp_path / "sim", fixture=path)
    target = None
    try:
        config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(_password(tmp_path)), ca_file=str(sim.cert))
        target = VsphereTarget(config)
        source = VsanSource(target, target.store)
        with caplog.at_level(logging.INFO, logger="exporter.vsan.source"):
            assert source.discover()
            for _ in range(3):
                source.taken.clear()  # every round takes a sample, as every 5 minutes
                source.collect()
        osa = target.store.vsan["vsan-osa"].sample
        health = {name: target.store.health[("vsan", name)] for name in ("vsan-osa", "vsan-esa")}
    finally:
        if target is not None:
            target.client.close()
        sim.stop()
    perf = clusters["vsan-osa"]["perf"]
    assert set(osa.vms) == set(perf[vm.VM])  # asked by uuid
    capacity = {device for device in perf[vm.CAPACITY_DISK]}
    assert capacity and capacity <= {device for _host, device in osa.disks}  # asked by uuid
    assert set(osa.hosts) == set(perf[vm.HOST]) and osa.cluster  # the wildcard still serves these
    assert osa.disk_groups == {}  # NotSupported: this type only is lost
    assert source.forms == {("vsan-osa", vm.VM): form, ("vsan-osa", vm.CAPACITY_DISK): form}
    assert health["vsan-osa"].errors == {f"perf:{vm.DISK_GROUP}": 3}
    assert health["vsan-esa"].errors == {f"perf:{kind}": 3 for kind in vperf.entity_types(esa=True)}
    assert health["vsan-esa"].up == 0 and health["vsan-osa"].up == 0
    log_lines = (tmp_path / "sim" / "storagesim.log").read_text().splitlines()
    refusals = [line for line in log_lines if "refused" in line]
    assert len(refusals) == 2 and all("refuses the wildcard (the fixture's)" in line for line in refusals)  # once a type
    assert sum(vm_call in line for line in log_lines) == 3  # the VMs, by uuid, every round
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings  # once per cluster and failure, not every round
    assert any("perf:disk-group of cluster vsan-osa failed: NotSupported" in w for w in warnings)
    calls = ", ".join(f"perf:{kind}" for kind in vperf.entity_types(esa=True))
    assert any(f"{calls} of cluster vsan-esa failed: NotSupported" in w for w in warnings)
    moved = [r.getMessage() for r in caplog.records if "refused the wildcard query" in r.getMessage()]
    assert len(moved) == 2


def test_over_400_vms_by_uuid_are_split_as_the_reference_allows(tmp_path):
    """A generated cluster of 4 hosts and 404 VMs asked in each form: multi-entity specs of 400
    uuids at most, plain specs 100 a call at most; the simulator refuses none, and every form
    places the same values as the wildcard."""
    from exporter.vsan import perf
    from exporter.vsan.source import VsanSource
    from exporter.vsphere import TargetConfig, VsphereTarget

    sim = StorageSim(tmp_path / "sim", "-hosts", "4", "-luns", "1", "-vms", "101", "-vsan-clusters", "1", fixture=None)
    target = None
    placed = {}
    try:
        config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(_password(tmp_path)), ca_file=str(sim.cert))
        target = VsphereTarget(config)
        source = VsanSource(target, target.store)
        assert source.discover()
        (cluster,) = source.clusters
        assert len(cluster.vms) == 404
        for form in perf.FORMS:
            source.first_form = form
            source.taken.clear()
            source.collect()
            sample = target.store.vsan[cluster.name].sample
            placed[form] = (len(sample.vms), len(sample.hosts), len(sample.disks), len(sample.disk_groups))
            assert target.store.health[("vsan", cluster.name)].errors == {}, form
    finally:
        if target is not None:
            target.client.close()
        sim.stop()
    assert placed[perf.WILDCARD] == (404, 4, 32, 8)
    assert placed[perf.MULTI] == placed[perf.PLAIN] == placed[perf.WILDCARD]
    lines = (tmp_path / "sim" / "storagesim.log").read_text().splitlines()
    assert [line for line in lines if "refused" in line] == []
    asked = [line.split("VsanPerfQueryPerf specs ", 1)[1] for line in lines if "VsanPerfQueryPerf specs" in line]
    vm_calls = [a for a in asked if "virtual-machine" in a]
    assert vm_calls == [
        "1 spec: virtual-machine:*",
        "1 spec: virtual-machine:<400 uuids>",
        "1 spec: virtual-machine:<4 uuids>",
        "100 specs: virtual-machine x100",
        "100 specs: virtual-machine x100",
        "100 specs: virtual-machine x100",
        "100 specs: virtual-machine x100",
        "4 specs: virtual-machine x4",
    ]


def test_every_spec_has_its_window_and_none_spans_more_than_the_lookback(tmp_path):
    """startTime and endTime are set in every spec the source sends; after a long outage (the last
    sample taken two days ago) the window is still the 15-minute lookback, far under the
    reference's 24 hours, and the newest sample is taken."""
    from exporter.vsan.source import VsanSource
    from exporter.vsphere import TargetConfig, VsphereTarget

    sim = StorageSim(tmp_path / "sim", fixture=VSAN_FIXTURE)
    target = None
    sent = []
    try:
        config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(_password(tmp_path)), ca_file=str(sim.cert))
        target = VsphereTarget(config)
        source = VsanSource(target, target.store)
        assert source.discover()
        query_perf = source.service.query_perf

        def recording(moid, specs, *args, **kwargs):
            sent.extend(specs)
            return query_perf(moid, specs, *args, **kwargs)

        source.service.query_perf = recording
        now = time.time()
        source.taken = {c.name: now - 2 * 86400 for c in source.clusters}
        source.collect(now)
        taken = dict(source.taken)
    finally:
        if target is not None:
            target.client.close()
        sim.stop()
    assert len(sent) == len(vperf.entity_types(esa=False)) + len(vperf.entity_types(esa=True))  # one wildcard spec each
    for spec in sent:
        assert spec.startTime is not None and spec.endTime is not None
        assert spec.endTime.timestamp() == pytest.approx(now)
        assert spec.startTime.timestamp() == pytest.approx(now - 900)
    assert all(stamp > now - 900 for stamp in taken.values())
