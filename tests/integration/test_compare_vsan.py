"""compare --prometheus on vSAN: the host (DOM client) and VM subjects from the stored history, one
value per performance-service sample (not one per scrape), judged like every other subject.

Four hours before and four after a change, scraped every 15 s, with a vSAN sample every 5 minutes
(48 a window: 5-minute means need hours to tell a change from noise, where 5 s esxtop samples need
minutes):
esx21's write latency doubles (a policy or hardware change that went wrong), esx22 stays as it was,
and vm-a on esx21 sees the same doubling. esx21's ESA disk eui.21's performance tier writes take
twice as long, 3 ms to 6 ms (its capacity tier stays); esx22's vSAN vmnic2 starts losing 1.2% of what it
receives (its CRC errors with it) while vmnic3 stays clean. Written as OpenMetrics, loaded into a real Prometheus.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from exporter.analysis.backfill import create_blocks
from tests.support.cli import run_cli
from tests.support.servers import Prometheus

pytestmark = pytest.mark.integration

HOUR, SCRAPE, SAMPLE = 3600.0, 15.0, 300.0
WINDOW = 4 * HOUR
T0 = float(int(time.time() - 12 * HOUR) // 300 * 300)
CHANGE = T0 + WINDOW


def _ar1(rng, n, sigma):
    noise, out = 0.0, []
    for _ in range(n):
        noise = 0.5 * noise + rng.normal(0, sigma)
        out.append(noise)
    return np.array(out)


def history() -> str:
    rng = np.random.default_rng(7)
    samples = np.arange(T0, T0 + 2 * WINDOW + SAMPLE, SAMPLE)  # each sample's own time
    before = samples < CHANGE
    write_ms = {
        "esx21": np.where(before, 4.0, 8.0) + _ar1(rng, len(samples), 0.2),
        "esx22": 4.0 + _ar1(rng, len(samples), 0.2),
    }
    series: dict[str, list[str]] = {}

    def add(name: str, labels: str, per_sample: np.ndarray):
        lines = series.setdefault(name, [])
        for scrape in np.arange(T0 + SAMPLE, T0 + 2 * WINDOW + SAMPLE, SCRAPE):
            index = int((scrape - T0) // SAMPLE) - 1  # the newest complete sample at this scrape
            lines.append(f"{name}{{{labels}}} {float(per_sample[index])!r} {scrape:.3f}")

    for host, latency in write_ms.items():
        labels = f'cluster="vsan-a",host="{host}"'
        add("esxi_vsan_host_write_latency_mean_seconds", labels, latency / 1000)
        add("esxi_vsan_host_read_latency_mean_seconds", labels, np.full(len(samples), 0.0012))
        add("esxi_vsan_host_writes_per_second", labels, np.full(len(samples), 900.0))
        add("esxi_vsan_host_reads_per_second", labels, np.full(len(samples), 1500.0))
        add("esxi_vsan_host_outstanding_io", labels, 1.8 + 0.9 * latency)
        add("esxi_vsan_host_congestion_per_second", labels, np.zeros(len(samples)))
    add("esxi_vsan_vm_write_latency_mean_seconds", 'cluster="vsan-a",vm="vm-a"', write_ms["esx21"] / 1000)
    add("esxi_vsan_vm_writes_per_second", 'cluster="vsan-a",vm="vm-a"', np.full(len(samples), 300.0))
    disk_rng = np.random.default_rng(11)  # the disks' own noise, so the hosts' stays as it was
    for tier, scale in (("performance", np.where(before, 1.0, 2.0)), ("capacity", np.ones(len(samples)))):
        labels = f'cluster="vsan-a",host="esx21",device="eui.21",tier="{tier}"'
        add("esxi_vsan_disk_tier_write_latency_mean_seconds", labels, (3.0 * scale + _ar1(disk_rng, len(samples), 0.2)) / 1000)
        add("esxi_vsan_disk_tier_writes_per_second", labels, np.full(len(samples), 400.0))
        add("esxi_vsan_disk_tier_reads_per_second", labels, np.full(len(samples), 600.0))
    for vmnic, loss in (("vmnic2", np.where(before, 0.0, 0.012)), ("vmnic3", np.zeros(len(samples)))):
        labels = f'cluster="vsan-a",host="esx22",vmnic="{vmnic}"'
        add("esxi_vsan_nic_received_packet_loss_ratio", labels, loss)
        add("esxi_vsan_nic_received_crc_error_ratio", labels, loss / 10)
        add("esxi_vsan_nic_received_bytes_per_second", labels, 5e8 + 1e6 * _ar1(rng, len(samples), 1.0))
        add("esxi_vsan_nic_transmitted_bytes_per_second", labels, 4e8 + 1e6 * _ar1(rng, len(samples), 1.0))
    add("esxi_vsan_sample_timestamp_seconds", 'cluster="vsan-a"', samples)
    text = []
    for name, lines in series.items():
        text += [f"# TYPE {name} gauge", *lines]
    return "\n".join(text) + "\n# EOF\n"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vsan-history")
    om = tmp / "vsan.om"
    om.write_text(history())
    create_blocks(om, tmp / "prom" / "data")
    prom = Prometheus(tmp / "prom", [], args=("--storage.tsdb.retention.time=100y",))
    yield prom, tmp
    prom.stop()


def test_vsan_host_and_vm_subjects_get_a_before_after_verdict(prometheus):
    prom, tmp = prometheus
    out = tmp / "report.json"
    done = run_cli("compare", "--prometheus", prom.url, "--change", f"{CHANGE:.0f}", "--window", "4h", "--json", out)
    assert done.returncode == 1, done.stderr  # something got worse: exit 1
    report = json.loads(out.read_text())
    metrics = {(m["host"], m["family"], m["subject"], m["metric"]): m for m in report["metrics"]}
    worse = {key for key, m in metrics.items() if m["verdict"] == "worse"}
    assert worse == {
        ("esx21 vSAN", "vsan_hosts", "vsan-a", "write_latency"),
        ("vsan-a vSAN VMs", "vsan_vms", "vm-a", "write_latency"),
        ("esx21 vSAN", "vsan_esa_disks", "eui.21 performance", "write_latency"),
        ("esx22 vSAN", "vsan_nics", "vmnic2", "rx_loss"),
        ("esx22 vSAN", "vsan_nics", "vmnic2", "crc"),
    }
    disk = metrics[("esx21 vSAN", "vsan_esa_disks", "eui.21 performance", "write_latency")]
    assert disk["before"] == pytest.approx(3.0, abs=0.3) and disk["after"] == pytest.approx(6.0, abs=0.3)
    assert metrics[("esx21 vSAN", "vsan_esa_disks", "eui.21 capacity", "write_latency")]["verdict"] == "unchanged"
    nic = metrics[("esx22 vSAN", "vsan_nics", "vmnic2", "rx_loss")]
    assert nic["before"] == pytest.approx(0.0) and nic["after"] == pytest.approx(1.2)  # percent
    assert metrics[("esx22 vSAN", "vsan_nics", "vmnic3", "rx_loss")]["verdict"] == "unchanged"
    host = metrics[("esx21 vSAN", "vsan_hosts", "vsan-a", "write_latency")]
    assert host["before"] == pytest.approx(4.0, abs=0.3) and host["after"] == pytest.approx(8.0, abs=0.3)
    steady = metrics[("esx22 vSAN", "vsan_hosts", "vsan-a", "write_latency")]
    assert steady["verdict"] == "unchanged" and steady["after"] == pytest.approx(4.0, abs=0.3)
    # One row per vSAN sample, at the sample's own time, not one per 15 s scrape: 12 an hour.
    sides = {c["after"]["host"]: c for c in report["comparisons"]}
    for name in ("esx21 vSAN", "esx22 vSAN", "vsan-a vSAN VMs"):
        assert sides[name]["before"]["samples"] == 48 and sides[name]["after"]["samples"] == 48, sides[name]
        assert sides[name]["after"]["start"] % SAMPLE == 0
