"""ESXi's storage events through the storage simulator's event manager (simulators/storagesim/events.go),
the exporter's event follower (exporter/events/vsphere.py) and a real Prometheus with the
project's rules: each event counted once with its device and datastore, every event alert firing
where the events say and nowhere else, and a session ended under the follower losing nothing and
counting nothing twice. One simulator, exporter and Prometheus for the module."""

from __future__ import annotations

import time

import pytest

from simulators.storagesim.sims import StorageSim
from tests.support import storage_events
from tests.support.promtext import eventually, value
from tests.support.rules import rule_file
from tests.support.servers import Prometheus, stop_all
from tests.support.vsphere_api import connect, end_other_sessions, serve_vsphere

pytestmark = pytest.mark.integration
ESX1, ESX2, ESX3 = "esx01.lab.local", "esx02.lab.local", "esx03.lab.local"
LUN1, LUN2 = "naa.600a098038303053453f463045727a61", "naa.600a098038303053453f463045727a62"
DS = "ds-shared-01"
# the rules' windows shortened for a live run (tests/support/rules.py's FAST does the same for the others)
EVENTS_FAST = {"for_volume_access_lost": "5s", "for_device_apd": "0s", "storage_event_latency_window": "2m"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("events")
    sim = StorageSim(tmp / "sim")
    exporter = prometheus = None
    try:
        exporter = serve_vsphere(sim, tmp, "--vsphere.interval=1s", "--vsphere.events-interval=1s")
        rules = rule_file(tmp / "esxi-storage.rules.yml", EVENTS_FAST)
        prometheus = Prometheus(tmp / "prometheus", [f"127.0.0.1:{exporter.port}"], rule_files=[rules])
        eventually(lambda: value(exporter.metrics(), "esxi_storage_events_up", source="vsphere") == 1, 60, what="events followed")
        yield sim, exporter, prometheus, tmp / "exporter.log"
    finally:
        stop_all(prometheus, exporter, sim)


@pytest.fixture(scope="module")
def api(stack):
    si = connect(stack[0])
    yield si.RetrieveContent(), si
    from pyVim.connect import Disconnect

    Disconnect(si)


def counted(exporter, **labels) -> float | None:
    return value(exporter.metrics(), "esxi_storage_events_total", **labels)


def test_each_event_is_counted_once_with_its_device_and_datastore(stack, api):
    sim, exporter, _, log = stack
    # esx03 has LUN1, not LUN2
    uuid = storage_events.vmfs_uuid(api[0], ESX3, DS)
    storage_events.post(
        sim,
        [
            {"host": ESX3, "id": "esx.problem.scsi.device.io.latency.high", "arguments": [LUN1, "10650", "324540"]},
            {"host": ESX3, "id": "esx.problem.vmfs.heartbeat.timedout", "arguments": [uuid, DS]},
            {"host": ESX3, "id": "esx.problem.vmfs.heartbeat.recovered", "arguments": [uuid, DS]},
            # a device this host does not have: counted, under an empty device
            {"host": ESX3, "id": "esx.problem.storage.apd.start", "arguments": ["naa.6000000000000000000000000000dead"]},
            # an event of no storage family: not followed (the collector's filter leaves it out)
            {"host": ESX3, "id": "esx.audit.host.boot", "arguments": []},
        ],
    )
    latency = dict(host=ESX3, event="esx.problem.scsi.device.io.latency.high", device=LUN1, datastore="")
    eventually(lambda: counted(exporter, **latency) == 1, 20, what="the latency event")
    time.sleep(3)  # a few more rounds: nothing counted twice
    text = exporter.metrics()
    assert value(text, "esxi_storage_events_total", **latency) == 1
    assert (
        value(text, "esxi_storage_events_total", host=ESX3, event="esx.problem.vmfs.heartbeat.timedout", device="", datastore=DS)
        == 1
    )
    assert (
        value(text, "esxi_storage_events_total", host=ESX3, event="esx.problem.vmfs.heartbeat.recovered", device="", datastore=DS)
        == 1
    )
    assert (
        value(text, "esxi_storage_events_total", host=ESX3, event="esx.problem.storage.apd.start", device="", datastore="") == 1
    )
    assert value(text, "esxi_storage_events_dropped_total", source="vsphere", reason="unknown_device") == 1
    assert "esx.audit.host.boot" not in text
    stamp = value(text, "esxi_storage_event_last_timestamp_seconds", **latency)
    assert abs(stamp - time.time()) < 60
    assert "Traceback" not in log.read_text()


def test_every_event_alert_fires_where_the_events_say_and_nowhere_else(stack, api):
    sim, exporter, prometheus, _ = stack
    uuid = storage_events.vmfs_uuid(api[0], ESX1, DS)
    latency = {"host": ESX1, "id": "esx.problem.scsi.device.io.latency.high", "arguments": [LUN1, "1343", "28022"]}
    storage_events.post(
        sim,
        [
            {"host": ESX1, "id": "esx.problem.vmfs.heartbeat.timedout", "arguments": [uuid, DS]},
            {"host": ESX1, "id": "esx.problem.storage.apd.start", "arguments": [LUN1]},
            {"host": ESX1, "id": "esx.problem.scsi.device.state.permanentloss", "arguments": [LUN2, DS]},
            latency,
            latency,
            latency,
            {"host": ESX1, "id": "esx.problem.storage.redundancy.lost", "arguments": [LUN2, "vmhba2:C0:T1:L2", DS]},
            # esx02: lost and recovered, an APD that ended, redundancy restored, one latency event
            {
                "host": ESX2,
                "id": "esx.problem.vmfs.heartbeat.timedout",
                "arguments": [storage_events.vmfs_uuid(api[0], ESX2, DS), DS],
            },
            {
                "host": ESX2,
                "id": "esx.problem.vmfs.heartbeat.recovered",
                "arguments": [storage_events.vmfs_uuid(api[0], ESX2, DS), DS],
            },
            {"host": ESX2, "id": "esx.problem.storage.apd.start", "arguments": [LUN1]},
            {"host": ESX2, "id": "esx.clear.storage.apd.exit", "arguments": [LUN1]},
            {"host": ESX2, "id": "esx.problem.storage.redundancy.lost", "arguments": [LUN2, "vmhba2:C0:T1:L2", DS]},
            {"host": ESX2, "id": "esx.clear.storage.redundancy.restored", "arguments": [LUN2, DS, "vmhba2:C0:T1:L2"]},
            {**latency, "host": ESX2},
        ],
    )
    expected = {
        ("EsxiVolumeAccessLost", ESX1, "", DS),
        ("EsxiDeviceAllPathsDown", ESX1, LUN1, ""),
        ("EsxiDevicePermanentlyLost", ESX1, LUN2, ""),
        ("EsxiLunLatencyDeteriorated", ESX1, LUN1, ""),
        ("EsxiLunPathRedundancyLostEvent", ESX1, LUN2, ""),
    }
    names = "|".join(sorted({name for name, *_ in expected}))

    def firing() -> set[tuple]:
        return {
            (s["metric"]["alertname"], s["metric"]["host"], s["metric"].get("device", ""), s["metric"].get("datastore", ""))
            for s in prometheus.query(f'ALERTS{{alertstate="firing",alertname=~"{names}"}}')
        }

    deadline = time.monotonic() + 45
    while firing() != expected and time.monotonic() < deadline:
        time.sleep(1)
    time.sleep(4)  # an alert firing late would show now
    assert firing() == expected


def test_a_session_ended_under_the_follower_loses_nothing_and_counts_nothing_twice(stack, api):
    """vCenter ends the exporter's session: its collector goes with it (ManagedObjectNotFound), is
    made again from the newest event time seen, and the events posted meanwhile are counted once."""
    sim, exporter, _, _ = stack
    content, si = api
    thin = dict(
        host=ESX2, event="esx.problem.scsi.device.thinprov.atquota", device=LUN1, datastore=DS
    )  # "Affected datastores: DS"
    # An event counted before the session ends, for the new collector to read again: the first
    # test's, or (this test alone) posted here.
    latency = dict(host=ESX3, event="esx.problem.scsi.device.io.latency.high", device=LUN1, datastore="")
    if not counted(exporter, **latency):
        storage_events.post(
            sim, [{"host": ESX3, "id": "esx.problem.scsi.device.io.latency.high", "arguments": [LUN1, "10650", "324540"]}]
        )
        eventually(lambda: counted(exporter, **latency) == 1, 20, what="the event before the session ends")
    before = value(exporter.metrics(), "esxi_storage_events_errors_total", source="vsphere", fault="collector") or 0
    assert end_other_sessions(si.content)
    storage_events.post(sim, [{"host": ESX2, "id": "esx.problem.scsi.device.thinprov.atquota", "arguments": [LUN1, DS]}] * 2)
    eventually(lambda: counted(exporter, **thin) == 2, 30, what="the events posted while the session was gone")
    time.sleep(3)
    text = exporter.metrics()
    assert value(text, "esxi_storage_events_total", **thin) == 2
    assert value(text, "esxi_storage_events_errors_total", source="vsphere", fault="collector") == before + 1
    assert value(text, "esxi_storage_events_up", source="vsphere") == 1
    # the events before the session ended were read again by the new collector, and refused by key
    assert value(text, "esxi_storage_events_dropped_total", source="vsphere", reason="duplicate") >= 1
    assert value(text, "esxi_storage_events_total", **latency) == 1


def test_a_collector_s_latest_page_changes_reach_wait_for_updates(stack, api):
    """The simulator as vCenter: a collector's latestPage (newest first, at most its page size) is
    reported to a property collector's WaitForUpdatesEx when a matching event is posted, and only then."""
    from pyVmomi import vim, vmodl

    sim = stack[0]
    si = api[1]
    pc = vmodl.query.PropertyCollector
    collector = si.content.eventManager.CreateCollectorForEvents(
        vim.event.EventFilterSpec(eventTypeId=["esx.problem.scsi.device.state.off"], maxCount=2)
    )
    mine = si.content.propertyCollector.CreatePropertyCollector()
    try:
        mine.CreateFilter(
            pc.FilterSpec(
                objectSet=[pc.ObjectSpec(obj=collector)],
                propSet=[pc.PropertySpec(type=vim.event.EventHistoryCollector, pathSet=["latestPage"])],
            ),
            partialUpdates=False,
        )
        first = mine.WaitForUpdatesEx("", pc.WaitOptions(maxWaitSeconds=0))
        storage_events.post(sim, [{"host": ESX1, "id": "esx.problem.storage.apd.start", "arguments": [LUN1]}])  # not its id
        assert mine.WaitForUpdatesEx(first.version, pc.WaitOptions(maxWaitSeconds=1)) is None
        off = {"host": ESX1, "id": "esx.problem.scsi.device.state.off", "arguments": [LUN1]}
        storage_events.post(sim, [off, off, off])
        update = mine.WaitForUpdatesEx(first.version, pc.WaitOptions(maxWaitSeconds=5))
        pages = [
            change.val for f in update.filterSet for o in f.objectSet for change in o.changeSet if change.name == "latestPage"
        ]
        assert pages and len(pages[-1]) == 2  # its page size
        assert pages[-1][0].key > pages[-1][1].key  # newest first
    finally:
        mine.DestroyPropertyCollector()
        collector.DestroyCollector()
