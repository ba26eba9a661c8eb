"""Disk health over the esxtop stream's own SSH connection: a real sshd on 127.0.0.1 whose `esxcli`
prints what real hosts print (tests/fixtures/smart/ through simulators/esxi_ssh/esxcli.py); exact
values on /metrics beside the same devices' esxtop series, only local devices asked, a device
without SMART logged once, a host whose disks turn bad seen at the next round."""

from __future__ import annotations

import json

import pytest

from simulators.esxi_ssh.esxcli import HDD, NVME, SSD, USB
from tests.support.promtext import eventually, value

pytestmark = pytest.mark.integration
HOST = "esx-sim"  # the name the fake esxtop's header gives
SAN = "naa.600601601e3021001a2b3c4d5e6f0010"


def has(exporter, needle: str):
    return lambda: (lambda t: t if needle in t else None)(exporter.metrics())


def test_disk_health_over_ssh_joins_the_lun_series_and_follows_the_disks(sshd, exporter_for):
    sshd.set_control(devices=[HDD, SSD, NVME], smart="healthy")
    exporter = exporter_for("--smart.interval=2s")
    text = eventually(has(exporter, "esxi_disk_nvme_percentage_used_ratio{"), timeout=30, what="disk health")
    hdd, nvme = dict(host=HOST, device=HDD), dict(host=HOST, device=NVME, adapter="vmhba2")
    assert value(text, "esxi_disk_smart_value", **hdd, parameter="reallocated_sector_count", page="ata") == 100
    assert value(text, "esxi_disk_smart_raw", **hdd, parameter="drive_temperature", page="ata") == 141733920801
    assert value(text, "esxi_disk_temperature_celsius", **hdd, source="ata_raw") == 33
    assert value(text, "esxi_disk_smart_health_status", host=HOST, device=SSD, status="OK") == 1
    assert value(text, "esxi_disk_nvme_percentage_used_ratio", **nvme) == 0.03
    assert value(text, "esxi_disk_temperature_celsius", host=HOST, device=NVME, source="nvme_log") == 42
    assert value(text, "esxi_disk_smart_status", host=HOST, device=USB, status="unsupported") == 1
    assert value(text, "esxi_disk_smart_up", host=HOST) == 1
    # the same host and device labels as the esxtop stream's LUN series
    assert value(text, "esxi_lun_queue_depth", **hdd) == 32 and value(text, "esxi_lun_queue_depth", host=HOST, device=NVME) == 32

    sshd.set_control(devices=[HDD, SSD, NVME], smart="failing", smart_broken=[SSD])
    text = eventually(has(exporter, 'status="IMPENDING FAILURE"} 1.0'), timeout=30, what="the failing disks")
    assert value(text, "esxi_disk_smart_raw", **hdd, parameter="reallocated_sector_count", page="ata") == 1736
    assert value(text, "esxi_disk_nvme_critical_warning", **nvme, warning="reliability_degraded") == 1
    assert value(text, "esxi_disk_smart_status", host=HOST, device=SSD, status="unreadable") == 1
    # the garbled SSD keeps its last good reading and counts one error per round, the others go on
    assert value(text, "esxi_disk_smart_health_status", host=HOST, device=SSD, status="OK") == 1
    assert (
        value(text, "esxi_disk_smart_errors_total", host=HOST, command="storage core device smart get", reason="unreadable") >= 1
    )

    def smart_gets():
        runs = [json.loads(line)["argv"] for line in sshd.control.with_name("esxcli-runs.jsonl").read_text().splitlines()]
        return [argv[-1] for argv in runs if argv[:5] == ["storage", "core", "device", "smart", "get"]]

    eventually(lambda: smart_gets().count(SSD) >= 3, timeout=30, what="a third round")  # several rounds ran ...
    assert set(smart_gets()) == {HDD, SSD, NVME, USB} and SAN not in smart_gets()  # only local devices are asked
    log = (sshd.tmp / "exporter.log").read_text()
    assert log.count(f"{USB} has no SMART to read") == 1  # ... and the device without SMART was logged once
    assert log.count(f"SMART of {SSD} unreadable") == 1
    assert "Traceback" not in log
