"""The soak's --ssh side (bench/soak_ssh.py, issue 45 item 4) in under a minute: `serve` follows one
esxtop-over-SSH host through a real sshd on loopback (the stand-in esxtop; SMART over SSH every
10 s) while its session is cut (every session process killed) and then sshd is stopped for a few
seconds and started again on the same port with the same host key. Every scrape is judged by the
soak's own checks (bench/soak_checks.py): esxi_esxtop_up 0 only while the session is down or
within its bound (SshHost.bound) of its return, the host's LUN and SMART series present outside that time, no
counter down, no traceback, each WARNING once per drop. The 5-minute run beside the vSphere churn
and its table: docs/benchmarks.md."""

from __future__ import annotations

import threading
import time

import pytest

from bench.soak_checks import Checks, Inventory, parse
from bench.soak_driver import Timeline
from bench.soak_ssh import SshSide
from tests.support.promtext import value
from tests.support.servers import Exporter

pytestmark = pytest.mark.integration
SCRAPE_EVERY = 3.0
SMART_EVERY = 10.0  # the soak's is 30 s; here 10 s, for the bound (SshHost.bound) to fit in a minute


def test_an_ssh_session_cut_and_sshd_restarted_fail_no_check(tmp_path):
    side = SshSide(tmp_path / "sshd", seed=45, duration=0.0, smart_interval=SMART_EVERY)  # no plan: dropped here
    log = tmp_path / "exporter.log"
    exporter = Exporter(*side.args(), log_path=log)
    stop = threading.Event()
    failed: list[str] = []
    try:
        side.start(stop)
        started = side.started
        checks = Checks(Inventory(), log, Timeline(started), ssh=side.host)  # no vSphere target: nothing of it judged
        drops = [(2.0, side.kill), (4.0, lambda: side.restart(stop, down=3.0))]
        while drops or time.monotonic() < side.timeline.spans[-1][1] + side.host.bound + 2 * SCRAPE_EVERY:
            if drops and time.monotonic() >= started + drops[0][0]:
                drops.pop(0)[1]()
            at = time.monotonic()
            text = exporter.metrics()
            failed += [f"{at - started:.0f}s {f}" for f in checks.scrape(at, text)[0]]
            time.sleep(SCRAPE_EVERY)
    finally:
        stop.set()
        exporter.stop()
        side.close()
    assert side.done == {"ssh_kill": 1, "ssh_stop": 1}
    restarts = sum(v for name, _, v in parse(text)[0] if name == "esxi_esxtop_restarts_total")
    assert restarts >= 2, text  # the exporter saw both drops
    assert checks.judged >= 2 * len(side.host.required()), checks.judged  # scrapes after the return were judged
    assert value(text, "esxi_esxtop_up", host="127.0.0.1") == 1
    assert failed == [], "\n".join(failed)
