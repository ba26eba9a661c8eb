"""vCenter restarted under the event follower: the storage simulator stopped and started again on
the same port with the events it kept (`-events-state`, as vCenter keeps them in its database,
keys included). The follower's session and collector are gone with the old process: it logs in
again, makes its collector again from the newest event it saw, counts the events posted after the
restart once, and refuses by key those it had counted before."""

from __future__ import annotations

import time

import pytest

from simulators.storagesim.sims import StorageSim
from tests.support import storage_events
from tests.support.promtext import eventually, value
from tests.support.servers import free_port
from tests.support.vsphere_api import serve_vsphere

pytestmark = pytest.mark.integration
ESX1 = "esx01.lab.local"
LUN1 = "naa.600a098038303053453f463045727a61"


def test_a_vcenter_restart_loses_nothing_after_it_and_counts_nothing_twice(tmp_path):
    port, state = free_port(), tmp_path / "events.jsonl"
    args = ("-l", f"127.0.0.1:{port}", "-events-state", str(state))
    sims = [StorageSim(tmp_path / "sim", *args)]
    exporter = None
    try:
        exporter = serve_vsphere(sims[0], tmp_path, "--vsphere.interval=2s", "--vsphere.events-interval=1s")
        eventually(lambda: value(exporter.metrics(), "esxi_storage_events_up", source="vsphere") == 1, 60, what="followed")
        before = {"host": ESX1, "id": "esx.problem.storage.apd.start", "arguments": [LUN1]}
        storage_events.post(sims[0], [before])
        start = dict(host=ESX1, event="esx.problem.storage.apd.start", device=LUN1, datastore="")
        eventually(lambda: value(exporter.metrics(), "esxi_storage_events_total", **start) == 1, 20, what="the event before")
        sims[0].stop()  # vCenter goes down; it keeps its events
        sims.append(StorageSim(tmp_path / "sim", *args))  # and comes back on the same address, a new certificate at the same path
        after = {"host": ESX1, "id": "esx.clear.storage.apd.exit", "arguments": [LUN1]}
        storage_events.post(sims[1], [after])
        exit_ = dict(host=ESX1, event="esx.clear.storage.apd.exit", device=LUN1, datastore="")
        eventually(
            lambda: value(exporter.metrics(), "esxi_storage_events_total", **exit_) == 1, 90, interval=1, what="the event after"
        )
        time.sleep(3)
        text = exporter.metrics()
        assert value(text, "esxi_storage_events_total", **start) == 1  # read again by the new collector: refused by key
        assert value(text, "esxi_storage_events_total", **exit_) == 1
        assert value(text, "esxi_storage_events_dropped_total", source="vsphere", reason="duplicate") >= 1
        assert value(text, "esxi_storage_events_up", source="vsphere") == 1
    finally:
        if exporter:
            exporter.stop()
        for sim in sims:
            sim.stop()
    assert "Traceback" not in (tmp_path / "exporter.log").read_text()
