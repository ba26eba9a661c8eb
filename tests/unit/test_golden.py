"""Golden expositions of the real captures in tests/fixtures/esxtop (copied from public repositories; see PROVENANCE.md there), with values checked against
the CSV cells independently of the reader, and linted by promtool."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from exporter.esxtop import read_file
from exporter.serving.exposition import Exposition
from exporter.store.store import Store
from tests.support.servers import CAPTURES

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
RS = CAPTURES / "esxi65-default-3samples.csv"
IC_HEADER = CAPTURES / "esxi60-default-header-one-cell-per-line.txt"
IC_ROW = CAPTURES / "esxi60-default-row-one-cell-per-line.txt"


def rejoin(cells_file: Path) -> str:
    """The IC files hold one cell per line (the author split the line at every comma)."""
    return ",".join(cells_file.read_text().split("\n")).rstrip(",") + ","


@pytest.fixture(scope="module")
def ic_capture(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ic") / "esxi60-default.csv"
    path.write_text(rejoin(IC_HEADER) + "\n" + rejoin(IC_ROW) + "\n")
    return path


def exposition_of(path: Path) -> str:
    store = Store()
    for sample in read_file(path):
        store.ingest(sample)
    text = Exposition(store).body().decode()
    # Collector timings and the Python version differ run to run: mask them for the golden compare.
    text = re.sub(r"(esxi_scrape_collector_duration_seconds\{[^}]*\}) .*", r"\1 <duration>", text)
    return re.sub(r'python_version="[^"]*"', 'python_version="<python>"', text)


def check_golden(name: str, text: str, update: bool) -> None:
    golden = GOLDEN / name
    if update:
        golden.write_text(text)
    assert golden.exists(), f"{golden} is missing; create it with pytest --update-golden"
    assert text == golden.read_text(), f"exposition differs from {golden}; rerun pytest with --update-golden if intended"


def samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            if value != "<duration>":
                out[name] = float(value)
    return out


def csv_rows(path: Path):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def test_esxi65_golden_matches_csv_cells(request):
    text = exposition_of(RS)
    check_golden("esxi65-default-3samples.prom", text, request.config.getoption("--update-golden"))
    got = samples(text)
    header, rows = csv_rows(RS)
    col = {cell: i for i, cell in enumerate(header)}
    host = "localhost.home"
    checked = 0
    for device in (
        "t10.ATA_____DREVO_X1_SSD____________________________TW1770103538________",
        "mpx.vmhba0:C0:T5:L0",
        "t10.ATA_____ST2000DM0062D2DM164__________________________________Z4Z90XYV",
    ):

        def cells(counter):
            return [float(r[col[f"\\\\{host}\\Physical Disk SCSI Device({device})\\{counter}"]]) for r in rows]

        labels = f'{{host="{host}",device="{device}"}}'
        cmds = cells("Commands/sec")
        # Rows 2 and 3 are 5 s after their predecessor; row 1 is esxtop's all-zero first sample.
        assert got["esxi_lun_commands_total" + labels] == pytest.approx(sum(c * 5 for c in cmds[1:]))
        assert got["esxi_lun_written_bytes_total" + labels] == pytest.approx(
            sum(c * 5 * 1048576 for c in cells("MBytes Written/sec")[1:])
        )
        for counter, metric in (
            ("Average Driver MilliSec/Command", "device"),
            ("Average Kernel MilliSec/Command", "kernel"),
            ("Average Guest MilliSec/Command", "guest"),
            ("Average Queue MilliSec/Command", "queue"),
        ):
            lat = cells(counter)
            assert got[f"esxi_lun_{metric}_latency_seconds_total" + labels] == pytest.approx(
                sum(ms / 1000 * c * 5 for ms, c in zip(lat[1:], cmds[1:]))
            )
            assert got[f"esxi_lun_{metric}_latency_mean_seconds" + labels] == pytest.approx(lat[-1] / 1000)
        assert got["esxi_lun_queue_depth" + labels] == cells("Device Q Depth")[-1]
        assert got["esxi_lun_active_commands" + labels] == cells("Active Commands")[-1]
        checked += 1
    adapter = [float(r[col[f"\\\\{host}\\Physical Disk Adapter(vmhba0)\\Commands/sec"]]) for r in rows]
    assert got['esxi_adapter_commands_total{host="localhost.home",adapter="vmhba0"}'] == pytest.approx(
        sum(a * 5 for a in adapter[1:])
    )
    cpu = float(rows[-1][col[f"\\\\{host}\\Physical Cpu(_Total)\\% Util Time"]])
    assert got['esxi_cpu_utilization_ratio{host="localhost.home",cpu="_Total"}'] == pytest.approx(cpu / 100)
    assert got['esxi_esxtop_samples_total{host="localhost.home"}'] == 3
    # The VM that owns world 444768 is named by the capture's own Vcpu columns.
    assert (
        'esxi_lun_world_active_commands{host="localhost.home",device="t10.ATA_____DREVO_X1_SSD____________________________TW1770103538________",world="444768",vm="styx"}'
        in got
    )
    assert 'esxi_path_info{host="localhost.home",path="vmhba0:C0:T5:L0",adapter="vmhba0",device="mpx.vmhba0:C0:T5:L0"}' in got
    assert checked == 3


def test_esxi60_golden_matches_csv_cells(ic_capture, request):
    text = exposition_of(ic_capture)
    check_golden("esxi60-default.prom", text, request.config.getoption("--update-golden"))
    got = samples(text)
    header = rejoin(IC_HEADER).split(",")
    row = rejoin(IC_ROW).split(",")
    col = {cell.strip('"'): i for i, cell in enumerate(header)}
    device = "naa.600508b1001c87660c0bd32f228a36a8"
    depth = float(row[col[f"\\\\localhost\\Physical Disk SCSI Device({device})\\Device Q Depth"]].strip('"'))
    assert depth == 28
    assert got[f'esxi_lun_queue_depth{{host="localhost",device="{device}"}}'] == depth
    # One row only: esxtop's first sample is not a measurement, so counters exist and stay 0.
    assert got[f'esxi_lun_commands_total{{host="localhost",device="{device}"}}'] == 0
    assert f'esxi_lun_device_latency_mean_seconds{{host="localhost",device="{device}"}}' not in got
    # Every cell the reader converted equals the CSV cell (the first sample's values, unscaled back).
    sample = next(read_file(ic_capture))
    assert sample.interval is None
    for counter, field, divisor in (
        ("Device Q Depth", "queue_depth", 1),
        ("Commands/sec", "commands_per_second", 1),
        ("Average Driver MilliSec/Command", "device_latency_seconds", 1000),
    ):
        cell = float(row[col[f"\\\\localhost\\Physical Disk SCSI Device({device})\\{counter}"]].strip('"'))
        assert sample.luns[device][field] == pytest.approx(cell / divisor)
    assert "datastore3-nfs" in sample.datastores and "datastore3-nfs" not in sample.luns  # NFS volume, GAVG only
    assert set(sample.datastores["datastore3-nfs"]) == {
        "active_commands",
        "commands_per_second",
        "reads_per_second",
        "writes_per_second",
        "read_bytes_per_second",
        "written_bytes_per_second",
        "guest_latency_seconds",
    }
    assert len(sample.cpus) == 33  # 32 PCPUs with a `% Util Time` column, and _Total


@pytest.mark.parametrize("name", ["esxi65-default-3samples.prom", "esxi60-default.prom"])
def test_golden_passes_promtool_check_metrics(name):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool is not installed: run .ci/install")
    text = (GOLDEN / name).read_text().replace("<duration>", "0.001")
    result = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", ["esxi65-default-3samples.prom", "esxi60-default.prom"])
def test_golden_parses_with_prometheus_client(name):
    from prometheus_client.parser import text_string_to_metric_families

    text = (GOLDEN / name).read_text().replace("<duration>", "0.001")
    families = list(text_string_to_metric_families(text))
    types = {(f.name, f.type) for f in families}
    assert ("esxi_lun_commands", "counter") in types and ("esxi_lun_queue_depth", "gauge") in types
    # The latency counter (…_seconds_total) and the last-interval gauge (…_mean_seconds) both parse;
    # a one-sample capture has no measured interval, so no latency gauge.
    expected = {("esxi_lun_device_latency_seconds", "counter")}
    if "3samples" in name:
        expected.add(("esxi_lun_device_latency_mean_seconds", "gauge"))
    assert expected <= types
    assert sum(len(f.samples) for f in families) == sum(1 for line in text.splitlines() if line and not line.startswith("#"))
