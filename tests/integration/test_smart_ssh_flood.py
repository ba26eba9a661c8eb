"""A host that answers a SMART page of 100 MB over SSH (issue 37), through a real sshd whose esxcli
streams it (simulators/esxi_ssh/esxcli.py, `smart_flood`): the exporter reads no more than its cap
(exporter.smart.plan.MAX_ANSWER), refuses the page whole, counts it (reason too_large), logs it
once, keeps the device's last good reading, and exports no more series than before. The memory
bound below is a behaviour check (the 100 MB are never held: before the cap the exporter peaked at
5.2 GiB), not a target; bench/smart_flood.py measures the peak and the scrape times."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulators.esxi_ssh.esxcli import HDD, NVME, SSD
from tests.support.promtext import eventually, samples, value

pytestmark = pytest.mark.integration
HOST = "esx-sim"
GET = "storage core device smart get"
FLOOD_MB = 100
MIB = 1024 * 1024


def peak_rss(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def disk_series(text: str) -> int:
    return sum(1 for name, _, _ in samples(text) if name.startswith("esxi_disk_"))


def test_a_100_mb_smart_page_is_refused_whole_counted_and_the_last_good_reading_kept(sshd, exporter_for):
    sshd.set_control(devices=[HDD, SSD, NVME], smart="healthy")
    exporter = exporter_for("--smart.interval=2s")
    good = eventually(
        lambda: (lambda t: t if value(t, "esxi_disk_smart_up", host=HOST) == 1 else None)(exporter.metrics()),
        timeout=30,
        what="a first good SMART round",
    )
    hdd = dict(host=HOST, device=HDD)
    read_at = value(good, "esxi_disk_smart_last_read_timestamp_seconds", **hdd)
    before = disk_series(good)

    sshd.set_control(devices=[HDD, SSD, NVME], smart="healthy", smart_flood={HDD: FLOOD_MB})

    def refused_twice():
        text = exporter.metrics()
        count = value(text, "esxi_disk_smart_errors_total", host=HOST, command=GET, reason="too_large") or 0
        return text if count >= 2 else None

    text = eventually(refused_twice, timeout=60, what="two rounds refusing the flooded page")
    assert value(text, "esxi_disk_smart_status", **hdd, status="unreadable") == 1
    # the last good reading stays, with its age; the other disks read on
    assert value(text, "esxi_disk_smart_last_read_timestamp_seconds", **hdd) == read_at
    assert value(text, "esxi_disk_smart_value", **hdd, parameter="reallocated_sector_count", page="ata") == 100
    assert value(text, "esxi_disk_smart_last_read_timestamp_seconds", host=HOST, device=SSD) > read_at
    # no vendor attribute of the flood became a series: the same disk series as before, and the errors counter
    assert 'parameter="vendor_attribute' not in text
    assert disk_series(text) <= before + 2  # the too_large counter, the unreadable state's 1
    assert value(text, "esxi_disk_smart_up", host=HOST) == 1
    peak = peak_rss(exporter.proc.pid)
    print(f"\nserve peak resident memory {peak / MIB:.0f} MiB with a {FLOOD_MB} MB SMART page refused")
    assert peak < 300 * MIB, f"peak {peak / MIB:.0f} MiB: the flood is being held"

    log = (sshd.tmp / "exporter.log").read_text()
    assert log.count("too_large") == 1, log[-2000:]  # once, not every round
    assert HDD in log and "Traceback" not in log
