"""The soak's SSH host (--ssh, issue 45 item 4): a real sshd on loopback (simulators/esxi_ssh/sshd.py)
whose sessions run the stand-in esxtop and esxcli (the SMART host of tests/fixtures/smart/), and
a dropper that, at random from the seed, ends its SSH session: every process of the open sessions
killed at once (a dropped connection), or sshd stopped for a few seconds and started again on the
same port with the same host key (a host rebooting). Each drop is a span of its own Timeline
(bench/soak_driver.py), which bench/soak_checks.py's SshHost judges esxi_esxtop_up and the host's
series by.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

from bench.soak_checks import SMART_INTERVAL, SshHost, ssh_return
from bench.soak_driver import Timeline
from simulators.esxi_ssh.esxcli import HDD, NVME, SMART_DEVICES, SSD
from simulators.esxi_ssh.sshd import Sshd

HOST = "esx-sim"  # the host name the stand-in esxtop's header gives
DEVICES = (HDD, SSD, NVME)  # its LUNs (esxtop) and the SMART host's local disks (esxcli)
STOPPED = (3.0, 10.0)  # seconds sshd stays stopped
BETWEEN = (40.0, 90.0)  # seconds between two drops
FIRST = 45.0  # the first drop: after the first SMART round and a few esxtop rows


class SshSide:
    """The sshd, the exporter's arguments to follow it, the checks' view of it and the dropper."""

    def __init__(self, tmp: Path, seed: int, duration: float, smart_interval: float = SMART_INTERVAL):
        tmp.mkdir(parents=True, exist_ok=True)
        self.sshd = Sshd(tmp)
        self.sshd.set_control(devices=list(DEVICES), smart="healthy")
        self.rng = random.Random(f"ssh{seed}")  # a stream of its own: the vSphere driver's choices stay as they were
        self.duration, self.smart_interval = duration, smart_interval
        self.timeline = Timeline(time.monotonic())  # its start set again by start()
        self.host = SshHost("127.0.0.1", HOST, DEVICES, SMART_DEVICES, self.timeline, bound=ssh_return(smart_interval))
        self.done: dict[str, int] = {}
        self.errors: list[str] = []
        self.plan = self._plan()
        self.thread: threading.Thread | None = None

    def args(self) -> tuple[str, ...]:
        """serve's arguments for this host: every esxtop-over-SSH setting its default but the key,
        the known_hosts file and SMART's interval."""
        return (
            "--esxtop-ssh",
            self.sshd.target,
            f"--esxtop.ssh-identity-file={self.sshd.tmp / 'client_key'}",
            f"--esxtop.ssh-known-hosts={self.sshd.known_hosts}",
            f"--smart.interval={int(self.smart_interval)}s",
        )

    def _plan(self) -> list[tuple[float, str]]:
        """(seconds from the start, kill | stop): both kinds, the last drop early enough for the
        return to be judged (SSH_RETURN and a scrape) before the end."""
        plan, at = [], FIRST
        last = self.duration - self.host.bound - 15.0 - STOPPED[1]
        kinds = ["kill", "stop"]
        self.rng.shuffle(kinds)
        while at <= last:
            plan.append((at, kinds.pop(0) if kinds else self.rng.choice(["kill", "stop"])))
            at += self.rng.uniform(*BETWEEN)
        return plan

    def start(self, stop: threading.Event) -> None:
        self.started = time.monotonic()
        self.timeline.spans[0] = [self.started, self.started]  # the exporter's first connection is a return
        self.thread = threading.Thread(target=self._loop, args=(stop,), name="soak-ssh", daemon=True)
        self.thread.start()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join(60)

    def close(self) -> None:
        if self.sshd.proc is not None:
            self.sshd.stop()

    def _loop(self, stop: threading.Event) -> None:
        for at, kind in self.plan:
            if stop.wait(max(0.0, self.started + at - time.monotonic())):
                return
            try:
                self.kill() if kind == "kill" else self.restart(stop)
            except Exception as err:  # noqa: BLE001 - a failure of the dropper itself fails the run
                self.errors.append(f"{time.monotonic() - self.started:.0f}s ssh dropper: {type(err).__name__}: {err}"[:300])

    def kill(self) -> None:
        """The connection drops: every process of the open sessions killed at once."""
        span = self.timeline.begin("ssh_kill", time.monotonic())
        self.sshd.kill_sessions()
        self.timeline.end(span, time.monotonic())
        self.done["ssh_kill"] = self.done.get("ssh_kill", 0) + 1

    def restart(self, stop: threading.Event, down: float | None = None) -> None:
        """sshd down for a few seconds (a host rebooting), then up on the same port and host key."""
        span = self.timeline.begin("ssh_stop", time.monotonic())
        self.sshd.stop()
        stop.wait(self.rng.uniform(*STOPPED) if down is None else down)
        self.sshd.start()
        self.timeline.end(span, time.monotonic())
        self.done["ssh_stop"] = self.done.get("ssh_stop", 0) + 1
