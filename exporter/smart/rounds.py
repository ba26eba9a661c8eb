"""SMART rounds of one source (the SSH hosts, or one vSphere target): each host's report handed to
the store whole, its health (SourceHealth kind `smart`: up, errors by command and reason), the last
report kept for the next round (a failed read keeps the last good one), and a log line when a
device's state changes, not every hour it stays so.
"""

from __future__ import annotations

import logging
import time

from exporter.esxcli.health import EsxcliHealth
from exporter.smart import reader

log = logging.getLogger(__name__)


class SmartRounds:
    def __init__(self, store, origin: str = "", clock=time.time):
        """origin: the vSphere target whose hosts these are ("" over SSH): its /probe shows them."""
        self.store, self.origin, self.clock = store, origin, clock
        self.health = EsxcliHealth(store, origin, kind="smart")
        self.last: dict = {}  # host -> its last DiskHealthReport

    def refresh(self, host: str, esxcli: reader.Esxcli, label: str = "") -> bool:
        """One round on `host`; False if its devices could not be listed (the last report stays)."""
        report, problems = reader.read(host, esxcli, self.clock(), self.last.get(host))
        failed = self.health.report(host, problems)
        where = label or host
        if report is None:
            log.warning("SMART on %s: %s", where, problems[0][2] if problems else "no answer")
            return False
        self._log_changes(where, report)
        for command, reason, message in problems:
            if reason in ("bad_line", "bad_value"):
                log.warning("SMART on %s: %s: %s", where, command, message)
        self.last[host] = report
        self.store.set_disk_health(report, origin=self.origin)
        return not failed

    def forget(self, hosts) -> None:
        """Hosts gone from the source: their last report and their SMART health and error counts."""
        for host in hosts:
            self.last.pop(host, None)
            self.health.forget(host)

    def _log_changes(self, where: str, report) -> None:
        before = self.last.get(report.host)
        for device, disk in report.disks.items():
            old = before.disks.get(device) if before else None
            for what, status, was in (
                ("SMART", disk.smart_status, old.smart_status if old else None),
                ("NVMe log", disk.nvme_status, old.nvme_status if old else None),
            ):
                if status == was or not status:
                    continue
                if status in ("failed", "unreadable"):
                    log.warning("SMART on %s: %s of %s %s (the last good reading is kept)", where, what, device, status)
                elif status == "unsupported":
                    log.info("SMART on %s: %s has no %s to read (a state, not an error)", where, device, what)
                elif was is not None:
                    log.info("SMART on %s: %s of %s read again", where, what, device)
