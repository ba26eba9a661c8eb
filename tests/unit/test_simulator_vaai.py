"""The simulator's VAAI columns (issue 44 item 6): driven by a phase's `vaai_ops`, written as real
esxtop writes them (running totals since the host booted, 0 in esxtop's first sample; MBytes/sec
and latencies per interval), and read back by the real reader into the configured counts."""

from __future__ import annotations

import pytest
import yaml

from exporter.esxtop import EsxtopReader
from exporter.simulator import Simulation, load_scenario
from exporter.simulator.schema import parse
from exporter.simulator.spec import ScenarioError
from exporter.store import model as m
from exporter.store.store import Store

LUN = "naa.600601601e3021001a2b3c4d5e6f0030"
ESX01, ESX02 = "esx01.lab.local", "esx02.lab.local"
INTERVAL = 5.0
PHASE = 180.0  # each phase of the reservations scenario: 3 minutes
ATS_PHASE_START = 3 * PHASE  # operations-with-ats is its fourth phase


def run(sim: Simulation, steps: int, store: Store, readers: dict) -> dict[str, list[str]]:
    """steps samples of every host into the store through the real reader; the lines written."""
    lines: dict[str, list[str]] = {h: [] for h in sim.hosts}
    for _ in range(steps):
        for host, line in sim.step().items():
            lines[host].append(line)
            sample = readers[host].feed(line)
            if sample is not None:
                store.ingest(sample)
    return lines


def start(sim: Simulation) -> tuple[Store, dict]:
    readers = {h: EsxtopReader(h) for h in sim.hosts}
    for host, reader in readers.items():
        reader.feed(sim.header(host))
    return Store(), readers


def counters(store: Store, host: str) -> dict[str, float]:
    return store.hosts[host].objects["luns"][LUN].counters


def test_reservations_scenario_ats_phase_reads_back_as_configured():
    sim = Simulation(load_scenario("reservations"), interval=INTERVAL)
    store, readers = start(sim)
    steps = int((ATS_PHASE_START + PHASE) / INTERVAL) + 1  # through the end of the ATS phase
    run(sim, steps, store, readers)
    esx02 = counters(store, ESX02)
    # 70 ATS per second, 2% failing, for 180 s; 20 unmaps per second of 1 MiB
    assert esx02[m.vaai_commands("ats")] == 12348  # 70 x 0.98 x 180: esxtop prints whole commands
    assert esx02[m.vaai_failures("ats")] == 252  # 70 x 0.02 x 180
    assert esx02[m.vaai_commands("unmap")] == 20 * PHASE
    assert esx02[m.vaai_bytes("unmap")] == 20 * 1048576 * PHASE
    assert esx02[m.vaai_commands("clone_read")] == 0 and esx02[m.vaai_failures("unmap")] == 0
    assert counters(store, ESX01)[m.vaai_commands("ats")] == pytest.approx(0.4 * PHASE)
    # the earlier phases (SCSI reservations, ESX 3.5) sent no ATS: nothing before the fourth
    gauges = store.hosts[ESX02].objects["luns"][LUN].gauges
    assert gauges[m.vaai_latency("ats", "failure")] > 0 and gauges[m.vaai_latency("zero", "success")] == 0


def test_counts_are_totals_that_stay_when_the_phase_ends_and_zero_in_the_first_sample():
    sim = Simulation(load_scenario("reservations"), interval=INTERVAL)
    store, readers = start(sim)
    header = sim.header(ESX02).split('","')
    ats = header.index(f"\\\\{ESX02}\\Physical Disk SCSI Device({LUN})\\ATS")
    mb_deleted = header.index(f"\\\\{ESX02}\\Physical Disk SCSI Device({LUN})\\MBytes Deletes/sec")
    steps = int((ATS_PHASE_START + PHASE + 60) / INTERVAL) + 1  # a minute into the repeat's baseline
    cells = [line.split(",") for line in run(sim, steps, store, readers)[ESX02]]
    counts = [int(c[ats].strip('"')) for c in cells]
    assert counts[0] == 0  # esxtop's first sample
    assert counts == sorted(counts)  # running totals never fall
    assert counts[-1] == counts[-12] == 12348  # the phase ended: the total stays, it does not go back to 0
    assert [c[mb_deleted] for c in cells[-12:]] == ['"0.00"'] * 12  # while the rate is per interval
    assert counters(store, ESX02)[m.vaai_commands("ats")] == 12348


def test_an_esxtop_restart_in_the_middle_loses_no_count():
    sim = Simulation(load_scenario("reservations"), interval=INTERVAL)
    store, readers = start(sim)
    run(sim, int((ATS_PHASE_START + 60) / INTERVAL) + 1, store, readers)
    before = counters(store, ESX02)[m.vaai_commands("ats")]
    assert before == pytest.approx(70 * 0.98 * 60)
    sim.restart_esxtop()  # a new esxtop run: its header, a first sample of zeros, then the totals
    readers = {h: EsxtopReader(h) for h in sim.hosts}
    for host, reader in readers.items():
        reader.feed(sim.header(host))
    lines = run(sim, int(120 / INTERVAL), store, readers)
    ats = sim.header(ESX02).split('","').index(f"\\\\{ESX02}\\Physical Disk SCSI Device({LUN})\\ATS")
    assert [line.split(",")[ats] for line in lines[ESX02][:2]] == [
        '"0"',
        '"4802"',
    ]  # esxtop's first sample, then the total 70 s into the phase (68.6/s)
    assert counters(store, ESX02)[m.vaai_commands("ats")] == 12348  # 70 x 0.98 x 180: the restart's interval counted too


SCENARIO = {
    "description": "one host, one LUN, VAAI knobs",
    "luns": [{"device": LUN, "service_time": "5ms", "absorbs": 64, "datastore": "vmfs-shared"}],
    "hosts": [
        {
            "name": "esx01",
            "cpus": 4,
            "adapters": [{"name": "vmhba1", "type": "fc", "link_speed": "800MB/s"}],
            "luns": [{"device": LUN, "queue_depth": 32, "paths": {"vmhba1:C0:T0:L30": "active"}}],
            "vms": [{"name": "vm1", "lun": LUN, "oio": 4, "block_size": "4KiB", "read_ratio": 1.0}],
        }
    ],
}


def scenario_with(vaai_ops) -> str:
    doc = dict(SCENARIO, phases=[{"name": "p", "duration": "1m", "vaai_ops": vaai_ops}])
    return yaml.safe_dump(doc)


def test_every_primitive_clone_counts_as_read_and_write_and_blocks_set_bytes():
    ops = [
        {
            "host": "esx01",
            "lun": LUN,
            "clone_per_second": 10,
            "clone_block": "8MiB",
            "clone_failure_ratio": 0.1,
            "zero_per_second": 4,
            "zero_failure_ratio": 0.5,
            "unmap_per_second": 2,
            "unmap_failure_ratio": 1,
        }
    ]
    sim = Simulation(parse(scenario_with(ops), "t", "t.yaml"), interval=INTERVAL)
    store, readers = start(sim)
    run(sim, 13, store, readers)  # 12 intervals: one minute
    got = store.hosts["esx01"].objects["luns"][LUN].counters
    assert got[m.vaai_commands("clone_read")] == got[m.vaai_commands("clone_write")] == 9 * 60
    assert got[m.vaai_failures("clone")] == 1 * 60
    assert got[m.vaai_bytes("clone_read")] == 9 * 8 * 1048576 * 60
    assert (got[m.vaai_commands("zero")], got[m.vaai_failures("zero")]) == (2 * 60, 2 * 60)
    assert got[m.vaai_bytes("zero")] == 2 * 1048576 * 60  # the default 1 MiB
    assert (got[m.vaai_commands("unmap")], got[m.vaai_failures("unmap")], got[m.vaai_bytes("unmap")]) == (0, 120, 0)
    assert got[m.vaai_commands("ats")] == 0


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ({"ats_per_second": 5, "ats_failure_ratio": 1.5}, "phases[0].vaai_ops[0].ats_failure_ratio: must be in 0..1, got 1.5"),
        ({"ats_per_second": -1}, "phases[0].vaai_ops[0].ats_per_second: must be 0 or more, got -1"),
        ({"ats_per_second": 5, "ats_rate": 2}, "phases[0].vaai_ops[0].ats_rate: unknown field"),
        ({}, "phases[0].vaai_ops[0].ats_per_second: a vaai_ops entry needs at least one primitive's rate above zero"),
        ({"unmap_per_second": 1, "unmap_block": "0B"}, "phases[0].vaai_ops[0].unmap_block: must be above zero"),
    ],
)
def test_bad_knobs_are_one_line_naming_the_field(op, message):
    with pytest.raises(ScenarioError) as err:
        parse(scenario_with([{"host": "esx01", "lun": LUN, **op}]), "t", "t.yaml")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_scenario_level_vaai_ops_run_in_every_phase_beside_the_phases_own():
    """The demo's ATS heartbeats (0.4 per second from each host) run through every phase."""
    doc = yaml.safe_load(scenario_with([{"host": "esx01", "lun": LUN, "unmap_per_second": 1}]))
    doc["vaai_ops"] = [{"host": "esx01", "lun": LUN, "ats_per_second": 0.4}]
    doc["phases"].append({"name": "quiet", "duration": "1m"})
    sim = Simulation(parse(yaml.safe_dump(doc), "t", "t.yaml"), interval=INTERVAL)
    store, readers = start(sim)
    run(sim, 25, store, readers)  # both phases, 2 minutes
    got = store.hosts["esx01"].objects["luns"][LUN].counters
    assert got[m.vaai_commands("ats")] == 48  # 0.4 x 120 s
    assert got[m.vaai_commands("unmap")] == 60  # the first phase's minute only
    demo = load_scenario("demo")
    assert {(op.host, op.per_second["ats"]) for op in demo.vaai_ops} == {("esx01.lab.local", 0.4), ("esx02.lab.local", 0.4)}


def test_what_esxcli_reports_is_set_apart_and_checked():
    doc = yaml.safe_load(scenario_with([{"host": "esx01", "lun": LUN, "ats_per_second": 1}]))
    doc["hosts"][0]["luns"][0]["config"] = {"vaai_status": {"ats": "unsupported", "unmap": "unknown"}}
    doc["hosts"][0]["vmfs"] = {"ats_heartbeat": False}
    (inv,) = Simulation(parse(yaml.safe_dump(doc), "t", "t.yaml")).inventories()
    assert inv.luns[LUN].vaai_status == {"ats": "unsupported", "unmap": "unknown"}
    assert inv.vmfs_lock_modes == {"vmfs-shared": "ats_scsi"}  # no ATS: VMFS falls back to SCSI reservations
    assert (inv.vmfs_hardware_locking, inv.vmfs_ats_heartbeat) == (True, False)
    (plain,) = Simulation(parse(scenario_with([{"host": "esx01", "lun": LUN, "ats_per_second": 1}]), "t", "t.yaml")).inventories()
    assert plain.luns[LUN].vaai_status == {} and plain.vmfs_lock_modes == {} and plain.vmfs_ats_heartbeat is None
    doc["hosts"][0]["luns"][0]["config"] = {"vaai_status": {"ats": "maybe"}}
    with pytest.raises(
        ScenarioError, match=r"config\.vaai_status\.ats: must be one of supported, unsupported, unknown, got 'maybe'"
    ):
        parse(yaml.safe_dump(doc), "t", "t.yaml")
    doc["hosts"][0]["luns"][0]["config"] = {}
    doc["hosts"][0]["vmfs"] = {"ats_heartbeats": False}
    with pytest.raises(ScenarioError, match=r"hosts\[0\]\.vmfs\.ats_heartbeats: unknown field"):
        parse(yaml.safe_dump(doc), "t", "t.yaml")
