"""Every panel query of every dashboard, run against a real Prometheus scraping the exporter on
simulator scenarios, with template variables and Grafana's interval macros substituted the way
Grafana does (dashboards/interpolate.py). Each query must parse and return data.

The dashboards are looked at the way a user would: time range the last RANGE seconds, every
variable at its default (All), the before/after dashboard's shift set to RANGE so its "before"
panels show the RANGE seconds before that. The datasource's scrape interval is Prometheus' (1 s),
which is what Grafana builds $__rate_interval from.
"""

from __future__ import annotations

import html
import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest

from dashboards.evaluate import PROVISIONED, evaluate, report
from dashboards.evaluate import Prometheus as PromAPI
from dashboards.preview import render
from dashboards.render import all_panels
from simulators.storagesim.sims import FIXTURE, PASSWORD, USER, StorageSim
from tests.support.servers import ROOT, Exporter, Prometheus

# disk-reallocating: a host's local disks (HDD, SATA SSD, NVMe, a USB device without SMART) for the
# Disks board, its HDD reallocating sectors from two minutes in.
# demo: two hosts, two LUNs, every metric family. queue-overrun (the paper's Figure 2): four VMs with
# 16 outstanding I/Os each on one LUN with DQLEN 32, so Table 2 has known answers: a = 16, m = d/a = 2.
# Beside them an exporter reads the vSphere storage simulator (simulators/storagesim/): its VMs' virtual disks
# with what backs them (VMFS LUNs, an RDM, NFS; pvscsi, lsilogic, ahci and nvme controllers, an IOPS
# limit), which only the vSphere API reports. Its hosts are renamed (esx01.vc.lab.local): the
# scenarios' hosts have its hosts' names, and one host is not two.
SCENARIOS = ("demo", "queue-overrun", "disk-reallocating", "vsan-congestion", "vsan-lossy-nic", "datastore-filling")
OVERRUN_LUN = "naa.600601601e3021001a2b3c4d5e6f0001"
SCRAPE = 1.0
RANGE = 20.0
# A fixture rule so that ALERTS has a firing series to show at once (the project's alerts wait out
# their `for:`); the project's alert rules (alerts/*.rules.yml, issue 5), where present, are loaded beside it.
FIXTURE_RULES = """\
groups:
  - name: dashboards-live-test
    rules:
      - alert: DashboardsLiveTestLunSeen
        expr: esxi_lun_queue_depth > 0
        labels: {severity: info}
        annotations: {summary: fixture alert so the firing-alerts panels have a series}
"""

pytestmark = pytest.mark.integration

needs_simulator = pytest.mark.skipif(
    importlib.util.find_spec("exporter.simulator") is None, reason="exporter.simulator (issue 3) is not merged yet"
)


def dashboard_files() -> list[Path]:
    return sorted(PROVISIONED.glob("*.json"))


@needs_simulator
def test_every_panel_query_returns_data(tmp_path, capsys):
    exporters, prometheus, vcenter = [], None, None
    try:
        for scenario in SCENARIOS:
            exporters.append(
                Exporter("--simulate", scenario, "--simulate.interval", "1s", log_path=tmp_path / f"exporter-{scenario}.log")
            )
        fixture = tmp_path / "vcsim-fixture.json"
        fixture.write_text(json.dumps(with_host_states(json.loads(FIXTURE.read_text().replace(".lab.local", ".vc.lab.local")))))
        vcenter = StorageSim(tmp_path / "vcsim", fixture=fixture)
        password = tmp_path / "vsphere-password"
        password.write_text(PASSWORD + "\n")
        password.chmod(0o600)
        exporters.append(
            Exporter(
                "--vsphere",
                vcenter.url,
                "--vsphere.user",
                USER,
                "--vsphere.password-file",
                str(password),
                "--vsphere.ca-file",
                str(vcenter.cert),
                "--vsphere.interval=1s",
                log_path=tmp_path / "exporter-vsphere.log",
            )  # fmt: skip
        )
        rules = tmp_path / "fixture-rules.yml"
        rules.write_text(FIXTURE_RULES)
        prometheus = Prometheus(
            tmp_path / "prom",
            [f"127.0.0.1:{e.port}" for e in exporters],
            scrape_interval=f"{SCRAPE:g}s",
            rule_files=[rules, *sorted((ROOT / "alerts").glob("*.rules.yml"))],
        )
        prometheus.wait_for('count(up{job="esxi"} == 1)', lambda r: r and r[0]["value"][1] == str(len(exporters)))
        first = time.time()
        # The before/after panels look 2 x RANGE back, plus their rate window: wait until that is data.
        time.sleep(2 * RANGE + 8 * SCRAPE)
        end = time.time()
        panels, annotations, problems = evaluate(
            dashboard_files(), PromAPI(prometheus.url), end - RANGE, end, SCRAPE, overrides={"shift": f"{RANGE:g}s"}
        )
        with capsys.disabled():
            print(f"\n[dashboards live, data since {end - first:.0f}s]")
            report(panels, annotations, problems, out=sys.stdout)
        expected = sum(len(p.get("targets", [])) for f in dashboard_files() for p in all_panels(json.loads(f.read_text())))
        assert len(panels) == expected > 0
        assert problems == []
        assert [f"{r.dashboard} / {r.panel} [{r.ref}]: {r.detail}: {r.expr}" for r in panels if not r.ok] == []
        assert all(r.ok for r in annotations), [r.detail for r in annotations if not r.ok]
        check_table2(panels)
        check_table2_from_the_vsphere_api(panels)
        check_disks(panels)
        check_host_states(panels)
        for f in dashboard_files():  # the data preview draws every panel from these results
            model = json.loads(f.read_text())
            page = render(model, [r for r in panels if r.dashboard == model["title"]], "test")
            assert "no data" not in page and all(html.escape(p["title"]).split("$")[0] in page for p in all_panels(model))
    finally:
        if prometheus:
            prometheus.stop()
        for e in exporters:
            e.stop()
        if vcenter:
            vcenter.stop()


def with_host_states(fixture: dict) -> dict:
    """The overview's host states: esx02 in maintenance mode, and a fourth host (esx03's storage,
    no VMs) that vCenter lists as not responding (simulators/storagesim/hoststate.go)."""
    hosts = fixture["hosts"]
    hosts[1]["maintenance"] = True
    hosts.append({**hosts[2], "name": "esx04.vc.lab.local", "vms": [], "connection_state": "notResponding"})
    return fixture


def check_host_states(panels) -> None:
    assert value(panels, "Hosts not connected", "A") == 1
    assert value(panels, "Hosts in maintenance mode", "A") == 1
    assert value(panels, "Host states", "A", host="esx04.vc.lab.local", state="notResponding") == 0
    assert value(panels, "Host states", "A", host="esx02.vc.lab.local", state="connected") == 1
    assert value(panels, "Host states", "B", host="esx01.vc.lab.local", state="connected") == 4  # its four LUNs


def value(panels, panel: str, ref: str, **labels) -> float:
    [result] = [r for r in panels if r.panel == panel and r.ref == ref]
    found = [v for metric, v in result.last if all(metric.get(k) == want for k, want in labels.items())]
    assert len(found) == 1, (panel, ref, labels, result.last)
    return found[0]


def check_table2(panels) -> None:
    """The capacity dashboard computes the paper's Table 2 from the queue-overrun scenario's data."""
    per_host = "m = d/a: VMs per host on each LUN"
    per_lun = "n/a: VMs on each LUN over all hosts"
    assert value(panels, per_host, "A", device=OVERRUN_LUN) == 32  # d
    assert value(panels, per_host, "B", device=OVERRUN_LUN) == pytest.approx(16, rel=0.1)  # a
    assert value(panels, per_host, "C", device=OVERRUN_LUN) == pytest.approx(2, rel=0.1)  # m = d/a
    assert value(panels, per_host, "D", device=OVERRUN_LUN) == 4  # VMs on the LUN
    assert value(panels, per_host, "E", device=OVERRUN_LUN) == -2  # headroom: floor(m) - VMs
    assert value(panels, per_lun, "C", device=OVERRUN_LUN) == pytest.approx(256 / 16, rel=0.1)  # n/a, n = 256
    queue = "ACTV and QUED against DQLEN and DSNRO"
    assert value(panels, queue, "A", device=OVERRUN_LUN) == pytest.approx(32, rel=0.05)  # ACTV
    assert value(panels, queue, "B", device=OVERRUN_LUN) == pytest.approx(32, rel=0.15)  # QUED


def check_table2_from_the_vsphere_api(panels) -> None:
    """The capacity dashboard on hosts that only the vSphere API reports (no esxtop worlds): a is
    each VM's outstanding reads + writes over its disks on the LUN (simulators/storagesim/fixture.json)."""
    per_host = "m = d/a: VMs per host on each LUN"
    # web01's lsilogic disk on ds-shared-02: readOIO 16 + writeOIO 0, LUN queue depth 32
    lun = {"host": "esx01.vc.lab.local", "device": "naa.600a098038303053453f463045727a62"}
    assert value(panels, per_host, "A", **lun) == 32
    assert value(panels, per_host, "B", **lun) == 16
    assert value(panels, per_host, "C", **lun) == 2
    assert value(panels, per_host, "D", **lun) == 1
    # db01's RDM (scsi0:1, 1 + 2 outstanding) is the only VM disk on naa...7a70, queue depth 64
    rdm = {"host": "esx01.vc.lab.local", "device": "naa.600a098038303053453f463045727a70"}
    assert value(panels, per_host, "B", **rdm) == 3
    assert value(panels, per_host, "C", **rdm) == pytest.approx(64 / 3)


def check_disks(panels) -> None:
    """The Disks board on the disk-reallocating scenario's local disks (its SMART text read by the
    real reader): every disk's row, the NVMe device's wear, the USB device listed as without SMART."""
    hdd = {"device": "t10.ATA_____WDC_WD40EFRX2D68N32N0_________________________WD2DWCC7K1AB2C3D"}
    nvme = {"device": "t10.NVMe____Samsung_SSD_980_PRO_1TB_______________A1B2C3D4E5382500"}
    table = "Disk health"
    assert value(panels, table, "A", **hdd) == 1  # Health Status OK
    assert value(panels, table, "B", **hdd) == 38  # °C from the raw's low byte
    assert value(panels, table, "C", **nvme) == 0.03  # NVMe Percentage Used
    assert value(panels, table, "E", **hdd) == 0  # not reallocating yet: it starts two minutes in
    assert 0 <= value(panels, table, "H", **hdd) <= 15  # read every 10 simulated seconds
    assert value(panels, "Disks not read", "A", device="mpx.vmhba32:C0:T0:L0", status="unsupported") == 1
    assert value(panels, "Disks without SMART", "A") == 1
