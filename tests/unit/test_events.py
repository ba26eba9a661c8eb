"""ESXi's storage events without a server: the catalog merged with a server's, what an event names
(device, datastore) checked against the inventory, the bounded tally, vobd.log lines of ESXi 7.0
and 8.0 paired vob -> esx and counted once, and the exposition (promtool check metrics)."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import pytest

from exporter.events import catalog, extract, tally, vobd
from exporter.events.page import read_events
from exporter.serving.exposition import Exposition
from exporter.store import model as m
from exporter.store.store import Store
from tests.support.promtext import value

VOBD = Path(__file__).resolve().parents[1] / "fixtures" / "vobd"
HOST = "esx01.lab.local"
LUN1, LUN2 = "naa.600a098038303053453f463045727a61", "naa.600a098038303053453f463045727a62"
UUID = "5f3c0001-b0070001-0001-000000000001"


def test_the_server_catalog_adds_ids_of_the_families_only_and_at_most_its_cap():
    ids = ["esx.problem.storage.apd.start", "esx.problem.vmfs.new.thing", "VmPoweredOnEvent", "esx.audit.host.boot"]
    followed, left_out = catalog.followed(ids)
    assert "esx.problem.vmfs.new.thing" in followed and "VmPoweredOnEvent" not in followed
    assert catalog.KNOWN <= followed and left_out == 0
    many = [f"esx.problem.storage.x{i}" for i in range(catalog.MAX_SERVER_IDS + 500)]
    followed, left_out = catalog.followed(many + ["esx.problem.scsi." + "y" * 200])
    assert len(followed) == len(catalog.KNOWN) + catalog.MAX_SERVER_IDS
    assert left_out == 501  # 500 over the cap and the id over the length


def inventory() -> extract.Inventory:
    return extract.Inventory(
        devices={HOST: {LUN1, LUN2}}, datastores={HOST: {"ds-shared-01", "ds 02"}}, uuids={HOST: {UUID: "ds-shared-01"}}
    )


@pytest.mark.parametrize(
    "texts, ds, device, datastore, unknown",
    [
        ([f"[{LUN1}]"], "", LUN1, "", ()),
        ([f'Device: {LUN2} has been removed. Affected datastores (if any): "ds 02".'], "", LUN2, "ds 02", ()),
        ([f"Device :{LUN2} has been removed"], "", LUN2, "", ()),
        ([UUID, "ds-shared-01"], "", "", "ds-shared-01", ()),
        ([f"{UUID.replace('0001-0000', '0009-0000')} ds 02"], "", "", "ds 02", ()),  # a uuid not known, its label is
        ([LUN2, "10650", "324540"], "ds 02", LUN2, "ds 02", ()),
        (["naa.6000000000000000000000000000dead"], "nowhere", "", "", ("device", "datastore")),
        (["x" * (1 << 20) + LUN1], "", "", "", ()),  # past the scanned prefix: not searched
    ],
)
def test_what_an_event_names_is_the_inventory_s_or_nothing(texts, ds, device, datastore, unknown):
    named = extract.names(HOST, inventory(), texts, ds)
    assert (named.device, named.datastore) == (device, datastore)
    assert (named.unknown_device, named.unknown_datastore) == ("device" in unknown, "datastore" in unknown)


def test_the_tally_bounds_every_label_and_counts_what_it_left_out():
    t = tally.Tally("vc", "vsphere", max_label=128)
    followed = catalog.KNOWN
    ok = extract.names(HOST, inventory(), [LUN1])
    t.count(HOST, "esx.problem.storage.apd.start", ok, 10.0, followed, {HOST})
    t.count(HOST, "esx.problem.storage.apd.start", ok, 5.0, followed, {HOST})  # out of order: the newest time kept
    t.count(HOST, "esx.problem.storage.simulated.7", ok, 11.0, followed, {HOST})
    t.count("esx99", "esx.problem.storage.apd.start", ok, 12.0, followed, {HOST})
    t.count(HOST, "x" * 200, extract.names(HOST, inventory(), ["naa.1"]), 13.0, followed | {"x" * 200}, {HOST})
    assert t.seen(7) is False and t.seen(7) is True
    record = t.record(True, {}, len(followed))
    assert record.counts == {
        (HOST, "esx.problem.storage.apd.start", LUN1, ""): (2, 10.0),
        (HOST, "", LUN1, ""): (1, 11.0),
        ("", "esx.problem.storage.apd.start", LUN1, ""): (1, 12.0),
        (HOST, "", "", ""): (1, 13.0),
    }
    assert record.dropped == {"unknown_event": 2, "unknown_host": 1, "unknown_device": 1, "duplicate": 1}


def test_the_keys_remembered_are_bounded():
    t = tally.Tally("vc", "vsphere")
    for key in range(tally.REMEMBERED_KEYS + 10):
        t.seen(key)
    assert len(t.keys) == tally.REMEMBERED_KEYS and 0 not in t.keys


def follower(store=None) -> vobd.VobdFollower:
    store = store or Store()
    store.set_inventory(
        m.Inventory(
            host=HOST,
            luns={LUN1: m.LunConfig(datastore="ds-shared-01"), LUN2: m.LunConfig(datastore="ds-shared-02")},
        )
    )
    return vobd.VobdFollower("root@esx01", store, lambda: HOST)


def fed(name: str, f: vobd.VobdFollower | None = None) -> vobd.VobdFollower:
    f = f or follower()
    for line in (VOBD / name).read_text().splitlines():
        f.feed(line, now=0.0)
    f.flush(now=vobd.PAIR_WINDOW)
    return f


def test_esxi_70_vobd_lines_are_counted_once_under_their_esx_ids():
    counts = fed("esxi70.log").tally.record(True, {}, 0).counts
    assert {key: n for key, (n, _) in counts.items()} == {
        (HOST, "esx.problem.storage.apd.start", LUN1, ""): 1,
        (HOST, "esx.problem.storage.apd.timeout", LUN1, ""): 1,
        (HOST, "esx.clear.storage.apd.exit", LUN1, ""): 1,
        (HOST, "esx.problem.vmfs.heartbeat.timedout", "", "ds-shared-01"): 1,
        (HOST, "esx.problem.vmfs.heartbeat.recovered", "", "ds-shared-01"): 1,
        (HOST, "esx.problem.scsi.device.io.latency.high", LUN2, ""): 1,
        (HOST, "esx.problem.storage.redundancy.lost", LUN2, "ds-shared-02"): 1,  # Affected datastores: "ds-shared-02"
        (HOST, "esx.problem.scsi.device.state.permanentloss", LUN2, "ds-shared-02"): 1,
    }
    assert counts[(HOST, "esx.problem.storage.apd.start", LUN1, "")][1] == 1614680049.912


def test_esxi_80_lines_and_a_vob_whose_twin_never_came():
    f = follower()
    lines = (VOBD / "esxi80.log").read_text().splitlines()
    for line in lines:
        f.feed(line, now=0.0)
    pdl = (HOST, "esx.problem.scsi.device.state.permanentloss", LUN2, "")
    assert pdl not in f.tally.counts  # held for its twin
    f.flush(now=vobd.PAIR_WINDOW - 0.1)
    assert pdl not in f.tally.counts
    f.flush(now=vobd.PAIR_WINDOW)
    counts = {key: v[0] for key, v in f.tally.counts.items()}
    assert counts[pdl] == 1
    assert counts[(HOST, "esx.problem.scsi.device.io.latency.high", LUN1, "")] == 1
    assert counts[(HOST, "esx.problem.vmfs.heartbeat.timedout", "", "ds-shared-01")] == 1
    assert counts[(HOST, "esx.clear.storage.apd.exit", LUN2, "")] == 1
    assert sum(counts.values()) == 6  # no audit event, no vob twice
    assert f.tally.dropped == {}


def test_lines_read_again_after_a_reconnection_are_not_counted_twice():
    f = fed("esxi70.log")
    before = {k: v[0] for k, v in f.tally.counts.items()}
    fed("esxi70.log", f)  # tail -n 1000 after a reconnection: the same lines again
    assert {k: v[0] for k, v in f.tally.counts.items()} == before
    f.feed(
        "2021-03-02T10:24:51.110Z: [scsiCorrelator] 2683328999us: [esx.problem.scsi.device.state.permanentloss] Device: naa.600a098038303053453f463045727a62 again.",
        now=0.0,
    )
    assert f.tally.counts[(HOST, "esx.problem.scsi.device.state.permanentloss", LUN2, "ds-shared-02")][0] == 1
    assert f.tally.counts[(HOST, "esx.problem.scsi.device.state.permanentloss", LUN2, "")][0] == 1  # same second, another line


def test_a_line_in_no_known_format_is_counted_and_logged_once(caplog):
    f = follower()
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            f.feed("garbage that is no vobd line")
        f.feed("")
    assert f.tally.dropped == {"unreadable": 3}
    assert len([r for r in caplog.records if "no known format" in r.getMessage()]) == 1


_PAGE = """<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<soapenv:Body><ReadNextEventsResponse xmlns="urn:vim25">
<returnval xsi:type="EventEx"><key>41</key><createdTime>2026-01-02T03:04:05.5Z</createdTime>
<host><name>esx01.lab.local</name><host type="HostSystem">host-1</host></host>
<eventTypeId>esx.problem.vmfs.heartbeat.timedout</eventTypeId>
<arguments><key>1</key><value xsi:type="xsd:string">{uuid}</value></arguments><arguments><key>2</key><value>{big}</value></arguments></returnval>
<returnval xsi:type="EventEx"><key>x</key><createdTime>2026-01-02T03:04:05Z</createdTime></returnval>
<returnval xsi:type="VmPoweredOnEvent"><key>43</key><createdTime>2026-01-02T03:04:06Z</createdTime><ds><name>ds 02</name></ds></returnval>
</ReadNextEventsResponse></soapenv:Body></soapenv:Envelope>"""


def test_an_event_page_is_read_with_its_arguments_and_a_bad_event_counted():
    page = _PAGE.format(uuid=UUID, big="y" * (1 << 20)).encode()
    events = []
    read, bad = read_events((page[i : i + 1000] for i in range(0, len(page), 1000)), events.append)  # as it arrives
    assert (read, bad) == (2, 1)
    first, second = events
    assert (first.key, first.id, first.host, first.time) == (41, "esx.problem.vmfs.heartbeat.timedout", HOST, 1767323045.5)
    assert first.texts[0] == UUID and len(first.texts[1]) == extract.SCAN  # a 1 MB argument kept to what is searched
    assert (second.id, second.ds) == ("VmPoweredOnEvent", "ds 02")
    assert extract.names(HOST, inventory(), first.texts).datastore == "ds-shared-01"


def test_a_host_both_sources_report_is_shown_once_and_the_exposition_is_valid():
    store = Store()
    key = (HOST, "esx.problem.storage.apd.start", LUN1, "")
    store.set_storage_events(
        m.StorageEvents("vc", "vsphere", 1, {key: (2, 100.0), ("", "", "", ""): (1, 90.0)}, {"unknown_host": 1}, {"read": 0}, 80)
    )
    store.set_storage_events(
        m.StorageEvents("root@esx01", "vobd", 1, {key: (2, 100.0), ("", "", "", ""): (3, 95.0)}, {"unknown_host": 3}, {}, 80)
    )
    body = Exposition(store, ["events"]).body()
    text = body.decode() if isinstance(body, bytes) else body
    assert value(text, "esxi_storage_events_total", host=HOST, event="esx.problem.storage.apd.start", device=LUN1) == 2
    assert value(text, "esxi_storage_events_total", host="", event="") == 4  # different events: summed
    assert value(text, "esxi_storage_event_last_timestamp_seconds", host="") == 95.0
    assert value(text, "esxi_storage_events_dropped_total", source="vobd", reason="unknown_host") == 3
    if not shutil.which("promtool"):
        pytest.fail("promtool is not installed: run .ci/install")
    done = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    "raw, event_id",
    [
        # the two forms Broadcom KB 421608 shows (7.0, 8.0), and 8.0's severity without a value or with a line marker
        (
            "2025-01-02T03:04:05.483Z: [UserLevelCorrelator] 1019369886505us: [vob.user.ssh.session.opened] SSH session was opened.",
            "vob.user.ssh.session.opened",
        ),
        (
            "2025-01-02T03:04:05.737Z In(14) vobd[2097521]:  [UserLevelCorrelator] 1012726884193us: [vob.user.ssh.session.closed] SSH session was closed.",
            "vob.user.ssh.session.closed",
        ),
        (
            "2025-01-02T03:04:05.737Z Wa vobd[2097521]:  [APDCorrelator] 1us: [esx.problem.storage.apd.start] x",
            "esx.problem.storage.apd.start",
        ),
        (
            "2025-01-02T03:04:05.737Z Wa(12)+ vobd[2097521]:  [APDCorrelator] 1us: [esx.problem.storage.apd.start] x",
            "esx.problem.storage.apd.start",
        ),
        ("2025-01-02T03:04:05Z: [APDCorrelator] 1us: [esx.problem.storage.apd.start]", "esx.problem.storage.apd.start"),
        ("2025-01-02 03:04:05: [APDCorrelator] 1us: [esx.problem.storage.apd.start] no T", None),
        ("[APDCorrelator] 1us: [esx.problem.storage.apd.start] no time", None),
    ],
)
def test_vobd_line_forms(raw, event_id):
    line = vobd.parse(raw)
    assert (line.id if line else None) == event_id


def test_an_esx_line_before_its_vob_twin_is_one_event_and_a_vob_alone_later_another():
    """vobd does not always write the vob line first (a KB excerpt of a corrupt volume shows the esx
    line first, and the vob line alone five minutes later: a second observation, counted as one)."""
    f = follower()
    esx = f"2021-02-02T19:26:34.577Z: [vmfsCorrelator] 2938471510366us: [esx.problem.vmfs.resource.corruptondisk] {UUID} ds-shared-01"
    vob = f'2021-02-02T19:26:34.578Z: [vmfsCorrelator] 2938471510500us: [vob.vmfs.resource.corruptondisk] Volume {UUID} ("ds-shared-01") might be damaged on the disk.'
    late = vob.replace("19:26:34.578", "19:31:38.981")
    f.feed(esx, now=0.0)
    f.feed(vob, now=0.1)
    f.flush(now=5.0)
    key = (HOST, "esx.problem.vmfs.resource.corruptondisk", "", "ds-shared-01")
    assert f.tally.counts[key][0] == 1
    f.feed(late, now=300.0)
    f.flush(now=303.0)
    assert f.tally.counts[key][0] == 2


def test_an_events_round_that_counted_nothing_new_leaves_the_store_version():
    """bench/space_serve.py found the events' 10 s rounds re-rendering an unchanged exposition:
    an equal record keeps the store's version; a new count, up or error moves it."""
    from exporter.store import model as m
    from exporter.store.store import Store

    store = Store()
    store.set_storage_events(m.StorageEvents(origin="vc", source="vsphere", up=1, followed_ids=80))
    version = store.version
    store.set_storage_events(m.StorageEvents(origin="vc", source="vsphere", up=1, followed_ids=80))
    assert store.version == version
    counted = {("esx01", "esx.problem.storage.apd.start", "naa.1", ""): (1, 1795837105.0)}
    store.set_storage_events(m.StorageEvents(origin="vc", source="vsphere", up=1, counts=counted, followed_ids=80))
    assert store.version == version + 1
    store.set_storage_events(m.StorageEvents(origin="vc", source="vsphere", up=0, counts=counted, followed_ids=80))
    assert store.version == version + 2
