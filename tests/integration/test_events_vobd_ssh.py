"""A host's storage events over SSH: `tail -F /var/log/vobd.log` through a real sshd on loopback
(simulators/esxi_ssh/sshd.py), the log a file the test writes as vobd does: lines appended to a growing
file, the file rotated, the connection dropped while lines are written. Each event counted once,
under its esx id, its vob twin not counted again. One sshd and exporter for the module."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from simulators.esxi_ssh.sshd import Sshd
from tests.support.esxcli_devices import GOLD, SAN
from tests.support.promtext import eventually, value
from tests.support.ssh_exporter import start_exporter

pytestmark = pytest.mark.integration
HOST = "esx-sim"  # the fake esxtop's host name, which the follower counts under
PROBE = "esx.problem.scsi.device.limitreached"


def line(event_id: str, text: str, header: bool = False) -> str:
    """A vobd.log line stamped now: ESXi 7.0's form, or 8.x's with its syslog header."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    uptime = int(time.monotonic() * 1e6)
    if header:
        return f"{stamp} In(14) vobd[2098835]:  [scsiCorrelator] {uptime}us: [{event_id}] {text}\n"
    return f"{stamp}: [scsiCorrelator] {uptime}us: [{event_id}] {text}\n"


def apd(kind: str, device: str) -> list[str]:
    """An APD observation as vobd writes it: its vob line, then its esx twin."""
    esx = {"start": "esx.problem.storage.apd.start", "exit": "esx.clear.storage.apd.exit"}[kind]
    text = f"Device or filesystem with identifier [{device}] has {'entered' if kind == 'start' else 'exited'} the All Paths Down state."
    return [line(f"vob.storage.apd.{kind}", text), line(esx, text, header=True)]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vobd")
    sshd = Sshd(tmp)
    log = tmp / "vobd.log"
    log.write_text(line(PROBE, f"old line before the exporter started: {SAN}"))
    exporter = start_exporter(sshd, f"--esxtop.ssh-vobd-path={log}")
    try:
        yield sshd, exporter, log
    finally:
        exporter.stop()
        sshd.stop()


def append(log, lines) -> None:
    with open(log, "a") as f:
        f.writelines(lines)


def count(exporter, event: str, device: str = SAN) -> float:
    return value(exporter.metrics(), "esxi_storage_events_total", host=HOST, event=event, device=device) or 0


def following(exporter, log) -> None:
    """tail -n 0 -F counts only what is written after it opened the file: probe lines until one counts."""

    def counted():
        append(log, [line(PROBE, f"Device {SAN} has reached the limit")])
        return count(exporter, PROBE) >= 1

    eventually(counted, 60, interval=0.5, what="the probe line counted")


def test_a_growing_file_is_counted_once_per_event_from_the_exporter_s_start(stack):
    sshd, exporter, log = stack
    following(exporter, log)
    append(
        log,
        apd("start", SAN)
        + [
            line(
                "esx.problem.scsi.device.io.latency.high",
                f"Device {GOLD} performance has deteriorated. I/O latency increased from average value of 1343 microseconds to 28022 microseconds.",
            )
        ],
    )
    eventually(lambda: count(exporter, "esx.problem.scsi.device.io.latency.high", GOLD) == 1, 20, what="the latency event")
    time.sleep(3)  # the vob line's pairing window passed: not counted again
    text = exporter.metrics()
    assert value(text, "esxi_storage_events_total", host=HOST, event="esx.problem.storage.apd.start", device=SAN) == 1
    assert "vob.storage" not in text
    assert "old line before" not in text and value(text, "esxi_storage_events_up", source="vobd") == 1


def test_a_rotated_file_is_followed_by_name(stack):
    _, exporter, log = stack
    following(exporter, log)  # alone, this test must not rotate the file before tail has opened it
    log.rename(log.with_name("vobd.0.log"))  # vobd rotates by renaming and opening a new file
    log.write_text("")
    time.sleep(2)  # tail -F notices the new file within a second
    append(log, apd("exit", SAN))
    eventually(lambda: count(exporter, "esx.clear.storage.apd.exit") == 1, 30, what="the line of the new file")
    time.sleep(3)
    assert count(exporter, "esx.clear.storage.apd.exit") == 1


def test_a_dropped_connection_loses_nothing_written_meanwhile_and_counts_nothing_twice(stack):
    sshd, exporter, log = stack
    before = value(exporter.metrics(), "esxi_storage_events_errors_total", source="vobd", fault="session") or 0
    sshd.kill_sessions()  # every connection cut at once, the exporter's esxtop and tail
    append(log, apd("start", GOLD))  # written while the connection is down
    eventually(
        lambda: count(exporter, "esx.problem.storage.apd.start", GOLD) == 1, 60, what="the line written while disconnected"
    )
    time.sleep(3)
    text = exporter.metrics()
    assert value(text, "esxi_storage_events_total", host=HOST, event="esx.problem.storage.apd.start", device=GOLD) == 1
    # what was counted before the drop is in the last lines tail sends again: not counted twice
    assert value(text, "esxi_storage_events_total", host=HOST, event="esx.clear.storage.apd.exit", device=SAN) == 1
    assert value(text, "esxi_storage_events_total", host=HOST, event="esx.problem.storage.apd.start", device=SAN) == 1
    assert value(text, "esxi_storage_events_errors_total", source="vobd", fault="session") >= before + 1
    assert "Traceback" not in (sshd.tmp / "exporter.log").read_text()
