"""The simulator's files are real esxtop batch format (docs/esxtop-format.md), checked on the raw
text, against a real capture's column shapes, and through the project's esxtop reader."""

from __future__ import annotations

import csv
import re
import time
from collections import OrderedDict

import pytest

from exporter import cli
from exporter.esxtop import read_file
from exporter.simulator import Simulation, list_scenarios, load_scenario
from exporter.simulator.scenario import load_events_scenario, load_space_scenario, load_vsan_scenario
from exporter.store import model as m
from tests.support.servers import CAPTURES

# The -a counter sets exactly as esxtop-format.md §3 lists them (written out here, not imported
# from the writer, so the test does not check the writer against itself).
ADAPTER = [
    "Commands/sec",
    "Reads/sec",
    "Writes/sec",
    "MBytes Read/sec",
    "MBytes Written/sec",
    "Reserves/sec",
    "Conflicts/sec",
    "Average Driver MilliSec/Command",
    "Average Kernel MilliSec/Command",
    "Average Guest MilliSec/Command",
    "Average Queue MilliSec/Command",
    "Average Driver MilliSec/Read",
    "Average Kernel MilliSec/Read",
    "Average Guest MilliSec/Read",
    "Average Queue MilliSec/Read",
    "Average Driver MilliSec/Write",
    "Average Kernel MilliSec/Write",
    "Average Guest MilliSec/Write",
    "Average Queue MilliSec/Write",
    "Failed Commands/sec",
    "Failed Reads/sec",
    "Failed Writes/sec",
    "Failed Bytes Read/sec",
    "Failed Bytes Written/sec",
    "Failed Reserves/sec",
    "Aborts/sec",
    "Resets/sec",
    "PAE Commands/sec",
    "PAE Copies/sec",
    "Split Commands/sec",
    "Split Copies/sec",
]
QUEUE = ["Device Q Depth", "World Q Depth", "Active Commands", "Queued Commands", "% Used", "Load"]
DEVICE = (
    QUEUE
    + ADAPTER[:27]
    + [
        "CReads",
        "CWrites",
        "CFailed",
        "MBytes CReads/sec",
        "MBytes CWrites/sec",
        "ATS",
        "ATS Failed",
        "Zeros",
        "Zeros Failed",
        "MBytes Zeroed/sec",
        "Delete",
        "Deletes Failed",
        "MBytes Deletes/sec",
        "Average Success Latency ms/Clone",
        "Average Failure Latency ms/Clone",
        "Average Success Latency ms/ATS",
        "Average Failure Latency ms/ATS",
        "Average Success Latency ms/Zero",
        "Average Failure Latency ms/Zero",
    ]
)
WORLD = ["Shares"] + QUEUE + ADAPTER[:27]
# §3.8's default set (the -a only FailedIOs, TotalIOs and Latency have no documented meaning)
VIRTUAL_DISK = ADAPTER[:5] + ["Average MilliSec/Read", "Average MilliSec/Write"]
EXPECTED_COUNTERS = {
    "Physical Disk Adapter": ADAPTER,
    "Physical Disk Path": ADAPTER,
    "Physical Disk SCSI Device": DEVICE,
    "Physical Disk Per-Device-Per-World": WORLD,
    "Physical Disk": ["Adapter Q Depth"],
    "Physical Cpu": ["% Processor Time", "% Util Time"],
    "Virtual Disk": VIRTUAL_DISK,
}
HEADER_CELL = re.compile(r"^\\\\([^\\]+)\\([^\\(]+)(?:\((.+)\))?\\([^\\]+)$")
QUOTED_LINE = re.compile(r'^"[^"]*"(?:,"[^"]*")*,$')  # every cell quoted, one trailing comma
TIMESTAMP = re.compile(r"^\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}$")
INTEGER_COUNTERS = {
    "Device Q Depth",
    "World Q Depth",
    "Active Commands",
    "Queued Commands",
    "Adapter Q Depth",
    "Shares",
    "Members",
    "CReads",
    "CWrites",
    "CFailed",
    "ATS",
    "ATS Failed",
    "Zeros",
    "Zeros Failed",
    "Delete",
    "Deletes Failed",
}


def write(tmp_path, scenario: str, *extra: str):
    """simulate a single-host scenario (or one --host) into a file; its path."""
    out = tmp_path / f"{scenario}.csv"
    assert cli.main(["simulate", scenario, "--out", str(out), *extra]) == 0
    return out


def columns(header_line: str):
    """[(object, instance, counter)] of a header line, after checking each cell's syntax."""
    cells = next(csv.reader([header_line]))
    assert cells[0] == "(PDH-CSV 4.0) (UTC)(0)" and cells[-1] == ""
    out = []
    for cell in cells[1:-1]:
        found = HEADER_CELL.match(cell)
        assert found, cell
        out.append(found.group(2, 3, 4))
    return out


def by_object(cols) -> dict[str, OrderedDict]:
    """object -> instance -> [counters in order]."""
    out: dict[str, OrderedDict] = {}
    for obj, inst, counter in cols:
        out.setdefault(obj, OrderedDict()).setdefault(inst, []).append(counter)
    return out


def test_raw_text_is_esxtop_batch_format(tmp_path):
    path = write(tmp_path, "queue-overrun", "--duration", "1m", "--interval", "5s", "--start", "2024-03-05T07:08:09Z")
    raw = path.read_bytes()
    assert b"\r" not in raw and not raw.startswith(b"\xef\xbb\xbf")  # LF only, no BOM
    lines = raw.decode().splitlines()
    assert len(lines) == 1 + 13  # header, esxtop's first sample, 12 intervals of 5 s
    assert all(QUOTED_LINE.match(line) for line in lines)
    cols = columns(lines[0])
    assert {host for host in re.findall(r'"\\\\([^\\]+)\\', lines[0])} == {"esx01.lab.local"}
    rows = [next(csv.reader([line])) for line in lines[1:]]
    assert {len(r) for r in rows} == {len(cols) + 2}  # timestamp + columns + trailing empty cell
    stamps = [r[0] for r in rows]
    assert all(TIMESTAMP.match(s) for s in stamps)
    assert stamps[0] == "03/05/2024 07:08:09" and stamps[1] == "03/05/2024 07:08:14"
    assert stamps[-1] == "03/05/2024 07:09:09"
    for r in rows:
        for (obj, _, counter), cell in zip(cols, r[1:-1]):
            if counter in INTEGER_COUNTERS:
                assert re.fullmatch(r"\d+", cell), (obj, counter, cell)
            else:
                assert re.fullmatch(r"\d+\.\d\d", cell), (obj, counter, cell)


def test_objects_and_counters_are_the_a_set_in_esxtop_order(tmp_path):
    sim = Simulation(load_scenario("link-saturation"))
    objects = by_object(columns(sim.header("esx01.lab.local")))
    assert set(objects) == set(EXPECTED_COUNTERS) | {"Group Cpu", "Vcpu"}
    for obj, expected in EXPECTED_COUNTERS.items():
        for inst, counters in objects[obj].items():
            assert counters == expected, (obj, inst)
    assert list(objects["Physical Cpu"]) == [str(i) for i in range(8)] + ["_Total"]
    assert len(objects["Physical Disk SCSI Device"]) == 8
    assert len(objects["Physical Disk Path"]) == 16  # active and standby paths alike
    assert list(objects["Physical Disk"]) == ["vmhba1", "vmhba2"]
    # each VM's total, then its disks, as esxtop orders them
    vms = [f"seq{k}" for k in range(1, 9)]
    assert list(objects["Virtual Disk"]) == [name for vm in vms for name in (vm, f"{vm}:scsi0:0")]


def test_column_shapes_match_a_real_capture():
    """Every object type both files have: the real (default-field) counter sequence of an instance
    is a subsequence of the simulator's (-a) one, and instances are named alike."""
    real_header = (CAPTURES / "esxi65-default-3samples.csv").read_text().splitlines()[0]
    real = by_object(columns(real_header))
    sim = Simulation(load_scenario("reservations"))
    ours = by_object(columns(sim.header("esx01.lab.local")))
    shared = set(real) & set(ours)
    assert shared >= {
        "Physical Cpu",
        "Group Cpu",
        "Vcpu",
        "Physical Disk Adapter",
        "Physical Disk Path",
        "Physical Disk SCSI Device",
        "Physical Disk Per-Device-Per-World",
        "Virtual Disk",
    }
    for obj in shared - {"Physical Disk"}:  # the real file's Physical Disk rows are per path
        real_counters = next(iter(real[obj].values()))
        for counters in ours[obj].values():
            it = iter(counters)
            assert all(c in it for c in real_counters), obj
    # instance shapes: Vcpu gid:group:world:name, per-world <device>-<world>, paths vmhbaN:C:T:L
    assert all(re.fullmatch(r"\d+:[^:]+:\d+:.+", i) for i in ours["Vcpu"])
    assert all(re.fullmatch(r"naa\.[0-9a-f]+-\d+", i) for i in ours["Physical Disk Per-Device-Per-World"])
    assert all(re.fullmatch(r"vmhba\d+:C\d+:T\d+:L\d+", i) for i in ours["Physical Disk Path"])
    assert all(re.fullmatch(r"[^:]+(:scsi\d+:\d+)?", i) for i in ours["Virtual Disk"])


def test_disk_block_order_adapters_then_devices_with_their_paths_and_worlds():
    sim = Simulation(load_scenario("demo"))
    cols = columns(sim.header("esx02.lab.local"))
    order = list(OrderedDict.fromkeys((obj, inst) for obj, inst, _ in cols if obj.startswith("Physical Disk")))
    dev_a1, dev_a2 = "naa.600601601e3021001a2b3c4d5e6f00a1", "naa.600601601e3021001a2b3c4d5e6f00a2"
    assert order[:4] == [
        ("Physical Disk", "vmhba1"),
        ("Physical Disk Adapter", "vmhba1"),
        ("Physical Disk", "vmhba2"),
        ("Physical Disk Adapter", "vmhba2"),
    ]
    dev, path, world = "Physical Disk SCSI Device", "Physical Disk Path", "Physical Disk Per-Device-Per-World"
    # vmfs-prod: web02 and hostd (esx02 runs the VMFS operations of the demo); vmfs-backup: backup01
    assert [o for o, _ in order[4:]] == [dev, path, path, world, world, dev, path, path, world]
    assert order[4][1] == dev_a1 and order[9][1] == dev_a2


def test_first_sample_is_all_zero_rates_like_esxtop(tmp_path):
    path = write(tmp_path, "queue-overrun", "--duration", "10s")
    lines = path.read_text().splitlines()
    cols = columns(lines[0])
    first, second = (next(csv.reader([line]))[1:-1] for line in lines[1:3])
    for (obj, _, counter), v1, v2 in zip(cols, first, second):
        if not obj.startswith(("Physical Disk", "Virtual Disk")):
            continue
        if counter in ("Device Q Depth", "Adapter Q Depth", "Shares") or (counter == "World Q Depth" and obj.endswith("World")):
            assert float(v1) > 0 and v1 == v2, (obj, counter)  # configuration: set from the start
        else:
            assert float(v1) == 0, (obj, counter, v1)
    samples = list(read_file(path))
    assert samples[0].interval is None and samples[1].interval == 5.0
    assert samples[1].luns and samples[1].luns[next(iter(samples[1].luns))][m.COMMANDS] > 0


def test_values_are_consistent_as_in_real_captures(tmp_path):
    """The numeric relations esxtop-format.md §4 found in real files, plus Little's law."""
    path = write(tmp_path, "demo", "--host", "esx01.lab.local", "--duration", "15m")
    lines = path.read_text().splitlines()
    cols = columns(lines[0])
    for line in lines[2:]:
        values: dict[tuple, dict[str, float]] = {}
        for (obj, inst, counter), cell in zip(cols, next(csv.reader([line]))[1:-1]):
            values.setdefault((obj, inst), {})[counter] = float(cell)
        for (obj, inst), v in values.items():
            if "Average Guest MilliSec/Command" not in v:
                continue
            g, d, k, q = (v[f"Average {x} MilliSec/Command"] for x in ("Guest", "Driver", "Kernel", "Queue"))
            assert g == pytest.approx(d + k, abs=0.015), (obj, inst)
            assert q <= k + 0.005, (obj, inst)
            assert v["Commands/sec"] >= v["Reads/sec"] + v["Writes/sec"] - 0.015
        device = values[("Physical Disk SCSI Device", "naa.600601601e3021001a2b3c4d5e6f00a1")]
        path_sum = sum(v["Commands/sec"] for (obj, _), v in values.items() if obj == "Physical Disk Path")
        adapter_sum = sum(v["Commands/sec"] for (obj, _), v in values.items() if obj == "Physical Disk Adapter")
        assert path_sum == pytest.approx(device["Commands/sec"], abs=0.02)
        assert adapter_sum == pytest.approx(device["Commands/sec"], abs=0.02)
        # Little's law: outstanding = throughput x guest latency (within 2%)
        outstanding = device["Active Commands"] + device["Queued Commands"]
        assert device["Commands/sec"] * device["Average Guest MilliSec/Command"] / 1000 == pytest.approx(outstanding, rel=0.02)


def test_reader_maps_every_vm_world_to_its_vm(tmp_path):
    path = write(tmp_path, "demo", "--host", "esx01.lab.local", "--duration", "10s")
    sample = list(read_file(path))[-1]
    vms = {sample.world_vms.get(world) for _, world in sample.worlds}
    assert vms == {"web01", "db01", "app01", "app02"}


def test_inventory_matches_what_the_capture_shows(tmp_path):
    sim = Simulation(load_scenario("demo"))
    out = tmp_path / "demo"
    assert cli.main(["simulate", "demo", "--duration", "10s", "--out", str(out)]) == 0
    inventories = {inv.host: inv for inv in sim.inventories()}
    assert sorted(inventories) == sorted(sim.hosts)
    for host in sim.hosts:
        sample = list(read_file(out / f"{host}.csv"))[-1]
        inv = inventories[host]
        assert {p: c.device for p, c in inv.paths.items()} == sample.path_devices
        assert set(inv.adapters) == set(sample.adapters)
        assert set(inv.luns) == set(sample.luns)
        for device, cfg in inv.luns.items():
            assert cfg.configured_queue_depth == sample.luns[device][m.QUEUE_DEPTH]
        assert {a.link_speed_bytes_per_second for a in inv.adapters.values()} == {200e6}
        assert inv.dsnro == 32
    assert inventories["esx01.lab.local"].datastore_hosts == {"vmfs-prod": 2}
    assert inventories["esx02.lab.local"].datastore_hosts == {"vmfs-prod": 2, "vmfs-backup": 1}
    states = {p.state for inv in inventories.values() for p in inv.paths.values()}
    assert states == {"active", "standby"}


def test_same_seed_same_bytes_other_seed_other_values(tmp_path):
    files = []
    for label, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        (tmp_path / label).mkdir()
        files.append(write(tmp_path / label, "queue-ok", "--seed", seed, "--duration", "1m"))
    a, b, c = files
    assert a.read_bytes() == b.read_bytes()
    la, lc = a.read_text().splitlines(), c.read_text().splitlines()
    assert la[:2] == lc[:2]  # same header, same all-zero first sample
    assert la[2:] != lc[2:]


def test_generating_uses_no_wall_clock(tmp_path, monkeypatch):
    """An hour of samples is computed, not waited for: sleeping or reading the clock would fail."""

    def forbidden(*_):
        raise AssertionError("the simulator used the wall clock")

    monkeypatch.setattr(time, "sleep", forbidden)
    monkeypatch.setattr(time, "time", forbidden)
    path = write(tmp_path, "queue-ok", "--duration", "1h")
    assert len(path.read_text().splitlines()) == 1 + 721


@pytest.mark.parametrize(
    "name",
    [
        n
        for n, _ in list_scenarios()
        if load_vsan_scenario(n) is None and load_events_scenario(n) is None and load_space_scenario(n) is None
    ],
)  # vSAN, storage-events and datastore space ones write no esxtop
def test_every_scenario_reads_back_without_errors(tmp_path, name):
    out = tmp_path / name
    assert cli.main(["simulate", name, "--duration", "1m", "--out", str(out)]) == 0
    files = [out] if out.is_file() else sorted(out.glob("*.csv"))
    hosts = set()
    for f in files:
        samples = list(read_file(f))  # raises on any line the reader rejects
        assert len(samples) == 13
        hosts.add(samples[0].host)
        assert all(s.luns and s.adapters and s.cpus for s in samples)
    assert hosts == set(Simulation(load_scenario(name)).hosts)
