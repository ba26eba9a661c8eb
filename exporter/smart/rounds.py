"""SMART rounds of one source (the SSH hosts, or one vSphere target): each host's report handed to
the store whole, its health (SourceHealth kind `smart`: up, errors by command and reason), the last
report kept for the next round (a failed read keeps the last good one), and a log line when a
device's state changes or a value of it is first refused, not every hour it stays so.

A host that leaves (forget) takes its disks, its health and its counts with it at once; a round
that was running on it meanwhile hands nothing to the store (each host's epoch says so).
"""

from __future__ import annotations

import logging
import threading
import time

from exporter.esxcli.health import FAILED, EsxcliHealth
from exporter.smart import reader
from exporter.store.faultlog import FaultLog

log = logging.getLogger(__name__)


class SmartRounds:
    def __init__(self, store, origin: str = "", clock=time.time):
        """origin: the vSphere target whose hosts these are ("" over SSH): its /probe shows them."""
        self.store, self.origin, self.clock = store, origin, clock
        # Counted by command and reason, logged once per cause: a host's device list failing, or
        # lines and fields that do not read; a device's own failure is its state (_log_changes),
        # a value refused alone a note.
        self.health = EsxcliHealth(store, origin, kind="smart", log=log, logs=(FAILED, "bad_line", "bad_value"))
        self.last: dict = {}  # host -> its last DiskHealthReport
        self.notes = FaultLog(log)  # (host, subject, field, reason): logged when first refused, again after it read
        self.lock = threading.Lock()  # a round's hand-over to the store against a host leaving
        self.epochs: dict[str, int] = {}  # host -> times it left: a round begun before then is stale

    def epoch(self, host: str) -> int:
        with self.lock:
            return self.epochs.get(host, 0)

    def epochs_now(self) -> dict[str, int]:
        """Every host's epoch now (a host never forgotten: 0)."""
        with self.lock:
            return dict(self.epochs)

    def refresh(self, host: str, esxcli: reader.Esxcli, label: str = "", epoch: int | None = None) -> bool:
        """One round on `host`; False if its devices could not be listed (the last report stays).
        epoch: the host's epoch when the round began (now, if not given)."""
        epoch = self.epoch(host) if epoch is None else epoch
        notes: list = []
        report, problems = reader.read(host, esxcli, self.clock(), self.last.get(host), notes)
        where = label or host
        with self.lock:
            if self.epochs.get(host, 0) != epoch:
                return False  # the host left while its round ran: nothing of it is kept
            failed = self.health.report(host, problems, f"SMART on {where}")
            if report is None:
                return False
            self._log_changes(where, report)
            self._log_notes(host, where, notes)
            self.last[host] = report
            self.store.set_disk_health(report, origin=self.origin)
        return not failed

    def fail(self, host: str, command: str, message: str, epoch: int, label: str = "") -> None:
        """A round that could not start on `host` (no executer, no session): counted as failed,
        logged once."""
        with self.lock:
            if self.epochs.get(host, 0) == epoch:
                self.health.report(host, [(command, FAILED, message)], f"SMART on {label or host}")

    def forget(self, hosts) -> None:
        """Hosts that left: their disks, health and error counts go now, and any round still
        running on them keeps nothing."""
        hosts = set(hosts)
        if not hosts:
            return
        with self.lock:
            for host in hosts:
                self.epochs[host] = self.epochs.get(host, 0) + 1
                self.last.pop(host, None)
                self.notes.forget(lambda key, host=host: key[0] == host)
                self.health.forget(host)
            self.store.drop_disk_health(hosts, origin=self.origin)

    def _log_notes(self, host: str, where: str, notes) -> None:
        """One line per device, field and reason when it is first refused (again after it read)."""
        now = set()
        for note in notes:
            key = (host, note.subject, note.field, note.reason)
            line = f"SMART on {where}: {note.message} (counted in esxi_disk_smart_errors_total, reason {note.reason})"
            self.notes.failed(key, note.reason, line, quiet=key in now)
            now.add(key)
        self.notes.recovered(lambda key: key[0] == host and key not in now)

    def _log_changes(self, where: str, report) -> None:
        before = self.last.get(report.host)
        for device, disk in report.disks.items():
            old = before.disks.get(device) if before else None
            for what, status, was, problem, kept in (
                ("SMART", disk.smart_status, old.smart_status if old else None, disk.smart_problem, disk.smart),
                ("NVMe log", disk.nvme_status, old.nvme_status if old else None, disk.nvme_problem, disk.nvme),
            ):
                if status == was or not status:
                    continue
                if status in ("failed", "unreadable"):
                    # the reason as esxcli gave it; and whether a good reading stands in for it
                    keeps = "the last good reading is kept" if kept is not None else "nothing read from it yet"
                    log.warning("SMART on %s: %s of %s %s: %s (%s)", where, what, device, status, problem, keeps)
                elif status == "unsupported":
                    log.info("SMART on %s: %s has no %s to read (a state, not an error)", where, device, what)
                elif was is not None:
                    log.info("SMART on %s: %s of %s read again", where, what, device)
