"""esxtop over SSH against a real OpenSSH server on 127.0.0.1 with a stand-in esxtop.

Each test runs the exporter as a process (`serve --esxtop-ssh ...`), injects one fault (esxtop
exits, the connection drops mid-row, the host reboots, its host key changes, nothing listens,
the stream stalls) and asserts what the user sees: metrics, log lines, and recovery.
"""

from __future__ import annotations

import os

import pytest

from simulators.esxi_ssh.sshd import Sshd
from tests.support.promtext import eventually, value
from tests.support.servers import free_port

pytestmark = pytest.mark.integration
DEVICE_A = "naa.600000000000000000000000000000a1"
DEVICE_B = "naa.600000000000000000000000000000b2"


def log_text(sshd: Sshd) -> str:
    return (sshd.tmp / "exporter.log").read_text()


def metric(exporter, name, **labels):
    return value(exporter.metrics(), name, **labels)


def restarts(exporter, reason):
    return metric(exporter, "esxi_esxtop_restarts_total", host="127.0.0.1", reason=reason) or 0


def samples_total(exporter):
    return metric(exporter, "esxi_esxtop_samples_total", host="esx-sim") or 0


def test_streams_simulator_output_and_reports_up(sshd, exporter_for):
    sshd.set_control(source="simulator", devices=[DEVICE_A])
    exporter = exporter_for()
    eventually(lambda: metric(exporter, "esxi_esxtop_up", host="127.0.0.1") == 1, what="up == 1")
    text = eventually(lambda: (lambda t: t if "esxi_lun_queue_depth{" in t else None)(exporter.metrics()), what="LUN series")
    assert "esxi_esxtop_parse_errors_total{" not in text
    # the simulated queue-ok host: DQLEN 32 on the DGC LUN, read over SSH from its esxtop output
    assert value(text, "esxi_lun_queue_depth", host="esx01.lab.local", device="naa.600601601e3021001a2b3c4d5e6f0001") == 32
    assert restarts(exporter, "esxtop_exited") == 0
    assert sshd.runs()[0]["argv"] == ["-b", "-a", "-d", "1", "-n", "0"]
    assert "esxi_lun_commands_total{" in text
    exporter.stop()  # SIGTERM: the ssh client ends with the exporter, and so the session on the host
    assert not ssh_clients(sshd.port)
    eventually(lambda: not sshd.sessions(), timeout=10, what="no session left on the host")


def ssh_clients(port: int) -> list[int]:
    """PIDs of ssh client processes connecting to this port."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if args[0].endswith(b"ssh") and str(port).encode() in args:
            found.append(int(entry))
    return found


def test_esxtop_exiting_is_restarted_and_new_header_read_afresh(sshd, exporter_for):
    sshd.set_control(devices=[DEVICE_A], exit_after_rows=2, exit_code=1)
    exporter = exporter_for()
    eventually(lambda: restarts(exporter, "esxtop_exited") >= 1, what="a restart after esxtop exited")
    sshd.set_control(devices=[DEVICE_B])  # the next esxtop run has another column set
    eventually(lambda: metric(exporter, "esxi_lun_queue_depth", device=DEVICE_B) == 32, what="the new header's LUN")
    text = exporter.metrics()
    assert value(text, "esxi_lun_queue_depth", device=DEVICE_A) is None  # gone from the new run: no gauge
    assert value(text, "esxi_lun_commands_total", device=DEVICE_A) > 0  # its counter stays until stale_after
    assert value(text, "esxi_esxtop_up", host="127.0.0.1") == 1
    assert "esxtop ssh 127.0.0.1: esxtop exited with status 1; retrying in" in log_text(sshd)


def test_connection_dropped_mid_row(sshd, exporter_for):
    sshd.set_control(devices=[DEVICE_A], cut_after_rows=2)
    exporter = exporter_for()
    eventually(lambda: samples_total(exporter) >= 2, what="two rows")
    eventually(lambda: len(sshd.runs()) == 1 and sshd.sessions(), what="session running")
    import time

    time.sleep(1.5)  # the half row is out
    sshd.set_control(devices=[DEVICE_A])
    sshd.kill_sessions()
    eventually(lambda: restarts(exporter, "dropped") >= 1, what="restart counted as dropped")
    text = exporter.metrics()
    assert value(text, "esxi_esxtop_parse_errors_total", stream="ssh:127.0.0.1", reason="partial_line") == 1
    before = samples_total(exporter)
    eventually(lambda: samples_total(exporter) > before + 1, what="rows again after reconnecting")
    assert metric(exporter, "esxi_esxtop_up", host="127.0.0.1") == 1
    assert "connection lost" in log_text(sshd)


def test_host_reboot_refused_then_back(sshd, exporter_for):
    sshd.set_control(devices=[DEVICE_A])
    exporter = exporter_for()
    eventually(lambda: samples_total(exporter) >= 3, what="rows")
    sshd.stop()  # the host goes down: connections cut, nothing listens
    eventually(lambda: restarts(exporter, "refused") >= 2, what="refused reconnection attempts")
    text = exporter.metrics()
    assert value(text, "esxi_esxtop_up", host="127.0.0.1") == 0
    assert value(text, "esxi_lun_queue_depth", device=DEVICE_A) is None  # stale gauges dropped while down
    assert value(text, "esxi_lun_commands_total", device=DEVICE_A) > 0
    assert "connection refused" in log_text(sshd)
    sshd.start()  # back up, same key, same port
    eventually(lambda: metric(exporter, "esxi_esxtop_up", host="127.0.0.1") == 1, what="up again after the reboot")
    eventually(lambda: metric(exporter, "esxi_lun_queue_depth", device=DEVICE_A) == 32, what="gauges back")
    eventually(lambda: "esxtop ssh 127.0.0.1: rows flow again" in log_text(sshd), what="the outage's end said")
    log = log_text(sshd)  # the outage is one line (the retries, and the vobd.log follower's, at debug level), its end one more
    assert log.count("connection refused") == 1 and log.count("rows flow again") == 1


def test_changed_host_key_is_refused_with_clear_error(sshd, exporter_for):
    sshd.set_control(devices=[DEVICE_A])
    exporter = exporter_for()
    eventually(lambda: metric(exporter, "esxi_esxtop_up", host="127.0.0.1") == 1, what="up")
    sshd.new_host_key()
    eventually(lambda: restarts(exporter, "host_key") >= 2, what="host key refusals")
    runs = len(sshd.runs())
    before = samples_total(exporter)
    eventually(lambda: restarts(exporter, "host_key") >= 4, what="more refusals")
    assert len(sshd.runs()) == runs  # esxtop never ran on the impostor
    assert samples_total(exporter) == before
    assert metric(exporter, "esxi_esxtop_up", host="127.0.0.1") == 0
    errors = [line for line in log_text(sshd).splitlines() if " ERROR " in line]
    assert errors and "host key CHANGED" in errors[0] and "refusing to connect" in errors[0]
    assert len(errors) == 1  # said once, not on every retry


def test_connection_refused_at_start(sshd, exporter_for):
    exporter = exporter_for(target=f"{sshd.user}@127.0.0.1:{free_port()}")
    eventually(lambda: restarts(exporter, "refused") >= 2, what="refused attempts")
    assert metric(exporter, "esxi_esxtop_up", host="127.0.0.1") == 0
    log = log_text(sshd)
    assert "connection refused: ssh: connect to host 127.0.0.1 port" in log
    assert log.count("connection refused") == 1 and log.count(": started esxtop") == 1  # an outage is one line, not one per retry
    assert exporter.proc.poll() is None


def test_stalled_stream_is_marked_stale_and_reconnected(sshd, exporter_for):
    sshd.set_control(devices=[DEVICE_A], stall_after_rows=2)
    exporter = exporter_for("--esxtop.ssh-stall-after=2s")
    eventually(lambda: metric(exporter, "esxi_lun_queue_depth", device=DEVICE_A) == 32, what="rows")
    eventually(lambda: restarts(exporter, "stalled") >= 1, what="a stall detected")
    sshd.set_control(devices=[DEVICE_A], stall_after_rows=0)  # the next sessions send the header only
    seen = restarts(exporter, "stalled")
    eventually(lambda: restarts(exporter, "stalled") >= seen + 2, timeout=30, what="header-only sessions stalling")
    text = exporter.metrics()
    assert value(text, "esxi_esxtop_up", host="127.0.0.1") == 0
    assert value(text, "esxi_lun_queue_depth", device=DEVICE_A) is None  # stale: last values withdrawn
    assert "no esxtop row for 2s: stream stalled, restarting it" in log_text(sshd)
    sshd.set_control(devices=[DEVICE_A])
    eventually(lambda: metric(exporter, "esxi_esxtop_up", host="127.0.0.1") == 1, timeout=30, what="up after the stall")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_stall_restarts_leave_no_remote_esxtop_running(sshd, exporter_for):
    """A stalled session is killed on our side; without a hangup the remote esxtop would sleep on
    (it only notices a closed connection when it next writes). Count the stand-in esxtop processes
    the sshd started that still run after several stall restarts, then after the exporter stops."""
    import time

    sshd.set_control(devices=[DEVICE_A], stall_after_rows=0)  # the header, then silence
    exporter = exporter_for("--esxtop.ssh-stall-after=2s")
    eventually(lambda: restarts(exporter, "stalled") >= 4, timeout=60, what="four stall restarts")

    def orphans():
        pids = [run["pid"] for run in sshd.runs()]
        alive = [pid for pid in pids if _alive(pid)]
        return len(alive) <= 1 or None  # at most the session running now

    time.sleep(1.0)
    assert len(sshd.runs()) >= 4
    eventually(orphans, timeout=5, what=f"no orphaned esxtop (alive: {[r['pid'] for r in sshd.runs() if _alive(r['pid'])]})")
    exporter.stop()
    eventually(lambda: not any(_alive(r["pid"]) for r in sshd.runs()) or None, timeout=10, what="none left after stop")


def test_an_over_long_line_is_counted_once_and_the_session_goes_on(sshd):
    """The stream in-process with a 64 KiB cap (the exporter's is 64 MiB): a 1 MiB line from the
    remote esxtop is one line_too_long, not also a partial_line, and not a restart of any kind."""
    import threading

    from exporter.esxtop.ssh import SshStream
    from exporter.ssh.target import SshTarget
    from exporter.store.store import Store

    sshd.set_control(devices=[DEVICE_A], long_line_after_rows=2, long_line_bytes=1 << 20)
    target = SshTarget(
        host="127.0.0.1",
        user=sshd.user,
        port=sshd.port,
        interval=0.2,
        identity_file=str(sshd.tmp / "client_key"),
        known_hosts=str(sshd.known_hosts),
    )
    store, stop = Store(), threading.Event()
    stream = SshStream(target, store, stop, max_line=64 << 10)
    thread = threading.Thread(target=stream.run, daemon=True)
    thread.start()
    try:
        eventually(lambda: stream._delivered >= 6, timeout=30, what="rows after the long line")
    finally:
        stop.set()
        thread.join(10)
    assert store.parse_errors == {("ssh:127.0.0.1", "line_too_long"): 1}
    assert sum(stream.restarts.values()) == 0, stream.restarts
    assert len(sshd.runs()) == 1
