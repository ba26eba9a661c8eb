"""VAAI end to end on the built-in simulator (issue 44): `serve --simulate vmfs-without-ats` (two
hosts sharing a VMFS datastore on a LUN without ATS, and one whose ATS heartbeat is off), scraped
by a real Prometheus running the project's rules: the esxcli configuration families on /metrics,
the configuration alerts pending (their `for:` is 15 minutes) for exactly the predicted series,
and the ATS heartbeats' counter reaching the board's recording rule. (The counts themselves are
checked exactly in tests/unit/test_simulator_vaai.py.)"""

from __future__ import annotations

import pytest

from tests.support.promtext import eventually, value
from tests.support.servers import ROOT, Exporter, Prometheus

pytestmark = pytest.mark.integration
LEGACY, MODERN = "naa.600601601e3021001a2b3c4d5e6f0050", "naa.600601601e3021001a2b3c4d5e6f0051"
RULES = ROOT / "alerts" / "esxi-storage.rules.yml"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vaai-sim")
    exporter = Exporter("--simulate", "vmfs-without-ats", "--simulate.interval", "1s", log_path=tmp / "exporter.log")
    prometheus = None
    try:
        prometheus = Prometheus(tmp / "prometheus", [exporter.url.removeprefix("http://")], rule_files=[RULES])
        yield exporter, prometheus
    finally:
        if prometheus is not None:
            prometheus.stop()
        exporter.stop()


def test_the_configuration_families_on_metrics(served):
    exporter, _ = served
    text = eventually(  # the inventory, and a measured sample (esxtop's first one sets no VAAI count)
        lambda: (lambda t: t if "esxi_datastore_vmfs_lock_mode{" in t and "esxi_lun_vaai_commands_total{" in t else None)(
            exporter.metrics()
        ),
        what="VAAI configuration and counts",
    )
    esx01, esx02 = "esx01.lab.local", "esx02.lab.local"
    assert value(text, "esxi_lun_vaai_supported", host=esx01, device=LEGACY, primitive="ats") == 0
    assert value(text, "esxi_lun_vaai_supported", host=esx01, device=LEGACY, primitive="zero") == 1
    assert value(text, "esxi_lun_vaai_supported", host=esx02, device=MODERN, primitive="ats") == 1
    assert value(text, "esxi_datastore_vmfs_lock_mode", host=esx01, datastore="vmfs-legacy", mode="ats_scsi") == 1
    assert value(text, "esxi_datastore_vmfs_lock_mode", host=esx01, datastore="vmfs-modern", mode="ats_only") == 1
    assert value(text, "esxi_host_vmfs_ats_heartbeat_enabled", host=esx02) == 0
    assert value(text, "esxi_host_vmfs_hardware_locking_enabled", host=esx02) == 1
    # esx01's ATS heartbeats on vmfs-modern, as esxtop totals; none on the LUN without ATS
    assert value(text, "esxi_lun_vaai_commands_total", host=esx01, device=LEGACY, primitive="ats") == 0


def _pending(prometheus, name):
    return {
        (r["metric"]["host"], r["metric"]["device"], r["metric"]["datastore"])
        for r in prometheus.query(f'ALERTS{{alertname="{name}"}}')
    }


def test_the_configuration_alerts_are_pending_for_exactly_the_predicted_series(served):
    _, prometheus = served
    prometheus.wait_for('ALERTS{alertname="EsxiSharedVmfsAtsHeartbeatOff"}', timeout=60)
    assert _pending(prometheus, "EsxiSharedVmfsWithoutAts") == {
        ("esx01.lab.local", LEGACY, "vmfs-legacy"),
        ("esx02.lab.local", LEGACY, "vmfs-legacy"),
    }
    assert _pending(prometheus, "EsxiSharedVmfsAtsHeartbeatOff") == {("esx02.lab.local", MODERN, "vmfs-modern")}
    states = {r["metric"]["alertstate"] for r in prometheus.query('ALERTS{alertname=~"EsxiSharedVmfs.*"}')}
    assert states == {"pending"}  # 15 minutes before they fire
    # esx01's heartbeats reach the recording rule the LUN detail board draws
    rate = prometheus.wait_for(
        f'host_device:esxi_lun_vaai_ats_commands:rate{{host="esx01.lab.local",device="{MODERN}"}} > 0', timeout=60
    )
    assert 0 < float(rate[0]["value"][1]) < 1  # 0.4 per second, over a window still filling
