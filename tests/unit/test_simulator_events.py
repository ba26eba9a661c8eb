"""The built-in storage incident (`kind: storage-events`, volume-access-lost): the vobd.log lines
it writes, read by the real vobd.log reader, count each event once on the incident's host, with
its device and datastore, at the scenario's times; a bad scenario is one line naming the key."""

from __future__ import annotations

import pytest

from exporter.events.vobd import VobdFollower
from exporter.simulator.events import APD_TIMEOUT, EventsSimulation
from exporter.simulator.scenario import load_events_scenario, load_scenario
from exporter.simulator.spec import ScenarioError
from exporter.store.store import Store

DEVICE, DATASTORE = "naa.6000000000000000000000000000a001", "ds-sim-01"


def run(seconds: float, interval: float = 10.0):
    scenario = load_events_scenario("volume-access-lost")
    sim = EventsSimulation(scenario, start=1_700_000_000.0)
    store = Store()
    for inventory in sim.inventories():
        store.set_inventory(inventory)
    followers = {host: VobdFollower(host, store, lambda host=host: host) for host in sim.hosts}
    for step in range(int(seconds / interval)):
        for host, lines in sim.step(interval).items():
            for line in lines:
                followers[host].feed(line, now=float(step))
            followers[host].flush(now=float(step))
    return scenario, sim, {host: f.tally.record(True, {}, 0) for host, f in followers.items()}


def test_one_cycle_loses_and_recovers_the_volume_on_the_incident_host_only():
    scenario, sim, records = run(780)  # 60 s healthy, 420 s lost, 300 s calm
    host, other = sim.hosts
    counts = {key[1:]: value for key, value in records[host].counts.items()}
    start = sim.start + scenario.after
    assert counts == {
        ("esx.problem.storage.apd.start", DEVICE, ""): (1, start),  # an APD event names the device alone
        ("esx.problem.vmfs.heartbeat.timedout", "", DATASTORE): (1, start + 16),
        ("esx.problem.storage.apd.timeout", DEVICE, ""): (1, start + APD_TIMEOUT),
        ("esx.clear.storage.apd.exit", DEVICE, ""): (1, start + scenario.lost),
        ("esx.problem.vmfs.heartbeat.recovered", "", DATASTORE): (1, start + scenario.lost + 1),
    }
    assert records[other].counts == {}
    assert records[host].dropped == {}
    assert scenario.lost > 300  # longer than EsxiVolumeAccessLost's five minutes: it fires


def test_the_cycle_repeats():
    _, sim, records = run(2 * 780 + 70)
    counts = {key[1]: value[0] for key, value in records[sim.hosts[0]].counts.items()}
    assert counts["esx.problem.storage.apd.start"] == 3 and counts["esx.problem.vmfs.heartbeat.recovered"] == 2


def test_it_writes_no_esxtop_and_a_bad_file_is_one_line(tmp_path):
    with pytest.raises(ScenarioError, match="storage-events scenario"):
        load_scenario("volume-access-lost")
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: storage-events\nhosts: 2\nincident: {host: 3}\n")
    with pytest.raises(ScenarioError, match=r"bad.yaml: incident.host: 3 is past the scenario's 2 hosts"):
        load_events_scenario(str(bad))
    bad.write_text("kind: storage-events\nincident: {lost: soon}\n")
    with pytest.raises(ScenarioError, match=r"bad.yaml: incident.lost: "):
        load_events_scenario(str(bad))
