"""Disk health with no SSH: the same esxcli commands through each host's managed method executer on
the vSphere storage simulator (simulators/storagesim/smart.go answers them as a real host does), through
vCenter: exact values per host on /metrics and on the target's /probe, the USB device a state,
the healthy host raising nothing that the failing one does (tests/support/smart_sim.py); and
`dump --vsphere`, which reads them once as serve's first round does."""

from __future__ import annotations

import json
import math
import subprocess
import urllib.request

import pytest

from simulators.esxi_ssh.esxcli import HDD, NVME, SSD, USB
from simulators.storagesim.sims import FIXTURE, PASSWORD, USER, StorageSim
from tests.support import smart_sim
from tests.support.promtext import eventually, samples, value
from tests.support.servers import ROOT, Exporter, exporter_env
from tests.support.vsphere_api import dump as vsphere_dump

pytestmark = pytest.mark.integration
HEALTHY, FAILING = "esx01.lab.local", "esx02.lab.local"
SAN = "naa.600a098038303053453f463045727a61"


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("smart-vsphere")
    fixture, answers = smart_sim.write(json.loads(FIXTURE.read_text()), tmp / "sim")
    sim = StorageSim(tmp / "vcsim", "-smart", str(answers), fixture=fixture)
    yield sim
    sim.stop()


@pytest.fixture(scope="module")
def password(tmp_path_factory):
    path = tmp_path_factory.mktemp("secret") / "password"
    path.write_text(PASSWORD + "\n")
    path.chmod(0o600)
    return path


def test_disk_health_through_the_vsphere_api(tmp_path, sim, password):
    config = tmp_path / "exporter.yml"
    config.write_text(f"""
vsphere:
  user: {USER}
  password_file: {password}
  interval: 1s
  targets:
    vc: {{url: "{sim.url}", ca_file: "{sim.cert}"}}
smart:
  interval: 2s
""")
    exporter = Exporter("--config.file", str(config), log_path=tmp_path / "exporter.log")
    try:
        text = eventually(
            lambda: (lambda t: t if t.count("esxi_disk_nvme_percentage_used_ratio{") == 2 else None)(exporter.metrics()),
            timeout=60,
            what="both hosts' disk health",
        )
        hdd = dict(host=HEALTHY, device=HDD)
        assert value(text, "esxi_disk_smart_value", **hdd, parameter="read_error_count", page="ata") == 81
        assert value(text, "esxi_disk_smart_raw", **hdd, parameter="power_on_hours", page="ata") == 8811
        assert value(text, "esxi_disk_temperature_celsius", **hdd, source="ata_raw") == 33
        nvme = dict(host=HEALTHY, device=NVME, adapter="vmhba1")
        assert value(text, "esxi_disk_nvme_percentage_used_ratio", **nvme) == 0.03
        assert value(text, "esxi_disk_nvme_read_bytes_total", **nvme) == 0x1A2B3C * 512_000
        assert value(text, "esxi_disk_smart_value", host=HEALTHY, device=NVME, parameter="drive_temperature", page="nvme") == 41
        assert value(text, "esxi_disk_smart_status", host=HEALTHY, device=USB, status="unsupported") == 1
        assert value(text, "esxi_disk_smart_up", host=HEALTHY) == 1
        assert f'device="{SAN}"' not in "".join(line for line in text.splitlines() if line.startswith("esxi_disk_"))
        # the failing host, through the same API
        assert value(text, "esxi_disk_smart_health_status", host=FAILING, device=SSD, status="IMPENDING FAILURE") == 1
        assert (
            value(text, "esxi_disk_smart_value", host=FAILING, device=HDD, parameter="reallocated_sector_count", page="ata") == 9
        )
        failing = dict(host=FAILING, device=NVME, adapter="vmhba1")
        assert value(text, "esxi_disk_nvme_critical_warning", **failing, warning="available_spare") == 1
        assert value(text, "esxi_disk_temperature_celsius", host=FAILING, device=NVME, source="nvme_log") == 84
        assert "esxi_disk_smart_errors_total{" not in text
        # the disks show on the probe of the target whose hosts they are, as the LUNs do
        probe = get(exporter.url + "/probe?target=vc")
        assert value(probe, "esxi_disk_smart_value", **hdd, parameter="read_error_count", page="ata") == 81
        assert value(probe, "esxi_lun_local", **hdd) == 1  # the same device label as the LUN families
    finally:
        exporter.stop()
    assert "Traceback" not in (tmp_path / "exporter.log").read_text()


def test_dump_reads_the_local_disks_too(sim, password):
    """One-shot is everything: `dump --vsphere` runs one SMART round through the method executer
    after its walk and collection, the values as serve shows them."""
    proc = vsphere_dump(sim, password)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    hdd = dict(host=HEALTHY, device=HDD)
    assert value(text, "esxi_disk_smart_value", **hdd, parameter="read_error_count", page="ata") == 81
    assert value(text, "esxi_disk_nvme_percentage_used_ratio", host=HEALTHY, device=NVME, adapter="vmhba1") == 0.03
    assert value(text, "esxi_disk_smart_health_status", host=FAILING, device=SSD, status="IMPENDING FAILURE") == 1
    assert value(text, "esxi_disk_temperature_celsius", host=FAILING, device=NVME, source="nvme_log") == 84
    assert value(text, "esxi_disk_smart_status", host=HEALTHY, device=USB, status="unsupported") == 1
    assert value(text, "esxi_disk_smart_up", host=FAILING) == 1
    assert value(text, "esxi_lun_queue_depth", host=HEALTHY, device=SAN) is not None  # beside the rest of the target
    assert "Traceback" not in proc.stderr
    # --no-smart.read leaves them out, as it does in serve
    quiet = subprocess.run(
        proc.args + ["--no-smart.read"], capture_output=True, text=True, env=exporter_env(), cwd=ROOT, timeout=120
    )
    assert quiet.returncode == 0, quiet.stderr
    assert "esxi_disk_" not in quiet.stdout and "esxi_lun_queue_depth{" in quiet.stdout


def test_hostile_answers_through_the_api_are_refused_and_counted(tmp_path):
    """The method executer answering a SMART page of 20,000 rows (several MiB of SOAP) and a
    400-digit raw: the page is refused unread past exporter.smart.plan.MAX_ANSWER (too_large),
    the raw alone (out_of_range); every other disk and value is read."""
    import threading

    from exporter.serving.exposition import Exposition
    from exporter.smart.vsphere import SmartOverVsphere
    from exporter.vsphere import TargetConfig, VsphereTarget

    fixture, answers = smart_sim.write(json.loads(FIXTURE.read_text()), tmp_path / "sim")
    hostile = json.loads(answers.read_text())
    rows = [
        {"Parameter": f"Vendor Attribute {i}", "Value": "100", "Threshold": "0", "Worst": "100", "Raw": str(i)}
        for i in range(20_000)
    ]
    hostile[HEALTHY]["pages"][SSD] += rows
    power_on = next(r for r in hostile[FAILING]["pages"][HDD] if r["Parameter"] == "Power-on Hours")
    power_on["Raw"] = "9" * 400
    answers.write_text(json.dumps(hostile))
    sim = StorageSim(tmp_path / "vcsim", "-smart", str(answers), fixture=fixture)
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    vc = VsphereTarget(TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(password), ca_file=str(sim.cert)))
    try:
        assert vc.run_once(), vc.error
        smart = SmartOverVsphere(vc, vc.store, threading.Event(), interval=3600.0)
        smart.round()
        text = Exposition(vc.store, ["smart"]).body().decode()
    finally:
        vc.client.close()
        sim.stop()
    get = "storage core device smart get"
    assert value(text, "esxi_disk_smart_status", host=HEALTHY, device=SSD, status="unreadable") == 1
    assert value(text, "esxi_disk_smart_errors_total", host=HEALTHY, command=get, reason="too_large") == 1
    assert "vendor_attribute" not in text
    assert value(text, "esxi_disk_smart_value", host=HEALTHY, device=HDD, parameter="read_error_count", page="ata") == 81
    failing = dict(host=FAILING, device=HDD, parameter="power_on_hours", page="ata")
    assert value(text, "esxi_disk_smart_raw", **failing) is None and value(text, "esxi_disk_smart_value", **failing) is not None
    assert value(text, "esxi_disk_smart_errors_total", host=FAILING, command=get, reason="out_of_range") == 1
    assert all(math.isfinite(v) for _, _, v in samples(text))


def test_an_expired_session_is_logged_in_again_once_by_smart_and_esxcli_rounds(tmp_path, caplog):
    """vCenter ends the exporter's session between rounds: the next SMART and esxcli rounds log in
    again once and read every host, rather than asking again on the session that ended (each
    host's round failed, and each re-login dropped the one just made)."""
    import logging
    import threading

    from exporter.serving.exposition import Exposition
    from exporter.smart.vsphere import SmartOverVsphere
    from exporter.vsphere import TargetConfig, VsphereTarget
    from tests.support.vsphere_api import end_other_sessions, session

    fixture, answers = smart_sim.write(json.loads(FIXTURE.read_text()), tmp_path / "sim")
    sim = StorageSim(tmp_path / "vcsim", "-smart", str(answers), fixture=fixture)
    password = tmp_path / "password"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(password), ca_file=str(sim.cert), esxcli=True)
    vc = VsphereTarget(config)
    try:
        assert vc.run_once(), vc.error
        smart = SmartOverVsphere(vc, vc.store, threading.Event(), interval=3600.0)
        smart.round()
        before = Exposition(vc.store, ["smart", "vsphere"]).body().decode()
        caplog.set_level(logging.INFO, logger="exporter.vsphere.client")
        for turn in ("smart", "esxcli"):  # each on a session ended just before
            with session(sim) as admin:
                assert end_other_sessions(admin), "the exporter holds no session: the last round did not log in again"
            if turn == "smart":
                smart.round()
            else:
                vc._read_esxcli(vc.topology.hosts)
        after = Exposition(vc.store, ["smart", "vsphere"]).body().decode()
    finally:
        vc.client.close()
        sim.stop()
    relogins = [r for r in caplog.records if "session expired" in r.getMessage()]
    assert len(relogins) == 2, [r.getMessage() for r in relogins]  # once per ended session
    for host in (HEALTHY, FAILING):
        assert value(after, "esxi_disk_smart_up", host=host) == 1
        failed = [
            (n, labels) for n, labels, _ in samples(after) if n == "esxi_disk_smart_errors_total" and labels.get("host") == host
        ]
        assert value(after, "esxi_disk_smart_errors_total", host=host, reason="failed") is None, failed
    errors = {(n, tuple(sorted(labels.items()))): v for n, labels, v in samples(after) if n == "esxi_esxcli_errors_total"}
    assert errors == {
        (n, tuple(sorted(labels.items()))): v for n, labels, v in samples(before) if n == "esxi_esxcli_errors_total"
    }


def test_a_host_whose_smart_round_failed_is_read_again_soon_not_at_the_next_hour(sim, password, monkeypatch):
    """A host whose round could not start (its executer refused: a busy hostd) was left
    esxi_disk_smart_up 0 until the next round, an hour later by default. Now it alone is read again
    after exporter.esxcli.retry.FIRST_RETRY (0.5 s here), twice as long while it fails."""
    import threading
    import time

    from exporter.esxcli import retry
    from exporter.esxcli.inventory import EsxcliError
    from exporter.serving.exposition import Exposition
    from exporter.smart import vsphere as smart_vsphere
    from exporter.vsphere import TargetConfig, VsphereTarget

    monkeypatch.setattr(retry, "FIRST_RETRY", 0.5)
    real_executer, asked = smart_vsphere.esxcli.executer, {}  # host moid -> when each round began
    config = TargetConfig(name="vc", url=sim.url, user=USER, password_file=str(password), ca_file=str(sim.cert), esxcli=True)
    vc = VsphereTarget(config)
    assert vc.run_once(), vc.error
    refused = next(t.ref._moId for t in vc.topology.hosts if t.name == HEALTHY)

    def executer(stub, host_moid):
        asked.setdefault(host_moid, []).append(time.monotonic())
        if host_moid == refused and len(asked[host_moid]) <= 2:
            raise EsxcliError("hostd is busy")
        return real_executer(stub, host_moid)

    monkeypatch.setattr(smart_vsphere.esxcli, "executer", executer)
    stop = threading.Event()
    smart = smart_vsphere.SmartOverVsphere(vc, vc.store, stop, interval=3600.0)
    running = threading.Thread(target=smart.run, daemon=True)
    try:
        running.start()
        up = lambda: value(Exposition(vc.store, ["smart"]).body().decode(), "esxi_disk_smart_up", host=HEALTHY)  # noqa: E731
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and up() != 1:
            time.sleep(0.1)
        body = Exposition(vc.store, ["smart"]).body().decode()
    finally:
        stop.set()
        running.join(30)
        vc.client.close()
    assert value(body, "esxi_disk_smart_up", host=HEALTHY) == 1
    assert (
        value(body, "esxi_disk_smart_errors_total", host=HEALTHY, command="RetrieveManagedMethodExecuter", reason="failed") == 2
    )
    gaps = [b - a for a, b in zip(asked[refused], asked[refused][1:])]
    assert len(gaps) == 2 and 0.4 <= gaps[0] <= 3.0 and 0.9 <= gaps[1] <= 4.0, gaps
    assert all(len(times) == 1 for moid, times in asked.items() if moid != refused), asked  # the others: once
