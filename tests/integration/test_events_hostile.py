"""A hostile vCenter's storage events (simulators/storagesim/events.go's switches), each bounded and counted,
logged once, the rest of the answer kept: 10,000 distinct event ids no filter asked for, 100,000
events in one page past maxCount, 1 MB arguments, events out of order and repeated. One simulator
and exporter for the module; each test checks what its own events changed."""

from __future__ import annotations

import time

import pytest

from exporter.events import catalog
from simulators.storagesim.sims import StorageSim
from tests.support import storage_events
from tests.support.promtext import eventually, samples, value
from tests.support.vsphere_api import connect, end_other_sessions, serve_vsphere

pytestmark = pytest.mark.integration
ESX1, ESX2 = "esx01.lab.local", "esx02.lab.local"
LUN1 = "naa.600a098038303053453f463045727a61"
LATENCY = "esx.problem.scsi.device.io.latency.high"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("events-hostile")
    sim = StorageSim(tmp / "sim")
    exporter = None
    try:
        exporter = serve_vsphere(sim, tmp, "--vsphere.interval=2s", "--vsphere.events-interval=1s")
        eventually(lambda: value(exporter.metrics(), "esxi_storage_events_up", source="vsphere") == 1, 60, what="events followed")
        yield sim, exporter, tmp / "exporter.log"
    finally:
        if exporter:
            exporter.stop()
        sim.stop()


def dropped(text: str, reason: str) -> float:
    return value(text, "esxi_storage_events_dropped_total", source="vsphere", reason=reason) or 0


def series(text: str) -> int:
    return sum(1 for name, _, _ in samples(text) if name == "esxi_storage_events_total")


def test_10000_distinct_ids_no_filter_asked_for_count_under_an_empty_id(stack):
    sim, exporter, log = stack
    before = exporter.metrics()
    storage_events.post(sim, [{"host": ESX1, "id": "esx.problem.storage.simulated", "arguments": [LUN1]}], distinct_ids=10_000)
    eventually(
        lambda: dropped(exporter.metrics(), "unknown_event") - dropped(before, "unknown_event") == 10_000,
        60,
        what="10,000 events",
    )
    text = exporter.metrics()
    assert value(text, "esxi_storage_events_total", host=ESX1, event="", device=LUN1, datastore="") == 10_000
    assert series(text) <= series(before) + 1  # one series for all of them, not 10,000
    # A new collector takes the catalog's ids, up to its cap: the rest logged once, counted
    api = connect(sim)
    assert end_other_sessions(api.content)
    eventually(
        lambda: value(exporter.metrics(), "esxi_storage_events_errors_total", source="vsphere", fault="catalog") == 1,
        30,
        what="the catalog's excess counted",
    )
    text = exporter.metrics()
    assert value(text, "esxi_storage_events_followed_ids", source="vsphere") == len(catalog.KNOWN) + catalog.MAX_SERVER_IDS
    assert log.read_text().count("storage event id(s) past the 1000 followed") == 1


def test_100000_events_in_one_page_are_all_counted(stack):
    sim, exporter, log = stack
    event = {"host": ESX2, "id": LATENCY, "arguments": [LUN1, "1000", "90000"]}
    started = time.monotonic()
    storage_events.post(sim, [event], page_events=100_000)
    eventually(
        lambda: (
            value(exporter.metrics(), "esxi_storage_events_total", host=ESX2, event=LATENCY, device=LUN1, datastore="") == 100_001
        ),
        90,
        interval=1,
        what="100,001 events",
    )
    print(f"100,001 events posted and counted in {time.monotonic() - started:.1f} s")
    assert value(exporter.metrics(), "esxi_storage_events_up", source="vsphere") == 1


def test_1mb_arguments_out_of_order_and_repeated_events(stack):
    sim, exporter, log = stack
    before = exporter.metrics()
    huge = "naa." + "6" * (1 << 20)
    storage_events.post(
        sim,
        [
            {"host": ESX1, "id": "esx.problem.storage.apd.start", "arguments": [huge, "x" * (1 << 20)]},
            {"host": ESX1, "id": "esx.problem.storage.apd.start", "arguments": [huge[:200]]},
            # after it in the page but a second older: out of order (and still within the collector's beginTime)
            {"host": ESX1, "id": "esx.problem.storage.apd.timeout", "arguments": [LUN1], "age_seconds": 1},
            {"host": ESX1, "id": "esx.clear.storage.apd.exit", "arguments": [LUN1], "key": 900000},
            {"host": ESX1, "id": "esx.clear.storage.apd.exit", "arguments": [LUN1], "key": 900000},  # the same event again
        ],
    )
    exit_ = dict(host=ESX1, event="esx.clear.storage.apd.exit", device=LUN1, datastore="")
    eventually(lambda: value(exporter.metrics(), "esxi_storage_events_total", **exit_) == 1, 30, what="the repeated event")
    time.sleep(2)
    text = exporter.metrics()
    assert value(text, "esxi_storage_events_total", **exit_) == 1
    assert dropped(text, "duplicate") - dropped(before, "duplicate") == 1
    late = dict(host=ESX1, event="esx.problem.storage.apd.timeout", device=LUN1, datastore="")
    assert value(text, "esxi_storage_events_total", **late) == 1
    start_time = value(
        text,
        "esxi_storage_event_last_timestamp_seconds",
        host=ESX1,
        event="esx.problem.storage.apd.start",
        device="",
        datastore="",
    )
    assert value(text, "esxi_storage_event_last_timestamp_seconds", **late) < start_time
    # the 1 MB and 200-character device names are none of the host's: counted under an empty device,
    # no label over the limit
    assert (
        value(text, "esxi_storage_events_total", host=ESX1, event="esx.problem.storage.apd.start", device="", datastore="") == 2
    )
    assert dropped(text, "unknown_device") - dropped(before, "unknown_device") == 2
    assert max(len(line) for line in text.splitlines()) < 1000
    assert "Traceback" not in log.read_text()
