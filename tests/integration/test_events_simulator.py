"""`serve --simulate` of a storage incident (exporter/simulator/events.py) through a real
Prometheus with the project's rules: the volume that loses access fires EsxiDeviceAllPathsDown and
EsxiVolumeAccessLost on its host only, and both resolve when it recovers. The scenario's times are
shortened (the built-in volume-access-lost keeps access lost for seven minutes)."""

from __future__ import annotations

import time

import pytest

from tests.support.promtext import value
from tests.support.rules import rule_file
from tests.support.servers import Exporter, Prometheus

pytestmark = pytest.mark.integration
DEVICE, DATASTORE = "naa.6000000000000000000000000000a001", "ds-sim-01"


def test_a_volume_that_loses_access_fires_both_alerts_and_they_resolve_when_it_recovers(tmp_path):
    scenario = tmp_path / "short.yaml"
    scenario.write_text(
        "kind: storage-events\nhosts: 2\n"
        f"datastore: {DATASTORE}\ndevice: {DEVICE}\n"
        "incident: {host: 1, after: 1s, lost: 30s, calm: 600s}\n"
    )
    exporter = Exporter("--simulate", str(scenario), "--simulate.interval=1s", log_path=tmp_path / "exporter.log")
    prometheus = None
    try:
        rules = rule_file(tmp_path / "rules.yml", {"for_volume_access_lost": "5s", "for_device_apd": "0s"})
        prometheus = Prometheus(tmp_path / "prometheus", [f"127.0.0.1:{exporter.port}"], rule_files=[rules])

        def firing() -> set[tuple]:
            return {
                (s["metric"]["alertname"], s["metric"]["host"])
                for s in prometheus.query('ALERTS{alertstate="firing",alertname=~"EsxiVolumeAccessLost|EsxiDeviceAllPathsDown"}')
            }

        expected = {("EsxiVolumeAccessLost", "esx-ev01"), ("EsxiDeviceAllPathsDown", "esx-ev01")}
        deadline = time.monotonic() + 40
        while firing() != expected and time.monotonic() < deadline:
            time.sleep(1)
        assert firing() == expected
        text = exporter.metrics()
        assert (
            value(
                text,
                "esxi_storage_events_total",
                host="esx-ev01",
                event="esx.problem.vmfs.heartbeat.timedout",
                datastore=DATASTORE,
            )
            == 1
        )
        assert (
            value(text, "esxi_storage_events_total", host="esx-ev01", event="esx.problem.storage.apd.start", device=DEVICE) == 1
        )
        assert value(text, "esxi_storage_events_total", host="esx-ev02", event="esx.problem.storage.apd.start") is None
        deadline = time.monotonic() + 30
        while firing() and time.monotonic() < deadline:
            time.sleep(1)
        assert firing() == set()
        assert (
            value(
                exporter.metrics(), "esxi_storage_events_total", event="esx.problem.vmfs.heartbeat.recovered", datastore=DATASTORE
            )
            == 1
        )
    finally:
        if prometheus:
            prometheus.stop()
        exporter.stop()
    assert "Traceback" not in (tmp_path / "exporter.log").read_text()
