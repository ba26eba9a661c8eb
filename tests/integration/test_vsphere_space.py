"""Datastore space and VM snapshots through the storage simulator (simulators/storagesim/datastores.go, the
fixture plus simulators/storagesim/space.json), `serve` following them, and a real Prometheus with the
project's rules: exact figures once per datastore, capacity 0 and inaccessible without figures,
snapshot trees and their size on disk, figures that move followed without a walk, and every space
and snapshot alert firing where the fixture says and nowhere else. One context for the module."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from simulators.storagesim.sims import FIXTURE, HERE, StorageSim
from tests.support.promtext import samples as all_samples
from tests.support.rules import rule_file
from tests.support.servers import Prometheus, stop_all
from tests.support.vsphere_api import serve_vsphere

pytestmark = pytest.mark.integration

SPACE = json.loads((HERE / "space.json").read_text())
FAST = {
    "for_datastore_space": "5s",
    "for_datastore_fill": "5s",
    "datastore_fill_window": "30s",
    "for_datastore_inaccessible": "5s",
    "for_snapshot_consolidation": "5s",
}
GROW = 100 * 2**20  # web01's snapshot grows by 100 MiB a second, taken from ds-shared-02
FILL = 10**8  # nfs-vm-01 loses 100 MB a second (a quarter used: under the floor of the trend alert)


def _fixture(path: Path) -> Path:
    doc = json.loads(FIXTURE.read_text())
    space = json.loads(json.dumps(SPACE))
    space["snapshots"]["web01"]["grow_bytes_per_second"] = GROW
    space["datastores"]["nfs-vm-01"]["fill_bytes_per_second"] = FILL
    # hostile answers beside them: figures vCenter never sends, a chain 1,000 deep, 100,000 files
    space["extra_datastores"] += [
        {"name": "ds-negative", "type": "VMFS", "capacity": -1, "free": 0},
        {"name": "ds-absurd", "type": "VMFS", "capacity": 9223372036854775807, "free": 100},
    ]
    space["snapshots"]["batch01"] = {"chain": 1000, "extra_files": 100_000}
    doc["space"] = space
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("space")
    sim = StorageSim(tmp / "sim", fixture=_fixture(tmp / "fixture.json"))
    exporter = prometheus = None
    try:
        exporter = serve_vsphere(sim, tmp, "--vsphere.vms", "--vsphere.interval=1s")
        rules = rule_file(tmp / "esxi-storage.rules.yml", FAST)
        prometheus = Prometheus(tmp / "prometheus", [f"127.0.0.1:{exporter.port}"], rule_files=[rules])
        started = time.time()
        deadline = time.monotonic() + 60
        while "esxi_vm_snapshots{" not in exporter.metrics() and time.monotonic() < deadline:
            time.sleep(0.5)
        yield sim, exporter, prometheus, started
    finally:
        stop_all(prometheus, exporter, sim)


def samples(text: str, name: str) -> list[tuple[dict, float]]:
    return [(labels, value) for n, labels, value in all_samples(text) if n == name]


def _by_datastore(text: str, name: str) -> dict[str, float]:
    found = {}
    for labels, value in samples(text, name):
        assert labels["datastore"] not in found, f"{name}: {labels['datastore']} twice"
        assert labels["url"].startswith("ds:///vmfs/volumes/") and labels["url"].endswith("/")
        found[labels["datastore"]] = value
    return found


def test_each_datastore_once_with_its_figures(stack):
    _, exporter, _, _ = stack
    text = exporter.metrics()
    capacity = _by_datastore(text, "esxi_datastore_capacity_bytes")
    free = _by_datastore(text, "esxi_datastore_free_bytes")
    provisioned = _by_datastore(text, "esxi_datastore_provisioned_bytes")
    uncommitted = _by_datastore(text, "esxi_datastore_uncommitted_bytes")
    accessible = _by_datastore(text, "esxi_datastore_accessible")
    for name in ("ds-shared-01", "ds-iscsi-01"):  # neither moves
        figures = SPACE["datastores"][name]
        assert capacity[name] == figures["capacity"] and free[name] == figures["free"]
        assert provisioned[name] == figures["capacity"] - figures["free"] + max(figures["uncommitted"], 0)
    assert uncommitted["ds-iscsi-01"] == 0  # the fixture's -1 GiB counts as none
    # ds-shared-01 is mounted by two hosts, ds-local-03 by one, vvol-01 by none: one series each
    assert {"ds-shared-01", "ds-local-03", "vvol-01", "nfs41-backup", "ds-thin-pool"} <= set(accessible)
    types = {labels["datastore"]: labels["type"] for labels, _ in samples(text, "esxi_datastore_accessible")}
    assert (types["vvol-01"], types["nfs41-backup"], types["nfs-vm-01"], types["ds-shared-01"]) == (
        "vvol",
        "nfs41",
        "nfs",
        "vmfs",
    )
    # a capacity of 0 and an inaccessible datastore: a clear state, no figures to divide by
    assert accessible["ds-lost-01"] == 0 and accessible["ds-thin-pool"] == 1
    for name in ("ds-lost-01", "ds-thin-pool"):
        assert name not in capacity and name not in free and name not in provisioned
    modes = {(labels["datastore"], labels["mode"]): value for labels, value in samples(text, "esxi_datastore_maintenance_mode")}
    assert modes[("ds-maint-01", "inMaintenance")] == 1 and modes[("ds-maint-01", "normal")] == 0
    assert modes[("ds-shared-01", "normal")] == 1
    # the hostile figures: refused alone, counted, logged once; their datastores kept (accessible, mode,
    # timestamp), without figures (no capacity: nothing to judge free space by)
    assert accessible["ds-negative"] == 1 and accessible["ds-absurd"] == 1
    assert not {"ds-negative", "ds-absurd"} & (set(capacity) | set(free) | set(provisioned))
    assert modes[("ds-absurd", "normal")] == 1
    refused = [v for labels, v in samples(text, "esxi_vsphere_dropped_series_total") if labels["reason"] == "value_refused"]
    assert refused == [2]
    log = (stack[1].log_path).read_text()
    assert log.count("datastore ds-negative: capacity -1 is out of range: refused") == 1
    assert log.count("datastore ds-absurd: capacity 9223372036854775807 is out of range: refused") == 1


def test_snapshots_per_vm_and_per_datastore(stack):
    _, exporter, _, started = stack
    text = exporter.metrics()
    count = {labels["vm"]: value for labels, value in samples(text, "esxi_vm_snapshots")}
    oldest = {labels["vm"]: value for labels, value in samples(text, "esxi_vm_snapshot_oldest_timestamp_seconds")}
    size = {labels["vm"]: value for labels, value in samples(text, "esxi_vm_snapshot_bytes")}
    needed = {labels["vm"]: value for labels, value in samples(text, "esxi_vm_consolidation_needed")}
    # old01 is off and not followed; batch01 has a chain 1,000 deep and 100,000 log files
    assert count == {"db01": 3, "web01": 1, "app01": 0, "batch01": 1000}
    assert set(oldest) == {"db01", "web01", "batch01"}
    assert size["batch01"] == 1000 * (2**20 + 512 + 32768)  # its deltas and .vmsn files; no log file
    assert abs(oldest["db01"] - (started - 432000)) < 120
    # db01: two disks on ds-shared-01; the deltas of s1 and s3 (the current branch) and their
    # descriptors, three .vmsn files and s2's memory; s2's own delta went with the revert
    tree = SPACE["snapshots"]["db01"]["tree"]
    expected = 2 * (tree[0]["delta_bytes"] + tree[2]["delta_bytes"] + 2 * 512) + 3 * 32768 + tree[1]["memory_bytes"]
    assert size["db01"] == expected
    assert size["app01"] == 2 * (512 + 2**20)  # the orphan delta of each of its two disks
    assert needed == {"app01": 1}  # the others have no flag set (unset: no series)
    per_ds = {labels["datastore"]: value for labels, value in samples(text, "esxi_datastore_snapshot_bytes")}
    assert per_ds["ds-shared-01"] == expected + 512 + 2**20
    assert per_ds["nfs-vm-01"] == 512 + 2**20


def test_moving_figures_are_followed_without_a_walk(stack):
    _, exporter, _, _ = stack

    def read():
        text = exporter.metrics()
        return (
            _by_datastore(text, "esxi_datastore_free_bytes"),
            _by_datastore(text, "esxi_datastore_space_updated_timestamp_seconds"),
            {labels["vm"]: value for labels, value in samples(text, "esxi_vm_snapshot_bytes")},
            sum(value for _, value in samples(text, "esxi_vsphere_walks_total")),
        )

    free, stamp, size, walks = read()
    time.sleep(4)
    free2, stamp2, size2, walks2 = read()
    assert free2["nfs-vm-01"] < free["nfs-vm-01"] and stamp2["nfs-vm-01"] > stamp["nfs-vm-01"]
    grown = size2["web01"] - size["web01"]
    assert grown > 0 and grown % GROW == 0  # whole ticks of the snapshot's growth
    assert free["ds-shared-02"] - free2["ds-shared-02"] >= grown  # taken from its datastore
    assert free2["ds-shared-01"] == free["ds-shared-01"]
    assert walks2 == walks


def test_every_space_alert_fires_where_the_fixture_says(stack):
    _, _, prometheus, _ = stack
    expected = {
        ("EsxiDatastoreSpaceUsedCritical", "ds-shared-01"),  # 88% used
        ("EsxiDatastoreSpaceUsedHigh", "ds-shared-02"),  # 80%, and filled by web01's snapshot
        ("EsxiDatastoreFillingUp", "ds-shared-02"),
        ("EsxiDatastoreOvercommitted", "nfs-vm-01"),  # 175% provisioned; filling, but a quarter used
        ("EsxiDatastoreInaccessible", "ds-lost-01"),
        ("EsxiVmSnapshotOld", "db01"),  # five days; web01's ten minutes stay silent
        ("EsxiVmConsolidationNeeded", "app01"),
    }

    def firing() -> set[tuple]:
        found = set()
        for s in prometheus.query(
            'ALERTS{alertstate="firing",alertname=~"EsxiDatastore.*|EsxiVmSnapshot.*|EsxiVmConsolidation.*"}'
        ):
            labels = s["metric"]
            found.add((labels["alertname"], labels.get("datastore") or labels.get("vm")))
        return found

    deadline = time.monotonic() + 90
    while firing() != expected and time.monotonic() < deadline:
        time.sleep(1)
    time.sleep(5)  # and nothing more fires a little later
    assert firing() == expected
    # capacity 0 divides nothing: no ratio for ds-thin-pool or ds-lost-01
    used = {s["metric"]["datastore"] for s in prometheus.query("datastore:esxi_datastore_space_used:ratio")}
    assert "ds-thin-pool" not in used and "ds-lost-01" not in used and "ds-shared-01" in used
