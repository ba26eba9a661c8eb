"""esxcli's health per host, counted one way for both runners (over SSH, through the vSphere
API): whether the last refresh succeeded and its errors by command and reason, handed to the
store whole as a SourceHealth record, like every source's health.

Each command and reason of a host is a cause of the FaultLog (exporter.store.faultlog): counted
every refresh, logged when it starts or its first message changes, and once when a refresh that
failed nowhere no longer has it (a refresh that failed did not reach every command: it ends none).
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from exporter.store import model as m
from exporter.store.faultlog import FaultLog

FAILED = "failed"  # the reason of a command that could not run (a refresh with one "failed")


class EsxcliHealth:
    def __init__(
        self,
        store,
        origin: str = "",
        kind: str = "esxcli",
        log: logging.Logger | None = None,
        logs: Collection[str] | None = None,
    ):
        """origin: the vSphere target that runs esxcli ("" over SSH): its /probe shows this health.
        kind: the SourceHealth kind (esxcli; smart for the disk health rounds, exporter.smart).
        log: where the lines go; logs: the reasons logged here (None: all; the others are counted
        only, their caller logs them in finer detail)."""
        self.store, self.origin, self.kind, self.logs = store, origin, kind, logs
        self.faults = FaultLog(log or logging.getLogger(__name__))  # (host, "command/reason") -> count, first message

    def report(self, host: str, problems, where: str = "") -> bool:
        """One refresh's problems ((command, reason, message) each); True if it failed. where: how
        the lines name the host ("esxcli on esx01"; "" logs nothing)."""
        first: dict[str, tuple[str, str, int]] = {}  # "command/reason" -> (command, first message, how many)
        for command, reason, message in problems:
            key = f"{command}/{reason}"
            _, said, n = first.get(key, (command, message, 0))
            first[key] = (command, said, n + 1)
        for key, (command, message, n) in first.items():
            more = f" (and {n - 1} more)" if n > 1 else ""
            quiet = not where or (self.logs is not None and key.rsplit("/", 1)[1] not in self.logs)
            said = " failed" if key.endswith("/" + FAILED) else ""
            self.faults.failed((host, key), message, f"{where}: {command}{said}: {message}{more}", n=n, quiet=quiet)
        failed = any(reason == FAILED for _, reason, _ in problems)
        if not failed:
            self.faults.recovered(lambda k: k[0] == host and k[1] not in first, lambda k: self._ended(where, k[1]))
        errors = self.errors(host)
        self.store.set_health(m.SourceHealth(kind=self.kind, name=host, origin=self.origin, up=0 if failed else 1, errors=errors))
        return failed

    def _ended(self, where: str, key: str) -> str | None:
        command, reason = key.rsplit("/", 1)
        if not where or self.logs is not None and reason not in self.logs:
            return None
        return f"{where}: {command} answers again" if reason == FAILED else f"{where}: {command}: no {reason} any more"

    def failing(self, host: str) -> bool:
        """The host's last refresh failed (a command that could not run, not yet answered again)."""
        with self.faults.lock:
            return any(key[0] == host and key[1].endswith("/" + FAILED) for key in self.faults.failing)

    def errors(self, host: str) -> dict[str, int]:
        """ "command/reason" -> errors so far of one host."""
        return {key: n for (_, key), n in self.faults.snapshot(lambda k: k[0] == host).items()}

    def forget(self, host: str) -> None:
        """The host left: its health record and error counts go with it."""
        self.faults.forget(lambda k: k[0] == host)
        self.store.drop_health(self.kind, host, self.origin)

    def suspend(self, host: str) -> None:
        """The host cannot be read for now (vCenter shows it disconnected): its series go, its
        error counts stay, so they go on from where they were when it answers again."""
        self.store.drop_health(self.kind, host, self.origin)
