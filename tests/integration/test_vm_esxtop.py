"""esxtop's Virtual Disk group (#20): per VM disk and per VM, from a real capture, a live stream and
the simulator, into the same esxi_vm_disk_* / esxi_vm_* families the vSphere source fills.

Expected values are computed here from the CSV cells (MBytes are MiB, latencies are ms), not taken
from the reader."""

from __future__ import annotations

import csv
import re
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.esxtop import EsxtopReader, read_file
from exporter.simulator import Simulation, load_scenario
from exporter.store import model as m
from simulators.esxtop_csv import header, row
from tests.support.cli import run
from tests.support.servers import CAPTURES, Exporter

RS = CAPTURES / "esxi65-default-3samples.csv"
HOST = "localhost.home"
MIB = 1048576
# What the capture's header lists under Virtual Disk, read by eye from the file.
RS_DISKS = {
    ("styx", "scsi0:0"),
    ("portunus", "scsi0:0"),
    ("hermes", "scsi0:0"),
    ("ananke", "scsi0:0"),
    ("ouranos", "scsi0:0"),
    ("ouranos", "scsi2:0"),
    ("poseidon", "scsi0:0"),
}
RS_VMS = {"styx", "portunus", "hermes", "ananke", "ouranos", "poseidon"}
# counter -> (metric stem, scale to base units); stems shared by esxi_vm_disk_* and esxi_vm_*
RATES = {
    "Commands/sec": ("commands", 1.0),
    "Reads/sec": ("reads", 1.0),
    "Writes/sec": ("writes", 1.0),
    "MBytes Read/sec": ("read_bytes", MIB),
    "MBytes Written/sec": ("written_bytes", MIB),
}
LATENCIES = {"Average MilliSec/Read": ("read", "Reads/sec"), "Average MilliSec/Write": ("write", "Writes/sec")}


def exposition(text: str) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def series(name: str, **labels) -> tuple[str, tuple]:
    return name, tuple(sorted(labels.items()))


def virtual_disk_cells(path):
    """instance -> counter -> [floats, one per row] for every Virtual Disk column of the capture."""
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    out: dict[str, dict[str, list[float]]] = {}
    for index, cell in enumerate(rows[0]):
        found = re.fullmatch(r"\\\\[^\\]+\\Virtual Disk\((.+)\)\\(.+)", cell)
        if found:
            out.setdefault(found.group(1), {})[found.group(2)] = [float(r[index]) for r in rows[1:]]
    return out


def test_dump_of_a_real_capture_shows_every_vm_disk_with_the_values_the_host_printed():
    result = run("dump", "--esxtop-file", str(RS))
    assert result.returncode == 0, result.stderr
    got = exposition(result.stdout)
    cells = virtual_disk_cells(RS)
    assert len(cells) == len(RS_DISKS) + len(RS_VMS) == 13
    checked = 0
    for instance, counters in cells.items():
        vm, _, disk = instance.partition(":")
        prefix, labels = (
            ("esxi_vm_disk", {"host": HOST, "vm": vm, "disk": disk}) if disk else ("esxi_vm", {"host": HOST, "vm": vm})
        )
        assert ((vm, disk) in RS_DISKS) if disk else (vm in RS_VMS)
        # rows 2 and 3 are 5 s intervals; row 1 is esxtop's all-zero first sample, not a measurement
        for counter, (stem, scale) in RATES.items():
            expected = sum(v * 5 * scale for v in counters[counter][1:])
            assert got[series(f"{prefix}_{stem}_total", **labels)] == pytest.approx(expected, rel=1e-12, abs=1e-12)
            checked += 1
        for counter, (direction, weight) in LATENCIES.items():
            last_ms = counters[counter][-1]
            assert got[series(f"{prefix}_{direction}_latency_mean_seconds", **labels)] == last_ms / 1000
            total = sum(ms / 1000 * rate * 5 for ms, rate in zip(counters[counter][1:], counters[weight][1:]))
            assert got[series(f"{prefix}_{direction}_latency_seconds_total", **labels)] == pytest.approx(
                total, rel=1e-12, abs=1e-15
            )
            checked += 2
        # esxtop has no outstanding I/O per virtual disk: no series made up for it
        assert series(f"{prefix}_outstanding_reads", **labels) not in got
    assert checked == 13 * 9
    # spot values against the file as printed: ouranos's second disk wrote 0.80/s at 0.33 ms in the last row
    ouranos2 = {"host": HOST, "vm": "ouranos", "disk": "scsi2:0"}
    assert got[series("esxi_vm_disk_writes_total", **ouranos2)] == pytest.approx(4.0)
    assert got[series("esxi_vm_disk_write_latency_mean_seconds", **ouranos2)] == pytest.approx(0.00033)
    assert got[series("esxi_vm_read_bytes_total", host=HOST, vm="poseidon")] == pytest.approx(0.32 * 5 * MIB)
    # no backing from esxtop alone: the info family is absent, the series stand without it
    assert not any(name == "esxi_vm_disk_info" for name, _ in got)


def test_the_vm_collector_can_be_switched_off():
    result = run("dump", "--esxtop-file", str(RS), "--no-collector.vm")
    assert result.returncode == 0, result.stderr
    assert "esxi_vm_" not in result.stdout and "esxi_lun_queue_depth" in result.stdout


VD_COUNTERS = list(RATES) + list(LATENCIES)


def vd_columns(instance: str) -> list[tuple[str, str, str]]:
    return [("Virtual Disk", instance, c) for c in VD_COUNTERS]


@pytest.mark.parametrize(
    "instance, key",
    [
        ("db01:scsi0:1", ("vdisks", ("db01", "scsi0:1"))),
        ("db01", ("vms", "db01")),
        (
            "SQL02 (df09cdf2-1e74-45fb-9ccc-90d1c402fc6b):scsi0:0",
            ("vdisks", ("SQL02 (df09cdf2-1e74-45fb-9ccc-90d1c402fc6b)", "scsi0:0")),
        ),
        ("app:blue:sata0:3", ("vdisks", ("app:blue", "sata0:3"))),  # a VM name with ':' in it
        ("app:blue", ("vms", "app:blue")),  # its total: 'blue' is not a controller slot
        ("nvme:01:nvme0:0", ("vdisks", ("nvme:01", "nvme0:0"))),
        ("old:ide1:0", ("vdisks", ("old", "ide1:0"))),
        ("backup:scsi", ("vms", "backup:scsi")),  # no bus number: not a disk
        ("a:b:c", ("vms", "a:b:c")),
    ],
)
def test_the_disk_is_the_last_two_parts_only_when_they_name_a_controller_slot(instance, key):
    reader = EsxtopReader("t")
    reader.feed(header("h", vd_columns(instance)))
    reader.feed(row(0, [0] * 7))
    sample = reader.feed(row(5, [3.0, 1.0, 2.0, 0.5, 0.25, 4.0, 8.0]))
    family, obj = key
    assert list(getattr(sample, family)) == [obj]
    assert not getattr(sample, "vms" if family == "vdisks" else "vdisks")
    assert getattr(sample, family)[obj] == {
        m.COMMANDS: 3.0,
        m.READS: 1.0,
        m.WRITES: 2.0,
        m.READ_BYTES: 0.5 * MIB,
        m.WRITTEN_BYTES: 0.25 * MIB,
        m.GAVG_READ: 0.004,
        m.GAVG_WRITE: 0.008,
    }


def test_follow_a_growing_capture_carries_the_virtual_disks(tmp_path):
    capture = tmp_path / "esx01.csv"
    cols = vd_columns("web:01") + vd_columns("web:01:scsi0:0") + vd_columns("web:01:scsi0:1")
    capture.write_text(header("esx01", cols) + "\n")
    disk0 = [30.0, 20.0, 10.0, 0.16, 0.08, 2.5, 4.0]
    disk1 = [10.0, 0.0, 10.0, 0.0, 0.08, 0.0, 6.0]
    total = [40.0, 20.0, 20.0, 0.16, 0.16, 2.5, 5.0]
    exporter = Exporter("--esxtop-follow", str(capture))
    try:
        t0 = time.time()
        with open(capture, "a") as handle:
            for i in range(3):  # esxtop's first sample and two 5 s intervals
                handle.write(row(t0 + 5 * i, total + disk0 + disk1) + "\n")
                handle.flush()
                time.sleep(0.3)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            text = exporter.metrics()
            if 'esxi_esxtop_samples_total{host="esx01"} 3.0' in text:
                break
            time.sleep(0.2)
        got = exposition(text)
        disk = {"host": "esx01", "vm": "web:01"}
        assert got[series("esxi_vm_disk_reads_total", **disk, disk="scsi0:0")] == 200.0
        assert got[series("esxi_vm_disk_writes_total", **disk, disk="scsi0:1")] == 100.0
        assert got[series("esxi_vm_disk_written_bytes_total", **disk, disk="scsi0:1")] == pytest.approx(0.08 * 10 * MIB)
        assert got[series("esxi_vm_disk_write_latency_mean_seconds", **disk, disk="scsi0:1")] == 0.006
        assert got[series("esxi_vm_disk_write_latency_seconds_total", **disk, disk="scsi0:1")] == pytest.approx(100 * 0.006)
        assert got[series("esxi_vm_reads_total", **disk)] == 200.0
        assert got[series("esxi_vm_read_latency_seconds_total", **disk)] == pytest.approx(200 * 0.0025)
    finally:
        exporter.stop()


# --- the simulator ---------------------------------------------------------------------------
def little(stats: dict[str, float]) -> float:
    """Mean I/Os outstanding over the interval: reads/s x read latency + writes/s x write latency."""
    return stats[m.READS] * stats[m.GAVG_READ] + stats[m.WRITES] * stats[m.GAVG_WRITE]


def simulated(tmp_path, scenario: str, duration: str, host: str | None = None) -> list[m.Sample]:
    path = tmp_path / f"{scenario}.csv"
    args = ["simulate", scenario, "--duration", duration, "--out", str(path)] + (["--host", host] if host else [])
    result = run(*args)
    assert result.returncode == 0, result.stderr
    return list(read_file(path))[1:]  # esxtop's first sample is not a measurement


def test_papers_figure2_a_from_the_virtual_disks_equals_a_from_the_worlds(tmp_path):
    """4 VMs x 16 outstanding on a 32-deep LUN: per VM and per sample, reads x LAT/rd + writes x
    LAT/wr over its disks is the world's ACTV + QUED within 1% (the guest latency also holds the
    VMkernel's 15 us per command, and esxtop prints latencies to 0.01 ms)."""
    samples = simulated(tmp_path, "queue-overrun", "2m")
    assert len(samples) == 24
    for s in samples:
        worlds = {s.world_vms[w]: st[m.ACTIVE] + st[m.QUEUED] for (_, w), st in s.worlds.items()}
        assert worlds == {"vm1": 16, "vm2": 16, "vm3": 16, "vm4": 16}
        disks: dict[str, float] = {}
        for (vm, _), st in s.vdisks.items():
            disks[vm] = disks.get(vm, 0.0) + little(st)
        assert set(disks) == set(worlds)
        for vm, a in disks.items():
            assert a == pytest.approx(worlds[vm], rel=0.01), (vm, s.timestamp)
            assert little(s.vms[vm]) == pytest.approx(a, rel=0.001)  # the VM's total row agrees with its disks


def test_demo_disks_split_their_vms_io_and_add_up_to_its_world(tmp_path):
    """db01's two disks carry half its reads and writes each; app02 sits on LSI Logic. Over the 15
    minutes (every phase), each VM's a from its disks matches its world within 2% on average."""
    samples = simulated(tmp_path, "demo", "15m", host="esx01.lab.local")
    last = samples[-1]
    assert set(last.vdisks) == {
        ("web01", "scsi0:0"),
        ("db01", "scsi0:0"),
        ("db01", "scsi0:1"),
        ("app01", "scsi0:0"),
        ("app02", "scsi0:0"),
    }
    from_disks: dict[str, list[float]] = {}
    from_worlds: dict[str, list[float]] = {}
    for s in samples:
        d0, d1, vm = s.vdisks["db01", "scsi0:0"], s.vdisks["db01", "scsi0:1"], s.vms["db01"]
        assert d0[m.READS] == pytest.approx(d1[m.READS], abs=0.01)
        assert d0[m.READS] + d1[m.READS] == pytest.approx(vm[m.READS], abs=0.02)
        assert d0[m.GAVG_WRITE] == d1[m.GAVG_WRITE] == vm[m.GAVG_WRITE]
        for name in ("web01", "db01", "app01", "app02"):
            disks = sum(little(st) for (v, _), st in s.vdisks.items() if v == name)
            from_disks.setdefault(name, []).append(disks)
        for (_, w), st in s.worlds.items():
            if s.world_vms.get(w) in from_disks:
                from_worlds.setdefault(s.world_vms[w], []).append(st[m.ACTIVE] + st[m.QUEUED])
    for name in from_disks:
        assert sum(from_disks[name]) == pytest.approx(sum(from_worlds[name]), rel=0.02), name


def test_simulator_inventory_backs_every_disk_it_writes():
    sim = Simulation(load_scenario("demo"))
    inventories = {inv.host: inv for inv in sim.inventories()}
    esx01 = inventories["esx01.lab.local"].vdisks
    assert set(esx01) == {
        ("web01", "scsi0:0"),
        ("db01", "scsi0:0"),
        ("db01", "scsi0:1"),
        ("app01", "scsi0:0"),
        ("app02", "scsi0:0"),
    }
    db01 = esx01["db01", "scsi0:1"]
    assert db01 == m.VirtualDiskConfig(
        datastore="vmfs-prod",
        datastore_type="vmfs",
        devices=("naa.600601601e3021001a2b3c4d5e6f00a1",),
        backing="flat",
        controller="pvscsi",
        provisioning="thick_lazy",
        shares=1000.0,
    )
    assert esx01["app02", "scsi0:0"].controller == "lsilogic"
    assert inventories["esx02.lab.local"].vdisks["backup01", "scsi0:0"].datastore == "vmfs-backup"


def test_embedded_simulator_alone_feeds_the_vm_families(tmp_path):
    """serve --simulate: the virtual disks' series and their backing, with no other source."""
    exporter = Exporter("--simulate", "demo", "--simulate.interval", "1s")
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            got = exposition(exporter.metrics())
            if got.get(series("esxi_vm_disk_reads_total", host="esx01.lab.local", vm="db01", disk="scsi0:1"), 0) > 0:
                break
            time.sleep(0.5)
        db01 = {"host": "esx01.lab.local", "vm": "db01", "disk": "scsi0:1"}
        assert got[series("esxi_vm_disk_reads_total", **db01)] > 0
        assert got[series("esxi_vm_disk_read_latency_mean_seconds", **db01)] > 0
        info = {
            "datastore": "vmfs-prod",
            "datastore_type": "vmfs",
            "device": "naa.600601601e3021001a2b3c4d5e6f00a1",
            "backing": "flat",
            "compatibility_mode": "",
            "provisioning": "thick_lazy",
        }
        assert got[series("esxi_vm_disk_info", **db01, **info, controller="pvscsi")] == 1.0
        app02 = {"host": "esx01.lab.local", "vm": "app02", "disk": "scsi0:0"}
        assert got[series("esxi_vm_disk_info", **app02, **info, controller="lsilogic")] == 1.0
        assert got[series("esxi_vm_disk_shares", **db01)] == 1000.0
        assert not any(name == "esxi_vm_disk_iops_limit" for name, _ in got)  # no disk is limited
        vm_disks = {dict(labels)["vm"] for name, labels in got if name == "esxi_vm_disk_info"}
        assert vm_disks == {"web01", "db01", "app01", "app02", "web02", "backup01"}
    finally:
        exporter.stop()


def test_controllers_name_their_slots_and_a_lun_without_a_datastore_is_an_rdm(tmp_path):
    """A user scenario: 9 PVSCSI disks skip unit 7 (the controller's own), AHCI disks sit on sata0,
    and a VM on a LUN with no datastore reaches it through a physical-mode RDM."""
    scenario = tmp_path / "slots.yaml"
    scenario.write_text(
        "description: controller slots\n"
        "luns:\n"
        "  - {device: naa.6000000000000001, datastore: ds1, service_time: 2ms, absorbs: 16}\n"
        "  - {device: naa.6000000000000002, service_time: 2ms, absorbs: 16}\n"
        "hosts:\n"
        "  - name: lab01\n"
        "    adapters: [{name: vmhba1, type: fc, link_speed: 400MB/s}]\n"
        "    luns:\n"
        "      - {device: naa.6000000000000001, queue_depth: 32, paths: {vmhba1:C0:T0:L1: active}}\n"
        "      - {device: naa.6000000000000002, queue_depth: 32, paths: {vmhba1:C0:T0:L2: active}}\n"
        "    vms:\n"
        "      - {name: wide, lun: naa.6000000000000001, oio: 9, block_size: 4KiB, disks: 9, provisioning: thin}\n"
        "      - {name: desk, lun: naa.6000000000000001, oio: 2, block_size: 4KiB, controller: ahci, disks: 2}\n"
        "      - {name: oracle, lun: naa.6000000000000002, oio: 4, block_size: 8KiB, read_ratio: 0.5}\n"
    )
    sample = simulated(tmp_path, str(scenario), "10s")[-1]
    assert sorted(disk for vm, disk in sample.vdisks if vm == "wide") == sorted(
        ["scsi0:0", "scsi0:1", "scsi0:2", "scsi0:3", "scsi0:4", "scsi0:5", "scsi0:6", "scsi0:8", "scsi0:9"]
    )
    assert sorted(disk for vm, disk in sample.vdisks if vm == "desk") == ["sata0:0", "sata0:1"]
    assert set(sample.vms) == {"wide", "desk", "oracle"}
    (inventory,) = Simulation(load_scenario(str(scenario))).inventories()
    assert inventory.vdisks["wide", "scsi0:8"].provisioning == "thin"
    assert inventory.vdisks["desk", "sata0:1"].controller == "ahci"
    assert inventory.vdisks["oracle", "scsi0:0"] == m.VirtualDiskConfig(
        devices=("naa.6000000000000002",), backing="rdm", compatibility_mode="physical", controller="pvscsi", shares=1000.0
    )


def test_backfill_exports_the_virtual_disks_history():
    """backfill's OpenMetrics: each VM disk's counters at each sample's time, the last equal to dump's."""
    import io

    from exporter.analysis.backfill import write_openmetrics

    out = io.StringIO()
    assert write_openmetrics(str(RS), "lab", out) == 3
    history: dict[str, list[tuple[float, float]]] = {}
    for line in out.getvalue().splitlines():
        if line.startswith(("esxi_vm_disk_", "esxi_vm_")):
            series_text, value, stamp = line.rsplit(" ", 2)
            history.setdefault(series_text, []).append((float(stamp), float(value)))
    key = f'esxi_vm_disk_writes_total{{host="{HOST}",vm="ouranos",disk="scsi2:0",run="lab"}}'
    assert [v for _, v in history[key]] == [0.0, 0.0, 4.0]  # 0.00/s, then 0.80/s over 5 s
    assert "# TYPE esxi_vm_disk_writes counter" in out.getvalue()
    assert len({k.split("{")[1] for k in history if k.startswith("esxi_vm_disk_reads_total")}) == len(RS_DISKS)
    assert len({k.split("{")[1] for k in history if k.startswith("esxi_vm_reads_total")}) == len(RS_VMS)
    dump = exposition(run("dump", "--esxtop-file", str(RS)).stdout)
    last = history[f'esxi_vm_write_latency_seconds_total{{host="{HOST}",vm="poseidon",run="lab"}}'][-1][1]
    assert last == dump[series("esxi_vm_write_latency_seconds_total", host=HOST, vm="poseidon")]


def test_compare_has_a_subject_per_vm_disk(tmp_path):
    from exporter.analysis.capture import load
    from exporter.analysis.compare import compare

    paths = {}
    for name in ("queue-ok", "queue-overrun"):
        paths[name] = tmp_path / f"{name}.csv"
        assert run("simulate", name, "--duration", "5m", "--out", str(paths[name])).returncode == 0
    result = compare(load(paths["queue-ok"]), load(paths["queue-overrun"]))
    rows = {(r.name, r.metric.key): r for r in result.rows if r.family == "vdisks"}
    assert {name for name, _ in rows} == {"vm1:scsi0:0", "vm2:scsi0:0", "vm3:scsi0:0", "vm4:scsi0:0"}
    for vm in ("vm1", "vm2", "vm3", "vm4"):
        latency, outstanding = rows[f"{vm}:scsi0:0", "read_latency"], rows[f"{vm}:scsi0:0", "little"]
        assert latency.verdict == "worse" and 1.8 <= latency.after.mean / latency.before.mean <= 2.2  # Figure 2
        assert outstanding.before.mean == pytest.approx(8, rel=0.01) and outstanding.after.mean == pytest.approx(16, rel=0.01)
        assert (f"{vm}:scsi0:0", "write_latency") not in rows  # all reads: no write latency to compare
    text = run("compare", str(paths["queue-ok"]), str(paths["queue-overrun"])).stdout
    assert "virtual disk vm1:scsi0:0" in text and "LAT/rd (ms)" in text


def without_world_columns(source, target):
    with open(source, newline="") as handle:
        rows = list(csv.reader(handle))
    keep = [i for i, cell in enumerate(rows[0]) if "Per-Device-Per-World" not in cell]
    with open(target, "w", newline="") as handle:
        csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([[r[i] for i in keep] for r in rows])


def test_capacity_takes_a_from_the_virtual_disks_where_no_world_shows_load(tmp_path):
    full = tmp_path / "full" / "fig2.csv"
    full.parent.mkdir()
    assert run("simulate", "queue-overrun", "--duration", "2m", "--out", str(full)).returncode == 0
    both = run("capacity", "-n", "64", str(full))
    assert both.returncode == 0, both.stderr
    assert "a=16.00 d=32 -> at most 2 VMs per host" in both.stdout  # the worlds decide
    assert "vm1: 16.00 outstanding commands on average (its virtual disks: 16.0" in both.stdout
    # the same capture without per-world columns: the disks, placed by the inventory snapshot
    bare = tmp_path / "fig2.csv"
    without_world_columns(full, bare)
    assert "no VM had commands" in run("capacity", "-n", "64", str(bare)).stdout  # nothing places the disks
    (tmp_path / "fig2.inventory.json").write_text((tmp_path / "full" / "fig2.inventory.json").read_text())
    disks = run("capacity", "-n", "64", str(bare))
    assert disks.returncode == 0, disks.stderr
    found = re.search(r"a=(\d+\.\d+) d=32 -> at most 1 VMs per host \(d/a\), 3 VMs on the LUN", disks.stdout)
    assert found and 16.0 < float(found.group(1)) < 16.16, disks.stdout  # 16 within 1%, a hair above: m rounds down
    assert "a from the VMs' virtual disks" in disks.stdout and "VMs on the LUN from this host: 4" in disks.stdout
