"""esxcli's health per host, counted one way for both runners (over SSH, through the vSphere
API): whether the last refresh succeeded and its errors by command and reason, handed to the
store whole as a SourceHealth record, like every source's health."""

from __future__ import annotations

import threading

from exporter.store import model as m


class EsxcliHealth:
    def __init__(self, store, origin: str = "", kind: str = "esxcli"):
        """origin: the vSphere target that runs esxcli ("" over SSH): its /probe shows this health.
        kind: the SourceHealth kind (esxcli; smart for the disk health rounds, exporter.smart)."""
        self.store, self.origin, self.kind = store, origin, kind
        self.lock = threading.Lock()
        self.errors: dict[str, dict[str, int]] = {}  # host -> "command/reason" -> count

    def report(self, host: str, problems) -> bool:
        """One refresh's problems ((command, reason, message) each); True if it failed."""
        failed = any(reason == "failed" for _, reason, _ in problems)
        with self.lock:
            counts = self.errors.setdefault(host, {})
            for command, reason, _ in problems:
                key = f"{command}/{reason}"
                counts[key] = counts.get(key, 0) + 1
            record = m.SourceHealth(kind=self.kind, name=host, origin=self.origin, up=0 if failed else 1, errors=dict(counts))
        self.store.set_health(record)
        return failed

    def forget(self, host: str) -> None:
        """The host left: its health record and error counts go with it."""
        with self.lock:
            self.errors.pop(host, None)
        self.store.drop_health(self.kind, host, self.origin)

    def suspend(self, host: str) -> None:
        """The host cannot be read for now (vCenter shows it disconnected): its series go, its
        error counts stay, so they go on from where they were when it answers again."""
        self.store.drop_health(self.kind, host, self.origin)
