"""capacity: the paper's Table 2 formula, and a measured from per-world Active + Queued Commands
in ESXi and ESX 3.x captures."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from exporter.analysis import capacity
from exporter.analysis.capture import load
from simulators.esxtop_csv import header, row
from tests.support.analysis_captures import DEVICE, Setup, write
from tests.support.cli import run_cli


@pytest.mark.parametrize(
    "n, a, d, m, v",
    [
        (256, 4, 32, 8, 64),  # m = d/a, v = n/a
        (256, 32, 32, 1, 8),
        (1024, 4, 64, 16, 256),
        (256, 3, 32, 10, 85),  # whole VMs: rounded down
        (256, 32 / 3, 32, 3, 24),  # a float product that lands a hair under a whole number still counts it
    ],
)
def test_plan_is_d_over_a_per_host_and_n_over_a_per_lun(n, a, d, m, v):
    p = capacity.plan(n, a, d)
    assert (p.max_vms_per_host, p.max_vms_per_lun) == (m, v)


TABLE2 = Path(__file__).resolve().parents[1] / "fixtures" / "paper" / "scalable-storage-table2.csv"


def _table2_rows():
    with open(TABLE2, newline="") as f:
        return [tuple(float(v) for v in row.values()) for row in csv.DictReader(f)]


def test_table2_fixture_holds_every_published_row():
    assert len(_table2_rows()) == 6  # the paper's six sample configurations


@pytest.mark.parametrize("n, a, d, m, v", _table2_rows())
def test_plan_reproduces_the_papers_table2_row(n, a, d, m, v):
    """Every published row of Table 2 (one path per LUN, as the paper assumes)."""
    p = capacity.plan(n, a, d)
    assert (p.n, p.a, p.d) == (n, a, d)
    assert (p.max_vms_per_host, p.max_vms_per_lun) == (m, v)


@pytest.mark.parametrize("n, a, d, m, v", _table2_rows())
def test_cli_prints_the_papers_table2_row(n, a, d, m, v):
    done = run_cli("capacity", "--queue-depth", f"{d:g}", "--avg-active", f"{a:g}", "--array-max-outstanding", f"{n:g}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == f"{n:g} | {a:g} | {d:g} | {m:g} | {v:g}"


def test_plan_refuses_zero():
    with pytest.raises(ValueError):
        capacity.plan(256, 0, 32)


def test_cli_prints_the_table_row():
    done = run_cli("capacity", "--queue-depth", "32", "--avg-active", "4", "--array-max-outstanding", "256")
    assert done.returncode == 0
    assert done.stdout.splitlines()[1] == "256 | 4 | 32 | 8 | 64"
    missing = run_cli("capacity", "--array-max-outstanding", "256")
    assert missing.returncode == 2 and "needs a capture" in missing.stderr


def test_a_from_an_esxi_capture_per_device_per_world(tmp_path):
    capture = load(write(tmp_path / "c.csv", Setup(dqlen=32, vms=4, oio=16), seed=1, samples=40))
    (lun,) = capacity.from_capture(capture, 256)
    assert lun.device == DEVICE and sorted(lun.vms) == ["vm1", "vm2", "vm3", "vm4"]
    assert lun.a == pytest.approx(16.0)  # each VM: ACTV 8 + QUED 8
    assert (lun.plan.max_vms_per_host, lun.plan.max_vms_per_lun) == (2, 16)
    assert (lun.host_headroom, lun.lun_headroom) == (-2, 12)


def test_a_from_esx3_names_both_forms(tmp_path):
    # ESX 3.x: LUNs are Physical Disk(vmhbaA:C:T:L) or (vmhbaA:T:L); per-world columns are
    # Physical Disk(vmhbaA:C:T:L:W) or Physical Disk(WD-vmhbaA:T:L-W).
    cols = [
        ("Physical Disk", "vmhba1:0:0:0", "Device Q Depth"),
        ("Physical Disk", "vmhba1:0:0:0", "Active Commands"),
        ("Physical Disk", "vmhba1:0:0:0:1234", "Active Commands"),
        ("Physical Disk", "vmhba1:0:0:0:1234", "Queued Commands"),
        ("Physical Disk", "vmhba1:0:0:0:1240", "Active Commands"),
        ("Physical Disk", "vmhba1:0:0:0:1240", "Queued Commands"),
        ("Physical Disk", "vmhba2:0:5", "Device Q Depth"),
        ("Physical Disk", "WD-vmhba2:0:5-2001", "Active Commands"),
        ("Physical Disk", "WD-vmhba2:0:5-2001", "Queued Commands"),
        ("Physical Disk", "WD-vmhba2:0:5-2002", "Active Commands"),
        ("Physical Disk", "WD-vmhba2:0:5-2002", "Queued Commands"),
    ]
    lines = [header("esx35", cols)]
    for i in range(6):
        # world 1234: 3+1, world 1240: 1+1 -> a = 3 on the first LUN; 2001: 8, 2002: 0+... -> 6 and 2
        lines.append(row(1_200_000_000 + 5 * i, [32, 6, 3, 1, 1, 1, 64, 6, 0, 2, 0]))
    path = tmp_path / "esx35.csv"
    path.write_text("\n".join(lines) + "\n")
    loads = {lun.device: lun for lun in capacity.from_capture(load(path), 1024)}
    first, second = loads["vmhba1:0:0:0"], loads["vmhba2:0:5"]
    assert first.vms == {"world 1234": 4.0, "world 1240": 2.0} and first.a == 3.0
    assert (first.plan.max_vms_per_host, first.plan.max_vms_per_lun) == (10, 341)
    assert second.vms == {"world 2001": 6.0, "world 2002": 2.0} and second.a == 4.0
    assert (second.plan.max_vms_per_host, second.plan.max_vms_per_lun) == (16, 256)
    done = run_cli("capacity", path, "-n", "1024")
    assert done.returncode == 0 and "at most 16 VMs per host" in done.stdout and "world 2001: 6.00" in done.stdout


def test_real_capture_lists_every_lun():
    from tests.support.cli import REAL

    done = run_cli("capacity", REAL, "-n", "256")
    assert done.returncode == 0
    assert sum(line.startswith("LUN ") for line in done.stdout.splitlines()) == 4
