"""The vSphere source against stock vcsim (v0.46.0) in vCenter and standalone-ESXi modes:
connect, counter resolution by name, batching, faults.

vcsim's perf instances are fake (a disk is "datastore-50") and a "*" query is echoed back as
instance "*", so exact values are tested against simulators/storagesim's storage simulator instead
(test_vsphere_storagesim.py); here the samples must arrive, and the wildcard echoes must be
counted rather than exported.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from exporter.vsphere import TargetConfig, VsphereTarget, perf
from exporter.vsphere.discovery import perf_counters, retrieve_hosts
from simulators.storagesim.sims import PASSWORD, USER, Vcsim
from tests.support.servers import ROOT, exporter_env, free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", params=["vcenter", "esx"])
def vcsim(request, tmp_path_factory):
    sim = Vcsim(tmp_path_factory.mktemp(request.param), free_port(), esx=request.param == "esx")
    sim.mode = request.param
    yield sim
    sim.stop()


@pytest.fixture()
def password_file(tmp_path):
    path = tmp_path / "password"
    path.write_text(PASSWORD + "\n")
    return path


def _target(sim, password_file, **kw) -> VsphereTarget:
    kw.setdefault("insecure", True)  # vcsim's certificate is self-signed and not written anywhere
    return VsphereTarget(TargetConfig(name=sim.mode, url=sim.url, user=USER, password_file=str(password_file), timeout=5.0, **kw))


def test_connect_discover_and_collect(vcsim, password_file):
    target = _target(vcsim, password_file)
    assert target.run_once(), target.error
    counts = target.topology.counts()
    assert counts["host"] == (1 if vcsim.mode == "esx" else 4)  # vcsim's default inventories
    assert counts["lun"] >= counts["host"] and counts["adapter"] >= counts["host"]
    assert target.up == 1
    # One real-time sample per host, ingested as a vSphere sample.
    assert set(target.samples) == {h.name for h in target.topology.hosts}
    assert all(h.source == "vsphere" for h in target.store.hosts.values())
    assert target.dropped.get("wildcard_instance", 0) > 0  # vcsim's "*" echoes: counted, not exported
    assert not any(h.objects["luns"] for h in target.store.hosts.values())
    target.client.close()


def test_counters_are_resolved_by_name_on_each_server(vcsim, password_file):
    target = _target(vcsim, password_file)
    counters = target.client.call(lambda content: content.perfManager.perfCounter)  # pyVmomi's own reading
    server_keys = {f"{c.groupInfo.key}.{c.nameInfo.key}.{c.rollupType}": c.key for c in counters}
    resolved = perf.resolve(target.client.call(perf_counters))
    assert {name: server_keys[name] for _, (name, _) in resolved.by_key.items()} == {
        n: k for k, (n, _) in resolved.by_key.items()
    }
    expected_key = {"vcenter": 455, "esx": 131091}[vcsim.mode]  # the same counter, different keys
    assert server_keys["disk.deviceLatency.average"] == expected_key
    assert resolved.by_key[expected_key][0] == "disk.deviceLatency.average"
    if vcsim.mode == "esx":  # counters a server lacks are reported, not guessed
        assert "disk.scsiReservationConflicts.summation" in resolved.missing
    target.client.close()


def test_batching_splits_hosts_over_calls_without_losing_any(vcsim, password_file):
    target = _target(vcsim, password_file, max_query_metrics=10)
    assert target.discover()
    specs = perf.query_specs(target.topology.hosts, sorted(target.resolved.by_key), {}, now=0)
    calls = perf.chunk(specs, 10)
    assert len(calls) > len(target.topology.hosts)  # each host needs several calls
    assert target.collect(), target.error
    assert set(target.samples) == {h.name for h in target.topology.hosts}
    assert target.errors["collection"] == 0
    target.client.close()


def test_a_stale_session_is_re_established_once(vcsim, password_file, caplog):
    caplog.set_level("INFO")
    target = _target(vcsim, password_file)
    assert target.discover()
    content = target.client.content()
    content.sessionManager.Logout()  # the session dies behind the client's back
    assert target.collect(), target.error
    assert target.up == 1 and target.errors == {"discovery": 0, "collection": 0}
    assert "session expired, logging in again" in caplog.text
    target.client.close()


def test_wrong_password_gives_up_0_and_a_clear_line(vcsim, tmp_path, caplog):
    bad = tmp_path / "bad"
    bad.write_text("hunter2-not-the-password\n")
    target = _target(vcsim, bad)
    assert not target.run_once()
    assert target.up == 0 and target.errors["discovery"] == 1
    assert target.error.endswith("login refused: wrong user or password")
    assert "hunter2" not in caplog.text


def test_tls_is_verified_by_default(vcsim, password_file):
    target = _target(vcsim, password_file, insecure=False)
    assert not target.discover()
    assert "TLS certificate not trusted" in target.error


def test_unreachable_target_fails_fast(password_file, tmp_path):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    target = VsphereTarget(
        TargetConfig(name="gone", url=f"https://127.0.0.1:{port}/sdk", user=USER, password_file=str(password_file), timeout=2.0)
    )
    assert not target.run_once()
    assert target.up == 0 and target.error.endswith("connection refused")


def test_dump_with_a_wrong_password_exits_1_without_leaking_it(vcsim, tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("hunter2-not-the-password\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "dump",
            "--vsphere",
            vcsim.url,
            "--vsphere.user",
            USER,
            "--vsphere.password-file",
            str(bad),
            "--vsphere.insecure",
        ],
        capture_output=True,
        text=True,
        env=exporter_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "login refused: wrong user or password" in proc.stderr
    assert "TLS certificate verification is OFF" in proc.stderr  # turning it off is logged
    assert "Traceback" not in proc.stderr and "hunter2" not in proc.stderr + proc.stdout
    assert 'esxi_vsphere_up{target="127.0.0.1"} 0.0' in proc.stdout


def test_retrieve_hosts_pages_through_the_inventory(vcsim, password_file):
    """A host whose storage changed is read again whole: every host the walk found, in one call."""
    target = _target(vcsim, password_file)
    assert target.discover(), target.error
    hosts = sorted(topo.ref._moId for topo in target.topology.hosts)
    rows = target.client.call(lambda content: retrieve_hosts(content, hosts))
    assert len(rows) == (1 if vcsim.mode == "esx" else 4)
    assert all(props["config.storageDevice.scsiLun"] is not None for _, props in rows)
    target.client.close()


def test_a_disconnected_host_leaves_the_inventory(vcsim, password_file):
    if vcsim.mode == "esx":
        pytest.skip("a standalone host cannot disconnect itself")
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    target = _target(vcsim, password_file)
    assert target.run_once(), target.error
    first = target.topology.hosts[0]
    host = vim.HostSystem(first.ref._moId, target.client.content().propertyCollector._stub)
    WaitForTask(host.DisconnectHost_Task())
    try:
        assert target.discover()
        assert first.name not in {h.name for h in target.topology.hosts}
        assert first.name not in target.store.inventories
        assert len(target.store.inventories) == 3
    finally:
        WaitForTask(host.ReconnectHost_Task())
        target.client.close()


def test_vcsims_newest_first_samples_are_ingested_oldest_first_and_once(vcsim, password_file):
    target = _target(vcsim, password_file)
    assert target.run_once(), target.error
    host = target.topology.hosts[0].name
    newest = target.last_timestamp[host]
    for name in target.last_timestamp:  # pretend the last 45 s were missed: vcsim answers 3 samples, newest first
        target.last_timestamp[name] -= 45
    assert target.collect(), target.error
    assert target.samples[host] == 1 + 3
    stamps = target.last_timestamp[host]
    assert stamps >= newest  # vcsim stamps samples with its own clock, to the second
    assert target.store.hosts[host].last_timestamp == stamps  # ingested in time order: the newest last
    before = target.samples[host]
    target.last_timestamp[host] = stamps
    assert target.collect()
    assert target.samples[host] - before <= 1  # only what is newer than the newest already read
    target.client.close()


def test_a_refused_login_backs_off_exponentially_and_is_counted(tmp_path, caplog):
    """Against vcsim with its SOAP trace on: the login attempts the server actually receives while
    the password is wrong follow the backoff (not one per interval), each is counted in
    esxi_vsphere_errors_total{phase="login"}, the warning is logged once per new wait, and a
    corrected password file is tried at once."""
    import threading
    import time

    trace = tmp_path / "trace.xml"
    sim = Vcsim(tmp_path / "sim", free_port(), False, "-trace", "-trace-file", str(trace))
    try:
        bad = tmp_path / "password"
        bad.write_text("hunter2-not-the-password\n")
        bad.chmod(0o600)
        target = VsphereTarget(
            TargetConfig(name="locked", url=sim.url, user=USER, password_file=str(bad), timeout=5.0, insecure=True, interval=0.1)
        )
        target.client.backoff_first, target.client.backoff_max = 0.4, 1.6  # 30 s and 30 min in production
        stop = threading.Event()
        caplog.set_level("INFO")
        target.start(stop)
        time.sleep(4.5)  # without backoff: one login every 0.1 s (about 40)
        logins = trace.read_text(errors="replace").count("<Login ")
        # 0, 0.4, 1.2, 2.8, 4.4 s: five attempts at most in 4.5 s, allowing for each login's own time
        assert 3 <= logins <= 5, logins
        assert target.client.login_refusals == logins
        record = target.store.health[("vsphere", "locked")]
        assert record.errors["login"] == logins and record.up == 0
        waits = [r.getMessage() for r in caplog.records if "next login attempt in" in r.getMessage()]
        assert len(waits) == len({w.split("next login attempt in ")[1] for w in waits}) <= 3, waits  # 0.4, 0.8, 1.6
        assert "hunter2" not in caplog.text
        # The next refusal waits 120 s, so a login within 30 s of the fix can only be the fix's:
        # the margin holds on a loaded machine, where the login and the walk after it take seconds.
        target.client.backoff_first = target.client.backoff_max = 120.0
        refused = target.client.login_refusals
        deadline = time.monotonic() + 10.0
        while target.client.login_refusals == refused and time.monotonic() < deadline:
            time.sleep(0.05)
        assert target.client.login_refusals == refused + 1
        bad.write_text(PASSWORD + "\n")  # fixed: retried now, not after the 120 s wait
        deadline = time.monotonic() + 30.0
        while target.up != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert target.up == 1, target.error
        stop.set()
    finally:
        sim.stop()


def test_a_password_file_readable_by_everyone_is_warned_about(tmp_path, caplog):
    path = tmp_path / "password"
    path.write_text("x\n")
    path.chmod(0o644)
    config = TargetConfig(name="t", url="https://127.0.0.1:1/sdk", user=USER, password_file=str(path))
    from exporter.vsphere.client import Client

    Client(config)
    assert "readable by every user" in caplog.text
    caplog.clear()
    path.chmod(0o600)
    Client(config)
    assert "readable by every user" not in caplog.text
