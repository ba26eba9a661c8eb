"""One SMART round on a host (exporter.smart.reader and rounds), its model and its exposition, on the
answers of tests/fixtures/smart/ as simulators/esxi_ssh/esxcli.py gives them: only local devices
asked, the NVMe controller mapped to its namespace, a device without SMART a state, a failing or
garbled device never hiding the others, the last good reading kept, exact values on /metrics."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from exporter.esxcli.inventory import EsxcliError
from exporter.esxcli.ssh import MAX_OUTPUT
from exporter.serving.exposition import Exposition
from exporter.smart import reader
from exporter.smart.rounds import SmartRounds
from exporter.smart.ssh import SshEsxcli
from exporter.store.store import Store
from simulators.esxi_ssh.esxcli import HDD, NVME, SSD, USB
from tests.support.promtext import value
from tests.support.smart_runner import HOST, FixtureRunner

SAN = "naa.600601601e3021001a2b3c4d5e6f0010"


def round_on(runner, rounds=None, store=None):
    store = store or Store()
    rounds = rounds or SmartRounds(store)
    ok = rounds.refresh(HOST, SshEsxcli(runner))
    return store, rounds, ok


def test_only_local_devices_are_asked_and_the_nvme_controller_maps_to_its_namespace():
    runner = FixtureRunner()
    report, problems = reader.read(HOST, SshEsxcli(runner), now=1000.0)
    assert problems == []
    asked = [" ".join(w) for w in runner.asked]
    assert asked[:3] == ["storage core device list", "nvme device list", "storage core path list"]
    assert not any(SAN in a for a in asked)  # a SAN LUN is never asked
    assert "nvme device log smart get -A vmhba2" in asked and "nvme device log smart get -A vmhba3" not in asked  # offline
    assert sorted(report.disks) == sorted([HDD, SSD, NVME, USB])
    assert {d: h.page for d, h in report.disks.items()} == {HDD: "ata", SSD: "ata", NVME: "nvme", USB: "ata"}
    nvme = report.disks[NVME]
    assert (nvme.adapter, nvme.nvme_status, nvme.nvme_read_at) == ("vmhba2", "ok", 1000.0)
    assert nvme.temperatures_celsius == {"nvme_log": 42, "smart_page": 41}
    assert report.disks[HDD].temperatures_celsius == {"ata_raw": 33}
    assert report.disks[SSD].temperatures_celsius == {"ata_raw": 31}
    usb = report.disks[USB]
    assert (usb.smart_status, usb.smart, usb.nvme_status) == ("unsupported", None, "")


def test_a_device_without_smart_is_a_state_and_failures_hide_nothing():
    runner = FixtureRunner(broken=[SSD], fail=[HDD])
    store, rounds, ok = round_on(runner)
    assert ok  # the host's devices were listed: the round itself worked
    report = store.disk_health[HOST]
    assert {d: h.smart_status for d, h in report.disks.items()} == {
        HDD: "failed",
        SSD: "unreadable",
        NVME: "ok",
        USB: "unsupported",
    }
    health = store.health[("smart", HOST)]
    assert health.up == 1
    assert health.errors == {"storage core device smart get/error": 1, "storage core device smart get/unreadable": 1}


def test_the_last_good_reading_is_kept_with_its_age_and_unsupported_has_none():
    store, clock = Store(), iter([1000.0, 4600.0])
    rounds = SmartRounds(store, clock=lambda: next(clock))
    round_on(FixtureRunner(), rounds=rounds, store=store)
    round_on(FixtureRunner(variant="failing", fail=[HDD, "vmhba2"]), rounds=rounds, store=store)
    report = store.disk_health[HOST]
    hdd, ssd, nvme = report.disks[HDD], report.disks[SSD], report.disks[NVME]
    assert (hdd.smart_status, hdd.smart_read_at, hdd.smart.attributes["reallocated_sector_count"].raw) == ("failed", 1000.0, 0)
    assert (ssd.smart_status, ssd.smart_read_at, ssd.smart.health) == ("ok", 4600.0, "IMPENDING FAILURE")
    assert (nvme.nvme_status, nvme.nvme_read_at, nvme.nvme.percentage_used_ratio) == ("failed", 1000.0, 0.03)
    assert nvme.smart.attributes["drive_temperature"].value == 84 and nvme.temperatures_celsius == {
        "smart_page": 84,
        "nvme_log": 42,
    }


def test_a_host_whose_devices_cannot_be_listed_fails_the_round_and_keeps_its_last_report():
    store, rounds, _ = round_on(FixtureRunner())

    class Down(FixtureRunner):
        def text(self, words, max_output=MAX_OUTPUT):
            raise EsxcliError("ssh: connect to host 192.0.2.7 port 22: Connection refused")

    _, _, ok = round_on(Down(), rounds=rounds, store=store)
    assert not ok and store.health[("smart", HOST)].up == 0
    assert store.health[("smart", HOST)].errors == {"storage core device list/failed": 1}
    assert sorted(store.disk_health[HOST].disks) == sorted([HDD, SSD, NVME, USB])


def test_a_host_without_the_nvme_namespace_reads_its_ata_disks():
    class Esxi60(FixtureRunner):
        def answer(self, words):
            if words[0] == "nvme":
                raise EsxcliError("Error: Unknown command or namespace nvme device list")
            return super().answer(words)

    runner = Esxi60()
    report, problems = reader.read(HOST, SshEsxcli(runner), now=1.0)
    assert problems == [] and report.disks[HDD].smart_status == "ok"
    assert report.disks[NVME].page == "nvme" and report.disks[NVME].nvme_status == ""  # t10.NVMe: still an NVMe page
    assert not any(w[:2] == ["storage", "core"] and w[2] == "path" for w in runner.asked)


def test_exposition_has_the_exact_values_and_states():
    store, _, _ = round_on(FixtureRunner())
    text = Exposition(store, ["smart"]).body().decode()
    hdd = dict(host=HOST, device=HDD)
    assert value(text, "esxi_disk_smart_value", **hdd, parameter="reallocated_sector_count", page="ata") == 100
    assert value(text, "esxi_disk_smart_threshold", **hdd, parameter="reallocated_sector_count", page="ata") == 10
    assert value(text, "esxi_disk_smart_worst", **hdd, parameter="read_error_count", page="ata") == 71
    assert value(text, "esxi_disk_smart_raw", **hdd, parameter="power_on_hours", page="ata") == 8811
    assert value(text, "esxi_disk_smart_health_status", **hdd, status="OK") == 1
    assert value(text, "esxi_disk_temperature_celsius", **hdd, source="ata_raw") == 33
    assert 'parameter="drive_temperature",page="ata"} 67.0' in text  # the normalised value, never as degrees
    nvme = dict(host=HOST, device=NVME, adapter="vmhba2")
    assert value(text, "esxi_disk_smart_value", host=HOST, device=NVME, parameter="reallocated_sector_count", page="nvme") == 0
    assert value(text, "esxi_disk_smart_worst", host=HOST, device=NVME, parameter="reallocated_sector_count", page="nvme") is None
    assert value(text, "esxi_disk_temperature_celsius", host=HOST, device=NVME, source="nvme_log") == 42
    assert value(text, "esxi_disk_temperature_celsius", host=HOST, device=NVME, source="smart_page") == 41
    assert value(text, "esxi_disk_nvme_critical_warning", **nvme, warning="read_only") == 0
    assert value(text, "esxi_disk_nvme_available_spare_threshold_ratio", **nvme) == 0.1
    assert value(text, "esxi_disk_nvme_percentage_used_ratio", **nvme) == 0.03
    assert value(text, "esxi_disk_nvme_written_bytes_total", **nvme) == 0x4D5E6F * 512_000
    assert value(text, "esxi_disk_nvme_power_on_seconds_total", **nvme) == 11111 * 3600
    assert value(text, "esxi_disk_nvme_log_status", **nvme, status="ok") == 1
    usb = dict(host=HOST, device=USB)
    assert value(text, "esxi_disk_smart_status", **usb, status="unsupported") == 1
    assert value(text, "esxi_disk_smart_status", **usb, status="ok") == 0
    assert value(text, "esxi_disk_smart_last_read_timestamp_seconds", **usb) is None
    assert value(text, "esxi_disk_smart_up", host=HOST) == 1
    assert "esxi_disk_smart_errors_total{" not in text
    assert SAN not in text


def test_failing_variants_on_the_exposition():
    store, _, _ = round_on(FixtureRunner(variant="failing"))
    text = Exposition(store, ["smart"]).body().decode()
    ssd = dict(host=HOST, device=SSD)
    assert value(text, "esxi_disk_smart_health_status", **ssd, status="OK") == 0
    assert value(text, "esxi_disk_smart_health_status", **ssd, status="IMPENDING FAILURE") == 1
    nvme = dict(host=HOST, device=NVME, adapter="vmhba2")
    assert [
        w
        for w in ("available_spare", "temperature", "reliability_degraded", "read_only", "volatile_backup_failed")
        if value(text, "esxi_disk_nvme_critical_warning", **nvme, warning=w) == 1
    ] == [
        "available_spare",
        "temperature",
        "reliability_degraded",
    ]
    assert value(text, "esxi_disk_temperature_celsius", host=HOST, device=NVME, source="nvme_log") == 84


def test_lun_filter_and_a_host_leaving_drop_its_disks():
    from exporter.configuration.filters import LunFilter

    store = Store(lun_filter=LunFilter(exclude="^mpx\\."))
    round_on(FixtureRunner(), store=store)
    assert USB not in store.disk_health[HOST].disks and HDD in store.disk_health[HOST].disks
    store.drop_inventories([HOST])
    assert store.disk_health == {}


def test_exposition_passes_promtool_check_metrics():
    if not shutil.which("promtool"):
        pytest.fail("promtool is not installed: run .ci/install")
    store, _, _ = round_on(FixtureRunner(variant="failing", broken=[SSD]))
    body = Exposition(store, ["smart"]).body()
    done = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_device_list_field_that_does_not_read_is_counted_and_that_device_left_out():
    class Garbled(FixtureRunner):
        def answer(self, words):
            answer = super().answer(words)
            if words == ["storage", "core", "device", "list"]:  # the SSD's Is Local flag garbled
                head, _, tail = answer.partition(SSD + "\n")
                answer = head + SSD + "\n" + tail.replace("Is Local: true", "Is Local: yes please", 1)
            return answer

    store, _, ok = round_on(Garbled())
    assert ok and SSD not in store.disk_health[HOST].disks and HDD in store.disk_health[HOST].disks
    assert store.health[("smart", HOST)].errors == {"storage core device list/bad_value": 1}


def test_a_round_fault_is_counted_every_hour_and_logged_once(caplog):
    """Through the shared FaultLog (exporter.esxcli.health): the device list failing, a field that
    does not read and a round that could not start are counted every round, logged when they start
    or their message changes, and their end once."""
    import logging

    said = ["ssh: connect to host 192.0.2.7 port 22: Connection refused"]

    class Flaky(FixtureRunner):
        def text(self, words, max_output=MAX_OUTPUT):
            if said:
                raise EsxcliError(said[0])
            return super().text(words, max_output)

        def answer(self, words):
            answer = super().answer(words)
            if words == ["storage", "core", "device", "list"]:
                answer = answer.replace("Is Local: true", "Is Local: yes please", 1)
            return answer

    store = Store()
    rounds = SmartRounds(store)
    with caplog.at_level(logging.INFO, logger="exporter.smart.rounds"):
        for _ in range(3):
            round_on(Flaky(), rounds, store)
        said[0] = "ssh: connect to host 192.0.2.7 port 22: No route to host"
        round_on(Flaky(), rounds, store)
        said.clear()
        for _ in range(2):
            round_on(Flaky(), rounds, store)
        for _ in range(2):
            rounds.fail(HOST, "RetrieveManagedMethodExecuter", "HostNotConnected", rounds.epoch(HOST), "vc/esx01")
    down = f"SMART on {HOST}: storage core device list failed: ssh: connect to host 192.0.2.7 port 22:"
    assert [(r.levelname, r.getMessage()) for r in caplog.records if "has no SMART" not in r.getMessage()] == [
        ("WARNING", f"{down} Connection refused"),
        ("WARNING", f"{down} No route to host"),
        ("WARNING", f"SMART on {HOST}: storage core device list: {HDD}: islocal: not true or false: 'yes please'"),
        ("INFO", f"SMART on {HOST}: storage core device list answers again"),
        ("WARNING", "SMART on vc/esx01: RetrieveManagedMethodExecuter failed: HostNotConnected"),
    ]
    assert store.health[("smart", HOST)].errors == {
        "storage core device list/failed": 4,
        "storage core device list/bad_value": 2,
        "RetrieveManagedMethodExecuter/failed": 2,
    }


def test_a_device_that_fails_is_logged_once_with_esxcli_s_reason_and_whether_a_reading_stands_in(caplog):
    """A device's page failing is logged when it starts, with what esxcli said, and says whether a
    good reading stands in for it: none before the first good one, the last good one after."""
    import logging

    runner = FixtureRunner(fail={SSD})
    store = Store()
    rounds = SmartRounds(store)
    with caplog.at_level(logging.WARNING, logger="exporter.smart.rounds"):
        round_on(runner, rounds, store)
        round_on(runner, rounds, store)  # the same failure again: not logged again
        runner.fail.clear()
        round_on(runner, rounds, store)
        runner.fail.add(SSD)
        round_on(runner, rounds, store)
    assert [r.getMessage() for r in caplog.records] == [
        f"SMART on {HOST}: SMART of {SSD} failed: no answer within 60 s (nothing read from it yet)",
        f"SMART on {HOST}: SMART of {SSD} failed: no answer within 60 s (the last good reading is kept)",
    ]
