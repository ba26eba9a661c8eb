"""Hostile SMART and NVMe answers (issue 37): a value too large for a float, negative, past what its
field holds, a label too long, too many attributes, an answer past its cap. Each is refused alone
(or, for an answer too large, whole), counted in esxi_disk_smart_errors_total by reason, logged once
naming host, device and field, and every other value of the same page still read; nothing on
/metrics is ever non-finite. A host that leaves takes its disks and SMART health with it, and a round
still running on it keeps nothing."""

from __future__ import annotations

import logging
import math

import pytest

from exporter.serving.exposition import Exposition
from exporter.smart import parse, plan
from exporter.smart.rounds import SmartRounds
from exporter.smart.ssh import SshEsxcli
from exporter.store.store import Store
from simulators.esxi_ssh import esxcli as fake_esxcli
from simulators.esxi_ssh.esxcli import HDD, NVME, SSD
from tests.support.promtext import samples, value
from tests.support.smart_runner import GET, HOST, Edited, FixtureRunner, table

LOG = "nvme device log smart get"
HUGE = "9" * 400  # the 400-digit raw: int() reads it, float() cannot


def refresh(rounds: SmartRounds, runner) -> bool:
    return rounds.refresh(HOST, SshEsxcli(runner))


def hdd_row(name: str, value: str, threshold: str, worst: str, raw: str) -> str:
    """A row laid out as the columns of tests/fixtures/smart/smart-hdd.txt."""
    return f"{name:<33}  {value:<5}  {threshold:<9}  {worst:<5}  {raw}\n"


def exposition(store) -> str:
    text = Exposition(store, ["smart"]).body().decode()
    assert all(math.isfinite(v) for _, _, v in samples(text)), "a non-finite value on /metrics"
    return text


def test_a_400_digit_raw_is_refused_on_that_attribute_only_counted_and_logged_once(caplog):
    caplog.set_level(logging.WARNING)
    store = Store()
    rounds = SmartRounds(store)
    runner = Edited({HDD: lambda t: t.replace("8811        ", HUGE)})
    for _ in range(3):
        assert refresh(rounds, runner)
    disk = store.disk_health[HOST].disks[HDD]
    assert disk.smart_status == "ok"
    hours = disk.smart.attributes["power_on_hours"]
    assert (hours.value, hours.threshold, hours.worst, hours.raw) == (90, 0, 90, None)  # the rest of its row stays
    assert disk.smart.attributes["reallocated_sector_count"].value == 100  # and the rest of the page
    assert disk.temperatures_celsius == {"ata_raw": 33}
    assert store.health[("smart", HOST)].errors == {f"{GET}/out_of_range": 3}  # counted every round
    text = exposition(store)
    assert value(text, "esxi_disk_smart_raw", host=HOST, device=HDD, parameter="power_on_hours", page="ata") is None
    assert value(text, "esxi_disk_smart_value", host=HOST, device=HDD, parameter="power_on_hours", page="ata") == 90
    assert value(text, "esxi_disk_smart_errors_total", host=HOST, command=GET, reason="out_of_range") == 3
    lines = [r.getMessage() for r in caplog.records if "out_of_range" in r.getMessage()]
    assert len(lines) == 1, lines  # logged when first refused, not every round
    assert HOST in lines[0] and HDD in lines[0] and "Power-on Hours" in lines[0] and "Raw" in lines[0] and "\n" not in lines[0]
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(
    "figure, says",
    [
        ("-5", "negative"),
        ("18446744073709551616", "more than 64 bits"),  # 2^64
        ("0" * 500 + "7", None),  # leading zeros: 7, read
        ("9" * 5000, "digits long"),  # past int()'s own 4,300-digit limit: refused before it is asked
    ],
)
def test_smart_figures_out_of_range_are_refused_alone(figure, says):
    page = parse.smart_page_text(
        table(("Read Error Count", "81", "44", "71", figure), ("Drive Temperature", "67", "0", "55", "33")), HDD, refused := []
    )
    row = page.attributes["read_error_count"]
    if says is None:
        assert row.raw == 7 and refused == []
        return
    assert (row.value, row.raw) == (81, None) and page.attributes["drive_temperature"].raw == 33
    [refusal] = refused
    assert (refusal.subject, refusal.reason) == (HDD, "out_of_range") and says in refusal.message


def test_json_and_api_forms_refuse_alike():
    items = [
        {"Parameter": "Read Error Count", "Value": "81", "Threshold": "44", "Worst": "71", "Raw": HUGE},
        {"Parameter": "Power Cycle Count", "Value": -3, "Threshold": "20", "Worst": "100", "Raw": "12"},
    ]
    import json

    page = parse.smart_page_text(json.dumps(items), HDD, refused := [])
    assert page.attributes["read_error_count"].raw is None and page.attributes["power_cycle_count"].value is None
    assert page.attributes["power_cycle_count"].raw == 12
    assert [r.reason for r in refused] == ["out_of_range", "out_of_range"]
    records = [{k.lower(): str(v) for k, v in item.items()} for item in items]
    assert parse.smart_page_records(records, HDD, again := []) == page and len(again) == 2
    for hostile, says in (("[" * 100_000, "nested too deep"), ("[" + "9" * 5000 + "]", "JSON")):
        with pytest.raises(parse.SmartFormatError, match=says) as caught:
            parse.smart_page_text(hostile, HDD)
        assert "\n" not in str(caught.value)


def test_labels_over_128_characters_are_refused_and_counted():
    long_name = "Vendor Specific " + "x" * 200
    page = parse.smart_page_text(
        table(
            ("Health Status", "IMPENDING " * 20, "N/A", "N/A"),
            (long_name, "1", "0", "1"),
            ("Read Error Count", "81", "44", "71"),
        ),
        HDD,
        refused := [],
    )
    assert page.health == "" and list(page.attributes) == ["read_error_count"]
    assert [r.reason for r in refused] == ["label_too_long", "label_too_long"]
    assert all(len(r.message) < 300 for r in refused)
    at_the_bound = parse.smart_page_text(table(("A" * 128, "1", "0", "1")), HDD, none := [])
    assert list(at_the_bound.attributes) == ["a" * 128] and none == []


def test_attributes_past_256_are_not_read_and_counted_once_per_page():
    store = Store()
    rows = "".join(hdd_row(f"Vendor Attribute {i}", "100", "0", "100", str(i)) for i in range(1000))
    runner = Edited({HDD: lambda t: t + rows})
    assert refresh(SmartRounds(store), runner)
    attributes = store.disk_health[HOST].disks[HDD].smart.attributes
    assert len(attributes) == parse.MAX_ATTRIBUTES and "read_error_count" in attributes  # the first ones, in order
    assert store.health[("smart", HOST)].errors == {f"{GET}/too_many_attributes": 1}
    text = exposition(store)
    assert len([s for s in samples(text) if s[0] == "esxi_disk_smart_value" and s[1]["device"] == HDD]) == 256


def test_an_answer_past_its_cap_is_refused_whole_and_the_last_good_reading_stays():
    store, clock = Store(), iter([1000.0, 2000.0, 3000.0])
    rounds = SmartRounds(store, clock=lambda: next(clock))
    assert refresh(rounds, FixtureRunner())
    padding = hdd_row("Vendor Attribute", "100", "0", "100", "1") * (plan.MAX_ANSWER // 60)
    huge = Edited({SSD: lambda t: t + padding, "vmhba2": lambda t: t + "   Vendor Field: 0x0\n" * 60_000})
    assert refresh(rounds, huge) and refresh(rounds, huge)
    disk = store.disk_health[HOST].disks[SSD]
    assert (disk.smart_status, disk.smart_read_at, disk.smart.health) == ("unreadable", 1000.0, "OK")
    nvme = store.disk_health[HOST].disks[NVME]
    assert (nvme.nvme_status, nvme.nvme_read_at, nvme.nvme.percentage_used_ratio) == ("unreadable", 1000.0, 0.03)
    assert store.disk_health[HOST].disks[HDD].smart_read_at == 3000.0  # the others read on
    assert store.health[("smart", HOST)].errors == {f"{GET}/too_large": 2, f"{LOG}/too_large": 2}
    text = exposition(store)
    assert value(text, "esxi_disk_smart_errors_total", host=HOST, command=GET, reason="too_large") == 2
    assert value(text, "esxi_disk_smart_status", host=HOST, device=SSD, status="unreadable") == 1


def test_nvme_fields_past_their_width_or_negative_are_refused_alone():
    edits = {
        "Data Units Read: 0x1a2b3c": "Data Units Read: 0x1" + "0" * 32,  # 2^128: past 16 bytes
        "Media Errors: 0x0": "Media Errors: -1",
        "Available Spare: 100 %": "Available Spare: 101 %",
        "Percentage Used: 3 %": "Percentage Used: 256 %",
        "Composite Temperature: 315 K": "Composite Temperature: 65536 K",
        "Warning Composite Temperature Time: 0 Mins": f"Warning Composite Temperature Time: {2**32} Mins",
        "Power Cycles: 0x1c": "Power Cycles: 0x" + "f" * 400,
    }
    text = (fake_esxcli.SMART / "nvme-log.txt").read_text()
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new)
    log = parse.nvme_log_text(text, "vmhba2", refused := [])
    assert len(refused) == len(edits) and {r.reason for r in refused} == {"out_of_range"}
    assert log.temperature_celsius is None and log.available_spare_ratio is None and log.percentage_used_ratio is None
    assert set(log.counters) == set(parse.m.NVME_COUNTERS) - {
        "read_bytes",
        "media_errors",
        "warning_temperature_seconds",
        "power_cycles",
    }
    assert log.counters["written_bytes"] == 0x4D5E6F * 512_000 and log.available_spare_threshold_ratio == 0.1
    largest = parse.nvme_log_text(text.replace("Data Units Read: 0x1" + "0" * 32, "Data Units Read: 0x" + "f" * 32), "vmhba2")
    assert math.isfinite(largest.counters["read_bytes"])  # 2^128 - 1 data units: finite in bytes
    assert (
        parse.nvme_log_text(text.replace("Percentage Used: 256 %", "Percentage Used: 255 %"), "x").percentage_used_ratio == 2.55
    )


def test_an_nvme_page_temperature_past_what_kelvin_can_give_is_no_temperature():
    page = parse.m.SmartPage(attributes={"drive_temperature": parse.m.SmartAttribute(value=float(2**63))})
    assert parse.temperatures("nvme", page, None) == {}


def test_device_and_adapter_names_over_128_characters_are_refused():
    long_device = "t10.ATA_____" + "X" * 200

    class LongNames(FixtureRunner):
        def answer(self, words):
            text = super().answer(words)
            if words[:4] == ["storage", "core", "device", "list"]:
                text = text.replace(SSD, long_device)
            return text

    store = Store()
    assert refresh(SmartRounds(store), LongNames())
    assert long_device not in store.disk_health[HOST].disks and HDD in store.disk_health[HOST].disks
    assert store.health[("smart", HOST)].errors == {"storage core device list/label_too_long": 1}


def test_a_host_that_leaves_takes_its_disks_and_smart_health_and_a_running_round_keeps_nothing():
    store = Store()
    rounds = SmartRounds(store, origin="vc")
    assert rounds.refresh(HOST, SshEsxcli(Edited({HDD: lambda t: t.replace("8811        ", HUGE)})))
    assert exposition(store.view("vc")).count(HOST) > 10

    class LeavesMidRound(FixtureRunner):
        def answer(self, words):
            if words[:5] == ["storage", "core", "device", "smart", "get"] and words[-1] == SSD:
                rounds.forget({HOST})  # the target forgets the host while its round runs
            return super().answer(words)

    assert not rounds.refresh(HOST, SshEsxcli(LeavesMidRound()))
    assert HOST not in exposition(store) and store.disk_health == {} and ("smart", HOST) not in store.health
    assert rounds.last == {} and rounds.health.faults.snapshot() == {} and rounds.notes.snapshot() == {}
    assert rounds.refresh(HOST, SshEsxcli(FixtureRunner()))  # back: counting afresh
    assert store.health[("smart", HOST)].errors == {} and HDD in store.disk_health[HOST].disks
