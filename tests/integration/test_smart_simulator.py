"""The built-in `disk-reallocating` scenario: the simulator writes its local disks' SMART pages and
NVMe log as esxcli prints them, the real SMART reader reads them, and a disk that starts
reallocating sectors raises EsxiDiskSectorsReallocating in a real Prometheus, with no hardware."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

import pytest
import yaml

from exporter.simulator import ScenarioError, Simulation, load_scenario, scenario_from_text
from exporter.simulator.live import read_disks
from tests.support.promtext import eventually, value
from tests.support.rules import rule_file
from tests.support.servers import ROOT, Exporter, Prometheus, exporter_env

SCENARIO = "disk-reallocating"
HOST = "esx-edge01.lab.local"
HDD = "t10.ATA_____WDC_WD40EFRX2D68N32N0_________________________WD2DWCC7K1AB2C3D"
SSD = "t10.ATA_____Samsung_SSD_870_EVO_1TB_____________________S6PTNM0T512345K_____"
NVME = "t10.NVMe____Samsung_SSD_980_PRO_1TB_______________A1B2C3D4E5382500"
USB = "mpx.vmhba32:C0:T0:L0"


def scenario_yaml() -> dict:
    return yaml.safe_load(resources.files("exporter.simulator.scenarios").joinpath(f"{SCENARIO}.yaml").read_text())


def report_at(minutes: float):
    sim = Simulation(load_scenario(SCENARIO), interval=5.0, start=0.0)
    for _ in range(int(minutes * 12) + 1):
        sim.step()
    return read_disks(HOST, sim.disk_answers(HOST), now=minutes * 60)


def test_the_hdd_starts_reallocating_after_two_minutes_and_the_others_stay_healthy():
    before, after = report_at(1), report_at(32)
    assert before.disks[HDD].smart.attributes["reallocated_sector_count"].raw == 0
    hdd = after.disks[HDD].smart.attributes
    assert (hdd["reallocated_sector_count"].raw, hdd["pending_sector_reallocation_count"].raw) == (
        120,
        30,
    )  # 30 min x 240/h, 60/h
    assert hdd["reallocated_sector_count"].value == 100 - 120 // 20  # the normalised value falls, far above threshold 10
    assert after.disks[HDD].temperatures_celsius == {"ata_raw": 38}
    assert after.disks[SSD].smart.attributes["media_wearout_indicator"].value == 97
    nvme = after.disks[NVME]
    assert (nvme.page, nvme.adapter, nvme.nvme.percentage_used_ratio, nvme.temperatures_celsius) == (
        "nvme",
        "vmhba1",
        0.03,
        {"nvme_log": 42, "smart_page": 42},
    )
    assert all(after.disks[d].smart_status == "ok" and after.disks[d].smart.health == "OK" for d in (HDD, SSD, NVME))
    assert (after.disks[USB].smart_status, after.disks[USB].smart) == ("unsupported", None)


def test_the_scenario_lists_its_local_disks_as_local():
    inventory = Simulation(load_scenario(SCENARIO)).inventories()[0]
    assert {d: (lun.is_local, lun.is_ssd) for d, lun in inventory.luns.items()} == {
        HDD: (True, False),
        SSD: (True, True),
        NVME: (True, True),
        USB: (True, False),
    }


@pytest.mark.parametrize(
    "change, message",
    [
        (("kind: ata_ssd", "kind: sas_hdd"), "hosts[0].disks[1].kind: must be one of ata_hdd, ata_ssd, nvme, no_smart"),
        (("adapter: vmhba1", "adapter: vmhba9"), "hosts[0].disks[2].adapter: not one of this host's adapters"),
        (("        adapter: vmhba1\n", ""), "hosts[0].disks[2].adapter: missing required field"),
        (("reallocating_from: 2m", "reallocating_from: soon"), "hosts[0].disks[0].reallocating_from: expected a duration"),
        (("temperature: 31", "temperature: 310"), "hosts[0].disks[1].temperature: must be in 1..99 °C"),
    ],
)
def test_bad_disk_entries_are_one_line_naming_the_field(change, message):
    text = resources.files("exporter.simulator.scenarios").joinpath(f"{SCENARIO}.yaml").read_text()
    assert change[0] in text
    with pytest.raises(ScenarioError) as caught:
        scenario_from_text(text.replace(*change, 1), file="disks.yaml")
    assert str(caught.value).startswith(f"disks.yaml: {message}"), str(caught.value)


def test_simulate_list_shows_the_scenario():
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "simulate", "--list"], capture_output=True, text=True, env=exporter_env(), cwd=ROOT
    )
    assert done.returncode == 0 and any(line.split()[0] == SCENARIO for line in done.stdout.splitlines())


@pytest.mark.integration
def test_serve_simulate_raises_the_reallocation_alert_in_prometheus(tmp_path):
    """The scenario with its timeline shortened (reallocating from the start, quickly): served,
    scraped and judged by the project's rules with their windows shortened."""
    data = scenario_yaml()
    hdd = data["hosts"][0]["disks"][0]
    hdd.update(reallocating_from="0s", reallocations_per_hour=7200, pending_per_hour=0)
    scenario = tmp_path / "disk-reallocating-fast.yaml"
    scenario.write_text(yaml.safe_dump(data))
    rules = rule_file(tmp_path / "rules.yml", {"for_disk_warning": "5s", "disk_sectors_window": "10m"})
    exporter = Exporter("--simulate", str(scenario), "--simulate.interval", "1s", log_path=tmp_path / "exporter.log")
    prometheus = None
    try:
        text = eventually(lambda: (lambda t: t if "esxi_disk_smart_raw{" in t else None)(exporter.metrics()), what="disks")
        assert value(text, "esxi_disk_smart_up", host=HOST) == 1
        assert value(text, "esxi_disk_smart_status", host=HOST, device=USB, status="unsupported") == 1
        assert value(text, "esxi_lun_local", host=HOST, device=HDD) == 1  # the LUN families' device label
        prometheus = Prometheus(tmp_path / "prometheus", [f"127.0.0.1:{exporter.port}"], rule_files=[rules])
        firing = prometheus.wait_for('ALERTS{alertname="EsxiDiskSectorsReallocating",alertstate="firing"}', timeout=60)
        assert [(a["metric"]["host"], a["metric"]["device"], a["metric"]["sectors"]) for a in firing] == [
            (HOST, HDD, "reallocated")
        ]
        others = prometheus.query('ALERTS{alertname=~"EsxiDisk.*",alertname!="EsxiDiskSectorsReallocating"}')
        assert others == []  # the SSD and the NVMe device stay healthy
    finally:
        if prometheus:
            prometheus.stop()
        exporter.stop()
