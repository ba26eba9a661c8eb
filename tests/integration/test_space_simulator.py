"""The built-in datastore space scenario (`serve --simulate datastore-filling`): a forgotten
snapshot's delta disk fills its datastore past 75% and 85%, then it is deleted and the fill starts
over; the other datastores stay. Produced as model objects, served over HTTP, and its alerts fire
in a real Prometheus with the project's rules."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from exporter.simulator.scenario import list_scenarios, load_space_scenario
from exporter.simulator.space import SpaceSimulation
from tests.support.promtext import eventually, value
from tests.support.rules import rule_file
from tests.support.servers import Exporter, Prometheus

pytestmark = pytest.mark.integration
GIB = float(1 << 30)


def test_the_scenario_is_listed_and_fills_its_datastore_then_starts_over():
    assert "datastore-filling" in dict(list_scenarios())
    scenario = load_space_scenario("datastore-filling")
    assert load_space_scenario("queue-overrun") is None
    sim = SpaceSimulation(scenario, start=1_800_000_000)
    url = "ds:///vmfs/volumes/sim-ds-prod-01/"
    used, others = [], set()
    for _ in range(200):
        spaces = sim.spaces()
        space = spaces[url]
        used.append(1 - space.free_bytes / space.capacity_bytes)
        others.add(tuple(s.free_bytes for u, s in spaces.items() if u != url))
        sim.step()
    # 55% used plus the 8 GiB memory file, then 40 GiB an hour in 10-minute steps
    assert used[0] == pytest.approx(0.55 + 8 / 2048)
    assert used[1] - used[0] == pytest.approx(40 / 6 / 2048)
    assert max(used) < 0.97 and max(used) > 0.96  # deleted at 97%
    drop = next(i for i in range(1, len(used)) if used[i] < used[i - 1])
    assert used[drop] == pytest.approx(0.55 + 8 / 2048)  # its space back: the cycle starts over
    assert len(others) == 1  # the other datastores stay as they are
    snap, now = sim.snapshots()["app01"], sim.spaces()[url]
    assert snap.count == 1 and snap.bytes == pytest.approx(now.capacity_bytes - now.free_bytes - 0.55 * 2048 * GIB)


def test_simulate_command_refuses_a_space_scenario_in_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "simulate", "datastore-filling"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "datastore space scenario" in done.stderr and "Traceback" not in done.stderr


def test_serve_simulate_fills_the_datastore_and_its_alerts_fire(tmp_path):
    exporter = Exporter("--simulate", "datastore-filling", "--simulate.interval", "0.5s")
    prometheus = None
    try:
        labels = dict(datastore="ds-prod-01", type="vmfs", url="ds:///vmfs/volumes/sim-ds-prod-01/")
        first = eventually(lambda: value(exporter.metrics(), "esxi_datastore_free_bytes", **labels), timeout=20, what="free")
        time.sleep(1.5)
        assert value(exporter.metrics(), "esxi_datastore_free_bytes", **labels) < first
        assert value(exporter.metrics(), "esxi_vm_snapshots", host="esx-sim01", vm="app01") == 1
        rules = rule_file(
            tmp_path / "rules.yml", {"for_datastore_space": "2s", "for_datastore_fill": "2s", "datastore_fill_window": "10s"}
        )
        prometheus = Prometheus(tmp_path / "prometheus", [f"127.0.0.1:{exporter.url.rsplit(':', 1)[1]}"], rule_files=[rules])
        seen: set[tuple[str, str]] = set()
        want = {
            ("EsxiVmSnapshotOld", "app01"),
            ("EsxiDatastoreSpaceUsedHigh", "ds-prod-01"),
            ("EsxiDatastoreSpaceUsedCritical", "ds-prod-01"),
            ("EsxiDatastoreFillingUp", "ds-prod-01"),
        }
        deadline = time.monotonic() + 90
        while not want <= seen and time.monotonic() < deadline:
            for s in prometheus.query('ALERTS{alertstate="firing"}'):
                metric = s["metric"]
                seen.add((metric["alertname"], metric.get("datastore") or metric.get("vm", "")))
            time.sleep(1)
        assert want <= seen
        # the datastores that do not fill raise nothing
        assert not {a for a in seen if a[1] in ("ds-prod-02", "nfs-templates")}
    finally:
        if prometheus:
            prometheus.stop()
        exporter.stop()
